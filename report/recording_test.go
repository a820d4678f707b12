package report

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
)

func header() Header {
	return Header{Time: time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC), Host: "box", Cores: 2, GpuwatchVersion: "test", Command: []string{"gpuwatch", "demo"}, IntervalSec: 1}
}

func recordSome(t *testing.T, path string, max int64, n int) *Recorder {
	t.Helper()
	r, err := NewRecorder(path, header(), max)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Note(Scenario{Time: header().Time, Name: "single-core", Knobs: map[string]string{"workers": "0"}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		f := testFrame()
		f.Time = header().Time.Add(time.Duration(i) * time.Second)
		kind := diagnose.WarmingUp
		if i >= 2 {
			kind = diagnose.SingleCoreMaxed
		}
		if err := r.Frame(f, &diagnose.Verdict{Kind: kind, Since: f.Time}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Note(Event{Time: header().Time, Name: "disconnected", Detail: "connection refused"}); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRecordingRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	r := recordSome(t, path, 0, 10)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(path)
	defer f.Close()
	rec, err := ReadRecording(f)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Header.Version != RecordingVersion || rec.Header.Host != "box" || rec.Header.Part != 1 {
		t.Fatalf("header %+v", rec.Header)
	}
	if len(rec.Frames) != 10 || rec.Frames[9].Verdict.Kind != diagnose.SingleCoreMaxed || rec.Frames[3].Frame.CPU.Cores[0].BusyPct != 95 {
		t.Fatalf("%d frames, last %+v", len(rec.Frames), rec.Frames[len(rec.Frames)-1].Verdict)
	}
	if len(rec.Verdicts) != 2 || rec.Verdicts[1].Kind != diagnose.SingleCoreMaxed {
		t.Fatalf("verdict changes %+v", rec.Verdicts)
	}
	if len(rec.Scenarios) != 1 || len(rec.Events) != 1 || len(rec.Warnings) != 0 {
		t.Fatalf("notes %+v %+v %v", rec.Scenarios, rec.Events, rec.Warnings)
	}
	if _, err := NewRecorder(path, header(), 0); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("overwrote a recording: %v", err)
	}
}

func TestRecordingRotatesAtItsCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	var told []string
	r, err := NewRecorder(path, header(), 8<<10)
	if err != nil {
		t.Fatal(err)
	}
	r.Notify = func(s string) { told = append(told, s) }
	for i := 0; i < 40; i++ {
		f := testFrame()
		f.Time = header().Time.Add(time.Duration(i) * time.Second)
		if err := r.Frame(f, &diagnose.Verdict{Kind: diagnose.Healthy}); err != nil {
			t.Fatal(err)
		}
	}
	r.Close()
	if len(told) == 0 {
		t.Fatal("no rotation message")
	}
	for _, p := range []string{path, path + ".1"} {
		st, err := os.Stat(p)
		if err != nil || st.Size() > 8<<10+4<<10 {
			t.Fatalf("%s: %v, %d bytes", p, err, st.Size())
		}
		f, _ := os.Open(p)
		rec, err := ReadRecording(f)
		f.Close()
		if err != nil || len(rec.Warnings) != 0 || rec.Header.Part < 1 {
			t.Fatalf("%s does not read on its own: %v %v", p, err, rec.Warnings)
		}
		if p == path+".1" && len(rec.Frames) == 0 {
			t.Fatalf("the rotated part holds no frame")
		}
	}
}

func TestRecordingReadsUpToTheLastGoodLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	recordSome(t, path, 0, 5).Close()
	full, _ := os.ReadFile(path)
	cut := full[:len(full)-20] // mid-line, as a kill -9 can leave it
	rec, err := ReadRecording(bytes.NewReader(cut))
	if err != nil || len(rec.Frames) != 5 || len(rec.Warnings) != 1 || !strings.Contains(rec.Warnings[0], "truncated") {
		t.Fatalf("truncated: %d frames, %v, %v", len(rec.Frames), rec.Warnings, err)
	}
	lines := strings.SplitAfter(string(full), "\n")
	corrupt := strings.Join(lines[:4], "") + "{\"type\":\"frame\",\"time\":GARBAGE\n" + strings.Join(lines[4:], "")
	rec, err = ReadRecording(strings.NewReader(corrupt))
	// Lines: header, scenario, verdict, frame 0, then the corrupt one.
	if err != nil || len(rec.Frames) != 1 || len(rec.Warnings) != 1 || !strings.Contains(rec.Warnings[0], "read up to line 4") {
		t.Fatalf("corrupt: %d frames, %v, %v", len(rec.Frames), rec.Warnings, err)
	}
}

func TestRecordingRefusesOtherFormatsAndNewerVersions(t *testing.T) {
	for name, text := range map[string]string{
		"frames without header": `{"type":"frame","time":"2026-11-21T09:00:00Z"}` + "\n",
		"other json":            `{"hello":"world"}` + "\n",
		"csv":                   "time,cpu\n1,2\n",
		"other format":          `{"type":"header","format":"something-else","version":1}` + "\n",
	} {
		if _, err := ReadRecording(strings.NewReader(text)); !errors.Is(err, ErrNotRecording) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	_, err := ReadRecording(strings.NewReader(`{"type":"header","format":"gpuwatch-recording","version":7}` + "\n"))
	if err == nil || !strings.Contains(err.Error(), "version 7 is newer") {
		t.Fatalf("newer version: %v", err)
	}
}

func FuzzReadRecording(f *testing.F) {
	var b bytes.Buffer
	jw := NewJSONWriter(&b)
	jw.enc.Encode(Header{Type: "header", Format: RecordingFormat, Version: 1})
	jw.WriteFrame(testFrame(), &diagnose.Verdict{Kind: diagnose.IOBound})
	f.Add(b.Bytes())
	f.Add([]byte(`{"type":"header","format":"gpuwatch-recording","version":1}` + "\n" + `{"type":"verdict","kind":"nope"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := ReadRecording(bytes.NewReader(data))
		if err == nil && rec == nil {
			t.Fatal("nil recording without an error")
		}
		if err == nil && len(rec.Frames) > 0 && rec.Header.Format != RecordingFormat {
			t.Fatal("frames read from a file without a gpuwatch header")
		}
	})
}

// BenchmarkRecorderFrame is the cost of recording one frame of the real
// demo recording (encode, write, flush to a file): the whole cost of
// --record per interval.
func BenchmarkRecorderFrame(b *testing.B) {
	f, _ := os.Open(filepath.Join("testdata", "tour.jsonl"))
	rec, err := ReadRecording(f)
	f.Close()
	if err != nil {
		b.Fatal(err)
	}
	r, err := NewRecorder(filepath.Join(b.TempDir(), "bench.jsonl"), header(), 0)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	v := &diagnose.Verdict{Kind: diagnose.IOBound, Evidence: []diagnose.Evidence{{Text: "nvme0n1 is 98 % busy"}}, Advice: []string{"read sequentially"}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fr := rec.Frames[i%len(rec.Frames)].Frame
		if err := r.Frame(&fr, v); err != nil {
			b.Fatal(err)
		}
	}
}

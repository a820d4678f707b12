package recording

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/internal/fixture"
	"github.com/gpuwatch/gpuwatch/sample"
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
	if err := r.Note(sample.Scenario{Time: header().Time, Name: "single-core", Knobs: map[string]string{"workers": "0"}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		f := fixture.Frame()
		f.Time = header().Time.Add(time.Duration(i) * time.Second)
		kind := diagnose.WarmingUp
		if i >= 2 {
			kind = diagnose.SingleCoreMaxed
		}
		if err := r.Frame(f, &diagnose.Verdict{Kind: kind, Since: f.Time}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Note(sample.Event{Time: header().Time, Name: "disconnected", Detail: "connection refused"}); err != nil {
		t.Fatal(err)
	}
	return r
}

// read reads a recording held in memory.
func read(b []byte) (*Recording, error) { return Read(bytes.NewReader(b), int64(len(b))) }

func TestRecordingRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	r := recordSome(t, path, 0, 10)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	rec, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	if rec.Header.Version != RecordingVersion || rec.Header.Host != "box" || rec.Header.Part != 1 {
		t.Fatalf("header %+v", rec.Header)
	}
	last, err := rec.Frame(9)
	if err != nil {
		t.Fatal(err)
	}
	third, _ := rec.Frame(3)
	if rec.Len() != 10 || last.Verdict.Kind != diagnose.SingleCoreMaxed || third.Frame.CPU.Cores[0].BusyPct != 95 || third.Frame.Unavailable[sample.SourceRecording] != "" {
		t.Fatalf("%d frames, last %+v, frame 3 %+v", rec.Len(), last.Verdict, third.Frame)
	}
	text, _ := os.ReadFile(path)
	if n := strings.Count(string(text), `{"type":"verdict"`); n != 2 {
		t.Fatalf("%d verdict lines, want one per change (2)", n)
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
		f := fixture.Frame()
		f.Time = header().Time.Add(time.Duration(i) * time.Second)
		if err := r.Frame(f, &diagnose.Verdict{Kind: diagnose.Healthy}); err != nil {
			t.Fatal(err)
		}
	}
	r.Close()
	if len(told) < 2 {
		t.Fatalf("rotation messages %q: want several", told)
	}
	// Each says the cap as it is (not "0 MiB") and, from the second on,
	// which part the rotation replaced.
	if want := "recording reached 8.0KiB: part 1 is now " + path + ".1; part 2 goes on"; !strings.HasPrefix(told[0], want) {
		t.Errorf("first rotation: %q, want %q…", told[0], want)
	}
	if want := "part 2 is now " + path + ".1, replacing part 1; part 3 goes on"; !strings.Contains(told[1], want) {
		t.Errorf("second rotation: %q, want it to say %q", told[1], want)
	}
	for _, p := range []string{path, path + ".1"} {
		st, err := os.Stat(p)
		if err != nil || st.Size() > 8<<10+4<<10 {
			t.Fatalf("%s: %v, %d bytes", p, err, st.Size())
		}
		rec, err := Open(p)
		if err != nil || len(rec.Warnings) != 0 || rec.Header.Part < 1 {
			t.Fatalf("%s does not read on its own: %v %v", p, err, rec.Warnings)
		}
		rec.Close()
		if p == path+".1" && rec.Len() == 0 {
			t.Fatalf("the rotated part holds no frame")
		}
	}
}

func TestRecordingReadsUpToTheLastGoodLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	recordSome(t, path, 0, 5).Close()
	full, _ := os.ReadFile(path)
	cut := full[:len(full)-20] // mid-line, as a kill -9 can leave it
	rec, err := read(cut)
	if err != nil || rec.Len() != 5 || len(rec.Warnings) != 1 || !strings.Contains(rec.Warnings[0], "truncated") {
		t.Fatalf("truncated: %d frames, %v, %v", rec.Len(), rec.Warnings, err)
	}
	lines := strings.SplitAfter(string(full), "\n")
	corrupt := strings.Join(lines[:4], "") + "{\"type\":\"frame\",\"time\":GARBAGE\n" + strings.Join(lines[4:], "")
	rec, err = read([]byte(corrupt))
	// Lines: header, scenario, verdict, frame 0, then the corrupt one:
	// it is skipped, counted and named, and the frames after it are read.
	if err != nil || rec.Len() != 5 || rec.CorruptLines != 1 || len(rec.Warnings) != 1 || !strings.Contains(rec.Warnings[0], "1 corrupt line skipped, not JSON (line 5)") {
		t.Fatalf("corrupt: %d frames, %d corrupt, %v, %v", rec.Len(), rec.CorruptLines, rec.Warnings, err)
	}
}

func TestRecordingRefusesOtherFormatsAndNewerVersions(t *testing.T) {
	for name, text := range map[string]string{
		"other json":   `{"hello":"world"}` + "\n",
		"csv":          "time,cpu\n1,2\n",
		"other format": `{"type":"header","format":"something-else","version":1}` + "\n",
	} {
		if _, err := read([]byte(text)); !errors.Is(err, ErrNotRecording) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	// --json's output (the root help's example) read as a recording: its
	// frames, judged with the default thresholds, and a warning that says
	// what a recording also keeps.
	rec, err := read([]byte(`{"type":"frame","time":"2026-11-21T09:00:00Z"}` + "\n" + `{"type":"frame","time":"2026-11-21T09:00:01Z"}` + "\n"))
	if err != nil || rec.Len() != 2 || rec.Header.Thresholds == nil || *rec.Header.Thresholds != diagnose.DefaultThresholds() ||
		len(rec.Warnings) != 1 || !strings.Contains(rec.Warnings[0], "read as --json's frame lines") || !strings.Contains(rec.Warnings[0], "--record FILE") {
		t.Errorf("frame lines: %v, %+v", err, rec)
	}
	// The demo's --json starts with its scenario: read as a note.
	rec, err = read([]byte(`{"type":"scenario","time":"2026-11-21T09:00:00Z","name":"healthy"}` + "\n" + `{"type":"frame","time":"2026-11-21T09:00:01Z"}` + "\n"))
	if err != nil || rec.Len() != 1 || len(rec.Scenarios) != 1 || rec.Scenarios[0].Name != "healthy" {
		t.Errorf("the demo's lines: %v, %+v", err, rec)
	}
	_, err = read([]byte(`{"type":"header","format":"gpuwatch-recording","version":7}` + "\n"))
	if err == nil || !strings.Contains(err.Error(), "version 7 is newer") {
		t.Fatalf("newer version: %v", err)
	}
}

// BenchmarkRecorderFrame is the cost of recording one frame of the real
// demo recording (encode, write, flush to a file): the whole cost of
// --record per interval.
func BenchmarkRecorderFrame(b *testing.B) {
	rec, err := Open(filepath.Join("testdata", "tour.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer rec.Close()
	var frames []sample.Frame
	rec.Each(func(_ int, r *Recorded) error { frames = append(frames, r.Frame); return nil })
	r, err := NewRecorder(filepath.Join(b.TempDir(), "bench.jsonl"), header(), 0)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	v := &diagnose.Verdict{Kind: diagnose.IOBound, Evidence: []diagnose.Evidence{{Text: "nvme0n1 is 98 % busy"}}, Advice: []string{"read sequentially"}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fr := frames[i%len(frames)]
		if err := r.Frame(&fr, v); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRotationNeverWritesThroughALink (issue 54, item 4): a link planted
// where the recording's next part goes (in a folder another process can
// write, between the rename and the open) is refused, and what it points
// at is left as it was: root's epilog and serve keep jobs' frames.
func TestRotationNeverWritesThroughALink(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "42.jsonl")
	target := filepath.Join(dir, "precious")
	if err := os.WriteFile(target, []byte("keep me\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := NewRecorder(path, header(), 0)
	if err != nil {
		t.Fatal(err)
	}
	r.f.Close()
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if err := r.open(os.O_CREATE | os.O_TRUNC | os.O_WRONLY); err == nil {
		t.Fatal("the next part opened through a link")
	}
	if b, _ := os.ReadFile(target); string(b) != "keep me\n" {
		t.Fatalf("the link's target was written: %q", b)
	}
}

// TestRecordingsAreTheUsersOwn (a review): a recording holds the hook's
// CPU profiles, which the hook serves only with its token: it is 0600,
// its rotation too, whatever the umask.
func TestRecordingsAreTheUsersOwn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	r := recordSome(t, path, 4096, 40)
	r.Close()
	for _, p := range []string{path, path + ".1"} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: %v", p, st.Mode())
		}
	}
}

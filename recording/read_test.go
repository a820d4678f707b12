package recording

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/internal/fixture"
	"github.com/gpuwatch/gpuwatch/lines"
	"github.com/gpuwatch/gpuwatch/sample"
)

const head = `{"type":"header","format":"gpuwatch-recording","version":1}` + "\n"

// TestOutOfRangeNumbersAreDroppedWithANote: the numbers that crashed the
// replay (a rank's wait share of 1.5, a wait of −5 ms) come back dropped,
// and the frame says so.
func TestOutOfRangeNumbersAreDroppedWithANote(t *testing.T) {
	frame := `{"type":"frame","time":"2026-11-21T09:00:00Z","loader":{"source":"x","wait_share":0.5,"wait_mean_ms":-5},` +
		`"ranks":[{"rank":0,"url":"u","connected":true,"wait_share":1.5,"step_sec":0.04}],"unavailable":{}}` + "\n"
	rec, err := read([]byte(head + frame))
	if err != nil {
		t.Fatal(err)
	}
	r, err := rec.Frame(0)
	if err != nil {
		t.Fatal(err)
	}
	f := r.Frame
	if f.Loader.WaitMeanMs != nil || f.Ranks[0].WaitShare != nil || *f.Loader.WaitShare != 0.5 || *f.Ranks[0].StepSec != 0.04 {
		t.Fatalf("loader %+v, rank %+v", f.Loader, f.Ranks[0])
	}
	note := f.Unavailable[sample.SourceRecording]
	for _, want := range []string{"loader.wait_mean_ms -5: outside 0–1e+15, dropped", "ranks[0].wait_share 1.5: outside 0–1, dropped"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q lacks %q", note, want)
		}
	}
}

// TestAFieldOfTheWrongTypeIsLeftOut: a frame whose field is not its type
// keeps the rest, and names the field.
func TestAFieldOfTheWrongTypeIsLeftOut(t *testing.T) {
	frame := `{"type":"frame","time":"2026-11-21T09:00:00Z","mem":{"used_bytes":-1,"available_bytes":5},"cpu":{"busy_pct":40}}` + "\n"
	rec, _ := read([]byte(head + frame))
	r, err := rec.Frame(0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Frame.CPU == nil || r.Frame.CPU.BusyPct != 40 || r.Frame.Mem == nil || r.Frame.Mem.AvailableBytes != 5 ||
		!strings.Contains(r.Frame.Unavailable[sample.SourceRecording], "used_bytes") {
		t.Fatalf("frame %+v %+v, note %q", r.Frame.CPU, r.Frame.Mem, r.Frame.Unavailable[sample.SourceRecording])
	}
}

// TestAMistypedFieldIsAbsentNotZero: Unmarshal leaves a field it cannot
// fill at its zero, so a recording's 1e999 (past float64) for SM activity
// read as 0 % (and turned the verdict to gpu_underused). Every such value
// is absent, in any element of an array on its path and in a map, the
// rest of the frame as it was, each named in the frame's note.
func TestAMistypedFieldIsAbsentNotZero(t *testing.T) {
	frame := `{"type":"frame","time":"2026-11-21T09:00:00Z","cpu":{"busy_pct":40},"gpus":[` +
		`{"index":0,"name":"a","util_pct":100,"gpm":{"sm_activity_pct":1e999,"tensor_activity_pct":12}},` +
		`{"index":1,"name":"b","util_pct":"lots","gpm":{"sm_activity_pct":80}},` +
		`{"index":2,"name":"c","util_pct":50,"peak":{"model":"m","dense_tflops":{"bf16":1e999,"fp16":100}}}]}` + "\n"
	rec, _ := read([]byte(head + frame))
	r, err := rec.Frame(0)
	if err != nil {
		t.Fatal(err)
	}
	f, note := r.Frame, r.Frame.Unavailable[sample.SourceRecording]
	if len(f.GPUs) != 3 || f.CPU == nil || f.CPU.BusyPct != 40 {
		t.Fatalf("the rest of the frame is lost: %d GPUs, cpu %+v (note %q)", len(f.GPUs), f.CPU, note)
	}
	g0, g1, g2 := f.GPUs[0], f.GPUs[1], f.GPUs[2]
	if g0.GPM == nil || g0.GPM.SMActivityPct != nil || g0.GPM.TensorActivityPct == nil || *g0.GPM.TensorActivityPct != 12 || *g0.UtilPct != 100 {
		t.Errorf("GPU 0: gpm %+v util %v: SM activity must be absent, the rest kept", g0.GPM, g0.UtilPct)
	}
	if g1.UtilPct != nil || g1.GPM == nil || *g1.GPM.SMActivityPct != 80 {
		t.Errorf("GPU 1: util %v gpm %+v: utilization must be absent, SM activity kept", g1.UtilPct, g1.GPM)
	}
	if g2.Peak == nil || g2.Peak.DenseTFLOPS["fp16"] != 100 {
		t.Fatalf("GPU 2: peak %+v", g2.Peak)
	}
	if _, ok := g2.Peak.DenseTFLOPS["bf16"]; ok {
		t.Errorf("GPU 2: bf16's peak %v kept: it was 1e999", g2.Peak.DenseTFLOPS["bf16"])
	}
	for _, want := range []string{"gpus.gpm.sm_activity_pct: a number 1e999", "gpus.util_pct: a string", "left out"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q lacks %q", note, want)
		}
	}
	// A value of the wrong shape (an object or an array where a string,
	// a struct or a list goes) is dropped alone, beside a verdict whose
	// kind is a string its type decodes: the rest of the frame stays.
	for _, bad := range []string{`"loader":{"source":{"a":1}}`, `"loader":{"source":[1]}`, `"loader":[]`, `"mem":[1,2]`, `"gpus":{"a":1}`, `"unavailable":[1]`} {
		line := `{"type":"frame","time":"2026-11-21T09:00:00Z","cpu":{"busy_pct":40},` + bad + `,"verdict":{"kind":"io_bound","severity":"critical"}}` + "\n"
		rec, _ := read([]byte(head + line))
		r, err := rec.Frame(0)
		if err != nil {
			t.Fatal(err)
		}
		if r.Frame.CPU == nil || r.Frame.CPU.BusyPct != 40 || r.Verdict == nil || r.Verdict.Kind != diagnose.IOBound {
			t.Errorf("%s: the rest is lost: cpu %+v, verdict %+v (note %q)", bad, r.Frame.CPU, r.Verdict, r.Frame.Unavailable[sample.SourceRecording])
		}
	}
}

// BenchmarkAMistypedLine: a line near the size limit holding 17 values
// of the wrong type costs a few decodes of it, not one per value (a
// retry per value took 14.7 s and 3.8 GB for this line; one pass, 1.1 s
// and 295 MB on the 2-core VM).
func BenchmarkAMistypedLine(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"type":"frame","time":"2026-11-21T09:00:00Z","cpu":{"busy_pct":40,"cores":[`)
	for i := range 250_000 { // about 3.8 MB: under MaxLineBytes
		if i > 0 {
			sb.WriteString(",")
		}
		sb.WriteString(`{"busy_pct":0}`)
	}
	sb.WriteString(`]},"gpus":[`)
	for i := range 17 {
		if i > 0 {
			sb.WriteString(",")
		}
		sb.WriteString(`{"index":1,"util_pct":"x"}`)
	}
	sb.WriteString("]}\n")
	data := []byte(head + sb.String())
	b.ReportAllocs()
	for b.Loop() {
		rec, err := read(data)
		if err != nil {
			b.Fatal(err)
		}
		r, err := rec.Frame(0)
		if err != nil || r.Frame.CPU == nil || len(r.Frame.GPUs) != 17 || r.Frame.GPUs[0].UtilPct != nil {
			b.Fatalf("%v %+v", err, r.Frame.Unavailable)
		}
	}
}

// TestHugeRankListsAreCutOnRead: a frame holding 100,000 ranks keeps
// MaxRanks of them.
func TestHugeRankListsAreCutOnRead(t *testing.T) {
	var b strings.Builder
	b.WriteString(head + `{"type":"frame","time":"2026-11-21T09:00:00Z","ranks":[`)
	for i := range 100_000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"rank":%d,"url":"u","connected":true}`, i)
	}
	b.WriteString("]}\n")
	rec, _ := read([]byte(b.String()))
	r, err := rec.Frame(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Frame.Ranks) != 256 || !strings.Contains(r.Frame.Unavailable[sample.SourceRecording], "ranks has 100000 entries: cut to 256") {
		t.Fatalf("%d ranks, note %q", len(r.Frame.Ranks), r.Frame.Unavailable[sample.SourceRecording])
	}
}

// TestMemoryDoesNotGrowWithTheRecording: reading every frame of a 12 MB
// recording holds an index, not the frames.
func TestMemoryDoesNotGrowWithTheRecording(t *testing.T) {
	path := filepath.Join(t.TempDir(), "long.jsonl")
	r, err := NewRecorder(path, header(), 0)
	if err != nil {
		t.Fatal(err)
	}
	f := fixture.GPUFrame()
	for i := range 20 {
		f.Procs.Threads = append(f.Procs.Threads, f.Procs.Threads[0])
		f.Procs.Threads[i].TID = 1000 + i
	}
	for i := range 4_000 {
		f.Time = header().Time.Add(time.Duration(i) * time.Second)
		if err := r.Frame(f, &diagnose.Verdict{Kind: diagnose.Healthy}); err != nil {
			t.Fatal(err)
		}
	}
	r.Close()
	st, _ := os.Stat(path)
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	rec, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	threads := 0
	if err := rec.Each(func(_ int, r *Recorded) error { threads += len(r.Frame.Procs.Threads); return nil }); err != nil {
		t.Fatal(err)
	}
	held := heap() - min(before, heap())
	t.Logf("%d MB recording, %d frames: %d KiB held after reading them all", st.Size()>>20, rec.Len(), held>>10)
	if rec.Len() != 4_000 || threads != 4_000*21 {
		t.Fatalf("%d frames, %d threads", rec.Len(), threads)
	}
	if held > uint64(st.Size())/20 {
		t.Errorf("reading a %d MB recording holds %d MB: it grows with the recording", st.Size()>>20, held>>20)
	}
}

// TestOpenRefusesAFIFO: a FIFO handed over as a recording is refused at
// once; nothing waits for a writer.
func TestOpenRefusesAFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo.jsonl")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip(err)
	}
	if _, err := Open(p); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("Open(FIFO) = %v", err)
	}
}

// TestNotesAndLongLinesAreBounded: a line past MaxLineBytes is skipped
// with a warning, and the notes kept stop at MaxNotes.
func TestNotesAndLongLinesAreBounded(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(head)
	b.WriteString(`{"type":"frame","x":"` + strings.Repeat("a", MaxLineBytes) + `"}` + "\n")
	event := func(name string) {
		ev, _ := json.Marshal(struct {
			Type string `json:"type"`
			sample.Event
		}{"event", sample.Event{Name: name}})
		b.Write(append(ev, '\n'))
	}
	event(strings.Repeat("n", 10_000))
	for range MaxNotes + 5 {
		event("disconnected")
	}
	b.WriteString(`{"type":"frame","time":"2026-11-21T09:00:00Z"}` + "\n")
	rec, err := read(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if rec.Len() != 1 || len(rec.Events) != MaxNotes || len(rec.Events[0].Name) > maxText+4 || len(rec.Warnings) != 2 {
		t.Fatalf("%d frames, %d events (name %d bytes), warnings %q", rec.Len(), len(rec.Events), len(rec.Events[0].Name), rec.Warnings)
	}
}

// FuzzRecordingFrames feeds the reader a frame line of any content: it
// never panics, every frame it gives is within Check's ranges (a second
// Check finds nothing), and what it holds is bounded.
func FuzzRecordingFrames(f *testing.F) {
	var b bytes.Buffer
	lines.NewJSONWriter(&b).WriteFrame(fixture.GPUFrame(), &diagnose.Verdict{Kind: diagnose.IOBound})
	f.Add(b.String())
	f.Add(`{"type":"frame","ranks":[{"rank":-7,"wait_share":1.5}],"loader":{"wait_mean_ms":-5,"workers":1e300}}`)
	f.Add(`{"type":"frame","cpu":{"cores":[{"busy_pct":1e308}]},"gpus":[{"util_samples":{"p95":-1}}]}`)
	f.Add(`{"type":"frame","gpus":[{"gpm":{"sm_activity_pct":1e999}},{"util_pct":"x","peak":{"dense_tflops":{"bf16":1e999}}}],"cpu":{"cores":[1e999,"x"]}}`)
	f.Fuzz(func(t *testing.T, frame string) {
		data := []byte(head + frame + "\n" + frame + "\n")
		rec, err := read(data)
		if err != nil {
			return
		}
		if rec.Len() > 2 || len(rec.Warnings) > maxWarnings+1 {
			t.Fatalf("%d frames, %d warnings from two lines", rec.Len(), len(rec.Warnings))
		}
		err = rec.Each(func(_ int, r *Recorded) error {
			delete(r.Frame.Unavailable, "recording")
			if notes := r.Frame.Check(); len(notes) > 0 {
				t.Fatalf("a frame read is out of range: %q", notes)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestThresholdsARecordingLacksAreTheDefaults: a recording from a
// gpuwatch before batch_full_pct (the H200 MLP fixture's header has
// none) read it as 0, and replay lost the batch_headroom cause; one with
// no thresholds at all reads the defaults whole.
func TestThresholdsARecordingLacksAreTheDefaults(t *testing.T) {
	def := diagnose.DefaultThresholds()
	frame := `{"type":"frame","time":"2026-11-21T09:00:00Z","unavailable":{}}` + "\n"
	older := `{"type":"header","format":"gpuwatch-recording","version":1,"thresholds":{"disk_busy_pct":70}}` + "\n"
	rec, err := read([]byte(older + frame))
	if err != nil {
		t.Fatal(err)
	}
	th := rec.Header.Thresholds
	if th == nil || th.DiskBusyPct != 70 || th.BatchFullPct != def.BatchFullPct || th.HostSyncPerStep != def.HostSyncPerStep || th.FastClearSpan != def.FastClearSpan {
		t.Fatalf("thresholds read %+v", th)
	}
	if err := th.Validate(); err != nil {
		t.Fatal(err)
	}
	rec, err = read([]byte(head + frame))
	if err != nil {
		t.Fatal(err)
	}
	if th := rec.Header.Thresholds; th == nil || *th != def {
		t.Fatalf("a header with no thresholds read %+v", th)
	}
}

// TestAPeakOutOfRangeIsDropped: a recording's dense peak of 1e308 made
// every view print 300 digits, and the JSON report fail on +Inf (a
// review): a peak outside 0–1e6 TFLOPS is dropped and named, the rest of
// the row kept.
func TestAPeakOutOfRangeIsDropped(t *testing.T) {
	frame := `{"type":"frame","time":"2026-11-21T09:00:00Z","gpus":[{"index":0,"name":"NVIDIA H200","vendor":"nvidia",` +
		`"peak":{"model":"H200 SXM","source":"s","dense_tflops":{"bf16":1e308,"fp32":-5,"fp16":989.5}}}],"unavailable":{}}` + "\n"
	rec, err := read([]byte(head + frame))
	if err != nil {
		t.Fatal(err)
	}
	r, err := rec.Frame(0)
	if err != nil {
		t.Fatal(err)
	}
	p := r.Frame.GPUs[0].Peak
	if p == nil || len(p.DenseTFLOPS) != 1 || p.DenseTFLOPS["fp16"] != 989.5 {
		t.Fatalf("peak %+v", p)
	}
	note := r.Frame.Unavailable[sample.SourceRecording]
	for _, want := range []string{"gpus[0].peak.dense_tflops.bf16 1e+308: outside 0–1000000, dropped", "dense_tflops.fp32 -5: outside"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q lacks %q", note, want)
		}
	}
}

// TestAPeaksKeyIsBoundedInItsNote: a dtype key of 1 MiB with a value out
// of range is named in the frame's note cut short, not whole.
func TestAPeaksKeyIsBoundedInItsNote(t *testing.T) {
	key := strings.Repeat("k", 1<<20)
	frame := `{"type":"frame","time":"2026-11-21T09:00:00Z","gpus":[{"index":0,"name":"x","vendor":"nvidia",` +
		`"peak":{"model":"m","source":"s","dense_tflops":{"` + key + `":-1}}}],"unavailable":{}}` + "\n"
	rec, err := read([]byte(head + frame))
	if err != nil {
		t.Fatal(err)
	}
	r, err := rec.Frame(0)
	if err != nil {
		t.Fatal(err)
	}
	if note := r.Frame.Unavailable[sample.SourceRecording]; len(note) > 64<<10 || !strings.Contains(note, "kkk…") || len(r.Frame.GPUs[0].Peak.DenseTFLOPS) != 0 {
		t.Errorf("note of %d bytes", len(note))
	}
}

// endlessLine is a file of size bytes of one line with no newline, that
// counts what was read of it.
type endlessLine struct{ read int64 }

func (e *endlessLine) ReadAt(p []byte, off int64) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	e.read += int64(len(p))
	return len(p), nil
}

// TestAFirstLineTooLongIsRefusedWithoutReadingTheRest: a file whose first
// line passes MaxLineBytes is no recording, said after reading the
// limit, not the whole file (a review: 42 s to refuse an 8 GiB file).
func TestAFirstLineTooLongIsRefusedWithoutReadingTheRest(t *testing.T) {
	src := &endlessLine{}
	_, err := Read(src, 64<<30)
	if !errors.Is(err, ErrNotRecording) || !strings.Contains(err.Error(), "the first line is longer than") {
		t.Fatalf("err %v", err)
	}
	if src.read > 2*MaxLineBytes {
		t.Errorf("read %d bytes to refuse it, the limit is %d", src.read, MaxLineBytes)
	}
}

// TestWhatIsNotARecordingSaysWhatItIs: a gzip'd recording and the
// --headless text lines are the files users hand replay by mistake;
// "the first line is not JSON" told them nothing (a review).
func TestWhatIsNotARecordingSaysWhatItIs(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`{"type":"header","format":"gpuwatch-recording"}` + "\n"))
	zw.Close()
	headless := []byte("10:05:18 [warming_up 0% since 10:05:18] | cpu 14% max cpu15 99% 2/16≥90% iow 0% load 2.28 run 4 |\n")
	for name, c := range map[string]struct {
		data []byte
		want string
	}{
		"gzip":     {gz.Bytes(), "gzip-compressed: gunzip it first"},
		"headless": {headless, "these are --headless text lines"},
		"other":    {[]byte("hello\n"), "the first line is not JSON"},
	} {
		_, err := Read(bytes.NewReader(c.data), int64(len(c.data)))
		if !errors.Is(err, ErrNotRecording) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

// TestAFrameOutOfTimeLeavesOutItselfOnly: one frame dated months ahead
// of its neighbours (a clock stepped and back), or decades, is left out,
// not every frame after it (it was); a frame dated before the one above
// it is left out alone, as before; a year no clock gives, too.
func TestAFrameOutOfTimeLeavesOutItselfOnly(t *testing.T) {
	base := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return base.Add(time.Duration(i) * time.Second) }
	times := []time.Time{at(0), at(1), at(2), base.AddDate(0, 5, 0), at(3), at(4),
		base.AddDate(60, 0, 0), at(5), at(1), at(6), time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), at(7)}
	var b strings.Builder
	b.WriteString(head)
	for _, tm := range times {
		fmt.Fprintf(&b, `{"type":"frame","time":%q,"unavailable":{}}`+"\n", tm.Format(time.RFC3339Nano))
	}
	rec, err := read([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	got := frameTimes(t, rec)
	if want := []time.Time{at(0), at(1), at(2), at(3), at(4), at(5), at(6), at(7)}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("frames read %v\nwant %v", got, want)
	}
	warned := strings.Join(rec.Warnings, "\n")
	for _, want := range []string{"line 5: a frame at 2026-08-01T09:00:00Z, after the frames below it: left out",
		"line 8: a frame at 2086-03-01T09:00:00Z, after the frames below it: left out",
		"line 12: a frame at 9999-01-01T00:00:00Z: no clock gives that time: left out",
		"line 10: a frame at 2026-03-01T09:00:01Z, before the one above it: left out"} {
		if !strings.Contains(warned, want) {
			t.Errorf("warnings %q lack %q", warned, want)
		}
	}
}

// frameTimes are the times of rec's frames, as Frame reads them.
func frameTimes(t *testing.T, rec *Recording) []time.Time {
	t.Helper()
	var got []time.Time
	for i := range rec.Len() {
		r, err := rec.Frame(i)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r.Frame.Time)
	}
	return got
}

// TestTheClockGoneBackIsReadAcross: the box's clock stepped back an hour
// in the middle of a recording (an NTP step, a VM restored): every frame
// after the step was left out, one warning each. The frames after it are
// read on from the frame above, in order, one interval later, with the
// events among them; one warning says the step. A last frame dated back,
// with none after it, is still left out alone.
func TestTheClockGoneBackIsReadAcross(t *testing.T) {
	base := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return base.Add(time.Duration(i) * time.Second) }
	back := func(i int) time.Time { return at(i).Add(-time.Hour) }
	var b strings.Builder
	b.WriteString(head)
	frame := func(tm time.Time) {
		fmt.Fprintf(&b, `{"type":"frame","time":%q,"unavailable":{}}`+"\n", tm.Format(time.RFC3339Nano))
	}
	for i := range 4 {
		frame(at(i))
	}
	for i := 4; i < 8; i++ {
		if i == 6 { // a job that ended, with its end's time
			fmt.Fprintf(&b, `{"type":"frame","time":%q,"unavailable":{},"target":{"pid":7,"exited_at":%q}}`+"\n", back(i).Format(time.RFC3339Nano), back(i).Add(-300*time.Millisecond).Format(time.RFC3339Nano))
			continue
		}
		frame(back(i))
		if i == 4 { // between the frame dated back and the one that says the clock went back
			fmt.Fprintf(&b, `{"type":"scenario","time":%q,"name":"io-bound","knobs":{}}`+"\n", back(4).Add(200*time.Millisecond).Format(time.RFC3339Nano))
		}
		if i == 5 {
			fmt.Fprintf(&b, `{"type":"event","time":%q,"name":"knob","detail":"num_workers=2"}`+"\n", back(5).Add(500*time.Millisecond).Format(time.RFC3339Nano))
		}
	}
	frame(back(1)) // dated back again, and the last: left out
	rec, err := read([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	got := frameTimes(t, rec)
	if want := []time.Time{at(0), at(1), at(2), at(3), at(4), at(5), at(6), at(7)}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("frames read %v\nwant %v", got, want)
	}
	if len(rec.Events) != 1 || !rec.Events[0].Time.Equal(at(5).Add(500*time.Millisecond)) {
		t.Errorf("events %+v: want the one at %s", rec.Events, at(5).Add(500*time.Millisecond))
	}
	if r, err := rec.Frame(6); err != nil || r.Frame.Target == nil || r.Frame.Target.ExitedAt == nil || !r.Frame.Target.ExitedAt.Equal(at(6).Add(-300*time.Millisecond)) {
		t.Errorf("the job's end after the step: %+v, %v: want it at %s", r.Frame.Target, err, at(6).Add(-300*time.Millisecond))
	}
	if len(rec.Scenarios) != 1 || !rec.Scenarios[0].Time.Equal(at(4).Add(200*time.Millisecond)) {
		t.Errorf("scenarios %+v: want the one at %s", rec.Scenarios, at(4).Add(200*time.Millisecond))
	}
	warned := strings.Join(rec.Warnings, "\n")
	for _, want := range []string{"line 6: the clock went back 59m59s (a frame at 2026-03-01T08:00:04Z after one at 2026-03-01T09:00:03Z): it and the frames after it are read on from there, each 1h0m0s later than it says",
		"line 12: a frame at 2026-03-01T08:00:01Z, before the one above it: left out"} {
		if !strings.Contains(warned, want) {
			t.Errorf("warnings %q lack %q", warned, want)
		}
	}
	if len(rec.Warnings) != 2 {
		t.Errorf("%d warnings, want 2: %q", len(rec.Warnings), rec.Warnings)
	}

	// Not a step: a frame dated a year ahead, one dated back between its
	// neighbours, then one going on from the frames before the year-ahead
	// one: the year-ahead frame is the odd one (a review); and frames a
	// century back are no clock step (the shift stays within a Duration).
	b.Reset()
	b.WriteString(head)
	for _, tm := range []time.Time{at(0), at(1), at(2), at(0).AddDate(1, 0, 0), at(2).Add(-500 * time.Millisecond), at(4),
		at(4).AddDate(-100, 0, 0), at(5).AddDate(-100, 0, 0), at(6)} {
		frame(tm)
	}
	rec, err = read([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	got = frameTimes(t, rec)
	if want := []time.Time{at(0), at(1), at(2), at(4), at(6)}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("frames read %v\nwant %v (warnings %q)", got, want, rec.Warnings)
	}
}

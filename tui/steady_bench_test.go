package tui

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/sample"
)

// BenchmarkSteadyHeap feeds the dashboard's model an hour of frames at 1 s
// (a recorded io-bound run, replayed in a loop with its clock running on),
// drawing each, and prints the live heap after 10 minutes and after the
// hour: what the model's history holds once it is full, and that it stops
// growing (issue 53; docs/architecture.md, "What gpuwatch costs"). It fails nothing:
// the figures are for the benchmark step. Each frame is decoded afresh, as
// the sampler makes a new one each tick, so no frame is shared between
// ticks. b.N is ignored beyond 1: one hour is the measurement.
func BenchmarkSteadyHeap(b *testing.B) {
	f, err := os.Open(filepath.Join("testdata", "io-bound.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var lines [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"type":"frame"`) {
			lines = append(lines, append([]byte(nil), sc.Bytes()...))
		}
	}
	if len(lines) == 0 {
		b.Fatal("no frames in io-bound.jsonl")
	}
	for i := 0; i < b.N; i++ {
		m := New(Options{Title: "steady", Interval: time.Second})
		m.w, m.h = 120, 40
		d := diagnose.NewDiagnoser(diagnose.DefaultThresholds())
		var start time.Time
		var at10 uint64
		for t := 0; t < 3600; t++ {
			var fr sample.Frame
			if err := json.Unmarshal(lines[t%len(lines)], &fr); err != nil {
				b.Fatal(err)
			}
			if t == 0 {
				start = fr.Time
			}
			fr.Time = start.Add(time.Duration(t) * time.Second)
			m.Observe(Feed{Frame: &fr, Verdict: d.Observe(&fr)})
			_ = m.View()
			if t == 599 {
				at10 = liveHeap()
			}
		}
		b.ReportMetric(float64(at10)/(1<<20), "MiB-heap@10min")
		b.ReportMetric(float64(liveHeap())/(1<<20), "MiB-heap@1h")
		runtime.KeepAlive(m)
	}
}

// liveHeap is the bytes of live heap objects after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestHistoryHoldsWhatTrendsRead: a history frame keeps what the
// sparklines read (the watched processes' CPU, the loader's wait, the
// GPUs) and drops the rest of the heavy parts; the frame given is left
// whole (it is drawn as the newest).
func TestHistoryHoldsWhatTrendsRead(t *testing.T) {
	wait := 0.4
	f := &sample.Frame{
		Procs:   &sample.Procs{FocusPID: 7, List: []sample.Proc{{PID: 7, Name: "python", CPUPct: 90}, {PID: 8, Name: "worker", CPUPct: 30}}, Threads: []sample.Thread{{TID: 7}}},
		Loader:  &sample.Loader{WaitShare: &wait, Source: "http://x"},
		Profile: &sample.Profile{Top: []sample.ProfileFunc{{Name: "f"}}},
		Ranks:   []sample.Rank{{}},
		GPUs:    []sample.GPU{{Name: "H200"}},
	}
	h := historyFrame(f)
	if h.Profile != nil || h.Ranks != nil || h.Procs.Threads != nil || h.Procs.List[0].Name != "" || h.Loader.Source != "" {
		t.Fatalf("history keeps heavy parts: %+v", h)
	}
	if h.Procs.FocusPID != 7 || h.Procs.List[0].CPUPct+h.Procs.List[1].CPUPct != 120 || *h.Loader.WaitShare != 0.4 || h.GPUs[0].Name != "H200" {
		t.Fatalf("history lost what trends read: %+v", h)
	}
	if f.Profile == nil || f.Procs.Threads == nil || f.Procs.List[0].Name != "python" || f.Loader.Source != "http://x" {
		t.Fatal("the frame given was changed")
	}
}

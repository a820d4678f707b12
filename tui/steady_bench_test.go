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
// growing (issue 53; docs/architecture.md, "Memory"). It fails nothing:
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

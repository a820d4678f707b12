//go:build integration

package main

import (
	"testing"
	"time"
)

// mmapRun is what a run over a mapped dataset showed: its last verdict,
// and the mean samples/s of its second half.
type mmapRun struct {
	kind, first, metric string
	changes             []string
	samplesPerSec       float64
}

// collectRun reads frames from ch until it closes or limit passes.
func collectRun(t *testing.T, ch <-chan attachLine, limit time.Duration) mmapRun {
	t.Helper()
	var rates []float64
	var last attachLine
	deadline := time.After(limit)
loop:
	for {
		select {
		case l, open := <-ch:
			if !open {
				break loop
			}
			if l.Type != "frame" {
				continue
			}
			if l.Loader != nil {
				rates = append(rates, l.Loader.SamplesPerSec)
			}
			if l.Verdict != nil && len(l.Verdict.Evidence) > 0 {
				last = l
			}
		case <-deadline:
			break loop
		}
	}
	if last.Verdict == nil || len(rates) < 4 {
		t.Fatalf("no verdict, or too few frames (%d)", len(rates))
	}
	var r mmapRun
	r.kind, r.first, r.metric = last.Verdict.Kind, last.Verdict.Evidence[0].Text, last.Verdict.Evidence[0].Metric
	half := rates[len(rates)/2:]
	for _, v := range half {
		r.samplesPerSec += v / float64(len(half))
	}
	return r
}

const mmapMetric = "procs.major_faults_per_sec"

// TestMmapRandomVersusSubseq runs the mmap-random preset, then the same
// run with --access subseq, each for real on this machine: the random run
// is io_bound through page faults on the mapped dataset; the subseq run is
// not, and delivers at least twice the samples per second.
func TestMmapRandomVersusSubseq(t *testing.T) {
	run := func(extra ...string) mmapRun {
		args := append([]string{"demo", "--scenario", "mmap-random", "--headless", "--json", "--duration", "25s"}, extra...)
		_, ch := startJSON(t, args...)
		return collectRun(t, ch, 90*time.Second)
	}
	random := run()
	subseq := run("--access", "subseq")
	t.Logf("mmap-random: %s, %.0f samples/s: %s", random.kind, random.samplesPerSec, random.first)
	t.Logf("with --access subseq: %s, %.0f samples/s (%.1f×): %s", subseq.kind, subseq.samplesPerSec, subseq.samplesPerSec/random.samplesPerSec, subseq.first)
	if random.kind != "io_bound" || random.metric != mmapMetric {
		t.Errorf("mmap-random: %s led by %s (%q), want io_bound led by %s", random.kind, random.metric, random.first, mmapMetric)
	}
	if subseq.kind == random.kind || subseq.metric == mmapMetric {
		t.Errorf("with subseq: %s led by %s, want a different verdict without the mmap mechanism", subseq.kind, subseq.metric)
	}
	if subseq.samplesPerSec < 2*random.samplesPerSec {
		t.Errorf("subseq %.0f samples/s, random %.0f: want at least 2×", subseq.samplesPerSec, random.samplesPerSec)
	}
}

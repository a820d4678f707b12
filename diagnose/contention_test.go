package diagnose

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/sample"
)

// TestCPUTakenByOthersIsAFindingOfItsOwn: the training loop's thread waits
// 400 ms/s for a CPU while processes outside the job use 1.6 of the 2
// cores. That is placement, not the job: a finding of its own beside the
// verdict, with the numbers. Without the wait, or without others using
// the cores, there is no such finding.
func TestCPUTakenByOthersIsAFindingOfItsOwn(t *testing.T) {
	frames := func(delay, treeCPU float64) []sample.Frame {
		var out []sample.Frame
		t0 := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
		for i := range 5 {
			pid, tid, workers, share := 100, 100, 0, 0.6
			f := sample.Frame{Time: t0.Add(time.Duration(i) * time.Second),
				CPU:    &sample.CPU{BusyPct: 100, Cores: []sample.Core{{ID: 0, BusyPct: 100}, {ID: 1, BusyPct: 100}}},
				Loader: &sample.Loader{PID: &pid, LoopTID: &tid, Workers: &workers, WaitShare: &share, BatchesPerSec: 5},
				Procs: &sample.Procs{FocusPID: 100, List: []sample.Proc{{PID: 100, CPUPct: treeCPU}},
					Threads: []sample.Thread{{TID: 100, PID: 100, Name: "python3", CPUPct: treeCPU, RunDelayMsPerSec: &delay}}},
			}
			out = append(out, f)
		}
		return out
	}
	for _, c := range []struct {
		name           string
		delay, treeCPU float64
		want           bool
	}{
		{"waits while others use the cores", 400, 40, true},
		{"does not wait", 20, 40, false},
		{"waits, but the job itself fills the cores", 400, 200, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := Classify(frames(c.delay, c.treeCPU), DefaultThresholds())
			found := false
			for _, f := range v.Secondary {
				if strings.HasPrefix(f.Text, "CPU taken by others: thread python3 (tid 100) waited 400 ms/s for a CPU while processes outside the job used 1.6 cores") {
					found = true
				}
			}
			if found != c.want {
				t.Fatalf("%s: secondary %+v, want the finding: %v", v.Kind, v.Secondary, c.want)
			}
		})
	}
}

// TestAStepOffTheCPUIsNotTheAccelerator: with no GPU seen, a loop that
// steps 99 % of the time while its process uses 0.02 of a core (a step
// that sleeps 49 of its 51 ms) is not told "the accelerator is the
// limit" (a review): the step waits on something else. A step that
// uses its core, or whose thread waits for one on a crowded box, is not
// said to.
func TestAStepOffTheCPUIsNotTheAccelerator(t *testing.T) {
	frames := func(loopCPU, delay float64, device string) []sample.Frame {
		var out []sample.Frame
		t0 := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
		for i := range 12 {
			pid, tid, workers, share, step := 100, 100, 0, 0.01, 51.0
			f := sample.Frame{Time: t0.Add(time.Duration(i) * time.Second),
				CPU:    &sample.CPU{BusyPct: 2, Cores: []sample.Core{{ID: 0, BusyPct: 2}, {ID: 1, BusyPct: 2}}},
				Loader: &sample.Loader{PID: &pid, LoopTID: &tid, Workers: &workers, WaitShare: &share, StepMeanMs: &step, BatchesPerSec: 19.4, SamplesPerSec: 155},
				Procs: &sample.Procs{FocusPID: 100, List: []sample.Proc{{PID: 100, CPUPct: loopCPU}},
					Threads: []sample.Thread{{TID: 100, PID: 100, Name: "python3", CPUPct: loopCPU, RunDelayMsPerSec: &delay}}},
			}
			if device != "" {
				f.Loader.Settings = &sample.JobSettings{Device: device}
			}
			out = append(out, f)
		}
		return out
	}
	const off = "the step is the limit, and it runs mostly off the CPU (no GPU seen): the training process's threads used 0.02 of a core while its loop stepped 99 % of the time"
	for _, c := range []struct {
		name           string
		loopCPU, delay float64
		device         string
		want           bool
	}{
		{"a step that sleeps, the hook read it on the CPU", 2, 0, "cpu", true},
		{"a step that sleeps, its device not read", 2, 0, "", false},
		{"a step on its core", 95, 0, "cpu", false},
		{"a step waiting for a CPU", 2, 600, "cpu", false},
		{"a step on a device gpuwatch cannot read", 2, 0, "cuda", false},
		{"a step on an XPU", 2, 0, "xpu", false},
	} {
		v := Classify(frames(c.loopCPU, c.delay, c.device), DefaultThresholds())
		all := strings.Join(v.Advice, "\n")
		if got := strings.Contains(all, off); v.Kind != Healthy || got != c.want || c.want && strings.Contains(all, "the accelerator is the limit") {
			t.Errorf("%s: %s, advice %q", c.name, v.Kind, v.Advice)
		}
	}
}

package diagnose

import (
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/sample"
)

func feed(d *Diagnoser, fs []sample.Frame) []Verdict {
	out := make([]Verdict, len(fs))
	for i := range fs {
		out[i] = d.Observe(&fs[i])
	}
	return out
}

func TestDiagnoserOnsetWithinFiveSeconds(t *testing.T) {
	// 20 s healthy, then starved from t=20 s.
	fs := frames(40, func(i int, f *sample.Frame) {
		host(f, 20, 0, 2)
		share := 0.01
		if i >= 20 {
			share = 0.6
		}
		loader(f, share, 2, 0.5, 1)
	})
	vs := feed(NewDiagnoser(DefaultThresholds()), fs)
	onset := -1
	for i := 20; i < len(vs); i++ {
		if vs[i].Kind == GPUStarved {
			onset = i
			break
		}
	}
	if onset < 0 {
		t.Fatal("starvation never detected")
	}
	if lat := fs[onset].Time.Sub(fs[20].Time); lat > 5*time.Second {
		t.Fatalf("detected after %v, want ≤ 5 s", lat)
	}
	for i := onset; i < len(vs); i++ {
		if vs[i].Kind != GPUStarved {
			t.Fatalf("flipped back at %d", i)
		}
	}
	if !vs[len(vs)-1].Since.Equal(fs[20].Time) && vs[len(vs)-1].Since.Sub(fs[20].Time) > 3*time.Second {
		t.Fatalf("since %v, onset at %v", vs[len(vs)-1].Since, fs[20].Time)
	}
}

func TestDiagnoserIgnoresFlappingInput(t *testing.T) {
	// Every other second starved: no verdict should follow it.
	fs := frames(60, func(i int, f *sample.Frame) {
		host(f, 20, 0, 2)
		share := 0.01
		if i%2 == 1 {
			share = 0.6
		}
		loader(f, share, 8, 0.5, 1)
	})
	vs := feed(NewDiagnoser(DefaultThresholds()), fs)
	flips := 0
	for i := 4; i < len(vs); i++ {
		if vs[i].Kind != vs[i-1].Kind {
			flips++
		}
	}
	if flips > 1 {
		t.Fatalf("%d flips on flapping input", flips)
	}
}

func TestDiagnoserLeavesAProblemOnlyWhenClear(t *testing.T) {
	fs := frames(30, func(i int, f *sample.Frame) {
		host(f, 20, 0, 2)
		share := 0.6
		if i >= 10 {
			share = 0.01
		}
		loader(f, share, 2, 0.5, 1)
	})
	vs := feed(NewDiagnoser(DefaultThresholds()), fs)
	if vs[9].Kind != GPUStarved {
		t.Fatalf("at 9 s: %s", vs[9].Kind)
	}
	healthyAt := -1
	for i := 10; i < len(vs); i++ {
		if vs[i].Kind == Healthy {
			healthyAt = i
			break
		}
	}
	// Clear from the frame at 10 s on: shown once the frames that each
	// say so alone span the leave hold (issue 53), not the leave hold
	// after the window's median turned (5 s).
	lat := fs[healthyAt].Time.Sub(fs[10].Time)
	if healthyAt < 0 || lat != time.Duration(DefaultThresholds().LeaveHold) {
		t.Fatalf("healthy after %v (want the leave hold, %v)", lat, time.Duration(DefaultThresholds().LeaveHold))
	}
}

func TestDiagnoserWarmsUpThenShows(t *testing.T) {
	fs := frames(3, func(_ int, f *sample.Frame) { host(f, 20, 0, 2); gpus(f, 1, 99, 95, 100) })
	vs := feed(NewDiagnoser(DefaultThresholds()), fs)
	if vs[0].Kind != WarmingUp || vs[1].Kind != WarmingUp || vs[2].Kind != Healthy {
		t.Fatalf("%s %s %s", vs[0].Kind, vs[1].Kind, vs[2].Kind)
	}
}

func TestDiagnoserGPUDropsOut(t *testing.T) {
	// A GPU box whose GPUs fall off the bus at 10 s, with no loader: the
	// verdict must stop claiming anything about the accelerator.
	fs := frames(20, func(i int, f *sample.Frame) {
		host(f, 10, 0, 1)
		if i < 10 {
			gpus(f, 2, 95, 90, 99)
		} else {
			f.GPUs = []sample.GPU{{Index: 0, Lost: true}, {Index: 1, Lost: true}}
		}
	})
	vs := feed(NewDiagnoser(DefaultThresholds()), fs)
	if vs[9].Kind != Healthy {
		t.Fatalf("before: %s", vs[9].Kind)
	}
	last := vs[len(vs)-1]
	if last.Kind == Healthy || last.Kind == GPUStarved {
		t.Fatalf("after the GPUs are lost: %s", last.Kind)
	}
	found := false
	for _, m := range last.Missing {
		found = found || m == "gpu: lost"
	}
	if !found {
		t.Fatalf("missing = %v", last.Missing)
	}
}

// While the hook replays kept batches to measure the ceiling, the loader
// takes nothing from its input and the loop is busy: those frames say
// nothing of the job, and the verdict shown stays what it was. Nor does
// the frame in which the replay ended.
func TestDiagnoserLeavesOutTheCeilingsReplay(t *testing.T) {
	fs := frames(40, func(i int, f *sample.Frame) {
		host(f, 20, 0, 2)
		loader(f, 0.6, 2, 0.5, 1) // starved
		if i >= 20 && i < 35 {
			f.Loader.WaitShare, f.Loader.SamplesPerSec = nil, 0 // no batch from the input
			f.Loader.Ceiling = &sample.Ceiling{State: sample.CeilingReplaying}
		}
		if i == 35 { // the replay ended in this frame's interval: its rates are partly the replay's
			f.Loader.BatchesPerSec, f.Loader.Ceiling = 1, &sample.Ceiling{State: sample.CeilingDone}
		}
	})
	d := NewDiagnoser(DefaultThresholds())
	vs := feed(d, fs)
	if vs[19].Kind != GPUStarved {
		t.Fatalf("before the replay: %s", vs[19].Kind)
	}
	for i := 20; i < len(vs); i++ {
		if vs[i].Kind != GPUStarved || !vs[i].Since.Equal(vs[19].Since) {
			t.Fatalf("frame %d (replaying %v): %s since %v, want gpu_starved since %v", i, i < 35, vs[i].Kind, vs[i].Since, vs[19].Since)
		}
	}
	for _, f := range d.ring {
		if f.Loader.CeilingOf() != nil {
			t.Fatalf("a frame of the replay at %v (%s) is in the window", f.Time, f.Loader.Ceiling.State)
		}
	}
}

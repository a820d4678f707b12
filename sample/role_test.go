package sample

import "testing"

// TestRolesFollowTheLoopRule: the loop's thread is the one the loader
// names, else, with no workers, the training process's main thread — the
// rule the diagnosis uses, so the dashboard calls that thread "loop" too
// (it called it "main" when only a loader-named TID counted).
func TestRolesFollowTheLoopRule(t *testing.T) {
	pid, zero, two, tid := 100, 0, 2, 105
	main := Thread{TID: 100, PID: 100}
	other := Thread{TID: 101, PID: 100}
	worker := Thread{TID: 200, PID: 200}
	for _, c := range []struct {
		name string
		l    *Loader
		t    Thread
		want Role
	}{
		{"num_workers=0: the main thread is the loop", &Loader{PID: &pid, Workers: &zero}, main, RoleLoop},
		{"workers, no loop TID: the main thread is main", &Loader{PID: &pid, Workers: &two, WorkerPIDs: []int{200}}, main, RoleMain},
		{"a named loop thread", &Loader{PID: &pid, LoopTID: &tid}, Thread{TID: 105, PID: 100}, RoleLoop},
		{"a worker's thread", &Loader{PID: &pid, Workers: &two, WorkerPIDs: []int{200}}, worker, RoleWorker},
		{"another thread of the process", &Loader{PID: &pid, Workers: &zero}, other, ""},
		{"no loader", nil, main, RoleMain},
	} {
		if got := RoleOf(c.t, c.l); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	f := &Frame{Loader: &Loader{PID: &pid, Workers: &zero}, Procs: &Procs{Threads: []Thread{other, main}}}
	f.AssignRoles()
	if f.Procs.Threads[1].Role != RoleLoop || f.Procs.Threads[0].Role != "" {
		t.Fatalf("AssignRoles: %+v", f.Procs.Threads)
	}
}

// TestWorkersRunDelayShare: of the time the worker threads ran or waited
// to run, the share they waited (only threads whose run delay was read,
// only workers'); recomputed by AssignRoles, never taken from a file.
func TestWorkersRunDelayShare(t *testing.T) {
	pid, two := 100, 2
	delay := func(ms float64) *float64 { return &ms }
	l := &Loader{PID: &pid, Workers: &two, WorkerPIDs: []int{200, 300}, WorkersRunDelayShare: delay(0.9)}
	f := &Frame{Loader: l, Procs: &Procs{Threads: []Thread{
		{TID: 200, PID: 200, CPUPct: 60, RunDelayMsPerSec: delay(300)}, // 0.6 s on a CPU, 0.3 s waiting
		{TID: 300, PID: 300, CPUPct: 20, RunDelayMsPerSec: delay(100)},
		{TID: 301, PID: 300, CPUPct: 50},                               // no run delay read: left out
		{TID: 100, PID: 100, CPUPct: 10, RunDelayMsPerSec: delay(900)}, // the training process: not a worker
	}}}
	f.AssignRoles()
	if s := f.Loader.WorkersRunDelayShare; s == nil || *s < 0.333 || *s > 0.334 { // 0.4 / (0.8 + 0.4)
		t.Fatalf("share %v", s)
	}
	// The loader's reading as it came is not written: a frame that got
	// it too (a slow read's, handed on) keeps its own figures.
	if f.Loader == l || *l.WorkersRunDelayShare != 0.9 {
		t.Fatalf("AssignRoles wrote into the reading it was given: %v", *l.WorkersRunDelayShare)
	}
	f.Procs.Threads = f.Procs.Threads[2:]
	f.AssignRoles()
	if f.Loader.WorkersRunDelayShare != nil {
		t.Fatalf("a share from no worker's run delay: %v", *f.Loader.WorkersRunDelayShare)
	}
}

// TestTheVirtualAcceleratorLeavesOutTheLoopsWaitForACPU (issue 56): the
// loop's step is wall time, and a throttled loop thread's run delay
// (schedstat: a throttled task stays queued) is not time an accelerator
// would spend busy. AssignRoles takes it off the step share, at most the
// whole step, recomputes it from the step share on every call (a
// recording's too, and one made before the step share was kept), and
// leaves the share alone where the delay was not read.
func TestTheVirtualAcceleratorLeavesOutTheLoopsWaitForACPU(t *testing.T) {
	pid, tid, two := 300, 301, 2
	delay := func(ms float64) *float64 { return &ms }
	frame := func(d *float64) *Frame {
		return &Frame{Accel: &VirtualAccel{BusyPct: 100, Basis: "loader step time / wall time"},
			Loader: &Loader{PID: &pid, LoopTID: &tid, Workers: &two},
			Procs: &Procs{Threads: []Thread{{TID: 300, PID: 300, RunDelayMsPerSec: delay(900)},
				{TID: 301, PID: 300, CPUPct: 12, RunDelayMsPerSec: d}}}}
	}
	f := frame(delay(620))
	f.AssignRoles()
	a := f.Accel
	if a.BusyPct < 37.9 || a.BusyPct > 38.1 || *a.StepPct != 100 || *a.LoopRunDelayPct < 61.9 || *a.LoopRunDelayPct > 62.1 {
		t.Fatalf("busy %v, step %v, delay %v: want 38 = 100 - 62", a.BusyPct, *a.StepPct, *a.LoopRunDelayPct)
	}
	if got := a.Describe(); got != "loader step time / wall time, 100 % less 62 % the loop thread waited for a CPU" {
		t.Errorf("Describe: %q", got)
	}
	f.AssignRoles() // again, as the recording reader does: the same, not taken off twice
	if a.BusyPct < 37.9 || a.BusyPct > 38.1 {
		t.Errorf("a second AssignRoles: busy %v", a.BusyPct)
	}
	f = frame(delay(1400)) // throttled past the step: at most the step
	f.Accel.BusyPct = 70
	f.AssignRoles()
	if f.Accel.BusyPct != 0 || *f.Accel.LoopRunDelayPct != 70 {
		t.Errorf("delay past the step: busy %v, delay %v", f.Accel.BusyPct, *f.Accel.LoopRunDelayPct)
	}
	f = frame(nil) // not read: the step share as measured, and nothing taken off said
	f.AssignRoles()
	if f.Accel.BusyPct != 100 || f.Accel.LoopRunDelayPct != nil || f.Accel.Describe() != "loader step time / wall time" {
		t.Errorf("unread delay: busy %v, delay %v, %q", f.Accel.BusyPct, f.Accel.LoopRunDelayPct, f.Accel.Describe())
	}
}

// TestFramesSharingALoaderReadTF32Apart (a review): two frames handed the
// same loader reading while a slow read was under way — the first on a
// V100, the second with no GPU read yet — shared its settings, and the
// second's AssignRoles turned the first's convs back to TF32 (a race
// with the dashboard reading the first). Each frame reads its own.
func TestFramesSharingALoaderReadTF32Apart(t *testing.T) {
	on, pid := true, 7
	l := &Loader{PID: &pid, Settings: &JobSettings{Device: "cuda", Autocast: new(bool), CudnnAllowTF32: &on, HasConv: &on}}
	v100 := GPU{Index: 0, Name: "Tesla V100-SXM2-16GB", Peak: &GPUPeak{Model: "V100 SXM2", DenseTFLOPS: map[string]float64{DtypeFP32: 15.7, DtypeFP16: 125}, NoTF32: true},
		Processes: []GPUProcess{{PID: pid}}}
	f1 := &Frame{Loader: l, GPUs: []GPU{v100}}
	f2 := &Frame{Loader: l}
	f1.AssignRoles()
	f2.AssignRoles()
	if tf, known := f1.Loader.Settings.ConvTF32(); !known || tf {
		t.Errorf("the V100's frame reads its convs on TF32 (%v, %v) after another frame's roles", tf, known)
	}
	if tf, _ := f2.Loader.Settings.ConvTF32(); !tf {
		t.Error("the frame with no GPU read lost cuDNN's switch")
	}
}

package diagnose

import (
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/sample"
)

// mapped is a Python DataLoader whose 2 workers fault a mapped dataset in:
// faults/s split over the workers, the disk reading 400 MiB/s for the
// 8 MiB/s the loader delivers, none of it by read calls.
func mapped(f *sample.Frame, faults float64) {
	loader(f, 0.9, 2, 1.8, 0.02)
	f.Loader.BytesPerSec = 8 << 20
	f.Loader.WorkerPIDs = []int{101, 102}
	f.Loader.PID = iptr(100)
	half, disk := faults/2, float64(200<<20)
	f.Procs = &sample.Procs{FocusPID: 100, List: []sample.Proc{
		{PID: 100, Name: "python", CPUPct: 10, MajorFaultsPerSec: f64(0), ReadBytesPerSec: f64(0), DiskReadBytesPerSec: f64(0)},
		{PID: 101, PPID: 100, Name: "pt_data_worker", CPUPct: 20, MajorFaultsPerSec: &half, ReadBytesPerSec: f64(1000), DiskReadBytesPerSec: &disk,
			MappedFileBytes: 3 << 30, MappedFile: "/data/train.arrow"},
		{PID: 102, PPID: 100, Name: "pt_data_worker", CPUPct: 20, MajorFaultsPerSec: &half, ReadBytesPerSec: f64(1000), DiskReadBytesPerSec: &disk},
	}}
	f.Disks[0].BusyPct = 97
}

// TestMappedChangesAreNoNoChange (a review): a mapped dataset read at
// random gets the sampler and the cache as changes (mmapChanges, beside
// the model), and then no_change, which says no change is advised, is
// not set, though the model's line stays in the advice.
func TestMappedChangesAreNoNoChange(t *testing.T) {
	v := Classify(frames(5, func(_ int, f *sample.Frame) {
		host(f, 30, 40, 2)
		mapped(f, 4800)
		f.Loader.Knobs = map[string]string{"workers": "2", "prefetch": "2", "access": "random", "cache": "false", "persistent": "false"}
		f.Loader.StepMeanMs = f64(5)
	}), DefaultThresholds())
	if len(v.Changes) == 0 || v.NoChange != "" {
		t.Errorf("%s: changes %+v, no_change %q: want changes and no no_change", v.Kind, v.Changes, v.NoChange)
	}
}

func TestMmapMechanism(t *testing.T) {
	th := DefaultThresholds()
	v := Classify(frames(5, func(_ int, f *sample.Frame) {
		host(f, 30, 40, 2)
		mapped(f, 4800)
	}), th)
	if v.Kind != IOBound || v.Evidence[0].Metric != "procs.major_faults_per_sec" ||
		v.Evidence[0].Text != "its 2 loader workers take 4,800 major page faults/s on memory-mapped files (3.0GiB mapped; the largest /data/train.arrow): random reads through the page cache" {
		t.Fatalf("%s: %+v", v.Kind, v.Evidence)
	}
	all := strings.Join(v.Advice, "\n")
	for _, want := range []string{"load the dataset into RAM once, as ready tensors (the dataset is 3.0GiB; 40GiB available)", "contiguous runs", "larger records"} {
		if !strings.Contains(all, want) {
			t.Errorf("advice %q lacks %q", v.Advice, want)
		}
	}
	var amplified bool
	for _, e := range v.Evidence {
		amplified = amplified || strings.Contains(e.Text, "for the 8.0MiB/s of samples the loader delivers (50×)")
	}
	if !amplified {
		t.Errorf("no read-around evidence in %+v", v.Evidence)
	}

	// Few faults: a disk read at random by read calls is io_bound, but
	// not through a mapping.
	v = Classify(frames(5, func(_ int, f *sample.Frame) {
		host(f, 30, 40, 2)
		mapped(f, 20)
		for i := range f.Procs.List[1:] {
			f.Procs.List[1+i].ReadBytesPerSec = f64(200 << 20) // the read calls bring what the disk reads
		}
	}), th)
	if v.Kind != IOBound || v.Evidence[0].Metric == "procs.major_faults_per_sec" {
		t.Fatalf("20 faults/s: %s led by %s", v.Kind, v.Evidence[0].Metric)
	}

	// Few faults, but each reads the device's whole read-around (8 MiB on
	// a cloud VM's virtio disk): the disk reads 50× what the loader
	// delivers and read calls bring none of it. The mapping is the
	// mechanism (CI's mmap-random demo: 25 faults/s, 700 MiB/s read).
	v = Classify(frames(5, func(_ int, f *sample.Frame) {
		host(f, 30, 40, 2)
		mapped(f, 20)
	}), th)
	if v.Kind != IOBound || v.Evidence[0].Metric != "procs.major_faults_per_sec" || v.Evidence[0].Threshold != 1 ||
		!strings.Contains(v.Evidence[0].Text, "20 major page faults/s on memory-mapped files") ||
		!strings.Contains(v.Evidence[0].Text, "each fault reading about 20MiB from the disk (the device's read-around)") {
		t.Fatalf("20 faults/s of 20MiB each: %s %+v", v.Kind, v.Evidence)
	}

	// Faults, but the disk idle and the cache not churning: not this.
	v = Classify(frames(5, func(_ int, f *sample.Frame) {
		host(f, 30, 0, 2)
		mapped(f, 4800)
		f.Disks[0].BusyPct = 10
	}), th)
	for _, e := range v.Evidence {
		if e.Metric == "procs.major_faults_per_sec" {
			t.Fatalf("idle disk, no churn: %s led by %+v", v.Kind, v.Evidence)
		}
	}
}

// TestCacheChurnInAJobIsNotMemoryPressure: a job at its memory limit,
// mostly page cache, whose mapped dataset churns it, is io_bound with the
// memory finding secondary; the same job full of its own memory is
// memory_pressure.
func TestCacheChurnInAJobIsNotMemoryPressure(t *testing.T) {
	th := DefaultThresholds()
	job := func(file uint64, maxEvents uint64) *sample.Job {
		limit, used := uint64(1<<30), uint64(1<<30)
		return &sample.Job{Cgroup: "/c", MemLimitBytes: &limit, MemUsedBytes: &used, MemFileBytes: &file,
			MemEvents: &sample.MemEvents{Max: maxEvents}}
	}
	win := func(file uint64) Verdict {
		return Classify(frames(5, func(i int, f *sample.Frame) {
			host(f, 30, 40, 2)
			mapped(f, 300)
			f.Mem.FileRefaultsPerSec = f64(300000)
			f.PSI.Memory.SomePct = f64(15)
			f.Job = job(file, uint64(1000*i))
		}), th)
	}
	v := win(900 << 20)
	if v.Kind != IOBound || v.Evidence[0].Metric != "procs.major_faults_per_sec" || len(v.Secondary) != 1 || v.Secondary[0].Kind != MemoryPressure ||
		!strings.Contains(v.Secondary[0].Text, "900MiB of it page cache") {
		t.Fatalf("cache churn: %s %+v secondary %+v", v.Kind, v.Evidence, v.Secondary)
	}
	all := strings.Join(v.Advice, "\n")
	if !strings.Contains(all, "free under the job's memory limit") || !strings.Contains(all, "ask for a memory limit well above the dataset (3.0GiB)") {
		t.Errorf("advice %q: want the room under the limit and a larger limit", v.Advice)
	}
	if v := win(100 << 20); v.Kind != MemoryPressure {
		t.Fatalf("a job full of its own memory: %s %+v", v.Kind, v.Evidence)
	}
}

// TestAStreamedCacheIsNotMemoryPressure: a job reading a dataset larger
// than its memory cgroup in blocks (no mapping faulting) keeps the cgroup
// at its limit, full of page cache the kernel reclaims as it reads on; its
// tasks stall on that reclaim (PSI). With the host's memory to spare that
// is the limit meeting the dataset, not memory pressed: the window is
// judged as without the stall, which is said beside. CI's mmap loop read
// in blocks was memory_pressure at 11 % stalled, "lower num_workers".
// The same stall with the host short of memory, or the job's own memory
// filling its limit, is memory_pressure.
func TestAStreamedCacheIsNotMemoryPressure(t *testing.T) {
	th := DefaultThresholds()
	win := func(file uint64, avail uint64) Verdict {
		return Classify(frames(5, func(i int, f *sample.Frame) {
			host(f, 30, 5, 2)
			loader(f, 0.05, 2, 0.2, 0.6) // the loop hardly waits
			f.Mem.AvailableBytes = avail
			f.PSI.Memory.SomePct = f64(11)
			limit, used := uint64(1<<30), uint64(1<<30)
			f.Job = &sample.Job{Cgroup: "/c", MemLimitBytes: &limit, MemUsedBytes: &used, MemFileBytes: &file,
				MemEvents: &sample.MemEvents{Max: uint64(1000 * i)}}
		}), th)
	}
	v := win(900<<20, 40<<30)
	if v.Kind == MemoryPressure {
		t.Fatalf("a streamed cache with 40GiB available: %s %+v", v.Kind, v.Evidence)
	}
	var said bool
	for _, s := range v.Secondary {
		said = said || s.Kind == MemoryPressure && strings.Contains(s.Text, "tasks stalled on memory 11 %") &&
			strings.Contains(s.Text, "page cache of data larger than its memory limit (1.0GiB)") && strings.Contains(s.Text, "40GiB available on the host; not memory pressed")
	}
	if !said {
		t.Errorf("%s: the stall is not said beside: %+v", v.Kind, v.Secondary)
	}
	for _, a := range v.Advice {
		if strings.Contains(a, "lower num_workers") {
			t.Errorf("advice %q for a cgroup streaming its cache", a)
		}
	}
	if v := win(900<<20, 512<<20); v.Kind != MemoryPressure {
		t.Errorf("the host short of memory (512MiB available): %s %+v", v.Kind, v.Evidence)
	}
	if v := win(100<<20, 40<<30); v.Kind != MemoryPressure {
		t.Errorf("the job's own memory filling its limit: %s %+v", v.Kind, v.Evidence)
	}
}

// TestFaultsPerBlockAreNotRandomReads: 60 major faults/s are random reads
// when the loader delivers 60 samples/s (one each), and read-ahead
// serving runs when it delivers 15,000 (the causes battery's fix, 4 MiB
// blocks in random order, read "random reads through the page cache" at
// 55 faults/s and 15,078 samples/s).
func TestFaultsPerBlockAreNotRandomReads(t *testing.T) {
	for _, tc := range []struct {
		samples float64
		mmap    bool
	}{{60, true}, {15000, false}} {
		v := Classify(frames(5, func(_ int, f *sample.Frame) {
			host(f, 30, 40, 2)
			mapped(f, 60)
			f.Loader.SamplesPerSec = tc.samples
		}), DefaultThresholds())
		led := len(v.Evidence) > 0 && v.Evidence[0].Metric == "procs.major_faults_per_sec"
		if led != tc.mmap {
			t.Errorf("%.0f samples/s at 60 faults/s: %s led by mmap %v, want %v (%+v)", tc.samples, v.Kind, led, tc.mmap, v.Evidence)
		}
	}
}

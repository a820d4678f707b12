package diagnose

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/sample"
)

// rankFrames is n frames of a job whose ranks wait waits[i] of their time
// with steps steps[i] seconds; the loader summary is the most waiting
// rank's, as the Ranks probe makes it.
func rankFrames(n int, waits, steps []float64, workers int) []sample.Frame {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	frames := make([]sample.Frame, n)
	for i := range frames {
		f := &frames[i]
		f.Time, f.IntervalSec = t0.Add(time.Duration(i)*time.Second), 1
		f.CPU = &sample.CPU{BusyPct: 40, Cores: []sample.Core{{BusyPct: 40}, {BusyPct: 40}}}
		pace := 0
		for r := range waits {
			f.Ranks = append(f.Ranks, sample.Rank{Rank: r, URL: "http://127.0.0.1:" + string(rune('0'+r)), PID: 100 + r, Connected: true,
				WaitShare: ptr(waits[r]), StepSec: ptr(steps[r]), BatchesPerSec: 10, Workers: ptr(workers)})
			if waits[r] > waits[pace] {
				pace = r
			}
		}
		f.Loader = &sample.Loader{Source: "rank", WaitShare: ptr(waits[pace]), StepMeanMs: ptr(1000 * steps[pace]), Workers: ptr(workers), BatchesPerSec: 10}
		f.Accel = &sample.VirtualAccel{BusyPct: 100 * (1 - waits[pace])}
		f.GPUs = []sample.GPU{{Index: 0, Processes: []sample.GPUProcess{{PID: 100}}}, {Index: 1, Processes: []sample.GPUProcess{{PID: 101}}}}
	}
	return frames
}

func ptr[T any](v T) *T { return &v }

func TestStragglerRankIsTheFirstEvidence(t *testing.T) {
	th := DefaultThresholds()
	// Rank 1 waits 55 % for its input; rank 0 waits 1 % but sits in the
	// all-reduce: its steps are 2.2× rank 1's.
	v := Classify(rankFrames(10, []float64{0.01, 0.55}, []float64{0.044, 0.020}, 0), th)
	if !v.Kind.Problem() || len(v.Evidence) == 0 {
		t.Fatalf("verdict %s %+v", v.Kind, v.Evidence)
	}
	want := "rank 1 waits 55 % of its time for its next batch (num_workers=0), on GPU 1; rank 0 waits in the all-reduce: its steps are 2.2× rank 1's"
	if got := v.Evidence[0].Text; got != want {
		t.Errorf("first evidence\n got %q\nwant %q", got, want)
	}
	if v.Straggler == nil || *v.Straggler != 1 {
		t.Errorf("straggler %v, want rank 1", v.Straggler)
	}

	// Every rank input-bound alike: no straggler, and it says so.
	v = Classify(rankFrames(10, []float64{0.5, 0.55, 0.52}, []float64{0.02, 0.02, 0.02}, 2), th)
	if v.Straggler != nil || !strings.HasPrefix(v.Evidence[0].Text, "all 3 ranks wait for input alike (50–55 %") {
		t.Errorf("alike: straggler %v, first evidence %q", v.Straggler, v.Evidence[0].Text)
	}

	// No rank waits: no rank evidence.
	v = Classify(rankFrames(10, []float64{0.01, 0.02}, []float64{0.02, 0.02}, 2), th)
	if v.Straggler != nil || (len(v.Evidence) > 0 && strings.Contains(v.Evidence[0].Text, "rank")) {
		t.Errorf("healthy ranks: %s, straggler %v, evidence %+v", v.Kind, v.Straggler, v.Evidence)
	}
}

func TestRankList(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want string
	}{
		{[]int{3}, "rank 3"},
		{[]int{0, 1}, "ranks 0 and 1"},
		{[]int{0, 1, 2, 4, 5, 6, 7}, "ranks 0–2 and 4–7"},
		{[]int{5, 0, 2}, "ranks 0, 2 and 5"},
	} {
		if got := rankList(c.in); got != c.want {
			t.Errorf("rankList(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestLaggingGPUIsNamed: of the job's four GPUs one is 12 % busy while the
// others are 88 %: the evidence names it. The idle GPUs outside the job
// (not judged) are left out.
func TestLaggingGPUIsNamed(t *testing.T) {
	frames := rankFrames(10, []float64{0.01, 0.02}, []float64{0.02, 0.02}, 2)
	for i := range frames {
		f := &frames[i]
		f.JobGPUs = "--gpus 0-3"
		f.GPUs = nil
		for g := range 6 {
			u := 88.0
			switch {
			case g == 2:
				u = 12
			case g >= 4:
				u = 0 // another job's, or idle: not judged
			}
			f.GPUs = append(f.GPUs, sample.GPU{Index: g, UtilPct: ptr(u), Job: g < 4})
		}
	}
	e, ok := laggingGPU(frames, DefaultThresholds())
	if !ok || e.Text != "GPU 2 is 12 % busy while the job's other 3 GPUs average 88 %: it lags (its rank waits for input, or it waits for the others)" {
		t.Fatalf("%v %q", ok, e.Text)
	}
	// All alike: nothing lags.
	for i := range frames {
		*frames[i].GPUs[2].UtilPct = 85
	}
	if _, ok := laggingGPU(frames, DefaultThresholds()); ok {
		t.Error("a lagging GPU among alike ones")
	}
}

// TestGPUUnderused: the GPU reads 100 % busy, nobody waits for input, but
// GPM says its SMs are 12 % active: gpu_underused, with the advice for
// small and launch-bound kernels. With SM activity 80 % it is healthy.
func TestGPUUnderused(t *testing.T) {
	frames := rankFrames(10, []float64{0.01, 0.02}, []float64{0.02, 0.02}, 2)
	for i := range frames {
		f := &frames[i]
		f.Ranks, f.Accel = nil, nil
		f.GPUs = []sample.GPU{{Index: 0, UtilPct: ptr(100.0), GPM: &sample.GPM{SMActivityPct: ptr(12.0)}}}
	}
	v := Classify(frames, DefaultThresholds())
	if v.Kind != GPUUnderused || len(v.Evidence) == 0 || !strings.HasPrefix(v.Evidence[0].Text, "utilization 100 % but SM activity 12 %") {
		t.Fatalf("%s %+v", v.Kind, v.Evidence)
	}
	if len(v.Advice) == 0 || !strings.Contains(strings.Join(v.Advice, " "), "CUDA graphs") {
		t.Errorf("advice %q", v.Advice)
	}
	for i := range frames {
		*frames[i].GPUs[0].GPM.SMActivityPct = 80
	}
	if v := Classify(frames, DefaultThresholds()); v.Kind != Healthy {
		t.Errorf("SM activity 80 %%: %s", v.Kind)
	}
}

// TestTransferBound: the loop waits half its time and the GPU receives
// 27 GB/s on a 31.5 GB/s PCIe 4.0 x16 link: the evidence says the input is
// transfer-bound and the advice names pinned memory and GPU-side decode.
// At 3 GB/s it does not.
func TestTransferBound(t *testing.T) {
	frames := rankFrames(10, []float64{0.5}, []float64{0.02}, 4)
	for i := range frames {
		f := &frames[i]
		f.Ranks, f.Accel = nil, nil
		f.GPUs = []sample.GPU{{Index: 0, UtilPct: ptr(45.0), PCIeRxBytesPerSec: ptr(27e9), PCIeLink: "PCIe 4.0 x16", PCIeLinkBytesPerSec: ptr(16 * 1969e6)}}
	}
	v := Classify(frames, DefaultThresholds())
	found := false
	for _, e := range v.Evidence {
		found = found || strings.HasPrefix(e.Text, "host-to-device copies run at 86 % of GPU 0's PCIe 4.0 x16 link")
	}
	if !v.Kind.Problem() || !found || !strings.Contains(strings.Join(v.Advice, " "), "pin_memory=True") {
		t.Fatalf("%s %+v %q", v.Kind, v.Evidence, v.Advice)
	}
	for i := range frames {
		*frames[i].GPUs[0].PCIeRxBytesPerSec = 3e9
	}
	for _, e := range Classify(frames, DefaultThresholds()).Evidence {
		if strings.Contains(e.Text, "host-to-device") {
			t.Errorf("3 GB/s of 31.5 called transfer-bound: %q", e.Text)
		}
	}
}

// TestMIGWithGPMIsAnAcceleratorSignal: on a MIG-only GPU (no utilization)
// whose instances' SM activity is 35 % while the loop waits half its
// time, the verdict is input-bound, not "no accelerator signal", and the
// missing line says what stands in.
func TestMIGWithGPMIsAnAcceleratorSignal(t *testing.T) {
	frames := rankFrames(10, []float64{0.5}, []float64{0.02}, 1)
	for i := range frames {
		f := &frames[i]
		f.Ranks, f.Accel = nil, nil
		f.GPUs = []sample.GPU{{Index: 0, Unavailable: map[string]string{"util_pct": "not available on MIG: …"},
			GPM: &sample.GPM{SMActivityPct: ptr(35.0)}, MIG: []sample.MIGDevice{{UUID: "MIG-a"}}}}
	}
	v := Classify(frames, DefaultThresholds())
	if !v.Kind.Problem() {
		t.Fatalf("%s %+v", v.Kind, v.Evidence)
	}
	if !strings.Contains(strings.Join(v.Missing, "; "), "the instances' SM activity (GPM) stands in") {
		t.Errorf("missing %q", v.Missing)
	}
}

// TestTwoLoadersSayingOneRankAreAmbiguous: two loaders that both say rank
// 0 are not averaged into one: the verdict says the ranks are ambiguous,
// names both, and names no straggler.
func TestTwoLoadersSayingOneRankAreAmbiguous(t *testing.T) {
	frames := rankFrames(10, []float64{0.01, 0.55}, []float64{0.044, 0.020}, 0)
	for i := range frames {
		frames[i].Ranks[1].Rank = 0
	}
	v := Classify(frames, DefaultThresholds())
	want := "ranks ambiguous: 2 loaders say rank 0 (http://127.0.0.1:0 (pid 100), http://127.0.0.1:1 (pid 101)): two jobs on this node, a restarted rank, or a launcher that sets RANK wrong; no rank is named the straggler"
	if len(v.Evidence) == 0 || v.Evidence[0].Text != want || v.Straggler != nil {
		t.Fatalf("straggler %v, evidence %+v", v.Straggler, v.Evidence)
	}
	if got := rankMeans(frames); len(got) != 2 {
		t.Errorf("the two loaders' means were merged: %+v", got)
	}
	// One of them gone: no longer ambiguous.
	for i := range frames {
		frames[i].Ranks[1].Connected = false
	}
	if v := Classify(frames, DefaultThresholds()); len(v.Evidence) > 0 && strings.HasPrefix(v.Evidence[0].Text, "ranks ambiguous") {
		t.Errorf("one loader answering is still ambiguous: %q", v.Evidence[0].Text)
	}
}

// One rule names the straggler, for the verdict and for the fleet: the
// rank that waits most, past the starved share, while some rank waits less.
func TestStragglerRule(t *testing.T) {
	th := DefaultThresholds()
	starved := th.WaitShareStarved
	for _, c := range []struct {
		waits []float64
		want  int // -1: none named
	}{
		{[]float64{0.01, starved + 0.2}, 1},
		{[]float64{starved + 0.1, starved - 0.01}, 0},          // barely apart: still the one input-bound rank
		{[]float64{starved + 0.2, starved + 0.1, starved}, -1}, // every rank starved alike
		{[]float64{starved - 0.05, 0.01}, -1},                  // none starved
		{[]float64{starved + 0.3}, -1},                         // one rank is no straggler
		{nil, -1},
	} {
		i, ok := th.Straggler(c.waits)
		if got := map[bool]int{true: i, false: -1}[ok]; got != c.want {
			t.Errorf("Straggler(%v) = %d, %v; want %d", c.waits, i, ok, c.want)
		}
	}
}

// TestSeparateJobsNameNoStraggler: two loaders on one box, neither of a
// distributed job (each a world of one, as the Ranks probe reports a
// discovered loader without WORLD_SIZE) — one waits 98 % for input, the
// other's steps are 6.6× longer. They are two jobs: no straggler, no
// all-reduce, no "ranks ambiguous", no "rank N"; the first evidence says
// they are separate and whose loader the verdict reads, by its pid. The
// same numbers from two ranks of one job of two still name rank 1.
func TestSeparateJobsNameNoStraggler(t *testing.T) {
	th := DefaultThresholds()
	frames := func(world int) []sample.Frame {
		fs := rankFrames(10, []float64{0.01, 0.98}, []float64{0.132, 0.020}, 0)
		for i := range fs {
			for j := range fs[i].Ranks {
				r := &fs[i].Ranks[j]
				r.WorldSize, r.Pacing = ptr(world), j == 1
				if world == 1 {
					r.Rank = 0
				}
			}
		}
		return fs
	}
	v := Classify(frames(1), th)
	if v.Straggler != nil || len(v.Evidence) == 0 {
		t.Fatalf("separate jobs: straggler %v, evidence %+v", v.Straggler, v.Evidence)
	}
	want := "2 loaders here are separate jobs, not ranks of one (no torch.distributed WORLD_SIZE above 1 ties them; no all-reduce waits between them): this verdict reads pid 101 waiting 98 %, the one that waits most for input; beside it pid 100 waiting 1 %"
	if got := v.Evidence[0].Text; got != want {
		t.Errorf("first evidence\n got %q\nwant %q", got, want)
	}
	for _, e := range v.Evidence[1:] {
		if strings.Contains(e.Text, "all-reduce") || strings.Contains(e.Text, "rank 0") || strings.Contains(e.Text, "rank 1") || strings.Contains(e.Text, "ambiguous") {
			t.Errorf("evidence between separate jobs: %q", e.Text)
		}
	}
	if _, ok := ambiguousRanks(frames(1)); ok {
		t.Error("two jobs of their own, each rank 0 of 1, read as ambiguous ranks")
	}
	if got := rankMeans(frames(1)); len(got) != 0 {
		t.Errorf("jobs of their own averaged as ranks: %+v", got)
	}

	v = Classify(frames(2), th)
	if v.Straggler == nil || *v.Straggler != 1 || !strings.Contains(v.Evidence[0].Text, "rank 0 waits in the all-reduce: its steps are 6.6× rank 1's") {
		t.Errorf("one job of two ranks: straggler %v, first evidence %+v", v.Straggler, v.Evidence)
	}
}

// TestAJobOfItsOwnBesideADistributedJob (a review): a 2-rank job and one
// unrelated script, the script waiting most, read "3 loaders here are
// separate jobs": the ranks are one job, and the evidence says the loader
// it reads is a job of its own beside them.
func TestAJobOfItsOwnBesideADistributedJob(t *testing.T) {
	two, one := 2, 1
	f := sample.Frame{Ranks: []sample.Rank{
		{URL: "a", PID: 100, Rank: 0, WorldSize: &two, Connected: true},
		{URL: "b", PID: 101, Rank: 1, WorldSize: &two, Connected: true},
		{URL: "c", PID: 200, Rank: 0, WorldSize: &one, Connected: true, Pacing: true},
	}}
	e, ok := separateJobs([]sample.Frame{f})
	if !ok || strings.Contains(e.Text, "3 loaders here are separate jobs") || !strings.HasPrefix(e.Text, "this verdict reads pid 200, a job of its own") ||
		!strings.Contains(e.Text, "pid 100 (rank 0 of 2), pid 101 (rank 1 of 2)") {
		t.Errorf("%v %q", ok, e.Text)
	}
}

// TestARankGoneIsNoLongerCounted: a rank the newest frame sees
// disconnected (its job ended) is not among the ranks the evidence names,
// though the window's older frames had it (a hostile user's review:
// "ranks 0, 0 and 1 wait in the all-reduce" beside a job that had ended).
func TestARankGoneIsNoLongerCounted(t *testing.T) {
	frames := rankFrames(10, []float64{0.01, 0.55, 0.02}, []float64{0.044, 0.020, 0.044}, 0)
	gone := func(n int) []sample.Frame { // rank 2 not connected in the newest n frames
		fs := slices.Clone(frames)
		for i := len(fs) - n; i < len(fs); i++ {
			fs[i].Ranks = slices.Clone(fs[i].Ranks)
			fs[i].Ranks[2].Connected, fs[i].Ranks[2].WaitShare = false, nil
		}
		return fs
	}
	want := "rank 1 waits 55 % of its time for its next batch (num_workers=0), on GPU 1; rank 0 waits in the all-reduce: its steps are 2.2× rank 1's"
	if v := Classify(gone(goneFrames), DefaultThresholds()); len(v.Evidence) == 0 || v.Evidence[0].Text != want {
		t.Fatalf("gone %d frames: first evidence %+v, want %q", goneFrames, v.Evidence, want)
	}
	// One read missed (a busy rank answering late) is no rank gone.
	want = "rank 1 waits 55 % of its time for its next batch (num_workers=0), on GPU 1; ranks 0 and 2 wait in the all-reduce: their steps are 2.2× rank 1's"
	if v := Classify(gone(1), DefaultThresholds()); len(v.Evidence) == 0 || v.Evidence[0].Text != want {
		t.Fatalf("one read missed: first evidence %+v, want %q", v.Evidence, want)
	}
}

// TestOneRankWatchedAloneSaysSo: a healthy rank of a job of two, watched
// alone (gpuwatch run on each rank), says that a slower rank elsewhere
// would read as its busy step; with both ranks seen it does not.
func TestOneRankWatchedAloneSaysSo(t *testing.T) {
	const want = "gpuwatch sees 1 of this job's 2 ranks"
	for _, c := range []struct {
		waits []float64
		said  bool
	}{{[]float64{0.01}, true}, {[]float64{0.01, 0.02}, false}} {
		frames := rankFrames(10, c.waits, []float64{0.02, 0.02}[:len(c.waits)], 2)
		for i := range frames {
			frames[i].Loader.WorldSize = ptr(2)
			for r := range frames[i].Ranks {
				frames[i].Ranks[r].WorldSize = ptr(2)
			}
		}
		v := Classify(frames, DefaultThresholds())
		said := slices.ContainsFunc(v.Advice, func(a string) bool { return strings.HasPrefix(a, want) })
		if v.Kind != Healthy || said != c.said {
			t.Errorf("%d ranks seen: %s, said %q: %v, want %v: %q", len(c.waits), v.Kind, want, said, c.said, v.Advice)
		}
	}
}

// TestAChangeIsEveryLocalRanks: a real two-rank job (testdata/pytorch/
// ddp2.py, gloo, num_workers=0) on this project's 2-core VM was told
// "num_workers 0 → 1: ≈ 6710–7128 samples/s (now 5064)"; each rank given
// a worker ran 3,531–3,599 samples/s against 5,079–5,392 without (a
// review). The change is every rank's: each keeps a core for its training
// process, and the cores left are shared. Its two ranks served elsewhere
// (another host's address) are not this node's, and the advice is the
// one-rank job's.
func TestAChangeIsEveryLocalRanks(t *testing.T) {
	fs := ddp2Frames(t)
	v := Classify(fs, DefaultThresholds())
	if v.Kind != SingleCoreMaxed || len(v.Changes) != 0 || !strings.Contains(strings.Join(v.Advice, "\n"), "one rank's share of what the node's 2 ranks' training processes, a core each,") {
		t.Errorf("two local ranks: %s, changes %+v, advice %q", v.Kind, v.Changes, v.Advice)
	}
	for i := range fs {
		for j := range fs[i].Ranks {
			fs[i].Ranks[j].URL = strings.Replace(fs[i].Ranks[j].URL, "127.0.0.1", "10.0.0.7", 1)
		}
	}
	if v := Classify(fs, DefaultThresholds()); len(v.Changes) == 0 || v.Changes[0].Knob != "num_workers" || v.Changes[0].To != "1" {
		t.Errorf("the ranks elsewhere: %s, changes %+v, advice %q", v.Kind, v.Changes, v.Advice)
	}
}

// TestARankWatchedAloneCountsItsLaunchersLocalRanks: the same two-rank
// job watched through one rank only (gpuwatch run on one rank's command,
// torchrun's ranks) sees no other rank; its launcher's LOCAL_WORLD_SIZE
// (the hook's local_world_size) says two share the node, and the advice
// is the two ranks'. Without it, or from a loader on another host, the
// one-rank job's.
func TestARankWatchedAloneCountsItsLaunchersLocalRanks(t *testing.T) {
	fs := ddp2Frames(t)
	alone := func(local *int, host string) []sample.Frame {
		out := make([]sample.Frame, len(fs))
		for i, f := range fs {
			l := *f.Loader
			l.Source = strings.Replace(l.Source, "127.0.0.1", host, 1)
			l.LocalWorldSize = local
			f.Loader = &l
			f.Ranks = nil
			for _, r := range fs[i].Ranks {
				if r.URL == fs[i].Loader.Source {
					r.URL = l.Source
					f.Ranks = append(f.Ranks, r)
				}
			}
			if len(f.Ranks) != 1 {
				t.Fatalf("frame %d: the loader's rank not found once among %+v", i, fs[i].Ranks)
			}
			out[i] = f
		}
		return out
	}
	two := ptr(2)
	if v := Classify(alone(two, "127.0.0.1"), DefaultThresholds()); len(v.Changes) != 0 || !strings.Contains(strings.Join(v.Advice, "\n"), "the node's 2 ranks'") {
		t.Errorf("one rank of two on this node: %s, changes %+v, advice %q", v.Kind, v.Changes, v.Advice)
	}
	for _, c := range []struct {
		name  string
		local *int
		host  string
	}{{"no local world size", nil, "127.0.0.1"}, {"another host's loader", two, "10.0.0.7"}} {
		if v := Classify(alone(c.local, c.host), DefaultThresholds()); len(v.Changes) == 0 || v.Changes[0].Knob != "num_workers" || v.Changes[0].To != "1" {
			t.Errorf("%s: %s, changes %+v, advice %q", c.name, v.Kind, v.Changes, v.Advice)
		}
	}
}

// ddp2Frames are the last 12 frames with a loader of the two-rank gloo
// job on 2 cores (testdata/pytorch/ddp2.py, num_workers=0).
func ddp2Frames(t *testing.T) []sample.Frame {
	var fs []sample.Frame
	for _, l := range readRecording(t, "testdata/pytorch/ddp2-2cores.jsonl") {
		if l.Type == "frame" && l.Loader != nil {
			fs = append(fs, l.Frame)
		}
	}
	return fs[len(fs)-12:]
}

package sample

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestCheckClampsOrDropsWhatNoProbeGives: each out-of-range number is
// dropped (a pointer) or clamped (a value), each long list cut, with one
// note each naming it in the frame's JSON names.
func TestCheckClampsOrDropsWhatNoProbeGives(t *testing.T) {
	huge := make([]Rank, 1000)
	f := &Frame{
		Time:  time.Unix(1, 0),
		CPU:   &CPU{BusyPct: 250, Cores: []Core{{ID: 0, BusyPct: -3}}},
		Mem:   &Mem{SwapInPagesPerSec: ptr(math.Inf(1))},
		Ranks: append([]Rank{{Rank: 0, WaitShare: ptr(1.5), StepSec: ptr(-5.0)}}, huge...),
		Loader: &Loader{WaitShare: ptr(0.4), WaitMeanMs: ptr(-5.0), Workers: ptr(-1), SamplesPerSec: math.NaN(),
			DatasetBytes: ptrI64(-7), Timeline: make([]BatchTiming, 100),
			Stages:  &LoaderStages{GetitemShare: ptr(1.2), TakeMs: ptr(-1.0)},
			Payload: &BatchPayload{PaddingShare: ptr(-0.1), Tensors: []PayloadTensor{{Shape: make([]int64, 9), Bytes: -1}}}},
		GPUs: []GPU{{UtilPct: ptr(101.0), UtilSamples: &UtilSamples{P5: -1, P95: 400}}},
	}
	notes := f.Check()
	want := []string{
		"cpu.busy_pct 250: outside 0–100, clamped",
		"cpu.cores[0].busy_pct -3: outside 0–100, clamped",
		"mem.swap_in_pages_per_sec +Inf: outside 0–1e+15, dropped",
		"gpus[0].util_pct 101: outside 0–100, dropped",
		"gpus[0].util_samples.p5 -1: outside 0–100, clamped",
		"gpus[0].util_samples.p95 400: outside 0–100, clamped",
		"loader.samples_per_sec NaN: not a number, set to 0",
		"loader.wait_mean_ms -5: outside 0–1e+15, dropped",
		"loader.workers -1: outside 0–2147483648, dropped",
		"loader.dataset_bytes -7: outside 0–4.611686018427388e+18, dropped",
		"loader.timeline has 100 entries: cut to 64",
		"loader.stages.take_ms -1: outside 0–1e+15, dropped",
		"loader.stages.getitem_share 1.2: outside 0–1, dropped",
		"loader.payload.padding_share -0.1: outside 0–1, dropped",
		"loader.payload.tensors[0].shape has 9 entries: cut to 8",
		"loader.payload.tensors[0].bytes -1: outside 0–4.611686018427388e+18, clamped",
		"ranks has 1001 entries: cut to 256",
		"ranks[0].wait_share 1.5: outside 0–1, dropped",
		"ranks[0].step_sec -5: outside 0–1e+15, dropped",
	}
	for _, w := range want {
		found := false
		for _, n := range notes {
			found = found || n == w
		}
		if !found {
			t.Errorf("no note %q in\n%s", w, strings.Join(notes, "\n"))
		}
	}
	if len(notes) != len(want) {
		t.Errorf("%d notes, want %d:\n%s", len(notes), len(want), strings.Join(notes, "\n"))
	}
	if f.CPU.BusyPct != 100 || f.CPU.Cores[0].BusyPct != 0 || f.Mem.SwapInPagesPerSec != nil || f.GPUs[0].UtilPct != nil ||
		f.Loader.WaitMeanMs != nil || f.Loader.Workers != nil || f.Loader.SamplesPerSec != 0 || *f.Loader.WaitShare != 0.4 ||
		len(f.Ranks) != MaxRanks || f.Ranks[0].WaitShare != nil || f.Ranks[0].StepSec != nil || len(f.Loader.Timeline) != 64 {
		t.Errorf("frame after Check: %+v %+v %+v", f.CPU, f.Loader, f.Ranks[0])
	}
}

// TestCheckLeavesAProbesFrameAlone: a frame within every range comes back
// the same, with no note (no behaviour changes for well-formed input).
func TestCheckLeavesAProbesFrameAlone(t *testing.T) {
	f := &Frame{
		Time: time.Unix(1, 0), IntervalSec: 1,
		CPU:    &CPU{BusyPct: 100, Cores: []Core{{ID: 3, BusyPct: 0}}, Load1: 12},
		Procs:  &Procs{List: []Proc{{PID: 4100, CPUPct: 790}}, Threads: []Thread{{TID: 4101, CPUPct: 100.8}}},
		Loader: &Loader{WaitShare: ptr(1.0), WaitMeanMs: ptr(0.0), Workers: ptr(0), Knobs: map[string]string{"workers": "4"}},
		Ranks:  make([]Rank, MaxRanks),
		GPUs:   []GPU{{UtilPct: ptr(100.0), UtilSamples: &UtilSamples{N: 6, P5: 0, P95: 100}, PowerWatts: ptr(700.0)}},
		Profile: &Profile{Categories: []ProfileCategory{{Name: "reading", Share: 1}},
			Top: []ProfileFunc{{Name: "f", Flat: 0.5, Cum: 1}}},
		Unavailable: map[Source]string{"gpu": "no driver"},
	}
	before, _ := json.Marshal(f)
	if notes := f.Check(); len(notes) != 0 {
		t.Fatalf("notes on a well-formed frame: %q", notes)
	}
	if after, _ := json.Marshal(f); string(after) != string(before) {
		t.Errorf("Check changed a well-formed frame:\n%s\n%s", before, after)
	}
}

// TestCheckBoundsItsNotes: a frame with a million bad numbers gets a
// bounded list of notes, the last saying how many more.
func TestCheckBoundsItsNotes(t *testing.T) {
	f := &Frame{CPU: &CPU{}}
	for i := range 4000 {
		f.CPU.Cores = append(f.CPU.Cores, Core{ID: i, BusyPct: -1})
	}
	notes := f.Check()
	if len(notes) != checkMaxNotes || !strings.HasPrefix(notes[len(notes)-1], "and 3937 more") {
		t.Errorf("%d notes, last %q", len(notes), notes[len(notes)-1])
	}
}

// TestMaxRanksIsTheRanksTag: the tag that cuts a recorded frame's ranks
// and the constant the probes attach to are one number.
func TestMaxRanksIsTheRanksTag(t *testing.T) {
	sf, _ := reflect.TypeOf(Frame{}).FieldByName("Ranks")
	if got := sf.Tag.Get("check"); got != "max=256" || MaxRanks != 256 {
		t.Errorf("Ranks' tag %q, MaxRanks %d: keep them one number", got, MaxRanks)
	}
}

func ptrI64(v int64) *int64 { return &v }

func ptr[T any](v T) *T { return &v }

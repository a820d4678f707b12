package report

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/recording"
	"github.com/gpuwatch/gpuwatch/sample"
)

// TestReportRanks: a recording of a two-rank job, rank 1 input-bound and
// rank 0 waiting in the all-reduce, gives a per-rank table (rank 1 named
// the straggler) and the per-rank wait and step charts; a rank's URL from
// the recording is escaped.
func TestReportRanks(t *testing.T) {
	var frames []recording.Recorded
	for i := range 20 {
		w0, w1, s0, s1 := 0.01, 0.55, 0.044, 0.020
		f := sample.Frame{Time: generated.Add(time.Duration(i) * time.Second), IntervalSec: 1,
			CPU: &sample.CPU{BusyPct: 50, Cores: []sample.Core{{BusyPct: 50}, {ID: 1, BusyPct: 50}}},
			Ranks: []sample.Rank{
				{Rank: 0, URL: "http://127.0.0.1:6061/<x-rank>", Connected: true, WaitShare: &w0, StepSec: &s0, SamplesPerSec: 700},
				{Rank: 1, URL: "http://127.0.0.1:6062", Connected: true, WaitShare: &w1, StepSec: &s1, SamplesPerSec: 700, Pacing: true},
			},
			Loader: &sample.Loader{Source: "http://127.0.0.1:6062", WaitShare: &w1, StepMeanMs: ptrF(20), Workers: ptrI(0), BatchesPerSec: 24},
			Accel:  &sample.VirtualAccel{BusyPct: 45}}
		frames = append(frames, recording.Recorded{Frame: f})
	}
	s := Build(recording.New(recording.Header{Host: "h", Cores: 2}, frames, nil), "x", diagnose.DefaultThresholds(), generated)
	if len(s.Ranks) != 2 || s.Ranks[1].StragglerFrames == 0 || s.Ranks[0].StragglerFrames != 0 || s.Ranks[1].MeanWaitShare != 0.55 {
		t.Fatalf("ranks %+v", s.Ranks)
	}
	if len(s.Series.RankWait) != 2 || len(s.Series.RankWait[1]) == 0 || math.Abs(*s.Series.RankWait[1][0]-55) > 1e-9 {
		t.Fatalf("rank series %+v", s.Series.RankWait)
	}
	var h, m bytes.Buffer
	if err := WriteHTML(&h, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`id="ranks"`, "chart-rank-wait", "chart-rank-step", "6061/&lt;x-rank&gt;", "rank 1"} {
		if !strings.Contains(h.String(), want) {
			t.Errorf("HTML report lacks %q", want)
		}
	}
	if strings.Contains(h.String(), "<x-rank>") {
		t.Error("a rank's URL reached the HTML unescaped")
	}
	if err := WriteMarkdown(&m, s, ""); err != nil {
		t.Fatal(err)
	}
	// Steps in units that fit them: a 20 ms step once read "0s".
	if !strings.Contains(m.String(), "## Ranks") || !strings.Contains(m.String(), "| 1 | http://127.0.0.1:6062 | 55 % | 20ms |") ||
		!strings.Contains(m.String(), "| 44ms |") {
		t.Errorf("Markdown report:\n%s", m.String())
	}
}

func ptrF(v float64) *float64 { return &v }
func ptrI(v int) *int         { return &v }

// TestReportNamesJobsOfTheirOwnByProcess (a review: two unrelated scripts
// were "rank 0" twice in the report): two discovered loaders of world
// size 1 are named by pid and command in the Markdown, HTML and JSON
// rows, under a heading that says they are separate jobs, and neither is
// counted the straggler when the verdict names rank 0 of another job.
func TestReportNamesJobsOfTheirOwnByProcess(t *testing.T) {
	var frames []recording.Recorded
	one := 1
	for i := range 20 {
		w0, w1, s0, s1 := 0.98, 0.01, 0.020, 0.132
		f := sample.Frame{Time: generated.Add(time.Duration(i) * time.Second), IntervalSec: 1,
			CPU: &sample.CPU{BusyPct: 50, Cores: []sample.Core{{BusyPct: 50}, {ID: 1, BusyPct: 50}}},
			Ranks: []sample.Rank{
				{Rank: 0, WorldSize: &one, PID: 5816, URL: "http://127.0.0.1:6061", Connected: true, WaitShare: &w0, StepSec: &s0, SamplesPerSec: 700, Pacing: true},
				{Rank: 0, WorldSize: &one, PID: 5817, URL: "http://127.0.0.1:6062", Connected: true, WaitShare: &w1, StepSec: &s1, SamplesPerSec: 70},
			},
			Target: &sample.Target{PID: 5816, Command: "python3 slowin.py <x-cmd>"},
			Procs:  &sample.Procs{List: []sample.Proc{{PID: 5817, Name: "python3"}}},
			Loader: &sample.Loader{Source: "http://127.0.0.1:6061", WaitShare: &w0, StepMeanMs: ptrF(20), Workers: ptrI(0), BatchesPerSec: 24}}
		frames = append(frames, recording.Recorded{Frame: f})
	}
	s := Build(recording.New(recording.Header{Host: "h", Cores: 2}, frames, nil), "x", diagnose.DefaultThresholds(), generated)
	if len(s.Ranks) != 2 || s.Ranks[0].Name != "pid 5816 (python3 slowin.py <x-cmd>)" || s.Ranks[1].Name != "pid 5817 (python3)" ||
		s.Ranks[0].StragglerFrames+s.Ranks[1].StragglerFrames != 0 {
		t.Fatalf("ranks %+v", s.Ranks)
	}
	var h, m bytes.Buffer
	if err := WriteHTML(&h, s); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&m, s, ""); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Loaders: 2 separate jobs, not ranks of one", "pid 5816 (python3 slowin.py &lt;x-cmd&gt;)", "━ pid 5817 (python3)"} {
		if !strings.Contains(h.String(), want) {
			t.Errorf("HTML report lacks %q", want)
		}
	}
	if strings.Contains(h.String(), "<x-cmd>") || strings.Contains(h.String(), "rank 0") {
		t.Error("HTML: a command unescaped, or a job of its own called rank 0")
	}
	for _, want := range []string{"## Loaders: 2 separate jobs, not ranks of one", "| pid 5817 (python3) | http://127.0.0.1:6062 | 1 % |"} {
		if !strings.Contains(m.String(), want) {
			t.Errorf("Markdown report lacks %q:\n%s", want, m.String())
		}
	}
	if strings.Contains(m.String(), "## Ranks") {
		t.Error("Markdown: separate jobs under a Ranks heading")
	}
}

// TestALoaderWhoseRankComesLaterIsOneRow (a review): a spawned DDP job's
// loaders read as jobs of their own (world size 1) until its process
// group was up, then as ranks 0 and 1 of 2; the report had three rows,
// one process both "a separate job" and "rank 1". Each loader is one
// row, with the rank and name its newest frame gives.
func TestALoaderWhoseRankComesLaterIsOneRow(t *testing.T) {
	var frames []recording.Recorded
	one, two := 1, 2
	for i := range 20 {
		w, s := 0.5, 0.02
		world, rank1 := &one, 0
		if i >= 5 {
			world, rank1 = &two, 1
		}
		f := sample.Frame{Time: generated.Add(time.Duration(i) * time.Second), IntervalSec: 1,
			Ranks: []sample.Rank{
				{Rank: 0, WorldSize: world, PID: 9311, URL: "http://127.0.0.1:6061", Connected: true, WaitShare: &w, StepSec: &s, SamplesPerSec: 100},
				{Rank: rank1, WorldSize: world, PID: 9312, URL: "http://127.0.0.1:6062", Connected: true, WaitShare: &w, StepSec: &s, SamplesPerSec: 100},
			}}
		frames = append(frames, recording.Recorded{Frame: f})
	}
	s := Build(recording.New(recording.Header{Host: "h", Cores: 2}, frames, nil), "x", diagnose.DefaultThresholds(), generated)
	if len(s.Ranks) != 2 || s.Ranks[0].Name != "rank 0" || s.Ranks[1].Name != "rank 1" || s.Ranks[1].Rank != 1 {
		t.Fatalf("rows %+v", s.Ranks)
	}
	var m bytes.Buffer
	if err := WriteMarkdown(&m, s, ""); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(m.String(), "separate jobs") {
		t.Errorf("one job of two ranks said as separate jobs:\n%s", m.String())
	}
}

// TestARanksRateLeavesTheCeilingsReplayOut: while the ceiling replays
// kept batches the loader hands out none of its own; the loader section
// leaves those frames' 0 samples/s out, and so does the rank's row (a
// review: 361 against 481 samples/s for the one rank).
func TestARanksRateLeavesTheCeilingsReplayOut(t *testing.T) {
	var frames []recording.Recorded
	for i := range 20 {
		w, step, rate := 0.85, 0.031, 480.0
		l := &sample.Loader{Source: "http://127.0.0.1:6061", WaitShare: &w, StepMeanMs: ptrF(31), Workers: ptrI(2), BatchesPerSec: 15, SamplesPerSec: rate}
		if i >= 15 {
			rate = 0
			l.SamplesPerSec, l.BatchesPerSec = 0, 0
			l.Ceiling = &sample.Ceiling{State: sample.CeilingReplaying}
		}
		f := sample.Frame{Time: generated.Add(time.Duration(i) * time.Second), IntervalSec: 1,
			Ranks:  []sample.Rank{{Rank: 0, URL: "http://127.0.0.1:6061", Connected: true, WaitShare: &w, StepSec: &step, SamplesPerSec: rate}},
			Loader: l}
		frames = append(frames, recording.Recorded{Frame: f})
	}
	s := Build(recording.New(recording.Header{Host: "h", Cores: 2}, frames, nil), "x", diagnose.DefaultThresholds(), generated)
	if len(s.Ranks) != 1 || s.Ranks[0].MeanSamplesPerSec == nil || *s.Ranks[0].MeanSamplesPerSec != 480 {
		t.Fatalf("ranks %+v", s.Ranks)
	}
	if s.Loader == nil || s.Loader.MeanSamplesPerSec == nil || *s.Loader.MeanSamplesPerSec != 480 {
		t.Fatalf("loader %+v", s.Loader)
	}
}

// TestAReportWithoutAVersionSaysSo: a header with no gpuwatch version read
// "gpuwatch ." in both reports.
func TestAReportWithoutAVersionSaysSo(t *testing.T) {
	frames := []recording.Recorded{{Frame: sample.Frame{Time: generated, IntervalSec: 1}}}
	s := Build(recording.New(recording.Header{Host: "h"}, frames, nil), "x", diagnose.DefaultThresholds(), generated)
	var h, m bytes.Buffer
	if err := WriteHTML(&h, s); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&m, s, ""); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"HTML": h.String(), "Markdown": m.String()} {
		if !strings.Contains(out, "gpuwatch (version not recorded).") || strings.Contains(out, "gpuwatch .") {
			t.Errorf("%s report does not say the version was not recorded", name)
		}
	}
}

// TestRanksTitleCountsInWords: one job of its own is not "1 separate
// jobs" (a user's review), and mixed counts read in the singular where
// one.
func TestRanksTitleCountsInWords(t *testing.T) {
	one, two := 1, 2
	for _, c := range []struct {
		ranks []RankInfo
		want  string
	}{
		{[]RankInfo{{WorldSize: &one}}, "Loaders: one job of its own, no ranks"},
		{[]RankInfo{{WorldSize: &one}, {WorldSize: &one}}, "Loaders: 2 separate jobs, not ranks of one"},
		{[]RankInfo{{WorldSize: &two}, {WorldSize: &two}, {WorldSize: &one}}, "Ranks and loaders: 2 ranks, 1 separate job"},
	} {
		if got, _ := ranksTitle(c.ranks); got != c.want {
			t.Errorf("%d ranks: %q, want %q", len(c.ranks), got, c.want)
		}
	}
}

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

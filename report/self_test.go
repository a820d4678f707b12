package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/recording"
	"github.com/gpuwatch/gpuwatch/sample"
)

// TestReportSaysGpuwatchsOwnCost: gpuwatch's CPU over a recording is the
// sum of its totals' steps (a total that goes back, a second run appended,
// starts again rather than subtracting), its mean share of a core that
// over the span of the readings, its memory the largest reading; a
// recording without the readings has no such line.
func TestReportSaysGpuwatchsOwnCost(t *testing.T) {
	rss := func(mib uint64) *uint64 { b := mib << 20; return &b }
	// 0.004 s of CPU a second (0.4 % of a core), then a restart at 0.1 s.
	totals := []float64{1.000, 1.004, 1.008, 1.012, 0.100, 0.104}
	var frames []recording.Recorded
	for i, tot := range totals {
		f := sample.Frame{Time: generated.Add(time.Duration(i) * time.Second), IntervalSec: 1,
			Self: &sample.SelfCost{CPUSecTotal: tot, RSSBytes: rss(uint64(12 + i%3))}}
		frames = append(frames, recording.Recorded{Frame: f})
	}
	s := Build(recording.New(recording.Header{Host: "h", Cores: 2}, frames, nil), "x", diagnose.DefaultThresholds(), generated)
	got := s.Recording.Self
	if got == nil || abs(got.CPUSec-0.016) > 1e-9 || got.SpanSec != 5 || abs(got.MeanCPUPct-0.32) > 1e-9 || got.PeakRSSBytes == nil || *got.PeakRSSBytes != 14<<20 {
		t.Fatalf("self %+v", got)
	}
	const line = "gpuwatch itself: 0.3 % of a core on average (16ms of CPU in 5.0s), at most 14MiB resident."
	var m, h bytes.Buffer
	if err := WriteMarkdown(&m, s, ""); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&h, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m.String(), line) || !strings.Contains(h.String(), "<p>"+line+"</p>") {
		t.Errorf("want %q in both reports; Markdown:\n%s", line, m.String())
	}

	for i := range frames {
		frames[i].Frame.Self = nil
	}
	s = Build(recording.New(recording.Header{Host: "h", Cores: 2}, frames, nil), "x", diagnose.DefaultThresholds(), generated)
	if s.Recording.Self != nil {
		t.Errorf("a recording without readings: self %+v", s.Recording.Self)
	}
}

func abs(x float64) float64 { return max(x, -x) }

package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/gpuwatch/gpuwatch/sample"
)

// TestFooterShowsItsOwnCost: the footer ends with gpuwatch's own cost,
// its CPU per tick (its share of a core over the frame's interval) and in
// total where the frame says them; where the width is short the keys
// give way from the end, down to "q quit · ? help", then the cost's
// details (the total, the tick), and the cost goes only when even its
// fewest words would not fit; a frame without it, and a replay (whose
// frames carry the recording gpuwatch's cost), show the keys alone. One
// line, always: dropped, never wrapped.
func TestFooterShowsItsOwnCost(t *testing.T) {
	const (
		cost = "gpuwatch 0.4 % CPU (4.0ms/tick), 3.2s total · 14MiB"
		tick = "gpuwatch 0.4 % CPU (4.0ms/tick) · 14MiB"
		few  = "gpuwatch 0.4 % CPU · 14MiB"
	)
	self := &sample.SelfCost{CPUPct: f64(0.4), CPUSecTotal: 3.2, RSSBytes: u64(14 << 20)}
	feed := func(m *Model, s *sample.SelfCost, interval float64) *Model {
		m.Observe(Feed{Frame: &sample.Frame{Time: t0, IntervalSec: interval, Self: s, Unavailable: map[sample.Source]string{}}})
		return m
	}
	live := func() *Model { return New(Options{Interval: time.Second}) }
	for _, c := range []struct {
		name       string
		m          *Model
		w          int
		status     string
		keys, tail string // the footer starts with keys (styles stripped) and ends with tail
	}{
		{"wide: every key and the cost", feed(live(), self, 1), 140, "", "q quit · ? help · d details · space pause · tab focus · enter zoom · +/- 1s  ", cost},
		{"120 columns: the last key gives way", feed(live(), self, 1), 120, "", "q quit · ? help · d details · space pause · tab focus · enter zoom  ", cost},
		{"80 columns: the keys give way to the cost's details", feed(live(), self, 1), 80, "", "q quit · ? help · d details  ", cost},
		{"the first frame: no interval, no tick", feed(live(), self, 0), 80, "", "q quit · ? help · d details  ", "gpuwatch 0.4 % CPU, 3.2s total · 14MiB"},
		{"60 columns: the total goes", feed(live(), self, 1), 60, "", "q quit · ? help  ", tick},
		{"narrow: the tick goes too", feed(live(), self, 1), 46, "", "q quit · ? help  ", few},
		{"narrower: the memory goes", feed(live(), self, 1), 36, "", "q quit · ? help  ", "gpuwatch 0.4 % CPU"},
		{"a status too long for both: the cost goes", feed(live(), self, 1), 60, "interval 2s, and a long message after it", "interval 2s", "? help"},
		{"no cost read: the keys alone", feed(live(), nil, 1), 80, "", "q quit · ? help · d details · space pause · tab focus · enter zoom · +/- 1s", "+/- 1s"},
		{"a replay: not this process's cost", feed(New(Options{Interval: time.Second, Replay: &Replay{}}), self, 1), 120, "", "q quit · ? help", "enter zoom"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.status != "" {
				c.m.setStatus(c.status, t0)
			}
			got := ansi.Strip(c.m.footer(c.w))
			if w := ansi.StringWidth(got); w != c.w || strings.Contains(got, "\n") {
				t.Errorf("%d cells wide, want %d on one line: %q", w, c.w, got)
			}
			if trimmed := strings.TrimRight(got, " "); !strings.HasPrefix(got, c.keys) || !strings.HasSuffix(trimmed, c.tail) {
				t.Errorf("footer %q: want it to start %q and end %q", got, c.keys, c.tail)
			}
		})
	}
}

// TestFooterShowsTheHooksCost: the hook's own cost inside the job comes
// before gpuwatch's, per sample with its two costliest parts (per batch
// where the samples are not counted); where the width is short its
// second part goes after gpuwatch's details, its first part last; in a
// replay it stays (it is the recorded job's), and gpuwatch's goes.
func TestFooterShowsTheHooksCost(t *testing.T) {
	self := &sample.SelfCost{CPUPct: f64(0.4), CPUSecTotal: 3.2, RSSBytes: u64(14 << 20)}
	parts := []sample.HookCPUPart{ // as a recorded frame may hold them: in any order
		{Part: "payload", PerSampleUs: f64(0.1), Cores: 0.0001}, {Part: "server", PerSampleUs: f64(1.6), Cores: 0.0023},
		{Part: "stages", PerSampleUs: f64(0), Cores: 0}, {Part: "loop", PerSampleUs: f64(0.4), Cores: 0.0006},
	}
	loader := &sample.Loader{Source: "hook", HookCPUSecPerSec: f64(0.0031), HookCPUPerSampleUs: f64(2.14), HookCPUParts: parts}
	perBatch := &sample.Loader{Source: "hook", HookCPUSecPerSec: f64(0.0031), HookCPUPerBatchUs: f64(9.3),
		HookCPUParts: []sample.HookCPUPart{{Part: "server", PerBatchUs: f64(7), Cores: 0.0023}, {Part: "loop", PerBatchUs: f64(2.3), Cores: 0.0008}}}
	feed := func(m *Model, l *sample.Loader) *Model {
		m.Observe(Feed{Frame: &sample.Frame{Time: t0, IntervalSec: 1, Self: self, Loader: l, Unavailable: map[sample.Source]string{}}})
		return m
	}
	live := func() *Model { return New(Options{Interval: time.Second}) }
	replay := func() *Model { return New(Options{Interval: time.Second, Replay: &Replay{}}) }
	for _, c := range []struct {
		name string
		m    *Model
		w    int
		tail string
	}{
		{"live: the hook's with two parts, then gpuwatch's", feed(live(), loader), 140,
			"hook 0.3 % CPU, 2.1 µs/sample (server 1.6, loop 0.4) · gpuwatch 0.4 % CPU (4.0ms/tick), 3.2s total · 14MiB"},
		{"120 columns: the second part goes", feed(live(), loader), 120,
			"hook 0.3 % CPU, 2.1 µs/sample (server 1.6) · gpuwatch 0.4 % CPU (4.0ms/tick), 3.2s total · 14MiB"},
		{"80 columns: the costliest part, gpuwatch's share", feed(live(), loader), 80,
			"hook 0.3 % CPU, 2.1 µs/sample (server 1.6) · gpuwatch 0.4 % CPU"},
		{"70 columns: the part goes", feed(live(), loader), 70, "hook 0.3 % CPU, 2.1 µs/sample · gpuwatch 0.4 % CPU"},
		{"samples not counted: per batch", feed(live(), perBatch), 140,
			"hook 0.3 % CPU, 9.3 µs/batch (server 7.0, loop 2.3) · gpuwatch 0.4 % CPU (4.0ms/tick), 3.2s total · 14MiB"},
		{"a replay: the hook's alone", feed(replay(), loader), 140, "hook 0.3 % CPU, 2.1 µs/sample (server 1.6, loop 0.4)"},
		{"a replay at 60: the hook's alone, with a part", feed(replay(), loader), 60, "hook 0.3 % CPU, 2.1 µs/sample (server 1.6)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := ansi.Strip(c.m.footer(c.w))
			if w := ansi.StringWidth(got); w != c.w {
				t.Errorf("%d cells wide, want %d: %q", w, c.w, got)
			}
			trimmed := strings.TrimRight(got, " ")
			if !strings.HasPrefix(got, "q quit · ? help") || !strings.HasSuffix(trimmed, "  "+c.tail) || strings.Count(got, "gpuwatch ") > 1 {
				t.Errorf("footer %q: want it to end %q", got, c.tail)
			}
		})
	}
	if got := (&sample.Loader{HookCPUSecPerSec: f64(0.125)}).HookCost(); got != "hook 12 % CPU" {
		t.Errorf("without samples: %q", got)
	}
	if got := (&sample.Loader{HookCPUSecPerSec: f64(0.125), HookCPUParts: parts}).HookCostTop(2); got != "hook 12 % CPU" {
		t.Errorf("parts without a figure per sample: %q", got)
	}
}

package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/gpuwatch/gpuwatch/sample"
)

// TestFooterShowsItsOwnCost: the footer ends with gpuwatch's own cost;
// where the width is short the keys give way from the end, down to "q quit
// · ? help", and the cost goes only when even that would not fit; a frame
// without it, and a replay (whose frames carry the recording gpuwatch's
// cost), show the keys alone.
func TestFooterShowsItsOwnCost(t *testing.T) {
	const cost = "gpuwatch 0.4 % CPU · 14MiB"
	self := &sample.SelfCost{CPUPct: f64(0.4), CPUSecTotal: 3.2, RSSBytes: u64(14 << 20)}
	feed := func(m *Model, s *sample.SelfCost) *Model {
		m.Observe(Feed{Frame: &sample.Frame{Time: t0, Self: s, Unavailable: map[sample.Source]string{}}})
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
		{"wide: every key and the cost", feed(live(), self), 120, "", "q quit · ? help · d details · space pause · tab focus · enter zoom · +/- 1s", cost},
		{"80 columns: the last keys give way", feed(live(), self), 80, "", "q quit · ? help · d details · space pause  ", cost},
		{"narrow: down to quit and help", feed(live(), self), 46, "", "q quit · ? help  ", cost},
		{"a status too long for both: the cost goes", feed(live(), self), 60, "interval 2s, and a long message after it", "interval 2s", "? help"},
		{"no cost read: the keys alone", feed(live(), nil), 80, "", "q quit · ? help · d details · space pause · tab focus · enter zoom · +/- 1s", "+/- 1s"},
		{"a replay: not this process's cost", feed(New(Options{Interval: time.Second, Replay: &Replay{}}), self), 120, "", "q quit · ? help", "enter zoom"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.status != "" {
				c.m.setStatus(c.status, t0)
			}
			got := ansi.Strip(c.m.footer(c.w))
			if w := ansi.StringWidth(got); w != c.w {
				t.Errorf("%d cells wide, want %d", w, c.w)
			}
			if trimmed := strings.TrimRight(got, " "); !strings.HasPrefix(got, c.keys) || !strings.HasSuffix(trimmed, c.tail) {
				t.Errorf("footer %q: want it to start %q and end %q", got, c.keys, c.tail)
			}
		})
	}
}

// TestFooterShowsTheHooksCost: the hook's own cost inside the job comes
// before gpuwatch's; in a replay it stays (it is the recorded job's), and
// gpuwatch's goes.
func TestFooterShowsTheHooksCost(t *testing.T) {
	self := &sample.SelfCost{CPUPct: f64(0.4), CPUSecTotal: 3.2, RSSBytes: u64(14 << 20)}
	loader := &sample.Loader{Source: "hook", HookCPUSecPerSec: f64(0.0031), HookCPUPerSampleUs: f64(2.14)}
	feed := func(m *Model) *Model {
		m.Observe(Feed{Frame: &sample.Frame{Time: t0, Self: self, Loader: loader, Unavailable: map[sample.Source]string{}}})
		return m
	}
	const hook = "hook 0.3 % CPU, 2.1 µs/sample"
	for _, c := range []struct {
		name string
		m    *Model
		tail string
	}{
		{"live: the hook's, then gpuwatch's", feed(New(Options{Interval: time.Second})), hook + " · gpuwatch 0.4 % CPU · 14MiB"},
		{"a replay: the hook's alone", feed(New(Options{Interval: time.Second, Replay: &Replay{}})), hook},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := strings.TrimRight(ansi.Strip(c.m.footer(140)), " ")
			if !strings.HasSuffix(got, c.tail) || strings.Count(got, "gpuwatch ") > 1 {
				t.Errorf("footer %q: want it to end %q", got, c.tail)
			}
		})
	}
	if got := (&sample.Loader{HookCPUSecPerSec: f64(0.125)}).HookCost(); got != "hook 12 % CPU" {
		t.Errorf("without samples: %q", got)
	}
}

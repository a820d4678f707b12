package tui

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// costSteps are the footer's cost from the most said to the least: the
// hook's two costliest parts, gpuwatch's CPU in total, its CPU per tick,
// the hook's last part, gpuwatch's memory, given up in about that order
// (the hook's figures, inside the job, before gpuwatch's), down to the
// cost in its fewest words ("hook 0.3 % CPU, 2.1 µs/sample · gpuwatch 0.4
// % CPU").
var costSteps = []struct {
	parts            int
	tick, total, rss bool
}{
	{2, true, true, true},
	{1, true, true, true},
	{1, true, false, true},
	{1, false, false, true},
	{1, false, false, false},
	{0, false, false, true},
	{0, false, false, false},
}

// costWords is the footer's cost from the newest frame, the hook's
// inside the job first, at each of costSteps, the same words once:
// "hook 0.3 % CPU, 2.1 µs/sample (server 1.6, loop 0.3) · gpuwatch 0.4 %
// CPU (4.0ms/tick), 3.2s total · 14MiB". A replay's frames carry the
// recording gpuwatch's cost, not this one's: there only the hook's, the
// recorded job's. Nil where the frame says neither.
func (m *Model) costWords() []string {
	f := m.latest.Frame
	if f == nil {
		return nil
	}
	var out []string
	for _, st := range costSteps {
		words := f.Loader.HookCostTop(st.parts)
		if m.opt.Replay == nil {
			self := f.Self.Words(f.IntervalSec, st.tick, st.total, st.rss)
			if l := f.Loader; l != nil && l.Source == "embedded" {
				// The demo's loader runs in gpuwatch's process: its cost is
				// in the figure (a review read it as gpuwatch's own).
				self = strings.Replace(self, "gpuwatch ", "gpuwatch+loader ", 1)
			}
			if self != "" && words != "" {
				words += " · " + self
			} else {
				words += self
			}
		}
		if words != "" && (len(out) == 0 || out[len(out)-1] != words) {
			out = append(out, words)
		}
	}
	return out
}

// costAndKeys fits the cost and the keys into room cells (two between
// them): the most said cost that fits beside "q quit · ? help", the keys
// going from the end first; the keys alone, down to those two, where no
// cost fits, and all of them where there is none.
func costAndKeys(costs, keys []string, room int) (cost, joined string) {
	if len(costs) == 0 {
		return "", strings.Join(keys, " · ")
	}
	for _, c := range costs {
		left := room - ansi.StringWidth(c)
		for n := len(keys); n >= min(2, len(keys)); n-- {
			if k := strings.Join(keys[:n], " · "); ansi.StringWidth(k) <= left {
				return c, k
			}
		}
	}
	return "", strings.Join(keys[:min(2, len(keys))], " · ")
}

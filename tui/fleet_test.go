package tui

import (
	"errors"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/gpuwatch/gpuwatch/fleet"
)

// TestFleetViewCarriesNoEscapesFromOutside: a title, a row and an error
// holding escape sequences (retitle, clear screen, colour) reach the
// screen with their control bytes replaced; the view's own styling is the
// only escape left.
func TestFleetViewCarriesNoEscapesFromOutside(t *testing.T) {
	const evil = "\x1b]0;PWN\x07\x1b[2J\x1b[31m"
	rank := 1
	for _, u := range []FleetUpdate{
		{Snapshot: fleet.Snapshot{Time: time.Unix(0, 0), Rows: []fleet.Row{{Instance: "a" + evil, Kind: "gpu_starved" + evil, Rank: &rank, Loader: evil, Ambiguous: true}},
			Dropped: []string{"x" + evil}}},
		{Err: errors.New("Prometheus said " + evil)},
	} {
		m := NewFleet("http://p"+evil, nil)
		m.Update(tea.WindowSizeMsg{Width: 120, Height: 20})
		m.Update(fleetMsg(u))
		out := m.Render()
		for _, bad := range []string{"\x1b]", "\x07", "\x1b[2J", "\x1b[31m"} {
			if strings.Contains(out, bad) {
				t.Errorf("%q reached the screen:\n%q", bad, out)
			}
		}
		if !strings.Contains(out, "PWN") {
			t.Errorf("the text itself is gone:\n%s", out)
		}
	}
}

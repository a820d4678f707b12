package tui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/gpuwatch/gpuwatch/fleet"
	"github.com/gpuwatch/gpuwatch/sample"
)

// FleetUpdate is one reading of the fleet, or why there is none.
type FleetUpdate struct {
	Snapshot fleet.Snapshot
	Err      error
}

// Fleet is the fleet dashboard: one row per node and rank, worst first,
// the fleet's straggler on top; q quits, ↑/↓ scroll.
type Fleet struct {
	title   string
	updates <-chan FleetUpdate
	last    FleetUpdate
	have    bool
	w, h    int
	scroll  int
	st      Styles
}

// NewFleet returns the fleet dashboard fed by updates.
func NewFleet(title string, updates <-chan FleetUpdate) *Fleet {
	return &Fleet{title: title, updates: updates, st: DefaultStyles()}
}

type fleetMsg FleetUpdate

func (m *Fleet) next() tea.Cmd {
	return func() tea.Msg {
		u, ok := <-m.updates
		if !ok {
			return endedMsg{}
		}
		return fleetMsg(u)
	}
}

// SetColorProfile renders the view in what a terminal of profile p
// supports (Styles.For).
func (m *Fleet) SetColorProfile(p colorprofile.Profile) { m.st = DefaultStyles().For(p) }

// Init implements tea.Model.
func (m *Fleet) Init() tea.Cmd { return m.next() }

// Update implements tea.Model.
func (m *Fleet) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
	case fleetMsg:
		m.last, m.have = FleetUpdate(msg), true
		return m, m.next()
	case tea.KeyPressMsg:
		switch msg.String() {
		case "q", "ctrl+c":
			return m, tea.Quit
		case "up", "k":
			m.scroll = max(0, m.scroll-1)
		case "down", "j":
			m.scroll++
		}
	}
	return m, nil
}

// View implements tea.Model.
func (m *Fleet) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	v.WindowTitle = "gpuwatch fleet"
	return v
}

// Render draws the screen at the current size.
func (m *Fleet) Render() string {
	w, h := m.w, m.h
	if w <= 0 || h <= 0 {
		return "gpuwatch fleet: starting…"
	}
	lines := []string{m.st.Title.Render(fit("gpuwatch fleet · "+sample.Printable(m.title), w))}
	switch {
	case !m.have:
		lines = append(lines, m.st.Dim.Render("querying Prometheus…"))
	case m.last.Err != nil:
		lines = append(lines, wrap(m.st.Bad.Render(sample.Printable(m.last.Err.Error())), w, "  ")...)
	case len(m.last.Snapshot.Rows) == 0:
		lines = append(lines, m.st.Dim.Render("no gpuwatch series in Prometheus yet (gpuwatch serve on each node, scraped)"))
	default:
		s := m.last.Snapshot
		lines = append(lines, m.st.Dim.Render(fit(fmt.Sprintf("%d rows at %s, worst first", len(s.Rows), s.Time.Format("15:04:05")), w)))
		rows := s.Rows[min(m.scroll, len(s.Rows)-1):]
		for _, d := range s.Dropped {
			lines = append(lines, m.st.Warn.Render(fit("left out: "+sample.Printable(d), w)))
		}
		for _, r := range rows {
			line := fit(sample.Printable(r.Line()), w)
			switch {
			case r.FleetStraggler || r.Straggler || r.Kind == fleet.KindDown:
				line = m.st.Bad.Render(line)
			case r.Kind == "healthy" || r.Kind == "idle":
				line = m.st.Good.Render(line)
			}
			lines = append(lines, line)
		}
	}
	lines = append(lines, m.st.Dim.Render(fit("q quit · ↑/↓ scroll", w)))
	if len(lines) > h {
		lines = append(lines[:h-1], lines[len(lines)-1])
	}
	return strings.Join(lines, "\n")
}

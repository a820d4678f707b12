package tui

import (
	"fmt"
	"strings"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/sample"
)

// DemoTour is the demo's title when it tours every scenario.
const DemoTour = "demo: tour of every scenario"

// banner is the verdict first: the kind in words and colour, since when,
// the confidence, the two strongest pieces of evidence and the first
// advice line. Four lines; on a terminal of at least 120×36 the evidence
// and advice wrap to a second line each instead of ending in "…".
func (m *Model) banner(w, h int) []string {
	roomy := w >= 120 && h >= 36
	lines := append([]string{m.bannerHead(w)}, m.bannerBody(w, roomy)...)
	if roomy {
		return block(lines, w, len(lines))
	}
	return block(lines, w, 4)
}

// bannerHead is the banner's first line. What matters first: the kind,
// since when and how sure, and the scenario. The kind in words, what is
// watched and since when go when the line is too narrow for w.
func (m *Model) bannerHead(w int) string {
	v := m.shown.Verdict
	st := m.styles.Verdict(v.Kind)
	meta := m.styles.Dim.Render(m.bannerMeta())
	kind := st.Render("● " + strings.ToUpper(v.Kind.String()))
	words := "  " + st.Render(v.Kind.Title())
	title := m.bannerTitle()
	scen := m.bannerScenario()
	if scen != "" && (m.opt.Title == DemoTour || strings.HasPrefix(m.opt.Title, "demo: ")) {
		// The scenario says more than "tour of every scenario", and the
		// same as "demo: starved" (a review: "· demo: starved · demo:
		// starved" at 250 columns).
		title = ""
	}
	conf := m.styles.Dim.Render(fmt.Sprintf("  %.0f%%", 100*v.Confidence))
	ceil := bannerCeiling(m.shown.Frame.Loader)
	if ceil != "" {
		ceil = m.styles.Dim.Render(ceil)
	}
	head := ""
	for _, h := range []string{
		kind + words + meta + ceil + scen + title,
		kind + words + meta + ceil + scen,
		kind + words + meta + scen,
		kind + meta + scen,
		kind + conf + scen,
		kind + scen,
	} {
		if head = h; visible(h) <= w {
			break
		}
	}
	return head
}

// bannerMeta is the verdict's since (clock time and age), its confidence
// and, above Info, its severity, unstyled but for the severity.
func (m *Model) bannerMeta() string {
	v := m.shown.Verdict
	meta := fmt.Sprintf("  confidence %.0f%%", 100*v.Confidence)
	if !v.Since.IsZero() {
		meta = fmt.Sprintf("  since %s (%s)", v.Since.Format("15:04:05"), ago(m.shown.frameTime(), v.Since)) + meta
	}
	if v.Severity != diagnose.Info {
		meta += "  " + m.styles.Bad.Render(v.Severity.String())
	}
	return meta
}

// bannerTitle says what is watched: the dashboard's title, the target
// process (and how it ended, once it has) and who the job is. Empty when
// there is none of these.
func (m *Model) bannerTitle() string {
	title := ""
	if m.opt.Title != "" {
		title = m.styles.Dim.Render("  · " + m.opt.Title)
	}
	if t := m.shown.Frame.Target; t != nil {
		tgt := fmt.Sprintf("  · pid %d", t.PID)
		if t.Command != "" {
			tgt += " " + sample.Printable(t.Command)
		}
		if t.ExitedAt != nil {
			ended := "exited"
			if t.Exit != "" {
				ended = t.Exit
			}
			title += m.styles.Warn.Render(fmt.Sprintf("%s %s at %s", tgt, ended, t.ExitedAt.Format("15:04:05")))
		} else {
			title += m.styles.Dim.Render(tgt + ": " + sample.Printable(t.Why))
		}
	}
	if j := m.shown.Frame.Job; j != nil && j.Identity != nil {
		// Who the job is, in the header; its limits are in the d view.
		title += m.styles.Dim.Render("  · " + sample.Printable(strings.SplitN(j.Summary(), " · ", 2)[0]))
	}
	return title
}

// bannerScenario is the demo's scenario and the time left in it, shown at
// every width; empty outside the demo.
func (m *Model) bannerScenario() string {
	s := m.shown.Scenario
	if s == nil {
		return ""
	}
	scen := "  · demo: " + sample.Printable(s.Name)
	if !s.Until.IsZero() {
		scen += fmt.Sprintf(", %ds left", max(0, int(s.Until.Sub(m.shown.frameTime()).Seconds()+0.5)))
	}
	return m.styles.Label.Render(scen)
}

// bannerBody is the banner's lines under the head: two pieces of evidence
// (or what is being collected) and the first advice (or what was not
// seen). When roomy, evidence and advice wrap to two lines each within w.
func (m *Model) bannerBody(w int, roomy bool) []string {
	v := m.shown.Verdict
	var lines []string
	add := func(s string) {
		if !roomy {
			lines = append(lines, s)
			return
		}
		wrapped := wrap(s, w, "    ")
		lines = append(lines, wrapped[:min(2, len(wrapped))]...)
	}
	for i := 0; i < 2; i++ {
		if i < len(v.Evidence) {
			add("  ▸ " + sample.Printable(v.Evidence[i].Text))
		} else if i == 0 && len(v.Missing) > 0 && v.Kind == diagnose.WarmingUp {
			lines = append(lines, m.styles.Dim.Render("  collecting a few seconds of samples…"))
		} else {
			lines = append(lines, "")
		}
	}
	switch {
	case len(v.Advice) > 0:
		add(m.styles.Good.Render("  ⇒ ") + sample.Printable(v.Advice[0]) + m.styles.Dim.Render("   (d: all evidence and advice)"))
	case len(v.Missing) > 0:
		lines = append(lines, m.styles.Dim.Render("  not seen: "+sample.Printable(strings.Join(v.Missing, "; "))))
	default:
		lines = append(lines, "")
	}
	return lines
}

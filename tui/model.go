// Package tui is gpuwatch's dashboard: the verdict first, then the evidence
// at a glance, one panel per source. It imports sample and diagnose from
// this module — never probes — so it builds and tests without cgo.
//
// Frames arrive through a command that blocks on a channel and is re-armed
// in Update (waitForFrame), so Update never blocks and no probe loop ever
// sends into the program.
package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/sample"
)

// Feed is what the dashboard draws: a frame and the verdict for it.
type Feed struct {
	Frame   *sample.Frame
	Verdict diagnose.Verdict
	// Note is a line for the status bar ("scenario single-core").
	Note string
	// Reset clears the history first (a replay seeked).
	Reset bool
	// Job is the command gpuwatch run started, nil otherwise: the view
	// says where its output goes and shows its last lines.
	Job *JobView
	// Position is where a replay is, nil live.
	Position *Position
	// Scenario is the demo's scenario running now, nil outside the demo:
	// the header names it, and the time left in it, at every width.
	Scenario *Scenario
	// Recording is the file the r key records to, and since when; nil
	// when not recording. The status bar says so for as long as it lasts.
	Recording *Recording
}

// Scenario is a demo scenario: its name and when the tour moves on (zero:
// it runs until it ends).
type Scenario struct {
	Name  string
	Until time.Time
}

// Recording is a recording in progress.
type Recording struct {
	Path  string
	Since time.Time
}

// Position is where a replay is: the frame shown (1-based) of all, its
// time from the recording's start, the recording's length, and whether
// it is the last frame (playback stopped at the end, not stalled).
type Position struct {
	At, Length    time.Duration
	Frame, Frames int
	End           bool
}

// JobView is gpuwatch run's command as the dashboard shows it.
type JobView struct {
	Command string
	PID     int
	// Log is where its output goes; Tail its last lines, printable.
	Log  string
	Tail []string
	// Exited says how and when it ended ("" while it runs).
	Exited string
}

// Replay controls a playing recording: with it, space pauses playback,
// ←/→ seek 10 s and [/] halve or double the speed (tab still moves focus).
type Replay struct {
	Pause func(paused bool)
	Seek  func(by time.Duration)
	// Speed multiplies the speed by factor and returns the new speed;
	// InitialSpeed is the speed playback starts at.
	Speed        func(factor float64) float64
	InitialSpeed float64
}

// Options configure the dashboard.
type Options struct {
	// Updates delivers frames; when it is closed the dashboard keeps the
	// last view and says the source ended.
	Updates <-chan Feed
	// Title names what is watched ("this machine", "demo: tour").
	Title    string
	Interval time.Duration
	// SetInterval changes the sampling interval (+/-); nil disables it.
	SetInterval func(time.Duration)
	// History is how many frames sparklines keep (default 300).
	History int
	// Export and Record are the e and r keys; nil says "not available".
	Export func() (string, error)
	Record func() (string, error)
	// Replay, when set, makes the keys control a playing recording.
	Replay *Replay
	// FocusRank, when set, is told the URL of the rank whose details the
	// zoomed loader panel shows ("" when it closes): its profile is taken.
	FocusRank func(url string)
	// Thresholds are the session's (default: diagnose's defaults): the
	// view colours and names ranks, waits and threads by the same numbers
	// as the verdict, so --threshold moves both.
	Thresholds diagnose.Thresholds
	// Quit, when set, is asked on a quit key: quit says whether to leave
	// now; otherwise status goes to the status bar (gpuwatch run: the key
	// interrupted the job, and the view stays until it ends).
	Quit func() (quit bool, status string)
	// Plain draws with ASCII only, no box drawing or block glyphs: for
	// TERM=dumb or a locale that is not UTF-8: session.PlainTerminal
	// (colour is the program's, see session.RunProgram).
	Plain bool
}

// MinInterval and MaxInterval bound the sampling interval, for --interval
// and the +/- keys alike.
const (
	MinInterval = 50 * time.Millisecond
	MaxInterval = time.Hour
)

// Minimum terminal size; below it the dashboard says so.
const minWidth, minHeight = 60, 16

// Model is the dashboard's state.
type Model struct {
	opt      Options
	keys     KeyMap
	styles   Styles
	w, h     int
	hist     *sample.History
	latest   Feed
	shown    Feed
	frozen   []*sample.Frame // history as it was when paused
	batches  []sample.BatchTiming
	frozenBt []sample.BatchTiming // the batches as they were when paused
	paused   bool
	help     bool
	details  bool
	// overlayAt is the first line the open overlay shows (help, details).
	overlayAt int
	focus     panelID
	zoom      bool
	sortBySM  bool
	procs     procView // the process panel's order, filter and tree
	// filtering says the keys type the process filter (after /).
	filtering bool
	scroll    [numPanels]int
	status    string
	statusAt  time.Time // frame time the status was set
	sticky    string    // a status that stays until the next one (a job being interrupted)
	interval  time.Duration
	hframes   []*sample.Frame  // the history drawn this render
	trends    [numPanels]trend // the panels' trends this render (shareTrends)
	speed     float64          // a replay's speed
}

// New returns the dashboard model.
func New(opt Options) *Model {
	if opt.History <= 0 {
		opt.History = 300
	}
	if opt.Interval <= 0 {
		opt.Interval = time.Second
	}
	if opt.Thresholds == (diagnose.Thresholds{}) {
		opt.Thresholds = diagnose.DefaultThresholds()
	}
	m := &Model{opt: opt, keys: DefaultKeyMap(), styles: DefaultStyles(),
		hist: sample.NewHistory(opt.History), interval: opt.Interval, speed: 1}
	if r := opt.Replay; r != nil && r.InitialSpeed > 0 {
		m.speed = r.InitialSpeed
	}
	return m
}

// SetColorProfile renders the model's views in what a terminal of
// profile p supports (Styles.For); before it, or without it, they are in
// full colour.
func (m *Model) SetColorProfile(p colorprofile.Profile) { m.styles = DefaultStyles().For(p) }

type frameMsg Feed
type endedMsg struct{}

// waitForFrame blocks on the updates channel; Update re-arms it.
func waitForFrame(ch <-chan Feed) tea.Cmd {
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		u, ok := <-ch
		if !ok {
			return endedMsg{}
		}
		return frameMsg(u)
	}
}

// Init implements tea.Model.
func (m *Model) Init() tea.Cmd { return waitForFrame(m.opt.Updates) }

// Observe adds an update as if it had arrived on the channel (tests,
// golden views).
func (m *Model) Observe(u Feed) {
	if u.Frame == nil {
		return
	}
	if u.Reset {
		m.hist = sample.NewHistory(m.opt.History)
		m.batches = m.batches[:0]
	}
	m.hist.Add(historyFrame(u.Frame))
	if l := u.Frame.Loader; l != nil {
		m.batches = append(m.batches, l.Timeline...)
		if n := len(m.batches); n > 512 {
			m.batches = append(m.batches[:0], m.batches[n-512:]...)
		}
	}
	if u.Note != "" {
		m.setStatus(u.Note, u.Frame.Time)
	}
	m.latest = u
	// A replay's pause stops its player: what comes while paused is a
	// seek's frame, to be shown (a review: a paused seek moved the
	// position and left the view on the frame before).
	if !m.paused || m.opt.Replay != nil {
		m.shown = u
	}
}

// historyFrame is the part of f the panels' sparklines and trends read
// from their history (pv.hist: trend.go, the CPU and GPU panels): the
// newest frame is drawn whole from m.shown, and the history holds only
// this. A live frame's processes, threads, profile, ranks and loader
// figures are most of its ~17 KB, and 300 of them were most of the
// dashboard's heap (issue 53; docs/architecture.md, "What gpuwatch
// costs"). Kept: everything but those, the watched tree's processes'
// PID and CPU (the "watched CPU" trend) and the loader's wait share.
func historyFrame(f *sample.Frame) *sample.Frame {
	h := *f
	h.Profile, h.Ranks = nil, nil
	if p := f.Procs; p != nil {
		list := make([]sample.Proc, len(p.List))
		for i, pr := range p.List {
			list[i] = sample.Proc{PID: pr.PID, CPUPct: pr.CPUPct}
		}
		h.Procs = &sample.Procs{FocusPID: p.FocusPID, List: list}
	}
	if l := f.Loader; l != nil {
		h.Loader = &sample.Loader{WaitShare: l.WaitShare}
	}
	return &h
}

func (m *Model) setStatus(s string, at time.Time) { m.status, m.statusAt = s, at }

// Update implements tea.Model.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
	case frameMsg:
		m.Observe(Feed(msg))
		return m, waitForFrame(m.opt.Updates)
	case endedMsg:
		m.setStatus("the source ended: the view shows its last frame", m.latest.frameTime())
	case tea.MouseWheelMsg:
		switch msg.Mouse().Button {
		case tea.MouseWheelUp:
			m.scrollBy(-3)
		case tea.MouseWheelDown:
			m.scrollBy(3)
		}
	case tea.KeyPressMsg:
		return m, m.key(msg)
	}
	return m, nil
}

func (u Feed) frameTime() time.Time {
	if u.Frame == nil {
		return time.Time{}
	}
	return u.Frame.Time
}

func (m *Model) scrollBy(n int) {
	if m.help || m.details {
		m.overlayAt = max(0, m.overlayAt+n) // overlay() keeps it within the lines
		return
	}
	m.scroll[m.focus] = max(0, m.scroll[m.focus]+n)
}

// overlayKey scrolls the open overlay (help or details) and reports
// whether it took the key: on a short terminal they are longer than the
// screen (a review: at 60×16 the details' advice and half the help were
// cut off, with no way to reach them).
func (m *Model) overlayKey(msg tea.KeyPressMsg) bool {
	if !m.help && !m.details {
		return false
	}
	switch msg.String() {
	case "up", "k":
		m.scrollBy(-1)
	case "down", "j":
		m.scrollBy(1)
	case "pgup":
		m.scrollBy(-max(1, m.h-2))
	case "pgdown":
		m.scrollBy(max(1, m.h-2))
	case "home", "g":
		m.overlayAt = 0
	default:
		return false
	}
	return true
}

// overlay draws an overlay's lines into w×h from m.overlayAt, with a last
// line that says how to reach the rest where they do not fit.
func (m *Model) overlay(lines []string, w, h int) string {
	if len(lines) <= h {
		m.overlayAt = 0
		return strings.Join(block(lines, w, h), "\n")
	}
	rows := h - 1
	m.overlayAt = min(m.overlayAt, len(lines)-rows)
	shown := append([]string(nil), lines[m.overlayAt:m.overlayAt+rows]...)
	more := fmt.Sprintf("lines %d–%d of %d · ↑/↓ pgup/pgdn scroll · esc closes", m.overlayAt+1, m.overlayAt+rows, len(lines))
	shown = append(shown, m.styles.Dim.Render(more))
	return strings.Join(block(shown, w, h), "\n")
}

// key handles a key press; overlays take esc and their own key first.
func (m *Model) key(msg tea.KeyPressMsg) tea.Cmd {
	k := m.keys
	if m.filtering {
		m.filterKey(msg)
		return nil
	}
	if m.replayKey(msg) || m.overlayKey(msg) {
		return nil
	}
	switch {
	case key.Matches(msg, k.Quit):
		return m.quit()
	case key.Matches(msg, k.Help):
		m.help = !m.help
		m.details, m.overlayAt = false, 0
	case key.Matches(msg, k.Details):
		m.details = !m.details
		m.help, m.overlayAt = false, 0
	case key.Matches(msg, k.Back):
		m.back()
	case key.Matches(msg, k.Pause):
		m.togglePause()
	case key.Matches(msg, k.Faster), key.Matches(msg, k.Slower):
		m.changeInterval(key.Matches(msg, k.Faster))
	default:
		m.navKey(msg)
	}
	return nil
}

// replayKey handles the playback keys of a replay (space pauses, left and
// right seek, [ and ] change the speed) and reports whether it took the key.
// Overlays keep their own keys, so it takes none while help or details show.
func (m *Model) replayKey(msg tea.KeyPressMsg) bool {
	r := m.opt.Replay
	if r == nil || m.help || m.details {
		return false
	}
	at := m.latest.frameTime()
	switch msg.String() {
	case "space":
		m.paused = !m.paused
		r.Pause(m.paused)
		m.shown = m.latest // playback stops: nothing new to freeze against
	case "left", "right":
		by := 10 * time.Second
		if msg.String() == "left" {
			by = -by
		}
		r.Seek(by)
		m.setStatus(fmt.Sprintf("seek %+ds", int(by.Seconds())), at)
	case "[", "]":
		f := 2.0
		if msg.String() == "[" {
			f = 0.5
		}
		m.speed = r.Speed(f)
		m.setStatus(fmt.Sprintf("speed ×%g", m.speed), at)
	default:
		return false
	}
	return true
}

// quit returns tea.Quit unless Options.Quit refuses; a refusal's status stays
// on screen (sticky) and the dashboard keeps running.
func (m *Model) quit() tea.Cmd {
	if m.opt.Quit != nil {
		if quit, status := m.opt.Quit(); !quit {
			m.setStatus(status, m.latest.frameTime())
			m.sticky = status
			return nil
		}
	}
	return tea.Quit
}

// back closes the open overlay (help, then details) or, with none open,
// leaves the zoomed panel.
func (m *Model) back() {
	switch {
	case m.help:
		m.help = false
	case m.details:
		m.details = false
	default:
		m.zoom = false
		m.focusRank()
	}
}

// togglePause freezes the view on the history it holds, or thaws it onto the
// latest frame.
func (m *Model) togglePause() {
	m.paused = !m.paused
	if m.paused {
		m.frozen = m.hist.Last(nil, m.hist.Len())
		m.frozenBt = slices.Clone(m.batches) // the loader's train row stays too (a review: it kept moving)
	} else {
		m.frozen, m.frozenBt, m.shown = nil, nil, m.latest
	}
}

// shownBatches are the batches the loader panel draws: frozen while a
// live view is paused.
func (m *Model) shownBatches() []sample.BatchTiming {
	if m.paused && m.opt.Replay == nil {
		return m.frozenBt
	}
	return m.batches
}

// changeInterval halves (faster) or doubles the sampling interval within
// --interval's range, through Options.SetInterval where the source allows it.
func (m *Model) changeInterval(faster bool) {
	if m.opt.SetInterval == nil {
		m.setStatus("the interval cannot change here", m.latest.frameTime())
		return
	}
	next := m.interval * 2
	if faster {
		next = m.interval / 2
	}
	next = min(MaxInterval, max(MinInterval, next)) // --interval's range: never the wrong way
	m.interval = next
	m.opt.SetInterval(next)
	m.setStatus("interval "+next.String(), m.latest.frameTime())
}

// navKey handles the keys that move focus, scroll, zoom, sort, filter and
// run the export and record actions.
func (m *Model) navKey(msg tea.KeyPressMsg) {
	k := m.keys
	switch {
	case key.Matches(msg, k.Next):
		m.focus = (m.focus + 1) % numPanels
	case key.Matches(msg, k.Prev):
		m.focus = (m.focus + numPanels - 1) % numPanels
	case key.Matches(msg, k.Up):
		m.scrollBy(-1)
	case key.Matches(msg, k.Down):
		m.scrollBy(1)
	case key.Matches(msg, k.Zoom):
		m.zoom = !m.zoom
		m.focusRank()
	case key.Matches(msg, k.Sort):
		m.sortBySM = !m.sortBySM
	case key.Matches(msg, k.Order):
		m.procs.order = (m.procs.order + 1) % numProcOrders
		m.setStatus("processes by "+procOrderNames[m.procs.order], m.latest.frameTime())
	case key.Matches(msg, k.Tree):
		m.procs.tree = !m.procs.tree
	case key.Matches(msg, k.Filter):
		m.filtering, m.focus = true, pProcs
	case key.Matches(msg, k.Export):
		m.runAction(m.opt.Export, "export: not available here")
	case key.Matches(msg, k.Record):
		m.runAction(m.opt.Record, "record: not available here")
	}
}

// focusRank tells FocusRank which rank the zoomed loader panel details.
func (m *Model) focusRank() {
	if m.opt.FocusRank == nil || m.focus != pLoader || m.shown.Frame == nil {
		return
	}
	url := ""
	if pv := m.view(pLoader); m.zoom && pv.selectedRank() >= 0 {
		url = m.shown.Frame.Ranks[pv.selectedRank()].URL
	}
	m.opt.FocusRank(url)
}

func (m *Model) runAction(fn func() (string, error), unavailable string) {
	at := m.latest.frameTime()
	if fn == nil {
		m.setStatus(unavailable, at)
		return
	}
	s, err := fn()
	if err != nil {
		m.setStatus("error: "+err.Error(), at)
		return
	}
	m.setStatus(s, at)
}

// View implements tea.Model.
func (m *Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion
	v.WindowTitle = "gpuwatch: " + m.shown.Verdict.Kind.String()
	return v
}

// Render draws the whole screen for the current size.
func (m *Model) Render() string {
	if m.opt.Plain {
		return plainText(m.render())
	}
	return m.render()
}

func (m *Model) render() string {
	w, h := m.w, m.h
	if w == 0 || h == 0 {
		return "gpuwatch: starting…"
	}
	if w < minWidth || h < minHeight {
		msg := fmt.Sprintf("terminal too small: %d×%d, gpuwatch needs %d×%d", w, h, minWidth, minHeight)
		return strings.Join(block([]string{msg, "resize the window, or run gpuwatch --headless"}, w, min(h, 2)), "\n")
	}
	if m.help {
		return m.overlay(m.helpLines(), w, h)
	}
	if m.details {
		return m.overlay(m.detailLines(w), w, h)
	}
	if m.shown.Frame == nil {
		return strings.Join(block([]string{"gpuwatch: waiting for the first frame…"}, w, h), "\n")
	}
	m.hframes = m.history()
	top := m.banner(w, h)
	top = append(top, m.jobBand(w, h)...)
	foot := m.footer(w)
	body := m.body(w, h-len(top)-1)
	// Every part is already exactly w wide: join, do not measure again.
	lines := make([]string, 0, h)
	lines = append(lines, top...)
	lines = append(lines, body...)
	lines = append(lines, foot)
	return strings.Join(stack(lines, w, h), "\n")
}

// history returns the frames the panels draw: frozen while paused. It
// reuses one slice, so a render allocates nothing for it.
func (m *Model) history() []*sample.Frame {
	if m.paused && m.opt.Replay == nil { // a replay's player stops instead
		return m.frozen
	}
	return m.hist.Last(m.hframes[:0], m.hist.Len())
}

// visible is the width of s in cells, ANSI styles not counted.
func visible(s string) int { return cells(s) }

// footer is the status bar: what is happening (status, recording, replay
// position, pause), the keys, and at the right gpuwatch's own cost and
// the hook's (footer.go). Where the width is short, keys go from the end
// (? help lists them all), down to "q quit · ? help", then the cost's
// details, then the cost.
func (m *Model) footer(w int) string {
	parts := []string{"q quit", "? help", "d details", "space pause", "tab focus", "enter zoom", "+/- " + m.interval.String()}
	if m.opt.Replay != nil {
		parts = []string{"q quit", "? help", "d details", "space pause", "←/→ seek 10s", "[/] speed", "tab focus", "enter zoom"}
	}
	var pre string
	if m.paused {
		pre = m.styles.Warn.Render("PAUSED ")
	}
	if p := m.latest.Position; p != nil {
		pre = m.position(p) + "  " + pre
	}
	if r := m.latest.Recording; r != nil {
		rec := "● REC " + clock(max(0, m.latest.frameTime().Sub(r.Since))) + " " + sample.Printable(r.Path)
		pre = m.styles.Bad.Render(rec) + "  " + pre
	}
	switch {
	case m.status != "" && m.latest.frameTime().Sub(m.statusAt) < 5*time.Second:
		pre = m.styles.Label.Render(m.status) + "  " + pre
	case m.sticky != "":
		pre = m.styles.Label.Render(m.sticky) + "  " + pre
	}
	cost, keys := costAndKeys(m.costWords(), parts, w-visible(pre)-len("  "))
	s := pre + m.styles.Dim.Render(keys)
	if cost != "" {
		s += strings.Repeat(" ", max(2, w-visible(s)-ansi.StringWidth(cost))) + m.styles.Dim.Render(cost)
	}
	return fit(s, w)
}

// clock is a duration as a stopwatch shows it: "00:42", "1:02:03".
func clock(d time.Duration) string {
	d = d.Round(time.Second)
	if d >= time.Hour {
		return fmt.Sprintf("%d:%02d:%02d", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
	}
	return fmt.Sprintf("%02d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

// position is a replay's place in the status bar: "▶ 00:05 / 00:18", a
// progress bar and the speed; "end of recording" once the last frame is
// shown, so a finished replay does not look like a stalled live view.
func (m *Model) position(p *Position) string {
	const barW = 12
	filled := barW
	if p.Length > 0 {
		filled = int(float64(barW)*unit(float64(p.At)/float64(p.Length)) + 0.5)
	}
	bar := "▕" + strings.Repeat("█", filled) + strings.Repeat("░", barW-filled) + "▏"
	at := clock(p.At) + " / " + clock(p.Length)
	switch {
	case p.End:
		return m.styles.Label.Render("■ end of recording "+at) + " " + bar
	case m.paused:
		return m.styles.Warn.Render("❚❚ "+at) + " " + bar
	}
	return m.styles.Label.Render("▶ "+at) + " " + bar + m.styles.Dim.Render(fmt.Sprintf(" ×%g", m.speed))
}

func (m *Model) helpLines() []string {
	out := []string{m.styles.Label.Render("gpuwatch keys") + m.styles.Dim.Render("  (? or esc closes)"), ""}
	rows := [][2]string{}
	for _, b := range m.keys.all() {
		rows = append(rows, [2]string{b.Help().Key, b.Help().Desc})
	}
	n := len(rows)
	if m.opt.Replay != nil {
		rows = append(rows, replayHelp...)
	}
	// One key column for every row, as wide as its widest key (in cells:
	// "shift+tab/←/h" is 13 cells and 17 bytes).
	col := 0
	for _, r := range rows {
		col = max(col, ansi.StringWidth(r[0]))
	}
	row := func(r [2]string) string {
		return "  " + r[0] + strings.Repeat(" ", col-ansi.StringWidth(r[0])+2) + r[1]
	}
	for _, r := range rows[:n] {
		out = append(out, row(r))
	}
	if m.opt.Replay != nil {
		out = append(out, "", m.styles.Label.Render("In a replay"))
		for _, r := range rows[n:] {
			out = append(out, row(r))
		}
	}
	out = append(out, "", "The mouse wheel scrolls the focused panel.",
		"Colours follow the terminal (16, 256, true colour); NO_COLOR or --no-color turns them off; TERM=dumb, or a locale that is not UTF-8, draws in ASCII.")
	return out
}

func (m *Model) detailLines(w int) []string {
	v := m.shown.Verdict
	st := m.styles.Verdict(v.Kind)
	out := []string{
		st.Render(strings.ToUpper(v.Kind.String())) + "  " + v.Kind.Title() + m.styles.Dim.Render("  (d or esc closes)"),
		fmt.Sprintf("severity %s · confidence %.0f%% · since %s", v.Severity, 100*v.Confidence, v.Since.Format("15:04:05")),
		"", m.styles.Label.Render("Evidence"),
	}
	for _, e := range v.Evidence {
		out = append(out, wrap("  • "+sample.Printable(e.Text)+m.styles.Dim.Render(fmt.Sprintf("  [%s %s %.3g %s %.3g]", e.Metric, "=", e.Value, e.Op, e.Threshold)), w, "    ")...)
	}
	if len(v.Evidence) == 0 {
		out = append(out, "  (none)")
	}
	if j := m.shown.Frame.Job; j != nil {
		out = append(out, "", m.styles.Label.Render("The job"))
		out = append(out, wrap("  "+sample.Printable(j.Summary()), w, "    ")...)
	}
	if len(v.Secondary) > 0 {
		out = append(out, "", m.styles.Label.Render("Also seen"))
		for _, f := range v.Secondary {
			out = append(out, wrap("  + "+f.Kind.String()+": "+sample.Printable(f.Text), w, "    ")...)
		}
	}
	out = append(out, "", m.styles.Label.Render("What to change"))
	for _, c := range v.Changes {
		set := ""
		if c.From != c.To && c.Flag != "" {
			set = fmt.Sprintf(" (%s=%s)", c.Flag, c.To)
		}
		out = append(out, wrap(sample.Printable(fmt.Sprintf("  • %s%s: %s", c.Words(), set, c.Why)), w, "    ")...)
	}
	for _, a := range v.Advice {
		out = append(out, wrap("  → "+sample.Printable(a), w, "    ")...)
	}
	if len(v.Missing) > 0 {
		out = append(out, "", m.styles.Label.Render("Not seen"))
		for _, s := range v.Missing {
			out = append(out, wrap("  - "+sample.Printable(s), w, "    ")...)
		}
	}
	return out
}

// wrap breaks s into lines of w cells at spaces (ANSI-aware), indenting
// continuation lines: they are broken at w less the indent, so that the
// indent does not push their ends past w (where fit cut them).
func wrap(s string, w int, indent string) []string {
	first, rest, more := strings.Cut(ansi.Wrap(s, w, " "), "\n")
	lines := []string{first}
	if !more {
		return lines
	}
	rest = strings.ReplaceAll(rest, "\n", " ") // the breaks Wrap made, each for a space
	for _, l := range strings.Split(ansi.Wrap(rest, max(1, w-cells(indent)), " "), "\n") {
		lines = append(lines, fit(indent+strings.TrimLeft(l, " "), w))
	}
	return lines
}

package session

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"golang.org/x/term"
)

// screen draws a model's views on the terminal a row at a time: a row is
// written only when its text differs from what the row shows, nothing is
// written when nothing changed, and a draw happens when the model has
// handled a message, not on a timer. It is the dashboard's renderer in
// place of bubbletea's, which parsed every view into cells, hashed its
// lines for scrolling and diffed the cells on a 5-a-second timer: at idle
// that was 39 % of the dashboard's CPU and kept it above btop's
// (docs/architecture.md, "The dashboard's cost"). The dashboard's rows
// change in place and never scroll, so a row's text is the unit to
// compare.
//
// The terminal is in the alternate screen with the cursor hidden and
// autowrap off (a row wider than the terminal is cut at its edge, never
// wrapped onto the next row); the view's mouse mode and window title are
// set when they change. close restores all of it.
type screen struct {
	out     io.Writer // the terminal, through the colour profile's writer
	w, h    int       // the terminal's size; 0 before the first WindowSizeMsg
	rows    []string  // what each row of the terminal shows
	last    string    // the view's content last drawn
	title   string
	mouse   tea.MouseMode
	started bool
	buf     bytes.Buffer
}

// resize takes the terminal's new size: the next draw clears the screen
// and writes every row.
func (s *screen) resize(w, h int) {
	if w == s.w && h == s.h {
		return
	}
	s.w, s.h = w, h
	s.rows, s.last = nil, ""
}

// draw writes the rows of v that changed, in one write. Before the
// terminal's size is known it draws nothing.
func (s *screen) draw(v tea.View) error {
	if s.w <= 0 || s.h <= 0 {
		return nil
	}
	b := &s.buf
	b.Reset()
	if !s.started {
		s.started = true
		// Bracketed paste: pasted text arrives as one paste, not as
		// keys (a pasted q would quit).
		b.WriteString(ansi.SetModeAltScreenSaveCursor + ansi.HideCursor + ansi.ResetModeAutoWrap + ansi.SetModeBracketedPaste)
	}
	if v.MouseMode != s.mouse {
		s.mouse = v.MouseMode
		b.WriteString(mouseModes(s.mouse))
	}
	if v.WindowTitle != s.title {
		s.title = v.WindowTitle
		b.WriteString(ansi.SetWindowTitle(printableTitle(s.title)))
	}
	if s.rows == nil || v.Content != s.last {
		s.rows = s.writeRows(b, v.Content)
		s.last = v.Content
	}
	if b.Len() == 0 {
		return nil
	}
	_, err := s.out.Write(b.Bytes())
	return err
}

// writeRows writes to b each row of content that differs from the screen
// (every row after a resize, with the screen cleared first), and returns
// the rows the screen shows after it. Rows past the terminal's height are
// left out; rows the content no longer has are erased.
func (s *screen) writeRows(b *bytes.Buffer, content string) []string {
	full := s.rows == nil
	if full {
		b.WriteString(ansi.ResetStyle + ansi.EraseEntireScreen)
	}
	rows := make([]string, s.h)
	content = strings.TrimSuffix(content, "\n")
	for i := 0; i < s.h && content != ""; i++ {
		row, rest, _ := strings.Cut(content, "\n")
		rows[i], content = strings.TrimSuffix(row, "\r"), rest
	}
	for i, row := range rows {
		if !full && row == s.rows[i] {
			continue
		}
		// Erased before it is written: erasing after would, in a row
		// that fills the width, take its last cell (the cursor waits on
		// it).
		b.WriteString(ansi.CursorPosition(1, i+1) + ansi.ResetStyle + ansi.EraseEntireLine)
		if row != "" {
			b.WriteString(sgrOnly(row))
			b.WriteString(ansi.ResetStyle)
		}
	}
	return rows
}

// sgrOnly is a row as the terminal may see it: the styles' SGR sequences
// (ESC [ parameters m) kept, every other control character shown as
// U+FFFD — an escape that starts anything else (a title, a cursor move,
// a hyperlink, a mode), a bell, a backspace, a tab, a C1 control. The
// views escape outside text where they print it (sample.Printable); this
// is the last guard, so that a string one of them missed (a GPU model's
// name in a recording's advice did) cannot retitle or redraw the
// terminal. A row that holds nothing else is returned as it is.
func sgrOnly(row string) string {
	if !utf8.ValidString(row) {
		return sgrOnlySlow(row) // a lone byte 0x80–0x9F is a C1 control to a terminal not in UTF-8
	}
	for i := 0; i < len(row); {
		switch c := row[i]; {
		case c == 0x1b:
			n := sgrLen(row[i:])
			if n == 0 {
				return sgrOnlySlow(row)
			}
			i += n
		case c < 0x20 || c == 0x7f || c == 0xc2 && i+1 < len(row) && row[i+1] >= 0x80 && row[i+1] < 0xa0:
			return sgrOnlySlow(row)
		default:
			i++
		}
	}
	return row
}

// sgrLen is the length of the SGR sequence s starts with (ESC [, digits,
// ';' or ':', then 'm'), 0 where it starts none.
func sgrLen(s string) int {
	if len(s) < 3 || s[0] != 0x1b || s[1] != '[' {
		return 0
	}
	for i := 2; i < len(s) && i < 64; i++ {
		switch c := s[i]; {
		case c == 'm':
			return i + 1
		case c >= '0' && c <= '9' || c == ';' || c == ':':
		default:
			return 0
		}
	}
	return 0
}

func sgrOnlySlow(row string) string {
	var b strings.Builder
	b.Grow(len(row) + 8)
	for i := 0; i < len(row); {
		if n := sgrLen(row[i:]); n > 0 {
			b.WriteString(row[i : i+n])
			i += n
			continue
		}
		r, size := utf8.DecodeRuneInString(row[i:])
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
			r = utf8.RuneError
		}
		b.WriteRune(r)
		i += size
	}
	return b.String()
}

// close leaves the terminal as it was found: the mouse and bracketed
// paste off, the cursor shown, autowrap on, the main screen back, the
// title cleared. Nothing when nothing was drawn, or a second time.
func (s *screen) close() error {
	if !s.started {
		return nil
	}
	s.started = false
	seq := ansi.ResetStyle + mouseModes(tea.MouseModeNone) + ansi.ResetModeBracketedPaste + ansi.ShowCursor + ansi.SetModeAutoWrap + ansi.ResetModeAltScreenSaveCursor
	if s.title != "" {
		seq += ansi.SetWindowTitle("")
		s.title = ""
	}
	_, err := io.WriteString(s.out, seq)
	return err
}

// mouseModes are the sequences that set the terminal's mouse reporting to
// m (SGR encoding, which bubbletea's input reader decodes).
func mouseModes(m tea.MouseMode) string {
	switch m {
	case tea.MouseModeCellMotion:
		return ansi.ResetModeMouseAnyEvent + ansi.SetModeMouseButtonEvent + ansi.SetModeMouseExtSgr
	case tea.MouseModeAllMotion:
		return ansi.ResetModeMouseButtonEvent + ansi.SetModeMouseAnyEvent + ansi.SetModeMouseExtSgr
	}
	return ansi.ResetModeMouseButtonEvent + ansi.ResetModeMouseAnyEvent + ansi.ResetModeMouseExtSgr
}

// printableTitle is a window title without control characters: an
// escape or a bell inside it would end the title's sequence early.
func printableTitle(t string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return -1
		}
		return r
	}, t)
}

// drawnModel is a model whose views the screen draws: after each message
// the model handles, its view is drawn (rows that did not change cost a
// string comparison). bubbletea, run without its renderer, gets an empty
// view.
type drawnModel struct {
	tea.Model
	s        *screen
	t        *terminal
	err      error // the first write that failed; later draws are skipped
	panicked error // a panic in the model, with its stack
}

// Update hands msg to the model, then draws its view. A panic in the
// model's Update or View restores the terminal first (bubbletea would
// print it on the alternate screen, where the restore wipes it) and ends
// the program: RunProgram returns it as an error with its stack.
func (d *drawnModel) Update(msg tea.Msg) (out tea.Model, cmd tea.Cmd) {
	if d.panicked != nil {
		return d, tea.Quit
	}
	defer func() {
		if r := recover(); r != nil {
			d.panicked = fmt.Errorf("internal error (the terminal was restored): %v\n%s", r, debug.Stack())
			d.restore()
			out, cmd = d, tea.Quit
		}
	}()
	if ws, ok := msg.(tea.WindowSizeMsg); ok {
		if w, h, ok := d.t.size(); ok { // the size now, not the one sent: a resize may have come since
			ws.Width, ws.Height = w, h
			msg = ws
		}
		d.s.resize(ws.Width, ws.Height)
	}
	m, cmd := d.Model.Update(msg)
	d.Model = m
	if d.err == nil {
		if d.err = d.s.draw(m.View()); d.err != nil {
			// The terminal refuses writes: quit rather than run on
			// with a view that no longer changes.
			d.restore()
			return d, tea.Quit
		}
	}
	return d, cmd
}

// restore leaves the screen and the terminal's raw mode.
func (d *drawnModel) restore() {
	_ = d.s.close()
	if d.t != nil {
		d.t.restoreMode()
	}
}

// View is empty: the screen has drawn the model's already.
func (d *drawnModel) View() tea.View { return tea.View{} }

// terminal is what bubbletea sets up only with its own renderer: the keys'
// terminal in raw mode (stdin, or /dev/tty when stdin is not one), the
// output's size, and its changes (SIGWINCH) sent to the program.
type terminal struct {
	in       *os.File
	closeIn  bool
	raw      *term.State
	outFd    int
	w, h     int
	resizing chan os.Signal
	once     sync.Once
}

// openTerminal readies the terminal for the dashboard; close undoes it.
func openTerminal(out io.Writer) (*terminal, error) {
	t := &terminal{in: os.Stdin, outFd: -1, w: 80, h: 24}
	if !term.IsTerminal(int(t.in.Fd())) {
		f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
		if err != nil {
			return nil, fmt.Errorf("no terminal to read keys from: %w", err)
		}
		t.in, t.closeIn = f, true
	}
	st, err := term.MakeRaw(int(t.in.Fd()))
	if err != nil {
		t.close()
		return nil, fmt.Errorf("the terminal's raw mode: %w", err)
	}
	t.raw = st
	// Resizes are listened for before the size is read: one between the
	// two is not lost.
	t.resizing = make(chan os.Signal, 1)
	signal.Notify(t.resizing, syscall.SIGWINCH)
	if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		t.outFd = int(f.Fd())
		if w, h, ok := t.size(); ok {
			t.w, t.h = w, h
		}
	}
	return t, nil
}

// size is the output's size now; false where it cannot be read.
func (t *terminal) size() (w, h int, ok bool) {
	if t == nil || t.outFd < 0 {
		return 0, 0, false
	}
	w, h, err := term.GetSize(t.outFd)
	return w, h, err == nil && w > 0 && h > 0
}

// forwardResizes sends p the output's size each time it changes, until ctx
// ends.
func (t *terminal) forwardResizes(ctx context.Context, p *tea.Program) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.resizing:
			if w, h, ok := t.size(); ok {
				p.Send(tea.WindowSizeMsg{Width: w, Height: h})
			}
		}
	}
}

// restoreMode ends raw mode, once, whoever asks first (a panic in the
// model, or RunProgram once the program ended).
func (t *terminal) restoreMode() {
	t.once.Do(func() {
		if t.raw != nil {
			_ = term.Restore(int(t.in.Fd()), t.raw)
		}
	})
}

// close restores the terminal's mode, stops listening for resizes and
// closes the /dev/tty it opened. Only once the program has ended: its
// input reader reads that file.
func (t *terminal) close() {
	t.restoreMode()
	if t.resizing != nil {
		signal.Stop(t.resizing)
	}
	if t.closeIn {
		_ = t.in.Close()
	}
}

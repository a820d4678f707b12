package session

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

func view(rows ...string) tea.View {
	v := tea.NewView(strings.Join(rows, "\n"))
	v.MouseMode, v.WindowTitle = tea.MouseModeCellMotion, "gpuwatch: healthy"
	return v
}

// rowsWritten are the rows a draw wrote, by the cursor moves before them.
func rowsWritten(out string) []int {
	var rows []int
	for _, part := range strings.Split(out, "\x1b[")[1:] {
		var r, c int
		if strings.HasPrefix(part, "H") { // CUP with no parameters: the first row
			rows = append(rows, 1)
		} else if n, _ := fmt.Sscanf(part, "%d;%dH", &r, &c); n == 2 {
			rows = append(rows, r)
		}
	}
	return rows
}

// TestScreenWritesOnlyTheRowsThatChanged: the first draw sets the terminal
// up and writes every row; a draw of the same view writes nothing; a view
// with one row changed writes that row alone; a shorter view erases the
// rows it no longer has; a resize clears and writes every row again;
// close restores the terminal.
func TestScreenWritesOnlyTheRowsThatChanged(t *testing.T) {
	var out bytes.Buffer
	s := &screen{out: &out}
	if err := s.draw(view("a", "b")); err != nil || out.Len() != 0 {
		t.Fatalf("drew %q (%v) before the size was known", out.String(), err)
	}
	s.resize(10, 3)
	_ = s.draw(view("one", "two", "three"))
	first := out.String()
	for _, want := range []string{ansi.SetModeAltScreenSaveCursor, ansi.HideCursor, ansi.ResetModeAutoWrap, ansi.SetModeBracketedPaste, ansi.SetModeMouseButtonEvent, ansi.SetModeMouseExtSgr, ansi.SetWindowTitle("gpuwatch: healthy"), ansi.EraseEntireScreen, "one", "two", "three"} {
		if !strings.Contains(first, want) {
			t.Errorf("the first draw lacks %q: %q", want, first)
		}
	}
	if got := rowsWritten(first); fmt.Sprint(got) != "[1 2 3]" {
		t.Errorf("the first draw wrote rows %v", got)
	}

	out.Reset()
	_ = s.draw(view("one", "two", "three"))
	if out.Len() != 0 {
		t.Errorf("the same view wrote %q", out.String())
	}

	_ = s.draw(view("one", "TWO", "three"))
	if got := rowsWritten(out.String()); fmt.Sprint(got) != "[2]" || !strings.Contains(out.String(), "TWO") || strings.Contains(out.String(), "one") {
		t.Errorf("one changed row: wrote rows %v: %q", got, out.String())
	}

	out.Reset()
	_ = s.draw(view("one", "TWO"))
	if got := rowsWritten(out.String()); fmt.Sprint(got) != "[3]" || !strings.Contains(out.String(), ansi.EraseEntireLine) {
		t.Errorf("a shorter view: wrote rows %v: %q", got, out.String())
	}

	out.Reset()
	_ = s.draw(view("1", "2", "3", "4", "5"))
	if got := rowsWritten(out.String()); fmt.Sprint(got) != "[1 2 3]" || strings.Contains(out.String(), "4") {
		t.Errorf("a view taller than the terminal: wrote rows %v: %q", got, out.String())
	}

	out.Reset()
	s.resize(20, 2)
	_ = s.draw(view("1", "2", "3"))
	if got := rowsWritten(out.String()); fmt.Sprint(got) != "[1 2]" || !strings.Contains(out.String(), ansi.EraseEntireScreen) {
		t.Errorf("after a resize: wrote rows %v: %q", got, out.String())
	}

	out.Reset()
	v := view("1", "2")
	v.WindowTitle = "gpuwatch: \x1b]0;evil\x07"
	_ = s.draw(v)
	if strings.Contains(out.String(), "\x1b]0;evil") {
		t.Errorf("a title's control characters reached the terminal: %q", out.String())
	}

	out.Reset()
	_ = s.close()
	for _, want := range []string{ansi.ResetModeMouseButtonEvent, ansi.ResetModeMouseExtSgr, ansi.ResetModeBracketedPaste, ansi.ShowCursor, ansi.SetModeAutoWrap, ansi.ResetModeAltScreenSaveCursor, ansi.SetWindowTitle("")} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("close lacks %q: %q", want, out.String())
		}
	}
	out.Reset()
	if _ = s.close(); out.Len() != 0 {
		t.Errorf("a second close wrote %q", out.String())
	}
}

// panicky panics in View once armed.
type panicky struct{ armed bool }

func (p *panicky) Init() tea.Cmd { return nil }
func (p *panicky) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if _, ok := msg.(tea.KeyPressMsg); ok {
		p.armed = true
	}
	return p, nil
}
func (p *panicky) View() tea.View {
	if p.armed {
		panic("the view broke")
	}
	return view("fine")
}

// TestAPanicInTheModelRestoresTheTerminalAndIsReturned: a panic in the
// model's View (or Update) leaves the alternate screen before bubbletea
// could print it there, quits, keeps the panic with its stack for
// RunProgram to return, and draws nothing after.
func TestAPanicInTheModelRestoresTheTerminalAndIsReturned(t *testing.T) {
	var out bytes.Buffer
	d := &drawnModel{Model: &panicky{}, s: &screen{out: &out}}
	d.Update(tea.WindowSizeMsg{Width: 20, Height: 5})
	if !strings.Contains(out.String(), "fine") {
		t.Fatalf("the first view was not drawn: %q", out.String())
	}
	out.Reset()
	m, cmd := d.Update(tea.KeyPressMsg{Code: 'x'})
	if m != d || cmd == nil || d.panicked == nil {
		t.Fatalf("after a panic: model %v, command %v, panic %v", m, cmd, d.panicked)
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Errorf("after a panic the command is not quit")
	}
	if !strings.Contains(out.String(), ansi.ResetModeAltScreenSaveCursor) || !strings.Contains(out.String(), ansi.ShowCursor) {
		t.Errorf("the terminal was not restored: %q", out.String())
	}
	if !strings.Contains(d.panicked.Error(), "the view broke") || !strings.Contains(d.panicked.Error(), "panicky") {
		t.Errorf("the panic's message or stack is lost: %v", d.panicked)
	}
	out.Reset()
	d.Update(tea.WindowSizeMsg{Width: 30, Height: 5})
	if out.Len() != 0 {
		t.Errorf("drew after the panic: %q", out.String())
	}
}

// BenchmarkScreenIdleDraw is a tick's draw where only the clock row of a
// 120×40 dashboard changed: the cost of the screen at idle.
func BenchmarkScreenIdleDraw(b *testing.B) {
	var out bytes.Buffer
	s := &screen{out: &out}
	s.resize(120, 40)
	rows := make([]string, 40)
	for i := range rows {
		rows[i] = "\x1b[38;2;120;200;80m" + strings.Repeat("█▌ 42% ", 17) + "\x1b[m"
	}
	views := [2]tea.View{view(rows...), {}}
	rows[0] = "clock 12:00:01"
	views[1] = view(rows...)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		out.Reset()
		_ = s.draw(views[i%2])
	}
}

// TestScreenPassesOnlyStyles: a row's SGR styles reach the terminal as
// they are; any other escape (a title, a cursor move, a hyperlink), a
// bell, a backspace or a C1 control in a row is drawn as U+FFFD, so text
// from outside that a view forgot to escape cannot retitle or redraw the
// terminal.
func TestScreenPassesOnlyStyles(t *testing.T) {
	var out bytes.Buffer
	s := &screen{out: &out}
	s.resize(80, 2)
	styled := "\x1b[1;38;2;10;20;30mbold\x1b[m \x1b[38:5:3mx\x1b[0m"
	hostile := "H200 \x1b]0;pwn\x07 \x1b[2J\x1b[5;5H \x1b]8;;http://x\x1b\\ \b\t\u009b31m end"
	_ = s.draw(view(styled, hostile))
	all := out.String()
	if !strings.Contains(all, styled) {
		t.Errorf("the styles were changed: %q", all)
	}
	_, got, _ := strings.Cut(all, ansi.CursorPosition(1, 2)+ansi.ResetStyle+ansi.EraseEntireLine) // the hostile row
	for _, bad := range []string{"\x1b]", "\x07", "\x1b[2J", "\x1b[5;5H", "\b", "\t", "\u009b"} {
		if strings.Contains(got, bad) {
			t.Errorf("%q reached the terminal: %q", bad, got)
		}
	}
	if !strings.Contains(got, "H200 \ufffd]0;pwn\ufffd") || !strings.Contains(got, " end") {
		t.Errorf("the hostile row is not drawn escaped: %q", got)
	}
	if r := sgrOnly("a\x9b2Jb\x9d0;x"); strings.IndexByte(r, 0x9b) >= 0 || strings.IndexByte(r, 0x9d) >= 0 || !utf8.ValidString(r) {
		t.Errorf("raw C1 bytes passed: %q", r)
	}
	for _, row := range []string{"plain", styled, "ünïcode ✓ 中文"} {
		if r := sgrOnly(row); r != row {
			t.Errorf("sgrOnly(%q) = %q", row, r)
		}
	}
}

func BenchmarkSgrOnlyStyledRow(b *testing.B) {
	row := strings.Repeat("\x1b[38;2;10;20;30mcpu0 \x1b[m████████100% ", 6)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if sgrOnly(row) != row {
			b.Fatal("changed")
		}
	}
}

// TestALocaleWithoutUTF8DrawsASCII (a review): LANG=C drew the panels'
// box glyphs, which such a terminal shows as garbage. The locale is read
// as C's setlocale reads it: LC_ALL, else LC_CTYPE, else LANG.
func TestALocaleWithoutUTF8DrawsASCII(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		utf8 bool
	}{
		{map[string]string{}, true},
		{map[string]string{"LANG": "C.UTF-8"}, true},
		{map[string]string{"LANG": "en_US.utf8"}, true},
		{map[string]string{"LANG": "C"}, false},
		{map[string]string{"LANG": "POSIX"}, false},
		{map[string]string{"LANG": "en_US.UTF-8", "LC_ALL": "C"}, false},
		{map[string]string{"LANG": "C", "LC_CTYPE": "de_DE.UTF-8"}, true},
		{map[string]string{"LANG": "en_US.ISO-8859-1"}, false},
	} {
		if got := utf8Locale(func(k string) string { return c.env[k] }); got != c.utf8 {
			t.Errorf("%v: UTF-8 %v, want %v", c.env, got, c.utf8)
		}
	}
}

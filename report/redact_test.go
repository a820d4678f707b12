package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/sample"
)

func TestRedactURLTakesOutCredentials(t *testing.T) {
	cases := []struct{ in, want string }{
		{"http://127.0.0.1:6061", "http://127.0.0.1:6061"},
		{"http://user:pass@host:6061/x?y=1", "http://REDACTED@host:6061/x?y=1"},
		{"--attach=https://tok@h", "--attach=https://REDACTED@h"},
		{"a http://u:p@h b https://v@i/", "a http://REDACTED@h b https://REDACTED@i/"},
		{"http://h/path@not-user-info", "http://h/path@not-user-info"},
		{"no url here, just a@b", "no url here, just a@b"},
		{"http://p%40ss:x@@host", "http://REDACTED@host"},
	}
	for _, c := range cases {
		if got := RedactURL(c.in); got != c.want {
			t.Errorf("RedactURL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := RedactArgs([]string{"gpuwatch", "record", "--attach", "http://u:secret@h:1"}); strings.Contains(strings.Join(got, " "), "secret") {
		t.Errorf("RedactArgs kept the password: %q", got)
	}
}

// TestHeadlessLinesCarryNoTerminalEscapes: a process, a thread and a disk
// named with escape sequences (retitle, clear screen) reach stdout with
// their control characters replaced.
func TestHeadlessLinesCarryNoTerminalEscapes(t *testing.T) {
	evil := "\x1b]0;PWN\x07\x1b[2J\u009b31m"
	f := &sample.Frame{Time: time.Now(),
		Procs: &sample.Procs{FocusPID: 1, List: []sample.Proc{{PID: 1, Name: evil}}, Threads: []sample.Thread{{TID: 1, Name: evil}}},
		Disks: []sample.Disk{{Name: evil}}, Unavailable: map[string]string{"gpu": evil}}
	var b bytes.Buffer
	if err := WriteLine(&b, f, nil); err != nil {
		t.Fatal(err)
	}
	if err := WriteNoteLine(&b, Event{Name: evil, Detail: evil}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for i, r := range strings.TrimRight(out, "\n") {
		if r != '\n' && (r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0)) {
			t.Fatalf("control character %U at %d in %q", r, i, out)
		}
	}
	if !strings.Contains(out, "]0;PWN") {
		t.Fatalf("the name's printable part is gone: %q", out)
	}
}

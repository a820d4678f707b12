package job

import (
	"testing"
	"unicode/utf8"
)

// TestTheTailIsPlainText (a review): the dashboard's job band showed a
// coloured log line as "�[31mRED line�[0m and tab�here": escape sequences
// are taken out, tabs expanded, other controls still made printable.
func TestTheTailIsPlainText(t *testing.T) {
	for in, want := range map[string]string{
		"\x1b[31mRED line\x1b[0m and tab\there":    "RED line and tab        here",
		"\x1b]0;title\x07after":                    "after",
		"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\": "link",
		"a\x1b7b\x08c":                             "ab\uFFFDc",
		"épée\tx":                                  "épée    x",
		"cut at the end \x1b[3":                    "cut at the end ",
		"\x1b(Bhello\x1b[m":                        "hello",
		"\x1bP1$r\x1b\\y":                          "y",
		"\r 10%|##|\r 20%|###|":                    " 20%|###|",
		"a CRLF line\r":                            "a CRLF line",
	} {
		if got := plainLine([]byte(in)); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// FuzzPlainLine: whatever the job writes, the line the dashboard shows
// is valid UTF-8 with no control character left (no escape reaches the
// terminal), and no longer than eight cells for each byte in.
func FuzzPlainLine(f *testing.F) {
	for _, s := range []string{"\x1b[31mred\x1b[0m", "\x1b]0;t\x07x", "\x1bP1$r\x1b\\y", "\x1b(B", "a\tb\r c", "\x1b", "\x1b[", "\xff\xfe", "é\t"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out := plainLine(b)
		if !utf8.ValidString(out) {
			t.Fatalf("%q: not UTF-8: %q", b, out)
		}
		for _, r := range out {
			if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
				t.Fatalf("%q: control %U left in %q", b, r, out)
			}
		}
		if len(out) > 8*len(b)+8 {
			t.Fatalf("%q: %d bytes out", b, len(out))
		}
	})
}

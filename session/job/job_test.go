package job

import "testing"

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

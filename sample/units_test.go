package sample

import (
	"testing"
	"unicode/utf8"
)

// TestPrintableLeavesNoControlByte: C0, DEL, C1 (as UTF-8 or as a lone
// byte that is not UTF-8, the 8-bit CSI 0x9b) all become U+FFFD; clean
// text comes back as it was.
func TestPrintableLeavesNoControlByte(t *testing.T) {
	for in, want := range map[string]string{
		"python3 train.py":    "python3 train.py",
		"a\x1b]0;PWN\x07b":    "a\uFFFD]0;PWN\uFFFDb",
		"x\u009b31m":          "x\uFFFD31m",
		"x\x9b31m":            "x\uFFFD31m",
		"é data/ü.jpg\x7f":    "é data/ü.jpg\uFFFD",
		"cut \xe2\x82 in two": "cut \uFFFD\uFFFD in two", // one a byte
	} {
		got := Printable(in)
		if got != want || !utf8.ValidString(got) {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEndedReadsAsAPredicate(t *testing.T) {
	for how, want := range map[string]string{
		"exited with status 1": "exited with status 1",
		"killed by SIGINT":     "was killed by SIGINT",
		"":                     "",
	} {
		if got := Ended(how); got != want {
			t.Errorf("Ended(%q) = %q, want %q", how, got, want)
		}
	}
}

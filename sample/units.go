package sample

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// FormatBytes renders n bytes with binary prefixes: "512B", "1.5KiB",
// "20.3GiB". Three significant digits are enough for a dashboard.
func FormatBytes(n float64) string {
	const unit = 1024
	if math.IsNaN(n) || math.IsInf(n, 0) {
		return "?"
	}
	if n < 0 {
		return "-" + FormatBytes(-n)
	}
	if n < unit {
		return strconv.FormatFloat(n, 'f', 0, 64) + "B"
	}
	suffixes := [...]string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := -1
	for n >= unit && i < len(suffixes)-1 {
		n /= unit
		i++
	}
	prec := 0
	if n < 10 {
		prec = 1
	}
	return strconv.FormatFloat(n, 'f', prec, 64) + suffixes[i]
}

// Ended is how a process ended, in a job's Exit words ("exited with
// status 1", "killed by SIGINT"), as a sentence's predicate: "exited with
// status 1", "was killed by SIGINT".
func Ended(how string) string {
	if strings.HasPrefix(how, "killed ") {
		return "was " + how
	}
	return how
}

// Printable replaces every control character in s — C0, DEL and C1, ESC
// above all — with U+FFFD, so a process named "\x1b]0;PWN\x07" cannot
// retitle or clear the terminal it is printed to. Every name from outside
// (processes, threads, disks, loaders, evidence that quotes them) goes
// through it on its way to a terminal. Bytes that are not UTF-8 become
// U+FFFD too: a lone 0x9b is a C1 CSI to a terminal that reads bytes.
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if isControl(r) {
			clean = false
			break
		}
	}
	if clean && utf8.ValidString(s) {
		return s
	}
	return strings.Map(func(r rune) rune { // invalid bytes come as U+FFFD

		if isControl(r) {
			return '\uFFFD'
		}
		return r
	}, s)
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }

// FormatDuration renders seconds with the unit that fits its size, to
// two or three significant digits: "350µs", "41ms", "1.2s", "3m10s",
// "2h05m". Every duration a report, a line or the view prints goes
// through it (a 41 ms step once read "0s").
func FormatDuration(sec float64) string {
	switch {
	case math.IsNaN(sec) || math.IsInf(sec, 0):
		return "?"
	case sec < 0:
		return "-" + FormatDuration(-sec)
	case sec == 0:
		return "0s"
	case sec < 0.9995e-3:
		return strconv.FormatFloat(sec*1e6, 'f', 0, 64) + "µs"
	case sec < 9.95e-3:
		return strconv.FormatFloat(sec*1e3, 'f', 1, 64) + "ms"
	case sec < 0.9995:
		return strconv.FormatFloat(sec*1e3, 'f', 0, 64) + "ms"
	case sec < 9.95:
		return strconv.FormatFloat(sec, 'f', 1, 64) + "s"
	case sec < 59.5:
		return strconv.FormatFloat(sec, 'f', 0, 64) + "s"
	case sec < 3600-0.5:
		s := int(math.Round(sec))
		return strconv.Itoa(s/60) + "m" + pad2(s%60) + "s"
	}
	m := int(math.Round(sec / 60))
	return strconv.Itoa(m/60) + "h" + pad2(m%60) + "m"
}

func pad2(n int) string {
	if n < 10 {
		return "0" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}

// Plural counts a noun: "1 worker", "2 workers", "0 workers". Words
// whose plural is not the word plus "s" are not passed here.
func Plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// JoinInts lists numbers (PIDs) for a line: "1, 2, 3", the first most of
// them and a count of the rest ("…, and 4 more").
func JoinInts(v []int, most int) string {
	s := make([]string, 0, min(len(v), most)+1)
	for _, n := range v[:min(len(v), most)] {
		s = append(s, strconv.Itoa(n))
	}
	if len(v) > most {
		s = append(s, "and "+strconv.Itoa(len(v)-most)+" more")
	}
	return strings.Join(s, ", ")
}

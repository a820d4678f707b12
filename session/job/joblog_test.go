package job

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTrialLogsRotate: a capped log keeps its last part and the one before
// it, and says that earlier output was dropped.
func TestTrialLogsRotate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run-1.log")
	l, err := openJobLog(path, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		_, _ = l.Write([]byte(strings.Repeat("x", 90) + string(rune('a'+i%26)) + "\n"))
	}
	l.Close()
	for _, p := range []string{path, path + ".1"} {
		st, err := os.Stat(p)
		if err != nil || st.Size() > 1000 || st.Size() == 0 {
			t.Fatalf("%s: %v", p, err)
		}
	}
	if !strings.Contains(l.Note(), "earlier output was dropped") || l.tail.last(1)[0] != strings.Repeat("x", 90)+"v" {
		t.Fatalf("note %q, tail %q", l.Note(), l.tail.last(1))
	}
}

// TestTheJobLogHoldsLinesAsTheTerminalShowsThem: the job's terminal ends
// each line with \r\n (ONLCR), which the log file and the dashboard's
// lines kept; a progress bar's \r redraws are kept as their last
// segment, in the file, the tail and the line not yet ended.
func TestTheJobLogHoldsLinesAsTheTerminalShowsThem(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.log")
	j, err := Start(Options{Argv: []string{"sh", "-c", `echo first line; printf '10%%\r50%%\r100%%\n'; printf 'crlf\r\n'; printf 'working 1\rworking 2'`},
		Env: os.Environ(), Log: path})
	if err != nil {
		t.Fatal(err)
	}
	<-j.Done()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "first line\n100%\ncrlf\nworking 2"; string(b) != want {
		t.Errorf("the log holds %q, want %q", b, want)
	}
	if got, want := strings.Join(j.Tail(4), "|"), "first line|100%|crlf|working 2"; got != want {
		t.Errorf("the tail is %q, want %q", got, want)
	}
}

// TestLineSplitter: lines as a terminal shows them, whatever the writes'
// bounds: a \r\n split over two writes, a bare \r, a run of \r, a line
// longer than maxLine passed on in parts.
// TestTheTailHasNoEmptyLineAfterAPart: the dashboard's tail shows a
// 4 KiB part as a line of its own, and the end of its line with nothing
// after it adds no empty line (a review: "A"*5000+"\rB\n" read A×4096,
// "", "B"; a line of exactly 4 KiB read an empty line after it).
func TestTheTailHasNoEmptyLineAfterAPart(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{strings.Repeat("A", 5000) + "\rB\n", []string{strings.Repeat("A", maxLine), "B"}},
		{strings.Repeat("A", maxLine) + "\nnext\n", []string{strings.Repeat("A", maxLine), "next"}},
		{"a\n\nb\n", []string{"a", "", "b"}}, // an empty line of the job's own stays
	} {
		tail := &lineTail{max: 10}
		tail.Write([]byte(c.in))
		if got := tail.last(10); !slices.Equal(got, c.want) {
			t.Errorf("%.20q…: %d lines %q, want %d", c.in, len(got), got, len(c.want))
		}
	}
}

func TestLineSplitter(t *testing.T) {
	long := strings.Repeat("x", maxLine+10)
	for _, c := range []struct {
		name   string
		writes []string
		want   string // each line, "|" after an ended one, "+" after a part
	}{
		{"crlf", []string{"a\r\nb\r\n"}, "a|b|"},
		{"crlf over two writes", []string{"a\r", "\nb\n"}, "a|b|"},
		{"a progress bar", []string{"10%\r50%", "\r100%\n"}, "100%|"},
		{"a bare cr at a write's end", []string{"10%\r", "50%\n"}, "50%|"},
		{"cr cr lf", []string{"a\r\r\n"}, "a|"},
		{"an empty line", []string{"\r\n\n"}, "||"},
		{"a long line", []string{long + "\n"}, long[:maxLine] + "+" + "xxxxxxxxxx|"},
		// A redraw after a part was passed on: the part's line ends there,
		// the redrawn segment is its own line (a review: "A"*5000+"\rB\n"
		// wrote 4096 A's and B joined).
		{"a redraw after a part", []string{long + "\rB\n"}, long[:maxLine] + "+|B|"},
		// A cut never splits a character: "é" (2 bytes) across the 4 KiB
		// mark goes whole to the next part.
		{"a character across the cut", []string{strings.Repeat("x", maxLine-1) + "é\n"}, strings.Repeat("x", maxLine-1) + "+é|"},
	} {
		var s lineSplitter
		var got strings.Builder
		for _, w := range c.writes {
			s.write([]byte(w), func(line []byte, end bool) {
				got.Write(line)
				if end {
					got.WriteString("|")
				} else {
					got.WriteString("+")
				}
			})
		}
		if got.String() != c.want {
			t.Errorf("%s: %q, want %q", c.name, got.String(), c.want)
		}
	}
}

package job

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"unicode/utf8"

	"github.com/gpuwatch/gpuwatch/sample"
)

// jobLog takes what the job writes to its terminal (or pipes): the log
// file, and the last lines in memory. It never fails a write: the copy
// from the job's terminal must go on whatever happens to the file, or the
// job blocks in write() for ever once the terminal's buffer is full (a
// full disk under the log once froze a job that way). After a failed write
// the file is no longer written, the last lines are still kept, and Note
// says so.
type jobLog struct {
	mu   sync.Mutex
	path string
	f    *os.File
	// written counts the bytes in the current file; max caps it (0: no
	// cap): past it the file is renamed to path.1 (one previous part kept)
	// and a new one begins.
	written, max int64
	rotated      bool
	err          error // the first failure; nothing is written after it
	tail         *lineTail
	// failed, when set, hears the first failure, once (Options.LogFailed).
	failed func(error)
	// split cuts the output into the lines the file holds; out is the
	// bytes of one Write's whole lines.
	split lineSplitter
	out   []byte
}

// maxLine is the longest line kept whole: past it a line is passed on in
// parts of this length (the log file writes them one after the other, the
// tail shows each as a line), so that output with no line end is never
// held in memory, nor the tail's lines long.
const maxLine = 4 << 10

// lineSplitter cuts what a job writes into lines as a terminal shows
// them. A line ends at \n, and a \r before the \n is dropped: the
// pseudo-terminal writes every line end as \r\n (ONLCR), and the log kept
// them. A bare \r (a progress bar drawing its line again) starts the line
// afresh: only its last segment is kept, "100%" of "10%\r50%\r100%\n".
type lineSplitter struct {
	line   []byte // the line so far, since its last bare \r
	cr     bool   // the last byte was a \r: a bare one unless \n follows
	passed bool   // a part of the line so far was passed on (end false)
}

// write takes p, calling done with each line it ends (end true) and
// with each maxLine of a longer one (end false), cut where a character
// begins. A bare \r after a part was passed on ends that line where it
// is: the part cannot be taken back, and the redrawn segment is a line
// of its own, not joined to it.
func (s *lineSplitter) write(p []byte, done func(line []byte, end bool)) {
	for len(p) > 0 {
		if s.cr && p[0] != '\n' && p[0] != '\r' {
			if s.passed {
				done(nil, true)
				s.passed = false
			}
			s.line = s.line[:0]
		}
		s.cr = false
		i := bytes.IndexAny(p, "\r\n")
		if i < 0 {
			i = len(p)
		}
		for b := p[:i]; len(b) > 0; {
			n := min(len(b), maxLine-len(s.line))
			s.line = append(s.line, b[:n]...)
			b = b[n:]
			if len(s.line) == maxLine {
				cut := runeCut(s.line)
				done(s.line[:cut], false)
				s.passed = true
				s.line = s.line[:copy(s.line, s.line[cut:])]
			}
		}
		if i == len(p) {
			return
		}
		if p[i] == '\n' {
			done(s.line, true)
			s.line, s.passed = s.line[:0], false
		} else {
			s.cr = true
		}
		p = p[i+1:]
	}
}

// runeCut is where b may be cut without splitting a UTF-8 character
// at its end: len(b), or the start of an incomplete last one (bytes
// that are not UTF-8 are cut where they are).
func runeCut(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) && i > 0 {
				return i
			}
			break
		}
	}
	return len(b)
}

// openJobLog creates the log (a new file, 0600) capped at max bytes a part.
func openJobLog(path string, max int64) (*jobLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	return &jobLog{path: path, f: f, max: max, tail: &lineTail{max: 200}}, nil
}

// Write keeps p's lines and writes p to the file while it can; it always
// reports every byte taken.
func (l *jobLog) Write(p []byte) (int, error) {
	_, _ = l.tail.Write(p)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil || l.err != nil {
		return len(p), nil
	}
	l.out = l.out[:0]
	l.split.write(p, func(line []byte, end bool) {
		l.out = append(l.out, line...)
		if end {
			l.out = append(l.out, '\n')
		}
	})
	l.writeFile(l.out)
	return len(p), nil
}

// writeFile writes b to the file, rotating it first where b would take it
// past its cap. Under l.mu.
func (l *jobLog) writeFile(b []byte) {
	if len(b) == 0 || l.f == nil || l.err != nil {
		return
	}
	if l.max > 0 && l.written+int64(len(b)) > l.max && l.written > 0 {
		l.rotate()
		if l.err != nil {
			return
		}
	}
	n, err := l.f.Write(b)
	l.written += int64(n)
	if err != nil {
		l.err = err
		if l.failed != nil {
			go l.failed(err) // not under l.mu, and never holding up the drain
		}
	}
}

// rotate moves the full part to path.1 and starts a new one.
func (l *jobLog) rotate() {
	l.f.Close()
	l.f = nil
	if err := os.Rename(l.path, l.path+".1"); err != nil {
		l.err = err
		return
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		l.err = err
		return
	}
	l.f, l.written, l.rotated = f, 0, true
}

// Close writes the last line, if it has no line end, and closes the file.
func (l *jobLog) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writeFile(l.split.line)
	l.split.line = l.split.line[:0]
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

// Note says where the output is and what became of writing it: the path,
// that earlier parts were dropped, or that writing failed (and the last
// lines are kept in memory).
func (l *jobLog) Note() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := sample.Printable(l.path)
	switch {
	case l.err != nil:
		return fmt.Sprintf("%s: writing it failed (%v); the job's output is still read, and its last lines are kept in memory", p, l.err)
	case l.rotated:
		return fmt.Sprintf("%s and %s.1: its last %s to %s (each part is capped; earlier output was dropped)", p, p, sample.FormatBytes(float64(l.max)), sample.FormatBytes(float64(2*l.max)))
	}
	return p
}

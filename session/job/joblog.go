package job

import (
	"fmt"
	"os"
	"sync"

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
	if l.max > 0 && l.written+int64(len(p)) > l.max && l.written > 0 {
		l.rotate()
		if l.err != nil {
			return len(p), nil
		}
	}
	n, err := l.f.Write(p)
	l.written += int64(n)
	if err != nil {
		l.err = err
		if l.failed != nil {
			go l.failed(err) // not under l.mu, and never holding up the drain
		}
	}
	return len(p), nil
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

// Close closes the file.
func (l *jobLog) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
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

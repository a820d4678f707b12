// Package recording writes a session's frames to a file, and reads them
// back one at a time (docs/architecture.md §2): the Recorder behind
// --record and the dashboard's r key, and the reader behind replay and
// report, which bounds and checks everything a file may hold.
package recording

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/lines"
	"github.com/gpuwatch/gpuwatch/sample"
)

// RecordingFormat and RecordingVersion identify a recording's header line.
const (
	RecordingFormat  = "gpuwatch-recording"
	RecordingVersion = 1
)

// Header is a recording's first line: what was recorded, where and how.
type Header struct {
	Type            string    `json:"type"` // "header"
	Format          string    `json:"format"`
	Version         int       `json:"version"`
	Time            time.Time `json:"time"` // start
	Host            string    `json:"host"`
	Cores           int       `json:"cores"`
	GPUs            []string  `json:"gpus"`
	GpuwatchVersion string    `json:"gpuwatch_version"`
	Command         []string  `json:"command"`
	IntervalSec     float64   `json:"interval_sec"`
	// Thresholds are the ones the session diagnosed with: replay and
	// report use them, so a report agrees with what was shown live. Read
	// onto the defaults: those a recording's gpuwatch did not have yet
	// (or a recording with none) read as the defaults, not 0.
	Thresholds *diagnose.Thresholds `json:"thresholds,omitempty"`
	// Job is who the watched job is, when the first frame knew (frames
	// carry its limits and use).
	Job *sample.JobIdentity `json:"job,omitempty"`
	// Part counts files of one recording: 1, then 2… after each rotation.
	Part int `json:"part"`
}

// VerdictChange is a "type":"verdict" line: the shown verdict changed.
type VerdictChange struct {
	Time  time.Time     `json:"time"`
	Kind  diagnose.Kind `json:"kind"`
	Since time.Time     `json:"since"`
}

// Recorder writes a recording: the header, then frames (with the verdict
// shown for them), verdict changes and events, as JSON lines. Every line is
// flushed when written — frames come once per interval — so a crash or
// kill -9 loses at most the line being written, and the file reads up to
// its last complete line. Past MaxBytes the file is rotated to FILE.1 (one
// previous part kept) and a new part starts with its own header. Safe for
// concurrent use.
type Recorder struct {
	mu       sync.Mutex
	path     string
	header   Header
	maxBytes int64
	f        *os.File
	w        *bufio.Writer
	jw       *lines.JSONWriter
	n        int64
	lastKind diagnose.Kind
	haveKind bool
	// Notify is told about rotations (the dashboard shows it, headless
	// runs print it to stderr).
	Notify func(string)
}

// NewRecorder creates path (refusing to replace an existing file) and
// writes the header. maxBytes ≤ 0 means no limit.
func NewRecorder(path string, h Header, maxBytes int64) (*Recorder, error) {
	h.Type, h.Format, h.Version, h.Part = "header", RecordingFormat, RecordingVersion, 1
	r := &Recorder{path: path, header: h, maxBytes: maxBytes}
	if _, err := os.Lstat(path + ".1"); maxBytes > 0 && err == nil {
		// Rotation keeps one previous part there: it must be this
		// recording's, not a file that was there before.
		return nil, fmt.Errorf("%s.1 exists, and rotating %s would replace it: record to a new name", path, path)
	}
	if err := r.open(os.O_CREATE | os.O_EXCL | os.O_WRONLY); err != nil {
		return nil, err
	}
	return r, nil
}

// countingWriter counts bytes written through it.
type countingWriter struct {
	w io.Writer
	n *int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	*c.n += int64(n)
	return n, err
}

func (r *Recorder) open(flags int) error {
	// 0600: a recording holds the hook's CPU profiles (function names,
	// script paths), which the hook serves only with its token.
	f, err := os.OpenFile(r.path, flags|syscall.O_NOFOLLOW, 0o600) // never through a link planted where the file (or its rotation) goes
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%s exists: record to a new file", r.path)
		}
		return err
	}
	r.f, r.n = f, 0
	r.w = bufio.NewWriter(countingWriter{f, &r.n})
	r.jw = lines.NewJSONWriter(r.w)
	if err := r.jw.Encode(r.header); err != nil {
		return err
	}
	return r.w.Flush()
}

// Frame writes a frame and the verdict shown for it (a verdict line first
// when the kind changed).
func (r *Recorder) Frame(f *sample.Frame, v *diagnose.Verdict) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v != nil && (!r.haveKind || v.Kind != r.lastKind) {
		r.lastKind, r.haveKind = v.Kind, true
		if err := r.line(struct {
			Type string `json:"type"`
			VerdictChange
		}{"verdict", VerdictChange{Time: f.Time, Kind: v.Kind, Since: v.Since}}); err != nil {
			return err
		}
	}
	if err := r.jw.WriteFrame(f, v); err != nil {
		return err
	}
	return r.flush()
}

// Note writes a scenario switch or an event.
func (r *Recorder) Note(n sample.Note) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.jw.WriteNote(n); err != nil {
		return err
	}
	return r.flush()
}

func (r *Recorder) line(v any) error { return r.jw.Encode(v) }

// flush writes the buffer out, then rotates if the file grew past the cap.
func (r *Recorder) flush() error {
	if err := r.w.Flush(); err != nil {
		return fmt.Errorf("recording %s: %w", r.path, err)
	}
	if r.maxBytes <= 0 || r.n < r.maxBytes {
		return nil
	}
	if err := r.f.Close(); err != nil {
		return err
	}
	if err := os.Rename(r.path, r.path+".1"); err != nil {
		return err
	}
	r.header.Part++
	r.haveKind = false
	if err := r.open(os.O_CREATE | os.O_TRUNC | os.O_WRONLY); err != nil {
		return err
	}
	if r.Notify != nil {
		// One part is kept before the current one: say which is gone
		// (it said "reached 0 MiB" under 1 MiB, and kept quiet about the
		// parts the rotation replaced).
		gone := ""
		if r.header.Part > 2 {
			gone = fmt.Sprintf(", replacing part %d", r.header.Part-2)
		}
		r.Notify(fmt.Sprintf("recording reached %s: part %d is now %s.1%s; part %d goes on in %s",
			sample.FormatBytes(float64(r.maxBytes)), r.header.Part-1, r.path, gone, r.header.Part, r.path))
	}
	return nil
}

// Close flushes and closes the file.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	err := r.w.Flush()
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	r.f = nil
	return err
}

package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
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
	// Thresholds are the ones the session diagnosed with (nil in
	// recordings made before they were stored): replay and report use
	// them, so a report agrees with what was shown live.
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

// Event is a "type":"event" line: something that happened to a source
// ("disconnected", "reconnected").
type Event struct {
	Time   time.Time `json:"time"`
	Name   string    `json:"name"`
	Detail string    `json:"detail,omitempty"`
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
	jw       *JSONWriter
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
	if maxBytes > 0 && fileExists(path+".1") {
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
	f, err := os.OpenFile(r.path, flags, 0o644)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%s exists: record to a new file", r.path)
		}
		return err
	}
	r.f, r.n = f, 0
	r.w = bufio.NewWriter(countingWriter{f, &r.n})
	r.jw = NewJSONWriter(r.w)
	if err := r.jw.enc.Encode(r.header); err != nil {
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
func (r *Recorder) Note(n Note) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.jw.WriteNote(n); err != nil {
		return err
	}
	return r.flush()
}

func (r *Recorder) line(v any) error { return r.jw.enc.Encode(v) }

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
		r.Notify(fmt.Sprintf("recording reached %d MiB: the previous part is %s.1, part %d goes on in %s",
			r.maxBytes>>20, r.path, r.header.Part, r.path))
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

// Recorded is one frame of a recording with the verdict shown for it.
type Recorded struct {
	Frame   sample.Frame
	Verdict *diagnose.Verdict
}

// Recording is a recording read back.
type Recording struct {
	Header    Header
	Frames    []Recorded
	Verdicts  []VerdictChange
	Scenarios []Scenario
	Events    []Event
	// Warnings say what could not be read: a truncated or corrupt line
	// ends the reading, and everything before it is kept.
	Warnings []string
}

// ErrNotRecording is returned for a file that is not a gpuwatch recording.
var ErrNotRecording = errors.New("not a gpuwatch recording")

// MaxLineBytes bounds one line of a recording: a frame of a 256-core,
// 8-GPU machine is under 100 KiB. A longer line is skipped, never loaded
// whole.
const MaxLineBytes = 16 << 20

// readLine reads one line (with its '\n', if any) of at most limit bytes.
// A longer line is read through to its end without keeping it, and long
// is true.
func readLine(br *bufio.Reader, limit int) (line []byte, long bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			if len(line)+len(chunk) > limit {
				long, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if err != bufio.ErrBufferFull {
			return line, long, err
		}
	}
}

// ReadRecording reads a recording up to its last good line. A file of
// another format, or of a newer version, is refused with an error.
func ReadRecording(r io.Reader) (*Recording, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	rec := &Recording{}
	header := false // the first line that is not blank must be the header
	for lineNo := 1; ; lineNo++ {
		line, long, err := readLine(br, MaxLineBytes)
		if long {
			if !header {
				return nil, fmt.Errorf("%w: the first line is longer than %d MiB", ErrNotRecording, MaxLineBytes>>20)
			}
			rec.Warnings = append(rec.Warnings, fmt.Sprintf("line %d is longer than %d MiB: skipped", lineNo, MaxLineBytes>>20))
			continue
		}
		if len(line) == 0 && err != nil {
			if err != io.EOF {
				return rec, err
			}
			break
		}
		complete := len(line) > 0 && line[len(line)-1] == '\n'
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var head struct {
			Type string `json:"type"`
		}
		if jerr := json.Unmarshal(line, &head); jerr != nil {
			if !header {
				return nil, fmt.Errorf("%w: the first line is not JSON", ErrNotRecording)
			}
			what := "corrupt"
			if !complete {
				what = "truncated (the recording was cut off)"
			}
			rec.Warnings = append(rec.Warnings, fmt.Sprintf("line %d is %s: read up to line %d", lineNo, what, lineNo-1))
			break
		}
		if !header {
			header = true
			if head.Type != "header" {
				return nil, fmt.Errorf("%w: no header line", ErrNotRecording)
			}
			if err := json.Unmarshal(line, &rec.Header); err != nil || rec.Header.Format != RecordingFormat {
				return nil, fmt.Errorf("%w: format %q", ErrNotRecording, rec.Header.Format)
			}
			if rec.Header.Version > RecordingVersion {
				return nil, fmt.Errorf("recording format version %d is newer than this gpuwatch reads (%d): update gpuwatch", rec.Header.Version, RecordingVersion)
			}
			continue
		}
		var bad error
		switch head.Type {
		case "frame":
			var fl struct {
				sample.Frame
				Verdict *diagnose.Verdict `json:"verdict"`
			}
			if bad = json.Unmarshal(line, &fl); bad == nil {
				rec.Frames = append(rec.Frames, Recorded{Frame: fl.Frame, Verdict: fl.Verdict})
			}
		case "verdict":
			var v VerdictChange
			if bad = json.Unmarshal(line, &v); bad == nil {
				rec.Verdicts = append(rec.Verdicts, v)
			}
		case "scenario":
			var s Scenario
			if bad = json.Unmarshal(line, &s); bad == nil {
				rec.Scenarios = append(rec.Scenarios, s)
			}
		case "event":
			var e Event
			if bad = json.Unmarshal(line, &e); bad == nil {
				rec.Events = append(rec.Events, e)
			}
		case "header":
			// A later part's header inside one file: skip.
		default:
			// Lines of types a newer gpuwatch adds are skipped.
		}
		if bad != nil {
			rec.Warnings = append(rec.Warnings, fmt.Sprintf("line %d: %v: read up to line %d", lineNo, bad, lineNo-1))
			break
		}
		if err == io.EOF {
			break
		}
	}
	return rec, nil
}

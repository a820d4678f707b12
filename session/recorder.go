package session

import (
	"fmt"
	"log"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/recording"
	"github.com/gpuwatch/gpuwatch/sample"
)

// recorder is a session's optional recording, an observer: started by
// --record or the dashboard's r key. The file is created at the first
// frame, so its header can name the GPUs. A write error stops the
// recording, not the session: it is told through notify and kept for
// stop, which returns it.
type recorder struct {
	mu       sync.Mutex
	path     string    // "" when not recording
	since    time.Time // the first frame's time
	maxBytes int64
	version  string
	th       diagnose.Thresholds
	rec      *recording.Recorder
	frames   int
	err      error         // why the recording stopped early
	notify   func(string)  // rotations
	onFail   func(string)  // a write error stopped the recording; nil: told at the end
	pending  []sample.Note // notes before the first frame
	loaderUp *bool         // the last loader connection state seen
}

func newRecorder(o Options) *recorder {
	return &recorder{maxBytes: o.RecordMaxSize, version: o.Version, th: o.Thresholds, notify: func(s string) { log.Print(s) }}
}

func (r *recorder) start(path string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.path, r.frames, r.rec, r.err, r.since = path, 0, nil, nil, time.Time{}
}

// current is the file being recorded to and its first frame's time; ok
// is false when not recording.
func (r *recorder) current() (path string, since time.Time, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.path, r.since, r.path != ""
}

// stop closes the file and returns its path, frame count and the error
// that stopped it early, if any.
func (r *recorder) stop() (string, int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closeLocked()
}

func (r *recorder) closeLocked() (string, int, error) {
	path, n, err := r.path, r.frames, r.err
	if r.rec != nil {
		if cerr := r.rec.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("%s: %w", path, cerr)
		}
	}
	r.path, r.rec, r.err = "", nil, nil
	return path, n, err
}

func (r *recorder) active() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.path != ""
}

// Frame implements Observer.
func (r *recorder) Frame(f *sample.Frame, v diagnose.Verdict) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.path == "" {
		return nil
	}
	if err := r.frameLocked(f, &v); err != nil {
		r.failLocked(err)
	}
	return nil
}

func (r *recorder) frameLocked(f *sample.Frame, v *diagnose.Verdict) error {
	if r.rec == nil {
		rec, err := recording.NewRecorder(r.path, Header(f, r.version, r.th), r.maxBytes)
		if err != nil {
			return err
		}
		rec.Notify = r.notify
		r.rec, r.since = rec, f.Time
		for _, n := range r.pending {
			if err := rec.Note(n); err != nil {
				return err
			}
		}
		r.pending = nil
	}
	if l := f.Loader; l != nil && l.Connected != nil && (r.loaderUp == nil || *r.loaderUp != *l.Connected) {
		if r.loaderUp != nil {
			name, detail := "reconnected", l.Source
			if !*l.Connected {
				name, detail = "disconnected", l.Source+": "+f.Unavailable[sample.SourceLoader]
			}
			if err := r.rec.Note(sample.Event{Time: f.Time, Name: name, Detail: detail}); err != nil {
				return err
			}
		}
		up := *l.Connected
		r.loaderUp = &up
	}
	r.frames++
	return r.rec.Frame(f, v)
}

// failLocked stops the recording after a write error and says so; stop
// returns the error.
func (r *recorder) failLocked(err error) {
	if r.rec != nil {
		_ = r.rec.Close()
	}
	r.err = fmt.Errorf("%s: %w", r.path, err)
	r.rec, r.path = nil, ""
	if r.onFail != nil {
		r.onFail("recording stopped: " + r.err.Error())
	}
}

// Note implements Observer.
func (r *recorder) Note(n sample.Note) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.path == "" {
		return nil
	}
	if r.rec == nil {
		r.pending = append(r.pending, n)
		return nil
	}
	if err := r.rec.Note(n); err != nil {
		r.failLocked(err)
	}
	return nil
}

// toggle is the dashboard's r key: start a recording in the current
// folder, or stop the one running.
func (r *recorder) toggle() (string, error) {
	if r.active() {
		path, n, err := r.stop()
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("recording stopped: %s (%d frames)", path, n), nil
	}
	path := "gpuwatch-" + time.Now().Format("20060102-150405") + ".jsonl"
	if _, err := os.Stat(path); err == nil {
		return "", fmt.Errorf("%s exists", path)
	}
	r.start(path)
	log.Printf("recording to %s", path)
	return "recording to " + path + " (r stops)", nil
}

// Header is a recording's (and a live report's) header for a session
// whose first frame is f: this host, its cores, f's GPUs, this build, its
// command line with credentials taken out of URLs, and the thresholds.
func Header(f *sample.Frame, version string, th diagnose.Thresholds) recording.Header {
	host, _ := os.Hostname()
	gpus := []string{}
	for _, g := range f.GPUs {
		gpus = append(gpus, g.Name)
	}
	h := recording.Header{
		Time: f.Time, Host: host, Cores: runtime.NumCPU(), GPUs: gpus,
		GpuwatchVersion: version, Command: sample.RedactArgs(os.Args), IntervalSec: f.IntervalSec, Thresholds: &th,
	}
	if f.Job != nil {
		h.Job = f.Job.Identity
	}
	return h
}

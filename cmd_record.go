package main

import (
	"fmt"
	"log"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/report"
	"github.com/gpuwatch/gpuwatch/sample"
)

// recording is a session's optional recording: started by --record or the
// dashboard's r key, written from the session's frame loop. The file is
// created at the first frame, so its header can name the GPUs.
type recording struct {
	mu       sync.Mutex
	path     string // "" when not recording
	maxBytes int64
	rec      *report.Recorder
	frames   int
	notify   func(string)
	pending  []any // notes before the first frame
	loaderUp *bool // the last loader connection state seen
}

func (r *recording) start(path string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.path, r.frames, r.rec = path, 0, nil
}

// stop closes the file and returns its path and frame count.
func (r *recording) stop() (string, int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	path, n := r.path, r.frames
	var err error
	if r.rec != nil {
		err = r.rec.Close()
	}
	r.path, r.rec = "", nil
	return path, n, err
}

func (r *recording) active() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.path != ""
}

func (r *recording) frame(f *sample.Frame, v *diagnose.Verdict) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.path == "" {
		return nil
	}
	if r.rec == nil {
		host, _ := os.Hostname()
		gpus := []string{}
		for _, g := range f.GPUs {
			gpus = append(gpus, g.Name)
		}
		rec, err := report.NewRecorder(r.path, report.Header{
			Time: f.Time, Host: host, Cores: runtime.NumCPU(), GPUs: gpus,
			GpuwatchVersion: version, Command: os.Args, IntervalSec: f.IntervalSec,
		}, r.maxBytes)
		if err != nil {
			r.path = ""
			return fmt.Errorf("--record: %w", err)
		}
		rec.Notify = r.notify
		r.rec = rec
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
				name, detail = "disconnected", l.Source+": "+f.Unavailable["loader"]
			}
			if err := r.rec.Note(report.Event{Time: f.Time, Name: name, Detail: detail}); err != nil {
				return err
			}
		}
		up := *l.Connected
		r.loaderUp = &up
	}
	r.frames++
	return r.rec.Frame(f, v)
}

func (r *recording) note(n any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.path == "" {
		return nil
	}
	if r.rec == nil {
		r.pending = append(r.pending, n)
		return nil
	}
	return r.rec.Note(n)
}

// toggle is the dashboard's r key: start a recording in the current
// folder, or stop the one running.
func (r *recording) toggle() (string, error) {
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

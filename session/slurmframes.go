package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/exporter"
	"github.com/gpuwatch/gpuwatch/recording"
	"github.com/gpuwatch/gpuwatch/sample"
)

// SlurmFrames keeps, for each Slurm job a prolog mapped on the node, a
// recording of the frames serve took while the job was the node's job
// (FramesDir/JOBID.jsonl): a Slurm epilog runs after the job's processes
// are gone, so the job's last minute must have been kept by whoever
// watched it (deploy/slurm/epilog.sh replays it with replay --once
// --last 1m). A job's recording is closed when its mapping file goes (the
// epilog removes it); the epilog removes the recording. Safe for use from
// the session's frame callback only (one goroutine), Close after it.
type SlurmFrames struct {
	MapDir    string // the prolog's mapping folder (serve --slurm-job-dir)
	FramesDir string // where the recordings go (serve --slurm-frames-dir)
	MaxBytes  int64  // per job, before its one rotation
	Version   string
	Th        diagnose.Thresholds
	Warn      func(string) // a recording that failed, once per job

	mu    sync.Mutex
	open  map[string]*recording.Recorder
	bad   map[string]bool
	swept time.Time // when sweep last ran (frame time)
}

// A job's kept frames outlive it only until its epilog has read them:
// sweep removes, at most every sweepEvery, the recordings of jobs no
// longer mapped that nothing wrote for staleAfter (an epilog that never
// ran: a node that rebooted, a job killed with its epilog). At most
// sweepMax folder entries are looked at a sweep.
const (
	staleAfter = 15 * time.Minute
	sweepEvery = time.Minute
	sweepMax   = 10000
)

// Frame records f for the mapped job it belongs to (exporter's rule: the
// job the frame names by its cgroup), and closes
// the recordings of jobs no longer mapped. It implements Observer; a
// failed write is warned of (Warn), never the session's error.
func (s *SlurmFrames) Frame(f *sample.Frame, v diagnose.Verdict) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open == nil {
		s.open, s.bad = map[string]*recording.Recorder{}, map[string]bool{}
	}
	jobs := exporter.ReadSlurmJobs(s.MapDir)
	mapped := map[string]bool{}
	for _, j := range jobs.List {
		mapped[j.ID] = true
	}
	for id, r := range s.open {
		if !mapped[id] {
			_ = r.Close()
			delete(s.open, id)
		}
	}
	for id := range s.bad {
		if !mapped[id] {
			delete(s.bad, id)
		}
	}
	if f.Time.Sub(s.swept) >= sweepEvery || f.Time.Before(s.swept) {
		s.swept = f.Time
		s.sweep(mapped, f.Time)
	}
	var ident sample.JobIdentity
	if f.Job != nil && f.Job.Identity != nil {
		ident = *f.Job.Identity
	}
	job := jobs.Of(&ident)
	if job == nil || s.bad[job.ID] {
		return nil
	}
	r, err := s.recorder(job.ID, f)
	if err == nil {
		err = r.Frame(f, &v)
	}
	if err != nil {
		s.bad[job.ID] = true
		if r != nil {
			_ = r.Close()
			delete(s.open, job.ID)
		}
		if s.Warn != nil {
			s.Warn(fmt.Sprintf("slurm job %s: frames not kept: %v", job.ID, err))
		}
	}
	return nil
}

// Note implements Observer: a job's kept frames hold frames only.
func (s *SlurmFrames) Note(sample.Note) error { return nil }

// recorder is the job's open recording, started anew when there is none:
// a file left by an earlier serve (restarted during the job) is replaced.
func (s *SlurmFrames) recorder(id string, f *sample.Frame) (*recording.Recorder, error) {
	if r := s.open[id]; r != nil {
		return r, nil
	}
	path := s.Path(id)
	for _, p := range []string{path, path + ".1"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	r, err := recording.NewRecorder(path, Header(f, s.Version, s.Th), s.MaxBytes)
	if err != nil {
		return nil, err
	}
	s.open[id] = r
	return r, nil
}

// Path is where job id's frames are kept.
func (s *SlurmFrames) Path(id string) string { return filepath.Join(s.FramesDir, id+".jsonl") }

// Close closes every open recording.
func (s *SlurmFrames) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for id, r := range s.open {
		errs = append(errs, r.Close())
		delete(s.open, id)
	}
	return errors.Join(errs...)
}

// sweep removes the kept frames of jobs no longer mapped (JOBID.jsonl and
// its rotation, JOBID.jsonl.1) not written for staleAfter before now.
// Only names of that form are touched, and a link is removed, never
// followed; a failure is warned of (Warn) and left for the next sweep.
func (s *SlurmFrames) sweep(mapped map[string]bool, now time.Time) {
	d, err := os.Open(s.FramesDir)
	if err != nil {
		return
	}
	defer d.Close()
	names, _ := d.Readdirnames(sweepMax)
	for _, name := range names {
		id, ok := keptJob(name)
		if !ok || mapped[id] || s.open[id] != nil {
			continue
		}
		p := filepath.Join(s.FramesDir, name)
		st, err := os.Lstat(p)
		if err != nil || now.Sub(st.ModTime()) < staleAfter {
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) && s.Warn != nil {
			s.Warn(fmt.Sprintf("slurm job %s: its stale frames not removed: %v", id, err))
		}
	}
}

// keptJob is the job id of a kept recording's file name ("4242.jsonl",
// "4242.jsonl.1"); false for any other name.
func keptJob(name string) (string, bool) {
	id, ok := strings.CutSuffix(name, ".jsonl")
	if !ok {
		id, ok = strings.CutSuffix(name, ".jsonl.1")
	}
	if !ok || id == "" || len(id) > 20 || strings.Trim(id, "0123456789") != "" {
		return "", false
	}
	return id, true
}

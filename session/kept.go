package session

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/recording"
	"github.com/gpuwatch/gpuwatch/report"
	"github.com/gpuwatch/gpuwatch/sample"
)

// keptFrames is the observer that keeps the session's frames for the
// dashboard's e key (at most an hour at 1 s; older frames drop), so a
// report can be written without a recording.
type keptFrames struct {
	mu         sync.Mutex
	frames     []recording.Recorded
	notes      []sample.Scenario
	version    string
	thresholds diagnose.Thresholds
}

const keepFrames = 3600

// Frame implements Observer.
func (s *keptFrames) Frame(f *sample.Frame, _ diagnose.Verdict) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.frames) >= keepFrames {
		s.frames = append(s.frames[:0], s.frames[len(s.frames)-keepFrames+1:]...)
	}
	s.frames = append(s.frames, recording.Recorded{Frame: *f})
	return nil
}

// Note implements Observer.
func (s *keptFrames) Note(n sample.Note) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sc, ok := n.(sample.Scenario); ok {
		s.notes = append(s.notes, sc)
	}
	return nil
}

// export writes an HTML report of the session so far to a new file in the
// current folder (the dashboard's e key).
func (s *keptFrames) export() (string, error) {
	s.mu.Lock()
	frames, notes := slices.Clone(s.frames), slices.Clone(s.notes)
	s.mu.Unlock()
	if len(frames) == 0 {
		return "", fmt.Errorf("no frame yet")
	}
	rec := recording.New(Header(&frames[0].Frame, s.version, s.thresholds), frames, notes)
	path := "gpuwatch-report-" + time.Now().Format("20060102-150405") + ".html"
	if err := report.WriteFile(path, report.Build(rec, "(live session)", s.thresholds, time.Now()), false); err != nil {
		return "", err
	}
	return "report written: " + path, nil
}

package session

import (
	"io"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/recording"
)

// ReplayLines recomputes each frame's verdict with a fresh Diagnoser and
// prints the frames with their scenario lines in time order, through the
// same writer as a live headless session.
func ReplayLines(rec *recording.Recording, th diagnose.Thresholds, asJSON bool, stdout io.Writer) error {
	d := diagnose.NewDiagnoser(th)
	h := newHeadless(stdout, asJSON, th)
	notes := rec.Scenarios
	return rec.Each(func(_ int, r *recording.Recorded) error {
		f := &r.Frame
		for len(notes) > 0 && !notes[0].Time.After(f.Time) {
			if err := h.Note(notes[0]); err != nil {
				return err
			}
			notes = notes[1:]
		}
		return h.Frame(f, d.Observe(f))
	})
}

package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/report"
	"github.com/gpuwatch/gpuwatch/sample"
)

// OnceCap is how long --once waits for the verdict to settle when no
// duration is given.
const OnceCap = 60 * time.Second

// SettleFrames and SettleTime: the shown verdict must keep its kind, past
// warming up, this many frames in a row and this long, to count as
// settled — long enough for a loader's start-up (workers starting, the
// first batches) to pass.
const (
	SettleFrames = 5
	SettleTime   = 5 * time.Second
)

// ErrBottleneck is what a --once session returns when its verdict is a
// problem to fix (exit status 3): a Slurm epilogue or a CI step can act on
// it.
var ErrBottleneck = errors.New("a bottleneck was found")

// settle is the --once observer: it watches the verdicts and stops the
// session once one has held SettleFrames frames.
type settle struct {
	stop    func()
	first   time.Time
	last    *sample.Frame
	verdict diagnose.Verdict
	streak  int
	since   time.Time // the streak's first frame
	frames  int
	settled bool
}

// Frame implements Observer.
func (s *settle) Frame(f *sample.Frame, v diagnose.Verdict) error {
	if s.frames == 0 {
		s.first = f.Time
	}
	s.frames++
	if v.Kind != diagnose.WarmingUp && v.Kind == s.verdict.Kind {
		s.streak++
	} else {
		s.streak, s.since = 1, f.Time
	}
	s.verdict, s.last = v, f
	if v.Kind != diagnose.WarmingUp && s.streak >= SettleFrames && f.Time.Sub(s.since) >= SettleTime && !s.settled {
		s.settled = true
		s.stop()
	}
	return nil
}

// Note implements Observer.
func (s *settle) Note(report.Note) error { return nil }

// onceSummary is --once --json's one object.
type onceSummary struct {
	Type    string           `json:"type"` // "summary"
	Time    time.Time        `json:"time"`
	Frames  int              `json:"frames"`
	Seconds float64          `json:"seconds"`
	Settled bool             `json:"settled"` // false: the cap came first
	Verdict diagnose.Verdict `json:"verdict"`
}

// summary prints the verdict the session ended on, and returns
// ErrBottleneck for a problem.
func (s *settle) summary(w io.Writer, asJSON bool) error {
	if s.frames == 0 {
		return errors.New("no frame came before the end")
	}
	v := s.verdict
	secs := s.last.Time.Sub(s.first).Seconds()
	var err error
	if asJSON {
		err = json.NewEncoder(w).Encode(onceSummary{Type: "summary", Time: s.last.Time, Frames: s.frames, Seconds: secs, Settled: s.settled, Verdict: v})
	} else {
		var b strings.Builder
		state := "settled"
		if !s.settled {
			state = "not settled: the last verdict"
		}
		fmt.Fprintf(&b, "%s (%s, %.0f %% confident; %s after %d frames, %.0f s)\n", v.Kind, v.Severity, 100*v.Confidence, state, s.frames, secs)
		p := sample.Printable // names from outside reach a terminal
		for _, e := range v.Evidence {
			fmt.Fprintf(&b, "  ▸ %s\n", p(e.Text))
		}
		for _, f := range v.Secondary {
			fmt.Fprintf(&b, "  + %s: %s\n", f.Kind, p(f.Text))
		}
		for _, a := range v.Advice {
			fmt.Fprintf(&b, "  ⇒ %s\n", p(a))
		}
		for _, m := range v.Missing {
			fmt.Fprintf(&b, "  - not seen: %s\n", p(m))
		}
		_, err = io.WriteString(w, b.String())
	}
	if err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	if v.Kind.Problem() {
		return ErrBottleneck
	}
	return nil
}

package tune

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/probes/training"
	"github.com/gpuwatch/gpuwatch/sample"
	"github.com/gpuwatch/gpuwatch/session"
	"github.com/gpuwatch/gpuwatch/session/job"
)

// CeilingEnough is the share of the ceiling at which tune stops: the
// input pipeline has nothing left to give (docs/diagnosis.md, "The
// ceiling").
const CeilingEnough = 0.95

// ceilingShare is rate's share of ceiling; nil without a ceiling.
func ceilingShare(rate, ceiling float64) *float64 {
	if ceiling <= 0 || rate < 0 {
		return nil
	}
	v := rate / ceiling
	return &v
}

func ceilingWhy(share, ceiling float64) string {
	return fmt.Sprintf("nothing left to gain in the input pipeline: %.0f %% of the ceiling (%s samples/s measured with input free)", 100*share, sample.Thousands(ceiling))
}

// CeilingMeasurer is Trials that can measure the loop's ceiling: the
// user's command under the hook (CommandTrials).
type CeilingMeasurer interface {
	// MeasureCeiling runs s once with the hook asked to measure the
	// ceiling with a replay of replay, at most limit, and returns what it
	// measured.
	MeasureCeiling(ctx context.Context, s Setting, replay, limit time.Duration) (sample.Ceiling, error)
}

// MeasureCeiling implements CeilingMeasurer: one extra run of the command
// with GPUWATCH_CEILING_SECONDS in its environment, watched until a frame
// carries the ceiling measured (or refused); then the job is interrupted
// as Ctrl-C would.
func (c *CommandTrials) MeasureCeiling(ctx context.Context, s Setting, replay, limit time.Duration) (sample.Ceiling, error) {
	c.runs++
	logPath := filepath.Join(c.dir, fmt.Sprintf("ceiling-%d.log", c.runs))
	env := append(append([]string(nil), c.env...), "GPUWATCH_CEILING_SECONDS="+strconv.FormatFloat(replay.Seconds(), 'f', -1, 64))
	j, err := job.Start(job.Options{Argv: c.argvFor(s), Env: env, RunDir: c.dir, Log: logPath, LogMax: c.LogMax})
	if err != nil {
		return sample.Ceiling{}, err
	}
	defer os.Remove(logPath)
	defer j.Stop(10 * time.Second)
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	w, err := session.NewWatch(ctx, session.Options{Interval: c.Interval, Thresholds: c.Th, Target: session.Target{Roots: c.Roots, PID: j.PID(), Job: j},
		Sources: session.Sources{Attach: session.AttachTo{Discover: true, Dir: c.dir, NoProfiles: true, Within: func(pid int) bool { return training.Descends(c.Roots.Proc, pid, j.PID()) }}}})
	if err != nil {
		return sample.Ceiling{}, err
	}
	defer w.Close()
	got := &ceilingSeen{stop: cancel}
	notes, stopNotes := session.JobNotes(ctx, j, nil, true, cancel)
	defer stopNotes()
	if err := w.Loop(ctx, notes, got); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return sample.Ceiling{}, err
	}
	switch {
	case got.c == nil:
		return sample.Ceiling{}, fmt.Errorf("no ceiling measured within %v (the loop must run warm for a few seconds, then %v more): %s", limit, replay, j.LogNote())
	case got.c.State == sample.CeilingRefused:
		return *got.c, fmt.Errorf("the hook did not measure the ceiling: %s", sample.Printable(got.c.Reason))
	}
	return *got.c, nil
}

// ceilingSeen watches frames for the ceiling measured (or refused), and
// stops the watch once it is.
type ceilingSeen struct {
	c    *sample.Ceiling
	stop func()
}

func (s *ceilingSeen) Frame(f *sample.Frame, _ diagnose.Verdict) error {
	if l := f.Loader; l != nil && l.Ceiling != nil && (l.Ceiling.Measured() || l.Ceiling.State == sample.CeilingRefused) && s.c == nil {
		c := *l.Ceiling
		s.c = &c
		s.stop()
	}
	return nil
}

func (*ceilingSeen) Note(sample.Note) error { return nil }

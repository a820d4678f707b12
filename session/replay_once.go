package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/recording"
)

// ReplayOnce judges a recording's last stretch as --once judges a live
// session: the frames of the last `last` (all with 0) are diagnosed, the
// frames before them only warm the diagnosis up, and the verdict the
// stretch ends on is printed as --once prints it (asJSON: its one summary
// object), settled when it held SettleFrames frames and SettleTime at
// the end. It returns ErrBottleneck or ErrUnsettled as --once does. A
// Slurm epilog judges a job's last minute this way after its processes
// are gone (deploy/slurm/epilog.sh). Cancelling ctx (replay cancels it on
// SIGTERM, SIGINT and SIGHUP) stops the judging at the next frame: nothing
// is printed and the error wraps ctx's, so the epilog's time limit holds.
func ReplayOnce(ctx context.Context, rec *recording.Recording, th diagnose.Thresholds, last time.Duration, asJSON bool, w io.Writer) error {
	n := rec.Len()
	if n == 0 {
		return errors.New("the recording holds no frame")
	}
	end, err := rec.Frame(n - 1)
	if err != nil {
		return err
	}
	from := time.Time{}
	if last > 0 {
		from = end.Frame.Time.Add(-last)
	}
	d := diagnose.NewDiagnoser(th)
	s := NewSettle(func() {}, th.MinFrames)
	s.replayed = true
	err = rec.Each(func(_ int, r *recording.Recorded) error {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("stopped before the recording's end (%w): no verdict", err)
		}
		f := &r.Frame
		v := d.Observe(f)
		if !f.Time.Before(from) {
			return s.Frame(f, v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if s.Frames() == 0 {
		return errors.New("no frame in the stretch asked for")
	}
	return s.summaryAtEnd(w, asJSON)
}

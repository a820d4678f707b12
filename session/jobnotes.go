package session

import (
	"context"
	"fmt"
	"strings"

	"github.com/gpuwatch/gpuwatch/internal/bg"
	"github.com/gpuwatch/gpuwatch/sample"
	"github.com/gpuwatch/gpuwatch/session/job"
)

// JobNotes passes the command's notes on and adds the job's exit as an
// event note. With end (headless), the session ends once that note is
// written: the note channel is unbuffered, so the loop has taken the
// note — and told every observer — before the session is cancelled.
// stop ends the goroutine that does this and waits for it.
func JobNotes(ctx context.Context, j *job.Job, in <-chan sample.Note, end bool, cancel context.CancelFunc) (notes <-chan sample.Note, stop func()) {
	out := make(chan sample.Note)
	g := bg.New(ctx)
	g.Go(func(ctx context.Context) {
		defer close(out)
		done := j.Done()
		for in != nil || done != nil {
			var n sample.Note
			select {
			case <-ctx.Done():
				return
			case m, ok := <-in:
				if !ok {
					in = nil
					continue
				}
				n = m
			case <-done:
				done = nil
				how, at := j.Exit()
				// The event's name says "exited" where it is shown beside
				// the detail: "exited pid 7 (python train.py) with status 1".
				how = strings.TrimPrefix(how, "exited ")
				n = sample.Event{Time: at, Name: "exited", Detail: fmt.Sprintf("pid %d (%s) %s", j.PID(), j.Command(), how)}
			}
			select {
			case out <- n:
			case <-ctx.Done():
				return
			}
			if done == nil && end {
				cancel()
				return
			}
		}
	})
	return out, g.Close
}

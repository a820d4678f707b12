package session

import (
	"context"
	"fmt"

	"github.com/gpuwatch/gpuwatch/internal/bg"
	"github.com/gpuwatch/gpuwatch/lines"
	"github.com/gpuwatch/gpuwatch/session/job"
)

// JobNotes passes the command's notes on and adds the job's exit as an
// event note. With end (headless), the session ends once that note is
// written: the note channel is unbuffered, so the loop has taken the
// note — and told every observer — before the session is cancelled.
// stop ends the goroutine that does this and waits for it.
func JobNotes(ctx context.Context, j *job.Job, in <-chan lines.Note, end bool, cancel context.CancelFunc) (notes <-chan lines.Note, stop func()) {
	out := make(chan lines.Note)
	g := bg.New(ctx)
	g.Go(func(ctx context.Context) {
		defer close(out)
		done := j.Done()
		for in != nil || done != nil {
			var n lines.Note
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
				n = lines.Event{Time: at, Name: "exited", Detail: fmt.Sprintf("pid %d (%s) %s", j.PID(), j.Command(), how)}
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

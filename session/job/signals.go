package job

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Forward passes the signals arriving on sigs (SIGINT, SIGTERM,
// SIGHUP, SIGQUIT: Forwarded, which the caller hands to signal.Notify) to
// the job's process group while it runs. Once it has
// ended they are gpuwatch's own: SIGINT, SIGTERM and SIGHUP end the session
// (cancel), as they would without a job. A SIGHUP means the terminal is
// gone (an ssh hang-up): it is passed on, and with endOnHangUp (the
// dashboard, which would run for ever with no terminal) the session is
// cancelled once the job has ended. A headless session ends with the job
// by itself, after its last frame and the job's exit event: cancelling
// it then would cut them off.
//
// The returned function stops the forwarding (signal.Stop) and waits for
// its goroutine: whoever starts a goroutine stops it and waits for it
// (docs/architecture.md).
func Forward(sigs chan os.Signal, job *Job, cancel context.CancelFunc, endOnHangUp bool) func() {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		jobDone, hungUp := job.Done(), false
		for {
			select {
			case <-quit:
				return
			case <-jobDone:
				jobDone = nil
				if hungUp && endOnHangUp {
					cancel()
				}
			case s := <-sigs:
				sig := s.(syscall.Signal)
				select {
				case <-job.Done():
					if sig != syscall.SIGQUIT {
						cancel()
					}
				default:
					_ = job.Signal(sig)
					hungUp = hungUp || sig == syscall.SIGHUP
				}
			}
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(quit)
		<-done
	}
}

// Forwarded are the signals gpuwatch passes on to the job: SIGINT,
// SIGTERM, SIGHUP and SIGQUIT, less those gpuwatch was started with
// ignored. Under nohup SIGHUP stays ignored, and so the job, which
// inherits the ignored disposition, survives the hang-up as the user
// asked; catching it would have reset the job's to the default, death.
func Forwarded() []os.Signal {
	var out []os.Signal
	for _, s := range []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT} {
		if !signal.Ignored(s) {
			out = append(out, s)
		}
	}
	return out
}

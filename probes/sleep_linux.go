package probes

import (
	"time"

	"golang.org/x/sys/unix"
)

// SleepUntil sleeps in the kernel until t (clock_nanosleep on the
// monotonic clock to an absolute time, which a signal cannot stretch).
func SleepUntil(t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	var now unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &now) != nil {
		time.Sleep(d)
		return
	}
	at := unix.NsecToTimespec(now.Nano() + d.Nanoseconds())
	for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &at, nil) == unix.EINTR {
	}
}

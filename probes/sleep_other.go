//go:build !linux

package probes

import "time"

// SleepUntil sleeps until t.
func SleepUntil(t time.Time) { time.Sleep(time.Until(t)) }

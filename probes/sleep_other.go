//go:build !linux

package probes

import "time"

func SleepUntil(t time.Time) { time.Sleep(time.Until(t)) }

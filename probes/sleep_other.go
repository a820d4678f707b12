//go:build !linux

package probes

import "time"

func sleepUntil(t time.Time) { time.Sleep(time.Until(t)) }

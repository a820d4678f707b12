//go:build !linux

package job

import "errors"

// schedAffinity is not known off Linux.
func schedAffinity(int) (int, error) { return 0, errors.New("no sched_getaffinity") }

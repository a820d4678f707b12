package loader

import "golang.org/x/sys/unix"

// gettid is the calling OS thread's ID, as /proc/PID/task lists it.
func gettid() int { return unix.Gettid() }

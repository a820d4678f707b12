//go:build !linux

package loader

// gettid is 0 off Linux: there is no /proc/PID/task to match it against.
func gettid() int { return 0 }

//go:build !linux

package job

import "syscall"

// setParentDeath: only Linux has a parent-death signal.
func setParentDeath(*syscall.SysProcAttr) {}

// watchStops: Ctrl-Z handling is Linux's only (waitid(2) with WSTOPPED).
func (j *Job) watchStops(int) func() { return func() {} }

// Stopped says whether pid is stopped: never, here, without /proc.
func Stopped(string, int) bool { return false }

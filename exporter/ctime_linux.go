package exporter

import "syscall"

// changeTime is s's ctime in nanoseconds: the kernel sets it on every
// change of the inode — its contents, mode, owner, group or links (stat(2)).
func changeTime(s *syscall.Stat_t) int64 { return s.Ctim.Nano() }

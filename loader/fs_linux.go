package loader

import "syscall"

// oDirect opens a file past the page cache.
const oDirect = syscall.O_DIRECT

// errNoDirectIO is nil: Linux has O_DIRECT (each filesystem may still refuse it).
var errNoDirectIO error

// freeBytes is the space left to unprivileged users in dir's filesystem;
// false when it cannot tell (ramfs and some FUSE filesystems report no
// size).
func freeBytes(dir string) (int64, bool) {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil || fs.Blocks == 0 {
		return 0, false
	}
	return int64(fs.Bavail) * int64(fs.Bsize), true // field types differ per arch
}

package probes

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// OwnedFolder checks that dir is a folder (not a symlink) of this user's
// with none of the mode bits in forbidden (0o022: no one else may write
// to it). On a shared box another user can create folders where gpuwatch
// looks (docs/security.md): announcements planted there would point it at
// their server, a run folder there would be theirs to fill.
func OwnedFolder(dir string, forbidden fs.FileMode) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	switch {
	case !st.IsDir():
		return fmt.Errorf("%s is not a folder", dir)
	case ok && int(sys.Uid) != os.Geteuid():
		return fmt.Errorf("%s belongs to user %d, not to you", dir, sys.Uid)
	case st.Mode().Perm()&forbidden != 0:
		return fmt.Errorf("%s may be written by others (mode %v)", dir, st.Mode().Perm())
	}
	return nil
}

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFramesFolderMustBeServesOwn (issue 54, item 4): the folder serve
// keeps jobs' frames in, which root's epilog replays, is refused when it
// is a link, others may write in it, or another user owns it; the unit's
// StateDirectory (0700, the service's) is taken.
func TestFramesFolderMustBeServesOwn(t *testing.T) {
	base := t.TempDir()
	mk := func(name string, mode os.FileMode) string {
		d := filepath.Join(base, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
		return d
	}
	own := mk("own", 0o700)
	if err := privateFolder(own); err != nil {
		t.Errorf("a 0700 folder of serve's own: %v", err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(own, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, want string }{
		{mk("shared", 0o1777), "others may write in it (mode 0777)"},
		{mk("group", 0o770), "others may write in it (mode 0770)"},
		{link, "a symbolic link"},
		{filepath.Join(base, "missing"), "no such file"},
	} {
		if err := privateFolder(c.dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.dir, err, c.want)
		}
	}
	if os.Geteuid() == 0 {
		theirs := mk("theirs", 0o700)
		if err := os.Chown(theirs, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := privateFolder(theirs); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
			t.Errorf("another user's folder: %v", err)
		}
	}
}

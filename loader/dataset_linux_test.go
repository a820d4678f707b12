//go:build linux

package loader

import (
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestAGeneratedDatasetIsOnTheDisk: each shard of a dataset just
// generated has no page left dirty or under writeback (cachestat(2)), so
// the first run measured on it does not share the disk with its
// writeback.
func TestAGeneratedDatasetIsOnTheDisk(t *testing.T) {
	dir := t.TempDir()
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	if fs.Type == unix.TMPFS_MAGIC || fs.Type == unix.OVERLAYFS_SUPER_MAGIC {
		// tmpfs never marks its pages dirty, and an overlay's file keeps
		// them in the file below: nothing to read here.
		t.Skipf("the temporary folder is on tmpfs or overlayfs (0x%x): no writeback to see", fs.Type)
	}
	d, err := OpenDataset(dir, shardSize+4<<20, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Generated || len(d.shards) != 2 {
		t.Fatalf("generated %v, %d shards", d.Generated, len(d.shards))
	}
	for _, p := range d.shards {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		var st unix.Cachestat_t
		err = unix.Cachestat(uint(f.Fd()), &unix.CachestatRange{}, &st, 0) // the whole file
		f.Close()
		if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
			t.Skipf("cachestat(2) (Linux 6.5+): %v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		if st.Dirty != 0 || st.Writeback != 0 {
			t.Errorf("%s: %d pages dirty, %d under writeback (%d cached)", p, st.Dirty, st.Writeback, st.Cache)
		}
	}
}

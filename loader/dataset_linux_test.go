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
	d, err := OpenDataset(t.TempDir(), shardSize+4<<20, 1)
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
		if errors.Is(err, unix.ENOSYS) {
			t.Skip("no cachestat(2) on this kernel (Linux 6.5+)")
		}
		if err != nil {
			t.Fatal(err)
		}
		if st.Dirty != 0 || st.Writeback != 0 {
			t.Errorf("%s: %d pages dirty, %d under writeback (%d cached)", p, st.Dirty, st.Writeback, st.Cache)
		}
	}
}

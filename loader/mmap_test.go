//go:build linux

package loader

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// twoShards is a dataset of two shard files (the second short), cold in
// the page cache.
func twoShards(t testing.TB) *Dataset {
	t.Helper()
	ds, err := OpenDataset(t.TempDir(), shardSize+(4<<20), 7)
	if err != nil {
		t.Fatal(err)
	}
	if err := ds.Map(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ds.Close)
	return ds
}

func TestMappedReadsCrossShards(t *testing.T) {
	ds := twoShards(t)
	rd, _ := ds.newReader(false, nil)
	defer rd.close()
	mapped := ds.newMappedReader(nil)
	for _, off := range []int64{0, shardSize - 100, shardSize, ds.Size - 4096} {
		a, b := make([]byte, 4096), make([]byte, 4096)
		if err := rd.readAt(a, off); err != nil {
			t.Fatal(err)
		}
		if err := mapped.readAt(b, off); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Fatalf("mapped read differs at %d", off)
		}
	}
	if err := mapped.readAt(make([]byte, 10), ds.Size-5); err == nil {
		t.Fatal("a read past the end succeeded")
	}
}

// TestPageCacheLimit: reading the whole dataset through its mapping
// caches it all (mincore counts it); DropPages and TrimPageCache take it
// back out, so the next reads fault from the disk.
func TestPageCacheLimit(t *testing.T) {
	ds := twoShards(t)
	mapped := ds.newMappedReader(nil)
	buf := make([]byte, 1<<20)
	warm := func() {
		for off := int64(0); off < ds.Size; off += int64(len(buf)) {
			if err := mapped.readAt(buf[:min(int64(len(buf)), ds.Size-off)], off); err != nil {
				t.Fatal(err)
			}
		}
	}
	warm()
	ds.residentAt = time.Time{} // count now, not from the cache of counts
	if res, ok := ds.Resident(); !ok || res < ds.Size*9/10 {
		t.Fatalf("after reading it all, %d of %d bytes are cached (ok %v)", res, ds.Size, ok)
	}
	if err := ds.DropPages(); err != nil {
		t.Fatal(err)
	}
	if res, _ := ds.Resident(); res > ds.Size/10 {
		t.Fatalf("after DropPages %d of %d bytes are still cached", res, ds.Size)
	}
	warm()
	limit := int64(8 << 20)
	if err := ds.TrimPageCache(limit); err != nil {
		t.Fatal(err)
	}
	if res, _ := ds.Resident(); res > limit {
		t.Fatalf("after TrimPageCache(%d) %d bytes are cached", limit, res)
	}
}

// TestTruncatedShardIsAnError: a shard cut short under the mapping raises
// SIGBUS on touch; the read returns an error instead of crashing.
func TestTruncatedShardIsAnError(t *testing.T) {
	ds := twoShards(t)
	if err := os.Truncate(ds.shards[0], 4096); err != nil {
		t.Fatal(err)
	}
	err := ds.newMappedReader(nil).readAt(make([]byte, 4096), 1<<20)
	if err == nil || !strings.Contains(err.Error(), "faulted") {
		t.Fatalf("read of a truncated mapping: %v", err)
	}
}

// TestMmapRunStartsColdUnderAPageCacheLimit runs the loader with --read
// mmap and a page-cache limit: it reads through its mappings, starts with
// the dataset out of the cache, and unmaps it at the end.
func TestMmapRunStartsColdUnderAPageCacheLimit(t *testing.T) {
	c, ds := small(t)
	c.Read, c.PageCache = Mmap, 1<<20
	if err := c.Validate(false); err != nil {
		t.Fatal(err)
	}
	// Warm the cache: the run must drop it first.
	if err := ds.LoadIntoMemory(); err != nil {
		t.Fatal(err)
	}
	ds.mem = nil
	l := New(c, ds, nil)
	var cachedAtStart int64 = -1
	var first sync.Once
	l.fetchHook = func(_, index int) {
		first.Do(func() { cachedAtStart, _ = l.PageCache() })
	}
	if err := l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if cachedAtStart < 0 || cachedAtStart > c.DatasetSize/4 {
		t.Fatalf("%d of %d bytes cached at the first batch: the run did not start cold", cachedAtStart, c.DatasetSize)
	}
	if s := l.Snapshot(); s.Batches != uint64(c.Epochs*c.Batches) || s.ReadSeconds <= 0 {
		t.Fatalf("%d batches, %.3fs reading", s.Batches, s.ReadSeconds)
	}
	if _, ok := l.PageCache(); ok {
		t.Fatal("the dataset is still mapped after the run")
	}
}

func TestReadModeValidation(t *testing.T) {
	c := Default()
	c.Read = "splice"
	if err := c.Validate(false); err == nil || !strings.Contains(err.Error(), "pread or mmap") {
		t.Fatalf("--read splice: %v", err)
	}
	c.Read, c.DirectIO = Mmap, true
	if err := c.Validate(false); err == nil || !strings.Contains(err.Error(), "contradict") {
		t.Fatalf("--read mmap --direct-io: %v", err)
	}
	c.DirectIO, c.PageCache = false, -1
	if err := c.Validate(false); err == nil {
		t.Fatal("a negative --page-cache was accepted")
	}
}

// BenchmarkResident is the page-cache count the probe takes each tick of
// a mapped dataset: mincore over 68 MiB (17,408 pages); 1 GiB is 15× it.
func BenchmarkResident(b *testing.B) {
	ds := twoShards(b)
	b.ReportAllocs()
	for b.Loop() {
		ds.pageMu.Lock()
		_, ok := ds.countResident()
		ds.pageMu.Unlock()
		if !ok {
			b.Fatal("not mapped")
		}
	}
}

// TestWarmRunStartsWithTheDatasetCached drops the dataset's pages and runs
// the loader with and without Config.Warm: warmed, the first batch finds
// the dataset in the page cache; not, it finds it cold.
func TestWarmRunStartsWithTheDatasetCached(t *testing.T) {
	for _, warm := range []bool{false, true} {
		c, ds := small(t)
		c.Read, c.Warm = Mmap, warm
		if err := ds.Map(); err != nil {
			t.Fatal(err)
		}
		if err := ds.DropPages(); err != nil {
			t.Fatal(err)
		}
		if n, _ := ds.Resident(); n > c.DatasetSize/4 {
			t.Skipf("this filesystem keeps dropped pages (%d of %d bytes cached: tmpfs?)", n, c.DatasetSize)
		}
		if err := ds.DropPages(); err != nil { // and forgets the count just taken
			t.Fatal(err)
		}
		l := New(c, ds, nil)
		var cached int64 = -1
		var first sync.Once
		l.fetchHook = func(_, _ int) {
			first.Do(func() { cached, _ = l.PageCache() })
		}
		if err := l.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		ds.Close()
		if warm && cached < c.DatasetSize*9/10 || !warm && (cached < 0 || cached > c.DatasetSize/4) {
			t.Errorf("warm=%v: %d of %d bytes cached at the first batch", warm, cached, c.DatasetSize)
		}
	}
}

package loader

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// shardSize is the size of each dataset file. Samples are fixed-size
// records laid end to end across shards, so the same files serve every
// sample size.
const shardSize = 64 << 20

// directAlign is the alignment O_DIRECT needs for offsets, lengths and
// buffer addresses on Linux block devices with 4 KiB logical sectors (and
// is enough for 512-byte ones).
const directAlign = 4096

// Dataset is a folder of shard files of random bytes.
type Dataset struct {
	Dir  string
	Size int64
	// Generated says whether this run wrote the files (false: reused).
	Generated bool
	shards    []string
	mem       []byte // the whole dataset, with --cache

	// maps are the shards' mappings (Map), for --read mmap and for
	// counting the dataset's cached pages.
	maps   [][]byte
	pageMu sync.Mutex // guards maps' publication, vec, cursor and the count below
	vec    []byte     // mincore scratch
	cursor int        // the next shard TrimPageCache evicts
	// The newest count of cached bytes, and when it was taken: readers
	// within residentFresh share it.
	resident   int64
	residentAt time.Time
}

// residentFresh is how long a count of the dataset's cached pages is
// reused: mincore costs ~20 ns a page, 5 ms for 1 GiB.
const residentFresh = 500 * time.Millisecond

// DefaultDatasetDir is where datasets live unless --dataset says otherwise:
// the user's cache folder, one subfolder per size.
func DefaultDatasetDir(size int64) string {
	return filepath.Join(datasetsRoot(), "dataset-"+FormatSize(size))
}

func datasetsRoot() string {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "gpuwatch")
}

// RemoveDefaultDatasets removes the datasets in their default place
// (demo --clean): in each dataset-SIZE folder there, the shard files, then
// the folder when nothing else is in it. Nothing else is touched. It
// returns the folders emptied and the bytes freed.
func RemoveDefaultDatasets() (dirs []string, freed int64, err error) {
	root := datasetsRoot()
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "dataset-") {
			continue
		}
		dir := filepath.Join(root, e.Name())
		shards, err := filepath.Glob(filepath.Join(dir, "shard-[0-9][0-9][0-9][0-9][0-9].bin"))
		if err != nil {
			return dirs, freed, err
		}
		removed := 0
		for _, s := range shards {
			if st, err := os.Lstat(s); err == nil && st.Mode().IsRegular() {
				if err := os.Remove(s); err != nil {
					return dirs, freed, err
				}
				freed += st.Size()
				removed++
			}
		}
		_ = os.Remove(dir) // only when empty: anything else stays
		if removed > 0 {
			dirs = append(dirs, dir)
		}
	}
	return dirs, freed, nil
}

// DatasetReady says whether dir already holds a complete dataset of size
// bytes (so opening it writes nothing).
func DatasetReady(dir string, size int64) bool {
	for off, i := int64(0), 0; off < size; off, i = off+shardSize, i+1 {
		st, err := os.Stat(filepath.Join(dir, fmt.Sprintf("shard-%05d.bin", i)))
		if err != nil || st.Size() != min(shardSize, size-off) {
			return false
		}
	}
	return true
}

// OpenDataset opens the dataset in dir, generating its shards first where
// they are missing or of the wrong size. It refuses a dataset that does not
// fit the free space of dir's filesystem.
func OpenDataset(dir string, size int64, seed int64) (*Dataset, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("dataset folder: %w", err)
	}
	d := &Dataset{Dir: dir, Size: size}
	var missing int64
	for off, i := int64(0), 0; off < size; off, i = off+shardSize, i+1 {
		n := min(shardSize, size-off)
		p := filepath.Join(dir, fmt.Sprintf("shard-%05d.bin", i))
		d.shards = append(d.shards, p)
		if st, err := os.Stat(p); err != nil || st.Size() != n {
			missing += n
		}
	}
	if missing == 0 {
		return d, nil
	}
	if free, ok := freeBytes(dir); ok {
		if free < missing+64<<20 {
			return nil, fmt.Errorf("dataset of %s does not fit: %s free in %s", FormatSize(size), FormatSize(free), dir)
		}
	}
	rng := rand.NewChaCha8(seedBytes(seed))
	buf := make([]byte, 1<<20)
	for i, p := range d.shards {
		n := min(shardSize, size-int64(i)*shardSize)
		if st, err := os.Stat(p); err == nil && st.Size() == n {
			continue
		}
		if err := writeShard(p, n, rng, buf); err != nil {
			return nil, err
		}
	}
	d.Generated = true
	return d, nil
}

func seedBytes(seed int64) [32]byte {
	var b [32]byte
	for i := 0; i < 8; i++ {
		b[i] = byte(seed >> (8 * i))
	}
	return b
}

// writeShard writes n random bytes to a temporary file and renames it into
// place, so a shard is complete or absent.
func writeShard(path string, n int64, rng *rand.ChaCha8, buf []byte) error {
	// A name of its own per process: two gpuwatch runs may generate the
	// same dataset at once; each rename is atomic and the bytes are equal.
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	for left := n; left > 0; {
		b := buf[:min(int64(len(buf)), left)]
		_, _ = rng.Read(b)
		if _, err := f.Write(b); err != nil {
			f.Close()
			os.Remove(tmp)
			return fmt.Errorf("dataset: %w", err)
		}
		left -= int64(len(b))
	}
	// On the disk before it is used: a shard left dirty is written back
	// over the next half minute, while the loader reads (a fresh 1 GiB
	// io-bound dataset's writeback shared the disk with the first run
	// measured on it), and a crash could leave a shard of the right size
	// whose bytes never reached the disk.
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("dataset: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("dataset: %w", err)
	}
	return os.Rename(tmp, path)
}

// LoadIntoMemory reads the whole dataset into RAM (--cache): every later
// read is a copy from memory.
func (d *Dataset) LoadIntoMemory() error {
	mem := make([]byte, d.Size)
	for i, p := range d.shards {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		_, err = io.ReadFull(f, mem[int64(i)*shardSize:min(int64(i+1)*shardSize, d.Size)])
		f.Close()
		if err != nil {
			return fmt.Errorf("cache %s: %w", p, err)
		}
	}
	d.mem = mem
	return nil
}

// Warm reads every shard once through the page cache (Config.Warm), so
// the reads that follow are copies from memory while memory lasts. It
// stops at ctx's end, between two 1 MiB reads.
func (d *Dataset) Warm(ctx context.Context) error {
	buf := make([]byte, 1<<20)
	for _, p := range d.shards {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		for err == nil {
			if err = ctx.Err(); err != nil {
				f.Close()
				return err
			}
			_, err = f.Read(buf)
		}
		f.Close()
		if err != io.EOF {
			return fmt.Errorf("warm %s: %w", p, err)
		}
	}
	return nil
}

// Map maps every shard (once; later calls do nothing). Reads with
// --read mmap copy out of the mappings, and Resident counts their cached
// pages.
func (d *Dataset) Map() error {
	if d.maps != nil {
		return nil
	}
	maps := make([][]byte, 0, len(d.shards))
	for _, p := range d.shards {
		m, err := mapShard(p)
		if err != nil {
			for _, m := range maps {
				unmapShard(m)
			}
			return err
		}
		maps = append(maps, m)
	}
	d.pageMu.Lock()
	d.maps = maps
	d.pageMu.Unlock()
	return nil
}

// Close unmaps the shards. Nothing may read the dataset after it.
func (d *Dataset) Close() {
	d.pageMu.Lock()
	defer d.pageMu.Unlock()
	for _, m := range d.maps {
		unmapShard(m)
	}
	d.maps = nil
}

// Resident is how many of the dataset's bytes are in the page cache,
// from mincore(2) on its mappings, counted at most residentFresh ago; ok
// is false when it is not mapped.
func (d *Dataset) Resident() (bytes int64, ok bool) {
	d.pageMu.Lock()
	defer d.pageMu.Unlock()
	if d.maps == nil {
		return 0, false
	}
	if !d.residentAt.IsZero() && time.Since(d.residentAt) < residentFresh {
		return d.resident, true
	}
	return d.countResident()
}

// countResident counts the cached pages now (pageMu held). 1 GiB of
// shards is 262,144 pages: one pass reads 256 KiB of flags.
func (d *Dataset) countResident() (bytes int64, ok bool) {
	for _, m := range d.maps {
		n, vec, err := residentPages(m, d.vec)
		d.vec = vec
		if err != nil {
			return 0, false
		}
		bytes += int64(n) * int64(pageSize)
	}
	d.resident, d.residentAt = min(bytes, d.Size), time.Now()
	return d.resident, true
}

// DropPages evicts all of the dataset's pages from the page cache (the
// dataset must be mapped).
func (d *Dataset) DropPages() error {
	d.pageMu.Lock()
	defer d.pageMu.Unlock()
	if d.maps == nil {
		return errors.New("drop pages: the dataset is not mapped")
	}
	d.residentAt = time.Time{}
	for i, p := range d.shards {
		if err := dropShard(p, d.maps[i]); err != nil {
			return err
		}
	}
	return nil
}

// TrimPageCache keeps the dataset's cached bytes near limit, as a page
// cache too small for it would: when more is cached, whole shards are
// evicted, round-robin, until at most half the limit stays. Eviction by
// request leaves no trace in the kernel's reclaim counters (pgsteal,
// workingset refaults); only the faults and the disk show it.
func (d *Dataset) TrimPageCache(limit int64) error {
	d.pageMu.Lock()
	defer d.pageMu.Unlock()
	if d.maps == nil {
		return nil
	}
	res, ok := d.countResident()
	if !ok || res <= limit {
		return nil
	}
	defer func() { d.residentAt = time.Time{} }() // counted before the eviction
	per := res / int64(len(d.shards))             // a shard's share, on average
	for i := 0; i < len(d.shards) && res > limit/2; i++ {
		s := d.cursor
		d.cursor = (d.cursor + 1) % len(d.shards)
		if err := dropShard(d.shards[s], d.maps[s]); err != nil {
			return err
		}
		res -= per
	}
	return nil
}

// CheckDirectIO opens a shard with O_DIRECT and reads one block: a
// filesystem that refuses it (tmpfs, some network filesystems) gives an
// error that says so.
func (d *Dataset) CheckDirectIO() error {
	if errNoDirectIO != nil {
		return fmt.Errorf("--direct-io: %w", errNoDirectIO)
	}
	r, err := d.newReader(true, nil)
	if err != nil {
		return err
	}
	defer r.close()
	if err := r.readAt(make([]byte, 512), 0); err != nil {
		return fmt.Errorf("O_DIRECT read in %s failed (%w): the filesystem does not support --direct-io", d.Dir, err)
	}
	return nil
}

// throttle emulates a network link shared by all readers: a fixed latency
// per read and a bandwidth cap. It sleeps on purpose: it stands for time
// spent waiting on a remote store.
type throttle struct {
	mu        sync.Mutex
	bandwidth float64 // bytes/s, 0 = unlimited
	latency   time.Duration
	next      time.Time
}

// wait holds a read of n bytes for the link's latency and its share of
// the bandwidth, or until done is closed (a nil done never is): a slow
// link (--read-bandwidth 1B/s, --read-latency 1h) must not outlive its
// loader. ok is false when done cut the wait short.
func (t *throttle) wait(done <-chan struct{}, n int) (ok bool) {
	if t == nil {
		return true
	}
	if t.latency > 0 && !sleep(done, t.latency) {
		return false
	}
	if t.bandwidth <= 0 {
		return true
	}
	t.mu.Lock()
	now := time.Now()
	start := t.next
	if start.Before(now) {
		start = now
	}
	t.next = start.Add(time.Duration(float64(n) / t.bandwidth * float64(time.Second)))
	until := t.next
	t.mu.Unlock()
	return sleep(done, time.Until(until))
}

// sleep waits d, or until done is closed; ok is false when done ended it.
func sleep(done <-chan struct{}, d time.Duration) (ok bool) {
	if d <= 0 {
		return true
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-done:
		return false
	}
}

// errStopped is a read that the loader's end cut short.
var errStopped = errors.New("loader stopped")

// reader reads samples for one worker: its own file handles and an aligned
// bounce buffer for O_DIRECT.
type reader struct {
	d      *Dataset
	direct bool
	mapped bool // copy out of the dataset's mappings
	files  []*os.File
	bounce []byte
	thr    *throttle
	done   <-chan struct{} // closed when the loader stops: ends a throttled wait; nil: never
}

// newMappedReader reads through the dataset's mappings (Map first).
func (d *Dataset) newMappedReader(thr *throttle) *reader {
	return &reader{d: d, mapped: true, thr: thr}
}

func (d *Dataset) newReader(direct bool, thr *throttle) (*reader, error) {
	r := &reader{d: d, direct: direct, thr: thr, files: make([]*os.File, len(d.shards))}
	if direct {
		r.bounce = alignedBuffer(256 << 10)
	}
	return r, nil
}

func alignedBuffer(n int) []byte {
	b := make([]byte, n+directAlign)
	off := int(uintptr(unsafe.Pointer(&b[0])) & (directAlign - 1))
	if off != 0 {
		off = directAlign - off
	}
	return b[off : off+n]
}

func (r *reader) file(i int) (*os.File, error) {
	if f := r.files[i]; f != nil {
		return f, nil
	}
	flags := os.O_RDONLY
	if r.direct {
		flags |= oDirect
	}
	f, err := os.OpenFile(r.d.shards[i], flags, 0)
	if err != nil {
		return nil, err
	}
	r.files[i] = f
	return f, nil
}

// readAt fills dst with the dataset's bytes at off, across shard
// boundaries, with pread (one syscall per shard touched, more for a large
// O_DIRECT read).
func (r *reader) readAt(dst []byte, off int64) error {
	if r.d.mem != nil {
		copy(dst, r.d.mem[off:]) // in RAM: no link, no latency
		return nil
	}
	if !r.thr.wait(r.done, len(dst)) {
		return errStopped
	}
	if r.mapped {
		return r.copyMapped(dst, off)
	}
	for len(dst) > 0 {
		i := int(off / shardSize)
		in := off - int64(i)*shardSize
		n := min(int64(len(dst)), shardSize-in)
		f, err := r.file(i)
		if err != nil {
			return err
		}
		if r.direct {
			err = r.readDirect(f, dst[:n], in)
		} else {
			_, err = f.ReadAt(dst[:n], in)
		}
		if err != nil {
			return err
		}
		dst, off = dst[n:], off+n
	}
	return nil
}

// copyMapped copies dst's bytes out of the shards' mappings: each page not
// in the page cache is a major fault, served by a read the kernel issues
// while this thread waits. A shard shortened under the mapping raises
// SIGBUS on touch; it comes back as an error, not a crash.
func (r *reader) copyMapped(dst []byte, off int64) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the mapped dataset faulted at byte %d (a shard changed under it?): %v", off, p)
		}
	}()
	for len(dst) > 0 {
		i := int(off / shardSize)
		in := off - int64(i)*shardSize
		if i >= len(r.d.maps) || in >= int64(len(r.d.maps[i])) {
			return io.ErrUnexpectedEOF
		}
		n := copy(dst, r.d.maps[i][in:])
		dst, off = dst[n:], off+int64(n)
	}
	return nil
}

// readDirect reads the aligned window around [off, off+len(dst)) into the
// bounce buffer and copies the wanted bytes out.
func (r *reader) readDirect(f *os.File, dst []byte, off int64) error {
	for len(dst) > 0 {
		start := off &^ (directAlign - 1)
		end := min((off+int64(len(dst))+directAlign-1)&^(directAlign-1), start+int64(len(r.bounce)))
		n, err := f.ReadAt(r.bounce[:end-start], start)
		if err != nil && !(errors.Is(err, io.EOF) && int64(n) >= off-start) {
			return err
		}
		c := copy(dst, r.bounce[off-start:n])
		if c == 0 {
			return io.ErrUnexpectedEOF
		}
		dst, off = dst[c:], off+int64(c)
	}
	return nil
}

func (r *reader) close() {
	if r == nil {
		return
	}
	for _, f := range r.files {
		if f != nil {
			f.Close()
		}
	}
}

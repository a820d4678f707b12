package loader

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapShard maps one shard read-only and shared: the pages are the page
// cache's, as a memory-mapped Arrow or numpy file's are.
func mapShard(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the mapping outlives the descriptor
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() == 0 {
		return nil, fmt.Errorf("map %s: empty file", path)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", path, err)
	}
	return m, nil
}

func unmapShard(m []byte) { _ = unix.Munmap(m) }

// residentPages counts the pages of m in the page cache (mincore(2); for
// a file mapping it reports the file's cached pages, touched by us or
// not). vec is scratch of one byte per page, grown as needed.
func residentPages(m []byte, vec []byte) (int, []byte, error) {
	pages := (len(m) + pageSize - 1) / pageSize
	if cap(vec) < pages {
		vec = make([]byte, pages)
	}
	vec = vec[:pages]
	// x/sys/unix has no Mincore for Linux: the raw call.
	_, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(m))), uintptr(len(m)), uintptr(unsafe.Pointer(unsafe.SliceData(vec))))
	if e != 0 {
		return 0, vec, fmt.Errorf("mincore: %w", e)
	}
	n := 0
	for _, b := range vec {
		n += int(b & 1)
	}
	return n, vec, nil
}

// dropShard evicts one shard's pages: our mapping lets go of them
// (madvise MADV_DONTNEED; the kernel never drops a mapped page on
// request), then the page cache drops the clean ones
// (posix_fadvise POSIX_FADV_DONTNEED). The next touch reads the disk.
// On tmpfs nothing drops: there the pages are the file.
func dropShard(path string, m []byte) error {
	if m != nil {
		if err := unix.Madvise(m, unix.MADV_DONTNEED); err != nil {
			return fmt.Errorf("madvise %s: %w", path, err)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	// Dirty pages (a shard just generated) are not dropped, only queued
	// for writeback: write them first. On a clean file this is cheap.
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return fmt.Errorf("fdatasync %s: %w", path, err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("fadvise %s: %w", path, err)
	}
	return nil
}

// errNoMmap is nil: Linux maps files and reports their cached pages.
var errNoMmap error

var pageSize = os.Getpagesize()

package textpages

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestCleanSpansTakesOnlyTheBinarysCleanReadOnlyPages: of an smaps, the
// mappings of the file that holds the code (by device and inode) that are
// not writable and hold no page of their own; not the RELRO page
// (read-only, but written by the dynamic linker: MADV_DONTNEED dropped the
// relocations, and the next call through them jumped to 0), not a
// swapped-out copy, not the data, not another file's, not a file on
// another device with the same inode.
func TestCleanSpansTakesOnlyTheBinarysCleanReadOnlyPages(t *testing.T) {
	smaps := `00400000-00411000 r--p 00000000 fe:00 42                           /usr/bin/gpuwatch
Size:                 68 kB
Rss:                  68 kB
Anonymous:             0 kB
VmFlags: rd mr mw me sd
00411000-00c6c000 r-xp 00011000 fe:00 42                           /usr/bin/gpuwatch
Size:               8556 kB
Anonymous:             0 kB
00c6c000-015ec000 r--p 0086c000 fe:00 42                           /usr/bin/gpuwatch (deleted)
Anonymous:             0 kB
Swap:                  0 kB
015e0000-015e1000 r--p 011e0000 fe:00 42                           /usr/bin/gpuwatch
Anonymous:             0 kB
Swap:                  4 kB
015ec000-015ed000 r--p 011eb000 fe:00 42                           /usr/bin/gpuwatch
Anonymous:             4 kB
015ed000-016d4000 rw-p 011ec000 fe:00 42                           /usr/bin/gpuwatch
Anonymous:           112 kB
7f0000000000-7f0000010000 r-xp 00000000 fe:00 43                           /usr/lib/libc.so.6
Anonymous:             0 kB
7f0000100000-7f0000110000 r-xp 00000000 fe:01 42                           /mnt/other/lib.so
Anonymous:             0 kB
zzzz-0001 r-xp 00000000 fe:00 42 /usr/bin/gpuwatch
Anonymous:             0 kB
00500000-00400000 r-xp 00000000 fe:00 42 /usr/bin/gpuwatch
Anonymous:             0 kB
`
	path := filepath.Join(t.TempDir(), "smaps")
	if err := os.WriteFile(path, []byte(smaps), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := cleanSpans(path, 0x412345)
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]uintptr{{0x400000, 0x411000}, {0x411000, 0xc6c000}, {0xc6c000, 0x15ec000}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("spans %x, want %x", got, want)
	}
	if _, err := cleanSpans(path, 0x7f0000200000); err == nil {
		t.Fatal("code in no mapping: no error")
	}
}

// TestReleaseUnmapsTheBinarysPagesAndKeepsThemCached: Release unmaps the
// pages of the binary that the process maps — those of a private read-only
// mapping of the binary that only this test reads, just read — and marks
// the binary's mappings so that a fault maps no 2 MB page; the page cache
// still holds every page of the file it held, and the pages come back
// whole without a read from the disk. (That the dynamic linker's
// relocations stay mapped is cli's TestReleaseKeepsTheDynamicLinkersRelocations:
// this test binary has none.)
func TestReleaseUnmapsTheBinarysPagesAndKeepsThemCached(t *testing.T) {
	f, err := os.Open("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	// 1 MB from the middle of the file: a mapping of the binary like its
	// code's, that nothing but this test touches.
	region := m[len(m)/2-(512<<10) : len(m)/2+(512<<10)]
	sum := func() (n int) {
		for i := 0; i < len(region); i += 64 {
			n += int(region[i])
		}
		return n
	}
	want := sum()
	pages := len(region) / os.Getpagesize()
	if got := mappedPages(t, region); got < pages*9/10 {
		t.Fatalf("the region just read: %d of its %d pages mapped", got, pages)
	}
	cachedBefore := cachedPages(t, f, st.Size())
	n, err := Release()
	if err != nil {
		t.Fatal(err)
	}
	if n < int64(len(m)) {
		t.Fatalf("released %d bytes, not even the test's own mapping of %d", n, len(m))
	}
	mapped := mappedPages(t, region)
	cachedAfter := cachedPages(t, f, st.Size())
	t.Logf("%d kB of mappings released; the region's pages mapped after: %d of %d; the binary's pages in the page cache: %d before, %d after",
		n>>10, mapped, pages, cachedBefore, cachedAfter)
	if mapped != 0 {
		t.Errorf("%d of the region's %d pages still mapped: not unmapped", mapped, pages)
	}
	if cachedAfter < cachedBefore {
		t.Errorf("the page cache held %d of the binary's pages before and %d after: Release dropped some", cachedBefore, cachedAfter)
	}
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage"); err == nil {
		if f := binaryPages(t).codeFlags; !strings.Contains(f, " nh") {
			t.Errorf("the code's mapping's flags %q lack nh (no huge page)", f)
		}
	}
	// Read back on this thread alone, its major faults counted.
	runtime.LockOSThread()
	majBefore := threadMajorFaults(t)
	got := sum()
	maj := threadMajorFaults(t) - majBefore
	runtime.UnlockOSThread()
	if got != want {
		t.Errorf("the region read back sums to %d, %d before", got, want)
	}
	if maj != 0 {
		t.Errorf("reading the region back took %d major faults: read from the disk, not mapped from the page cache", maj)
	}
	if got := mappedPages(t, region); got < pages*9/10 {
		t.Errorf("the region read again: %d of its %d pages mapped", got, pages)
	}
}

func threadMajorFaults(t *testing.T) int64 {
	t.Helper()
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		t.Fatal(err)
	}
	return ru.Majflt
}

// mappedPages counts the whole pages of b that this process maps now
// (/proc/self/pagemap's present bit).
func mappedPages(t *testing.T, b []byte) int {
	t.Helper()
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ps := uintptr(os.Getpagesize())
	lo := (uintptr(unsafe.Pointer(unsafe.SliceData(b))) + ps - 1) / ps
	hi := (uintptr(unsafe.Pointer(unsafe.SliceData(b))) + uintptr(len(b))) / ps
	buf := make([]byte, 8*(hi-lo))
	if _, err := f.ReadAt(buf, int64(lo*8)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := 0; i < len(buf); i += 8 {
		n += int(binary.LittleEndian.Uint64(buf[i:]) >> 63)
	}
	return n
}

// cachedPages counts the pages of the file f (size bytes) that the page
// cache holds (mincore on a mapping of its own, which maps nothing by
// itself).
func cachedPages(t *testing.T, f *os.File, size int64) int {
	t.Helper()
	m, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

type pages struct {
	rssKB     int
	codeFlags string // VmFlags of the mapping that holds the code
}

// binaryPages sums the resident kB of this process's read-only mappings of
// its own binary (the file that holds Release's code) and reads the flags
// of the one that holds the code.
func binaryPages(t *testing.T) pages {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	pc := reflect.ValueOf(Release).Pointer()
	var dev, ino string
	for _, line := range strings.Split(string(b), "\n") {
		if m, ok := readMapping([]byte(line)); ok && m.lo <= pc && pc < m.hi {
			dev, ino = m.dev, m.ino
		}
	}
	var p pages
	ours, code := false, false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if m, ok := readMapping(sc.Bytes()); ok {
			ours = m.dev == dev && m.ino == ino && !m.writable
			code = m.lo <= pc && pc < m.hi
			continue
		}
		if !ours {
			continue
		}
		if kb, ok := strings.CutPrefix(line, "Rss:"); ok {
			n, _ := strconv.Atoi(strings.Fields(kb)[0])
			p.rssKB += n
		}
		if code && strings.HasPrefix(line, "VmFlags:") {
			p.codeFlags = line
		}
	}
	return p
}

// TestTracedReadsTracerPid: a process a debugger traces gives nothing back
// (a breakpoint is a write Release could drop), nor one whose status it
// cannot read.
func TestTracedReadsTracerPid(t *testing.T) {
	dir := t.TempDir()
	for body, want := range map[string]bool{
		"Name:\tgpuwatch\nTracerPid:\t0\nUid:\t0\n":    false,
		"Name:\tgpuwatch\nTracerPid:\t4242\nUid:\t0\n": true,
		"Name:\tgpuwatch\n":                            true,
	} {
		path := filepath.Join(dir, "status")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := traced(path); got != want {
			t.Errorf("traced(%q) = %v, want %v", body, got, want)
		}
	}
	if !traced(filepath.Join(dir, "absent")) {
		t.Error("an unreadable status read as not traced")
	}
	if traced("/proc/self/status") {
		t.Error("this test, not traced, read as traced")
	}
}

// TestCleanSpansRefusesPastItsCap: past 16,384 mappings the last one's
// own pages would go unread; none is given back rather than one that may
// hold a write.
func TestCleanSpansRefusesPastItsCap(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 1<<14+2; i++ {
		fmt.Fprintf(&b, "%x-%x r--p 00000000 fe:00 42 /usr/bin/gpuwatch\nAnonymous: 0 kB\n", 0x400000+i*0x1000, 0x401000+i*0x1000)
	}
	path := filepath.Join(t.TempDir(), "smaps")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if spans, err := cleanSpans(path, 0x400100); err == nil {
		t.Fatalf("%d spans past the cap, no error", len(spans))
	}
}

package textpages

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
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

// TestReleaseGivesBackTheBinarysPages: in this test's own binary, Release
// drops most of the binary's resident pages, marks its mappings so that a
// fault maps a page and not a folio, and the process runs on, faulting
// back what it uses.
func TestReleaseGivesBackTheBinarysPages(t *testing.T) {
	before := binaryPages(t)
	n, err := Release()
	if err != nil {
		t.Fatal(err)
	}
	if n <= 0 {
		t.Fatalf("released %d bytes", n)
	}
	after := binaryPages(t)
	t.Logf("the binary's resident pages: %d kB before, %d kB after; %d kB of mappings released", before.rssKB, after.rssKB, n>>10)
	if after.rssKB*2 > before.rssKB {
		t.Errorf("resident %d kB after, %d kB before: not given back", after.rssKB, before.rssKB)
	}
	if f := after.codeFlags; !strings.Contains(f, " nh") || !strings.Contains(f, " rr") {
		t.Errorf("the code's mapping's flags %q lack nh (no huge page) or rr (random read)", f)
	}
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

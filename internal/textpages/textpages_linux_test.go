package textpages

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestCleanSpansTakesOnlyTheBinarysCleanReadOnlyPages: of an smaps, the
// mappings of the binary's inode that are not writable and hold no
// anonymous page; not the RELRO page (read-only, but written by the
// dynamic linker: dropping it dropped the relocations, and the next call
// through them jumped to 0), not the data, not another file's.
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
015ec000-015ed000 r--p 011eb000 fe:00 42                           /usr/bin/gpuwatch
Anonymous:             4 kB
015ed000-016d4000 rw-p 011ec000 fe:00 42                           /usr/bin/gpuwatch
Anonymous:           112 kB
7f0000000000-7f0000010000 r-xp 00000000 fe:00 43                           /usr/lib/libc.so.6
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
	got, err := cleanSpans(path, 42)
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]uintptr{{0x400000, 0x411000}, {0x411000, 0xc6c000}, {0xc6c000, 0x15ec000}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("spans %x, want %x", got, want)
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
	for _, f := range after.flags {
		if !strings.Contains(f, " nh") || !strings.Contains(f, " rr") {
			t.Errorf("a read-only mapping's flags %q lack nh (no huge page) or rr (random read)", f)
		}
	}
}

type pages struct {
	rssKB int
	flags []string // VmFlags of each read-only mapping of the binary
}

// binaryPages sums the resident kB of this process's read-only mappings of
// its own binary and gathers their flags.
func binaryPages(t *testing.T) pages {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/exe", &st); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	var p pages
	ours := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if _, _, ok := readOnlyOf(sc.Bytes(), st.Ino); ok {
			ours = true
			continue
		}
		if strings.Contains(line, "-") && strings.Count(line, " ") > 4 && !strings.HasPrefix(line, "VmFlags") {
			ours = false
			continue
		}
		if !ours {
			continue
		}
		if kb, ok := strings.CutPrefix(line, "Rss:"); ok {
			n, _ := strconv.Atoi(strings.Fields(kb)[0])
			p.rssKB += n
		}
		if strings.HasPrefix(line, "VmFlags:") {
			p.flags = append(p.flags, line)
		}
	}
	return p
}

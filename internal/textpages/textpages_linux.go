package textpages

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"reflect"
	"strconv"

	"golang.org/x/sys/unix"
)

// Release unmaps the pages of the executable's code and read-only data
// that the process maps now (docs/architecture.md, §7, "The dashboard's
// memory").
//
// On each clean read-only mapping of the binary it sets MADV_NOHUGEPAGE
// (no 2 MB page-table entry for a 2 MB folio of the file from then on; the
// folios in the page cache stay as they are) and MADV_DONTNEED (the
// mapping's page tables are emptied). What the process runs next is
// mapped back from the page cache by minor faults: each maps the 64 kB
// around its page (fault_around_bytes, the whole system's), and a kernel
// may map the whole large folio that holds it; so a session maps back
// more than the pages it runs, but not the folios it no longer touches. The pages stay page cache: the box's memory in use
// is the same, only this process's RSS is less, and nothing is read from
// the disk unless reclaim takes them first, as it could take them mapped.
// It does nothing while a debugger traces the process (a breakpoint is a
// write that could land between the read of smaps and the advice). It
// returns the bytes of the mappings it unmapped, or why it could not.
func Release() (int64, error) {
	if traced("/proc/self/status") {
		return 0, errors.New("traced: a debugger may be writing breakpoints into the code")
	}
	spans, err := cleanSpans("/proc/self/smaps", reflect.ValueOf(Release).Pointer())
	if err != nil {
		return 0, err
	}
	var given int64
	var errs []error
	for _, s := range spans {
		// A kernel without transparent huge pages refuses NOHUGEPAGE: it
		// has no 2 MB mapping of a folio to prevent.
		if err := madvise(s[0], s[1]-s[0], unix.MADV_NOHUGEPAGE); err != nil && err != unix.EINVAL {
			errs = append(errs, err)
			continue
		}
		// The mapping holds no page of its own (cleanSpans): what it maps
		// is the file's, and a fault maps it back.
		if err := madvise(s[0], s[1]-s[0], unix.MADV_DONTNEED); err != nil {
			errs = append(errs, err)
			continue
		}
		given += int64(s[1] - s[0])
	}
	return given, errors.Join(errs...)
}

// traced says whether a status file (/proc/self/status) names a tracer.
func traced(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return true // unknown: as if traced, nothing given back
	}
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		if v, ok := bytes.CutPrefix(line, []byte("TracerPid:")); ok {
			return string(bytes.TrimSpace(v)) != "0"
		}
	}
	return true
}

// mapping is one mapping's header line of smaps and what Release asks of
// its fields.
type mapping struct {
	lo, hi   uintptr
	writable bool
	dev, ino string
	own      bool // it holds pages of its own: anonymous (written, as RELRO) or swapped
}

// cleanSpans reads an smaps file and gives the mappings of the file that
// holds the address pc (the executable: its device and inode, not its
// path, which a mount namespace may not show) that are not writable and
// hold no page of their own: the code and the read-only data, not the
// page the dynamic linker wrote and then made read-only (RELRO), whose
// private copy MADV_DONTNEED would drop with the relocations in it.
func cleanSpans(path string, pc uintptr) ([][2]uintptr, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var maps []mapping
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<16)
	for sc.Scan() {
		if len(maps) > 1<<14 {
			// Past the cap the last mapping's own pages would go unread:
			// no mapping is given back rather than one that holds a write.
			return nil, errors.New("more than 16384 mappings")
		}
		line := sc.Bytes()
		if name, rest, ok := bytes.Cut(line, []byte{':'}); ok && len(name) > 0 && name[0] >= 'A' && name[0] <= 'Z' {
			if len(maps) > 0 && (string(name) == "Anonymous" || string(name) == "Swap") {
				if kb := bytes.Fields(rest); len(kb) == 0 || string(kb[0]) != "0" {
					maps[len(maps)-1].own = true
				}
			}
			continue
		}
		if m, ok := readMapping(line); ok {
			maps = append(maps, m)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	var exe *mapping
	for i := range maps {
		if maps[i].lo <= pc && pc < maps[i].hi {
			exe = &maps[i]
		}
	}
	if exe == nil || exe.ino == "0" {
		return nil, errors.New("no mapping of a file holds this code")
	}
	var spans [][2]uintptr
	for _, m := range maps {
		if m.dev == exe.dev && m.ino == exe.ino && !m.writable && !m.own {
			spans = append(spans, [2]uintptr{m.lo, m.hi})
		}
	}
	return spans, nil
}

// readMapping reads a mapping's header line of smaps: "lo-hi perms offset
// dev inode path".
func readMapping(line []byte) (mapping, bool) {
	fields := bytes.Fields(line)
	if len(fields) < 5 || len(fields[1]) != 4 {
		return mapping{}, false
	}
	dash := bytes.IndexByte(fields[0], '-')
	if dash < 0 {
		return mapping{}, false
	}
	l, err1 := strconv.ParseUint(string(fields[0][:dash]), 16, 64)
	h, err2 := strconv.ParseUint(string(fields[0][dash+1:]), 16, 64)
	if err1 != nil || err2 != nil || h <= l {
		return mapping{}, false
	}
	return mapping{lo: uintptr(l), hi: uintptr(h), writable: fields[1][1] == 'w', dev: string(fields[3]), ino: string(fields[4])}, true
}

func madvise(addr, n uintptr, advice int) error {
	_, _, e := unix.Syscall(unix.SYS_MADVISE, addr, n, uintptr(advice))
	if e != 0 {
		return e
	}
	return nil
}

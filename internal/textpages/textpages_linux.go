package textpages

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// Release gives back the pages of the executable's code and read-only data
// that are resident now (docs/architecture.md, "The dashboard's memory").
// On each such mapping it sets MADV_NOHUGEPAGE and MADV_RANDOM, so that
// from then on a fault reads and maps the page it needs, not a 2 MB folio
// of the file and the folio whole, then MADV_PAGEOUT: the clean pages are
// unmapped and, where no other process maps them, dropped from the page
// cache. What the process runs next faults back in, a page at a time (a
// dashboard: some 500 major faults, once). It returns the bytes of the
// mappings it advised, or why it could not (a kernel before 5.4 lacks
// MADV_PAGEOUT: nothing is dropped, and a session runs as it would have).
func Release() (int64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/exe", &st); err != nil {
		return 0, err
	}
	spans, err := cleanSpans("/proc/self/smaps", st.Ino)
	if err != nil {
		return 0, err
	}
	var dropped int64
	for _, s := range spans {
		if err := madvise(s[0], s[1]-s[0], unix.MADV_NOHUGEPAGE); err != nil {
			return dropped, err
		}
		if err := madvise(s[0], s[1]-s[0], unix.MADV_RANDOM); err != nil {
			return dropped, err
		}
		if err := madvise(s[0], s[1]-s[0], unix.MADV_PAGEOUT); err != nil {
			return dropped, err
		}
		dropped += int64(s[1] - s[0])
	}
	return dropped, nil
}

// cleanSpans reads an smaps file and gives the mappings of the file with
// inode ino that are not writable and hold no anonymous page: the code and
// the read-only data, not the page the dynamic linker wrote and then made
// read-only (RELRO: dropping it would drop the relocations).
func cleanSpans(path string, ino uint64) ([][2]uintptr, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var spans [][2]uintptr
	var lo, hi uintptr
	var ours bool
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<16)
	for sc.Scan() && len(spans) < 16 {
		line := sc.Bytes()
		if name, rest, ok := bytes.Cut(line, []byte{':'}); ok && len(name) > 0 && name[0] >= 'A' && name[0] <= 'Z' {
			if ours && string(name) == "Anonymous" {
				if kb := bytes.Fields(rest); len(kb) > 0 && string(kb[0]) == "0" {
					spans = append(spans, [2]uintptr{lo, hi})
				}
				ours = false
			}
			continue
		}
		lo, hi, ours = readOnlyOf(line, ino)
	}
	return spans, sc.Err()
}

// readOnlyOf reads a mapping's line of smaps ("lo-hi perms offset dev
// inode path") and says whether it maps the file with inode ino without
// write permission.
func readOnlyOf(line []byte, ino uint64) (lo, hi uintptr, ok bool) {
	fields := bytes.Fields(line)
	if len(fields) < 6 || len(fields[1]) != 4 || fields[1][1] == 'w' {
		return 0, 0, false
	}
	if n, err := strconv.ParseUint(string(fields[4]), 10, 64); err != nil || n != ino {
		return 0, 0, false
	}
	dash := bytes.IndexByte(fields[0], '-')
	if dash < 0 {
		return 0, 0, false
	}
	l, err1 := strconv.ParseUint(string(fields[0][:dash]), 16, 64)
	h, err2 := strconv.ParseUint(string(fields[0][dash+1:]), 16, 64)
	if err1 != nil || err2 != nil || h <= l {
		return 0, 0, false
	}
	return uintptr(l), uintptr(h), true
}

func madvise(addr, n uintptr, advice int) error {
	_, _, e := syscall.Syscall(syscall.SYS_MADVISE, addr, n, uintptr(advice))
	if e != 0 {
		return e
	}
	return nil
}

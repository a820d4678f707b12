package host

import (
	"bufio"
	"bytes"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/probes"

	"github.com/gpuwatch/gpuwatch/sample"
)

// Reading /proc/PID/maps is bounded: a process can map millions of
// regions, and the file is read only to size what a faulting process maps.
const (
	MapsMaxBytes = 4 << 20         // read at most this much of one maps file
	mapsEvery    = 5 * time.Second // per process, at most this often
	// mapsFaultRate is the major faults per second above which a
	// process's mappings are worth reading.
	mapsFaultRate = 10
	mapsPathMax   = 256 // bytes of a mapped file's name kept
)

// mappedFiles is what a process maps of regular files for reading: the
// data a memory-mapped dataset (Arrow, numpy.memmap, torch.from_file)
// lives in, without its program and libraries.
type mappedFiles struct {
	total        uint64
	largest      string
	largestBytes uint64
}

// parseMaps reads /proc/PID/maps lines ("start-end perms offset dev inode
// path"). A file counts once (by device and inode) with the furthest byte
// mapped; a file with any executable mapping is code (the program, a
// library) and is left out, as are files under /dev, /proc, /sys and the
// system's library folders. Lines past mapsMaxBytes are not read.
func parseMaps(r io.Reader) mappedFiles {
	type file struct {
		path   string
		extent uint64
		code   bool
	}
	files := make(map[string]*file)
	sc := bufio.NewScanner(io.LimitReader(r, MapsMaxBytes))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 6 || len(f[1]) < 4 || f[1][0] != 'r' || !bytes.HasPrefix(f[5], []byte("/")) || string(f[4]) == "0" {
			continue
		}
		lo, hi, ok := bytes.Cut(f[0], []byte("-"))
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(string(lo), 16, 64)
		end, err2 := strconv.ParseUint(string(hi), 16, 64)
		off, err3 := strconv.ParseUint(string(f[2]), 16, 64)
		if err1 != nil || err2 != nil || err3 != nil || end <= start || off > 1<<48 || end-start > 1<<48 {
			continue
		}
		key := string(f[3]) + " " + string(f[4])
		e := files[key]
		if e == nil {
			// The path may hold spaces: it is the rest of the line.
			line := sc.Bytes()
			path := string(line[bytes.Index(line, f[5]):])
			e = &file{path: path}
			files[key] = e
		}
		e.extent = max(e.extent, off+(end-start))
		e.code = e.code || f[1][2] == 'x'
	}
	var m mappedFiles
	for _, e := range files {
		if e.code || systemPath(e.path) {
			continue
		}
		m.total = min(m.total+e.extent, 1<<62) // each ≤ 2^49, and ~2^17 lines fit in 4 MiB: no overflow, capped anyway
		if e.extent > m.largestBytes || (e.extent == m.largestBytes && e.path < m.largest) {
			m.largest, m.largestBytes = e.path, e.extent
		}
	}
	m.largest = sample.Printable(truncPath(m.largest))
	return m
}

func systemPath(p string) bool {
	for _, pre := range []string{"/dev/", "/proc/", "/sys/", "/usr/lib/", "/usr/lib64/", "/lib/", "/lib64/", "/usr/share/locale/"} {
		if strings.HasPrefix(p, pre) {
			return true
		}
	}
	return sharedLibrary.MatchString(p)
}

// sharedLibrary is a shared library's name, where it is: libc.so.6,
// libtorch_cpu.so, _C.cpython-311-x86_64-linux-gnu.so — not a dataset
// named train.sorted.bin (the substring ".so" dropped it once).
var sharedLibrary = regexp.MustCompile(`\.so(\.[0-9]+)*$`)

// readMaps sizes what a focused process maps, while it takes major faults
// (a mapped dataset read through the page cache), at most every mapsEvery;
// the last answer is kept in between.
func (p *Proc) readMaps(e *procEntry, sp *sample.Proc, now time.Time) {
	if e.faults.ok && e.faults.majRate >= mapsFaultRate && now.Sub(e.mappedAt) >= mapsEvery {
		e.mappedAt = now
		if f, err := probes.OpenRegular(p.pidPath(e.pid, "", 0, "/maps")); err == nil {
			e.mapped = parseMaps(f)
			f.Close()
		}
	}
	sp.MappedFileBytes, sp.MappedFile = e.mapped.total, e.mapped.largest
}

// Package pprofsum summarises a CPU profile in pprof's format into the
// frame's top functions and the share of time in each category of loader
// work (reading, decoding, collating …), refusing gzip bombs and values
// that overflow. It imports pprof's profile package and sample.
package pprofsum

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/gpuwatch/gpuwatch/sample"
)

// categoryRules sort a CPU sample into what the loader was doing, looking
// at its stack from the innermost frame out: the first frame that matches
// any rule decides, so a read syscall under a decode loop counts as
// reading. The garbage collector's own goroutines are runtime wherever they
// are. Prefixes match the function name as pprof prints it; Python
// functions from the hook read as "module.function (file)".
var categoryRules = []struct {
	category string
	prefixes []string
}{
	{"reading", []string{
		"syscall.read", "syscall.pread", "syscall.Read", "syscall.Pread", "internal/poll.(*FD).Read",
		"internal/poll.(*FD).Pread", "os.(*File).Read", "os.(*File).ReadAt", "net.(*conn).Read",
		"internal/poll.(*FD).ReadFrom", "io.ReadFull", "io.ReadAtLeast", "bufio.(*Reader).Read",
		"read ", "readinto ", "pread ", "recv ", "recv_into ", "_io.", "os.read", "socket.", "ssl.",
		"github.com/gpuwatch/gpuwatch/loader.(*reader).", // the embedded loader's reads (copies included)
	}},
	{"waiting", []string{
		"runtime.chanrecv", "runtime.chansend", "runtime.selectgo", "runtime.gopark", "runtime.semacquire",
		"runtime.notesleep", "runtime.futex", "runtime.usleep", "runtime.netpoll", "runtime.epollwait",
		"sync.(*Mutex).Lock", "sync.(*RWMutex)", "sync.(*WaitGroup).Wait", "sync.(*Cond).Wait", "time.Sleep",
		"runtime.timeSleep", "runtime.mPark", "runtime.stopm", "runtime.findRunnable", "runtime.schedule",
		"threading.", "queue.", "time.sleep", "select.", "selectors.",
	}},
	{"gc", []string{
		"runtime.gcBgMarkWorker", "runtime.gcDrain", "runtime.scanobject", "runtime.markroot", "runtime.mallocgc",
		"runtime.gcAssist", "runtime.bgsweep", "runtime.bgscavenge", "runtime.memclrNoHeapPointers",
		"runtime.(*mheap)", "runtime.sweepone", "runtime.gcStart", "gc.collect",
	}},
	{"decoding", []string{
		"hash/", "compress/", "image/", "encoding/", "crypto/", "math/", "strconv.", "unicode/", "sort.", "slices.",
		"github.com/gpuwatch/gpuwatch/loader.decode", "numpy", "torch", "PIL", "cv2", "json.", "pickle.",
		"zlib.", "gzip.", "lz4", "zstd",
	}},
}

// MaxProfileBytes caps a profile uncompressed (64 MiB): a bigger one is
// skipped.
const MaxProfileBytes = 64 << 20

// SummarizeProfile parses a pprof profile (gzipped or not) and summarizes
// its CPU time: shares per category, and the top functions by flat and
// cumulative share, cum counted once per function per sample as pprof does.
func SummarizeProfile(data []byte, top int) (*sample.Profile, error) {
	if len(data) == 0 {
		return nil, errors.New("empty profile")
	}
	raw, err := inflate(data)
	if err != nil {
		return nil, err
	}
	p, err := profile.ParseData(raw)
	if err != nil {
		return nil, fmt.Errorf("not a pprof profile: %w", err)
	}
	return summarize(p, top)
}

// summarize adds up p's samples by the CPU (or first) value type and
// returns the category shares and the top functions, at most top of them.
func summarize(p *profile.Profile, top int) (*sample.Profile, error) {
	vi := valueIndex(p)
	if vi < 0 {
		return nil, errors.New("profile has no CPU or sample value")
	}
	unit := p.SampleType[vi].Unit
	out := &sample.Profile{DurationSec: float64(p.DurationNanos) / 1e9}
	if p.TimeNanos != 0 {
		out.TakenAt = time.Unix(0, p.TimeNanos)
	}
	tl := newProfileTally(newFuncTable(p))
	ci := countIndex(p)
	for si, s := range p.Sample {
		if vi >= len(s.Value) || s.Value[vi] <= 0 {
			continue
		}
		v := s.Value[vi]
		// How many samples: their count where the profile has one (a row
		// may stand for several), else one a row. Bounded: a count no
		// profile of an hour at 100 Hz reaches is not added up further.
		n := int64(1)
		if ci >= 0 && ci < len(s.Value) && s.Value[ci] > 0 {
			n = min(s.Value[ci], maxSamples)
		}
		out.Samples = min(out.Samples+n, maxSamples)
		if v > math.MaxInt64-tl.total {
			// Every flat, cum and category sum is at most the total: checked
			// here, none of them can wrap to a negative share.
			return nil, errors.New("the profile's sample values add up past 2⁶³: no CPU profile is that long")
		}
		tl.total += v
		tl.add(si, s, v)
	}
	if tl.total == 0 {
		return nil, errors.New("profile has no samples")
	}
	tl.finish(out, unit, top)
	return out, nil
}

// profileTally adds up a profile's sample values per function and per
// category, in the profile's unit. Everything about a function — its
// category, whether it is the GC's worker — is decided once per function,
// not once per frame of every sample: a 5 MB profile has ~100 k samples but
// a few thousand functions. The per-function slices are indexed by the
// funcTable's numbers.
type profileTally struct {
	t        *funcTable
	cat      []int8 // index into sample.ProfileCategories, -1 none
	gcWorker []bool // the GC's background mark worker
	flat     []int64
	cum      []int64
	stamp    []int    // sample number (from 1) that last counted cum
	cats     [5]int64 // by sample.ProfileCategories
	total    int64
}

// newProfileTally classifies t's functions once and starts every sum at 0.
func newProfileTally(t *funcTable) *profileTally {
	n := len(t.names)
	tl := &profileTally{
		t: t, cat: make([]int8, n), gcWorker: make([]bool, n),
		flat: make([]int64, n), cum: make([]int64, n), stamp: make([]int, n),
	}
	for i, name := range t.names {
		tl.cat[i] = ruleCategory(name)
		tl.gcWorker[i] = strings.HasPrefix(name, "runtime.gcBgMarkWorker")
	}
	return tl
}

// grow classifies functions first met in samples (malformed tables) and
// extends the sums to them.
func (tl *profileTally) grow() {
	names := tl.t.names
	for len(tl.cat) < len(names) {
		tl.cat = append(tl.cat, ruleCategory(names[len(tl.cat)]))
		tl.gcWorker = append(tl.gcWorker, strings.HasPrefix(names[len(tl.gcWorker)], "runtime.gcBgMarkWorker"))
	}
	tl.flat = append(tl.flat, make([]int64, len(names)-len(tl.flat))...)
	tl.cum = append(tl.cum, make([]int64, len(names)-len(tl.cum))...)
	tl.stamp = append(tl.stamp, make([]int, len(names)-len(tl.stamp))...)
}

// add counts sample number si's value v: flat to its innermost function,
// cum once to each function on its stack, and the whole to the category of
// the innermost function that has one (the GC's worker anywhere on the
// stack makes it gc; none, other). The caller adds v to total.
func (tl *profileTally) add(si int, s *profile.Sample, v int64) {
	first, c, gc := -1, int8(-1), false
	for _, loc := range s.Location {
		fs := tl.t.funcsOf(loc)
		if len(tl.t.names) > len(tl.cat) {
			tl.grow()
		}
		cat, gcWorker, cum, stamp := tl.cat, tl.gcWorker, tl.cum, tl.stamp
		for _, fi := range fs {
			if first < 0 {
				first = fi
			}
			if stamp[fi] != si+1 { // cum: once per function per sample
				stamp[fi] = si + 1
				cum[fi] += v
			}
			if c < 0 {
				c = cat[fi]
			}
			gc = gc || gcWorker[fi]
		}
	}
	if first >= 0 {
		tl.flat[first] += v
	}
	switch {
	case gc:
		tl.cats[3] += v
	case c >= 0:
		tl.cats[c] += v
	default:
		tl.cats[4] += v
	}
}

// finish fills out's CPU seconds (from the profile's unit), category
// shares and top functions, at most top of them, by flat then cum share.
func (tl *profileTally) finish(out *sample.Profile, unit string, top int) {
	total := tl.total
	switch unit {
	case "nanoseconds":
		out.CPUSec = float64(total) / 1e9
	case "microseconds":
		out.CPUSec = float64(total) / 1e6
	case "milliseconds":
		out.CPUSec = float64(total) / 1e3
	case "seconds":
		out.CPUSec = float64(total)
	}
	for i, c := range sample.ProfileCategories {
		out.Categories = append(out.Categories, sample.ProfileCategory{Name: c, Share: float64(tl.cats[i]) / float64(total)})
	}
	var fns []sample.ProfileFunc
	for i, n := range tl.t.names {
		if i < len(tl.cum) && tl.cum[i] > 0 {
			fns = append(fns, sample.ProfileFunc{Name: n, Flat: float64(tl.flat[i]) / float64(total), Cum: float64(tl.cum[i]) / float64(total)})
		}
	}
	slices.SortFunc(fns, func(a, b sample.ProfileFunc) int {
		if c := cmp.Compare(b.Flat, a.Flat); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Cum, a.Cum); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	out.Top = fns[:min(top, len(fns))]
}

// funcTable numbers a profile's functions, one number per name (a profile
// may list a function twice, under two IDs, and pprof shows it once), and
// caches each location's functions, innermost first.
type funcTable struct {
	names  []string
	index  map[string]int
	byFunc map[*profile.Function]int
	// Locations by ID in a slice when IDs are dense (they are in profiles
	// Go and the pprof encoder write), else a map: a frame costs an index,
	// not a map lookup.
	maxID    uint64
	byID     [][]int
	locFuncs map[*profile.Location][]int
}

func newFuncTable(p *profile.Profile) *funcTable {
	t := &funcTable{
		names:    make([]string, 0, len(p.Function)+1),
		index:    make(map[string]int, len(p.Function)),
		byFunc:   make(map[*profile.Function]int, len(p.Function)),
		locFuncs: make(map[*profile.Location][]int),
	}
	for _, f := range p.Function {
		t.byFunc[f] = t.indexOf(f.Name)
	}
	for _, loc := range p.Location {
		t.maxID = max(t.maxID, loc.ID)
	}
	if t.maxID <= uint64(4*len(p.Location)+16) {
		t.byID = make([][]int, t.maxID+1)
	}
	for _, loc := range p.Location {
		t.funcsOf(loc)
	}
	return t
}

func (t *funcTable) indexOf(name string) int {
	i, ok := t.index[name]
	if !ok {
		i = len(t.names)
		t.index[name] = i
		t.names = append(t.names, name)
	}
	return i
}

// funcsOf is loc's functions, innermost first (inlined calls come first in
// Line); an address stands in for a location without any.
func (t *funcTable) funcsOf(loc *profile.Location) []int {
	dense := t.byID != nil && loc.ID <= t.maxID
	if dense {
		if fs := t.byID[loc.ID]; fs != nil {
			return fs
		}
	} else if fs, ok := t.locFuncs[loc]; ok {
		return fs
	}
	var fs []int
	for _, ln := range loc.Line {
		if ln.Function == nil {
			continue
		}
		i, ok := t.byFunc[ln.Function]
		if !ok { // a function missing from the table: still count it
			i = t.indexOf(ln.Function.Name)
			t.byFunc[ln.Function] = i
		}
		fs = append(fs, i)
	}
	if len(fs) == 0 {
		fs = append(fs, t.indexOf(fmt.Sprintf("0x%x", loc.Address)))
	}
	if dense && loc.ID != 0 {
		t.byID[loc.ID] = fs
	} else {
		t.locFuncs[loc] = fs
	}
	return fs
}

// ruleCategory is the category of the first rule matching a function, as
// an index into sample.ProfileCategories, or -1.
func ruleCategory(fn string) int8 {
	for _, r := range categoryRules {
		for _, p := range r.prefixes {
			if strings.HasPrefix(fn, p) {
				return int8(slices.Index(sample.ProfileCategories, r.category))
			}
		}
	}
	return -1
}

// valueIndex picks the sample value that is CPU time: the "cpu" type of a
// Go profile, else the last one (pprof's default).
// countIndex is the index of the samples' count ("samples"), -1 if none.
func countIndex(p *profile.Profile) int {
	for i, st := range p.SampleType {
		if st.Type == "samples" {
			return i
		}
	}
	return -1
}

// maxSamples bounds a profile's sample count (an hour at 100 Hz is
// 360,000 a core).
const maxSamples = 1 << 40

func valueIndex(p *profile.Profile) int {
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			return i
		}
	}
	return len(p.SampleType) - 1
}

// inflate returns data decompressed when it is gzipped (pprof's format),
// through a limit of MaxProfileBytes: a 100 KB gzip bomb that would
// inflate to gigabytes is refused after 64 MiB, not parsed whole.
func inflate(data []byte) ([]byte, error) {
	if len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
		return data, nil
	}
	// Two passes: count first, holding nothing, so a bomb costs its
	// inflating up to the limit and no memory; then inflate into a buffer
	// of the size counted.
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("not a pprof profile: %w", err)
	}
	n, err := io.Copy(io.Discard, io.LimitReader(gz, MaxProfileBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("not a pprof profile: %w", err)
	case n > MaxProfileBytes:
		return nil, fmt.Errorf("profile uncompressed larger than %d MiB", MaxProfileBytes>>20)
	}
	if err := gz.Reset(bytes.NewReader(data)); err != nil {
		return nil, fmt.Errorf("not a pprof profile: %w", err)
	}
	raw := make([]byte, n)
	if _, err := io.ReadFull(gz, raw); err != nil {
		return nil, fmt.Errorf("not a pprof profile: %w", err)
	}
	if len(raw) >= 2 && raw[0] == 0x1f && raw[1] == 0x8b {
		// pprof's parser would inflate this second layer without a limit.
		return nil, errors.New("not a pprof profile: gzipped twice")
	}
	return raw, nil
}

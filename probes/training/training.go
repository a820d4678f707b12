package training

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/probes/host"
)

// A job nobody instrumented is read from /proc alone (docs/architecture.md,
// "A job nobody instrumented"): which processes train, which are their
// DataLoader workers, which launch them. Nothing here stops or slows a
// process: it reads stat, exe, cmdline and maps, and maps only once per
// process.

// TrainingProcess is a process taken for a training job's: it maps torch
// or CUDA, and is neither a DataLoader worker nor a launcher of ranks.
type TrainingProcess struct {
	PID     int
	Command string // printable, at most 120 bytes
	// Why it was taken: "it maps libtorch", "it maps libcudart".
	Why string
	// Workers are its DataLoader workers: child processes of the same
	// interpreter (forks with its command line, or multiprocessing spawn).
	Workers []int
	// CPUTicks is its tree's CPU so far (itself and its workers), USER_HZ
	// ticks: the busiest is the one to watch.
	CPUTicks uint64
	// Python: its program is CPython (its loop then runs on the main
	// thread, TID = PID).
	Python bool
}

// procInfo is what classification reads of one process.
type procInfo struct {
	pid, ppid int
	start     uint64
	exe       string
	cmdline   string // NULs as spaces, at most cmdlineMax bytes
	maps      string // "libtorch", "libcudart", "libcuda", "/dev/nvidia" or ""
	ticks     uint64
	readAt    time.Time // when exe, cmdline and maps were last read
	readTicks uint64    // its ticks then
	hidden    bool      // another user's: its exe and maps refused (EACCES, EPERM)
	lastTicks uint64    // ticks at the scan before: what it ran since is its recent CPU
}

const cmdlineMax = 4096

// libraries marks a training process by what it maps: torch, the CUDA
// runtime or driver, or a GPU device (CUDA maps /dev/nvidia* regions).
var libraries = []struct{ needle, name string }{
	{"libtorch", "libtorch"}, {"libcudart", "libcudart"}, {"libcuda.so", "libcuda"}, {"/dev/nvidia", "/dev/nvidia"},
}

// mapsMark finds the first library of libraries in a maps file.
func mapsMark(b []byte) string {
	for _, l := range libraries {
		if bytes.Contains(b, []byte(l.needle)) {
			return l.name
		}
	}
	return ""
}

// pythonExe says whether a program is CPython's.
func pythonExe(exe string) bool {
	base := filepath.Base(exe)
	return strings.HasPrefix(base, "python") && !strings.Contains(base, "-config")
}

// helper is a multiprocessing helper process, never a worker or a rank.
func helper(cmdline string) bool {
	return strings.Contains(cmdline, "multiprocessing.resource_tracker") || strings.Contains(cmdline, "multiprocessing.semaphore_tracker")
}

// gpuDaemons are programs that hold the GPU open without training:
// the driver's and DCGM's daemons, the tools, display servers.
var gpuDaemons = []string{"nvidia-persistenced", "nv-hostengine", "nvidia-smi", "dcgm-exporter", "dcgmi", "Xorg", "Xwayland", "gpuwatch"}

// minTrainingTicks is the least CPU (USER_HZ ticks: 0.5 s) a process has
// used to be taken for a training process: importing torch alone takes
// more, and a daemon that holds the GPU open takes less.
const minTrainingTicks = 50

// busySinceTicks is the CPU (in ticks, 0.1 s) a process must have run
// since the scan before (2 s apart) to count as busy now.
const busySinceTicks = 10

// daemon says a process is one of gpuDaemons, or gpuwatch itself.
func daemon(p *procInfo) bool {
	return slices.Contains(gpuDaemons, filepath.Base(p.exe)) || p.pid == os.Getpid()
}

// workerOf says whether c is a DataLoader worker of its parent p: the same
// program, forked (the same command line) or started by multiprocessing's
// spawn or forkserver.
func workerOf(c, p *procInfo) bool {
	if c.exe != p.exe || helper(c.cmdline) {
		return false
	}
	return c.cmdline == p.cmdline || strings.Contains(c.cmdline, "multiprocessing.spawn") || strings.Contains(c.cmdline, "multiprocessing.forkserver")
}

// classifyTraining finds the training processes among procs (by PID):
// those that map torch or CUDA, are no worker of their parent, and launch
// no other such process (torchrun, or a launcher script, is not the
// training process; its ranks are). Each comes with its workers. Sorted by
// CPU, busiest first.
func classifyTraining(procs map[int]*procInfo) []TrainingProcess {
	children := map[int][]*procInfo{}
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p)
	}
	candidate := func(p *procInfo) bool {
		if p.maps == "" || helper(p.cmdline) || daemon(p) || p.ticks < minTrainingTicks {
			return false
		}
		if par := procs[p.ppid]; par != nil && workerOf(p, par) {
			return false
		}
		return true
	}
	var out []TrainingProcess
	for _, p := range procs {
		if !candidate(p) {
			continue
		}
		launcher := false
		var workers []int
		ticks := p.ticks
		for _, c := range children[p.pid] {
			switch {
			case workerOf(c, p):
				workers = append(workers, c.pid)
				ticks += c.ticks
			case candidate(c) || launches(c, children, candidate, 8):
				launcher = true
			}
		}
		if launcher {
			continue
		}
		slices.Sort(workers)
		out = append(out, TrainingProcess{PID: p.pid, Command: shortCommand(p.cmdline), Why: "it maps " + p.maps,
			Workers: workers, CPUTicks: ticks, Python: pythonExe(p.exe)})
	}
	slices.SortFunc(out, func(a, b TrainingProcess) int {
		if a.CPUTicks != b.CPUTicks {
			if a.CPUTicks > b.CPUTicks {
				return -1
			}
			return 1
		}
		return a.PID - b.PID
	})
	return out
}

// launches says whether one of p's descendants (within depth) is a
// training candidate: a shell between torchrun and its ranks still makes
// torchrun a launcher.
func launches(p *procInfo, children map[int][]*procInfo, candidate func(*procInfo) bool, depth int) bool {
	if depth == 0 {
		return false
	}
	for _, c := range children[p.pid] {
		if candidate(c) || launches(c, children, candidate, depth-1) {
			return true
		}
	}
	return false
}

func shortCommand(cmdline string) string {
	s := printableID(cmdline)
	if len(s) > 120 {
		s = s[:117] + "…"
	}
	return s
}

func printableID(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '\uFFFD' {
			return ' '
		}
		return r
	}, s)
}

// TrainingFinder finds training processes on the host, or in one process
// tree, from /proc. Each process's maps are read once (by PID and start
// time), at most 4 MiB of it; a scan reads every process's stat, and exe
// and cmdline of processes it has not seen. It is not safe for concurrent
// use.
type TrainingFinder struct {
	root  string
	table *host.ProcTable // nil, or the Proc probe's reading of the same root
	r     probes.FileReader
	fb    probes.FieldBuf
	known map[int]*procInfo
	rows  []host.ProcRow
	pids  []int
	uid   int
	now   func() time.Time
	// Hidden is how many processes the last Find could not read (another
	// user's, to a finder that is not root) that ran at least as long as a
	// training process must and are busy now (busySinceTicks since the
	// scan before: an old daemon idle now is not counted): a training
	// process may be among them, and the view says so rather than "none
	// found".
	Hidden int
}

// NewTrainingFinder reads procRoot. table, when not nil, is the Proc
// probe's reading of the same procRoot: a scan takes every process's stat
// numbers from it while it is fresh, and reads them itself otherwise.
func NewTrainingFinder(procRoot string, table *host.ProcTable) *TrainingFinder {
	return &TrainingFinder{root: procRoot, table: table, known: map[int]*procInfo{}, uid: os.Geteuid(), now: time.Now}
}

// tableFresh is how old the Proc probe's reading may be for a scan to use
// it: the probe reads every second, so a reading older than this means the
// probe is not running (or a tick is stuck) and the finder reads itself.
const tableFresh = 3 * time.Second

// Find scans /proc and returns the training processes, busiest first:
// within root's tree (root itself included) when root > 0, else among the
// processes this user may read (all of them for root).
func (t *TrainingFinder) Find(root int) []TrainingProcess {
	now := t.now()
	var ok bool
	if t.rows, ok = t.table.AppendSince(t.rows[:0], now.Add(-tableFresh)); !ok {
		if t.rows, ok = t.readStats(t.rows[:0]); !ok {
			return nil
		}
	}
	seen := make(map[int]*procInfo, len(t.rows))
	for _, r := range t.rows {
		p := t.known[r.PID]
		if p == nil || p.start != r.Start {
			p = &procInfo{pid: r.PID, start: r.Start, ticks: r.Ticks}
			t.known[r.PID] = p
		}
		p.lastTicks = p.ticks
		p.ppid, p.ticks = r.PPID, r.Ticks
		seen[r.PID] = p
	}
	for pid := range t.known {
		if seen[pid] == nil {
			delete(t.known, pid)
		}
	}
	procs := seen
	if root > 0 {
		procs = map[int]*procInfo{}
		for pid, p := range seen {
			if inTree(seen, p, root) {
				procs[pid] = p
			}
		}
	}
	t.Hidden = 0
	for _, p := range procs {
		t.describe(p, now)
		if p.hidden && p.ticks >= minTrainingTicks && p.ticks-p.lastTicks >= busySinceTicks {
			t.Hidden++
		}
	}
	return classifyTraining(procs)
}

// readStats appends every process's stat numbers, read from /proc.
func (t *TrainingFinder) readStats(dst []host.ProcRow) ([]host.ProcRow, bool) {
	t.pids = t.pids[:0]
	if err := t.r.ReadDirNames(t.root, func(name []byte) {
		if pid, ok := probes.ParseUint(name); ok {
			t.pids = append(t.pids, int(pid))
		}
	}); err != nil {
		return dst, false
	}
	for _, pid := range t.pids {
		b, err := t.r.Read(t.root + "/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		if row, ok := host.StatRow(pid, b, &t.fb); ok {
			dst = append(dst, row)
		}
	}
	return dst, true
}

// recheck is how often a process that maps neither torch nor CUDA is read
// again: a script imports torch a second or two after it starts (and a
// shell may exec into python), so a first look proves nothing.
const recheck = 5 * time.Second

// describe reads what a process is: its program, command line and whether
// it maps torch or CUDA. Once it does, that is kept; until then it is read
// again every `recheck` while it runs: one that ran no CPU since the last
// look (its ticks unchanged) has imported nothing and exec'd nothing —
// importing torch takes seconds of CPU — so its files are not read again
// (beside 2,000 idle processes the re-reads were nearly half the
// dashboard's CPU, issue 53). Another user's process it may not read
// stays blank (and is never a candidate).
func (t *TrainingFinder) describe(p *procInfo, now time.Time) {
	if p.maps != "" || p.cmdline == "\x00" || now.Sub(p.readAt) < recheck {
		return
	}
	if !p.readAt.IsZero() && p.ticks == p.readTicks {
		return
	}
	p.readAt, p.readTicks = now, p.ticks
	dir := t.root + "/" + strconv.Itoa(p.pid)
	exe, err := os.Readlink(dir + "/exe")
	if err != nil {
		p.cmdline = "\x00" // not ours to read, or a kernel thread: tried
		p.hidden = errors.Is(err, fs.ErrPermission)
		return
	}
	p.exe = exe
	if b, err := t.r.Read(dir + "/cmdline"); err == nil {
		b = bytes.TrimRight(b[:min(len(b), cmdlineMax)], "\x00")
		p.cmdline = string(bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
	}
	if f, err := probes.OpenRegular(dir + "/maps"); err == nil {
		p.maps = scanMaps(f)
		f.Close()
	}
}

// scanMaps reads a maps file in pieces until it finds a library of
// libraries, or mapsMaxBytes were read.
func scanMaps(f *os.File) string {
	buf := make([]byte, 64<<10)
	carry := 0
	read := 0
	for read < host.MapsMaxBytes {
		n, err := f.Read(buf[carry:])
		if n > 0 {
			read += n
			if m := mapsMark(buf[:carry+n]); m != "" {
				return m
			}
			// Keep the tail: a needle may straddle two reads.
			keep := min(carry+n, 64)
			copy(buf, buf[carry+n-keep:carry+n])
			carry = keep
		}
		if err != nil {
			return ""
		}
	}
	return ""
}

// inTree says whether p is root or one of its descendants, by the parent
// links of one scan.
func inTree(procs map[int]*procInfo, p *procInfo, root int) bool {
	for i := 0; p != nil && i < 64; i++ {
		if p.pid == root {
			return true
		}
		if p.ppid == 0 || p.ppid == p.pid {
			return false
		}
		p = procs[p.ppid]
	}
	return false
}

// TreeRoot is the process among pids that is an ancestor of the others (or
// the first one when none is): of `pgrep -f train.py`'s matches — the
// training process and its DataLoader workers — the training process.
func TreeRoot(procRoot string, pids []int) int {
	if len(pids) == 0 {
		return 0
	}
	var r probes.FileReader
	best := pids[0]
	for _, p := range pids {
		covers := 0
		for _, q := range pids {
			if host.DescendsFrom(&r, procRoot, q, p) {
				covers++
			}
		}
		if bc := countUnder(&r, procRoot, pids, best); covers > bc {
			best = p
		}
	}
	return best
}

func countUnder(r *probes.FileReader, procRoot string, pids []int, root int) int {
	n := 0
	for _, q := range pids {
		if host.DescendsFrom(r, procRoot, q, root) {
			n++
		}
	}
	return n
}

// Descends says whether pid is root or one of its descendants, by the
// parent links in procRoot.
func Descends(procRoot string, pid, root int) bool {
	var r probes.FileReader
	return host.DescendsFrom(&r, procRoot, pid, root)
}

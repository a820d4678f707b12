package host

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/gpuwatch/gpuwatch/probes"

	"github.com/gpuwatch/gpuwatch/sample"
)

// userHZ is the unit of the utime/stime columns of /proc/PID/stat: 1/100 s
// on every Linux architecture (proc(5); the procfs Go library hard-codes it
// too).
const userHZ = 100

// pidStat is what the process probe takes from /proc/PID/stat (or
// /proc/PID/task/TID/stat); proc(5) numbers the columns from 1.
type pidStat struct {
	comm      []byte
	state     byte
	ppid      int
	ticks     uint64 // utime + stime (columns 14, 15), USER_HZ ticks
	sticks    uint64 // stime alone (column 15): time in the kernel
	threads   int    // column 20
	starttime uint64 // column 22: tells a reused PID from the old process
	rssPages  uint64 // column 24
	minflt    uint64 // column 10: faults served from memory
	majflt    uint64 // column 12: faults that read the disk
}

// parsePidStat parses a /proc/PID/stat line. The command name is between the
// first '(' and the last ')', and may itself hold spaces and parentheses.
func parsePidStat(b []byte, scratch *probes.FieldBuf) (pidStat, error) {
	var s pidStat
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return s, fmt.Errorf("no command name in stat %q", b)
	}
	s.comm = b[open+1 : end]
	f := scratch.Split(bytes.TrimSpace(b[end+1:]))
	if len(f) < 22 || len(f[0]) != 1 {
		return s, fmt.Errorf("short stat %q", b)
	}
	s.state = f[0][0]
	nums := [...]struct {
		col int
		dst *uint64
	}{{14, nil}, {15, nil}, {22, &s.starttime}, {24, &s.rssPages}, {10, &s.minflt}, {12, &s.majflt}}
	var utime, stime uint64
	nums[0].dst, nums[1].dst = &utime, &stime
	for _, n := range nums {
		v, ok := probes.ParseUint(f[n.col-3])
		if !ok {
			return s, fmt.Errorf("bad column %d in stat %q", n.col, b)
		}
		*n.dst = v
	}
	ppid, ok1 := probes.ParseUint(f[4-3])
	threads, ok2 := probes.ParseUint(f[20-3])
	if !ok1 || !ok2 {
		return s, fmt.Errorf("bad ppid or threads in stat %q", b)
	}
	s.ppid, s.threads, s.ticks, s.sticks = int(ppid), int(threads), utime+stime, stime
	return s, nil
}

// pidIO is what the process probe takes from /proc/PID/io, in bytes.
type pidIO struct{ rchar, wchar, readBytes uint64 }

func parsePidIO(b []byte, scratch *probes.FieldBuf) (pidIO, error) {
	var io pidIO
	n := 0
	for len(b) > 0 {
		var line []byte
		line, b = probes.NextLine(b)
		f := scratch.Split(line)
		if len(f) != 2 {
			continue
		}
		var dst *uint64
		switch string(f[0]) {
		case "rchar:":
			dst = &io.rchar
		case "wchar:":
			dst = &io.wchar
		case "read_bytes:":
			dst = &io.readBytes
		default:
			continue
		}
		v, ok := probes.ParseUint(f[1])
		if !ok {
			return io, fmt.Errorf("bad number in io line %q", line)
		}
		*dst = v
		n++
	}
	if n < 3 {
		return io, errors.New("incomplete io file")
	}
	return io, nil
}

// ProcOptions choose which processes the process probe reports.
type ProcOptions struct {
	// PID focuses on one process and its descendants (DataLoader workers
	// are child processes). 0 reports the busiest processes instead.
	PID int
	// Top is how many processes to report without a focus (default 8).
	Top int
	// Threads is how many of the busiest threads to report (default 16:
	// enough to fill a tall processes panel).
	Threads int
	// FocusOf, when set, names the focus anew each tick (0: keep PID): of
	// several ranks, the one that paces the job.
	FocusOf func() int
	// Table, when set, gets every process's stat numbers after each tick,
	// for a TrainingFinder on the same /proc to read.
	Table *ProcTable
}

type procEntry struct {
	pid, ppid int
	name      string // interned; re-made only when the command changes
	state     byte
	ticks     uint64
	start     uint64
	threads   int
	rssPages  uint64
	at        time.Time // when ticks was read
	cpuPct    float64
	haveCPU   bool
	seen      uint64
	io        pidIO
	ioAt      time.Time
	haveIO    bool
	faults    faultRates
	mapped    mappedFiles
	mappedAt  time.Time
	files     *fileLook // the data files it opened (files.go), once it has read
	cursor    int       // where the next tick's rotation through its threads starts
	// statFD is its /proc/PID/stat held open and read again each tick
	// (probes.FileReader.OpenFD); 0 when none is (fd+1, so that a new
	// entry holds none). ioFD is its /proc/PID/io, held the same way while
	// it is read each tick (a selected process's; ioRound the tick it was
	// last read): a process that leaves the list lets it go.
	statFD, ioFD int
	ioRound      uint64
}

// faultRates turns a process's or thread's cumulative fault counts into
// rates between two readings.
type faultRates struct {
	minflt, majflt uint64
	at             time.Time
	read           bool // minflt and majflt hold a reading
	minRate        float64
	majRate        float64
	ok             bool // the rates are set
}

func (r *faultRates) update(minflt, majflt uint64, now time.Time) {
	r.ok = false
	if sec := now.Sub(r.at).Seconds(); r.read && sec > 0 && minflt >= r.minflt && majflt >= r.majflt {
		r.minRate, r.majRate = float64(minflt-r.minflt)/sec, float64(majflt-r.majflt)/sec
		r.ok = true
	}
	r.minflt, r.majflt, r.at, r.read = minflt, majflt, now, true
}

// get returns the rates as the frame holds them, stored in slab (one
// allocation a tick for every process and thread, not two each): nil
// before two readings.
func (r *faultRates) get(slab *[]float64) (maj, min *float64) {
	if !r.ok || len(*slab)+2 > cap(*slab) {
		return nil, nil
	}
	i := len(*slab)
	*slab = append(*slab, r.majRate, r.minRate)
	return &(*slab)[i], &(*slab)[i+1]
}

type threadEntry struct {
	tid, pid int
	name     string
	ticks    uint64
	sticks   uint64
	start    uint64
	at       time.Time
	cpuPct   float64
	sysPct   float64
	haveCPU  bool
	seen     uint64
	// Run-queue delay (schedstat's second field, ns), for focused trees.
	waitNs   uint64
	waitRate float64 // ms waited for a CPU per second
	haveWait bool
	readWait bool // waitNs holds a reading
	faults   faultRates
	hot      bool   // busy at its last reading: read every tick, ahead of the rotation
	statFD   int    // its /proc/PID/task/TID/stat held open, as procEntry.statFD, while it is read each tick
	readAt   uint64 // the tick it was last read (a many-threaded process's rotation skips some)
}

// Proc is the probe for processes and their busiest threads.
type Proc struct {
	root     string
	opt      ProcOptions
	r        probes.FileReader
	scratch  *probes.FieldBuf
	path     []byte
	procs    map[int]*procEntry
	threads  map[int]*threadEntry
	round    uint64
	pids     []int
	selected []*procEntry
	// The looks at reading processes' descriptors (files.go): scratch,
	// and the mount tables by namespace.
	fds      []int
	fdsNow   map[int]uint64
	mountNS  map[string]*nsMounts
	tsel     []*threadEntry
	pageSize uint64
	focus    int // this tick's focused process (0: the busiest on the host)
	euid     int // gpuwatch's user: whose threads are read without a focus
	moved    int // where FocusOf last moved the focus (0: nowhere)
	// statFDs is how many stat files (/proc/PID/stat of processes,
	// /proc/PID/task/TID/stat of threads) entries hold open, at most
	// maxStatFDs.
	statFDs, maxStatFDs int
}

// NewProc returns the process probe reading procRoot.
func NewProc(procRoot string, opt ProcOptions) *Proc {
	if opt.Top <= 0 {
		opt.Top = 8
	}
	if opt.Threads <= 0 {
		opt.Threads = 16
	}
	return &Proc{
		root: procRoot, opt: opt,
		scratch:    new(probes.FieldBuf),
		procs:      make(map[int]*procEntry),
		threads:    make(map[int]*threadEntry),
		pageSize:   uint64(os.Getpagesize()),
		euid:       os.Geteuid(),
		maxStatFDs: statFDBudget(procRoot),
	}
}

// statFDBudget is how many /proc/PID/stat files the probe may hold open
// under root: a quarter of the open-file limit (Go raises the soft limit
// to the hard one at start), at most 4,096; the processes beyond it are
// read by path. None where root is not a procfs (a folder of snapshots,
// as the tests use): only procfs's files say each read what the process
// is now.
func statFDBudget(root string) int {
	const procSuperMagic = 0x9fa0
	var fs syscall.Statfs_t
	if err := syscall.Statfs(root, &fs); err != nil || fs.Type != procSuperMagic {
		return 0
	}
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0
	}
	return int(min(4096, l.Cur/4))
}

// Close closes the stat files held open.
func (p *Proc) Close() error {
	for _, e := range p.procs {
		p.dropStat(e)
	}
	for _, t := range p.threads {
		p.release(&t.statFD)
	}
	return nil
}

// dropStat closes the files e holds open: its stat and io.
func (p *Proc) dropStat(e *procEntry) {
	p.release(&e.statFD)
	p.release(&e.ioFD)
}

// readHeld reads the /proc file at path through the descriptor *held
// keeps open (fd+1; 0: none), else by opening it, kept open for the next
// tick where the budget allows. A held file of a task that has exited
// fails, and the path is opened afresh.
func (p *Proc) readHeld(held *int, path string) ([]byte, error) {
	if *held > 0 {
		if b, err := p.r.ReadStatFD(*held - 1); err == nil {
			return b, nil
		}
		p.release(held)
	}
	b, keep, err := p.openHeld(path)
	*held = keep
	return b, err
}

// release closes the stat file *held keeps open (fd+1), if any.
func (p *Proc) release(held *int) {
	if *held > 0 {
		probes.CloseFD(*held - 1)
		*held = 0
		p.statFDs--
	}
}

// readStat reads pid's /proc/PID/stat: through the file e (its entry from
// the last tick, or nil) holds open, else by opening it, kept open for the
// next tick where the budget allows (keep is its fd+1, 0 when closed). A
// held file of a process that has exited fails, and the path is opened
// afresh: it is then another process's, or none.
func (p *Proc) readStat(pid int, e *procEntry) (b []byte, keep int, err error) {
	if e != nil && e.statFD > 0 {
		if b, err := p.r.ReadStatFD(e.statFD - 1); err == nil {
			return b, e.statFD, nil
		}
		p.dropStat(e)
	}
	return p.openHeld(p.pidPath(pid, "", 0, "/stat"))
}

// openHeld reads the stat file at path and keeps it open for the next
// tick where the budget allows (keep is its fd+1, 0 when closed).
func (p *Proc) openHeld(path string) (b []byte, keep int, err error) {
	fd, err := p.r.OpenFD(path)
	if err != nil {
		if errors.Is(err, errors.ErrUnsupported) {
			b, err = p.r.Read(path)
		}
		return b, 0, err
	}
	if b, err = p.r.ReadStatFD(fd); err != nil || p.statFDs >= p.maxStatFDs {
		probes.CloseFD(fd)
		return b, 0, err
	}
	p.statFDs++
	return b, fd + 1, nil
}

// readThreadStat reads a thread's stat as readStat does a process's:
// through the file t (its entry, or nil) holds open, else by path.
func (p *Proc) readThreadStat(pid, tid int, t *threadEntry) (b []byte, keep int, err error) {
	if t != nil && t.statFD > 0 {
		if b, err := p.r.ReadStatFD(t.statFD - 1); err == nil {
			return b, t.statFD, nil
		}
		p.release(&t.statFD)
	}
	return p.openHeld(p.pidPath(pid, "/task/", tid, "/stat"))
}

// Name implements Probe.
func (p *Proc) Name() string { return "proc" }

// pidPath builds root/pid/suffix into a reused buffer. The string it returns
// aliases that buffer and is valid until the next call.
func (p *Proc) pidPath(pid int, mid string, tid int, suffix string) string {
	b := append(p.path[:0], p.root...)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(pid), 10)
	if mid != "" {
		b = append(b, mid...)
		b = strconv.AppendInt(b, int64(tid), 10)
	}
	b = append(b, suffix...)
	p.path = b
	return probes.UnsafeString(b)
}

// Collect implements Probe.
func (p *Proc) Collect(_ context.Context, f *sample.Frame) error {
	focus := p.focusNow()
	p.round++
	p.pids = p.pids[:0]
	err := p.r.ReadDirNames(p.root, func(name []byte) {
		if pid, ok := probes.ParseUint(name); ok {
			p.pids = append(p.pids, int(pid))
		}
	})
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return probes.Unavailable("no %s: is procfs mounted?", p.root)
		}
		return err
	}
	p.scan(f.Time)
	if _, ok := p.procs[p.moved]; p.moved != 0 && !ok {
		p.moved, focus = 0, p.opt.PID // the process it moved to is gone
	}
	p.focus = focus
	if err := p.selectProcs(focus); err != nil {
		return err
	}
	out := &sample.Procs{FocusPID: focus, List: p.procList(focus, f.Time)}
	p.selectThreads(focus, f.Time)
	out.Threads = p.threadList()
	f.Procs = out
	return nil
}

// focusNow is the process to focus on: the one FocusOf names (kept while
// it names none: a rank reconnecting), else --pid's.
func (p *Proc) focusNow() int {
	if p.opt.FocusOf != nil {
		if pid := p.opt.FocusOf(); pid != 0 {
			p.moved = pid
		}
	}
	if p.moved != 0 {
		return p.moved
	}
	return p.opt.PID
}

// selectProcs picks the processes listed: the focused tree, else the Top
// busiest; busiest first.
func (p *Proc) selectProcs(focus int) error {
	p.selected = p.selected[:0]
	if focus != 0 {
		if _, ok := p.procs[focus]; !ok {
			return fmt.Errorf("process %d has exited", focus)
		}
	}
	for _, e := range p.procs {
		if focus != 0 && p.descends(e) || focus == 0 && e.haveCPU {
			p.selected = append(p.selected, e)
		}
	}
	busiestFirst(p.selected, func(e *procEntry) (float64, int) { return e.cpuPct, e.pid })
	if focus == 0 && len(p.selected) > p.opt.Top {
		p.selected = p.selected[:p.opt.Top]
	}
	return nil
}

// procList is the selected processes as the frame has them.
func (p *Proc) procList(focus int, now time.Time) []sample.Proc {
	list := make([]sample.Proc, 0, len(p.selected))
	slab := make([]float64, 0, 2*len(p.selected))
	for _, e := range p.selected {
		sp := sample.Proc{
			PID: e.pid, PPID: e.ppid, Name: e.name, State: stateString(e.state),
			Threads: e.threads, RSSBytes: e.rssPages * p.pageSize,
		}
		if e.haveCPU {
			sp.CPUPct = e.cpuPct
		}
		sp.MajorFaultsPerSec, sp.MinorFaultsPerSec = e.faults.get(&slab)
		p.readIO(e, &sp, now)
		e.ioRound = p.round
		if focus != 0 {
			p.readMaps(e, &sp, now)
		}
		list = append(list, sp)
	}
	for _, e := range p.procs {
		if e.ioFD > 0 && e.ioRound != p.round {
			p.release(&e.ioFD) // not listed now: its io is not read
		}
	}
	if focus != 0 {
		p.readOpenFiles(list, now)
	}
	return list
}

// maxThreadReads bounds the thread stat files read in one tick, over all
// processes (issue 41, item 13): another user's 8,000-thread process cost
// 12.7 % of a core when every thread was read every tick. A process with
// more threads than its share has its busy threads read every tick and
// the rest in turn (rotation), keeping each unread thread's last figures.
const maxThreadReads = 512

// minThreadShare is the least share of maxThreadReads a process gets.
const minThreadShare = 32

// selectThreads reads the threads of the whole focused tree (the watched
// job, whoever owns it), or of the three busiest processes that are this
// user's, and keeps the Threads busiest. Another user's threads are read
// only when that process is the watched job.
func (p *Proc) selectThreads(focus int, now time.Time) {
	p.tsel = p.tsel[:0]
	var readers []*procEntry
	for _, e := range p.selected {
		if focus == 0 && len(readers) == 3 {
			break
		}
		if focus == 0 && !p.ours(e) {
			continue
		}
		readers = append(readers, e)
	}
	budget := maxThreadReads
	for i, e := range readers {
		share := max(minThreadShare, budget/(len(readers)-i))
		budget -= p.readThreads(e, now, share)
		budget = max(budget, 0)
	}
	for tid, t := range p.threads {
		if t.readAt != p.round {
			p.release(&t.statFD) // not read this tick: its file goes back to the budget
		}
		if t.seen != p.round {
			delete(p.threads, tid)
		} else if t.haveCPU {
			p.tsel = append(p.tsel, t)
		}
	}
	busiestFirst(p.tsel, func(t *threadEntry) (float64, int) { return t.cpuPct, t.tid })
	if len(p.tsel) > p.opt.Threads {
		p.tsel = p.tsel[:p.opt.Threads]
	}
}

// threadList is the selected threads as the frame has them.
func (p *Proc) threadList() []sample.Thread {
	list := make([]sample.Thread, 0, len(p.tsel))
	slab := make([]float64, 0, 2*len(p.tsel))
	for _, t := range p.tsel {
		th := sample.Thread{TID: t.tid, PID: t.pid, Name: t.name, CPUPct: t.cpuPct, SystemPct: t.sysPct}
		if t.haveWait {
			th.RunDelayMsPerSec = probes.Ptr(t.waitRate)
		}
		th.MajorFaultsPerSec, th.MinorFaultsPerSec = t.faults.get(&slab)
		list = append(list, th)
	}
	return list
}

// busiestFirst sorts by CPU, busiest first, then by ID (stable across
// frames for equals).
func busiestFirst[T any](s []T, key func(T) (cpu float64, id int)) {
	slices.SortFunc(s, func(a, b T) int {
		ca, ia := key(a)
		cb, ib := key(b)
		if c := cmp.Compare(cb, ca); c != 0 {
			return c
		}
		return cmp.Compare(ia, ib)
	})
}

// scan reads every listed process's stat, computing CPU % against the
// previous reading, and forgets processes that are gone.
func (p *Proc) scan(now time.Time) {
	for _, pid := range p.pids {
		e := p.procs[pid]
		b, fd, err := p.readStat(pid, e)
		if err != nil {
			continue // exited between listing and reading
		}
		st, err := parsePidStat(b, p.scratch)
		if err != nil {
			if fd > 0 && (e == nil || e.statFD != fd) {
				probes.CloseFD(fd - 1)
				p.statFDs--
			}
			continue
		}
		if e == nil || e.start != st.starttime {
			if e != nil {
				if e.statFD != fd {
					p.release(&e.statFD)
				}
				p.release(&e.ioFD) // the process before it with the same PID
			}
			e = &procEntry{pid: pid, start: st.starttime}
			p.procs[pid] = e
		} else {
			e.haveCPU = false
			if sec := now.Sub(e.at).Seconds(); sec > 0 && st.ticks >= e.ticks {
				e.cpuPct = 100 * float64(st.ticks-e.ticks) / userHZ / sec
				e.haveCPU = true
			}
		}
		if e.name != string(st.comm) {
			e.name = string(st.comm)
		}
		e.ppid, e.state, e.ticks, e.threads, e.rssPages = st.ppid, st.state, st.ticks, st.threads, st.rssPages
		e.faults.update(st.minflt, st.majflt, now)
		e.at, e.seen = now, p.round
		e.statFD = fd
	}
	for pid, e := range p.procs {
		if e.seen != p.round {
			p.dropStat(e)
			delete(p.procs, pid)
		}
	}
	if p.opt.Table != nil {
		p.opt.Table.put(now, p.procs)
	}
}

// descends reports whether e is the focused process or one of its
// descendants, walking the parent chain (bounded against cycles from PID
// reuse).
func (p *Proc) descends(e *procEntry) bool {
	for i := 0; e != nil && i < 64; i++ {
		if e.pid == p.focus {
			return true
		}
		if e.ppid == 0 || e.ppid == e.pid {
			return false
		}
		e = p.procs[e.ppid]
	}
	return false
}

func (p *Proc) readIO(e *procEntry, sp *sample.Proc, now time.Time) {
	b, err := p.readHeld(&e.ioFD, p.pidPath(e.pid, "", 0, "/io"))
	if err != nil {
		e.haveIO = false // not ours to read, or gone
		return
	}
	io, err := parsePidIO(b, p.scratch)
	if err != nil {
		e.haveIO = false
		return
	}
	if e.haveIO {
		sec := now.Sub(e.ioAt).Seconds()
		if r, ok := probes.Rate(e.io.rchar, io.rchar, sec); ok {
			sp.ReadBytesPerSec = probes.Ptr(r)
		}
		if r, ok := probes.Rate(e.io.wchar, io.wchar, sec); ok {
			sp.WriteBytesPerSec = probes.Ptr(r)
		}
		if r, ok := probes.Rate(e.io.readBytes, io.readBytes, sec); ok {
			sp.DiskReadBytesPerSec = probes.Ptr(r)
		}
	}
	e.io, e.ioAt, e.haveIO = io, now, true
}

// ours says whether this user owns process e (the owner of /proc/PID is
// the process's effective user; proc(5)).
func (p *Proc) ours(e *procEntry) bool {
	var st syscall.Stat_t
	if err := syscall.Stat(p.pidPath(e.pid, "", 0, ""), &st); err != nil {
		return false
	}
	return int(st.Uid) == p.euid
}

// readThreads reads up to limit of e's threads and returns how many it
// read: all of them when they fit; else the busy ones first (at most
// half the limit) and then the others from where the last tick stopped.
// A listed thread not read this tick keeps its last figures.
func (p *Proc) readThreads(e *procEntry, now time.Time, limit int) int {
	dir := p.pidPath(e.pid, "", 0, "/task")
	// readDirNames reuses p.r's buffer, so collect TIDs first.
	start := len(p.pids)
	_ = p.r.ReadDirNames(dir, func(name []byte) {
		if tid, ok := probes.ParseUint(name); ok {
			p.pids = append(p.pids, int(tid))
		}
	})
	defer func() { p.pids = p.pids[:start] }()
	tids := p.pids[start:]
	if len(tids) <= limit {
		for _, tid := range tids {
			p.readThread(e, tid, now)
		}
		return len(tids)
	}
	read := 0
	for _, tid := range tids {
		if t := p.threads[tid]; t != nil && t.hot && t.pid == e.pid && read < limit/2 {
			p.readThread(e, tid, now)
			read++
		}
	}
	k := 0
	for ; k < len(tids) && read < limit; k++ {
		tid := tids[(e.cursor+k)%len(tids)]
		if t := p.threads[tid]; t != nil && t.seen == p.round {
			continue // read above, as a busy one
		}
		p.readThread(e, tid, now)
		read++
	}
	e.cursor = (e.cursor + k) % len(tids)
	for _, tid := range tids {
		if t := p.threads[tid]; t != nil && t.pid == e.pid {
			t.seen = p.round // still there: its last figures stand
		}
	}
	return read
}

// readThread reads one thread's stat (and, in a focused tree, its run
// delay).
func (p *Proc) readThread(e *procEntry, tid int, now time.Time) {
	t := p.threads[tid]
	b, fd, err := p.readThreadStat(e.pid, tid, t)
	if err != nil {
		return
	}
	st, err := parsePidStat(b, p.scratch)
	if err != nil {
		if fd > 0 && (t == nil || t.statFD != fd) {
			p.release(&fd)
		}
		return
	}
	if t == nil || t.start != st.starttime {
		if t != nil && t.statFD != fd {
			p.release(&t.statFD) // a thread before it with the same TID
		}
		t = &threadEntry{tid: tid, pid: e.pid, start: st.starttime}
		p.threads[tid] = t
	} else {
		t.haveCPU = false
		if sec := now.Sub(t.at).Seconds(); sec > 0 && st.ticks >= t.ticks && st.sticks >= t.sticks {
			t.cpuPct = 100 * float64(st.ticks-t.ticks) / userHZ / sec
			t.sysPct = 100 * float64(st.sticks-t.sticks) / userHZ / sec
			t.haveCPU = true
		}
	}
	if t.name != string(st.comm) {
		t.name = string(st.comm)
	}
	if p.focus != 0 {
		p.readRunDelay(e.pid, tid, t, now)
	}
	t.faults.update(st.minflt, st.majflt, now)
	t.ticks, t.sticks, t.at, t.seen = st.ticks, st.sticks, now, p.round
	t.hot = t.haveCPU && t.cpuPct >= hotThreadPct
	t.statFD, t.readAt = fd, p.round
}

// hotThreadPct is the CPU % from which a thread counts as busy, and is
// read every tick when its process has more threads than its share.
const hotThreadPct = 1.0

// readRunDelay reads a focused thread's time spent runnable but waiting
// for a CPU (/proc/PID/task/TID/schedstat's second field, ns;
// Documentation/scheduler/sched-stats.rst): a thread that waits while
// others run is losing its CPU to them.
func (p *Proc) readRunDelay(pid, tid int, t *threadEntry, now time.Time) {
	b, err := p.r.Read(p.pidPath(pid, "/task/", tid, "/schedstat"))
	if err != nil {
		t.haveWait, t.readWait = false, false
		return
	}
	f := p.scratch.Split(b)
	if len(f) < 2 {
		return
	}
	w, ok := probes.ParseUint(f[1])
	if !ok {
		return
	}
	t.haveWait = false
	if t.readWait && w >= t.waitNs {
		if sec := now.Sub(t.at).Seconds(); sec > 0 {
			t.waitRate, t.haveWait = float64(w-t.waitNs)/1e6/sec, true
		}
	}
	t.waitNs, t.readWait = w, true
}

// stateString returns the one-letter process state (R, S, D, Z …) without
// allocating: one-byte strings come from a static table.
func stateString(c byte) string { return string([]byte{c}) }

// ProcessExists reports whether pid is a live process under procRoot.
func ProcessExists(procRoot string, pid int) bool {
	if pid <= 0 {
		return false
	}
	_, err := os.Stat(filepath.Join(procRoot, strconv.Itoa(pid)))
	return err == nil
}

// Lane implements Laned: a /proc reader, it shares the procfs worker.
func (p *Proc) Lane() string { return "procfs" }

// DescendsFrom says whether pid is root or one of its descendants,
// walking /proc/PID/stat's parent links (at most 64).
func DescendsFrom(r *probes.FileReader, proc string, pid, root int) bool {
	for i := 0; i < 64 && pid > 1; i++ {
		if pid == root {
			return true
		}
		b, err := r.Read(filepath.Join(proc, strconv.Itoa(pid), "stat"))
		if err != nil {
			return false
		}
		st, err := parsePidStat(b, nil)
		if err != nil || st.ppid == pid {
			return false
		}
		pid = st.ppid
	}
	return pid == root
}

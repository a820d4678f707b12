package host

import (
	"syscall"
	"unicode/utf8"

	"github.com/gpuwatch/gpuwatch/probes"

	"github.com/gpuwatch/gpuwatch/probes/internal/probetest"
	"github.com/gpuwatch/gpuwatch/sample"

	"bufio"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestProcFocusTreeAndBusiestThreads(t *testing.T) {
	s := probetest.NewSnapshots(t, "normal")
	p := NewProc(s.Roots().Proc, ProcOptions{PID: 100})
	s.MustCollect(p, "t0")
	ps := s.MustCollect(p, "t1").Procs
	if ps.FocusPID != 100 || len(ps.List) != 2 {
		t.Fatalf("procs = %+v, want pid 100 and its worker 200", ps)
	}
	main, worker := ps.List[0], ps.List[1]
	if main.PID != 100 || main.Name != "python (main)" || main.State != "R" || main.Threads != 3 {
		t.Errorf("main = %+v", main)
	}
	probetest.Near(t, "main cpu", main.CPUPct, 95)
	probetest.Near(t, "worker cpu", worker.CPUPct, 30)
	if worker.PID != 200 || worker.PPID != 100 {
		t.Errorf("worker = %+v", worker)
	}
	probetest.NearPtr(t, "main read bytes/s", main.ReadBytesPerSec, 10485760)
	probetest.NearPtr(t, "main write bytes/s", main.WriteBytesPerSec, 1048576)
	probetest.NearPtr(t, "main disk read bytes/s", main.DiskReadBytesPerSec, 2097152)
	if len(ps.Threads) < 3 {
		t.Fatalf("threads = %+v", ps.Threads)
	}
	top := ps.Threads[0]
	if top.TID != 100 || top.PID != 100 {
		t.Errorf("busiest thread = %+v, want tid 100", top)
	}
	probetest.Near(t, "busiest thread cpu", top.CPUPct, 90)
	probetest.Near(t, "second thread (the worker) cpu", ps.Threads[1].CPUPct, 30)
	if ps.Threads[2].Name != "worker-101" {
		t.Errorf("third thread = %+v", ps.Threads[2])
	}
}

func TestProcTopWithoutFocus(t *testing.T) {
	s := probetest.NewSnapshots(t, "normal")
	p := NewProc(s.Roots().Proc, ProcOptions{Top: 3})
	s.MustCollect(p, "t0")
	ps := s.MustCollect(p, "t1").Procs
	if len(ps.List) != 3 {
		t.Fatalf("list = %+v, want the top 3", ps.List)
	}
	for i, want := range []int{100, 200, 300} {
		if ps.List[i].PID != want {
			t.Errorf("rank %d = pid %d, want %d", i, ps.List[i].PID, want)
		}
	}
	if ps.List[2].ReadBytesPerSec != nil {
		t.Errorf("pid 300 has no readable io file, yet rate = %v", *ps.List[2].ReadBytesPerSec)
	}
}

func TestProcFocusExitedIsAnError(t *testing.T) {
	s := probetest.NewSnapshots(t, "normal")
	p := NewProc(s.Roots().Proc, ProcOptions{PID: 4242})
	if _, err := s.Collect(p, "t0"); err == nil {
		t.Fatal("a focus PID that is not there gave no error")
	}
}

func TestParsePidStat(t *testing.T) {
	line := "7 (a) (b) c) R 1 7 7 0 -1 0 31 0 42 0 250 50 0 0 20 0 4 0 99 0 10"
	st, err := parsePidStat([]byte(line), nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(st.comm) != "a) (b) c" || st.state != 'R' || st.ppid != 1 || st.ticks != 300 || st.sticks != 50 || st.threads != 4 || st.starttime != 99 || st.rssPages != 10 ||
		st.minflt != 31 || st.majflt != 42 {
		t.Fatalf("parsed %+v", st)
	}
	for _, bad := range []string{"", "7 a R", "7 (x) R 1 2", "7 (x) RR 1 7 7 0 -1 0 0 0 0 0 250 50 0 0 20 0 4 0 99 0 10"} {
		if _, err := parsePidStat([]byte(bad), nil); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// TestFaultRatesOfAMappedFile: a process that reads a mapped file whose
// pages are not cached takes major faults, and the probe reports them per
// process and per thread, for real.
func TestFaultRatesOfAMappedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data.bin")
	if err := os.WriteFile(path, make([]byte, 8<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	// A child maps the file, drops its pages, then touches one page in
	// every 64 KiB while the probe watches it.
	script := `import mmap, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
os.fsync(fd)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
m.madvise(mmap.MADV_RANDOM)
print("ready", flush=True)
sys.stdin.readline()
s = 0
for off in range(0, len(m), 65536):
    s += m[off]
print("done", flush=True)
sys.stdin.readline()
`
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	cmd := exec.Command(py, "-c", script, path)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	r := bufio.NewReader(out)
	if l, _ := r.ReadString('\n'); l != "ready\n" {
		t.Fatalf("child said %q", l)
	}
	p := NewProc("/proc", ProcOptions{PID: cmd.Process.Pid})
	var f sample.Frame
	f.Time = time.Now()
	if err := p.Collect(context.Background(), &f); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(in)
	if l, _ := r.ReadString('\n'); l != "done\n" {
		t.Fatalf("child said %q", l)
	}
	f = sample.Frame{Time: time.Now()}
	if err := p.Collect(context.Background(), &f); err != nil {
		t.Fatal(err)
	}
	pr := f.Procs.List[0]
	if pr.MajorFaultsPerSec == nil || pr.MinorFaultsPerSec == nil {
		t.Fatalf("no fault rates: %+v", pr)
	}
	// 128 pages touched, each a fault that reads the disk (MADV_RANDOM:
	// no read-around); the interval is short, so the rate is large.
	var threadMaj float64
	for _, th := range f.Procs.Threads {
		if th.MajorFaultsPerSec != nil {
			threadMaj += *th.MajorFaultsPerSec
		}
	}
	if *pr.MajorFaultsPerSec <= 0 || threadMaj <= 0 {
		t.Fatalf("major faults/s: process %v, threads %v", *pr.MajorFaultsPerSec, threadMaj)
	}
	// The mapped file is sized while the process faults.
	if pr.MappedFileBytes != 8<<20 || pr.MappedFile != path {
		t.Fatalf("mapped %d bytes, largest %q", pr.MappedFileBytes, pr.MappedFile)
	}
	fmt.Fprintln(in)
}

func TestParseMaps(t *testing.T) {
	maps := `55d0c0000000-55d0c0021000 r--p 00000000 fd:00 100 /usr/bin/python3.11
55d0c0021000-55d0c0300000 r-xp 00021000 fd:00 100 /usr/bin/python3.11
7f0000000000-7f0040000000 r--s 00000000 fd:00 200 /data/train shard.arrow
7f0040000000-7f0080000000 r--s 40000000 fd:00 200 /data/train shard.arrow
7f0080000000-7f0080100000 r--p 00000000 fd:00 300 /data/labels.npy
7f0090000000-7f0090200000 r--p 00000000 fd:00 400 /usr/lib/locale/locale-archive
7f00a0000000-7f00a0010000 r--p 00000000 fd:00 500 /opt/conda/lib/libtorch.so
7f00b0000000-7f00b0010000 rw-p 00000000 00:00 0 [heap]
7f00c0000000-7f00c0010000 ---p 00000000 fd:00 600 /data/hidden
garbage line
`
	m := parseMaps(strings.NewReader(maps))
	if m.total != 2<<30+1<<20 || m.largest != "/data/train shard.arrow" || m.largestBytes != 2<<30 {
		t.Fatalf("parsed %+v", m)
	}
	// ".so" inside a dataset's name is no library: only a library's name
	// pattern is (libc.so.6, an extension module's .so).
	sorted := `7f0000000000-7f0100000000 r--s 00000000 fd:00 200 /data/train.sorted.bin
7f0100000000-7f0100100000 r--p 00000000 fd:00 201 /home/u/env/lib/python3.11/site-packages/torch/_C.cpython-311-x86_64-linux-gnu.so
7f0200000000-7f0200100000 r--p 00000000 fd:00 202 /opt/conda/lib/libstdc++.so.6.0.32
`
	if m := parseMaps(strings.NewReader(sorted)); m.largest != "/data/train.sorted.bin" || m.total != 4<<30 {
		t.Fatalf("train.sorted.bin: %+v", m)
	}
	hostile := "7f0000000000-7f0000100000 r--s 00000000 fd:00 9 /data/\x1b]0;pwn\x07" + strings.Repeat("a", 1000) + "\n"
	if m := parseMaps(strings.NewReader(hostile)); strings.ContainsAny(m.largest, "\x1b\x07") || utf8.RuneCountInString(m.largest) > mapsPathMax+1 {
		t.Fatalf("hostile path kept as %q", m.largest)
	}
}

// TestAFIFOInTheSysRootStallsNothing: a FIFO where a probe expects a
// kernel file (a --sys-root is outside input), or swapped in for a mapped
// file, is refused at once as not a regular file: nothing waits for a
// writer.
func TestAFIFOInTheSysRootStallsNothing(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "stat")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	done := make(chan error, 2)
	go func() {
		var r probes.FileReader
		_, err := r.Read(fifo)
		done <- err
	}()
	go func() {
		f, err := probes.OpenRegular(fifo)
		if f != nil {
			f.Close()
		}
		done <- err
	}()
	for range 2 {
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Fatalf("a FIFO read: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("reading a FIFO blocked")
		}
	}
	// A CPU probe over a sys-root whose /proc/stat is that FIFO fails fast.
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "proc"), 0o755)
	if err := syscall.Mkfifo(filepath.Join(root, "proc", "stat"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := NewCPU(filepath.Join(root, "proc"))
	errc := make(chan error, 1)
	go func() { errc <- p.Collect(context.Background(), &sample.Frame{}) }()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("a FIFO read as /proc/stat")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the CPU probe blocked on a FIFO")
	}
}

// TestProcHoldsStatFilesOfLiveProcesses: on the real /proc the probe
// reads each process's stat, each thread's it reads and the top
// processes' io through files held open from tick to tick; a process that exits has its files closed
// at the next tick (and its CPU still read while it lived), and Close
// closes the rest. A folder of snapshots holds none
// (TestProcFocusTreeAndBusiestThreads reads it).
func TestProcHoldsStatFilesOfLiveProcesses(t *testing.T) {
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Focused on the child while it lives, so that its threads and io are
	// read whatever else this box runs (tests beside this one can be
	// busier than it); no focus once it is gone.
	focus := cmd.Process.Pid
	p := NewProc("/proc", ProcOptions{FocusOf: func() int { return focus }})
	if p.maxStatFDs <= 0 {
		t.Skipf("no open-file budget here (%d)", p.maxStatFDs)
	}
	collect := func() *sample.Procs {
		f := sample.Frame{Time: time.Now()}
		if err := p.Collect(context.Background(), &f); err != nil {
			t.Fatal(err)
		}
		return f.Procs
	}
	// stats is the /proc/PID/stat files this process holds open, by PID
	// (other tests' probes, never closed, hold theirs too).
	stats := func() map[int]int {
		out := map[int]int{}
		ents, _ := os.ReadDir("/proc/self/fd")
		for _, e := range ents {
			l, _ := os.Readlink("/proc/self/fd/" + e.Name())
			var pid int
			if n, _ := fmt.Sscanf(l, "/proc/%d/stat", &pid); n == 1 && strings.HasSuffix(l, "/stat") {
				out[pid]++
			}
		}
		return out
	}
	held := func(pid int) bool { return stats()[pid] > 0 }
	// threadHeld says this process holds the child's main thread's
	// /proc/PID/task/TID/stat open.
	threadHeld := func(pid int) bool {
		ents, _ := os.ReadDir("/proc/self/fd")
		for _, e := range ents {
			l, _ := os.Readlink("/proc/self/fd/" + e.Name())
			if l == fmt.Sprintf("/proc/%d/task/%d/stat", pid, pid) {
				return true
			}
		}
		return false
	}
	// heldByEntries is the files the probe's entries hold: each process's
	// stat and io, each thread's stat.
	heldByEntries := func() int {
		n := 0
		for _, t := range p.threads {
			n += min(t.statFD, 1)
		}
		for _, e := range p.procs {
			n += min(e.statFD, 1) + min(e.ioFD, 1)
		}
		return n
	}
	ioHeld := func(pid int) bool {
		e := p.procs[pid]
		if e == nil || e.ioFD <= 0 {
			return false
		}
		l, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", e.ioFD-1))
		return l == fmt.Sprintf("/proc/%d/io", pid)
	}
	before := stats()
	collect()
	time.Sleep(200 * time.Millisecond) // CPU to measure: the child spins
	ps := collect()
	if !held(cmd.Process.Pid) || p.statFDs == 0 || p.statFDs > p.maxStatFDs {
		t.Fatalf("the child's stat held: %v; %d held of %d", held(cmd.Process.Pid), p.statFDs, p.maxStatFDs)
	}
	if i := slices.IndexFunc(ps.List, func(pr sample.Proc) bool { return pr.PID == cmd.Process.Pid }); i < 0 || ps.List[i].CPUPct <= 0 {
		t.Fatalf("the spinning child read through its held file: %+v", ps.List)
	}
	time.Sleep(200 * time.Millisecond) // CPU to measure again, read through the held files
	ps = collect()
	if !threadHeld(cmd.Process.Pid) || !ioHeld(cmd.Process.Pid) {
		t.Fatalf("the child's thread's stat held: %v, its io: %v (threads %+v)", threadHeld(cmd.Process.Pid), ioHeld(cmd.Process.Pid), ps.Threads)
	}
	if i := slices.IndexFunc(ps.Threads, func(th sample.Thread) bool { return th.TID == cmd.Process.Pid }); i < 0 || ps.Threads[i].CPUPct <= 0 {
		t.Fatalf("the spinning thread read through its held file: %+v", ps.Threads)
	}
	cmd.Process.Kill()
	cmd.Wait()
	focus = 0
	collect()
	if held(cmd.Process.Pid) || threadHeld(cmd.Process.Pid) || ioHeld(cmd.Process.Pid) {
		t.Fatal("the exited child's stat is still held")
	}
	if n := p.statFDs; n != heldByEntries() || n > p.maxStatFDs {
		t.Fatalf("%d counted held, %d held by %d processes and %d threads (at most %d)", n, heldByEntries(), len(p.procs), len(p.threads), p.maxStatFDs)
	}
	p.Close()
	if after := stats(); p.statFDs != 0 || heldByEntries() != 0 || !maps.Equal(after, before) {
		t.Fatalf("after Close the probe holds %d: %v, before it %v", p.statFDs, after, before)
	}

	s := probetest.NewSnapshots(t, "normal")
	if q := NewProc(s.Roots().Proc, ProcOptions{}); q.maxStatFDs != 0 {
		t.Fatalf("a folder of snapshots may hold %d", q.maxStatFDs)
	}
}

// Package job supervises the command `gpuwatch run` (and tune's and
// sweep's runs) start: its process group, its pseudo-terminal and log, the
// terminal's foreground, signals to the group (Interrupt, Stop), Ctrl-Z
// handled as a shell would, and what the hook left in the run folder
// (HookState). The session watches a Job; the job knows nothing of
// frames.
//
// It may import sample; it must not import session, probes or anything
// above them. docs/architecture.md draws the map.
package job

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/gpuwatch/gpuwatch/sample"
)

// Job is a command that `gpuwatch run` started and watches. It runs in a
// process group of its own, so that a signal reaches the whole job —
// launcher, ranks and DataLoader workers — as a terminal's would. Its exit
// status is run's.
type Job struct {
	cmd     *exec.Cmd
	argv    []string
	done    chan struct{}
	state   *os.ProcessState
	waitErr error
	ended   time.Time
	log     *jobLog       // the job's output when it goes to a log
	copied  chan struct{} // closed when the terminal's output is all read
	logPath string
	runDir  string // where the hook marks the processes that loaded it
	restore func() // gives the terminal back after the job had its foreground
	ttyFd   int    // that terminal, with restore

	mu    sync.Mutex
	sent  int // interrupts sent from the dashboard
	stops []string
}

// Options say how to start a job.
type Options struct {
	Argv []string
	Env  []string
	// Stdin, Stdout and Stderr are the job's own; ignored with Log.
	Stdin          *os.File
	Stdout, Stderr *os.File
	// Log, when set, takes the job's output (the dashboard owns the
	// terminal): the job runs on a pseudo-terminal of its own, what it
	// writes goes to Log, and the last lines are kept for the view.
	Log string
	// Pipe, with Log, gives the job pipes rather than a terminal of its
	// own (run --headless --job-log): gpuwatch drains them into Log, so a
	// log that cannot be written (a full disk) costs the log, never the
	// job; its stdin is Stdin.
	Pipe bool
	// LogFailed, when set, hears the first failed write of Log, once, on a
	// goroutine of its own: the job goes on, its output still drained.
	LogFailed func(error)
	// LogMax caps each part of Log in bytes (0: no cap): past it the log
	// rotates to Log.1, one previous part kept (tune's and sweep's runs).
	LogMax int64
	// RunDir is gpuwatch run's private folder: the hook marks there the
	// processes that loaded it, and logs its warnings.
	RunDir string
	// Foreground hands the terminal on Stdin to the job's process group
	// while it runs, when gpuwatch has it: Ctrl-C and Ctrl-Z then reach
	// the job exactly as without gpuwatch, and it may read the terminal.
	Foreground bool
}

// pipeGrace is how long the job's pipes are still drained after it ended,
// as the terminal is (own): what it wrote last, not a daemon's output for
// ever.
const pipeGrace = 2 * time.Second

// Start starts the command. The error of a command that cannot start
// (not found, not executable) names it.
func Start(o Options) (*Job, error) {
	if len(o.Argv) == 0 {
		return nil, errors.New("no command")
	}
	path, err := exec.LookPath(o.Argv[0])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", sample.Printable(o.Argv[0]), unwrapExec(err))
	}
	cmd := exec.Command(path, o.Argv[1:]...)
	cmd.Args[0] = o.Argv[0]
	cmd.Env = o.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	j := &Job{cmd: cmd, argv: o.Argv, done: make(chan struct{}), runDir: o.RunDir}
	var master, tty *os.File
	if o.Log != "" {
		if j.log, err = openJobLog(o.Log, o.LogMax); err != nil {
			return nil, fmt.Errorf("the job's output: %w", err)
		}
		j.logPath = o.Log
		j.log.failed = o.LogFailed
		// A terminal of its own, as the job would have in the user's
		// shell; pipes where there is no pseudo-terminal, or where asked.
		// Pipes that exec drains into the log (the job never writes the
		// file itself), for at most pipeGrace after the job's end: a
		// daemon it started may hold them.
		if o.Pipe {
			cmd.Stdin, cmd.Stdout, cmd.Stderr = o.Stdin, j.log, j.log
			cmd.WaitDelay = pipeGrace
		} else if master, tty, err = openPTY(120, 40); err == nil {
			cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
			j.copied = make(chan struct{})
		} else {
			cmd.Stdout, cmd.Stderr = j.log, j.log
			cmd.WaitDelay = pipeGrace
		}
	} else {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = o.Stdin, o.Stdout, o.Stderr
		j.takeForeground(cmd, o)
	}
	if j.restore != nil {
		j.ttyFd = int(o.Stdin.Fd())
	}
	setParentDeath(cmd.SysProcAttr)
	started := make(chan error, 1)
	go j.own(master, started)
	err = <-started
	if tty != nil {
		tty.Close() // the job holds it now
	}
	if err != nil {
		if master != nil {
			master.Close()
		}
		if j.log != nil {
			j.log.Close()
			os.Remove(o.Log)
		}
		if j.restore != nil {
			j.restore()
		}
		return nil, fmt.Errorf("%s: %w", sample.Printable(o.Argv[0]), unwrapExec(err))
	}
	if master != nil {
		go func() {
			defer close(j.copied)
			// Until every holder of the terminal closed it (EIO). The log
			// never fails a write, so the job never blocks on its terminal.
			_, _ = io.Copy(j.log, master)
		}()
	}
	return j, nil
}

// takeForeground makes the job the foreground of gpuwatch's terminal
// where asked (o.Foreground) and gpuwatch holds it: the job reads the
// keyboard, and gpuwatch takes the terminal back when it ends.
func (j *Job) takeForeground(cmd *exec.Cmd, o Options) {
	if !o.Foreground || o.Stdin == nil {
		return
	}
	fd := int(o.Stdin.Fd())
	if !term.IsTerminal(fd) {
		return
	}
	if pg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err == nil && pg == syscall.Getpgrp() {
		// Ctty is the terminal's descriptor in the child: its stdin.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Foreground: true, Ctty: 0}
		j.restore = takeBackTerminal(fd)
	}
}

// own starts the job, says on started whether it started, waits for it to
// end, and tidies up after it: the terminal's last output, the log, the
// terminal's foreground; then Done is closed.
//
// The job's parent-death signal (setParentDeath) fires when the thread
// that forked it exits, not when gpuwatch does (prctl(2),
// PR_SET_PDEATHSIG). So the fork and the wait run on one goroutine locked
// to its OS thread: no other goroutine runs there, and the runtime ends a
// thread only when a goroutine locked to it returns, which this one does
// once the job has ended.
func (j *Job) own(master *os.File, started chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := j.cmd.Start(); err != nil {
		started <- err
		return
	}
	var stopWatch func()
	if j.restore != nil {
		stopWatch = j.watchStops(j.ttyFd) // Ctrl-Z: act as a shell does
	}
	started <- nil
	j.waitErr = j.cmd.Wait()
	j.state, j.ended = j.cmd.ProcessState, time.Now()
	if stopWatch != nil {
		stopWatch()
	}
	if master != nil {
		// What the job wrote last is still in the terminal: read it,
		// but not for ever (a daemon it started may hold the terminal).
		select {
		case <-j.copied:
		case <-time.After(2 * time.Second):
		}
		master.Close() // ends the copy's read (the terminal is polled)
		<-j.copied
	}
	if j.log != nil {
		j.log.Close()
	}
	if j.restore != nil {
		j.restore()
	}
	close(j.done)
}

// CannotStartStatus is the exit status of a command that could not start,
// as shells, env and timeout give it: 127 when it was not found, 126 when
// it was found but could not be run (permission denied, a directory, a
// format the kernel does not run).
func CannotStartStatus(err error) int {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return 127
	}
	return 126
}

func unwrapExec(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}

// takeBackTerminal prepares for the job to have the terminal's foreground
// and returns what gives it back to gpuwatch's process group. While the
// job has it gpuwatch is a background group: SIGTTOU is ignored so that
// its own lines (stdout) and the hand-back are not stopped.
func takeBackTerminal(fd int) func() {
	signal.Ignore(syscall.SIGTTOU)
	ours := syscall.Getpgrp()
	return func() {
		_ = unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, ours)
		signal.Reset(syscall.SIGTTOU)
	}
}

// PID is the job's process ID (the root of its process tree).
func (j *Job) PID() int { return j.cmd.Process.Pid }

// Command is the job's command line, printable and at most 200 bytes.
func (j *Job) Command() string {
	s := sample.Printable(strings.Join(j.argv, " "))
	if len(s) > 200 {
		s = s[:197] + "…"
	}
	return s
}

// Done is closed when the job has exited.
func (j *Job) Done() <-chan struct{} { return j.done }

// ExitCode is the job's exit status as a shell reports it: its code, or
// 128 + the signal that killed it. Only after Done.
func (j *Job) ExitCode() int {
	if j.state == nil {
		return 1 // never waited: it could not be run
	}
	if ws, ok := j.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return j.state.ExitCode()
}

// Exit describes how the job ended ("exited with status 0", "killed by
// SIGINT"), and when. Only after Done.
func (j *Job) Exit() (string, time.Time) {
	if j.state == nil {
		return "could not be waited for: " + fmt.Sprint(j.waitErr), j.ended
	}
	if ws, ok := j.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "killed by " + unix.SignalName(ws.Signal()), j.ended
	}
	return fmt.Sprintf("exited with status %d", j.state.ExitCode()), j.ended
}

// Signal sends sig to the job's process group: every process of the job
// that has not moved to a group of its own.
//
// Once the command has ended, what it left in its group (ranks a shell
// started with SIGINT ignored) is still signalled: the dashboard's q
// reaches them after the shell is gone.
func (j *Job) Signal(sig syscall.Signal) error {
	if jobEnded(j) && !groupLeft(j.PID()) {
		return nil
	}
	return syscall.Kill(-j.PID(), sig)
}

// Interrupt is a quit key in the dashboard: SIGINT to the job (what Ctrl-C
// would send without gpuwatch), then SIGTERM, then SIGKILL on the next
// presses. It says what it sent.
func (j *Job) Interrupt() string {
	j.mu.Lock()
	seq := []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL}
	sig := seq[min(j.sent, len(seq)-1)]
	j.sent++
	j.mu.Unlock()
	_ = j.Signal(sig)
	next := "q again sends SIGTERM"
	switch sig {
	case syscall.SIGTERM:
		next = "q again sends SIGKILL"
	case syscall.SIGKILL:
		next = "waiting for it to end"
	}
	return fmt.Sprintf("sent %s to pid %d's process group; %s", unix.SignalName(sig), j.PID(), next)
}

// Stop ends a job that gpuwatch stopped watching before it ended: SIGINT
// to its process group, as Ctrl-C would, then SIGTERM and SIGKILL, grace
// apart; it returns once the job has exited.
func (j *Job) Stop(grace time.Duration) { j.StopThen(grace, nil) }

// StopThen is Stop, and calls then (where not nil) once, as soon as the
// job has ended or the SIGINT's grace is up: run --once writes its
// summary then, after what the job said on being interrupted, and
// never later than the grace for a job that will not end.
//
// A job gpuwatch stops is its whole process group, not only the command
// it started: a shell that starts ranks with & (their SIGINT ignored, as
// a non-interactive shell starts them) ends on the SIGINT and leaves
// them running, holding their GPUs (a hostile user's review). Where the
// command ends first, the signals go on to what is left of its group,
// SIGTERM and SIGKILL grace apart. A job that ended before it was
// stopped is left as it is: what it left running, it meant to.
func (j *Job) StopThen(grace time.Duration, then func()) {
	once := func() {
		if then != nil {
			then()
			then = nil
		}
	}
	defer once()
	j.mu.Lock()
	interrupted := j.sent > 0
	j.mu.Unlock()
	if jobEnded(j) && !interrupted {
		return
	}
	pgid := j.PID()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL} {
		if jobEnded(j) && !groupLeft(pgid) {
			return
		}
		_ = syscall.Kill(-pgid, sig)
		if j.waitGroup(pgid, grace) {
			return
		}
		once()
	}
	<-j.Done()
}

// jobEnded says the command gpuwatch started has exited.
func jobEnded(j *Job) bool {
	select {
	case <-j.Done():
		return true
	default:
		return false
	}
}

// groupLeft says a process that still runs is left in the process group
// pgid, one gpuwatch may signal (one that is another user's now, EPERM,
// it cannot end, so it is not waited for). A zombie is not one: it has
// ended, and waits for its parent (init, late; or gpuwatch itself as a
// container's PID 1, which never reaps what it did not start) — kill
// succeeds on it, so /proc says which are left. The group's number is not
// reused while any process is in it, so this asks only of the job's own.
func groupLeft(pgid int) bool {
	if syscall.Kill(-pgid, 0) != nil {
		return false
	}
	return liveInGroup("/proc", pgid)
}

// liveInGroup says a process in /proc (procRoot) is in process group
// pgid and not a zombie; true where /proc cannot be read (kill's word
// stands).
func liveInGroup(procRoot string, pgid int) bool {
	d, err := os.Open(procRoot)
	if err != nil {
		return true
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return true
	}
	buf := make([]byte, 512)
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		f, err := os.Open(procRoot + "/" + name + "/stat")
		if err != nil {
			continue // gone since the listing
		}
		n, _ := f.Read(buf)
		f.Close()
		state, pgrp, ok := statStateGroup(buf[:n])
		if ok && pgrp == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// statStateGroup reads a /proc/PID/stat line's state and process group
// (its third and fifth fields, after the command in parentheses).
func statStateGroup(b []byte) (state byte, pgrp int, ok bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	pgrp, err := strconv.Atoi(f[2])
	return f[0][0], pgrp, err == nil
}

// waitGroup waits up to grace for the job to end with nothing left in its
// process group; it says whether that happened. Once the command has
// ended, what is left of its group is looked at every groupPoll: no
// event says when processes that are not gpuwatch's children end.
func (j *Job) waitGroup(pgid int, grace time.Duration) bool {
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-j.Done():
	case <-timer.C:
		return false
	}
	tick := time.NewTicker(groupPoll)
	defer tick.Stop()
	for groupLeft(pgid) {
		select {
		case <-tick.C:
		case <-timer.C:
			return false
		}
	}
	return true
}

// groupPoll is how often StopThen looks for what is left of a stopped
// job's process group once its command has ended: each look scans all
// of /proc, so a few a grace, not one every few milliseconds.
const groupPoll = 50 * time.Millisecond

// LogPath is where the job's output goes ("" when it keeps gpuwatch's
// stdout and stderr).
func (j *Job) LogPath() string { return j.logPath }

// LogNote says where the job's output went and what became of writing it
// (a failed write, rotated parts); "" without a log.
func (j *Job) LogNote() string {
	if j.log == nil {
		return ""
	}
	return j.log.Note()
}

// Tail is the last n lines the job wrote, printable (only with a log).
func (j *Job) Tail(n int) []string {
	if j.log == nil {
		return nil
	}
	return j.log.tail.last(n)
}

// lineTail keeps the last max lines written to it, as a terminal shows
// them (lineSplitter).
type lineTail struct {
	mu        sync.Mutex
	max       int
	lines     []string
	split     lineSplitter
	afterPart bool // the last line kept was a part of a longer one
}

func (t *lineTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.split.write(p, func(line []byte, end bool) {
		// A part is a line of its own here; the end of its line with
		// nothing after the part adds none (it read an empty line after
		// a 4 KiB part, a review).
		skip := end && len(line) == 0 && t.afterPart
		t.afterPart = !end
		if skip {
			return
		}
		if len(t.lines) == t.max {
			copy(t.lines, t.lines[1:])
			t.lines = t.lines[:t.max-1]
		}
		t.lines = append(t.lines, plainLine(line))
	})
	return len(p), nil
}

func (t *lineTail) last(n int) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string(nil), t.lines[max(0, len(t.lines)-n):]...)
	if partial := t.split.line; len(partial) > 0 && len(out) < n+1 {
		out = append(out, plainLine(partial))
		if len(out) > n {
			out = out[1:]
		}
	}
	return out
}

// plainLine is a line of the job's output as the dashboard shows it: its
// terminal escape sequences (colours, cursor moves, window titles) taken
// out, tabs expanded to 8 columns, and whatever control is left made
// printable (sample.Printable). A review: a coloured log line read
// "�[31mRED line�[0m and tab�here".
func plainLine(b []byte) string {
	var out []byte
	col := 0
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c == 0x1b && i+1 < len(b) && b[i+1] == '[': // CSI: parameters, then a final byte 0x40–0x7e
			i += 2
			for i < len(b) && (b[i] < 0x40 || b[i] > 0x7e) {
				i++
			}
		case c == 0x1b && i+1 < len(b) && b[i+1] == ']': // OSC: to BEL or ESC \
			i += 2
			for i < len(b) && b[i] != 0x07 && !(b[i] == 0x1b && i+1 < len(b) && b[i+1] == '\\') {
				i++
			}
			if i < len(b) && b[i] == 0x1b {
				i++
			}
		case c == 0x1b && i+1 < len(b) && strings.IndexByte("PX^_", b[i+1]) >= 0: // DCS, SOS, PM, APC: to ESC \\
			i += 2
			for i < len(b) && !(b[i] == 0x1b && i+1 < len(b) && b[i+1] == '\\') {
				i++
			}
			if i < len(b) {
				i++
			}
		case c == 0x1b && i+2 < len(b) && strings.IndexByte("()*+#%", b[i+1]) >= 0: // a character set's three bytes (ESC ( B: tput sgr0)
			i += 2
		case c == 0x1b && i+1 < len(b): // a two-byte escape (ESC 7, ESC =, …)
			i++
		case c == '\r': // a redraw in place (lineSplitter keeps a line's last one already; this is for any other caller): what follows the last \r shows, and a CR ending the line changes nothing
			if i+1 < len(b) {
				out, col = out[:0], 0
			}
		case c == '\t':
			n := 8 - col%8
			for range n {
				out = append(out, ' ')
			}
			col += n
		default:
			out = append(out, c)
			if c < 0x80 || c >= 0xc0 { // a byte that starts a character
				col++
			}
		}
	}
	return sample.Printable(string(out))
}

package job

import (
	"bytes"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// jobDeathSignal is what the job's first process gets when gpuwatch dies
// without stopping it (SIGKILL, the OOM killer): SIGTERM, the polite
// stop, which torchrun and Python's default handler both end on; the
// processes it started get what it does with that. With the dashboard
// the job's terminal closes too, and the kernel hangs up its foreground
// group. docs/security.md says so.
const jobDeathSignal = syscall.SIGTERM

// setParentDeath asks the kernel to send jobDeathSignal to the job when
// its parent goes (see Job.own for the thread this is tied to).
func setParentDeath(a *syscall.SysProcAttr) { a.Pdeathsig = jobDeathSignal }

// watchStops acts as a shell does for a job in the terminal's foreground
// (fd): when the job is stopped (Ctrl-Z, SIGTSTP), gpuwatch takes the
// terminal back and stops itself, so that the user's shell gets control;
// when continued, it gives the terminal back to the job if the shell gave
// it to gpuwatch (fg), and continues the job's process group (fg or bg).
// The returned function stops the watch and waits for its goroutine.
func (j *Job) watchStops(fd int) func() {
	sigc := make(chan os.Signal, 4)
	signal.Notify(sigc, syscall.SIGCHLD)
	quit, done := make(chan struct{}), make(chan struct{})
	pid := j.PID()
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-sigc:
			}
			// WSTOPPED without WEXITED: a stop is taken, an exit is left
			// for Wait.
			var info unix.Siginfo
			if err := unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED|unix.WNOHANG, nil); err != nil || info.Signo != int32(syscall.SIGCHLD) {
				continue
			}
			j.suspend(fd, pid)
		}
	}()
	return func() {
		signal.Stop(sigc)
		close(quit)
		<-done
	}
}

// suspend takes the terminal back from the stopped job, stops gpuwatch
// (its shell sees it stopped), and on SIGCONT continues the job.
func (j *Job) suspend(fd, pid int) {
	ours := syscall.Getpgrp()
	_ = unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, ours) // SIGTTOU is ignored meanwhile
	// A SIGSTOP sent to oneself takes effect a little later (the kernel
	// stops every thread at its next return to user space), so return
	// only once SIGCONT has come: the job must stay stopped while we are.
	cont := make(chan os.Signal, 1)
	signal.Notify(cont, syscall.SIGCONT)
	defer signal.Stop(cont)
	_ = syscall.Kill(syscall.Getpid(), syscall.SIGSTOP)
	<-cont
	// Continued: fg gave gpuwatch the terminal; bg did not.
	if pg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err == nil && pg == ours {
		_ = unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, pid)
	}
	_ = syscall.Kill(-pid, syscall.SIGCONT)
}

// Stopped says whether pid is stopped (state T, or t under a
// tracer), from procRoot/PID/stat (proc(5)).
func Stopped(procRoot string, pid int) bool {
	b, err := os.ReadFile(procRoot + "/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] == 'T' || b[i+2] == 't'
}

package cli

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDirectIORefusedByTheFilesystem mounts a ramfs (which has no direct
// I/O; tmpfs has it since Linux 6.6) and asks for --direct-io there.
func TestDirectIORefusedByTheFilesystem(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("none", dir, "ramfs", 0, ""); err != nil {
		t.Skipf("cannot mount a ramfs here (%v)", err)
	}
	defer syscall.Unmount(dir, syscall.MNT_DETACH)
	var out, errb bytes.Buffer
	code := Run([]string{"demo", "--direct-io", "--dataset", dir, "--dataset-size", "1MiB", "--sample-size", "4KiB", "--headless", "--duration", "5s"}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "does not support --direct-io") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	if out.Len() != 0 {
		t.Fatalf("it ran anyway: %q", out.String())
	}
}

// TestDatasetThatDoesNotFitIsRefused mounts a 2 MiB tmpfs and asks for a
// 16 MiB dataset there.
func TestDatasetThatDoesNotFitIsRefused(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("none", dir, "tmpfs", 0, "size=2m"); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v)", err)
	}
	defer syscall.Unmount(dir, syscall.MNT_DETACH)
	var out, errb bytes.Buffer
	code := Run([]string{"loader", "--dataset", dir, "--dataset-size", "16MiB", "--listen", "127.0.0.1:0"}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "does not fit") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left files behind: %v", ents)
	}
}

// TestRunOnceSummaryComesAfterTheJobStopped: --once interrupts the job
// when it is done watching, and the job's last words on that (a
// KeyboardInterrupt's traceback, thirty lines of it) came after the
// verdict and pushed it off the screen. On a terminal the summary is
// written once the job has stopped: here the job's SIGINT handler says
// so on the same terminal, and that line must come before the summary.
func TestRunOnceSummaryComesAfterTheJobStopped(t *testing.T) {
	m, tty := openTestPTY(t)
	var screen bytes.Buffer
	read := make(chan struct{})
	go func() {
		defer close(read)
		_, _ = io.Copy(&screen, m) // until EIO: every end of the terminal closed
	}()
	script := `trap 'echo JOB-STOPPED >&2; exit 0' INT; while :; do sleep 0.1; done`
	code := Run([]string{"run", "--once", "--duration", "2s", "--", "sh", "-c", script}, tty, tty)
	tty.Close()
	<-read
	out := screen.String()
	stopped, summary := strings.Index(out, "JOB-STOPPED"), strings.Index(out, "confident")
	if stopped < 0 || summary < 0 || stopped > summary {
		t.Errorf("exit %d: the job's last line at %d, the summary at %d:\n%s", code, stopped, summary, out)
	}
}

// openTestPTY opens a pseudo-terminal pair: the master end to read, the
// terminal end to hand gpuwatch as its stdout and stderr.
func openTestPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m, tty
}

package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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

// TestDiscoverFalseTakesNoProcessForTheJob: --discover=false watches the
// host only: a busy process that maps torch is not taken for the job and
// sampled (a newcomer's review: it was, and --once exited 3 on its
// verdict); at the defaults the same process is.
func TestDiscoverFalseTakesNoProcessForTheJob(t *testing.T) {
	lib := filepath.Join(t.TempDir(), "libtorch_cpu.so")
	if err := os.WriteFile(lib, make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	child := exec.Command(os.Args[0], "-test.run=^TestMapTorchAndSpin$")
	child.Env = append(os.Environ(), "GPUWATCH_TEST_MAPS_TORCH="+lib)
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || strings.TrimSpace(line) != "mapped" { // it maps the file and spins
		t.Fatalf("the child: %q %v", line, err)
	}
	// Taken: this child, or another process that maps torch (a PyTorch
	// test beside this one); with --discover=false, none.
	taken := ": it maps libtorch"
	for _, c := range []struct {
		args  []string
		taken bool
	}{
		{[]string{"--duration", "4s"}, true}, // first: by its end the child is one the finder takes (it has run a while)
		{[]string{"--duration", "2s", "--discover=false"}, false},
	} {
		var out, errb bytes.Buffer
		args := append([]string{"--headless", "--interval", "200ms"}, c.args...)
		if code := Run(args, &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		if got := strings.Contains(out.String(), taken); got != c.taken {
			t.Errorf("%v: %q said: %v, want %v:\n%s", args, taken, got, c.taken, out.String())
		}
	}
}

// TestMapTorchAndSpin is TestDiscoverFalseTakesNoProcessForTheJob's
// child: it maps the file named (a stand-in for libtorch), says so, and
// keeps a core busy until killed.
func TestMapTorchAndSpin(t *testing.T) {
	lib := os.Getenv("GPUWATCH_TEST_MAPS_TORCH")
	if lib == "" {
		t.Skip("the child of TestDiscoverFalseTakesNoProcessForTheJob")
	}
	f, err := os.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, 4096, unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("mapped")
	for n := 0; ; n++ {
		n += int(m[n%len(m)])
	}
}

package job

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAFullDiskUnderTheLogDoesNotFreezeTheJob: the job writes 2 MB to its
// terminal while its log is on a 64 KiB tmpfs. The terminal is still
// drained after the first ENOSPC, so the job runs to its end, its last
// lines are kept in memory, and the note says that writing the log failed.
// Before, the copy stopped at the first failed write and the job blocked in
// write() for ever. Needs root (to mount the small tmpfs).
func TestAFullDiskUnderTheLogDoesNotFreezeTheJob(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k,mode=0700"); err != nil {
		t.Skipf("a 64 KiB tmpfs needs root: %v", err)
	}
	defer syscall.Unmount(dir, syscall.MNT_DETACH)
	j, err := Start(Options{Argv: []string{"sh", "-c", "i=0; while [ $i -lt 20000 ]; do echo line $i of a chatty training log........................................; i=$((i+1)); done; echo the last line"},
		Env: os.Environ(), Log: filepath.Join(dir, "job.log")})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-j.Done():
	case <-time.After(60 * time.Second):
		_ = j.Signal(syscall.SIGKILL)
		<-j.Done()
		t.Fatalf("the job did not end: blocked writing to its terminal (%s)", j.LogNote())
	}
	tail := j.Tail(1)
	if j.ExitCode() != 0 || len(tail) != 1 || tail[0] != "the last line" {
		t.Fatalf("exit %d, tail %q", j.ExitCode(), tail)
	}
	if note := j.LogNote(); !strings.Contains(note, "no space left on device") || !strings.Contains(note, "last lines are kept in memory") {
		t.Fatalf("note %q does not say the log failed", note)
	}
}

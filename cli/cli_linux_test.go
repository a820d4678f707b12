package cli

import (
	"bytes"
	"os"
	"strings"
	"syscall"
	"testing"
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

package rundir

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRunDirsAreNeverInTmp: with XDG_RUNTIME_DIR unset (cron, su, Slurm)
// the run folder goes under the user's cache folder, never in /tmp where
// another user could make the same path once it is removed (issue 41,
// item 1); every folder on its path is the user's and private.
func TestRunDirsAreNeverInTmp(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", home)
	t.Setenv("TMPDIR", t.TempDir())
	dir, err := New("run")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if want := filepath.Join(home, ".cache", "gpuwatch", "runs"); filepath.Dir(dir) != want {
		t.Fatalf("run folder %s, want it under %s", dir, want)
	}
	for p := dir; p != home; p = filepath.Dir(p) {
		st, err := os.Lstat(p)
		if err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v", p, st.Mode(), err)
		}
	}
	// Under XDG_RUNTIME_DIR when it is the user's.
	rt := t.TempDir()
	if err := os.Chmod(rt, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", rt)
	dir2, err := New("tune")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir2)
	if !strings.HasPrefix(dir2, filepath.Join(rt, "gpuwatch", "runs", "tune-")) {
		t.Errorf("with XDG_RUNTIME_DIR: %s", dir2)
	}
	// A runtime folder that others may write to is passed over.
	if err := os.Chmod(rt, 0o777); err != nil {
		t.Fatal(err)
	}
	dir3, err := New("run")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir3)
	if !strings.HasPrefix(dir3, filepath.Join(home, ".cache")) {
		t.Errorf("a shared XDG_RUNTIME_DIR was used: %s", dir3)
	}
}

// TestStaleRunDirsAreSwept: a folder whose gpuwatch is gone (SIGKILL, no
// clean-up) is removed at the next start; a live one, another host's and
// one being made are kept.
func TestStaleRunDirsAreSwept(t *testing.T) {
	parent := t.TempDir()
	host, _ := os.Hostname()
	host = fieldSafe(host)
	mk := func(name, owner string) string {
		d := filepath.Join(parent, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := os.WriteFile(filepath.Join(d, runOwnerFile), []byte(owner), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	// A process that ran and is gone.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	gone := cmd.Process.Pid
	live := mk("run-live", ownerLine(os.Getpid()))
	dead := mk("run-dead", host+" "+bootID()+" "+strconv.Itoa(gone)+" 12345\n")
	reused := mk("run-reused", host+" "+bootID()+" "+strconv.Itoa(os.Getpid())+" 1\n") // our PID, another start
	oldBoot := mk("run-oldboot", host+" not-this-boot "+strconv.Itoa(os.Getpid())+" 1\n")
	other := mk("run-otherhost", "another-host "+bootID()+" "+strconv.Itoa(gone)+" 1\n")
	making := mk("run-making", "")
	if n := Sweep(parent, "/proc"); n != 3 {
		t.Errorf("swept %d, want 3", n)
	}
	for d, want := range map[string]bool{live: true, dead: false, reused: false, oldBoot: false, other: true, making: true} {
		if _, err := os.Stat(d); (err == nil) != want {
			t.Errorf("%s: kept=%v, want %v", filepath.Base(d), err == nil, want)
		}
	}
}

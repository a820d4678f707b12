package probes

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReadKeptHoldsProcfsFilesOnly: a procfs file read by ReadKept is
// read again through the descriptor kept open, and says what the kernel
// says now (/proc/self/stat's CPU ticks move while this test spins); a
// file elsewhere is never kept, so one replaced between reads is read as
// it is now; Close closes what was kept.
func TestReadKeptHoldsProcfsFilesOnly(t *testing.T) {
	var r FileReader
	first, err := r.ReadKept("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	first = bytes.Clone(first)
	fd, ok := r.kept["/proc/self/stat"]
	if l, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); !ok || l != "/proc/"+strconv.Itoa(os.Getpid())+"/stat" {
		t.Fatalf("/proc/self/stat kept: %v (fd %d → %q)", ok, fd, l)
	}
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
	} // CPU ticks for the file to show
	again, err := r.ReadKept("/proc/self/stat")
	if err != nil || bytes.Equal(again, first) || r.kept["/proc/self/stat"] != fd {
		t.Fatalf("read again through fd %d (kept %d): %v, changed %v", fd, r.kept["/proc/self/stat"], err, !bytes.Equal(again, first))
	}

	path := filepath.Join(t.TempDir(), "stat")
	for _, content := range []string{"one\n", "two\n"} {
		tmp := path + ".new"
		if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil { // replaced, as a snapshot is
			t.Fatal(err)
		}
		if b, err := r.ReadKept(path); err != nil || string(b) != content {
			t.Fatalf("%s: %q %v, want %q", path, b, err, content)
		}
	}
	if _, ok := r.kept[path]; ok || len(r.kept) != 1 {
		t.Fatalf("kept %v: want /proc/self/stat alone", r.kept)
	}
	r.Close()
	// The number may be another file's by now (tests beside this one open
	// files), never the stat file's.
	if l, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); (err == nil && l == "/proc/"+strconv.Itoa(os.Getpid())+"/stat") || r.kept != nil {
		t.Fatalf("fd %d still the stat file after Close (kept %v)", fd, r.kept)
	}
}

// TestReadStatFDReadsAFileWhole: a held /proc/PID/stat reads as the file
// is (one pread when it comes back short of the buffer), again and again;
// a file larger than the buffer still reads whole.
func TestReadStatFDReadsAFileWhole(t *testing.T) {
	var r FileReader
	fd, err := r.OpenFD("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	defer CloseFD(fd)
	for range 3 {
		b, err := r.ReadStatFD(fd)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if !strings.HasPrefix(s, strconv.Itoa(os.Getpid())+" (") || !strings.HasSuffix(s, "\n") || len(strings.Fields(s)) < 44 {
			t.Fatalf("/proc/self/stat read as %q", s)
		}
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 1000) // 16,000 bytes: four buffers
	path := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(path, big, 0o644); err != nil {
		t.Fatal(err)
	}
	fd2, err := r.OpenFD(path)
	if err != nil {
		t.Fatal(err)
	}
	defer CloseFD(fd2)
	for range 2 {
		if b, err := r.ReadStatFD(fd2); err != nil || !bytes.Equal(b, big) {
			t.Fatalf("a file of %d bytes read as %d bytes (%v)", len(big), len(b), err)
		}
	}
}

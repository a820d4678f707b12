//go:build linux

package host

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/sample"
)

func TestParseMountinfo(t *testing.T) {
	in := `22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
29 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
120 29 0:52 / /mnt/my\040data rw,nosuid,nodev,relatime shared:60 - fuse.sshfs user@10.0.0.5:/srv rw,user_id=0,group_id=0
121 29 0:53 / /scratch rw,relatime - nfs4 10.0.0.6:/export rw,vers=4.2
garbage
x 1 0:1 / /bad rw - ext4 /dev/x rw
130 29 0:54 / /nofs rw
`
	m := parseMountinfo(strings.NewReader(in))
	want := map[int]mount{22: {"/proc", "proc"}, 29: {"/", "ext4"}, 120: {"/mnt/my data", "fuse.sshfs"}, 121: {"/scratch", "nfs4"}}
	if len(m) != len(want) {
		t.Fatalf("parsed %+v", m)
	}
	for id, w := range want {
		if m[id] != w {
			t.Errorf("mount %d: %+v, want %+v", id, m[id], w)
		}
	}
	if !NetworkFS("fuse.sshfs") || !NetworkFS("nfs4") || NetworkFS("ext4") || NetworkFS("fuse.portal") {
		t.Error("network file systems misread")
	}
}

// TestFileLooksOfARealProcess: a real process that reads is looked at;
// a data file it opened since the look before counts, with its path
// (printable), its size and the file system /proc/PID/mountinfo names
// for it; a file it keeps reading does not count again, nor does a file
// it opened only to write.
func TestFileLooksOfARealProcess(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.bin"), filepath.Join(dir, "sample \x1b[31m 00042.bin")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, bytes.Repeat([]byte{7}, 3<<20), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Each line: "open PATH" (and read it whole, kept open), "write PATH"
	// (open to write, kept open) or "again" (read the first file again).
	script := `import sys
held = []
for line in sys.stdin:
    op, _, path = line.strip().partition(" ")
    if op == "open":
        held.append(open(path, "rb"))
        held[-1].read()
    elif op == "write":
        held.append(open(path, "wb"))
    if op in ("again", "write"):
        held[0].seek(0)
        held[0].read()
    print("ok", flush=True)
`
	cmd := exec.Command(py, "-c", script)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	r := bufio.NewReader(out)
	p := NewProc("/proc", ProcOptions{PID: cmd.Process.Pid})
	step := func(line string) *sample.FileLooks {
		t.Helper()
		if line != "" {
			fmt.Fprintln(in, line)
			if l, _ := r.ReadString('\n'); l != "ok\n" {
				t.Fatalf("child said %q", l)
			}
		}
		f := sample.Frame{Time: time.Now()}
		if err := p.Collect(context.Background(), &f); err != nil {
			t.Fatal(err)
		}
		return f.Procs.List[0].Files
	}
	if fl := step(""); fl != nil {
		t.Fatalf("looked at before any rate: %+v", fl)
	}
	// The first look's first listing is what is open, to tell new files
	// from: a, open already, is not new.
	if fl := step("open " + a); fl == nil || fl.Looks != 1 || fl.Opened != 0 {
		t.Fatalf("first look: %+v", fl)
	}
	fl := step("open " + b)
	if fl == nil || fl.Looks != 2 || fl.Opened != 1 || fl.Newest == nil {
		t.Fatalf("after opening a second file: %+v", fl)
	}
	of := fl.Newest
	if of.Path != sample.Printable(b) || strings.ContainsRune(of.Path, '\x1b') || of.Bytes != 3<<20 || of.SizeUnknown || fl.Sized != 1 || fl.MedianBytes == nil || *fl.MedianBytes != 3<<20 {
		t.Errorf("newest %+v, want %q of %d bytes", *of, sample.Printable(b), 3<<20)
	}
	if of.FS == "" || of.Mount == "" || of.Network != NetworkFS(of.FS) || !strings.HasPrefix(dir, of.Mount) {
		t.Errorf("file system %q at %q (network %v) for %s", of.FS, of.Mount, of.Network, dir)
	}
	t.Logf("newest %+v", *of)
	if fl := step("again"); fl == nil || fl.Looks != 3 || fl.Opened != 1 {
		t.Errorf("reading a held file again: %+v", fl)
	}
	if fl := step("write " + filepath.Join(dir, "out.bin")); fl == nil || fl.Looks != 4 || fl.Opened != 1 {
		t.Errorf("a file opened to write: %+v", fl)
	}
}

// BenchmarkReadOpenFile: one round of a look at a reading process's
// descriptors (this process's), with a data file new at every round, so
// that it is inspected each time: what a focused worker that reads costs
// a round at most (a tick's look is at most filesRounds of them).
func BenchmarkReadOpenFile(b *testing.B) {
	path := filepath.Join(b.TempDir(), "data.bin")
	if err := os.WriteFile(path, make([]byte, 1<<20), 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	p := NewProc("/proc", ProcOptions{PID: os.Getpid()})
	e := &procEntry{pid: os.Getpid(), files: &fileLook{prev: map[int]uint64{}}}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		clear(e.files.prev) // the file is new at every round
		fd, path := p.listFiles(e)
		if of, ok := p.inspect(e.pid, fd, path, now); !ok || of.Bytes != 1<<20 {
			b.Fatalf("the file was not found: %d %+v", fd, of)
		}
	}
}

// TestParseFdinfo: pos, flags (octal) and mnt_id are needed; ino is read
// where the kernel writes it (5.14 on), and lines after (locks, watches)
// do not matter.
func TestParseFdinfo(t *testing.T) {
	for _, c := range []struct {
		in   string
		want fdinfo
		ok   bool
	}{
		{"pos:\t4096\nflags:\t0100000\nmnt_id:\t23\nino:\t3\n", fdinfo{pos: 4096, flags: 0100000, mntID: 23, ino: 3}, true},
		{"pos:\t0\nflags:\t02\nmnt_id:\t7\n", fdinfo{flags: 02, mntID: 7}, true},         // before 5.14: no ino
		{"pos:\t0\nflags:\t08\nmnt_id:\t7\n", fdinfo{mntID: 7}, false},                   // 8 is no octal digit
		{"pos:\t0\nflags:\t0\n", fdinfo{mntID: -1}, false},                               // no mount
		{"pos:\t1\nflags:\t0\nmnt_id:\t-4\nino:\tx\n", fdinfo{pos: 1, mntID: -1}, false}, // junk
	} {
		got, ok := parseFdinfo([]byte(c.in))
		if ok != c.ok || ok && got != c.want {
			t.Errorf("%q: %+v %v, want %+v %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// FuzzParseFdinfo: any fdinfo parses without a panic, and one it accepts
// has a mount ID.
func FuzzParseFdinfo(f *testing.F) {
	f.Add([]byte("pos:\t4096\nflags:\t0100000\nmnt_id:\t23\nino:\t3\n"))
	f.Add([]byte("pos:\t0\nflags:\t02\nmnt_id:\t7\nlock:\t1: POSIX  ADVISORY  WRITE 1 00:05:3 0 EOF\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if info, ok := parseFdinfo(b); ok && info.mntID < 0 {
			t.Fatalf("%q: accepted with mount %d", b, info.mntID)
		}
	})
}

// Package rundir owns the private run folders (docs/security.md, issue 41
// item 1) of gpuwatch run, tune and sweep, which write the hook into a
// folder that goes first on the job's PYTHONPATH. It imports probes (for
// OwnedFolder) and never session.
//
// A process the job leaves behind (a nohup helper, a tensorboard) keeps
// that path after gpuwatch has removed the folder, and
// runs the sitecustomize.py it finds there in every Python it starts. So
// the folder's path must be one no other user can ever create: it lives
// under a parent of the user's own that persists and is checked (owner,
// mode, no symlink), never directly in /tmp:
//
//	$XDG_RUNTIME_DIR/gpuwatch/runs  (only the user may create under
//	                                 /run/user/UID, even after logout)
//	$XDG_CACHE_HOME/gpuwatch/runs   (else ~/.cache/gpuwatch/runs)
//
// Each folder records its owner (host, boot, pid and start time) in
// runOwnerFile; a folder whose owner is gone on this host — gpuwatch
// killed with SIGKILL — is removed at the next start.
package rundir

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gpuwatch/gpuwatch/probes"
)

// runOwnerFile holds "host boot_id pid starttime" of the gpuwatch that
// made a run folder.
const runOwnerFile = ".owner"

// maxSwept bounds the stale folders one start removes.
const maxSwept = 256

// New makes a fresh private folder (0700) for one run of kind
// ("run", "tune") under Parent, after removing the stale ones there.
// The caller removes it when done.
func New(kind string) (string, error) {
	parent, err := Parent()
	if err != nil {
		return "", err
	}
	Sweep(parent, "/proc")
	dir, err := os.MkdirTemp(parent, kind+"-")
	if err != nil {
		return "", fmt.Errorf("a folder for the hook: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, runOwnerFile), []byte(ownerLine(os.Getpid())), 0o600); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("a folder for the hook: %w", err)
	}
	return dir, nil
}

// Parent is the private folder run folders go in, created if needed:
// under $XDG_RUNTIME_DIR when it is set and the user's own, else under the
// user's cache folder. Never a path another user could create first.
func Parent() (string, error) {
	var tried []string
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		if err := probes.OwnedFolder(d, 0o022); err == nil {
			p, err := privateChain(d, "gpuwatch", "runs")
			if err == nil {
				return p, nil
			}
			tried = append(tried, err.Error())
		} else {
			tried = append(tried, "XDG_RUNTIME_DIR: "+err.Error())
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		tried = append(tried, err.Error())
		return "", fmt.Errorf("no private folder for the hook (%s): set XDG_RUNTIME_DIR or HOME to a folder of yours", strings.Join(tried, "; "))
	}
	if err := os.MkdirAll(cache, 0o700); err != nil {
		return "", fmt.Errorf("no private folder for the hook: %w", err)
	}
	// A cache folder writable by the user's own group (umask 002 with a
	// group per user) is still the user's; by anyone else it is not.
	forbidden := fs.FileMode(0o022)
	if st, err := os.Lstat(cache); err == nil {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Gid) == os.Getegid() {
			forbidden = 0o002
		}
	}
	if err := probes.OwnedFolder(cache, forbidden); err != nil {
		tried = append(tried, err.Error())
		return "", fmt.Errorf("no private folder for the hook (%s): set XDG_RUNTIME_DIR or XDG_CACHE_HOME to a folder of yours", strings.Join(tried, "; "))
	}
	return privateChain(cache, "gpuwatch", "runs")
}

// privateChain makes base/names… one by one (0700) and checks each: a
// folder of this user's that nobody else may write to, not a symlink.
func privateChain(base string, names ...string) (string, error) {
	p := base
	for _, n := range names {
		p = filepath.Join(p, n)
		if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", err
		}
		if err := probes.OwnedFolder(p, 0o022); err != nil {
			return "", err
		}
	}
	return p, nil
}

// ownerLine is the run folder's owner record for pid: "host boot pid start".
func ownerLine(pid int) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s %s %d %d\n", fieldSafe(host), bootID(), pid, startTime("/proc", pid))
}

func fieldSafe(s string) string {
	if s == "" {
		return "-"
	}
	return strings.Map(func(r rune) rune {
		if r <= ' ' || r > '~' {
			return '_'
		}
		return r
	}, s)
}

// bootID is this boot's identifier (proc(5): /proc/sys/kernel/random/boot_id),
// "-" when it cannot be read.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "-"
	}
	return fieldSafe(strings.TrimSpace(string(b)))
}

// startTime is a process's start time (column 22 of /proc/PID/stat, in
// clock ticks since boot; proc(5)), 0 when it cannot be read: with the
// PID, it tells the owner from a process that reused its PID.
func startTime(procRoot string, pid int) uint64 {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

// Sweep removes the run folders in parent whose owner is gone: made
// on this host in this boot by a process that no longer runs (or whose
// PID another process now has), or made in an earlier boot of this host.
// Folders of other hosts (a home folder shared over NFS) are left alone,
// and so is one whose owner record cannot be read while it is younger
// than an hour (it is being made). It returns how many it removed.
func Sweep(parent, procRoot string) int {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return 0
	}
	host, _ := os.Hostname()
	host, boot := fieldSafe(host), bootID()
	removed := 0
	for _, e := range entries {
		if removed >= maxSwept {
			break
		}
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		if !staleRunDir(dir, host, boot, procRoot) {
			continue
		}
		if os.RemoveAll(dir) == nil {
			removed++
		}
	}
	return removed
}

// staleRunDir says whether dir's owner, as its record says, is gone.
func staleRunDir(dir, host, boot, procRoot string) bool {
	b, err := os.ReadFile(filepath.Join(dir, runOwnerFile))
	if err != nil || len(b) > 4096 {
		st, serr := os.Lstat(dir)
		return serr == nil && time.Since(st.ModTime()) > time.Hour
	}
	f := strings.Fields(string(b))
	if len(f) != 4 || f[0] != host {
		return false // another host's, or not ours to judge
	}
	if f[1] != boot {
		return true // made before this boot: its owner cannot run
	}
	pid, err := strconv.Atoi(f[2])
	if err != nil || pid <= 0 {
		return false
	}
	start, _ := strconv.ParseUint(f[3], 10, 64)
	now := startTime(procRoot, pid)
	return now == 0 || (start != 0 && now != start)
}

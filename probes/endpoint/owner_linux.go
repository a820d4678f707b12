//go:build linux

package endpoint

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gpuwatch/gpuwatch/probes"
)

// maxProvedFDs bounds the descriptors listed to find a process's sockets.
const maxProvedFDs = 1 << 16

// proveListener proves that process pid of user uid holds every socket
// listening on procRoot's tables that would take a connection to
// host:port (pid 0: that user holds them, whichever process). The tables
// are those of gpuwatch's own network namespace (procRoot/net is
// /proc/self/net), the one its connection is made in. The error wraps
// ErrNotProven, or probes.ErrUnavailable when the tables cannot be read.
func proveListener(procRoot string, pid, uid int, host netip.Addr, port uint16) error {
	where := netip.AddrPortFrom(host, port).String()
	p := proof{pid: pid, uid: uid}
	ls, found, err := listenersOn(procRoot, host, port)
	if err != nil {
		return fmt.Errorf("%w: %v", probes.ErrUnavailable, err)
	}
	if !found {
		return fmt.Errorf("%w: no /proc/net/tcp to tell who listens on %s", probes.ErrUnavailable, where)
	}
	p.listeners = ls
	if pid > 0 && len(p.listeners) > 0 {
		uids, err := processUIDs(procRoot, pid)
		if err != nil {
			return fmt.Errorf("%w: pid %d: %v", ErrNotProven, pid, err)
		}
		p.procUIDs = uids
		if uids[0] == uid && uids[1] == uid {
			if p.sockets, err = socketInodes(procRoot, pid); err != nil {
				return fmt.Errorf("%w: cannot read pid %d's descriptors (%v)", ErrNotProven, pid, err)
			}
		}
	}
	return decideProof(p, where)
}

// processUIDs is the process's real and effective uid (proc(5): the Uid
// line of /proc/PID/status).
func processUIDs(procRoot string, pid int) ([]int, error) {
	f, err := os.Open(filepath.Join(procRoot, strconv.Itoa(pid), "status"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errors.New("the process is gone")
		}
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "Uid:")
		if !ok {
			continue
		}
		ff := strings.Fields(rest)
		if len(ff) < 2 {
			break
		}
		var uids []int
		for _, s := range ff[:2] {
			u, err := strconv.Atoi(s)
			if err != nil {
				return nil, fmt.Errorf("status: uid %q", s)
			}
			uids = append(uids, u)
		}
		return uids, nil
	}
	return nil, errors.New("status has no Uid line")
}

// socketInodes are the inodes of the sockets process pid holds: its
// /proc/PID/fd links that read socket:[INODE].
func socketInodes(procRoot string, pid int) (map[uint64]bool, error) {
	dir := filepath.Join(procRoot, strconv.Itoa(pid), "fd")
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	names, err := f.Readdirnames(maxProvedFDs)
	f.Close()
	if err != nil && len(names) == 0 {
		return nil, err
	}
	out := map[uint64]bool{}
	for _, n := range names {
		link, err := os.Readlink(filepath.Join(dir, n))
		if err != nil {
			continue // closed since the listing
		}
		if s, ok := strings.CutPrefix(link, "socket:["); ok {
			if ino, err := strconv.ParseUint(strings.TrimSuffix(s, "]"), 10, 64); err == nil {
				out[ino] = true
			}
		}
	}
	return out, nil
}

// pidHolds says whether process pid holds the socket listening on
// procRoot's tables that takes a connection to host:port (the address
// the connection was made to, and so a local one). At most maxProvedFDs
// descriptors are read. A cannot-tell (no table, no listener, unreadable
// descriptors) carries its reason.
func pidHolds(procRoot string, pid int, host netip.Addr, port uint16) (holding, string) {
	where := netip.AddrPortFrom(host, port).String()
	ls, found, err := listenersOn(procRoot, host, port)
	if err != nil {
		return holdCannotTell, err.Error()
	}
	if !found {
		return holdCannotTell, "no /proc/net/tcp to tell who listens on " + where
	}
	if len(ls) == 0 {
		return decideHolding(nil, nil, nil, false, where)
	}
	sockets, err := socketInodes(procRoot, pid)
	gone := err != nil && errors.Is(err, fs.ErrNotExist)
	if gone {
		err = nil
	}
	return decideHolding(ls, sockets, err, gone, where)
}

package endpoint

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
)

// A loader's identity (issue 57 item 1): before gpuwatch sends a loader
// anything — its token above all — it proves that the process the
// announcement names holds the socket listening on the announced port, and
// that this process is the announcement's user's. A PID can be reused and
// a port taken by anyone once the loader is gone (killed with -9, its
// announcement left behind); the kernel's own tables cannot be forged.

// ErrNotProven marks a listener that is not the announced loader's: no one
// listens, another process or user holds the port, or the process is not
// the announcement's user's. gpuwatch neither connects to it nor sends it
// a token.
var ErrNotProven = errors.New("not proven")

// tcpListen is the state of a listening socket in /proc/net/tcp
// (include/net/tcp_states.h: TCP_LISTEN = 10).
const tcpListen = 0x0A

// maxNetTCPLines bounds one read of /proc/net/tcp or tcp6: a busy box has
// many connections, the listeners among them are few.
const maxNetTCPLines = 1 << 20

// listener is one listening socket of /proc/net/tcp or tcp6.
type listener struct {
	Addr  netip.Addr
	Port  uint16
	UID   int
	Inode uint64
}

// anyPort asks parseListeners for the listeners on every port (none
// listens on port 0).
const anyPort = 0

// parseListeners reads /proc/net/tcp or /proc/net/tcp6 (proc_net_tcp(5)):
// the listening sockets on port (anyPort: on every port). Each line is
//
//	sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode …
//
// where an address is the kernel's __be32 words, each printed as a
// native-endian %08X (so 127.0.0.1 reads 0100007F on x86), then :PORT in
// hex. A line that is not of that shape is an error: the file is the
// kernel's, and a parse that guessed could prove the wrong socket.
func parseListeners(r io.Reader, port uint16) ([]listener, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 512), 4096)
	var out []listener
	for n := 0; sc.Scan(); n++ {
		if n == 0 {
			continue // the header
		}
		if n > maxNetTCPLines {
			return out, errors.New("more lines than a socket table has")
		}
		f := strings.Fields(sc.Text())
		if len(f) < 10 {
			return nil, fmt.Errorf("line %d: %d fields, want at least 10", n+1, len(f))
		}
		st, err := strconv.ParseUint(f[3], 16, 8)
		if err != nil {
			return nil, fmt.Errorf("line %d: state %q", n+1, f[3])
		}
		addr, p, err := parseSockAddr(f[1])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n+1, err)
		}
		if st != tcpListen || (p != port && port != anyPort) {
			continue
		}
		uid, err := strconv.ParseUint(f[7], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("line %d: uid %q", n+1, f[7])
		}
		inode, err := strconv.ParseUint(f[9], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: inode %q", n+1, f[9])
		}
		out = append(out, listener{Addr: addr, Port: p, UID: int(uid), Inode: inode})
	}
	return out, sc.Err()
}

// parseSockAddr reads ADDR:PORT as /proc/net/tcp prints it: 8 hex digits
// (IPv4) or 32 (IPv6), each 32-bit word in the host's byte order.
func parseSockAddr(s string) (netip.Addr, uint16, error) {
	a, p, ok := strings.Cut(s, ":")
	if !ok || (len(a) != 8 && len(a) != 32) || len(p) != 4 {
		return netip.Addr{}, 0, fmt.Errorf("address %q", s)
	}
	raw, err := hex.DecodeString(a)
	if err != nil {
		return netip.Addr{}, 0, fmt.Errorf("address %q", s)
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.Addr{}, 0, fmt.Errorf("port %q", s)
	}
	b := make([]byte, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(b[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	addr, _ := netip.AddrFromSlice(b)
	return addr, uint16(port), nil
}

// takes says whether a socket listening on l takes a connection to host
// (same port): the same address, or the wildcard of its family — and an
// IPv6 wildcard takes IPv4 too unless it is IPV6_V6ONLY, which the table
// does not say, so it counts.
func (l listener) takes(host netip.Addr) bool {
	la := l.Addr.Unmap()
	switch {
	case la == host.Unmap():
		return true
	case l.Addr.IsUnspecified():
		return l.Addr.Is6() || host.Unmap().Is4()
	}
	return false
}

// proof is what proving a listener needs, read from /proc: the
// listeners, the process's uids, its sockets. Kept apart from the reading
// so that the rule is one pure function (decideProof) tested on its own.
type proof struct {
	listeners []listener // on the port, taking the host
	pid       int        // 0: no process announced; the owner's uid alone is checked
	uid       int        // the user the listener must be
	procUIDs  []int      // the process's real and effective uid (pid > 0)
	sockets   map[uint64]bool
}

// decideProof is the rule: something listens; every listener that would
// take the connection is the user's; with a PID, the process is the user's
// (real and effective uid) and holds each of those sockets. Every listener
// counts, not one: with two (an IPv4 and an IPv6 wildcard) the kernel, not
// gpuwatch, picks the one that answers.
func decideProof(p proof, where string) error {
	if len(p.listeners) == 0 {
		return fmt.Errorf("%w: nothing listens on %s", ErrNotProven, where)
	}
	for _, l := range p.listeners {
		if l.UID != p.uid {
			return fmt.Errorf("%w: the socket listening on %s is user %d's, not user %d's", ErrNotProven, where, l.UID, p.uid)
		}
	}
	if p.pid == 0 {
		return nil
	}
	for _, u := range p.procUIDs {
		if u != p.uid {
			return fmt.Errorf("%w: pid %d is user %d's, not user %d's", ErrNotProven, p.pid, u, p.uid)
		}
	}
	for _, l := range p.listeners {
		if !p.sockets[l.Inode] {
			return fmt.Errorf("%w: the socket listening on %s is not pid %d's", ErrNotProven, where, p.pid)
		}
	}
	return nil
}

// The pid a loader reports (issue 54 item 2). gpuwatch_loader_info's pid
// label becomes the watched training process: its CPU, threads, cgroup and
// job. Anyone may serve /metrics on a free port and name any PID, so the
// pid is trusted only when that process holds the socket that listens on
// the loader's port (pidHolds); the check is made once per connected
// address and pid (Attach.checkPID), not every frame.

// holding is what pidHolds found.
type holding int

const (
	holdCannotTell holding = iota // the reason says why; the pid is kept, said unverified
	holdOwns                      // the process holds every socket listening there
	holdNotOwns                   // it does not: the pid is not used
)

// decideHolding is pidHolds's rule: the listeners on the port that take
// the connection (from the tables), and the process's socket inodes (nil
// when its descriptors could not be read: fdErr says why, gone says the
// process is not there). Every listener that would take the connection
// must be the process's: with two (an IPv4 and an IPv6 wildcard) the
// kernel picks which answers.
func decideHolding(listeners []listener, sockets map[uint64]bool, fdErr error, gone bool, where string) (holding, string) {
	switch {
	case len(listeners) == 0:
		return holdCannotTell, "no socket listens on " + where + " in /proc/net/tcp or tcp6"
	case gone:
		return holdNotOwns, "the process is gone"
	case fdErr != nil:
		return holdCannotTell, "its descriptors cannot be read (" + fdErr.Error() + "): another user's process, and gpuwatch is not root"
	}
	for _, l := range listeners {
		if !sockets[l.Inode] {
			return holdNotOwns, "that process does not hold its port"
		}
	}
	return holdOwns, ""
}

//go:build linux

package peeruid

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Lookup is the uid of the socket at peer connected to local, on this
// machine, in gpuwatch's own network namespace: an accepted connection's
// remote and local addresses. It asks sock_diag for that one socket (a hash
// lookup in the kernel, a few microseconds however many sockets there are);
// where the netlink socket cannot be made it reads /proc/net/tcp and tcp6,
// whose cost grows with the table (BenchmarkLookup). The error wraps
// ErrUnknown.
func Lookup(local, peer netip.AddrPort) (uint32, error) {
	uid, err := sockDiag(local, peer)
	if !errors.Is(err, errNoNetlink) {
		return uid, err
	}
	return procNetTCP("/proc/self/net", local, peer)
}

var errNoNetlink = errors.New("no sock_diag")

// procNetTCP finds the peer's row in procNet's tcp (an IPv4 client), then
// tcp6 (an IPv6 client, or a dual-stack one connected to a v4 address).
func procNetTCP(procNet string, local, peer netip.AddrPort) (uint32, error) {
	var last error = ErrUnknown
	for _, t := range []struct {
		name string
		v6   bool
	}{{"tcp", false}, {"tcp6", true}} {
		if !t.v6 && !peer.Addr().Unmap().Is4() {
			continue
		}
		table, err := os.ReadFile(procNet + "/" + t.name)
		if err != nil {
			last = fmt.Errorf("%w: %v", ErrUnknown, err)
			continue
		}
		uid, err := ownerUID(table, peer, local, t.v6)
		if err != ErrUnknown { // the row, or why its uid is not the owner's
			return uid, err
		}
	}
	return 0, last
}

// inet_diag's request and answer (linux/inet_diag.h): struct
// inet_diag_req_v2 is 56 bytes, its struct inet_diag_sockid at offset 8;
// struct inet_diag_msg has the state at 1 and the uid at 64.
const (
	reqLen     = unix.SizeofNlMsghdr + 56
	msgUIDAt   = 64
	msgStateAt = 1
)

// diag is the one netlink socket the look-ups share (-1: none yet, or
// closed after an error); seq numbers its requests, so that an answer is
// only ever read for its own request.
var diag = struct {
	sync.Mutex
	fd  int
	seq uint32
}{fd: -1}

// sockDiag asks NETLINK_SOCK_DIAG for the one TCP socket whose source is
// peer and destination local (no NLM_F_DUMP: the kernel looks it up by its
// four-tuple, inet_diag_find_one_icsk, and answers before sendto returns).
func sockDiag(local, peer netip.AddrPort) (uint32, error) {
	diag.Lock()
	defer diag.Unlock()
	if diag.fd < 0 {
		fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_INET_DIAG)
		if err != nil {
			return 0, fmt.Errorf("%w: %v", errNoNetlink, err)
		}
		diag.fd = fd
	}
	diag.seq++
	if err := unix.Sendto(diag.fd, diagRequest(local, peer, diag.seq), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(diag.fd)
		diag.fd = -1
		return 0, fmt.Errorf("%w: %v", errNoNetlink, err)
	}
	var buf [512]byte
	for {
		n, _, err := unix.Recvfrom(diag.fd, buf[:], unix.MSG_DONTWAIT)
		if err != nil {
			unix.Close(diag.fd) // what is left in it is no one's
			diag.fd = -1
			return 0, fmt.Errorf("%w: sock_diag: %v", ErrUnknown, err)
		}
		if n >= unix.SizeofNlMsghdr && binary.NativeEndian.Uint32(buf[8:]) == diag.seq {
			return diagAnswer(buf[:n])
		}
	}
}

// diagRequest is one SOCK_DIAG_BY_FAMILY request for the socket peer → local.
func diagRequest(local, peer netip.AddrPort, seq uint32) []byte {
	b := make([]byte, reqLen)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], reqLen)
	ne.PutUint16(b[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(b[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(b[8:], seq)
	r := b[unix.SizeofNlMsghdr:]
	r[0], r[1] = unix.AF_INET, unix.IPPROTO_TCP
	src, dst := peer.Addr().Unmap(), local.Addr().Unmap()
	if !src.Is4() || !dst.Is4() {
		r[0], src, dst = unix.AF_INET6, peer.Addr(), local.Addr()
	}
	ne.PutUint32(r[4:], ^uint32(0)) // every state
	id := r[8:]
	binary.BigEndian.PutUint16(id[0:], peer.Port())
	binary.BigEndian.PutUint16(id[2:], local.Port())
	copy(id[4:20], src.AsSlice())
	copy(id[20:36], dst.AsSlice())
	ne.PutUint32(id[40:], ^uint32(0)) // INET_DIAG_NOCOOKIE
	ne.PutUint32(id[44:], ^uint32(0))
	return b
}

// diagAnswer reads the kernel's answer: an inet_diag_msg, or an error.
func diagAnswer(b []byte) (uint32, error) {
	ne := binary.NativeEndian
	if len(b) < unix.SizeofNlMsghdr {
		return 0, fmt.Errorf("%w: sock_diag: a short answer", ErrUnknown)
	}
	body := b[unix.SizeofNlMsghdr:]
	switch ne.Uint16(b[4:]) {
	case unix.NLMSG_ERROR:
		if len(body) >= 4 {
			if e := unix.Errno(-int32(ne.Uint32(body))); e != 0 {
				return 0, fmt.Errorf("%w: sock_diag: %v", ErrUnknown, e)
			}
		}
		return 0, fmt.Errorf("%w: sock_diag: an error", ErrUnknown)
	case unix.SOCK_DIAG_BY_FAMILY:
		if len(body) < msgUIDAt+4 {
			return 0, fmt.Errorf("%w: sock_diag: a short message", ErrUnknown)
		}
		return trusted(body[msgStateAt], ne.Uint32(body[msgUIDAt:]))
	}
	return 0, fmt.Errorf("%w: sock_diag: message type %d", ErrUnknown, ne.Uint16(b[4:]))
}

// Package peeruid tells which local user holds the other end of a TCP
// connection made on this machine: the uid of the peer's socket, read from
// the kernel (sock_diag, or the socket's row in /proc/net/tcp and tcp6).
// serve shares its connection slots by it (issue 57, item 4): on loopback
// every local client has the address 127.0.0.1, and a user is what one
// client is.
package peeruid

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
)

// ErrUnknown: the peer's uid cannot be told (no such socket, a socket
// that has closed, or tables that cannot be read).
var ErrUnknown = errors.New("the peer's user is not known")

// Kernel TCP states (include/net/tcp_states.h) whose uid column is not a
// user's: a TIME_WAIT or NEW_SYN_RECV mini-socket prints 0, which is
// root's uid, not its owner's.
const (
	stateTimeWait   = 0x06
	stateListen     = 0x0A
	stateNewSynRecv = 0x0C
)

// ownerUID is the uid of the socket whose local address is peer and whose
// remote address is local (the client's socket of a connection we
// accepted: its local end is our remote one), read from the text of
// /proc/net/tcp or tcp6 (proc_net_tcp(5)):
//
//	sl local_address rem_address st tx:rx tr:when retrnsmt uid …
//
// Only that row is parsed: the table is scanned for its two addresses,
// which is what makes a large table cheap to search.
func ownerUID(table []byte, peer, local netip.AddrPort, v6 bool) (uint32, error) {
	needle := make([]byte, 0, 96)
	needle = append(needle, ": "...)
	needle = appendSockAddr(needle, peer, v6)
	needle = append(needle, ' ')
	needle = appendSockAddr(needle, local, v6)
	needle = append(needle, ' ')
	i := bytes.Index(table, needle)
	if i < 0 {
		return 0, ErrUnknown
	}
	rest := table[i+len(needle):]
	if j := bytes.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	f := bytes.Fields(rest) // st tx:rx tr:when retrnsmt uid …
	if len(f) < 5 {
		return 0, fmt.Errorf("%w: a row of %d fields", ErrUnknown, len(f)+2)
	}
	st, err := strconv.ParseUint(string(f[0]), 16, 8)
	if err != nil {
		return 0, fmt.Errorf("%w: state %q", ErrUnknown, f[0])
	}
	uid, err := strconv.ParseUint(string(f[4]), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: uid %q", ErrUnknown, f[4])
	}
	return trusted(uint8(st), uint32(uid))
}

// trusted is uid unless the socket's state is one whose uid is not its
// owner's.
func trusted(state uint8, uid uint32) (uint32, error) {
	switch state {
	case stateTimeWait, stateListen, stateNewSynRecv:
		return 0, fmt.Errorf("%w: the socket is in state %02X", ErrUnknown, state)
	}
	return uid, nil
}

// appendSockAddr writes a as /proc/net/tcp prints it: the address's 32-bit
// words, each as the host reads it in %08X (127.0.0.1 is 0100007F on
// x86), then :PORT in %04X. An IPv4 address in tcp6 is v4-mapped.
func appendSockAddr(b []byte, a netip.AddrPort, v6 bool) []byte {
	var raw []byte
	if ip := a.Addr().Unmap(); ip.Is4() && !v6 {
		r := ip.As4()
		raw = r[:]
	} else {
		r := a.Addr().As16()
		raw = r[:]
	}
	const hexd = "0123456789ABCDEF"
	for i := 0; i < len(raw); i += 4 {
		w := binary.NativeEndian.Uint32(raw[i:])
		for s := 28; s >= 0; s -= 4 {
			b = append(b, hexd[(w>>s)&0xF])
		}
	}
	b = append(b, ':')
	p := a.Port()
	for s := 12; s >= 0; s -= 4 {
		b = append(b, hexd[(p>>s)&0xF])
	}
	return b
}

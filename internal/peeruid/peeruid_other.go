//go:build !linux

package peeruid

import "net/netip"

// Lookup cannot tell a peer's user on other systems than Linux.
func Lookup(local, peer netip.AddrPort) (uint32, error) { return 0, ErrUnknown }

// Package testnet holds what tests of several packages need of the
// network. Only tests import it.
package testnet

import (
	"fmt"
	"syscall"
	"testing"
)

// RefusedAddr is a loopback address that refuses connections for the whole
// test: a socket bound to its port that does not listen. A port taken from
// a listener and closed could be handed to the next server the test
// starts (a TLS server's "400 Bad Request" once answered where "connection
// refused" was wanted); a bound port is nobody else's until the test ends.
func RefusedAddr(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	in, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		t.Fatalf("bound to %v", sa)
	}
	return fmt.Sprintf("127.0.0.1:%d", in.Port)
}

//go:build linux

package peeruid

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"testing"
)

// pair is a loopback connection: the accepted end's local and remote
// addresses, as serve sees them.
func pair(t testing.TB, network, addr string) (local, peer netip.AddrPort) {
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { ln.Close() })
	c, err := net.Dial(network, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.LocalAddr().(*net.TCPAddr).AddrPort(), s.RemoteAddr().(*net.TCPAddr).AddrPort()
}

// TestLookupOnThisMachine: both ways find this process's uid for a real
// loopback connection, IPv4 and IPv6, and nothing for a port no one uses.
func TestLookupOnThisMachine(t *testing.T) {
	me := uint32(os.Getuid())
	for _, a := range []struct{ network, addr string }{{"tcp4", "127.0.0.1:0"}, {"tcp6", "[::1]:0"}} {
		local, peer := pair(t, a.network, a.addr)
		if uid, err := sockDiag(local, peer); err != nil || uid != me {
			t.Errorf("%s sock_diag: %d, %v; want %d", a.network, uid, err, me)
		}
		if uid, err := procNetTCP("/proc/self/net", local, peer); err != nil || uid != me {
			t.Errorf("%s /proc/net: %d, %v; want %d", a.network, uid, err, me)
		}
		if uid, err := Lookup(local, peer); err != nil || uid != me {
			t.Errorf("%s Lookup: %d, %v; want %d", a.network, uid, err, me)
		}
		gone := netip.AddrPortFrom(peer.Addr(), 1)
		if _, err := Lookup(local, gone); err == nil {
			t.Errorf("%s: a uid for a socket that is not there", a.network)
		}
	}
}

// TestDiagAnswer: an established socket's uid is read from sock_diag's
// answer; a TIME_WAIT one's (0) and a short answer are not.
func TestDiagAnswer(t *testing.T) {
	msg := make([]byte, 16+72)
	msg[4] = 20 // SOCK_DIAG_BY_FAMILY
	msg[16+1] = 1
	msg[16+64], msg[16+65] = 0xFE, 0xFF // uid 65534, little-endian
	if runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64" {
		if uid, err := diagAnswer(msg); err != nil || uid != 65534 {
			t.Errorf("an established socket: %d, %v", uid, err)
		}
	}
	msg[16+1] = stateTimeWait
	if _, err := diagAnswer(msg); !errors.Is(err, ErrUnknown) {
		t.Errorf("a TIME_WAIT socket's uid was taken: %v", err)
	}
	if _, err := diagAnswer(msg[:20]); !errors.Is(err, ErrUnknown) {
		t.Errorf("a short answer: %v", err)
	}
}

// BenchmarkLookup is the cost of one connection's key: sock_diag, and the
// /proc/net/tcp read (with the table's rows), with this machine's table
// and with 2,000 more sockets open beside it.
func BenchmarkLookup(b *testing.B) {
	local, peer := pair(b, "tcp4", "127.0.0.1:0")
	run := func(b *testing.B) {
		b.Run("sock_diag", func(b *testing.B) {
			for b.Loop() {
				if _, err := sockDiag(local, peer); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("proc_net_tcp", func(b *testing.B) {
			for b.Loop() {
				if _, err := procNetTCP("/proc/self/net", local, peer); err != nil {
					b.Fatal(err)
				}
			}
			if t, err := os.ReadFile("/proc/self/net/tcp"); err == nil {
				b.ReportMetric(float64(bytes.Count(t, []byte("\n"))-1), "rows")
			}
		})
	}
	b.Run("table=this", run)
	for range 1000 {
		pair(b, "tcp4", "127.0.0.1:0") // two rows each
	}
	b.Run(fmt.Sprintf("table=+%d", 2000), run)
}

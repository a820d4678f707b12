package exporter

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"
)

// TestKeyFor: a client on this machine is the uid holding its socket, on
// any loopback address or the server's own; a client elsewhere, or one
// whose uid cannot be read, is its address, and its uid is not looked up.
func TestKeyFor(t *testing.T) {
	lookups := 0
	uid := func(netip.AddrPort, netip.AddrPort) (uint32, error) { lookups++; return 65534, nil }
	unknown := func(netip.AddrPort, netip.AddrPort) (uint32, error) { lookups++; return 0, errors.New("gone") }
	ap := netip.MustParseAddrPort
	cases := []struct {
		local, remote string
		lookup        func(netip.AddrPort, netip.AddrPort) (uint32, error)
		want          string
		looked        int
	}{
		{"127.0.0.1:9400", "127.0.0.1:40000", uid, "uid 65534", 1},
		{"127.0.0.1:9400", "127.0.0.2:40000", uid, "uid 65534", 1},
		{"[::1]:9400", "[::1]:40000", uid, "uid 65534", 1},
		{"[::ffff:127.0.0.1]:9400", "[::ffff:127.0.0.1]:40000", uid, "uid 65534", 1},
		{"10.1.2.4:9400", "10.1.2.4:40000", uid, "uid 65534", 1},
		{"127.0.0.1:9400", "127.0.0.1:40000", unknown, "127.0.0.1", 1},
		{"10.1.2.4:9400", "10.1.2.3:40000", uid, "10.1.2.3", 0},
		{"[::]:9400", "[::ffff:10.1.2.3]:40000", uid, "10.1.2.3", 0},
	}
	for _, c := range cases {
		lookups = 0
		if got := keyFor(ap(c.local), ap(c.remote), c.lookup); got != c.want || lookups != c.looked {
			t.Errorf("%s → %s: %q after %d look-ups, want %q after %d", c.remote, c.local, got, lookups, c.want, c.looked)
		}
	}
}

// TestPeerKeyOnThisMachine: this process's connections, from 127.0.0.1
// and from 127.0.0.2, are one peer, its user.
func TestPeerKeyOnThisMachine(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	want := fmt.Sprintf("uid %d", os.Getuid())
	for _, from := range []string{"127.0.0.1", "127.0.0.2"} {
		c, err := dialFrom(from, ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if got := peerKey(s); got != want {
			t.Errorf("from %s: %q, want %q", from, got, want)
		}
	}
}

// TestServeSharesSlotsByUser: one user's connections count together
// whatever loopback address they come from: past PerHost from 127.0.0.1,
// one from 127.0.0.2 is closed at once too.
func TestServeSharesSlotsByUser(t *testing.T) {
	l := noRate(DefaultLimits())
	l.PerHost = 4
	addr := serveKeyed(t, &l, peerKey)
	for range 4 {
		c, err := dialFrom("127.0.0.1", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	time.Sleep(100 * time.Millisecond) // the server has accepted the four
	if err := scrapeFrom("127.0.0.2", addr); err == nil {
		t.Fatal("a fifth connection of the same user, from 127.0.0.2, was served")
	}
}

// TestAdmitIsATokenBucket: a peer has AcceptBurst accepts at once and
// AcceptRate a second after; peers do not share; the buckets kept are
// bounded.
func TestAdmitIsATokenBucket(t *testing.T) {
	l := LimitListener(nil, Limits{AcceptRate: 2, AcceptBurst: 3}).(*limitListener)
	t0 := time.Unix(1e9, 0)
	var got []bool
	for _, at := range []time.Duration{0, 0, 0, 0, 100 * time.Millisecond, 500 * time.Millisecond, 600 * time.Millisecond} {
		got = append(got, l.admit("uid 65534", t0.Add(at)))
	}
	if want := []bool{true, true, true, false, false, true, false}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("one peer: %v, want %v", got, want)
	}
	if !l.admit("uid 0", t0.Add(600*time.Millisecond)) {
		t.Error("another peer was refused beside a storm")
	}
	for i := range 3 * maxBuckets {
		l.admit(fmt.Sprint("10.0.", i/256, ".", i%256), t0.Add(time.Hour))
	}
	if len(l.buckets) > maxBuckets {
		t.Errorf("%d buckets kept, want at most %d", len(l.buckets), maxBuckets)
	}
}

// TestAReconnectStormIsRefused: a peer opening connections as fast as it
// can has those past its rate closed at once, and a scrape of another
// peer meanwhile is served.
func TestAReconnectStormIsRefused(t *testing.T) {
	l := DefaultLimits()
	addr := serveOn(t, &l)
	refused := 0
	for range 200 {
		c, err := dialFrom("127.0.0.1", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		if n, _ := c.Read(make([]byte, 12)); n == 0 {
			refused++
		}
		c.Close()
	}
	// 32 at once and 16 a second: the 200 take well under 10 s here.
	if refused < 100 {
		t.Errorf("%d of 200 connections of a storm refused, want most", refused)
	}
	if err := scrapeFrom("127.0.0.2", addr); err != nil {
		t.Fatalf("a scrape of another peer during the storm: %v", err)
	}
}

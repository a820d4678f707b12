package exporter

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/peeruid"
)

// Limits bound what clients of gpuwatch serve may hold: connections
// (in all, and from one peer), how fast one peer may open them, and how
// long a connection may sit idle, take to send its request, or take to
// read the answer. Without them one client held 2,300 idle connections
// past 40 s, RSS went from 24 to 114 MB, and a real scrape's p50 from 5 ms
// to 0.64 s (issue 41, item 12).
//
// A peer is a local user where the connection comes from this machine
// (loopback, or the machine's own address: the uid holding the client's
// socket, from the kernel) and a remote address otherwise, or where the
// uid cannot be read (issue 57, item 4: on loopback every local client is
// 127.0.0.1, and one user's 16 idle connections kept every other user's
// scrapes out).
type Limits struct {
	// MaxConns caps the connections open at once; past it new ones wait
	// in the kernel's accept queue until one closes. PerHost caps those
	// of one peer; past it a new one is closed at once.
	MaxConns, PerHost int
	// AcceptRate is the new connections a second one peer may open, with
	// AcceptBurst at once; past them a new one is closed at once, unread
	// (a reconnect storm costs an accept, a look-up and a close each).
	AcceptRate  float64
	AcceptBurst int
	// ReadHeaderTimeout bounds sending the request's headers, ReadTimeout
	// the whole request, WriteTimeout the answer, and IdleTimeout a
	// kept-alive connection between requests.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
}

// DefaultLimits are serve's: 64 connections, 16 from one peer (a
// Prometheus pair and a person with curl need a handful), 32 new
// connections at once and 16 a second from one peer (Prometheus opens one
// a scrape at most), 5 s to send the headers and 10 s the request, 30 s to
// read a scrape (a 256-core, 8-GPU node's is under 200 KiB), and a
// kept-alive connection closed after 30 s idle (Prometheus scrapes every
// 15 s to 1 min; a new connection then costs one handshake on loopback or
// a LAN).
func DefaultLimits() Limits {
	return Limits{MaxConns: 64, PerHost: 16, AcceptRate: 16, AcceptBurst: 32,
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 30 * time.Second}
}

// NewServer is an HTTP server for h with l's timeouts and 16 KiB of
// headers at most. Serve it on LimitListener(ln, l).
func NewServer(h http.Handler, l Limits) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: l.ReadHeaderTimeout, ReadTimeout: l.ReadTimeout,
		WriteTimeout: l.WriteTimeout, IdleTimeout: l.IdleTimeout, MaxHeaderBytes: 16 << 10}
}

// LimitListener caps ln's open connections at l.MaxConns (Accept waits for
// a free one, as golang.org/x/net/netutil's LimitListener does), at
// l.PerHost from one peer, and one peer's new connections at l.AcceptRate
// a second (a connection past either is closed at once, so that one
// client cannot take every slot, nor the server's time). A limit ≤ 0 is
// none.
func LimitListener(ln net.Listener, l Limits) net.Listener {
	ll := &limitListener{Listener: ln, perHost: l.PerHost, rate: l.AcceptRate, burst: float64(l.AcceptBurst),
		byPeer: map[string]int{}, buckets: map[string]*bucket{}, done: make(chan struct{}), key: peerKey}
	if l.MaxConns > 0 {
		ll.slots = make(chan struct{}, l.MaxConns)
	}
	return ll
}

type limitListener struct {
	net.Listener
	slots       chan struct{} // one token per open connection; nil: no cap
	perHost     int
	rate, burst float64
	key         func(net.Conn) string // peerKey; tests choose
	mu          sync.Mutex
	byPeer      map[string]int
	buckets     map[string]*bucket // Accept's own: one goroutine
	done        chan struct{}
	once        sync.Once
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		if l.slots != nil {
			select {
			case l.slots <- struct{}{}:
			case <-l.done:
				return nil, net.ErrClosed
			}
		}
		c, err := l.Listener.Accept()
		if err != nil {
			l.free()
			return nil, err
		}
		peer := l.key(c)
		if !l.admit(peer, time.Now()) {
			c.Close()
			l.free()
			continue
		}
		l.mu.Lock()
		over := l.perHost > 0 && l.byPeer[peer] >= l.perHost
		if !over {
			l.byPeer[peer]++
		}
		l.mu.Unlock()
		if over {
			c.Close()
			l.free()
			continue
		}
		return &limitConn{Conn: c, release: func() { l.release(peer) }}, nil
	}
}

// bucket is one peer's accepts: a token bucket of AcceptBurst tokens,
// AcceptRate of them back a second.
type bucket struct {
	tokens float64
	at     time.Time
}

// admit takes one of peer's tokens at now, false when none is left.
func (l *limitListener) admit(peer string, now time.Time) bool {
	if l.rate <= 0 || l.burst <= 0 {
		return true
	}
	b := l.buckets[peer]
	if b == nil {
		if len(l.buckets) >= maxBuckets {
			l.forget(now)
		}
		b = &bucket{tokens: l.burst, at: now}
		l.buckets[peer] = b
	}
	b.tokens = min(l.burst, b.tokens+now.Sub(b.at).Seconds()*l.rate)
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// maxBuckets bounds the peers whose accepts are remembered; past it the
// peers whose buckets have filled again are forgotten (a full bucket is
// what a new peer gets), and if that is not enough, all are: a client
// with a thousand addresses resets the rates, it never keeps a new peer
// out.
const maxBuckets = 1024

func (l *limitListener) forget(now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*l.rate >= l.burst {
			delete(l.buckets, k)
		}
	}
	if len(l.buckets) > maxBuckets/2 {
		clear(l.buckets)
	}
}

func (l *limitListener) free() {
	if l.slots != nil {
		<-l.slots
	}
}

func (l *limitListener) release(peer string) {
	l.mu.Lock()
	if l.byPeer[peer]--; l.byPeer[peer] <= 0 {
		delete(l.byPeer, peer)
	}
	l.mu.Unlock()
	l.free()
}

func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.once.Do(func() { close(l.done) })
	return err
}

// peerKey is who a connection is for the limits: "uid N" for a client on
// this machine whose socket's owner the kernel tells, else its remote
// address.
func peerKey(c net.Conn) string {
	local, lok := c.LocalAddr().(*net.TCPAddr)
	remote, rok := c.RemoteAddr().(*net.TCPAddr)
	if !lok || !rok {
		return c.RemoteAddr().String()
	}
	return keyFor(local.AddrPort(), remote.AddrPort(), peeruid.Lookup)
}

// keyFor is peerKey's rule, with the kernel's look-up as lookup: a peer on
// loopback, or at the server's own address, is the uid holding its
// socket; any other peer, or one whose uid cannot be read, is its address.
func keyFor(local, remote netip.AddrPort, lookup func(local, peer netip.AddrPort) (uint32, error)) string {
	ra := remote.Addr().Unmap()
	if ra.IsLoopback() || ra == local.Addr().Unmap() {
		if uid, err := lookup(local, remote); err == nil {
			return "uid " + strconv.FormatUint(uint64(uid), 10)
		}
	}
	return ra.String()
}

// limitConn gives its slot back once, on the first Close.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

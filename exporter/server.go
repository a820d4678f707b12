package exporter

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Limits bound what clients of gpuwatch serve may hold: connections
// (in all, and from one host), and how long a connection may sit idle,
// take to send its request, or take to read the answer. Without them one
// client held 2,300 idle connections past 40 s, RSS went from 24 to 114
// MB, and a real scrape's p50 from 5 ms to 0.64 s (issue 41, item 12).
type Limits struct {
	// MaxConns caps the connections open at once; past it new ones wait
	// in the kernel's accept queue until one closes. PerHost caps those
	// from one remote address; past it a new one is closed at once.
	MaxConns, PerHost int
	// ReadHeaderTimeout bounds sending the request's headers, ReadTimeout
	// the whole request, WriteTimeout the answer, and IdleTimeout a
	// kept-alive connection between requests.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
}

// DefaultLimits are serve's: 64 connections, 16 from one host (a
// Prometheus pair and a person with curl need a handful), 5 s to send the
// headers and 10 s the request, 30 s to read a scrape (a 256-core, 8-GPU
// node's is under 200 KiB), and a kept-alive connection closed after 30 s
// idle (Prometheus scrapes every 15 s to 1 min; a new connection then costs
// one handshake on loopback or a LAN).
func DefaultLimits() Limits {
	return Limits{MaxConns: 64, PerHost: 16, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 30 * time.Second}
}

// NewServer is an HTTP server for h with l's timeouts and 16 KiB of
// headers at most. Serve it on LimitListener(ln, l).
func NewServer(h http.Handler, l Limits) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: l.ReadHeaderTimeout, ReadTimeout: l.ReadTimeout,
		WriteTimeout: l.WriteTimeout, IdleTimeout: l.IdleTimeout, MaxHeaderBytes: 16 << 10}
}

// LimitListener caps ln's open connections at l.MaxConns (Accept waits for
// a free one, as golang.org/x/net/netutil's LimitListener does) and at
// l.PerHost from one remote address (a connection past it is closed at
// once, so that one client cannot take every slot). A limit ≤ 0 is none.
func LimitListener(ln net.Listener, l Limits) net.Listener {
	ll := &limitListener{Listener: ln, perHost: l.PerHost, byHost: map[string]int{}, done: make(chan struct{})}
	if l.MaxConns > 0 {
		ll.slots = make(chan struct{}, l.MaxConns)
	}
	return ll
}

type limitListener struct {
	net.Listener
	slots   chan struct{} // one token per open connection; nil: no cap
	perHost int
	mu      sync.Mutex
	byHost  map[string]int
	done    chan struct{}
	once    sync.Once
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
		host := remoteHost(c)
		l.mu.Lock()
		over := l.perHost > 0 && l.byHost[host] >= l.perHost
		if !over {
			l.byHost[host]++
		}
		l.mu.Unlock()
		if over {
			c.Close()
			l.free()
			continue
		}
		return &limitConn{Conn: c, release: func() { l.release(host) }}, nil
	}
}

func (l *limitListener) free() {
	if l.slots != nil {
		<-l.slots
	}
}

func (l *limitListener) release(host string) {
	l.mu.Lock()
	if l.byHost[host]--; l.byHost[host] <= 0 {
		delete(l.byHost, host)
	}
	l.mu.Unlock()
	l.free()
}

func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.once.Do(func() { close(l.done) })
	return err
}

// remoteHost is a connection's remote address without its port.
func remoteHost(c net.Conn) string {
	addr := c.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
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

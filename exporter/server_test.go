package exporter

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/internal/fixture"
	"github.com/gpuwatch/gpuwatch/sample"
)

// serveOn serves a real exporter, holding a frame of the GPU fixture, on
// a loopback port with limits l (nil: none, as serve was before), each
// loopback address a peer of its own (as hosts on a network are: this
// process is one user on all of them).
func serveOn(tb testing.TB, l *Limits) string {
	tb.Helper()
	return serveKeyed(tb, l, byAddress)
}

// byAddress keys a connection by its remote address only.
func byAddress(c net.Conn) string {
	return c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap().String()
}

// serveKeyed is serveOn with connections keyed by key (peerKey: serve's).
func serveKeyed(tb testing.TB, l *Limits, key func(net.Conn) string) string {
	tb.Helper()
	return serveFrame(tb, fixture.GPUFrame(), l, key)
}

// serveFrame is serveKeyed with the exporter holding f.
func serveFrame(tb testing.TB, f *sample.Frame, l *Limits, key func(net.Conn) string) string {
	tb.Helper()
	exp := &Exporter{}
	exp.Set(f, diagnose.Verdict{Kind: diagnose.IOBound, Confidence: 0.8})
	reg := prometheus.NewRegistry()
	reg.MustRegister(exp)
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	var served net.Listener = ln
	if l != nil {
		ll := LimitListener(ln, *l)
		ll.(*limitListener).key = key
		srv, served = NewServer(h, *l), ll
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(served) }()
	tb.Cleanup(func() { srv.Close(); <-done })
	return ln.Addr().String()
}

// dialFrom connects to addr from the loopback address from (127.0.0.2:
// another host, as far as the server can tell).
func dialFrom(from, addr string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	return d.Dial("tcp", addr)
}

// scrapeFrom GETs /metrics over a new connection from the address from.
func scrapeFrom(from, addr string) error {
	c, err := dialFrom(from, addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	b, err := io.ReadAll(c)
	if err != nil {
		return err
	}
	if len(b) < 12 || string(b[9:12]) != "200" {
		return fmt.Errorf("answer %.40q", b)
	}
	return nil
}

// TestServeLimitsOneHostsConnections: past PerHost, a host's new
// connections are closed at once, and a scrape from another host is
// answered beside them.
func TestServeLimitsOneHostsConnections(t *testing.T) {
	l := DefaultLimits()
	l.PerHost = 4
	addr := serveOn(t, &l)
	var conns []net.Conn
	for range 10 {
		c, err := dialFrom("127.0.0.1", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	// The server closes the extra ones as it accepts them; the kept ones
	// answer nothing until the shared deadline.
	// (A read past its deadline does not look: each waits on its own.)
	deadline := time.Now().Add(2 * time.Second)
	shut := make(chan bool, len(conns))
	for _, c := range conns {
		go func() {
			_ = c.SetReadDeadline(deadline)
			_, err := c.Read(make([]byte, 1))
			shut <- !errors.Is(err, os.ErrDeadlineExceeded)
		}()
	}
	var closed int
	for range conns {
		if <-shut {
			closed++
		}
	}
	if closed != 6 {
		t.Fatalf("%d of 10 idle connections from one host closed at once, want 6 (PerHost 4)", closed)
	}
	if err := scrapeFrom("127.0.0.2", addr); err != nil {
		t.Fatalf("a scrape from another host beside them: %v", err)
	}
}

// TestServeClosesIdleConnections: a kept-alive connection is closed after
// IdleTimeout, and one that never sends its request after
// ReadHeaderTimeout.
func TestServeClosesIdleConnections(t *testing.T) {
	l := DefaultLimits()
	l.IdleTimeout, l.ReadHeaderTimeout = 200*time.Millisecond, 200*time.Millisecond
	addr := serveOn(t, &l)
	silent, err := dialFrom("127.0.0.1", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	_ = silent.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := silent.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("a connection that sent nothing: %v, want it closed (EOF)", err)
	}
	c, err := dialFrom("127.0.0.1", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadAll(c); err != nil {
		t.Fatalf("a kept-alive connection: %v, want it closed (EOF) once idle", err)
	}
}

// BenchmarkScrapeBesideIdleClients: a scrape from one host while another
// holds 2,000 idle connections (sent nothing, or one request then kept
// alive), with serve's limits and without them (as before). It reports
// the scrape's p50 and p99, the goroutines the server holds for the idle
// clients (one a connection, with the client's own beside them: the
// benchmark is both ends) and the heap they cost.
func BenchmarkScrapeBesideIdleClients(b *testing.B) {
	for _, c := range []struct {
		name string
		l    *Limits
	}{{"limited", ptr(noRate(DefaultLimits()))}, {"unlimited", nil}} {
		b.Run(c.name, func(b *testing.B) {
			addr := serveOn(b, c.l)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			goroutines := runtime.NumGoroutine()
			var idle []net.Conn
			for i := range 2000 {
				conn, err := dialFrom("127.0.0.1", addr)
				if err != nil {
					b.Fatal(err)
				}
				if i%2 == 1 {
					fmt.Fprintf(conn, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
				}
				idle = append(idle, conn)
			}
			defer func() {
				for _, conn := range idle {
					conn.Close()
				}
			}()
			// Each connection the server holds is a goroutine of its own;
			// those it closed are gone once it has read their EOF, so the
			// count is taken after a first scrape has gone through.
			if err := scrapeFrom("127.0.0.2", addr); err != nil {
				b.Fatal(err)
			}
			held := runtime.NumGoroutine() - goroutines
			runtime.ReadMemStats(&after)
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				if err := scrapeFrom("127.0.0.2", addr); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(held), "server-goroutines")
			b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/(1<<20), "heap-MiB")
		})
	}
}

func ptr[T any](v T) *T { return &v }

// noRate is l without its accept rate: a benchmark's scraper opens
// hundreds of connections a second, a storm to the rate limit.
func noRate(l Limits) Limits {
	l.AcceptRate = 0
	return l
}

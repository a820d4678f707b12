//go:build linux

package endpoint

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestConcurrentProofsShareTheTablesRead: callers that ask while a read
// of the socket tables runs join one read that starts after it, not the
// running one (it may predate their connections) and not one each. The
// table is a FIFO, so the test serves each read and counts them: a first
// caller's read, then one for the 100 that asked during it, then none.
func TestConcurrentProofsShareTheTablesRead(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(root, "net", "tcp")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	table := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
		fmt.Sprintf("   0: 0100007F:%04X 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0 100 0 0 10 0\n", 6061)
	serve := func() { // one read: open once the reader has (ENXIO until then: 10 s at most), write, close
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		fd, err := syscall.Open(fifo, syscall.O_WRONLY|syscall.O_NONBLOCK, 0)
		for err == syscall.ENXIO && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
			fd, err = syscall.Open(fifo, syscall.O_WRONLY|syscall.O_NONBLOCK, 0)
		}
		if err != nil {
			t.Fatalf("no read of the table within 10 s: %v", err)
		}
		f := os.NewFile(uintptr(fd), fifo)
		if err := syscall.SetNonblock(fd, false); err != nil {
			t.Fatal(err)
		}
		f.WriteString(table)
		f.Close()
	}
	// until polls the readers' state (under their lock) for what the
	// test waits on, for at most 10 s.
	until := func(what string, cond func(r *tableReader) bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; {
			tableReaders.Lock()
			ok := cond(tableReaders.by[root])
			tableReaders.Unlock()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("waited 10 s for %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	host := netip.MustParseAddr("127.0.0.1")
	type result struct {
		n   int
		err error
	}
	results := make(chan result, 101)
	ask := func() {
		ls, found, err := listenersOn(root, host, 6061)
		if err == nil && !found {
			err = fmt.Errorf("no table found")
		}
		results <- result{len(ls), err}
	}
	go ask()
	until("the first read to start", func(r *tableReader) bool { return r != nil && r.running && r.next == nil })
	for range 100 {
		go ask()
	}
	until("100 callers to join the next read", func(r *tableReader) bool { return r != nil && r.next != nil && r.next.waiters == 100 })
	serve() // the first caller's read
	// The second starts once the first has closed the table.
	until("the second read to start", func(r *tableReader) bool { return r != nil && r.next == nil })
	serve() // the one the 100 joined
	timeout := time.After(10 * time.Second)
	for i := range 101 {
		select {
		case r := <-results:
			if r.err != nil || r.n != 1 {
				t.Fatalf("a caller got %d listeners: %v", r.n, r.err)
			}
		case <-timeout:
			t.Fatalf("%d of 101 callers answered after two reads", i)
		}
	}
	// No third read: the reader ends (a third would block on the FIFO).
	until("the reader to end", func(r *tableReader) bool { return r == nil })
}

// BenchmarkProveListener256AtOnce is 256 connections proven at once on
// the real tables (attach's start-up check with 256 loaders): one read of
// /proc/net/tcp and tcp6 each took about 9 ms of kernel time on the
// project's 2-core VM, and each connection read its own (over 3 s).
func BenchmarkProveListener256AtOnce(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	ap := ln.Addr().(*net.TCPAddr).AddrPort()
	for b.Loop() {
		var wg sync.WaitGroup
		for range 256 {
			wg.Go(func() {
				if ls, _, err := listenersOn("/proc/self", ap.Addr(), ap.Port()); err != nil || len(ls) != 1 {
					b.Errorf("%d listeners: %v", len(ls), err)
				}
			})
		}
		wg.Wait()
	}
}

//go:build linux

package endpoint

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
)

// listening is what one read of a namespace's socket tables says: the
// listening sockets by port, whether any table could be opened, and the
// first parse error (naming the table).
type listening struct {
	byPort map[uint16][]listener
	found  bool
	err    error
}

// listenersOn is every socket listening in procRoot's tables that would
// take a connection to host:port; found is false when neither table could
// be opened. The caller has made its connection before it asks: the
// tables are read after that, so a listener that took it is in them.
//
// Reads are shared. Each of /proc/net/tcp and tcp6 walks the kernel's
// whole connection hash (about 9 ms on a 2-core VM, with few sockets),
// and 256 attached loaders proving their first connections at once took
// over 3 s of CPU reading them: the start-up check then timed every one
// of them out (BenchmarkAttachEndlessEndpoints). Callers join the read
// that starts next; one that starts after all of them joined answers
// them all: 256 proofs at once took 1.7 s of reads each alone, 29 ms
// sharing (BenchmarkProveListener256AtOnce).
func listenersOn(procRoot string, host netip.Addr, port uint16) ([]listener, bool, error) {
	l := readListening(procRoot)
	if l.err != nil {
		return nil, l.found, l.err
	}
	var out []listener
	for _, s := range l.byPort[port] {
		if s.takes(host) {
			out = append(out, s)
		}
	}
	return out, l.found, nil
}

// tableRead is one read of the tables and the callers waiting on it.
type tableRead struct {
	done    chan struct{}
	got     listening
	waiters int
}

// tableReader coalesces one procRoot's reads: next is the read that
// starts when the one running ends (nil: none asked for yet).
type tableReader struct {
	next    *tableRead
	running bool
}

var tableReaders = struct {
	sync.Mutex
	by map[string]*tableReader
}{by: map[string]*tableReader{}}

// readListening joins the next read of procRoot's tables and waits for
// it: a read already running may have begun before the caller's
// connection, so it is not the caller's.
func readListening(procRoot string) listening {
	tableReaders.Lock()
	r := tableReaders.by[procRoot]
	if r == nil {
		r = &tableReader{}
		tableReaders.by[procRoot] = r
	}
	if r.next == nil {
		r.next = &tableRead{done: make(chan struct{})}
	}
	mine := r.next
	mine.waiters++
	if !r.running {
		r.running = true
		go r.run(procRoot)
	}
	tableReaders.Unlock()
	<-mine.done
	return mine.got
}

// run reads the tables for each batch of callers in turn, until none is
// waiting; then the reader is forgotten.
func (r *tableReader) run(procRoot string) {
	for {
		tableReaders.Lock()
		batch := r.next
		r.next = nil
		if batch == nil {
			r.running = false
			delete(tableReaders.by, procRoot)
			tableReaders.Unlock()
			return
		}
		tableReaders.Unlock()
		batch.got = safeReadTables(procRoot)
		close(batch.done)
	}
}

// safeReadTables is readTables with a panic turned into the read's error:
// it runs on a goroutine of its own, outside the sampler's recover, and
// its callers wait on it.
func safeReadTables(procRoot string) (l listening) {
	defer func() {
		if p := recover(); p != nil {
			l = listening{err: fmt.Errorf("reading the socket tables: %v", p)}
		}
	}()
	return readTables(procRoot)
}

// readTables reads procRoot's /net/tcp and /net/tcp6 once.
func readTables(procRoot string) listening {
	l := listening{byPort: map[uint16][]listener{}}
	for _, name := range []string{"tcp", "tcp6"} {
		f, err := os.Open(filepath.Join(procRoot, "net", name))
		if err != nil {
			continue // no IPv6, say
		}
		ls, err := parseListeners(f, anyPort)
		f.Close()
		if err != nil {
			l.err = fmt.Errorf("/proc/net/%s: %v", name, err)
			return l
		}
		l.found = true
		for _, s := range ls {
			l.byPort[s.Port] = append(l.byPort[s.Port], s)
		}
	}
	return l
}

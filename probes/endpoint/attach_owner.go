package endpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gpuwatch/gpuwatch/probes"
)

// listenerOwner is who must hold the socket an Attach connects to: the
// announced process (pid, 0 when none was announced) of user uid, read
// from procRoot.
type listenerOwner struct {
	procRoot string
	pid, uid int
	// note is why the last connection's listener is not proven the
	// loader's ("" when it is, or it is not on this machine).
	note string
}

// Announced sets what the loader's announcement says: the token to send
// and the process, of the announcement's user, that must hold the socket
// listening on its port. Every connection is then checked before anything
// is sent on it, and refused when another process holds the port (a
// loader killed with -9, its PID and port taken since).
func (a *Attach) Announced(ann Announcement) {
	a.mu.Lock()
	procRoot := ann.procRoot
	if procRoot == "" {
		procRoot = a.owner.procRoot
	}
	a.owner = listenerOwner{procRoot: procRoot, pid: ann.PID, uid: ann.uid}
	a.mu.Unlock()
	a.transport.CloseIdleConnections() // proven for another process
	a.SetToken(ann.Token)
}

// ProofNote says why the loader this Attach reads is not proven to be the
// one meant ("" when it is, or when it is not on this machine): an
// explicit URL to a loopback port that another user's process holds, or
// whose owner cannot be told. Nothing secret is sent to such a listener.
//
// It also says when the pid the loader reports is not trusted, or not
// verified (checkPID).
func (a *Attach) ProofNote() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.pidCheck.note == "":
		return a.owner.note
	case a.owner.note == "":
		return a.pidCheck.note
	}
	return a.owner.note + "; " + a.pidCheck.note
}

// pidCheck is whether the pid a loader reports holds the socket of its
// connection (pidHolds), made once per connection and reported pid.
type pidCheck struct {
	peer netip.AddrPort
	pid  int
	note string // "" when it holds it
	bad  bool   // it does not: the pid is not used
}

// checkPID checks the pid the loader reports (gpuwatch_loader_info) when
// its connection is to this machine: a pid that does not hold the
// loader's port is dropped, with the loop thread and the workers it
// names (untrusted is then true), and ProofNote says so; one that cannot
// be checked (another user's process, gpuwatch not root) is kept and said
// unverified. Anyone can serve /metrics on a free port and name your
// training process.
func (a *Attach) checkPID(c LoaderCounters) (_ LoaderCounters, untrusted bool) {
	a.mu.Lock()
	peer, procRoot, chk := a.peer, a.owner.procRoot, a.pidCheck
	a.mu.Unlock()
	if c.PID == nil || !peer.IsValid() {
		a.mu.Lock()
		a.pidCheck = pidCheck{}
		a.mu.Unlock()
		return c, false
	}
	pid := *c.PID
	if chk.peer != peer || chk.pid != pid {
		h, why := holdsPort(procRoot, pid, peer.Addr(), peer.Port())
		chk = pidCheck{peer: peer, pid: pid}
		switch h {
		case holdNotOwns:
			chk.bad = true
			chk.note = fmt.Sprintf("the loader at %s says pid %d, but %s: pid not trusted (name the process with --pid)", a.shown, pid, why)
		case holdCannotTell:
			chk.note = fmt.Sprintf("the loader at %s says pid %d, not verified to hold its port (%s)", a.shown, pid, why)
		}
		a.mu.Lock()
		a.pidCheck = chk
		a.mu.Unlock()
	}
	if chk.bad {
		c.PID, c.LoopTID, c.WorkerPIDs = nil, nil, nil
		return c, true
	}
	return c, false
}

// holdsPort is pidHolds; the ranks' tests serve several loaders from one
// process, each naming a pid of its own, and trust those.
var holdsPort = pidHolds

// isLocal says whether addr is this machine's: loopback, or an address of
// one of its interfaces.
func isLocal(addr netip.Addr) bool {
	addr = addr.Unmap()
	if addr.IsLoopback() {
		return true
	}
	ifs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, ia := range ifs {
		if n, ok := ia.(*net.IPNet); ok {
			if a, ok := netip.AddrFromSlice(n.IP); ok && a.Unmap() == addr {
				return true
			}
		}
	}
	return false
}

// dialer is how an Attach connects, before its proof.
var dialer = &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}

// dial connects, then proves the listener (after connecting, so that the
// socket proven is the one that took the connection, not one that was
// there a moment before): an announced loader must be the announced
// process of its user, or the connection is closed unused. A URL the user
// gave to a loopback port without an announcement must be the user's
// listener (root: anyone's) when it carries a secret (the URL's
// credentials); without one it is read, and ProofNote says it is not
// proven. A listener on another host cannot be checked and is not.
func (a *Attach) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if err := a.prove(conn); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

func (a *Attach) prove(conn net.Conn) error {
	tcp, ok := conn.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return nil
	}
	peer := tcp.AddrPort()
	a.mu.Lock()
	a.peer, a.pidCheck = netip.AddrPort{}, pidCheck{} // a new connection: its pid is checked anew
	if isLocal(peer.Addr()) {
		a.peer = peer
	}
	a.mu.Unlock()
	if !peer.Addr().Unmap().IsLoopback() {
		a.setNote("")
		return nil // another host: its owner cannot be told from here
	}
	a.mu.Lock()
	o, secret := a.owner, a.token != "" || a.base.User != nil
	a.mu.Unlock()
	if o.pid > 0 {
		if err := proveListener(o.procRoot, o.pid, o.uid, peer.Addr(), peer.Port()); err != nil {
			a.setNote(err.Error())
			if _, serr := os.Stat(filepath.Join(o.procRoot, strconv.Itoa(o.pid))); errors.Is(serr, fs.ErrNotExist) {
				// Gone: the job ended, no impostor (a review read a
				// spoofing alarm on a job stopped by Ctrl-C).
				return fmt.Errorf("not connecting to %s: the announced loader's process (pid %d) has exited, and another process listens on its port", a.shown, o.pid)
			}
			return fmt.Errorf("not connecting to %s: the announced loader (pid %d) is not the one listening: %w", a.shown, o.pid, err)
		}
		a.setNote("")
		return nil
	}
	uid := os.Geteuid()
	err := proveListener(o.procRoot, 0, uid, peer.Addr(), peer.Port())
	if err != nil && uid == 0 && errors.Is(err, ErrNotProven) {
		err = nil // root reads anyone's
	}
	if err == nil {
		a.setNote("")
		return nil
	}
	what := "not proven the loader's" // the integration test reads this
	if errors.Is(err, probes.ErrUnavailable) {
		what = "its owner could not be checked"
	}
	a.setNote(fmt.Sprintf("%s: %s (%v); no token is sent to it", a.shown, what, err))
	if secret {
		return fmt.Errorf("not sending the URL's credentials to %s: %s (%w)", a.shown, what, err)
	}
	return nil
}

func (a *Attach) setNote(s string) {
	a.mu.Lock()
	a.owner.note = s
	a.mu.Unlock()
}

// proveAnnounced proves the listener of announcement ann (discovery): the
// announced process, of the announcement's user, holds the socket
// listening on its URL's port.
func proveAnnounced(procRoot string, ann Announcement, key string) error {
	ap, err := netip.ParseAddrPort(hostPortOf(key))
	if err != nil {
		return fmt.Errorf("%w: %s has no address and port", ErrNotProven, key)
	}
	return proveListener(procRoot, ann.PID, ann.uid, ap.Addr(), ap.Port())
}

package exporter

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/gpuwatch/gpuwatch/sample"
)

// Auth is what serve asks of a scrape (issue 54, item 3), as
// node_exporter's web config and kube-rbac-proxy do: TLS with CertFile
// and KeyFile (both or neither), and a bearer token in TokenFile, which
// every request to a guarded path must carry (Authorization: Bearer
// TOKEN). The zero Auth asks nothing: plain HTTP, no token.
type Auth struct {
	CertFile, KeyFile, TokenFile string
	// Warn, where set, is told one line when the token stops working (its
	// file changed and no longer reads: why) and one when it works again;
	// they are for serve's stderr. Nil: nothing is told.
	Warn func(string)

	now func() time.Time // the reloader's clock; nil: time.Now (tests step it)
}

// Check says what is wrong with a's files: a certificate without its key
// (or the other way round), a key others may read, a pair that does not
// load, a token file that does not read or that others may read. It
// reads them as serve would.
func (a Auth) Check() error {
	if (a.CertFile == "") != (a.KeyFile == "") {
		return errors.New("--tls-cert and --tls-key go together: give both (HTTPS) or neither (HTTP)")
	}
	if a.CertFile != "" {
		if st, err := os.Stat(a.KeyFile); err == nil {
			if err := privateMode(st); err != nil {
				return fmt.Errorf("--tls-key %s: %w", a.KeyFile, err)
			}
		}
		if _, err := tls.LoadX509KeyPair(a.CertFile, a.KeyFile); err != nil {
			return fmt.Errorf("--tls-cert %s --tls-key %s: %w", a.CertFile, a.KeyFile, err)
		}
	}
	if a.TokenFile != "" {
		if _, err := readToken(a.TokenFile); err != nil {
			return fmt.Errorf("--token-file %s: %w", a.TokenFile, err)
		}
	}
	return nil
}

// TLSConfig is the server's TLS configuration, nil without a certificate.
// The pair is read again at the first handshake after either file
// changed (a Secret's rotation, a renewal), and the last pair that loaded
// is kept while a new one does not.
func (a Auth) TLSConfig() (*tls.Config, error) {
	if a.CertFile == "" {
		return nil, nil
	}
	r := &reloader[*tls.Certificate]{paths: []string{a.CertFile, a.KeyFile}, now: a.now, load: func() (*tls.Certificate, error) {
		// The key's mode each time, not only at the start (a review: a key
		// made readable by others was reloaded in silence).
		if st, err := os.Stat(a.KeyFile); err == nil {
			if err := privateMode(st); err != nil {
				return nil, fmt.Errorf("--tls-key %s: %w", a.KeyFile, err)
			}
		}
		c, err := tls.LoadX509KeyPair(a.CertFile, a.KeyFile)
		return &c, err
	}}
	if _, err := r.get(); err != nil {
		return nil, err
	}
	if a.Warn != nil { // after the first load, as Guard's: a failed renewal is said, not found when the certificate expires
		r.told = func(err error) {
			if err != nil {
				a.Warn(sample.Printable(fmt.Sprintf("--tls-cert %s --tls-key %s: %v: the pair loaded before is kept", a.CertFile, a.KeyFile, err)))
				return
			}
			a.Warn(sample.Printable(fmt.Sprintf("--tls-cert %s --tls-key %s read again", a.CertFile, a.KeyFile)))
		}
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		return r.get()
	}}, nil
}

// Guard wraps h so that a request to one of paths is served only with
// a.TokenFile's token (401 otherwise, with a WWW-Authenticate header and
// nothing of h); other paths (/, for probes) are h's as before. Without
// a token file it is h. The token is compared in constant time, and read
// again once its file changes; while it does not read, every guarded
// request is answered 401 (a.Warn is told when that starts and ends).
func (a Auth) Guard(h http.Handler, paths ...string) (http.Handler, error) {
	if a.TokenFile == "" {
		return h, nil
	}
	r := &reloader[[32]byte]{paths: []string{a.TokenFile}, failClosed: true, now: a.now, load: func() ([32]byte, error) {
		tok, err := readToken(a.TokenFile)
		return sha256.Sum256(tok), err
	}}
	if _, err := r.get(); err != nil {
		return nil, fmt.Errorf("--token-file %s: %w", a.TokenFile, err)
	}
	if a.Warn != nil { // set after the first load: serve's start is no news
		r.told = func(err error) {
			if err != nil {
				a.Warn(sample.Printable(fmt.Sprintf("--token-file %s: %v: /metrics answers 401 to every request until it reads again", a.TokenFile, err)))
				return
			}
			a.Warn(sample.Printable(fmt.Sprintf("--token-file %s reads again: /metrics answers its token", a.TokenFile)))
		}
	}
	guarded := map[string]bool{}
	for _, p := range paths {
		guarded[p] = true
	}
	return http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		if guarded[req.URL.Path] && !bearerMatches(req.Header.Get("Authorization"), r) {
			rw.Header().Set("WWW-Authenticate", `Bearer realm="gpuwatch"`)
			http.Error(rw, "401 unauthorized: this path needs serve's token (Authorization: Bearer TOKEN)", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(rw, req)
	}), nil
}

// bearerMatches says whether header is "Bearer " and the token: both
// sides hashed first, so that the comparison takes the same time whatever
// the length of what was sent.
func bearerMatches(header string, r *reloader[[32]byte]) bool {
	want, err := r.get()
	if err != nil {
		return false
	}
	const scheme = "bearer "
	if len(header) <= len(scheme) || !bytes.EqualFold([]byte(header[:len(scheme)]), []byte(scheme)) {
		return false
	}
	got := sha256.Sum256([]byte(header[len(scheme):]))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// maxTokenBytes bounds the token file read.
const maxTokenBytes = 4 << 10

// readToken reads a token file: a regular file (a FIFO or a device is
// refused unread), at most 4 KiB, surrounding white space cut, not
// empty, and readable by serve's own user and group only — a
// token others can read is no secret (world bits refused, group bits
// unless the file's group is serve's own, as a Kubernetes Secret mounted
// with fsGroup is).
func readToken(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0) // a FIFO must not block serve's start
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := privateMode(st); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxTokenBytes {
		return nil, fmt.Errorf("over %d bytes: not a token", maxTokenBytes)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, errors.New("empty: put the token in it")
	}
	return b, nil
}

// privateMode refuses a file others may read: any world bit, or group
// bits where the group is not serve's own.
func privateMode(st os.FileInfo) error {
	perm := st.Mode().Perm()
	if !st.Mode().IsRegular() {
		return errors.New("not a regular file")
	}
	if perm&0o007 != 0 {
		return fmt.Errorf("readable by others (mode %04o): chmod 0600 it", perm)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && perm&0o070 != 0 && int(sys.Gid) != os.Getegid() {
		return fmt.Errorf("readable by group %d, not serve's (mode %04o): chmod 0600 it, or give it serve's group (gid %d)", sys.Gid, perm, os.Getegid())
	}
	return nil
}

// reloader holds what load makes of paths, made again when any of them
// changes, at most once a second. A change is any field of the files'
// stat that differs: device and inode (a Kubernetes Secret's files are
// links swapped to new ones), size and modification time (a rewrite),
// mode, owner, group and change time (a chmod, chown or chgrp, which
// leave the others as they were: a token file opened to others must be
// seen). A load that fails keeps the last good value (a certificate
// renewed mid-write), unless failClosed: then nothing is served until a
// load succeeds (a token revoked by removing, emptying or opening its
// file must stop working at once), and the files are looked at on every
// get until then.
type reloader[T any] struct {
	paths      []string
	load       func() (T, error)
	failClosed bool
	now        func() time.Time // nil: time.Now
	// told, where set, is called (after the lock) when a failClosed
	// reloader stops serving, or another starts keeping its last value,
	// with the load's error, and with nil when it loads again.
	told func(err error)

	mu      sync.Mutex
	val     T
	ok      bool
	keeping bool // not failClosed: the last load failed, its last value is served
	stamp   string
	checked time.Time
}

func (r *reloader[T]) get() (T, error) {
	v, tell, err := r.getLocked()
	if tell != nil {
		tell() // outside the lock: a stderr that blocks holds up no scrape
	}
	return v, err
}

// getLocked is get under the lock; tell, where not nil, says a change of
// state to r.told.
func (r *reloader[T]) getLocked() (_ T, tell func(), _ error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if r.now != nil {
		now = r.now()
	}
	if r.ok && now.Sub(r.checked) < time.Second {
		return r.val, nil, nil
	}
	r.checked = now
	stamp := statStamp(r.paths)
	if r.ok && stamp == r.stamp {
		return r.val, nil, nil
	}
	v, err := r.load()
	if err != nil {
		if r.ok && !r.failClosed {
			if told := r.told; told != nil && !r.keeping {
				tell = func() { told(err) }
			}
			r.keeping = true
			return r.val, tell, nil
		}
		if told := r.told; r.ok && told != nil {
			tell = func() { told(err) }
		}
		var zero T
		r.val, r.ok, r.stamp = zero, false, ""
		return v, tell, err
	}
	if told := r.told; (!r.ok || r.keeping) && told != nil {
		tell = func() { told(nil) }
	}
	r.val, r.ok, r.stamp, r.keeping = v, true, stamp, false
	return v, tell, nil
}

// statStamp is what reloader compares of paths: each one's device,
// inode, mode, owner, group, size, modification and change time, "?"
// for one that does not stat.
func statStamp(paths []string) string {
	stamp := ""
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			stamp += "?;"
			continue
		}
		s, _ := st.Sys().(*syscall.Stat_t)
		if s == nil {
			s = &syscall.Stat_t{}
		}
		stamp += fmt.Sprintf("%d:%d:%o:%d:%d:%d:%d:%d;", s.Dev, s.Ino, st.Mode(), s.Uid, s.Gid,
			st.Size(), st.ModTime().UnixNano(), changeTime(s))
	}
	return stamp
}

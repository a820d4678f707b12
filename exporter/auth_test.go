package exporter

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/internal/fixture"
)

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key
// into dir and returns their paths and the certificate, to trust.
func selfSigned(t *testing.T, dir, name string) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ = x509.ParseCertificate(der)
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	writeFile(t, certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	writeFile(t, keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return certFile, keyFile, cert
}

// writeFile writes b to path (replacing it: a new inode) with mode.
func writeFile(t *testing.T, path string, b []byte, mode os.FileMode) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, b, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// serveAuth serves a real exporter as serve does — its limits, a's TLS
// and token, /metrics guarded and / open — on a loopback port.
func serveAuth(t *testing.T, a Auth) string {
	t.Helper()
	exp := &Exporter{}
	exp.Set(fixture.GPUFrame(), diagnose.Verdict{Kind: diagnose.IOBound, Confidence: 0.8})
	reg := prometheus.NewRegistry()
	reg.MustRegister(exp)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /{$}", func(rw http.ResponseWriter, _ *http.Request) { io.WriteString(rw, "gpuwatch exporter\n") })
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
	h, err := a.Guard(mux, "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	conf, err := a.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := DefaultLimits()
	srv := NewServer(h, l)
	srv.TLSConfig = conf
	done := make(chan struct{})
	go func() {
		defer close(done)
		if conf != nil {
			_ = srv.ServeTLS(LimitListener(ln, l), "", "")
		} else {
			_ = srv.Serve(LimitListener(ln, l))
		}
	}()
	t.Cleanup(func() { srv.Close(); <-done })
	return ln.Addr().String()
}

// trusting is an HTTPS client that trusts only cert.
func trusting(cert *x509.Certificate) *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// get GETs url with the Authorization header auth (none when ""): its
// status and body.
func get(t *testing.T, c *http.Client, url, auth string) (int, string, error) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// TestServeOverTLS (issue 54, item 3): with a certificate and key, serve
// answers HTTPS; a client that trusts the certificate reads /metrics, and
// plain HTTP to the same port reads nothing of it. A renewed certificate
// is served from the next handshake on.
func TestServeOverTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, cert := selfSigned(t, dir, "one")
	addr := serveAuth(t, Auth{CertFile: certFile, KeyFile: keyFile})
	code, body, err := get(t, trusting(cert), "https://"+addr+"/metrics", "")
	if err != nil || code != 200 || !strings.Contains(body, "gpuwatch_verdict{") {
		t.Fatalf("HTTPS /metrics: %d %v %.80q", code, err, body)
	}
	plain := &http.Client{Timeout: 10 * time.Second}
	code, body, err = get(t, plain, "http://"+addr+"/metrics", "")
	if err == nil && (code == 200 || strings.Contains(body, "gpuwatch_verdict")) {
		t.Errorf("plain HTTP to the TLS port: %d %.80q", code, body)
	}
	untrusting := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}}
	if _, _, err := get(t, untrusting, "https://"+addr+"/metrics", ""); err == nil {
		t.Error("a client that does not trust the certificate read /metrics")
	}

	// A renewal: the files replaced, the next handshake (a second on) is
	// the new certificate's.
	time.Sleep(1100 * time.Millisecond)
	newCert, newKey, renewed := selfSigned(t, dir, "two")
	if err := os.Rename(newCert, certFile); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(newKey, keyFile); err != nil {
		t.Fatal(err)
	}
	if code, _, err := get(t, trusting(renewed), "https://"+addr+"/metrics", ""); err != nil || code != 200 {
		t.Errorf("after the renewal: %d %v", code, err)
	}
}

// TestServeNeedsTheToken (issue 54, item 3): with a token file, /metrics
// answers 401 without the header or with a wrong token, and 200 with
// the right one; / stays open for probes.
func TestServeNeedsTheToken(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	writeFile(t, tok, []byte("s3cret-token\n"), 0o600)
	certFile, keyFile, cert := selfSigned(t, dir, "tls")
	for _, c := range []struct {
		name   string
		a      Auth
		client *http.Client
		scheme string
	}{
		{"http", Auth{TokenFile: tok}, &http.Client{Timeout: 10 * time.Second}, "http"},
		{"https", Auth{TokenFile: tok, CertFile: certFile, KeyFile: keyFile}, trusting(cert), "https"},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := c.scheme + "://" + serveAuth(t, c.a)
			for _, r := range []struct {
				auth string
				want int
			}{
				{"", 401},
				{"Bearer wrong", 401},
				{"Bearer s3cret-token-and-more", 401},
				{"Basic czNjcmV0LXRva2Vu", 401},
				{"Bearer s3cret-token", 200},
				{"bearer s3cret-token", 200},
			} {
				code, body, err := get(t, c.client, base+"/metrics", r.auth)
				if err != nil || code != r.want {
					t.Errorf("Authorization %q: %d %v, want %d", r.auth, code, err, r.want)
				}
				if r.want == 401 && strings.Contains(body, "gpuwatch_") {
					t.Errorf("Authorization %q: a 401 that holds metrics: %.80q", r.auth, body)
				}
			}
			if code, _, err := get(t, c.client, base+"/", ""); err != nil || code != 200 {
				t.Errorf("/ without the token: %d %v, want 200 (probes)", code, err)
			}
		})
	}
}

// TestTokenFileMustBePrivate: a token file others may read is refused,
// with its mode in the message; 0600 (and 0640 with serve's own group)
// is taken; an empty one, and a FIFO (which must not block the start),
// are refused.
func TestTokenFileMustBePrivate(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		mode    os.FileMode
		content string
		want    string
	}{
		{0o644, "tok", "readable by others (mode 0644)"},
		{0o604, "tok", "readable by others (mode 0604)"},
		{0o600, "", "empty"},
		{0o600, "tok", ""},
		{0o640, "tok", ""}, // the test's own group: serve's
		{0o400, "tok", ""},
	} {
		p := filepath.Join(dir, "token")
		writeFile(t, p, []byte(c.content), c.mode)
		err := Auth{TokenFile: p}.Check()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("mode %04o %q: %v, want %q", c.mode, c.content, err, c.want)
		}
		if _, gerr := (Auth{TokenFile: p}).Guard(http.NotFoundHandler()); (gerr == nil) != (c.want == "") {
			t.Errorf("mode %04o: Guard %v", c.mode, gerr)
		}
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := (Auth{TokenFile: fifo}).Check(); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a FIFO: %v", err)
	}
	if os.Getegid() != 65534 {
		p := filepath.Join(dir, "token")
		writeFile(t, p, []byte("tok"), 0o640)
		if err := os.Chown(p, -1, 65534); err == nil {
			if err := (Auth{TokenFile: p}).Check(); err == nil || !strings.Contains(err.Error(), "readable by group 65534") {
				t.Errorf("another group may read it: %v", err)
			}
		}
	}
}

// TestTLSFlagsGoTogether: a certificate without its key, or a key
// without its certificate, is refused with a message naming both flags;
// a key others may read is refused as a token is.
func TestTLSFlagsGoTogether(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := selfSigned(t, dir, "k")
	if err := os.Chmod(keyFile, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := (Auth{CertFile: certFile, KeyFile: keyFile}).Check(); err == nil || !strings.Contains(err.Error(), "--tls-key "+keyFile+": readable by others (mode 0644)") {
		t.Errorf("a key others may read: %v", err)
	}
	for _, a := range []Auth{{CertFile: "c.pem"}, {KeyFile: "k.pem"}} {
		if err := a.Check(); err == nil || !strings.Contains(err.Error(), "--tls-cert and --tls-key go together") {
			t.Errorf("%+v: %v", a, err)
		}
	}
	if err := (Auth{}).Check(); err != nil {
		t.Errorf("no TLS, no token: %v", err)
	}
}

// TestAnEmptiedOrOpenedTokenStopsWorking (review of issue 54 item 3): a
// token revoked by emptying its file, opening it to others or removing it
// stops working at the next check (at most a second later), never kept
// from before; a token written back works again.
func TestAnEmptiedOrOpenedTokenStopsWorking(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	writeFile(t, tok, []byte("s3cret-token\n"), 0o600)
	base := "http://" + serveAuth(t, Auth{TokenFile: tok})
	client := &http.Client{Timeout: 10 * time.Second}
	// until polls until /metrics with the token answers want (the token is
	// read again at most once a second), failing after 5 s.
	until := func(what string, want int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			code, _, err := get(t, client, base+"/metrics", "Bearer s3cret-token")
			if err == nil && code == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d %v, want %d", what, code, err, want)
			}
			time.Sleep(100 * time.Millisecond) // the reload is by time: nothing to wait on
		}
	}
	until("the token", 200)
	for _, revoke := range []struct {
		name string
		do   func()
	}{
		{"emptied", func() { writeFile(t, tok, nil, 0o600) }},
		{"opened to others", func() { writeFile(t, tok, []byte("s3cret-token\n"), 0o644) }},
		{"removed", func() {
			if err := os.Remove(tok); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		revoke.do()
		until(revoke.name, 401)
		writeFile(t, tok, []byte("s3cret-token\n"), 0o600)
		until(revoke.name+", then written back", 200)
	}
}

// stepClock is a reloader's clock that moves only when the test steps it,
// so that "the next check" is a step, not a sleep.
type stepClock struct{ ns atomic.Int64 }

func newStepClock() *stepClock {
	c := &stepClock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}

func (c *stepClock) now() time.Time { return time.Unix(0, c.ns.Load()) }

// next moves the clock past the reloader's second: its next get looks at
// the files again.
func (c *stepClock) next() { c.ns.Add(int64(time.Second)) }

// sameButMode fails the test unless path's inode, size and modification
// time are before's: what the reloader looked at before it saw the mode.
func sameButMode(t *testing.T, path string, before os.FileInfo) {
	t.Helper()
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) || after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime()) {
		t.Fatalf("the change moved more than the mode (inode, size or mtime): the test proves nothing")
	}
}

// TestAChmodStopsTheTokenAtTheNextCheck: `chmod 644` on the token file —
// same inode, size and modification time — stops the token at the next
// check (a 401, and one line told), not only once the file is touched;
// `chmod 600` makes it work again (one more line). It was served for as
// long as the modification time stayed.
func TestAChmodStopsTheTokenAtTheNextCheck(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	writeFile(t, tok, []byte("s3cret-token\n"), 0o600)
	clock := newStepClock()
	var mu sync.Mutex
	var told []string
	warn := func(s string) { mu.Lock(); told = append(told, s); mu.Unlock() }
	base := "http://" + serveAuth(t, Auth{TokenFile: tok, Warn: warn, now: clock.now})
	client := &http.Client{Timeout: 10 * time.Second}
	want := func(what string, code, lines int) {
		t.Helper()
		got, _, err := get(t, client, base+"/metrics", "Bearer s3cret-token")
		if err != nil || got != code {
			t.Fatalf("%s: %d %v, want %d", what, got, err, code)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(told) != lines {
			t.Fatalf("%s: told %q, want %d lines", what, told, lines)
		}
	}
	want("the token", 200, 0)
	before, err := os.Stat(tok)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tok, 0o644); err != nil {
		t.Fatal(err)
	}
	sameButMode(t, tok, before)
	clock.next()
	want("chmod 644, the next check", 401, 1)
	want("chmod 644, again", 401, 1)
	if !strings.Contains(told[0], "readable by others (mode 0644)") || !strings.Contains(told[0], tok) {
		t.Errorf("told %q, want the file and why", told[0])
	}
	if err := os.Chmod(tok, 0o600); err != nil {
		t.Fatal(err)
	}
	want("chmod 600", 200, 2)
	if !strings.Contains(told[1], "reads again") {
		t.Errorf("told %q, want that it reads again", told[1])
	}
}

// TestEveryInodeChangeIsSeen: a chmod, chgrp or chown — which leave the
// inode, size and modification time as they were — makes the reloader
// load again at its next check. chgrp and chown need root.
func TestEveryInodeChangeIsSeen(t *testing.T) {
	for _, tc := range []struct {
		name     string
		change   func(path string) error
		needRoot bool
	}{
		{"chmod", func(p string) error { return os.Chmod(p, 0o640) }, false},
		{"chgrp", func(p string) error { return os.Chown(p, -1, 65534) }, true},
		{"chown", func(p string) error { return os.Chown(p, 65534, -1) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needRoot && os.Geteuid() != 0 {
				t.Skip("needs root")
			}
			path := filepath.Join(t.TempDir(), "file")
			writeFile(t, path, []byte("x"), 0o600)
			clock := newStepClock()
			loads := 0
			r := &reloader[int]{paths: []string{path}, now: clock.now, load: func() (int, error) { loads++; return loads, nil }}
			if _, err := r.get(); err != nil {
				t.Fatal(err)
			}
			before, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.change(path); err != nil {
				t.Fatal(err)
			}
			sameButMode(t, path, before)
			clock.next()
			if v, _ := r.get(); v != 2 {
				t.Fatalf("after %s the next check loaded %d times, want 2", tc.name, loads)
			}
		})
	}
}

// TestATLSKeyOpenedToOthersIsSaid (a review): the key's mode was checked
// at the start only, and a pair that failed to load again was kept in
// silence. The pair loaded before is still served, and serve says why
// once, and again when the files load.
func TestATLSKeyOpenedToOthersIsSaid(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, cert := selfSigned(t, dir, "one")
	clock := newStepClock()
	var mu sync.Mutex
	var told []string
	warn := func(s string) { mu.Lock(); told = append(told, s); mu.Unlock() }
	addr := serveAuth(t, Auth{CertFile: certFile, KeyFile: keyFile, Warn: warn, now: clock.now})
	want := func(what string, lines int) {
		t.Helper()
		if code, _, err := get(t, trusting(cert), "https://"+addr+"/metrics", ""); err != nil || code != 200 {
			t.Fatalf("%s: %d %v", what, code, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(told) != lines {
			t.Fatalf("%s: told %q, want %d lines", what, told, lines)
		}
	}
	want("the pair", 0)
	before, err := os.Stat(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(keyFile, 0o644); err != nil {
		t.Fatal(err)
	}
	sameButMode(t, keyFile, before)
	clock.next()
	want("chmod 644: the pair before kept", 1)
	clock.next()
	want("chmod 644, again", 1)
	if !strings.Contains(told[0], "readable by others (mode 0644)") || !strings.Contains(told[0], "the pair loaded before is kept") {
		t.Errorf("told %q", told[0])
	}
	if err := os.Chmod(keyFile, 0o600); err != nil {
		t.Fatal(err)
	}
	clock.next()
	want("chmod 600", 2)
	if !strings.Contains(told[1], "read again") {
		t.Errorf("told %q", told[1])
	}
}

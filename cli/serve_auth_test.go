package cli

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeAuthFlagsAreChecked (issue 54, item 3): --tls-cert without
// --tls-key (and the other way round) and a token file others may read
// are refused before anything is served, with exit status 2 and a line
// that says why.
func TestServeAuthFlagsAreChecked(t *testing.T) {
	dir := t.TempDir()
	open := filepath.Join(dir, "token")
	if err := os.WriteFile(open, []byte("tok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-cert", filepath.Join(dir, "c.pem")}, "--tls-cert and --tls-key go together"},
		{[]string{"--tls-key", filepath.Join(dir, "k.pem")}, "--tls-cert and --tls-key go together"},
		{[]string{"--token-file", open}, "readable by others (mode 0644): chmod 0600 it"},
		{[]string{"--token-file", filepath.Join(dir, "missing")}, "no such file"},
	} {
		var out, errb bytes.Buffer
		args := append([]string{"serve", "--listen", "127.0.0.1:0", "--discover=false", "--duration", "1s"}, c.args...)
		if code := Run(args, &out, &errb); code != ExitUsage || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%q: exit %d %q, want %d and %q", c.args, code, errb.String(), ExitUsage, c.want)
		}
		if strings.Contains(out.String(), "exporter on") {
			t.Errorf("%q: served anyway: %q", c.args, out.String())
		}
	}
}

// TestServeWithATokenFile: serve --token-file answers /metrics only with
// the token, and / without it (the chart's probes).
func TestServeWithATokenFile(t *testing.T) {
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("the-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		defer pw.Close()
		done <- Run([]string{"serve", "--listen", "127.0.0.1:0", "--discover=false", "--duration", "4s", "--interval", "200ms", "--token-file", tok}, pw, &errb)
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	go io.Copy(io.Discard, pr)
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "gpuwatch exporter on ")
	if err != nil || !ok {
		t.Fatalf("first line %q (%v); exit %v %s", line, err, <-done, errb.String())
	}
	c := &http.Client{Timeout: 5 * time.Second}
	for _, r := range []struct {
		url, auth string
		want      int
	}{
		{url, "", 401},
		{url, "Bearer nope", 401},
		{url, "Bearer the-token", 200},
		{strings.TrimSuffix(url, "metrics"), "", 200},
	} {
		req, _ := http.NewRequest("GET", r.url, nil)
		if r.auth != "" {
			req.Header.Set("Authorization", r.auth)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Errorf("%s %q: %v", r.url, r.auth, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != r.want {
			t.Errorf("%s %q: %d, want %d", r.url, r.auth, resp.StatusCode, r.want)
		}
	}
	if code := <-done; code != 0 {
		t.Errorf("exit %d: %s", code, errb.String())
	}
}

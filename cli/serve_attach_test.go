package cli

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/exporter"
	"github.com/gpuwatch/gpuwatch/internal/testnet"
)

// TestServeSaysNothingOfServingWhenItWillNot: serve with an --attach URL
// it refuses (a usage error, 2) ends without saying where it serves; it
// printed "gpuwatch exporter on …" first, as if it were serving.
func TestServeSaysNothingOfServingWhenItWillNot(t *testing.T) {
	for _, c := range []struct {
		name, url string
		code      int
		want      string
	}{
		{"a URL that is not a loader's", "notaurl", ExitUsage, `"notaurl" is not a loader URL`},
		{"a port range past 65535", "http://127.0.0.1:6061-99999", ExitUsage, "want a port range low-high within 1-65535"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			// A non-loopback address: its warning is about serving too.
			code := Run([]string{"serve", "--listen", "0.0.0.0:0", "--discover=false", "--duration", "5s", "--attach", c.url}, &out, &errb)
			if code != c.code || !strings.Contains(errb.String(), c.want) {
				t.Fatalf("exit %d %q, want %d and %q", code, errb.String(), c.code, c.want)
			}
			if out.Len() != 0 || strings.Contains(errb.String(), "serving") {
				t.Fatalf("says it serves: stdout %q, stderr %q", out.String(), errb.String())
			}
		})
	}
}

// TestServeAnswersFromTheSessionsStart: serve takes its port at once (a
// port in use fails before any loader is awaited) but answers nothing
// until the session has started — a review: the port answered, with no
// warning of its exposure, while --attach's loaders were awaited — and
// a serve that never starts gives the port back.
func TestServeAnswersFromTheSessionsStart(t *testing.T) {
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := free.Addr().String()
	free.Close()
	var out, errb bytes.Buffer
	opts := &serveOptions{listen: addr, maxConns: 8, stdout: &out, stderr: &errb}
	stop, serving, err := serveMetrics(opts, &exporter.Exporter{})
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 300 * time.Millisecond}
	if resp, err := client.Get("http://" + addr + "/"); err == nil {
		resp.Body.Close()
		t.Fatalf("answered %s before the session started", resp.Status)
	}
	if out.Len() != 0 {
		t.Fatalf("said %q before the session started", out.String())
	}
	serving()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + addr + "/")
	if err != nil {
		t.Fatalf("after the start: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(out.String(), "gpuwatch exporter on http://"+addr) {
		t.Fatalf("after the start: %s, said %q", resp.Status, out.String())
	}
	stop()

	// Never started: the port is free again once it stops.
	stop, _, err = serveMetrics(&serveOptions{listen: addr, maxConns: 8, stdout: &out, stderr: &errb}, &exporter.Exporter{})
	if err != nil {
		t.Fatal(err)
	}
	stop()
	again, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the port is still held: %v", err)
	}
	again.Close()
}

// TestServeWaitsForLoadersThatDoNotAnswerYet (a review): the node's
// service names the ports its jobs will take; between jobs none answers.
// serve exited 1 there (its unit restarting every 5 s, no host metrics
// served); it serves, says the loaders do not answer yet, and watches.
func TestServeWaitsForLoadersThatDoNotAnswerYet(t *testing.T) {
	// Nothing listening; and (a second review) a name that resolves only
	// once its pod starts.
	for _, url := range []string{"http://" + testnet.RefusedAddr(t), "http://loader-0.train.invalid:8000"} {
		var out, errb bytes.Buffer
		code := Run([]string{"serve", "--listen", "127.0.0.1:0", "--discover=false", "--duration", "2s", "--attach", url}, &out, &errb)
		if code != 0 || !strings.Contains(errb.String(), "cannot attach to "+url) || !strings.Contains(errb.String(), "watching for them") ||
			!strings.Contains(out.String(), "gpuwatch exporter on http://127.0.0.1:") {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q", url, code, out.String(), errb.String())
		}
	}
}

// TestListenNetworkIsTheAddresssFamily (a review): --listen 0.0.0.0:PORT
// listened on IPv6 as well.
func TestListenNetworkIsTheAddresssFamily(t *testing.T) {
	for addr, want := range map[string]string{"0.0.0.0:9400": "tcp4", "127.0.0.1:9400": "tcp4", "[::]:9400": "tcp", "[::1]:9400": "tcp",
		":9400": "tcp", "localhost:9400": "tcp", "node1:9400": "tcp"} {
		if got := listenNetwork(addr); got != want {
			t.Errorf("%s: %s, want %s", addr, got, want)
		}
	}
}

// TestServeRefusesAURLThatAnswersAndIsNoLoader (a review): serve waits
// for loaders that do not answer yet, but one that answers and is no
// loader (a port mistyped onto another server) is an error, as before.
func TestServeRefusesAURLThatAnswersAndIsNoLoader(t *testing.T) {
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	var out, errb bytes.Buffer
	code := Run([]string{"serve", "--listen", "127.0.0.1:0", "--discover=false", "--duration", "2s", "--attach", other.URL}, &out, &errb)
	if code != ExitFailure || !strings.Contains(errb.String(), "cannot attach to "+other.URL) || strings.Contains(errb.String(), "watching for them") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

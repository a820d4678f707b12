package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/internal/testnet"
)

// TestServeSaysNothingOfServingWhenItWillNot: serve with an --attach URL
// it refuses (a usage error, 2) or whose loader does not answer (1) ends
// without saying where it serves; it printed "gpuwatch exporter on …"
// first, as if it were serving.
func TestServeSaysNothingOfServingWhenItWillNot(t *testing.T) {
	refused := "http://" + testnet.RefusedAddr(t)
	for _, c := range []struct {
		name, url string
		code      int
		want      string
	}{
		{"a URL that is not a loader's", "notaurl", ExitUsage, `"notaurl" is not a loader URL`},
		{"a port range past 65535", "http://127.0.0.1:6061-99999", ExitUsage, "want a port range low-high within 1-65535"},
		{"a loader that does not answer", refused, ExitFailure, "cannot attach to " + refused},
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

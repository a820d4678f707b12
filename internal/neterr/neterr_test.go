package neterr

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/testnet"
)

// TestExplainSaysWhatHappenedWithoutTheURL: real failures on loopback
// (a closed port, a server that never answers, a server that hangs up)
// come out in words, without the URL and its credentials.
func TestExplainSaysWhatHappenedWithoutTheURL(t *testing.T) {
	closed := "http://u:s3cret@" + testnet.RefusedAddr(t)
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer hang.Close()
	hangUp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _, _ := w.(http.Hijacker).Hijack()
		c.Close()
	}))
	defer hangUp.Close()
	for _, c := range []struct{ url, want string }{
		{closed, "connection refused (is the loader running and listening there?)"},
		{strings.Replace(hang.URL, "http://", "http://u:s3cret@", 1), "no answer within 200ms"},
		{strings.Replace(hangUp.URL, "http://", "http://u:s3cret@", 1), "the loader closed the connection before answering in full"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
		_, err := http.DefaultClient.Do(req)
		cancel()
		e := Explain(err, 200*time.Millisecond, "the loader")
		got := e.Error()
		if got != c.want || strings.Contains(got, "s3cret") {
			t.Errorf("%s: %q, want %q", c.url, got, c.want)
		}
		// Refused, unanswered and hung up are no answer (serve waits for
		// such a loader: the hook's server hangs up while every slot is
		// taken).
		if !errors.Is(e, ErrNoAnswer) {
			t.Errorf("%s: %q is not ErrNoAnswer", c.url, got)
		}
	}
}

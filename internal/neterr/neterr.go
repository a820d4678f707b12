// Package neterr says why an HTTP request to a server of the user's
// (a loader's debug server, a Prometheus server) failed, in words and
// without the URL: net/http's errors print the URL, credentials included,
// and Go's own wording ("dial tcp 127.0.0.1:6999: connect: connection
// refused"). Used by probes (attach) and fleet.
package neterr

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ErrNoAnswer is what Explain's error is (errors.Is) where nothing
// answered: a name that does not resolve, the connection refused, reset
// or closed before an answer, or no answer in time. Anything else (a TLS
// failure, an HTTP status, a page that is not the protocol's) was an
// answer, if a wrong one.
var ErrNoAnswer = errors.New("no answer")

// noAnswer is an explained error that is ErrNoAnswer.
type noAnswer struct{ msg string }

func (e noAnswer) Error() string        { return e.msg }
func (e noAnswer) Is(target error) bool { return target == ErrNoAnswer }

// Explain turns a transport error into words. timeout is the request's
// deadline, named when it passed; what names the server for the
// connection-refused hint ("the loader", "Prometheus").
func Explain(err error, timeout time.Duration, what string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var dnsErr *net.DNSError
	var opErr *net.OpError
	var certErr *tls.CertificateVerificationError
	var recErr tls.RecordHeaderError
	switch {
	case errors.As(err, &dnsErr):
		// A name not resolving yet is a loader not started yet (a pod's
		// or a compose service's name comes with it).
		return noAnswer{fmt.Sprintf("no such host %q", dnsErr.Name)}
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, http.ErrHandlerTimeout) || isTimeout(err):
		return noAnswer{fmt.Sprintf("no answer within %v", timeout)}
	case errors.As(err, &certErr):
		return fmt.Errorf("TLS: %v", certErr.Err)
	case errors.As(err, &recErr) || strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return errors.New("TLS handshake failed: the server does not speak TLS (try http://)")
	case errors.As(err, &opErr) && strings.Contains(opErr.Err.Error(), "refused"):
		return noAnswer{fmt.Sprintf("connection refused (is %s running and listening there?)", what)}
	case errors.As(err, &opErr) && strings.Contains(opErr.Err.Error(), "reset"):
		// A server that hangs up unanswered: the hook's, every slot of
		// its server taken, does so.
		return noAnswer{fmt.Sprintf("the connection was reset (%s closed it)", what)}
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return noAnswer{fmt.Sprintf("%s closed the connection before answering in full", what)}
	}
	return err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

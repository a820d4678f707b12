package tune

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/session/predlog"
)

// Ledger is tune's record of its own predictions on this machine
// (predlog's file): each step that had a prediction is appended, and the
// bias they show is said at the start and in the result.
type Ledger struct {
	Path string // the file; "" keeps nothing
	Host string // this machine's name, the records' key
	// Loader is whose pipeline tune tunes (predlog.LoaderEmbedded,
	// LoaderJob): the records' other key.
	Loader string
	Warn   io.Writer // told once when the file cannot be written
	Now    func() time.Time
	said   bool
}

// NewLedger is the ledger in the user's file (predlog.Path) for the
// steps over loader's pipeline; a failure to keep a step is said once on
// warn.
func NewLedger(warn io.Writer, loader string) *Ledger {
	l := &Ledger{Warn: warn, Now: time.Now, Loader: loader}
	path, err := predlog.Path()
	if err != nil {
		l.warn(err)
		return l
	}
	l.Host, err = os.Hostname()
	if err != nil {
		l.warn(err)
		return l
	}
	l.Path = path
	return l
}

// Keep appends s's predicted and measured samples/s, when it had a
// prediction in samples/s; prev is the step whose changes made s's
// configuration. A failure is said once, and tune goes on.
func (l *Ledger) Keep(prev, s TuneStep) {
	if l == nil || l.Path == "" || s.Predicted == nil || s.Predicted.SamplesPerSec <= 0 || s.Measured.SamplesPerSec <= 0 {
		return
	}
	r := predlog.Record{Time: l.Now().UTC(), Host: l.Host, Change: changesLine(prev.Changes),
		Predicted: s.Predicted.SamplesPerSec, Measured: s.Measured.SamplesPerSec,
		High: max(s.Predicted.HighSamplesPerSec, s.Predicted.SamplesPerSec), Model: predlog.ModelRange, Loader: l.Loader}
	if err := predlog.Append(l.Path, r); err != nil {
		l.warn(err)
	}
}

func (l *Ledger) warn(err error) {
	if !l.said && l.Warn != nil {
		fmt.Fprintf(l.Warn, "gpuwatch: tune's predictions are not kept (%v); tune goes on\n", err)
	}
	l.said = true
}

// Bias is how predictions on this machine ran in words, "" when there is
// nothing to say (predlog.Bias).
func (l *Ledger) Bias() string {
	if l == nil || l.Path == "" {
		return ""
	}
	rs, err := predlog.Read(l.Path)
	if err != nil {
		return ""
	}
	b, ok := predlog.BiasOn(rs, l.Host, l.Loader)
	if !ok {
		return ""
	}
	return b.String()
}

// changesLine is changes in words: "num_workers 1 → 4, prefetch_factor 2 → 4".
func changesLine(cs []diagnose.Change) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.Knob + " " + c.From + " → " + c.To
	}
	return strings.Join(parts, ", ")
}

// Package lines writes what a session prints line by line: the headless
// text line, JSON lines (docs/json.md), and the notes between frames
// (scenario switches, events). Recordings are JSON lines too. It imports
// sample and diagnose from this module (docs/architecture.md §2).
package lines

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/sample"
)

// JSONWriter writes one JSON object per line (JSONL). Every line has "type"
// and "time"; the frame schema is documented in docs/json.md.
type JSONWriter struct {
	enc *json.Encoder
}

// Encode writes v as one line (a recording's header and verdict lines).
func (w *JSONWriter) Encode(v any) error { return w.enc.Encode(v) }

// NewJSONWriter returns a JSONWriter on w.
func NewJSONWriter(w io.Writer) *JSONWriter {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &JSONWriter{enc: enc}
}

type frameLine struct {
	Type string `json:"type"`
	*sample.Frame
	Verdict *diagnose.Verdict `json:"verdict,omitempty"`
}

// WriteFrame writes f as a "type":"frame" line, with the verdict shown for
// it (nil: none). The disks, net, gpus and unavailable members are always
// present (empty, not null), so consumers can index them without checks.
func (w *JSONWriter) WriteFrame(f *sample.Frame, v *diagnose.Verdict) error {
	c := *f
	if c.Disks == nil {
		c.Disks = []sample.Disk{}
	}
	if c.Net == nil {
		c.Net = []sample.NetIf{}
	}
	if c.GPUs == nil {
		c.GPUs = []sample.GPU{}
	}
	if c.Unavailable == nil {
		c.Unavailable = map[sample.Source]string{}
	}
	return w.enc.Encode(frameLine{Type: "frame", Frame: &c, Verdict: v})
}

// WriteNote writes a non-frame line with its "type".
func (w *JSONWriter) WriteNote(n sample.Note) error {
	switch v := n.(type) {
	case sample.Scenario:
		return w.enc.Encode(struct {
			Type string `json:"type"`
			sample.Scenario
		}{"scenario", v})
	case sample.Event:
		return w.enc.Encode(struct {
			Type string `json:"type"`
			sample.Event
		}{"event", v})
	}
	return fmt.Errorf("lines: unknown line %T", n)
}

// WriteNoteLine writes a non-frame line for --headless.
func WriteNoteLine(w io.Writer, n sample.Note) error {
	switch v := n.(type) {
	case sample.Event:
		_, err := fmt.Fprintf(w, "%s %s %s\n", v.Time.Format("15:04:05"), sample.Printable(v.Name), sample.Printable(v.Detail))
		return err
	case sample.Scenario:
		keys := make([]string, 0, len(v.Knobs))
		for k := range v.Knobs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var b strings.Builder
		fmt.Fprintf(&b, "%s scenario %s:", v.Time.Format("15:04:05"), v.Name)
		for _, k := range keys {
			fmt.Fprintf(&b, " %s=%s", k, v.Knobs[k])
		}
		_, err := io.WriteString(w, sample.Printable(b.String())+"\n")
		return err
	}
	return fmt.Errorf("lines: unknown line %T", n)
}

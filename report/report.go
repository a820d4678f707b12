// Package report writes what gpuwatch saw: the headless line and JSON-lines
// output, and (later) recordings and diagnosis reports. It imports sample
// and diagnose from this module, never probes.
package report

import (
	"encoding/json"
	"io"

	"github.com/gpuwatch/gpuwatch/sample"
)

// JSONWriter writes one JSON object per line (JSONL). Every line has "type"
// and "time"; the frame schema is documented in docs/json.md.
type JSONWriter struct {
	enc *json.Encoder
}

// NewJSONWriter returns a JSONWriter on w.
func NewJSONWriter(w io.Writer) *JSONWriter {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &JSONWriter{enc: enc}
}

type frameLine struct {
	Type string `json:"type"`
	*sample.Frame
}

// WriteFrame writes f as a "type":"frame" line. The disks, net, gpus and
// unavailable members are always present (empty, not null), so consumers
// can index them without checks.
func (w *JSONWriter) WriteFrame(f *sample.Frame) error {
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
		c.Unavailable = map[string]string{}
	}
	return w.enc.Encode(frameLine{Type: "frame", Frame: &c})
}

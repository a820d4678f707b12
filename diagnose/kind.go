// Package diagnose turns a window of Frames into a Verdict: which situation
// the machine is in (the accelerator busy, starved by input, one core
// pegged, every core busy, storage, memory), the evidence for it in numbers
// anyone can check, and what to change. Classify is pure — no clock, no
// I/O — so it is tested on recorded runs; Diagnoser adds hysteresis.
// It imports only sample from this module.
package diagnose

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Kind is a verdict's situation. The String values are stable identifiers
// used in JSON, Prometheus labels, reports and tests (docs/diagnosis.md).
// Each kind is declared, with everything about it, in its own
// situation_<id>.go; see Situation.
type Kind int

// String returns the stable identifier ("gpu_starved").
func (k Kind) String() string { return situationOf(k).ID }

// Title is the kind in words for a banner.
func (k Kind) Title() string { return situationOf(k).Title }

// Problem says whether the kind is something to fix.
func (k Kind) Problem() bool { return situationOf(k).Problem() }

// Tone is how views colour the kind.
func (k Kind) Tone() Tone { return situationOf(k).Tone }

// MarshalText implements encoding.TextMarshaler.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (k *Kind) UnmarshalText(b []byte) error {
	for _, s := range situations {
		if s != nil && s.ID == string(b) {
			*k = s.Kind
			return nil
		}
	}
	return fmt.Errorf("unknown verdict kind %q", b)
}

// Severity says how urgent a verdict is.
type Severity int

// The severities.
const (
	Info     Severity = iota // nothing to fix
	Warning                  // worth fixing: time is being lost
	Critical                 // most of the time is lost
)

func (s Severity) String() string {
	switch s {
	case Warning:
		return "warning"
	case Critical:
		return "critical"
	}
	return "info"
}

// MarshalText implements encoding.TextMarshaler.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *Severity) UnmarshalText(b []byte) error {
	switch string(b) {
	case "info":
		*s = Info
	case "warning":
		*s = Warning
	case "critical":
		*s = Critical
	default:
		return fmt.Errorf("unknown severity %q", b)
	}
	return nil
}

// Evidence is one fact from the window: a metric, its value, the
// threshold it was held against, and the fact in words.
type Evidence struct {
	Metric    string  `json:"metric"`
	Value     float64 `json:"value"`
	Op        string  `json:"op"` // ">=", "<" …
	Threshold float64 `json:"threshold"`
	Unit      string  `json:"unit,omitempty"`
	Text      string  `json:"text"`
	// strength orders evidence: how far past its threshold, relatively.
	strength float64
}

// Finding is a secondary finding: a kind that also shows in the window,
// and the fact that shows it.
type Finding struct {
	Kind Kind   `json:"kind"`
	Text string `json:"text"`
}

// Verdict is what Classify concludes from a window.
type Verdict struct {
	Kind       Kind       `json:"kind"`
	Severity   Severity   `json:"severity"`
	Confidence float64    `json:"confidence"` // 0–1
	Since      time.Time  `json:"since"`      // set by the Diagnoser; the window's first frame from Classify
	Evidence   []Evidence `json:"evidence"`
	Advice     []string   `json:"advice"`
	// Changes are the loader settings to change, computed by the pipeline
	// model (docs/diagnosis.md), smallest first; Predicted is what applying
	// all of them gives. Both absent when the model has no change to offer
	// or no loader to model.
	Changes   []Change    `json:"changes,omitempty"`
	Predicted *Prediction `json:"predicted,omitempty"`
	// NoChange is why the model advises no change, where it weighed the
	// knobs of a problem and advised none: its line of Advice ("more
	// workers cannot help: the 1.9 CPUs the workers have are the limit
	// …"), which tune names when it stops (it named the first line of
	// the advice, a cause's). Empty otherwise.
	NoChange string `json:"no_change,omitempty"`
	// Secondary are further findings beside the kind: another resource
	// that is also busy, with one line of evidence each ("the other core
	// is busy with thread X of the training process").
	Secondary []Finding `json:"secondary,omitempty"`
	// Causes are what the job's own code does that costs the input
	// pipeline its time (the hand-over, a float64 payload, padding,
	// __getitem__, random reads, the loop's own handling), each with its
	// evidence, its fix and the bound on the fix's gain (cause.go,
	// docs/diagnosis.md "Causes and their bounds"); absent when the hook
	// measured no stages or payload, or none shows.
	Causes []Cause `json:"causes,omitempty"`
	// Straggler is the rank that holds a job of several ranks back (its
	// first evidence says how); nil with one rank, or when every rank
	// waits alike.
	Straggler *int `json:"straggler_rank,omitempty"`
	// Missing says which signals were absent, so a view can say what the
	// verdict could not see ("no GPU: libnvidia-ml.so.1 not found").
	Missing []string `json:"missing,omitempty"`
}

// MarshalJSON writes evidence[] and advice[] as arrays always, empty
// where there are none (a warming-up verdict's): docs/json.md calls them
// arrays, and a consumer iterates over them.
func (v Verdict) MarshalJSON() ([]byte, error) {
	type plain Verdict // its fields without this method
	if v.Evidence == nil {
		v.Evidence = []Evidence{}
	}
	if v.Advice == nil {
		v.Advice = []string{}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // as the writers' own encoders: "<" stays "<"
	if err := enc.Encode(plain(v)); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

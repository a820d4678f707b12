package diagnose

import (
	"fmt"
	"slices"
)

// Tone is what a situation means for the job, in the words a view colours
// by: the dashboard's banner, the HTML report, the fleet view. No view
// keeps a colour per kind.
type Tone int

// The tones. The zero Tone is no tone: a situation must name one.
const (
	ToneNeutral Tone = iota + 1 // nothing to judge yet, or nothing runs
	ToneGood                    // the accelerator is the busy part
	ToneWarn                    // time is lost, and a change gets it back
	ToneBad                     // a host resource is exhausted
)

func (t Tone) String() string {
	switch t {
	case ToneNeutral:
		return "neutral"
	case ToneGood:
		return "good"
	case ToneWarn:
		return "warn"
	case ToneBad:
		return "bad"
	}
	return fmt.Sprintf("tone(%d)", int(t))
}

// Situation is one verdict kind, whole: its stable identifier, its words,
// its tone, the profile stage it expects, its advice, and the recordings
// that show it. Each lives in its own file (situation_<id>.go), which
// registers it; Kinds, Title, Problem and the views' colours are built
// from the registry (docs/architecture.md, "a verdict kind").
type Situation struct {
	Kind Kind
	// ID is the stable identifier: a JSON value, a Prometheus label, a
	// report heading. Never renamed.
	ID string
	// Title is the kind in words for a banner.
	Title string
	// Tone is how views colour it; warn and bad are problems to fix.
	Tone Tone
	// InputBound says the accelerator waits on the input pipeline: the
	// alert rules' input-bound set (docs/prometheus-alerts.yml).
	InputBound bool
	// Stage is the loader CPU profile's category this situation expects to
	// lead ("reading" for io_bound); "" when none.
	Stage string
	// Advice is the situation's own advice lines; last says no line may
	// follow (the transfer and host-only lines do not apply). nil: the
	// evidence says all there is (idle, warming up).
	Advice func(adviceIn) (lines []string, last bool)
	// Scenarios are the embedded loader's scenarios whose recordings under
	// testdata/ show this situation (the fixture tests replay them).
	Scenarios []string
	// NoRecording says why there is no recording of it yet, when there is
	// none; the completeness test accepts nothing else in its place.
	NoRecording string
}

// Problem says whether the situation is something to fix.
func (s *Situation) Problem() bool { return s.Tone == ToneWarn || s.Tone == ToneBad }

// situations is the registry, indexed by Kind.
var situations []*Situation

// Kinds lists every kind, in the order of their values.
var Kinds []Kind

// register adds a situation; its file's init calls it. Kind values are
// dense from 0 (WarmingUp, the zero Verdict's kind); TestEverySituationIsWhole
// fails on a gap or a kind registered twice.
func register(s Situation) {
	for int(s.Kind) >= len(situations) {
		situations = append(situations, nil)
	}
	if situations[s.Kind] != nil {
		panic(fmt.Sprintf("diagnose: kind %d registered twice (%s, %s)", s.Kind, situations[s.Kind].ID, s.ID))
	}
	situations[s.Kind] = &s
	Kinds = append(Kinds, s.Kind)
	slices.Sort(Kinds)
}

// SituationOf is k's situation; an unknown kind gets a neutral one named
// after its number.
func SituationOf(k Kind) Situation { return *situationOf(k) }

func situationOf(k Kind) *Situation {
	if k < 0 || int(k) >= len(situations) || situations[k] == nil {
		return &Situation{Kind: k, ID: fmt.Sprintf("kind(%d)", int(k)), Title: fmt.Sprintf("kind(%d)", int(k)), Tone: ToneNeutral}
	}
	return situations[k]
}

// InputBoundKinds are the kinds where the accelerator waits on the input
// pipeline, in order.
func InputBoundKinds() []Kind {
	var out []Kind
	for _, k := range Kinds {
		if situations[k].InputBound {
			out = append(out, k)
		}
	}
	return out
}

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
// its tone, the profile stage it expects, the rules that decide it, its
// advice, and the recordings that show it. Each lives in its own file
// (situation_<id>.go), which registers it; Kinds, Title, Problem, the
// decision table and the views' colours are built from the registry
// (docs/architecture.md, "a verdict kind").
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
	// Practice are lines of Advice that say what practice teaches for
	// the kind, not what this window shows: where a cause beneath the
	// kind is named (cause.go, with its evidence, fix and bound) they go,
	// so that a guess never stands beside, or against, what was found.
	Practice []string
	// rules are the rows of the decision table that name this situation,
	// each placed in the order by precedence (classify.go). Every
	// situation but WarmingUp (decided by the window's length, before any
	// rule) has at least one.
	rules []rule
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
	for _, r := range s.rules {
		table.place(&s, r)
	}
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

// variant names which of a situation's rules decided it, where its advice
// or confidence differs by rule: io_bound's "remote" store, say, is advised
// otherwise than its busy "disk". The empty variant is a situation's only,
// or usual, rule. Each situation declares its variants in its own file.
type variant string

// variantHostOnly is the variant of every host-only rule: without any
// accelerator signal the verdict says what the host shows, with half the
// confidence and the advice to look where the accelerator is. It belongs
// to the rule, not to the window: a memory-pressed window without an
// accelerator is judged by the memory rules, and is not host-only.
const variantHostOnly variant = "host-only"

// rule is one row of the decision table: its name (its key in precedence
// is "<situation id>/<name>"), what it sees in words, the variant it gives
// its situation, and its test. holds returns the evidence (and secondary
// findings) when the rule holds; the table fills in the kind and variant.
type rule struct {
	name    string
	sees    string
	variant variant
	holds   func(f *facts) (decision, bool)
}

// ruleRow is a rule in its place in the table.
type ruleRow struct {
	kind Kind
	rule
}

// ruleTable is the decision table: per phase, a row per precedence key,
// filled as the situations register. unplaced are the rules whose key
// precedence lacks (TestEveryRuleHasItsPlace reports them).
type ruleTable struct {
	rows     [phases][]ruleRow
	unplaced []string
}

var table = newRuleTable()

func newRuleTable() *ruleTable {
	t := &ruleTable{}
	for p, keys := range precedence {
		t.rows[p] = make([]ruleRow, len(keys))
	}
	return t
}

// place puts s's rule r in its row.
func (t *ruleTable) place(s *Situation, r rule) {
	key := s.ID + "/" + r.name
	for p, keys := range precedence {
		if i := slices.Index(keys, key); i >= 0 && t.rows[p][i].holds == nil {
			t.rows[p][i] = ruleRow{kind: s.Kind, rule: r}
			return
		}
	}
	t.unplaced = append(t.unplaced, key)
}

// first is the decision of phase p's first rule that holds.
func (t *ruleTable) first(p phase, f *facts) (decision, bool) {
	for i := range t.rows[p] {
		row := &t.rows[p][i]
		if row.holds == nil {
			continue
		}
		if d, ok := row.holds(f); ok {
			d.kind, d.variant = row.kind, row.variant
			return d, true
		}
	}
	return decision{}, false
}

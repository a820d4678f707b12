package diagnose

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/sample"
)

// TestEverySituationIsWhole fails on a kind someone forgot a part of: a
// gap in the kind values, an identifier that is not a stable snake_case
// word, no title or tone, a problem with no advice, no rule that decides
// it (or a rule without its name, words or test), neither a recording
// that shows it nor the reason there is none, or no row in
// docs/diagnosis.md's verdict table. Adding a kind is one situation file
// (and its rules' keys in precedence), one recording, one golden line and
// one doc paragraph (docs/architecture.md, "a verdict kind").
func TestEverySituationIsWhole(t *testing.T) {
	doc, err := os.ReadFile("../docs/diagnosis.md")
	if err != nil {
		t.Fatal(err)
	}
	id := regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)
	seen := map[string]bool{}
	for i, s := range situations {
		if s == nil {
			t.Errorf("kind %d is not registered: kind values are dense from 0", i)
			continue
		}
		if int(s.Kind) != i || Kinds[i] != s.Kind {
			t.Errorf("%s: kind %d registered at %d", s.ID, s.Kind, i)
		}
		if !id.MatchString(s.ID) || seen[s.ID] {
			t.Errorf("kind %d: identifier %q is not a new snake_case word", i, s.ID)
		}
		seen[s.ID] = true
		if s.Title == "" {
			t.Errorf("%s has no title", s.ID)
		}
		if s.Tone < ToneNeutral || s.Tone > ToneBad {
			t.Errorf("%s has no tone", s.ID)
		}
		if s.Problem() && s.Advice == nil {
			t.Errorf("%s is a problem with no advice", s.ID)
		}
		for _, f := range ruleFaults(s) {
			t.Errorf("%s: %s", s.ID, f)
		}
		if (len(s.Scenarios) == 0) == (s.NoRecording == "") {
			t.Errorf("%s: name the recordings that show it (Scenarios) or say why there is none (NoRecording), not both", s.ID)
		}
		for _, sc := range s.Scenarios {
			if _, err := os.Stat("testdata/" + sc + ".jsonl"); err != nil && !recordedInTour(t, sc) {
				t.Errorf("%s: scenario %q has no recording under testdata/", s.ID, sc)
			}
		}
		if !strings.Contains(string(doc), "| `"+s.ID+"` |") {
			t.Errorf("%s has no row in docs/diagnosis.md's verdict table", s.ID)
		}
		if s.InputBound && !s.Problem() {
			t.Errorf("%s waits on input but is not a problem", s.ID)
		}
	}
	if WarmingUp != 0 {
		t.Error("WarmingUp must be the zero Kind: a zero Verdict is warming up")
	}
}

// ruleFaults is what s lacks of its rules: at least one (but WarmingUp,
// which the window's length decides before any rule), each with a name,
// what it sees in words, and its test.
func ruleFaults(s *Situation) []string {
	var out []string
	if len(s.rules) == 0 && s.Kind != WarmingUp {
		out = append(out, "no rule decides it: declare its rows (Situation.rules) and place each in precedence (classify.go)")
	}
	for i, r := range s.rules {
		if r.name == "" || r.sees == "" || r.holds == nil {
			out = append(out, fmt.Sprintf("rule %d (%q) lacks its name, its words (sees) or its test (holds)", i, r.name))
		}
	}
	return out
}

// TestRuleFaultsSeeAMissingRule: ruleFaults fails a situation without a
// rule and a rule without its test, and passes a whole one, so
// TestEverySituationIsWhole can fail on them.
func TestRuleFaultsSeeAMissingRule(t *testing.T) {
	holds := func(*facts) (decision, bool) { return decision{}, true }
	for _, c := range []struct {
		s     Situation
		fails bool
	}{
		{Situation{Kind: 99, ID: "no_rule"}, true},
		{Situation{Kind: 99, ID: "no_test", rules: []rule{{name: "x", sees: "x"}}}, true},
		{Situation{Kind: 99, ID: "no_words", rules: []rule{{name: "x", holds: holds}}}, true},
		{Situation{Kind: 99, ID: "whole", rules: []rule{{name: "x", sees: "x", holds: holds}}}, false},
		{Situation{Kind: WarmingUp, ID: "warming_up"}, false},
	} {
		if got := len(ruleFaults(&c.s)) > 0; got != c.fails {
			t.Errorf("%s: faults %v, want %v", c.s.ID, ruleFaults(&c.s), c.fails)
		}
	}
	tb := newRuleTable()
	tb.place(&Situation{Kind: 99, ID: "no_such"}, rule{name: "rule"})
	if !slices.Equal(tb.unplaced, []string{"no_such/rule"}) {
		t.Errorf("a rule precedence lacks is unplaced %v, want [no_such/rule]", tb.unplaced)
	}
}

// TestEveryRuleHasItsPlace: every key in precedence names a registered
// rule, once, and every registered rule has a key, so no rule is silently
// never tried and no row is silently empty.
func TestEveryRuleHasItsPlace(t *testing.T) {
	for _, key := range table.unplaced {
		t.Errorf("rule %s has no place in precedence (classify.go), or is declared twice", key)
	}
	seen := map[string]bool{}
	for p, keys := range precedence {
		if len(keys) == 0 {
			t.Errorf("phase %d has no rules", p)
		}
		for i, key := range keys {
			if seen[key] {
				t.Errorf("precedence names %s twice", key)
			}
			seen[key] = true
			if row := table.rows[p][i]; row.holds == nil || row.kind.String()+"/"+row.name != key {
				t.Errorf("precedence names %s, but no situation declares that rule", key)
			}
		}
	}
}

// TestEveryPhaseEndsOnARuleThatHolds: the last rule of each phase holds
// on any facts (here, a window that shows nothing), so decide always
// names a kind, and the phase's own: a memory-pressed window is never
// judged healthy by falling through.
func TestEveryPhaseEndsOnARuleThatHolds(t *testing.T) {
	for p := range phases {
		rows := table.rows[p]
		last := rows[len(rows)-1]
		f := &facts{w: &window{}, th: DefaultThresholds()}
		if _, ok := last.holds(f); !ok {
			t.Errorf("phase %d ends on %s/%s, which does not hold on an empty window", p, last.kind, last.name)
		}
	}
}

// recordedInTour says whether the demo tour's recording holds a stretch
// of scenario sc.
func recordedInTour(t *testing.T, sc string) bool {
	for _, l := range readRecording(t, "testdata/tour.jsonl") {
		if l.Type == "scenario" && l.Name == sc {
			return true
		}
	}
	return false
}

// TestAlertRulesCoverEveryProblem: the alert rules file's input-bound set
// is exactly the input-bound situations, and every problem kind is
// alerted on, through that set or by name. A new kind missing there would
// never page anyone.
func TestAlertRulesCoverEveryProblem(t *testing.T) {
	b, err := os.ReadFile("../docs/prometheus-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	rules := string(b)
	m := regexp.MustCompile(`record: gpuwatch:node_input_bound\s+expr: [^\n]*kind=~"([a-z_|]+)"`).FindStringSubmatch(rules)
	if m == nil {
		t.Fatal("no gpuwatch:node_input_bound recording rule with a kind=~ set")
	}
	got := strings.Split(m[1], "|")
	var want []string
	for _, k := range InputBoundKinds() {
		want = append(want, k.String())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the input-bound set is %v, the input-bound situations are %v", got, want)
	}
	alerts := regexp.MustCompile(`(?s)- alert: .*`).FindString(rules)
	for _, k := range Kinds {
		s := situationOf(k)
		if !s.Problem() {
			continue
		}
		byName := strings.Contains(alerts, `kind="`+s.ID+`"`)
		bySet := s.InputBound && strings.Contains(alerts, "gpuwatch:node_input_bound")
		if !byName && !bySet {
			t.Errorf("no alert fires on %s", s.ID)
		}
	}
}

// TestStarvedNeverCallsABusyHostUnsaturatedWithoutTheReason: gpu_starved
// says no host resource is saturated in the figure the CPU rules judged.
// A host that reads 100 % busy because the training process's BLAS pool
// spins says so, with the work share; a confined job's is its use of its
// limit, not the host's busy share (a review read "no host resource is
// saturated: CPU 100 % busy").
func TestStarvedNeverCallsABusyHostUnsaturatedWithoutTheReason(t *testing.T) {
	th := DefaultThresholds()
	spin := &window{cores: 2, cpuBusy: level{v: 100, ok: true}, spinPct: level{v: 80, ok: true}}
	quiet := &window{cores: 2, cpuBusy: level{v: 35, ok: true}}
	// Spinning, but the cores read under the bar anyway: the raw figure.
	lightSpin := &window{cores: 2, cpuBusy: level{v: 60, ok: true}, spinPct: level{v: 40, ok: true}}
	// The spin read apart from the busy share, larger than it: all of it.
	overSpin := &window{cores: 2, cpuBusy: level{v: 95.6, ok: true}, spinPct: level{v: 230, ok: true}}
	// Leaving cpu_saturated: the bar is 80, and 85 % of work holds it.
	leaving := &window{cores: 2, cpuBusy: level{v: 96.6, ok: true}, spinPct: level{v: 40, ok: true}, shown: CPUSaturated}
	confined := &window{cores: 8, cpuBusy: level{v: 100, ok: true}, jobUsed: level{v: 1.1, ok: true},
		job: &sample.Job{CPUCapacityCores: 2}}
	for _, c := range []struct {
		name string
		w    *window
		want string
		v    float64 // the evidence's value, under its threshold
		bar  float64
	}{
		{"spinning pool", spin, "no host resource is saturated: the cores read 100 % busy, but 40 points of it are compute threads spinning idle (they yield to work): 60 % is work", 60, 90},
		{"quiet host", quiet, "no host resource is saturated: CPU 35 % busy", 35, 90},
		{"spin under the bar", lightSpin, "no host resource is saturated: CPU 60 % busy", 60, 90},
		{"spin read above busy", overSpin, "no host resource is saturated: the cores read 96 % busy, but 96 points of it are compute threads spinning idle (they yield to work): 0 % is work", 0, 90},
		{"leaving saturation", leaving, "no host resource is saturated: the cores read 97 % busy, but 20 points of it are compute threads spinning idle (they yield to work): 77 % is work", 76.6, 80},
		{"confined job", confined, "the job's CPUs are not saturated: it may use 2 and used 1.1", 1.1, 1.8},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, sat := cpuEvidence(c.w, th); sat {
				t.Fatal("the CPU rules judge this window saturated")
			}
			d, ok := starvedRule(&facts{w: c.w, th: th})
			if !ok {
				t.Fatal("starved does not hold")
			}
			var got []string
			found := 0
			for _, e := range d.evidence {
				got = append(got, e.Text)
				if strings.Contains(e.Text, "saturated") {
					found++
					if e.Text != c.want || math.Abs(e.Value-c.v) > 1e-9 || e.Op != "<" || math.Abs(e.Threshold-c.bar) > 1e-9 {
						t.Errorf("%q carries %g %s %g, want %q with %g < %g", e.Text, e.Value, e.Op, e.Threshold, c.want, c.v, c.bar)
					}
				}
			}
			if found != 1 {
				t.Errorf("evidence %q: want one line on the CPUs, %q", got, c.want)
			}
		})
	}
}

// TestAVerdictsListsAreArraysInJSON (a review): a warming-up verdict's
// evidence and advice were null in every JSON frame, where docs/json.md
// calls them arrays; a consumer iterating over them got null.
func TestAVerdictsListsAreArraysInJSON(t *testing.T) {
	b, err := json.Marshal(Verdict{Kind: WarmingUp})
	if err != nil {
		t.Fatal(err)
	}
	// Written as the writers write the rest (their encoders do not
	// escape HTML): "<" stays "<" (a review: every verdict line read
	// "op":"\u003c").
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(Verdict{Kind: CPUSaturated, Evidence: []Evidence{{Metric: "a", Op: "<", Text: "x < y & z"}}}); err != nil {
		t.Fatal(err)
	}
	if s := buf.String(); !strings.Contains(s, `"op":"<"`) || !strings.Contains(s, `"x < y & z"`) || strings.HasSuffix(s, "\n\n") {
		t.Errorf("%s: escaped, or a newline inside", s)
	}
	for _, want := range []string{`"evidence":[]`, `"advice":[]`, `"kind":"warming_up"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s: want %s", b, want)
		}
	}
	var back Verdict
	if err := json.Unmarshal(b, &back); err != nil || back.Kind != WarmingUp {
		t.Errorf("read back: %+v, %v", back, err)
	}
}

// TestNoAugmentationsToAGPUThatIsNot (a review): a job on a box without
// a GPU was told "move augmentations to the GPU". The embedded loader's
// virtual accelerator stands for one (the demo's); a real loop with no
// GPU read, or one the hook read on the CPU, has none.
func TestNoAugmentationsToAGPUThatIsNot(t *testing.T) {
	for _, c := range []struct {
		name  string
		w     window
		noGPU bool
	}{
		{"the demo's loader", window{loaderKind: "embedded", virtualBusy: level{v: 50, ok: true}}, false},
		{"a sampled loop, no GPU", window{loaderKind: "", virtualBusy: level{v: 50, ok: true}}, true},
		{"the hook, no GPU", window{loaderKind: "python", virtualBusy: level{v: 50, ok: true}}, true},
		{"a GPU", window{loaderKind: "python", gpuUtil: level{v: 50, ok: true}}, false},
		{"a GPU, the model on the CPU", window{loaderKind: "python", gpuUtil: level{v: 50, ok: true}, gpu: gpuStep{settings: &sample.JobSettings{Device: "cpu"}}}, true},
		{"mps, no NVML", window{loaderKind: "python", virtualBusy: level{v: 50, ok: true}, gpu: gpuStep{settings: &sample.JobSettings{Device: "mps"}}}, false},
	} {
		if got := noGPUStep(&c.w); got != c.noGPU {
			t.Errorf("%s: no GPU step %v, want %v", c.name, got, c.noGPU)
		}
	}
}

package diagnose

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestEverySituationIsWhole fails on a kind someone forgot a part of: a
// gap in the kind values, an identifier that is not a stable snake_case
// word, no title or tone, a problem with no advice, neither a recording
// that shows it nor the reason there is none, or no row in
// docs/diagnosis.md's verdict table. Adding a kind is one situation file,
// one recording, one golden line and one doc paragraph
// (docs/architecture.md, "a verdict kind").
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

package sample

import (
	"os"
	"reflect"
	"regexp"
	"strconv"
	"testing"
)

// TestKnobTableMatchesTheHook: every series the table names is one the
// Python hook serves, and every DataLoader knob the hook reports is in
// the table; names and flags are unique. A renamed metric in the hook
// would otherwise read as "not reported" for ever.
func TestKnobTableMatchesTheHook(t *testing.T) {
	src, err := os.ReadFile("../python/gpuwatch_hook/_timing.py")
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, m := range regexp.MustCompile(`"(gpuwatch_loader_[a-z_]+)"`).FindAllStringSubmatch(string(src), -1) {
		served[m[1]] = true
	}
	seen := map[string]bool{}
	for _, k := range KnobTable {
		for _, n := range []string{k.Name, k.Flag} {
			if seen[n] && n != k.Name {
				t.Errorf("%q names two knobs", n)
			}
		}
		seen[k.Name], seen[k.Flag] = true, true
		if k.PyTorch && !served[k.Series] {
			t.Errorf("%s: the hook serves no %q", k.Name, k.Series)
		}
		if KnobNamed(k.Name) != k || KnobNamed(k.Flag) != k {
			t.Errorf("%s: not found by its names", k.Name)
		}
	}
	for _, s := range []string{"gpuwatch_loader_workers", "gpuwatch_loader_prefetch", "gpuwatch_loader_persistent_workers", "gpuwatch_loader_pin_memory"} {
		if !served[s] {
			t.Errorf("the hook no longer serves %s", s)
			continue
		}
		found := false
		for _, k := range KnobTable {
			found = found || k.Series == s
		}
		if !found {
			t.Errorf("the hook serves %s, which no knob reads", s)
		}
	}
}

// TestKnobParseSpellsOneWay: a value has one spelling, and what a knob
// does not take is refused with its name.
func TestKnobParseSpellsOneWay(t *testing.T) {
	for _, c := range []struct {
		k       *Knob
		in, out string
		bad     bool
	}{
		{KnobWorkers, "01", "1", false}, {KnobWorkers, "-1", "", true}, {KnobWorkers, "5000", "", true},
		{KnobPersistent, "True", "true", false}, {KnobPin, "0", "false", false}, {KnobPin, "yes", "", true},
		{KnobAccess, "subseq", "subseq", false}, {KnobAccess, "zigzag", "", true},
	} {
		got, err := c.k.Parse(c.in)
		if (err != nil) != c.bad || got != c.out {
			t.Errorf("%s %q: %q, %v", c.k.Name, c.in, got, err)
		}
	}
	if KnobWorkers.SetBy(true) != "num_workers" || KnobWorkers.SetBy(false) != "--workers" || KnobCache.SetBy(true) != "--cache" {
		t.Fatal("SetBy")
	}
}

// TestHangWaitIsTheHooks: the hook says a wait under way past HANG_SEC,
// and the watcher calls a wait of HangWait a hang; the two must be the
// same figure, or a wait the hook has not said yet would be judged.
func TestHangWaitIsTheHooks(t *testing.T) {
	src, err := os.ReadFile("../python/gpuwatch_hook/_timing.py")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^HANG_SEC = ([0-9.]+)$`).FindSubmatch(src)
	if m == nil {
		t.Fatal("no HANG_SEC = N line in the hook's _timing.py")
	}
	if sec, err := strconv.ParseFloat(string(m[1]), 64); err != nil || sec != HangWait.Seconds() {
		t.Errorf("the hook's HANG_SEC %s, sample.HangWait %v", m[1], HangWait)
	}
}

// TestPayloadTensorsAreTheHooks: the model reads a payload listing
// MaxPayloadTensors tensors as cut (the batch may hold more); the hook
// lists at most MAX_SHOWN and the frame's check keeps at most its tag's
// max: the three must be the same figure.
func TestPayloadTensorsAreTheHooks(t *testing.T) {
	src, err := os.ReadFile("../python/gpuwatch_hook/_payload.py")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^MAX_SHOWN = ([0-9]+)$`).FindSubmatch(src)
	if m == nil {
		t.Fatal("no MAX_SHOWN = N line in the hook's _payload.py")
	}
	f, _ := reflect.TypeOf(BatchPayload{}).FieldByName("Tensors")
	if string(m[1]) != strconv.Itoa(MaxPayloadTensors) || f.Tag.Get("check") != "max="+strconv.Itoa(MaxPayloadTensors) {
		t.Errorf("the hook's MAX_SHOWN %s, the check tag %q, sample.MaxPayloadTensors %d", m[1], f.Tag.Get("check"), MaxPayloadTensors)
	}
}

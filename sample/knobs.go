package sample

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// KnobType is the kind of value a knob takes.
type KnobType int

// The knob types.
const (
	KnobInt    KnobType = iota // a whole number in [Min, Max]
	KnobBool                   // true or false
	KnobChoice                 // one of Choices
)

// Knob is one loader setting gpuwatch reads, models, tunes and advises:
// its PyTorch DataLoader keyword, the embedded loader's flag, the loader
// protocol's series, the values it takes. The table (KnobTable) is the one
// vocabulary: the model, tune, sweep, the CLI, the loader probe and the
// dashboard read it, and TestKnobTableMatchesTheHook holds it to the
// Python hook's metric names.
type Knob struct {
	// Name is the PyTorch DataLoader keyword ("num_workers"), or, for a
	// knob only gpuwatch's own loader has, its flag.
	Name string
	// Flag is the embedded loader's flag, without dashes ("workers"), and
	// the key of Loader.Knobs.
	Flag string
	// Series is the loader protocol's gauge for it; "" when no loader
	// reports it.
	Series string
	Type   KnobType
	// Min and Max bound a KnobInt.
	Min, Max int
	// Choices are a KnobChoice's values.
	Choices []string
	// PyTorch says it is a DataLoader keyword: a placeholder in the
	// command tune and sweep run may name it.
	PyTorch bool
}

// The knobs, in display order.
var (
	KnobWorkers    = &Knob{Name: "num_workers", Flag: "workers", Series: "gpuwatch_loader_workers", Type: KnobInt, Min: 0, Max: 4096, PyTorch: true}
	KnobPrefetch   = &Knob{Name: "prefetch_factor", Flag: "prefetch", Series: "gpuwatch_loader_prefetch", Type: KnobInt, Min: 0, Max: 4096, PyTorch: true}
	KnobPersistent = &Knob{Name: "persistent_workers", Flag: "persistent", Series: "gpuwatch_loader_persistent_workers", Type: KnobBool, PyTorch: true}
	KnobPin        = &Knob{Name: "pin_memory", Flag: "pin", Series: "gpuwatch_loader_pin_memory", Type: KnobBool, PyTorch: true}
	KnobCache      = &Knob{Name: "cache", Flag: "cache", Type: KnobBool}
	KnobAccess     = &Knob{Name: "access", Flag: "access", Type: KnobChoice, Choices: []string{"seq", "random", "subseq"}}
)

// PrefetchWithWorkers is the prefetch_factor a loader with workers has
// when none is set: PyTorch's default, which the embedded loader and the
// model take too.
const PrefetchWithWorkers = 2

// KnobTable is every knob, in display order.
var KnobTable = []*Knob{KnobWorkers, KnobPrefetch, KnobPersistent, KnobPin, KnobCache, KnobAccess}

// KnobNamed is the knob called name, by its PyTorch name or its flag; nil
// for none.
func KnobNamed(name string) *Knob {
	for _, k := range KnobTable {
		if k.Name == name || k.Flag == name {
			return k
		}
	}
	return nil
}

// PyTorchKnobs are the DataLoader keywords, in display order.
func PyTorchKnobs() []string {
	var out []string
	for _, k := range KnobTable {
		if k.PyTorch {
			out = append(out, k.Name)
		}
	}
	return out
}

// KnobFlags are the embedded loader's flags, in display order.
func KnobFlags() []string {
	out := make([]string, len(KnobTable))
	for i, k := range KnobTable {
		out[i] = k.Flag
	}
	return out
}

// Parse checks a value and returns it in its one spelling ("01" → "1",
// "True" → "true").
func (k *Knob) Parse(v string) (string, error) {
	switch k.Type {
	case KnobInt:
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < k.Min || n > k.Max {
			return "", fmt.Errorf("%s: want a whole number from %d to %d, not %q", k.Name, k.Min, k.Max, Printable(v))
		}
		return strconv.Itoa(n), nil
	case KnobBool:
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return "", fmt.Errorf("%s: want true or false, not %q", k.Name, Printable(v))
		}
		return strconv.FormatBool(b), nil
	}
	if !slices.Contains(k.Choices, v) {
		return "", fmt.Errorf("%s: want one of %s, not %q", k.Name, strings.Join(k.Choices, ", "), Printable(v))
	}
	return v, nil
}

// SetBy is how the knob is set on a loader: the DataLoader keyword for a
// Python loader ("num_workers"), the embedded loader's flag otherwise
// ("--workers"). A knob only gpuwatch's loader has is always its flag.
func (k *Knob) SetBy(python bool) string {
	if python && k.PyTorch {
		return k.Name
	}
	return "--" + k.Flag
}

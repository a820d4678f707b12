package tune

import (
	"testing"

	"github.com/gpuwatch/gpuwatch/loader"
	"github.com/gpuwatch/gpuwatch/sample"
)

// TestEmbeddedLoaderSpeaksTheKnobTable: the embedded loader (which may
// import nothing) reports every knob of sample.KnobTable under its flag,
// and each reported value parses as that knob's; tune and sweep set them
// by the same names.
func TestEmbeddedLoaderSpeaksTheKnobTable(t *testing.T) {
	have := loader.Default().Knobs()
	for _, k := range sample.KnobTable {
		v, ok := have[k.Flag]
		if !ok {
			t.Errorf("the embedded loader does not report %s (flag %q)", k.Name, k.Flag)
			continue
		}
		if _, err := k.Parse(v); err != nil {
			t.Errorf("the embedded loader reports %s=%q: %v", k.Flag, v, err)
		}
	}
	e := &EmbeddedTrials{Base: loader.Default()}
	s := e.Start(loader.Default())
	if _, err := e.config(s); err != nil {
		t.Fatalf("its own setting does not apply: %v", err)
	}
	if _, err := e.config(Setting{"num_workers": "2"}); err == nil {
		t.Fatal("a PyTorch keyword set the embedded loader: it takes its flags")
	}
}

package diagnose

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/gpuwatch/gpuwatch/sample"
)

// FuzzThresholdSet: overrides come from the command line.
func FuzzThresholdSet(f *testing.F) {
	for _, s := range []string{"wait_share_starved=0.3", "enter_hold=4s", "min_frames=2", "x=", "=1", "disk_busy_pct=NaN"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, kv string) {
		th := DefaultThresholds()
		if err := th.Set(kv); err == nil {
			if th.Validate() != nil {
				t.Fatalf("Set accepted %q into invalid thresholds", kv)
			}
		}
	})
}

// FuzzClassifyRecordedFrames: replayed recordings are outside input. Any
// frames that decode must classify without a panic, with a confidence in
// range and a known kind.
func FuzzClassifyRecordedFrames(f *testing.F) {
	f.Add([]byte(`{"time":"2026-11-21T09:00:00Z","cpu":{"cores":[{"id":0,"busy_pct":99}],"busy_pct":99},"loader":{"wait_share":0.5,"workers":0}}`))
	f.Add([]byte(`{"time":"2026-11-21T09:00:00Z","gpus":[{"index":0,"util_pct":50,"util_samples":{"p5":0,"p95":100}}],"psi":{"io":{"some_pct":80}}}`))
	f.Add([]byte(`{"time":"2026-11-21T09:00:00Z","gpus":[{"lost":true}],"mem":{"swap_in_pages_per_sec":1e9}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var fr sample.Frame
		if json.Unmarshal(data, &fr) != nil {
			return
		}
		frames := []sample.Frame{fr, fr, fr}
		for i := range frames {
			frames[i].Time = frames[i].Time.Add(1e9 * 1)
		}
		v := Classify(frames, DefaultThresholds())
		if !(v.Confidence >= 0 && v.Confidence <= 1) || math.IsNaN(v.Confidence) {
			t.Fatalf("confidence %v", v.Confidence)
		}
		if b, err := v.Kind.MarshalText(); err != nil || bytes.HasPrefix(b, []byte("kind(")) {
			t.Fatalf("unknown kind %v", v.Kind)
		}
		d := NewDiagnoser(DefaultThresholds())
		for i := range frames {
			d.Observe(&frames[i])
		}
	})
}

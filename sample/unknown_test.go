package sample

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestUnknownRatesAreNull: a loader that does not answer, a sampled
// loop, or a loader read once so far writes null rates, never 0 (issue
// 41, item 3); an answering one writes its numbers, 0 included.
func TestUnknownRatesAreNull(t *testing.T) {
	no, yes := false, true
	since := time.Unix(0, 0).UTC()
	for _, c := range []struct {
		name string
		v    any
		want []string
	}{
		{"disconnected", Loader{Source: "http://x", Connected: &no, DisconnectedSince: &since},
			[]string{`"batches_per_sec":null`, `"samples_per_sec":null`, `"bytes_per_sec":null`, `"connected":false`}},
		{"sampled", Loader{Source: "sampled", Sampled: &SampledLoop{Samples: 3}},
			[]string{`"batches_per_sec":null`, `"sampled":{`}},
		{"first reading", Loader{Source: "http://x", Connected: &yes, RatesPending: true},
			[]string{`"batches_per_sec":null`, `"samples_per_sec":null`, `"rates_pending":true`, `"connected":true`}},
		{"answering and stopped", Loader{Source: "http://x", Connected: &yes},
			[]string{`"batches_per_sec":0`, `"samples_per_sec":0`, `"bytes_per_sec":0`}},
		{"ceiling replaying", Loader{Source: "http://x", Connected: &yes, Ceiling: &Ceiling{State: CeilingReplaying}},
			[]string{`"batches_per_sec":null`, `"samples_per_sec":null`, `"bytes_per_sec":null`, `"state":"replaying"`}},
		// The Python hook counts no bytes: a recording from before
		// bytes_not_counted holds its 0 (a review read "0B/s").
		{"the hook, before the flag", Loader{Source: "http://x", Kind: "python", Connected: &yes, BatchesPerSec: 4, SamplesPerSec: 512},
			[]string{`"batches_per_sec":4`, `"bytes_per_sec":null`}},
		{"rank replaying", Rank{URL: "http://x", Connected: true, Loader: &Loader{Ceiling: &Ceiling{State: CeilingReplaying}}},
			[]string{`"batches_per_sec":null`, `"samples_per_sec":null`}},
		{"rank down", Rank{URL: "http://x", Connected: false}, []string{`"batches_per_sec":null`, `"connected":false`}},
		{"rank read once", Rank{URL: "http://x", Connected: true, RatesPending: true}, []string{`"batches_per_sec":null`, `"rates_pending":true`}},
		{"rank up", Rank{URL: "http://x", Connected: true, BatchesPerSec: 7}, []string{`"batches_per_sec":7`}},
	} {
		b, err := json.Marshal(c.v)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range c.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s: %s lacks %s", c.name, b, w)
			}
		}
		if strings.Count(string(b), `"batches_per_sec"`) != 1 {
			t.Errorf("%s: %s", c.name, b)
		}
	}
	// Read back, an unknown rate is 0 in memory (with the reason beside it).
	var l Loader
	if err := json.Unmarshal([]byte(`{"source":"x","connected":false,"batches_per_sec":null}`), &l); err != nil || l.BatchesPerSec != 0 || !l.RatesUnknown() {
		t.Errorf("read back: %+v %v", l, err)
	}
}

// TestASampledLoopOutlivesADisconnectedLoader: merged in either order, a
// frame keeps the sampled loop rather than a loader that does not answer;
// an answering loader still wins over the sampled loop.
func TestASampledLoopOutlivesADisconnectedLoader(t *testing.T) {
	no, yes := false, true
	sampled := &Loader{Source: "sampled", Sampled: &SampledLoop{Samples: 5}, WaitShare: new(float64)}
	down := &Loader{Source: "http://127.0.0.1:1", Connected: &no}
	up := &Loader{Source: "http://127.0.0.1:1", Connected: &yes, BatchesPerSec: 9000}
	for _, order := range [][2]*Loader{{sampled, down}, {down, sampled}} {
		var f Frame
		f.Merge(&Frame{Loader: order[0]})
		f.Merge(&Frame{Loader: order[1]})
		if f.Loader != sampled {
			t.Errorf("merged %s then %s: kept %s", order[0].Source, order[1].Source, f.Loader.Source)
		}
	}
	var f Frame
	f.Merge(&Frame{Loader: sampled})
	f.Merge(&Frame{Loader: up})
	if f.Loader != up {
		t.Errorf("an answering loader lost to the sampled loop")
	}
}

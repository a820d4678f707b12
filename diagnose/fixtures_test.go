package diagnose

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/sample"
)

// expected maps the embedded loader's scenarios to the verdict each must
// produce: each situation names its own (Situation.Scenarios). A function:
// the situations register in init, after package variables are set.
func expected() map[string]Kind {
	m := map[string]Kind{}
	for _, k := range Kinds {
		for _, sc := range situationOf(k).Scenarios {
			m[sc] = k
		}
	}
	return m
}

// expectedIn overrides expected for a recording of a preset with a knob
// changed: mmap-random with --access subseq is the fix.
var expectedIn = map[string]Kind{"mmap-subseq.jsonl": Healthy}

// recLine is a line of a recording: a frame or a scenario switch.
type recLine struct {
	Type string `json:"type"`
	Name string `json:"name"`
	sample.Frame
}

func readRecording(t *testing.T, path string) []recLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []recLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var kind struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(sc.Bytes(), &kind) == nil && kind.Type == "header" {
			continue // the recording's header (its gpus are names, not frames')
		}
		var l recLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, l)
	}
	return out
}

// segment is one scenario's stretch of a recording, replayed.
type segment struct {
	name     string
	start    time.Time // the scenario switch (or the first frame)
	times    []time.Time
	verdicts []Verdict
}

// replay feeds a recording through one Diagnoser, as the live session
// does, and splits the verdicts by scenario.
func replay(lines []recLine, th Thresholds) []segment {
	d := NewDiagnoser(th)
	var segs []segment
	for i := range lines {
		l := &lines[i]
		switch l.Type {
		case "scenario":
			segs = append(segs, segment{name: l.Name, start: l.Time})
		case "frame":
			if len(segs) == 0 {
				segs = append(segs, segment{start: l.Time})
			}
			s := &segs[len(segs)-1]
			s.times = append(s.times, l.Time)
			s.verdicts = append(s.verdicts, d.Observe(&l.Frame))
		}
	}
	return segs
}

// stableFrom is the index from which every verdict of the segment is want,
// or -1.
func (s *segment) stableFrom(want Kind) int {
	i := len(s.verdicts)
	for i > 0 && s.verdicts[i-1].Kind == want {
		i--
	}
	if i == len(s.verdicts) {
		return -1
	}
	return i
}

// TestRecordedRunsEndOnTheirVerdict replays real 60 s runs of every demo
// scenario, recorded on a 2-core VM, and a full tour: each must reach its
// expected verdict within 5 s of the switch and then never flip.
func TestRecordedRunsEndOnTheirVerdict(t *testing.T) {
	th := DefaultThresholds()
	files, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	if len(files) < 9 {
		t.Errorf("found %d recordings, want the 7 scenarios, mmap-random with subseq and the tour", len(files))
	}
	confusion := map[string]map[Kind]int{}
	for _, path := range files {
		segs := replay(readRecording(t, path), th)
		for i, s := range segs {
			if i == len(segs)-1 && len(segs) > 1 && len(s.verdicts) < 10 {
				t.Logf("%s: the last %d frames (%s) were cut off by the end of the recording", filepath.Base(path), len(s.verdicts), s.name)
				continue
			}
			want, ok := expected()[s.name]
			if k, over := expectedIn[filepath.Base(path)]; over {
				want, ok = k, true
			}
			if !ok {
				t.Fatalf("%s: scenario %q has no expected verdict", path, s.name)
			}
			label := fmt.Sprintf("%-14s %s", s.name, filepath.Base(path))
			row := map[Kind]int{}
			for _, v := range s.verdicts {
				row[v.Kind]++
			}
			confusion[label] = row
			from := s.stableFrom(want)
			if from < 0 {
				t.Errorf("%s: ends on %s, want %s", label, s.verdicts[len(s.verdicts)-1].Kind, want)
				continue
			}
			latency := s.times[from].Sub(s.start)
			t.Logf("%s: %s after %v, %d frames, stable to the end", label, want, latency.Round(time.Millisecond), len(s.verdicts)-from)
			if latency > 5*time.Second {
				t.Errorf("%s: %s only after %v (want ≤ 5 s)", label, want, latency)
			}
			// Changes before the stable stretch are the onset (warming up,
			// the loader filling its queue); after it there are none.
			changes := 0
			for i := 1; i < from; i++ {
				if s.verdicts[i].Kind != s.verdicts[i-1].Kind {
					changes++
				}
			}
			if changes > 2 {
				t.Errorf("%s: %d verdict changes before settling", label, changes)
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "verdicts shown per frame (rows: recording; warming_up included):\n%-40s", "")
	for _, k := range Kinds {
		fmt.Fprintf(&b, " %8.8s", k)
	}
	for label, row := range confusion {
		fmt.Fprintf(&b, "\n%-40s", label)
		for _, k := range Kinds {
			fmt.Fprintf(&b, " %8d", row[k])
		}
	}
	t.Log(b.String())
}

// TestMmapRandomAndSubseqDiffer replays the recorded mmap-random run and
// the same run with --access subseq: the first is io_bound through page
// faults on the mapped dataset, with the change to subseq among its
// changes; the second is healthy and delivers at least twice the samples.
func TestMmapRandomAndSubseqDiffer(t *testing.T) {
	th := DefaultThresholds()
	rate := func(lines []recLine) float64 {
		sum, n := 0.0, 0
		for _, l := range lines[len(lines)/2:] {
			if l.Loader != nil {
				sum, n = sum+l.Loader.SamplesPerSec, n+1
			}
		}
		return sum / float64(max(n, 1))
	}
	random := readRecording(t, filepath.Join("testdata", "mmap-random.jsonl"))
	subseq := readRecording(t, filepath.Join("testdata", "mmap-subseq.jsonl"))
	segs := replay(random, th)
	v := segs[len(segs)-1].verdicts[len(segs[len(segs)-1].verdicts)-1]
	if v.Kind != IOBound || !strings.Contains(v.Evidence[0].Text, "major page faults/s on its memory-mapped dataset") {
		t.Fatalf("mmap-random: %s, %+v", v.Kind, v.Evidence)
	}
	access := false
	for _, c := range v.Changes {
		access = access || c.Flag == "--access" && c.To == "subseq"
	}
	if !access || !strings.Contains(strings.Join(v.Advice, "\n"), "contiguous runs") {
		t.Fatalf("mmap-random: changes %+v, advice %q", v.Changes, v.Advice)
	}
	segs = replay(subseq, th)
	w := segs[len(segs)-1].verdicts[len(segs[len(segs)-1].verdicts)-1]
	if w.Kind != Healthy {
		t.Fatalf("mmap-random with subseq: %s, %+v", w.Kind, w.Evidence)
	}
	r, s := rate(random), rate(subseq)
	t.Logf("mmap-random: %.0f samples/s, %s; with subseq: %.0f samples/s (%.1f×), %s", r, v.Evidence[0].Text, s, s/r, w.Kind)
	if s < 2*r {
		t.Fatalf("subseq %.0f samples/s, random %.0f: want at least 2×", s, r)
	}
}

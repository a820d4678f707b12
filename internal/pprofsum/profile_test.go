package pprofsum

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/gpuwatch/gpuwatch/sample"
)

var updateGolden = flag.Bool("update", false, "rewrite golden files")

// synthetic builds a CPU profile from stacks (innermost first) and their
// sample counts, 10 ms each.
func synthetic(stacks map[string]int64) *profile.Profile {
	p := &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType:    &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:        1e7,
		DurationNanos: 5e9,
	}
	funcs := map[string]*profile.Function{}
	locs := map[string]*profile.Location{}
	for stack, n := range stacks {
		var ls []*profile.Location
		for _, name := range strings.Split(stack, ";") {
			if funcs[name] == nil {
				funcs[name] = &profile.Function{ID: uint64(len(funcs) + 1), Name: name}
				if call, ok := strings.CutPrefix(name, "C:"); ok { // "C:name@file": a C call, as the hook names it
					fn, file, _ := strings.Cut(call, "@")
					funcs[name] = &profile.Function{ID: uint64(len(funcs) + 1), Name: fn, SystemName: CCall, Filename: file}
				}
				p.Function = append(p.Function, funcs[name])
				locs[name] = &profile.Location{ID: uint64(len(locs) + 1), Line: []profile.Line{{Function: funcs[name]}}}
				p.Location = append(p.Location, locs[name])
			}
			ls = append(ls, locs[name])
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: ls, Value: []int64{n, n * 1e7}})
	}
	return p
}

func encode(t testing.TB, p *profile.Profile) []byte {
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestSummaryFlatCumAndCategories(t *testing.T) {
	p := synthetic(map[string]int64{
		"syscall.pread;os.(*File).ReadAt;main.load;main.main":       60,
		"hash/crc32.update;main.decode;main.load;main.main":         25,
		"runtime.chanrecv;main.next;main.main":                      10,
		"main.fib;main.fib;main.fib;main.main":                      4, // recursion: cum counts main.fib once
		"runtime.scanobject;runtime.gcDrain;runtime.gcBgMarkWorker": 1,
	})
	s, err := SummarizeProfile(encode(t, p), 5)
	if err != nil {
		t.Fatal(err)
	}
	share := map[string]float64{}
	for _, c := range s.Categories {
		share[c.Name] = c.Share
	}
	want := map[string]float64{"reading": 0.60, "decoding": 0.25, "waiting": 0.10, "gc": 0.01, "other": 0.04}
	for k, v := range want {
		near(t, "share of "+k, share[k], v)
	}
	near(t, "CPU seconds", s.CPUSec, 1.0)
	if s.Samples != 100 {
		t.Errorf("%d samples, want the count's sum, 100", s.Samples)
	}
	if s.Top[0].Name != "syscall.pread" {
		t.Fatalf("top = %+v", s.Top)
	}
	near(t, "pread flat", s.Top[0].Flat, 0.60)
	cum := map[string]float64{}
	for _, f := range summarizeAll(t, p) {
		cum[f.Name] = f.Cum
	}
	near(t, "main.main cum", cum["main.main"], 0.99)
	near(t, "main.load cum", cum["main.load"], 0.85)
	near(t, "main.fib cum (once per sample)", cum["main.fib"], 0.04)
}

func summarizeAll(t *testing.T, p *profile.Profile) []sample.ProfileFunc {
	s, err := summarize(p, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return s.Top
}

// TestRealLoaderProfileGolden summarizes a CPU profile taken from
// `gpuwatch loader --scenario io-bound` (testdata/attach) and compares
// the text with its golden file (-update rewrites it).
func TestRealLoaderProfileGolden(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "loader-io-bound.pb.gz"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := SummarizeProfile(data, 8)
	if err != nil {
		t.Fatal(err)
	}
	if s.Categories[0].Name != "reading" || s.Categories[0].Share < 0.5 {
		t.Fatalf("an io-bound loader's profile reads %.0f %% reading", 100*s.Categories[0].Share)
	}
	golden(t, "loader-io-bound.golden", summaryText(s))
}

// summaryText is a summary as golden files hold it.
func summaryText(s *sample.Profile) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cpu %.2fs in %.0fs\n", s.CPUSec, s.DurationSec)
	for _, c := range s.Categories {
		fmt.Fprintf(&b, "%-11s %5.1f%%\n", c.Name, 100*c.Share)
	}
	for _, f := range s.Top {
		fmt.Fprintf(&b, "%5.1f%% %5.1f%%  %s  %s:%d\n", 100*f.Flat, 100*f.Cum, f.Name, filepath.Base(f.File), f.Line)
	}
	return b.String()
}

// golden compares text with testdata/name (-update rewrites it).
func golden(t *testing.T, name, text string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if text != string(want) {
		t.Fatalf("summary differs from %s:\n%s", path, text)
	}
}

func TestBadProfilesAreRefusedWithAReason(t *testing.T) {
	real, _ := os.ReadFile(filepath.Join("testdata", "loader-io-bound.pb.gz"))
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write([]byte("this is not a protocol buffer, just text in gzip"))
	w.Close()
	for name, data := range map[string][]byte{
		"empty":        nil,
		"truncated":    real[:len(real)/2],
		"not gzip":     []byte("<html>no profile here</html>"),
		"not protobuf": gz.Bytes(),
	} {
		if _, err := SummarizeProfile(data, 5); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestSummaryRefusesValuesThatOverflow: sample values that add up past
// int64 gave negative CPU and shares (found by FuzzSummarizeProfile).
func TestSummaryRefusesValuesThatOverflow(t *testing.T) {
	p := synthetic(map[string]int64{"main.a": 1, "main.b": 1})
	for _, s := range p.Sample {
		s.Value[1] = math.MaxInt64/2 + 10
	}
	if s, err := SummarizeProfile(encode(t, p), 5); err == nil || !strings.Contains(err.Error(), "add up past") {
		t.Fatalf("summary %+v, error %v", s, err)
	}
}

// TestSummaryOneFunctionListedTwice: two function entries of one name
// are one function, its cum counted once per sample (it was the larger
// of the two entries' cums, below their summed flat).
func TestSummaryOneFunctionListedTwice(t *testing.T) {
	f1 := &profile.Function{ID: 1, Name: "main.work"}
	f2 := &profile.Function{ID: 2, Name: "main.work"}
	l1 := &profile.Location{ID: 1, Line: []profile.Line{{Function: f1}}}
	l2 := &profile.Location{ID: 2, Line: []profile.Line{{Function: f2}}}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}},
		Function:   []*profile.Function{f1, f2},
		Location:   []*profile.Location{l1, l2},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{l1}, Value: []int64{3}},
			{Location: []*profile.Location{l2}, Value: []int64{1}},
			{Location: []*profile.Location{l1, l2}, Value: []int64{4}}, // recursion across the two entries
		},
	}
	s, err := SummarizeProfile(encode(t, p), 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Top) != 1 || s.Top[0].Name != "main.work" || s.Top[0].Flat != 1 || s.Top[0].Cum != 1 {
		t.Fatalf("top %+v: want main.work once, flat and cum 100 %%", s.Top)
	}
}

func FuzzSummarizeProfile(f *testing.F) {
	real, _ := os.ReadFile(filepath.Join("testdata", "loader-io-bound.pb.gz"))
	f.Add(real)
	f.Add(encode(f, synthetic(map[string]int64{"a;b": 1})))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := SummarizeProfile(data, 5)
		if err != nil {
			return
		}
		sum := 0.0
		for _, c := range s.Categories {
			if c.Share < 0 || c.Share > 1 {
				t.Fatalf("share %v", c.Share)
			}
			sum += c.Share
		}
		if sum < 0.999 || sum > 1.001 {
			t.Fatalf("categories add up to %v", sum)
		}
		if s.CPUSec < 0 {
			t.Fatalf("%v s of CPU", s.CPUSec)
		}
		for _, fn := range s.Top {
			if fn.Flat < 0 || fn.Flat > fn.Cum+1e-9 || fn.Cum > 1+1e-9 {
				t.Fatalf("%s: flat %v cum %v", fn.Name, fn.Flat, fn.Cum)
			}
		}
	})
}

// bigProfile is a ~5 MB (gzipped) profile: 3000 functions, random stacks
// 8–40 deep, grown until it reaches the size.
func bigProfile(b *testing.B) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	stacks := map[string]int64{}
	var data []byte
	for len(data) < 5<<20 {
		for i := 0; i < 20000; i++ {
			depth := 8 + rng.IntN(32)
			parts := make([]string, depth)
			for d := range parts {
				parts[d] = fmt.Sprintf("pkg%d.func%d", rng.IntN(30), rng.IntN(100))
			}
			stacks[strings.Join(parts, ";")] += 1 + int64(rng.IntN(5))
		}
		data = encode(b, synthetic(stacks))
	}
	return data
}

// BenchmarkSummarize5MBProfile parses and summarizes bigProfile. Target
// ≤ 100 ms; BenchmarkProfileParts splits the time.
func BenchmarkSummarize5MBProfile(b *testing.B) {
	data := bigProfile(b)
	b.ReportMetric(float64(len(data))/(1<<20), "MiB")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := SummarizeProfile(data, 10); err != nil {
			b.Fatal(err)
		}
	}
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-6*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// TestWorkersCategoriesApart: samples labelled with a DataLoader worker's
// pid (the hook's merged profile under gpuwatch run) count in the whole
// profile and, apart, in the workers' own categories and share; a profile
// without them has neither.
func TestWorkersCategoriesApart(t *testing.T) {
	p := synthetic(map[string]int64{
		"PIL.ImageFile.ImageFile.load;ds.__getitem__":                   60, // a worker decoding
		"torchvision.transforms.functional.resized_crop;ds.__getitem__": 20, // a worker augmenting
		"pickle.loads;main.loop":                                        20, // the training process taking batches
	})
	for _, s := range p.Sample {
		if s.Location[len(s.Location)-1].Line[0].Function.Name == "ds.__getitem__" {
			s.Label = map[string][]string{"worker_pid": {"4242"}}
		}
	}
	s, err := SummarizeProfile(encode(t, p), 5)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "workers' share", s.WorkersShare, 0.8)
	share := map[string]float64{}
	for _, c := range s.Workers {
		share[c.Name] = c.Share
	}
	near(t, "workers' decoding", share["decoding"], 0.75)
	near(t, "workers' augmenting", share["augmenting"], 0.25)
	near(t, "workers' serializing", share["serializing"], 0)

	for _, s := range p.Sample {
		s.Label = nil
	}
	if s, err := SummarizeProfile(encode(t, p), 5); err != nil || s.WorkersShare != 0 || s.Workers != nil {
		t.Errorf("no worker labelled: workers share %v, categories %v (%v)", s.WorkersShare, s.Workers, err)
	}
}

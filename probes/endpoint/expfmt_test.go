package endpoint

// The reference for parseExposition: the loader protocol as expfmt's full
// parser reads it (CountersFromMetrics before the fast reader). The tests
// below require both to read every page alike.

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/internal/expo"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func countersViaExpfmt(text []byte) (LoaderCounters, map[string]string, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(text)))
	if err != nil {
		return LoaderCounters{}, nil, fmt.Errorf("not Prometheus text: %w", err)
	}
	var c LoaderCounters
	found := 0
	scalar := func(name string) (float64, bool) {
		f := fams[name]
		if f == nil || len(f.Metric) == 0 {
			return 0, false
		}
		found++
		m := f.Metric[0]
		var v float64
		switch {
		case m.Counter != nil:
			v = m.Counter.GetValue()
		case m.Gauge != nil:
			v = m.Gauge.GetValue()
		case m.Untyped != nil:
			v = m.Untyped.GetValue()
		default:
			return 0, false
		}
		// NaN and ±Inf are valid Prometheus text but no count of anything:
		// treated as absent, they cannot poison a rate or a share.
		return v, !math.IsNaN(v) && !math.IsInf(v, 0)
	}
	count := func(name string) uint64 {
		v, ok := scalar(name)
		if !ok || v < 0 || v != v || v > 1<<62 {
			return 0
		}
		return uint64(v)
	}
	c.Batches = count("gpuwatch_loader_batches_total")
	c.Samples = count("gpuwatch_loader_samples_total")
	c.BytesRead = count("gpuwatch_loader_bytes_read_total")
	// The protocol's ranges (docs/architecture.md §6), as the fast reader
	// checks them: a value outside is absent (the fuzzer found a queue
	// depth of -1 read by one and dropped by the other).
	within := func(name string, hi float64) (float64, bool) {
		v, ok := scalar(name)
		return v, ok && v >= 0 && v <= hi
	}
	if v, ok := within("gpuwatch_loader_read_seconds_total", maxLoaderSeconds); ok {
		c.ReadSeconds = &v
	}
	if v, ok := within("gpuwatch_loader_decode_seconds_total", maxLoaderSeconds); ok {
		c.DecodeSeconds = &v
	}
	if v, ok := within("gpuwatch_loader_queue_depth", maxQueueDepth); ok {
		c.QueueDepth = &v
	}
	if v, ok := within("gpuwatch_loader_workers", maxWorkers); ok {
		n := int(v)
		c.Workers = &n
	}
	if v, ok := within("gpuwatch_loader_prefetch", maxPrefetch); ok {
		n := int(v)
		c.Prefetch = &n
	}
	wb, wh, okW := refHistogram(fams["gpuwatch_loader_wait_seconds"])
	sb, sh, okS := refHistogram(fams["gpuwatch_loader_step_seconds"])
	if okW {
		found++
		c.Buckets, c.Wait = wb, wh
	}
	if okS {
		found++
		c.Step, c.StepSeen = sh, true
		if !okW {
			c.Buckets = sb
		}
	}
	info := map[string]string{}
	if f := fams["gpuwatch_loader_info"]; f != nil && len(f.Metric) > 0 {
		found++
		for _, l := range f.Metric[0].Label {
			info[l.GetName()] = l.GetValue()
		}
		infoIDs(&c, info)
	}
	if f := fams["gpuwatch_loader_worker_info"]; f != nil {
		for _, m := range f.Metric {
			for _, l := range m.Label {
				// Bounded: a hostile endpoint cannot grow a frame without end.
				if pid := positiveID(l.GetValue()); l.GetName() == "pid" && pid != nil && len(c.WorkerPIDs) < maxWorkerPIDs {
					c.WorkerPIDs = append(c.WorkerPIDs, *pid)
				}
			}
		}
	}
	if found == 0 {
		return c, nil, errors.New("no gpuwatch_loader_* metrics: this is not a loader's metrics endpoint")
	}
	return c, info, nil
}

func refHistogram(f *dto.MetricFamily) ([]float64, Hist, bool) {
	if f == nil || len(f.Metric) == 0 || f.Metric[0].Histogram == nil {
		return nil, Hist{}, false
	}
	h := f.Metric[0].Histogram
	if sum := h.GetSampleSum(); math.IsNaN(sum) || math.IsInf(sum, 0) || sum < 0 {
		return nil, Hist{}, false // a broken histogram is no histogram
	}
	var bounds []float64
	out := Hist{Sum: h.GetSampleSum(), Count: h.GetSampleCount()}
	for _, b := range h.Bucket {
		ub := b.GetUpperBound()
		if ub != ub || ub > 1e300 { // NaN, +Inf
			continue
		}
		bounds = append(bounds, ub)
		out.Counts = append(out.Counts, b.GetCumulativeCount())
	}
	return bounds, out, true
}

// exposition pages both readers must read alike.
func expositionPages(t testing.TB) map[string]string {
	real, err := os.ReadFile(filepath.Join("testdata", "attach", "loader-metrics.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"a real loader": string(real),
		"python hook, ranks": "# HELP gpuwatch_loader_wait_seconds x\n# TYPE gpuwatch_loader_wait_seconds histogram\n" +
			"gpuwatch_loader_wait_seconds_bucket{le=\"0.001\"} 3\ngpuwatch_loader_wait_seconds_bucket{le=\"0.01\"} 7\ngpuwatch_loader_wait_seconds_bucket{le=\"+Inf\"} 9\n" +
			"gpuwatch_loader_wait_seconds_sum 0.5\ngpuwatch_loader_wait_seconds_count 9\n" +
			"# TYPE gpuwatch_loader_batches_total counter\ngpuwatch_loader_batches_total 9\n" +
			"# TYPE gpuwatch_loader_info gauge\ngpuwatch_loader_info{pid=\"4242\",kind=\"python\",tid=\"4243\",rank=\"3\",local_rank=\"1\",world_size=\"8\",local_world_size=\"4\"} 1\n" +
			"# TYPE gpuwatch_loader_worker_info gauge\ngpuwatch_loader_worker_info{worker=\"0\",pid=\"5000\"} 1\ngpuwatch_loader_worker_info{worker=\"1\",pid=\"5001\"} 1\n",
		"escapes, spacing, timestamps": "gpuwatch_loader_batches_total 12 1700000000000\ngpuwatch_loader_info{kind=\"a\\\"b\\\\c\\nd\" , pid=\"7\",} 1\n\n  gpuwatch_loader_queue_depth\t2.5\n",
		"special values":               "gpuwatch_loader_batches_total NaN\ngpuwatch_loader_samples_total +Inf\ngpuwatch_loader_queue_depth -Inf\ngpuwatch_loader_workers 1e1\n",
		"other metrics around":         "# TYPE go_goroutines gauge\ngo_goroutines 12\ngo_gc_duration_seconds{quantile=\"0.5\"} 1e-05\ngpuwatch_loader_workers 4\n",
		"no loader":                    "# TYPE http_requests_total counter\nhttp_requests_total 5\n",
		"garbage":                      "gpuwatch_loader_batches_total{ 1 2",
		"html":                         "<html><body>hello</body></html>",
		"empty":                        "",
		"a value missing":              "gpuwatch_loader_batches_total\n",
		"an unclosed label":            "gpuwatch_loader_info{pid=\"1} 1\n",
		"a bad escape":                 "gpuwatch_loader_info{pid=\"\\q\"} 1\n",
		"a label twice":                "gpuwatch_loader_info{pid=\"1\",pid=\"2\"} 1\n",
		"hex value":                    "gpuwatch_loader_batches_total 0x10\n",
	}
}

// TestExpositionReadsAsExpfmtDoes: the fast reader accepts what expfmt
// accepts, rejects what it rejects, and gives the same counters.
func TestExpositionReadsAsExpfmtDoes(t *testing.T) {
	for name, page := range expositionPages(t) {
		sameAsExpfmt(t, name, []byte(page))
	}
}

func sameAsExpfmt(t *testing.T, name string, page []byte) {
	t.Helper()
	want, wantInfo, wantErr := countersViaExpfmt(page)
	got, gotInfo, gotErr := CountersFromMetrics(page)
	// expfmt reads a histogram only where a # TYPE line declares one; the
	// fast reader reads it from the _bucket, _sum and _count samples alone.
	// Histograms are compared where expfmt saw them.
	if wantErr == nil || strings.Contains(wantErr.Error(), "no gpuwatch_loader_") {
		const wait, step = "gpuwatch_loader_wait_seconds", "gpuwatch_loader_step_seconds"
		tw, ts := expfmtHistogram(page, wait), expfmtHistogram(page, step)
		pg, _ := expo.Parse(page, "gpuwatch_loader_")
		got.Buckets = nil
		if !tw {
			got.Wait = Hist{}
		} else if b, _, ok := histogram(pg, wait); ok {
			got.Buckets = b
		}
		if !ts {
			got.Step = Hist{}
		} else if b, _, ok := histogram(pg, step); ok && got.Buckets == nil {
			got.Buckets = b
		}
		if wantErr != nil && gotErr == nil {
			if deref(got) != deref(LoaderCounters{}) || len(gotInfo) != 0 {
				t.Fatalf("%s: a page expfmt finds no loader in gave %s %v", name, deref(got), gotInfo)
			}
			return
		}
	}
	if wantErr == nil && gotErr != nil && len(wantInfo) == 0 && want.Wait.Count == 0 && want.Step.Count == 0 {
		// expfmt took a declared histogram without _sum and _count samples
		// as one of no observations; to the fast reader it is no histogram.
		bare := want
		bare.Buckets, bare.Wait, bare.Step = nil, Hist{}, Hist{}
		if deref(bare) == deref(LoaderCounters{}) {
			return
		}
	}
	if wantErr != nil && gotErr == nil && onComment(page, wantErr) {
		return // expfmt checks # HELP and # TYPE lines; the fast reader skips every comment
	}
	if (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("%s: expfmt says %v, the fast reader %v", name, wantErr, gotErr)
	}
	if wantErr != nil {
		return
	}
	if deref(want) != deref(got) || !reflect.DeepEqual(wantInfo, gotInfo) {
		t.Fatalf("%s:\nexpfmt %s %v\nfast   %s %v", name, deref(want), wantInfo, deref(got), gotInfo)
	}
}

// expfmtHistogram says whether expfmt reads family name as a histogram.
func expfmtHistogram(page []byte, name string) bool {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(page)))
	return err == nil && fams[name] != nil && fams[name].GetType() == dto.MetricType_HISTOGRAM
}

// onComment says whether expfmt's error is about a comment line.
func onComment(page []byte, err error) bool {
	m := regexp.MustCompile(`line (\d+)`).FindStringSubmatch(err.Error())
	if m == nil {
		return false
	}
	n, _ := strconv.Atoi(m[1])
	lines := strings.Split(string(page), "\n")
	return n >= 1 && n <= len(lines) && strings.HasPrefix(strings.TrimLeft(lines[n-1], " \t"), "#")
}

// deref shows a LoaderCounters' pointers by value.
func deref(c LoaderCounters) string {
	p := func(v any) string {
		switch x := v.(type) {
		case *float64:
			if x != nil {
				return fmt.Sprint(*x)
			}
		case *int:
			if x != nil {
				return fmt.Sprint(*x)
			}
		}
		return "nil"
	}
	return fmt.Sprintf("%d %d %d r%s d%s q%s w%s p%s pid%s tid%s rank%s %s %s %s wait%+v step%+v b%v workers%v",
		c.Batches, c.Samples, c.BytesRead, p(c.ReadSeconds), p(c.DecodeSeconds), p(c.QueueDepth), p(c.Workers), p(c.Prefetch),
		p(c.PID), p(c.LoopTID), p(c.Rank), p(c.LocalRank), p(c.WorldSize), p(c.LocalWorldSize), c.Wait, c.Step, c.Buckets, c.WorkerPIDs)
}

// FuzzExpositionAgainstExpfmt: on any page in the format's classic syntax
// (not the UTF-8 quoted names expfmt also reads), both readers agree.
func FuzzExpositionAgainstExpfmt(f *testing.F) {
	for _, page := range expositionPages(f) {
		f.Add([]byte(page))
	}
	f.Fuzz(func(t *testing.T, page []byte) {
		if strings.Contains(string(page), "{\"") || strings.Contains(string(page), ",\"") || strings.ContainsRune(string(page), '\r') {
			return // quoted metric names: a syntax the loader protocol does not use
		}
		if strings.Contains(strings.ToUpper(string(page)), "TYPE") {
			// Typed families: expfmt groups a histogram's series by their
			// labels and takes the first, the fast reader takes each
			// sample name's first; they differ on pages no loader writes
			// (two series of one histogram). TestExpositionReadsAsExpfmtDoes
			// compares typed pages; here the lexing is compared.
			return
		}
		sameAsExpfmt(t, "fuzz", page)
	})
}

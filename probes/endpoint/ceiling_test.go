package endpoint

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/probes/internal/probetest"
)

// TestCeilingFromTheHooksPage reads the ceiling's series as the hook's
// render_ceiling writes them (testdata: a finished measurement) into the
// counters and the frame.
func TestCeilingFromTheHooksPage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "attach", "hook-ceiling-metrics.txt"))
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := CountersFromMetrics(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Dropped) != 0 {
		t.Fatalf("dropped %v", c.Dropped)
	}
	src := &fakeLoader{c: c}
	l := collectLoader(t, NewLoader(src), probetest.T0).Loader
	cl := l.Ceiling
	if cl == nil || cl.State != "done" || cl.Reason != "" {
		t.Fatalf("ceiling %+v", cl)
	}
	if *cl.SamplesPerSec != 2960.2 || *cl.BatchesPerSec != 92.5 || *cl.StepMs != 2.1 || *cl.StarvingStepMs != 2.9 ||
		*cl.BeforeSamplesPerSec != 1272.4 || *cl.KeptBatches != 32 || *cl.KeptBytes != 1646592 || *cl.LimitBytes != 1<<30 ||
		*cl.Seconds != 30 || *cl.MeasuredSeconds != 30.002 {
		t.Fatalf("figures %+v", *cl)
	}
	if v, ok := l.MeasuredCeiling(); !ok || v != 2960.2 {
		t.Fatalf("measured ceiling %v %v", v, ok)
	}
	cost, now, ok := l.InputCost() // no rate over an interval yet: the hook's before rate
	if !ok || now != 1272.4 || cost < 0.569 || cost > 0.571 {
		t.Fatalf("input cost %v (now %v) %v", cost, now, ok)
	}
}

// TestCeilingFromAHostilePage: a state the protocol does not name drops
// the ceiling; figures out of range are dropped and said; the reason is
// cut and made printable; a page with no ceiling has none.
func TestCeilingFromAHostilePage(t *testing.T) {
	page := "gpuwatch_loader_batches_total 3\n" +
		`gpuwatch_loader_ceiling_info{state="refused",reason="` + strings.Repeat("\x1b[31m\\n", 100) + `"} 1` + "\n" +
		"gpuwatch_loader_ceiling_samples_per_second NaN\n" +
		"gpuwatch_loader_ceiling_step_seconds -1\n" +
		"gpuwatch_loader_ceiling_batches_per_second +Inf\n" +
		"gpuwatch_loader_ceiling_kept_batches 1e30\n" +
		"gpuwatch_loader_ceiling_seconds 1e9\n"
	c, _, err := CountersFromMetrics([]byte(page))
	if err != nil {
		t.Fatal(err)
	}
	cl := c.Ceiling
	if cl == nil || cl.State != "refused" || len(cl.Reason) > maxCeilingReason || strings.ContainsRune(cl.Reason, 0x1b) {
		t.Fatalf("ceiling %+v", cl)
	}
	if cl.SamplesPerSec != nil || cl.StepMs != nil || cl.BatchesPerSec != nil || cl.KeptBatches != nil || cl.Seconds != nil {
		t.Fatalf("out-of-range figures kept: %+v", *cl)
	}
	if len(c.Dropped) != 5 {
		t.Fatalf("dropped %q", c.Dropped)
	}
	c, _, err = CountersFromMetrics([]byte("gpuwatch_loader_batches_total 3\ngpuwatch_loader_ceiling_info{state=\"guessed\"} 1\ngpuwatch_loader_ceiling_samples_per_second 5\n"))
	if err != nil || c.Ceiling != nil || len(c.Dropped) != 1 {
		t.Fatalf("unknown state: %+v %v %v", c.Ceiling, c.Dropped, err)
	}
	c, _, _ = CountersFromMetrics([]byte("gpuwatch_loader_batches_total 3\n"))
	if c.Ceiling != nil {
		t.Fatal("a page with no ceiling has one")
	}
	// Over two readings the rate now is the interval's.
	b, _ := os.ReadFile(filepath.Join("testdata", "attach", "hook-ceiling-metrics.txt"))
	c, _, _ = CountersFromMetrics(b)
	src := &fakeLoader{c: c}
	p := NewLoader(src)
	collectLoader(t, p, probetest.T0)
	c2 := c
	c2.Samples += 1480
	c2.Batches += 46
	src.c = c2
	l := collectLoader(t, p, probetest.T0.Add(time.Second)).Loader
	if cost, now, ok := l.InputCost(); !ok || now != 1480 || cost < 0.49 || cost > 0.51 {
		t.Fatalf("input cost %v now %v", cost, now)
	}
}

// TestAskCeiling: the POST carries the token and the seconds; the
// answers the hook's server gives (202, 409, 400, 401) and a loader that
// has no /ceiling (404) come back as a line or a clear error.
func TestAskCeiling(t *testing.T) {
	var gotAuth, gotQuery, gotMethod string
	status := http.StatusAccepted
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotQuery, gotMethod = r.Header.Get("Authorization"), r.URL.RawQuery, r.Method
		w.WriteHeader(status)
		switch status {
		case http.StatusAccepted:
			io.WriteString(w, "measuring the ceiling: the loop trains on repeated batches for 2.5 s once it is warm\n")
		case http.StatusConflict:
			io.WriteString(w, "the ceiling is being measured (keeping)\x1b[2J\n")
		}
	}))
	defer srv.Close()
	a, err := NewAttach(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	a.SetToken("s3cret-token-0123456789")
	line, err := a.AskCeiling(context.Background(), 2500*time.Millisecond)
	if err != nil || !strings.HasPrefix(line, "measuring the ceiling") {
		t.Fatalf("%q %v", line, err)
	}
	if gotMethod != http.MethodPost || gotQuery != "seconds=2.5" || gotAuth != "Bearer s3cret-token-0123456789" {
		t.Fatalf("sent %s ?%s %q", gotMethod, gotQuery, gotAuth)
	}
	for code, want := range map[int]string{
		http.StatusConflict:     "409 Conflict to POST /ceiling: the ceiling is being measured (keeping)?[2J",
		http.StatusNotFound:     "cannot measure its ceiling",
		http.StatusUnauthorized: "wants its token",
		http.StatusBadRequest:   "400 Bad Request",
	} {
		status = code
		if _, err := a.AskCeiling(context.Background(), time.Second); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%d: %v, want %q", code, err, want)
		}
	}
	if _, err := a.AskCeiling(context.Background(), 601*time.Second); err == nil {
		t.Error("a replay past 600 s was asked")
	}
}

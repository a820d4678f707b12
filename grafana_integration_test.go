//go:build integration

package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/sample"
)

// grafanaDashboard is the part of deploy/grafana/gpuwatch.json the tests
// read: Grafana's dashboard model (schemaVersion, panels, targets).
type grafanaDashboard struct {
	UID           string         `json:"uid"`
	Title         string         `json:"title"`
	SchemaVersion int            `json:"schemaVersion"`
	Panels        []grafanaPanel `json:"panels"`
	Templating    struct {
		List []struct {
			Name, Type string
		} `json:"list"`
	} `json:"templating"`
}

type grafanaPanel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type, UID string
	} `json:"datasource"`
	GridPos *struct{ H, W, X, Y int } `json:"gridPos"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

func readDashboard(t *testing.T) grafanaDashboard {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("deploy", "grafana", "gpuwatch.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("deploy/grafana/gpuwatch.json: %v", err)
	}
	return d
}

// metricNames are the series a PromQL expression names: every
// identifier before a selector's { or a range's [, and every gpuwatch_
// word (a bare name in a binary expression).
var (
	selectorName = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*[{\[]`)
	gpuwatchWord = regexp.MustCompile(`\bgpuwatch_[a-z0-9_]+`)
)

func metricNames(expr string) []string {
	var names []string
	for _, m := range selectorName.FindAllStringSubmatch(expr, -1) {
		names = append(names, m[1])
	}
	names = append(names, gpuwatchWord.FindAllString(expr, -1)...)
	slices.Sort(names)
	return slices.Compact(names)
}

// absentHere are the series a CPU-only CI machine cannot have, with why:
// a panel whose every series is here may come back empty (it must still
// be a query Prometheus accepts); every other panel must return series.
// Keyed by name prefix.
var absentHere = map[string]string{
	"gpuwatch_gpu_":                    "no GPU (NVML) on this machine",
	"gpuwatch_loader_copy_":            "the copy to the GPU is timed only where torch has CUDA",
	"gpuwatch_loader_ceiling_":         "the ceiling is measured only by gpuwatch run --ceiling",
	"gpuwatch_loader_input_cost_ratio": "absent until the ceiling is measured",
	"gpuwatch_loader_padding_ratio":    "only for batches with token tensors",
	"gpuwatch_advice_":                 "only while the model advises a change",
}

func mayBeAbsent(names []string) bool {
	for _, n := range names {
		here := false
		for prefix := range absentHere {
			if strings.HasPrefix(n, prefix) {
				here = true
			}
		}
		if !here {
			return false
		}
	}
	return true
}

// TestGrafanaDashboardIsWellFormed checks deploy/grafana/gpuwatch.json's
// structure as Grafana imports it: a uid and title, the Prometheus
// datasource as a variable, every panel placed on the 24-column grid with
// the datasource and at least one PromQL target (rows excepted), refIds
// unique in a panel, and every series it names one the exporter serves
// (sample.AllSeries, the exporter's own table: a renamed series fails
// here).
func TestGrafanaDashboardIsWellFormed(t *testing.T) {
	d := readDashboard(t)
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 {
		t.Fatalf("uid %q, title %q, schemaVersion %d: want all set (schemaVersion ≥ 36)", d.UID, d.Title, d.SchemaVersion)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	if vars["datasource"] != "datasource" {
		t.Errorf("no datasource variable: %v", vars)
	}
	served := map[string]bool{}
	for _, s := range sample.AllSeries {
		served[s.Name] = true
	}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos == nil || p.GridPos.W < 1 || p.GridPos.X+p.GridPos.W > 24 || p.GridPos.H < 1 {
			t.Errorf("panel %q: gridPos %+v off the 24-column grid", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if p.Title == "" || p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %d %q: want a title and the ${datasource} Prometheus", p.ID, p.Title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no targets", p.Title)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("panel %q: target %+v: want an expr and a refId of its own", p.Title, tg)
			}
			refs[tg.RefID] = true
			for _, n := range metricNames(tg.Expr) {
				if !served[n] {
					t.Errorf("panel %q names %s, which the exporter does not serve (sample.AllSeries)", p.Title, n)
				}
			}
		}
	}
}

// TestGrafanaDashboardQueriesARealPrometheus runs every panel's PromQL
// through the HTTP API of Debian's Prometheus, scraping two real
// `gpuwatch serve`s: node A discovers a real PyTorch DataLoader loop
// (Debian's torch, two workers, python/examples/train_cpu.py with the
// hook), node B is attached to two `gpuwatch loader` ranks. Each query
// must be accepted, and return series unless every series it names is one
// this machine cannot have (absentHere: the GPU's, the ceiling's …).
func TestGrafanaDashboardQueriesARealPrometheus(t *testing.T) {
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus not installed (CI installs Debian's)")
	}
	py := python(t, true)
	d := readDashboard(t)
	bin := binary(t) // sets XDG_RUNTIME_DIR: the loop's announcement is the tests' own

	loop := exec.Command(py, "python/examples/train_cpu.py", "--workers", "2", "--port", "0", "--seconds", "240")
	loop.Env = append(os.Environ(), "PYTHONPATH=python", "OPENBLAS_NUM_THREADS=1")
	startCmd(t, loop)
	rank := func(r string, args ...string) string {
		cmd := exec.Command(bin, append([]string{"loader", "--listen", "127.0.0.1:0", "--progress-every", "1h", "--dataset-size", "64MiB", "--step-time", "20ms"}, args...)...)
		cmd.Env = append(os.Environ(), "RANK="+r, "WORLD_SIZE=2")
		_, out := startCmd(t, cmd)
		first := make([]byte, 512)
		n, _ := out.Read(first)
		return loaderURL(t, string(first[:n]))
	}
	r0 := rank("0", "--workers", "2", "--decode-cost", "50us")
	r1 := rank("1", "--workers", "0", "--decode-cost", "2ms")
	nodeA, nodeB := freePort(t), freePort(t)
	startBinary(t, "serve", "--listen", nodeA, "--interval", "500ms")
	startBinary(t, "serve", "--listen", nodeB, "--interval", "500ms", "--discover=false", "--attach", r0, "--attach", r1)
	promAddr, promLog := startPrometheus(t, promBin, nodeA, nodeB)

	vars := strings.NewReplacer("$job", ".+", "$instance", ".+", "$__rate_interval", "1m", "$__interval", "15s")
	query := func(expr string) (int, string) {
		resp, err := http.Get("http://" + promAddr + "/api/v1/query?query=" + url.QueryEscape(vars.Replace(expr)))
		if err != nil {
			return 0, "" // not up yet: asked again
		}
		defer resp.Body.Close()
		var r struct {
			Status, Error string
			Data          struct{ Result []json.RawMessage }
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			return 0, ""
		}
		if r.Status != "success" {
			return -1, r.Error
		}
		return len(r.Data.Result), ""
	}
	type target struct{ panel, expr string }
	var pending []target
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			pending = append(pending, target{p.Title, tg.Expr})
		}
	}
	// Bounded polling: the loop's torch import, two scrapes for rate().
	deadline := time.Now().Add(120 * time.Second)
	for len(pending) > 0 {
		var left []target
		for _, tg := range pending {
			n, msg := query(tg.expr)
			switch {
			case n < 0 && msg != "":
				t.Fatalf("panel %q: Prometheus refused %s: %s", tg.panel, tg.expr, msg)
			case n > 0:
				t.Logf("panel %q: %d series: %s", tg.panel, n, tg.expr)
			default:
				left = append(left, tg)
			}
		}
		pending = left
		if len(pending) == 0 || time.Now().After(deadline) {
			break
		}
		if required := slices.ContainsFunc(pending, func(tg target) bool { return !mayBeAbsent(metricNames(tg.expr)) }); !required && time.Now().After(deadline.Add(-90*time.Second)) {
			break // only what this machine cannot have is left; 30 s given to it
		}
		time.Sleep(time.Second)
	}
	for _, tg := range pending {
		if names := metricNames(tg.expr); mayBeAbsent(names) {
			why := []string{}
			for _, n := range names {
				for prefix, w := range absentHere {
					if strings.HasPrefix(n, prefix) {
						why = append(why, n+": "+w)
					}
				}
			}
			t.Logf("panel %q: no series here (%s): %s", tg.panel, strings.Join(why, "; "), tg.expr)
			continue
		}
		t.Errorf("panel %q: no series from %s", tg.panel, tg.expr)
	}
	if t.Failed() {
		t.Logf("Prometheus log:\n%s", promLog)
	}
}

// Package fleet reads every node's gpuwatch verdict and ranks from a
// Prometheus server (instant queries of its HTTP API) and orders them worst
// first: the view past one machine (docs/prometheus.md). Prometheus's
// answers are outside input: bounded in size and time, labels made
// printable.
package fleet

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/sample"
)

// Row is one node (Rank nil) or one rank of a node.
type Row struct {
	Instance   string  `json:"instance"`
	Job        string  `json:"job"`
	Kind       string  `json:"kind"`
	Confidence float64 `json:"confidence"`
	Rank       *int    `json:"rank,omitempty"`
	Up         *bool   `json:"up,omitempty"`
	// WaitShare is the rank's (or, on a node row, the loader's) share of
	// time waiting for input; StepSec the rank's mean step.
	WaitShare     *float64 `json:"wait_share,omitempty"`
	StepSec       *float64 `json:"step_sec,omitempty"`
	SamplesPerSec *float64 `json:"samples_per_sec,omitempty"`
	GPUUtil       *float64 `json:"gpu_util,omitempty"` // mean over the node's GPUs, 0–1
	// Straggler: the node's verdict names this rank; FleetStraggler: the
	// rank that waits most of all, past WaitShareStarved, while others
	// across the fleet wait far less.
	Straggler      bool `json:"straggler,omitempty"`
	FleetStraggler bool `json:"fleet_straggler,omitempty"`
}

// Snapshot is the fleet at one moment, worst first.
type Snapshot struct {
	Time time.Time `json:"time"`
	Rows []Row     `json:"rows"`
}

// Client queries one Prometheus server.
type Client struct {
	base   *url.URL
	job    string
	client *http.Client
}

// maxAnswer bounds one query's answer; maxSeries the series kept from it.
const (
	maxAnswer = 32 << 20
	maxSeries = 10000
)

// WaitShareStarved is where a rank counts as input-bound, as in diagnosis.
const WaitShareStarved = 0.2

// NewClient checks the server's URL (http or https with a host) and
// returns a client for its series of job (all jobs when job is "").
func NewClient(raw, job string) (*Client, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("%q: want the Prometheus server's base URL, http://HOST:9090", sample.Printable(sample.RedactURL(raw)))
	}
	if strings.ContainsAny(job, "\"\\\n") {
		return nil, fmt.Errorf("--job %q: a job name without quotes or backslashes", sample.Printable(job))
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return &Client{base: u, job: job, client: &http.Client{Timeout: 10 * time.Second}}, nil
}

// series is one instant-vector element.
type series struct {
	labels map[string]string
	value  float64
}

// query runs one instant query.
func (c *Client) query(ctx context.Context, q string) ([]series, error) {
	u := *c.base
	u.Path += "/api/v1/query"
	u.RawQuery = url.Values{"query": {q}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL (and its credentials)
		}
		return nil, fmt.Errorf("Prometheus at %s: %v", sample.RedactURL(c.base.String()), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return nil, err
	}
	if len(body) > maxAnswer {
		return nil, fmt.Errorf("Prometheus's answer to %s is over %d MiB", q, maxAnswer>>20)
	}
	out, err := decodeAnswer(body)
	if err != nil {
		return nil, fmt.Errorf("Prometheus at %s (%s): %w", sample.RedactURL(c.base.String()), resp.Status, err)
	}
	return out, nil
}

// decodeAnswer reads an instant query's answer: an instant vector, at most
// maxSeries of it, with printable labels and finite values.
func decodeAnswer(body []byte) ([]series, error) {
	var ans struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		return nil, errors.New("not its API's JSON")
	}
	if ans.Status != "success" {
		return nil, fmt.Errorf("query failed: %s", sample.Printable(ans.Error))
	}
	out := make([]series, 0, min(len(ans.Data.Result), maxSeries))
	for _, r := range ans.Data.Result[:min(len(ans.Data.Result), maxSeries)] {
		s, ok := r.Value[1].(string)
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		labels := make(map[string]string, len(r.Metric))
		for k, val := range r.Metric {
			labels[k] = sample.Printable(val)
		}
		out = append(out, series{labels, v})
	}
	return out, nil
}

func (c *Client) selector(name, extra string) string {
	var m []string
	if c.job != "" {
		m = append(m, `job="`+c.job+`"`)
	}
	if extra != "" {
		m = append(m, extra)
	}
	return name + "{" + strings.Join(m, ",") + "}"
}

// Snapshot reads the fleet now: the nodes' verdicts, their ranks and
// their GPUs, worst first.
func (c *Client) Snapshot(ctx context.Context) (Snapshot, error) {
	verdicts, err := c.query(ctx, c.selector("gpuwatch_verdict", "")+" == 1")
	if err != nil {
		return Snapshot{}, err
	}
	nodes := map[string]*Row{}
	key := func(l map[string]string) string { return l["job"] + "\x00" + l["instance"] }
	for _, s := range verdicts {
		nodes[key(s.labels)] = &Row{Instance: s.labels["instance"], Job: s.labels["job"], Kind: s.labels["kind"]}
	}
	type fill struct {
		metric string
		set    func(r *Row, v float64)
	}
	for _, f := range []fill{
		{"gpuwatch_verdict_confidence_ratio", func(r *Row, v float64) { r.Confidence = v }},
		{"gpuwatch_loader_wait_ratio", func(r *Row, v float64) { r.WaitShare = &v }},
		{"gpuwatch_loader_samples_per_second", func(r *Row, v float64) { r.SamplesPerSec = &v }},
	} {
		got, err := c.query(ctx, c.selector(f.metric, ""))
		if err != nil {
			return Snapshot{}, err
		}
		for _, s := range got {
			if n := nodes[key(s.labels)]; n != nil {
				f.set(n, s.value)
			}
		}
	}
	gpus, err := c.query(ctx, "avg by (job, instance) ("+c.selector("gpuwatch_gpu_utilization_ratio", "")+")")
	if err != nil {
		return Snapshot{}, err
	}
	for _, s := range gpus {
		if n := nodes[key(s.labels)]; n != nil {
			v := s.value
			n.GPUUtil = &v
		}
	}
	ranks, err := c.rankRows(ctx, nodes, key)
	if err != nil {
		return Snapshot{}, err
	}
	snap := Snapshot{Time: time.Now()}
	for _, n := range nodes {
		snap.Rows = append(snap.Rows, *n)
	}
	snap.Rows = append(snap.Rows, ranks...)
	markFleetStraggler(snap.Rows)
	Order(snap.Rows)
	return snap, nil
}

// rankRows reads every rank series into a row per (node, rank), with the
// node's verdict.
func (c *Client) rankRows(ctx context.Context, nodes map[string]*Row, key func(map[string]string) string) ([]Row, error) {
	rows := map[string]*Row{}
	for _, f := range []struct {
		metric string
		set    func(r *Row, v float64)
	}{
		{"gpuwatch_rank_up", func(r *Row, v float64) { up := v == 1; r.Up = &up }},
		{"gpuwatch_rank_wait_ratio", func(r *Row, v float64) { r.WaitShare = &v }},
		{"gpuwatch_rank_step_seconds", func(r *Row, v float64) { r.StepSec = &v }},
		{"gpuwatch_rank_samples_per_second", func(r *Row, v float64) { r.SamplesPerSec = &v }},
		{"gpuwatch_rank_straggler", func(r *Row, v float64) { r.Straggler = v == 1 }},
	} {
		got, err := c.query(ctx, c.selector(f.metric, ""))
		if err != nil {
			return nil, err
		}
		for _, s := range got {
			rank, err := strconv.Atoi(s.labels["rank"])
			if err != nil || len(rows) >= maxSeries {
				continue
			}
			k := key(s.labels) + "\x00" + s.labels["rank"]
			r := rows[k]
			if r == nil {
				r = &Row{Instance: s.labels["instance"], Job: s.labels["job"], Rank: &rank}
				if n := nodes[key(s.labels)]; n != nil {
					r.Kind, r.Confidence = n.Kind, n.Confidence
				}
				rows[k] = r
			}
			f.set(r, s.value)
		}
	}
	out := make([]Row, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	return out, nil
}

// markFleetStraggler marks the rank that waits most across the fleet,
// when it is input-bound and waits at least twice as much as the next.
func markFleetStraggler(rows []Row) {
	best, second := -1, 0.0
	for i, r := range rows {
		if r.Rank == nil || r.WaitShare == nil {
			continue
		}
		if best < 0 || *r.WaitShare > *rows[best].WaitShare {
			if best >= 0 {
				second = max(second, *rows[best].WaitShare)
			}
			best = i
		} else {
			second = max(second, *r.WaitShare)
		}
	}
	if best >= 0 && *rows[best].WaitShare >= WaitShareStarved && *rows[best].WaitShare >= 2*second {
		rows[best].FleetStraggler = true
	}
}

// problem kinds are the verdicts that name a bottleneck.
var problem = map[string]bool{"gpu_starved": true, "single_core_maxed": true, "cpu_saturated": true, "io_bound": true, "memory_pressure": true, "gpu_underused": true}

// Order sorts rows worst first: the fleet's straggler, then nodes and
// ranks with a problem verdict, the most waiting first; then by node and
// rank.
func Order(rows []Row) {
	wait := func(r Row) float64 {
		if r.WaitShare == nil {
			return -1
		}
		return *r.WaitShare
	}
	slices.SortStableFunc(rows, func(a, b Row) int {
		if a.FleetStraggler != b.FleetStraggler {
			return boolFirst(a.FleetStraggler)
		}
		if problem[a.Kind] != problem[b.Kind] {
			return boolFirst(problem[a.Kind])
		}
		if c := cmp.Compare(wait(b), wait(a)); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Instance, b.Instance); c != 0 {
			return c
		}
		ar, br := -1, -1
		if a.Rank != nil {
			ar = *a.Rank
		}
		if b.Rank != nil {
			br = *b.Rank
		}
		return ar - br
	})
}

func boolFirst(a bool) int {
	if a {
		return -1
	}
	return 1
}

// Line is a row as text, for headless output and the dashboard.
func (r Row) Line() string {
	who := r.Instance
	if r.Job != "" {
		who = r.Job + "/" + who
	}
	if r.Rank != nil {
		who += fmt.Sprintf(" rank %d", *r.Rank)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-40s %-18s", who, r.Kind)
	if r.Up != nil && !*r.Up {
		b.WriteString(" not answering")
	}
	if r.WaitShare != nil {
		fmt.Fprintf(&b, " wait %3.0f%%", 100**r.WaitShare)
	}
	if r.StepSec != nil {
		fmt.Fprintf(&b, " step %.0fms", 1000**r.StepSec)
	}
	if r.SamplesPerSec != nil {
		fmt.Fprintf(&b, " %.0f samples/s", *r.SamplesPerSec)
	}
	if r.GPUUtil != nil {
		fmt.Fprintf(&b, " gpu %.0f%%", 100**r.GPUUtil)
	}
	switch {
	case r.FleetStraggler:
		b.WriteString("  ◀ the fleet's straggler")
	case r.Straggler:
		b.WriteString("  ◀ straggler of its node")
	}
	return b.String()
}

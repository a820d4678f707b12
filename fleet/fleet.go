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

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/internal/neterr"
	"github.com/gpuwatch/gpuwatch/sample"
)

// Row is one node (Rank nil) or one rank of a node.
type Row struct {
	Instance   string  `json:"instance"`
	Job        string  `json:"job"`
	Kind       string  `json:"kind"`
	Confidence float64 `json:"confidence"`
	Rank       *int    `json:"rank,omitempty"`
	// Loader is the rank's loader URL (gpuwatch serve labels it): two
	// loaders that say one rank are two rows, Ambiguous both.
	Loader    string `json:"loader,omitempty"`
	Ambiguous bool   `json:"ambiguous,omitempty"`
	// WorldSize is the rank's job's WORLD_SIZE as gpuwatch serve labels
	// it (world_size): "1" for a loader that is a job of its own, no rank
	// of a distributed job; "" where the exporter does not say (older
	// versions, a URL given without one).
	WorldSize string `json:"world_size,omitempty"`
	Up        *bool  `json:"up,omitempty"`
	// WaitShare is the rank's (or, on a node row, the loader's) share of
	// time waiting for input; StepSec the rank's mean step.
	WaitShare     *float64 `json:"wait_share,omitempty"`
	StepSec       *float64 `json:"step_sec,omitempty"`
	SamplesPerSec *float64 `json:"samples_per_sec,omitempty"`
	GPUUtil       *float64 `json:"gpu_util,omitempty"` // mean over the node's GPUs, 0–1
	// Straggler: the node's verdict names this rank; FleetStraggler: the
	// rank the same rule names across the fleet (Thresholds.Straggler):
	// the one that waits most, past the starved wait share, while others
	// wait less.
	Straggler      bool `json:"straggler,omitempty"`
	FleetStraggler bool `json:"fleet_straggler,omitempty"`
}

// Snapshot is the fleet at one moment, worst first.
type Snapshot struct {
	Time time.Time `json:"time"`
	Rows []Row     `json:"rows"`
	// Dropped says what Prometheus answered that was left out: values
	// out of range, series past the cap (at most a few lines).
	Dropped []string `json:"dropped,omitempty"`
}

// Client queries one Prometheus server.
type Client struct {
	base   *url.URL
	shown  string // the URL without credentials, printable
	job    string
	th     diagnose.Thresholds
	client *http.Client
}

// Bounds on one query's answer: its size, the series read from it (the
// decoder stops there, reading no further), and a label value's length.
const (
	maxAnswer   = 32 << 20
	maxSeries   = 10000
	maxLabel    = 256
	maxDropped  = 5
	queryWithin = 10 * time.Second
)

// NewClient checks the server's URL (http or https with a host) and
// returns a client for its series of job (all jobs when job is ""); th
// are the thresholds a rank is judged by, as on the nodes.
func NewClient(raw, job string, th diagnose.Thresholds) (*Client, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("%q: want the Prometheus server's base URL, http://HOST:9090", sample.Printable(sample.RedactBadURL(raw)))
	}
	if strings.ContainsAny(job, "\"\\\n") {
		return nil, fmt.Errorf("--job %q: a job name without quotes or backslashes", sample.Printable(job))
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawQuery, u.Fragment = "", ""
	return &Client{base: u, shown: sample.Printable(sample.RedactURL(u.String())), job: job, th: th,
		client: &http.Client{Timeout: queryWithin, CheckRedirect: sameHost}}, nil
}

// sameHost follows a redirect only to the server's own host (a reverse
// proxy's trailing slash): a review's server sent fleet to the cloud's
// metadata address with a 302.
func sameHost(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return errors.New("stopped after 5 redirects")
	}
	if req.URL.Host != via[0].URL.Host {
		return fmt.Errorf("a redirect to another host (%s): not followed", sample.Printable(req.URL.Host))
	}
	return nil
}

// Source is the server's URL as shown: no credentials, printable.
func (c *Client) Source() string { return c.shown }

// series is one instant-vector element.
type series struct {
	labels map[string]string
	value  float64
}

// answer is what one query gave, and what was left out of it.
type answer struct {
	series []series
	cut    bool // past maxSeries: the rest was not read
}

// query runs one instant query.
func (c *Client) query(ctx context.Context, q string) (answer, error) {
	u := *c.base
	u.Path += "/api/v1/query"
	u.RawQuery = url.Values{"query": {q}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return answer{}, err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return answer{}, fmt.Errorf("Prometheus at %s: %v", c.shown, neterr.Explain(err, queryWithin, "Prometheus"))
	}
	defer resp.Body.Close()
	body := &limited{r: resp.Body, n: maxAnswer}
	ans, err := decodeAnswer(body)
	switch {
	case body.over:
		return answer{}, fmt.Errorf("Prometheus at %s: the answer to %s is over %d MiB", c.shown, sample.Printable(q), maxAnswer>>20)
	case err != nil:
		return answer{}, fmt.Errorf("Prometheus at %s (%s): %w", c.shown, sample.Printable(resp.Status), err)
	}
	return ans, nil
}

// limited reads at most n bytes of r, and says when r had more.
type limited struct {
	r    io.Reader
	n    int64
	over bool
}

func (l *limited) Read(p []byte) (int, error) {
	if l.n <= 0 {
		var one [1]byte
		if k, _ := l.r.Read(one[:]); k > 0 {
			l.over = true
		}
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), l.n)]
	k, err := l.r.Read(p)
	l.n -= int64(k)
	return k, err
}

// decodeAnswer reads an instant query's answer as it streams, never
// holding more than fleet keeps: an instant vector, at most maxSeries of
// it (the decoder stops there), each with the labels fleet reads, made
// printable and cut to maxLabel bytes, and a finite value. A label set of
// millions costs its reading, not its keeping.
func decodeAnswer(r io.Reader) (answer, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	var ans answer
	status, failure := "", ""
	err := object(dec, func(key string) error {
		switch key {
		case "status":
			return str(dec, &status)
		case "error":
			return str(dec, &failure)
		case "data":
			return object(dec, func(key string) error {
				if key != "result" {
					return skip(dec)
				}
				return array(dec, func() (bool, error) {
					if len(ans.series) == maxSeries {
						ans.cut = true
						return false, errEnough
					}
					s, ok, err := element(dec)
					if ok {
						ans.series = append(ans.series, s)
					}
					return true, err
				})
			})
		}
		return skip(dec)
	})
	switch {
	case status != "" && status != "success":
		return answer{}, fmt.Errorf("query failed: %s", sample.Printable(cut(failure)))
	case errors.Is(err, errEnough) && status == "success":
		return ans, nil // the rest is never read
	case err != nil || status == "":
		return answer{}, errors.New("not its API's JSON")
	}
	return ans, nil
}

// errEnough stops decoding at maxSeries: the rest of the answer is not
// read.
var errEnough = errors.New("enough series")

// element reads one vector element: the labels fleet reads, and its
// value; ok is false when the value is no finite number. Decoding into a
// struct skips every other label without keeping it (a million labels
// cost their scanning only).
func element(dec *json.Decoder) (series, bool, error) {
	var e struct {
		Metric struct {
			Job      string `json:"job"`
			Instance string `json:"instance"`
			Kind     string `json:"kind"`
			Rank     string `json:"rank"`
			Loader   string `json:"loader"`
			World    string `json:"world_size"`
		} `json:"metric"`
		Value []json.RawMessage `json:"value"`
	}
	if err := dec.Decode(&e); err != nil {
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			return series{}, false, err
		}
		return series{}, false, nil // a label or value of the wrong type: left out
	}
	m := e.Metric
	labels := map[string]string{}
	for k, v := range map[string]string{"job": m.Job, "instance": m.Instance, "kind": m.Kind, "rank": m.Rank, "loader": m.Loader, "world_size": m.World} {
		if v != "" {
			labels[k] = sample.Printable(cut(v))
		}
	}
	var value string
	if len(e.Value) != 2 || json.Unmarshal(e.Value[1], &value) != nil {
		return series{labels: labels}, false, nil
	}
	v, err := strconv.ParseFloat(value, 64)
	return series{labels, v}, err == nil && !math.IsNaN(v) && !math.IsInf(v, 0), nil
}

func cut(s string) string {
	if len(s) > maxLabel {
		return s[:maxLabel] + "…"
	}
	return s
}

// object reads a JSON object, calling field for each key with the
// decoder at its value (field must read it).
func object(dec *json.Decoder, field func(key string) error) error {
	if err := delim(dec, '{'); err != nil {
		return err
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		key, ok := t.(string)
		if !ok {
			return errors.New("want a key")
		}
		if err := field(key); err != nil {
			return err
		}
	}
	return delim(dec, '}')
}

// array reads a JSON array, calling elem for each element; elem returns
// false to stop reading there (the rest is never read).
func array(dec *json.Decoder, elem func() (bool, error)) error {
	if err := delim(dec, '['); err != nil {
		return err
	}
	for dec.More() {
		more, err := elem()
		if err != nil || !more {
			return err
		}
	}
	return delim(dec, ']')
}

func delim(dec *json.Decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %v", want)
	}
	return nil
}

// str reads a string value (a number or null reads as "").
func str(dec *json.Decoder, out *string) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := t.(type) {
	case string:
		*out = v
	case json.Delim:
		return errors.New("want a string")
	}
	return nil
}

// skip reads one value of any kind, holding none of it.
func skip(dec *json.Decoder) error {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := t.(json.Delim); ok {
			switch d {
			case '{', '[':
				depth++
			default:
				depth--
			}
		}
		if depth == 0 {
			return nil
		}
	}
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

// maxRank bounds a rank label, as attach does.
const maxRank = 1 << 20

// snapshot is a Snapshot being read.
type snapshot struct {
	Snapshot
	dropped int
}

func (s *snapshot) drop(format string, args ...any) {
	if s.dropped++; len(s.Dropped) < maxDropped {
		s.Dropped = append(s.Dropped, fmt.Sprintf(format, args...))
	}
}

// read runs one query of metric (q, when not "", is the query; metric
// names the range) and calls use with each element within range.
func (c *Client) read(ctx context.Context, s *snapshot, series sample.Series, q string, use func(l map[string]string, v float64)) error {
	metric := series.Name
	if q == "" {
		q = c.selector(metric, "")
	}
	ans, err := c.query(ctx, q)
	if err != nil {
		return err
	}
	if ans.cut {
		s.drop("%s: more than %d series, the rest left out", metric, maxSeries)
	}
	for _, e := range ans.series {
		if e.value < series.Min || e.value > series.Max {
			s.drop("%s %s on %s: outside %g–%g, left out", metric, strconv.FormatFloat(e.value, 'g', 6, 64), e.labels["instance"], series.Min, series.Max)
			continue
		}
		use(e.labels, e.value)
	}
	return nil
}

// Snapshot reads the fleet now: the nodes' verdicts, their ranks and
// their GPUs, worst first.
func (c *Client) Snapshot(ctx context.Context) (Snapshot, error) {
	s := &snapshot{Snapshot: Snapshot{Time: time.Now()}}
	nodes := map[string]*Row{}
	key := func(l map[string]string) string { return l["job"] + "\x00" + l["instance"] }
	err := c.read(ctx, s, sample.SeriesVerdict, c.selector(sample.SeriesVerdict.Name, "")+" == 1", func(l map[string]string, _ float64) {
		nodes[key(l)] = &Row{Instance: l["instance"], Job: l["job"], Kind: l["kind"]}
	})
	if err != nil {
		return Snapshot{}, err
	}
	// The nodes whose exporter served gpuwatch within the hour and does
	// not answer now (up 0): a row each, first (a review: a dead node
	// was no row at all, its verdict gone stale).
	down := c.selector("up", "") + " == 0 and on (job, instance) max_over_time(" + c.selector(sample.SeriesFrameTimestampSeconds.Name, "") + "[1h])"
	ans, err := c.query(ctx, down)
	if err != nil {
		return Snapshot{}, err
	}
	for _, e := range ans.series { // the query's answer is 0s: anything else is no answer to it
		if e.value == 0 && nodes[key(e.labels)] == nil {
			up := false
			nodes[key(e.labels)] = &Row{Instance: e.labels["instance"], Job: e.labels["job"], Kind: KindDown, Up: &up}
		}
	}
	for _, f := range []struct {
		series sample.Series
		query  string
		set    func(r *Row, v float64)
	}{
		{sample.SeriesVerdictConfidenceRatio, "", func(r *Row, v float64) { r.Confidence = v }},
		{sample.SeriesLoaderWaitRatio, "", func(r *Row, v float64) { r.WaitShare = &v }},
		{sample.SeriesLoaderSamplesPerSecond, "", func(r *Row, v float64) { r.SamplesPerSec = &v }},
		{sample.SeriesGpuUtilizationRatio, "avg by (job, instance) (" + c.selector(sample.SeriesGpuUtilizationRatio.Name, "") + ")",
			func(r *Row, v float64) { r.GPUUtil = &v }},
	} {
		err := c.read(ctx, s, f.series, f.query, func(l map[string]string, v float64) {
			if n := nodes[key(l)]; n != nil {
				f.set(n, v)
			}
		})
		if err != nil {
			return Snapshot{}, err
		}
	}
	ranks, err := c.rankRows(ctx, s, nodes, key)
	if err != nil {
		return Snapshot{}, err
	}
	for _, n := range nodes {
		s.Rows = append(s.Rows, *n)
	}
	s.Rows = append(s.Rows, ranks...)
	if s.dropped > len(s.Dropped) {
		s.Dropped = append(s.Dropped, fmt.Sprintf("and %d more", s.dropped-len(s.Dropped)))
	}
	markFleetStraggler(s.Rows, c.th)
	order(s.Rows)
	return s.Snapshot, nil
}

// rankRows reads every rank series into a row per (node, rank, loader),
// with the node's verdict.
func (c *Client) rankRows(ctx context.Context, s *snapshot, nodes map[string]*Row, key func(map[string]string) string) ([]Row, error) {
	rows := map[string]*Row{}
	for _, f := range []struct {
		series sample.Series
		set    func(r *Row, v float64)
	}{
		{sample.SeriesRankUp, func(r *Row, v float64) { up := v == 1; r.Up = &up }},
		{sample.SeriesRankWaitRatio, func(r *Row, v float64) { r.WaitShare = &v }},
		{sample.SeriesRankStepSeconds, func(r *Row, v float64) { r.StepSec = &v }},
		{sample.SeriesRankSamplesPerSecond, func(r *Row, v float64) { r.SamplesPerSec = &v }},
		{sample.SeriesRankStraggler, func(r *Row, v float64) { r.Straggler = v == 1 }},
	} {
		err := c.read(ctx, s, f.series, "", func(l map[string]string, v float64) {
			rank, err := strconv.Atoi(l["rank"])
			if err != nil || rank < 0 || rank > maxRank {
				s.drop("%s: rank %q on %s is no rank, left out", f.series.Name, l["rank"], l["instance"])
				return
			}
			k := key(l) + "\x00" + l["rank"] + "\x00" + l["loader"]
			r := rows[k]
			if r == nil {
				if len(rows) >= maxSeries {
					return
				}
				r = &Row{Instance: l["instance"], Job: l["job"], Rank: &rank, Loader: l["loader"], WorldSize: l["world_size"]}
				if n := nodes[key(l)]; n != nil {
					r.Kind, r.Confidence = n.Kind, n.Confidence
				}
				rows[k] = r
			}
			f.set(r, v)
		})
		if err != nil {
			return nil, err
		}
	}
	out := make([]Row, 0, len(rows))
	said := map[string]int{}
	for _, r := range rows {
		if !ownJob(*r) { // jobs of their own each say rank 0 of 1
			said[r.Job+"\x00"+r.Instance+"\x00"+strconv.Itoa(*r.Rank)]++
		}
	}
	for _, r := range rows {
		r.Ambiguous = !ownJob(*r) && said[r.Job+"\x00"+r.Instance+"\x00"+strconv.Itoa(*r.Rank)] > 1
		out = append(out, *r)
	}
	return out, nil
}

// markFleetStraggler marks the rank that holds the fleet back by the
// verdict's own rule (Thresholds.Straggler): the one that waits most, past
// the starved wait share, while some rank waits less. Only ranks of one
// distributed job are compared, one job (Prometheus job label and world
// size) at a time: a loader of world size 1 is a job of its own, and no
// all-reduce ties it to anyone (two unrelated scripts were marked the
// fleet's straggler and its victim).
func markFleetStraggler(rows []Row, th diagnose.Thresholds) {
	idx, waits := map[string][]int{}, map[string][]float64{}
	var jobs []string
	for i, r := range rows {
		if r.Rank == nil || r.WaitShare == nil || ownJob(r) {
			continue
		}
		k := r.Job + "\x00" + r.WorldSize
		if idx[k] == nil {
			jobs = append(jobs, k)
		}
		idx[k], waits[k] = append(idx[k], i), append(waits[k], *r.WaitShare)
	}
	for _, k := range jobs {
		if !oneJob(rows, idx[k]) {
			continue
		}
		if i, ok := th.Straggler(waits[k]); ok {
			rows[idx[k][i]].FleetStraggler = true
		}
	}
}

// oneJob says whether rows at idx, one Prometheus job and world size, can
// be one distributed job's ranks: no rank twice, and no more ranks than
// the world (a review: two unrelated 2-rank jobs on two nodes, both of
// world 2 under one scrape job, named one node's rank 0 the fleet's
// straggler). Rows that cannot are not compared.
func oneJob(rows []Row, idx []int) bool {
	seen := map[int]bool{}
	for _, i := range idx {
		r := *rows[i].Rank
		if seen[r] {
			return false
		}
		seen[r] = true
	}
	n, err := strconv.Atoi(rows[idx[0]].WorldSize)
	return err != nil || len(idx) <= n
}

// ownJob says whether a rank row is a loader of world size 1: a job of
// its own, not a rank of a distributed job.
func ownJob(r Row) bool {
	n, err := strconv.Atoi(r.WorldSize)
	return err == nil && n <= 1
}

// problem says whether a verdict kind (as a label) names a bottleneck.
// KindDown is the row of a node whose exporter served gpuwatch within
// the hour and does not answer Prometheus now (up 0).
const KindDown = "exporter_down"

func problem(kind string) bool {
	if kind == KindDown {
		return true
	}
	var k diagnose.Kind
	return k.UnmarshalText([]byte(kind)) == nil && k.Problem()
}

// order sorts rows worst first: the fleet's straggler, then nodes and
// ranks with a problem verdict, the most waiting first; then by node,
// rank and loader.
func order(rows []Row) {
	wait := func(r Row) float64 {
		if r.WaitShare == nil {
			return -1
		}
		return *r.WaitShare
	}
	rank := func(r Row) int {
		if r.Rank == nil {
			return -1
		}
		return *r.Rank
	}
	slices.SortStableFunc(rows, func(a, b Row) int {
		if a.FleetStraggler != b.FleetStraggler {
			return boolFirst(a.FleetStraggler)
		}
		if pa, pb := problem(a.Kind), problem(b.Kind); pa != pb {
			return boolFirst(pa)
		}
		return cmp.Or(cmp.Compare(wait(b), wait(a)), cmp.Compare(a.Instance, b.Instance),
			cmp.Compare(rank(a), rank(b)), cmp.Compare(a.Loader, b.Loader))
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
	switch {
	case r.Rank != nil && ownJob(r):
		// A job of its own: its loader names it, not "rank 0".
		who += " " + r.Loader
	case r.Rank != nil:
		who += fmt.Sprintf(" rank %d", *r.Rank)
		if r.Ambiguous {
			who += " (" + r.Loader + ", ambiguous)"
		}
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

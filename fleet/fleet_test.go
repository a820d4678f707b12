package fleet

import (
	"bytes"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/internal/testnet"
)

// TestSnapshotOrdersWorstFirst serves a Prometheus API that answers each
// query as a real one would for two nodes (one with two ranks, rank 1
// waiting), and checks the rows: every node and rank, the fleet's
// straggler first, labels made printable.
func TestSnapshotOrdersWorstFirst(t *testing.T) {
	answers := map[string]string{
		`gpuwatch_verdict{job="gw"} == 1`: `[{"metric":{"__name__":"gpuwatch_verdict","job":"gw","instance":"a:9400","kind":"single_core_maxed"},"value":[1,"1"]},
			{"metric":{"__name__":"gpuwatch_verdict","job":"gw","instance":"b:9400\u001b[2J","kind":"healthy"},"value":[1,"1"]}]`,
		`gpuwatch_verdict_confidence_ratio{job="gw"}`: `[{"metric":{"job":"gw","instance":"a:9400"},"value":[1,"0.9"]}]`,
		`gpuwatch_loader_wait_ratio{job="gw"}`:        `[{"metric":{"job":"gw","instance":"a:9400"},"value":[1,"0.55"]}]`,
		`gpuwatch_rank_wait_ratio{job="gw"}`: `[{"metric":{"job":"gw","instance":"a:9400","rank":"0"},"value":[1,"0.01"]},
			{"metric":{"job":"gw","instance":"a:9400","rank":"1"},"value":[1,"0.55"]},
			{"metric":{"job":"gw","instance":"a:9400","rank":"x"},"value":[1,"0.9"]},
			{"metric":{"job":"gw","instance":"a:9400","rank":"2"},"value":[1,"NaN"]}]`,
		`gpuwatch_rank_straggler{job="gw"}`: `[{"metric":{"job":"gw","instance":"a:9400","rank":"1"},"value":[1,"1"]}]`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := answers[r.URL.Query().Get("query")]
		if !ok {
			body = "[]"
		}
		w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":` + body + `}}`))
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL, "gw", diagnose.DefaultThresholds())
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Rows) != 4 {
		t.Fatalf("rows %+v", s.Rows)
	}
	top := s.Rows[0]
	if top.Rank == nil || *top.Rank != 1 || !top.FleetStraggler || !top.Straggler || top.Kind != "single_core_maxed" {
		t.Errorf("first row %+v: want node a's rank 1, the straggler", top)
	}
	if last := s.Rows[3]; last.Kind != "healthy" || strings.ContainsRune(last.Instance, 0x1b) {
		t.Errorf("last row %+v: want node b, healthy, its name printable", last)
	}
	if !strings.Contains(top.Line(), "◀ the fleet's straggler") {
		t.Errorf("line %q", top.Line())
	}
	if _, err := NewClient("ftp://x", "", diagnose.DefaultThresholds()); err == nil {
		t.Error("accepted ftp://")
	}
	if _, err := NewClient("http://p", `a"b`, diagnose.DefaultThresholds()); err == nil {
		t.Error("accepted a job with a quote")
	}
}

// FuzzDecodeAnswer: any answer decodes without a panic into bounded,
// printable, finite series with only the labels fleet reads.
func FuzzDecodeAnswer(f *testing.F) {
	f.Add([]byte(`{"status":"success","data":{"result":[{"metric":{"instance":"a"},"value":[1,"0.5"]}]}}`))
	f.Add([]byte(`{"status":"error","error":"bad\u001b"}`))
	f.Add([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"rank":"-7","x":"y"},"value":[1,"5e300"]},{"value":[]}]}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		ans, err := decodeAnswer(bytes.NewReader(body))
		if err != nil {
			return
		}
		if len(ans.series) > maxSeries {
			t.Fatal("too many series")
		}
		for _, s := range ans.series {
			if s.value != s.value || math.IsInf(s.value, 0) {
				t.Fatal("a value that is no number kept")
			}
			for k, v := range s.labels {
				if !slices.Contains([]string{"job", "instance", "kind", "rank", "loader"}, k) || strings.ContainsRune(v, 0x1b) || len(v) > maxLabel+len("…") {
					t.Fatalf("label %s=%q kept", k, v)
				}
			}
		}
	})
}

// hugeAnswer is an answer of n series with labels labels each.
func hugeAnswer(n, labels int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"metric":{"instance":"n%d:9400","rank":"%d"`, i, i)
		for j := range labels {
			fmt.Fprintf(&b, `,"l%d":"v%d"`, j, j)
		}
		b.WriteString(`},"value":[1,"0.5"]}`)
	}
	b.WriteString("]}}")
	return b.Bytes()
}

// TestDecodingIsCappedWhileDecoding: an answer of 50,000 series keeps
// maxSeries and says it was cut; one series with 200,000 labels keeps the
// labels fleet reads.
func TestDecodingIsCappedWhileDecoding(t *testing.T) {
	ans, err := decodeAnswer(bytes.NewReader(hugeAnswer(50_000, 0)))
	if err != nil || len(ans.series) != maxSeries || !ans.cut {
		t.Fatalf("%d series, cut %v, %v", len(ans.series), ans.cut, err)
	}
	ans, err = decodeAnswer(bytes.NewReader(hugeAnswer(1, 200_000)))
	if err != nil || len(ans.series) != 1 || len(ans.series[0].labels) != 2 {
		t.Fatalf("%+v, %v", ans.series, err)
	}
}

// BenchmarkDecodeHugeAnswer reads a 32 MiB answer of 2.4 M labels (it cost
// 622 MB and 43 s when decoded whole): bytes allocated per answer and the
// peak heap.
func BenchmarkDecodeHugeAnswer(b *testing.B) {
	body := hugeAnswer(12, 200_000)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for range b.N {
		if _, err := decodeAnswer(bytes.NewReader(body)); err != nil {
			b.Fatal(err)
		}
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	b.ReportMetric(float64(m.HeapSys)/(1<<20), "MiB-heap-sys")
}

// prometheus is a Prometheus API answering every query with body, and
// status; the verdict query with verdict, when not "".
func prometheus(t *testing.T, status int, body, verdict string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		if verdict != "" && strings.HasPrefix(r.URL.Query().Get("query"), "gpuwatch_verdict{") {
			w.Write([]byte(verdict))
			return
		}
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

const nodeA = `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"instance":"a","kind":"gpu_starved"},"value":[1,"1"]}]}}`

// TestValuesOutOfRangeAreLeftOut: a wait of 5e300 and a rank of −7 are
// not shown; the snapshot says what was left out.
func TestValuesOutOfRangeAreLeftOut(t *testing.T) {
	srv := prometheus(t, 200, `{"status":"success","data":{"resultType":"vector","result":[`+
		`{"metric":{"instance":"a","rank":"-7","kind":"gpu_starved"},"value":[1,"0.5"]},`+
		`{"metric":{"instance":"a","rank":"1","kind":"gpu_starved"},"value":[1,"5e300"]}]}}`, nodeA)
	c, _ := NewClient(srv.URL, "", diagnose.DefaultThresholds())
	s, err := c.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range s.Rows {
		if r.Rank != nil && *r.Rank < 0 || r.WaitShare != nil && *r.WaitShare > 1 || r.StepSec != nil && *r.StepSec > 1e6 {
			t.Errorf("row kept out of range: %+v", r)
		}
	}
	text := strings.Join(s.Dropped, "\n")
	for _, want := range []string{"gpuwatch_verdict_confidence_ratio 5e+300 on a: outside 0–1, left out", `rank "-7" on a is no rank`, "and "} {
		if !strings.Contains(text, want) {
			t.Errorf("dropped %q lacks %q", text, want)
		}
	}
}

// TestTwoLoadersSayingOneRankAreTwoRows: gpuwatch serve labels each rank
// series with its loader; fleet keeps both, marked ambiguous.
func TestTwoLoadersSayingOneRankAreTwoRows(t *testing.T) {
	srv := prometheus(t, 200, `{"status":"success","data":{"resultType":"vector","result":[`+
		`{"metric":{"instance":"a","kind":"gpu_starved","rank":"0","loader":"http://127.0.0.1:1"},"value":[1,"1"]},`+
		`{"metric":{"instance":"a","kind":"gpu_starved","rank":"0","loader":"http://127.0.0.1:2"},"value":[1,"1"]}]}}`, "")
	c, _ := NewClient(srv.URL, "", diagnose.DefaultThresholds())
	s, err := c.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ranks := 0
	for _, r := range s.Rows {
		if r.Rank != nil {
			ranks++
			if !r.Ambiguous || !strings.Contains(r.Line(), "ambiguous") {
				t.Errorf("row %+v: %q", r, r.Line())
			}
		}
	}
	if ranks != 2 {
		t.Fatalf("%d rank rows, want 2: %+v", ranks, s.Rows)
	}
}

// TestErrorsNameNoSecretAndNoEscape: the server's URL with credentials,
// an error body and a status line with escapes: what fleet says carries
// neither the password nor a control byte; a refused connection says so
// in words.
func TestErrorsNameNoSecretAndNoEscape(t *testing.T) {
	srv := prometheus(t, 400, `{"status":"error","errorType":"bad_data","error":"\u001b]0;PWN\u0007\u001b[2Jparse error"}`, "")
	u := strings.Replace(srv.URL, "http://", "http://admin:s3cret@", 1)
	c, err := NewClient(u, "", diagnose.DefaultThresholds())
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Snapshot(t.Context())
	if err == nil || strings.Contains(err.Error(), "s3cret") || strings.ContainsAny(err.Error(), "\x1b\x07") || !strings.Contains(err.Error(), "parse error") {
		t.Fatalf("error %q", err)
	}
	if strings.Contains(c.Source(), "s3cret") {
		t.Errorf("title %q", c.Source())
	}
	if _, err := NewClient("http://admin:s3cret@[::1", "", diagnose.DefaultThresholds()); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("an unparsable URL: %v", err)
	}
	addr := testnet.RefusedAddr(t)
	c, _ = NewClient("http://"+addr, "", diagnose.DefaultThresholds())
	if _, err := c.Snapshot(t.Context()); err == nil || !strings.Contains(err.Error(), "connection refused (is Prometheus running and listening there?)") || strings.Contains(err.Error(), "dial tcp") {
		t.Errorf("refused: %v", err)
	}
}

// TestFleetStragglerOnlyAmongRanksOfOneJob (a review: two unrelated
// scripts, each rank 0 of 1, were the fleet's straggler and its victim):
// loaders of world size 1 are compared with no one and not ambiguous,
// and are named by their loader; two ranks of one job of two still name
// the one that waits most.
func TestFleetStragglerOnlyAmongRanksOfOneJob(t *testing.T) {
	th := diagnose.DefaultThresholds()
	rows := func(world string, r1 int) []Row {
		zero, one := 0, r1
		w0, w1 := 0.98, 0.01
		return []Row{
			{Instance: "a", Rank: &zero, Loader: "http://127.0.0.1:6061", WaitShare: &w0, WorldSize: world},
			{Instance: "a", Rank: &one, Loader: "http://127.0.0.1:6062", WaitShare: &w1, WorldSize: world},
		}
	}
	own := rows("1", 0)
	markFleetStraggler(own, th)
	for _, r := range own {
		if r.FleetStraggler || strings.Contains(r.Line(), "rank 0") || !strings.Contains(r.Line(), r.Loader) {
			t.Errorf("job of its own: %+v, line %q", r, r.Line())
		}
	}
	ranks := rows("2", 1)
	markFleetStraggler(ranks, th)
	if !ranks[0].FleetStraggler || ranks[1].FleetStraggler || !strings.Contains(ranks[0].Line(), "rank 0") {
		t.Errorf("two ranks of one job: %+v", ranks)
	}
}

// TestTwoJobsOfOneWorldSizeAreNotCompared (a review): two unrelated
// 2-rank jobs on two nodes, under one Prometheus job and both of world
// size 2, named node A's rank 0 the fleet's straggler. Ranks that cannot
// be one job's (a rank twice, more ranks than the world) are not
// compared; one job's ranks across two nodes still are.
func TestTwoJobsOfOneWorldSizeAreNotCompared(t *testing.T) {
	th := diagnose.DefaultThresholds()
	r0, r1, r2, r3 := 0, 1, 2, 3
	w := []float64{0.90, 0.88, 0.01, 0.02}
	rows := []Row{
		{Job: "gpuwatch", Instance: "nodeA:9400", Rank: &r0, Loader: "http://127.0.0.1:6061", WaitShare: &w[0], WorldSize: "2"},
		{Job: "gpuwatch", Instance: "nodeA:9400", Rank: &r1, Loader: "http://127.0.0.1:6062", WaitShare: &w[1], WorldSize: "2"},
		{Job: "gpuwatch", Instance: "nodeB:9400", Rank: &r0, Loader: "http://127.0.0.1:6061", WaitShare: &w[2], WorldSize: "2"},
		{Job: "gpuwatch", Instance: "nodeB:9400", Rank: &r1, Loader: "http://127.0.0.1:6062", WaitShare: &w[3], WorldSize: "2"},
	}
	markFleetStraggler(rows, th)
	for _, r := range rows {
		if r.FleetStraggler {
			t.Errorf("two jobs compared: %s is the straggler", r.Line())
		}
	}
	rows[2].Rank, rows[3].Rank = &r2, &r3
	for i := range rows {
		rows[i].WorldSize = "4"
	}
	markFleetStraggler(rows, th)
	if !slices.ContainsFunc(rows, func(r Row) bool { return r.FleetStraggler }) {
		t.Error("one 4-rank job across two nodes: no straggler among ranks waiting 90, 88, 1 and 2 %")
	}
}

// TestRedirectsStayOnTheServersHost (a review): a server that sends fleet
// elsewhere with a 302 (the cloud's metadata address) is not followed
// there; one that redirects on its own host is.
func TestRedirectsStayOnTheServersHost(t *testing.T) {
	reached := make(chan struct{}, 16)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached <- struct{}{}
		w.Write([]byte(nodeA))
	}))
	t.Cleanup(other.Close)
	far := strings.Replace(other.URL, "127.0.0.1", "localhost", 1) // another host name
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/here/"):
			w.Write([]byte(nodeA))
		case strings.HasPrefix(r.URL.Path, "/away/"):
			http.Redirect(w, r, far+r.URL.Path, http.StatusFound)
		default:
			http.Redirect(w, r, "/here"+r.URL.Path+"?"+r.URL.RawQuery, http.StatusFound)
		}
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL, "", diagnose.DefaultThresholds())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Snapshot(t.Context()); err != nil {
		t.Fatalf("a redirect on the server's own host: %v", err)
	}
	c, _ = NewClient(srv.URL+"/away", "", diagnose.DefaultThresholds())
	if _, err := c.Snapshot(t.Context()); err == nil || len(reached) > 0 {
		t.Fatalf("followed to another host: %v (%d requests reached it)", err, len(reached))
	}
}

// TestADeadExporterIsARow (a review): a node whose exporter no longer
// answers (up 0), having served gpuwatch within the hour, is a row of
// its own, first: its verdict's series had gone stale and it was no row.
func TestADeadExporterIsARow(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query().Get("query")
		switch {
		case strings.HasPrefix(q, "up{} == 0 and on (job, instance) max_over_time(gpuwatch_frame_timestamp_seconds{}[1h])"):
			w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"instance":"b","job":"gpuwatch"},"value":[1,"0"]}]}}`))
		case strings.HasPrefix(q, "gpuwatch_verdict{"):
			w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"instance":"a","job":"gpuwatch","kind":"healthy"},"value":[1,"1"]}]}}`))
		default:
			w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
		}
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL, "", diagnose.DefaultThresholds())
	if err != nil {
		t.Fatal(err)
	}
	snap, err := c.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Rows) != 2 || snap.Rows[0].Instance != "b" || snap.Rows[0].Kind != KindDown || snap.Rows[0].Up == nil || *snap.Rows[0].Up || snap.Rows[1].Kind != "healthy" {
		t.Fatalf("rows %+v", snap.Rows)
	}
}

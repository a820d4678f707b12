package fleet

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
	c, err := NewClient(srv.URL, "gw")
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
	if _, err := NewClient("ftp://x", ""); err == nil {
		t.Error("accepted ftp://")
	}
	if _, err := NewClient("http://p", `a"b`); err == nil {
		t.Error("accepted a job with a quote")
	}
}

// FuzzDecodeAnswer: any answer decodes without a panic into bounded,
// printable, finite series.
func FuzzDecodeAnswer(f *testing.F) {
	f.Add([]byte(`{"status":"success","data":{"result":[{"metric":{"instance":"a"},"value":[1,"0.5"]}]}}`))
	f.Add([]byte(`{"status":"error","error":"bad\u001b"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := decodeAnswer(body)
		if err != nil {
			return
		}
		if len(out) > maxSeries {
			t.Fatal("too many series")
		}
		for _, s := range out {
			if s.value != s.value {
				t.Fatal("NaN kept")
			}
			for _, v := range s.labels {
				if strings.ContainsRune(v, 0x1b) {
					t.Fatalf("label %q not printable", v)
				}
			}
		}
	})
}

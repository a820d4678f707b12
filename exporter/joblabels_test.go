package exporter

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/internal/fixture"
	"github.com/gpuwatch/gpuwatch/sample"
)

// gather scrapes e through a pedantic registry (which also checks that
// every series of a family has the same label names).
func gather(t *testing.T, e *Exporter) []*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	return mfs
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.Label {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// TestPodLabelsOnEverySeries: a frame whose job is a Kubernetes pod (the
// identity the cgroup probe reads from kubelet's cgroup path and the
// downward API variables) puts pod, namespace, pod_uid and container_id
// on every series; the verdict keeps its own labels, filled.
func TestPodLabelsOnEverySeries(t *testing.T) {
	e := &Exporter{}
	f := fixture.GPUFrame()
	f.Job = &sample.Job{Identity: &sample.JobIdentity{Pod: "trainer-0", Namespace: "ml", PodUID: "1b2c3d4e-aaaa-bbbb-cccc-0123456789ab", Container: "4f4f4f4f4f4f"}}
	e.Set(f, diagnose.Verdict{Kind: diagnose.GPUStarved, Confidence: 0.9})
	want := map[string]string{"pod": "trainer-0", "namespace": "ml", "pod_uid": "1b2c3d4e-aaaa-bbbb-cccc-0123456789ab", "container_id": "4f4f4f4f4f4f"}
	n := 0
	for _, mf := range gather(t, e) {
		for _, m := range mf.Metric {
			n++
			got := labelsOf(m)
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s %v: %s=%q, want %q", mf.GetName(), got, k, got[k], v)
				}
			}
			if _, ok := got["slurm_job"]; ok && mf.GetName() != "gpuwatch_verdict" {
				t.Errorf("%s: slurm_job on a pod's series", mf.GetName())
			}
		}
	}
	if n < 20 {
		t.Fatalf("%d series", n)
	}
	wantVerdict := `
# HELP gpuwatch_verdict_confidence_ratio Confidence of the verdict shown now, 0–1.
# TYPE gpuwatch_verdict_confidence_ratio gauge
gpuwatch_verdict_confidence_ratio{container_id="4f4f4f4f4f4f",namespace="ml",pod="trainer-0",pod_uid="1b2c3d4e-aaaa-bbbb-cccc-0123456789ab"} 0.9
`
	if err := testutil.CollectAndCompare(e, strings.NewReader(wantVerdict), "gpuwatch_verdict_confidence_ratio"); err != nil {
		t.Fatal(err)
	}
	if got := testutil.CollectAndCount(e, "gpuwatch_verdict"); got != len(diagnose.Kinds) {
		t.Errorf("%d verdict series, want one per kind", got)
	}
}

// TestNoJobNoNewLabels: a frame with no job reads as before (the
// exporter's other tests compare whole series).
func TestNoJobNoNewLabels(t *testing.T) {
	e := &Exporter{SlurmJobs: func() SlurmJobs { return SlurmJobs{} }}
	e.Set(fixture.Frame(), diagnose.Verdict{Kind: diagnose.Idle})
	for _, mf := range gather(t, e) {
		for _, m := range mf.Metric {
			for _, l := range []string{"pod_uid", "container_id", "user", "gpus"} {
				if _, ok := labelsOf(m)[l]; ok {
					t.Errorf("%s has %s with no job", mf.GetName(), l)
				}
			}
		}
	}
}

// writeJob writes a mapping file as deploy/slurm/prolog.sh does.
func writeJob(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSlurmMappingLabelsTheJob: the job a frame names (by its cgroup)
// gets its mapped user and GPUs (slurm_job, user, gpus) on the node's
// series; a frame that names no job is nobody's, even with one job alone
// mapped on the node (issue 54: an ssh login's torch process was credited
// to it); each mapped job has its info series.
func TestSlurmMappingLabelsTheJob(t *testing.T) {
	dir := t.TempDir()
	writeJob(t, dir, "4242", "user=alice\ngpus=0,1\n")
	e := &Exporter{SlurmJobs: func() SlurmJobs { return ReadSlurmJobs(dir) }}
	e.Set(fixture.Frame(), diagnose.Verdict{Kind: diagnose.GPUStarved, Confidence: 0.5})
	nobodys := `
# HELP gpuwatch_verdict_confidence_ratio Confidence of the verdict shown now, 0–1.
# TYPE gpuwatch_verdict_confidence_ratio gauge
gpuwatch_verdict_confidence_ratio 0.5
`
	if err := testutil.CollectAndCompare(e, strings.NewReader(nobodys), "gpuwatch_verdict_confidence_ratio"); err != nil {
		t.Fatalf("a frame that names no job, one job mapped: %v", err)
	}
	alices := fixture.Frame()
	alices.Job = &sample.Job{Identity: &sample.JobIdentity{SlurmJob: "4242", SlurmStep: "0"}}
	e.Set(alices, diagnose.Verdict{Kind: diagnose.GPUStarved, Confidence: 0.5})
	want := `
# HELP gpuwatch_verdict_confidence_ratio Confidence of the verdict shown now, 0–1.
# TYPE gpuwatch_verdict_confidence_ratio gauge
gpuwatch_verdict_confidence_ratio{gpus="0,1",slurm_job="4242",user="alice"} 0.5
# HELP gpuwatch_slurm_job_info 1 for each Slurm job a prolog mapped on this node (serve --slurm-job-dir): its user and GPU indices.
# TYPE gpuwatch_slurm_job_info gauge
gpuwatch_slurm_job_info{gpus="0,1",slurm_job="4242",user="alice"} 1
`
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), "gpuwatch_verdict_confidence_ratio", "gpuwatch_slurm_job_info"); err != nil {
		t.Fatal(err)
	}
	for _, mf := range gather(t, e) {
		if mf.GetName() == "gpuwatch_verdict" {
			for _, m := range mf.Metric {
				if l := labelsOf(m); l["slurm_job"] != "4242" || l["user"] != "alice" {
					t.Errorf("verdict %v", l)
				}
			}
		}
	}

	writeJob(t, dir, "77", "user=bob\ngpus=2\n")
	f := fixture.Frame()
	f.Job = &sample.Job{Identity: &sample.JobIdentity{SlurmJob: "77", SlurmStep: "batch"}}
	e.Set(f, diagnose.Verdict{Kind: diagnose.Healthy, Confidence: 1})
	want = `
# HELP gpuwatch_verdict_confidence_ratio Confidence of the verdict shown now, 0–1.
# TYPE gpuwatch_verdict_confidence_ratio gauge
gpuwatch_verdict_confidence_ratio{gpus="2",slurm_job="77",user="bob"} 1
# HELP gpuwatch_slurm_job_info 1 for each Slurm job a prolog mapped on this node (serve --slurm-job-dir): its user and GPU indices.
# TYPE gpuwatch_slurm_job_info gauge
gpuwatch_slurm_job_info{gpus="2",slurm_job="77",user="bob"} 1
gpuwatch_slurm_job_info{gpus="0,1",slurm_job="4242",user="alice"} 1
`
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), "gpuwatch_verdict_confidence_ratio", "gpuwatch_slurm_job_info"); err != nil {
		t.Fatal(err)
	}
	// Two jobs and a frame that names none: no job's labels.
	e.Set(fixture.Frame(), diagnose.Verdict{Kind: diagnose.Idle, Confidence: 1})
	want = `
# HELP gpuwatch_verdict_confidence_ratio Confidence of the verdict shown now, 0–1.
# TYPE gpuwatch_verdict_confidence_ratio gauge
gpuwatch_verdict_confidence_ratio 1
`
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), "gpuwatch_verdict_confidence_ratio"); err != nil {
		t.Fatal(err)
	}
}

// TestSlurmMappingFolderIsHostile: the folder is outside input. Links,
// FIFOs, huge files, names that are no job ID and bad values are refused
// without reading past a bound or blocking; good files still count.
func TestSlurmMappingFolderIsHostile(t *testing.T) {
	dir := t.TempDir()
	writeJob(t, dir, "1", "user=alice\ngpus=0\nfuture=key\n")
	writeJob(t, dir, ".tmp.2", "user=half-written\n")
	writeJob(t, dir, "../x", "")
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "3")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "4"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeJob(t, dir, "5", strings.Repeat("user=alice\n", 1000))
	writeJob(t, dir, "6", "user=alice\x1b[31m\n")
	writeJob(t, dir, "7", "user=bob\ngpus=0,,1\n")
	writeJob(t, dir, "8", "user=-rf\n")
	writeJob(t, dir, "job_9", "user=alice\n")
	writeJob(t, dir, "10", "gpus=01\n")
	if err := os.Mkdir(filepath.Join(dir, "11"), 0o755); err != nil {
		t.Fatal(err)
	}
	j := ReadSlurmJobs(dir)
	if len(j.List) != 1 || j.List[0] != (SlurmJob{ID: "1", User: "alice", GPUs: "0"}) {
		t.Errorf("jobs %+v", j.List)
	}
	// 3 (link), 4 (FIFO), 5 (size), 6, 7, 8, 10 (values), job_9 (name), 11 (a folder); ../x was never a name in dir.
	if j.NRejected != 9 || len(j.Rejected) != maxRejected {
		t.Errorf("%d rejected: %q", j.NRejected, j.Rejected)
	}
	for _, r := range j.Rejected {
		if strings.ContainsRune(r, 0x1b) {
			t.Errorf("a reason reaches a terminal unsanitised: %q", r)
		}
	}
	if got := ReadSlurmJobs(filepath.Join(dir, "absent")); len(got.List) != 0 || got.NRejected != 0 {
		t.Errorf("a missing folder: %+v", got)
	}
}

// TestSlurmMappingIsBounded: a folder of many files yields at most
// MaxSlurmJobs jobs, sorted by ID, and says the rest were left out.
func TestSlurmMappingIsBounded(t *testing.T) {
	dir := t.TempDir()
	for i := range 3 * MaxSlurmJobs {
		writeJob(t, dir, strconv.Itoa(7*i+1), "user=u\n") // 1, 8, …, 1338: lengths differ
	}
	j := ReadSlurmJobs(dir)
	if len(j.List) != MaxSlurmJobs || j.NRejected != 1 {
		t.Fatalf("%d jobs, %d rejected", len(j.List), j.NRejected)
	}
	for i := 1; i < len(j.List); i++ {
		a, b := j.List[i-1].ID, j.List[i].ID
		if len(a) > len(b) || len(a) == len(b) && a >= b {
			t.Errorf("not sorted: %s before %s", a, b)
		}
	}
}

// TestEveryLabelIsPrintable: names from outside with control characters
// and bytes that are not UTF-8 — a disk "e\x1b[31mred" from a crafted
// /proc/diskstats, a pod with DEL and a C1 CSI, a disk that is not UTF-8,
// two disks that differ only in a control character — come out with
// U+FFFD in their place: the exposition has no control byte inside a
// label (nor anywhere but the newlines between lines), is UTF-8, and
// parses with expfmt. Before, the ESC went out raw, and a name not UTF-8
// failed the scrape.
func TestEveryLabelIsPrintable(t *testing.T) {
	f := fixture.Frame()
	f.Disks = []sample.Disk{{Name: "e\x1b[31mred", BusyPct: 50}, {Name: "bad\xff\x9bname"},
		{Name: "a\x01"}, {Name: "a\x02"}}
	f.Job = &sample.Job{Identity: &sample.JobIdentity{Pod: "p\x7fo\u009bd", Namespace: "ns\x1b]0;x\x07", PodUID: "u\x00id"}}
	e := &Exporter{}
	e.Set(f, diagnose.Verdict{Kind: diagnose.IOBound, Confidence: 0.8})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e)
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	text := rec.Body.String()
	for i, line := range strings.Split(text, "\n") {
		for _, b := range []byte(line) {
			if b < 0x20 || b == 0x7f {
				t.Fatalf("line %d has byte %#02x: %q", i+1, b, line)
			}
		}
		if !utf8.ValidString(line) || strings.ContainsFunc(line, func(r rune) bool { return r >= 0x80 && r < 0xa0 }) {
			t.Fatalf("line %d is not UTF-8 or has a C1 control: %q", i+1, line)
		}
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("expfmt: %v", err)
	}
	disks := map[string]bool{}
	for _, m := range mfs["gpuwatch_disk_busy_ratio"].GetMetric() {
		l := labelsOf(m)
		disks[l["device"]] = true
		if l["pod"] != "p\uFFFDo\uFFFDd" || l["namespace"] != "ns\uFFFD]0;x\uFFFD" || l["pod_uid"] != "u\uFFFDid" {
			t.Errorf("job labels %q", l)
		}
	}
	for _, want := range []string{"e\uFFFD[31mred", "bad\uFFFD\uFFFDname", "a\uFFFD"} {
		if !disks[want] {
			t.Errorf("no disk %q in %v", want, disks)
		}
	}
}

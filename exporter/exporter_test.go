package exporter

import (
	"io"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/internal/expo"
	"github.com/gpuwatch/gpuwatch/internal/fixture"
	"github.com/gpuwatch/gpuwatch/sample"
)

func TestExporterExposesTheVerdictAndOnlyWhatWasRead(t *testing.T) {
	e := &Exporter{}
	if n := testutil.CollectAndCount(e); n != 0 {
		t.Fatalf("%d metrics before the first frame", n)
	}
	f := fixture.Frame() // CPU, memory, one disk, PSI cpu only, no GPU, no loader
	e.Set(f, diagnose.Verdict{Kind: diagnose.IOBound, Confidence: 0.8, Since: f.Time})
	want := `
# HELP gpuwatch_verdict 1 for the verdict shown now, 0 for the others; the job's identity where it is known (slurm_job, not job: Prometheus owns that label).
# TYPE gpuwatch_verdict gauge
gpuwatch_verdict{kind="cpu_saturated",namespace="",pod="",rank="",slurm_job="",slurm_step=""} 0
gpuwatch_verdict{kind="gpu_starved",namespace="",pod="",rank="",slurm_job="",slurm_step=""} 0
gpuwatch_verdict{kind="gpu_underused",namespace="",pod="",rank="",slurm_job="",slurm_step=""} 0
gpuwatch_verdict{kind="healthy",namespace="",pod="",rank="",slurm_job="",slurm_step=""} 0
gpuwatch_verdict{kind="idle",namespace="",pod="",rank="",slurm_job="",slurm_step=""} 0
gpuwatch_verdict{kind="io_bound",namespace="",pod="",rank="",slurm_job="",slurm_step=""} 1
gpuwatch_verdict{kind="memory_pressure",namespace="",pod="",rank="",slurm_job="",slurm_step=""} 0
gpuwatch_verdict{kind="single_core_maxed",namespace="",pod="",rank="",slurm_job="",slurm_step=""} 0
gpuwatch_verdict{kind="warming_up",namespace="",pod="",rank="",slurm_job="",slurm_step=""} 0
# HELP gpuwatch_cpu_core_busy_ratio Share of one logical CPU's time busy, 0–1.
# TYPE gpuwatch_cpu_core_busy_ratio gauge
gpuwatch_cpu_core_busy_ratio{core="0"} 0.95
gpuwatch_cpu_core_busy_ratio{core="1"} 0.1
# HELP gpuwatch_pressure_some_ratio Share of the last interval some task stalled on the resource (PSI; the kernel's 10 s average on the first reading), 0–1.
# TYPE gpuwatch_pressure_some_ratio gauge
gpuwatch_pressure_some_ratio{resource="cpu"} 0.2
`
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), "gpuwatch_verdict", "gpuwatch_cpu_core_busy_ratio", "gpuwatch_pressure_some_ratio"); err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"gpuwatch_gpu_utilization_ratio", "gpuwatch_loader_wait_ratio", "gpuwatch_virtual_accelerator_busy_ratio", "gpuwatch_swap_in_pages_per_second", "gpuwatch_self_cpu_seconds_total"} {
		if n := testutil.CollectAndCount(e, absent); n != 0 {
			t.Errorf("%s exposed without data", absent)
		}
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(e); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatalf("pedantic registry: %v", err)
	}
}

func TestExporterPerRankSeries(t *testing.T) {
	e := &Exporter{}
	f := fixture.Frame()
	w0, w1, s0, s1 := 0.01, 0.55, 0.044, 0.02
	f.Ranks = []sample.Rank{
		{Rank: 0, URL: "http://127.0.0.1:6061", Connected: true, WaitShare: &w0, StepSec: &s0, SamplesPerSec: 300},
		{Rank: 1, URL: "http://127.0.0.1:6062", Connected: true, WaitShare: &w1, StepSec: &s1, SamplesPerSec: 300, Pacing: true},
		{Rank: 2, URL: "http://127.0.0.1:6063"},
	}
	one := 1
	e.Set(f, diagnose.Verdict{Kind: diagnose.SingleCoreMaxed, Straggler: &one})
	want := `
# HELP gpuwatch_rank_straggler 1 for the rank the verdict names as holding the job back, 0 for the others.
# TYPE gpuwatch_rank_straggler gauge
gpuwatch_rank_straggler{loader="http://127.0.0.1:6061",rank="0",world_size=""} 0
gpuwatch_rank_straggler{loader="http://127.0.0.1:6062",rank="1",world_size=""} 1
gpuwatch_rank_straggler{loader="http://127.0.0.1:6063",rank="2",world_size=""} 0
# HELP gpuwatch_rank_up 1 while the rank's loader answers, 0 while it does not (several ranks attached).
# TYPE gpuwatch_rank_up gauge
gpuwatch_rank_up{loader="http://127.0.0.1:6061",rank="0",world_size=""} 1
gpuwatch_rank_up{loader="http://127.0.0.1:6062",rank="1",world_size=""} 1
gpuwatch_rank_up{loader="http://127.0.0.1:6063",rank="2",world_size=""} 0
# HELP gpuwatch_rank_wait_ratio Share of the rank's training-loop time waiting for its next batch, 0–1.
# TYPE gpuwatch_rank_wait_ratio gauge
gpuwatch_rank_wait_ratio{loader="http://127.0.0.1:6061",rank="0",world_size=""} 0.01
gpuwatch_rank_wait_ratio{loader="http://127.0.0.1:6062",rank="1",world_size=""} 0.55
# HELP gpuwatch_rank_step_seconds The rank's mean step (in a synchronous job it includes waiting for the other ranks in the all-reduce).
# TYPE gpuwatch_rank_step_seconds gauge
gpuwatch_rank_step_seconds{loader="http://127.0.0.1:6061",rank="0",world_size=""} 0.044
gpuwatch_rank_step_seconds{loader="http://127.0.0.1:6062",rank="1",world_size=""} 0.02
`
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), "gpuwatch_rank_straggler", "gpuwatch_rank_up", "gpuwatch_rank_wait_ratio", "gpuwatch_rank_step_seconds"); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(e); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatalf("pedantic registry: %v", err)
	}
}

// TestTwoLoadersSayingOneRankAreTwoSeries: two loaders that both say
// rank 0 are two series told apart by their loader's URL; the scrape
// succeeds (a duplicate series failed every scrape with HTTP 500).
func TestTwoLoadersSayingOneRankAreTwoSeries(t *testing.T) {
	e := &Exporter{}
	f := fixture.Frame()
	w0, w1 := 0.1, 0.6
	f.Ranks = []sample.Rank{
		{Rank: 0, URL: "http://127.0.0.1:6061", PID: 10, Connected: true, WaitShare: &w0},
		{Rank: 0, URL: "http://127.0.0.1:6062", PID: 20, Connected: true, WaitShare: &w1},
	}
	e.Set(f, diagnose.Verdict{Kind: diagnose.GPUStarved, Changes: []diagnose.Change{{Knob: "workers", From: "1", To: "2"}, {Knob: "workers", From: "1", To: "2"}}})
	want := `
# HELP gpuwatch_rank_wait_ratio Share of the rank's training-loop time waiting for its next batch, 0–1.
# TYPE gpuwatch_rank_wait_ratio gauge
gpuwatch_rank_wait_ratio{loader="http://127.0.0.1:6061",rank="0",world_size=""} 0.1
gpuwatch_rank_wait_ratio{loader="http://127.0.0.1:6062",rank="0",world_size=""} 0.6
`
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), "gpuwatch_rank_wait_ratio"); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e)
	if _, err := reg.Gather(); err != nil {
		t.Fatalf("the scrape fails: %v", err)
	}
}

// TestExporterGPUProcessMemoryIsBounded: per-process GPU memory with pid
// and gpu labels, the largest MaxGPUProcessSeries only.
func TestExporterGPUProcessMemoryIsBounded(t *testing.T) {
	e := &Exporter{}
	f := fixture.Frame()
	for g := range 2 {
		gpu := sample.GPU{Index: g, Name: "A100"}
		for p := range 50 {
			mem := uint64((g*50 + p + 1) << 20)
			gpu.Processes = append(gpu.Processes, sample.GPUProcess{PID: 1000 + g*50 + p, UsedMemBytes: &mem})
		}
		f.GPUs = append(f.GPUs, gpu)
	}
	e.Set(f, diagnose.Verdict{Kind: diagnose.Healthy})
	if n := testutil.CollectAndCount(e, "gpuwatch_gpu_process_memory_used_bytes"); n != MaxGPUProcessSeries {
		t.Fatalf("%d series, want %d", n, MaxGPUProcessSeries)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(e); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "gpuwatch_gpu_process_memory_used_bytes" {
			continue
		}
		for _, m := range mf.Metric {
			// 100 processes of 1…100 MiB: the largest 64 are 37 MiB and up.
			if m.GetGauge().GetValue() < float64(100-MaxGPUProcessSeries+1)*(1<<20) {
				t.Errorf("a small process kept: %v", m)
			}
			if len(m.Label) != 2 || m.Label[0].GetName() != "gpu" || m.Label[1].GetName() != "pid" {
				t.Errorf("labels %v", m.Label)
			}
		}
	}
}

// TestExporterStageSeries: the stages the hook timed (seconds, and the
// workers' shares), the payload and the workers' run delay; what was not
// measured is absent.
func TestExporterStageSeries(t *testing.T) {
	e := &Exporter{}
	f := fixture.Frame()
	ms := func(v float64) *float64 { return &v }
	f.Loader = &sample.Loader{Source: "http://127.0.0.1:6061", WaitShare: ms(0.5),
		Stages:               &sample.LoaderStages{GetitemMs: ms(30), TakeMs: ms(0.5), GetitemShare: ms(0.75)},
		Payload:              &sample.BatchPayload{BytesPerBatch: 4096, PaddingShare: ms(0.25)},
		WorkersRunDelayShare: ms(0.4)}
	e.Set(f, diagnose.Verdict{Kind: diagnose.GPUStarved})
	want := `
# HELP gpuwatch_loader_stage_seconds A batch's time in one pipeline stage over the last interval (workers: getitem, collate, handover; training process: take, pin, step, first_batch).
# TYPE gpuwatch_loader_stage_seconds gauge
gpuwatch_loader_stage_seconds{stage="getitem"} 0.03
gpuwatch_loader_stage_seconds{stage="take"} 0.0005
# HELP gpuwatch_loader_stage_worker_ratio A worker stage's share of a worker's time per batch, 0–1.
# TYPE gpuwatch_loader_stage_worker_ratio gauge
gpuwatch_loader_stage_worker_ratio{stage="getitem"} 0.75
# HELP gpuwatch_loader_batch_bytes Bytes of tensors in a batch the training loop receives (the batches the hook looked inside).
# TYPE gpuwatch_loader_batch_bytes gauge
gpuwatch_loader_batch_bytes 4096
# HELP gpuwatch_loader_padding_ratio Share of a batch's token-tensor elements that are padding, 0–1.
# TYPE gpuwatch_loader_padding_ratio gauge
gpuwatch_loader_padding_ratio 0.25
# HELP gpuwatch_loader_workers_run_delay_ratio Share of the loader workers' running-or-runnable time spent waiting for a CPU, 0–1.
# TYPE gpuwatch_loader_workers_run_delay_ratio gauge
gpuwatch_loader_workers_run_delay_ratio 0.4
`
	names := []string{"gpuwatch_loader_stage_seconds", "gpuwatch_loader_stage_worker_ratio", "gpuwatch_loader_batch_bytes",
		"gpuwatch_loader_batch_float64_ratio", "gpuwatch_loader_padding_ratio", "gpuwatch_loader_workers_run_delay_ratio"}
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
}

// TestExporterCeilingSeries: a measured ceiling and the input's cost
// against it (1 − 1,480 ÷ 2,960); none while it is being measured.
func TestExporterCeilingSeries(t *testing.T) {
	e := &Exporter{}
	f := fixture.Frame()
	ms := func(v float64) *float64 { return &v }
	f.Loader = &sample.Loader{Source: "http://127.0.0.1:6061", SamplesPerSec: 1480,
		Ceiling: &sample.Ceiling{State: sample.CeilingDone, SamplesPerSec: ms(2960), StepMs: ms(2.1)}}
	e.Set(f, diagnose.Verdict{Kind: diagnose.GPUStarved})
	want := `
# HELP gpuwatch_loader_ceiling_samples_per_second ` + sample.SeriesLoaderCeilingSamplesPerSecond.Help + `
# TYPE gpuwatch_loader_ceiling_samples_per_second gauge
gpuwatch_loader_ceiling_samples_per_second 2960
# HELP gpuwatch_loader_input_cost_ratio ` + sample.SeriesLoaderInputCostRatio.Help + `
# TYPE gpuwatch_loader_input_cost_ratio gauge
gpuwatch_loader_input_cost_ratio 0.5
`
	names := []string{"gpuwatch_loader_ceiling_samples_per_second", "gpuwatch_loader_input_cost_ratio"}
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	f.Loader.Ceiling.State = sample.CeilingReplaying
	f.Loader.SamplesPerSec = 0 // the loop takes no batch of its own while it replays
	e.Set(f, diagnose.Verdict{Kind: diagnose.GPUStarved})
	if n := testutil.CollectAndCount(e, names...); n != 0 {
		t.Fatalf("%d ceiling series while it is being measured", n)
	}
	// Nor a samples/s: the job's rate is not read while the replay runs,
	// and a 0 would fire every alert on a stopped loop (a user's review).
	f.Loader.WaitShare = new(float64) // the replay's own: the loop hardly waits on kept batches
	e.Set(f, diagnose.Verdict{Kind: diagnose.GPUStarved})
	for _, name := range []string{"gpuwatch_loader_samples_per_second", "gpuwatch_loader_wait_ratio"} {
		if n := testutil.CollectAndCount(e, name); n != 0 {
			t.Fatalf("%d %s series while the ceiling replays", n, name)
		}
	}
}

// TestExporterMFUSeries (issue 51 item 1): the step's MFU, derived by
// sample, labelled with the dtype whose peak it is against; none where it
// was not derived.
func TestExporterMFUSeries(t *testing.T) {
	e := &Exporter{}
	f := fixture.Frame()
	f.Loader = &sample.Loader{Source: "http://127.0.0.1:6061", SamplesPerSec: 1480, MFU: &sample.MFU{Ratio: 0.31, Dtype: "bf16", PeakTFLOPS: 989.5, GPU: "H200 SXM"}}
	e.Set(f, diagnose.Verdict{Kind: diagnose.Healthy})
	want := `
# HELP gpuwatch_loader_mfu_ratio ` + sample.SeriesLoaderMFURatio.Help + `
# TYPE gpuwatch_loader_mfu_ratio gauge
gpuwatch_loader_mfu_ratio{dtype="bf16"} 0.31
`
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), "gpuwatch_loader_mfu_ratio"); err != nil {
		t.Fatal(err)
	}
	f.Loader.MFU = nil
	e.Set(f, diagnose.Verdict{Kind: diagnose.Healthy})
	if n := testutil.CollectAndCount(e, "gpuwatch_loader_mfu_ratio"); n != 0 {
		t.Fatalf("%d MFU series where none was derived", n)
	}
}

// The exporter's descriptions are sample's series table, each once: a
// series renamed there is renamed here and in fleet/, which reads it.
func TestDescsAreTheSeriesTable(t *testing.T) {
	served := map[string]bool{}
	for _, d := range append(allDescs, dSlurmJob, dSlurmRejected) {
		if served[d.name] {
			t.Errorf("%s described twice", d.name)
		}
		served[d.name] = true
	}
	for _, s := range sample.AllSeries {
		if !served[s.Name] {
			t.Errorf("%s is in sample.AllSeries but the exporter does not serve it", s.Name)
		}
		delete(served, s.Name)
	}
	for n := range served {
		t.Errorf("%s is served but not in sample.AllSeries", n)
	}
}

// TestExporterGPMAndPeakSeries: GPM's readings as ratios (the pipes by
// precision labelled, only those the GPU gave), the dense peak by dtype in
// ops/s; a GPU with neither (an unknown model without GPM) has none.
func TestExporterGPMAndPeakSeries(t *testing.T) {
	e := &Exporter{}
	f := fixture.Frame()
	p := func(v float64) *float64 { return &v }
	f.GPUs = []sample.GPU{
		{Index: 0, Name: "NVIDIA H200", GPM: &sample.GPM{SMActivityPct: p(82), SMOccupancyPct: p(46), TensorActivityPct: p(12), DRAMBWUtilPct: p(40),
			TensorHMMAActivityPct: p(12), FP32ActivityPct: p(5)},
			Peak: &sample.GPUPeak{Model: "H200 SXM", DenseTFLOPS: map[string]float64{"bf16": 989.5, "int8": 1979}}},
		{Index: 1, Name: "NVIDIA Quadro P1000", Unavailable: map[string]string{"peak": "no dense peak known"}},
	}
	e.Set(f, diagnose.Verdict{Kind: diagnose.Healthy})
	want := `
# HELP gpuwatch_gpu_sm_activity_ratio ` + sample.SeriesGpuSmActivityRatio.Help + `
# TYPE gpuwatch_gpu_sm_activity_ratio gauge
gpuwatch_gpu_sm_activity_ratio{gpu="0",name="NVIDIA H200"} 0.82
# HELP gpuwatch_gpu_tensor_activity_ratio ` + sample.SeriesGpuTensorActivityRatio.Help + `
# TYPE gpuwatch_gpu_tensor_activity_ratio gauge
gpuwatch_gpu_tensor_activity_ratio{gpu="0",name="NVIDIA H200"} 0.12
# HELP gpuwatch_gpu_tensor_pipe_activity_ratio ` + sample.SeriesGpuTensorPipeActivityRatio.Help + `
# TYPE gpuwatch_gpu_tensor_pipe_activity_ratio gauge
gpuwatch_gpu_tensor_pipe_activity_ratio{gpu="0",name="NVIDIA H200",pipe="hmma"} 0.12
# HELP gpuwatch_gpu_fp_pipe_activity_ratio ` + sample.SeriesGpuFpPipeActivityRatio.Help + `
# TYPE gpuwatch_gpu_fp_pipe_activity_ratio gauge
gpuwatch_gpu_fp_pipe_activity_ratio{gpu="0",name="NVIDIA H200",precision="fp32"} 0.05
# HELP gpuwatch_gpu_dram_bandwidth_ratio ` + sample.SeriesGpuDramBandwidthRatio.Help + `
# TYPE gpuwatch_gpu_dram_bandwidth_ratio gauge
gpuwatch_gpu_dram_bandwidth_ratio{gpu="0",name="NVIDIA H200"} 0.4
# HELP gpuwatch_gpu_dense_peak_ops_per_second ` + sample.SeriesGpuDensePeakOpsPerSecond.Help + `
# TYPE gpuwatch_gpu_dense_peak_ops_per_second gauge
gpuwatch_gpu_dense_peak_ops_per_second{dtype="bf16",gpu="0",name="NVIDIA H200"} 9.895e+14
gpuwatch_gpu_dense_peak_ops_per_second{dtype="int8",gpu="0",name="NVIDIA H200"} 1.979e+15
`
	names := []string{"gpuwatch_gpu_sm_activity_ratio", "gpuwatch_gpu_tensor_activity_ratio", "gpuwatch_gpu_tensor_pipe_activity_ratio",
		"gpuwatch_gpu_fp_pipe_activity_ratio", "gpuwatch_gpu_dram_bandwidth_ratio", "gpuwatch_gpu_dense_peak_ops_per_second"}
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(e, "gpuwatch_gpu_sm_occupancy_ratio"); n != 1 {
		t.Errorf("%d occupancy series, want GPU 0's", n)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(e); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatalf("pedantic registry: %v", err)
	}
}

// TestExporterSelfSeries: gpuwatch's own cost, its CPU as a counter (so
// rate() is its share of a core) and its memory and tick as gauges; a
// part not read is absent, never 0.
func TestExporterSelfSeries(t *testing.T) {
	e := &Exporter{}
	f := fixture.Frame()
	rss, tick := uint64(14<<20), 0.0021
	f.Self = &sample.SelfCost{CPUPct: &[]float64{0.4}[0], CPUSecTotal: 12.5, RSSBytes: &rss, TickSec: &tick}
	e.Set(f, diagnose.Verdict{Kind: diagnose.Healthy})
	want := `
# HELP gpuwatch_self_cpu_seconds_total CPU time gpuwatch itself has used since it started, user and system, all its threads (rate() is its share of a core).
# TYPE gpuwatch_self_cpu_seconds_total counter
gpuwatch_self_cpu_seconds_total 12.5
# HELP gpuwatch_self_resident_bytes gpuwatch's own resident memory.
# TYPE gpuwatch_self_resident_bytes gauge
gpuwatch_self_resident_bytes 1.4680064e+07
# HELP gpuwatch_self_tick_seconds Wall time of the sampler's latest tick: from handing the probes their call to the frame assembled.
# TYPE gpuwatch_self_tick_seconds gauge
gpuwatch_self_tick_seconds 0.0021
`
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), "gpuwatch_self_cpu_seconds_total", "gpuwatch_self_resident_bytes", "gpuwatch_self_tick_seconds"); err != nil {
		t.Fatal(err)
	}
	f.Self = &sample.SelfCost{CPUSecTotal: 1}
	e.Set(f, diagnose.Verdict{Kind: diagnose.Healthy})
	for _, absent := range []string{"gpuwatch_self_resident_bytes", "gpuwatch_self_tick_seconds"} {
		if n := testutil.CollectAndCount(e, absent); n != 0 {
			t.Errorf("%s exposed without data", absent)
		}
	}
}

// TestExporterHookSeries: the hook's own cost inside the job, a share of
// a core and seconds per sample, in all and by part (label part, its
// value escaped by the client library), from the frame's loader; per
// batch where the samples are not counted; absent where the loader does
// not say it.
func TestExporterHookSeries(t *testing.T) {
	e := &Exporter{}
	f := fixture.Frame()
	if f.Loader == nil {
		f.Loader = &sample.Loader{Source: "hook"}
	}
	rate, us := 0.003, 2.5
	f.Loader.HookCPUSecPerSec, f.Loader.HookCPUPerSampleUs = &rate, &us
	f.Loader.HookCPUParts = []sample.HookCPUPart{
		{Part: "server", PerSampleUs: f64(1.5), Cores: 0.0018}, {Part: "loop", PerSampleUs: f64(1), Cores: 0.0012},
		{Part: `lo"op\`, PerSampleUs: f64(0), Cores: 0}, {Part: "loop", PerSampleUs: f64(9), Cores: 9}, // a frame written by hand: escaped, and a repeat sent once
	}
	e.Set(f, diagnose.Verdict{Kind: diagnose.Healthy})
	want := `
# HELP gpuwatch_hook_cpu_ratio CPU time the hook's own instrumentation took inside the training process per wall second over the interval (its threads' clocks), in cores: 0.003 is 0.3 % of one.
# TYPE gpuwatch_hook_cpu_ratio gauge
gpuwatch_hook_cpu_ratio 0.003
# HELP gpuwatch_hook_cpu_seconds_per_sample That CPU time per sample the loader handed out; absent without samples.
# TYPE gpuwatch_hook_cpu_seconds_per_sample gauge
gpuwatch_hook_cpu_seconds_per_sample 2.5e-06
# HELP gpuwatch_hook_part_cpu_ratio ` + sample.SeriesHookPartCPURatio.Help + `
# TYPE gpuwatch_hook_part_cpu_ratio gauge
gpuwatch_hook_part_cpu_ratio{part="lo\"op\\"} 0
gpuwatch_hook_part_cpu_ratio{part="loop"} 0.0012
gpuwatch_hook_part_cpu_ratio{part="server"} 0.0018
# HELP gpuwatch_hook_part_cpu_seconds_per_sample ` + sample.SeriesHookPartCPUSecondsPerSample.Help + `
# TYPE gpuwatch_hook_part_cpu_seconds_per_sample gauge
gpuwatch_hook_part_cpu_seconds_per_sample{part="lo\"op\\"} 0
gpuwatch_hook_part_cpu_seconds_per_sample{part="loop"} 1e-06
gpuwatch_hook_part_cpu_seconds_per_sample{part="server"} 1.5e-06
`
	hook := []string{"gpuwatch_hook_cpu_ratio", "gpuwatch_hook_cpu_seconds_per_sample", "gpuwatch_hook_cpu_seconds_per_batch",
		"gpuwatch_hook_part_cpu_ratio", "gpuwatch_hook_part_cpu_seconds_per_sample", "gpuwatch_hook_part_cpu_seconds_per_batch"}
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), hook...); err != nil {
		t.Fatal(err)
	}
	// Samples not counted: per batch stands in, for the total and the parts.
	f.Loader.HookCPUPerSampleUs, f.Loader.HookCPUPerBatchUs = nil, f64(80)
	f.Loader.HookCPUParts = []sample.HookCPUPart{{Part: "server", PerBatchUs: f64(60), Cores: 0.0018}}
	e.Set(f, diagnose.Verdict{Kind: diagnose.Healthy})
	want = `
# HELP gpuwatch_hook_cpu_seconds_per_batch ` + sample.SeriesHookCPUSecondsPerBatch.Help + `
# TYPE gpuwatch_hook_cpu_seconds_per_batch gauge
gpuwatch_hook_cpu_seconds_per_batch 8e-05
# HELP gpuwatch_hook_part_cpu_seconds_per_batch ` + sample.SeriesHookPartCPUSecondsPerBatch.Help + `
# TYPE gpuwatch_hook_part_cpu_seconds_per_batch gauge
gpuwatch_hook_part_cpu_seconds_per_batch{part="server"} 6e-05
`
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), "gpuwatch_hook_cpu_seconds_per_sample", "gpuwatch_hook_cpu_seconds_per_batch",
		"gpuwatch_hook_part_cpu_seconds_per_sample", "gpuwatch_hook_part_cpu_seconds_per_batch"); err != nil {
		t.Fatal(err)
	}
	f.Loader.HookCPUSecPerSec, f.Loader.HookCPUPerSampleUs, f.Loader.HookCPUPerBatchUs, f.Loader.HookCPUParts = nil, nil, nil, nil
	e.Set(f, diagnose.Verdict{Kind: diagnose.Healthy})
	for _, absent := range hook {
		if n := testutil.CollectAndCount(e, absent); n != 0 {
			t.Errorf("%s exposed without data", absent)
		}
	}
}

// TestCountersEndInTotal: a series is a counter exactly when its name
// says so (Prometheus's naming rule), so no counter is served as a gauge.
func TestCountersEndInTotal(t *testing.T) {
	for _, s := range sample.AllSeries {
		if s.Counter != strings.HasSuffix(s.Name, "_total") {
			t.Errorf("%s: Counter %v", s.Name, s.Counter)
		}
	}
}

// TestExporterPredictionRange (issue 52 item 1): the advice's prediction
// is served as its range, the point (the low side) and the high side, with
// the low side's wait; a relative one's wait alone; none without a
// prediction.
func TestExporterPredictionRange(t *testing.T) {
	e := &Exporter{}
	f := fixture.Frame()
	v := diagnose.Verdict{Kind: diagnose.GPUStarved, Changes: []diagnose.Change{{Knob: "num_workers", From: "2", To: "8"}},
		Predicted: &diagnose.Prediction{SamplesPerSec: 420, HighSamplesPerSec: 748, WaitShare: 0.25, Gain: 2.24, HighGain: 4, Limit: "the workers"}}
	e.Set(f, v)
	want := `
# HELP gpuwatch_advice_predicted_high_samples_per_second ` + sample.SeriesAdvicePredictedHighSamplesPerSecond.Help + `
# TYPE gpuwatch_advice_predicted_high_samples_per_second gauge
gpuwatch_advice_predicted_high_samples_per_second 748
# HELP gpuwatch_advice_predicted_samples_per_second ` + sample.SeriesAdvicePredictedSamplesPerSecond.Help + `
# TYPE gpuwatch_advice_predicted_samples_per_second gauge
gpuwatch_advice_predicted_samples_per_second 420
# HELP gpuwatch_advice_predicted_wait_share_ratio ` + sample.SeriesAdvicePredictedWaitShareRatio.Help + `
# TYPE gpuwatch_advice_predicted_wait_share_ratio gauge
gpuwatch_advice_predicted_wait_share_ratio 0.25
`
	names := []string{"gpuwatch_advice_predicted_samples_per_second", "gpuwatch_advice_predicted_high_samples_per_second", "gpuwatch_advice_predicted_wait_share_ratio"}
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	// A relative prediction (a sampled loop: a gain, no rate) served
	// "predicted 0 samples/s" (a review): its rates are absent, its wait
	// is served.
	v.Predicted = &diagnose.Prediction{WaitShare: 0.3, Gain: 1.19, HighGain: 1.4}
	e.Set(f, v)
	if n := testutil.CollectAndCount(e, names[:2]...); n != 0 {
		t.Fatalf("%d rate series for a prediction with no rate", n)
	}
	if n := testutil.CollectAndCount(e, names[2]); n != 1 {
		t.Fatalf("%d wait series for a relative prediction", n)
	}
	v.Predicted = nil
	e.Set(f, v)
	if n := testutil.CollectAndCount(e, names...); n != 0 {
		t.Fatalf("%d prediction series without a prediction", n)
	}
}

// TestSamplesNotCountedAreAbsent: a loader the hook times whose batches'
// size it could not read (a real H200 MLP's batches made on the GPU: 164
// batches/s, no samples) exposes no samples-per-second series — it read 0
// — and neither does a rank that counts batches only, or one that does
// not answer; a rank that counts samples does.
func TestSamplesNotCountedAreAbsent(t *testing.T) {
	e := &Exporter{}
	f := fixture.Frame()
	f.Loader = &sample.Loader{Source: "http://127.0.0.1:6061", BatchesPerSec: 164}
	f.Ranks = []sample.Rank{
		{Rank: 0, URL: "http://127.0.0.1:6061", Connected: true, BatchesPerSec: 164},
		{Rank: 1, URL: "http://127.0.0.1:6062", Connected: true, BatchesPerSec: 10, SamplesPerSec: 320},
		{Rank: 2, URL: "http://127.0.0.1:6063"},
	}
	e.Set(f, diagnose.Verdict{Kind: diagnose.Healthy})
	if n := testutil.CollectAndCount(e, "gpuwatch_loader_samples_per_second"); n != 0 {
		t.Errorf("the loader's samples per second exposed (%d series) though none was counted", n)
	}
	want := `
# HELP gpuwatch_rank_samples_per_second ` + sample.SeriesRankSamplesPerSecond.Help + `
# TYPE gpuwatch_rank_samples_per_second gauge
gpuwatch_rank_samples_per_second{loader="http://127.0.0.1:6062",rank="1",world_size=""} 320
`
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), "gpuwatch_rank_samples_per_second"); err != nil {
		t.Fatal(err)
	}
}

func f64(v float64) *float64 { return &v }

// TestScrapedAchievedRate: a real scrape over HTTP serves the step's
// achieved matmul rate as the report and the dashboard derive it
// (sample.GPU.StepTFLOPS): on the loop's GPU (it lists the loader's
// process) at the dtype the hook read, bf16 — HMMA's 40 % of the H200's
// 989.5 dense TFLOPS, both bounds 395.8e12 —; on another GPU, with no
// settings of its own, the range from TF32's peak to bf16's, dtype
// "unread" (10 % of 494.5 and of 989.5); a GPU without GPM, none. A
// step the hook read in plain fp32 gives no rate on the loop's GPU (not
// the tensor cores), never 0.
func TestScrapedAchievedRate(t *testing.T) {
	p := func(v float64) *float64 { return &v }
	pid, on := 4242, true
	peak := &sample.GPUPeak{Model: "H200 SXM", Source: "datasheet", DenseTFLOPS: map[string]float64{"bf16": 989.5, "fp16": 989.5, "tf32": 494.5}}
	f := fixture.GPUFrame()
	f.GPUs[0].Name = "NVIDIA H200"
	f.GPUs[0].GPM = &sample.GPM{SMActivityPct: p(70), TensorActivityPct: p(42), TensorHMMAActivityPct: p(40)}
	f.GPUs[0].Peak = peak
	f.GPUs[0].Processes = []sample.GPUProcess{{PID: pid}}
	f.GPUs = append(f.GPUs,
		sample.GPU{Index: 2, Name: "NVIDIA H200", Vendor: "nvidia", GPM: &sample.GPM{TensorActivityPct: p(12), TensorHMMAActivityPct: p(10)}, Peak: peak},
		sample.GPU{Index: 3, Name: "NVIDIA A100", Vendor: "nvidia", Peak: peak}) // no GPM
	f.Loader = &sample.Loader{Source: "http://127.0.0.1:6061", PID: &pid, Settings: &sample.JobSettings{Autocast: &on, AutocastDtype: "bfloat16"}}

	scrape := func(f *sample.Frame) map[string]float64 {
		t.Helper()
		addr := serveFrame(t, f, nil, byAddress)
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("scrape: %d %v", resp.StatusCode, err)
		}
		page, err := expo.Parse(body, sample.SeriesGpuAchievedOpsPerSecond.Name)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, s := range page[sample.SeriesGpuAchievedOpsPerSecond.Name] {
			gpu, _ := s.Label("gpu")
			dtype, _ := s.Label("dtype")
			bound, _ := s.Label("bound")
			got[gpu+" "+dtype+" "+bound] = s.Value
		}
		return got
	}
	near := func(got, want map[string]float64) bool {
		if len(got) != len(want) {
			return false
		}
		for k, w := range want {
			if g, ok := got[k]; !ok || math.Abs(g-w) > 1e-9*w {
				return false
			}
		}
		return true
	}
	want := map[string]float64{
		"0 bf16 low": 395.8e12, "0 bf16 high": 395.8e12,
		"2 unread low": 49.45e12, "2 unread high": 98.95e12,
	}
	if got := scrape(f); !near(got, want) {
		t.Errorf("bf16 on GPU 0: got %v, want %v", got, want)
	}

	off := false
	f.Loader.Settings = &sample.JobSettings{Autocast: &off, Float32MatmulPrecision: "highest", MatmulAllowTF32: &off}
	delete(want, "0 bf16 low")
	delete(want, "0 bf16 high")
	if got := scrape(f); !near(got, want) {
		t.Errorf("plain fp32 on GPU 0: got %v, want %v", got, want)
	}
}

// The wait under way: seconds, where the loader says it; absent where not.
func TestExporterWaitingSeries(t *testing.T) {
	e := &Exporter{}
	f := fixture.Frame()
	waiting := 12500.0
	f.Loader = &sample.Loader{Source: "http://127.0.0.1:6061", WaitingMs: &waiting}
	e.Set(f, diagnose.Verdict{Kind: diagnose.GPUStarved})
	want := `
# HELP gpuwatch_loader_waiting_seconds ` + sample.SeriesLoaderWaitingSeconds.Help + `
# TYPE gpuwatch_loader_waiting_seconds gauge
gpuwatch_loader_waiting_seconds 12.5
`
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), "gpuwatch_loader_waiting_seconds"); err != nil {
		t.Fatal(err)
	}
	f.Loader.WaitingMs = nil
	e.Set(f, diagnose.Verdict{Kind: diagnose.GPUStarved})
	if n := testutil.CollectAndCount(e, "gpuwatch_loader_waiting_seconds"); n != 0 {
		t.Fatalf("%d waiting series where the loader does not say", n)
	}
}

// TestExporterCauseSeries (issue 51: the causes in the exporter, a
// review found none): each cause the verdict names is a series, the
// GPU's and the input pipeline's, with its bound where it has one and
// none where it has none.
func TestExporterCauseSeries(t *testing.T) {
	e := &Exporter{}
	v := diagnose.Verdict{Kind: diagnose.Healthy, Causes: []diagnose.Cause{
		{ID: "tensor_idle", Bound: &diagnose.Bound{K: 14.8, Gain: 14.8, FreeGain: 14.8}},
		{ID: "host_sync", BoundWhy: "no bound from counters"},
		{ID: "decode", Bound: &diagnose.Bound{K: 2, Gain: 1.6, FreeGain: 2.4}},
	}}
	e.Set(fixture.Frame(), v)
	want := `
# HELP gpuwatch_cause ` + sample.SeriesCause.Help + `
# TYPE gpuwatch_cause gauge
gpuwatch_cause{cause="decode"} 1
gpuwatch_cause{cause="host_sync"} 1
gpuwatch_cause{cause="tensor_idle"} 1
# HELP gpuwatch_cause_bound_ratio ` + sample.SeriesCauseBoundRatio.Help + `
# TYPE gpuwatch_cause_bound_ratio gauge
gpuwatch_cause_bound_ratio{cause="decode"} 2.4
gpuwatch_cause_bound_ratio{cause="tensor_idle"} 14.8
`
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), "gpuwatch_cause", "gpuwatch_cause_bound_ratio"); err != nil {
		t.Fatal(err)
	}
	e.Set(fixture.Frame(), diagnose.Verdict{Kind: diagnose.Healthy})
	if n := testutil.CollectAndCount(e, "gpuwatch_cause", "gpuwatch_cause_bound_ratio"); n != 0 {
		t.Fatalf("%d cause series where none is named", n)
	}
}

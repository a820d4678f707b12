// Package exporter is gpuwatch serve's Prometheus exporter: the latest
// frame and verdict as metrics (docs/prometheus.md).
package exporter

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/lines"
	"github.com/gpuwatch/gpuwatch/sample"
)

// Exporter exposes the latest frame and verdict as Prometheus metrics, with
// conventional names and base units (_bytes, _seconds, _ratio). A node
// runs one; a Prometheus server aggregates the fleet. Safe for concurrent
// use: Set from the session, Collect from scrapes.
type Exporter struct {
	// SlurmJobs, when set, lists the Slurm jobs a prolog mapped on this
	// node (ReadSlurmJobs over serve's --slurm-job-dir). It is called
	// once per scrape.
	SlurmJobs func() SlurmJobs

	mu sync.Mutex
	f  *sample.Frame
	v  diagnose.Verdict
}

// Set replaces the frame and verdict the next scrape sees.
func (e *Exporter) Set(f *sample.Frame, v diagnose.Verdict) {
	e.mu.Lock()
	e.f, e.v = f, v
	e.mu.Unlock()
}

// Frame implements the session's Observer: the exporter is told every
// frame and verdict, as the recorder is (session.Options.Observers).
func (e *Exporter) Frame(f *sample.Frame, v diagnose.Verdict) error {
	e.Set(f, v)
	return nil
}

// Note implements the session's Observer: notes are not series.
func (e *Exporter) Note(lines.Note) error { return nil }

// metricDesc is one metric's name, help and variable labels, and its
// Desc without job labels. A scrape whose frame names a job rebuilds the
// Desc with the job's labels as constant labels (jobDescs).
type metricDesc struct {
	name, help string
	labels     []string
	d          *prometheus.Desc
}

func desc(name, help string, labels ...string) *metricDesc {
	return &metricDesc{name: "gpuwatch_" + name, help: help, labels: labels, d: prometheus.NewDesc("gpuwatch_"+name, help, labels, nil)}
}

var (
	dVerdict    = desc("verdict", "1 for the verdict shown now, 0 for the others; the job's identity where it is known (slurm_job, not job: Prometheus owns that label).", "kind", "slurm_job", "slurm_step", "rank", "pod", "namespace")
	dConfidence = desc("verdict_confidence_ratio", "Confidence of the verdict shown now, 0–1.")
	dChange     = desc("advice_change", "1 for each loader setting the verdict's pipeline model advises changing.", "knob", "from", "to")
	dPredSample = desc("advice_predicted_samples_per_second", "Samples per second the model predicts once the advised changes are applied.")
	dPredWait   = desc("advice_predicted_wait_share_ratio", "Wait share the model predicts once the advised changes are applied, 0–1.")
	dSince      = desc("verdict_since_timestamp_seconds", "When the verdict shown now started, Unix time.")
	dFrameTime  = desc("frame_timestamp_seconds", "When the latest frame was taken, Unix time.")
	dCPUBusy    = desc("cpu_busy_ratio", "Share of the machine's CPU time busy (not idle, not iowait), 0–1.")
	dCPUIowait  = desc("cpu_iowait_ratio", "Share of CPU time idle waiting on I/O, 0–1.")
	dCoreBusy   = desc("cpu_core_busy_ratio", "Share of one logical CPU's time busy, 0–1.", "core")
	dRunQueue   = desc("cpu_procs_running", "Runnable tasks.")
	dMemAvail   = desc("memory_available_bytes", "Memory available for new work.")
	dMemUsed    = desc("memory_used_bytes", "Memory used (total − available).")
	dSwapIn     = desc("swap_in_pages_per_second", "Pages swapped in per second over the last interval.")
	dSwapOut    = desc("swap_out_pages_per_second", "Pages swapped out per second over the last interval.")
	dDiskRead   = desc("disk_read_bytes_per_second", "Bytes read per second over the last interval.", "device")
	dDiskWrite  = desc("disk_write_bytes_per_second", "Bytes written per second over the last interval.", "device")
	dDiskBusy   = desc("disk_busy_ratio", "Share of the interval with a request in flight (iostat %util), 0–1.", "device")
	dPressure   = desc("pressure_some_ratio", "Share of the last interval some task stalled on the resource (PSI; the kernel's 10 s average on the first reading), 0–1.", "resource")
	dGPUUtil    = desc("gpu_utilization_ratio", "GPU utilization as the driver reports it, 0–1.", "gpu", "name")
	dGPUP5      = desc("gpu_utilization_p5_ratio", "5th percentile of the driver's utilization samples in the last interval, 0–1.", "gpu", "name")
	dGPUP95     = desc("gpu_utilization_p95_ratio", "95th percentile of the driver's utilization samples in the last interval, 0–1.", "gpu", "name")
	dGPUMem     = desc("gpu_memory_used_bytes", "GPU memory used.", "gpu", "name")
	dGPUPower   = desc("gpu_power_watts", "GPU power draw.", "gpu", "name")
	dGPUTemp    = desc("gpu_temperature_celsius", "GPU temperature.", "gpu", "name")
	dGPUProcMem = desc("gpu_process_memory_used_bytes", "GPU memory a process holds (the largest 64 processes).", "gpu", "pid")
	dAccel      = desc("virtual_accelerator_busy_ratio", "The watched loader's step time / wall time, 0–1 (no GPU signal).")
	dWaitShare  = desc("loader_wait_ratio", "Share of the training loop's time waiting for the next batch, 0–1.")
	dSamples    = desc("loader_samples_per_second", "Samples the loader handed out per second.")
	dQueue      = desc("loader_queue_depth", "Batches ready when the training loop last asked.")
	dWaitP95    = desc("loader_wait_p95_seconds", "95th percentile of the time waited per batch in the last interval.")
	dStage      = desc("loader_stage_seconds", "A batch's time in one pipeline stage over the last interval (workers: getitem, collate, handover; training process: take, pin, step, first_batch).", "stage")
	dStageShare = desc("loader_stage_worker_ratio", "A worker stage's share of a worker's time per batch, 0–1.", "stage")
	dBatchBytes = desc("loader_batch_bytes", "Bytes of tensors in a batch the training loop receives (the batches the hook looked inside).")
	dFloat64    = desc("loader_batch_float64_ratio", "Share of a batch's tensor bytes that are float64, 0–1.")
	dPadding    = desc("loader_padding_ratio", "Share of a batch's token-tensor elements that are padding, 0–1.")
	dRunDelay   = desc("loader_workers_run_delay_ratio", "Share of the loader workers' running-or-runnable time spent waiting for a CPU, 0–1.")
	dRankUp     = desc("rank_up", "1 while the rank's loader answers, 0 while it does not (several ranks attached).", "rank", "loader")
	dRankWait   = desc("rank_wait_ratio", "Share of the rank's training-loop time waiting for its next batch, 0–1.", "rank", "loader")
	dRankStep   = desc("rank_step_seconds", "The rank's mean step (in a synchronous job it includes waiting for the other ranks in the all-reduce).", "rank", "loader")
	dRankSample = desc("rank_samples_per_second", "Samples the rank's loader handed out per second.", "rank", "loader")
	dStraggler  = desc("rank_straggler", "1 for the rank the verdict names as holding the job back, 0 for the others.", "rank", "loader")
)

var allDescs = []*metricDesc{dVerdict, dConfidence, dChange, dPredSample, dPredWait, dSince, dFrameTime, dCPUBusy, dCPUIowait, dCoreBusy, dRunQueue,
	dMemAvail, dMemUsed, dSwapIn, dSwapOut, dDiskRead, dDiskWrite, dDiskBusy, dPressure, dGPUUtil, dGPUP5, dGPUP95,
	dGPUMem, dGPUPower, dGPUTemp, dGPUProcMem, dAccel, dWaitShare, dSamples, dQueue, dWaitP95, dStage, dStageShare, dBatchBytes, dFloat64, dPadding, dRunDelay, dRankUp, dRankWait, dRankStep, dRankSample, dStraggler}

// collectGPUs emits each GPU's series (g as in Collect).
func collectGPUs(gpus []sample.GPU, g func(d *metricDesc, val float64, labels ...string)) {
	for _, gp := range gpus {
		id := strconv.Itoa(gp.Index)
		if gp.UtilPct != nil {
			g(dGPUUtil, *gp.UtilPct/100, id, gp.Name)
		}
		if s := gp.UtilSamples; s != nil {
			g(dGPUP5, s.P5/100, id, gp.Name)
			g(dGPUP95, s.P95/100, id, gp.Name)
		}
		if gp.MemUsedBytes != nil {
			g(dGPUMem, float64(*gp.MemUsedBytes), id, gp.Name)
		}
		if gp.PowerWatts != nil {
			g(dGPUPower, *gp.PowerWatts, id, gp.Name)
		}
		if gp.TempC != nil {
			g(dGPUTemp, *gp.TempC, id, gp.Name)
		}
	}
	collectGPUProcesses(gpus, g)
}

// MaxGPUProcessSeries bounds the per-process GPU memory series: the
// processes holding the most memory, so a box of short-lived processes
// cannot grow Prometheus's series without end.
const MaxGPUProcessSeries = 64

// collectGPUProcesses emits each GPU process's memory (pid, gpu), the
// largest MaxGPUProcessSeries.
func collectGPUProcesses(gpus []sample.GPU, g func(d *metricDesc, val float64, labels ...string)) {
	type proc struct {
		gpu, pid string
		mem      float64
	}
	var ps []proc
	for _, gp := range gpus {
		for _, p := range gp.Processes {
			if p.UsedMemBytes != nil {
				ps = append(ps, proc{strconv.Itoa(gp.Index), strconv.Itoa(p.PID), float64(*p.UsedMemBytes)})
			}
		}
	}
	slices.SortStableFunc(ps, func(a, b proc) int { return cmp.Compare(b.mem, a.mem) })
	for _, p := range ps[:min(len(ps), MaxGPUProcessSeries)] {
		g(dGPUProcMem, p.mem, p.gpu, p.pid)
	}
}

// Describe implements prometheus.Collector. It sends nothing: the
// Exporter is an unchecked collector (client_golang's term), because a
// frame that names a job adds that job's labels to every series
// (jobDescs), so the label sets are known only when a frame is.
func (e *Exporter) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector. Before the first frame it
// exposes nothing; a value the frame lacks is left out, never zero.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	e.mu.Lock()
	f, v := e.f, e.v
	e.mu.Unlock()
	if f == nil {
		return
	}
	var id sample.JobIdentity
	if f.Job != nil && f.Job.Identity != nil {
		id = *f.Job.Identity
	}
	var jobs SlurmJobs
	if e.SlurmJobs != nil {
		jobs = e.SlurmJobs()
	}
	job := jobs.Of(&id)
	descOf := jobDescs(jobLabels(id, job))
	// A series is sent once: a second with the same labels would fail
	// the whole scrape (HTTP 500), and a node's monitoring with it.
	seen := map[string]bool{}
	send := func(d *prometheus.Desc, val float64, labels ...string) {
		key := d.String() + "\xff" + strings.Join(labels, "\xff")
		if seen[key] {
			return
		}
		seen[key] = true
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, val, labels...)
	}
	g := func(d *metricDesc, val float64, labels ...string) { send(descOf(d), val, labels...) }
	collectSlurmJobs(jobs, send)
	rank := id.Rank
	if rank == "" {
		rank = id.SlurmRank
	}
	for _, k := range diagnose.Kinds {
		val := 0.0
		if k == v.Kind {
			val = 1
		}
		g(dVerdict, val, k.String(), id.SlurmJob, id.SlurmStep, rank, id.Pod, id.Namespace)
	}
	g(dConfidence, v.Confidence)
	for _, c := range v.Changes {
		g(dChange, 1, c.Knob, c.From, c.To)
	}
	if p := v.Predicted; p != nil {
		g(dPredSample, p.SamplesPerSec)
		g(dPredWait, p.WaitShare)
	}
	if !v.Since.IsZero() {
		g(dSince, float64(v.Since.UnixNano())/1e9)
	}
	g(dFrameTime, float64(f.Time.UnixNano())/1e9)
	collectHost(f, g)
	collectGPUs(f.GPUs, g)
	if a := f.Accel; a != nil {
		g(dAccel, a.BusyPct/100)
	}
	if l := f.Loader; l != nil {
		if l.WaitShare != nil {
			g(dWaitShare, *l.WaitShare)
		}
		g(dSamples, l.SamplesPerSec)
		if l.QueueDepth != nil {
			g(dQueue, *l.QueueDepth)
		}
		if l.WaitP95Ms != nil {
			g(dWaitP95, *l.WaitP95Ms/1000)
		}
		collectStages(l, g)
	}
	collectRanks(f.Ranks, v.Straggler, g)
}

// collectHost emits the machine's series: CPU, memory, disks, pressure
// (g as in Collect).
func collectHost(f *sample.Frame, g func(d *metricDesc, val float64, labels ...string)) {
	if c := f.CPU; c != nil {
		g(dCPUBusy, c.BusyPct/100)
		g(dCPUIowait, c.IowaitPct/100)
		g(dRunQueue, float64(c.ProcsRunning))
		for _, k := range c.Cores {
			g(dCoreBusy, k.BusyPct/100, strconv.Itoa(k.ID))
		}
	}
	if m := f.Mem; m != nil {
		g(dMemAvail, float64(m.AvailableBytes))
		g(dMemUsed, float64(m.UsedBytes))
		if m.SwapInPagesPerSec != nil {
			g(dSwapIn, *m.SwapInPagesPerSec)
		}
		if m.SwapOutPagesPerSec != nil {
			g(dSwapOut, *m.SwapOutPagesPerSec)
		}
	}
	for _, d := range f.Disks {
		g(dDiskRead, d.ReadBytesPerSec, d.Name)
		g(dDiskWrite, d.WriteBytesPerSec, d.Name)
		g(dDiskBusy, d.BusyPct/100, d.Name)
	}
	if p := f.PSI; p != nil {
		for _, r := range []struct {
			name string
			p    *sample.Pressure
		}{{"cpu", p.CPU}, {"io", p.IO}, {"memory", p.Memory}} {
			if v, ok := r.p.Some(); ok {
				g(dPressure, v/100, r.name)
			}
		}
	}
}

// collectRanks emits each rank's series (bounded: sample.MaxRanks),
// labelled with the rank and its loader's URL: two loaders that say the
// same rank (two jobs on one node, a restarted rank) are two series.
func collectRanks(ranks []sample.Rank, straggler *int, g func(d *metricDesc, val float64, labels ...string)) {
	for _, r := range ranks {
		label := []string{strconv.Itoa(r.Rank), r.URL}
		up, strag := 0.0, 0.0
		if r.Connected {
			up = 1
		}
		if straggler != nil && *straggler == r.Rank {
			strag = 1
		}
		g(dRankUp, up, label...)
		g(dStraggler, strag, label...)
		if !r.Connected {
			continue
		}
		if r.WaitShare != nil {
			g(dRankWait, *r.WaitShare, label...)
		}
		if r.StepSec != nil {
			g(dRankStep, *r.StepSec, label...)
		}
		g(dRankSample, r.SamplesPerSec, label...)
	}
}

// collectStages emits the loader's stage, payload and workers' run-delay
// series, those it measured (g as in Collect).
func collectStages(l *sample.Loader, g func(d *metricDesc, val float64, labels ...string)) {
	if s := l.Stages; s != nil {
		for _, st := range []struct {
			name      string
			ms, share *float64
		}{{"getitem", s.GetitemMs, s.GetitemShare}, {"collate", s.CollateMs, s.CollateShare}, {"handover", s.HandoverMs, s.HandoverShare},
			{"take", s.TakeMs, nil}, {"pin", s.PinMs, nil}, {"step", s.StepMs, nil}, {"first_batch", s.FirstBatchMs, nil}} {
			if st.ms != nil {
				g(dStage, *st.ms/1000, st.name)
			}
			if st.share != nil {
				g(dStageShare, *st.share, st.name)
			}
		}
	}
	if p := l.Payload; p != nil {
		g(dBatchBytes, p.BytesPerBatch)
		if p.Float64Share != nil {
			g(dFloat64, *p.Float64Share)
		}
		if p.PaddingShare != nil {
			g(dPadding, *p.PaddingShare)
		}
	}
	if l.WorkersRunDelayShare != nil {
		g(dRunDelay, *l.WorkersRunDelayShare)
	}
}

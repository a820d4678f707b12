// Package exporter is gpuwatch serve's Prometheus exporter: the latest
// frame and verdict as metrics (docs/prometheus.md).
package exporter

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuwatch/gpuwatch/diagnose"
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
func (e *Exporter) Note(sample.Note) error { return nil }

// metricDesc is one metric's name, help and variable labels, and its
// Desc without job labels. A scrape whose frame names a job rebuilds the
// Desc with the job's labels as constant labels (jobDescs).
type metricDesc struct {
	name, help string
	labels     []string
	kind       prometheus.ValueType // a gauge, or a counter (Series.Counter)
	d          *prometheus.Desc
}

func desc(s sample.Series) *metricDesc {
	kind := prometheus.GaugeValue
	if s.Counter {
		kind = prometheus.CounterValue
	}
	return &metricDesc{name: s.Name, help: s.Help, labels: s.Labels, kind: kind, d: prometheus.NewDesc(s.Name, s.Help, s.Labels, nil)}
}

var (
	dVerdict    = desc(sample.SeriesVerdict)
	dConfidence = desc(sample.SeriesVerdictConfidenceRatio)
	dChange     = desc(sample.SeriesAdviceChange)
	dCause      = desc(sample.SeriesCause)
	dCauseBound = desc(sample.SeriesCauseBoundRatio)
	dPredSample = desc(sample.SeriesAdvicePredictedSamplesPerSecond)
	dPredWait   = desc(sample.SeriesAdvicePredictedWaitShareRatio)
	dPredHigh   = desc(sample.SeriesAdvicePredictedHighSamplesPerSecond)
	dSince      = desc(sample.SeriesVerdictSinceTimestampSeconds)
	dFrameTime  = desc(sample.SeriesFrameTimestampSeconds)
	dCPUBusy    = desc(sample.SeriesCpuBusyRatio)
	dCPUIowait  = desc(sample.SeriesCpuIowaitRatio)
	dCoreBusy   = desc(sample.SeriesCpuCoreBusyRatio)
	dRunQueue   = desc(sample.SeriesCpuProcsRunning)
	dMemAvail   = desc(sample.SeriesMemoryAvailableBytes)
	dMemUsed    = desc(sample.SeriesMemoryUsedBytes)
	dSwapIn     = desc(sample.SeriesSwapInPagesPerSecond)
	dSwapOut    = desc(sample.SeriesSwapOutPagesPerSecond)
	dDiskRead   = desc(sample.SeriesDiskReadBytesPerSecond)
	dDiskWrite  = desc(sample.SeriesDiskWriteBytesPerSecond)
	dDiskBusy   = desc(sample.SeriesDiskBusyRatio)
	dPressure   = desc(sample.SeriesPressureSomeRatio)
	dGPUUtil    = desc(sample.SeriesGpuUtilizationRatio)
	dGPUP5      = desc(sample.SeriesGpuUtilizationP5Ratio)
	dGPUP95     = desc(sample.SeriesGpuUtilizationP95Ratio)
	dGPUMem     = desc(sample.SeriesGpuMemoryUsedBytes)
	dGPUPower   = desc(sample.SeriesGpuPowerWatts)
	dGPUTemp    = desc(sample.SeriesGpuTemperatureCelsius)
	dGPUProcMem = desc(sample.SeriesGpuProcessMemoryUsedBytes)
	dGPUSM      = desc(sample.SeriesGpuSmActivityRatio)
	dGPUOcc     = desc(sample.SeriesGpuSmOccupancyRatio)
	dGPUTensor  = desc(sample.SeriesGpuTensorActivityRatio)
	dGPUTPipe   = desc(sample.SeriesGpuTensorPipeActivityRatio)
	dGPUFPPipe  = desc(sample.SeriesGpuFpPipeActivityRatio)
	dGPUDRAM    = desc(sample.SeriesGpuDramBandwidthRatio)
	dGPUPeak    = desc(sample.SeriesGpuDensePeakOpsPerSecond)
	dGPURate    = desc(sample.SeriesGpuAchievedOpsPerSecond)
	dAccel      = desc(sample.SeriesVirtualAcceleratorBusyRatio)
	dWaitShare  = desc(sample.SeriesLoaderWaitRatio)
	dSamples    = desc(sample.SeriesLoaderSamplesPerSecond)
	dQueue      = desc(sample.SeriesLoaderQueueDepth)
	dWaiting    = desc(sample.SeriesLoaderWaitingSeconds)
	dWaitP95    = desc(sample.SeriesLoaderWaitP95Seconds)
	dStage      = desc(sample.SeriesLoaderStageSeconds)
	dStageShare = desc(sample.SeriesLoaderStageWorkerRatio)
	dBatchBytes = desc(sample.SeriesLoaderBatchBytes)
	dFloat64    = desc(sample.SeriesLoaderBatchFloat64Ratio)
	dPadding    = desc(sample.SeriesLoaderPaddingRatio)
	dCopyHost   = desc(sample.SeriesLoaderCopyHostSeconds)
	dCopyRate   = desc(sample.SeriesLoaderCopyBytesPerSecond)
	dRunDelay   = desc(sample.SeriesLoaderWorkersRunDelayRatio)
	dCeiling    = desc(sample.SeriesLoaderCeilingSamplesPerSecond)
	dInputCost  = desc(sample.SeriesLoaderInputCostRatio)
	dMFU        = desc(sample.SeriesLoaderMFURatio)
	dRankUp     = desc(sample.SeriesRankUp)
	dRankWait   = desc(sample.SeriesRankWaitRatio)
	dRankStep   = desc(sample.SeriesRankStepSeconds)
	dRankSample = desc(sample.SeriesRankSamplesPerSecond)
	dStraggler  = desc(sample.SeriesRankStraggler)
	dSelfCPU    = desc(sample.SeriesSelfCPUSecondsTotal)
	dSelfRSS    = desc(sample.SeriesSelfResidentBytes)
	dSelfTick   = desc(sample.SeriesSelfTickSeconds)
	dHookCPU    = desc(sample.SeriesHookCPURatio)
	dHookSample = desc(sample.SeriesHookCPUSecondsPerSample)
	dHookBatch  = desc(sample.SeriesHookCPUSecondsPerBatch)
	dPartCPU    = desc(sample.SeriesHookPartCPURatio)
	dPartSample = desc(sample.SeriesHookPartCPUSecondsPerSample)
	dPartBatch  = desc(sample.SeriesHookPartCPUSecondsPerBatch)
)

var allDescs = []*metricDesc{dVerdict, dConfidence, dChange, dCause, dCauseBound, dPredSample, dPredHigh, dPredWait, dSince, dFrameTime, dCPUBusy, dCPUIowait, dCoreBusy, dRunQueue,
	dMemAvail, dMemUsed, dSwapIn, dSwapOut, dDiskRead, dDiskWrite, dDiskBusy, dPressure, dGPUUtil, dGPUP5, dGPUP95,
	dGPUMem, dGPUPower, dGPUTemp, dGPUProcMem, dGPUSM, dGPUOcc, dGPUTensor, dGPUTPipe, dGPUFPPipe, dGPUDRAM, dGPUPeak, dGPURate, dAccel, dWaitShare, dSamples, dQueue, dWaiting, dWaitP95, dStage, dStageShare, dBatchBytes, dFloat64, dPadding, dCopyHost, dCopyRate, dRunDelay, dCeiling, dInputCost, dMFU, dRankUp, dRankWait, dRankStep, dRankSample, dStraggler, dSelfCPU, dSelfRSS, dSelfTick, dHookCPU, dHookSample, dHookBatch, dPartCPU, dPartSample, dPartBatch}

// collectGPUs emits each GPU of f's series (g as in Collect).
func collectGPUs(f *sample.Frame, g func(d *metricDesc, val float64, labels ...string)) {
	for i := range f.GPUs {
		gp := &f.GPUs[i]
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
		collectGPM(gp.GPM, g, id, gp.Name)
		if gp.Peak != nil {
			for _, dt := range sample.Dtypes {
				if v, ok := gp.Peak.DenseTFLOPS[dt]; ok {
					g(dGPUPeak, v*1e12, id, gp.Name, dt)
				}
			}
		}
		collectRate(gp, f.StepSettings(gp), g, id)
	}
	collectGPUProcesses(f.GPUs, g)
}

// collectRate emits the step's achieved matmul rate on gp, as the report
// and the dashboard derive it (sample.GPU.StepTFLOPS with the settings s
// the hook read on the loop's GPU; nil elsewhere), in operations per
// second: the two bounds, labelled with the dtype read, or "unread"
// where the rate is the range from TF32's peak to bf16's.
func collectRate(gp *sample.GPU, s *sample.JobSettings, g func(d *metricDesc, val float64, labels ...string), id string) {
	r, ok := gp.StepTFLOPS(s)
	if !ok {
		return
	}
	dtype := r.Dtype
	if dtype == "" {
		dtype = "unread"
	}
	g(dGPURate, r.Low*1e12, id, gp.Name, dtype, "low")
	g(dGPURate, r.High*1e12, id, gp.Name, dtype, "high")
}

// collectGPM emits a GPU's GPM readings as ratios (0–1), each only where
// the GPU gave it.
func collectGPM(m *sample.GPM, g func(d *metricDesc, val float64, labels ...string), id, name string) {
	if m == nil {
		return
	}
	for _, r := range []struct {
		d     *metricDesc
		v     *float64
		label string // the pipe or precision, for the labelled series
	}{
		{dGPUSM, m.SMActivityPct, ""}, {dGPUOcc, m.SMOccupancyPct, ""}, {dGPUTensor, m.TensorActivityPct, ""},
		{dGPUDRAM, m.DRAMBWUtilPct, ""},
		{dGPUTPipe, m.TensorHMMAActivityPct, "hmma"}, {dGPUTPipe, m.TensorIMMAActivityPct, "imma"}, {dGPUTPipe, m.TensorDFMAActivityPct, "dfma"},
		{dGPUFPPipe, m.FP16ActivityPct, "fp16"}, {dGPUFPPipe, m.FP32ActivityPct, "fp32"}, {dGPUFPPipe, m.FP64ActivityPct, "fp64"},
	} {
		switch {
		case r.v == nil:
		case r.label == "":
			g(r.d, *r.v/100, id, name)
		default:
			g(r.d, *r.v/100, id, name, r.label)
		}
	}
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
	emit := func(d *prometheus.Desc, kind prometheus.ValueType, val float64, labels ...string) {
		labels = printableLabels(labels) // before the key: two names may clean to one
		key := d.String() + "\xff" + strings.Join(labels, "\xff")
		if seen[key] {
			return
		}
		seen[key] = true
		ch <- prometheus.MustNewConstMetric(d, kind, val, labels...)
	}
	send := func(d *prometheus.Desc, val float64, labels ...string) {
		emit(d, prometheus.GaugeValue, val, labels...)
	}
	g := func(d *metricDesc, val float64, labels ...string) { emit(descOf(d), d.kind, val, labels...) }
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
	for _, c := range v.Causes {
		g(dCause, 1, c.ID)
		if b := c.Bound; b != nil && b.FreeGain > 0 && !math.IsInf(b.FreeGain, 0) {
			g(dCauseBound, b.FreeGain, c.ID)
		}
	}
	if p := v.Predicted; p != nil {
		if p.SamplesPerSec > 0 { // a relative prediction (a sampled loop) has a gain, no rate: absent, never 0
			g(dPredSample, p.SamplesPerSec)
			g(dPredHigh, max(p.HighSamplesPerSec, p.SamplesPerSec))
		}
		g(dPredWait, p.WaitShare)
	}
	if !v.Since.IsZero() {
		g(dSince, float64(v.Since.UnixNano())/1e9)
	}
	g(dFrameTime, float64(f.Time.UnixNano())/1e9)
	collectHost(f, g)
	collectGPUs(f, g)
	if a := f.Accel; a != nil {
		g(dAccel, a.BusyPct/100)
	}
	if l := f.Loader; l != nil {
		collectLoader(l, g)
	}
	collectRanks(f.Ranks, v.Straggler, g)
	collectSelf(f.Self, g)
}

// collectLoader emits the loader's series, and the hook's own cost inside
// the job, what was read of them (g as in Collect).
func collectLoader(l *sample.Loader, g func(d *metricDesc, val float64, labels ...string)) {
	if l.WaitShare != nil && !l.Replaying() { // the replay's wait is the measurement's: an alert on the wait would clear at every ceiling (a review)
		g(dWaitShare, *l.WaitShare)
	}
	if !l.SamplesUnknown() { // sampled, not answering, read once, or no batch's size read: no rate, not 0
		g(dSamples, l.SamplesPerSec)
	}
	if l.QueueDepth != nil {
		g(dQueue, *l.QueueDepth)
	}
	if l.WaitingMs != nil {
		g(dWaiting, *l.WaitingMs/1000)
	}
	if l.WaitP95Ms != nil {
		g(dWaitP95, *l.WaitP95Ms/1000)
	}
	collectStages(l, g)
	collectHookCost(l, g)
}

// collectHookCost emits the hook's own cost inside the job over the
// interval, in all and by part, as the frame has it: a share of a core,
// seconds per sample, or per batch where the samples are not counted.
// Gauges like the loader's rates: the hook's own page serves the
// cumulative counters (gpuwatch_hook_part_cpu_seconds_total), and a
// counter of the same name here would be a second, different, series.
func collectHookCost(l *sample.Loader, g func(d *metricDesc, val float64, labels ...string)) {
	us := func(d *metricDesc, v *float64, labels ...string) {
		if v != nil {
			g(d, *v/1e6, labels...)
		}
	}
	if l.HookCPUSecPerSec != nil {
		g(dHookCPU, *l.HookCPUSecPerSec)
	}
	us(dHookSample, l.HookCPUPerSampleUs)
	us(dHookBatch, l.HookCPUPerBatchUs)
	for _, p := range l.HookCPUParts {
		if !utf8.ValidString(p.Part) { // the probe's names are [a-z_]; the client refuses others with a panic
			continue
		}
		g(dPartCPU, p.Cores, p.Part)
		us(dPartSample, p.PerSampleUs, p.Part)
		us(dPartBatch, p.PerBatchUs, p.Part)
	}
}

// collectSelf emits gpuwatch's own cost, what was read of it (g as in
// Collect).
func collectSelf(s *sample.SelfCost, g func(d *metricDesc, val float64, labels ...string)) {
	if s == nil {
		return
	}
	g(dSelfCPU, s.CPUSecTotal)
	if s.RSSBytes != nil {
		g(dSelfRSS, float64(*s.RSSBytes))
	}
	if s.TickSec != nil {
		g(dSelfTick, *s.TickSec)
	}
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
// labelled with the rank, its loader's URL and its world size (a job of
// its own, world size 1, is never the straggler): two loaders that say the
// same rank (two jobs on one node, a restarted rank) are two series.
func collectRanks(ranks []sample.Rank, straggler *int, g func(d *metricDesc, val float64, labels ...string)) {
	for _, r := range ranks {
		world := ""
		if r.WorldSize != nil {
			world = strconv.Itoa(*r.WorldSize)
		}
		label := []string{strconv.Itoa(r.Rank), r.URL, world}
		up, strag := 0.0, 0.0
		if r.Connected {
			up = 1
		}
		if own := r.WorldSize != nil && *r.WorldSize <= 1; straggler != nil && *straggler == r.Rank && !own {
			strag = 1
		}
		g(dRankUp, up, label...)
		g(dStraggler, strag, label...)
		if !r.Connected || r.Loader != nil && r.Loader.Replaying() { // a replay's figures are the measurement's
			continue
		}
		if r.WaitShare != nil {
			g(dRankWait, *r.WaitShare, label...)
		}
		if r.StepSec != nil {
			g(dRankStep, *r.StepSec, label...)
		}
		if !r.SamplesUnknown() {
			g(dRankSample, r.SamplesPerSec, label...)
		}
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
		if c := p.Copy; c != nil {
			g(dCopyHost, c.HostMsPerBatch/1000)
			if c.BytesPerSec != nil {
				g(dCopyRate, *c.BytesPerSec)
			}
		}
	}
	if l.WorkersRunDelayShare != nil {
		g(dRunDelay, *l.WorkersRunDelayShare)
	}
	if free, ok := l.MeasuredCeiling(); ok {
		g(dCeiling, free)
		if cost, _, ok := l.InputCost(); ok {
			g(dInputCost, cost)
		}
	}
	if m := l.MFU; m != nil {
		g(dMFU, m.Ratio, m.Dtype)
	}
}

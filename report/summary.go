// Package report writes a diagnosis report of a recording: Build reads its
// frames once and recomputes the verdicts (as replay does), and the
// writers make HTML (self-contained, with charts), Markdown or JSON of it;
// also the sweep's page. Every string from the recording is escaped for
// its format (docs/architecture.md §2).
package report

import (
	"fmt"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/sample"
)

// ReportVersion is the version of the report JSON schema (docs/report.md).
const ReportVersion = 1

// Summary is a diagnosis report of a recording: what is written as JSON,
// Markdown or HTML.
type Summary struct {
	ReportVersion int           `json:"report_version"`
	Generated     time.Time     `json:"generated"`
	Recording     RecordingInfo `json:"recording"`
	// Dominant is the verdict shown longest (warming_up not counted).
	Dominant string        `json:"dominant_verdict"`
	Verdicts []VerdictTime `json:"verdicts"`
	Timeline []Segment     `json:"timeline"`
	// Findings are, per verdict seen, its evidence and advice from the
	// frame where it was surest.
	Findings []Finding   `json:"findings"`
	Loader   *LoaderInfo `json:"loader,omitempty"`
	// Ranks are a distributed job's ranks over the recording, or the
	// loaders of separate jobs discovery found side by side (world size
	// 1, RankInfo.Name their process), in rank order (at most MaxRanks);
	// absent with one loader.
	Ranks   []RankInfo      `json:"ranks,omitempty"`
	Profile *sample.Profile `json:"profile,omitempty"`
	// GPUs are the GPUs the frames carried (gpu.go); absent without one.
	GPUs   []GPUInfo `json:"gpus,omitempty"`
	Series Series    `json:"series"`
}

// RankInfo is one rank over the recording: its mean wait share, step and
// samples/s over the frames it answered, and how often the verdict named
// it the straggler. A loader of world size 1 (a job of its own, which
// discovery found beside others) is no rank of anyone's job: Name says
// which process it is, never "rank 0".
type RankInfo struct {
	Rank      int    `json:"rank"`
	URL       string `json:"url"`
	PID       int    `json:"pid,omitempty"`
	WorldSize *int   `json:"world_size,omitempty"`
	// Name is how the report names it: "rank 1" for a rank of a
	// distributed job, "pid 5816 (python3 slowin.py)" for a job of its
	// own (its URL where the PID is unknown); printable, bounded.
	Name              string   `json:"name"`
	Frames            int      `json:"frames"` // frames it answered in
	MeanWaitShare     float64  `json:"mean_wait_share"`
	MeanStepSec       float64  `json:"mean_step_sec"`
	MeanSamplesPerSec *float64 `json:"mean_samples_per_sec,omitempty"` // absent where no frame counted samples
	StragglerFrames   int      `json:"straggler_frames"`
}

// MaxRanks bounds the ranks a report shows and charts.
const MaxRanks = 64

// RecordingInfo is the machine and the run.
type RecordingInfo struct {
	File            string         `json:"file"`
	Host            string         `json:"host"`
	Cores           int            `json:"cores"`
	GPUs            []string       `json:"gpus"`
	GpuwatchVersion string         `json:"gpuwatch_version"`
	Command         []string       `json:"command"`
	Start           time.Time      `json:"start"`
	End             time.Time      `json:"end"`
	DurationSec     float64        `json:"duration_sec"`
	Frames          int            `json:"frames"`
	MemTotalBytes   uint64         `json:"mem_total_bytes,omitempty"`
	Scenarios       []string       `json:"scenarios,omitempty"`
	Events          []sample.Event `json:"events,omitempty"`
	Warnings        []string       `json:"warnings,omitempty"`
	// Job is the watched job in a line (who, its cgroup, its limits and
	// use, at the end of the recording); empty when none was watched.
	Job string `json:"job,omitempty"`
	// Self is what gpuwatch itself cost while it recorded; nil where the
	// frames do not say.
	Self *SelfInfo `json:"self,omitempty"`
	// Hook is what the hook's instrumentation cost inside the job while it
	// recorded; nil where the frames carry none (no hook, or an older one).
	Hook *HookInfo `json:"hook,omitempty"`
}

// VerdictTime is how long a verdict was shown.
type VerdictTime struct {
	Kind    string  `json:"kind"`
	Seconds float64 `json:"seconds"`
	Share   float64 `json:"share"`
}

// Segment is a stretch of one verdict.
type Segment struct {
	Kind    string    `json:"kind"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Seconds float64   `json:"seconds"`
}

// Finding is a verdict's evidence and advice.
type Finding struct {
	Kind       string  `json:"kind"`
	Title      string  `json:"title"`
	Severity   string  `json:"severity"`
	Confidence float64 `json:"confidence"`
	// At is the frame the finding was read on: its kind's most confident
	// (the figures in its evidence are that frame's, not the run's last).
	At       time.Time `json:"at"`
	Evidence []string  `json:"evidence"`
	// Secondary are the verdict's secondary findings, "kind: text".
	Secondary []string `json:"secondary,omitempty"`
	// Changes and Predicted are the pipeline model's advice (see
	// diagnose.Verdict).
	Changes   []diagnose.Change    `json:"changes,omitempty"`
	Predicted *diagnose.Prediction `json:"predicted,omitempty"`
	Advice    []string             `json:"advice"`
	Missing   []string             `json:"missing,omitempty"`
}

// LoaderInfo summarizes the loader over the run.
type LoaderInfo struct {
	Source        string            `json:"source"`
	Knobs         map[string]string `json:"knobs,omitempty"`
	Batches       uint64            `json:"batches"`
	MeanWaitShare float64           `json:"mean_wait_share"`
	// MeanSamplesPerSec is over the frames that counted samples
	// (Loader.SamplesUnknown), absent where none did; MeanBatchesPerSec
	// over those that read the rates.
	MeanSamplesPerSec *float64 `json:"mean_samples_per_sec,omitempty"`
	MeanBatchesPerSec *float64 `json:"mean_batches_per_sec,omitempty"`
	// WaitHistMs is the batches' waits in bins, from the frames' batch
	// lists; absent, with WaitHistWhy saying why, where no frame had one
	// (the hook sends its waits as a histogram per interval, not a list).
	WaitHistMs  []HistBin `json:"wait_histogram_ms,omitempty"`
	WaitHistWhy string    `json:"wait_histogram_why,omitempty"`
	// Stages are the per-batch stage times and the workers' shares,
	// each the mean over the frames that had it; Payload the last
	// frame's look at the batches. Nil when the loader did not measure
	// them.
	Stages  *sample.LoaderStages `json:"stages,omitempty"`
	Payload *sample.BatchPayload `json:"payload,omitempty"`
	// Ceiling is the last ceiling measured (gpuwatch run --ceiling): the
	// loop's rate with its input free; InputCost is 1 − the mean rate
	// outside the measurement ÷ that ceiling. Nil when never measured.
	Ceiling   *sample.Ceiling `json:"ceiling,omitempty"`
	InputCost *float64        `json:"input_cost,omitempty"`
	// Hook is set when the Python hook spoke for the loader: it can
	// measure the ceiling, so a report without one says so.
	Hook bool `json:"hook,omitempty"`
	// SettingsLine and StepProfileLine are, for a job on no GPU (none
	// seen, its model on the CPU, or its GPU not placed), the
	// hook's reading of its settings and its CPU step profile
	// (--gpu-profile) as the newest frames had them (sample.JobSettings
	// and sample.GPUProfile's lines); with a GPU they are the loop's
	// GPU's (gpus[].settings, gpus[].gpu_profile). Absent where not read.
	SettingsLine    string `json:"settings_line,omitempty"`
	StepProfileLine string `json:"step_profile_line,omitempty"`
}

// HistBin is one bar of a histogram: values up to UpperMs.
type HistBin struct {
	UpperMs float64 `json:"upper_ms"`
	Count   int     `json:"count"`
}

// Series are the charts' data, at most MaxPoints points (means of equal
// time buckets), so a day's recording makes a report of the same size as an
// hour's. Times are seconds from the start; missing values are null.
type Series struct {
	T         []float64    `json:"t"`
	Accel     []*float64   `json:"accel_busy_pct"` // mean GPU utilization, else the virtual accelerator
	AccelP5   []*float64   `json:"accel_p5"`
	AccelP95  []*float64   `json:"accel_p95"`
	AccelReal bool         `json:"accel_is_gpu"`
	CPUBusy   []*float64   `json:"cpu_busy_pct"`
	Cores     [][]*float64 `json:"core_busy_pct"` // core groups × points; CoreGroup cores per row
	CoreGroup int          `json:"core_group"`
	DiskRead  []*float64   `json:"disk_read_bytes_per_sec"`
	DiskWrite []*float64   `json:"disk_write_bytes_per_sec"`
	DiskBusy  []*float64   `json:"disk_busy_pct"` // the busiest device
	PSICPU    []*float64   `json:"psi_cpu_pct"`
	PSIIO     []*float64   `json:"psi_io_pct"`
	PSIMem    []*float64   `json:"psi_mem_pct"`
	WaitMs    []*float64   `json:"loader_wait_ms"`
	StepMs    []*float64   `json:"loader_step_ms"`
	// SamplesPerSec is the loader's rate (instrumented loaders only).
	SamplesPerSec []*float64 `json:"loader_samples_per_sec,omitempty"`
	// CeilingReplay marks the points that hold a frame of the ceiling's
	// replay (gpuwatch run --ceiling: kept batches replayed, the GPU's
	// and the loader's figures not the job's own); absent where none do.
	CeilingReplay []bool `json:"ceiling_replay,omitempty"`
	// RankWait and RankStepMs are per rank (Summary.Ranks' order) × points.
	RankWait   [][]*float64 `json:"rank_wait_pct,omitempty"`
	RankStepMs [][]*float64 `json:"rank_step_ms,omitempty"`
}

// MaxPoints bounds chart series; MaxCoreRows bounds the heatmap's rows.
const (
	MaxPoints   = 360
	MaxCoreRows = 32
)

// rateWords is the loader's mean rate in words: samples per second where
// frames counted samples, else batches per second, else why neither.
func (l *LoaderInfo) rateWords() string {
	switch {
	case l.MeanSamplesPerSec != nil:
		return fmt.Sprintf("mean %.0f samples/s", *l.MeanSamplesPerSec)
	case l.MeanBatchesPerSec != nil:
		return fmt.Sprintf("mean %.1f batches/s (samples not counted: no batch's size was read)", *l.MeanBatchesPerSec)
	}
	return "its rates were not read (a sampled loop, or a loader that did not answer)"
}

// optRate is a mean rate for a table cell, "not read" where absent.
func optRate(v *float64) string {
	if v == nil {
		return "not read"
	}
	return fmt.Sprintf("%.0f", *v)
}

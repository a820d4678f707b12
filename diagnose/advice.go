package diagnose

import (
	"fmt"

	"github.com/gpuwatch/gpuwatch/sample"
)

// advise writes the advice for the kind (docs/diagnosis.md), filled with this
// machine's numbers. With a pipeline model (m), the computed changes and
// their prediction come first, and the catalogue's knob lines make way for
// them; a knob already set is never advised. Each kind's own lines come
// from its function in kindAdvice.
func advise(d decision, w *window, th Thresholds, m *modelAdvice) []string {
	cores := w.cores
	keep := min(2, max(cores-1, 0)) // cores kept for the training process
	in := adviceIn{d: d, w: w, th: th, modeled: m != nil, cores: cores, keep: keep, suggest: max(1, cores-keep)}
	var a []string
	if m != nil && len(m.changes) > 0 {
		a = append(a, changeLine(m.changes, m.predicted, m.pipeline.Measured))
	} else if m != nil && d.kind.Problem() {
		a = append(a, noKnobHelps(m.pipeline, m.limit))
	}
	if d.kind == CPUSaturated && w.confined() {
		a = append(a, fmt.Sprintf("the job's allocation is the limit: it may use %.2g CPU — ask for more CPUs (Slurm --cpus-per-task, the pod's CPU limit), and keep num_workers within it", w.job.CPUCapacityCores))
	}
	if d.kind == MemoryPressure && w.job != nil && w.job.MemLimitBytes != nil {
		a = append(a, fmt.Sprintf("the job's memory limit is %s: ask for more (Slurm --mem, the pod's memory limit), or hold less per worker", sample.FormatBytes(float64(*w.job.MemLimitBytes))))
	}
	if fn := kindAdvice[d.kind]; fn != nil {
		lines, last := fn(in)
		a = append(a, lines...)
		if last {
			return a
		}
	}
	if d.transfer {
		a = append(a, "the copies to the GPU fill its PCIe link: pin_memory=True with .to(device, non_blocking=True), send smaller dtypes (uint8 images, not float32), or decode on the GPU (NVIDIA DALI, torchvision.io.decode_jpeg on cuda)")
	}
	if d.hostOnly {
		a = append(a, "no accelerator signal: run where the GPU is, or attach to the loader (gpuwatch attach URL), to see whether the accelerator waits")
	}
	return a
}

// adviceIn is what a kind's advice reads: the decision and its window,
// whether a pipeline model gives the knob lines (modeled), and the cores:
// how many, how many to keep for the training process, how many workers
// to suggest.
type adviceIn struct {
	d                    decision
	w                    *window
	th                   Thresholds
	modeled              bool
	cores, keep, suggest int
}

// kindAdvice is each kind's own advice. last says no line may follow
// (the transfer and host-only lines do not apply). Idle has none: the
// evidence says that nothing runs.
var kindAdvice = map[Kind]func(adviceIn) (lines []string, last bool){
	GPUStarved:      starvedAdvice,
	SingleCoreMaxed: singleCoreAdvice,
	CPUSaturated:    saturatedAdvice,
	IOBound:         ioAdvice,
	MemoryPressure:  memoryAdvice,
	Healthy:         healthyAdvice,
	GPUUnderused:    underusedAdvice,
}

func starvedAdvice(in adviceIn) ([]string, bool) {
	if in.modeled {
		return nil, false
	}
	return catalogKnobs(in.w, in.suggest, in.cores, in.keep), false
}

func singleCoreAdvice(in adviceIn) ([]string, bool) {
	w := in.w
	var a []string
	switch {
	case in.d.loopHot:
		return []string{fmt.Sprintf("the %d workers are not the limit: the busiest thread does the training loop's per-batch work (the step, and taking each batch from the workers); more workers will not help, larger batches amortize the per-batch cost", w.workers)}, true
	case w.workers > 0:
		a = append(a, fmt.Sprintf("one thread is pegged although the loader has %d workers: find what serializes the work (a lock, the GIL, decoding in the training process); the CPU profile names the function", w.workers))
	case !in.modeled:
		a = append(a, fmt.Sprintf("loading runs on one thread of the training process (num_workers=0): set num_workers to %d (%d cores, keep %d for the training process)", in.suggest, in.cores, in.keep))
	}
	return append(a, "batch the preprocessing: read one file per batch, not one per sample", "read only the columns (fields) the model uses"), false
}

func saturatedAdvice(in adviceIn) ([]string, bool) {
	w, cores := in.w, in.cores
	if in.d.crowded {
		n := max(1, cores-max(w.workers, 0))
		return []string{fmt.Sprintf("leave cores for the workers: torch.set_num_threads(%d), and OPENBLAS_NUM_THREADS=%d OMP_NUM_THREADS=%d in the training process's environment (read when torch starts)", n, n, n)}, false
	}
	here := fmt.Sprintf("the %d cores here", cores)
	if w.confined() {
		here = fmt.Sprintf("the %.2g CPUs the job has", w.job.CPUCapacityCores)
	}
	a := []string{
		fmt.Sprintf("preprocessing needs more than %s: do it once and cache the result (on disk, or in RAM as ready tensors)", here),
		"move augmentations to the GPU (torchvision.transforms.v2 on CUDA tensors, NVIDIA DALI)",
		"fit scalers and tokenizers on a sample, not on every batch",
	}
	if w.workers > cores && cores > 0 {
		a = append(a, fmt.Sprintf("%d workers on %d cores already oversubscribe the CPU: more workers will not help", w.workers, cores))
	}
	return a, false
}

func ioAdvice(in adviceIn) ([]string, bool) {
	w := in.w
	switch {
	case in.d.remote:
		return []string{
			fmt.Sprintf("the data comes from a slow or throttled store (%s/s): copy it to local NVMe or cache it in RAM (%s available)",
				sample.FormatBytes(w.bytesPerSec.v), sample.FormatBytes(w.memAvail)),
			"read larger objects (shards of many samples) so each request carries more data",
		}, false
	case in.d.mmap:
		return mmapAdvice(w), false
	}
	a := []string{
		"random reads are the usual culprit: read sequentially, or in contiguous runs of samples",
		"use larger chunks (shards near one sample per read or more) and a columnar format, reading only the columns used",
	}
	if w.memAvail > 0 {
		a = append(a, fmt.Sprintf("cache the hot data in RAM (%s available) or on local NVMe", sample.FormatBytes(w.memAvail)))
	}
	return a, false
}

func memoryAdvice(in adviceIn) ([]string, bool) {
	w := in.w
	first := "lower num_workers or prefetch_factor: each worker holds its own batches in memory"
	if w.workers >= 0 {
		first = fmt.Sprintf("lower num_workers (now %d) or prefetch_factor (now %d): each worker holds its own batches in memory", w.workers, max(w.prefetch, 0))
	}
	return []string{first, "keep samples in smaller dtypes (uint8 images, float16/bfloat16 features)"}, false
}

func healthyAdvice(in adviceIn) ([]string, bool) {
	w, th := in.w, in.th
	a := []string{"the accelerator is the limit: try mixed precision (bf16/fp16)"}
	if w.gpuMemTot > 0 && w.gpuMemUsed < th.GPUMemRoomShare*w.gpuMemTot {
		a = append(a, fmt.Sprintf("a larger batch fits: %s of %s GPU memory in use", sample.FormatBytes(w.gpuMemUsed), sample.FormatBytes(w.gpuMemTot)))
	}
	if in.d.moderate && !in.modeled {
		a = append(a, fmt.Sprintf("the loop still waits %.0f %% of the time: one or two more workers would remove it", 100*w.waitShare.v))
	}
	if acc, real := w.accel(); real && acc.v < th.GPULowPct {
		a = append(a, fmt.Sprintf("the GPU is %.0f %% busy: a larger batch or fewer host syncs (.item(), .cpu()) keep it busier", acc.v))
	}
	return a, false
}

func underusedAdvice(adviceIn) ([]string, bool) {
	return []string{
		"give each kernel more work: a larger batch (or gradient accumulation to keep the step's size)",
		"launch fewer kernels: CUDA graphs or torch.compile (mode=\"reduce-overhead\") fuse them and drop the launch gaps",
		"sync with the host less: every .item(), .cpu() or print of a tensor in the loop stalls the GPU until it drains",
	}, false
}

// catalogKnobs is the starved catalogue's knob advice when there is no
// model to compute it: never a value already set, never "from N to N".
func catalogKnobs(w *window, suggest, cores, keep int) []string {
	var a []string
	switch {
	case w.workers < 0:
		a = append(a, fmt.Sprintf("raise num_workers to %d (%d cores, keep %d for the training process); workers that wait on reads or the network can outnumber cores", suggest, cores, keep))
	case w.workers < suggest:
		a = append(a, fmt.Sprintf("raise num_workers from %d to %d (%d cores, keep %d for the training process); workers that wait on reads or the network can outnumber cores", w.workers, suggest, cores, keep))
	default:
		a = append(a, fmt.Sprintf("num_workers is %d on %d cores: more help only where workers wait on reads or the network", w.workers, cores))
	}
	if w.prefetch > 0 {
		a = append(a, fmt.Sprintf("raise prefetch_factor from %d to %d so more batches are ready ahead of each step", w.prefetch, 2*w.prefetch))
	}
	if w.knobs["persistent"] != "true" {
		a = append(a, "set persistent_workers=True so workers are not restarted (and the pipeline refilled) every epoch")
	}
	if w.gpuUtil.ok && w.knobs["pin"] != "true" {
		a = append(a, "set pin_memory=True so host-to-GPU copies use page-locked memory")
	}
	return a
}

// modelAdvice is the pipeline model's answer for a window.
type modelAdvice struct {
	pipeline  *Pipeline
	changes   []Change
	predicted Prediction
	limit     Limit
}

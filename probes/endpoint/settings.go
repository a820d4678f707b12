package endpoint

import (
	"math"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/expo"
	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/sample"
)

// Bounds on the job's settings as the hook sends them (gpuwatch_job_*,
// docs/prometheus.md "The job's settings"): a figure outside is left out.
const (
	maxBatchSize    = 1 << 31
	maxGPUMemBytes  = 1 << 50 // a PiB: no one GPU's memory is near it
	maxFLOPsPerStep = 1e30
	// maxIntraOpThreads: torch's pool is at most a thread a CPU, and no
	// box has a million.
	maxIntraOpThreads = 1 << 20
)

// settingsFromPage reads the hook's job settings: the labels of
// gpuwatch_job_setting_info and the gpuwatch_job_* gauges. The labels are
// outside text: only the values the hook writes are taken, anything else
// is nil (never a guess), so no length or byte of a hostile value reaches
// the frame. Nil when the page says none of them.
func settingsFromPage(page map[string][]expo.Sample) *sample.JobSettings {
	s := &sample.JobSettings{}
	found := false
	if ss := page["gpuwatch_job_setting_info"]; len(ss) > 0 {
		found = true
		infoSettings(s, ss[0])
	}
	gauge := func(name string, hi float64) (float64, bool) {
		ss := page[name]
		if len(ss) == 0 || !(ss[0].Value >= 0 && ss[0].Value <= hi) { // NaN too
			return 0, false
		}
		found = true
		return ss[0].Value, true
	}
	if v, ok := gauge("gpuwatch_job_batch_size", maxBatchSize); ok {
		s.BatchSize = probes.Ptr(int(v))
	}
	if v, ok := gauge("gpuwatch_job_intra_op_threads", maxIntraOpThreads); ok && v >= 1 {
		s.IntraOpThreads = probes.Ptr(int(v))
	}
	if v, ok := gauge("gpuwatch_job_gpu_mem_free_bytes", maxGPUMemBytes); ok {
		s.GPUMemFreeBytes = probes.Ptr(uint64(v))
	}
	if v, ok := gauge("gpuwatch_job_gpu_mem_total_bytes", maxGPUMemBytes); ok {
		s.GPUMemTotalBytes = probes.Ptr(uint64(v))
	}
	if s.GPUMemFreeBytes != nil && s.GPUMemTotalBytes != nil && *s.GPUMemFreeBytes > *s.GPUMemTotalBytes {
		s.GPUMemFreeBytes, s.GPUMemTotalBytes = nil, nil // not one GPU's reading
	}
	if v, ok := gauge("gpuwatch_job_flops_per_step", maxFLOPsPerStep); ok && v > 0 {
		s.FLOPsPerStep = probes.Ptr(v)
	}
	// Unix seconds, from 2000 to 2200: a clock the hook could not read is
	// no time at all.
	if v, ok := gauge("gpuwatch_job_settings_read_timestamp_seconds", 7258118400); ok && v >= 946684800 {
		sec, frac := math.Modf(v)
		t := time.Unix(int64(sec), int64(frac*1e9)).UTC()
		s.ReadAt = &t
	}
	if !found {
		return nil
	}
	return s
}

// infoSettings reads gpuwatch_job_setting_info's labels into s: only the
// values the hook writes, anything else nil or "".
func infoSettings(s *sample.JobSettings, l expo.Sample) {
	flag := func(name string) *bool {
		switch v, _ := l.Label(name); v {
		case "1":
			return probes.Ptr(true)
		case "0":
			return probes.Ptr(false)
		}
		return nil
	}
	s.Autocast = flag("autocast")
	if s.Autocast != nil && *s.Autocast {
		switch v, _ := l.Label("autocast_dtype"); v {
		case "bfloat16", "float16":
			s.AutocastDtype = v
		}
	}
	switch v, _ := l.Label("autocast_device"); v {
	case "cuda", "cpu", "xpu", "mps", "hpu":
		s.Device = v
	}
	switch v, _ := l.Label("float32_matmul_precision"); v {
	case "highest", "high", "medium":
		s.Float32MatmulPrecision = v
	}
	s.MatmulAllowTF32 = flag("matmul_allow_tf32")
	s.CudnnAllowTF32 = flag("cudnn_allow_tf32")
	s.CudnnBenchmark = flag("cudnn_benchmark")
	switch v, _ := l.Label("conv_memory_format"); v {
	case "channels_last":
		s.ConvChannelsLast = probes.Ptr(true)
	case "contiguous", "mixed": // some convs NCHW: not channels_last
		s.ConvChannelsLast = probes.Ptr(false)
	}
	s.HasConv = flag("has_conv")
	s.HasLinear = flag("has_linear")
	switch v, _ := l.Label("weights_dtype"); v {
	case "float32", "bfloat16", "float16", "float64", "mixed":
		s.WeightsDtype = v
	}
	s.Compiled = flag("compiled")
	s.CUDAGraphs = flag("cuda_graphs")
	s.DeviceTF32 = flag("device_tf32")
	if v, _ := l.Label("flops_shapes"); v == "vary" {
		s.FLOPsShapesVary = true
	}
	switch v, _ := l.Label("flops_void"); v {
	case sample.FLOPsVoidFrozen, sample.FLOPsVoidRNN, sample.FLOPsVoidEinsum:
		s.FLOPsVoid = v
	}
}

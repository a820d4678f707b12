package endpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/internal/expo"
	"github.com/gpuwatch/gpuwatch/probes/internal/probetest"
	"github.com/gpuwatch/gpuwatch/sample"
)

// TestSettingsFromTheHooksPage: a page the hook served (CPU torch, a
// channels_last conv net under autocast(cpu, bfloat16) with
// set_float32_matmul_precision("high")) reads into every setting it says,
// and what it does not say (CUDA graphs, GPU memory, FLOPs) stays nil.
func TestSettingsFromTheHooksPage(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("testdata", "attach", "hook-settings-metrics.txt"))
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := CountersFromMetrics(text)
	if err != nil {
		t.Fatal(err)
	}
	s := c.Settings
	if s == nil {
		t.Fatal("no settings")
	}
	yes := func(p *bool) bool { return p != nil && *p }
	no := func(p *bool) bool { return p != nil && !*p }
	if !yes(s.Autocast) || s.AutocastDtype != "bfloat16" || s.Float32MatmulPrecision != "high" || !yes(s.MatmulAllowTF32) ||
		!yes(s.CudnnAllowTF32) || !no(s.CudnnBenchmark) || !yes(s.ConvChannelsLast) || !yes(s.HasConv) || !yes(s.HasLinear) ||
		!no(s.Compiled) || s.BatchSize == nil || *s.BatchSize != 8 || s.ReadAt == nil || s.ReadAt.Year() < 2025 {
		t.Errorf("settings %+v", s)
	}
	if s.CUDAGraphs != nil || s.GPUMemFreeBytes != nil || s.GPUMemTotalBytes != nil || s.FLOPsPerStep != nil {
		t.Errorf("made up what the hook did not say: %+v", s)
	}
	if on, known := s.TF32(); !on || !known {
		t.Errorf("TF32() = %v, %v", on, known)
	}
}

func TestSettingsLabels(t *testing.T) {
	long := strings.Repeat("x", 1<<16)
	for _, tc := range []struct {
		name, page string
		check      func(*sample.JobSettings) bool
	}{
		{"no series: no settings", "gpuwatch_loader_batches_total 1\n",
			func(s *sample.JobSettings) bool { return s == nil }},
		{"an empty info series says nothing but is the hook's", "gpuwatch_job_setting_info 1\n",
			func(s *sample.JobSettings) bool {
				return s != nil && s.Autocast == nil && s.Float32MatmulPrecision == ""
			}},
		{"unknown values are nil, not guesses", `gpuwatch_job_setting_info{autocast="true",autocast_dtype="bfloat16",float32_matmul_precision="` + long + `",cudnn_benchmark="2",conv_memory_format="NCHW",compiled="yes"} 1` + "\n",
			func(s *sample.JobSettings) bool {
				return s.Autocast == nil && s.AutocastDtype == "" && s.Float32MatmulPrecision == "" && s.CudnnBenchmark == nil &&
					s.ConvChannelsLast == nil && s.Compiled == nil
			}},
		{"a dtype with autocast off is none", `gpuwatch_job_setting_info{autocast="0",autocast_dtype="float16"} 1` + "\n",
			func(s *sample.JobSettings) bool { return s.Autocast != nil && !*s.Autocast && s.AutocastDtype == "" }},
		{"float16 autocast", `gpuwatch_job_setting_info{autocast="1",autocast_dtype="float16",cuda_graphs="1"} 1` + "\n",
			func(s *sample.JobSettings) bool {
				return *s.Autocast && s.AutocastDtype == "float16" && s.CUDAGraphs != nil && *s.CUDAGraphs
			}},
		{"a device without TF32, by its compute capability", `gpuwatch_job_setting_info{device_tf32="0"} 1` + "\n",
			func(s *sample.JobSettings) bool { return s.DeviceTF32 != nil && !*s.DeviceTF32 }},
		{"the forward's device, from the values the hook writes", `gpuwatch_job_setting_info{autocast="0",autocast_device="cpu"} 1` + "\n",
			func(s *sample.JobSettings) bool { return s.Device == "cpu" }},
		{"why no FLOPs were counted, from the codes the hook writes", `gpuwatch_job_setting_info{flops_void="frozen"} 1` + "\n",
			func(s *sample.JobSettings) bool { return s.FLOPsVoid == sample.FLOPsVoidFrozen }},
		{"the batches' shapes vary from the count's", `gpuwatch_job_setting_info{flops_shapes="vary"} 1` + "\n",
			func(s *sample.JobSettings) bool { return s.FLOPsShapesVary }},
		{"an einsum of three, from the code the hook writes", `gpuwatch_job_setting_info{flops_void="einsum"} 1` + "\n",
			func(s *sample.JobSettings) bool { return s.FLOPsVoid == sample.FLOPsVoidEinsum }},
		{"a void code the hook does not write is none", `gpuwatch_job_setting_info{flops_void="` + long + `"} 1` + "\n",
			func(s *sample.JobSettings) bool { return s.FLOPsVoid == "" }},
		{"a device the hook does not write is none", `gpuwatch_job_setting_info{autocast_device="cuda:0 or anything"} 1` + "\n",
			func(s *sample.JobSettings) bool { return s.Device == "" }},
		{"the weights' dtype, from the values the hook writes", `gpuwatch_job_setting_info{autocast="0",weights_dtype="bfloat16"} 1` + "\n",
			func(s *sample.JobSettings) bool {
				return s.WeightsDtype == "bfloat16" && s.CastDtype() == "bfloat16" && s.Half()
			}},
		{"a weights' dtype the hook does not write is none", `gpuwatch_job_setting_info{weights_dtype="int8"} 1` + "\n",
			func(s *sample.JobSettings) bool { return s.WeightsDtype == "" }},
		{"mixed conv formats are not channels_last", `gpuwatch_job_setting_info{conv_memory_format="mixed"} 1` + "\n",
			func(s *sample.JobSettings) bool { return s.ConvChannelsLast != nil && !*s.ConvChannelsLast }},
		{"GPU memory", "gpuwatch_job_gpu_mem_free_bytes 1e9\ngpuwatch_job_gpu_mem_total_bytes 8e10\ngpuwatch_job_flops_per_step 3.2e12\n",
			func(s *sample.JobSettings) bool {
				return *s.GPUMemFreeBytes == 1e9 && *s.GPUMemTotalBytes == 8e10 && *s.FLOPsPerStep == 3.2e12
			}},
		{"torch's intra-op threads", "gpuwatch_job_intra_op_threads 8\n",
			func(s *sample.JobSettings) bool { return s.IntraOpThreads != nil && *s.IntraOpThreads == 8 }},
		{"no intra-op threads is no reading", "gpuwatch_job_intra_op_threads 0\ngpuwatch_job_batch_size 4\n",
			func(s *sample.JobSettings) bool { return s.IntraOpThreads == nil }},
		{"more free than total is no reading", "gpuwatch_job_gpu_mem_free_bytes 9e10\ngpuwatch_job_gpu_mem_total_bytes 8e10\n",
			func(s *sample.JobSettings) bool { return s.GPUMemFreeBytes == nil && s.GPUMemTotalBytes == nil }},
		{"out-of-range gauges are dropped", "gpuwatch_job_batch_size -4\ngpuwatch_job_flops_per_step NaN\ngpuwatch_job_gpu_mem_free_bytes +Inf\ngpuwatch_job_settings_read_timestamp_seconds 12\n",
			func(s *sample.JobSettings) bool {
				return s == nil || (s.BatchSize == nil && s.FLOPsPerStep == nil && s.GPUMemFreeBytes == nil && s.ReadAt == nil)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page, err := expo.Parse([]byte(tc.page), "gpuwatch_")
			if err != nil {
				t.Fatal(err)
			}
			if s := settingsFromPage(page); !tc.check(s) {
				t.Errorf("%+v", s)
			}
		})
	}
}

// TestTheLoaderProbeCarriesTheSettings: the frame's loader has the
// counters' settings.
func TestTheLoaderProbeCarriesTheSettings(t *testing.T) {
	on := true
	src := &fakeLoader{c: LoaderCounters{Settings: &sample.JobSettings{Autocast: &on, AutocastDtype: "bfloat16"}}}
	l := collectLoader(t, NewLoader(src), probetest.T0).Loader
	if l.Settings == nil || l.Settings.AutocastDtype != "bfloat16" {
		t.Errorf("settings %+v", l.Settings)
	}
}

// FuzzSettingsFromPage: whatever the page, the settings hold only the
// values the hook writes, within their bounds.
func FuzzSettingsFromPage(f *testing.F) {
	real, _ := os.ReadFile(filepath.Join("testdata", "attach", "hook-settings-metrics.txt"))
	f.Add(real)
	f.Add([]byte(`gpuwatch_job_setting_info{autocast="1",autocast_dtype="float16"} 1` + "\ngpuwatch_job_batch_size 64\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		page, err := expo.Parse(text, "gpuwatch_")
		if err != nil {
			return
		}
		s := settingsFromPage(page)
		if s == nil {
			return
		}
		switch s.AutocastDtype {
		case "", "bfloat16", "float16":
		default:
			t.Fatalf("autocast dtype %q", s.AutocastDtype)
		}
		switch s.Float32MatmulPrecision {
		case "", "highest", "high", "medium":
		default:
			t.Fatalf("precision %q", s.Float32MatmulPrecision)
		}
		if s.BatchSize != nil && (*s.BatchSize < 0 || *s.BatchSize > maxBatchSize) {
			t.Fatalf("batch size %d", *s.BatchSize)
		}
		if s.FLOPsPerStep != nil && !(*s.FLOPsPerStep > 0 && *s.FLOPsPerStep <= maxFLOPsPerStep) {
			t.Fatalf("flops %v", *s.FLOPsPerStep)
		}
		f := sample.Frame{Loader: &sample.Loader{Settings: s}}
		if notes := f.Check(); len(notes) != 0 {
			t.Fatalf("a probe's settings fail Check: %q", notes)
		}
	})
}

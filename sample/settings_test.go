package sample

import (
	"strings"
	"testing"
)

func TestTF32(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		name      string
		s         *JobSettings
		on, known bool
	}{
		{"nil settings: unknown", nil, false, false},
		{"nothing read: unknown", &JobSettings{}, false, false},
		{"precision high", &JobSettings{Float32MatmulPrecision: "high"}, true, true},
		{"precision medium", &JobSettings{Float32MatmulPrecision: "medium", MatmulAllowTF32: &no}, true, true},
		{"highest alone", &JobSettings{Float32MatmulPrecision: "highest"}, false, true},
		{"allow_tf32 on", &JobSettings{MatmulAllowTF32: &yes}, true, true},
		{"allow_tf32 off", &JobSettings{Float32MatmulPrecision: "highest", MatmulAllowTF32: &no}, false, true},
		{"cudnn's TF32 is not the matmuls'", &JobSettings{CudnnAllowTF32: &yes}, false, false},
	} {
		if on, known := tc.s.TF32(); on != tc.on || known != tc.known {
			t.Errorf("%s: TF32() = %v, %v; want %v, %v", tc.name, on, known, tc.on, tc.known)
		}
	}
}

// TestCheckKeepsLargeFLOPs: a large model's FLOPs per step are past the
// default 1e15 bound of a float; its tag lets them through.
func TestCheckKeepsLargeFLOPs(t *testing.T) {
	flops := 1.7e17
	f := &Frame{Loader: &Loader{Settings: &JobSettings{FLOPsPerStep: &flops}}}
	if notes := f.Check(); len(notes) != 0 || f.Loader.Settings.FLOPsPerStep == nil {
		t.Errorf("notes %q", notes)
	}
}

// TestSettingsSummary: the settings in one line, what was not read left
// out.
func TestSettingsSummary(t *testing.T) {
	on, off, n, f := true, false, 128, 3.14e12
	s := &JobSettings{Autocast: &on, AutocastDtype: "bfloat16", Float32MatmulPrecision: "highest", MatmulAllowTF32: &off,
		HasConv: &on, ConvChannelsLast: &off, Compiled: &off, BatchSize: &n, FLOPsPerStep: &f}
	if got, want := s.Summary(), "bf16 autocast · fp32 matmuls in full fp32 · convs NCHW · not compiled · batch 128 · 3.14e+12 FLOPs a step"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	// In fp32 (no autocast) a conv model's convs follow cuDNN's own TF32
	// switch, said beside the matmuls'; the GPU memory left is said too.
	free, total := uint64(40<<30), uint64(141<<30)
	s.Autocast, s.CudnnAllowTF32, s.GPUMemFreeBytes, s.GPUMemTotalBytes = &off, &on, &free, &total
	if got, want := s.Summary(), "no autocast · fp32 matmuls in full fp32 · fp32 convs on TF32 · convs NCHW · not compiled · batch 128 · 40GiB of 141GiB GPU memory free · 3.14e+12 FLOPs a step"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	// On the CPU there is no TF32 and no cuDNN: their switches are left
	// out, not said as if they applied (a review: "fp32 matmuls on TF32"
	// for a CPU job).
	s.Device, s.Float32MatmulPrecision, s.CudnnBenchmark, s.GPUMemFreeBytes, s.GPUMemTotalBytes = "cpu", "high", &on, nil, nil
	if got, want := s.Summary(), "on the CPU · no autocast · convs NCHW · not compiled · batch 128 · 3.14e+12 FLOPs a step"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	vary := *s
	vary.FLOPsShapesVary = true
	if got := vary.Summary(); !strings.HasSuffix(got, "· 3.14e+12 FLOPs on one step's batch (the batches' shapes vary)") {
		t.Errorf("shapes vary: %q", got)
	}
	// No count: why, in the line, where no MFU line says it (a CPU job).
	for void, words := range map[string]string{FLOPsVoidRNN: "an RNN's fused kernels", FLOPsVoidEinsum: "an einsum of three or more operands", FLOPsVoidFrozen: "frozen weights"} {
		v := *s
		v.FLOPsPerStep, v.FLOPsVoid = nil, void
		if got := v.Summary(); !strings.Contains(got, "· batch 128 · FLOPs not counted ("+words) {
			t.Errorf("%s: %q", void, got)
		}
	}
	// With no model's forward seen, the process's precision switches apply
	// to nothing read (a review: a job with no model read "fp32 matmuls
	// in full fp32").
	noModel := &JobSettings{Float32MatmulPrecision: "highest", MatmulAllowTF32: &off, CudnnAllowTF32: &on, CudnnBenchmark: &off}
	if got, want := noModel.Summary(), "no model's forward seen"; got != want {
		t.Errorf("no forward: got %q, want %q", got, want)
	}
	if got := (&JobSettings{}).Summary(); got != "" {
		t.Errorf("nothing read: %q", got)
	}
	var none *JobSettings
	if none.Summary() != "" {
		t.Error("nil")
	}
}

package sample

import (
	"strings"
	"testing"
)

// TestMFUIsDerivedFromWhatWasRead (issue 51 item 1): the model's FLOPs a
// step the hook counted (4e12) × 50 steps/s over the H200's dense bf16
// peak (989.5 TFLOPS) is 20 % in bf16 autocast; the same job in fp32 is
// set against the fp32 peak (67 TFLOPS), with TF32 against tf32's. Absent where the
// FLOPs, the rate, the precision's settings, the GPU or its peak were not
// read — never a guess.
func TestMFUIsDerivedFromWhatWasRead(t *testing.T) {
	peak := &GPUPeak{Model: "H200 SXM", DenseTFLOPS: map[string]float64{"fp32": 67, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5}}
	yes, no := true, false
	flops := 4e12
	frame := func(s *JobSettings, bps float64, p *GPUPeak) *Frame {
		pid := 100
		return &Frame{GPUs: []GPU{{Index: 0, Name: "NVIDIA H200", Peak: p, Processes: []GPUProcess{{PID: 100}}}},
			Loader: &Loader{PID: &pid, BatchesPerSec: bps, Settings: s}}
	}
	bf16 := &JobSettings{Autocast: &yes, AutocastDtype: "bfloat16", FLOPsPerStep: &flops}
	f := frame(bf16, 50, peak)
	f.AssignRoles()
	m := f.Loader.MFU
	if m == nil || m.Dtype != DtypeBF16 || m.Ratio < 0.2021 || m.Ratio > 0.2022 || m.GPU != "H200 SXM" || !strings.Contains(m.Method, "hook's count") {
		t.Fatalf("bf16: %+v", m)
	}
	tf32 := &JobSettings{Autocast: &no, Float32MatmulPrecision: "high", FLOPsPerStep: &flops}
	f = frame(tf32, 50, peak)
	f.AssignRoles()
	if f.Loader.MFU == nil || f.Loader.MFU.Dtype != DtypeTF32 {
		t.Errorf("tf32: %+v", f.Loader.MFU)
	}
	fp32 := &JobSettings{Autocast: &no, Float32MatmulPrecision: "highest", MatmulAllowTF32: &no, FLOPsPerStep: &flops}
	f = frame(fp32, 0.5, peak)
	f.AssignRoles()
	if f.Loader.MFU == nil || f.Loader.MFU.Dtype != DtypeFP32 || f.Loader.MFU.PeakTFLOPS != 67 {
		t.Errorf("fp32: %+v", f.Loader.MFU)
	}
	conv := &JobSettings{Autocast: &no, Float32MatmulPrecision: "highest", MatmulAllowTF32: &no, CudnnAllowTF32: &yes, HasConv: &yes, HasLinear: &no, FLOPsPerStep: &flops}
	f = frame(conv, 5, peak)
	f.AssignRoles()
	if f.Loader.MFU == nil || f.Loader.MFU.Dtype != DtypeTF32 {
		t.Errorf("a conv model, cuDNN's TF32 on: %+v", f.Loader.MFU)
	}
	mixed := *conv
	mixed.HasLinear = &yes
	for name, f := range map[string]*Frame{
		"convs in tf32, matmuls in fp32": frame(&mixed, 5, peak),
		"past the peak":                  frame(bf16, 500, peak),
		"no FLOPs":                       frame(&JobSettings{Autocast: &yes, AutocastDtype: "bfloat16"}, 50, peak),
		"no rate":                        frame(bf16, 0, peak),
		"precision unread":               frame(&JobSettings{FLOPsPerStep: &flops}, 50, peak),
		"no peak":                        frame(bf16, 50, nil),
		"no settings":                    frame(nil, 50, peak),
		"two GPUs, no pid":               {GPUs: []GPU{{Index: 0, Peak: peak}, {Index: 1, Peak: peak}}, Loader: &Loader{BatchesPerSec: 50, Settings: bf16}},
	} {
		f.AssignRoles()
		if f.Loader.MFU != nil {
			t.Errorf("%s: MFU %+v", name, f.Loader.MFU)
		}
	}
}

package diagnose

import "fmt"

// channels_last: the GPU is the limit, the model's convs hold their
// weights in NCHW while the tensor cores run them (autocast or TF32 on, or
// tensor activity seen): cuDNN's tensor-core convs want NHWC and
// transpose around each NCHW conv. Only where the hook read the weights'
// format: never guessed.
func init() {
	registerCause(causeRule{id: "channels_last", stages: []string{"step"}, gpu: true, find: channelsLastCause})
}

func channelsLastCause(in *causeIn) (Cause, bool) {
	g, ok := in.kernelBound()
	if !ok {
		return Cause{}, false
	}
	s := g.settings
	if s == nil || s.HasConv == nil || !*s.HasConv || s.ConvChannelsLast == nil || *s.ConvChannelsLast {
		return Cause{}, false
	}
	// On the tensor cores: autocast on says so; else GPM's tensor
	// activity where it was read, and cuDNN's own TF32 switch for convs
	// (not the matmuls') where it was not — the switch only lets cuDNN
	// pick a TF32 kernel. Low activity does not gainsay autocast: a bf16
	// step whose time goes to NCHW batch norm reads its tensor cores idle
	// (a review: 4 % beside autocast on, and nothing named).
	tensor := s.Half() // autocast on, or the weights cast to bf16 or fp16
	if t := in.w.gpu.tensor; t.ok {
		tensor = tensor || t.v >= in.w.th.TensorIdlePct
	} else if convTF32, _ := s.ConvTF32(); convTF32 {
		tensor = true
	}
	if !tensor {
		return Cause{}, false // fp32 on the CUDA cores: tensor_idle's fix comes first
	}
	c := Cause{
		Evidence: "the model's convs hold their weights in NCHW (contiguous), and the step runs them on the tensor cores (" + precisionWords(s) + "): cuDNN's tensor-core convs want NHWC and transpose NCHW around each conv",
		Fix:      "model = model.to(memory_format=torch.channels_last), and each batch x.to(device, memory_format=torch.channels_last)",
		BoundWhy: "no bound from counters: a conv's share of the step's GPU time needs a profile of the step (gpuwatch run --gpu-profile; practice: 22–30 % faster for ResNet-50 on V100 and A100)"}
	if p := g.profile; p != nil {
		// The fix changes the layout of every activation, so every kernel
		// that reads one by its layout may run faster: the convs, the
		// transposes around them (elementwise), batch norm and pooling
		// (a reduction). At most all of it goes. Convs and elementwise
		// alone were no bound: a ResNet-50 in bf16 on an H200 spent 56 %
		// of its GPU time in NCHW batch norm, and channels_last gained
		// 1.86× against the 1.45× they allowed.
		switch s := profiledShare(p, "conv", "elementwise", "normalization", "reduction"); {
		case s >= 0.995:
			c.BoundWhy = fmt.Sprintf("none from the step's profile (over %d steps): convs, normalization, pooling and elementwise kernels, whose speed depends on the layout, are all of the GPU's time a step, and nothing measured says how much faster each runs in NHWC", p.Steps)
		case s > 0:
			c.Bound = stepBound(g, 1/(1-s))
			c.BoundWhy = fmt.Sprintf("convs, normalization, pooling and elementwise kernels (the transposes among them), whose speed depends on the layout, are %.0f %% of the GPU's time a step (its profile over %d steps): at most that time goes", 100*s, p.Steps)
		}
	}
	return c, true
}

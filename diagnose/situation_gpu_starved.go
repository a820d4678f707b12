package diagnose

// GPUStarved: the accelerator waits on input; no host resource is saturated. See docs/diagnosis.md, "Verdicts".
const GPUStarved Kind = 2

func init() {
	register(Situation{
		Kind:       GPUStarved,
		ID:         "gpu_starved",
		Title:      "Accelerator starved by the input pipeline",
		Tone:       ToneWarn,
		InputBound: true,
		Stage:      "waiting",
		Advice:     starvedAdvice,
		Scenarios:  []string{"starved"},
	})
}

func starvedAdvice(in adviceIn) ([]string, bool) {
	if in.modeled {
		return nil, false
	}
	return catalogKnobs(in.w, in.suggest, in.cores, in.keep), false
}

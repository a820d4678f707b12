package diagnose

// GPUUnderused: the GPU reads busy, but its SMs mostly idle (GPM). See docs/diagnosis.md, "Verdicts".
const GPUUnderused Kind = 8

func init() {
	register(Situation{
		Kind:        GPUUnderused,
		ID:          "gpu_underused",
		Title:       "GPU underused: busy by utilization, its SMs mostly idle",
		Tone:        ToneWarn,
		Advice:      underusedAdvice,
		NoRecording: "needs a Hopper GPU with GPM to record; the tests use go-nvml mocks (probes) and frames (classify_test.go)",
	})
}

func underusedAdvice(adviceIn) ([]string, bool) {
	return []string{
		"give each kernel more work: a larger batch (or gradient accumulation to keep the step's size)",
		"launch fewer kernels: CUDA graphs or torch.compile (mode=\"reduce-overhead\") fuse them and drop the launch gaps",
		"sync with the host less: every .item(), .cpu() or print of a tensor in the loop stalls the GPU until it drains",
	}, false
}

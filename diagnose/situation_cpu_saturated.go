package diagnose

import "fmt"

// CPUSaturated: every core busy, the accelerator waiting. See docs/diagnosis.md, "Verdicts".
const CPUSaturated Kind = 4

func init() {
	register(Situation{
		Kind:       CPUSaturated,
		ID:         "cpu_saturated",
		Title:      "All cores saturated by preprocessing",
		Tone:       ToneBad,
		InputBound: true,
		Stage:      "decoding",
		Advice:     saturatedAdvice,
		Scenarios:  []string{"cpu-bound"},
	})
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

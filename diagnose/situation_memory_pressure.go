package diagnose

import "fmt"

// MemoryPressure: the host swaps or stalls on memory. See docs/diagnosis.md, "Verdicts".
const MemoryPressure Kind = 6

func init() {
	register(Situation{
		Kind:        MemoryPressure,
		ID:          "memory_pressure",
		Title:       "Memory pressure: the host is swapping or stalling",
		Tone:        ToneBad,
		InputBound:  true,
		Advice:      memoryAdvice,
		NoRecording: "no recording yet: this machine has no swap, and the tests make the pressure from fixtures (classify_test.go)",
	})
}

func memoryAdvice(in adviceIn) ([]string, bool) {
	w := in.w
	first := "lower num_workers or prefetch_factor: each worker holds its own batches in memory"
	if w.workers >= 0 {
		first = fmt.Sprintf("lower num_workers (now %d) or prefetch_factor (now %d): each worker holds its own batches in memory", w.workers, max(w.prefetch, 0))
	}
	return []string{first, "keep samples in smaller dtypes (uint8 images, float16/bfloat16 features)"}, false
}

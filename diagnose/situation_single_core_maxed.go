package diagnose

import "fmt"

// SingleCoreMaxed: one thread pegged while the rest idle, the accelerator waiting. See docs/diagnosis.md, "Verdicts".
const SingleCoreMaxed Kind = 3

func init() {
	register(Situation{
		Kind:       SingleCoreMaxed,
		ID:         "single_core_maxed",
		Title:      "One core maxed: loading runs on a single thread",
		Tone:       ToneWarn,
		InputBound: true,
		Stage:      "decoding",
		Advice:     singleCoreAdvice,
		Scenarios:  []string{"single-core"},
	})
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

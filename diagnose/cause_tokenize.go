package diagnose

import "github.com/gpuwatch/gpuwatch/sample"

// tokenize: tokenizing text in __getitem__ (an IterableDataset's __iter__), read from the workers' own CPU profile (causes_profile.go).
func init() {
	registerProfileCause("tokenize", sample.CatTokenizing, func(st sampleStage) string {
		load := "have __getitem__ load them; tokenizing in __getitem__ repeats the work every epoch"
		if st.iterable {
			load = "have the dataset's __iter__ load them; tokenizing as it iterates repeats the work every epoch"
		}
		return `tokenize once, before training: store the token ids (a fast tokenizer in batches, e.g. datasets' map(batched=True) with a Rust-backed tokenizer) and ` + load
	})
}

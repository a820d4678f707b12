package diagnose

import "github.com/gpuwatch/gpuwatch/sample"

// convert: converting samples to tensors one at a time (torch.tensor, float() in a Python loop) in __getitem__ (an IterableDataset's __iter__), read from the workers' own CPU profile (causes_profile.go).
func init() {
	registerProfileCause("convert", sample.CatConverting, func(st sampleStage) string {
		give := "have __getitem__ return slices of it"
		if st.iterable {
			give = "have the dataset's __iter__ yield slices of it"
		}
		return `keep the data as tensors and slice them: build one tensor (or one array, in the dtype the model takes) of the whole dataset once, and ` + give + `, with no Python loop, float() or torch.tensor per sample`
	})
}

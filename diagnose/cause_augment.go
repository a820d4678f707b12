package diagnose

import "github.com/gpuwatch/gpuwatch/sample"

// augment: augmenting and transforming samples in __getitem__ (torchvision transforms, array math), read from the workers' own CPU profile (causes_profile.go).
func init() {
	registerProfileCause("augment", sample.CatAugmenting, augmentFix)
}

// augmentFix is the augment cause's fix: on a GPU job, the random
// transforms on the batch on the GPU; on a CPU job (no GPU to move them
// to) cheaper ones, and once per batch rather than per sample.
func augmentFix(s sampleStage) string {
	if s.cpuJob {
		return `augment less per sample: the random transforms on uint8 images before ToTensor and Normalize, fewer or cheaper ones, or on the whole batch after collate (torchvision.transforms.v2 takes batched tensors)`
	}
	return `augment on the GPU: decode and crop on the CPU, then the random transforms on the batch after .to(device) (torchvision.transforms.v2 on CUDA tensors, NVIDIA DALI)`
}

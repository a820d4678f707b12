package diagnose

import "github.com/gpuwatch/gpuwatch/sample"

// augment: augmenting and transforming samples in __getitem__ (torchvision transforms, array math), read from the workers' own CPU profile (causes_profile.go).
func init() {
	registerProfileCause("augment", sample.CatAugmenting, anyStage(`augment on the GPU: decode and crop on the CPU, then the random transforms on the batch after .to(device) (torchvision.transforms.v2 on CUDA tensors, NVIDIA DALI)`))
}

package diagnose

import (
	"strings"

	"github.com/gpuwatch/gpuwatch/sample"
)

// augment: augmenting and transforming samples in __getitem__ (torchvision transforms, array math), read from the workers' own CPU profile (causes_profile.go).
func init() {
	registerProfileCause("augment", sample.CatAugmenting, augmentFix)
}

// augmentFix is the augment cause's fix: on a GPU job, the random
// transforms on the batch on the GPU; on a CPU job (no GPU to move them
// to) cheaper ones, and once per batch rather than per sample.
func augmentFix(s sampleStage) string {
	if s.augmentTop != "" && !imageTransform(s.augmentTop) {
		// Array math of no image library: its fix is the math's, not
		// torchvision's (a user's review: numpy's FFT per sample was told
		// of "random transforms on uint8 images").
		if s.cpuJob {
			return "cut the per-sample array math (" + s.augmentTop + "): once per batch on the collated array (vectorized), or once for the dataset where it does not change from epoch to epoch"
		}
		return "move the per-sample array math (" + s.augmentTop + ") to the GPU: the same ops in torch on the batch after .to(device), or once for the dataset where it does not change from epoch to epoch"
	}
	if s.cpuJob {
		return `augment less per sample: the random transforms on uint8 images before ToTensor and Normalize, fewer or cheaper ones, or on the whole batch after collate (torchvision.transforms.v2 takes batched tensors)`
	}
	return `augment on the GPU: decode and crop on the CPU, then the random transforms on the batch after .to(device) (torchvision.transforms.v2 on CUDA tensors, NVIDIA DALI)`
}

// imageLibs are the augmenting category's image libraries (pprofsum's
// table): a function of one is an image transform.
var imageLibs = []string{"torchvision.", "/torchvision/", "albumentations.", "kornia.", "PIL.", "skimage.", "scipy.ndimage.", "timm.data.", "monai.transforms.", "cv2."}

// imageTransform says the function named (placeOf: its name first) is an
// image library's.
func imageTransform(f string) bool {
	for _, l := range imageLibs {
		if strings.HasPrefix(f, l) || strings.Contains(f, l) && l[0] == '/' {
			return true
		}
	}
	return false
}

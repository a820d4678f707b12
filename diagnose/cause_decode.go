package diagnose

import "github.com/gpuwatch/gpuwatch/sample"

// decode: decoding images, audio or compressed data in __getitem__, read from the workers' own CPU profile (causes_profile.go).
func init() {
	registerProfileCause("decode", sample.CatDecoding, anyStage(`a reduced-size decode: PIL's Image.draft('RGB', (w, h)) decodes a JPEG at 1/2 to 1/8 scale when the crop wants fewer pixels (or decode on the GPU: torchvision.io.decode_jpeg(..., device='cuda'), NVIDIA DALI)`))
}

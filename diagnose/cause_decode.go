package diagnose

import "github.com/gpuwatch/gpuwatch/sample"

// decode: decoding images, audio or compressed data in __getitem__, read from the workers' own CPU profile (causes_profile.go).
func init() {
	registerProfileCause("decode", sample.CatDecoding, decodeFix)
}

// decodeFix is the decode cause's fix: for JPEGs a reduced-size decode,
// for any format images stored at the size the crop takes; the GPU's
// decoder only for a job on a GPU. The profile does not say the files'
// format (PIL's decoders are C under ImageFile.load): each part says
// which it is for.
func decodeFix(s sampleStage) string {
	fix := `decode less: JPEGs at the size the crop wants (PIL's Image.draft('RGB', (w, h)) decodes at 1/2 to 1/8 scale), and any format stored once at that size (or decoded once and cached as uint8 tensors)`
	if s.cpuJob {
		return fix
	}
	return fix + ` — or decode on the GPU: torchvision.io.decode_jpeg(..., device='cuda'), NVIDIA DALI`
}

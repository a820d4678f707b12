package gpu

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpuwatch/gpuwatch/sample"
)

// peakRow is one GPU model's dense peak throughput, as its vendor's
// datasheet publishes it, and how the driver's name for it reads.
type peakRow struct {
	model string
	// all are the tokens the driver's name must hold, none those it must
	// not (peakTokens: upper case, split at spaces, '-' and '_').
	all, none []string
	source    string
	// dense is TFLOPS (TOPS for int8) by dtype (sample.Dtypes), dense:
	// where a datasheet prints only the 2:4 sparse figure (marked *), the
	// figure here is half of it. A dtype the datasheet does not give is
	// absent: no figure is guessed.
	dense map[string]float64
	// noTF32: the model has no TF32 (before Ampere; CDNA 2), whatever
	// the job's switches say.
	noTF32 bool
}

// Datasheet titles, the source of each row's figures.
const (
	srcH100   = "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100), sparse figures halved"
	srcH200   = "NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200), sparse figures halved"
	srcGH200  = "NVIDIA GH200 Grace Hopper Superchip datasheet (nvidia.com/en-us/data-center/grace-hopper-superchip), sparse figures halved"
	srcA100   = "NVIDIA A100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/a100): SXM and PCIe share the tensor peaks"
	srcL40S   = "NVIDIA L40S GPU datasheet (nvidia.com/en-us/data-center/l40s), dense figures"
	srcL4     = "NVIDIA L4 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/l4), sparse figures halved"
	srcA10    = "NVIDIA A10 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/products/a10-gpu), dense figures"
	srcV100   = "NVIDIA Tesla V100 GPU Accelerator datasheet (nvidia.com/en-us/data-center/v100): tensor = mixed-precision fp16"
	srcT4     = "NVIDIA T4 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/tesla-t4): tensor = mixed-precision fp16"
	srcAda    = "NVIDIA Ada GPU Architecture whitepaper, GeForce RTX 4090 table: tensor figures with FP32 accumulate (what training uses; GeForce runs FP16 accumulate at 2x)"
	srcRTX50  = "NVIDIA GeForce RTX 5090 specifications (nvidia.com/en-us/geforce/graphics-cards/50-series/rtx-5090): shader TFLOPS; tensor figures not given dense"
	srcMI300X = "AMD Instinct MI300X Accelerator data sheet (amd.com/en/products/accelerators/instinct/mi300/mi300x), dense figures; fp32 is vector"
	srcMI250X = "AMD Instinct MI250X Accelerator data sheet (amd.com/en/products/accelerators/instinct/mi200/mi250x); fp32 is vector"
	srcMI210  = "AMD Instinct MI210 Accelerator data sheet (amd.com/en/products/accelerators/instinct/mi200/mi210); fp32 is vector"
)

// hopperSXM are the H100 SXM5's figures, which the H200 and GH200 share:
// FP64 34, FP64 Tensor 67, FP32 67, TF32 989*, BF16 and FP16 1,979*, FP8
// and INT8 3,958*.
var hopperSXM = map[string]float64{
	sample.DtypeFP64: 34, sample.DtypeFP64Tensor: 67, sample.DtypeFP32: 67, sample.DtypeTF32: 494.5,
	sample.DtypeBF16: 989.5, sample.DtypeFP16: 989.5, sample.DtypeFP8: 1979, sample.DtypeINT8: 1979,
}

// hopperNVL are the H100 NVL's and H200 NVL's figures per GPU: FP64 30,
// FP64 Tensor 60, FP32 60, TF32 835*, BF16 and FP16 1,671*, FP8 and INT8
// 3,341*.
var hopperNVL = map[string]float64{
	sample.DtypeFP64: 30, sample.DtypeFP64Tensor: 60, sample.DtypeFP32: 60, sample.DtypeTF32: 417.5,
	sample.DtypeBF16: 835.5, sample.DtypeFP16: 835.5, sample.DtypeFP8: 1670.5, sample.DtypeINT8: 1670.5,
}

// peakTable is every GPU model gpuwatch knows the dense peak of, first
// match wins: a row that names a variant (NVL, PCIe) comes before the one
// it would otherwise fall into. NVML's names: "NVIDIA H200", "NVIDIA H100
// 80GB HBM3", "NVIDIA A100-SXM4-80GB", "Tesla V100-SXM2-16GB"; AMD's
// sysfs product_name: "AMD Instinct MI300X".
var peakTable = []peakRow{
	{model: "H200 NVL", all: []string{"H200", "NVL"}, source: srcH200, dense: hopperNVL},
	{model: "GH200", all: []string{"GH200"}, source: srcGH200, dense: hopperSXM},
	{model: "H200 SXM", all: []string{"H200"}, source: srcH200, dense: hopperSXM},
	{model: "H100 NVL", all: []string{"H100", "NVL"}, source: srcH100, dense: hopperNVL},
	// H100 PCIe: FP64 26, FP64 Tensor 51, FP32 51, TF32 756*, BF16 and
	// FP16 1,513*, FP8 and INT8 3,026*.
	{model: "H100 PCIe", all: []string{"H100", "PCIE"}, source: srcH100, dense: map[string]float64{
		sample.DtypeFP64: 26, sample.DtypeFP64Tensor: 51, sample.DtypeFP32: 51, sample.DtypeTF32: 378,
		sample.DtypeBF16: 756.5, sample.DtypeFP16: 756.5, sample.DtypeFP8: 1513, sample.DtypeINT8: 1513,
	}},
	{model: "H100 SXM", all: []string{"H100", "HBM3"}, source: srcH100, dense: hopperSXM},
	{model: "H100 SXM", all: []string{"H100", "SXM5"}, source: srcH100, dense: hopperSXM},
	// A100 40GB and 80GB, SXM and PCIe: FP64 9.7, FP64 Tensor 19.5, FP32
	// 19.5, TF32 156, BF16 and FP16 312, INT8 624 (dense; 2× sparse).
	{model: "A100", all: []string{"A100"}, source: srcA100, dense: map[string]float64{
		sample.DtypeFP64: 9.7, sample.DtypeFP64Tensor: 19.5, sample.DtypeFP32: 19.5, sample.DtypeTF32: 156,
		sample.DtypeBF16: 312, sample.DtypeFP16: 312, sample.DtypeINT8: 624,
	}},
	// L40S: FP32 91.6, TF32 183, BF16 and FP16 362.05, FP8 and INT8 733
	// (dense; the datasheet gives no FP64).
	{model: "L40S", all: []string{"L40S"}, source: srcL40S, dense: map[string]float64{
		sample.DtypeFP32: 91.6, sample.DtypeTF32: 183, sample.DtypeBF16: 362.05, sample.DtypeFP16: 362.05,
		sample.DtypeFP8: 733, sample.DtypeINT8: 733,
	}},
	// L4: FP32 30.3, TF32 120*, BF16 and FP16 242*, FP8 and INT8 485*.
	{model: "L4", all: []string{"L4"}, source: srcL4, dense: map[string]float64{
		sample.DtypeFP32: 30.3, sample.DtypeTF32: 60, sample.DtypeBF16: 121, sample.DtypeFP16: 121,
		sample.DtypeFP8: 242.5, sample.DtypeINT8: 242.5,
	}},
	// A10: FP32 31.2, TF32 62.5, BF16 and FP16 125, INT8 250 (dense).
	{model: "A10", all: []string{"A10"}, source: srcA10, dense: map[string]float64{
		sample.DtypeFP32: 31.2, sample.DtypeTF32: 62.5, sample.DtypeBF16: 125, sample.DtypeFP16: 125, sample.DtypeINT8: 250,
	}},
	// V100 (Volta has no sparsity, no BF16, no TF32): SXM2 FP64 7.8, FP32
	// 15.7, tensor 125; PCIe 7, 14, 112; V100S PCIe 8.2, 16.4, 130.
	{model: "V100S PCIe", all: []string{"V100S"}, source: srcV100, noTF32: true, dense: map[string]float64{
		sample.DtypeFP64: 8.2, sample.DtypeFP32: 16.4, sample.DtypeFP16: 130,
	}},
	{model: "V100 SXM2", all: []string{"V100", "SXM2"}, source: srcV100, noTF32: true, dense: map[string]float64{
		sample.DtypeFP64: 7.8, sample.DtypeFP32: 15.7, sample.DtypeFP16: 125,
	}},
	{model: "V100 PCIe", all: []string{"V100", "PCIE"}, source: srcV100, noTF32: true, dense: map[string]float64{
		sample.DtypeFP64: 7, sample.DtypeFP32: 14, sample.DtypeFP16: 112,
	}},
	// T4 (Turing: no BF16, no TF32; the cloud's common inference and
	// notebook GPU, "Tesla T4"): FP32 8.1, mixed-precision FP16 65, INT8
	// 130 (dense: Turing has no sparsity).
	{model: "T4", all: []string{"T4"}, source: srcT4, noTF32: true, dense: map[string]float64{
		sample.DtypeFP32: 8.1, sample.DtypeFP16: 65, sample.DtypeINT8: 130,
	}},
	// RTX 4090: FP32 82.6, TF32 82.6, BF16 and FP16 165.2 (FP32
	// accumulate), INT8 660.6 (dense). The "D" variant has fewer SMs.
	{model: "RTX 4090", all: []string{"RTX", "4090"}, none: []string{"D"}, source: srcAda, dense: map[string]float64{
		sample.DtypeFP32: 82.6, sample.DtypeTF32: 82.6, sample.DtypeBF16: 165.2, sample.DtypeFP16: 165.2, sample.DtypeINT8: 660.6,
	}},
	{model: "RTX 5090", all: []string{"RTX", "5090"}, none: []string{"D"}, source: srcRTX50, dense: map[string]float64{
		sample.DtypeFP32: 104.8,
	}},
	// MI300X: FP64 vector 81.7, matrix 163.4; FP32 vector 163.4; TF32
	// 653.7; BF16 and FP16 1,307.4; FP8 and INT8 2,614.9 (dense).
	{model: "MI300X", all: []string{"MI300X"}, source: srcMI300X, dense: map[string]float64{
		sample.DtypeFP64: 81.7, sample.DtypeFP64Tensor: 163.4, sample.DtypeFP32: 163.4, sample.DtypeTF32: 653.7,
		sample.DtypeBF16: 1307.4, sample.DtypeFP16: 1307.4, sample.DtypeFP8: 2614.9, sample.DtypeINT8: 2614.9,
	}},
	// MI250X: FP64 vector 47.9, matrix 95.7; FP32 vector 47.9; BF16, FP16
	// and INT8 383 (CDNA 2 has no TF32, no FP8, no sparsity).
	{model: "MI250X", all: []string{"MI250X"}, source: srcMI250X, noTF32: true, dense: map[string]float64{
		sample.DtypeFP64: 47.9, sample.DtypeFP64Tensor: 95.7, sample.DtypeFP32: 47.9,
		sample.DtypeBF16: 383, sample.DtypeFP16: 383, sample.DtypeINT8: 383,
	}},
	// MI210: FP64 vector 22.6, matrix 45.3; FP32 vector 22.6; BF16, FP16
	// and INT8 181.
	{model: "MI210", all: []string{"MI210"}, source: srcMI210, noTF32: true, dense: map[string]float64{
		sample.DtypeFP64: 22.6, sample.DtypeFP64Tensor: 45.3, sample.DtypeFP32: 22.6,
		sample.DtypeBF16: 181, sample.DtypeFP16: 181, sample.DtypeINT8: 181,
	}},
}

// peakTokens splits a driver's GPU name into upper-case tokens at spaces,
// '-' and '_': "NVIDIA A100-SXM4-80GB" → NVIDIA A100 SXM4 80GB.
func peakTokens(name string) []string {
	return strings.FieldsFunc(strings.ToUpper(name), func(r rune) bool { return r == ' ' || r == '-' || r == '_' })
}

// PeakFor is the dense peak of the GPU the driver names name (its own
// copy), or nil and why there is none.
func PeakFor(name string) (*sample.GPUPeak, string) {
	toks := peakTokens(name)
	if slices.Contains(toks, "LAPTOP") || slices.Contains(toks, "MOBILE") || slices.Contains(toks, "MAX") && slices.Contains(toks, "Q") {
		// The same chip's name with a laptop's power limit (a 4090 Laptop
		// GPU is an AD103 at 80–150 W): the desktop part's peak would be
		// far above it, and its own depends on the maker's limit.
		return nil, fmt.Sprintf("no dense peak for %q: a laptop GPU's depends on its maker's power limit", sample.Printable(name))
	}
	for i := range peakTable {
		r := &peakTable[i]
		if !hasAll(toks, r.all) || slices.ContainsFunc(r.none, func(t string) bool { return slices.Contains(toks, t) }) {
			continue
		}
		return &sample.GPUPeak{Model: r.model, Source: r.source, DenseTFLOPS: maps.Clone(r.dense), NoTF32: r.noTF32}, ""
	}
	return nil, fmt.Sprintf("no dense peak known for GPU model %q", sample.Printable(name))
}

func hasAll(toks, want []string) bool {
	for _, w := range want {
		if !slices.Contains(toks, w) {
			return false
		}
	}
	return true
}

// setPeaks fills each readable GPU's Peak, or says why it has none.
func setPeaks(gpus []sample.GPU) {
	for i := range gpus {
		g := &gpus[i]
		if g.Lost {
			continue
		}
		var why string
		if g.Peak, why = PeakFor(g.Name); g.Peak == nil {
			markUnavailable(g, "peak", why)
		}
	}
}

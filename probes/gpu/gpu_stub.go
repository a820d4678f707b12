//go:build !linux || !cgo

package gpu

import (
	"context"

	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/sample"
)

// NVMLCompiled says whether this build can read NVIDIA GPUs (it needs cgo
// on Linux to load libnvidia-ml).
const NVMLCompiled = false

// NVML stands in for the NVIDIA source in builds without cgo.
type NVML struct{}

// NewNVML returns a source that is always unavailable in this build.
func NewNVML(any) *NVML { return &NVML{} }

// Vendor implements GPUSource.
func (*NVML) Vendor() string { return "nvidia" }

// GPUs implements GPUSource.
func (*NVML) GPUs(context.Context) ([]sample.GPU, error) {
	return nil, probes.Unavailable("built without NVML support (CGO_ENABLED=0)")
}

// Package gpu is the probe family that reads the accelerators: the GPU
// probe (gpu.go) over its sources, NVIDIA's NVML (gpu_nvml.go, cgo on
// Linux; gpu_stub.go elsewhere) and AMD's sysfs (gpu_amd.go), and which
// of them the job uses (jobgpus.go: --gpus, CUDA_VISIBLE_DEVICES, the
// processes on each device).
//
// nvml.Return never leaves this package. It imports the probes framework,
// host (process ancestry) and sample.
package gpu

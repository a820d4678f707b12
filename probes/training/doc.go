// Package training is the probe family that reads a training process that
// has no hook: TrainingFinder picks the process (training.go: it maps
// torch or CUDA, busiest first), and Loop samples its threads' kernel
// stacks and syscalls to tell time in the step from time waiting for
// input (loop.go; the syscall numbers per architecture in loop_sysnr_*.go).
//
// It imports the probes framework, host (the process table and maps
// reader) and sample.
package training

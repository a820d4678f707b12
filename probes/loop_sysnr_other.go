//go:build !amd64 && !arm64

package probes

// loopSyscalls is empty where the sampler has no table: it reads wchan
// alone there.
var loopSyscalls = map[int]string{}

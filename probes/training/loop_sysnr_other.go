//go:build !amd64 && !arm64

package training

// loopSyscalls is empty where the sampler has no table: it reads wchan
// alone there.
var loopSyscalls = map[int]string{}

// Package probes is the framework every probe family builds on: the Probe
// interface, the Sampler that runs probes every interval in lanes
// (sampler.go), the injected Roots, and the read and parse helpers the
// families share (read_*.go, parse.go, sleep_*.go). The probes themselves
// live in one subpackage per source family: host (/proc and /sys), job
// (cgroup, identity), gpu (NVML, AMD), endpoint (loader debug endpoints,
// ranks, profiles) and training (the uninstrumented training process).
// session's newProbeSet is the one place that builds them.
//
// It imports only sample and internal/bg from this module, and never a
// family.
package probes

import (
	"context"
	"errors"
	"fmt"

	"github.com/gpuwatch/gpuwatch/sample"
)

// Probe is one source of data. Collect fills only the probe's own part of f.
// A source that is not there returns an error that wraps ErrUnavailable; the
// Sampler then retries it rarely and keeps the reason in the Frame. Collect is
// never called concurrently with itself.
type Probe interface {
	Name() string
	Collect(ctx context.Context, f *sample.Frame) error
}

// ErrUnavailable marks a source that is not present on this machine (no
// PSI in the kernel, no GPU driver). Match it with errors.Is.
var ErrUnavailable = errors.New("unavailable")

// unavailableError is an ErrUnavailable whose message is only the reason, so
// views can show it as is ("no /proc/pressure: kernel without PSI").
type unavailableError struct{ reason string }

func (e *unavailableError) Error() string        { return e.reason }
func (e *unavailableError) Is(target error) bool { return target == ErrUnavailable }

// Unavailable returns an error that wraps ErrUnavailable with a reason.
func Unavailable(format string, args ...any) error {
	return &unavailableError{reason: fmt.Sprintf(format, args...)}
}

// Roots are where the kernel's filesystems are mounted. Containers that watch
// the host mount them elsewhere (as node_exporter's --path.procfs does).
type Roots struct {
	Proc string // default "/proc"
	Sys  string // default "/sys"
}

// WithDefaults is r with /proc and /sys where a root is not set.
func (r Roots) WithDefaults() Roots {
	if r.Proc == "" {
		r.Proc = "/proc"
	}
	if r.Sys == "" {
		r.Sys = "/sys"
	}
	return r
}

// Rate is a per-second Rate from two counter readings, or false when the
// counter went backwards (a reset or wrap) or no time passed.
func Rate(prev, cur uint64, seconds float64) (float64, bool) {
	if cur < prev || seconds <= 0 {
		return 0, false
	}
	return float64(cur-prev) / seconds, true
}

// Ptr is a pointer to a copy of v: a frame's optional field, set.
func Ptr[T any](v T) *T { return &v }

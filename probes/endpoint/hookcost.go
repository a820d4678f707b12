package endpoint

import (
	"fmt"
	"math"
	"strconv"

	"github.com/gpuwatch/gpuwatch/internal/expo"
	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/sample"
)

// hookCPUSeries is the hook's own CPU time in the training process,
// cumulative seconds (python/gpuwatch_hook/_cost.py): never alone a loader.
const hookCPUSeries = "gpuwatch_hook_cpu_seconds_total"

// maxHookCores bounds the hook's CPU seconds per wall second (the frame's
// check does too): more is no reading of a real process.
const maxHookCores = 1e4

// hookCPUFromPage reads the hook's own CPU seconds into c.HookCPUSeconds:
// the series without labels, a finite count of seconds within
// maxLoaderSeconds; anything else is dropped, and says so.
func hookCPUFromPage(page map[string][]expo.Sample, c *LoaderCounters) {
	for _, s := range page[hookCPUSeries] {
		if len(s.Labels) != 0 {
			continue // a split this gpuwatch does not read
		}
		if !(s.Value >= 0 && s.Value <= maxLoaderSeconds) { // NaN too
			c.Dropped = append(c.Dropped, fmt.Sprintf("%s %s: not a count of seconds, dropped", hookCPUSeries, strconv.FormatFloat(s.Value, 'g', 6, 64)))
			return
		}
		v := s.Value
		c.HookCPUSeconds = &v
		return
	}
}

// hookCost fills the hook's own cost over an interval of sec seconds in
// which samples were handed out: its share of a core, and its µs per
// sample. Nothing when either reading lacks it or the total went back (a
// restarted process: the next interval has it).
func hookCost(out *sample.Loader, prev, cur *float64, samples uint64, sec float64) {
	if prev == nil || cur == nil || *cur < *prev || !(sec > 0) {
		return
	}
	d := *cur - *prev
	if d/sec > maxHookCores {
		return // more cores than a machine has: not the hook's CPU
	}
	out.HookCPUSecPerSec = probes.Ptr(d / sec)
	if samples > 0 {
		out.HookCPUPerSampleUs = probes.Ptr(math.Min(1e9, 1e6*d/float64(samples)))
	}
}

package endpoint

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuwatch/gpuwatch/internal/expo"
	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/sample"
)

// hookCPUSeries is the hook's own CPU time in the training process,
// cumulative seconds (python/gpuwatch_hook/_cost.py): never alone a loader.
// hookPartSeries is that time by part, one sample per part (label part).
const (
	hookCPUSeries  = "gpuwatch_hook_cpu_seconds_total"
	hookPartSeries = "gpuwatch_hook_part_cpu_seconds_total"
)

// maxHookCores bounds the hook's CPU seconds per wall second (the frame's
// check does too): more is no reading of a real process.
const maxHookCores = 1e4

// maxHookParts bounds the parts read from a page: the hook has eight
// (_cost.PARTS), and the frame's list is cut at 16 (sample.Loader's
// HookCPUParts tag).
const maxHookParts = 16

// hookCPUFromPage reads the hook's own CPU seconds into c.HookCPUSeconds:
// the series without labels, a finite count of seconds within
// maxLoaderSeconds; anything else is dropped, and says so. Its parts go
// to c.HookCPUParts (hookPartsFromPage).
func hookCPUFromPage(page map[string][]expo.Sample, c *LoaderCounters) {
	hookPartsFromPage(page, c)
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

// hookPartsFromPage reads the hook's CPU seconds by part into
// c.HookCPUParts: samples with the one label part, named as the hook
// names its parts ([a-z_]{1,32}: a name is outside input, and the
// dashboard prints it), a finite count of seconds within
// maxLoaderSeconds, the first of a name, at most maxHookParts. The rest
// is dropped; the first reason is said, once.
func hookPartsFromPage(page map[string][]expo.Sample, c *LoaderCounters) {
	var why string
	for _, s := range page[hookPartSeries] {
		name, ok := s.Label("part")
		switch {
		case !ok || len(s.Labels) != 1:
			continue // a split this gpuwatch does not read
		case !partName(name):
			why = cmp.Or(why, "a part not named [a-z_]{1,32}, dropped")
			continue
		case !(s.Value >= 0 && s.Value <= maxLoaderSeconds): // NaN too
			why = cmp.Or(why, fmt.Sprintf("part %s %s: not a count of seconds, dropped", name, strconv.FormatFloat(s.Value, 'g', 6, 64)))
			continue
		}
		if _, seen := c.HookCPUParts[name]; seen {
			continue
		}
		if len(c.HookCPUParts) == maxHookParts {
			why = cmp.Or(why, fmt.Sprintf("more than %d parts, the rest dropped", maxHookParts))
			break
		}
		if c.HookCPUParts == nil {
			c.HookCPUParts = make(map[string]float64, 8)
		}
		c.HookCPUParts[name] = s.Value
	}
	if why != "" {
		c.Dropped = append(c.Dropped, hookPartSeries+" "+why)
	}
}

// partName says name is a part's name as the hook writes them: 1 to 32
// of a–z and _.
func partName(name string) bool {
	if len(name) == 0 || len(name) > 32 {
		return false
	}
	return strings.Trim(name, "abcdefghijklmnopqrstuvwxyz_") == ""
}

// hookCost fills the hook's own cost over an interval of sec seconds
// between prev and cur: its share of a core, its µs per sample handed
// out (per batch where batches came and no sample was counted), and the
// same of each part, the costliest first. Nothing when a reading lacks
// it or a total went back (a restarted process: the next interval has
// it); a part that went back gives nothing, the others still do.
func hookCost(out *sample.Loader, prev, cur *LoaderCounters, sec float64) {
	if !(sec > 0) {
		return
	}
	samples, batches := cur.Samples-prev.Samples, cur.Batches-prev.Batches
	if d, ok := hookDelta(prev.HookCPUSeconds, cur.HookCPUSeconds, sec); ok {
		out.HookCPUSecPerSec = probes.Ptr(d / sec)
		out.HookCPUPerSampleUs, out.HookCPUPerBatchUs = hookPer(d, samples, batches)
	}
	for name, v := range cur.HookCPUParts {
		p, ok := prev.HookCPUParts[name]
		if !ok {
			continue // a part new to this reading: no interval yet
		}
		d, ok := hookDelta(&p, &v, sec)
		if !ok {
			continue
		}
		part := sample.HookCPUPart{Part: name, Cores: d / sec}
		part.PerSampleUs, part.PerBatchUs = hookPer(d, samples, batches)
		out.HookCPUParts = append(out.HookCPUParts, part)
	}
	slices.SortFunc(out.HookCPUParts, func(a, b sample.HookCPUPart) int {
		return cmp.Or(cmp.Compare(b.Cores, a.Cores), strings.Compare(a.Part, b.Part))
	})
}

// hookDelta is the CPU seconds between two cumulative readings over sec
// seconds; false where either is missing, it went back, or it is more
// cores than a machine has (not the hook's CPU).
func hookDelta(prev, cur *float64, sec float64) (float64, bool) {
	if prev == nil || cur == nil || *cur < *prev {
		return 0, false
	}
	d := *cur - *prev
	return d, d/sec <= maxHookCores
}

// hookPer is d CPU seconds in µs per sample, or, where batches came and
// no sample was counted (a batch without a known size), per batch; nil
// for what does not apply.
func hookPer(d float64, samples, batches uint64) (perSample, perBatch *float64) {
	switch {
	case samples > 0:
		return probes.Ptr(math.Min(1e9, 1e6*d/float64(samples))), nil
	case batches > 0:
		return nil, probes.Ptr(math.Min(1e9, 1e6*d/float64(batches)))
	}
	return nil, nil
}

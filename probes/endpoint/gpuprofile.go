package endpoint

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/gpuwatch/gpuwatch/internal/expo"
	"github.com/gpuwatch/gpuwatch/sample"
)

// The profile's bounds: a step of at most maxGPUProfileStep seconds, a
// cost of at most maxGPUProfileCost (50 steps of the longest step, and the
// summary) and maxGPUProfileCPUCost of CPU (that on 64 threads), a reason of maxGPUProfileReason bytes. A figure outside is
// dropped and said, as the other gauges are.
const (
	maxGPUProfileStep    = 1 << 20
	maxGPUProfileCost    = 64 * maxGPUProfileStep
	maxGPUProfileCPUCost = 64 * maxGPUProfileCost
	maxGPUProfileReason  = 200
)

// gpuProfile reads the GPU's time per step (gpuwatch_job_gpu_profile_*,
// gpuwatch_job_gpu_time_seconds_per_step and
// gpuwatch_job_gpu_idle_seconds_per_step, docs/prometheus.md "The GPU's
// time per step") into the counters: nil when the page has no
// gpuwatch_job_gpu_profile_info of a state the protocol names. Labels are
// outside text: a category, precision or device the hook does not name
// drops its sample (said in Dropped), the reason and the idle sites are
// cut and made printable; a value out of range is dropped and said.
func (m *metricsPage) gpuProfile() {
	ss := m.page["gpuwatch_job_gpu_profile_info"]
	if len(ss) == 0 {
		return
	}
	state, _ := ss[0].Label("state")
	switch state {
	case sample.GPUProfileWaiting, sample.GPUProfileRecording, sample.GPUProfileDone, sample.GPUProfileRefused:
	default:
		m.c.Dropped = append(m.c.Dropped, "gpuwatch_job_gpu_profile_info "+shortLabel(state, 32)+": not a state of the GPU profile's, dropped")
		return
	}
	device, _ := ss[0].Label("device")
	switch device {
	case "", "cuda", "cpu":
	default:
		m.c.Dropped = append(m.c.Dropped, "gpuwatch_job_gpu_profile_info "+shortLabel(device, 32)+": not a device of the GPU profile's, said as unknown")
		device = ""
	}
	reason, _ := ss[0].Label("reason")
	g := &sample.GPUProfile{State: state, Device: device, Reason: shortLabel(reason, maxGPUProfileReason)}
	if n := m.integer("gpuwatch_job_gpu_profile_steps", sample.MaxGPUProfileSteps); n != nil {
		g.Steps = *n
	}
	f := func(name string, hi float64) *float64 {
		if v, ok := m.gauge("gpuwatch_job_gpu_profile_"+name, 0, hi); ok {
			return &v
		}
		return nil
	}
	g.StepSeconds = f("step_seconds", maxGPUProfileStep)
	g.BeforeStepSeconds = f("before_step_seconds", maxGPUProfileStep)
	g.CostSeconds = f("cost_seconds", maxGPUProfileCost)
	g.CostCPUSeconds = f("cost_cpu_seconds", maxGPUProfileCPUCost)
	g.BusySecondsPerStep = f("busy_seconds_per_step", maxGPUProfileStep)
	g.IdleSecondsPerStep = f("idle_seconds_per_step", maxGPUProfileStep)
	g.InputSecondsPerStep = f("input_seconds_per_step", maxGPUProfileStep)
	if g.SyncSecondsPerStep = f("sync_seconds_per_step", maxGPUProfileStep); g.SyncSecondsPerStep != nil &&
		(g.IdleSecondsPerStep == nil || *g.SyncSecondsPerStep > *g.IdleSecondsPerStep*(1+1e-9)+1e-12) { // its sum's rounding allowed
		m.c.Dropped = append(m.c.Dropped, "gpuwatch_job_gpu_profile_sync_seconds_per_step: more than the idle time it is part of, dropped")
		g.SyncSecondsPerStep = nil
	}
	g.Parts, g.Idle = gpuTimeFromPage(m.page, &m.c.Dropped)
	m.c.GPUProfile = g
}

// finiteIn says v is a number in [0, hi].
func finiteIn(v, hi float64) bool {
	return !math.IsNaN(v) && v >= 0 && v <= hi
}

// gpuTimeFromPage reads the parts (category, precision) and the idle
// sites, the most first; a sample with a category or precision the hook
// does not name, a duplicate, or a value out of range is left out and
// said in dropped (once per reason).
func gpuTimeFromPage(page map[string][]expo.Sample, dropped *[]string) ([]sample.GPUTimePart, []sample.GPUIdleGap) {
	var parts []sample.GPUTimePart
	seen := map[[2]string]bool{}
	said := map[string]bool{}
	drop := func(why string) {
		if !said[why] && len(said) < 8 {
			said[why] = true
			*dropped = append(*dropped, why)
		}
	}
	for _, s := range page["gpuwatch_job_gpu_time_seconds_per_step"] {
		cat, _ := s.Label("category")
		prec, _ := s.Label("precision")
		switch {
		case !slices.Contains(sample.GPUTimeCategories, cat):
			drop("gpuwatch_job_gpu_time_seconds_per_step " + shortLabel(cat, 32) + ": not a category of the GPU profile's, dropped")
			continue
		case prec != "" && !slices.Contains(sample.GPUPrecisions, prec):
			drop("gpuwatch_job_gpu_time_seconds_per_step " + shortLabel(prec, 32) + ": not a precision of the GPU profile's, dropped")
			continue
		case !finiteIn(s.Value, maxGPUProfileStep):
			drop("gpuwatch_job_gpu_time_seconds_per_step " + strconv.FormatFloat(s.Value, 'g', 6, 64) + ": outside 0–" + strconv.Itoa(maxGPUProfileStep) + ", dropped")
			continue
		case seen[[2]string{cat, prec}] || len(parts) >= len(sample.GPUTimeCategories)*(len(sample.GPUPrecisions)+1):
			continue
		}
		seen[[2]string{cat, prec}] = true
		parts = append(parts, sample.GPUTimePart{Category: cat, Precision: prec, SecondsPerStep: s.Value})
	}
	slices.SortStableFunc(parts, func(a, b sample.GPUTimePart) int {
		if c := cmp.Compare(b.SecondsPerStep, a.SecondsPerStep); c != 0 {
			return c
		}
		return cmp.Compare(a.Category+" "+a.Precision, b.Category+" "+b.Precision)
	})
	var idle []sample.GPUIdleGap
	at := map[string]bool{}
	for _, s := range page["gpuwatch_job_gpu_idle_seconds_per_step"] {
		after, _ := s.Label("after")
		after = shortLabel(after, sample.MaxGPUIdleAfter)
		if after == "" {
			after = "(unknown)"
		}
		if !finiteIn(s.Value, maxGPUProfileStep) {
			drop("gpuwatch_job_gpu_idle_seconds_per_step " + strconv.FormatFloat(s.Value, 'g', 6, 64) + ": outside 0–" + strconv.Itoa(maxGPUProfileStep) + ", dropped")
			continue
		}
		if at[after] || len(idle) >= 4*sample.MaxGPUIdleSites {
			continue
		}
		at[after] = true
		idle = append(idle, sample.GPUIdleGap{After: after, SecondsPerStep: s.Value})
	}
	slices.SortStableFunc(idle, func(a, b sample.GPUIdleGap) int {
		if c := cmp.Compare(b.SecondsPerStep, a.SecondsPerStep); c != 0 {
			return c
		}
		return cmp.Compare(a.After, b.After)
	})
	if len(idle) > sample.MaxGPUIdleSites {
		idle = idle[:sample.MaxGPUIdleSites]
	}
	return parts, idle
}

// AskGPUProfile asks the loader to record the GPU's time over its next
// steps (POST /gpu-profile?steps=N with its token: the hook's server,
// python/gpuwatch_hook/_server.py). It returns the loader's answer, one
// printable line; a refusal (400, 401, 404, 409) is an error saying what
// the loader answered.
func (a *Attach) AskGPUProfile(ctx context.Context, steps int) (string, error) {
	if steps < 1 || steps > sample.MaxGPUProfileSteps {
		return "", fmt.Errorf("the GPU profile's steps: want 1 to %d, not %d", sample.MaxGPUProfileSteps, steps)
	}
	path := "/gpu-profile?steps=" + strconv.Itoa(steps)
	return a.askHook(ctx, path, "the GPU profile", "this loader cannot profile its steps (the Python hook can: gpuwatch run --gpu-profile)")
}

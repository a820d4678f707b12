package sample

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// GPUProfile is the step's GPU time by category of work, as the hook
// measured it with torch.profiler over a few steps (gpuwatch run
// --gpu-profile, attach --gpu-profile, or POST /gpu-profile?steps=N;
// python/gpuwatch_hook/_gpuprofile.py, docs/prometheus.md "The GPU's time
// per step"). On a machine without a GPU (Device "cpu") the parts are the
// self time of the loop thread's ops. A figure not measured (yet) is nil,
// never a guess.
type GPUProfile struct {
	// State is the recording's: "waiting", "recording", "done" or
	// "refused" (Reason says why: printable, at most 200 bytes; with
	// "done", why it has fewer steps than were asked, if it has).
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	// Device is what was profiled: "cuda" (kernels on the GPU), "cpu"
	// (no GPU: the loop's ops), or "" before the recording started.
	Device string `json:"device,omitempty"`
	// Steps is the steps recorded (asked for, until done): 1 to 50.
	Steps int `json:"steps" check:"0,50"`
	// StepSeconds is the wall time per step while recording;
	// BeforeStepSeconds over the steps just before it.
	StepSeconds       *float64 `json:"step_seconds,omitempty"`
	BeforeStepSeconds *float64 `json:"before_step_seconds,omitempty"`
	// CostSeconds is what the recording cost the loop: its steps' extra
	// wall time over the steps before, and the profiler's start, stop and
	// summary (the only time the hook's profile costs anything).
	CostSeconds *float64 `json:"cost_seconds,omitempty"`
	// CostCPUSeconds is what it cost in CPU: the training process's CPU
	// per step while recording beyond the steps before (every thread:
	// the profiler's callbacks and its own), times the steps, and the
	// start, stop and summary. The hook counts it in its own CPU (part
	// gpu_profile).
	CostCPUSeconds *float64 `json:"cost_cpu_seconds,omitempty"`
	// BusySecondsPerStep is the time per step the GPU worked (the union
	// of its kernels, copies and sets; on a CPU the ops' self time) and
	// IdleSecondsPerStep the time it waited within the recording (GPU
	// only).
	BusySecondsPerStep *float64 `json:"busy_seconds_per_step,omitempty"`
	IdleSecondsPerStep *float64 `json:"idle_seconds_per_step,omitempty"`
	// SyncSecondsPerStep is the part of IdleSecondsPerStep whose waits
	// began while the host waited for the GPU in a sync (.item(), a
	// blocking copy, torch.cuda.synchronize(): the queue drained, then
	// nothing was launched until the host went on); the rest began while
	// the host was busy with other work. GPU only; nil from a hook that
	// does not split them.
	SyncSecondsPerStep *float64 `json:"sync_seconds_per_step,omitempty"`
	// InputSecondsPerStep is, on a CPU, the time per step the loop spent
	// inside the DataLoader's next() (its fetch with num_workers=0, its
	// wait otherwise): the input's, left out of Parts.
	InputSecondsPerStep *float64 `json:"input_seconds_per_step,omitempty"`
	// Parts is the time per step by category and precision, the most
	// first.
	Parts []GPUTimePart `json:"parts,omitempty" check:"max=64"`
	// Idle is the GPU's waits by the host call that ran when each began,
	// the most first (at most MaxGPUIdleSites).
	Idle []GPUIdleGap `json:"idle,omitempty" check:"max=8"`
}

// GPUTimePart is the time per step of one category of work in one
// precision.
type GPUTimePart struct {
	// Category is one of GPUTimeCategories.
	Category string `json:"category"`
	// Precision is one of GPUPrecisions for matmul and conv; "" where the
	// profiler did not say (and for the other categories).
	Precision      string  `json:"precision,omitempty"`
	SecondsPerStep float64 `json:"seconds_per_step"`
}

// GPUIdleGap is the GPU's wait per step after one host call.
type GPUIdleGap struct {
	// After is the host call that ran when the waits began: its op and the
	// job's file:line ("aten::item train.py:87"), "other" for the rest;
	// printable, at most MaxGPUIdleAfter bytes.
	After          string  `json:"after"`
	SecondsPerStep float64 `json:"seconds_per_step"`
}

// what names what the recording measures: the GPU's time, the CPU's
// (Device "cpu"), or the step's before the hook said which (a recording
// refused before it began: "GPU time" on a CPU job was wrong).
func (g *GPUProfile) what() string {
	switch g.Device {
	case "cpu":
		return "CPU time per step (no GPU)"
	case "":
		return "time per step (--gpu-profile)"
	}
	return "GPU time per step"
}

// Unfinished is the line for a recording the job's end cut short in state
// (waiting or recording): nothing of it was measured.
func (g *GPUProfile) Unfinished(state string) string {
	if state == GPUProfileWaiting {
		return fmt.Sprintf("%s: not recorded: the job ended before the recording started (under gpuwatch run, at the loop's 10th batch; %s asked)", g.what(), Plural(g.Steps, "step"))
	}
	return fmt.Sprintf("%s: not recorded: the job ended while %s (%s asked)", g.what(), state, Plural(g.Steps, "step"))
}

// The recording's states, as the hook names them.
const (
	GPUProfileWaiting   = "waiting"
	GPUProfileRecording = "recording"
	GPUProfileDone      = "done"
	GPUProfileRefused   = "refused"
)

// Bounds on the hook's profile as a frame holds it: the hook's
// (_gpuprofile.MAX_STEPS, MAX_IDLE_SITES, MAX_LABEL).
const (
	MaxGPUProfileSteps = 50
	MaxGPUIdleSites    = 8
	MaxGPUIdleAfter    = 200
)

// GPUTimeCategories are the categories of the GPU's work, as the hook
// names them.
var GPUTimeCategories = []string{"matmul", "conv", "elementwise", "normalization", "reduction", "copy", "communication", "other"}

// GPUPrecisions are the precisions of matmul and conv, as the hook names
// them.
var GPUPrecisions = []string{"fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8"}

// Done says the recording is over and measured something.
func (g *GPUProfile) Done() bool {
	return g != nil && g.State == GPUProfileDone && len(g.Parts) > 0
}

// whole is what a share is of: on a GPU (the only device with idle
// time) its busy and idle time per step (the step as the GPU saw it), the
// idle as the job has it without the recording (idle), else the wall
// step.
func (g *GPUProfile) whole() float64 {
	if idle, ok := g.idle(); ok && g.BusySecondsPerStep != nil {
		if w := *g.BusySecondsPerStep + idle; w > 0 {
			return w
		}
	}
	if g.StepSeconds != nil {
		return *g.StepSeconds
	}
	return 0
}

// Share is the category's share of the step's measured time (0–1): on a
// GPU of its busy and idle time, on a CPU of the wall step. precision ""
// sums every precision. The GPU's waits: category "idle" is all of them,
// "sync" those that began in a host sync, "host" those that began while
// the host was busy launching or elsewhere, each without the recording's
// own (waits): "sync" and "host" add up to "idle". A bound takes
// BoundShare. ok is false when the recording is not done or the category
// was not read.
func (g *GPUProfile) Share(category, precision string) (float64, bool) {
	if !g.Done() {
		return 0, false
	}
	w := g.whole()
	if w <= 0 {
		return 0, false
	}
	switch category {
	case "idle", "host", "sync":
		v, ok := g.waits(category)
		return min(1, v/w), ok
	}
	sum, found := 0.0, false
	for _, p := range g.Parts {
		if p.Category == category && (precision == "" || p.Precision == precision) {
			sum += p.SecondsPerStep
			found = true
		}
	}
	if !found {
		return 0, false
	}
	return min(1, sum/w), true
}

// idle is the GPU's waits per step as the job has them without the
// recording (waits). ok is false where not read (a CPU's profile).
func (g *GPUProfile) idle() (float64, bool) {
	return g.waits("idle")
}

// recordingIdle is the GPU's idle per step that the recording itself
// added. The profiler slows the host (its callbacks on every op), and
// where the host's launches pace the step the GPU waits on the recording
// too: a ResNet-50 in bf16 on an H200 idled 22.1 ms a step in the 50.7 ms
// steps recorded, against 27.5 ms steps just before, 27.9 ms of kernels a
// step. It is the idle recorded less the idle the steps just before had
// (their time less the kernels', none where they read shorter: noise),
// and where the host's recorded steps were not shorter than the kernels
// (a host that runs ahead of a GPU-bound step queues its launches, and
// its steps then say nothing of the GPU's), at most what the recorded
// steps took beyond those before. 0 where the steps before were not read.
func (g *GPUProfile) recordingIdle() float64 {
	if g.IdleSecondsPerStep == nil || g.StepSeconds == nil || g.BeforeStepSeconds == nil || g.BusySecondsPerStep == nil || !(*g.BeforeStepSeconds > 0) {
		return 0
	}
	before, busy, step := *g.BeforeStepSeconds, *g.BusySecondsPerStep, *g.StepSeconds
	extra := *g.IdleSecondsPerStep - max(0, before-busy)
	if step >= busy {
		extra = min(extra, step-before)
	}
	return max(0, extra)
}

// waits is the GPU's waits per step of one kind (Share's "idle", "sync"
// or "host") as the job has them without the recording: what the
// recording added (recordingIdle) comes out of the host's waits first —
// it slows the host's work between launches — and what is left of it out
// of the syncs' (the gap after a sync lasts until the slowed host
// launches again). ok false where not read.
func (g *GPUProfile) waits(kind string) (float64, bool) {
	if g.IdleSecondsPerStep == nil {
		return 0, false
	}
	recorded, extra := *g.IdleSecondsPerStep, g.recordingIdle()
	switch {
	case g.SyncSecondsPerStep != nil:
	case kind == "idle":
		return recorded - extra, true
	default:
		return 0, false // a hook that does not split the waits
	}
	sync, host := g.recordedWaits()
	host, extra = max(0, host-extra), max(0, extra-host)
	sync = max(0, sync-extra)
	switch kind {
	case "idle":
		return sync + host, true
	case "sync":
		return sync, true
	}
	return host, true
}

// recordedWaits splits the idle recorded into the syncs' and the host's.
func (g *GPUProfile) recordedWaits() (sync, host float64) {
	recorded := *g.IdleSecondsPerStep
	sync = min(*g.SyncSecondsPerStep, recorded)
	return sync, recorded - sync
}

// syncBoundShare is the syncs' share for host_sync's bound: their waits as
// recorded, the recording's slowdown in them included, over the step with
// them so — larger than the job's own, never smaller, so a bound from it
// stays a bound.
func (g *GPUProfile) syncBoundShare(whole float64) (float64, bool) {
	eff, ok := g.waits("sync")
	if !ok {
		return 0, false
	}
	rec, _ := g.recordedWaits()
	if w := whole - eff + rec; w > 0 {
		return min(1, rec/w), true
	}
	return 0, false
}

// BoundShare is Share for a bound on what removing the category gains: the
// most of the step it may be. For the GPU's waits after syncs
// (syncBoundShare) and while the host works (hostBoundShare), where the
// recording's own idle fell is not measured: Share's split is the one
// that takes it from the host's waits first, the smallest host share the
// figures allow, which would bound a fix of the host's side too low.
func (g *GPUProfile) BoundShare(category, precision string) (float64, bool) {
	if category != "sync" && category != "host" {
		return g.Share(category, precision)
	}
	if !g.Done() || !(g.whole() > 0) {
		return 0, false
	}
	if category == "sync" {
		return g.syncBoundShare(g.whole())
	}
	return g.hostBoundShare(g.whole())
}

// hostBoundShare is the host's waits' share for launch_bound's bound: the
// recorded host waits, at most the job's whole idle (without the
// recording's own), over the job's step.
func (g *GPUProfile) hostBoundShare(whole float64) (float64, bool) {
	idle, ok := g.waits("idle")
	if !ok || g.SyncSecondsPerStep == nil {
		return 0, false
	}
	_, rec := g.recordedWaits()
	return min(1, min(rec, idle)/whole), true
}

// SpeedupBound is Amdahl's bound on the whole step's speed-up when the
// category's work (in precision; "" every precision) runs factor times
// faster: 1 / ((1 − s) + s / factor), s its Share. ok is false where
// Share is, or factor is not above 1.
func (g *GPUProfile) SpeedupBound(category, precision string, factor float64) (float64, bool) {
	s, ok := g.BoundShare(category, precision)
	if !ok || !(factor > 1) {
		return 0, false
	}
	return 1 / ((1 - s) + s/factor), true
}

// categoryWord is how a category reads in a line.
func categoryWord(c string) string {
	if c == "copy" {
		return "copies"
	}
	return c
}

// Summary is the profile in one line for views and reports: "GPU time
// per step (5 steps, profiled): matmul bf16 61 %, conv 12 %, elementwise
// 9 %, copies 3 %, idle 15 % (after aten::item train.py:87); recording
// cost 0.4s". On a CPU it says the time is the CPU's. A recording not
// done says its state (refused: why); "" for nil.
func (g *GPUProfile) Summary() string {
	if g == nil {
		return ""
	}
	what := g.what()
	switch g.State {
	case GPUProfileWaiting, GPUProfileRecording:
		return fmt.Sprintf("%s: %s (%d steps)", what, g.State, g.Steps)
	case GPUProfileRefused:
		return what + ": not recorded: " + Printable(g.Reason)
	}
	if !g.Done() {
		return what + ": nothing recorded"
	}
	if !(g.whole() > 0) {
		return fmt.Sprintf("%s (%d steps, profiled): no time measured", what, g.Steps)
	}
	type item struct {
		name  string
		share float64
	}
	var items []item
	for _, p := range g.Parts {
		s, _ := g.Share(p.Category, p.Precision)
		if p.Precision == "" {
			// "" is a precision of its own here: unknown (or none).
			s = min(1, p.SecondsPerStep/g.whole())
		}
		items = append(items, item{strings.TrimSpace(categoryWord(p.Category) + " " + p.Precision), s})
	}
	slices.SortStableFunc(items, func(a, b item) int { return cmp.Compare(b.share, a.share) })
	var parts []string
	for _, it := range items {
		if it.share < 0.01 || len(parts) >= 6 {
			continue
		}
		parts = append(parts, it.name+" "+pct(it.share))
	}
	if s, ok := g.Share("idle", ""); ok && s >= 0.01 {
		idle := "idle " + pct(s)
		sync, split := g.Share("sync", "")
		switch {
		case split && len(g.Idle) > 0:
			idle += " (" + pct(sync) + " after syncs; most after " + Printable(g.Idle[0].After) + ")"
		case split:
			idle += " (" + pct(sync) + " after syncs)"
		case len(g.Idle) > 0:
			idle += " (after " + Printable(g.Idle[0].After) + ")"
		}
		parts = append(parts, idle)
	}
	if extra := g.recordingIdle(); extra > 0 && g.BeforeStepSeconds != nil && extra >= 0.01*g.whole() {
		parts = append(parts, "left out: the GPU's "+FormatDuration(extra)+" more idle a step while recording (the recording's own: the steps before it took "+FormatDuration(*g.BeforeStepSeconds)+")")
	}
	if rest, ok := g.outsideOps(); ok && rest >= 0.01 {
		parts = append(parts, "outside torch's ops "+pct(rest)+" (Python, I/O, sleeps: no op to break down)")
	}
	out := fmt.Sprintf("%s (%d steps, profiled): %s", what, g.Steps, strings.Join(parts, ", "))
	if g.InputSecondsPerStep != nil && g.StepSeconds != nil && *g.StepSeconds > 0 && *g.InputSecondsPerStep/(*g.StepSeconds) >= 0.01 {
		out += "; the DataLoader's next() " + pct(min(1, *g.InputSecondsPerStep/(*g.StepSeconds))) + " (the input's, not counted)"
	}
	if c := g.CostWords(); c != "" {
		out += "; recording cost " + c
	}
	if g.Reason != "" { // fewer steps than asked, and why
		out += "; " + Printable(g.Reason)
	}
	return out
}

// outsideOps is, on a CPU, the share of the wall step in no torch op of
// the loop's thread (nor in the DataLoader's next()): its Python, its
// I/O, its sleeps, which the profile's ops do not break down. false on a
// GPU (its idle time says it) or where not read.
func (g *GPUProfile) outsideOps() (float64, bool) {
	if g.Device != "cpu" || g.BusySecondsPerStep == nil || g.StepSeconds == nil || !(*g.StepSeconds > 0) {
		return 0, false
	}
	in := 0.0
	if g.InputSecondsPerStep != nil {
		in = *g.InputSecondsPerStep
	}
	return min(1, max(0, (*g.StepSeconds-*g.BusySecondsPerStep-in) / *g.StepSeconds)), true
}

// CostWords is what the recording cost in a few words, "125 ms (310 ms
// of CPU)"; "" where its cost was not read.
func (g *GPUProfile) CostWords() string {
	if g == nil || g.CostSeconds == nil {
		return ""
	}
	out := FormatDuration(*g.CostSeconds)
	if g.CostCPUSeconds != nil {
		out += " (" + FormatDuration(*g.CostCPUSeconds) + " of CPU)"
	}
	return out
}

// pct writes a share as a whole percentage ("61 %").
func pct(s float64) string {
	return strconv.FormatFloat(100*s, 'f', 0, 64) + " %"
}

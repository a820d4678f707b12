package diagnose

import "fmt"

// Idle: nothing runs on the accelerator or the loader. See docs/diagnosis.md, "Verdicts".
const Idle Kind = 7

func init() {
	register(Situation{
		Kind:        Idle,
		ID:          "idle",
		Title:       "Idle: nothing is running",
		Tone:        ToneNeutral,
		NoRecording: "no recording yet: the tests build idle windows from frames (classify_test.go)",
		rules: []rule{
			{name: "host-only", sees: "no accelerator signal, and nothing on the host is saturated", variant: variantHostOnly, holds: idleHostOnlyRule},
			{name: "stopped", sees: "the accelerator does nothing, or the loader hands out no batches", holds: idleRule},
		},
	})
}

// idleRule: the accelerator does nothing, or the loader hands out no
// batches.
func idleRule(f *facts) (decision, bool) {
	w, th, accel := f.w, f.th, f.accel
	// Stopped: no batch in the whole window. A loader whose short epochs
	// each restart their workers hands out no batch in most frames, and
	// all of them in one: its median is 0, its mean is not, and its loop
	// waits rather than idles.
	loaderStopped := w.haveLoader && w.batchesPerSec.ok && w.batchesPerSec.v == 0 &&
		!(w.meanBatchesPerSec.ok && w.meanBatchesPerSec.v > 0)
	// A loop inside a step of many seconds hands out no batch either: with
	// no accelerator to read, the step under way says it works. (With a
	// real one, its idle engine decides.)
	stepping := w.stepping.ok && w.stepping.v > 0
	// A sampled loop whose wait could not be split says nothing of a
	// loader at work: with the GPU idle and nothing saturated, it is idle.
	noLoader := !w.haveLoader || (w.sampled != nil && !w.waitShare.ok)
	if !(accel.ok && accel.v < th.IdlePct && (noLoader || loaderStopped)) && !(loaderStopped && !f.real && !stepping) {
		return decision{}, false
	}
	var d decision
	if accel.ok {
		d.evidence = append(d.evidence, evidence("accel.busy_pct", accel.v, "<", th.IdlePct, "%",
			fmt.Sprintf("%s is %.0f %% busy", f.accelName(), accel.v)))
	}
	if loaderStopped {
		d.evidence = append(d.evidence, evidence("loader.batches_per_sec", 0, "<=", 0, "/s", "the loader hands out no batches"))
	}
	return d, true
}

// idleHostOnlyRule: no accelerator signal and no other host-only rule
// holds; it always holds, last of its phase, with how busy the host is.
func idleHostOnlyRule(f *facts) (decision, bool) {
	var d decision
	if w := f.w; w.cpuBusy.ok {
		d.evidence = append(d.evidence, evidence("cpu.busy_pct", w.cpuBusy.v, "<", f.th.CPUSaturatedPct, "%",
			fmt.Sprintf("no accelerator signal; the host is %.0f %% busy with nothing saturated", w.cpuBusy.v)))
	}
	return d, true
}

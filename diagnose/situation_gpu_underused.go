package diagnose

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuwatch/gpuwatch/sample"
)

// GPUUnderused: the input keeps up, but the GPU's SMs mostly idle: it
// reads busy while GPM says they idle, or it runs a kernel under half the
// time. See docs/diagnosis.md, "Verdicts".
const GPUUnderused Kind = 8

func init() {
	register(Situation{
		Kind:        GPUUnderused,
		ID:          "gpu_underused",
		Title:       "GPU underused: its SMs mostly idle",
		Tone:        ToneWarn,
		Advice:      underusedAdvice,
		Practice:    underusedPractice,
		NoRecording: "needs a Hopper GPU with GPM to record; the tests use go-nvml mocks (probes) and frames (classify_test.go)",
		rules: []rule{
			{name: "sm-idle", sees: "the GPU reads busy, but GPM says its SMs mostly idle", holds: underusedRule},
			{name: "host-idle", sees: "the loop does not wait for input, yet the GPU runs a kernel under half the time", variant: underusedHostIdle, holds: underusedIdleRule},
			{name: "wait-unread", sees: "the GPU runs a kernel under half the time, and the loop's wait for input is not read", variant: underusedWaitUnread, holds: underusedUnreadRule},
		},
	})
}

// underusedPractice: what practice teaches where the GPU is the limit
// but little of it is used, said where no cause beneath the kind is
// named (Situation.Practice): batch_headroom, launch_bound and host_sync
// say which, with their evidence. underusedLaunch is never said where
// the hook read CUDA graphs replaying.
var underusedPractice = []string{
	"give each kernel more work: a larger batch (or gradient accumulation to keep the step's size)",
	underusedLaunch,
	underusedSyncs,
}

const underusedSyncs = "sync with the host less: every .item(), .cpu() or print of a tensor in the loop stalls the GPU until it drains"

// uncountedSyncs is what is left to say of syncs where the hook counted
// them and found none worth naming: the calls it does not wrap. The
// calls it does are sample.HostSyncCalls, in the job's words.
var uncountedSyncs = "the hook counts " + hostSyncList() + "; a sync it does not count (.to(\"cpu\"), a boolean mask, nonzero(), an Event's synchronize) shows in gpuwatch run --gpu-profile as the GPU idle after it"

// hostSyncList is sample.HostSyncCalls as the job's code reads them:
// ".item(), .cpu(), … and torch.cuda.synchronize()".
func hostSyncList() string {
	words := make([]string, len(sample.HostSyncCalls))
	for i, c := range sample.HostSyncCalls {
		words[i] = sample.HostSyncWords(c)
	}
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

const underusedTimeTheWait = "time the loop's wait for input: under gpuwatch run -- python train.py the hook reads it, and says whether the input or the step leaves the GPU idle"

// underusedHookOut is underusedTimeTheWait for a command gpuwatch run
// started in which no process loaded the hook.
const underusedHookOut = "time the loop's wait for input: no process of the command loaded gpuwatch run's hook (a program that is not Python, or python -I or -S keep it out); run the training script itself, gpuwatch run -- python train.py"

const underusedLaunch = "launch fewer kernels: CUDA graphs or torch.compile (mode=\"reduce-overhead\") fuse them and drop the launch gaps"

func underusedAdvice(in adviceIn) ([]string, bool) {
	a := slices.Clone(underusedPractice)
	if w := in.w; in.d.variant == underusedWaitUnread && (!w.haveLoader || w.sampled != nil) && !w.underRun {
		// Which of the input and the step idles the GPU is not read: the
		// hook times the wait.
		how := underusedTimeTheWait
		if w.runNoHook {
			how = underusedHookOut
		}
		a = append([]string{how}, a...)
	}
	// What the step's GPU time goes to, where the hook recorded it (by
	// itself under --once when the GPU is the limit), and MFU: the
	// evidence says the SMs, this says where the time goes.
	if words := strings.TrimPrefix(mfuWords(&in.w.gpu)+profileWords(&in.w.gpu), "; "); words != "" {
		a = append(a, words)
	}
	// Never what the hook read the job already does.
	if s := in.w.gpu.settings; s != nil && s.CUDAGraphs != nil && *s.CUDAGraphs {
		a = slices.DeleteFunc(a, func(l string) bool { return l == underusedLaunch })
	}
	// Where the hook counted syncs, host_sync names those it counts, with
	// their lines, where there are enough to matter: only the syncs it
	// does not count are left to say.
	if in.w.gpu.syncsCounted {
		a = slices.DeleteFunc(a, func(l string) bool { return l == underusedSyncs })
		a = append(a, uncountedSyncs)
	}
	return a, false
}

// underusedRule: no input wait, the GPU reads busy, but GPM says its
// SMs mostly idle — utilization only says a kernel was running.
func underusedRule(f *facts) (decision, bool) {
	w, th, accel := f.w, f.th, f.accel
	if !f.real || !w.gpuUtil.ok || !accel.ok || accel.v < th.AccelBusyPct || !w.smActivity.ok || w.smActivity.v >= th.SMActivityLowPct {
		return decision{}, false
	}
	return decision{evidence: []Evidence{evidence("gpu.sm_activity_pct", w.smActivity.v, "<", th.SMActivityLowPct, "%",
		fmt.Sprintf("utilization %.0f %% but SM activity %.0f %% (GPM): a kernel is always running, yet the SMs are mostly idle — small or launch-bound kernels, or waits on host syncs", accel.v, w.smActivity.v))}}, true
}

// underusedHostIdle is the variant of a GPU that runs a kernel under
// half the time while the input keeps up: never critical (a GPU under a
// quarter busy is critical where input starves it; here the job may be
// evaluating or checkpointing, and a batch-end epilog should not call that
// a bottleneck's emergency).
const underusedHostIdle variant = "host-idle"

// underusedIdleRule: the input keeps up (the loop waits under
// WaitShareModerate for it), yet every judged GPU runs a kernel under
// GPULowPct of the time (the busiest's, not the mean: one busy GPU beside
// seven idle ones on a node whose job's GPUs were not told is not idle)
// and, where GPM reads, the SMs are under SMActivityLowPct active: the
// step's own host side — its launches, its syncs, its Python between
// kernels — leaves the GPU idle. Not healthy: the accelerator is not the
// busy part (on an H200 a small MLP at 411 steps/s ran a kernel 12 % of
// the time, its SMs 1 % active, and read "healthy"). Shown, it holds while
// the GPU idles CauseLeaveRatio of the share it entered at (busy under
// 62.5 %) and its SMs idle that share of theirs (active under 47.5 %),
// so a job near either limit does not flip between the two.
func underusedIdleRule(f *facts) (decision, bool) {
	w, th := f.w, f.th
	if !w.waitShare.ok || w.waitShare.v >= th.WaitShareModerate {
		return decision{}, false
	}
	who, busiest, limit, sm, ok := idleGPU(f)
	if !ok {
		return decision{}, false
	}
	return decision{evidence: []Evidence{
		evidence("accel.busy_pct", busiest, "<", limit, "%",
			fmt.Sprintf("%s runs a kernel %.0f %% of the time%s while the loop waits %.0f %% of its time for input: the step's own host side (launches, syncs, Python between kernels) leaves it idle", who, busiest, sm, 100*w.waitShare.v)),
	}}, true
}

// underusedWaitUnread is the variant of a GPU that runs a kernel under
// half the time where the loop's wait for input is not read: a loader
// that does not say it, a sampled loop whose wait could not be split, or
// no loader seen. Not healthy, which a review read of an H200 0 % busy
// ("healthy: the GPU is 0 % busy"); not starved either: which of the
// input and the step leaves it idle is not known. A warning, as
// host-idle.
const underusedWaitUnread variant = "wait-unread"

// underusedUnreadRule: the GPU idles as underusedIdleRule reads it, and
// the loop's wait for input is not read.
func underusedUnreadRule(f *facts) (decision, bool) {
	w := f.w
	if w.waitShare.ok {
		return decision{}, false
	}
	who, busiest, limit, sm, ok := idleGPU(f)
	if !ok {
		return decision{}, false
	}
	if w.haveLoader && w.sampled == nil && w.batchesPerSec.ok && w.batchesPerSec.v == 0 {
		// The loader handed out no batch: the GPU's work is outside the
		// loop's batches (an evaluation, a checkpoint) or stalled.
		return decision{evidence: []Evidence{
			evidence("accel.busy_pct", busiest, "<", limit, "%",
				fmt.Sprintf("%s runs a kernel %.0f %% of the time%s while the loader hands out no batch: its work is outside the loop's batches (an evaluation, a checkpoint) or the loop is stalled", who, busiest, sm)),
		}}, true
	}
	why := "no loader seen"
	switch {
	case w.runNoHook:
		why = "no process of gpuwatch run's command loaded its hook"
	case w.sampled != nil && w.underRun:
		why = "the loop iterates no DataLoader gpuwatch run's hook times, and its sampled wait could not be told from its step"
	case w.sampled != nil:
		why = "the sampled loop's wait could not be told from its step"
	case w.haveLoader:
		why = "its loader does not say"
	}
	return decision{evidence: []Evidence{
		evidence("accel.busy_pct", busiest, "<", limit, "%",
			fmt.Sprintf("%s runs a kernel %.0f %% of the time%s, and whether the training loop waits for input is not read (%s): the input or the step's own host side leaves it idle", who, busiest, sm, why)),
	}}, true
}

// idleGPU reads the judged GPUs as idle for gpu_underused: the busiest
// runs a kernel under GPULowPct of the time and, where GPM reads, its SMs
// are under SMActivityLowPct active; once shown, under CauseLeaveRatio of
// the idle shares it entered at. who is the GPU in words, limit the
// utilization's, sm GPM's words (empty without GPM).
func idleGPU(f *facts) (who string, busiest, limit float64, sm string, ok bool) {
	w, th, accel := f.w, f.th, f.accel
	if !f.real || !w.gpuUtil.ok || !accel.ok {
		return "", 0, 0, "", false
	}
	limit = th.GPULowPct
	if w.shown == GPUUnderused {
		limit = 100 - th.CauseLeaveRatio*(100-th.GPULowPct)
	}
	busiest = accel.v
	if w.gpuUtilMax.ok {
		busiest = max(busiest, w.gpuUtilMax.v)
	}
	if busiest >= limit {
		return "", 0, 0, "", false
	}
	if w.smActivity.ok {
		smLimit := th.SMActivityLowPct
		if w.shown == GPUUnderused { // held as the utilization is
			smLimit = 100 - th.CauseLeaveRatio*(100-th.SMActivityLowPct)
		}
		if w.smActivity.v >= smLimit {
			return "", 0, 0, "", false
		}
		sm = fmt.Sprintf(", its SMs %.0f %% active (GPM)", w.smActivity.v)
	}
	who = "the GPU"
	if busiest > accel.v {
		who = "the busiest GPU"
	}
	return who, busiest, limit, sm, true
}

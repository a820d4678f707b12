package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/sample"
)

// onceCap is how long --once waits for the verdict to settle when no
// duration is given.
const onceCap = 60 * time.Second

// SettleFrames and SettleTime are the settle rule, the one home of it:
// the shown verdict must keep its kind, past warming up, this many frames
// in a row and this long, to count as settled — long enough for a
// loader's start-up (workers starting, the first batches) to pass.
// --once, run --once and tune settle by it; --once's help and the PyTorch
// tests read it from here.
const (
	SettleFrames = 5
	SettleTime   = 5 * time.Second
)

// ProfileWait is how much longer than SettleTime a settle that expects a
// CPU profile waits for the first one: it is taken at the loop's first
// batch, lasts 5 s, and the workers' profiles are merged into it — about
// when the verdict would settle. The causes read from the workers' profile
// (decode, augment, tokenize) are only in a verdict that has it.
const ProfileWait = 10 * time.Second

// GPUProfileWait is how much longer than SettleTime a settle holds for a
// recording of the step's GPU time (asked by --once, or by run
// --gpu-profile): it starts some batches after the ask and records a few
// steps, so a job of slow steps may not finish it; past this the verdict
// settles without it, as it would have before.
const GPUProfileWait = 30 * time.Second

// SettleRule is the settle rule in words: "5 frames and 5 s".
func SettleRule() string {
	return fmt.Sprintf("%d frames and %.0f s", SettleFrames, SettleTime.Seconds())
}

// ErrBottleneck is what a --once session returns when its verdict is a
// problem to fix (exit status 3): a Slurm epilogue or a CI step can act on
// it.
var ErrBottleneck = errors.New("a bottleneck was found")

// ErrUnsettled is what a --once session returns when no verdict held long
// enough to count (exit status 4): a gate must not pass on a guess. It
// wraps the reason, which the summary also prints.
var ErrUnsettled = errors.New("no verdict settled")

// ErrJobEnded comes with ErrUnsettled where gpuwatch run's command ended
// by itself before a verdict settled: run exits with its status.
var ErrJobEnded = errors.New("the job ended first")

// Settle is the --once observer, and tune's: it watches the verdicts and
// calls stop once one has held by the settle rule (SettleFrames,
// SettleTime). NewSettle makes one.
type Settle struct {
	stop    func()
	first   time.Time
	last    *sample.Frame
	verdict diagnose.Verdict
	streak  int
	since   time.Time // the streak's first frame
	frames  int
	settled bool
	changes int // times the verdict's kind changed, past warming up
	need    int // frames the diagnosis needs before it says anything
	// profiles: a CPU profile is expected (loaders attached, profiles on);
	// profiled: a frame has carried one (or why it was skipped);
	// heldUnprofiled: the last frame held by the settle rule, waiting only
	// for the first profile — settled all the same if the session ends.
	profiles, profiled, heldUnprofiled bool
	replay                             sample.ReplaySkip // the replay's frames and the one after hold the settle
	// measuringWhat is what held the settle at the last frame (the
	// ceiling measured, the step's GPU time recorded), "" where nothing
	// did: a session that ends then says it, not the settle rule.
	measuringWhat string
	// gpuProfile: --once asked the hook for the step's GPU time by itself
	// (the GPU the limit): nothing settles while it records.
	gpuProfile *GPUProfileWhenBound
	// jobEnded says how gpuwatch run's command ended, where it ended
	// before a verdict settled ("exited with status 1"): the session
	// ends with it, before any frame reads the job gone.
	jobEnded string
	// replayed: a recording's stretch is judged (ReplayOnce), whose
	// length is --last's, not --duration's.
	replayed bool
	// exited is the watched process as the first frame that saw it gone
	// found it.
	exited *sample.Target
	// loader is the newest frame's loader that had one: the job's reading
	// (settings, MFU, a GPU profile asked for) stays when the frames after
	// the job ended have none.
	loader *sample.Loader
	// batches is the most batches a frame's loader had handed out.
	batches uint64
}

// NewSettle is a Settle that calls stop once a verdict has settled, and
// judges nothing in the first need frames (Thresholds.MinFrames: the
// diagnosis says nothing before them).
func NewSettle(stop func(), need int) *Settle { return &Settle{stop: stop, need: need} }

// Frames is how many frames it has seen.
func (s *Settle) Frames() int { return s.frames }

// Settled says whether a verdict has held by the settle rule.
func (s *Settle) Settled() bool { return s.settled }

// Verdict is the last frame's verdict.
func (s *Settle) Verdict() diagnose.Verdict { return s.verdict }

// Seconds is the time from the first frame seen to the last, in seconds;
// 0 before any.
func (s *Settle) Seconds() float64 {
	if s.last == nil {
		return 0
	}
	return s.last.Time.Sub(s.first).Seconds()
}

// Frame implements Observer.
func (s *Settle) Frame(f *sample.Frame, v diagnose.Verdict) error {
	if s.frames == 0 {
		s.first = f.Time
	}
	s.frames++
	if l := f.Loader; l != nil && (l.Settings != nil || l.GPUProfile != nil || s.loader == nil || s.loader.Settings == nil && s.loader.GPUProfile == nil) {
		// A rank gone (the job's end) is a loader of no reading: the one
		// before it stays the job's (a recording cut short had no line).
		s.loader = l
	}
	if l := f.Loader; l != nil {
		s.batches = max(s.batches, l.Batches)
	}
	if t := f.Target; t != nil && t.ExitedAt != nil {
		// The watched process is gone: the frames after say nothing of it
		// (the diagnosis reads them idle, diagnose.Diagnoser.Observe).
		// The verdict and its streak stay as they were at the exit — a
		// recording that ends with the job's exit (record --exit-with-job,
		// judged by replay --once) is judged on its job — and a live
		// session has nothing more to wait for.
		if s.exited == nil {
			s.exited = t
		}
		if s.last == nil { // gone before any frame of it: this one says so
			s.last, s.verdict = f, v
		}
		if !s.settled {
			s.stop()
		}
		return nil
	}
	if t := f.Target; t != nil && t.Starting {
		// The job is still starting (imports, a model, compilation): its
		// threads are not its loop yet, and no verdict counts.
		s.streak, s.verdict, s.last = 0, v, f
		return nil
	}
	if f.BetweenEpochs() {
		// The loop is between epochs (validation, a checkpoint): the
		// diagnosis holds its verdict over the frame without judging it,
		// so it neither counts toward the verdict's holding nor breaks it
		// (a user's `run --once` settled on idle during a validation).
		s.last = f
		return nil
	}
	same := v.Kind != diagnose.WarmingUp && v.Kind == s.verdict.Kind
	if same && s.streak > 0 {
		s.streak++
	} else {
		// A streak starts here, also after the job's start: its time is
		// counted from this frame, not from one before the start.
		if !same && v.Kind != diagnose.WarmingUp && s.verdict.Kind != diagnose.WarmingUp && s.frames > 1 {
			s.changes++
		}
		s.streak, s.since = 1, f.Time
	}
	s.verdict, s.last = v, f
	s.profiled = s.profiled || f.PacingProfile() != nil // another rank's says nothing of the verdict's
	// A profile expected and not yet come: wait for it, at most
	// ProfileWait past the settle rule.
	awaitingProfile := s.profiles && !s.profiled && f.Time.Sub(s.since) < SettleTime+ProfileWait
	measuring := s.measuringAt(f)
	held := s.holds() && !measuring
	s.heldUnprofiled = held && awaitingProfile
	if held && !awaitingProfile && !s.settled {
		s.settled = true
		s.stop()
	}
	return nil
}

// measuringAt says a measurement holds the settle at frame f — the
// ceiling's, or a recording of the step's GPU time — and notes which
// (measuringWhat) and whether f is the ceiling's replay.
func (s *Settle) measuringAt(f *sample.Frame) bool {
	// While the hook measures the ceiling (run --ceiling) nothing settles:
	// the summary waits for its figure, or for why it was refused.
	// Nor does the frame in which the replay ended: the diagnosis leaves
	// it out (diagnose.Diagnoser.Observe), so its verdict is the one held
	// from before the replay, without the ceiling.
	measuring := false
	if c := f.Loader.CeilingOf(); c != nil {
		measuring = c.State != sample.CeilingDone && c.State != sample.CeilingRefused
	}
	measuring = s.replay.Skip(f.Loader.Replaying()) || measuring
	// A recording of the step's GPU time under way — asked by --once, or
	// armed by run --gpu-profile — holds the settle, at most
	// GPUProfileWait past the rule.
	gpuPending := s.gpuProfile != nil && s.gpuProfile.Pending(f) || GPUProfileUnderWay(f)
	gpuHolds := gpuPending && f.Time.Sub(s.since) < SettleTime+GPUProfileWait
	switch {
	case measuring:
		s.measuringWhat = "the ceiling was still being measured (run --ceiling)"
	case gpuHolds:
		s.measuringWhat = "the step's GPU time was still being recorded (--gpu-profile)"
	default:
		s.measuringWhat = ""
	}
	return measuring || gpuHolds
}

// holds is the settle rule, the one place it is applied (a live session's
// frames and ReplayOnce's end alike): the verdict of the last frame seen is
// past warming up and has kept its kind SettleFrames frames in a row and
// SettleTime long.
func (s *Settle) holds() bool {
	return s.verdict.Kind != diagnose.WarmingUp && s.streak >= SettleFrames && s.last.Time.Sub(s.since) >= SettleTime
}

// Note implements Observer.
func (s *Settle) Note(sample.Note) error { return nil }

// onceSummary is --once --json's one object.
type onceSummary struct {
	Type    string    `json:"type"` // "summary"
	Time    time.Time `json:"time"`
	Frames  int       `json:"frames"`
	Seconds float64   `json:"seconds"`
	Settled bool      `json:"settled"` // false: the cap came first
	// Unsettled says why no verdict settled ("" when one did).
	Unsettled string           `json:"unsettled,omitempty"`
	Verdict   diagnose.Verdict `json:"verdict"`
	// Job is what the hook read of the job in the last frame: a gate on
	// the GPU side reads it without the frames. Nil without the hook.
	Job *onceJob `json:"job,omitempty"`
	// Self is what gpuwatch itself cost, as its last frame read it: its
	// CPU seconds since it started and its resident memory (the frames'
	// self, docs/json.md). Nil where the frames carry none (a replay of a
	// recording from before they did).
	Self *sample.SelfCost `json:"self,omitempty"`
}

// onceJob is the last frame's reading of the job by the hook: its
// settings (and their line, "bf16 autocast · …"), the step's MFU with its
// method or why there is none, the hook's own cost per sample, and its
// recording of the GPU's time per step where it took one.
type onceJob struct {
	Settings           *sample.JobSettings `json:"settings,omitempty"`
	SettingsLine       string              `json:"settings_line,omitempty"`
	MFU                *sample.MFU         `json:"mfu,omitempty"`
	MFUWhy             string              `json:"mfu_why,omitempty"`
	HookCPUPerSampleUs *float64            `json:"hook_cpu_us_per_sample,omitempty"`
	HookCPUPerBatchUs  *float64            `json:"hook_cpu_us_per_batch,omitempty"` // where samples are not counted
	// GPUProfile is the hook's recording of the GPU's time per step
	// (--gpu-profile, or taken by itself when the GPU is the limit), and
	// GPUProfileLine the same in one line, as the dashboard shows it.
	GPUProfile     *sample.GPUProfile `json:"gpu_profile,omitempty"`
	GPUProfileLine string             `json:"gpu_profile_line,omitempty"`
}

// job is the newest reading of the job the frames carried (its loader's:
// the frames after the job ended carry none); nil where the hook read
// nothing.
func (s *Settle) job() *onceJob {
	l := s.loader
	if l == nil {
		return nil
	}
	j := onceJob{Settings: l.Settings, SettingsLine: l.Settings.Summary(), MFU: l.MFU, MFUWhy: l.MFUWhy,
		HookCPUPerSampleUs: l.HookCPUPerSampleUs, HookCPUPerBatchUs: l.HookCPUPerBatchUs,
		GPUProfile: l.GPUProfile, GPUProfileLine: l.GPUProfile.Summary()}
	if g := l.GPUProfile; g != nil && (s.exited != nil || s.jobEnded != "") && (g.State == sample.GPUProfileWaiting || g.State == sample.GPUProfileRecording) {
		// The job ended with the recording unfinished: its last word,
		// "recording", is no longer so (a review).
		j.GPUProfileLine = g.Unfinished(g.State)
	}
	if j.Settings == nil && j.MFU == nil && j.MFUWhy == "" && j.HookCPUPerSampleUs == nil && j.HookCPUPerBatchUs == nil && j.GPUProfile == nil {
		return nil
	}
	return &j
}

// summary prints the verdict the session ended on, and returns
// ErrBottleneck for a problem.
func (s *Settle) summary(w io.Writer, asJSON bool) error {
	if s.frames == 0 {
		return errors.New("no frame came before the end")
	}
	if s.heldUnprofiled {
		// The session ended (--duration) while the verdict held by the
		// rule and only the first profile was awaited: it settled.
		s.settled = true
	}
	v := s.verdict
	secs := s.last.Time.Sub(s.first).Seconds()
	var err error
	if asJSON {
		sum := onceSummary{Type: "summary", Time: s.last.Time, Frames: s.frames, Seconds: secs, Settled: s.settled, Verdict: v, Job: s.job(), Self: s.last.Self}
		if !s.settled {
			sum.Unsettled = s.why()
		}
		err = json.NewEncoder(w).Encode(sum)
	} else {
		var b strings.Builder
		state := "settled"
		if !s.settled {
			state = "NOT SETTLED: " + s.why() + "; the last verdict"
		}
		fmt.Fprintf(&b, "%s (%s, %.0f %% confident; %s after %s, %.0f s)\n", v.Kind, v.Severity, 100*v.Confidence, state, sample.Plural(s.frames, "frame"), secs)
		p := sample.Printable // names from outside reach a terminal
		for _, e := range v.Evidence {
			fmt.Fprintf(&b, "  ▸ %s\n", p(e.Text))
		}
		for _, f := range v.Secondary {
			fmt.Fprintf(&b, "  + %s: %s\n", f.Kind, p(f.Text))
		}
		for _, a := range v.Advice {
			fmt.Fprintf(&b, "  ⇒ %s\n", p(a))
		}
		for _, m := range v.Missing {
			fmt.Fprintf(&b, "  - not seen: %s\n", p(m))
		}
		if j := s.job(); j != nil && j.SettingsLine != "" {
			fmt.Fprintf(&b, "  job: %s\n", p(j.SettingsLine))
		}
		if j := s.job(); j != nil && j.MFU != nil {
			fmt.Fprintf(&b, "  MFU %s %% of %s's dense %s peak (%s)\n", sample.PercentWords(j.MFU.Ratio), p(j.MFU.GPU), j.MFU.Dtype, p(j.MFU.Method))
		} else if j != nil && j.MFUWhy != "" {
			fmt.Fprintf(&b, "  no MFU: %s\n", p(j.MFUWhy))
		}
		if j := s.job(); j != nil && j.GPUProfileLine != "" {
			fmt.Fprintf(&b, "  %s\n", p(j.GPUProfileLine))
		}
		_, err = io.WriteString(w, b.String())
	}
	if err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	switch {
	case !s.settled && s.jobEnded != "":
		return fmt.Errorf("%w (%w): %s", ErrUnsettled, ErrJobEnded, s.why())
	case !s.settled:
		return fmt.Errorf("%w: %s", ErrUnsettled, s.why())
	case v.Kind.Problem():
		return ErrBottleneck
	}
	return nil
}

// summaryAtEnd prints the verdict as summary does, settled only when it
// holds by the rule at the last frame: how a recording's stretch ends
// (ReplayOnce), not whether some verdict held earlier in it.
func (s *Settle) summaryAtEnd(w io.Writer, asJSON bool) error {
	s.settled = s.holds()
	return s.summary(w, asJSON)
}

// why says why no verdict settled.
func (s *Settle) why() string {
	if t := s.last.Target; s.jobEnded != "" && t != nil && t.Starting && s.batches > 0 && s.verdict.Kind == diagnose.WarmingUp {
		// The hook was read, its batches counted, and the job ended
		// before a verdict was judged: not "read no DataLoader batch" (a
		// review: a job that ended at its 60th batch, 2 s in).
		batches := fmt.Sprintf("%d batches", s.batches)
		if s.batches == 1 {
			batches = "1 batch"
		}
		return fmt.Sprintf("the job %s after %s, %s read from its loader: too soon for a verdict to hold (the loop's rates need a second reading of the hook, and a verdict a window of frames)",
			sample.Ended(s.jobEnded), sample.Plural(s.frames, "frame"), batches)
	}
	if t := s.last.Target; s.jobEnded != "" && t != nil && t.Starting && s.batches == 0 && t.HookServes {
		// Its hook served, so a DataLoader iterated: the job ended before
		// discovery read it (a user's review: a job whose worker raised
		// at its 486th batch, 2 s in, read "it iterated none").
		return fmt.Sprintf("the job %s after %s: its DataLoader iterated (its hook served), and the job ended before gpuwatch read it (discovery looks every 2 s): too soon for a verdict to hold",
			sample.Ended(s.jobEnded), sample.Plural(s.frames, "frame"))
	}
	if t := s.last.Target; s.jobEnded != "" && t != nil && t.Starting && s.batches == 0 {
		// Not too soon: a script that iterates no DataLoader gives no
		// verdict in its start-up grace, however long it runs. Nor is it
		// sure the script had none: one that ended within a discovery
		// pass of its first batch was not read either (a review).
		return fmt.Sprintf("gpuwatch read no DataLoader batch before the job %s, after %s: it iterated none, or ended before its hook was read (gpuwatch run's hook times the loop from a DataLoader's first batch; a loop without a DataLoader is not timed)",
			sample.Ended(s.jobEnded), sample.Plural(s.frames, "frame"))
	}
	if s.jobEnded != "" {
		return fmt.Sprintf("the job %s after %s: too soon for a verdict to hold", sample.Ended(s.jobEnded), sample.Plural(s.frames, "frame"))
	}
	if s.exited != nil {
		t := s.exited
		return fmt.Sprintf("pid %d exited at %s, after %s: too soon for a verdict to hold", t.PID, t.ExitedAt.Format("15:04:05"), sample.Plural(s.frames, "frame"))
	}
	longer, shorter := "a longer --duration", ", or a shorter --interval"
	if s.replayed {
		longer, shorter = "a longer recording, or a longer --last where one was given", ""
	}
	if t := s.last.Target; t != nil && t.Starting {
		return fmt.Sprintf("the job was still starting after %s: the hook is loaded, and gpuwatch does not read a DataLoader of it yet (%s)", sample.Plural(s.frames, "frame"), longer)
	}
	switch {
	case s.verdict.Kind == diagnose.WarmingUp && s.frames >= s.need && len(s.verdict.Evidence) > 0:
		// Frames enough: what the window still lacks is the verdict's to
		// say (a review: "11 frames came, the diagnosis needs 3").
		return fmt.Sprintf("still warming up after %s: %s (%s)", sample.Plural(s.frames, "frame"), s.verdict.Evidence[0].Text, longer)
	case s.verdict.Kind == diagnose.WarmingUp && s.frames >= s.need:
		return fmt.Sprintf("still warming up after %s: the frames did not read what a verdict needs (%s)", sample.Plural(s.frames, "frame"), longer)
	case s.verdict.Kind == diagnose.WarmingUp:
		return fmt.Sprintf("still warming up: %s came, the diagnosis needs %d (%s%s)", sample.Plural(s.frames, "frame"), s.need, longer, shorter)
	case s.last.BetweenEpochs():
		return fmt.Sprintf("the loop was between epochs when the session ended (validation, a checkpoint, or its last epoch done), where nothing is judged; the verdict held %s of its epochs, not %s (%s)",
			sample.Plural(s.streak, "frame"), SettleRule(), longer)
	case s.changes > 0:
		return fmt.Sprintf("the verdict changed %s before it could hold %s", sample.Plural(s.changes, "time"), SettleRule())
	case s.holds() && s.measuringWhat != "":
		// It held by the rule: what it waited for said (a review: "it
		// held 20 frames over 19.00 s, not 5 frames and 5 s").
		return fmt.Sprintf("the verdict held %s, but %s when the session ended (%s)", sample.Plural(s.streak, "frame"), s.measuringWhat, longer)
	}
	// The time held to the hundredth: 4.96 s is short of 5 s, and "5 s"
	// beside the rule read as held (a user's review).
	return fmt.Sprintf("it held %s over %.2f s, not %s (%s)", sample.Plural(s.streak, "frame"), s.last.Time.Sub(s.since).Seconds(), SettleRule(), longer)
}

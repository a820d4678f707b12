package diagnose

import (
	"fmt"

	"github.com/gpuwatch/gpuwatch/sample"
)

// Cause is what the job's own code does that costs its input pipeline the
// time, beneath the verdict's kind: the stage or the batch's content the
// window shows (the hand-over of large float32 batches, a float64 payload,
// padding, __getitem__, random reads, the loop's own handling of each
// batch), the evidence in the job's terms, the fix practice names, and the
// bound on what the fix can gain. No DataLoader knob makes these fixes;
// the verdict's kind stays what the host shows. docs/diagnosis.md,
// "Causes and their bounds".
type Cause struct {
	// ID is stable: handover, float64, padding, getitem, decode, augment,
	// convert, tokenize, random_reads, small_files, loop_take.
	ID       string `json:"id"`
	Evidence string `json:"evidence"`
	Fix      string `json:"fix"`
	// Stages are the stages the fix makes cheaper, as the hook names them.
	Stages []string `json:"stages,omitempty"`
	Bound  *Bound   `json:"bound,omitempty"`
}

// causesOf are the causes the window shows, strongest first; none without
// the stages or the payload the hook measures. Stage causes need a loop
// that waits; payload causes (float64, padding) are named whenever the
// batches show them, since they cost the step too.
func causesOf(frames []sample.Frame, w *window, d decision) []Cause {
	if d.kind == Idle || d.kind == WarmingUp {
		return nil
	}
	s := readStages(frames, w)
	s.th = w.th
	pay := lastPayload(frames)
	// Stage causes need a loop that waits on busy workers: a healthy loop
	// whose workers idle between batches has nothing to gain from them.
	waits := w.meanWaitShare.ok && w.meanWaitShare.v >= w.th.WaitShareModerate && s.workersBusy()
	var out []Cause
	if c, ok := float64Cause(&s, pay); ok {
		out = append(out, c)
	} else if c, ok := handoverCause(&s, pay, waits); ok {
		out = append(out, c)
	}
	payloadNamed := len(out) > 0
	if c, ok := paddingCause(&s, pay); ok {
		out = append(out, c)
	}
	if d.variant == ioMmap && s.ok {
		out = append(out, Cause{ID: "random_reads", Stages: []string{"getitem"},
			Evidence: fmt.Sprintf("__getitem__ takes %s of a worker's %s per batch, faulting a mapped file's pages in at random", ms(s.getitem), ms(s.worker())),
			Fix:      "read contiguous runs: sort or chunk the indices so each read covers neighbouring samples (a sampler over blocks), or read the file sequentially",
			Bound:    s.bound(stageCut{worker: s.getitem}, 4)})
	} else if c, ok := smallFilesCause(&s, w, waits); ok {
		out = append(out, c)
	} else if pcs := profileCausesOf(&s, w.profile, waits, payloadNamed); len(pcs) > 0 {
		// The workers' profile says which part of __getitem__: its causes
		// take the place of the whole __getitem__'s (causes_profile.go).
		out = append(out, pcs...)
	} else if c, ok := getitemCause(&s, w.profile, waits); ok {
		out = append(out, c)
	}
	if c, ok := loopTakeCause(&s, w); ok {
		out = append(out, c)
	}
	return out
}

func float64Cause(s *stageTimes, p *sample.BatchPayload) (Cause, bool) {
	if p == nil || p.Float64Share == nil || *p.Float64Share < s.th.Float64Share || p.BytesPerBatch < s.th.HandoverBytes/4 {
		return Cause{}, false
	}
	c := Cause{ID: "float64", Stages: []string{"collate", "handover", "take", "pin"},
		Evidence: fmt.Sprintf("batches of %s, %.0f %% float64", sample.FormatBytes(p.BytesPerBatch), 100**p.Float64Share),
		Fix:      "float32 at the source (numpy's default is float64: .astype(np.float32) when the data is built, dtype=torch.float32): half the bytes to collate, hand over, copy and pin"}
	if s.ok {
		// Every stage that touches the bytes does twice the work:
		// __getitem__'s arithmetic on them too.
		cut := moveCut(s, *p.Float64Share)
		cut.worker += *p.Float64Share * s.getitem
		c.Bound = s.bound(cut, 2)
		c.Stages = append([]string{"getitem"}, c.Stages...)
	}
	return c, true
}

// moveCut is the time moving the batch's bytes takes (collate, hand-over,
// take, pin), for the share of them the fix touches.
func moveCut(s *stageTimes, share float64) stageCut {
	return stageCut{worker: share * (s.collate + s.handover), loop: share * (s.take + s.pin)}
}

func handoverCause(s *stageTimes, p *sample.BatchPayload, waits bool) (Cause, bool) {
	if !s.ok || !waits || p == nil || p.BytesPerBatch < s.th.HandoverBytes {
		return Cause{}, false
	}
	share := (s.collate + s.handover) / s.worker()
	if share < s.th.HandoverShare {
		return Cause{}, false
	}
	c := Cause{ID: "handover", Stages: []string{"collate", "handover", "take", "pin"},
		Evidence: fmt.Sprintf("collating and handing over batches of %s take %.0f %% of a worker's %s per batch (collate %s, hand-over %s)",
			sample.FormatBytes(p.BytesPerBatch), 100*share, ms(s.worker()), ms(s.collate), ms(s.handover)),
		Fix: "hand over fewer bytes: uint8 images, normalised on the accelerator (ToTensor and Normalize after .to(device): a float32 image is 4× the bytes to collate, pickle and copy); half precision or smaller integers for other data",
		// The free figure counts __getitem__ too: the fix takes the
		// conversion to float (ToTensor, Normalize) out of it.
		Bound: s.boundFree(moveCut(s, 1), 4, stageCut{worker: s.getitem + s.collate + s.handover, loop: s.take + s.pin})}
	return c, true
}

func paddingCause(s *stageTimes, p *sample.BatchPayload) (Cause, bool) {
	if p == nil || p.PaddingShare == nil || *p.PaddingShare < s.th.PaddingShare || *p.PaddingShare >= 1 {
		return Cause{}, false
	}
	pad := *p.PaddingShare
	c := Cause{ID: "padding", Stages: []string{"collate", "handover", "take", "pin", "step"},
		Evidence: fmt.Sprintf("%.0f %% of the token slots are padding", 100*pad),
		Fix:      "bucket by length (a sampler that batches sequences of similar length) or pack sequences: the step and the hand-over carry only real tokens"}
	if s.ok {
		// Every stage after collate_fn carries the padded slots: a worker's
		// collate and hand-over, and the loop's whole time per batch (its
		// step on the accelerator, taking and pinning each batch). The fix
		// removes the padded share — the stages cost 1/(1−padding)× less —
		// and that is all it can take away (free: every pad gone).
		full := stageCut{worker: s.collate + s.handover, loop: s.loop()}
		cut := stageCut{worker: pad * full.worker, loop: pad * full.loop}
		c.Bound = s.boundFree(full, 1/(1-pad), cut)
	}
	return c, true
}

func getitemCause(s *stageTimes, p *sample.Profile, waits bool) (Cause, bool) {
	if !s.ok || !waits || !s.cpuBound || s.getitem/s.worker() < s.th.GetitemShare {
		return Cause{}, false
	}
	where := "a worker's"
	if s.inline || s.workers == 0 {
		where = "the loop's (num_workers=0)"
	}
	evidence := fmt.Sprintf("the dataset's __getitem__ takes %.0f %% of %s %s per batch (%s for %.0f samples)",
		100*s.getitem/s.worker(), where, ms(s.worker()), ms(s.getitem), s.batch)
	if f, share, ok := busiestInGetitem(p); ok {
		evidence += fmt.Sprintf("; the workers' profile finds %.0f %% of their CPU in %s", 100*share, f)
	}
	return Cause{ID: "getitem", Stages: []string{"getitem"},
		Evidence: evidence,
		Fix:      "do less per sample in __getitem__: keep the data as tensors and slice them (no Python loop or torch.tensor per sample), or preprocess once and cache; a CPU profile of the workers says which part",
		Bound:    s.bound(stageCut{worker: s.getitem}, 2)}, true
}

func loopTakeCause(s *stageTimes, w *window) (Cause, bool) {
	if !s.ok || s.inline || s.workers == 0 {
		return Cause{}, false
	}
	own := s.take + s.pin
	// Only where the loop, not the workers, is the limit: the workers
	// could make batches faster than the loop takes them (issue 39: "205 ms
	// taking each batch" said while the loop waited on busy workers).
	if own <= 0 || own/s.loop() < s.th.LoopTakeShare || float64(s.workers)/s.worker() < 1.1/s.loop() {
		return Cause{}, false
	}
	return Cause{ID: "loop_take", Stages: []string{"take", "pin"},
		Evidence: fmt.Sprintf("the training loop spends %s per batch taking it (unpickling %s, pinning %s) of its own %s",
			ms(own), ms(s.take), ms(s.pin), ms(s.loop())),
		Fix:   "hand the loop fewer, smaller tensors (uint8, one stacked tensor instead of many), and pin only what goes to the accelerator",
		Bound: s.bound(stageCut{loop: own}, 2)}, true
}

// withCauses is the window's causes, and the advice with a line for each
// first: what the job's own code costs comes before the knobs.
func withCauses(frames []sample.Frame, w *window, d decision, advice []string) ([]Cause, []string) {
	cs := causesOf(frames, w, d)
	if len(cs) == 0 {
		return nil, advice
	}
	for i := range cs {
		capBound(frames, cs[i].Bound) // no bound past the measured ceiling (ceiling.go)
	}
	lines := make([]string, 0, len(cs)+len(advice))
	for _, c := range cs {
		lines = append(lines, causeLine(c))
	}
	return cs, append(lines, advice...)
}

// lastPayload is the newest frame's look inside the batches.
func lastPayload(frames []sample.Frame) *sample.BatchPayload {
	for i := len(frames) - 1; i >= 0; i-- {
		if l := frames[i].Loader; l != nil && l.Payload != nil && l.Payload.BytesPerBatch > 0 {
			return l.Payload
		}
	}
	return nil
}

// causeLine is a cause as an advice line: its evidence, its fix, and its
// bound.
func causeLine(c Cause) string {
	s := c.Evidence + ": " + c.Fix
	if b := c.Bound; b != nil {
		s += fmt.Sprintf(" — at most %s at %.2g× less", boundRate(b.SamplesPerSec, b.Gain), b.K)
		if b.FreeGain > b.Gain*1.005 {
			s += fmt.Sprintf(", %s if %s cost nothing", boundRate(b.FreeSamples, b.FreeGain), stageWords(c.Stages))
		}
	}
	return s
}

func boundRate(samples, gain float64) string {
	if samples > 0 {
		return fmt.Sprintf("≈ %.0f samples/s (%.2f×)", samples, gain)
	}
	return fmt.Sprintf("%.2f×", gain)
}

func stageWords(st []string) string {
	if len(st) == 1 {
		return "it"
	}
	return "they"
}

func ms(sec float64) string { return sample.FormatDuration(sec) }

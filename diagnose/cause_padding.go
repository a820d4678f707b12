package diagnose

import "fmt"

// padding: a share of the token slots are padding. A payload cause: named
// whenever the batches show it, since it costs the step too.
func init() {
	registerCause(causeRule{id: "padding", stages: []string{"collate", "handover", "take", "pin", "step"}, find: paddingCause})
}

func paddingCause(in *causeIn) (Cause, bool) {
	s, p := in.s, in.pay
	if p == nil || p.PaddingShare == nil || !in.atLeast("padding", *p.PaddingShare, s.th.PaddingShare) || *p.PaddingShare >= 1 {
		return Cause{}, false
	}
	pad := *p.PaddingShare
	c := Cause{
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

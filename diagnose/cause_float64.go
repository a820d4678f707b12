package diagnose

import (
	"fmt"

	"github.com/gpuwatch/gpuwatch/sample"
)

// float64: half or more of a batch's bytes are float64 (numpy's default).
// A payload cause: named whenever the batches show it, since it costs the
// step too.
func init() {
	registerCause(causeRule{id: "float64", stages: []string{"collate", "handover", "take", "pin"}, find: float64Cause})
}

func float64Cause(in *causeIn) (Cause, bool) {
	s, p := in.s, in.pay
	if p == nil || p.Float64Share == nil || !in.atLeast("float64", *p.Float64Share, s.th.Float64Share) || p.BytesPerBatch < s.th.HandoverBytes/4 {
		return Cause{}, false
	}
	c := Cause{Stages: []string{"collate", "handover", "take", "pin"},
		Evidence: fmt.Sprintf("batches of %s, %.0f %% float64", sample.FormatBytes(p.BytesPerBatch), 100**p.Float64Share),
		Fix:      "float32 at the source (numpy's default is float64: .astype(np.float32) when the data is built, dtype=torch.float32): half the bytes to collate, hand over, copy and pin"}
	if s.ok {
		// Every stage that touches the bytes does twice the work:
		// __getitem__'s arithmetic on them too.
		cut := moveCut(s, *p.Float64Share)
		cut.worker += *p.Float64Share * s.getitem
		// Free: the stages that move the bytes cost nothing, and the
		// training step's work on them runs at most twice as fast (half
		// the bytes; twice the lanes of a vector unit). A bound that left
		// the step out was beaten in CI's battery: 4.5× against 4.0×.
		free := cut
		free.loop += *p.Float64Share * s.step / 2
		c.Bound = s.boundFree(cut, 2, free)
		c.Stages = append([]string{"getitem"}, c.Stages...)
	}
	return c, true
}

package diagnose

import (
	"fmt"

	"github.com/gpuwatch/gpuwatch/sample"
)

// handover: collating and handing over large batches (float32 images)
// take a share of a worker's time per batch.
func init() {
	registerCause(causeRule{id: "handover", stages: []string{"collate", "handover", "take", "pin"}, find: handoverCause})
}

func handoverCause(in *causeIn) (Cause, bool) {
	s, p := in.s, in.pay
	if !s.ok || !in.waits || p == nil || p.BytesPerBatch < s.th.HandoverBytes {
		return Cause{}, false
	}
	share := (s.collate + s.handover) / s.worker()
	if !in.atLeast("handover", share, s.th.HandoverShare) {
		return Cause{}, false
	}
	return Cause{
		Evidence: fmt.Sprintf("collating and handing over batches of %s take %.0f %% of a worker's %s per batch (collate %s, hand-over %s)",
			sample.FormatBytes(p.BytesPerBatch), 100*share, ms(s.worker()), ms(s.collate), ms(s.handover)),
		Fix: "hand over fewer bytes: uint8 images, normalised on the accelerator (ToTensor and Normalize after .to(device): a float32 image is 4× the bytes to collate, pickle and copy); half precision or smaller integers for other data",
		// The free figure counts __getitem__ too: the fix takes the
		// conversion to float (ToTensor, Normalize) out of it.
		Bound: s.boundFree(moveCut(s, 1), 4, stageCut{worker: s.getitem + s.collate + s.handover, loop: s.take + s.pin})}, true
}

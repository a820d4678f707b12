package diagnose

import (
	"fmt"
	"strings"

	"github.com/gpuwatch/gpuwatch/sample"
)

// small_files: the workers' time is off the CPU, and the looks at their
// descriptors find many small files ("Small files on network storage",
// docs/diagnosis.md).
func init() {
	registerCause(causeRule{id: "small_files", stages: []string{"getitem"}, find: smallFilesCause})
}

// smallFilesCause: the loop waits on busy workers whose time is not CPU,
// and they are caught reading a different small file at almost every
// reading — one file per sample, each an open, a read and a close, each a
// round trip on network storage. The fix takes the workers' time off the
// CPU (their wait on the reads) out of __getitem__.
func smallFilesCause(in *causeIn) (Cause, bool) {
	s, w, waits := in.s, in.w, in.waits
	// A CPU quota's throttling is neither CPU nor a wait for one in the
	// workers' figures: there, time off the CPU is not the storage's.
	throttled := w.jobThrottle.ok && w.jobThrottle.v >= w.th.ThrottledShare
	if !s.ok || !waits || s.cpuBound || !s.cpuKnown || throttled {
		return Cause{}, false
	}
	fr := &w.files
	median, ok := fr.manySmall(s.th.SmallFileBytes)
	if !ok {
		return Cause{}, false
	}
	wait := min(s.getitem, max(0, s.worker()-s.cpu))
	if wait <= 0 || wait < smallFilesWaitShare*s.worker() {
		return Cause{}, false
	}
	who := "a worker's"
	if s.inline || s.workers == 0 {
		who = "the loop's (num_workers=0)"
	}
	size := sample.FormatBytes(median) + " each"
	each := "each a round trip to the storage" // of unknown type
	switch st := fr.storage(); {
	case strings.HasPrefix(st, "network"):
		each = "each a round trip on network storage"
	case strings.HasPrefix(st, "local"):
		each = "three system calls and a small read each"
	}
	return Cause{
		Evidence: fmt.Sprintf("%s takes %s of %s %s per batch, %s of it off the CPU, reading small files: %d of %d looks found a file opened since the look before, %s (%s), on %s",
			sampleStageOf(in).short(), ms(s.getitem), who, ms(s.worker()), ms(wait), fr.opened, fr.looks, size, sample.Printable(fr.newest.Path), fr.storage()),
		Fix: "shard the small files into large ones (tar shards of ~100 MB as WebDataset reads them, or one array file per few thousand samples) and read each shard from start to end: one open and large sequential reads instead of an open, a read and a close per sample, " + each,
		// At k, the fix takes the reads' wait out of __getitem__, its CPU
		// (the decode, the conversion) staying; free, __getitem__ costs
		// nothing: an open, a read and a close per sample cost CPU too
		// (system calls, FUSE's round trips through the kernel), which
		// reading shards also saves.
		Bound: s.boundFree(stageCut{worker: wait}, 4, stageCut{worker: s.getitem})}, true
}

package diagnose

import (
	"fmt"
	"slices"

	"github.com/gpuwatch/gpuwatch/sample"
)

// paging is what a window shows of the watched processes reading files
// through the page cache by faulting (a memory-mapped dataset): the
// signature docs/diagnosis.md ("A memory-mapped dataset") describes.
type paging struct {
	majFaults level // the watched tree's major faults per second
	diskRead  level // bytes/s the tree's faults and reads took from the disk
	readCalls level // bytes/s its read calls returned (rchar)
	refaults  level // host file refaults per second
	// by says who faults most: "the training process takes" or "its N
	// loader workers take".
	by string
	// The newest facts: what the tree maps, the dataset's size and how
	// much of it is cached (the embedded loader), as known.
	mappedBytes   uint64
	mappedFile    string
	datasetBytes  float64
	datasetCached float64
	cachedKnown   bool
}

// add adds a frame's fault and read rates of the focused tree.
// (The host's refaults are a frame signal: signals.addFrameSignals.)
func (pg *paging) add(f *sample.Frame, s *signals) {
	if l := f.Loader; l != nil && l.DatasetBytes != nil && l.DatasetCachedBytes != nil {
		pg.datasetBytes, pg.datasetCached, pg.cachedKnown = float64(*l.DatasetBytes), float64(*l.DatasetCachedBytes), true
	}
	p := f.Procs
	if p == nil || p.FocusPID == 0 || len(p.List) == 0 {
		return
	}
	var maj, disk, calls, workerMaj float64
	haveMaj, haveDisk, haveCalls, workers := false, false, false, 0
	for _, pr := range p.List {
		if pr.MajorFaultsPerSec != nil {
			maj += *pr.MajorFaultsPerSec
			haveMaj = true
			if l := f.Loader; l != nil && slices.Contains(l.WorkerPIDs, pr.PID) {
				workerMaj += *pr.MajorFaultsPerSec
				workers++
			}
		}
		if pr.DiskReadBytesPerSec != nil {
			disk, haveDisk = disk+*pr.DiskReadBytesPerSec, true
		}
		if pr.ReadBytesPerSec != nil {
			calls, haveCalls = calls+*pr.ReadBytesPerSec, true
		}
		if pr.MappedFileBytes > pg.mappedBytes || (pr.MappedFileBytes > 0 && pg.mappedFile == "") {
			pg.mappedBytes, pg.mappedFile = pr.MappedFileBytes, pr.MappedFile
		}
	}
	if !haveMaj {
		return
	}
	s.add(sigTreeMajFaults, maj)
	if haveDisk { // /proc/PID/io unread (another user's process, no task I/O accounting): unknown, not 0
		s.add(sigTreeDiskRead, disk)
	}
	if haveCalls {
		s.add(sigTreeReadCalls, calls)
	}
	pg.by = "the training process takes"
	if workers > 0 && workerMaj >= maj/2 {
		pg.by = fmt.Sprintf("its %d loader workers take", workers)
	}
}

// readsNothing says the watched tree took next to nothing from storage
// over the window, as far as it was read: its read calls and its disk
// reads under quietReadBytes a second, and its major faults under
// MmapFaultsPerSec. Pressure on the host's I/O is then another
// process's, not a wait of the job's.
func (pg *paging) readsNothing(th Thresholds) bool {
	return pg.majFaults.ok && pg.majFaults.v < th.MmapFaultsPerSec &&
		pg.diskRead.ok && pg.diskRead.v < quietReadBytes && pg.readCalls.ok && pg.readCalls.v < quietReadBytes
}

// readAround says the tree's few major faults are what reads its disk:
// at least one a second, its disk reads at least 4× the bytes the loader
// delivers, and its read calls under a tenth of them. Each fault reads
// the read-around of the device (its read_ahead_kb) whatever the sample
// needs; at 8 MiB (a cloud VM's virtio disk) 25 faults a second read
// 700 MiB/s for 2 MiB/s of samples, the disk 97 % busy, under
// MmapFaultsPerSec, which was set where read-around was 128 kB.
func (pg *paging) readAround(w *window) bool {
	return pg.majFaults.ok && pg.majFaults.v >= 1 && pg.diskRead.ok && w.bytesPerSec.ok && w.bytesPerSec.v > 0 &&
		pg.diskRead.v >= 4*w.bytesPerSec.v && pg.readCalls.ok && pg.readCalls.v < pg.diskRead.v/10
}

// mmapFaultsPerSample is the fewest major faults per sample the loader
// delivers that reads as samples faulted in one by one: read at random
// from a cold cache, about one each (the battery's random loop); read in
// runs, one per run (0.004 for its 256-record blocks).
const mmapFaultsPerSample = 0.02

// quietReadBytes: a tree reading less than this a second (its read
// calls, pipes included, and its disk) is not waiting on storage.
const quietReadBytes = 1 << 20

// datasetSize is the dataset's size as best known: the loader's own
// word, else what the faulting processes map.
func (w *window) datasetSize() float64 {
	switch {
	case w.paging.datasetBytes > 0:
		return w.paging.datasetBytes
	case w.knobs["dataset_size"] != "":
		if b, ok := knobBytes(w.knobs["dataset_size"]); ok {
			return b
		}
	}
	return float64(w.paging.mappedBytes)
}

// mmapEvidence: the watched processes fault a mapped file's pages in from
// the disk while the loop waits, and the disk is busy (io) or the page
// cache churns. ok is false when that does not hold.
func mmapEvidence(w *window, th Thresholds, io []Evidence) ([]Evidence, bool) {
	pg := &w.paging
	churn := pg.refaults.ok && pg.refaults.v >= th.FileRefaultsPerSec
	if !pg.majFaults.ok || (pg.majFaults.v < th.MmapFaultsPerSec && !pg.readAround(w)) || (len(io) == 0 && !churn) {
		return nil, false
	}
	if s := w.samplesPerSec; s.ok && s.v > 0 && pg.majFaults.v/s.v < mmapFaultsPerSample {
		// A fault per block of records, not per sample: read-ahead
		// serves runs (the causes battery's fix, 4 MiB blocks in random
		// order: 55 faults/s at 15,078 samples/s read "random reads").
		return nil, false
	}
	what := "memory-mapped files"
	switch {
	case w.knobs["read"] == "mmap":
		what = "its memory-mapped dataset"
	case pg.mappedFile != "":
		what = fmt.Sprintf("memory-mapped files (%s mapped; the largest %s)", fmtBytes(float64(pg.mappedBytes)), pg.mappedFile)
	}
	how := "random reads through the page cache"
	if a := w.knobs[sample.KnobAccess.Flag]; a == "seq" || a == "subseq" {
		how = "reads through the page cache, a fault at a time"
	}
	least := th.MmapFaultsPerSec
	if pg.majFaults.v < least {
		least = 1 // few faults, each a large read-around (readAround)
		how += fmt.Sprintf(", each fault reading about %s from the disk (the device's read-around)", fmtBytes(pg.diskRead.v/pg.majFaults.v))
	}
	out := []Evidence{evidence("procs.major_faults_per_sec", pg.majFaults.v, ">=", least, "/s",
		fmt.Sprintf("%s %s major page faults/s on %s: %s", pg.by, groupThousands(pg.majFaults.v), what, how))}
	if pg.diskRead.ok && w.bytesPerSec.ok && w.bytesPerSec.v > 0 && pg.diskRead.v >= 4*w.bytesPerSec.v {
		text := fmt.Sprintf("the disk reads %s/s for the %s/s of samples the loader delivers (%.0f×): each fault's read-around fetches far more than the sample",
			fmtBytes(pg.diskRead.v), fmtBytes(w.bytesPerSec.v), pg.diskRead.v/w.bytesPerSec.v)
		if pg.readCalls.ok && pg.readCalls.v < pg.diskRead.v/10 {
			text += "; read calls bring almost none of it"
		}
		out = append(out, evidence("procs.disk_read_bytes_per_sec", pg.diskRead.v, ">=", 4*w.bytesPerSec.v, "B/s", text))
	}
	if pg.cachedKnown && pg.datasetBytes > 0 {
		share := pg.datasetCached / pg.datasetBytes
		out = append(out, evidence("loader.dataset_cached_share", share, "<", 1, "ratio",
			fmt.Sprintf("%.0f %% of the %s dataset is in the page cache", 100*share, fmtBytes(pg.datasetBytes))))
	}
	if churn {
		out = append(out, evidence("mem.file_refaults_per_sec", pg.refaults.v, ">=", th.FileRefaultsPerSec, "/s",
			fmt.Sprintf("the page cache reads back %s evicted file pages/s (workingset refaults): it is too small for the data read through it", groupThousands(pg.refaults.v))))
	}
	return out, true
}

// mmapAdvice is what to do about a mapped dataset read at random, in the
// order that helps most: hold it in RAM when it fits, else read runs the
// read-ahead serves, else larger records.
func mmapAdvice(w *window) []string {
	var a []string
	size, room := w.datasetSize(), w.roomForData()
	where := "available"
	if room < w.memAvail {
		where = "free under the job's memory limit"
	}
	switch {
	case size > 0 && room > 0 && size < room/2:
		a = append(a, fmt.Sprintf("load the dataset into RAM once, as ready tensors (the dataset is %s; %s %s): no sample waits on the disk again",
			fmtBytes(size), fmtBytes(room), where))
	case size > 0:
		a = append(a, fmt.Sprintf("the dataset (%s) does not fit in RAM with room to spare (%s %s): keep it on disk and read it in runs", fmtBytes(size), fmtBytes(room), where))
	default:
		a = append(a, fmt.Sprintf("load the dataset into RAM once, as ready tensors, if it fits (%s %s)", fmtBytes(room), where))
	}
	if room < w.memAvail && size > 0 {
		a = append(a, fmt.Sprintf("or ask for a memory limit well above the dataset (%s), so its pages stay cached (Slurm --mem, the pod's memory limit)", fmtBytes(size)))
	}
	a = append(a, "otherwise read contiguous runs: shuffle blocks of consecutive samples, not single samples (a sampler that yields runs of indices), so the kernel's read-ahead serves each run with a few large reads")
	a = append(a, "otherwise store larger records (many samples per record, a row group per read), so each page the disk reads carries whole samples")
	return a
}

// mmapChanges are the embedded loader's settings that apply the advice
// (the model's own changes, such as --cache, come first).
func mmapChanges(w *window, have []Change) []Change {
	var out []Change
	if w.knobs[sample.KnobAccess.Flag] == "random" {
		out = append(out, Change{Knob: "sampler", Flag: sample.KnobAccess.SetBy(false), From: "random", To: "subseq",
			Why: "contiguous runs of samples are served by the kernel's read-ahead; random single samples are a major fault each"})
	}
	cached := slices.ContainsFunc(have, func(c Change) bool { return c.Flag == "--cache" })
	size := w.datasetSize()
	if room := w.roomForData(); !cached && w.knobs[sample.KnobCache.Flag] == "false" && size > 0 && size < room/2 {
		out = append(out, Change{Knob: sample.KnobCache.Name, Flag: sample.KnobCache.SetBy(false), From: "false", To: "true",
			Why: fmt.Sprintf("the dataset (%s) fits in RAM (%s for it): read it once, and no sample faults again", fmtBytes(size), fmtBytes(room))})
	}
	return out
}

// groupThousands writes a rate as "4,800".
func groupThousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// roomForData is the memory a dataset loaded into RAM could have: the
// host's available memory, or, in a job with a memory limit, the limit
// less what the job holds besides page cache.
func (w *window) roomForData() float64 {
	room := w.memAvail
	if j := w.job; j != nil && j.MemLimitBytes != nil && j.MemUsedBytes != nil {
		own := float64(*j.MemUsedBytes)
		if j.MemFileBytes != nil {
			own -= float64(*j.MemFileBytes)
		}
		room = min(room, max(0, float64(*j.MemLimitBytes)-own))
	}
	return room
}

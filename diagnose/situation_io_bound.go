package diagnose

import (
	"fmt"
	"slices"

	"github.com/gpuwatch/gpuwatch/sample"
)

// IOBound: storage (local, remote or throttled) is the limit. See docs/diagnosis.md, "Verdicts".
const IOBound Kind = 5

func init() {
	register(Situation{
		Kind:       IOBound,
		ID:         "io_bound",
		Title:      "I/O-bound: storage is the limit",
		Tone:       ToneBad,
		InputBound: true,
		Stage:      "reading",
		Advice:     ioAdvice,
		Practice:   ioPractice,
		Scenarios:  []string{"io-bound", "remote-storage", "mmap-random"},
		rules: []rule{
			{name: "cache-churn", sees: "memory looks pressed, but it is a mapped dataset's page cache churning", variant: ioMmap, holds: cacheChurnRule},
			{name: "mmap", sees: "a mapped dataset's pages fault in from the disk", variant: ioMmap, holds: mmapRule},
			{name: "disk", sees: "storage is busy", variant: ioDisk, holds: diskRule},
			{name: "remote", sees: "enough workers read, and no local disk is busy: a remote store", variant: ioRemote, holds: remoteRule},
			{name: "host-only", sees: "no accelerator signal, and storage is busy", variant: variantHostOnly, holds: ioHostOnlyRule},
		},
	})
}

// The variants of io_bound, each advised in its own way.
const (
	ioDisk   variant = "disk"   // a local disk is busy, or tasks stall on I/O
	ioRemote variant = "remote" // the loader's reads are slow with no busy disk: the store is remote or throttled
	ioMmap   variant = "mmap"   // a mapped dataset's pages fault in from the disk (mmap.go)
)

// ioPractice: what practice teaches where the disk is the limit, said
// where no cause beneath the kind is named (Situation.Practice): the
// random_reads and small_files causes say which it is.
var ioPractice = []string{
	"random reads are the usual culprit: read sequentially, or in contiguous runs of samples",
	"use larger chunks (shards near one sample per read or more) and a columnar format, reading only the columns used",
}

func ioAdvice(in adviceIn) ([]string, bool) {
	w := in.w
	switch in.d.variant {
	case ioRemote:
		return []string{
			fmt.Sprintf("the data comes from a slow or throttled store (%s/s): copy it to local NVMe or cache it in RAM (%s available)",
				sample.FormatBytes(w.bytesPerSec.v), sample.FormatBytes(w.memAvail)),
			"read larger objects (shards of many samples) so each request carries more data",
		}, false
	case ioMmap:
		return mmapAdvice(w), false
	}
	a := slices.Clone(ioPractice)
	if w.memAvail > 0 {
		a = append(a, fmt.Sprintf("cache the hot data in RAM (%s available) or on local NVMe", sample.FormatBytes(w.memAvail)))
	}
	return a, false
}

// mmapRule: the watched processes fault a mapped dataset in from the disk
// (mmapEvidence).
func mmapRule(f *facts) (decision, bool) {
	e, ok := mmapEvidence(f.w, f.th, f.io)
	if !ok {
		return decision{}, false
	}
	return join(e, f.io, f.wait, f.reads), true
}

// diskRule: a disk is busy, or tasks stall on I/O.
func diskRule(f *facts) (decision, bool) {
	return join(f.io, f.wait, f.reads), len(f.io) > 0
}

// remoteRule: the loader's workers spend their time reading, there are
// enough of them, and no disk here is busy: the store is the limit.
func remoteRule(f *facts) (decision, bool) {
	if len(f.reads) == 0 || f.fewWorkers {
		return decision{}, false
	}
	w, th := f.w, f.th
	d := join(f.reads, f.wait)
	d.evidence = append(d.evidence, evidence("loader.workers", float64(w.workers), ">=", th.WorkersPerCoreLow*float64(w.cores), "",
		fmt.Sprintf("%d workers are reading, yet no disk here is busy: the store (network, object storage or a throttle) is the limit", w.workers)))
	return d, true
}

// ioHostOnlyRule: no accelerator signal, and storage is busy.
func ioHostOnlyRule(f *facts) (decision, bool) {
	return join(f.io), len(f.io) > 0
}

// ioEvidence: is storage busy (a disk, PSI, iowait)?
func ioEvidence(w *window, th Thresholds) []Evidence {
	var io []Evidence
	if w.diskBusy.ok && w.diskBusy.v >= th.DiskBusyPct {
		io = append(io, evidence("disk.busy_pct", w.diskBusy.v, ">=", th.DiskBusyPct, "%",
			fmt.Sprintf("%s is %.0f %% busy (≥ %.0f %%)", w.diskName, w.diskBusy.v, th.DiskBusyPct)))
	}
	if w.psiIO.ok && w.psiIO.v >= th.PSIIOSomePct {
		io = append(io, evidence("psi.io.some_pct", w.psiIO.v, ">=", th.PSIIOSomePct, "%",
			fmt.Sprintf("tasks stalled on I/O %.0f %% of the time (PSI, ≥ %.0f %%)", w.psiIO.v, th.PSIIOSomePct)))
	}
	if w.iowait.ok && w.iowait.v >= th.IowaitPct {
		io = append(io, evidence("cpu.iowait_pct", w.iowait.v, ">=", th.IowaitPct, "%",
			fmt.Sprintf("CPUs idle waiting on I/O %.0f %% of the time (≥ %.0f %%)", w.iowait.v, th.IowaitPct)))
	}
	return io
}

// readEvidence: the loader spends its time reading, not decoding.
func readEvidence(w *window, th Thresholds) []Evidence {
	if !w.readSec.ok || !w.decodeSec.ok || w.readSec.v < th.ReadSecPerSec || w.readSec.v < th.ReadDominance*w.decodeSec.v {
		return nil
	}
	return []Evidence{evidence("loader.read_sec_per_sec", w.readSec.v, ">=", th.ReadDominance*w.decodeSec.v, "s/s",
		fmt.Sprintf("the loader spends %.1f s per second reading and %.1f s decoding (reads ≥ %.0f× decode)", w.readSec.v, w.decodeSec.v, th.ReadDominance))}
}

// cacheChurnRule: memory looks pressed, but what fills it is the page
// cache of a mapped dataset read at random, with nothing swapped or
// killed: a container whose memory limit leaves too little cache for the
// data churns it (refaults), and the kernel counts those stalls as memory
// pressure. The bottleneck is the reads; the memory findings follow from
// them and become a secondary finding.
func cacheChurnRule(f *facts) (decision, bool) {
	w, th := f.w, f.th
	if len(f.wait) == 0 || w.jobOOMKills > 0 || (w.swapPages.ok && w.swapPages.v >= th.SwapPagesPerSec) || w.jobSwapGrowth > 0 {
		return decision{}, false
	}
	if j := w.job; j != nil && j.MemUsedBytes != nil && j.MemLimitBytes != nil {
		if j.MemFileBytes == nil || float64(*j.MemFileBytes) < 0.5*float64(*j.MemUsedBytes) {
			return decision{}, false // the job's own memory, not cache, fills its limit
		}
	}
	e, ok := mmapEvidence(w, th, f.io)
	if !ok {
		return decision{}, false
	}
	d := join(e, f.io, f.wait, f.reads)
	text := "the kernel reports memory pressure, but it is the page cache churning: nothing is swapped"
	if j := w.job; j != nil && j.MemLimitBytes != nil && j.MemFileBytes != nil {
		text = fmt.Sprintf("the job's memory limit (%s) is full, %s of it page cache the mapped data cannot stay in: nothing is swapped",
			fmtBytes(float64(*j.MemLimitBytes)), fmtBytes(float64(*j.MemFileBytes)))
	}
	d.secondary = append(d.secondary, Finding{Kind: MemoryPressure, Text: text})
	return d, true
}

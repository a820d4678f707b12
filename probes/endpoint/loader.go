package endpoint

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/probes"

	"github.com/gpuwatch/gpuwatch/sample"
)

// LoaderCounters is a loader's cumulative state at one moment, whatever the
// loader: the embedded one in this process, or one attached to over its
// metrics endpoint. Fields a loader does not know are nil or empty.
type LoaderCounters struct {
	Batches, Samples, BytesRead uint64
	// NoBytesRead: the loader does not count the bytes it reads (no
	// gpuwatch_loader_bytes_read_total: the Python hook).
	NoBytesRead bool
	// ReadSeconds and DecodeSeconds are summed over workers; nil if the
	// loader does not report them.
	ReadSeconds, DecodeSeconds *float64
	// Wait and Step are cumulative histograms over Buckets (seconds);
	// StepSeen says the loader publishes the step's
	// (gpuwatch_loader_step_seconds): without it, or Stepping, no step
	// time is known, and Step's zeros are not a loop that never steps.
	Buckets    []float64
	Wait, Step Hist
	StepSeen   bool
	QueueDepth *float64
	Workers    *int
	Prefetch   *int
	Knobs      map[string]string
	// Waiting is how long, in seconds, the training loop has waited for
	// the batch it asked for at the read (0: not waiting); nil when the
	// loader does not say.
	Waiting *float64
	// Stepping is how long, in seconds, the training loop's step under
	// way had run at the read (0: none); nil when the loader does not say.
	Stepping *float64
	// PID is the training process, LoopTID the thread that runs its
	// training loop, WorkerPIDs its worker processes: nil or empty when the
	// loader does not say.
	PID, LoopTID *int
	WorkerPIDs   []int
	// Rank, LocalRank and WorldSize of a distributed job's rank, when the
	// loader says (the hook's RANK, LOCAL_RANK, WORLD_SIZE), and the job's
	// ranks on its node (LocalWorldSize, at most WorldSize).
	Rank, LocalRank, WorldSize, LocalWorldSize *int
	// EpochStall is the mean time to an epoch's first batch, epochs after
	// the first; BatchesPerEpoch the epoch's length. Nil when unknown.
	EpochStall      *time.Duration
	BatchesPerEpoch *int
	// EpochGap is the mean time from an epoch's end to the next epoch's
	// start (validation, checkpoints); nil when none was seen.
	// BetweenEpochs is the loop's seconds between epochs so far, the gap
	// under way included: a clock that runs while the loop is between
	// epochs (nil when the loader does not say).
	EpochGap      *time.Duration
	BetweenEpochs *float64
	// NewLoaderEveryEpoch: every epoch (two or more) iterated a DataLoader
	// never iterated before, so its workers start every epoch whatever
	// persistent_workers says; nil when the loader does not say.
	NewLoaderEveryEpoch *bool
	// IterableSplitsByWorker: the DataLoader's IterableDataset asks
	// get_worker_info in its __iter__ (or its worker_init_fn does); nil
	// for a map-style dataset, or when the loader does not say.
	IterableSplitsByWorker *bool
	// IterableRepeats: two workers' first two batches of an
	// IterableDataset were the same bytes and the first's second was not
	// its first (they yield the same samples); false where they differed;
	// nil when not measured.
	IterableRepeats *bool
	// DatasetBytes and DatasetCachedBytes: the dataset's size and how
	// much of it is in the page cache, where the loader can tell cheaply
	// (the embedded one, from mincore on its own mappings).
	DatasetBytes, DatasetCachedBytes *int64
	// Recent are the newest batches, oldest first, when the loader keeps
	// them (the embedded one does): percentiles are then exact.
	Recent []LoaderBatch
	// Stages are each stage's cumulative time and batches, by stage name
	// (stageNames); Payload the counts over the batches looked inside.
	// Nil when the loader does not measure them (the hook does).
	Stages  map[string]StageCount
	Payload *PayloadCounters
	// Ceiling is the loop's rate with its input free, as the hook measured
	// it (ceiling.go); nil when it was not asked to.
	Ceiling *sample.Ceiling
	// GPUProfile is the step's GPU time by category, as the hook recorded
	// it (gpuprofile.go); nil when it was not asked to.
	GPUProfile *sample.GPUProfile
	// Settings is what the job already does, as the hook read it
	// (settings.go); nil when the loader does not say.
	Settings *sample.JobSettings
	// Syncs are the host syncs inside the step, as the hook counted them
	// (syncs.go); nil when the loader does not say.
	Syncs []sample.HostSync
	// SyncSteps are the steps the hook counted syncs in (syncs.go); nil
	// when the loader does not say.
	SyncSteps *uint64
	// HookCPUSeconds is the hook's own CPU time in the training process,
	// cumulative (hookcost.go); nil when the loader does not say.
	// HookCPUParts is that time by part, cumulative seconds by the part's
	// name; nil when the loader does not split it.
	HookCPUSeconds *float64
	HookCPUParts   map[string]float64
	// Kind is what speaks for the loader: "python" (the hook, gpuwatch
	// run), "go" (a Go loader, gpuwatch loader), "embedded", or "".
	Kind string
	// Dropped says which of the loader's figures were out of range, and
	// so left out.
	Dropped []string
}

// Hist is a cumulative histogram: Counts[i] observations ≤ Buckets[i];
// Count includes those above the last bucket.
type Hist struct {
	Counts []uint64
	Sum    float64 // seconds
	Count  uint64
}

// LoaderBatch is one batch's timing; Seq counts batches from 1.
type LoaderBatch struct {
	Seq        uint64
	Wait, Step time.Duration
}

// LoaderSource gives a loader's counters. An error wrapping ErrUnavailable
// means there is no loader to read.
type LoaderSource interface {
	Source() string
	LoaderCounters(ctx context.Context) (LoaderCounters, error)
}

// Loader is the probe for a data loader: it turns counter deltas into the
// interval's rates, wait share and percentiles, and the virtual
// accelerator.
type Loader struct {
	src      LoaderSource
	prev     LoaderCounters
	prevTime time.Time
	havePrev bool
	waits    []float64
}

// NewLoader returns the loader probe over src.
func NewLoader(src LoaderSource) *Loader { return &Loader{src: src} }

// Name implements Probe.
func (p *Loader) Name() string { return "loader" }

// Lane implements Laned: an attached loader and its profile share a worker.
func (p *Loader) Lane() string {
	if _, attached := p.src.(*Attach); attached {
		return "attach"
	}
	return "" // the embedded loader is read in memory: a lane of its own is free
}

// Collect implements Probe.
func (p *Loader) Collect(ctx context.Context, f *sample.Frame) error {
	cur, err := p.src.LoaderCounters(ctx)
	if err != nil {
		p.havePrev = false
		if since, ok := DisconnectedSince(err); ok {
			// The view and JSON say so, not only the reason list.
			f.Loader = &sample.Loader{Source: p.src.Source(), Connected: probes.Ptr(false), DisconnectedSince: &since}
		}
		return err
	}
	out := &sample.Loader{
		Source: p.src.Source(), Batches: cur.Batches, QueueDepth: cur.QueueDepth,
		Workers: cur.Workers, Prefetch: cur.Prefetch, Knobs: cur.Knobs,
		PID: cur.PID, LoopTID: cur.LoopTID, WorkerPIDs: cur.WorkerPIDs, BatchesPerEpoch: cur.BatchesPerEpoch,
		Rank: cur.Rank, LocalRank: cur.LocalRank, WorldSize: cur.WorldSize, LocalWorldSize: cur.LocalWorldSize,
		DatasetBytes: cur.DatasetBytes, DatasetCachedBytes: cur.DatasetCachedBytes, Ceiling: cur.Ceiling,
		Settings: cur.Settings, Syncs: cur.Syncs, SyncSteps: cur.SyncSteps, GPUProfile: cur.GPUProfile,
	}
	if cur.Waiting != nil {
		out.WaitingMs = probes.Ptr(1000 * *cur.Waiting)
	}
	if cur.Stepping != nil {
		out.SteppingMs = probes.Ptr(1000 * *cur.Stepping)
	}
	if cur.EpochStall != nil {
		out.EpochStallMs = probes.Ptr(float64(cur.EpochStall.Microseconds()) / 1000)
	}
	if cur.EpochGap != nil {
		out.EpochGapMs = probes.Ptr(float64(cur.EpochGap.Microseconds()) / 1000)
	}
	out.NewLoaderEveryEpoch = cur.NewLoaderEveryEpoch
	out.IterableSplitsByWorker, out.IterableRepeats = cur.IterableSplitsByWorker, cur.IterableRepeats
	if _, attached := p.src.(*Attach); attached {
		out.Connected = probes.Ptr(true)
	}
	out.Kind = cur.Kind
	for _, d := range cur.Dropped {
		if f.Unavailable == nil {
			f.Unavailable = map[sample.Source]string{}
		}
		name, why, _ := strings.Cut(d, " ")
		f.Unavailable[sample.Source("loader."+strings.TrimPrefix(name, "gpuwatch_loader_"))] = why
	}
	prev, prevTime, havePrev := p.prev, p.prevTime, p.havePrev
	p.prev, p.prevTime, p.havePrev = cur, f.Time, true
	f.Loader = out
	if !havePrev {
		out.RatesPending = true
		return nil
	}
	// A loader that restarted has smaller counters. Like Prometheus's
	// rate(), count everything since the restart as this interval's
	// increase: never a negative rate, and no blind interval.
	if cur.Batches < prev.Batches || cur.Wait.Count < prev.Wait.Count ||
		cur.Step.Count < prev.Step.Count || cur.Samples < prev.Samples || cur.BytesRead < prev.BytesRead ||
		lessFloat(cur.ReadSeconds, prev.ReadSeconds) || lessFloat(cur.DecodeSeconds, prev.DecodeSeconds) {
		prev = LoaderCounters{Buckets: cur.Buckets, ReadSeconds: zeroIf(cur.ReadSeconds), DecodeSeconds: zeroIf(cur.DecodeSeconds),
			Wait: Hist{Counts: make([]uint64, len(cur.Wait.Counts))}, Step: Hist{Counts: make([]uint64, len(cur.Step.Counts))}}
	}
	sec := f.Time.Sub(prevTime).Seconds()
	if sec <= 0 {
		out.RatesPending = true // no time between the readings: no rate yet
		return nil
	}
	rates(out, &prev, &cur, sec)
	busy := p.waitFigures(out, prev, cur, sec)
	out.Stages = loaderStages(prev.Stages, cur.Stages, cur.Workers)
	if prev.BetweenEpochs != nil && cur.BetweenEpochs != nil {
		// A restarted loader reset prev above. A clock that steps back
		// otherwise (a hook that read the gap under way on into the next
		// epoch's iter(), where the gap summed ends; a hostile page)
		// counts none this interval.
		out.BetweenEpochsSec = probes.Ptr(min(sec, max(0, *cur.BetweenEpochs-*prev.BetweenEpochs)))
	}
	out.Payload = batchPayload(prev.Payload, cur.Payload, out.BatchesPerSec)
	hookCost(out, &prev, &cur, sec)
	virtualAccel(f, out, &cur, busy, sec)
	return nil
}

// virtualAccel sets the frame's virtual accelerator from the loader's
// steps: busy seconds of steps in sec.
func virtualAccel(f *sample.Frame, out *sample.Loader, cur *LoaderCounters, busy, sec float64) {
	// The virtual accelerator: the share of wall time spent in steps,
	// where the loader times its steps at all (one that counts only its
	// batches would read 0 % busy, never measured: a healthy verdict on
	// nothing).
	if !cur.StepSeen && cur.Stepping == nil || out.Replaying() {
		if f.Unavailable == nil {
			f.Unavailable = map[sample.Source]string{}
		}
		f.Unavailable["loader.step_seconds"] = "the loader publishes no step time (gpuwatch_loader_step_seconds): the accelerator's busy share is unknown"
		if out.Replaying() {
			// The loop steps on the kept batches, which the hook does not
			// time as the loader's: 0 % busy was a figure of nothing (a
			// review of the H200 recording).
			f.Unavailable["loader.step_seconds"] = "the ceiling replays kept batches: the loop's steps on them are the ceiling's measurement, not the loader's, and the accelerator's busy share is unknown"
		}
		return
	}
	f.Accel = &sample.VirtualAccel{BusyPct: min(100, 100*busy/sec), Basis: "loader step time / wall time"}
}

// waitFigures fills the interval's wait and step figures and returns the
// seconds of it the loop spent stepping.
func (p *Loader) waitFigures(out *sample.Loader, prev, cur LoaderCounters, sec float64) (stepIn float64) {
	dWait, dStep := max(0, cur.Wait.Sum-prev.Wait.Sum), max(0, cur.Step.Sum-prev.Step.Sum)
	// A wait is counted whole when it ends; the wait under way at each
	// read (Waiting, where the loader says) puts its seconds in the
	// interval they passed in: the part before the last read was that
	// interval's, the part since this interval's. A step is counted whole
	// too, and the step under way (Stepping) stands for the interval's
	// steps only where none ended in it (a step of many seconds): the one
	// under way at the last read may never be recorded (the loop broke
	// out of that iterator and asked another), so it is not taken off
	// the steps that end.
	before, now := underWay(prev.Waiting, cur.Waiting, sec)
	var stepNow float64
	if cur.Stepping != nil {
		stepNow = min(*cur.Stepping, sec)
	}
	stepIn = dStep
	if cur.Step.Count == prev.Step.Count {
		stepIn = stepNow
	}
	if n := cur.Wait.Count - prev.Wait.Count; n > 0 {
		out.WaitMeanMs = probes.Ptr(1000 * dWait / float64(n))
		in := max(0, dWait-before) + now
		switch {
		case !cur.StepSeen && cur.Stepping == nil:
			// No step time: the loop's waits over the wall time are its
			// share (a loop is in a wait or in a step), not the waits
			// over themselves, which read 100 % (a hostile user's
			// review: a loader timing only its waits read starved).
			out.WaitShare = probes.Ptr(min(1, in/sec))
		case in+stepIn > 0:
			out.WaitShare = probes.Ptr(in / (in + stepIn))
		}
		p.waitPercentiles(out, prev, cur)
	} else if now > 0 {
		// No wait ended in the interval, and the loop waits now: it
		// stepped until it asked (a wait that ended would have given a
		// batch), then waited, so the wait's part of the interval is its
		// share. A loop stuck in next() for longer reads 1.
		out.WaitShare = probes.Ptr(now / sec)
	} else if stepNow >= sec {
		// No batch came and the loop has stepped through the whole
		// interval (a step of many seconds): it did not wait.
		out.WaitShare = probes.Ptr(0.0)
	}
	if n := cur.Step.Count - prev.Step.Count; n > 0 {
		out.StepMeanMs = probes.Ptr(1000 * dStep / float64(n))
	}
	return stepIn
}

// underWay is a wait's seconds under way at the last read and at this
// one, this one at most the interval's sec (0 where the loader does not
// say).
func underWay(prev, cur *float64, sec float64) (before, now float64) {
	if prev != nil {
		before = *prev
	}
	if cur != nil {
		now = min(*cur, sec)
	}
	return before, now
}

// rates are the loader's rates over sec seconds between prev and cur:
// batches, samples and bytes (where the loader counts them), and the
// read and decode seconds its workers spent per second.
func rates(out *sample.Loader, prev, cur *LoaderCounters, sec float64) {
	out.BatchesPerSec = float64(cur.Batches-prev.Batches) / sec
	out.SamplesPerSec = float64(cur.Samples-prev.Samples) / sec
	if out.BytesNotCounted = cur.NoBytesRead; !cur.NoBytesRead {
		out.BytesPerSec = float64(cur.BytesRead-prev.BytesRead) / sec
	}
	if cur.ReadSeconds != nil && prev.ReadSeconds != nil && *cur.ReadSeconds >= *prev.ReadSeconds {
		out.ReadSecPerSec = probes.Ptr((*cur.ReadSeconds - *prev.ReadSeconds) / sec)
	}
	if cur.DecodeSeconds != nil && prev.DecodeSeconds != nil && *cur.DecodeSeconds >= *prev.DecodeSeconds {
		out.DecodeSecPerSec = probes.Ptr((*cur.DecodeSeconds - *prev.DecodeSeconds) / sec)
	}
}

// waitPercentiles fills p50/p95/p99 of the interval's waits: exact from
// the batch list when it covers the whole interval, else interpolated from
// the histogram buckets as Prometheus's histogram_quantile does.
func (p *Loader) waitPercentiles(out *sample.Loader, prev, cur LoaderCounters) {
	lastSeq := uint64(0)
	if n := len(prev.Recent); n > 0 {
		lastSeq = prev.Recent[n-1].Seq
	}
	covered := len(cur.Recent) > 0 && lastSeq == prev.Batches && cur.Recent[0].Seq <= lastSeq+1
	if covered {
		p.waits = p.waits[:0]
		for _, b := range cur.Recent {
			if b.Seq > lastSeq {
				p.waits = append(p.waits, 1000*b.Wait.Seconds())
				if len(out.Timeline) < 64 {
					out.Timeline = append(out.Timeline, sample.BatchTiming{WaitMs: 1000 * b.Wait.Seconds(), StepMs: 1000 * b.Step.Seconds()})
				}
			}
		}
		if len(p.waits) > 0 {
			slices.Sort(p.waits)
			q := func(x float64) *float64 { return probes.Ptr(sample.NearestRank(p.waits, x)) }
			out.WaitP50Ms, out.WaitP95Ms, out.WaitP99Ms = q(0.50), q(0.95), q(0.99)
			return
		}
	}
	if len(cur.Buckets) == 0 || len(cur.Wait.Counts) != len(cur.Buckets) || len(prev.Wait.Counts) != len(cur.Buckets) {
		return
	}
	d := make([]uint64, len(cur.Buckets))
	for i := range d {
		if cur.Wait.Counts[i] < prev.Wait.Counts[i] {
			return
		}
		d[i] = cur.Wait.Counts[i] - prev.Wait.Counts[i]
	}
	total := cur.Wait.Count - prev.Wait.Count
	q := func(x float64) *float64 {
		v, ok := BucketQuantile(x, cur.Buckets, d, total)
		if !ok {
			return nil
		}
		return probes.Ptr(1000 * v)
	}
	out.WaitP50Ms, out.WaitP95Ms, out.WaitP99Ms = q(0.50), q(0.95), q(0.99)
}

func lessFloat(a, b *float64) bool { return a != nil && b != nil && *a < *b }

func zeroIf(p *float64) *float64 {
	if p == nil {
		return nil
	}
	return probes.Ptr(0.0)
}

// BucketQuantile estimates quantile q (0–1) from cumulative bucket counts
// (counts[i] observations ≤ upper[i]) and the total count, interpolating
// linearly inside the bucket, as Prometheus's histogram_quantile does. A
// quantile above the last finite bucket is that bucket's bound.
func BucketQuantile(q float64, upper []float64, counts []uint64, total uint64) (float64, bool) {
	if total == 0 || len(upper) == 0 || len(counts) != len(upper) {
		return 0, false
	}
	rank := q * float64(total)
	lowerBound, lowerCount := 0.0, 0.0
	for i, u := range upper {
		c := float64(counts[i])
		if c >= rank {
			if c == lowerCount {
				return u, true
			}
			return lowerBound + (u-lowerBound)*(rank-lowerCount)/(c-lowerCount), true
		}
		lowerBound, lowerCount = u, c
	}
	return upper[len(upper)-1], true
}

package diagnose

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuwatch/gpuwatch/sample"
)

// Change is one loader setting to change: the DataLoader knob, the flag of
// `gpuwatch demo` and `gpuwatch loader` that sets it, its value now and
// the value to set, and why.
type Change struct {
	Knob string `json:"knob"`
	Flag string `json:"flag"`
	From string `json:"from"`
	To   string `json:"to"`
	Why  string `json:"why"`
	// With is what the change needs beside the knob, said on the advice
	// line after it ("" for none): persistent_workers on a script that
	// builds a new DataLoader every epoch needs it built once.
	With string `json:"with,omitempty"`
}

// workerCounts are the worker counts the model tries: every count up to 64,
// then steps of about 10 % up to twice the current count or four per core
// (workers that wait on storage can outnumber cores), the current count
// included.
func workerCounts(cur, cores int) []int {
	top := min(4096, max(2*cur, cur+4, 4*cores))
	var out []int
	// Loading inline again is never advised to a loader that has workers:
	// it would trade the workers' parallelism for one thread.
	for w := min(cur, 1); w <= top; {
		out = append(out, w)
		if w < 64 {
			w++
		} else {
			w += max(1, w/10)
		}
	}
	if !slices.Contains(out, cur) {
		out = append(out, cur)
	}
	return out
}

// inlineTakeUnknownSec: an inline batch made in less than this is told
// that the loop's cost of taking it from a worker, unmeasured inline, may
// exceed making it: 888 µs to 1 ms a batch of 32 token rows on this
// project's 2-core VM (2026-12-06), made in 470 µs inline.
const inlineTakeUnknownSec = 0.002

// MinPredictedGain is the least predicted gain worth a change: 10 %, twice
// the model's aim for its median error.
const MinPredictedGain = 1.10

// GoodEnough is the share of the best predicted throughput that the
// smallest change must reach: changing less for the last 5 % is the better
// trade (and within the model's own error).
const GoodEnough = 0.95

// planned is plan's answer: the change advised, if any, the prediction
// for applying it and what limits it, and what the change was weighed
// against, for the words that say why none was advised (cpuLimitWords).
type planned struct {
	changes   []Change
	predicted Prediction
	limit     Limit
	// now is the rate a change had to beat by MinPredictedGain, and point
	// the best point (the range's low side) of the worker counts weighed
	// other than the one measured, both in batches/s; 0 where unknown (a
	// sampled loop's rates, no other count).
	now, point float64
	// toRead: the change is persistent workers, made so that their CPU
	// is read and a count weighed (persistToRead), not for its gain.
	toRead bool
}

// persistToRead is the configuration as it is with its workers made
// persistent, where they restart every epoch too soon for their CPU to be
// read (WorkersCPUMissed): no worker count is weighed until it is, and
// persistence is what reads it (and saves each epoch's start-up, which
// its prediction counts). Advised for that, whatever it gains, so that
// tune measures it (a user's review: tune at PyTorch's default
// persistent_workers=False stopped after one run with "no worker count is
// weighed", where 2 workers gave 1.4–1.7×). Not where the script builds
// its DataLoader every epoch (persistence keeps nothing there), nor where
// the knob is unknown.
func persistToRead(p *Pipeline, cands []candidate) (candidate, bool) {
	cur := p.Knobs
	if !p.WorkersCPUMissed || cur.Workers == 0 || cur.Persistent || !cur.knownPersistent || p.NewLoaderEveryEpoch || p.Relative {
		return candidate{}, false
	}
	for _, c := range cands {
		if c.k.Workers == cur.Workers && c.k.Persistent && c.k.Cache == cur.Cache {
			return c, true
		}
	}
	return candidate{}, false
}

// plan searches the knobs the model can change (workers, persistence,
// caching) for the configuration with the best predicted throughput, and
// returns the smallest change that reaches GoodEnough of it, the
// prediction for applying it, and what limits it. No change is returned
// when none predicts MinPredictedGain over both what was measured and what
// the model gives the configuration as it is. problem: the verdict names
// a problem; persistence advised only to read the workers' CPU
// (persistToRead) is not advised to a job judged healthy, whose input is
// not its limit (a review: a healthy job was told to make its workers
// persistent, for no gain).
func plan(p *Pipeline, cores int, problem bool) planned {
	cur := p.Knobs
	cands := candidates(p, cores)
	// The throughput a prediction gives: samples/s, or for a sampled loop
	// (rates unknown) its gain over what was measured. Configurations are
	// weighed by the range's high side, the model with no contention
	// beyond what was measured: contention unknown says how far short a
	// change may fall, not which change is the right one.
	rate := func(pr Prediction) float64 {
		if p.Relative {
			return max(pr.Gain, pr.HighGain)
		}
		return max(pr.SamplesPerSec, pr.HighSamplesPerSec)
	}
	best := 0.0
	for _, c := range cands {
		best = max(best, rate(c.pred))
	}
	pick := -1
	for i, c := range cands {
		if rate(c.pred) >= GoodEnough*best && (pick < 0 || c.cost < cands[pick].cost) {
			pick = i
		}
	}
	// A change is advised on its high side; its point may fall short of
	// the measured rate where the contention assumed would eat the gain,
	// and the advice line's range says so (docs/diagnosis.md, "The
	// range"). Not where the CPUs are its limit: workers added to a box
	// whose CPUs they fill contend for certain, and the point is the
	// promise (2 CPU-bound workers on 2 cores: a third was advised for
	// 745–770 samples/s from 680, a 10 % gain only without contention).
	point := func(pr Prediction) float64 {
		if p.Relative {
			return pr.Gain
		}
		return pr.SamplesPerSec
	}
	worth := func(c candidate) float64 {
		if c.limit == LimitCPU || c.pred.ContendedLimit == LimitCPU.String() {
			return point(c.pred)
		}
		return rate(c.pred)
	}
	now, nowLimit := p.Predict(cur)
	bar := MinPredictedGain * max(rate(p.Measured), rate(now))
	if pick >= 0 && cands[pick].cost > 0 && worth(cands[pick]) < bar {
		// Held back by its point, the best change may not be the only
		// one: a smaller one the CPUs do not hold may be worth it on its
		// own terms (a review: 1 worker 1.29× at its point, where 2 were
		// weighed by theirs, 1.08×, and nothing was advised).
		for i, c := range cands {
			if c.cost > 0 && worth(c) >= bar && worth(c) > worth(cands[pick]) {
				pick = i
			}
		}
	}
	if pick < 0 || cands[pick].cost == 0 || worth(cands[pick]) < bar {
		if c, ok := persistToRead(p, cands); ok && problem {
			return planned{changes: changesTo(p, c), predicted: c.pred, limit: c.limit, toRead: true}
		}
		pl := planned{limit: heldBy(p, cands, rate, best, nowLimit)}
		if !p.Relative && p.BatchSize > 0 {
			pl.now = max(rate(p.Measured), rate(now)) / p.BatchSize
			for _, c := range cands {
				if c.k.Workers != cur.Workers && c.k.Workers > 0 {
					pl.point = max(pl.point, point(c.pred)/p.BatchSize)
				}
			}
		}
		return pl
	}
	c := cands[pick]
	return planned{changes: changesTo(p, c), predicted: c.pred, limit: c.limit}
}

// heldBy is what holds the best configuration back where no change is
// advised (plan): what no knob moves. Loading inline, not worth it, does
// not say why the workers' configuration is held back: the configuration
// as it is does (nowLimit).
func heldBy(p *Pipeline, cands []candidate, rate func(Prediction) float64, best float64, nowLimit Limit) Limit {
	cur := p.Knobs
	limit := LimitStep
	for _, c := range cands {
		if rate(c.pred) >= best {
			limit = c.limit
			if c.k.Workers == 0 && cur.Workers > 0 {
				limit = nowLimit
			}
		}
	}
	if limit == LimitInline && p.inlineTakeSec(false) > 0 {
		// Loading inline beats any worker count: where the best of
		// those is held by the loop's take of each batch, that is why.
		var w *candidate
		for i, c := range cands {
			if c.k.Workers > 0 && (w == nil || rate(c.pred) > rate(w.pred)) {
				w = &cands[i]
			}
		}
		if w != nil && w.limit == LimitLoop {
			limit = LimitLoop
		}
	}
	return limit
}

// candidate is one configuration plan weighs: the knobs, what the model
// predicts for them and what limits that, and the cost of the change from
// the knobs now (one a knob changed, more for many workers added, most for
// the RAM a cache spends).
type candidate struct {
	k     Knobs
	pred  Prediction
	limit Limit
	cost  float64
}

// candidates are the configurations the model can reach from p's knobs:
// every worker count workerCounts tries, with and without persistent
// workers and the cache where those can change (prefetch 2 once there are
// workers), each predicted.
func candidates(p *Pipeline, cores int) []candidate {
	cur := p.Knobs
	var cands []candidate
	counts := workerCounts(cur.Workers, cores)
	if cur.Workers > 0 && !p.Relative && p.OverheadSec > 0 {
		// Loading inline again, where taking each batch from a worker
		// costs the loop: a batch of tokens or rows that takes the loop
		// longer to unpickle than to make (a review: 2 workers gave 21k
		// samples/s, none 38–40k, and tune said no knob helps). The
		// model's inline rate is the step plus a worker's whole time per
		// batch, which an inline loop does not beat by much.
		counts = append([]int{0}, counts...)
	}
	if p.WorkersCPUMissed {
		// Their CPU unread: no count is advised until they persist. But
		// loading inline, where taking each batch from them costs the loop
		// (counted above): a worker's time per batch unsplit is its wall
		// time, more than the loop would spend making it, so its
		// prediction is short, not long (a review: 2 workers restarting
		// every epoch gave 29k samples/s, none 158k, and the advice said no
		// knob helps).
		counts = slices.DeleteFunc(counts, func(w int) bool { return w != 0 && w != cur.Workers })
	}
	for _, w := range counts {
		for _, pers := range bools(cur.Persistent, cur.knownPersistent && w > 0) {
			for _, cache := range bools(cur.Cache, cur.knownPC && p.CacheFits) {
				k := cur
				k.Workers, k.Persistent, k.Cache = w, pers, cache
				if w == 0 {
					k.Persistent = false
				}
				if w > 0 && k.Prefetch == 0 {
					k.Prefetch = sample.PrefetchWithWorkers
				}
				pred, limit := p.Predict(k)
				cost := 0.0
				if w != cur.Workers {
					cost += 1 + math.Abs(float64(w-cur.Workers))/100
				}
				if k.Persistent != cur.Persistent && w > 0 {
					cost += 1
				}
				if k.Cache != cur.Cache {
					cost += 1.5 // RAM is spent
				}
				cands = append(cands, candidate{k, pred, limit, cost})
			}
		}
	}
	return cands
}

// changesTo are the changes that take p's knobs to c's, each with the knob
// and flag that set it and why: workers (with prefetch where the embedded
// loader needs it set), persistent workers, the cache.
func changesTo(p *Pipeline, c candidate) []Change {
	cur := p.Knobs
	var out []Change
	if c.k.Workers != cur.Workers {
		out = append(out, Change{Knob: sample.KnobWorkers.Name, Flag: p.flag(sample.KnobWorkers), From: strconv.Itoa(cur.Workers), To: strconv.Itoa(c.k.Workers),
			Why: workersWhy(p, cur.Workers, c.k.Workers, c.limit)})
		if cur.Workers == 0 && c.k.Workers > 0 && cur.Prefetch == 0 && p.Kind != "python" {
			// (PyTorch sets prefetch_factor 2 itself once there are workers.)
			out = append(out, Change{Knob: sample.KnobPrefetch.Name, Flag: p.flag(sample.KnobPrefetch), From: "0", To: strconv.Itoa(sample.PrefetchWithWorkers),
				Why: fmt.Sprintf("with workers, each keeps %d batches ready (PyTorch's default)", sample.PrefetchWithWorkers)})
		}
	}
	if c.k.Persistent != cur.Persistent && c.k.Workers > 0 {
		why := fmt.Sprintf("workers restart every epoch: %s before each epoch's first batch", sample.FormatDuration(p.EpochStallSec))
		if cur.Workers == 0 {
			// Added with the workers: their start is not measured (a
			// review: plan weighed the persistent ones and said only
			// "num_workers 0 → 1").
			why = fmt.Sprintf("workers that do not persist restart every epoch: each epoch of %.0f batches would wait about %s for its first (a worker's start and its first batch)",
				p.BatchesPerEpoch, sample.FormatDuration(p.epochStall(p.IOSec+p.CPUWaitSec+p.CPUSec+p.HandOverSec, true)))
		}
		c := Change{Knob: sample.KnobPersistent.Name, Flag: p.flag(sample.KnobPersistent), From: "false", To: "true", Why: why}
		if cur.persistentInVain {
			c.From = "true" // as the script sets it: the change is the DataLoader's place
		}
		if p.NewLoaderEveryEpoch {
			// persistent_workers on a DataLoader made anew each epoch
			// keeps nothing: its workers are that DataLoader's.
			c.Why += "; the script builds a new DataLoader every epoch, on which persistent_workers keeps nothing"
			c.With = "the DataLoader built once, before the epoch loop"
		}
		out = append(out, c)
	}
	if c.k.Cache != cur.Cache {
		why := "the dataset fits in RAM: read it once, and storage is out of the way"
		if bw := cmp.Or(p.ColdReadBytesPerSec, p.BandwidthBytesPerSec); bw > 0 && p.DatasetBytes > 0 {
			why += fmt.Sprintf(" (the one read of %s takes ~%.1f s at %s/s)", formatRate(p.DatasetBytes), p.DatasetBytes/bw, formatRate(bw))
		}
		if copied := p.BytesPerBatch / ramCopyBytesPerSec; p.ReadCPUSec > 2*copied && p.ReadCPUSec >= 0.25*p.CPUSec {
			why += fmt.Sprintf("; a batch's reads take %s of CPU, its copy from RAM %s", sample.FormatDuration(p.ReadCPUSec), sample.FormatDuration(copied))
		}
		out = append(out, Change{Knob: sample.KnobCache.Name, Flag: p.flag(sample.KnobCache), From: "false", To: "true", Why: why})
	}
	return out
}

// takeWords says what inlineTakeSec prices: "about 820µs–1.9ms for the 2
// torch tensors a batch holds (unpickling each …: 340µs–800µs a tensor and
// 140µs–260µs a batch on the machines measured, docs/diagnosis.md)".
func (p *Pipeline) takeWords() string {
	d := sample.FormatDuration
	if p.TakeTensors == 0 && !p.TakeTensorsCut {
		return fmt.Sprintf("about %s–%s a batch (its trip from the worker's queue, unpickled: %s–%s on the machines measured, docs/diagnosis.md)",
			d(p.inlineTakeSec(false)), d(p.inlineTakeSec(true)), d(takeBatchFastSec), d(takeBatchSec))
	}
	n := sample.Plural(p.TakeTensors, "torch tensor")
	if p.TakeTensorsCut {
		n = fmt.Sprintf("%d or more tensors", p.TakeTensors)
	}
	return fmt.Sprintf("about %s–%s for the %s a batch holds (unpickling each and fetching its shared memory from the worker: %s–%s a tensor and %s–%s a batch on the machines measured, docs/diagnosis.md)",
		d(p.inlineTakeSec(false)), d(p.inlineTakeSec(true)), n, d(takeTensorFastSec), d(takeTensorSec), d(takeBatchFastSec), d(takeBatchSec))
}

// flag is how a knob is set on this pipeline's loader: a PyTorch
// DataLoader's keyword (num_workers), or the flag of gpuwatch's own loader
// (--workers).
func (p *Pipeline) flag(k *sample.Knob) string { return k.SetBy(p.Kind == "python") }

// bools is the values to try for a boolean knob: its own, and the other
// when changing it is possible.
func bools(cur, canChange bool) []bool {
	if canChange {
		return []bool{cur, !cur}
	}
	return []bool{cur}
}

func workersWhy(p *Pipeline, from, to int, limit Limit) string {
	batch := p.IOSec + p.CPUSec + p.CPUWaitSec + p.HandOverSec
	d := sample.FormatDuration
	s := fmt.Sprintf("a batch takes a worker %s (%s waiting on storage, %s of CPU) and the step %s",
		d(batch), d(p.IOSec), d(p.CPUSec), d(p.StepSec))
	if p.CPUWaitSec > 0 {
		s = fmt.Sprintf("a batch takes a worker %s (%s of CPU, %s waiting for a CPU, %s waiting on storage or the network) and the step %s",
			d(batch), d(p.CPUSec), d(p.CPUWaitSec), d(p.IOSec), d(p.StepSec))
	}
	if p.HandOverSec > 0 {
		parts := []string{d(p.CPUSec) + " of CPU"}
		if p.CPUWaitSec > 0 {
			parts = append(parts, d(p.CPUWaitSec)+" waiting for a CPU")
		}
		parts = append(parts, d(p.HandOverSec)+" handing it over")
		if p.IOSec > 0 {
			parts = append(parts, d(p.IOSec)+" waiting on storage or the network")
		}
		s = fmt.Sprintf("a batch takes a worker %s (%s) and the step %s", d(batch), strings.Join(parts, ", "), d(p.StepSec))
	}
	if from == 0 {
		s = fmt.Sprintf("the training loop loads each batch itself (%s) between steps of %s", d(batch), d(p.StepSec))
		if p.Kind == "python" && p.TakeLooked {
			s += "; taking each batch from a worker will cost the loop " + p.takeWords() + " (priced: not measured inline)"
		} else if p.Kind == "python" && batch < inlineTakeUnknownSec {
			// What taking each batch from a worker will cost the loop
			// is not measured inline (a review: 0 → 1 promised 66k
			// samples/s where 2 workers gave 21.7k and none 38k).
			s += "; what taking each batch from a worker costs the loop (unpickling it, the GIL) is not measured inline, and for a batch made this fast it can cost more than making it"
		}
	}
	if to == 0 && from > 0 {
		if p.MakeSec > 0 {
			return fmt.Sprintf("taking each batch from a worker costs the loop %s (unpickling it, the pin-memory handoff, the GIL), more than making it: a worker makes one in %s (its getitem and collate), which the loop spends instead",
				d(p.OverheadSec), d(p.MakeSec))
		}
		return fmt.Sprintf("taking each batch from a worker costs the loop %s (unpickling it, the pin-memory handoff, the GIL), more than making it: a worker's whole time per batch is %s, which the loop spends instead",
			d(p.OverheadSec), d(p.IOSec+p.CPUSec+p.CPUWaitSec))
	}
	if p.Relative {
		// Times are in units of the step (the loop's rates are unknown).
		s = fmt.Sprintf("a batch takes a worker %.2g× the step (%.2g× of it waiting on storage, %.2g× of CPU)", batch, p.IOSec, p.CPUSec)
		if p.CPUWaitSec > 0 {
			s = fmt.Sprintf("a batch takes a worker %.2g× the step (%.2g× of it CPU, %.2g× waiting for a CPU, %.2g× waiting on storage or the network)",
				batch, p.CPUSec, p.CPUWaitSec, p.IOSec)
		}
		if from == 0 {
			s = fmt.Sprintf("the training loop loads each batch itself, %.2g× the step", batch)
			if p.Measured.WaitShare > sampledWaitMax {
				s = fmt.Sprintf("the training loop loads each batch itself, %.2g× the step or more (the samples saw it running all the time: its step's waits on the GPU under %.0f %% of its time, read as that)",
					batch, 100*(1-sampledWaitMax))
			}
		}
	}
	switch limit {
	case LimitCPU:
		s += fmt.Sprintf("; past %s the %.1f CPUs they can get are the limit", sample.Plural(to, "worker"), p.workersGet())
		if p.LocalRanks > 1 {
			s += fmt.Sprintf(" (a rank's: each of the node's %d ranks adds as many)", p.LocalRanks)
		}
		if p.SpinCPUs >= 0.1 {
			s += fmt.Sprintf(" (a spinning compute pool keeps %.1f)", p.SpinCPUs)
		}
	case LimitBandwidth:
		s += fmt.Sprintf("; past %s storage (%s/s) is the limit", sample.Plural(to, "worker"), formatRate(p.BandwidthBytesPerSec))
	case LimitStep:
		if to == 1 {
			s += "; 1 keeps up with the step"
		} else {
			s += fmt.Sprintf("; %d keep up with the step", to)
		}
	}
	return s
}

// workersGet is the CPUs the advice says the workers get: CPUs, or what
// is left of a rank's share beside the core its training process keeps
// (keptCPUs: "0.5 CPUs … a core each" on 2 cores read as a contradiction;
// a review).
func (p *Pipeline) workersGet() float64 {
	if p.KeepCPUs > 0 {
		return min(p.CPUs, p.keptCPUs())
	}
	return p.CPUs
}

// leftWords says what the workers' CPUs are: what is left beside the
// training process, or a rank's share where the node runs several.
func (p *Pipeline) leftWords() string {
	if p.LocalRanks > 1 {
		return fmt.Sprintf("one rank's share of what the node's %d ranks' training processes, a core each, and the processes outside the job leave: a change to the script adds its workers on every rank", p.LocalRanks)
	}
	return "what the training process and the processes outside the job leave"
}

// noKnobHelps says why no change is advised, with the limiting number.
func noKnobHelps(p *Pipeline, pl planned, th Thresholds) string {
	limit := pl.limit
	if p.WorkersCPUMissed && (limit == LimitWorkers || limit == LimitCPU) {
		fix := "with persistent_workers=True their CPU is read, and the count weighed"
		switch {
		case p.NewLoaderEveryEpoch:
			fix = "with the DataLoader built once, before the epoch loop (the script builds a new one every epoch, whose workers start anew whatever persistent_workers says), their CPU is read, and the count weighed"
		case !p.Knobs.knownPersistent:
			// A sampled loop: whether the knob or the script's loop
			// restarts them is not known.
			fix = "workers that live across epochs (persistent_workers=True, on a DataLoader built once, before the epoch loop) have their CPU read, and the count weighed"
		}
		return fmt.Sprintf("no worker count is weighed: the workers restart every epoch and live too short for /proc to read their CPU whole (it counts a process's CPU between two of gpuwatch's readings: an epoch under %d readings, or workers that lived under 10 s), so a batch's time cannot be split into CPU and waiting; ", shortLivedFrames) + fix
	}
	switch limit {
	case LimitCPU:
		return p.cpuLimitWords(pl)
	case LimitBandwidth:
		if p.ColdReadBytesPerSec > p.BandwidthBytesPerSec {
			return fmt.Sprintf("more workers cannot help: the disk reads %s/s and the samples get %s/s of it, %.0f batches/s of %s", formatRate(p.ColdReadBytesPerSec),
				formatRate(p.BandwidthBytesPerSec), p.BandwidthBytesPerSec/p.BytesPerBatch, formatRate(p.BytesPerBatch))
		}
		return fmt.Sprintf("more workers cannot help: storage gives %s/s, %.0f batches/s of %s", formatRate(p.BandwidthBytesPerSec),
			p.BandwidthBytesPerSec/p.BytesPerBatch, formatRate(p.BytesPerBatch))
	case LimitStep:
		if w := p.Measured.WaitShare; w >= th.WaitShareModerate {
			// The model has the workers keeping up, the loop waits all
			// the same: said, not "the loader keeps up" beside "the
			// loop waits 29 %" (a review).
			if p.Knobs.Workers == 0 { // loading inline: no workers to keep up (a user's review)
				return fmt.Sprintf("no loader knob the model knows raises throughput: by its measured loading per batch the loop keeps up with the step, which does not account for its %.0f %% wait (a stall inside the step, or loading the model does not time)", 100*w)
			}
			return fmt.Sprintf("no loader knob the model knows raises throughput: by the workers' measured time per batch they keep up with the step, which does not account for the loop's %.0f %% wait (what the workers' clocks and CPU do not show: their start-up, a stall inside the step)", 100*w)
		}
		return "the loader keeps up with the step: no loader knob raises throughput"
	case LimitInline:
		// Workers would not load faster: the CPUs they could have here
		// (what the training process and the processes outside the job
		// leave) are too few.
		return fmt.Sprintf("no loader knob raises throughput: the loop loads each batch itself, and workers would get %.1f CPUs here (%s), too few to load faster than it does", p.workersGet(), p.leftWords())
	case LimitLoop:
		if p.Knobs.Workers == 0 {
			// Workers would trade the loading for the take, and the step
			// stays: either the take costs more than the loading, or what
			// it saves is under MinPredictedGain of the loop's time.
			return fmt.Sprintf("no loader knob raises throughput: the loop loads each batch itself in %s beside a step of %s, and with workers it would take each from a worker instead: %s",
				sample.FormatDuration(p.IOSec+p.CPUSec), sample.FormatDuration(p.StepSec), p.takeWords())
		}
		if p.Relative { // times in units of the step: no seconds to show
			return fmt.Sprintf("no loader knob raises throughput: the workers keep batches ready, and the loop's own time per batch is the limit (taking each batch costs %.1f× its step: unpickling it, the pin-memory handoff, the GIL)", p.OverheadSec)
		}
		return fmt.Sprintf("no loader knob raises throughput: the workers keep batches ready, and the loop's own time per batch is the limit (its step %s, and %s taking each batch: unpickling it, the pin-memory handoff, the GIL)",
			sample.FormatDuration(p.StepSec), sample.FormatDuration(p.OverheadSec))
	}
	return fmt.Sprintf("no loader knob the model knows raises throughput (limited by %s)", limit)
}

// cpuLimitWords says why no worker count is advised where the workers'
// CPUs are the limit: at the rate cpuRate holds them to (the loop's own
// CPU a batch reserved beside theirs), not CPUs ÷ CPU a batch, which read
// 103 batches/s beside a gain that put the job at 109.5. Where that rate,
// the range's high side, is a gain worth a change, the point is what
// held the change back (plan weighs a CPU-bound change by it, and hands
// over the best point and the rate it weighed against: pl), and both
// are said: "cannot help" beside "at most 147 batches/s" read as a
// contradiction at 118 now (a review).
func (p *Pipeline) cpuLimitWords(pl planned) string {
	have := "the workers have"
	if p.Knobs.Workers == 0 {
		have = "workers would have here" // none yet (a user's review: "the 0.8 CPUs the workers have" of a loop loading inline)
	}
	if p.Relative {
		return fmt.Sprintf("more workers cannot help: the %.1f CPUs %s are the limit", p.CPUs, have) + p.spinWords()
	}
	high := p.cpuRate(p.CPUSec)
	s := fmt.Sprintf("more workers cannot help: the %.1f CPUs %s are the limit (%s of CPU per batch, at most %s batches/s)",
		p.workersGet(), have, sample.FormatDuration(p.CPUSec), perSec(high))
	if now := pl.now; pl.point > 0 && now > 0 && high >= MinPredictedGain*now {
		s = fmt.Sprintf("more workers cannot help enough: the %.1f CPUs %s are the limit (%s of CPU per batch): at most %s batches/s with no contention beyond what was measured (%.2f× the %s now), and about %s (%.2f×) once the workers added contend for the cores they fill; a change must promise %.0f %%",
			p.workersGet(), have, sample.FormatDuration(p.CPUSec), perSec(high), high/now, perSec(now), perSec(pl.point), pl.point/now, 100*(MinPredictedGain-1))
	}
	if p.LocalRanks > 1 {
		s += "; " + p.leftWords()
	}
	return s + p.spinWords()
}

// perSec is a rate in words: whole above 10, a tenth above 1, two
// significant figures under (a video loop's 0.4 batches/s read "0").
func perSec(v float64) string {
	switch {
	case v >= 10:
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

// spinWords says what a spinning compute pool keeps from the workers,
// and how to give it back; "" where it keeps under a tenth of a CPU.
func (p *Pipeline) spinWords() string {
	if p.SpinCPUs < 0.1 {
		return ""
	}
	return fmt.Sprintf("; the training process's compute pool spins idle beside them and keeps %.1f CPUs from them (OpenBLAS): OPENBLAS_NUM_THREADS=1 (or OMP_NUM_THREADS=1) in its environment gives that back", p.SpinCPUs)
}

func formatRate(b float64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.0f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}

// Words is the change as every view says it: "num_workers 2 → 8",
// "persistent_workers false → true (with the DataLoader built once,
// before the epoch loop)", or, where the knob is set already and what
// changes is the code around it, "the DataLoader built once, before the
// epoch loop, keeping persistent_workers true" (a review: the dashboard
// said "persistent_workers true → true").
func (c Change) Words() string {
	switch {
	case c.From == c.To && c.With != "":
		return c.With + ", keeping " + c.Knob + " " + c.To
	case c.With != "":
		return c.Knob + " " + c.From + " → " + c.To + " (with " + c.With + ")"
	}
	return c.Knob + " " + c.From + " → " + c.To
}

// changeLine is the advice line for a set of changes, with the
// prediction's range (its low side first, the point) and the limit it
// meets next: "num_workers 1 → 4: ≈ 1219–1509 samples/s (now 464), wait
// 69 % → 19 %; then limited by the step (by the workers if the added ones
// contend)", or for a sampled loop, whose rates are unknown, "≈ 2.2–2.4×
// the throughput now". A range whose sides print the same is one figure.
func changeLine(cs []Change, pred, now Prediction) string {
	s := ""
	for i, c := range cs {
		if i > 0 {
			s += ", "
		}
		s += c.Words()
	}
	next := ""
	if pred.Limit != "" {
		next = "; then limited by " + pred.Limit
		if pred.ContendedLimit != "" {
			next += " (by " + pred.ContendedLimit + " on the range's low side)"
		}
	}
	if pred.SamplesPerSec == 0 && pred.Gain > 0 {
		return fmt.Sprintf("%s: ≈ %s× the throughput now, wait %.0f %% → %.0f %%%s", s, span(pred.Gain, pred.HighGain, "%.1f"), 100*now.WaitShare, 100*pred.WaitShare, next)
	}
	return fmt.Sprintf("%s: ≈ %s samples/s (now %.0f), wait %.0f %% → %.0f %%%s",
		s, span(pred.SamplesPerSec, pred.HighSamplesPerSec, "%.0f"), now.SamplesPerSec, 100*now.WaitShare, 100*pred.WaitShare, next)
}

// span writes a range low–high in format f, or one figure where both
// sides print the same (or the high side is unknown).
func span(low, high float64, f string) string {
	l, h := fmt.Sprintf(f, low), fmt.Sprintf(f, high)
	if high <= low || l == h {
		return l
	}
	return l + "–" + h
}

package diagnose

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
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
}

// workerCounts are the worker counts the model tries: every count up to 64,
// then steps of about 10 % up to twice the current count or four per core
// (workers that wait on storage can outnumber cores), the current count
// included.
func workerCounts(cur, cores int) []int {
	top := min(4096, max(2*cur, cur+4, 4*cores))
	var out []int
	for w := 0; w <= top; {
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

// MinPredictedGain is the least predicted gain worth a change: 10 %, twice
// the model's aim for its median error.
const MinPredictedGain = 1.10

// GoodEnough is the share of the best predicted throughput that the
// smallest change must reach: changing less for the last 5 % is the better
// trade (and within the model's own error).
const GoodEnough = 0.95

// plan searches the knobs the model can change (workers, persistence,
// caching) for the configuration with the best predicted throughput, and
// returns the smallest change that reaches GoodEnough of it, the
// prediction for applying it, and what limits it. No change is returned
// when none predicts MinPredictedGain over both what was measured and what
// the model gives the configuration as it is.
func plan(p *Pipeline, cores int) ([]Change, Prediction, Limit) {
	cur := p.Knobs
	type cand struct {
		k     Knobs
		pred  Prediction
		limit Limit
		cost  float64
	}
	var cands []cand
	for _, w := range workerCounts(cur.Workers, cores) {
		for _, pers := range bools(cur.Persistent, cur.knownPersistent && w > 0) {
			for _, cache := range bools(cur.Cache, cur.knownPC && p.CacheFits) {
				k := cur
				k.Workers, k.Persistent, k.Cache = w, pers, cache
				if w == 0 {
					k.Persistent = false
				}
				if w > 0 && k.Prefetch == 0 {
					k.Prefetch = 2 // PyTorch's default once there are workers
				}
				pred, limit := p.Predict(k)
				cost := 0.0
				if w != cur.Workers {
					cost += 1 + math.Abs(float64(w-cur.Workers))/100
				}
				if k.Persistent != cur.Persistent && w > 0 && cur.Workers > 0 {
					cost += 1
				}
				if k.Cache != cur.Cache {
					cost += 1.5 // RAM is spent
				}
				cands = append(cands, cand{k, pred, limit, cost})
			}
		}
	}
	best := 0.0
	for _, c := range cands {
		best = max(best, c.pred.SamplesPerSec)
	}
	pick := -1
	for i, c := range cands {
		if c.pred.SamplesPerSec >= GoodEnough*best && (pick < 0 || c.cost < cands[pick].cost) {
			pick = i
		}
	}
	now, _ := p.Predict(cur)
	if pick < 0 || cands[pick].cost == 0 || cands[pick].pred.SamplesPerSec < MinPredictedGain*max(p.Measured.SamplesPerSec, now.SamplesPerSec) {
		// What holds the best configuration back is what no knob moves.
		limit := LimitStep
		for _, c := range cands {
			if c.pred.SamplesPerSec >= best {
				limit = c.limit
			}
		}
		return nil, Prediction{}, limit
	}
	c := cands[pick]
	var out []Change
	if c.k.Workers != cur.Workers {
		out = append(out, Change{Knob: "num_workers", Flag: "--workers", From: strconv.Itoa(cur.Workers), To: strconv.Itoa(c.k.Workers),
			Why: workersWhy(p, cur.Workers, c.k.Workers, c.limit)})
		if cur.Workers == 0 && c.k.Workers > 0 && cur.Prefetch == 0 {
			out = append(out, Change{Knob: "prefetch_factor", Flag: "--prefetch", From: "0", To: "2",
				Why: "with workers, each keeps 2 batches ready (PyTorch's default)"})
		}
	}
	if c.k.Persistent != cur.Persistent && c.k.Workers > 0 && cur.Workers > 0 {
		out = append(out, Change{Knob: "persistent_workers", Flag: "--persistent", From: "false", To: "true",
			Why: fmt.Sprintf("workers restart every epoch: %.0f ms before each epoch's first batch", 1000*p.EpochStallSec)})
	}
	if c.k.Cache != cur.Cache {
		why := "the dataset fits in RAM: read it once, and storage is out of the way"
		if bw := cmp.Or(p.ColdReadBytesPerSec, p.BandwidthBytesPerSec); bw > 0 && p.DatasetBytes > 0 {
			why += fmt.Sprintf(" (the one read of %s takes ~%.1f s at %s/s)", formatRate(p.DatasetBytes), p.DatasetBytes/bw, formatRate(bw))
		}
		out = append(out, Change{Knob: "cache", Flag: "--cache", From: "false", To: "true", Why: why})
	}
	return out, c.pred, c.limit
}

// bools is the values to try for a boolean knob: its own, and the other
// when changing it is possible.
func bools(cur, canChange bool) []bool {
	if canChange {
		return []bool{cur, !cur}
	}
	return []bool{cur}
}

func workersWhy(p *Pipeline, from, to int, limit Limit) string {
	batch := p.IOSec + p.CPUSec
	s := fmt.Sprintf("a batch takes a worker %.0f ms (%.0f ms waiting on storage, %.0f ms of CPU) and the step %.0f ms",
		1000*batch, 1000*p.IOSec, 1000*p.CPUSec, 1000*p.StepSec)
	if from == 0 {
		s = fmt.Sprintf("the training loop loads each batch itself (%.0f ms) between steps of %.0f ms", 1000*batch, 1000*p.StepSec)
	}
	switch limit {
	case LimitCPU:
		s += fmt.Sprintf("; past %d workers the %.1f CPUs are the limit", to, p.CPUs)
	case LimitBandwidth:
		s += fmt.Sprintf("; past %d workers storage (%s/s) is the limit", to, formatRate(p.BandwidthBytesPerSec))
	case LimitStep:
		s += fmt.Sprintf("; %d keep up with the step", to)
	}
	return s
}

// noKnobHelps says why no change is advised, with the limiting number.
func noKnobHelps(p *Pipeline, limit Limit) string {
	switch limit {
	case LimitCPU:
		return fmt.Sprintf("more workers cannot help: the %.1f CPUs the workers have are the limit (%.0f ms of CPU per batch, at most %.0f batches/s)",
			p.CPUs, 1000*p.CPUSec, p.CPUs/p.CPUSec)
	case LimitBandwidth:
		if p.ColdReadBytesPerSec > p.BandwidthBytesPerSec {
			return fmt.Sprintf("more workers cannot help: the disk reads %s/s and the samples get %s/s of it, %.0f batches/s of %s", formatRate(p.ColdReadBytesPerSec),
				formatRate(p.BandwidthBytesPerSec), p.BandwidthBytesPerSec/p.BytesPerBatch, formatRate(p.BytesPerBatch))
		}
		return fmt.Sprintf("more workers cannot help: storage gives %s/s, %.0f batches/s of %s", formatRate(p.BandwidthBytesPerSec),
			p.BandwidthBytesPerSec/p.BytesPerBatch, formatRate(p.BytesPerBatch))
	case LimitStep:
		return "the loader keeps up with the step: no loader knob raises throughput"
	}
	return fmt.Sprintf("no loader knob the model knows raises throughput (limited by %s)", limit)
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

// changeLine is the advice line for a set of changes:
// "num_workers 1 → 4: ≈ 250 samples/s (now 66), wait 84 % → 10 %".
func changeLine(cs []Change, pred, now Prediction) string {
	s := ""
	for i, c := range cs {
		if i > 0 {
			s += ", "
		}
		s += c.Knob + " " + c.From + " → " + c.To
	}
	return fmt.Sprintf("%s: ≈ %.0f samples/s (now %.0f), wait %.0f %% → %.0f %%",
		s, pred.SamplesPerSec, now.SamplesPerSec, 100*now.WaitShare, 100*pred.WaitShare)
}

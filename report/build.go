package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/recording"
	"github.com/gpuwatch/gpuwatch/sample"
)

// Build makes the report of a recording: verdicts recomputed from the
// frames with th (as replay does), evidence and advice, and chart series.
// It reads the frames once, in order, holding none: what it keeps is
// bounded (MaxPoints points a series, MaxRanks ranks), whatever the
// recording's length.
func Build(rec *recording.Recording, file string, th diagnose.Thresholds, now time.Time) *Summary {
	s := &Summary{ReportVersion: ReportVersion, Generated: now, Recording: recordingInfo(rec, file)}
	n := rec.Len()
	if n == 0 {
		return s
	}
	first, err1 := rec.Frame(0)
	if err1 != nil {
		s.Recording.Warnings = append(s.Recording.Warnings, err1.Error())
		return s
	}
	start, startCores := first.Frame.Time, cores(&first.Frame)
	last, err2 := rec.Frame(n - 1)
	if err2 != nil {
		s.Recording.Warnings = append(s.Recording.Warnings, err2.Error())
		return s
	}
	end := last.Frame.Time
	s.Recording.Start, s.Recording.End, s.Recording.DurationSec = start, end, end.Sub(start).Seconds()

	b := newBuilder(s, th, start, end.Sub(start).Seconds(), min(MaxPoints, n), max(rec.Header.Cores, startCores, cores(&last.Frame)))
	err := rec.Each(func(_ int, r *recording.Recorded) error {
		b.add(&r.Frame)
		return nil
	})
	if err != nil {
		s.Recording.Warnings = append(s.Recording.Warnings, err.Error())
	}
	b.finish()
	return s
}

func cores(f *sample.Frame) int {
	if f.CPU == nil {
		return 0
	}
	return len(f.CPU.Cores)
}

// builder is a report being built, a frame at a time.
type builder struct {
	s       *Summary
	d       *diagnose.Diagnoser
	best    map[diagnose.Kind]diagnose.Verdict
	bestAt  map[diagnose.Kind]time.Time // the frame each best verdict was read on
	seconds map[diagnose.Kind]float64
	// pending is the latest frame's time and verdict: a frame stands for
	// the time until the next one, known when the next one comes.
	pending  *sample.Frame
	kind     diagnose.Kind
	frames   int
	checked  int    // frames whose numbers Check changed
	firstBad string // the first of them, in words

	series *seriesBuilder
	ranks  *rankBuilder
	loader *loaderBuilder
	self   selfBuilder
	hook   hookBuilder
	gpus   gpuBuilder
}

func newBuilder(s *Summary, th diagnose.Thresholds, start time.Time, dur float64, points, cores int) *builder {
	return &builder{s: s, d: diagnose.NewDiagnoser(th), best: map[diagnose.Kind]diagnose.Verdict{}, bestAt: map[diagnose.Kind]time.Time{}, seconds: map[diagnose.Kind]float64{},
		series: newSeriesBuilder(start, dur, points, cores), ranks: newRankBuilder(start, dur, points), loader: newLoaderBuilder()}
}

func (b *builder) add(f *sample.Frame) {
	v := b.d.Observe(f)
	b.close(f.Time.Sub(b.pendingTime()).Seconds())
	b.pending, b.kind = f, v.Kind
	b.frames++
	// Each kind's verdict is its most confident, and of those the first
	// that says the most: a streak's first frame is as confident as its
	// last, but the causes and the model's prediction come with the
	// frames after it (a real H200 run's report gave the first's bare
	// advice, not its decode and augment causes and its prediction).
	if bv, ok := b.best[v.Kind]; !ok || v.Confidence > bv.Confidence || v.Confidence == bv.Confidence && says(v) > says(bv) {
		b.best[v.Kind], b.bestAt[v.Kind] = v, f.Time
	}
	if m := f.Mem; m != nil {
		b.s.Recording.MemTotalBytes = m.TotalBytes
	}
	if f.Job != nil {
		b.s.Recording.Job = f.Job.Summary()
	}
	if p := f.PacingProfile(); p != nil && len(p.Categories) > 0 {
		b.s.Profile = knownCategories(p)
	}
	if note := f.Unavailable[sample.SourceRecording]; note != "" {
		if b.checked++; b.firstBad == "" {
			b.firstBad = f.Time.Format("15:04:05") + ": " + note
		}
	}
	b.series.add(f)
	b.ranks.add(f, v.Straggler)
	b.loader.add(f.Loader)
	b.loader.addStep(f)
	b.self.add(f)
	b.hook.add(f)
	b.gpus.add(f)
}

// says is how much a verdict tells beyond its kind: its causes, then a
// prediction.
func says(v diagnose.Verdict) int {
	n := 2 * len(v.Causes)
	if v.Predicted != nil {
		n++
	}
	return n
}

func (b *builder) pendingTime() time.Time {
	if b.pending == nil {
		return time.Time{}
	}
	return b.pending.Time
}

// close gives the pending frame its time, dt seconds (at most a day: a
// recording's frames are seconds apart).
func (b *builder) close(dt float64) {
	f := b.pending
	if f == nil {
		return
	}
	dt = min(max(dt, 0), 86400)
	b.seconds[b.kind] += dt
	endT := f.Time.Add(time.Duration(dt * float64(time.Second)))
	if n := len(b.s.Timeline); n > 0 && b.s.Timeline[n-1].Kind == b.kind.String() {
		b.s.Timeline[n-1].End = endT
	} else {
		b.s.Timeline = append(b.s.Timeline, Segment{Kind: b.kind.String(), Start: f.Time, End: endT})
	}
}

func (b *builder) finish() {
	s := b.s
	if b.pending != nil {
		b.close(max(0, b.pending.IntervalSec))
	}
	s.Recording.Frames = b.frames
	s.Recording.Self = b.self.result()
	s.Recording.Hook = b.hook.result()
	s.GPUs = b.gpus.result()
	if b.checked > 0 {
		s.Recording.Warnings = append(s.Recording.Warnings, fmt.Sprintf(
			"%d frames held numbers out of range, clamped or left out (the first at %s)", b.checked, b.firstBad))
	}
	for i := range s.Timeline {
		s.Timeline[i].Seconds = s.Timeline[i].End.Sub(s.Timeline[i].Start).Seconds()
	}
	total := 0.0
	for _, k := range diagnose.Kinds { // a fixed order: float sums must not vary run to run
		total += b.seconds[k]
	}
	for _, k := range diagnose.Kinds {
		sec, ok := b.seconds[k]
		if !ok {
			continue
		}
		share := 0.0
		if total > 0 {
			share = sec / total
		}
		s.Verdicts = append(s.Verdicts, VerdictTime{Kind: k.String(), Seconds: sec, Share: share})
	}
	slices.SortFunc(s.Verdicts, func(a, b VerdictTime) int {
		if c := cmp.Compare(b.Seconds, a.Seconds); c != 0 {
			return c
		}
		return cmp.Compare(a.Kind, b.Kind)
	})
	for _, vt := range s.Verdicts {
		if vt.Kind != diagnose.WarmingUp.String() {
			s.Dominant = vt.Kind
			break
		}
	}
	for _, vt := range s.Verdicts {
		var k diagnose.Kind
		if k.UnmarshalText([]byte(vt.Kind)) != nil || k == diagnose.WarmingUp {
			continue
		}
		fd := finding(k, b.best[k])
		fd.At = b.bestAt[k]
		s.Findings = append(s.Findings, fd)
	}
	s.Loader = b.loader.info()
	s.Series = b.series.done()
	s.Ranks, s.Series.RankWait, s.Series.RankStepMs = b.ranks.done()
}

func finding(k diagnose.Kind, v diagnose.Verdict) Finding {
	fd := Finding{Kind: k.String(), Title: k.Title(), Severity: v.Severity.String(), Confidence: v.Confidence,
		Advice: v.Advice, Missing: v.Missing, Evidence: []string{}, Changes: v.Changes, Predicted: v.Predicted}
	for _, e := range v.Evidence {
		fd.Evidence = append(fd.Evidence, e.Text)
	}
	for _, f := range v.Secondary {
		fd.Secondary = append(fd.Secondary, f.Kind.String()+": "+f.Text)
	}
	if fd.Advice == nil {
		fd.Advice = []string{}
	}
	return fd
}

// knownCategories is p with only the profile categories gpuwatch writes:
// a recording is outside input, and a category name is shown as a label.
func knownCategories(p *sample.Profile) *sample.Profile {
	c := *p
	c.Categories = nil
	for _, k := range p.Categories {
		if slices.Contains(sample.ProfileCategories, k.Name) {
			c.Categories = append(c.Categories, k)
		}
	}
	return &c
}

// recordingInfo is what a report says of the recording itself. The
// command line is redacted again: a recording from an older build, or one
// written by hand, may hold a URL's credentials.
func recordingInfo(rec *recording.Recording, file string) RecordingInfo {
	h := rec.Header
	ri := RecordingInfo{File: file, Host: h.Host, Cores: h.Cores, GPUs: h.GPUs, GpuwatchVersion: h.GpuwatchVersion,
		Command: sample.RedactArgs(h.Command), Frames: rec.Len(), Events: rec.Events, Warnings: slices.Clone(rec.Warnings)}
	if ri.Cores <= 0 || len(ri.GPUs) == 0 {
		ri.Cores, ri.GPUs = hostFromFrames(rec, ri.Cores, ri.GPUs)
	}
	if ri.GPUs == nil {
		ri.GPUs = []string{}
	}
	for _, sc := range rec.Scenarios {
		ri.Scenarios = append(ri.Scenarios, sc.Name)
	}
	return ri
}

// hostFromFrames fills the cores and GPUs a recording's header lacks (a
// --json capture has none: a review read "0 cores, no GPU" of an H200
// box) from its first frames that carry them; unread stays 0 and nil.
func hostFromFrames(rec *recording.Recording, cores int, gpus []string) (int, []string) {
	for i := 0; i < min(rec.Len(), 16) && (cores <= 0 || len(gpus) == 0); i++ {
		r, err := rec.Frame(i)
		if err != nil {
			continue
		}
		if c := r.Frame.CPU; cores <= 0 && c != nil && len(c.Cores) > 0 {
			cores = len(c.Cores)
		}
		if len(gpus) == 0 {
			for _, g := range r.Frame.GPUs {
				gpus = append(gpus, sample.Printable(g.Name))
			}
		}
	}
	return cores, gpus
}

// rankBuilder sums each rank's readings (the first MaxRanks ranks seen).
type rankBuilder struct {
	start  time.Time
	dur    float64
	points int
	byRank map[rankKey]*rankAcc
}

// rankKey tells loaders apart: by URL, so that two loaders that report
// the same rank (two jobs on a node) are two rows and one loader whose
// rank changes (its process group up after its first batches) is one;
// by rank where a reading has no URL.
type rankKey struct {
	rank int
	url  string
}

type rankAcc struct {
	info       RankInfo
	wait, step *bucketer
	rate       runningMean       // samples per second, over the frames that counted samples
	replay     sample.ReplaySkip // the replay's frames and the one after left out
}

// runningMean is a mean kept as it goes: huge values cannot add up to
// +Inf.
type runningMean struct {
	v float64
	n int
}

func (m *runningMean) add(x float64) {
	m.n++
	m.v += (x - m.v) / float64(m.n)
}

// mean is the mean, nil over nothing.
func (m runningMean) mean() *float64 {
	if m.n == 0 {
		return nil
	}
	v := m.v
	return &v
}

// replayingRank says r is the loader whose ceiling replays kept batches
// in f: its 0 samples/s is the measurement's, left out as the loader
// section leaves it (a review: the ranks table read 361 samples/s, the
// loader section 481, for the one rank).
func replayingRank(f *sample.Frame, r sample.Rank) bool {
	return f.Loader.Replaying() && (len(f.Ranks) == 1 || r.URL == f.Loader.Source)
}

func newRankBuilder(start time.Time, dur float64, points int) *rankBuilder {
	return &rankBuilder{start: start, dur: dur, points: points, byRank: map[rankKey]*rankAcc{}}
}

func (b *rankBuilder) add(f *sample.Frame, straggler *int) {
	for _, r := range f.Ranks {
		key := rankKey{url: r.URL} // a loader is one row, whatever rank it says over time
		if r.URL == "" {
			key.rank = r.Rank
		}
		acc := b.byRank[key]
		if acc == nil {
			if len(b.byRank) == MaxRanks {
				continue
			}
			acc = &rankAcc{info: RankInfo{Rank: r.Rank, URL: sample.Printable(r.URL)},
				wait: newBucketer(b.start, b.dur+1e-9, b.points), step: newBucketer(b.start, b.dur+1e-9, b.points)}
			b.byRank[key] = acc
		}
		ri := &acc.info
		// Who it is, as the newest frame that knows says: a PID or a
		// command may come after the first frame.
		// Its rank and name as the newest frame has them (a review: a
		// spawned DDP job, a job of its own until its process group was
		// up, read as both "a separate job" and "rank 1"); a command once
		// read is kept where a later frame lacks it.
		ri.Rank, ri.PID, ri.WorldSize = r.Rank, cmp.Or(r.PID, ri.PID), cmp.Or(r.WorldSize, ri.WorldSize)
		if name := loaderName(f, r); ri.Name == "" || !ownJob(r) || strings.Contains(name, "(") || !strings.Contains(ri.Name, "(") {
			ri.Name = name
		}
		if straggler != nil && *straggler == r.Rank && !ownJob(r) {
			ri.StragglerFrames++
		}
		if skip := acc.replay.Skip(replayingRank(f, r)); !r.Connected || skip {
			// The replay's frames are the ceiling's measurement, not the
			// job's wait or rate (a review: its first frame's 0.5 % wait
			// read the mean 85 % for 88 %, and its chart dipped to 0),
			// nor the frame after, whose interval holds its end (the
			// Diagnoser's window leaves both out).
			continue
		}
		if r.WaitShare != nil {
			acc.wait.add(f.Time, 100**r.WaitShare)
		}
		if r.StepSec != nil {
			acc.step.add(f.Time, 1000**r.StepSec)
		}
		if !r.SamplesUnknown() && finite(r.SamplesPerSec) {
			acc.rate.add(r.SamplesPerSec)
		}
		if r.WaitShare == nil || !finite(*r.WaitShare) {
			continue
		}
		// Running means: huge rates cannot add up to +Inf.
		ri.Frames++
		k := float64(ri.Frames)
		ri.MeanWaitShare += (*r.WaitShare - ri.MeanWaitShare) / k
		if r.StepSec != nil && finite(*r.StepSec) {
			ri.MeanStepSec += (*r.StepSec - ri.MeanStepSec) / k
		}
	}
}

// done is the ranks in rank order, and their wait and step series.
func (b *rankBuilder) done() ([]RankInfo, [][]*float64, [][]*float64) {
	if len(b.byRank) == 0 {
		return nil, nil, nil
	}
	accs := make([]*rankAcc, 0, len(b.byRank))
	for _, a := range b.byRank {
		accs = append(accs, a)
	}
	slices.SortFunc(accs, func(a, b *rankAcc) int {
		return cmp.Or(cmp.Compare(a.info.Rank, b.info.Rank), cmp.Compare(a.info.URL, b.info.URL))
	})
	var out []RankInfo
	var wait, step [][]*float64
	for _, a := range accs {
		a.info.MeanSamplesPerSec = a.rate.mean()
		out = append(out, a.info)
		wait, step = append(wait, a.wait.values()), append(step, a.step.values())
	}
	return out, wait, step
}

// loaderBuilder summarizes the loader over the run.
type loaderBuilder struct {
	li       *LoaderInfo
	n        int
	bounds   []float64
	bins     []HistBin
	listed   int // batches in the frames' lists, binned
	shareAvg float64
	rate     runningMean // samples per second, over the frames that counted samples
	batches  runningMean // batches per second, over the frames that read the rates
	stages   stageMeans
	payload  *sample.BatchPayload
	ceiling  ceilingRun
	replay   sample.ReplaySkip // the replay's frames and the one after left out of the mean wait
}

func newLoaderBuilder() *loaderBuilder {
	bounds := []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000}
	bins := make([]HistBin, len(bounds)+1)
	for i, b := range bounds {
		bins[i].UpperMs = b
	}
	bins[len(bounds)].UpperMs = -1 // above the last bound
	return &loaderBuilder{bounds: bounds, bins: bins}
}

func (b *loaderBuilder) add(l *sample.Loader) {
	if l == nil {
		b.replay = sample.ReplaySkip{}
		return
	}
	if b.li == nil {
		b.li = &LoaderInfo{}
	}
	b.li.Source = l.Source // the latest: a sampled loop's start, then the hook's
	if len(l.Knobs) > 0 {
		b.li.Knobs = l.Knobs
	}
	b.li.Batches = max(b.li.Batches, l.Batches)
	if skip := b.replay.Skip(l.Replaying()); l.WaitShare != nil && finite(*l.WaitShare) && !skip {
		// Running means: huge rates cannot add up to +Inf.
		b.n++
		b.shareAvg += (*l.WaitShare - b.shareAvg) / float64(b.n)
	}
	// While the ceiling replays kept batches the loader hands out none
	// of its own: its rates are unknown then (sample.Loader.Replaying).
	if !l.SamplesUnknown() && finite(l.SamplesPerSec) {
		b.rate.add(l.SamplesPerSec)
	}
	if !l.RatesUnknown() && finite(l.BatchesPerSec) {
		b.batches.add(l.BatchesPerSec)
	}
	for _, t := range l.Timeline {
		j, _ := slices.BinarySearch(b.bounds, t.WaitMs)
		b.bins[j].Count++
		b.listed++
	}
	b.stages.add(l.Stages)
	if l.Payload != nil {
		b.payload = l.Payload
	}
	b.ceiling.add(l) // ceiling.go
	b.li.Hook = b.li.Hook || l.Kind == "python"
}

// addStep keeps, for a frame whose loop runs on no GPU gpuwatch places
// (none, the model on the CPU, several with none listing the loop), the
// hook's settings line and
// its CPU step profile's line, the newest read (a review: a CPU run's
// report had neither, though --once showed both; a GPU's are in its own
// section).
func (b *loaderBuilder) addStep(f *sample.Frame) {
	l := f.Loader
	if l == nil || f.LoopGPU() != nil || b.li == nil {
		return // a GPU's are in its section
	}
	if line := l.Settings.Summary(); line != "" {
		b.li.SettingsLine = line
	}
	if p := l.GPUProfile; p.Done() {
		b.li.StepProfileLine = p.Summary()
	}
}

// stageMeans averages each stage figure over the frames that have it.
type stageMeans struct {
	sum    [10]float64
	n      [10]int
	inline bool
}

// fields are a LoaderStages' figures, in one fixed order.
func stageFields(s *sample.LoaderStages) [10]**float64 {
	return [10]**float64{&s.GetitemMs, &s.CollateMs, &s.HandoverMs, &s.TakeMs, &s.PinMs, &s.StepMs, &s.FirstBatchMs,
		&s.GetitemShare, &s.CollateShare, &s.HandoverShare}
}

func (m *stageMeans) add(s *sample.LoaderStages) {
	if s == nil {
		return
	}
	for i, f := range stageFields(s) {
		if v := *f; v != nil && finite(*v) {
			m.sum[i] += *v
			m.n[i]++
		}
	}
	m.inline = m.inline || s.Inline
}

func (m *stageMeans) result() *sample.LoaderStages {
	out := &sample.LoaderStages{Inline: m.inline}
	some := false
	for i, f := range stageFields(out) {
		if m.n[i] > 0 {
			v := m.sum[i] / float64(m.n[i])
			*f = &v
			some = true
		}
	}
	if !some {
		return nil
	}
	return out
}

func (b *loaderBuilder) info() *LoaderInfo {
	if b.li == nil {
		return nil
	}
	b.li.MeanWaitShare, b.li.MeanSamplesPerSec, b.li.MeanBatchesPerSec = b.shareAvg, b.rate.mean(), b.batches.mean()
	b.li.WaitHistMs = b.bins
	if b.listed == 0 {
		b.li.WaitHistMs, b.li.WaitHistWhy = nil, "no frame listed its batches' waits (the Python hook sends them as a histogram per interval, not batch by batch)"
	}
	b.li.Stages, b.li.Payload = b.stages.result(), b.payload
	b.li.Ceiling, b.li.InputCost = b.ceiling.result()
	return b.li
}

// bucketer averages values into at most MaxPoints equal time buckets.
type bucketer struct {
	n      int
	start  time.Time
	width  float64
	sums   []float64
	counts []int
}

func newBucketer(start time.Time, duration float64, n int) *bucketer {
	return &bucketer{n: n, start: start, width: max(duration/float64(n), 1e-9), sums: make([]float64, n), counts: make([]int, n)}
}

func (b *bucketer) index(t time.Time) int {
	return min(b.n-1, max(0, int(t.Sub(b.start).Seconds()/b.width)))
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// add puts v into t's bucket. Sums are kept as running means, so values
// near the float64 limit (a hostile or broken recording) cannot add up to
// +Inf; a non-finite v is left out. A chart and the JSON report then hold
// finite numbers only.
func (b *bucketer) add(t time.Time, v float64) {
	if !finite(v) {
		return
	}
	i := b.index(t)
	b.counts[i]++
	b.sums[i] += (v - b.sums[i]) / float64(b.counts[i])
}

func (b *bucketer) values() []*float64 {
	out := make([]*float64, b.n)
	for i := range out {
		if b.counts[i] > 0 {
			v := b.sums[i]
			out[i] = &v
		}
	}
	return out
}

// seriesBuilder makes the charts' series. The accelerator's is the GPUs'
// utilization when any frame has a GPU, else the virtual accelerator's:
// both are kept until the end says which.
type seriesBuilder struct {
	s                                                 Series
	gpu, p5, p95, virt, cpu, rd, wr, busy, pc, pi, pm *bucketer
	wait, step, rate                                  *bucketer
	cores                                             []*bucketer
	replay                                            []bool // points with a frame of the ceiling's replay
}

func newSeriesBuilder(start time.Time, dur float64, n, cores int) *seriesBuilder {
	mk := func() *bucketer { return newBucketer(start, dur+1e-9, n) }
	b := &seriesBuilder{gpu: mk(), p5: mk(), p95: mk(), virt: mk(), cpu: mk(), rd: mk(), wr: mk(), busy: mk(),
		pc: mk(), pi: mk(), pm: mk(), wait: mk(), step: mk(), rate: mk()}
	b.s.CoreGroup = max(1, (cores+MaxCoreRows-1)/MaxCoreRows)
	b.cores = make([]*bucketer, (cores+b.s.CoreGroup-1)/b.s.CoreGroup)
	for r := range b.cores {
		b.cores[r] = mk()
	}
	return b
}

func (b *seriesBuilder) add(f *sample.Frame) {
	t := f.Time
	if len(f.GPUs) > 0 {
		b.s.AccelReal = true
	}
	if u, ok := f.GPUUtil(); ok {
		b.gpu.add(t, u)
	}
	if l5, l95, ok := f.GPUBand(); ok {
		b.p5.add(t, l5)
		b.p95.add(t, l95)
	}
	if f.Accel != nil {
		b.virt.add(t, f.Accel.BusyPct)
	}
	if c := f.CPU; c != nil {
		b.cpu.add(t, c.BusyPct)
		g := b.s.CoreGroup
		for r := range b.cores {
			hot := 0.0
			for j := r * g; j < min(len(c.Cores), (r+1)*g); j++ {
				hot = max(hot, c.Cores[j].BusyPct)
			}
			b.cores[r].add(t, hot)
		}
	}
	var r, w float64
	for _, dk := range f.Disks {
		r += dk.ReadBytesPerSec
		w += dk.WriteBytesPerSec
	}
	if d, ok := f.BusiestDisk(); ok {
		b.rd.add(t, r)
		b.wr.add(t, w)
		b.busy.add(t, d.BusyPct)
	}
	if p := f.PSI; p != nil {
		for _, x := range []struct {
			b *bucketer
			p *sample.Pressure
		}{{b.pc, p.CPU}, {b.pi, p.IO}, {b.pm, p.Memory}} {
			if v, ok := x.p.Some(); ok {
				x.b.add(t, v)
			}
		}
	}
	if l := f.Loader; l != nil {
		if c := l.CeilingOf(); c != nil && c.State == sample.CeilingReplaying {
			if b.replay == nil {
				b.replay = make([]bool, b.gpu.n)
			}
			b.replay[b.gpu.index(t)] = true
		}
		if l.WaitMeanMs != nil {
			b.wait.add(t, *l.WaitMeanMs)
		}
		if l.StepMeanMs != nil {
			b.step.add(t, *l.StepMeanMs)
		}
		if !l.SamplesUnknown() { // sampled, not answering, read once, or no batch's size read: no rate
			b.rate.add(t, l.SamplesPerSec)
		}
	}
}

func (b *seriesBuilder) done() Series {
	s := b.s
	accel := b.virt
	if s.AccelReal {
		accel = b.gpu
	}
	s.T = make([]float64, accel.n)
	for i := range s.T {
		s.T[i] = (float64(i) + 0.5) * accel.width
	}
	s.Accel, s.AccelP5, s.AccelP95, s.CPUBusy = accel.values(), b.p5.values(), b.p95.values(), b.cpu.values()
	s.DiskRead, s.DiskWrite, s.DiskBusy = b.rd.values(), b.wr.values(), b.busy.values()
	s.PSICPU, s.PSIIO, s.PSIMem = b.pc.values(), b.pi.values(), b.pm.values()
	s.WaitMs, s.StepMs = b.wait.values(), b.step.values()
	if b.rate.any() {
		s.SamplesPerSec = b.rate.values()
	}
	for _, cb := range b.cores {
		s.Cores = append(s.Cores, cb.values())
	}
	s.CeilingReplay = b.replay
	return s
}

// ownJob says whether a loader is a job of its own (it reports a world of
// one), no rank of a distributed job: diagnose's rule.
func ownJob(r sample.Rank) bool { return r.WorldSize != nil && *r.WorldSize <= 1 }

// loaderName is how the report names a loader: "rank N" for a rank of a
// distributed job; for a job of its own, its process and command ("pid
// 5816 (python3 slowin.py)": the target's command line where it is that
// process, else the process's name from the frame's list), its URL
// where the PID is unknown. Printable and bounded.
func loaderName(f *sample.Frame, r sample.Rank) string {
	if !ownJob(r) {
		return fmt.Sprintf("rank %d", r.Rank)
	}
	if r.PID <= 0 {
		return clip(sample.Printable(r.URL), 80)
	}
	name := "pid " + strconv.Itoa(r.PID)
	if c := commandOf(f, r.PID); c != "" {
		name += " (" + clip(sample.Printable(c), 60) + ")"
	}
	return name
}

// commandOf is process pid's command as frame f has it: the target's
// command line, else its name in the process list; "" where neither.
func commandOf(f *sample.Frame, pid int) string {
	if t := f.Target; t != nil && t.PID == pid && t.Command != "" {
		return t.Command
	}
	if f.Procs != nil {
		for _, p := range f.Procs.List {
			if p.PID == pid {
				return p.Name
			}
		}
	}
	return ""
}

// clip bounds s to n runes, an ellipsis ending what was cut.
func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

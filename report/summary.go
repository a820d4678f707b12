package report

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/sample"
)

// ReportVersion is the version of the report JSON schema (docs/report.md).
const ReportVersion = 1

// Summary is a diagnosis report of a recording: what is written as JSON,
// Markdown or HTML.
type Summary struct {
	ReportVersion int           `json:"report_version"`
	Generated     time.Time     `json:"generated"`
	Recording     RecordingInfo `json:"recording"`
	// Dominant is the verdict shown longest (warming_up not counted).
	Dominant string        `json:"dominant_verdict"`
	Verdicts []VerdictTime `json:"verdicts"`
	Timeline []Segment     `json:"timeline"`
	// Findings are, per verdict seen, its evidence and advice from the
	// frame where it was surest.
	Findings []Finding   `json:"findings"`
	Loader   *LoaderInfo `json:"loader,omitempty"`
	// Ranks are a distributed job's ranks over the recording, in rank
	// order (at most MaxRanks); absent with one loader.
	Ranks   []RankInfo      `json:"ranks,omitempty"`
	Profile *sample.Profile `json:"profile,omitempty"`
	Series  Series          `json:"series"`
}

// RankInfo is one rank over the recording: its mean wait share, step and
// samples/s over the frames it answered, and how often the verdict named
// it the straggler.
type RankInfo struct {
	Rank              int     `json:"rank"`
	URL               string  `json:"url"`
	Frames            int     `json:"frames"` // frames it answered in
	MeanWaitShare     float64 `json:"mean_wait_share"`
	MeanStepSec       float64 `json:"mean_step_sec"`
	MeanSamplesPerSec float64 `json:"mean_samples_per_sec"`
	StragglerFrames   int     `json:"straggler_frames"`
}

// MaxRanks bounds the ranks a report shows and charts.
const MaxRanks = 64

// RecordingInfo is the machine and the run.
type RecordingInfo struct {
	File            string    `json:"file"`
	Host            string    `json:"host"`
	Cores           int       `json:"cores"`
	GPUs            []string  `json:"gpus"`
	GpuwatchVersion string    `json:"gpuwatch_version"`
	Command         []string  `json:"command"`
	Start           time.Time `json:"start"`
	End             time.Time `json:"end"`
	DurationSec     float64   `json:"duration_sec"`
	Frames          int       `json:"frames"`
	MemTotalBytes   uint64    `json:"mem_total_bytes,omitempty"`
	Scenarios       []string  `json:"scenarios,omitempty"`
	Events          []Event   `json:"events,omitempty"`
	Warnings        []string  `json:"warnings,omitempty"`
	// Job is the watched job in a line (who, its cgroup, its limits and
	// use, at the end of the recording); empty when none was watched.
	Job string `json:"job,omitempty"`
}

// VerdictTime is how long a verdict was shown.
type VerdictTime struct {
	Kind    string  `json:"kind"`
	Seconds float64 `json:"seconds"`
	Share   float64 `json:"share"`
}

// Segment is a stretch of one verdict.
type Segment struct {
	Kind    string    `json:"kind"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Seconds float64   `json:"seconds"`
}

// Finding is a verdict's evidence and advice.
type Finding struct {
	Kind       string   `json:"kind"`
	Title      string   `json:"title"`
	Severity   string   `json:"severity"`
	Confidence float64  `json:"confidence"`
	Evidence   []string `json:"evidence"`
	// Secondary are the verdict's secondary findings, "kind: text".
	Secondary []string `json:"secondary,omitempty"`
	// Changes and Predicted are the pipeline model's advice (see
	// diagnose.Verdict).
	Changes   []diagnose.Change    `json:"changes,omitempty"`
	Predicted *diagnose.Prediction `json:"predicted,omitempty"`
	Advice    []string             `json:"advice"`
	Missing   []string             `json:"missing,omitempty"`
}

// LoaderInfo summarizes the loader over the run.
type LoaderInfo struct {
	Source            string            `json:"source"`
	Knobs             map[string]string `json:"knobs,omitempty"`
	Batches           uint64            `json:"batches"`
	MeanWaitShare     float64           `json:"mean_wait_share"`
	MeanSamplesPerSec float64           `json:"mean_samples_per_sec"`
	WaitHistMs        []HistBin         `json:"wait_histogram_ms"`
}

// HistBin is one bar of a histogram: values up to UpperMs.
type HistBin struct {
	UpperMs float64 `json:"upper_ms"`
	Count   int     `json:"count"`
}

// Series are the charts' data, at most MaxPoints points (means of equal
// time buckets), so a day's recording makes a report of the same size as an
// hour's. Times are seconds from the start; missing values are null.
type Series struct {
	T         []float64    `json:"t"`
	Accel     []*float64   `json:"accel_busy_pct"` // mean GPU utilization, else the virtual accelerator
	AccelP5   []*float64   `json:"accel_p5"`
	AccelP95  []*float64   `json:"accel_p95"`
	AccelReal bool         `json:"accel_is_gpu"`
	CPUBusy   []*float64   `json:"cpu_busy_pct"`
	Cores     [][]*float64 `json:"core_busy_pct"` // core groups × points; CoreGroup cores per row
	CoreGroup int          `json:"core_group"`
	DiskRead  []*float64   `json:"disk_read_bytes_per_sec"`
	DiskWrite []*float64   `json:"disk_write_bytes_per_sec"`
	DiskBusy  []*float64   `json:"disk_busy_pct"` // the busiest device
	PSICPU    []*float64   `json:"psi_cpu_pct"`
	PSIIO     []*float64   `json:"psi_io_pct"`
	PSIMem    []*float64   `json:"psi_mem_pct"`
	WaitMs    []*float64   `json:"loader_wait_ms"`
	StepMs    []*float64   `json:"loader_step_ms"`
	// RankWait and RankStepMs are per rank (Summary.Ranks' order) × points.
	RankWait   [][]*float64 `json:"rank_wait_pct,omitempty"`
	RankStepMs [][]*float64 `json:"rank_step_ms,omitempty"`
}

// MaxPoints bounds chart series; MaxCoreRows bounds the heatmap's rows.
const (
	MaxPoints   = 360
	MaxCoreRows = 32
)

// knownCategories is p with only the profile categories gpuwatch writes:
// a recording is outside input, and a category name is shown as a label.
func knownCategories(p *sample.Profile) *sample.Profile {
	c := *p
	c.Categories = nil
	for _, k := range p.Categories {
		if slices.Contains(ProfileCategories, k.Name) {
			c.Categories = append(c.Categories, k)
		}
	}
	return &c
}

// ProfileCategories are the categories of a profile summary, as the
// profile probe names them.
var ProfileCategories = []string{"reading", "decoding", "waiting", "gc", "other"}

// recordingInfo is what a report says of the recording itself. The
// command line is redacted again: a recording from an older build, or one
// written by hand, may hold a URL's credentials.
func recordingInfo(rec *Recording, file string) RecordingInfo {
	h := rec.Header
	ri := RecordingInfo{File: file, Host: h.Host, Cores: h.Cores, GPUs: h.GPUs, GpuwatchVersion: h.GpuwatchVersion,
		Command: sample.RedactArgs(h.Command), Frames: len(rec.Frames), Events: rec.Events, Warnings: rec.Warnings}
	if ri.GPUs == nil {
		ri.GPUs = []string{}
	}
	for _, sc := range rec.Scenarios {
		ri.Scenarios = append(ri.Scenarios, sc.Name)
	}
	return ri
}

// Build makes the report of a recording: verdicts recomputed from the
// frames with th (as replay does), evidence and advice, and chart series.
func Build(rec *Recording, file string, th diagnose.Thresholds, now time.Time) *Summary {
	s := &Summary{ReportVersion: ReportVersion, Generated: now, Recording: recordingInfo(rec, file)}
	if len(rec.Frames) == 0 {
		return s
	}
	first, last := rec.Frames[0].Frame.Time, rec.Frames[len(rec.Frames)-1].Frame.Time
	s.Recording.Start, s.Recording.End, s.Recording.DurationSec = first, last, last.Sub(first).Seconds()

	d := diagnose.NewDiagnoser(th)
	verdicts := make([]diagnose.Verdict, len(rec.Frames))
	best := map[diagnose.Kind]diagnose.Verdict{}
	seconds := map[diagnose.Kind]float64{}
	for i := range rec.Frames {
		f := &rec.Frames[i].Frame
		v := d.Observe(f)
		verdicts[i] = v
		if b, ok := best[v.Kind]; !ok || v.Confidence > b.Confidence {
			best[v.Kind] = v
		}
		if m := f.Mem; m != nil {
			s.Recording.MemTotalBytes = m.TotalBytes
		}
		if f.Job != nil {
			s.Recording.Job = f.Job.Summary()
		}
		// A frame stands for the time until the next one.
		dt := 0.0
		if i+1 < len(rec.Frames) {
			dt = rec.Frames[i+1].Frame.Time.Sub(f.Time).Seconds()
		} else if f.IntervalSec > 0 {
			dt = f.IntervalSec
		}
		seconds[v.Kind] += dt
		if n := len(s.Timeline); n > 0 && s.Timeline[n-1].Kind == v.Kind.String() {
			s.Timeline[n-1].End = f.Time.Add(time.Duration(dt * float64(time.Second)))
		} else {
			s.Timeline = append(s.Timeline, Segment{Kind: v.Kind.String(), Start: f.Time, End: f.Time.Add(time.Duration(dt * float64(time.Second)))})
		}
		if f.Profile != nil && len(f.Profile.Categories) > 0 {
			s.Profile = knownCategories(f.Profile)
		}
	}
	for i := range s.Timeline {
		s.Timeline[i].Seconds = s.Timeline[i].End.Sub(s.Timeline[i].Start).Seconds()
	}
	total := 0.0
	for _, k := range diagnose.Kinds { // a fixed order: float sums must not vary run to run
		total += seconds[k]
	}
	for _, k := range diagnose.Kinds {
		sec, ok := seconds[k]
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
		v := best[k]
		fd := Finding{Kind: vt.Kind, Title: k.Title(), Severity: v.Severity.String(), Confidence: v.Confidence,
			Advice: v.Advice, Missing: v.Missing, Evidence: []string{}}
		for _, e := range v.Evidence {
			fd.Evidence = append(fd.Evidence, e.Text)
		}
		for _, f := range v.Secondary {
			fd.Secondary = append(fd.Secondary, f.Kind.String()+": "+f.Text)
		}
		fd.Changes, fd.Predicted = v.Changes, v.Predicted
		if fd.Advice == nil {
			fd.Advice = []string{}
		}
		s.Findings = append(s.Findings, fd)
	}
	s.Loader = loaderInfo(rec)
	s.Series = series(rec, first)
	s.Ranks = rankInfo(rec, verdicts)
	s.Series.RankWait, s.Series.RankStepMs = rankSeries(rec, first, s.Ranks)
	return s
}

// rankInfo sums each rank's readings over the recording.
func rankInfo(rec *Recording, verdicts []diagnose.Verdict) []RankInfo {
	byRank := map[int]*RankInfo{}
	for i := range rec.Frames {
		for _, r := range rec.Frames[i].Frame.Ranks {
			ri := byRank[r.Rank]
			if ri == nil {
				if len(byRank) == MaxRanks {
					continue
				}
				ri = &RankInfo{Rank: r.Rank, URL: sample.Printable(r.URL)}
				byRank[r.Rank] = ri
			}
			if s := verdicts[i].Straggler; s != nil && *s == r.Rank {
				ri.StragglerFrames++
			}
			if !r.Connected || r.WaitShare == nil || !finite(*r.WaitShare) || !finite(r.SamplesPerSec) {
				continue
			}
			ri.Frames++
			ri.MeanWaitShare += *r.WaitShare
			ri.MeanSamplesPerSec += r.SamplesPerSec
			if r.StepSec != nil && finite(*r.StepSec) {
				ri.MeanStepSec += *r.StepSec
			}
		}
	}
	out := make([]RankInfo, 0, len(byRank))
	for _, ri := range byRank {
		if ri.Frames > 0 {
			n := float64(ri.Frames)
			ri.MeanWaitShare, ri.MeanStepSec, ri.MeanSamplesPerSec = ri.MeanWaitShare/n, ri.MeanStepSec/n, ri.MeanSamplesPerSec/n
		}
		for _, v := range []*float64{&ri.MeanWaitShare, &ri.MeanStepSec, &ri.MeanSamplesPerSec} {
			if !finite(*v) {
				*v = 0 // sums of hostile huge values: no +Inf in a report
			}
		}
		out = append(out, *ri)
	}
	slices.SortFunc(out, func(a, b RankInfo) int { return a.Rank - b.Rank })
	if len(out) == 0 {
		return nil
	}
	return out
}

// rankSeries are each rank's wait % and step over time, in ranks' order.
func rankSeries(rec *Recording, start time.Time, ranks []RankInfo) (wait, step [][]*float64) {
	if len(ranks) == 0 {
		return nil, nil
	}
	frames := rec.Frames
	dur := frames[len(frames)-1].Frame.Time.Sub(start).Seconds()
	n := min(MaxPoints, len(frames))
	index := map[int]int{}
	wb, sb := make([]*bucketer, len(ranks)), make([]*bucketer, len(ranks))
	for i, r := range ranks {
		index[r.Rank] = i
		wb[i], sb[i] = newBucketer(start, dur+1e-9, n), newBucketer(start, dur+1e-9, n)
	}
	for i := range frames {
		f := &frames[i].Frame
		for _, r := range f.Ranks {
			j, ok := index[r.Rank]
			if !ok || !r.Connected {
				continue
			}
			if r.WaitShare != nil {
				wb[j].add(f.Time, 100**r.WaitShare)
			}
			if r.StepSec != nil {
				sb[j].add(f.Time, 1000**r.StepSec)
			}
		}
	}
	for j := range ranks {
		wait, step = append(wait, wb[j].values()), append(step, sb[j].values())
	}
	return wait, step
}

func loaderInfo(rec *Recording) *LoaderInfo {
	var li *LoaderInfo
	var shareSum, rateSum float64
	var n int
	bounds := []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000}
	bins := make([]HistBin, len(bounds)+1)
	for i, b := range bounds {
		bins[i].UpperMs = b
	}
	bins[len(bounds)].UpperMs = -1 // above the last bound
	for i := range rec.Frames {
		l := rec.Frames[i].Frame.Loader
		if l == nil {
			continue
		}
		if li == nil {
			li = &LoaderInfo{Source: l.Source}
		}
		if len(l.Knobs) > 0 {
			li.Knobs = l.Knobs
		}
		li.Batches = max(li.Batches, l.Batches)
		if l.WaitShare != nil && finite(*l.WaitShare) && finite(l.SamplesPerSec) {
			// Running means: huge rates cannot add up to +Inf.
			n++
			shareSum += (*l.WaitShare - shareSum) / float64(n)
			rateSum += (l.SamplesPerSec - rateSum) / float64(n)
		}
		for _, b := range l.Timeline {
			j, _ := slices.BinarySearch(bounds, b.WaitMs)
			bins[j].Count++
		}
	}
	if li == nil {
		return nil
	}
	li.MeanWaitShare, li.MeanSamplesPerSec = shareSum, rateSum
	li.WaitHistMs = bins
	return li
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

func series(rec *Recording, start time.Time) Series {
	frames := rec.Frames
	dur := frames[len(frames)-1].Frame.Time.Sub(start).Seconds()
	n := min(MaxPoints, len(frames))
	mk := func() *bucketer { return newBucketer(start, dur+1e-9, n) }
	accel, p5, p95, cpu, rd, wr, busy, pc, pi, pm, wait, step := mk(), mk(), mk(), mk(), mk(), mk(), mk(), mk(), mk(), mk(), mk(), mk()
	var s Series
	cores := 0
	for i := range frames {
		if c := frames[i].Frame.CPU; c != nil {
			cores = max(cores, len(c.Cores))
		}
		if len(frames[i].Frame.GPUs) > 0 {
			s.AccelReal = true
		}
	}
	s.CoreGroup = max(1, (cores+MaxCoreRows-1)/MaxCoreRows)
	rows := (cores + s.CoreGroup - 1) / s.CoreGroup
	coreB := make([]*bucketer, rows)
	for r := range coreB {
		coreB[r] = mk()
	}
	for i := range frames {
		f := &frames[i].Frame
		t := f.Time
		if s.AccelReal {
			if u, ok := f.GPUUtil(); ok {
				accel.add(t, u)
			}
			if l5, l95, ok := f.GPUBand(); ok {
				p5.add(t, l5)
				p95.add(t, l95)
			}
		} else if f.Accel != nil {
			accel.add(t, f.Accel.BusyPct)
		}
		if c := f.CPU; c != nil {
			cpu.add(t, c.BusyPct)
			for r := range coreB {
				hot := 0.0
				for j := r * s.CoreGroup; j < min(len(c.Cores), (r+1)*s.CoreGroup); j++ {
					hot = max(hot, c.Cores[j].BusyPct)
				}
				coreB[r].add(t, hot)
			}
		}
		var r, w float64
		for _, dk := range f.Disks {
			r += dk.ReadBytesPerSec
			w += dk.WriteBytesPerSec
		}
		if d, ok := f.BusiestDisk(); ok {
			rd.add(t, r)
			wr.add(t, w)
			busy.add(t, d.BusyPct)
		}
		if p := f.PSI; p != nil {
			for _, x := range []struct {
				b *bucketer
				p *sample.Pressure
			}{{pc, p.CPU}, {pi, p.IO}, {pm, p.Memory}} {
				if v, ok := x.p.Some(); ok {
					x.b.add(t, v)
				}
			}
		}
		if l := f.Loader; l != nil {
			if l.WaitMeanMs != nil {
				wait.add(t, *l.WaitMeanMs)
			}
			if l.StepMeanMs != nil {
				step.add(t, *l.StepMeanMs)
			}
		}
	}
	s.T = make([]float64, n)
	for i := range s.T {
		s.T[i] = (float64(i) + 0.5) * accel.width
	}
	s.Accel, s.AccelP5, s.AccelP95, s.CPUBusy = accel.values(), p5.values(), p95.values(), cpu.values()
	s.DiskRead, s.DiskWrite, s.DiskBusy = rd.values(), wr.values(), busy.values()
	s.PSICPU, s.PSIIO, s.PSIMem = pc.values(), pi.values(), pm.values()
	s.WaitMs, s.StepMs = wait.values(), step.values()
	for _, cb := range coreB {
		s.Cores = append(s.Cores, cb.values())
	}
	return s
}

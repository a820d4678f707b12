package sample

// These accessors are the one place where a frame's figures are reduced to
// the levels that diagnosis, reports, the exporter and headless lines
// show: a chart and the verdict it explains read the same number.

// GPUUtil is the mean utilization (0–100) over the frame's GPUs that are
// not lost and report one; ok is false when none does.
func (f *Frame) GPUUtil() (pct float64, ok bool) {
	var sum float64
	n := 0
	for i := range f.GPUs {
		if g := &f.GPUs[i]; !g.Lost && g.UtilPct != nil {
			sum += *g.UtilPct
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// GPUBand is the mean, over the GPUs that are not lost and have driver
// samples, of each one's p5 and p95 within the interval: a sawtooth shows
// as a low p5 under a high p95. ok is false when no GPU has samples.
func (f *Frame) GPUBand() (p5, p95 float64, ok bool) {
	n := 0
	for i := range f.GPUs {
		if g := &f.GPUs[i]; !g.Lost && g.UtilSamples != nil {
			p5 += g.UtilSamples.P5
			p95 += g.UtilSamples.P95
			n++
		}
	}
	if n == 0 {
		return 0, 0, false
	}
	return p5 / float64(n), p95 / float64(n), true
}

// BusiestDisk is the disk with the highest busy % (the first of equals);
// ok is false when the frame has no disk.
func (f *Frame) BusiestDisk() (d Disk, ok bool) {
	for i := range f.Disks {
		if !ok || f.Disks[i].BusyPct > d.BusyPct {
			d, ok = f.Disks[i], true
		}
	}
	return d, ok
}

// Some is the share of time (0–100) some task stalled on the resource: the
// last interval's, else — on the first reading, before there is an
// interval — the kernel's 10 s average. ok is false for a nil Pressure
// (the kernel does not report the resource).
func (p *Pressure) Some() (pct float64, ok bool) {
	if p == nil {
		return 0, false
	}
	if p.SomePct != nil {
		return *p.SomePct, true
	}
	return p.SomeAvg10, true
}

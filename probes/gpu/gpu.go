package gpu

import (
	"context"
	"errors"
	"io"
	"os/user"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuwatch/gpuwatch/probes"

	"github.com/gpuwatch/gpuwatch/sample"
)

// GPUSource is one vendor's way of reading its GPUs (NVML, AMD sysfs). It
// returns an error wrapping ErrUnavailable when the vendor has no GPU or no
// driver here.
type GPUSource interface {
	Vendor() string
	GPUs(ctx context.Context) ([]sample.GPU, error)
}

// GPU is the probe for accelerators: it asks every vendor source and lists
// their GPUs together. It is unavailable only when every source is, and then
// says why for each ("nvidia: libnvidia-ml.so.1 not found; amd: no AMD GPU").
type GPU struct {
	sources []GPUSource
	// Select names the job's GPUs (nil: every GPU counts).
	Select *GPUSelect
	r      probes.FileReader
	users  map[string]string // UID → user name
	descs  map[int]procDesc  // GPU processes' user and command, by PID
	seen   map[int]procDesc  // this tick's, swapped with descs
}

// procDesc is a GPU process's owner and command, read once while NVML
// keeps listing its PID (a PID cannot be reused while it is listed).
type procDesc struct{ user, command string }

// NewGPU returns the GPU probe over the given sources.
func NewGPU(sources ...GPUSource) *GPU { return &GPU{sources: sources} }

// DefaultGPUSources are NVIDIA through NVML (when built with cgo) and AMD
// through sysfs under sysRoot.
func DefaultGPUSources(sysRoot string) []GPUSource {
	return []GPUSource{NewNVML(nil), NewAMD(sysRoot)}
}

// Name implements Probe.
func (p *GPU) Name() string { return "gpu" }

// Collect implements Probe.
func (p *GPU) Collect(ctx context.Context, f *sample.Frame) error {
	var all []sample.GPU
	var reasons []string
	var failure error
	for _, s := range p.sources {
		gs, err := s.GPUs(ctx)
		all = append(all, gs...)
		switch {
		case err == nil:
		case errors.Is(err, probes.ErrUnavailable):
			reasons = append(reasons, s.Vendor()+": "+err.Error())
		default:
			failure = errors.Join(failure, err)
		}
	}
	if len(all) == 0 && failure == nil {
		return probes.Unavailable("%s", strings.Join(reasons, "; "))
	}
	if all == nil {
		all = []sample.GPU{}
	}
	f.JobGPUs = p.Select.mark(all, &p.r)
	p.describe(all)
	setPeaks(all)
	f.GPUs = all
	return failure
}

// describe fills each GPU process's user and command from procfs.
func (p *GPU) describe(gpus []sample.GPU) {
	proc := "/proc"
	if p.Select != nil && p.Select.Proc != "" {
		proc = p.Select.Proc
	}
	if p.users == nil || len(p.users) > 1024 {
		p.users = map[string]string{}
	}
	if p.seen == nil {
		p.seen = map[int]procDesc{}
	}
	clear(p.seen)
	for i := range gpus {
		ps := gpus[i].Processes
		for j := range ps {
			d, ok := p.descs[ps[j].PID]
			if !ok {
				dir := proc + "/" + strconv.Itoa(ps[j].PID)
				if b, err := p.r.Read(dir + "/comm"); err == nil {
					d.command = sample.Printable(strings.TrimSpace(string(b)))
				}
				if b, err := p.r.Read(dir + "/status"); err == nil {
					d.user = p.userOf(b)
				}
			}
			p.seen[ps[j].PID] = d
			ps[j].User, ps[j].Command = d.user, d.command
		}
	}
	// Only the PIDs listed this tick stay: a process gone from NVML's
	// list is forgotten, so its PID's next owner is read afresh.
	p.descs, p.seen = p.seen, p.descs
}

// userOf is the user name of a /proc/PID/status's real UID (the number
// where the name is unknown), cached.
func (p *GPU) userOf(status []byte) string {
	for len(status) > 0 {
		var line []byte
		line, status = probes.NextLine(status)
		if rest, ok := strings.CutPrefix(string(line), "Uid:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return ""
			}
			if name, ok := p.users[f[0]]; ok {
				return name
			}
			name := f[0]
			if u, err := user.LookupId(f[0]); err == nil {
				name = sample.Printable(u.Username)
			}
			p.users[f[0]] = name
			return name
		}
	}
	return ""
}

// Start implements Starter: it starts the sources that work in the
// background (NVML's PCIe counters).
func (p *GPU) Start(ctx context.Context) {
	for _, s := range p.sources {
		if st, ok := s.(probes.Starter); ok {
			st.Start(ctx)
		}
	}
}

// Close closes the sources that hold resources (NVML's library handle and
// its PCIe goroutine).
func (p *GPU) Close() error {
	var err error
	for _, s := range p.sources {
		if c, ok := s.(io.Closer); ok {
			err = errors.Join(err, c.Close())
		}
	}
	return err
}

// reduceSamples turns utilization samples (0–100) into min, mean, max and
// nearest-rank p5/p95. vals is sorted in place. nil for no samples.
func reduceSamples(vals []float64) *sample.UtilSamples {
	if len(vals) == 0 {
		return nil
	}
	slices.Sort(vals)
	sum := 0.0
	for _, v := range vals {
		sum += v
	}
	rank := func(p float64) float64 {
		// nearest rank: the smallest value with at least p of the samples
		// at or below it.
		i := int(p*float64(len(vals))+0.999999) - 1
		return vals[min(max(i, 0), len(vals)-1)]
	}
	return &sample.UtilSamples{
		N: len(vals), Min: vals[0], Max: vals[len(vals)-1],
		Mean: sum / float64(len(vals)), P5: rank(0.05), P95: rank(0.95),
	}
}

// clockEventWords names the bits of NVML's clocks event (formerly
// "throttle") reasons, nvmlClocksEventReason* in nvml.h.
var clockEventWords = []struct {
	bit  uint64
	word string
}{
	{0x1, "idle"},
	{0x2, "application clocks setting"},
	{0x4, "power cap"},
	{0x8, "hardware slowdown"},
	{0x10, "sync boost"},
	{0x20, "software thermal slowdown"},
	{0x40, "hardware thermal slowdown"},
	{0x80, "power brake"},
	{0x100, "display clock setting"},
	{0x200, "board limit"},
	{0x400, "reliability"},
}

// decodeClockEvents turns an NVML clocks event bit mask into words; an
// unknown bit is named by its value. No reason at all is an empty, non-nil
// list ("clocks are not held down"), unlike nil ("unknown").
func decodeClockEvents(mask uint64) []string {
	out := []string{}
	for _, e := range clockEventWords {
		if mask&e.bit != 0 {
			out = append(out, e.word)
			mask &^= e.bit
		}
	}
	for b := uint64(1); mask != 0 && b != 0; b <<= 1 {
		if mask&b != 0 {
			out = append(out, "reason 0x"+strconv.FormatUint(b, 16))
			mask &^= b
		}
	}
	return out
}

// markUnavailable records why a GPU's field has no value (the field's JSON
// name, as in sample.GPU.Unavailable), making the map on first use.
func markUnavailable(g *sample.GPU, field, why string) {
	if g.Unavailable == nil {
		g.Unavailable = make(map[string]string)
	}
	g.Unavailable[field] = why
}

//go:build linux && cgo

package gpu

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/probes"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/internal/bg"
	"github.com/gpuwatch/gpuwatch/sample"
)

// NVMLCompiled says whether this build can read NVIDIA GPUs (it needs cgo
// on Linux to load libnvidia-ml).
const NVMLCompiled = true

// NVML reads NVIDIA GPUs through the driver's management library. Init runs
// on the first read (and again on the Sampler's rare retries while the
// driver is missing), Shutdown on Close. nvml.Return values never leave this
// file: they become sample fields, reasons or ErrUnavailable.
type NVML struct {
	lib nvml.Interface
	// PCIeEvery is how often the PCIe counters are read (default 1 s).
	// Each read blocks about 20 ms per counter, so it runs on its own
	// goroutine and GPUs only copies the latest values.
	PCIeEvery time.Duration

	ready  bool
	devs   []*nvmlDevice
	vals   []float64
	parent context.Context // from Start: the PCIe goroutine's parent
	pcie   *bg.Group       // the PCIe goroutine, from the first init to Close

	mu   sync.Mutex // guards the pcie fields of devs
	once sync.Once  // Close
}

type nvmlDevice struct {
	h                 nvml.Device
	index             int
	name, uuid, busID string
	memTotal          *uint64
	maxSM             *float64
	lastSampleTs      uint64 // µs timestamp of the newest utilization sample read
	lastProcTs        uint64 // likewise for per-process utilization
	lost              bool

	pcieRx, pcieTx *float64 // under NVML.mu
	pcieReason     string   // under NVML.mu

	// GPM (Hopper and later): two samples, the previous and the newest;
	// the metrics are over the interval between them.
	gpm           bool // the device supports GPM
	gpmWhy        string
	gpmPrev, gpm2 nvml.GpmSample
	gpmHavePrev   bool
	pcieLink      string
	pcieLinkBs    *float64
	// NVLink data counters (KiB, cumulative) at the previous reading.
	nvl       [2]nvml.FieldValue
	nvlPrev   [2]uint64
	nvlPrevTs int64
	nvlHave   bool
	noNVLink  bool
	migGPM    map[int]*gpmPair // per MIG GPU instance ID
	// gpmGet is the metrics request, reused: it holds room for 477
	// metrics (~40 KiB), too much to allocate per GPU per tick.
	gpmGet *nvml.GpmMetricsGetType
}

// NewNVML returns the NVIDIA source on lib; nil means the system's
// libnvidia-ml.so.1, loaded on first use.
func NewNVML(lib nvml.Interface) *NVML {
	if lib == nil {
		lib = nvml.New()
	}
	return &NVML{lib: lib, PCIeEvery: time.Second}
}

// Start implements Starter: the PCIe goroutine, started once NVML is
// initialised (on the first read), runs under ctx until Close.
func (p *NVML) Start(ctx context.Context) { p.parent = ctx }

// Vendor implements GPUSource.
func (p *NVML) Vendor() string { return "nvidia" }

// reason turns an NVML error into words for a view.
func reason(ret nvml.Return) string {
	switch ret {
	case nvml.ERROR_NOT_SUPPORTED:
		return "not supported by this device"
	case nvml.ERROR_NO_PERMISSION:
		return "no permission"
	case nvml.ERROR_GPU_IS_LOST:
		return "GPU is lost (fell off the bus): the driver must be reloaded"
	}
	return ret.Error()
}

func (p *NVML) init() error {
	switch ret := p.lib.Init(); ret {
	case nvml.SUCCESS:
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return probes.Unavailable("libnvidia-ml.so.1 not found (no NVIDIA driver on this machine)")
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return probes.Unavailable("NVIDIA driver not loaded")
	case nvml.ERROR_NO_PERMISSION:
		return probes.Unavailable("no permission to open the NVIDIA driver")
	default:
		return probes.Unavailable("NVML init: %s", ret.Error())
	}
	n, ret := p.lib.DeviceGetCount()
	if ret != nvml.SUCCESS || n == 0 {
		p.lib.Shutdown()
		if ret != nvml.SUCCESS {
			return probes.Unavailable("NVML device count: %s", ret.Error())
		}
		return probes.Unavailable("the NVIDIA driver sees no GPU")
	}
	p.devs = p.devs[:0]
	for i := 0; i < n; i++ {
		h, ret := p.lib.DeviceGetHandleByIndex(i)
		d := &nvmlDevice{h: h, index: i}
		if ret != nvml.SUCCESS {
			d.lost, d.name = true, "unknown"
			p.devs = append(p.devs, d)
			continue
		}
		d.name, _ = h.GetName()
		d.uuid, _ = h.GetUUID()
		if pci, ret := h.GetPciInfo(); ret == nvml.SUCCESS {
			d.busID = int8String(pci.BusId[:])
		}
		if m, ret := h.GetMemoryInfo(); ret == nvml.SUCCESS {
			d.memTotal = probes.Ptr(m.Total)
		}
		if c, ret := h.GetMaxClockInfo(nvml.CLOCK_SM); ret == nvml.SUCCESS {
			d.maxSM = probes.Ptr(float64(c))
		}
		p.initGPM(d)
		d.pcieLink, d.pcieLinkBs = pcieLink(h)
		p.devs = append(p.devs, d)
	}
	if p.pcie == nil {
		parent := p.parent
		if parent == nil { // read without a Sampler (tests, one-off reads)
			parent = context.Background()
		}
		p.pcie = bg.New(parent)
		p.pcie.Go(p.pcieLoop)
	}
	p.ready = true
	return nil
}

func int8String(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

func (p *NVML) pcieLoop(ctx context.Context) {
	t := time.NewTicker(p.PCIeEvery)
	defer t.Stop()
	for {
		p.pollPCIe()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pollPCIe reads every GPU's PCIe counters once. NVML reports KB/s over a
// 20 ms window (nvmlDeviceGetPcieThroughput); KB is 1024 bytes here.
func (p *NVML) pollPCIe() {
	for _, d := range p.devs {
		rx, retRx := d.h.GetPcieThroughput(nvml.PCIE_UTIL_RX_BYTES)
		tx, retTx := d.h.GetPcieThroughput(nvml.PCIE_UTIL_TX_BYTES)
		p.mu.Lock()
		d.pcieRx, d.pcieTx, d.pcieReason = nil, nil, ""
		if retRx == nvml.SUCCESS && retTx == nvml.SUCCESS {
			d.pcieRx, d.pcieTx = probes.Ptr(float64(rx)*1024), probes.Ptr(float64(tx)*1024)
		} else if retRx != nvml.SUCCESS {
			d.pcieReason = reason(retRx)
		} else {
			d.pcieReason = reason(retTx)
		}
		p.mu.Unlock()
	}
}

// sampleValue decodes one nvmlValue_t union as the driver wrote it (host
// byte order).
func sampleValue(vt nvml.ValueType, b [8]byte) float64 {
	switch vt {
	case nvml.VALUE_TYPE_DOUBLE:
		return math.Float64frombits(binary.NativeEndian.Uint64(b[:]))
	case nvml.VALUE_TYPE_UNSIGNED_LONG, nvml.VALUE_TYPE_UNSIGNED_LONG_LONG:
		return float64(binary.NativeEndian.Uint64(b[:]))
	case nvml.VALUE_TYPE_SIGNED_LONG_LONG:
		return float64(int64(binary.NativeEndian.Uint64(b[:])))
	case nvml.VALUE_TYPE_SIGNED_INT:
		return float64(int32(binary.NativeEndian.Uint32(b[:])))
	case nvml.VALUE_TYPE_UNSIGNED_SHORT:
		return float64(binary.NativeEndian.Uint16(b[:]))
	default: // VALUE_TYPE_UNSIGNED_INT, what GPU utilization uses
		return float64(binary.NativeEndian.Uint32(b[:]))
	}
}

// GPUs implements GPUSource.
func (p *NVML) GPUs(context.Context) ([]sample.GPU, error) {
	if !p.ready {
		if err := p.init(); err != nil {
			return nil, err
		}
	}
	out := make([]sample.GPU, 0, len(p.devs))
	for _, d := range p.devs {
		out = append(out, p.read(d))
	}
	return out, nil
}

// read takes one GPU's readings. A field that fails is nil with its reason;
// a lost GPU is marked and not asked again.
func (p *NVML) read(d *nvmlDevice) sample.GPU {
	g := sample.GPU{
		Index: d.index, Name: d.name, Vendor: "nvidia", UUID: d.uuid, BusID: d.busID,
		MemTotalBytes: d.memTotal, SMClockMaxMHz: d.maxSM, Processes: []sample.GPUProcess{},
	}
	fail := func(field string, ret nvml.Return) {
		if ret == nvml.ERROR_GPU_IS_LOST {
			d.lost = true
		}
		markUnavailable(&g, field, reason(ret))
	}
	if d.lost {
		g.Lost = true
		fail("device", nvml.ERROR_GPU_IS_LOST)
		return g
	}
	g.MIG = p.readMIG(d)
	readUtil(d, &g, fail)
	if d.lost {
		g.Lost = true
		return g
	}
	p.readUtilSamples(d, &g, fail)
	readSensors(d, &g, fail)
	p.mu.Lock()
	g.PCIeRxBytesPerSec, g.PCIeTxBytesPerSec = d.pcieRx, d.pcieTx
	pcieReason := d.pcieReason
	p.mu.Unlock()
	if pcieReason != "" {
		markUnavailable(&g, "pcie", pcieReason)
	}
	p.readProcesses(d, &g, fail)
	p.readGPM(d, &g)
	g.PCIeLink, g.PCIeLinkBytesPerSec = d.pcieLink, d.pcieLinkBs
	readNVLink(d, &g)
	if d.lost {
		g.Lost = true
	}
	return g
}

// readUtil reads how busy the GPU and its memory were over the driver's
// last sample period. A partitioned (MIG) GPU whose driver does not say is
// marked with MIGNoUtil rather than the driver's error.
func readUtil(d *nvmlDevice, g *sample.GPU, fail func(string, nvml.Return)) {
	if u, ret := d.h.GetUtilizationRates(); ret == nvml.SUCCESS {
		g.UtilPct, g.MemUtilPct = probes.Ptr(float64(u.Gpu)), probes.Ptr(float64(u.Memory))
	} else if ret == nvml.ERROR_NOT_SUPPORTED && g.MIG != nil {
		// The driver does not say how busy a partitioned GPU is, nor each
		// MIG instance: that takes GPM (Hopper and later) or DCGM.
		markUnavailable(g, "util_pct", MIGNoUtil)
	} else {
		fail("util_pct", ret)
	}
}

// readUtilSamples reduces the driver's utilization sample buffer, which
// holds readings finer than one poll: everything newer than the last one
// read.
func (p *NVML) readUtilSamples(d *nvmlDevice, g *sample.GPU, fail func(string, nvml.Return)) {
	switch vt, ss, ret := d.h.GetSamples(nvml.GPU_UTILIZATION_SAMPLES, d.lastSampleTs); ret {
	case nvml.SUCCESS:
		vals := p.vals[:0]
		newest := d.lastSampleTs
		for _, s := range ss {
			if s.TimeStamp <= d.lastSampleTs {
				continue
			}
			vals = append(vals, sampleValue(vt, s.SampleValue))
			newest = max(newest, s.TimeStamp)
		}
		d.lastSampleTs = newest
		g.UtilSamples = reduceSamples(vals)
		p.vals = vals
	case nvml.ERROR_NOT_FOUND: // no sample since the last read
	default:
		fail("util_samples", ret)
	}
}

// readSensors reads the GPU's memory use, power draw and limit (NVML
// reports milliwatts), temperature, SM clock and why its clocks are held
// down.
func readSensors(d *nvmlDevice, g *sample.GPU, fail func(string, nvml.Return)) {
	if m, ret := d.h.GetMemoryInfo(); ret == nvml.SUCCESS {
		g.MemUsedBytes, g.MemTotalBytes = probes.Ptr(m.Used), probes.Ptr(m.Total)
	} else {
		fail("mem_used_bytes", ret)
	}
	if mw, ret := d.h.GetPowerUsage(); ret == nvml.SUCCESS {
		g.PowerWatts = probes.Ptr(float64(mw) / 1000)
	} else {
		fail("power_watts", ret)
	}
	if mw, ret := d.h.GetEnforcedPowerLimit(); ret == nvml.SUCCESS {
		g.PowerLimitWatts = probes.Ptr(float64(mw) / 1000)
	} else {
		fail("power_limit_watts", ret)
	}
	if c, ret := d.h.GetTemperature(nvml.TEMPERATURE_GPU); ret == nvml.SUCCESS {
		g.TempC = probes.Ptr(float64(c))
	} else {
		fail("temp_c", ret)
	}
	if c, ret := d.h.GetClockInfo(nvml.CLOCK_SM); ret == nvml.SUCCESS {
		g.SMClockMHz = probes.Ptr(float64(c))
	} else {
		fail("sm_clock_mhz", ret)
	}
	if r, ret := d.h.GetCurrentClocksEventReasons(); ret == nvml.SUCCESS {
		g.ClockEvents = decodeClockEvents(r)
	} else {
		fail("clock_events", ret)
	}
}

// pcieLaneBytesPerSec is one lane's bandwidth each way by PCIe generation
// (after encoding: 8b/10b to gen 2, 128b/130b from gen 3).
var pcieLaneBytesPerSec = map[int]float64{1: 250e6, 2: 500e6, 3: 984.6e6, 4: 1969e6, 5: 3938e6, 6: 7877e6}

// pcieLink is the GPU's link, as the board and slot allow it at most (the
// current generation drops at idle to save power).
func pcieLink(h nvml.Device) (string, *float64) {
	gen, ret1 := h.GetMaxPcieLinkGeneration()
	width, ret2 := h.GetMaxPcieLinkWidth()
	lane, ok := pcieLaneBytesPerSec[gen]
	if ret1 != nvml.SUCCESS || ret2 != nvml.SUCCESS || !ok || width <= 0 || width > 32 {
		return "", nil
	}
	return fmt.Sprintf("PCIe %d.0 x%d", gen, width), probes.Ptr(lane * float64(width))
}

// readNVLink reads the NVLink data counters (summed over links, KiB) and
// turns them into bytes per second since the previous reading. A GPU
// without NVLink (NOT_SUPPORTED) is not asked again.
func readNVLink(d *nvmlDevice, g *sample.GPU) {
	if d.noNVLink {
		return
	}
	d.nvl[0] = nvml.FieldValue{FieldId: nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX, ScopeId: math.MaxUint32}
	d.nvl[1] = nvml.FieldValue{FieldId: nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX, ScopeId: math.MaxUint32}
	if ret := d.h.GetFieldValues(d.nvl[:]); ret != nvml.SUCCESS || d.nvl[0].NvmlReturn != uint32(nvml.SUCCESS) || d.nvl[1].NvmlReturn != uint32(nvml.SUCCESS) {
		if ret == nvml.ERROR_NOT_SUPPORTED || d.nvl[0].NvmlReturn == uint32(nvml.ERROR_NOT_SUPPORTED) {
			d.noNVLink = true
		}
		d.nvlHave = false
		return
	}
	rx := uint64(sampleValue(nvml.ValueType(d.nvl[0].ValueType), d.nvl[0].Value))
	tx := uint64(sampleValue(nvml.ValueType(d.nvl[1].ValueType), d.nvl[1].Value))
	ts := d.nvl[0].Timestamp // µs
	if d.nvlHave && ts > d.nvlPrevTs && rx >= d.nvlPrev[0] && tx >= d.nvlPrev[1] {
		sec := float64(ts-d.nvlPrevTs) / 1e6
		g.NVLinkRxBytesPerSec = probes.Ptr(float64(rx-d.nvlPrev[0]) * 1024 / sec)
		g.NVLinkTxBytesPerSec = probes.Ptr(float64(tx-d.nvlPrev[1]) * 1024 / sec)
	}
	d.nvlPrev, d.nvlPrevTs, d.nvlHave = [2]uint64{rx, tx}, ts, true
}

// gpmMetrics are the GPM metrics read per interval, each with the field
// of sample.GPM it fills. A metric the driver does not return for this GPU
// (its own NvmlReturn) leaves its field nil.
var gpmMetrics = [...]struct {
	id    nvml.GpmMetricId
	field func(*sample.GPM) **float64
}{
	{nvml.GPM_METRIC_SM_UTIL, func(m *sample.GPM) **float64 { return &m.SMActivityPct }},
	{nvml.GPM_METRIC_SM_OCCUPANCY, func(m *sample.GPM) **float64 { return &m.SMOccupancyPct }},
	{nvml.GPM_METRIC_ANY_TENSOR_UTIL, func(m *sample.GPM) **float64 { return &m.TensorActivityPct }},
	{nvml.GPM_METRIC_DRAM_BW_UTIL, func(m *sample.GPM) **float64 { return &m.DRAMBWUtilPct }},
	{nvml.GPM_METRIC_HMMA_TENSOR_UTIL, func(m *sample.GPM) **float64 { return &m.TensorHMMAActivityPct }},
	{nvml.GPM_METRIC_IMMA_TENSOR_UTIL, func(m *sample.GPM) **float64 { return &m.TensorIMMAActivityPct }},
	{nvml.GPM_METRIC_DFMA_TENSOR_UTIL, func(m *sample.GPM) **float64 { return &m.TensorDFMAActivityPct }},
	{nvml.GPM_METRIC_FP16_UTIL, func(m *sample.GPM) **float64 { return &m.FP16ActivityPct }},
	{nvml.GPM_METRIC_FP32_UTIL, func(m *sample.GPM) **float64 { return &m.FP32ActivityPct }},
	{nvml.GPM_METRIC_FP64_UTIL, func(m *sample.GPM) **float64 { return &m.FP64ActivityPct }},
}

// initGPM finds whether the device has GPM and allocates its two samples.
func (p *NVML) initGPM(d *nvmlDevice) {
	sup, ret := p.lib.GpmQueryDeviceSupport(d.h)
	switch {
	case ret != nvml.SUCCESS:
		d.gpmWhy = "GPM: " + reason(ret)
		return
	case sup.IsSupportedDevice == 0:
		d.gpmWhy = "GPM not supported by this GPU (Hopper and later have it)"
		return
	}
	a, ret1 := p.lib.GpmSampleAlloc()
	b, ret2 := p.lib.GpmSampleAlloc()
	if ret1 != nvml.SUCCESS || ret2 != nvml.SUCCESS {
		d.gpmWhy = "GPM: cannot allocate samples"
		return
	}
	d.gpm, d.gpmPrev, d.gpm2 = true, a, b
	d.gpmGet = &nvml.GpmMetricsGetType{}
}

// readGPM takes a GPM sample and, from the second on, the SM activity, SM
// occupancy, tensor activity (any, and by precision), the FP pipes'
// activity and DRAM bandwidth use over the interval.
func (p *NVML) readGPM(d *nvmlDevice, g *sample.GPU) {
	if !d.gpm {
		// Said in every frame, as every figure not read is: the panel,
		// the verdict and the report read it from the frame they have.
		if g.Unavailable == nil {
			g.Unavailable = make(map[string]string)
		}
		g.Unavailable["gpm"] = d.gpmWhy
		return
	}
	if len(g.MIG) > 0 {
		p.readMIGGPM(d, g)
		return
	}
	pair := &gpmPair{prev: d.gpmPrev, cur: d.gpm2, have: d.gpmHavePrev, get: d.gpmGet}
	m, ret := p.gpmInterval(pair, func(s nvml.GpmSample) nvml.Return { return p.lib.GpmSampleGet(d.h, s) })
	d.gpmPrev, d.gpm2, d.gpmHavePrev = pair.prev, pair.cur, pair.have
	if ret != nvml.SUCCESS {
		if g.Unavailable == nil {
			g.Unavailable = make(map[string]string)
		}
		g.Unavailable["gpm"] = "GPM sample: " + reason(ret)
		return
	}
	g.GPM = m
}

// gpmPair is one GPM source's two samples (the previous and the newest)
// and its reused metrics request.
type gpmPair struct {
	prev, cur nvml.GpmSample
	have      bool
	get       *nvml.GpmMetricsGetType
}

// gpmInterval takes a sample with take and, from the second on, the
// metrics between it and the previous one; it swaps the samples.
func (p *NVML) gpmInterval(pair *gpmPair, take func(nvml.GpmSample) nvml.Return) (*sample.GPM, nvml.Return) {
	if ret := take(pair.cur); ret != nvml.SUCCESS {
		pair.have = false
		return nil, ret
	}
	var out *sample.GPM
	if pair.have {
		m := pair.get
		m.Version, m.NumMetrics, m.Sample1, m.Sample2 = nvml.GPM_METRICS_GET_VERSION, uint32(len(gpmMetrics)), pair.prev, pair.cur
		for i, gm := range gpmMetrics {
			// The driver writes each metric's status; one it leaves
			// unwritten stays an error, so it is nil and never a 0.
			m.Metrics[i] = nvml.GpmMetric{MetricId: uint32(gm.id), NvmlReturn: uint32(nvml.ERROR_UNKNOWN)}
		}
		if ret := p.lib.GpmMetricsGet(m); ret == nvml.SUCCESS {
			out = &sample.GPM{}
			for i, gm := range gpmMetrics {
				x := m.Metrics[i].Value
				if m.Metrics[i].NvmlReturn != uint32(nvml.SUCCESS) || x != x || x < 0 || x > 100 {
					continue
				}
				*gm.field(out) = probes.Ptr(x)
			}
		}
	}
	pair.prev, pair.cur, pair.have = pair.cur, pair.prev, true
	return out, nvml.SUCCESS
}

// readMIGGPM samples GPM per MIG instance (by GPU instance ID): each
// instance gets its own readings, and the GPU the mean of its instances'
// SM activity — on MIG, the accelerator signal utilization cannot give.
func (p *NVML) readMIGGPM(d *nvmlDevice, g *sample.GPU) {
	if d.migGPM == nil {
		d.migGPM = map[int]*gpmPair{}
	}
	var sum float64
	n := 0
	for i := range g.MIG {
		mi := &g.MIG[i]
		if mi.GPUInstanceID == nil {
			continue
		}
		id := *mi.GPUInstanceID
		pair := d.migGPM[id]
		if pair == nil {
			if len(d.migGPM) >= maxMIG {
				continue
			}
			a, ret1 := p.lib.GpmSampleAlloc()
			b, ret2 := p.lib.GpmSampleAlloc()
			if ret1 != nvml.SUCCESS || ret2 != nvml.SUCCESS {
				continue
			}
			pair = &gpmPair{prev: a, cur: b, get: &nvml.GpmMetricsGetType{}}
			d.migGPM[id] = pair
		}
		m, ret := p.gpmInterval(pair, func(s nvml.GpmSample) nvml.Return { return p.lib.GpmMigSampleGet(d.h, id, s) })
		if ret != nvml.SUCCESS || m == nil {
			continue
		}
		mi.GPM = m
		if m.SMActivityPct != nil {
			sum += *m.SMActivityPct
			n++
		}
	}
	if n > 0 {
		g.GPM = &sample.GPM{SMActivityPct: probes.Ptr(sum / float64(n))}
	}
}

// MIGNoUtil is why a MIG-partitioned GPU has no utilization.
const MIGNoUtil = "not available on MIG: NVML reports no utilization for a partitioned GPU or its instances (GPM on Hopper and later, or DCGM's profiling fields, give it)"

// maxMIG bounds the MIG devices read per GPU (7 on an A100 or H100).
const maxMIG = 16

// readMIG lists the MIG devices of a GPU in MIG mode; nil when it is not
// partitioned (or cannot say).
func (p *NVML) readMIG(d *nvmlDevice) []sample.MIGDevice {
	if cur, _, ret := d.h.GetMigMode(); ret != nvml.SUCCESS || cur != nvml.DEVICE_MIG_ENABLE {
		return nil
	}
	n, ret := d.h.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		return []sample.MIGDevice{}
	}
	out := []sample.MIGDevice{}
	for i := 0; i < min(n, maxMIG); i++ {
		h, ret := d.h.GetMigDeviceHandleByIndex(i)
		if ret != nvml.SUCCESS {
			continue // NOT_FOUND: no instance in this slot
		}
		m := sample.MIGDevice{Processes: []sample.GPUProcess{}}
		m.UUID, _ = h.GetUUID()
		if name, ret := h.GetName(); ret == nvml.SUCCESS {
			m.Profile = migProfile(name)
		}
		if id, ret := h.GetGpuInstanceId(); ret == nvml.SUCCESS {
			m.GPUInstanceID = probes.Ptr(id)
		}
		if mem, ret := h.GetMemoryInfo(); ret == nvml.SUCCESS {
			m.MemUsedBytes, m.MemTotalBytes = probes.Ptr(mem.Used), probes.Ptr(mem.Total)
		}
		if procs, ret := h.GetComputeRunningProcesses(); ret == nvml.SUCCESS {
			for _, pr := range procs {
				gp := sample.GPUProcess{PID: int(pr.Pid)}
				if pr.UsedGpuMemory != math.MaxUint64 {
					gp.UsedMemBytes = probes.Ptr(pr.UsedGpuMemory)
				}
				m.Processes = append(m.Processes, gp)
			}
		}
		out = append(out, m)
	}
	return out
}

// migProfile is the profile in a MIG device's name ("NVIDIA A100-SXM4-40GB
// MIG 1g.5gb" → "1g.5gb"); the name itself when it has none.
func migProfile(name string) string {
	if i := strings.LastIndex(name, "MIG "); i >= 0 {
		return name[i+4:]
	}
	return name
}

func (p *NVML) readProcesses(d *nvmlDevice, g *sample.GPU, fail func(string, nvml.Return)) {
	procs, ret := d.h.GetComputeRunningProcesses()
	if ret != nvml.SUCCESS {
		fail("processes", ret)
		return
	}
	if len(procs) == 0 {
		return
	}
	// Per-process SM utilization: the mean of the samples since the last
	// read. Not every device supports it (consumer boards, MIG).
	type acc struct {
		sum float64
		n   int
	}
	var sm map[uint32]acc
	switch us, ret := d.h.GetProcessUtilization(d.lastProcTs); ret {
	case nvml.SUCCESS:
		sm = make(map[uint32]acc, len(us))
		for _, u := range us {
			if u.TimeStamp <= d.lastProcTs {
				continue
			}
			a := sm[u.Pid]
			a.sum, a.n = a.sum+float64(u.SmUtil), a.n+1
			sm[u.Pid] = a
			d.lastProcTs = max(d.lastProcTs, u.TimeStamp)
		}
	case nvml.ERROR_NOT_FOUND:
		sm = map[uint32]acc{}
	default:
		fail("processes.sm_util_pct", ret)
	}
	for _, pr := range procs {
		gp := sample.GPUProcess{PID: int(pr.Pid)}
		// NVML reports unknown memory (no permission, Windows WDDM) as
		// NVML_VALUE_NOT_AVAILABLE, all ones.
		if pr.UsedGpuMemory != math.MaxUint64 {
			gp.UsedMemBytes = probes.Ptr(pr.UsedGpuMemory)
		}
		if sm != nil {
			if a, ok := sm[pr.Pid]; ok && a.n > 0 {
				gp.SMUtilPct = probes.Ptr(a.sum / float64(a.n))
			} else {
				gp.SMUtilPct = probes.Ptr(0.0)
			}
		}
		g.Processes = append(g.Processes, gp)
	}
}

// Close stops the PCIe goroutine and shuts NVML down.
func (p *NVML) Close() error {
	p.once.Do(func() {
		if p.pcie != nil {
			p.pcie.Close()
		}
		if p.ready {
			for _, d := range p.devs {
				if d.gpm {
					d.gpmPrev.Free()
					d.gpm2.Free()
				}
				for _, pair := range d.migGPM {
					pair.prev.Free()
					pair.cur.Free()
				}
			}
			p.lib.Shutdown()
			p.ready = false
		}
	})
	return nil
}

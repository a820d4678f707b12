//go:build linux && cgo

package gpu

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/probes"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"github.com/gpuwatch/gpuwatch/probes/internal/probetest"
)

// gpuTrace is what one mock GPU reports.
type gpuTrace struct {
	util    uint32
	samples []uint32 // utilization samples, 1/6 s apart, appended per read
}

// mockServer returns go-nvml's 8-GPU DGX A100 mock with every call the
// probe makes answered: GPU i reports traces[i] (keyed by index, never by
// the mock's random UUID).
func mockServer(t *testing.T, traces []gpuTrace) *server.Server {
	t.Helper()
	s := dgxa100.New()
	// An A100 has no GPM; withGPM gives the mock Hopper's.
	s.GpmQueryDeviceSupportFunc = func(nvml.Device) (nvml.GpmSupport, nvml.Return) {
		return nvml.GpmSupport{IsSupportedDevice: 0}, nvml.SUCCESS
	}
	for i, h := range s.Devices {
		d := h.(*server.Device)
		tr := traces[i%len(traces)]
		var ts uint64 = 1_000_000
		d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
			return nvml.Utilization{Gpu: tr.util, Memory: tr.util / 2}, nvml.SUCCESS
		}
		d.GetSamplesFunc = func(typ nvml.SamplingType, last uint64) (nvml.ValueType, []nvml.Sample, nvml.Return) {
			if typ != nvml.GPU_UTILIZATION_SAMPLES {
				return 0, nil, nvml.ERROR_INVALID_ARGUMENT
			}
			// A new batch per read, plus an old sample the driver keeps
			// in its buffer: only those newer than last count.
			out := []nvml.Sample{mkSample(last, 77)}
			for _, v := range tr.samples {
				ts += 166_667
				out = append(out, mkSample(ts, v))
			}
			if len(tr.samples) == 0 {
				return nvml.VALUE_TYPE_UNSIGNED_INT, nil, nvml.ERROR_NOT_FOUND
			}
			return nvml.VALUE_TYPE_UNSIGNED_INT, out, nvml.SUCCESS
		}
		d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 250_000, nvml.SUCCESS }
		d.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) { return 400_000, nvml.SUCCESS }
		d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 61, nvml.SUCCESS }
		d.GetClockInfoFunc = func(nvml.ClockType) (uint32, nvml.Return) { return 1410, nvml.SUCCESS }
		d.GetMaxClockInfoFunc = func(nvml.ClockType) (uint32, nvml.Return) { return 1410, nvml.SUCCESS }
		d.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) { return 0x4 | 0x40, nvml.SUCCESS }
		d.GetPcieThroughputFunc = func(c nvml.PcieUtilCounter) (uint32, nvml.Return) {
			if c == nvml.PCIE_UTIL_RX_BYTES {
				return 1000, nvml.SUCCESS
			}
			return 500, nvml.SUCCESS
		}
		d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
			return []nvml.ProcessInfo{{Pid: uint32(4000 + i), UsedGpuMemory: 2 << 30}}, nvml.SUCCESS
		}
		d.GetMaxPcieLinkGenerationFunc = func() (int, nvml.Return) { return 4, nvml.SUCCESS }
		d.GetMaxPcieLinkWidthFunc = func() (int, nvml.Return) { return 16, nvml.SUCCESS }
		// NVLink data counters (KiB): 1 GiB received and 0.5 GiB sent per
		// second of the counters' own clock.
		var nvlTs int64 = 5_000_000
		var nvlRx, nvlTx uint64
		d.GetFieldValuesFunc = func(vs []nvml.FieldValue) nvml.Return {
			nvlTs += 1_000_000
			nvlRx, nvlTx = nvlRx+1<<20, nvlTx+1<<19
			for k := range vs {
				v := nvlRx
				if vs[k].FieldId == nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX {
					v = nvlTx
				}
				vs[k].Timestamp, vs[k].ValueType, vs[k].NvmlReturn = nvlTs, uint32(nvml.VALUE_TYPE_UNSIGNED_LONG_LONG), uint32(nvml.SUCCESS)
				binary.NativeEndian.PutUint64(vs[k].Value[:], v)
			}
			return nvml.SUCCESS
		}
		d.GetProcessUtilizationFunc = func(last uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
			return []nvml.ProcessUtilizationSample{
				{Pid: uint32(4000 + i), TimeStamp: last + 1, SmUtil: 60},
				{Pid: uint32(4000 + i), TimeStamp: last + 2, SmUtil: 80},
			}, nvml.SUCCESS
		}
	}
	return s
}

func mkSample(ts uint64, v uint32) nvml.Sample {
	s := nvml.Sample{TimeStamp: ts}
	binary.NativeEndian.PutUint32(s.SampleValue[:], v)
	return s
}

func device(s *server.Server, i int) *server.Device { return s.Devices[i].(*server.Device) }

func sawtooth(n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		if i%2 == 0 {
			out[i] = 100
		}
	}
	return out
}

func TestNVMLEightGPUsSawtoothAndSteady(t *testing.T) {
	steady := make([]uint32, 6)
	for i := range steady {
		steady[i] = 80
	}
	srv := mockServer(t, []gpuTrace{{util: 50, samples: sawtooth(6)}, {util: 80, samples: steady}})
	p := NewNVML(srv)
	defer p.Close()
	gs, err := p.GPUs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 8 {
		t.Fatalf("%d GPUs, want 8", len(gs))
	}
	for i, g := range gs {
		if g.Index != i || g.Vendor != "nvidia" || !strings.Contains(g.Name, "A100") || g.UUID == "" {
			t.Fatalf("gpu %d identity = %+v", i, g)
		}
		if len(g.Unavailable) != 1 || g.Unavailable["gpm"] == "" {
			t.Fatalf("gpu %d: missing fields %v, want only GPM's (an A100 has none; said on the first reading)", i, g.Unavailable)
		}
		s := g.UtilSamples
		if s == nil || s.N != 6 {
			t.Fatalf("gpu %d samples = %+v, want the 6 new ones (not the old one)", i, s)
		}
		if i%2 == 0 { // sawtooth: the mean hides it, p5/p95 show it
			probetest.Near(t, "sawtooth mean", s.Mean, 50)
			probetest.Near(t, "sawtooth p5", s.P5, 0)
			probetest.Near(t, "sawtooth p95", s.P95, 100)
			probetest.NearPtr(t, "sawtooth util", g.UtilPct, 50)
		} else {
			probetest.Near(t, "steady p5", s.P5, 80)
			probetest.Near(t, "steady p95", s.P95, 80)
		}
		probetest.NearPtr(t, "power", g.PowerWatts, 250)
		probetest.NearPtr(t, "power limit", g.PowerLimitWatts, 400)
		probetest.NearPtr(t, "temp", g.TempC, 61)
		probetest.NearPtr(t, "sm clock", g.SMClockMHz, 1410)
		if *g.MemTotalBytes != 40<<30 && *g.MemTotalBytes == 0 {
			t.Fatalf("mem total = %d", *g.MemTotalBytes)
		}
		if strings.Join(g.ClockEvents, ",") != "power cap,hardware thermal slowdown" {
			t.Fatalf("clock events = %v", g.ClockEvents)
		}
		if len(g.Processes) != 1 || g.Processes[0].PID != 4000+i || *g.Processes[0].UsedMemBytes != 2<<30 {
			t.Fatalf("processes = %+v", g.Processes)
		}
		probetest.NearPtr(t, "process SM util (mean of 60 and 80)", g.Processes[0].SMUtilPct, 70)
	}
	// The second read sees only the samples added since the first.
	gs, _ = p.GPUs(context.Background())
	if gs[0].UtilSamples.N != 6 {
		t.Fatalf("second read has %d samples, want 6", gs[0].UtilSamples.N)
	}
}

func TestNVMLNotSupportedFieldLeavesOthers(t *testing.T) {
	srv := mockServer(t, []gpuTrace{{util: 30, samples: []uint32{30}}})
	d := device(srv, 2)
	d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	d.GetProcessUtilizationFunc = func(uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
		return nil, nvml.ERROR_NOT_SUPPORTED
	}
	d.GetSamplesFunc = func(nvml.SamplingType, uint64) (nvml.ValueType, []nvml.Sample, nvml.Return) {
		return 0, nil, nvml.ERROR_NOT_SUPPORTED
	}
	p := NewNVML(srv)
	defer p.Close()
	gs, err := p.GPUs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	g := gs[2]
	if g.PowerWatts != nil || g.Unavailable["power_watts"] != "not supported by this device" {
		t.Fatalf("power = %v, reasons = %v", g.PowerWatts, g.Unavailable)
	}
	if g.UtilSamples != nil || g.Unavailable["util_samples"] == "" {
		t.Fatalf("samples = %+v, reasons = %v", g.UtilSamples, g.Unavailable)
	}
	if g.Processes[0].SMUtilPct != nil || g.Processes[0].UsedMemBytes == nil {
		t.Fatalf("process = %+v", g.Processes[0])
	}
	if g.UtilPct == nil || g.TempC == nil || g.MemUsedBytes == nil || g.PowerLimitWatts == nil {
		t.Fatalf("other fields lost: %+v", g)
	}
	u := gs[1].Unavailable
	if len(u) != 1 || u["gpm"] == "" {
		t.Fatalf("another GPU affected: %v (only the A100's missing GPM is said)", u)
	}
	// Said in every reading: the panel, the verdict and the report read
	// the reason from the frame they have, not from the first one.
	if gs, _ = p.GPUs(context.Background()); gs[1].Unavailable["gpm"] != u["gpm"] {
		t.Fatalf("second reading: %v", gs[1].Unavailable)
	}
}

func TestNVMLGPULostMidRun(t *testing.T) {
	srv := mockServer(t, []gpuTrace{{util: 90, samples: []uint32{90}}})
	var lost atomic.Bool
	var calls atomic.Int64
	d := device(srv, 3)
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		calls.Add(1)
		if lost.Load() {
			return nvml.Utilization{}, nvml.ERROR_GPU_IS_LOST
		}
		return nvml.Utilization{Gpu: 90}, nvml.SUCCESS
	}
	p := NewNVML(srv)
	defer p.Close()
	if gs, _ := p.GPUs(context.Background()); gs[3].Lost {
		t.Fatal("lost before it was")
	}
	lost.Store(true)
	for i := 0; i < 3; i++ {
		gs, err := p.GPUs(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(gs) != 8 || !gs[3].Lost || gs[3].UtilPct != nil || !strings.Contains(gs[3].Unavailable["device"]+gs[3].Unavailable["util_pct"], "lost") {
			t.Fatalf("read %d: gpu 3 = %+v", i, gs[3])
		}
		if gs[2].Lost || gs[2].UtilPct == nil {
			t.Fatalf("gpu 2 affected: %+v", gs[2])
		}
	}
	if calls.Load() != 2 {
		t.Fatalf("lost GPU asked %d times, want 2 (once fine, once lost, then left alone)", calls.Load())
	}
}

func TestNVMLInitFailuresAreUnavailable(t *testing.T) {
	tests := []struct {
		name  string
		setup func(s *server.Server)
		want  string
	}{
		{"library not found", func(s *server.Server) {
			s.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }
		}, "libnvidia-ml.so.1 not found"},
		{"driver not loaded", func(s *server.Server) {
			s.InitFunc = func() nvml.Return { return nvml.ERROR_DRIVER_NOT_LOADED }
		}, "NVIDIA driver not loaded"},
		{"no devices", func(s *server.Server) {
			s.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.SUCCESS }
		}, "sees no GPU"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := mockServer(t, []gpuTrace{{}})
			tc.setup(srv)
			p := NewNVML(srv)
			defer p.Close()
			_, err := p.GPUs(context.Background())
			if !errors.Is(err, probes.ErrUnavailable) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want unavailable saying %q", err, tc.want)
			}
		})
	}
}

// TestNVMLRealLibraryOnThisMachine: where no NVIDIA driver is installed (CI,
// this project's machines) the real library path says so and nothing breaks.
func TestNVMLRealLibraryOnThisMachine(t *testing.T) {
	p := NewNVML(nil)
	defer p.Close()
	gs, err := p.GPUs(context.Background())
	if err == nil {
		t.Skipf("an NVIDIA driver is present here: %d GPUs", len(gs))
	}
	if !errors.Is(err, probes.ErrUnavailable) || !strings.Contains(err.Error(), "libnvidia-ml.so.1 not found") {
		t.Fatalf("err = %v", err)
	}
}

func TestNVMLPCIeReadOffTheTick(t *testing.T) {
	srv := mockServer(t, []gpuTrace{{util: 10, samples: []uint32{10}}})
	release := make(chan struct{})
	for i := range srv.Devices {
		device(srv, i).GetPcieThroughputFunc = func(c nvml.PcieUtilCounter) (uint32, nvml.Return) {
			<-release // a PCIe read blocks (20 ms on real hardware)
			return 2048, nvml.SUCCESS
		}
	}
	p := NewNVML(srv)
	p.PCIeEvery = time.Hour
	// While the PCIe goroutine is blocked, reads still return, without PCIe.
	gs, err := p.GPUs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if gs[0].PCIeRxBytesPerSec != nil || gs[0].UtilPct == nil {
		t.Fatalf("gpu 0 = %+v", gs[0])
	}
	close(release)
	p.pcie.Close() // the first poll has finished
	gs, _ = p.GPUs(context.Background())
	probetest.NearPtr(t, "pcie rx (2048 KB/s)", gs[0].PCIeRxBytesPerSec, 2048*1024)
	probetest.NearPtr(t, "pcie tx", gs[7].PCIeTxBytesPerSec, 2048*1024)
	p.lib.Shutdown()
}

func TestGPUProbeCombinesVendors(t *testing.T) {
	srv := mockServer(t, []gpuTrace{{util: 10, samples: []uint32{10}}})
	nv := NewNVML(srv)
	defer nv.Close()
	p := NewGPU(nv, NewAMD(t.TempDir()))
	f := probetest.FrameAt(probetest.T0)
	if err := p.Collect(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	if len(f.GPUs) != 8 {
		t.Fatalf("%d GPUs", len(f.GPUs))
	}
	srv.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }
	none := NewGPU(NewNVML(srv), NewAMD(t.TempDir()))
	err := none.Collect(context.Background(), probetest.FrameAt(probetest.T0))
	if !errors.Is(err, probes.ErrUnavailable) || !strings.Contains(err.Error(), "nvidia: libnvidia-ml.so.1 not found") || !strings.Contains(err.Error(), "amd: no ") {
		t.Fatalf("err = %v", err)
	}
}

// withGPM gives the mock GPM, as a Hopper GPU has it: each device's SM
// activity is sm(index), occupancy half of it, tensor activity and DRAM
// bandwidth fixed; the metrics by precision are not supported.
func withGPM(s *server.Server, sm func(gpu int) float64) { withGPMMetrics(s, sm, nil) }

// withGPMMetrics is withGPM whose driver also returns the metrics in more
// (HMMA, FP32 …), each as it is; any other metric is NOT_SUPPORTED, as a
// driver says of a metric the GPU lacks.
func withGPMMetrics(s *server.Server, sm func(gpu int) float64, more map[nvml.GpmMetricId]float64) {
	s.GpmQueryDeviceSupportFunc = func(nvml.Device) (nvml.GpmSupport, nvml.Return) {
		return nvml.GpmSupport{IsSupportedDevice: 1}, nvml.SUCCESS
	}
	s.GpmSampleAllocFunc = func() (nvml.GpmSample, nvml.Return) {
		g := &mockGPMSample{GpmSample: &mock.GpmSample{FreeFunc: func() nvml.Return { return nvml.SUCCESS }}}
		return g, nvml.SUCCESS
	}
	s.GpmSampleGetFunc = func(d nvml.Device, gs nvml.GpmSample) nvml.Return {
		gs.(*mockGPMSample).dev, gs.(*mockGPMSample).gi = d, -1
		return nvml.SUCCESS
	}
	// A MIG instance's SM activity is its GPU's plus its instance ID.
	s.GpmMigSampleGetFunc = func(d nvml.Device, gi int, gs nvml.GpmSample) nvml.Return {
		gs.(*mockGPMSample).dev, gs.(*mockGPMSample).gi = d, gi
		return nvml.SUCCESS
	}
	s.GpmMetricsGetFunc = func(m *nvml.GpmMetricsGetType) nvml.Return {
		smp := m.Sample2.(*mockGPMSample)
		idx := 0
		for i, h := range s.Devices {
			if h == smp.dev {
				idx = i
			}
		}
		act := sm(idx)
		if smp.gi >= 0 {
			act += float64(smp.gi)
		}
		for i := 0; i < int(m.NumMetrics); i++ {
			id := nvml.GpmMetricId(m.Metrics[i].MetricId)
			m.Metrics[i].NvmlReturn = uint32(nvml.SUCCESS)
			switch v, ok := more[id]; {
			case ok:
				m.Metrics[i].Value = v
			case id == nvml.GPM_METRIC_SM_UTIL:
				m.Metrics[i].Value = act
			case id == nvml.GPM_METRIC_SM_OCCUPANCY:
				m.Metrics[i].Value = act / 2
			case id == nvml.GPM_METRIC_ANY_TENSOR_UTIL:
				m.Metrics[i].Value = 3
			case id == nvml.GPM_METRIC_DRAM_BW_UTIL:
				m.Metrics[i].Value = 7
			default:
				m.Metrics[i].Value, m.Metrics[i].NvmlReturn = 0, uint32(nvml.ERROR_NOT_SUPPORTED)
			}
		}
		return nvml.SUCCESS
	}
}

// mockGPMSample remembers what it sampled: a GPU, and a MIG instance
// (gi ≥ 0).
type mockGPMSample struct {
	*mock.GpmSample
	dev nvml.Device
	gi  int
}

// TestNVMLGPM: with GPM, the second read has each GPU's SM activity,
// occupancy, tensor activity and DRAM bandwidth over the interval; without
// it (an A100), the GPU says why.
func TestNVMLGPM(t *testing.T) {
	srv := mockServer(t, []gpuTrace{{util: 100, samples: []uint32{100}}})
	nv := NewNVML(srv)
	gs, _ := nv.GPUs(context.Background())
	if gs[0].GPM != nil || !strings.Contains(gs[0].Unavailable["gpm"], "GPM not supported by this GPU") {
		t.Fatalf("A100: gpm %+v, why %q", gs[0].GPM, gs[0].Unavailable["gpm"])
	}
	nv.Close()

	srv = mockServer(t, []gpuTrace{{util: 100, samples: []uint32{100}}})
	withGPM(srv, func(g int) float64 { return float64(10 + g) })
	nv = NewNVML(srv)
	defer nv.Close()
	if gs, _ = nv.GPUs(context.Background()); gs[3].GPM != nil {
		t.Fatal("GPM metrics from a single sample")
	}
	gs, _ = nv.GPUs(context.Background())
	m := gs[3].GPM
	if m == nil || *m.SMActivityPct != 13 || *m.SMOccupancyPct != 6.5 || *m.TensorActivityPct != 3 || *m.DRAMBWUtilPct != 7 || gs[3].Unavailable["gpm"] != "" {
		t.Fatalf("GPU 3 GPM %+v (%v)", m, gs[3].Unavailable)
	}
}

// TestNVMLGPMByPrecision: the tensor pipes by instruction and the FP
// pipes are read where the driver returns them, and a metric it does not
// return (or returns out of range) stays nil, never 0 — on a whole GPU and
// on each MIG instance alike.
func TestNVMLGPMByPrecision(t *testing.T) {
	srv := mockServer(t, []gpuTrace{{util: 100, samples: []uint32{100}}})
	withGPMMetrics(srv, func(int) float64 { return 80 }, map[nvml.GpmMetricId]float64{
		nvml.GPM_METRIC_HMMA_TENSOR_UTIL: 12,
		nvml.GPM_METRIC_DFMA_TENSOR_UTIL: 0.5,
		nvml.GPM_METRIC_FP32_UTIL:        41,
		nvml.GPM_METRIC_FP16_UTIL:        2,
		nvml.GPM_METRIC_FP64_UTIL:        101, // out of range: dropped
		// IMMA: not returned (NOT_SUPPORTED)
	})
	nv := NewNVML(srv)
	defer nv.Close()
	nv.GPUs(context.Background())
	gs, _ := nv.GPUs(context.Background())
	m := gs[0].GPM
	if m == nil {
		t.Fatalf("no GPM: %v", gs[0].Unavailable)
	}
	want := map[string]*float64{"hmma": m.TensorHMMAActivityPct, "dfma": m.TensorDFMAActivityPct, "fp32": m.FP32ActivityPct, "fp16": m.FP16ActivityPct}
	for name, v := range map[string]float64{"hmma": 12, "dfma": 0.5, "fp32": 41, "fp16": 2} {
		if want[name] == nil || *want[name] != v {
			t.Errorf("%s = %v, want %v", name, want[name], v)
		}
	}
	if m.TensorIMMAActivityPct != nil || m.FP64ActivityPct != nil {
		t.Errorf("IMMA %v, FP64 %v: want nil (not returned, out of range)", m.TensorIMMAActivityPct, m.FP64ActivityPct)
	}
	if m.SMActivityPct == nil || *m.SMActivityPct != 80 || m.TensorActivityPct == nil || *m.TensorActivityPct != 3 {
		t.Errorf("SM %v, any tensor %v", m.SMActivityPct, m.TensorActivityPct)
	}

	// Without the precision metrics (withGPM), they are nil, not 0.
	srv = mockServer(t, []gpuTrace{{util: 100, samples: []uint32{100}}})
	withGPM(srv, func(int) float64 { return 80 })
	nv2 := NewNVML(srv)
	defer nv2.Close()
	nv2.GPUs(context.Background())
	gs, _ = nv2.GPUs(context.Background())
	if m := gs[0].GPM; m == nil || m.TensorHMMAActivityPct != nil || m.FP32ActivityPct != nil || m.TensorIMMAActivityPct != nil {
		t.Fatalf("GPM without precision metrics: %+v", m)
	}
}

// TestNVMLTransfers: each GPU's PCIe link and its bandwidth, and NVLink's
// data throughput from the driver's cumulative counters (from the second
// reading on).
func TestNVMLTransfers(t *testing.T) {
	srv := mockServer(t, []gpuTrace{{util: 50, samples: []uint32{50}}})
	nv := NewNVML(srv)
	defer nv.Close()
	gs, _ := nv.GPUs(context.Background())
	if g := gs[0]; g.PCIeLink != "PCIe 4.0 x16" || g.PCIeLinkBytesPerSec == nil || *g.PCIeLinkBytesPerSec != 16*1969e6 || g.NVLinkRxBytesPerSec != nil {
		t.Fatalf("first reading: link %q %v, nvlink %v", g.PCIeLink, g.PCIeLinkBytesPerSec, g.NVLinkRxBytesPerSec)
	}
	gs, _ = nv.GPUs(context.Background())
	probetest.NearPtr(t, "NVLink rx", gs[0].NVLinkRxBytesPerSec, 1<<30)
	probetest.NearPtr(t, "NVLink tx", gs[0].NVLinkTxBytesPerSec, 1<<29)
	// A GPU without NVLink is not asked again.
	calls := 0
	device(srv, 1).GetFieldValuesFunc = func([]nvml.FieldValue) nvml.Return { calls++; return nvml.ERROR_NOT_SUPPORTED }
	nv.GPUs(context.Background())
	nv.GPUs(context.Background())
	if calls != 1 {
		t.Errorf("NVLink asked %d times of a GPU without it", calls)
	}
}

// BenchmarkNVMLTick8GPUs is one read of 8 mock GPUs (the PCIe goroutine
// excluded), with GPM as on Hopper. Target: ≤ 200 µs.
func BenchmarkNVMLTick8GPUs(b *testing.B) {
	srv := mockServer(&testing.T{}, []gpuTrace{{util: 50, samples: sawtooth(6)}})
	withGPM(srv, func(int) float64 { return 40 })
	p := NewNVML(srv)
	p.PCIeEvery = time.Hour
	defer p.Close()
	ctx := context.Background()
	p.GPUs(ctx)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := p.GPUs(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

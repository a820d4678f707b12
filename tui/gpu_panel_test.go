package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/sample"
)

// TestGPUComputeLine: the GPU panel's compute line gives the achieved
// rate against the dense peak where both are known, with how it was read
// where the line has room, and says why where they are not (an unknown
// model, a GPU without GPM); a GPU with none of it takes no line.
func TestGPUComputeLine(t *testing.T) {
	p := func(v float64) *float64 { return &v }
	th := diagnose.DefaultThresholds()
	for _, c := range []struct {
		name string
		g    sample.GPU
		want []string
	}{
		{"H200 in bf16", sample.GPU{Name: "NVIDIA H200", UtilPct: p(100),
			GPM:  &sample.GPM{SMActivityPct: p(82), TensorActivityPct: p(12), TensorHMMAActivityPct: p(12)},
			Peak: &sample.GPUPeak{Model: "H200 SXM", DenseTFLOPS: map[string]float64{"bf16": 989.5}}},
			[]string{"tensor 12%", "bf16 ≈ 119 of 990 TFLOPS (tensor activity × H200 SXM dense bf16 peak)", "SM active 82%", "HMMA 12%"}},
		{"unknown model", sample.GPU{Name: "NVIDIA Quadro P1000", UtilPct: p(50),
			Unavailable: map[string]string{"peak": `no dense peak known for GPU model "NVIDIA Quadro P1000"`, "gpm": "GPM not supported by this GPU (Hopper and later have it)"}},
			[]string{`no dense peak known for GPU model "NVIDIA Quadro P1000"`, "GPM not supported"}},
		{"peak without GPM", sample.GPU{Name: "NVIDIA A100-SXM4-80GB", UtilPct: p(50),
			Peak: &sample.GPUPeak{Model: "A100", DenseTFLOPS: map[string]float64{"bf16": 312}}},
			[]string{"A100 dense bf16 peak 312 TFLOPS"}},
	} {
		pv := &view{frame: &sample.Frame{GPUs: []sample.GPU{c.g}}, st: &Styles{}, th: &th}
		lines := gpuPanel{}.draw(pv, 200, 2)
		if len(lines) != 2 {
			t.Fatalf("%s: %d lines", c.name, len(lines))
		}
		for _, w := range c.want {
			if !strings.Contains(lines[1], w) {
				t.Errorf("%s: %q lacks %q", c.name, lines[1], w)
			}
		}
	}
	// The step's MFU leads the line of the loop's GPU (sample.MFU).
	g := sample.GPU{Index: 0, Name: "NVIDIA A100-SXM4-80GB", UtilPct: p(99), Peak: &sample.GPUPeak{Model: "A100", DenseTFLOPS: map[string]float64{"bf16": 312}}}
	pv := &view{frame: &sample.Frame{GPUs: []sample.GPU{g}, Loader: &sample.Loader{MFU: &sample.MFU{Ratio: 0.42, Dtype: "bf16", GPU: "A100"}}}, st: &Styles{}, th: &th}
	if lines := (gpuPanel{}).draw(pv, 200, 2); len(lines) != 2 || !strings.HasPrefix(strings.TrimSpace(lines[1]), "GPU 0: MFU 42% at bf16 (FLOPs counted by the hook × steps/s ÷ peak)") {
		t.Errorf("MFU: %q", lines)
	}
	// An MFU above what the tensor cores ran is questioned beside it.
	g.GPM = &sample.GPM{TensorActivityPct: p(5)}
	pv = &view{frame: &sample.Frame{GPUs: []sample.GPU{g}, Loader: &sample.Loader{MFU: &sample.MFU{Ratio: 0.42, Dtype: "bf16", GPU: "A100"}}}, st: &Styles{}, th: &th}
	if lines := (gpuPanel{}).draw(pv, 200, 2); len(lines) != 2 || !strings.Contains(lines[1], "MFU 42% at bf16, above the tensor cores' activity") {
		t.Errorf("MFU above tensor: %q", lines)
	}
	// Nothing to say: the panel keeps its one line per GPU.
	pv = &view{frame: &sample.Frame{GPUs: []sample.GPU{{Name: "x", UtilPct: p(5)}}}, st: &Styles{}, th: &th}
	if _, most := (gpuPanel{}).want(pv, 80); most != 2 {
		t.Errorf("want %d lines at most for one GPU with no compute line", most)
	}
	// One row only: the GPU's line, not the compute line.
	pv.frame.GPUs[0].Unavailable = map[string]string{"peak": "no dense peak known"}
	if lines := (gpuPanel{}).draw(pv, 80, 1); !strings.HasPrefix(lines[0], "0 x") {
		t.Errorf("one row: %q", lines[0])
	}
}

// TestGPUComputeFigures: GPM's SM occupancy and DRAM bandwidth are shown
// where GPM gives them and absent (never 0) where it does not; without
// GPM, the loop's process's SM utilization (NVML, per process) is; the
// rate says it is tensor activity × the model's peak, the MFU that it is
// the hook's FLOPs × steps/s ÷ peak.
func TestGPUComputeFigures(t *testing.T) {
	th := diagnose.DefaultThresholds()
	pid := 4100
	h200 := func(m *sample.GPM) sample.GPU {
		return sample.GPU{Index: 0, Name: "NVIDIA H200", UtilPct: f64(100), GPM: m, Processes: []sample.GPUProcess{{PID: pid, SMUtilPct: f64(64)}},
			Peak:        &sample.GPUPeak{Model: "H200 SXM", Source: "NVIDIA H200 datasheet", DenseTFLOPS: map[string]float64{"tf32": 494.5, "bf16": 989.5}},
			Unavailable: map[string]string{"gpm": "GPM not supported by this GPU"}}
	}
	full := &sample.GPM{SMActivityPct: f64(82), SMOccupancyPct: f64(45), TensorActivityPct: f64(40), TensorHMMAActivityPct: f64(40), DRAMBWUtilPct: f64(71)}
	for _, c := range []struct {
		name      string
		g         sample.GPU
		l         *sample.Loader
		want, not []string
	}{
		{"GPM with occupancy and DRAM", h200(full), nil,
			[]string{"SM active 82%", "occupancy 45%", "DRAM bandwidth 71%", "≈ 198–396 TFLOPS (tensor activity × H200 SXM dense tf32–bf16 peak)", "the step's dtype not read"},
			[]string{"job's kernels"}},
		{"GPM without them: absent, not 0", h200(&sample.GPM{SMActivityPct: f64(82), TensorActivityPct: f64(40)}), nil,
			[]string{"SM active 82%"}, []string{"occupancy", "DRAM", "occ "}},
		{"the MFU's method", h200(full), &sample.Loader{PID: &pid, MFU: &sample.MFU{Ratio: 0.31, Dtype: "bf16", GPU: "H200 SXM"}},
			[]string{"MFU 31% at bf16 (FLOPs counted by the hook × steps/s ÷ peak)"}, nil},
		{"no GPM: the job's kernels per process", h200(nil), &sample.Loader{PID: &pid},
			[]string{"job's kernels 64% of the time (per process)", "GPM not supported", "H200 SXM dense bf16 peak 990 TFLOPS"}, []string{"occupancy", "DRAM"}},
		{"no GPM, another process: not the job's", h200(nil), &sample.Loader{PID: iptr(7)},
			nil, []string{"job's kernels"}},
		{"no GPM, no loader: not the job's", h200(nil), nil,
			nil, []string{"job's kernels"}},
	} {
		pv := &view{frame: &sample.Frame{GPUs: []sample.GPU{c.g}, Loader: c.l}, st: &Styles{}, th: &th}
		_, most := gpuPanel{}.want(pv, 82)
		lines := gpuPanel{}.draw(pv, 82, most-1)
		text := strings.Join(lines[1:], "\n")
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: %q lacks %q", c.name, text, w)
			}
		}
		for _, w := range c.not {
			if strings.Contains(text, w) {
				t.Errorf("%s: %q has %q", c.name, text, w)
			}
		}
		for _, l := range lines {
			if n := cells(l); n != 82 {
				t.Errorf("%s: a line of %d cells: %q", c.name, n, l)
			}
		}
	}
}

// TestGPUComputeLinesDegrade: with fewer rows or cells the figures take
// shorter forms, then fold into the rows there are; a line is never wider
// than the panel nor wrapped past its rows, down to nothing at all.
func TestGPUComputeLinesDegrade(t *testing.T) {
	th := diagnose.DefaultThresholds()
	pid := 4100
	g := sample.GPU{Index: 0, Name: "NVIDIA H200", UtilPct: f64(100),
		GPM:  &sample.GPM{SMActivityPct: f64(82), SMOccupancyPct: f64(45), TensorActivityPct: f64(40), TensorHMMAActivityPct: f64(40), DRAMBWUtilPct: f64(71), FP32ActivityPct: f64(6)},
		Peak: &sample.GPUPeak{Model: "H200 SXM", DenseTFLOPS: map[string]float64{"bf16": 989.5}}}
	pv := &view{frame: &sample.Frame{GPUs: []sample.GPU{g}, Loader: &sample.Loader{PID: &pid, MFU: &sample.MFU{Ratio: 0.31, Dtype: "bf16"}}}, st: &Styles{}, th: &th}
	// Two rows at 59 cells: the short forms, the rate first, all folded.
	lines := pv.computeLines(&pv.frame.GPUs[0], 59, 1)
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "  GPU 0: MFU 31% (bf16) · bf16 ≈396/990 TFLOPS dense") || !strings.HasSuffix(lines[0], "…") {
		t.Errorf("one row at 59 cells: %q", lines)
	}
	// The middle forms where they fit the rows: the method, briefly.
	if lines := pv.computeLines(&pv.frame.GPUs[0], 59, 4); !strings.Contains(strings.Join(lines, "\n"), "bf16 ≈396/990 TFLOPS dense (activity × peak)") {
		t.Errorf("four rows at 59 cells: %q", lines)
	}
	for w := 0; w <= 120; w++ {
		for rows := 0; rows <= 6; rows++ {
			lines := pv.computeLines(&pv.frame.GPUs[0], w, rows)
			if len(lines) > rows {
				t.Fatalf("%d×%d: %d lines", w, rows, len(lines))
			}
			for _, l := range lines {
				if n := cells(l); n != w {
					t.Fatalf("%d×%d: a line of %d cells: %q", w, rows, n, l)
				}
			}
		}
	}
}

// TestGPUModelNameWhole: the 8-GPU machine at 250×70 names the peak's
// model whole (its compute figures once filled one line of the third of
// the screen the GPU panel has, and the model, last, was cut to "H1…");
// at 120×40 too.
func TestGPUModelNameWhole(t *testing.T) {
	m := machines(t)["healthy-8gpu"]
	for _, c := range []struct {
		w, h int
		want string
	}{{250, 70, "(tensor activity × H100 SXM dense bf16 peak)"}, {120, 40, "H100 SXM"}} {
		m.w, m.h = c.w, c.h
		out := ansi.Strip(m.Render())
		if !strings.Contains(out, c.want) || strings.Contains(out, "H1…") {
			t.Errorf("%d×%d: the model is not whole:\n%s", c.w, c.h, out)
		}
		if c.w == 250 && (!strings.Contains(out, "occupancy 45%") || !strings.Contains(out, "DRAM bandwidth 30%")) {
			t.Errorf("%d×%d: no occupancy or DRAM bandwidth:\n%s", c.w, c.h, out)
		}
	}
}

// TestGPUZoomNamesThePeaksSource: zoomed, the GPU panel says where the
// peak comes from and the MFU's whole method (or why there is none), its
// outside text escaped; at every size down to 2×2 it draws without panic.
func TestGPUZoomNamesThePeaksSource(t *testing.T) {
	const evil = "\x1b]0;PWN\x07"
	m := synthetic(6, func(i int, f *sample.Frame) {
		hostParts(f, 4, func(int) float64 { return 50 }, 1)
		gpuParts(f, 2, func(int) (float64, float64, float64) { return 90, 80, 100 })
		f.GPUs[0].Peak.Source = "NVIDIA H100 datasheet " + evil
		f.Loader = &sample.Loader{Source: "embedded", PID: iptr(4100), MFUWhy: "no step in the interval"}
	})
	m.zoom, m.focus = true, pGPU
	m.w, m.h = 250, 40
	out := m.Render()
	if strings.Contains(out, "\x1b]") || strings.Contains(out, "\x07") {
		t.Fatal("the peak's source let an escape sequence through")
	}
	screen := ansi.Strip(out)
	for _, w := range []string{"peak: the H100 SXM's dense TFLOPS: bf16 989.5; from the NVIDIA H100 datasheet", "no MFU: no step in the interval", "occ 45% DRAM 30%"} {
		if !strings.Contains(screen, w) {
			t.Errorf("zoomed: lacks %q:\n%s", w, screen)
		}
	}
	m.shown.Frame.Loader.MFU = &sample.MFU{Ratio: 0.31, Dtype: "bf16", GPUIndex: 0, Method: "the model's 1e+12 FLOPs a step (the hook's count) × 3 steps/s"}
	if screen := ansi.Strip(m.Render()); !strings.Contains(screen, "MFU: the model's 1e+12 FLOPs a step (the hook's count) × 3 steps/s") {
		t.Errorf("zoomed: no MFU method:\n%s", screen)
	}
	for _, size := range [][2]int{{2, 2}, {40, 10}, {80, 24}, {120, 40}} {
		m.w, m.h = size[0], size[1]
		if lines := strings.Split(m.Render(), "\n"); len(lines) > size[1] {
			t.Errorf("%v: %d lines", size, len(lines))
		}
	}
}

// TestTheNoGPUReasonIsReadable: with no GPU read, the GPU panel says why
// whole at 80 and 120 columns (and at the least size the dashboard
// draws), wrapped: it was cut at the panel's edge ("not found (no NVIDIA
// dri…"), with or without a loader's virtual accelerator above it. The
// reason is the one the probes give on a machine without NVIDIA's driver.
func TestTheNoGPUReasonIsReadable(t *testing.T) {
	const reason = "nvidia: libnvidia-ml.so.1 not found (no NVIDIA driver on this machine); amd: no /sys/class/drm"
	noGPU := func(accel bool) *Model {
		return synthetic(10, func(i int, f *sample.Frame) {
			hostParts(f, 8, func(c int) float64 { return float64(10 + c) }, 1)
			f.Unavailable[sample.SourceGPU] = reason
			if accel {
				yes := true
				f.Loader = &sample.Loader{Source: "http://127.0.0.1:6060", Connected: &yes, Batches: 900, BatchesPerSec: 170, SamplesPerSec: 10880,
					WaitShare: f64(0.58), StepMeanMs: f64(2.4)}
				f.Accel = &sample.VirtualAccel{BusyPct: 42, Basis: "loader step time / wall time"}
			}
		})
	}
	for _, accel := range []bool{false, true} {
		m := noGPU(accel)
		for _, size := range [][2]int{{80, 24}, {120, 40}, {minWidth, minHeight}} {
			m.w, m.h = size[0], size[1]
			rows := strings.Split(ansi.Strip(m.Render()), "\n")
			cw := size[0] // the GPU panel's column: the first
			if cols := len(columns(size[0])); cols > 1 {
				cw = (size[0] - (cols - 1)) / cols
			}
			var panel []string
			in := false
			for _, row := range rows {
				seg := strings.TrimSpace(string([]rune(row)[:cw]))
				switch {
				case strings.HasPrefix(seg, "─ GPU "):
					in = true
				case in && strings.HasPrefix(seg, "─ "):
					in = false
				case in:
					panel = append(panel, seg)
				}
			}
			text := strings.Join(strings.Fields(strings.Join(panel, " ")), " ")
			if !strings.Contains(text, reason) {
				t.Errorf("accel %v, %dx%d: the GPU panel does not say %q whole:\n%s", accel, size[0], size[1], reason, strings.Join(panel, "\n"))
			}
		}
	}
}

// TestTheNoGPUReasonDegradesWhenNarrow: in a panel too narrow for the
// reason in a few lines, its lines are bounded and the last says it was
// cut; every line is the panel's width.
func TestTheNoGPUReasonDegradesWhenNarrow(t *testing.T) {
	f := &sample.Frame{Unavailable: map[sample.Source]string{sample.SourceGPU: strings.Repeat("a long reason ", 20)}}
	pv := &view{frame: f, st: &Styles{}}
	for _, w := range []int{1, 10, 30} {
		least, most := gpuPanel{}.want(pv, w)
		if least != 1+maxReasonLines || most != least+1 {
			t.Errorf("width %d: wants %d to %d lines", w, least, most)
		}
		lines := gpuPanel{}.draw(pv, w, most-1)
		for _, l := range lines {
			if cells(l) != w {
				t.Errorf("width %d: a line %d cells wide: %q", w, cells(l), l)
			}
		}
		if last := lines[maxReasonLines-1]; w > 1 && !strings.Contains(last, "…") {
			t.Errorf("width %d: the last line of the reason does not say it was cut: %q", w, last)
		}
	}
}

// TestMeanBatchRowSaysWhyNoBatch: the train row read "no batch yet" after
// 110 batches while the ceiling replayed kept batches (a review): it says
// the replay, a quiet interval, or no batch yet, each where it is so.
func TestMeanBatchRowSaysWhyNoBatch(t *testing.T) {
	th := diagnose.DefaultThresholds()
	for _, c := range []struct {
		l    *sample.Loader
		want string
	}{
		{&sample.Loader{Batches: 110, Ceiling: &sample.Ceiling{State: sample.CeilingReplaying}}, "the ceiling replays kept batches"},
		{&sample.Loader{Batches: 110}, "no batch in this interval"},
		{&sample.Loader{}, "no batch yet"},
	} {
		pv := &view{frame: &sample.Frame{Loader: c.l}, st: &Styles{}, th: &th}
		if got := pv.meanBatchRow(60); !strings.Contains(got, c.want) {
			t.Errorf("%+v: %q, want %q", c.l, got, c.want)
		}
	}
}

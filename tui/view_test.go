package tui

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/sample"
)

// updateGolden reads -update, the flag teatest's golden package defines
// (defining it twice would panic).
func updateGolden() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

var t0 = time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)

func f64(v float64) *float64 { return &v }
func u64(v uint64) *uint64   { return &v }
func iptr(v int) *int        { return &v }

// synthetic builds n frames of a machine, one second apart, shaped by fn,
// and feeds them through a real Diagnoser into a model.
func synthetic(n int, fn func(i int, f *sample.Frame)) *Model {
	m := New(Options{Title: "test box", Interval: time.Second})
	d := diagnose.NewDiagnoser(diagnose.DefaultThresholds())
	for i := 0; i < n; i++ {
		f := &sample.Frame{Time: t0.Add(time.Duration(i) * time.Second), IntervalSec: 1, Unavailable: map[sample.Source]string{}}
		fn(i, f)
		m.Observe(Feed{Frame: f, Verdict: d.Observe(f)})
	}
	return m
}

func hostParts(f *sample.Frame, cores int, busy func(c int) float64, disks int) {
	f.Self = &sample.SelfCost{CPUPct: f64(0.4), CPUSecTotal: 3.2, RSSBytes: u64(14 << 20), TickSec: f64(0.002)}
	f.CPU = &sample.CPU{Load1: 12.5, Load5: 11, Load15: 9, ProcsRunning: 9, ContextSwitchesPerSec: 48200}
	total := 0.0
	for c := 0; c < cores; c++ {
		b := busy(c)
		total += b
		f.CPU.Cores = append(f.CPU.Cores, sample.Core{ID: c, BusyPct: b, UserPct: b * 0.9, SystemPct: b * 0.1})
	}
	f.CPU.BusyPct = total / float64(cores)
	f.CPU.UserPct, f.CPU.SystemPct = f.CPU.BusyPct*0.9, f.CPU.BusyPct*0.1
	f.Mem = &sample.Mem{TotalBytes: 512 << 30, UsedBytes: 96 << 30, AvailableBytes: 410 << 30, CachedBytes: 300 << 30,
		SwapInPagesPerSec: f64(0), SwapOutPagesPerSec: f64(0), MajorFaultsPerSec: f64(2)}
	for d := 0; d < disks; d++ {
		f.Disks = append(f.Disks, sample.Disk{Name: fmt.Sprintf("nvme%dn1", d), ReadBytesPerSec: float64(d) * 1e7, BusyPct: float64(d * 5), AwaitMs: f64(0.2), ReadIOPS: float64(d) * 100})
	}
	f.Net = []sample.NetIf{{Name: "eth0", RxBytesPerSec: 1.2e6, TxBytesPerSec: 3e5}, {Name: "ib0", RxBytesPerSec: 9e9, TxBytesPerSec: 8.5e9}}
	f.PSI = &sample.PSI{CPU: &sample.Pressure{SomePct: f64(2)}, IO: &sample.Pressure{SomePct: f64(0.5)}, Memory: &sample.Pressure{SomePct: f64(0)}}
	f.Procs = &sample.Procs{FocusPID: 4100, List: []sample.Proc{
		{PID: 4100, PPID: 1, Name: "python", State: "R", CPUPct: 180, Threads: 42, RSSBytes: 24 << 30, ReadBytesPerSec: f64(2e8)},
		{PID: 4133, PPID: 4100, Name: "pt_data_worker", State: "S", CPUPct: 75, Threads: 3, RSSBytes: 3 << 30, ReadBytesPerSec: f64(4e7)},
	}, Threads: []sample.Thread{{TID: 4100, PID: 4100, Name: "python", CPUPct: 64}, {TID: 4133, PID: 4133, Name: "pt_data_worker", CPUPct: 41}}}
}

func gpuParts(f *sample.Frame, n int, util func(g int) (u, p5, p95 float64)) {
	for g := 0; g < n; g++ {
		u, p5, p95 := util(g)
		f.GPUs = append(f.GPUs, sample.GPU{Index: g, Name: "NVIDIA H100 80GB HBM3", Vendor: "nvidia", UtilPct: f64(u),
			UtilSamples: &sample.UtilSamples{N: 6, P5: p5, P95: p95, Mean: u}, MemUsedBytes: u64(61 << 30), MemTotalBytes: u64(80 << 30),
			PowerWatts: f64(612), PowerLimitWatts: f64(700), TempC: f64(67), PCIeRxBytesPerSec: f64(2.1e9), PCIeTxBytesPerSec: f64(3e8),
			ClockEvents: []string{}, Processes: []sample.GPUProcess{{PID: 4100, UsedMemBytes: u64(60 << 30)}},
			GPM: &sample.GPM{SMActivityPct: f64(82), SMOccupancyPct: f64(45), TensorActivityPct: f64(40), DRAMBWUtilPct: f64(30),
				TensorHMMAActivityPct: f64(40), FP32ActivityPct: f64(6)},
			Peak: &sample.GPUPeak{Model: "H100 SXM", Source: "datasheet", DenseTFLOPS: map[string]float64{"bf16": 989.5}}})
	}
}

// recorded replays the start of a real recording (gpuwatch demo
// --scenario X --headless --json on a 2-core VM, untrimmed).
func recorded(t testing.TB, name string, frames int) *Model {
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := New(Options{Title: "demo: " + strings.TrimSuffix(name, ".jsonl"), Interval: time.Second})
	d := diagnose.NewDiagnoser(diagnose.DefaultThresholds())
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() && frames > 0 {
		var line struct {
			Type string `json:"type"`
			sample.Frame
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if line.Type != "frame" {
			continue
		}
		fr := line.Frame
		m.Observe(Feed{Frame: &fr, Verdict: d.Observe(&fr)})
		frames--
	}
	return m
}

func machines(t testing.TB) map[string]*Model {
	return map[string]*Model{
		"healthy-8gpu": synthetic(20, func(i int, f *sample.Frame) {
			hostParts(f, 64, func(c int) float64 { return float64(10 + (c*7+i)%30) }, 4)
			gpuParts(f, 8, func(g int) (float64, float64, float64) { return float64(94 + (g+i)%5), 88, 100 })
		}),
		"single-core-2core": recorded(t, "single-core.jsonl", 30),
		"io-bound":          recorded(t, "io-bound.jsonl", 30),
		"no-gpu": synthetic(10, func(i int, f *sample.Frame) {
			hostParts(f, 4, func(c int) float64 { return float64(5 + c) }, 1)
			f.Unavailable[sample.SourceGPU] = "nvidia: libnvidia-ml.so.1 not found (no NVIDIA driver on this machine); amd: no AMD GPU"
			f.Procs.FocusPID = 0
		}),
		"attached-profile": synthetic(12, func(i int, f *sample.Frame) {
			hostParts(f, 16, func(c int) float64 { return float64(20 + c) }, 2)
			f.Disks[1].BusyPct = 99
			f.Unavailable[sample.SourceGPU] = "nvidia: libnvidia-ml.so.1 not found (no NVIDIA driver on this machine); amd: no AMD GPU"
			yes := true
			f.Loader = &sample.Loader{Source: "http://127.0.0.1:6060", Connected: &yes, Batches: 900, BatchesPerSec: 170, SamplesPerSec: 10880,
				BytesPerSec: 1.4e9, WaitShare: f64(0.58), WaitMeanMs: f64(4.1), WaitP50Ms: f64(3.5), WaitP95Ms: f64(9), WaitP99Ms: f64(12),
				StepMeanMs: f64(2.4), QueueDepth: f64(1), Workers: iptr(16), Prefetch: iptr(1), ReadSecPerSec: f64(15.2), DecodeSecPerSec: f64(0)}
			f.Accel = &sample.VirtualAccel{BusyPct: 42, Basis: "loader step time / wall time"}
			f.Profile = &sample.Profile{TakenAt: t0.Add(5 * time.Second), DurationSec: 5, CPUSec: 4.9,
				Categories: []sample.ProfileCategory{{Name: "reading", Share: 0.959}, {Name: "decoding", Share: 0}, {Name: "waiting", Share: 0.031}, {Name: "gc", Share: 0}, {Name: "other", Share: 0.01}},
				Top: []sample.ProfileFunc{{Name: "runtime.memmove", Flat: 0.602, Cum: 0.602}, {Name: "internal/runtime/syscall/linux.Syscall6", Flat: 0.337, Cum: 0.337},
					{Name: "runtime.exitsyscall", Flat: 0.02, Cum: 0.02}, {Name: "github.com/gpuwatch/gpuwatch/loader.(*Loader).fetch", File: "/src/gpuwatch/loader/loader.go", Line: 195, Flat: 0, Cum: 0.969}}}
		}),
		"256-core": synthetic(20, func(i int, f *sample.Frame) {
			hostParts(f, 256, func(c int) float64 { return float64(90 + (c+i)%10) }, 16)
			gpuParts(f, 8, func(g int) (float64, float64, float64) { return 35, 0, 100 })
			f.Loader = &sample.Loader{Source: "embedded", Batches: 1200, BatchesPerSec: 12, SamplesPerSec: 3072, BytesPerSec: 2e8,
				WaitShare: f64(0.62), WaitMeanMs: f64(48), WaitP50Ms: f64(40), WaitP95Ms: f64(120), WaitP99Ms: f64(180), StepMeanMs: f64(30),
				QueueDepth: f64(0), Workers: iptr(240), Prefetch: iptr(2), ReadSecPerSec: f64(3), DecodeSecPerSec: f64(230),
				Timeline: []sample.BatchTiming{{WaitMs: 48, StepMs: 30}, {WaitMs: 52, StepMs: 30}, {WaitMs: 44, StepMs: 31}}}
			// The embedded loader's 240 workers are goroutines of the
			// watched process: its CPU is theirs (not processes outside it).
			f.Procs.List[0].CPUPct = 23500
		}),
	}
}

// TestGoldenViews renders each machine at 80×24, 120×40 and 250×70 and
// compares the text (styles stripped) with testdata/NAME-WxH.golden.
// Run with -update to rewrite them after an intended change.
func TestGoldenViews(t *testing.T) {
	for name, m := range machines(t) {
		for _, size := range [][2]int{{80, 24}, {120, 40}, {250, 70}} {
			t.Run(fmt.Sprintf("%s-%dx%d", name, size[0], size[1]), func(t *testing.T) {
				m.w, m.h = size[0], size[1]
				out := m.Render()
				lines := strings.Split(out, "\n")
				if len(lines) != size[1] {
					t.Fatalf("%d lines, want %d", len(lines), size[1])
				}
				for i, l := range lines {
					if w := ansi.StringWidth(l); w != size[0] {
						t.Fatalf("line %d is %d cells wide, want %d: %q", i, w, size[0], ansi.Strip(l))
					}
				}
				got := ansi.Strip(out) + "\n"
				path := filepath.Join("testdata", fmt.Sprintf("%s-%dx%d.golden", name, size[0], size[1]))
				if updateGolden() {
					if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test ./tui -update)", err)
				}
				if got != string(want) {
					t.Fatalf("view differs from %s (go test ./tui -run Golden -update rewrites it):\n%s", path, got)
				}
			})
		}
	}
}

func TestTooSmallSaysSo(t *testing.T) {
	m := machines(t)["no-gpu"]
	for _, size := range [][2]int{{2, 2}, {59, 30}, {100, 15}} {
		m.w, m.h = size[0], size[1]
		out := ansi.Strip(m.Render())
		if size[0] >= 40 && !strings.Contains(out, "terminal too small") {
			t.Fatalf("%v: %q", size, out)
		}
		if len(strings.Split(out, "\n")) > size[1] {
			t.Fatalf("%v: more lines than the terminal has", size)
		}
	}
}

func TestVerdictColoursFollowTheTone(t *testing.T) {
	s := DefaultStyles()
	seen := map[string]diagnose.Tone{}
	for _, k := range diagnose.Kinds {
		tone := k.Tone()
		got := s.Verdict(k).Render("x")
		if got == "x" || got == "" {
			t.Fatalf("%s (%s) is not painted", k, tone)
		}
		if other, ok := seen[got]; ok && other != tone {
			t.Fatalf("%s (%s) looks like a %s verdict", k, tone, other)
		}
		seen[got] = tone
	}
	if s.Verdict(diagnose.Healthy).Render("x") == s.Verdict(diagnose.CPUSaturated).Render("x") {
		t.Fatal("healthy and cpu_saturated look the same")
	}
}

// BenchmarkView256Cores8GPUs16Disks renders the busiest machine at
// 250×70 with 300 frames of history. Target ≤ 5 ms.
func BenchmarkView256Cores8GPUs16Disks(b *testing.B) {
	m := synthetic(300, func(i int, f *sample.Frame) {
		hostParts(f, 256, func(c int) float64 { return float64((c + i) % 100) }, 16)
		gpuParts(f, 8, func(g int) (float64, float64, float64) { return float64((g*13 + i) % 100), 0, 100 })
	})
	for _, size := range [][2]int{{120, 40}, {250, 70}} {
		b.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(b *testing.B) {
			m.w, m.h = size[0], size[1]
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				_ = m.View()
			}
		})
	}
}

// TestNamesFromOutsideCarryNoTerminalEscapes: a process, thread, disk,
// interface, GPU, loader and profile function named with escape sequences
// (retitle, clear screen) reach the screen with their control characters
// replaced; the dashboard's own styling is the only escape left.
func TestNamesFromOutsideCarryNoTerminalEscapes(t *testing.T) {
	const evil = "\x1b]0;PWN\x07\x1b[2J"
	m := synthetic(6, func(i int, f *sample.Frame) {
		hostParts(f, 4, func(int) float64 { return 50 }, 1)
		f.Disks[0].Name = evil
		f.Net = []sample.NetIf{{Name: evil}}
		f.Procs = &sample.Procs{FocusPID: 1, List: []sample.Proc{{PID: 1, Name: evil, CPUPct: 99}}, Threads: []sample.Thread{{TID: 1, PID: 1, Name: evil, CPUPct: 99}}}
		f.GPUs = []sample.GPU{{Name: evil, UtilPct: f64(10)}}
		f.Loader = &sample.Loader{Source: evil, Connected: new(bool)}
		f.Profile = &sample.Profile{Categories: []sample.ProfileCategory{{Name: "reading", Share: 1}}, Top: []sample.ProfileFunc{{Name: evil, Flat: 1, Cum: 1}}}
	})
	for _, size := range [][2]int{{120, 40}, {200, 60}} {
		m.w, m.h = size[0], size[1]
		out := m.Render()
		if strings.Contains(out, "\x1b]") || strings.Contains(out, "\x07") || strings.Contains(out, "\x1b[2J") {
			t.Fatalf("%dx%d: a name's escape sequence reached the screen", size[0], size[1])
		}
		if !strings.Contains(ansi.Strip(out), "]0;PWN") {
			t.Fatalf("%dx%d: the names' printable part is not shown", size[0], size[1])
		}
	}
	// The details (d): a verdict's words carry outside text too (a
	// recording's GPU model in the advice, a command in the job's line).
	v := &m.shown.Verdict
	v.Advice = []string{"at bf16 ≈ 595 TFLOPS of the " + evil + "'s 990 dense"}
	v.Missing = []string{evil}
	v.Changes = []diagnose.Change{{Knob: evil, From: evil, To: evil, Flag: evil, Why: evil}}
	m.details = true
	out := m.Render()
	if strings.Contains(out, "\x1b]") || strings.Contains(out, "\x07") || strings.Contains(out, "\x1b[2J") {
		t.Fatalf("the details let an escape sequence through: %q", out)
	}
	if !strings.Contains(ansi.Strip(out), "]0;PWN") {
		t.Fatalf("the details' printable part is not shown")
	}
}

// TestJobGPUsMarkedAndOthersFolded: a job on GPUs 2 and 5 of eight; the
// panel marks those two and folds the six others into one line, and the
// verdict judges the job's pair (busy), not the idle mean.
func TestJobGPUsMarkedAndOthersFolded(t *testing.T) {
	m := synthetic(12, func(i int, f *sample.Frame) {
		hostParts(f, 8, func(int) float64 { return 20 }, 1)
		gpuParts(f, 8, func(g int) (float64, float64, float64) {
			if g == 2 || g == 5 {
				return 95, 90, 100
			}
			return 0, 0, 0
		})
		f.JobGPUs = "CUDA_VISIBLE_DEVICES of pid 4100"
		f.GPUs[2].Job, f.GPUs[5].Job = true, true
	})
	m.w, m.h = 120, 40
	screen := ansi.Strip(m.Render())
	for _, want := range []string{"▸2 H100", "▸5 H100", "6 other GPU(s) folded, mean 0 %"} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}
	if strings.Contains(screen, "▸0 H100") || strings.Contains(screen, "\n0 H100") {
		t.Error("a GPU outside the job is shown unfolded")
	}
	if k := m.shown.Verdict.Kind; k == diagnose.Idle {
		t.Errorf("verdict %s: the job's GPUs are busy", k)
	}
}

// TestDashboardUsesItsHeight: at every size from 80×24 to 250×70 the
// panels fill the rows between the verdict and the key line: at most 3
// blank rows (the trend charts take what the figures leave).
func TestDashboardUsesItsHeight(t *testing.T) {
	for name, m := range machines(t) {
		for _, w := range []int{80, 100, 120, 130, 160, 200, 250} {
			for _, h := range []int{24, 30, 40, 45, 55, 70} {
				m.w, m.h = w, h
				lines := strings.Split(ansi.Strip(m.Render()), "\n")
				first := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "─ ") })
				if first < 0 {
					t.Fatalf("%s %dx%d: no panel", name, w, h)
				}
				blank := 0
				for _, l := range lines[first : len(lines)-1] {
					if strings.TrimSpace(l) == "" {
						blank++
					}
				}
				if blank > 3 {
					t.Errorf("%s at %dx%d: %d blank rows in the panel area:\n%s", name, w, h, blank, strings.Join(lines, "\n"))
				}
			}
		}
	}
}

// TestProfileSharesFollowTheirSampleCount: 16 samples show whole percents
// and say how many they are; 5,000 show tenths.
func TestProfileSharesFollowTheirSampleCount(t *testing.T) {
	p := &sample.Profile{CPUSec: 0.16, DurationSec: 5, Categories: []sample.ProfileCategory{{Name: "decoding", Share: 1}},
		Top: []sample.ProfileFunc{{Name: "main.decode", Flat: 0.3125, Cum: 0.5}}}
	for _, c := range []struct {
		n    int64
		want string
	}{{16, "   31%    50%  main.decode"}, {5000, " 31.2%  50.0%  main.decode"}} {
		p.Samples = c.n
		pv := &view{frame: &sample.Frame{Profile: p}, st: &Styles{}}
		out := strings.Join(profilePanel{}.draw(pv, 80, 4), "\n")
		if !strings.Contains(out, c.want) || !strings.Contains(out, fmt.Sprintf("(%d samples)", c.n)) {
			t.Errorf("%d samples:\n%s", c.n, out)
		}
	}
}

// TestTheProfilePanelNamesItsRank: with several ranks the panel says
// whose profile it shows; with one loader it names none.
func TestTheProfilePanelNamesItsRank(t *testing.T) {
	two := 2
	p := &sample.Profile{Source: "http://127.0.0.1:6062", CPUSec: 1, DurationSec: 5, Samples: 100,
		Categories: []sample.ProfileCategory{{Name: "decoding", Share: 1}}}
	f := &sample.Frame{Profile: p, Ranks: []sample.Rank{
		{Rank: 0, URL: "http://127.0.0.1:6061", WorldSize: &two, Pacing: true},
		{Rank: 1, URL: "http://127.0.0.1:6062", WorldSize: &two}}}
	pv := &view{frame: f, st: &Styles{}}
	if out := strings.Join(profilePanel{}.draw(pv, 120, 4), "\n"); !strings.Contains(out, " of rank 1:") {
		t.Errorf("the panel does not name rank 1:\n%s", out)
	}
	f.Ranks = f.Ranks[:1]
	if out := strings.Join(profilePanel{}.draw(pv, 120, 4), "\n"); strings.Contains(out, " of ") {
		t.Errorf("one loader's panel names a rank:\n%s", out)
	}
}

// TestTheDemoNamesItsScenarioAtEveryWidth: the header names the scenario
// running and the seconds left in it, from 80 to 250 columns, in place of
// the tour's title.
func TestTheDemoNamesItsScenarioAtEveryWidth(t *testing.T) {
	m := machines(t)["single-core-2core"]
	m.opt.Title = DemoTour
	m.shown.Scenario = &Scenario{Name: "starved", Until: m.shown.frameTime().Add(12 * time.Second)}
	for _, w := range []int{80, 100, 120, 200, 250} {
		m.w, m.h = w, 40
		head := strings.Split(ansi.Strip(m.Render()), "\n")[0]
		if !strings.Contains(head, "demo: starved, 12s left") || strings.Contains(head, "tour of every") {
			t.Errorf("%d columns: %q", w, head)
		}
	}
}

// TestHelpKeysLineUp: every key of the ? help, "shift+tab/←/h" included,
// ends before its description's column, the same for every row.
func TestHelpKeysLineUp(t *testing.T) {
	m := machines(t)["no-gpu"]
	m.opt.Replay = &Replay{}
	col := -1
	for _, l := range m.helpLines() {
		l = ansi.Strip(l)
		if !strings.HasPrefix(l, "  ") || strings.TrimSpace(l) == "" {
			continue
		}
		var desc int
		for _, word := range []string{"quit", "focus the previous panel", "seek 10 s", "help", "back"} {
			if i := strings.Index(l, word); i > 0 && strings.TrimSpace(l[:i]) != "" && strings.HasSuffix(l[:i], "  ") {
				desc = ansi.StringWidth(l[:i])
			}
		}
		if desc == 0 {
			continue
		}
		if col >= 0 && desc != col {
			t.Fatalf("description at column %d, others at %d: %q", desc, col, l)
		}
		col = desc
	}
	if col < len("  shift+tab/←/h") {
		t.Fatalf("descriptions start at %d", col)
	}
}

// TestSparkPaintsRunsNotCells: a sparkline paints each run of one colour
// once (steady, then bursty, then steady: three paints), and draws every
// value.
func TestSparkPaintsRunsNotCells(t *testing.T) {
	st := DefaultStyles()
	pv := &view{st: &st}
	out := pv.spark([]float64{10, 50, 90, 90, 20}, []bool{false, true, true, false, false}, 5)
	if n := strings.Count(out, st.burstPaint.pre); n != 1 {
		t.Errorf("%d bursty paints, want 1: %q", n, out)
	}
	if n := strings.Count(out, st.sparkPaint.pre); n != 2 {
		t.Errorf("%d steady paints, want 2: %q", n, out)
	}
	if got := ansi.Strip(out); got != "▁▄▇▇▂" {
		t.Errorf("cells %q", got)
	}
}

// TestStylesForAProfileDrawWhatTheProfilesWriterWould: a view rendered in
// a terminal's colours (SetColorProfile) is byte for byte what
// colorprofile's writer makes of the full-colour view, for each profile
// and each kind of cell: panels, the verdict's tone, a 256-core heat grid,
// sparklines, bars, the train row.
func TestStylesForAProfileDrawWhatTheProfilesWriterWould(t *testing.T) {
	models := map[string]func() *Model{
		"single-core": func() *Model { return recorded(t, "single-core.jsonl", 26) },
		"io-bound":    func() *Model { return recorded(t, "io-bound.jsonl", 26) },
		"256-core": func() *Model {
			return synthetic(30, func(i int, f *sample.Frame) {
				hostParts(f, 256, func(c int) float64 { return float64((c + i) % 100) }, 16)
				gpuParts(f, 8, func(g int) (float64, float64, float64) { return float64((g*13 + i) % 100), 0, 100 })
			})
		},
	}
	for name, mk := range models {
		for _, p := range []colorprofile.Profile{colorprofile.TrueColor, colorprofile.ANSI256, colorprofile.ANSI, colorprofile.Ascii} {
			full, conv := mk(), mk()
			conv.SetColorProfile(p)
			for _, size := range [][2]int{{120, 40}, {250, 70}} {
				full.w, full.h = size[0], size[1]
				conv.w, conv.h = size[0], size[1]
				var want bytes.Buffer
				w := &colorprofile.Writer{Forward: &want, Profile: p}
				if _, err := w.Write([]byte(full.Render())); err != nil {
					t.Fatal(err)
				}
				got := conv.Render()
				if got != want.String() {
					t.Fatalf("%s %v %dx%d: the converted styles draw differently from the writer's conversion:\n got %q\nwant %q",
						name, p, size[0], size[1], firstDiff(got, want.String()), firstDiff(want.String(), got))
				}
				if p < colorprofile.ANSI256 && strings.Contains(got, "38;5;") {
					t.Fatalf("%s %v: a 256-colour sequence in a terminal that has none", name, p)
				}
			}
		}
	}
}

// firstDiff is a's text from a little before where it first differs from b.
func firstDiff(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return a[max(0, i-40):min(len(a), i+80)]
}

// TestAfterTheDashboardsReview: what a user's review of the dashboard
// found (2026-12-06), each as it read then.
func TestAfterTheDashboardsReview(t *testing.T) {
	// "demo: starved" said twice at 250 columns.
	m := machines(t)["single-core-2core"]
	m.opt.Title = "demo: starved"
	m.shown.Scenario = &Scenario{Name: "starved"}
	m.w, m.h = 250, 70
	if head := strings.Split(ansi.Strip(m.Render()), "\n")[0]; strings.Count(head, "demo: starved") != 1 {
		t.Errorf("the demo's scenario: %q", head)
	}
	// The hook's loader: its own knobs, not the embedded loader's names
	// with no values.
	two := 2
	l := &sample.Loader{Source: "http://127.0.0.1:6061", Kind: "python", Workers: &two, Knobs: map[string]string{"persistent": "false", "pin": "true"}}
	if got := knobsRead(l); got != "workers 2 persistent false pin true" {
		t.Errorf("the hook's knobs: %q", got)
	}
	// A loop sampled from /proc waits for no profile.
	pv := &view{frame: &sample.Frame{Loader: &sample.Loader{Source: "pid 100", Sampled: &sample.SampledLoop{}}}, st: &Styles{}}
	if out := strings.Join(profilePanel{}.draw(pv, 200, 2), "\n"); strings.Contains(out, "taking the first CPU profile") || !strings.Contains(out, "sampled from /proc") {
		t.Errorf("a sampled loop's profile panel: %q", out)
	}
	// A probe that failed in the newest frame: its trend says so, not the
	// last value as now.
	busy := func(v float64) *sample.Frame { return &sample.Frame{CPU: &sample.CPU{BusyPct: v}} }
	pv = &view{hist: []*sample.Frame{busy(40), busy(100), {}}, st: &Styles{}}
	tr, ok := cpuPanel{}.trend(pv)
	if out := strings.Join(pv.drawTrend(tr, 60, 4), "\n"); !ok || !strings.Contains(out, "CPU busy: now not read (last 100%)") {
		t.Errorf("a failed probe's trend: %q", out)
	}
}

// TestASampledLoopsWorkersInWords: "1 workers" read in a sampled loop's
// panel (a user's review), and an unread count was "? workers".
func TestASampledLoopsWorkersInWords(t *testing.T) {
	one := 1
	pv := &view{st: &Styles{}}
	for _, tc := range []struct {
		workers *int
		want    string
	}{{&one, "· 1 worker ·"}, {nil, "· workers not read ·"}} {
		l := &sample.Loader{Source: "pid 100", Workers: tc.workers, Sampled: &sample.SampledLoop{Hz: 100}}
		if out := strings.Join(sampledLines(pv, l, l.Sampled, 200), "\n"); !strings.Contains(out, tc.want) {
			t.Errorf("want %q in %q", tc.want, out)
		}
	}
}

// TestTheLoaderLineSaysTheReplayNotZero: while the ceiling replays kept
// batches the loader's rates are the measurement's, unknown, and the
// stats say the replay, not "0 samples/s" (a review).
func TestTheLoaderLineSaysTheReplayNotZero(t *testing.T) {
	yes := true
	l := &sample.Loader{Source: "http://127.0.0.1:6061", Connected: &yes, Ceiling: &sample.Ceiling{State: sample.CeilingReplaying}}
	pv := &view{frame: &sample.Frame{Loader: l}, st: &Styles{}}
	if s := pv.loaderStats(l); strings.Contains(s, "samples/s") || !strings.Contains(s, "the ceiling replays kept batches") {
		t.Errorf("replaying: %q", s)
	}
}

package session

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/internal/testnet"
	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/probes/endpoint"
	"github.com/gpuwatch/gpuwatch/sample"
	"github.com/gpuwatch/gpuwatch/session/predlog"
)

// busyCPU is a probe: a two-core machine at pct busy.
type busyCPU struct{ pct float64 }

func (busyCPU) Name() string { return "cpu" }
func (p busyCPU) Collect(_ context.Context, f *sample.Frame) error {
	f.CPU = &sample.CPU{BusyPct: p.pct, Cores: []sample.Core{{ID: 0, BusyPct: p.pct}, {ID: 1, BusyPct: p.pct}}}
	return nil
}

// observed records what an observer is given, in order.
type observed struct {
	mu     sync.Mutex
	events []string
	stopAt int
	stop   func()
}

func (o *observed) Frame(f *sample.Frame, v diagnose.Verdict) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, "frame "+v.Kind.String())
	if len(o.events) == o.stopAt {
		o.stop()
	}
	return nil
}

func (o *observed) Note(n sample.Note) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if s, ok := n.(sample.Scenario); ok {
		o.events = append(o.events, "note "+s.Name)
	}
	return nil
}

// TestLoopGivesEveryObserverEveryFrameAndNote: each frame goes through
// the diagnoser to every observer in order, notes go to all of them, and
// the loop ends cleanly (nil) when its context does.
func TestLoopGivesEveryObserverEveryFrameAndNote(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sampler := probes.NewSampler([]probes.Probe{busyCPU{3}}, probes.SamplerOptions{Interval: 50 * time.Millisecond})
	defer sampler.Close()
	first := &observed{}
	second := &observed{stopAt: 6, stop: cancel}
	notes := make(chan sample.Note, 1)
	notes <- sample.Scenario{Name: "starved"}
	close(notes)
	if err := loop(ctx, sampler, diagnose.NewDiagnoser(diagnose.DefaultThresholds()), biasLines{}, notes, []Observer{first, second}); err != nil {
		t.Fatal(err)
	}
	first.mu.Lock()
	defer first.mu.Unlock()
	if len(first.events) < 6 || !strings.HasPrefix(first.events[len(first.events)-1], "frame ") {
		t.Fatalf("first observer saw %q", first.events)
	}
	if !strings.Contains(strings.Join(first.events, ","), "note starved") {
		t.Fatalf("the note did not reach the first observer: %q", first.events)
	}
	// The second observer stopped the loop after its 6th event: the first
	// saw every frame the second did, and in the same order.
	if got, want := strings.Join(first.events[:6], ","), strings.Join(second.events[:6], ","); got != want {
		t.Fatalf("observers saw %q and %q", got, want)
	}
}

// failing is an observer whose Frame fails.
type failing struct{}

func (failing) Frame(*sample.Frame, diagnose.Verdict) error { return errors.New("disk full") }
func (failing) Note(sample.Note) error                      { return nil }

// TestLoopStopsOnAnObserversError: an observer's error ends the loop with it.
func TestLoopStopsOnAnObserversError(t *testing.T) {
	sampler := probes.NewSampler([]probes.Probe{busyCPU{3}}, probes.SamplerOptions{Interval: 50 * time.Millisecond})
	defer sampler.Close()
	err := loop(context.Background(), sampler, diagnose.NewDiagnoser(diagnose.DefaultThresholds()), biasLines{}, nil, []Observer{failing{}})
	if err == nil || err.Error() != "disk full" {
		t.Fatalf("err %v", err)
	}
}

// stamping is a probe that writes a plain field on every Collect: read
// after loop returns, a Collect still running then is a data race that
// -race reports (CI runs this test -count=50).
type stamping struct{ calls int }

func (*stamping) Name() string { return "cpu" }
func (p *stamping) Collect(_ context.Context, f *sample.Frame) error {
	p.calls++
	f.CPU = &sample.CPU{BusyPct: 3, Cores: []sample.Core{{ID: 0, BusyPct: 3}}}
	return nil
}

// TestLoopWaitsForTheSamplerOnAnObserversError: when an observer fails,
// loop stops the sampler's Run and waits for it before returning, so no
// probe runs after it and the caller's Close does not race a tick (the
// race that turned CI red at bde0bec).
func TestLoopWaitsForTheSamplerOnAnObserversError(t *testing.T) {
	p := &stamping{}
	sampler := probes.NewSampler([]probes.Probe{p}, probes.SamplerOptions{Interval: time.Millisecond, Timeout: time.Second})
	err := loop(context.Background(), sampler, diagnose.NewDiagnoser(diagnose.DefaultThresholds()), biasLines{}, nil, []Observer{failing{}})
	if err == nil || err.Error() != "disk full" {
		t.Fatalf("err %v", err)
	}
	calls := p.calls // no Collect may run from here on
	sampler.Close()
	if p.calls != calls {
		t.Fatalf("%d probe calls after loop returned", p.calls-calls)
	}
}

func settleFrameAt(sec int) *sample.Frame {
	return &sample.Frame{Time: time.Date(2026, 11, 24, 12, 0, sec, 0, time.UTC)}
}

// TestSettleNeedsFiveFramesAndFiveSeconds: --once settles on a verdict
// that held 5 frames over 5 s (warming up never counts), stops the
// session then, and exits 3 for a bottleneck, 0 for healthy.
func TestSettleNeedsFiveFramesAndFiveSeconds(t *testing.T) {
	for _, c := range []struct {
		kind diagnose.Kind
		want error
	}{{diagnose.Healthy, nil}, {diagnose.GPUStarved, ErrBottleneck}} {
		stopped := 0
		s := &Settle{stop: func() { stopped++ }, need: 3}
		for i := range 3 {
			s.Frame(settleFrameAt(i), diagnose.Verdict{Kind: diagnose.WarmingUp})
		}
		for i := 3; i < 8; i++ {
			if stopped > 0 {
				t.Fatalf("%v: stopped after %d frames", c.kind, i)
			}
			s.Frame(settleFrameAt(i), diagnose.Verdict{Kind: c.kind})
		}
		if stopped != 0 {
			t.Fatalf("%v: 5 frames over 4 s settled", c.kind)
		}
		s.Frame(settleFrameAt(8), diagnose.Verdict{Kind: c.kind})
		if stopped != 1 || !s.settled {
			t.Fatalf("%v: 6 frames over 5 s did not settle", c.kind)
		}
		var out bytes.Buffer
		if err := s.summary(&out, false); !errors.Is(err, c.want) && err != c.want {
			t.Fatalf("%v: %v, want %v", c.kind, err, c.want)
		}
		if !strings.HasPrefix(out.String(), c.kind.String()+" (") || !strings.Contains(out.String(), "settled after 9 frames, 8 s") {
			t.Fatalf("%v: %q", c.kind, out.String())
		}
	}
}

// TestSettleSaysWhyNothingSettled: a verdict that keeps changing, and a
// job that exits first, are said as such, and the session exits 4.
func TestSettleSaysWhyNothingSettled(t *testing.T) {
	s := &Settle{stop: func() {}, need: 3}
	kinds := []diagnose.Kind{diagnose.Healthy, diagnose.GPUStarved, diagnose.Healthy, diagnose.GPUStarved}
	for i, k := range kinds {
		s.Frame(settleFrameAt(i), diagnose.Verdict{Kind: k})
	}
	var out bytes.Buffer
	err := s.summary(&out, false)
	if !errors.Is(err, ErrUnsettled) || !strings.Contains(err.Error(), "the verdict changed 3 times") {
		t.Fatalf("changing verdicts: %v", err)
	}
	// A verdict held for its frames and a moment short of its time says
	// the time it held to the hundredth (a user's review: "it held 6
	// frames, not 5 frames and 5 s … after 6 frames, 5 s").
	s = &Settle{stop: func() {}, need: 3}
	for i := range SettleFrames + 1 {
		f := settleFrameAt(0)
		f.Time = f.Time.Add(time.Duration(i) * (SettleTime - 40*time.Millisecond) / time.Duration(SettleFrames))
		s.Frame(f, diagnose.Verdict{Kind: diagnose.Healthy})
	}
	if err := s.summary(&out, false); !errors.Is(err, ErrUnsettled) || !strings.Contains(err.Error(), fmt.Sprintf("frames over %.2f s, not", (SettleTime-40*time.Millisecond).Seconds())) {
		t.Fatalf("held a moment short: %v", err)
	}
	// Held by the rule while the ceiling replays: the summary says what
	// it waited for, not the rule it met (a review).
	s = &Settle{stop: func() {}, need: 3}
	for i := range 20 {
		f := settleFrameAt(i)
		f.Loader = &sample.Loader{Ceiling: &sample.Ceiling{State: sample.CeilingReplaying}}
		s.Frame(f, diagnose.Verdict{Kind: diagnose.Healthy})
	}
	if err := s.summary(&out, false); !errors.Is(err, ErrUnsettled) || !strings.Contains(err.Error(), "the verdict held 20 frames, but the ceiling was still being measured") {
		t.Fatalf("held while measuring: %v", err)
	}
	s = &Settle{stop: func() {}, need: 3}
	f := settleFrameAt(0)
	at := f.Time
	f.Target = &sample.Target{PID: 42, ExitedAt: &at}
	s.Frame(f, diagnose.Verdict{Kind: diagnose.WarmingUp})
	if err := s.summary(&out, true); !errors.Is(err, ErrUnsettled) || !strings.Contains(err.Error(), "pid 42 exited at 12:00:00, after 1 frame") {
		t.Fatalf("a job that exited: %v", err)
	}
	if !strings.Contains(out.String(), `"settled":false`) || !strings.Contains(out.String(), `"unsettled":"pid 42 exited`) {
		t.Fatalf("JSON summary %s", out.String())
	}
	// gpuwatch run's command ended first: how, in a sentence.
	for ended, want := range map[string]string{"killed by SIGINT": "the job was killed by SIGINT after 1 frame", "exited with status 1": "the job exited with status 1 after 1 frame"} {
		s = &Settle{stop: func() {}, need: 3, jobEnded: ended}
		s.Frame(settleFrameAt(0), diagnose.Verdict{Kind: diagnose.WarmingUp})
		if err := s.summary(&out, false); !errors.Is(err, ErrUnsettled) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", ended, err, want)
		}
	}
}

// TestSettleSaysNoDataLoaderFirst: gpuwatch run's job, hooked, ended in
// its start-up with no DataLoader batch read (a PyTorch script without a
// DataLoader): the reason said first is that, not "too soon for a verdict
// to hold", which no longer run would have changed.
func TestSettleSaysNoDataLoaderFirst(t *testing.T) {
	s := &Settle{stop: func() {}, need: 3, jobEnded: "exited with status 0"}
	for i := range 12 {
		f := settleFrameAt(i)
		f.Target = &sample.Target{PID: 42, Starting: true}
		s.Frame(f, diagnose.Verdict{Kind: diagnose.WarmingUp})
	}
	var out bytes.Buffer
	err := s.summary(&out, false)
	want := "NOT SETTLED: gpuwatch read no DataLoader batch before the job exited with status 0, after 12 frames: it iterated none, or ended before its hook was read (gpuwatch run's hook times the loop from a DataLoader's first batch"
	if !errors.Is(err, ErrUnsettled) || !strings.Contains(out.String(), want) || strings.Contains(out.String(), "too soon") {
		t.Fatalf("%v: %q, want %q", err, out.String(), want)
	}
	// Its hook served (a DataLoader iterated) and was never read: not
	// "it iterated none" (a user's review).
	s = &Settle{stop: func() {}, need: 3, jobEnded: "exited with status 1"}
	for i := range 3 {
		f := settleFrameAt(i)
		f.Target = &sample.Target{PID: 42, Starting: true, HookServes: i == 2}
		s.Frame(f, diagnose.Verdict{Kind: diagnose.WarmingUp})
	}
	out.Reset()
	err = s.summary(&out, false)
	want = "NOT SETTLED: the job exited with status 1 after 3 frames: its DataLoader iterated (its hook served), and the job ended before gpuwatch read it"
	if !errors.Is(err, ErrUnsettled) || !strings.Contains(out.String(), want) || strings.Contains(out.String(), "iterated none") {
		t.Fatalf("served, not read: %v: %q, want %q", err, out.String(), want)
	}
	// Its hook read once, 60 batches counted, before the job ended: not
	// "read no DataLoader batch" (a review).
	s = &Settle{stop: func() {}, need: 3, jobEnded: "exited with status 1"}
	for i := range 3 {
		f := settleFrameAt(i)
		f.Target = &sample.Target{PID: 42, Starting: true}
		if i == 2 {
			f.Loader = &sample.Loader{Source: "http://127.0.0.1:1", Kind: "python", Batches: 60, RatesPending: true}
		}
		s.Frame(f, diagnose.Verdict{Kind: diagnose.WarmingUp})
	}
	out.Reset()
	err = s.summary(&out, false)
	want = "NOT SETTLED: the job exited with status 1 after 3 frames, 60 batches read from its loader: too soon for a verdict to hold"
	if !errors.Is(err, ErrUnsettled) || !strings.Contains(out.String(), want) {
		t.Fatalf("%v: %q, want %q", err, out.String(), want)
	}
}

// TestSettleSaysARecordingTheJobCutShort: the job ended while the hook
// recorded its steps (--gpu-profile): the summary's line says the
// recording was not made, not "recording" (a review).
func TestSettleSaysARecordingTheJobCutShort(t *testing.T) {
	s := &Settle{stop: func() {}, need: 3, jobEnded: "exited with status 0"}
	exited := settleFrameAt(0).Time.Add(9 * time.Second)
	for i := range 10 {
		f := settleFrameAt(i)
		f.Target = &sample.Target{PID: 42}
		if i < 9 {
			f.Loader = &sample.Loader{GPUProfile: &sample.GPUProfile{State: sample.GPUProfileRecording, Device: "cpu", Steps: 5}}
		} else {
			f.Target.ExitedAt = &exited
		}
		s.Frame(f, diagnose.Verdict{Kind: diagnose.Healthy})
	}
	j := s.job()
	if j == nil || j.GPUProfileLine != "CPU time per step (no GPU): not recorded: the job ended while recording (5 steps asked)" {
		t.Fatalf("job %+v", j)
	}
	// Under run the job's end comes as its exit (no frame of the target
	// gone), and the rank, gone, leaves a loader of no reading in the
	// last frame: the reading before it is the job's.
	s = &Settle{stop: func() {}, need: 3}
	for i := range 4 {
		f := settleFrameAt(i)
		f.Loader = &sample.Loader{Batches: 6, GPUProfile: &sample.GPUProfile{State: sample.GPUProfileWaiting, Device: "cpu", Steps: 5}}
		if i == 3 {
			f.Loader = &sample.Loader{}
		}
		s.Frame(f, diagnose.Verdict{Kind: diagnose.WarmingUp})
	}
	s.jobEnded = "exited with status 0"
	if j := s.job(); j == nil || j.GPUProfileLine != "CPU time per step (no GPU): not recorded: the job ended before the recording started (under gpuwatch run, at the loop's 10th batch; 5 steps asked)" {
		t.Fatalf("under run: job %+v", j)
	}
}

// TestKeptFramesKeepTheNewestHour: the e key's report has at most
// keepFrames frames, the newest, in order, and the scenario notes.
func TestKeptFramesKeepTheNewestHour(t *testing.T) {
	k := &keptFrames{}
	for i := range keepFrames + 10 {
		f := &sample.Frame{Time: time.Unix(int64(i), 0), IntervalSec: 1, CPU: &sample.CPU{Cores: []sample.Core{{ID: i % 7, BusyPct: float64(i % 100)}}}}
		k.Frame(f, diagnose.Verdict{})
	}
	k.Note(sample.Scenario{Name: "io-bound"})
	k.Note(sample.Event{Name: "disconnected"})
	frames, err := k.kept()
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) != keepFrames || frames[0].Frame.Time.Unix() != 10 || frames[keepFrames-1].Frame.Time.Unix() != keepFrames+9 {
		t.Fatalf("%d frames, %v … %v", len(frames), frames[0].Frame.Time.Unix(), frames[len(frames)-1].Frame.Time.Unix())
	}
	for i, r := range frames { // each whole, as it was given
		if c := r.Frame.CPU.Cores; len(c) != 1 || c[0].ID != (i+10)%7 || c[0].BusyPct != float64((i+10)%100) {
			t.Fatalf("frame %d came back as %+v", i, r.Frame.CPU)
		}
	}
	if len(k.notes) != 1 || k.notes[0].Name != "io-bound" {
		t.Fatalf("notes %+v", k.notes)
	}
	if _, err := (&keptFrames{}).export(); err == nil || err.Error() != "no frame yet" {
		t.Fatalf("an empty export: %v", err)
	}
}

// TestKeptFramesComeBackWholeFromLargeBlocks: frames the size of a busy
// box's (hundreds of processes: a block's JSON well past deflate's 32 KB
// window, which the stateless deflate splits and chains) come back from
// their compressed blocks as they went in.
func TestKeptFramesComeBackWholeFromLargeBlocks(t *testing.T) {
	k := &keptFrames{}
	var in []*sample.Frame
	for i := range 3*keepBlock + 7 {
		f := &sample.Frame{Time: time.Unix(int64(1e9+i), 0), IntervalSec: 1, Procs: &sample.Procs{}}
		for p := range 300 {
			f.Procs.List = append(f.Procs.List, sample.Proc{PID: 1000 + p, PPID: 1, Name: fmt.Sprintf("worker-%d-%d", p, i%7), State: "S",
				CPUPct: float64((p*31+i*17)%1000) / 10, Threads: 1 + p%9, RSSBytes: uint64(p) << 20})
		}
		in = append(in, f)
		k.Frame(f, diagnose.Verdict{})
	}
	if b := k.blocks; len(b) != 3 {
		t.Fatalf("%d blocks, want 3", len(b))
	}
	var raw bytes.Buffer
	writeLines(&raw, in[:keepBlock])
	if raw.Len() < 4*32<<10 {
		t.Fatalf("a block's JSON is %d bytes: not past deflate's window", raw.Len())
	}
	out, err := k.kept()
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("%d frames back, %d in", len(out), len(in))
	}
	for i := range in {
		want, _ := json.Marshal(in[i])
		got, _ := json.Marshal(&out[i].Frame)
		if !bytes.Equal(got, want) {
			t.Fatalf("frame %d came back changed", i)
		}
	}
}

// TestKeptFramesExportAReport: the e key writes an HTML report of the
// kept frames (compressed blocks and the newest plain) in the current
// folder.
func TestKeptFramesExportAReport(t *testing.T) {
	t.Chdir(t.TempDir())
	k := &keptFrames{version: "test", thresholds: diagnose.DefaultThresholds()}
	for i := range keepBlock + 5 {
		k.Frame(&sample.Frame{Time: time.Unix(int64(1e9+i), 0), IntervalSec: 1, CPU: &sample.CPU{BusyPct: 42}}, diagnose.Verdict{})
	}
	said, err := k.export()
	if err != nil {
		t.Fatal(err)
	}
	path := strings.TrimPrefix(said, "report written: ")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%q: %v", said, err)
	}
	if want := fmt.Sprintf("%d frames", keepBlock+5); !strings.Contains(string(b), "<html") || !strings.Contains(string(b), want) {
		t.Fatalf("%s does not report the %s kept", path, want)
	}
}

// TestAttachRefusesWhatDoesNotAnswer: one URL that does not answer is an
// error at once, with discovery on too; of several, one answering is
// enough; discovery alone waits for loaders.
func TestAttachRefusesWhatDoesNotAnswer(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("gpuwatch_loader_batches_total 1\n"))
	}))
	defer ok.Close()
	dead := "http://" + testnet.RefusedAddr(t)
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		to      AttachTo
		wantErr string
	}{
		{"one dead URL", AttachTo{URLs: []string{dead}}, "connection refused"},
		{"one dead URL with discovery", AttachTo{URLs: []string{dead}, Discover: true}, "connection refused"},
		{"every URL dead", AttachTo{URLs: []string{dead, dead}}, "none of the 2 loaders answers"},
		{"one of two answers", AttachTo{URLs: []string{dead, ok.URL}}, ""},
		{"discovery alone", AttachTo{Discover: true}, ""},
	} {
		a, err := Attach(ctx, "/proc", c.to)
		if a != nil {
			a.Ranks.Close()
		}
		if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.wantErr)
		}
	}
	if a, err := Attach(ctx, "/proc", AttachTo{}); a != nil || err != nil {
		t.Errorf("nothing named: %v %v", a, err)
	}
}

// TestSettleWaitsForTheJobToStart: while gpuwatch run's job is starting
// (the hook loaded, no DataLoader iterating: importing torch keeps its
// main thread at 100 %), no verdict counts towards --once; once the loop
// runs, 5 frames over 5 s settle it.
func TestSettleWaitsForTheJobToStart(t *testing.T) {
	stopped := 0
	s := &Settle{stop: func() { stopped++ }, need: 3}
	i := 0
	for ; i < 12; i++ {
		f := settleFrameAt(i)
		f.Target = &sample.Target{PID: 7, Why: "gpuwatch run", Starting: true}
		s.Frame(f, diagnose.Verdict{Kind: diagnose.SingleCoreMaxed})
	}
	if stopped != 0 {
		t.Fatal("settled on a job that was starting")
	}
	var out bytes.Buffer
	if err := s.summary(&out, false); !errors.Is(err, ErrUnsettled) || !strings.Contains(err.Error(), "the job was still starting after 12 frames") {
		t.Fatalf("%v", err)
	}
	for end := i + 6; i < end; i++ {
		f := settleFrameAt(i)
		f.Target = &sample.Target{PID: 7, Why: "gpuwatch run"}
		s.Frame(f, diagnose.Verdict{Kind: diagnose.GPUStarved})
	}
	if stopped != 1 {
		t.Fatal("the running loop's verdict did not settle")
	}
}

// TestSettleTimesAStreakFromTheJobsStart: a verdict of the same kind
// before and after the job's start is timed from the first frame after
// it. Tune's runs look every 0.5 s: five frames of "idle" over 2 s, the
// first one while the job was starting, once settled a run (the streak's
// start was never set).
func TestSettleTimesAStreakFromTheJobsStart(t *testing.T) {
	stopped := 0
	s := &Settle{stop: func() { stopped++ }, need: 3}
	at := func(ms int) *sample.Frame {
		return &sample.Frame{Time: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC).Add(time.Duration(ms) * time.Millisecond)}
	}
	f := at(0)
	f.Target = &sample.Target{PID: 7, Why: "gpuwatch run", Starting: true}
	s.Frame(f, diagnose.Verdict{Kind: diagnose.Idle})
	ms := 500
	for ; ms <= 5000; ms += 500 {
		s.Frame(at(ms), diagnose.Verdict{Kind: diagnose.Idle})
		if stopped > 0 {
			break
		}
	}
	if ms != 5500 && stopped > 0 {
		t.Fatalf("settled %d ms after the job started (its first frame at 500 ms); want 5 s of the verdict", ms)
	}
	s.Frame(at(5500), diagnose.Verdict{Kind: diagnose.Idle})
	if stopped != 1 || s.changes != 0 {
		t.Fatalf("stopped %d times, %d changes after 5 s of one verdict; want 1 stop, 0 changes", stopped, s.changes)
	}
}

// TestSettleWaitsForTheCeiling: run --once --ceiling settles only once the
// hook's measurement is done (or refused), so the summary carries it.
func TestSettleWaitsForTheCeiling(t *testing.T) {
	stopped := 0
	s := &Settle{stop: func() { stopped++ }, need: 3}
	i := 0
	for _, state := range []string{sample.CeilingWarming, sample.CeilingKeeping, sample.CeilingReplaying} {
		for end := i + 6; i < end; i++ {
			f := settleFrameAt(i)
			f.Loader = &sample.Loader{Ceiling: &sample.Ceiling{State: state}}
			s.Frame(f, diagnose.Verdict{Kind: diagnose.GPUStarved})
		}
	}
	if stopped != 0 {
		t.Fatal("settled while the ceiling was being measured")
	}
	// The frame in which the replay ended is left out of the diagnosis
	// (its verdict is the one held from before): the next one settles.
	for j := 0; j < 2; j++ {
		f := settleFrameAt(i + j)
		f.Loader = &sample.Loader{Ceiling: &sample.Ceiling{State: sample.CeilingDone}}
		s.Frame(f, diagnose.Verdict{Kind: diagnose.GPUStarved})
		if stopped != j {
			t.Fatalf("%d frames after the replay: stopped %d times, want %d", j+1, stopped, j)
		}
	}
}

// TestOnceSummaryCarriesTheCeiling: the diagnosis and the settle together
// (as run --once --ceiling on an H100 showed, stop 47): the summary's
// verdict says the ceiling measured, though the frame in which the replay
// ended is left out of the diagnosis.
func TestOnceSummaryCarriesTheCeiling(t *testing.T) {
	d := diagnose.NewDiagnoser(diagnose.DefaultThresholds())
	stopped := false
	s := &Settle{stop: func() { stopped = true }, need: 3}
	workers := 2
	for i := 0; i < 60 && !stopped; i++ {
		f := settleFrameAt(i)
		f.CPU = &sample.CPU{BusyPct: 13, Cores: make([]sample.Core, 16)}
		f.Loader = &sample.Loader{Source: "http://127.0.0.1:6061", Kind: "python", Batches: uint64(100 + 3*i), BatchesPerSec: 3.2, SamplesPerSec: 820,
			WaitShare: probes.Ptr(0.94), StepMeanMs: probes.Ptr(20.0), Workers: &workers}
		switch {
		case i < 10:
			f.Loader.Ceiling = &sample.Ceiling{State: sample.CeilingWarming}
		case i < 20:
			f.Loader.BatchesPerSec, f.Loader.SamplesPerSec, f.Loader.WaitShare = 0, 0, nil
			f.Loader.Ceiling = &sample.Ceiling{State: sample.CeilingReplaying}
		case i >= 20:
			f.Loader.Ceiling = &sample.Ceiling{State: sample.CeilingDone, SamplesPerSec: probes.Ptr(13766.0), StepMs: probes.Ptr(19.0), StarvingStepMs: probes.Ptr(24.0)}
		}
		s.Frame(f, d.Observe(f))
	}
	if !stopped {
		t.Fatal("never settled")
	}
	var out bytes.Buffer
	s.summary(&out, true)
	if !strings.Contains(out.String(), "with its input free the loop took 13,766 samples/s") {
		t.Fatalf("summary without the ceiling: %s", out.String())
	}
}

// TestSettleWaitsForTheFirstProfile: with loaders attached and profiles
// on, --once waits past the settle rule for the first CPU profile (the
// workers' profile names decode, augment, tokenize), at most ProfileWait
// more; with it in, or with none expected, the rule alone settles.
func TestSettleWaitsForTheFirstProfile(t *testing.T) {
	run := func(profiles bool, profileAt int) (stoppedAt int) {
		stoppedAt = -1
		s := &Settle{need: 3, profiles: profiles}
		for i := 0; i < 30 && stoppedAt < 0; i++ {
			s.stop = func() { stoppedAt = i }
			f := settleFrameAt(i)
			if profileAt >= 0 && i >= profileAt {
				f.Profile = &sample.Profile{}
			}
			s.Frame(f, diagnose.Verdict{Kind: diagnose.CPUSaturated})
		}
		return stoppedAt
	}
	if at := run(false, -1); at != 5 {
		t.Errorf("no profile expected: settled at %d s, want 5 (5 frames over 5 s)", at)
	}
	if at := run(true, 8); at != 8 {
		t.Errorf("the profile came at 8 s: settled at %d s, want 8", at)
	}
	if at := run(true, 2); at != 5 {
		t.Errorf("the profile came at 2 s: settled at %d s, want 5", at)
	}
	if at, want := run(true, -1), int((SettleTime + ProfileWait).Seconds()); at != want {
		t.Errorf("no profile came: settled at %d s, want %d (the rule, then ProfileWait)", at, want)
	}
}

// TestSettleEndingBeforeTheProfileHeld: a session that ends (--duration)
// while its verdict held by the rule and only the first profile was
// awaited has settled: exit 3 for a bottleneck, not 4.
func TestSettleEndingBeforeTheProfileHeld(t *testing.T) {
	s := &Settle{need: 3, profiles: true, stop: func() { t.Fatal("stopped before the profile wait was over") }}
	for i := 0; i < 8; i++ {
		s.Frame(settleFrameAt(i), diagnose.Verdict{Kind: diagnose.CPUSaturated})
	}
	var out bytes.Buffer
	if err := s.summary(&out, true); !errors.Is(err, ErrBottleneck) || !strings.Contains(out.String(), `"settled":true`) {
		t.Fatalf("%v: %s", err, out.String())
	}
}

// starvedFrame is a frame of a PyTorch loop with one worker whose batches
// wait on storage, the loop waiting 69 %: the model predicts num_workers
// 4 (diagnose's TestModelOfAPyTorchLoader).
func starvedFrame(sec int) *sample.Frame {
	f := settleFrameAt(sec)
	f.IntervalSec = 1
	zero, one := 0.0, 1.0
	f.CPU = &sample.CPU{BusyPct: 8, ProcsRunning: 1}
	for i := range 16 {
		f.CPU.Cores = append(f.CPU.Cores, sample.Core{ID: i, BusyPct: 8})
	}
	f.Mem = &sample.Mem{TotalBytes: 64 << 30, AvailableBytes: 40 << 30, SwapInPagesPerSec: &zero, SwapOutPagesPerSec: &zero, MajorFaultsPerSec: &zero}
	f.Disks = []sample.Disk{{Name: "nvme0n1", BusyPct: 5}}
	f.PSI = &sample.PSI{CPU: &sample.Pressure{SomePct: &one}, IO: &sample.Pressure{SomePct: &zero}, Memory: &sample.Pressure{SomePct: &zero}}
	f.Unavailable = map[sample.Source]string{}
	pid, workers, wait, step := 100, 1, 0.69, 5.3
	f.Loader = &sample.Loader{Source: "http://127.0.0.1:6061", Kind: "python", BatchesPerSec: 58, SamplesPerSec: 8 * 58, Batches: 100,
		WaitShare: &wait, StepMeanMs: &step, Workers: &workers, PID: &pid, LoopTID: &pid, WorkerPIDs: []int{200},
		Knobs: map[string]string{"persistent": "false", "pin": "false"}}
	f.Procs = &sample.Procs{FocusPID: 100, List: []sample.Proc{{PID: 100, Name: "python3", CPUPct: 10}, {PID: 200, PPID: 100, Name: "python3", CPUPct: 4}},
		Threads: []sample.Thread{{TID: 100, PID: 100, Name: "python3", CPUPct: 10}}}
	f.Accel = &sample.VirtualAccel{BusyPct: 31, Basis: "test"}
	return f
}

// lastVerdict keeps the newest verdict it is told.
type lastVerdict struct{ v diagnose.Verdict }

func (o *lastVerdict) Frame(_ *sample.Frame, v diagnose.Verdict) error { o.v = v; return nil }
func (*lastVerdict) Note(sample.Note) error                            { return nil }

// TestVerdictSaysHowPredictionsRanHere: with tune's record on this
// machine (the user's state file) holding predictions 25 % above what was
// measured, a verdict that predicts carries the sentence as its last
// advice line; accurate predictions, or fewer than 3, add nothing, and
// neither does a verdict without a prediction.
func TestVerdictSaysHowPredictionsRanHere(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip(err)
	}
	const said = "predictions on this box have run 25 % above what was measured (median of 3 tune steps)"
	tests := []struct {
		name      string
		predicted []float64 // samples/s, each against 1000 measured
		frame     func(sec int) *sample.Frame
		want      string // the last advice line has it; "" none has "predictions on this box"
		loader    string // whose pipeline the records were of: "" a job's
	}{
		{"high predictions are said", []float64{1250, 1300, 1200}, starvedFrame, said, ""},
		{"accurate ones are not", []float64{1050, 980, 1020}, starvedFrame, "", ""},
		{"two are too few", []float64{1250, 1300}, starvedFrame, "", ""},
		{"a verdict without a prediction says nothing", []float64{1250, 1300, 1200}, settleFrameAt, "", ""},
		{"a job is not told how gpuwatch's own loader's ran", []float64{1250, 1300, 1200}, starvedFrame, "", predlog.LoaderEmbedded},
		{"gpuwatch's own loader is told how its own ran", []float64{1250, 1300, 1200}, func(sec int) *sample.Frame {
			f := starvedFrame(sec)
			f.Loader.Kind = "embedded"
			return f
		}, said, predlog.LoaderEmbedded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("XDG_STATE_HOME", t.TempDir())
			path, err := predlog.Path()
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range tt.predicted {
				if err := predlog.Append(path, predlog.Record{Time: time.Now(), Host: host, Change: "num_workers 1 → 4", Predicted: p, Measured: 1000, High: p, Model: predlog.ModelRange, Loader: cmp.Or(tt.loader, predlog.LoaderJob)}); err != nil {
					t.Fatal(err)
				}
			}
			frames := make(chan *sample.Frame)
			errc := make(chan error, 1)
			go func() {
				for sec := range 6 {
					frames <- tt.frame(sec)
				}
				errc <- context.Canceled
			}()
			last := &lastVerdict{}
			if _, err := observe(diagnose.NewDiagnoser(diagnose.DefaultThresholds()), biasLines{job: predlog.Line(predlog.LoaderJob), embedded: predlog.Line(predlog.LoaderEmbedded)}, nil, []Observer{last}, frames, errc); err != nil {
				t.Fatal(err)
			}
			if tt.frame(0).Loader != nil && last.v.Predicted == nil {
				t.Fatalf("%s: no prediction to show the bias on", last.v.Kind)
			}
			adv := last.v.Advice
			got := strings.Join(adv, "\n")
			if tt.want != "" && (len(adv) == 0 || adv[len(adv)-1] != tt.want) {
				t.Fatalf("advice %q, want it to end with %q", adv, tt.want)
			}
			if tt.want == "" && strings.Contains(got, "predictions on this box") {
				t.Fatalf("advice %q says a bias", adv)
			}
		})
	}
}

// TestSettleWaitsForTheGPUProfileItAskedFor (issue 51 item 4): where
// --once asked the hook for the step's GPU time by itself (the GPU the
// limit), nothing settles while the recording is asked, waiting or
// recording; the first frame that carries its end settles the held
// verdict. Not asked, the rule alone settles.
func TestSettleWaitsForTheGPUProfileItAskedFor(t *testing.T) {
	stopped := 0
	s := &Settle{stop: func() { stopped++ }, need: 3, gpuProfile: &GPUProfileWhenBound{asked: true}}
	i := 0
	for _, state := range []string{"", sample.GPUProfileWaiting, sample.GPUProfileRecording} {
		for end := i + 6; i < end; i++ {
			f := settleFrameAt(i)
			f.Loader = &sample.Loader{}
			if state != "" {
				f.Loader.GPUProfile = &sample.GPUProfile{State: state}
			}
			s.Frame(f, diagnose.Verdict{Kind: diagnose.Healthy})
		}
	}
	if stopped != 0 {
		t.Fatal("settled while the GPU's time was being recorded")
	}
	f := settleFrameAt(i)
	f.Loader = &sample.Loader{GPUProfile: &sample.GPUProfile{State: sample.GPUProfileDone}}
	s.Frame(f, diagnose.Verdict{Kind: diagnose.Healthy})
	if stopped != 1 {
		t.Fatalf("stopped %d times once the recording was done, want 1", stopped)
	}
	plain := &Settle{stop: func() { stopped++ }, need: 3, gpuProfile: &GPUProfileWhenBound{}}
	for j := 0; j < 7; j++ {
		f := settleFrameAt(j)
		f.Loader = &sample.Loader{}
		plain.Frame(f, diagnose.Verdict{Kind: diagnose.Healthy})
	}
	if stopped != 2 {
		t.Errorf("not asked: stopped %d times in all, want 2", stopped)
	}
}

// TestSettleHoldsForAGPUProfileOnlySoLong (review of issue 51): a
// recording that does not end — steps of many seconds, the hook gone —
// holds the settle at most GPUProfileWait past the rule, then the verdict
// settles as it would have without it; a frame without the loader is
// nothing to wait for; run --gpu-profile's own recording (armed, never
// asked by the session) holds it too.
func TestSettleHoldsForAGPUProfileOnlySoLong(t *testing.T) {
	for _, c := range []struct {
		name string
		gp   *GPUProfileWhenBound
	}{{"asked by --once", &GPUProfileWhenBound{asked: true}}, {"armed by run --gpu-profile", nil}} {
		stopped := 0
		s := &Settle{stop: func() { stopped++ }, need: 3, gpuProfile: c.gp}
		i := 0
		for ; i < 60 && stopped == 0; i++ {
			f := settleFrameAt(i)
			f.Loader = &sample.Loader{GPUProfile: &sample.GPUProfile{State: sample.GPUProfileWaiting}}
			s.Frame(f, diagnose.Verdict{Kind: diagnose.Healthy})
		}
		// The streak starts at frame 0 (second 0): the rule holds from 5 s,
		// the wait ends at 5 + 30 s.
		if stopped != 1 || i < 35 || i > 37 {
			t.Errorf("%s: stopped %d times after %d frames, want once at about 35", c.name, stopped, i)
		}
	}
	g := &GPUProfileWhenBound{asked: true}
	if g.Pending(&sample.Frame{}) {
		t.Error("a frame without the loader held the settle")
	}
}

// TestOnceSummarySaysWhatTheHookRead (issue 51: the settings line and MFU
// in every output): --once's summary, JSON and text, carries the job's
// settings as the hook last read them, their line, the step's MFU with
// its method, and the recording of the step's time that --gpu-profile
// asked for; without the hook it carries none of them. Hook or not, the
// JSON carries gpuwatch's own cost as the last frame read it (issue 52).
func TestOnceSummarySaysWhatTheHookRead(t *testing.T) {
	on, batch := true, 128
	st := &sample.JobSettings{Autocast: &on, AutocastDtype: "bfloat16", BatchSize: &batch}
	mfu := &sample.MFU{Ratio: 0.31, Dtype: "bf16", PeakTFLOPS: 989.5, GPU: "H200", Method: "FLOPs counted by the hook × steps/s ÷ dense peak"}
	prof := &sample.GPUProfile{State: sample.GPUProfileDone, Device: "cpu", Steps: 5, BusySecondsPerStep: probes.Ptr(0.1), IdleSecondsPerStep: probes.Ptr(0.0),
		Parts: []sample.GPUTimePart{{Category: "matmul", Precision: "fp32", SecondsPerStep: 0.06}, {Category: "elementwise", SecondsPerStep: 0.04}}}
	for _, hooked := range []bool{true, false} {
		s := &Settle{stop: func() {}, need: 3}
		for i := range 8 {
			f := settleFrameAt(i)
			f.Loader = &sample.Loader{Source: "http://127.0.0.1:6061", Kind: "python", BatchesPerSec: 3, SamplesPerSec: 384}
			if hooked {
				f.Loader.Settings, f.Loader.MFU, f.Loader.HookCPUPerSampleUs, f.Loader.GPUProfile = st, mfu, probes.Ptr(2.5), prof
			}
			f.Self = &sample.SelfCost{CPUSecTotal: float64(i), RSSBytes: probes.Ptr(uint64(25 << 20))}
			s.Frame(f, diagnose.Verdict{Kind: diagnose.Healthy})
		}
		var js, text bytes.Buffer
		s.summary(&js, true)
		s.summary(&text, false)
		var sum onceSummary
		if err := json.Unmarshal(js.Bytes(), &sum); err != nil {
			t.Fatal(err)
		}
		// gpuwatch's own cost, hook or not: the last frame's.
		if sum.Self == nil || sum.Self.CPUSecTotal != 7 || sum.Self.RSSBytes == nil || *sum.Self.RSSBytes != 25<<20 {
			t.Errorf("self: %s", js.String())
		}
		if !hooked {
			if sum.Job != nil || strings.Contains(text.String(), "job:") || strings.Contains(text.String(), "MFU") || strings.Contains(text.String(), "per step") {
				t.Errorf("no hook: %+v; %s", sum.Job, text.String())
			}
			continue
		}
		j := sum.Job
		if j == nil || j.SettingsLine != "bf16 autocast · batch 128" || j.Settings == nil || j.MFU == nil || j.MFU.Ratio != 0.31 || j.HookCPUPerSampleUs == nil || *j.HookCPUPerSampleUs != 2.5 || j.HookCPUPerBatchUs != nil {
			t.Fatalf("JSON: %s", js.String())
		}
		const line = "CPU time per step (no GPU) (5 steps, profiled): matmul fp32 60 %, elementwise 40 %"
		if g := j.GPUProfile; g == nil || g.State != sample.GPUProfileDone || len(g.Parts) != 2 || j.GPUProfileLine != line {
			t.Fatalf("JSON's profile: %s", js.String())
		}
		for _, want := range []string{"  job: bf16 autocast · batch 128\n", "  MFU 31 % of H200's dense bf16 peak (FLOPs counted by the hook", "  " + line + "\n"} {
			if !strings.Contains(text.String(), want) {
				t.Errorf("text lacks %q:\n%s", want, text.String())
			}
		}
	}
}

// TestSettleStopsAtTheExitAndKeepsTheJobsVerdict: the frames after the
// watched process exited read idle (the diagnosis has nothing of it to
// judge) and do not count. A recording that ends with the exit (record
// --exit-with-job, judged by replay --once) is judged on the verdict
// that held before it — it said "idle, NOT SETTLED: too soon" after 9 s
// of a steady single_core_maxed —, and a live --once stops at the exit
// instead of settling the dead process as idle and passing.
func TestSettleStopsAtTheExitAndKeepsTheJobsVerdict(t *testing.T) {
	exitedAt := settleFrameAt(9).Time
	exited := func(sec int) *sample.Frame {
		f := settleFrameAt(sec)
		f.Target = &sample.Target{PID: 42, ExitedAt: &exitedAt}
		return f
	}
	s := NewSettle(func() {}, 3)
	s.replayed = true
	for i := range 9 {
		s.Frame(settleFrameAt(i), diagnose.Verdict{Kind: diagnose.SingleCoreMaxed})
	}
	for i := 9; i < 12; i++ {
		s.Frame(exited(i), diagnose.Verdict{Kind: diagnose.Idle})
	}
	var out bytes.Buffer
	if err := s.summaryAtEnd(&out, false); !errors.Is(err, ErrBottleneck) || !strings.HasPrefix(out.String(), "single_core_maxed") {
		t.Errorf("a recording ending with the exit: %v, %q", err, out.String())
	}
	// The job's reading (its settings, a GPU profile asked for) came with
	// the frames before it ended: the summary keeps it — the frame after
	// (its loader gone with it) has none, and it was dropped.
	s = NewSettle(func() {}, 3)
	for i := range 3 {
		f := settleFrameAt(i)
		f.Loader = &sample.Loader{Source: "http://127.0.0.1:6061", Kind: "python", BatchesPerSec: 3, SamplesPerSec: 384,
			Settings: &sample.JobSettings{Autocast: probes.Ptr(true), AutocastDtype: "bfloat16"}}
		s.Frame(f, diagnose.Verdict{Kind: diagnose.SingleCoreMaxed})
	}
	s.Frame(settleFrameAt(3), diagnose.Verdict{Kind: diagnose.SingleCoreMaxed})
	out.Reset()
	_ = s.summary(&out, true)
	var sum onceSummary
	if err := json.Unmarshal(out.Bytes(), &sum); err != nil || sum.Job == nil || sum.Job.Settings == nil || sum.Job.SettingsLine == "" {
		t.Errorf("the job's reading before its exit is lost: %v %s", err, out.String())
	}
	// Live: not settled before the exit; the exit stops the session, and
	// the summary says why nothing settled.
	stopped := false
	s = NewSettle(func() { stopped = true }, 3)
	for i := range 3 {
		s.Frame(settleFrameAt(i), diagnose.Verdict{Kind: diagnose.SingleCoreMaxed})
	}
	for i := 3; i < 12; i++ {
		s.Frame(exited(i), diagnose.Verdict{Kind: diagnose.Idle})
	}
	out.Reset()
	if err := s.summary(&out, false); !stopped || !errors.Is(err, ErrUnsettled) || !strings.Contains(err.Error(), "pid 42 exited at 12:00:09, after 12 frames: too soon") {
		t.Errorf("live, exited before a verdict held: stopped %v, %v", stopped, err)
	}
}

// TestPlainAttachFlagKeepsEveryDiscoveredLoader: the attach command's
// URLs name a job, and discovery adds only its other ranks; plain
// gpuwatch's --attach URL (a remote loader, announced nowhere here) adds
// to every loader discovered, as its help says: it dropped them all.
func TestPlainAttachFlagKeepsEveryDiscoveredLoader(t *testing.T) {
	two := 2
	d := endpoint.Discovery{Found: []endpoint.Announcement{{PID: 10, URL: "http://127.0.0.1:6061"}, {PID: 11, URL: "http://127.0.0.1:6062", WorldSize: &two}}}
	remote := []string{"http://10.1.2.3:6060"}
	if got := joining(d, remote, false, nil); len(got) != 2 {
		t.Errorf("plain --attach: %d of 2 discovered kept", len(got))
	}
	if got := joining(d, remote, true, nil); len(got) != 0 {
		t.Errorf("attach URL: %d discovered joined a job none of them is a rank of", len(got))
	}
	if got := joining(d, nil, false, func(pid int) bool { return pid == 11 }); len(got) != 1 || got[0].PID != 11 {
		t.Errorf("run's job tree: %+v", got)
	}
}

// TestTheBiasSaidIsTheLoadersOwn: a job's verdict is told how tune's
// steps over jobs ran, the demo's how those over gpuwatch's own loader did.
func TestTheBiasSaidIsTheLoadersOwn(t *testing.T) {
	b := biasLines{job: "jobs'", embedded: "own"}
	for kind, want := range map[string]string{"python": "jobs'", "": "jobs'", "embedded": "own", "go": "own"} {
		if got := b.of(&sample.Frame{Loader: &sample.Loader{Kind: kind}}); got != want {
			t.Errorf("loader %q: %q, want %q", kind, got, want)
		}
	}
	if got := b.of(&sample.Frame{}); got != "jobs'" {
		t.Errorf("no loader (a sampled job): %q", got)
	}
}

// TestSettleLeavesTheLoopsTimeBetweenEpochsOut: frames the loop spent
// between epochs (validation: the diagnosis holds its verdict over them,
// or it read idle) neither count toward a verdict's holding nor break it;
// a session that ends inside the gap says so. A user's `run --once`
// settled on idle during a validation.
func TestSettleLeavesTheLoopsTimeBetweenEpochsOut(t *testing.T) {
	between := func(sec int) *sample.Frame {
		f := settleFrameAt(sec)
		f.IntervalSec, f.Loader = 1, &sample.Loader{BetweenEpochsSec: probes.Ptr(0.9)}
		return f
	}
	stopped := 0
	s := &Settle{stop: func() { stopped++ }, need: 3}
	for i := range 3 {
		s.Frame(settleFrameAt(i), diagnose.Verdict{Kind: diagnose.Healthy})
	}
	for i := 3; i < 13; i++ { // ten seconds of validation, read idle
		s.Frame(between(i), diagnose.Verdict{Kind: diagnose.Idle})
	}
	if stopped != 0 || s.verdict.Kind != diagnose.Healthy {
		t.Fatalf("settled (%d) on %s over the gap", stopped, s.verdict.Kind)
	}
	var out bytes.Buffer
	if err := s.summary(&out, false); !errors.Is(err, ErrUnsettled) || !strings.Contains(err.Error(), "the loop was between epochs when the session ended") {
		t.Fatalf("ended inside the gap: %v", err)
	}
	s.Frame(settleFrameAt(13), diagnose.Verdict{Kind: diagnose.Healthy})
	if stopped != 0 {
		t.Fatal("settled on 4 judged frames")
	}
	s.Frame(settleFrameAt(14), diagnose.Verdict{Kind: diagnose.Healthy})
	if stopped != 1 || s.verdict.Kind != diagnose.Healthy {
		t.Fatalf("5 judged frames around a gap: stopped %d, %s", stopped, s.verdict.Kind)
	}
}

package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/loader"
	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/report"
	"github.com/gpuwatch/gpuwatch/sample"
)

// TuneStep is one run of `gpuwatch tune`: the configuration, what the
// previous step's model predicted for it, what was measured, and the
// verdict with the changes it computed.
type TuneStep struct {
	Step      int                  `json:"step"`
	Knobs     map[string]string    `json:"knobs"`
	Predicted *diagnose.Prediction `json:"predicted,omitempty"` // nil for the first
	Measured  diagnose.Prediction  `json:"measured"`
	Verdict   diagnose.Kind        `json:"verdict"`
	Evidence  string               `json:"evidence,omitempty"`
	Changes   []diagnose.Change    `json:"changes,omitempty"`
	Next      *diagnose.Prediction `json:"next,omitempty"` // the model's prediction for the changes
	Settled   bool                 `json:"settled"`
	Seconds   float64              `json:"seconds"`
	// Window is the frames the verdict was taken on (not in JSON).
	Window []sample.Frame `json:"-"`
}

// TuneOptions configure Tune.
type TuneOptions struct {
	Interval time.Duration // between frames
	MaxRun   time.Duration // the longest one configuration runs before its verdict is taken
	MaxSteps int
	Roots    probes.Roots
	Th       diagnose.Thresholds
	Events   *loader.Events
}

// MinGain is the least measured gain for tune to go on.
const MinGain = 1.05

// Tune runs the embedded loader with cfg, takes the settled verdict,
// applies its changes, and runs again, until the verdict is healthy, has
// no change to offer, or a step gains under 5 %. Each step goes to out as
// it ends.
func Tune(ctx context.Context, o TuneOptions, cfg loader.Config, ds *loader.Dataset, out func(TuneStep) error) error {
	var prevPred *diagnose.Prediction
	prev := 0.0
	for step := 1; step <= o.MaxSteps; step++ {
		s, err := measure(ctx, o, cfg, ds)
		if err != nil {
			return err
		}
		s.Step, s.Predicted, s.Knobs = step, prevPred, cfg.Knobs()
		if err := out(s); err != nil {
			return err
		}
		switch {
		case step > 1 && s.Measured.SamplesPerSec < MinGain*prev:
			return nil // the last change gained under 5 %
		case s.Verdict == diagnose.Healthy && len(s.Changes) == 0, len(s.Changes) == 0:
			return nil
		}
		next, err := Apply(cfg, s.Changes)
		if err != nil {
			return err
		}
		cfg, prev, prevPred = next, s.Measured.SamplesPerSec, s.Next
	}
	return nil
}

// Apply sets each change's flag on cfg.
func Apply(cfg loader.Config, cs []diagnose.Change) (loader.Config, error) {
	for _, c := range cs {
		switch c.Flag {
		case "--workers", "--prefetch":
			n, err := strconv.Atoi(c.To)
			if err != nil {
				return cfg, fmt.Errorf("change %s: %q", c.Flag, c.To)
			}
			if c.Flag == "--workers" {
				cfg.Workers = n
			} else {
				cfg.Prefetch = n
			}
		case "--persistent", "--cache", "--pin":
			b, err := strconv.ParseBool(c.To)
			if err != nil {
				return cfg, fmt.Errorf("change %s: %q", c.Flag, c.To)
			}
			switch c.Flag {
			case "--persistent":
				cfg.Persistent = b
			case "--cache":
				cfg.Cache = b
				if b {
					cfg.DirectIO = false // in RAM: nothing bypasses the page cache
				}
			default:
				cfg.Pin = b
			}
		case "--access":
			a := loader.Access(c.To)
			if a != loader.Sequential && a != loader.Random && a != loader.Subseq {
				return cfg, fmt.Errorf("change %s: %q", c.Flag, c.To)
			}
			cfg.Access = a
		default:
			return cfg, fmt.Errorf("change %s: not a knob tune can set", c.Flag)
		}
	}
	if cfg.Workers > 0 && cfg.Prefetch == 0 {
		cfg.Prefetch = 2
	}
	if cfg.Workers == 0 {
		cfg.Prefetch, cfg.Persistent = 0, false
	}
	return cfg, cfg.Validate(true)
}

// measure runs cfg until its verdict settles (or MaxRun) and reads the
// settled stretch: samples/s and wait share averaged over it.
func measure(ctx context.Context, o TuneOptions, cfg loader.Config, ds *loader.Dataset) (TuneStep, error) {
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	src := &EmbeddedSource{}
	l := loader.New(cfg, ds, o.Events)
	src.Set(l)
	runErr := make(chan error, 1)
	go func() { runErr <- l.Run(runCtx) }()
	// Set-up (loading a cached dataset, once) is not the pipeline's
	// steady state: the measurement starts at the first batch.
	if err := firstBatch(runCtx, l, runErr); err != nil {
		return TuneStep{}, err
	}
	ctx, cancel := context.WithTimeout(runCtx, o.MaxRun)
	defer cancel()
	ps := probes.SystemProbes(o.Roots, probes.ProcOptions{PID: os.Getpid()}, probes.DiskOptions{}, probes.NetOptions{})
	ps = append(ps, probes.NewGPU(probes.DefaultGPUSources(o.Roots.Sys)...), probes.NewLoader(src))
	sampler := probes.NewSampler(ps, probes.SamplerOptions{Interval: o.Interval})
	defer sampler.Close()
	st := &settle{stop: cancel}
	rec := &tail{}
	err := loop(ctx, sampler, diagnose.NewDiagnoser(o.Th), nil, []Observer{st, rec})
	stopRun()
	if lerr := <-runErr; lerr != nil && !errors.Is(lerr, context.Canceled) {
		return TuneStep{}, fmt.Errorf("loader: %w", lerr)
	}
	if err != nil {
		return TuneStep{}, err
	}
	if st.frames == 0 {
		return TuneStep{}, errors.New("no frame came")
	}
	v := st.verdict
	s := TuneStep{Verdict: v.Kind, Changes: v.Changes, Next: v.Predicted, Settled: st.settled, Seconds: st.last.Time.Sub(st.first).Seconds(),
		Measured: rec.mean(SettleFrames), Window: rec.frames[max(0, len(rec.frames)-3):]}
	if len(v.Evidence) > 0 {
		s.Evidence = v.Evidence[0].Text
	}
	return s, nil
}

// firstBatch waits until l has handed out a batch (its set-up is done).
func firstBatch(ctx context.Context, l *loader.Loader, runErr <-chan error) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for l.Snapshot().Batches == 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-runErr:
			return fmt.Errorf("loader ended before its first batch: %v", err)
		case <-t.C:
		}
	}
	return nil
}

// tail keeps the loader's newest readings, and the newest frames.
type tail struct {
	ls     []sample.Loader
	frames []sample.Frame
}

func (t *tail) Frame(f *sample.Frame, _ diagnose.Verdict) error {
	if f.Loader != nil {
		t.ls = append(t.ls, *f.Loader)
	}
	t.frames = append(t.frames, *f)
	if len(t.frames) > 16 {
		t.frames = append(t.frames[:0], t.frames[len(t.frames)-8:]...)
	}
	return nil
}

func (*tail) Note(report.Note) error { return nil }

// mean is the samples/s and wait share over the newest n readings.
func (t *tail) mean(n int) diagnose.Prediction {
	ls := t.ls[max(0, len(t.ls)-n):]
	var p diagnose.Prediction
	k := 0
	for _, l := range ls {
		p.SamplesPerSec += l.SamplesPerSec
		if l.WaitShare != nil {
			p.WaitShare += *l.WaitShare
			k++
		}
	}
	if len(ls) > 0 {
		p.SamplesPerSec /= float64(len(ls))
	}
	if k > 0 {
		p.WaitShare /= float64(k)
	}
	return p
}

// String is the step in words, as tune prints it.
func (s TuneStep) String() string {
	var b strings.Builder
	k := s.Knobs
	fmt.Fprintf(&b, "step %d: workers %s prefetch %s persistent %s cache %s\n", s.Step, k["workers"], k["prefetch"], k["persistent"], k["cache"])
	if s.Predicted != nil {
		fmt.Fprintf(&b, "  predicted %.0f samples/s, wait %.0f %%; measured %.0f samples/s, wait %.0f %% (%+.0f %%)\n",
			s.Predicted.SamplesPerSec, 100*s.Predicted.WaitShare, s.Measured.SamplesPerSec, 100*s.Measured.WaitShare,
			100*(s.Measured.SamplesPerSec/s.Predicted.SamplesPerSec-1))
	} else {
		fmt.Fprintf(&b, "  measured %.0f samples/s, wait %.0f %%\n", s.Measured.SamplesPerSec, 100*s.Measured.WaitShare)
	}
	fmt.Fprintf(&b, "  verdict %s: %s\n", s.Verdict, s.Evidence)
	for _, c := range s.Changes {
		fmt.Fprintf(&b, "  change %s %s → %s (%s=%s): %s\n", c.Knob, c.From, c.To, c.Flag, c.To, c.Why)
	}
	if s.Next != nil {
		fmt.Fprintf(&b, "  the model predicts %.0f samples/s, wait %.0f %%\n", s.Next.SamplesPerSec, 100*s.Next.WaitShare)
	}
	return b.String()
}

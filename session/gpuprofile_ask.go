package session

import (
	"cmp"
	"context"
	"time"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/probes/endpoint"
	"github.com/gpuwatch/gpuwatch/sample"
)

// askGPUProfileTimeout bounds one POST /gpu-profile: the hook answers at
// once (it only arms the recording).
const askGPUProfileTimeout = 3 * time.Second

// AskGPUProfile asks each loader named by URL (the Python hook) to record
// the GPU's time over its next steps (POST /gpu-profile?steps=N, with the
// token of its announcement in dir, else the default discovery folders;
// docs/architecture.md §6), and tells tell each answer: a loader that
// refuses is a line, never an error. attach --gpu-profile calls it.
func AskGPUProfile(ctx context.Context, urls []string, dir string, steps int, tell func(string)) {
	if tell == nil {
		tell = func(string) {}
	}
	expanded, err := endpoint.ExpandURLs(urls)
	if err != nil {
		tell(err.Error())
		return
	}
	dirs := append([]string{cmp.Or(dir, endpoint.DiscoveryDir())}, endpoint.DiscoveryDirs()...)
	for _, u := range expanded {
		a, err := endpoint.NewAttach(u)
		if err != nil {
			tell(err.Error())
			continue
		}
		a.LookUpAnnouncement(func() (endpoint.Announcement, bool) { return announcedNow(dirs, "/proc", u) })
		if ann, ok := announcedNow(dirs, "/proc", u); ok {
			a.Announced(ann)
		}
		actx, cancel := context.WithTimeout(ctx, askGPUProfileTimeout)
		line, err := a.AskGPUProfile(actx, steps)
		cancel()
		if err != nil {
			tell(err.Error())
			continue
		}
		tell(a.Source() + ": " + line)
	}
}

// GPUProfileWhenBound is an Observer that asks the pacing loader, once,
// to record the GPU's time per step when the verdict says the accelerator
// is the busy part (diagnose.Healthy: the GPU is the limit, not the
// input), so that --once's verdict can say where the GPU's time goes
// (issue 51 item 4). It asks only a loader that is the Python hook and
// has no recording yet (run --gpu-profile asks its own), and never again
// after one try.
type GPUProfileWhenBound struct {
	// Pacing is the loader to ask (endpoint.Ranks.Pacing); nil or a nil
	// answer: nothing is asked.
	Pacing func() *endpoint.Attach
	// Steps is the steps to record (0: sample's default, 5).
	Steps int
	// Told hears the loader's answer, or why it could not be asked.
	Told   func(string)
	asked  bool
	failed bool // the loader refused, or could not be asked
}

// defaultGPUProfileSteps is the steps recorded when none is said (the
// hook's _gpuprofile.DEFAULT_STEPS).
const defaultGPUProfileSteps = 5

// Frame implements Observer.
func (g *GPUProfileWhenBound) Frame(f *sample.Frame, v diagnose.Verdict) error {
	if g.asked || v.Kind != diagnose.Healthy && v.Kind != diagnose.GPUUnderused || g.Pacing == nil || !judgesAGPU(f) {
		return nil
	}
	l := f.Loader
	if l == nil || l.Kind != "python" || l.GPUProfile != nil {
		return nil
	}
	a := g.Pacing()
	if a == nil {
		return nil
	}
	g.asked = true
	tell := g.Told
	if tell == nil {
		tell = func(string) {}
	}
	ctx, cancel := context.WithTimeout(context.Background(), askGPUProfileTimeout)
	defer cancel()
	line, err := a.AskGPUProfile(ctx, cmp.Or(g.Steps, defaultGPUProfileSteps))
	if err != nil {
		g.failed = true
		tell(err.Error())
		return nil
	}
	tell(a.Source() + ": " + line)
	return nil
}

// Pending says a recording was asked for and the frame does not carry
// its end yet (no profile, or one waiting or recording): --once's settle
// holds while it is, from the frame of the request on.
func (g *GPUProfileWhenBound) Pending(f *sample.Frame) bool {
	if !g.asked || g.failed || f == nil || f.Loader == nil {
		return false // a frame without the loader (the hook gone): nothing to wait for
	}
	return f.Loader.GPUProfile == nil || GPUProfileUnderWay(f)
}

// Note implements Observer.
func (g *GPUProfileWhenBound) Note(sample.Note) error { return nil }

// GPUProfileUnderWay says the frame's loader is recording the GPU's time
// (asked, and neither done nor refused): --once's settle waits for it, as
// it waits for the ceiling, so that the verdict has the breakdown.
func GPUProfileUnderWay(f *sample.Frame) bool {
	if f == nil || f.Loader == nil || f.Loader.GPUProfile == nil {
		return false
	}
	s := f.Loader.GPUProfile.State
	return s == sample.GPUProfileWaiting || s == sample.GPUProfileRecording
}

// judgesAGPU says the frame has a real GPU the verdict judges (a CPU
// job's virtual accelerator has no GPU time to record).
func judgesAGPU(f *sample.Frame) bool {
	for i := range f.GPUs {
		if f.JudgedGPU(i) {
			return true
		}
	}
	return false
}

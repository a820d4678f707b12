package endpoint

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/sample"
)

// The ceiling's bounds (the hook's: python/gpuwatch_hook/_ceiling.py): a
// replay of at most maxCeilingSeconds, a rate of at most maxCeilingRate
// samples or batches per second, a step of at most maxCeilingStep
// seconds. A figure outside is dropped and said, as the other gauges are.
const (
	maxCeilingSeconds = 600 * 1.5 // the replay lasts its seconds and one step more
	maxCeilingRate    = 1e12
	maxCeilingStep    = 1 << 20
	maxCeilingKept    = 1 << 20
	maxCeilingReason  = 200
)

// ceiling reads the ceiling's series (gpuwatch_loader_ceiling_*,
// docs/prometheus.md) into the counters: nil when the page has no
// gpuwatch_loader_ceiling_info of a state the protocol names. Its reason
// is outside text: cut and made printable.
func (m *metricsPage) ceiling() {
	ss := m.page["gpuwatch_loader_ceiling_info"]
	if len(ss) == 0 {
		return
	}
	state, _ := ss[0].Label("state")
	switch state {
	case sample.CeilingWarming, sample.CeilingKeeping, sample.CeilingReplaying, sample.CeilingDone, sample.CeilingRefused:
	default:
		m.c.Dropped = append(m.c.Dropped, "gpuwatch_loader_ceiling_info "+shortLabel(state, 32)+": not a state of the ceiling's, dropped")
		return
	}
	reason, _ := ss[0].Label("reason")
	c := &sample.Ceiling{State: state, Reason: shortLabel(reason, maxCeilingReason)}
	f := func(name string, hi float64) *float64 {
		if v, ok := m.gauge("gpuwatch_loader_ceiling_"+name, 0, hi); ok {
			return &v
		}
		return nil
	}
	ms := func(p *float64) *float64 {
		if p == nil {
			return nil
		}
		return probes.Ptr(1000 * *p)
	}
	c.Seconds = f("seconds", maxCeilingSeconds)
	c.MeasuredSeconds = f("measured_seconds", maxCeilingSeconds)
	if v := f("limit_bytes", 1<<62); v != nil {
		c.LimitBytes = probes.Ptr(int64(*v))
	}
	if v := f("kept_bytes", 1<<62); v != nil {
		c.KeptBytes = probes.Ptr(int64(*v))
	}
	c.KeptBatches = m.integer("gpuwatch_loader_ceiling_kept_batches", maxCeilingKept)
	c.BeforeSamplesPerSec = f("before_samples_per_second", maxCeilingRate)
	c.BeforeBatchesPerSec = f("before_batches_per_second", maxCeilingRate)
	c.StarvingStepMs = ms(f("starving_step_seconds", maxCeilingStep))
	c.SamplesPerSec = f("samples_per_second", maxCeilingRate)
	c.BatchesPerSec = f("batches_per_second", maxCeilingRate)
	c.StepMs = ms(f("step_seconds", maxCeilingStep))
	m.c.Ceiling = c
}

// AskCeiling asks the loader to measure its ceiling with a replay of d
// (POST /ceiling?seconds=N with its token: the hook's server,
// python/gpuwatch_hook/_server.py). It returns the loader's answer, one
// printable line; a refusal (400, 401, 404, 409) is an error saying what
// the loader answered.
func (a *Attach) AskCeiling(ctx context.Context, d time.Duration) (string, error) {
	if d <= 0 || d > MaxCeiling {
		return "", fmt.Errorf("the ceiling's replay: want (0, %v], not %v", MaxCeiling, d)
	}
	path := "/ceiling?seconds=" + strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
	return a.askHook(ctx, path, "the ceiling", "this loader cannot measure its ceiling (the Python hook can: gpuwatch run --ceiling)")
}

// askHook POSTs path to the loader with its token (once more with a
// fresh token after a 401) and returns the loader's answer, one printable
// line of at most maxCeilingReason bytes; a refusal is an error saying
// what the loader answered. what names the request in errors ("the
// ceiling"), cannot says why a 404, 405 or 501 means this loader cannot.
// AskCeiling and AskGPUProfile ask through it.
func (a *Attach) askHook(ctx context.Context, path, what, cannot string) (string, error) {
	post := "POST " + path[:strings.IndexByte(path+"?", '?')]
	resp, err := a.do(ctx, http.MethodPost, path, a.Timeout)
	if err == nil && resp.StatusCode == http.StatusUnauthorized && a.freshToken() {
		resp.Body.Close()
		resp, err = a.do(ctx, http.MethodPost, path, a.Timeout)
	}
	if err != nil {
		return "", fmt.Errorf("%s: asking for %s: %w", a.shown, what, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	line := shortLabel(strings.TrimSpace(strings.SplitN(string(body), "\n", 2)[0]), maxCeilingReason)
	status := shortLabel(resp.Status, 64) // outside text too: a hostile server's reason phrase
	switch resp.StatusCode {
	case http.StatusAccepted, http.StatusOK:
		return line, nil
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return "", fmt.Errorf("%s answered %s to %s: %s", a.shown, status, post, cannot)
	case http.StatusUnauthorized:
		return "", fmt.Errorf("%s: %w", a.shown, &httpStatusError{path: post, code: resp.StatusCode, status: status})
	}
	return "", fmt.Errorf("%s answered %s to %s: %s", a.shown, status, post, line)
}

// MaxCeiling is the longest replay one may ask for (the hook's
// _ceiling.MAX_SECONDS).
const MaxCeiling = 600 * time.Second

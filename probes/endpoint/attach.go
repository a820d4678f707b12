package endpoint

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/expo"
	"github.com/gpuwatch/gpuwatch/probes"

	"github.com/gpuwatch/gpuwatch/internal/neterr"
	"github.com/gpuwatch/gpuwatch/sample"
)

// Attach reads a loader's debug server (the loader protocol, docs/architecture.md §6):
// /metrics every interval and, on its own goroutine (see Profiler),
// /debug/pprof/profile. It sends GETs (and, asked, the one POST of
// AskCeiling), never follows a redirect to another host, and never shows
// the URL's credentials.
type Attach struct {
	base   *url.URL // with credentials, for requests
	shown  string   // without them, for people
	client *http.Client
	// Timeout bounds one /metrics read (default 3 s).
	Timeout time.Duration

	mu        sync.Mutex
	connected bool      // the last read succeeded
	downSince time.Time // first failed read after a success
	nextTry   time.Time
	downWhy   string // why the last read failed, said while waiting to retry
	backoff   time.Duration
	noMetrics bool                        // a pprof-only endpoint
	pid       int                         // from gpuwatch_loader_info
	token     string                      // sent as a bearer token; "" sends none
	lookup    func() (Announcement, bool) // finds the announcement anew after a 401 (LookUpAnnouncement)
	owner     listenerOwner               // who must hold the listening socket (owner.go)
	peer      netip.AddrPort              // the local address the last connection was made to (invalid: not local)
	pidCheck  pidCheck                    // whether the reported pid holds that socket, once per connection
	transport *http.Transport
	now       func() time.Time

	page []byte // the last /metrics page, reused by read (one read at a time)
}

// ErrBadURL marks a URL that is not a loader's base URL.
var ErrBadURL = errors.New("want http://HOST:PORT (the base; /metrics and /debug/pprof/ are found under it)")

// portInRange says a URL's port is absent (the scheme's) or one a TCP
// listener can have: url.Parse takes any digits ("99999"), and such a URL
// failed only when dialled.
func portInRange(port string) bool {
	if port == "" {
		return true
	}
	n, err := strconv.Atoi(port)
	return err == nil && n >= 1 && n <= 65535
}

// ErrDisconnected marks a loader that answered before and does not now.
var ErrDisconnected = errors.New("disconnected")

// NewAttach checks the URL's form: http or https, a host, no query.
func NewAttach(raw string) (*Attach, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || !portInRange(u.Port()) {
		return nil, fmt.Errorf("%q is not a loader URL: %w", sample.RedactBadURL(raw), ErrBadURL)
	}
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/metrics"), "/")
	u.RawQuery, u.Fragment = "", ""
	shown := *u
	shown.User = nil
	a := &Attach{base: u, shown: shown.String(), now: time.Now, Timeout: 3 * time.Second, owner: listenerOwner{procRoot: "/proc"}}
	// Every connection is proven before a byte is sent on it (dial): the
	// process listening is the announced loader's, of the user's.
	a.transport = http.DefaultTransport.(*http.Transport).Clone()
	a.transport.DialContext = a.dial
	// No client-wide Timeout: it would also bound reading the body, and a
	// profile's body takes its whole length to come. Each request has its
	// own deadline instead (get's timeout: Timeout for /metrics, the
	// profile's length plus slack for a profile).
	a.client = &http.Client{
		Transport: a.transport,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if req.URL.Host != via[0].URL.Host {
				return fmt.Errorf("refusing a redirect to another host (%s)", req.URL.Host)
			}
			if len(via) >= 3 {
				return errors.New("too many redirects")
			}
			return nil
		},
	}
	return a, nil
}

// SetToken sets the token sent with every request (Authorization: Bearer),
// from the loader's announcement: the hook serves nothing without it
// (docs/security.md). A URL with credentials sends those instead; a
// loader that wants no token (the embedded Go loader's debug server)
// ignores it. "" sends none.
func (a *Attach) SetToken(token string) {
	a.mu.Lock()
	changed := a.token != token
	a.token = token
	a.mu.Unlock()
	if changed {
		// A kept-alive connection was proven for what was sent before.
		a.transport.CloseIdleConnections()
	}
}

// LookUpAnnouncement sets where the loader's announcement is found anew
// when the loader answers 401 (a loader that came up after gpuwatch
// started, or restarted with a new token): for a URL the user gave. Its
// token is then sent only to the process it names (Announced).
func (a *Attach) LookUpAnnouncement(lookup func() (Announcement, bool)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lookup = lookup
}

// Source implements LoaderSource: the URL without credentials.
func (a *Attach) Source() string { return a.shown }

// PID is the loader's process ID from gpuwatch_loader_info, 0 if unknown.
func (a *Attach) PID() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pid
}

// LocalPID is PID where the loader's connection is to this machine and
// the pid was not found false (checkPID), else 0: a remote loader's pid
// names no process here, whatever process here has that number.
func (a *Attach) LocalPID() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.peer.IsValid() || a.pidCheck.bad {
		return 0
	}
	return a.pid
}

// NoMetrics says the endpoint serves profiles but no loader metrics.
func (a *Attach) NoMetrics() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.noMetrics
}

func (a *Attach) get(ctx context.Context, path string, timeout time.Duration) (*http.Response, error) {
	return a.do(ctx, http.MethodGet, path, timeout)
}

// do sends one request (GET, or the POST of AskCeiling) to path under
// the base URL, with the token.
func (a *Attach) do(ctx context.Context, method, path string, timeout time.Duration) (*http.Response, error) {
	u := *a.base
	u.Path += path
	if i := strings.IndexByte(path, '?'); i >= 0 {
		u.Path, u.RawQuery = a.base.Path+path[:i], path[i+1:]
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	a.mu.Lock()
	token := a.token
	a.mu.Unlock()
	if token != "" && a.base.User == nil {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		cancel()
		return nil, &transportError{err: a.explain(err, timeout), taken: takenWhy(err)}
	}
	resp.Body = cancelOnClose{resp.Body, cancel}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error { err := c.ReadCloser.Close(); c.cancel(); return err }

// transportError is a request that got no answer, in words; taken says why
// a listener that is there may not have answered ("" when it is not there,
// or something else failed).
type transportError struct {
	err   error
	taken string
}

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// takenWhy: a connection reset or closed before the answer is the hook's
// server with every slot taken (it closes a connection it cannot serve,
// issue 57 item 2); one not answered in time, that or a stopped process.
func takenWhy(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return "its connections are taken"
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return "its connections are taken, or it is stopped"
	}
	return ""
}

// unanswered is why a read of the loader failed, for its disconnection:
// one that got no answer names the loader and why (the frame says "the
// loader at URL does not answer (its connections are taken)").
func (a *Attach) unanswered(err error) string {
	var te *transportError
	if errors.As(err, &te) && te.taken != "" {
		return fmt.Sprintf("the loader at %s does not answer (%s): %v", a.shown, te.taken, err)
	}
	return err.Error()
}

// explain turns a transport error into words, without the URL (whose
// credentials net/http would print).
func (a *Attach) explain(err error, timeout time.Duration) error {
	return neterr.Explain(err, timeout, "the loader")
}

// Check makes the first connection, as `attach` does before anything else:
// /metrics must answer with Prometheus text, or — for a plain Go program
// with net/http/pprof — /debug/pprof/ must answer (profiles only). The
// error names the URL and what answered.
func (a *Attach) Check(ctx context.Context) error {
	_, err := a.read(ctx)
	if err == nil {
		return nil
	}
	var he *httpStatusError
	if errors.As(err, &he) && he.code == http.StatusNotFound {
		resp, perr := a.get(ctx, "/debug/pprof/", a.Timeout)
		if perr == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				a.mu.Lock()
				a.noMetrics, a.connected = true, true
				a.mu.Unlock()
				return nil
			}
		}
	}
	return fmt.Errorf("cannot attach to %s: %w", a.shown, err)
}

// NoAnswer says err (Check's) is no answer at all: nothing listens at the
// loader's address, or nothing answered in time. A loader not started
// yet fails so; one that answered wrongly does not.
func NoAnswer(err error) bool { return errors.Is(err, neterr.ErrNoAnswer) }

type httpStatusError struct {
	path   string
	code   int
	status string
}

func (e *httpStatusError) Error() string {
	if e.code == http.StatusUnauthorized {
		return fmt.Sprintf("%s answered %s: the loader wants its token, which is in its announcement (readable by its own user only): run gpuwatch as that user, or put the token in the URL (http://gpuwatch:TOKEN@HOST:PORT)", e.path, e.status)
	}
	return fmt.Sprintf("%s answered %s", e.path, e.status)
}

// read fetches and converts /metrics.
func (a *Attach) read(ctx context.Context) (LoaderCounters, error) {
	resp, err := a.get(ctx, "/metrics", a.Timeout)
	if err != nil {
		return LoaderCounters{}, err
	}
	if resp.StatusCode == http.StatusUnauthorized && a.freshToken() {
		resp.Body.Close()
		if resp, err = a.get(ctx, "/metrics", a.Timeout); err != nil {
			return LoaderCounters{}, err
		}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return LoaderCounters{}, &httpStatusError{path: "/metrics", code: resp.StatusCode, status: resp.Status}
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/html" {
		return LoaderCounters{}, errors.New("/metrics answered an HTML page, not Prometheus metrics")
	}
	body, release, err := a.readBody(ctx, resp.Body)
	if err != nil {
		return LoaderCounters{}, fmt.Errorf("/metrics: %w", err)
	}
	defer release()
	c, info, err := CountersFromMetrics(body)
	if err != nil {
		return LoaderCounters{}, fmt.Errorf("/metrics: %w", err)
	}
	c, untrusted := a.checkPID(c)
	a.mu.Lock()
	if pid, err := strconv.Atoi(info["pid"]); err == nil {
		if untrusted {
			pid = 0
		}
		a.pid = pid
	}
	a.mu.Unlock()
	return c, nil
}

// freshToken looks the announcement up anew (after a 401): true when it
// found a token other than the one sent.
func (a *Attach) freshToken() bool {
	a.mu.Lock()
	lookup, old := a.lookup, a.token
	a.mu.Unlock()
	if lookup == nil {
		return false
	}
	if ann, ok := lookup(); ok && ann.Token != "" && ann.Token != old {
		a.Announced(ann)
		return true
	}
	return false
}

// LoaderCounters implements LoaderSource. After a first success, a loader
// that stops answering is ErrDisconnected (with since when), retried with
// backoff (1 s doubling to maxBackoff) until it answers again.
func (a *Attach) LoaderCounters(ctx context.Context) (LoaderCounters, error) {
	a.mu.Lock()
	now := a.now()
	if a.noMetrics {
		a.mu.Unlock()
		return LoaderCounters{}, errNoMetrics
	}
	if !a.connected && !a.downSince.IsZero() && now.Before(a.nextTry) {
		since, why := a.downSince, a.downWhy
		a.mu.Unlock()
		return LoaderCounters{}, &disconnectedError{since: since, reason: why + "; waiting to retry"}
	}
	a.mu.Unlock()
	c, err := a.read(ctx)
	a.mu.Lock()
	defer a.mu.Unlock()
	if err == nil {
		a.connected, a.downSince, a.backoff = true, time.Time{}, 0
		return c, nil
	}
	if a.downSince.IsZero() {
		a.downSince = now
	}
	a.connected = false
	a.backoff = min(maxBackoff, max(time.Second, 2*a.backoff))
	a.nextTry = now.Add(a.backoff)
	a.downWhy = a.unanswered(err)
	return LoaderCounters{}, &disconnectedError{since: a.downSince, reason: a.downWhy}
}

// maxBackoff caps the wait between tries of a loader that stopped
// answering: a few seconds, so that gpuwatch reads it again soon after
// whatever held it (another user holding the hook's connections) stops
// (issue 41, item 3; it was 30 s). A try is one refused connection or one
// short request: cheap.
const maxBackoff = 4 * time.Second

var errNoMetrics = probes.Unavailable("the endpoint serves profiles but no loader metrics (gpuwatch_loader_*): wait times unknown")

// disconnectedError is ErrDisconnected with since when and why.
type disconnectedError struct {
	since  time.Time
	reason string
}

func (e *disconnectedError) Error() string {
	return fmt.Sprintf("disconnected since %s: %s", e.since.Format("15:04:05"), e.reason)
}
func (e *disconnectedError) Is(target error) bool { return target == ErrDisconnected }

// DisconnectedSince returns when a disconnection began, if err is one.
func DisconnectedSince(err error) (time.Time, bool) {
	var d *disconnectedError
	if errors.As(err, &d) {
		return d.since, true
	}
	return time.Time{}, false
}

// CountersFromMetrics converts a loader's /metrics text (the loader
// protocol's metric names) into counters, and returns the labels of
// gpuwatch_loader_info. A text with none of the loader's metrics is an
// error: it is not a loader.
func CountersFromMetrics(text []byte) (LoaderCounters, map[string]string, error) {
	page, err := expo.Parse(text, "gpuwatch_") // the loader's series, and the hook's gpuwatch_job_*
	if err != nil {
		return LoaderCounters{}, nil, fmt.Errorf("not Prometheus text: %w", err)
	}
	m := &metricsPage{page: page}
	m.scalars()
	m.histograms()
	info := m.info()
	m.workerPIDs()
	m.ceiling()                           // the ceiling's series (ceiling.go)
	m.gpuProfile()                        // the GPU's time per step (gpuprofile.go)
	stagesFromPage(page, &m.c)            // the stage and payload series (stages.go): never alone a loader
	m.c.Settings = settingsFromPage(page) // the job's settings (settings.go): never alone a loader
	m.c.Syncs = syncsFromPage(page)       // the host syncs (syncs.go): never alone a loader
	m.c.SyncSteps = syncStepsFromPage(page)
	hookCPUFromPage(page, &m.c) // the hook's own CPU time (hookcost.go): never alone a loader
	if m.found == 0 {
		return m.c, nil, errors.New("no gpuwatch_loader_* metrics: this is not a loader's metrics endpoint")
	}
	return m.c, info, nil
}

// metricsPage is one loader page being read into counters: found counts
// the gpuwatch_loader_* metrics it holds, dropped ones included.
type metricsPage struct {
	page  map[string][]expo.Sample
	c     LoaderCounters
	found int
}

// raw is a sample's value as sent; ok is false when the metric is absent.
func (m *metricsPage) raw(name string) (float64, bool) {
	ss := m.page[name]
	if len(ss) == 0 {
		return 0, false
	}
	m.found++
	return ss[0].Value, true
}

// gauge is a value within [lo, hi]. NaN, ±Inf (valid Prometheus text, no
// count of anything) and values outside the range are dropped, and the
// frame says why: a loader's answer is outside input, and one absurd number
// must not become an absurd verdict or advice.
func (m *metricsPage) gauge(name string, lo, hi float64) (float64, bool) {
	v, ok := m.raw(name)
	switch {
	case !ok:
		return 0, false
	case math.IsNaN(v) || math.IsInf(v, 0) || v < lo || v > hi:
		m.c.Dropped = append(m.c.Dropped, fmt.Sprintf("%s %s: outside %g–%g, dropped", name, strconv.FormatFloat(v, 'g', 6, 64), lo, hi))
		return 0, false
	}
	return v, true
}

// count is a counter's value; 0 when absent or dropped.
func (m *metricsPage) count(name string) uint64 {
	v, ok := m.gauge(name, 0, 1<<62)
	if !ok {
		return 0
	}
	return uint64(v)
}

// integer is a whole number within [0, hi]; nil when absent or dropped.
func (m *metricsPage) integer(name string, hi int) *int {
	v, ok := m.gauge(name, 0, float64(hi))
	if !ok {
		return nil
	}
	n := int(v)
	return &n
}

// seconds is a total of seconds; nil when absent or dropped.
func (m *metricsPage) seconds(name string) *float64 {
	if v, ok := m.gauge(name, 0, maxLoaderSeconds); ok {
		return &v
	}
	return nil
}

// scalars reads the counters and gauges, in the order their reasons for a
// drop are listed.
func (m *metricsPage) scalars() {
	c := &m.c
	c.Batches = m.count("gpuwatch_loader_batches_total")
	c.Samples = m.count("gpuwatch_loader_samples_total")
	c.BytesRead = m.count("gpuwatch_loader_bytes_read_total")
	_, counted := m.gauge("gpuwatch_loader_bytes_read_total", 0, 1<<62)
	c.NoBytesRead = !counted
	c.ReadSeconds = m.seconds("gpuwatch_loader_read_seconds_total")
	c.DecodeSeconds = m.seconds("gpuwatch_loader_decode_seconds_total")
	if v, ok := m.gauge("gpuwatch_loader_queue_depth", 0, maxQueueDepth); ok {
		c.QueueDepth = &v
	}
	if v, ok := m.gauge("gpuwatch_loader_waiting_seconds", 0, maxLoaderSeconds); ok {
		c.Waiting = &v
	}
	if v, ok := m.gauge("gpuwatch_loader_stepping_seconds", 0, maxLoaderSeconds); ok {
		c.Stepping = &v
	}
	c.Workers = m.integer(sample.KnobWorkers.Series, maxWorkers)
	c.Prefetch = m.integer(sample.KnobPrefetch.Series, maxPrefetch)
	c.BatchesPerEpoch = m.integer("gpuwatch_loader_batches_per_epoch", math.MaxInt32) // an int on 32-bit builds too
	// The DataLoader's booleans (the hook): persistent_workers, pin_memory.
	for _, k := range sample.KnobTable {
		if k.Type != sample.KnobBool || k.Series == "" {
			continue
		}
		if v, ok := m.gauge(k.Series, 0, 1); ok {
			if c.Knobs == nil {
				c.Knobs = map[string]string{}
			}
			c.Knobs[k.Flag] = strconv.FormatBool(v >= 0.5)
		}
	}
	// Whether the script builds a new DataLoader every epoch (the hook
	// counts the epochs over one built anew, the last epoch's gone: every
	// epoch after the first, three or more): persistent_workers keeps
	// workers across one DataLoader's epochs only.
	if epochs, ok := m.gauge("gpuwatch_loader_epochs_total", 0, 1<<40); ok && epochs >= 3 {
		if rebuilt, ok := m.gauge("gpuwatch_loader_rebuilt_epochs_total", 0, epochs-1); ok {
			every := rebuilt == epochs-1
			c.NewLoaderEveryEpoch = &every
		}
	}
	// Whether an IterableDataset splits its data by worker, as its code
	// says (the hook reads its __iter__ and the worker_init_fn).
	if v, ok := m.gauge("gpuwatch_loader_iterable_splits_by_worker", 0, 1); ok {
		splits := v >= 0.5
		c.IterableSplitsByWorker = &splits
	}
	// Whether its workers yield the same samples, as their first batches
	// measured it.
	if v, ok := m.gauge("gpuwatch_loader_iterable_repeats", 0, 1); ok {
		repeats := v >= 0.5
		c.IterableRepeats = &repeats
	}
	// The time to each epoch's first batch, epochs after the first.
	c.EpochStall = m.meanOf("gpuwatch_loader_epoch_stall_seconds_total", "gpuwatch_loader_epoch_stalls_total")
	// The loop's time between epochs, from each epoch's end to the next
	// one's start: its mean, and the clock of it (the sum and the gap
	// under way).
	c.EpochGap = m.meanOf("gpuwatch_loader_between_epochs_seconds_total", "gpuwatch_loader_epoch_gaps_total")
	sum := m.seconds("gpuwatch_loader_between_epochs_seconds_total")
	if now := m.seconds("gpuwatch_loader_between_epochs_seconds"); sum != nil && now != nil {
		c.BetweenEpochs = probes.Ptr(*sum + *now)
	}
}

// meanOf is the mean of the seconds summed in sum over the count in n,
// nil where either is absent, the count is not a whole number of at
// least one, or the mean is past maxMeanSeconds (a hostile page's 2^40 s
// over one, or 10 s over 1e-300, overflowed a Duration into -2562047h).
func (m *metricsPage) meanOf(sum, n string) *time.Duration {
	s := m.seconds(sum)
	count, ok := m.gauge(n, 0, 1<<40) // 0: none yet, no reason to drop the page's figure
	if s == nil || !ok || count < 1 || count != math.Trunc(count) || *s/count > maxMeanSeconds {
		return nil
	}
	d := time.Duration(*s / count * float64(time.Second))
	return &d
}

// maxMeanSeconds bounds a mean time per epoch read from a page: 100 days.
const maxMeanSeconds = 100 * 86400

// histograms reads the wait and step histograms; the wait's buckets are
// the loader's, else the step's.
func (m *metricsPage) histograms() {
	wb, wh, okW := histogram(m.page, "gpuwatch_loader_wait_seconds")
	sb, sh, okS := histogram(m.page, "gpuwatch_loader_step_seconds")
	if okW {
		m.found++
		m.c.Buckets, m.c.Wait = wb, wh
	}
	if okS {
		m.found++
		m.c.Step, m.c.StepSeen = sh, true
		if !okW {
			m.c.Buckets = sb
		}
	}
}

// info reads gpuwatch_loader_info's labels into the counters' identity
// (kind, PID, loop thread, ranks) and returns them all.
func (m *metricsPage) info() map[string]string {
	info := map[string]string{}
	ss := m.page["gpuwatch_loader_info"]
	if len(ss) == 0 {
		return info
	}
	m.found++
	for _, l := range ss[0].Labels {
		info[l.Name] = l.Value
	}
	c := &m.c
	switch info["kind"] {
	case "python", "go":
		c.Kind = info["kind"]
	}
	infoIDs(c, info)
	return info
}

// infoIDs reads the loader's process, loop thread and place in its job
// from gpuwatch_loader_info's labels: a world size of 0 is none, and
// local_world_size is kept only from 1 to the world size.
func infoIDs(c *LoaderCounters, info map[string]string) {
	c.PID, c.LoopTID = positiveID(info["pid"]), positiveID(info["tid"])
	c.Rank, c.LocalRank, c.WorldSize = rankID(info["rank"]), rankID(info["local_rank"]), rankID(info["world_size"])
	if c.WorldSize != nil && *c.WorldSize == 0 {
		c.WorldSize = nil
	}
	if n := rankID(info["local_world_size"]); n != nil && *n > 0 && c.WorldSize != nil && *n <= *c.WorldSize {
		c.LocalWorldSize = n
	}
}

// workerPIDs reads the workers' PIDs, at most maxWorkerPIDs: a hostile
// endpoint cannot grow a frame without end.
func (m *metricsPage) workerPIDs() {
	for _, s := range m.page["gpuwatch_loader_worker_info"] {
		if v, _ := s.Label("pid"); positiveID(v) != nil && len(m.c.WorkerPIDs) < maxWorkerPIDs {
			m.c.WorkerPIDs = append(m.c.WorkerPIDs, *positiveID(v))
		}
	}
}

// The ranges of the loader protocol's gauges: a value outside is dropped
// (and the frame says so). PyTorch sets no limit on num_workers; 4096 is
// far past any machine's cores, and so is a queue of a million batches.
const (
	maxWorkers       = 4096
	maxPrefetch      = 1 << 16
	maxQueueDepth    = 1 << 20
	maxLoaderSeconds = 1 << 40 // cumulative seconds: 35,000 years
)

// Bounds on /metrics answers. A loader's page is a few KiB: it is read
// into a buffer kept between reads, of at most keptMetricsBytes. A larger
// answer (up to maxMetricsBytes) takes one of bigMetricsReads' slots, for
// a buffer of its own released after: whatever the endpoints send, the
// process holds at most MaxRanks × keptMetricsBytes + 2 × maxMetricsBytes
// (48 MiB) of /metrics answers.
const (
	maxMetricsBytes  = 16 << 20
	keptMetricsBytes = 64 << 10
)

// bigMetricsReads are the slots for answers past keptMetricsBytes.
var bigMetricsReads = make(chan struct{}, 2)

// readBody reads a /metrics answer: into the kept buffer when it fits,
// else into a buffer of its own under a big-read slot (waiting for one
// within ctx). release gives back what the answer took.
func (a *Attach) readBody(ctx context.Context, r io.Reader) (body []byte, release func(), err error) {
	// The kept buffer: a page a tick, read every tick; growing a new
	// slice for it each time was a tenth of an attached tick's CPU. It is
	// allocated once at its full size, so it never grows past it.
	if a.page == nil {
		a.page = make([]byte, keptMetricsBytes+1)
	}
	n, err := io.ReadFull(r, a.page)
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return a.page[:n], func() {}, nil
	case err != nil:
		return nil, nil, a.explain(err, a.Timeout)
	}
	select {
	case bigMetricsReads <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, errors.New("answer larger than 64 KiB, and other large answers are being read: try again")
	}
	// 1 MiB first; past it, one buffer of the cap's size (no chain of
	// doublings for an answer that never ends).
	big := append(make([]byte, 0, 1<<20), a.page...)
	done := func() { <-bigMetricsReads }
	for len(big) <= maxMetricsBytes {
		if len(big) == cap(big) {
			big = append(make([]byte, 0, maxMetricsBytes+1), big...)
		}
		n, err := r.Read(big[len(big):cap(big)])
		big = big[:len(big)+n]
		if err == io.EOF {
			return big, done, nil
		}
		if err != nil {
			done()
			return nil, nil, a.explain(err, a.Timeout)
		}
	}
	done()
	return nil, nil, fmt.Errorf("answer larger than %d MiB", maxMetricsBytes>>20)
}

// maxWorkerPIDs bounds the worker PIDs taken from one /metrics answer.
const maxWorkerPIDs = 1024

// positiveID parses a process or thread ID label: nil unless it is a
// decimal number in the range Linux gives PIDs (1 to 2^22).
func positiveID(s string) *int {
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > 1<<22 {
		return nil
	}
	return &n
}

// maxRank bounds a rank label: jobs have thousands of ranks, not more
// than a million.
const maxRank = 1 << 20

// rankID parses a rank label (RANK, LOCAL_RANK, WORLD_SIZE): nil unless
// a decimal number from 0 to maxRank.
func rankID(s string) *int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > maxRank {
		return nil
	}
	return &n
}

// histogram reads the histogram name from its _bucket (by le, leaving
// out +Inf: Count holds it), _sum and _count samples (one missing reads
// as 0, as expfmt reads it). A histogram without any, or with a sum or
// count that is no count, is none.
func histogram(page map[string][]expo.Sample, name string) ([]float64, Hist, bool) {
	sums, counts, buckets := page[name+"_sum"], page[name+"_count"], page[name+"_bucket"]
	if len(sums) == 0 && len(counts) == 0 && len(buckets) == 0 {
		return nil, Hist{}, false
	}
	sum, count := 0.0, 0.0
	if len(sums) > 0 {
		sum = sums[0].Value
	}
	if len(counts) > 0 {
		count = counts[0].Value
	}
	if math.IsNaN(sum) || math.IsInf(sum, 0) || sum < 0 || !(count >= 0 && count <= 1<<62) {
		return nil, Hist{}, false // a broken histogram is no histogram
	}
	type bucket struct {
		le float64
		n  uint64
	}
	var bs []bucket
	for _, b := range buckets {
		v, ok := b.Label("le")
		if !ok {
			continue
		}
		le, err := expo.ParseValue(v)
		if err != nil || le != le || le > 1e300 || !(b.Value >= 0 && b.Value <= 1<<62) { // NaN, +Inf
			continue
		}
		bs = append(bs, bucket{le, uint64(b.Value)})
	}
	slices.SortStableFunc(bs, func(a, b bucket) int { return cmp.Compare(a.le, b.le) })
	out := Hist{Sum: sum, Count: uint64(count)}
	bounds := make([]float64, 0, len(bs))
	for _, b := range bs {
		bounds = append(bounds, b.le)
		out.Counts = append(out.Counts, b.n)
	}
	return bounds, out, true
}

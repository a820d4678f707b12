package loader

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Loader runs one configuration: the data pipeline and a training loop
// that takes batches and "steps" on them.
type Loader struct {
	cfg    Config
	ds     *Dataset
	stats  *Stats
	events *Events
	thr    *throttle
	bufs   sync.Pool // batch buffers of BatchSize × SampleSize bytes

	workerStarts atomic.Int64 // how many workers have started (tests, sweep)
	loopTID      atomic.Int64 // the training loop's OS thread while it runs, else 0
	unmap        bool         // Run mapped the dataset, and unmaps it when it ends
	maxOutstand  atomic.Int64 // the most batches ever dispatched and not yet taken
	sink         atomic.Uint32

	// Test hooks: called in the goroutine that loads a batch.
	fetchHook func(worker, index int)
}

// New returns a Loader for cfg over the open dataset ds. events may be nil.
func New(cfg Config, ds *Dataset, events *Events) *Loader {
	l := &Loader{cfg: cfg, ds: ds, stats: newStats(), events: events}
	if cfg.ReadBandwidth > 0 || cfg.ReadLatency > 0 {
		l.thr = &throttle{bandwidth: float64(cfg.ReadBandwidth), latency: cfg.ReadLatency}
	}
	size := int(cfg.SampleSize) * cfg.BatchSize
	l.bufs.New = func() any { b := make([]byte, size); return &b }
	return l
}

// Config is the configuration the Loader runs.
func (l *Loader) Config() Config { return l.cfg }

// Snapshot copies the Loader's counters; safe while Run runs.
func (l *Loader) Snapshot() Snapshot { return l.stats.Snapshot() }

// LoopTID is the OS thread that runs the training loop while it runs
// (Run locks the loop to it), 0 before and after.
func (l *Loader) LoopTID() int { return int(l.loopTID.Load()) }

// PageCache is how many of the dataset's bytes are in the page cache now
// (mincore on the loader's own mappings); ok is false unless the dataset
// is mapped (--read mmap or --page-cache).
func (l *Loader) PageCache() (cached int64, ok bool) { return l.ds.Resident() }

// WorkerStarts is how many workers have started so far.
func (l *Loader) WorkerStarts() int { return int(l.workerStarts.Load()) }

// result is one loaded batch on its way to the training loop.
type result struct {
	epoch, index int
	buf          *[]byte
	worker       int
	read, decode time.Duration
	fetch        time.Duration
	bytes        int64
	samples      int
	err          error
}

// ownPs gives an O_DIRECT loader a P for each worker and one for the
// loop, as PyTorch's worker processes each have their own interpreter,
// and returns what puts the count back: an O_DIRECT read is a system call
// too short for the runtime to hand its P on, so 16 workers reading kept
// both Ps of a 2-core box, and the loop's 2 ms step took 4-5 ms to be run
// again (a disk that served 1.3-1.9 GiB/s, 2026-12-05: the io-bound
// preset waited 6-10 % and read as healthy). The cores stay the kernel's
// to share. Loaders overlap (tune's trials, the demo's switches): the
// count before the first is put back when the last ends. A GOMAXPROCS the
// user set stands.
func (l *Loader) ownPs() (restore func()) {
	if !l.cfg.DirectIO || os.Getenv("GOMAXPROCS") != "" {
		return func() {}
	}
	directPs.Lock()
	defer directPs.Unlock()
	if directPs.running == 0 {
		directPs.before = runtime.GOMAXPROCS(0)
	}
	directPs.running++
	if n := l.cfg.Workers + 1; n > runtime.GOMAXPROCS(0) {
		runtime.GOMAXPROCS(n)
	}
	return func() {
		directPs.Lock()
		defer directPs.Unlock()
		if directPs.running--; directPs.running == 0 {
			runtime.GOMAXPROCS(directPs.before)
		}
	}
}

// directPs is what the O_DIRECT loaders running hold of GOMAXPROCS: how
// many run, and the count before the first.
var directPs struct {
	sync.Mutex
	running, before int
}

// Run is the training loop: epochs of taking batches and stepping on them,
// until cfg.Epochs are done or ctx ends (then it returns ctx's error).
func (l *Loader) Run(ctx context.Context) error {
	cfg := l.cfg
	l.events.emit(Event{Name: "run start"})
	l.events.emit(Event{Name: "setup start"})
	setup := time.Now()
	if err := l.preparePages(); err != nil {
		return err
	}
	if l.unmap {
		defer l.ds.Close() // after the workers stop (deferred below, run first)
	}
	if cfg.PageCache > 0 && !cfg.Cache {
		stop := l.trimLoop(cfg.PageCache)
		defer stop()
	}
	if cfg.Warm && !cfg.Cache && !cfg.DirectIO && cfg.PageCache == 0 {
		if err := l.ds.Warm(ctx); err != nil {
			return err
		}
	}
	if cfg.Cache && l.ds.mem == nil {
		if err := l.ds.LoadIntoMemory(); err != nil {
			return err
		}
		// The one read of the whole dataset crosses the emulated link too.
		if !l.thr.wait(ctx.Done(), int(min(l.ds.Size, math.MaxInt32))) {
			return ctx.Err()
		}
	}
	l.events.emit(Event{Name: "setup end", Duration: seconds(time.Since(setup))})
	defer l.ownPs()()
	// The training loop runs on one OS thread, as a Python training loop
	// does: with num_workers=0 it loads every batch itself there — the
	// pegged core users see —, and with workers its thread's run delay
	// (schedstat) is the time its steps sat waiting for a CPU, throttled
	// at a quota included, which the virtual accelerator leaves out
	// (sample.VirtualAccel).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	l.loopTID.Store(int64(gettid()))
	defer l.loopTID.Store(0)
	var persistent *pool
	defer func() {
		if persistent != nil {
			persistent.stop()
		}
	}()
	var err error
	for epoch := 1; cfg.Epochs == 0 || epoch <= cfg.Epochs; epoch++ {
		l.stats.startEpoch(epoch)
		l.events.emit(Event{Name: "epoch start", Epoch: epoch})
		epochStart := time.Now()
		batches := l.plan(epoch)
		var it iterator
		if cfg.Workers == 0 {
			it = l.newInline(ctx, epoch, batches)
		} else {
			p := persistent
			if p == nil {
				p = l.startPool(ctx)
				if cfg.Persistent {
					persistent = p
				}
			}
			it = l.newMulti(ctx, p, epoch, batches)
		}
		err = l.runEpoch(ctx, it, epoch, epochStart)
		it.close()
		l.events.emit(Event{Name: "epoch end", Epoch: epoch, Duration: seconds(time.Since(epochStart))})
		if err != nil {
			break
		}
	}
	l.events.emit(Event{Name: "run end"})
	return err
}

func (l *Loader) runEpoch(ctx context.Context, it iterator, epoch int, epochStart time.Time) error {
	for i := 0; ; i++ {
		l.events.emit(Event{Name: "get-batch start", Epoch: epoch, Batch: intp(i)})
		asked := time.Now()
		l.stats.asking(asked, i == 0)
		r, depth, ok, err := it.next()
		got := time.Now()
		l.stats.asking(time.Time{}, false)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		wait := got.Sub(asked)
		if i == 0 {
			l.stats.firstBatchOfEpoch(got.Sub(epochStart))
		}
		l.events.emit(Event{Name: "get-batch end", Epoch: epoch, Batch: intp(i), Worker: intp(r.worker),
			Duration: seconds(wait), Wait: seconds(wait)})
		l.events.emit(Event{Name: "training start", Epoch: epoch, Batch: intp(i)})
		// The accelerator step, simulated: the one sleep in the loader.
		if l.cfg.StepTime > 0 {
			t := time.NewTimer(l.cfg.StepTime)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				it.release(r)
				return ctx.Err()
			}
		}
		it.release(r)
		step := time.Since(got)
		l.events.emit(Event{Name: "training end", Epoch: epoch, Batch: intp(i), Duration: seconds(step)})
		l.stats.record(Batch{
			Epoch: epoch, Index: i, Worker: r.worker, Wait: wait, Step: step,
			Fetch: r.fetch, Read: r.read, Decode: r.decode, Bytes: r.bytes, Samples: r.samples,
			QueueDepth: depth, Time: got,
		})
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// plan returns the sample indices of each batch of an epoch.
func (l *Loader) plan(epoch int) [][]int {
	cfg := l.cfg
	n, nb := cfg.Samples(), cfg.BatchesPerEpoch()
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(epoch)))
	var order []int
	switch cfg.Access {
	case Random:
		order = rng.Perm(n)
	case Subseq:
		order = make([]int, 0, nb*cfg.BatchSize)
		for b := 0; b < nb; b++ {
			start := rng.IntN(n - cfg.BatchSize + 1)
			for k := 0; k < cfg.BatchSize; k++ {
				order = append(order, start+k)
			}
		}
	default:
		order = make([]int, n)
		for i := range order {
			order[i] = i
		}
	}
	out := make([][]int, 0, nb)
	for b := 0; b < nb; b++ {
		lo := b * cfg.BatchSize
		out = append(out, order[lo:min(lo+cfg.BatchSize, len(order))])
	}
	return out
}

// preparePages maps the dataset for --read mmap (and for counting its
// cached pages under --page-cache), and with a page-cache limit starts
// from a cold cache: the first epoch reads the disk, as a dataset larger
// than RAM would.
func (l *Loader) preparePages() error {
	cfg := l.cfg
	if cfg.Read != Mmap && cfg.PageCache == 0 {
		return nil
	}
	if l.ds.maps == nil {
		if err := l.ds.Map(); err != nil {
			return err
		}
		l.unmap = true
	}
	if cfg.PageCache > 0 {
		return l.ds.DropPages()
	}
	return nil
}

// trimLoop keeps the dataset's cached share under limit every 250 ms
// until the returned stop is called: a check of 1 GiB of pages costs
// ~5 ms (2 % of a core), and the probe reuses its count.
func (l *Loader) trimLoop(limit int64) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = l.ds.TrimPageCache(limit) // best effort: a failed trim leaves a warmer cache
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// newReader is a worker's reader: through the mappings with --read mmap,
// else its own file handles. Its throttled waits end with ctx.
func (l *Loader) newReader(ctx context.Context) *reader {
	var rd *reader
	if l.cfg.Read == Mmap && l.ds.maps != nil {
		rd = l.ds.newMappedReader(l.thr)
	} else {
		rd, _ = l.ds.newReader(l.cfg.DirectIO, l.thr)
	}
	rd.done = ctx.Done()
	return rd
}

// fetch loads one batch into buf: a pread per sample, then the decode
// work. It runs on a worker, or on the training loop with workers=0. When
// ctx ends it stops within a few ms, mid-read or mid-decode, with ctx's
// error.
func (l *Loader) fetch(ctx context.Context, rd *reader, rng *rand.Rand, samples []int, worker, index int) result {
	start := time.Now()
	if l.fetchHook != nil {
		l.fetchHook(worker, index)
	}
	buf := l.bufs.Get().(*[]byte)
	r := result{buf: buf, worker: worker, index: index, samples: len(samples)}
	s := int(l.cfg.SampleSize)
	var crc uint32
	for k, idx := range samples {
		dst := (*buf)[k*s : (k+1)*s]
		t0 := time.Now()
		if err := rd.readAt(dst, int64(idx)*l.cfg.SampleSize); err != nil {
			r.err = fmt.Errorf("read sample %d: %w", idx, err)
			if errors.Is(err, errStopped) {
				r.err = ctx.Err()
			}
			return r
		}
		t1 := time.Now()
		c, ok := decode(ctx.Done(), worker >= 0, dst, l.cfg.DecodeCost, jitterMul(rng, l.cfg.Jitter))
		if !ok {
			r.err = ctx.Err()
			return r
		}
		crc ^= c
		r.read += t1.Sub(t0)
		r.decode += time.Since(t1)
		r.bytes += int64(s)
	}
	l.sink.Add(crc)
	r.fetch = time.Since(start)
	return r
}

// iterator hands out one epoch's batches in order.
type iterator interface {
	// next blocks for the next batch; ok is false at the end of the
	// epoch. depth is how many batches were ready when it was asked.
	next() (r result, depth int, ok bool, err error)
	release(r result)
	close()
}

// inline is workers=0: the training loop reads and decodes each batch.
type inline struct {
	l       *Loader
	ctx     context.Context
	epoch   int
	batches [][]int
	i       int
	rd      *reader
	rng     *rand.Rand
}

func (l *Loader) newInline(ctx context.Context, epoch int, batches [][]int) *inline {
	rd := l.newReader(ctx)
	return &inline{l: l, ctx: ctx, epoch: epoch, batches: batches, rd: rd,
		rng: rand.New(rand.NewPCG(uint64(l.cfg.Seed), uint64(1000+epoch)))}
}

func (it *inline) next() (result, int, bool, error) {
	if it.i >= len(it.batches) {
		return result{}, 0, false, nil
	}
	r := it.l.fetch(it.ctx, it.rd, it.rng, it.batches[it.i], -1, it.i)
	r.epoch = it.epoch
	it.i++
	return r, 0, true, r.err
}

func (it *inline) release(r result) { it.l.bufs.Put(r.buf) }
func (it *inline) close()           { it.rd.close() }

// task is one batch for a worker: PyTorch sends (index, sample indices).
type task struct {
	epoch, index int
	samples      []int
}

// pool is the workers: one index queue each, one shared data queue, and the
// optional pin-memory stage after it.
type pool struct {
	l       *Loader
	queues  []chan task
	out     chan result // what the training loop reads: pinned or raw
	pinned  chan *[]byte
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	stopped bool
}

func (l *Loader) startPool(parent context.Context) *pool {
	ctx, cancel := context.WithCancel(parent)
	w, depth := l.cfg.Workers, l.cfg.Workers*l.cfg.Prefetch
	p := &pool{l: l, queues: make([]chan task, w), cancel: cancel}
	raw := make(chan result, depth)
	for i := range p.queues {
		// At most prefetch × workers batches are outstanding, dealt
		// round-robin: each worker's queue holds at most prefetch of
		// them, and put never blocks. A queue of prefetch × workers
		// each was 1.3 GB of channels for 4,096 workers.
		p.queues[i] = make(chan task, l.cfg.Prefetch)
		p.wg.Add(1)
		go p.worker(ctx, i, raw)
	}
	p.out = raw
	if l.cfg.Pin {
		// pin_memory: a thread copies each batch into page-locked memory
		// before the training loop sees it. Here: a memcpy into a reused
		// buffer, on its own goroutine.
		p.out = make(chan result, depth)
		p.pinned = make(chan *[]byte, depth+2)
		for i := 0; i < depth+2; i++ {
			b := make([]byte, int(l.cfg.SampleSize)*l.cfg.BatchSize)
			p.pinned <- &b
		}
		p.wg.Add(1)
		go p.pin(ctx, raw)
	}
	return p
}

func (p *pool) worker(ctx context.Context, id int, out chan<- result) {
	defer p.wg.Done()
	l := p.l
	l.workerStarts.Add(1)
	// A worker process's start-up: imports, dataset __init__. A pool
	// stopped meanwhile (q, -d, the end of an epoch) ends it.
	if !burn(ctx.Done(), l.cfg.WorkerStart) {
		return
	}
	rd := l.newReader(ctx)
	defer rd.close()
	rng := rand.New(rand.NewPCG(uint64(l.cfg.Seed), uint64(1_000_000+id)))
	for {
		select {
		case <-ctx.Done():
			return
		case t, ok := <-p.queues[id]:
			if !ok {
				return
			}
			r := l.fetch(ctx, rd, rng, t.samples, id, t.index)
			r.epoch = t.epoch
			select {
			case out <- r:
			case <-ctx.Done():
				return
			}
		}
	}
}

func (p *pool) pin(ctx context.Context, in <-chan result) {
	defer p.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-in:
			var dst *[]byte
			select {
			case dst = <-p.pinned:
			case <-ctx.Done():
				return
			}
			copy(*dst, *r.buf)
			p.l.bufs.Put(r.buf)
			r.buf = dst
			select {
			case p.out <- r:
			case <-ctx.Done():
				return
			}
		}
	}
}

func (p *pool) stop() {
	if p.stopped {
		return
	}
	p.stopped = true
	p.cancel()
	p.wg.Wait()
}

// multi is one epoch over a pool, with PyTorch's bookkeeping: send
// index, receive index, and a reorder buffer for out-of-order results.
type multi struct {
	l                *Loader
	ctx              context.Context
	p                *pool
	epoch            int
	batches          [][]int
	sendIdx, rcvdIdx int
	reorder          map[int]result
	owned            bool // a non-persistent pool, stopped with the epoch
}

func (l *Loader) newMulti(ctx context.Context, p *pool, epoch int, batches [][]int) *multi {
	it := &multi{l: l, ctx: ctx, p: p, epoch: epoch, batches: batches, reorder: make(map[int]result), owned: !l.cfg.Persistent}
	for i := 0; i < l.cfg.Prefetch*l.cfg.Workers; i++ {
		it.put()
	}
	return it
}

// put dispatches the next batch round-robin, if the epoch has one left.
func (it *multi) put() {
	if it.sendIdx >= len(it.batches) {
		return
	}
	w := it.sendIdx % len(it.p.queues)
	it.p.queues[w] <- task{epoch: it.epoch, index: it.sendIdx, samples: it.batches[it.sendIdx]}
	it.sendIdx++
	if o := int64(it.sendIdx - it.rcvdIdx); o > it.l.maxOutstand.Load() {
		it.l.maxOutstand.Store(o)
	}
}

func (it *multi) next() (result, int, bool, error) {
	depth := len(it.p.out) + len(it.reorder)
	for {
		if r, ok := it.reorder[it.rcvdIdx]; ok {
			delete(it.reorder, it.rcvdIdx)
			it.rcvdIdx++
			it.put() // refill when the training loop takes a batch
			return r, depth, true, r.err
		}
		if it.rcvdIdx >= len(it.batches) {
			return result{}, depth, false, nil
		}
		select {
		case r := <-it.p.out:
			if r.epoch != it.epoch {
				it.release(r) // cannot happen: epochs drain; be safe
				continue
			}
			it.reorder[r.index] = r
		case <-it.ctx.Done():
			return result{}, depth, false, it.ctx.Err()
		}
	}
}

func (it *multi) release(r result) {
	if r.buf == nil {
		return
	}
	if it.p.pinned != nil {
		it.p.pinned <- r.buf
	} else {
		it.l.bufs.Put(r.buf)
	}
}

func (it *multi) close() {
	for _, r := range it.reorder {
		it.release(r)
	}
	if it.owned {
		it.p.stop()
	}
}

func seconds(d time.Duration) *float64 { s := d.Seconds(); return &s }
func intp(i int) *int                  { return &i }

package loader

import (
	"sync"
	"time"
)

// Buckets are the histogram upper bounds, in seconds, for wait and step
// times: 0.25 ms to 10 s, dense where input stalls live.
var Buckets = []float64{0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// Histogram is a cumulative histogram in Prometheus's shape: Counts[i] is
// the number of observations ≤ Buckets[i]; Count includes those above.
type Histogram struct {
	Counts []uint64
	Sum    float64 // seconds
	Count  uint64
}

func newHistogram() Histogram { return Histogram{Counts: make([]uint64, len(Buckets))} }

func (h *Histogram) observe(sec float64) {
	for i, b := range Buckets {
		if sec <= b {
			h.Counts[i]++
		}
	}
	h.Sum += sec
	h.Count++
}

func (h Histogram) clone() Histogram {
	h.Counts = append([]uint64(nil), h.Counts...)
	return h
}

// Batch is what the training loop saw of one batch.
type Batch struct {
	Seq        uint64        // 1, 2, 3 … over the whole run
	Epoch      int           // from 1
	Index      int           // within the epoch, from 0
	Worker     int           // who loaded it; -1 for the training loop itself
	Wait       time.Duration // the training loop blocked for it
	Step       time.Duration // from receiving it to asking for the next
	Fetch      time.Duration // the worker's time on it (read + decode + overhead)
	Read       time.Duration
	Decode     time.Duration
	Bytes      int64
	Samples    int
	QueueDepth int // batches ready and waiting when the training loop asked
	Time       time.Time
}

// recentCap bounds the batches kept for timelines: memory must not grow
// with run time.
const recentCap = 512

// Stats accumulates what the loader did. Safe for concurrent use.
type Stats struct {
	mu         sync.Mutex
	start      time.Time
	batches    uint64
	samples    uint64
	bytesRead  uint64
	readSec    float64
	decodeSec  float64
	wait, step Histogram
	queueDepth int
	epoch      int
	// askedAt is when the training loop asked for the batch it waits for
	// now (zero while it is not waiting), askedFirst that the batch is its
	// epoch's first.
	askedAt    time.Time
	askedFirst bool
	firstBatch []time.Duration // per epoch: time from epoch start to its first batch
	recent     []Batch         // ring
	next       int
}

func newStats() *Stats {
	return &Stats{start: time.Now(), wait: newHistogram(), step: newHistogram(), recent: make([]Batch, 0, recentCap)}
}

func (s *Stats) record(b Batch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches++
	b.Seq = s.batches
	s.samples += uint64(b.Samples)
	s.bytesRead += uint64(b.Bytes)
	s.readSec += b.Read.Seconds()
	s.decodeSec += b.Decode.Seconds()
	s.wait.observe(b.Wait.Seconds())
	s.step.observe(b.Step.Seconds())
	s.queueDepth = b.QueueDepth
	if len(s.recent) < recentCap {
		s.recent = append(s.recent, b)
	} else {
		s.recent[s.next] = b
		s.next = (s.next + 1) % recentCap
	}
}

// asking says the training loop asked for a batch at t (its epoch's
// first) and waits for it; the zero time, that it has it.
func (s *Stats) asking(t time.Time, first bool) {
	s.mu.Lock()
	s.askedAt, s.askedFirst = t, first
	s.mu.Unlock()
}

func (s *Stats) startEpoch(n int) {
	s.mu.Lock()
	s.epoch = n
	s.mu.Unlock()
}

func (s *Stats) firstBatchOfEpoch(d time.Duration) {
	s.mu.Lock()
	s.firstBatch = append(s.firstBatch, d)
	s.mu.Unlock()
}

// Snapshot is a copy of the loader's counters at one moment.
type Snapshot struct {
	Start         time.Time
	Batches       uint64
	Samples       uint64
	BytesRead     uint64
	ReadSeconds   float64 // summed over workers: can exceed wall time
	DecodeSeconds float64
	Wait, Step    Histogram
	QueueDepth    int
	Epoch         int
	// Waiting is how long the training loop has waited for the batch it
	// asked for, at the snapshot; 0 while it is not waiting, and while it
	// waits less than HangWait for its epoch's first batch.
	Waiting time.Duration
	// FirstBatch is, per epoch, the time from the epoch's start to its
	// first batch: the start-up stall, and for later epochs the
	// epoch-boundary stall.
	FirstBatch []time.Duration
	// Recent are the latest batches (at most 512), oldest first.
	Recent []Batch
}

// HangWait is how long a wait for an epoch's first batch lasts before
// it counts as a wait under way (Snapshot.Waiting): until then it is the
// epoch's start-up, which FirstBatch says once the batch comes; past it,
// a hang. The figure's one home is sample.HangWait, which this package
// does not import (it imports nothing of gpuwatch): session/embedded's
// TestLoaderHangWaitIsTheWatchers holds the two equal.
const HangWait = 10 * time.Second

// waitingSince is the wait since t, 0 for the zero time and for an
// epoch's first batch (first) awaited less than HangWait.
func waitingSince(t time.Time, first bool) time.Duration {
	if t.IsZero() {
		return 0
	}
	w := max(0, time.Since(t))
	if first && w < HangWait {
		return 0
	}
	return w
}

// Snapshot copies the counters.
func (s *Stats) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := Snapshot{
		Start: s.start, Batches: s.batches, Samples: s.samples, BytesRead: s.bytesRead,
		ReadSeconds: s.readSec, DecodeSeconds: s.decodeSec,
		Wait: s.wait.clone(), Step: s.step.clone(), QueueDepth: s.queueDepth, Epoch: s.epoch,
		Waiting:    waitingSince(s.askedAt, s.askedFirst),
		FirstBatch: append([]time.Duration(nil), s.firstBatch...),
		Recent:     make([]Batch, 0, len(s.recent)),
	}
	out.Recent = append(out.Recent, s.recent[s.next:]...)
	out.Recent = append(out.Recent, s.recent[:s.next]...)
	return out
}

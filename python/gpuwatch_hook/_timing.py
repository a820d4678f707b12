"""Timing the training loop: each batch's wait (how long next() blocked)
and step (how long the loop worked on the batch before asking again), the
DataLoader's knobs, and the metrics page that gpuwatch reads."""

from __future__ import annotations

import bisect
import collections
import os
import threading
import weakref
from typing import Any, Dict, List, Optional, Tuple

from . import _ceiling, _cost, _env, _gpuprofile, _h2d, _payload, _repeats, _settings, _stages, _syncs, _torch

#: Histogram bounds in seconds: the embedded loader's (loader/stats.go).
BUCKETS = (0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)

#: Seconds between two readings of the batches ready (the queue depth):
#: each costs the loop's thread a system call (a poll of the workers'
#: pipe), 20-30 µs on the dev VM in a real DataLoader loop; the page's
#: gauge is the last reading, and the fastest refresh (--interval) is
#: 100 ms. At 20 ms it was 5-10 µs of the loop's 35 µs a batch.
DEPTH_EVERY = 0.1

#: Seconds between two of the loop thread's drains of the batches it took
#: into the counters (Stats.drain). Each batch only queues its figures:
#: in a real DataLoader loop every line the hook runs after a batch's
#: arrival runs cold (the loop's thread has just woken), about a µs a
#: line on the dev VM, and the counters' lock, histograms and stage sums
#: were half of the loop's own 49 µs a batch. A reader (the page) drains
#: first, so what it shows is never behind.
DRAIN_EVERY = 0.1

#: Seconds a wait for an epoch's first batch lasts before the page says
#: it as a wait under way (gpuwatch_loader_waiting_seconds): before, it
#: is the epoch's start-up, which first_batch says once the batch comes;
#: past it, a hang (Go's sample.HangWait, sample/frame.go: a test there
#: reads this line).
HANG_SEC = 10.0

#: Seconds a step under way is believed (gpuwatch_loader_stepping_seconds)
#: before any step as long has completed: past it, or past ten times the
#: longest step completed if longer, the loop is taken to have stopped
#: iterating while it keeps its iterator, and the page says no step.
STEP_BELIEVED = 60.0


class Histogram:
    __slots__ = ("counts", "count", "sum")

    def __init__(self) -> None:
        self.counts = [0] * len(BUCKETS)  # per bucket, not cumulative
        self.count = 0
        self.sum = 0.0

    def observe(self, v: float) -> None:
        i = bisect.bisect_left(BUCKETS, v)  # first bound ≥ v: Prometheus's le
        if i < len(BUCKETS):
            self.counts[i] += 1
        self.count += 1
        self.sum += v

    def copy(self) -> "Histogram":
        c = Histogram()
        c.counts, c.count, c.sum = list(self.counts), self.count, self.sum
        return c


#: A look's elements per sample off the first look's by over this share
#: is a batch of another shape; VARY_LOOKS such looks, and VARY_SHARE of
#: the looks, make the shapes vary (Stats.shapes_vary).
SHAPE_TOLERANCE = 0.05
VARY_LOOKS = 3
VARY_SHARE = 0.25


def lead_shape(batch: Any) -> Optional[Tuple[int, ...]]:
    """The first two dimensions of a batch's lead tensor or array
    (_repeats.lead), or None when it has none."""
    x = _repeats.lead(batch)
    if x is None:
        return None
    try:
        return tuple(int(d) for d in x.shape[:2])
    except (TypeError, ValueError, IndexError):
        return None


def native_tid() -> Optional[int]:
    """The calling thread's OS thread ID (as /proc/PID/task lists it), or
    None where Python cannot tell."""
    try:
        return threading.get_native_id()
    except (AttributeError, OSError):
        return None


class Stats:
    """What the hook has measured. The training thread writes it and the
    server's threads read it; every field is read and written under lock,
    but the loop thread's own: the queue of batches not yet drained
    (pending, a deque: appended without the lock, popped under it), taken
    and the times of its next drain, look and windows."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.wait = Histogram()
        self.step = Histogram()
        self._batches = 0
        self._samples = 0
        self._sized = False  # some batch's size was known
        self._queue_depth: Optional[int] = None
        # The batches taken and not yet drained into the counters above:
        # (wait, samples or None, queue depth or None, step or None). The
        # loop's thread appends without the lock (a deque's append and
        # popleft are atomic); drain() pops under it.
        self.pending: collections.deque = collections.deque()
        self._drain_at: Optional[float] = None  # when the loop's thread drains next (None: at the next batch)
        self.taken = 0  # batches taken: the loop's thread's own count (read there only)
        self.workers: Optional[int] = None
        self.prefetch: Optional[int] = None
        self.persistent: Optional[bool] = None
        self.splits_by_worker: Optional[bool] = None
        # Whether an IterableDataset's workers yield the same data, as
        # their first batches measured it (_repeats; None: not told), and
        # the watch of an epoch's first batches (the loop's thread's).
        self.repeats: Optional[bool] = None
        self._repeat_watch: Optional[_repeats.Watch] = None
        self.pin_memory: Optional[bool] = None
        self.loader_batch: Optional[int] = None  # the loader's batch_size (None: not a DataLoader's, or batches by a batch_sampler)
        self.batches_per_epoch: Optional[int] = None
        # By dataset, the batches of its last epoch that ran to its end
        # (StopIteration), for a DataLoader with no len() (an
        # IterableDataset): its epoch's length as seen, where len() says
        # none. By dataset, not by loader: a script that builds its
        # DataLoader anew every epoch keeps the dataset, and a validation
        # loader beside it has its own.
        self._ran_out: "weakref.WeakKeyDictionary[Any, int]" = weakref.WeakKeyDictionary()
        # The iterator whose epoch's length is such a count: another's batch
        # (a loop resumed after a validation loader's epoch inside its own)
        # leaves the length unknown, not the other's.
        self._seen_it: Optional["weakref.ref[Any]"] = None
        self.worker_pids: Tuple[int, ...] = ()
        self.loop_tid: Optional[int] = None  # the OS thread that iterates: the training loop
        self.epochs = 0  # epochs started
        # Epochs over a DataLoader built anew, the last epoch's gone: a
        # script that builds a new one every epoch starts new workers
        # every epoch whatever persistent_workers says (it keeps workers
        # across one DataLoader's epochs only). A train and a val loader
        # kept, or an eval loader made for each evaluation while the
        # training loader lives, are not counted: the last epoch's loader
        # is still there, or the new one was iterated before. None once a
        # loader could not be told apart (not weakly referenced).
        self.rebuilt_epochs: Optional[int] = 0
        self._iterated: "weakref.WeakSet[Any]" = weakref.WeakSet()
        self._last: Optional["weakref.ref[Any]"] = None  # the last epoch's DataLoader
        # The DataLoader timed (timed_loader): the training one, of the
        # most batches an epoch; its length (None: none, an iterable's).
        self._main: Optional["weakref.ref[Any]"] = None
        self._main_it: Optional["weakref.ref[Any]"] = None  # its epoch's iterator: a loader made in the for statement is gone while it runs
        self._main_len: Optional[int] = None
        self.stall_sum = 0.0  # epochs after the first: start to first batch, seconds
        # The loop's time between the timed loader's epochs: from an
        # epoch's end (its StopIteration) to the next epoch's iter() —
        # validation, a checkpoint, whatever the script does there. No
        # loader knob moves it, and each epoch pays it (docs/diagnosis.md,
        # "Between epochs"). _ended_at: the last epoch's end, until the
        # next starts (None: none ended, or the loop broke out of it). The
        # loop's thread writes it; the sums are under the lock.
        # _ended_len: the batches an epoch of the loader that ended, whose
        # next epoch alone ends the gap.
        self.gap_sum, self.gaps = 0.0, 0
        self._ended_at: Optional[float] = None
        self._ended_len: Optional[int] = None
        # _iter_at: a DataLoader's iter() under way since (None: none).
        # The gap summed ends where the next epoch's iter() began, so the
        # gap read under way stops there too: the clock they make never
        # steps back, and the workers' start-up inside iter() is the
        # epoch's stall (first_batch), not time between epochs.
        self._iter_at: Optional[float] = None
        # The waits under way inside next(), by iterator (Clock): when it
        # asked (its clock) and whether for its epoch's first batch. Each
        # iterator sets and pops its own key, on its thread; the page
        # copies the values (single dict operations: no lock).
        self.waiting_since: Dict[Any, Tuple[float, bool]] = {}
        # The step under way (stepping()): when the loop was last handed a
        # batch, by any iterator (None: it asked for the next since, or the
        # epoch ended); and the longest step seen, which bounds how long
        # one is believed. The loop's thread writes both.
        self.handed_at: Optional[float] = None
        self.longest_step = 0.0
        self.stalls = 0
        self.errors = 0
        # Stage times (_stages): seconds and batches per stage.
        self.stage_sum = dict.fromkeys(_stages.STAGES, 0.0)
        self.stage_n = dict.fromkeys(_stages.STAGES, 0)
        # The ceiling's measurement (_ceiling), once asked for; the loop's
        # thread reads it on every next(): None costs one attribute read.
        self.ceiling: Optional[_ceiling.Ceiling] = None
        # The GPU's time per step (_gpuprofile), once asked for; the loop's
        # thread reads it on every batch: None costs one attribute read.
        self.gpu_profile: Optional[_gpuprofile.GPUProfile] = None
        # The batches looked at (_payload): counters, and the last look.
        self.looked = 0
        self.look_bytes = self.look_f64 = self.look_pinned = 0
        self.token_slots = self.padding_slots = 0
        self.last_look: Optional[_payload.Look] = None
        # The batches' elements per sample (all their tensors' elements ÷
        # the batch's samples) at the first look, the looks that read one,
        # and those off it by over SHAPE_TOLERANCE: sequences padded per
        # batch, images of several sizes. The FLOPs, counted on one step,
        # are then not every step's (a review: a bucketed transformer read
        # its shortest batch's, 10× below the epoch's mean). A short last
        # batch keeps its elements per sample; a look now and then off
        # the first (a layout whose first dimension is not the samples')
        # does not make the shapes vary: VARY_LOOKS and VARY_SHARE of them.
        self.first_per_sample: Optional[float] = None
        self.looks_sized = 0
        self.looks_off = 0
        self.shapes_vary = False
        self._look_at: Optional[float] = None  # when the next look is due; None: at the next batch
        # The copies to the GPU of the batches looked at (_h2d).
        self.h2d = _h2d.Figures()
        # What the job already does (_settings): the last reading, the
        # window open now (the loop's thread opens and closes it), and when
        # the next opens (None: at the next batch).
        self.settings: Optional[_settings.Settings] = None
        self.window: Optional[_settings.Window] = None
        self._settings_at: Optional[float] = None
        self.eval_rereads = 0  # readings of an evaluation's step followed at the next batch
        self.last_n: Optional[int] = None  # the samples of the batch taken last (None: not known)
        # The loader's batch layout (samples_of): 0 batch-major, 1 time-major,
        # None not read yet; the last batch's vote; the batches taken when
        # the epoch began; the loader it is of.
        self._layout: Optional[int] = None
        self._vote: Optional[int] = None
        self._epoch_taken = 0
        self._layout_of: Any = None
        # Host syncs inside the step (_syncs): every window's counts, the
        # window open now (the loop's thread opens and closes it), and when
        # the next opens (None: at batch _syncs.FIRST_AT).
        self.syncs = _syncs.Counts()
        self.sync_window: Optional[_syncs.Window] = None
        self._syncs_at: Optional[float] = None

    def record(self, wait: float, batch: Any, depth: Optional[int], step: Optional[float] = None, now: Optional[float] = None) -> None:
        """A batch taken: its wait, the step before it (None: none
        measured), the batches ready when it was asked (None: not read
        this batch), queued for the counters (drained every DRAIN_EVERY,
        with the stage figures taken inline and the copies' times); then
        what is due (a look, the windows). now is the batch's arrival by
        _env.clock (read here when not given). Called on the loop's
        thread."""
        try:
            n = self.samples_of(batch)
        except Exception:  # a batch type with odd attributes: size unknown
            n = None
        if self._repeat_watch is not None and not self._repeat_watch.done:
            _cost.cost.timed("payload", self.watch_repeats, batch)
        self.pending.append((wait, n, depth, step))
        self.taken += 1
        self.last_n = n
        if now is None:
            now = _env.clock()
        if self._drain_at is None or now >= self._drain_at:
            self._drain_at = now + DRAIN_EVERY
            _cost.cost.timed("loop", self._loop_drain)
        if self._look_at is None or now >= self._look_at:  # only the loop thread reads and writes _look_at
            self._look_at = now + _payload.LOOK_EVERY
            _cost.cost.timed("payload", self.look_at, batch)
        if self._settings_at is None or now >= self._settings_at:
            self._settings_at = now + _settings.READ_EVERY
            _cost.cost.timed("settings", self.next_settings)
        self.count_syncs(now)

    def watch_repeats(self, batch: Any) -> None:
        """Adds an epoch's batch to the watch of its workers' repeats
        (_repeats), while it watches. Called on the loop's thread."""
        rw = self._repeat_watch
        if rw is None or rw.done:
            return
        rw.add(batch)
        if rw.done:
            with self.lock:
                self.repeats = rw.result

    def _loop_drain(self) -> None:
        """The loop's thread's drain, every DRAIN_EVERY: the batches
        queued, the stage figures timed inline (this loop's: only its
        own thread takes them) and the copies' times."""
        inline = _stages.inline.take()
        if inline is not None:
            self.add_stages((("getitem", inline[0], inline[2]), ("collate", inline[1], inline[2])))
        self.drain()
        _h2d.poll()

    def drain(self) -> None:
        """Adds the batches taken since the last drain (record) to the
        counters, under the lock: the loop's thread every DRAIN_EVERY, a
        reader before it reads."""
        if not self.pending:
            return
        with self.lock:
            self._drain_locked()

    def _drain_locked(self) -> None:
        """drain() with the lock held. A batch whose figures fail to add
        counts in errors and the rest go on."""
        pending = self.pending
        while True:
            try:
                wait, n, depth, step = pending.popleft()
            except IndexError:
                return
            try:
                self.wait.observe(wait)
                self._batches += 1
                if n is not None:
                    self._samples += n
                    self._sized = True
                if depth is not None:  # read this batch (DEPTH_EVERY): else the last reading stands
                    self._queue_depth = depth
                if step is not None:
                    self._add_step(step)
            except Exception:  # never into the training loop
                self.errors += 1

    def _drained(self, name: str) -> Any:
        """A counter's value, the queue drained first."""
        self.drain()
        with self.lock:
            return getattr(self, name)

    #: Batches taken, samples in those whose size was known, whether some
    #: size was, the batches ready when the loop last read them: each
    #: read drains the queue first.
    batches = property(lambda self: self._drained("_batches"))
    samples = property(lambda self: self._drained("_samples"))
    sized = property(lambda self: self._drained("_sized"))
    queue_depth = property(lambda self: self._drained("_queue_depth"))

    def samples_of(self, batch: Any) -> Optional[int]:
        """The samples in a batch: its lead tensor's batch dimension, the
        first unless the loader's batches read time-major (sequence ×
        batch: pad_sequence's default) by its batch_size, the one of the
        two dimensions that is it. The layout is read once and kept, so
        that a short last batch counts its own samples (counted by its
        length, a time-major job of short epochs read twice its
        samples/s; a review). Without a batch_size (a batch_sampler's
        batches) the first: a dimension that stays while the other varies
        is a time-major batch's, or the features of rows in batches of any
        size."""
        shape = lead_shape(batch)
        if not shape:
            return None
        if len(shape) < 2:
            return shape[0]
        b = self.loader_batch
        if self._layout is None and b:
            vote = 0 if shape[0] == b != shape[1] else 1 if shape[1] == b != shape[0] else None
            # Not from an epoch's last batch, which may be short (a
            # batch-major (10, 64) of sequences 64 long read time-major);
            # where the epoch's length is unknown, two batches in a row
            # agreeing.
            per, i = self.batches_per_epoch, self.taken - self._epoch_taken
            last = per is not None and i >= per - 1
            if vote is not None and not last and (per is not None or vote == self._vote):
                self._layout = vote
            self._vote = vote
        return shape[self._layout or 0]

    def look_at(self, batch: Any) -> None:
        """A look inside the batch (_payload), and its copies watched."""
        found: List[Tuple[str, Any]] = []
        self.record_look(_payload.look(batch, found, self._layout == 1), self.last_n)  # record() counted it
        _h2d.watch([x for _, x in found], self)

    def next_settings(self) -> None:
        """The settings' window closed, and the next opened."""
        self.close_settings()
        self.window = _settings.Window.open()

    def count_syncs(self, now: float) -> None:
        """A batch taken: the syncs' window counts one more step, and
        closes after _syncs.STEPS; one opens every _syncs.READ_EVERY
        seconds. Called on the loop's thread."""
        w = self.sync_window
        if w is not None:
            if w.step():
                _cost.cost.timed("syncs", self.end_syncs)
            return
        due = self._syncs_at
        if due is None:
            if self.taken < _syncs.FIRST_AT:
                return
        elif now < due:
            return
        self._syncs_at = now + _syncs.READ_EVERY
        self.sync_window = _cost.cost.timed("syncs", _syncs.Window.open)

    def end_syncs(self) -> None:
        """Closes the syncs' window, if one is open, keeping the steps it
        saw: the epoch ended, or the loop let go of its loader."""
        w, self.sync_window = self.sync_window, None
        if w is None:
            return
        _syncs.close_window(w)
        if w.steps:
            with self.lock:
                self.syncs.add(w)

    def end_gpu_profile(self) -> None:
        """Ends a GPU recording under way with the steps it has (the loop
        left with a break in it: no next batch will end it)."""
        gp = self.gpu_profile
        if gp is not None and gp.state == _gpuprofile.RECORDING:
            _cost.cost.timed("gpu_profile", gp.epoch_ended, _env.clock())

    def close_settings(self) -> None:
        """Closes the settings' window, if one is open, and keeps its
        reading (_settings). Called on the loop's thread."""
        w, self.window = self.window, None
        if w is None:
            return
        s = w.close()
        if s.forward and self.last_n:
            # The loader's batch, the one the step took: a forward's first
            # dimension is a micro-batch's, or a sequence-first model's
            # length.
            s.batch_size = self.last_n
        with self.lock:
            s.merge_forward(self.settings)
            self.settings = s
        if (s.training is False or w.flops_failed) and self.eval_rereads < _settings.EVAL_REREADS:
            # An evaluation's forward (a sanity check, a validation before
            # training), or a forward that raised (a batch skipped on an
            # OOM): the next batch reads again, until a training step is
            # read whole (its FLOPs are 3× the evaluation's) or
            # EVAL_REREADS have read again.
            self.eval_rereads += 1
            self._settings_at = None

    def record_look(self, lk: Optional[_payload.Look], samples: Optional[int] = None) -> None:
        """Adds a look at a batch (None: it held no tensor, and counts) of
        samples samples (samples_of; None unknown)."""
        with self.lock:
            self.looked += 1
            if lk is None:
                return
            self.look_bytes += lk.bytes
            self.look_f64 += lk.float64_bytes
            self.look_pinned += lk.pinned_bytes
            self.token_slots += lk.token_slots
            self.padding_slots += lk.padding_slots
            self.last_look = lk
            # Samples unknown (a batch led by a list of strings): the
            # batch's elements, whose short last batch VARY_LOOKS absorbs.
            self._see_shapes(lk, samples or 1)

    def _see_shapes(self, lk: _payload.Look, samples: int) -> None:
        """record_look's reading of the batch's shape (shapes_vary), under
        the lock."""
        per = 0.0
        for t in lk.tensors:
            n = 1
            for d in t.shape:
                n *= d
            per += n
        per /= samples
        if per <= 0:
            return
        if self.first_per_sample is None:
            self.first_per_sample, self.looks_sized = per, 1
            return
        self.looks_sized += 1
        if abs(per - self.first_per_sample) > SHAPE_TOLERANCE * self.first_per_sample:
            self.looks_off += 1
        # Once met, kept: the count's batch is not every step's, whatever
        # later epochs do.
        self.shapes_vary = self.shapes_vary or self.looks_off >= VARY_LOOKS and self.looks_off >= VARY_SHARE * self.looks_sized

    def h2d_copy(self, n: int, pinned: bool, non_blocking: bool, host: float, device: Optional[int], first_of_batch: bool) -> None:
        """Adds a copy to the GPU of a looked-at batch's tensor (_h2d)."""
        with self.lock:
            h = self.h2d
            h.batches += first_of_batch
            h.copies += 1
            h.bytes += n
            h.pinned_bytes += n if pinned else 0
            h.non_blocking_bytes += n if non_blocking else 0
            h.host_seconds += host
            h.device = device

    def h2d_device(self, n: int, seconds: float) -> None:
        """Adds a copy's time on the GPU (_h2d)."""
        with self.lock:
            self.h2d.device_seconds += seconds
            self.h2d.device_bytes += n

    def add_stages(self, figs: Any) -> None:
        """Adds (stage, seconds, batches) figures."""
        with self.lock:
            for stage, sec, n in figs:
                self.stage_sum[stage] += sec
                self.stage_n[stage] += n

    def record_carried(self, c: "_stages.Carried") -> None:
        """Adds the stage times a batch carried from its worker."""
        n = c.batches
        with self.lock:
            for stage, v, k in (("getitem", c.getitem, n), ("collate", c.collate, n), ("handover", c.handover, 1), ("take", c.take, 1), ("pin", c.pin, 1)):
                if v is not None:
                    self.stage_sum[stage] += v
                    self.stage_n[stage] += k

    def record_step(self, step: float) -> None:
        """A step whose next() gave no batch (the epoch's end, the
        loader's error); the others are recorded with their batch."""
        with self.lock:
            self._add_step(step)

    def _add_step(self, step: float) -> None:
        """Adds a step; the lock is held."""
        self.step.observe(step)
        self.stage_sum["step"] += step
        self.stage_n["step"] += 1

    def epoch_ended(self, at: float) -> None:
        """The timed loader's epoch ran to its end (StopIteration) at at."""
        self._ended_at, self._ended_len = at, self.batches_per_epoch

    def iter_starting(self, at: float) -> None:
        """A DataLoader's iter() begins at at (the loop's thread): until
        epoch() says whose, the gap under way reads as ended there."""
        self._iter_at = at

    def between(self) -> float:
        """Seconds the loop has been between epochs at this read (the last
        epoch ran to its end, the next has not started); 0: inside one."""
        t = self._ended_at
        if t is None:
            return 0.0
        end, i = _env.clock(), self._iter_at
        if i is not None and i >= t:
            end = min(end, i)
        return max(0.0, end - t)

    def record_stall(self, seconds: float) -> None:
        """An epoch's time from its start (iter()) to its first batch."""
        with self.lock:
            self.stage_sum["first_batch"] += seconds  # every epoch's, the first's too
            self.stage_n["first_batch"] += 1
            if self.epochs > 1:  # the first epoch's start-up is the job's start
                self.stall_sum += seconds
                self.stalls += 1

    def error(self) -> None:
        with self.lock:
            self.errors += 1

    def waiting(self) -> float:
        """The longest wait under way in next() (seconds; 0: none). A wait
        for an epoch's first batch is its start-up (first_batch says it
        once it comes) until it lasts a hang's time, HANG_SEC: workers
        that never start (a deadlocked worker_init_fn) would read idle."""
        now, out = _env.clock(), 0.0
        for t0, first in list(self.waiting_since.values()):
            if not first or now - t0 >= HANG_SEC:
                out = max(out, now - t0)
        return out

    def stepping(self) -> float:
        """The step under way: seconds since the loop was handed its last
        batch, by any of its iterators, while it has not asked for the
        next (0: none, or a wait under way). A step is counted whole when
        it ends (record); one of many seconds would leave every read
        between blind: the watcher takes this for the steps of a read
        where none ended (docs/diagnosis.md).
        A loop that stopped iterating but keeps its iterator (a loop that
        broke out of an epoch, max_steps reached) would read as stepping
        for ever: past STEP_BELIEVED seconds, or ten times the longest step
        it completed if longer, it reads 0."""
        t = self.handed_at
        if t is None or self.waiting_since:
            return 0.0
        d = _env.clock() - t
        return d if d <= max(STEP_BELIEVED, 10 * self.longest_step) else 0.0

    def set_loop_tid(self) -> None:
        tid = native_tid()
        with self.lock:
            self.loop_tid = tid

    def timed_loader(self, loader: Any, n: Optional[int], it: Any = None) -> bool:
        """Says whether loader, of n batches an epoch (None: no length),
        is the one timed: the job's training loader, the one of the most
        batches an epoch (an IterableDataset's, of no length, counts as
        the most), or the newest of equals (a loader built anew each
        epoch). A validation or test loader beside it is not timed, nor its
        knobs read: its batches, its waits and its workers are not the
        training loop's (a review: a train and a val loader's batches were
        summed, the knobs flipped between them every second, and the
        val loader's start-up read as the training loader's, promising
        +29 % from persistent_workers where it gave 3 %). The loader timed
        stays so while it or its epoch's iterator lives (`for b in
        DataLoader(...)` drops the loader at once). One that cannot be
        weakly referenced is timed, as before. Not told apart: a
        validation loader of no length beside a sized training one (it
        counts as the most), nor two of no length (the newest)."""
        try:
            main = self._main() if self._main is not None else None
            live = main is not None or (self._main_it is not None and self._main_it() is not None)
            if not live or main is loader or n is None or (self._main_len is not None and n >= self._main_len):
                self._main, self._main_len = weakref.ref(loader), n
                self._main_it = None
                if it is not None:
                    try:
                        self._main_it = weakref.ref(it)
                    except TypeError:
                        pass
                return True
            return False
        except TypeError:
            return True

    def ran_out(self, dataset: Any, batches: int) -> None:
        """An epoch over dataset ran to its end after batches batches
        (none: nothing said)."""
        if dataset is not None and batches > 0:
            try:
                self._ran_out[dataset] = batches
            except TypeError:  # not weakly referenced: not told
                pass

    def left_for_another(self) -> None:
        """A batch of another iterator than the one whose epoch's length
        was counted: that length is not its own."""
        with self.lock:
            self.batches_per_epoch, self._seen_it = None, None

    def ran_out_of(self, dataset: Any) -> Optional[int]:
        """The batches of dataset's last epoch that ran to its end; None
        where none did, or it cannot be told."""
        try:
            return self._ran_out.get(dataset) if dataset is not None else None
        except TypeError:
            return None

    def epoch(self, loader: Any, it: Any, started: Optional[float] = None) -> bool:
        """Reads a DataLoader's knobs when an epoch starts (its iterator
        holds the workers; started: the clock before iter()), where it is
        the loader timed (timed_loader), and says whether it is."""
        k = _torch.knobs(loader, it)
        if not self.timed_loader(loader, k.batches_per_epoch, it):
            self._iter_at = None  # not the timed loader's epoch: the gap runs on
            # Not timed now, though it may have been (persistent workers
            # hand back one iterator every epoch): what was attached goes.
            for name in ("_gpuwatch", "_gpuwatch_stats"):
                try:
                    vars(it).pop(name, None)
                except TypeError:
                    pass
            return False
        tid = native_tid()
        try:  # on the loop's thread only, as _iterated and _last are
            rebuilt = loader not in self._iterated and self._last is not None and self._last() is None
            self._iterated.add(loader)
            self._last = weakref.ref(loader)
        except TypeError:  # not weakly referenced, or not hashable: not told
            rebuilt = None
        with self.lock:
            self.workers, self.prefetch = k.workers, k.prefetch
            self.persistent, self.pin_memory = k.persistent, k.pin_memory
            self.splits_by_worker, self.loader_batch = k.splits_by_worker, k.batch_size
            self.batches_per_epoch, self.worker_pids = k.batches_per_epoch, k.worker_pids
            self._seen_it = None
            if k.batches_per_epoch is None:  # no len(): its dataset's last epoch run to its end says it
                self.batches_per_epoch = self.ran_out_of(getattr(loader, "dataset", None))
                if self.batches_per_epoch is not None:
                    try:
                        self._seen_it = weakref.ref(it)
                    except TypeError:
                        self.batches_per_epoch = None
            self.loop_tid = tid
            self.epochs += 1
            ended, self._ended_at, self._iter_at = self._ended_at, None, None
            # Another loader's epoch taken for the training one's (the
            # training loader built anew each epoch is gone while its
            # validation loader runs): no gap of the job's is measured.
            same = self.batches_per_epoch == self._ended_len
            if ended is not None and started is not None and started >= ended and same:
                self.gap_sum += started - ended
                self.gaps += 1
            if rebuilt is None or self.rebuilt_epochs is None:
                self.rebuilt_epochs = None
            elif rebuilt:
                self.rebuilt_epochs += 1
        self._look_at = None  # each epoch's first batch is looked at
        self._epoch_taken = self.taken
        rw = self._repeat_watch
        if rw is None and k.splits_by_worker is not None and (k.workers or 0) >= 2:
            # An IterableDataset's workers: its first epoch's first batches
            # say whether they repeat each other's data. Once.
            self._repeat_watch = _repeats.Watch(k.workers)
        elif rw is not None:
            rw.done = True  # an epoch too short to tell: not judged
        try:
            same = self._layout_of is not None and self._layout_of() is loader
            self._layout_of = weakref.ref(loader)
        except TypeError:  # not weakly referenced: read anew each epoch
            same, self._layout_of = False, None
        if not same:  # another loader's batches: their layout read anew
            self._layout, self._vote = None, None
        if k.workers:  # its workers' batches carry their stage times here (_stages)
            attach(it, "_gpuwatch_stats", self)
        return True

    def ask_ceiling(self, seconds: float) -> Tuple[bool, str]:
        """Starts measuring the ceiling (_ceiling) with a replay of seconds,
        unless a measurement is under way: (started, why not)."""
        with self.lock:
            c = self.ceiling
            if c is not None and c.state not in (_ceiling.DONE, _ceiling.REFUSED):
                return False, "the ceiling is being measured (%s)" % c.state
            self.ceiling = _ceiling.Ceiling(seconds)
            return True, ""

    def ask_gpu_profile(self, steps: int, warm_at: int = 0) -> Tuple[bool, str]:
        """Records the GPU's time over the next steps (_gpuprofile), from
        the loop's warm_at-th batch on, unless a recording is under way:
        (started, why not)."""
        with self.lock:
            g = self.gpu_profile
            if g is not None and g.busy():
                return False, "the GPU's time is being recorded (%s)" % g.state
            self.gpu_profile = _gpuprofile.GPUProfile(steps, warm_at)
            return True, ""

    def render(self) -> bytes:
        with self.lock:
            self._drain_locked()  # the page is one snapshot: the queue drained inside it
            wait, step = self.wait.copy(), self.step.copy()
            batches, samples, sized = self._batches, self._samples, self._sized
            depth, workers, prefetch, pids = self._queue_depth, self.workers, self.prefetch, self.worker_pids
            persistent, pin, per_epoch = self.persistent, self.pin_memory, self.batches_per_epoch
            splits, repeats = self.splits_by_worker, self.repeats
            epochs, stall_sum, stalls = self.epochs, self.stall_sum, self.stalls
            # The gap under way with the sum: the two add up to a clock
            # that only runs forward (epoch() moves one into the other
            # under the lock).
            gap_sum, gaps, between = self.gap_sum, self.gaps, self.between()
            rebuilt_epochs = self.rebuilt_epochs
            tid, errors = self.loop_tid, self.errors
            stages = [(k, self.stage_sum[k], self.stage_n[k]) for k in _stages.STAGES if self.stage_n[k]]
            looked = (self.looked, self.look_bytes, self.look_f64, self.look_pinned, self.token_slots, self.padding_slots)
            last = self.last_look
            ceiling = self.ceiling
            gpu_profile = self.gpu_profile
            h2d = self.h2d.copy()
            settings, shapes_vary = self.settings, self.shapes_vary
            syncs = self.syncs.copy() if self.syncs.windows else None
        waiting, stepping = self.waiting(), self.stepping()
        out: List[str] = []
        put = out.append

        def histogram(name: str, help_: str, h: Histogram) -> None:
            put("# HELP %s %s\n# TYPE %s histogram\n" % (name, help_, name))
            cum = 0
            for b, c in zip(BUCKETS, h.counts):
                cum += c
                put('%s_bucket{le="%s"} %d\n' % (name, fmt(b), cum))
            put('%s_bucket{le="+Inf"} %d\n%s_sum %s\n%s_count %d\n' % (name, h.count, name, fmt(h.sum), name, h.count))

        def one(name: str, typ: str, help_: str, v: Any) -> None:
            put("# HELP %s %s\n# TYPE %s %s\n%s %s\n" % (name, help_, name, typ, name, fmt(v)))

        histogram("gpuwatch_loader_wait_seconds", "Time the training loop blocked waiting for the next batch.", wait)
        histogram("gpuwatch_loader_step_seconds", "Time between receiving a batch and asking for the next (the training step).", step)
        one("gpuwatch_loader_batches_total", "counter", "Batches handed to the training loop.", batches)
        if sized:
            one("gpuwatch_loader_samples_total", "counter", "Samples handed to the training loop.", samples)
        if depth is not None:
            one("gpuwatch_loader_queue_depth", "gauge", "Batches ready and waiting when the training loop last asked.", depth)
        one("gpuwatch_loader_waiting_seconds", "gauge", "How long the training loop has waited for the batch it asked for, at this read; 0 while it is not waiting, and while it waits less than 10 s for its epoch's first batch (its start-up).", waiting)
        one("gpuwatch_loader_stepping_seconds", "gauge", "How long the training loop's step under way has run (since it was handed its last batch) at this read; 0 while it waits for a batch, between epochs, and past 60 s (or ten times the longest step) without a batch asked for: a loop that stopped iterating.", stepping)
        if workers is not None:
            one("gpuwatch_loader_workers", "gauge", "Loader workers (num_workers).", workers)
        if prefetch is not None:
            one("gpuwatch_loader_prefetch", "gauge", "Batches prefetched per worker (prefetch_factor).", prefetch)
        if persistent is not None:
            one("gpuwatch_loader_persistent_workers", "gauge", "1 when the workers are kept across epochs (persistent_workers).", int(persistent))
        if pin is not None:
            one("gpuwatch_loader_pin_memory", "gauge", "1 when batches are copied into page-locked memory (pin_memory).", int(pin))
        if splits is not None:
            one(
                "gpuwatch_loader_iterable_splits_by_worker",
                "gauge",
                "For an IterableDataset: 1 when its __iter__ (or the DataLoader's worker_init_fn) names get_worker_info and num_workers, so it can split its data by worker; 0 when neither does (each worker may yield every sample).",
                int(splits),
            )
        if repeats is not None:
            one(
                "gpuwatch_loader_iterable_repeats",
                "gauge",
                "For an IterableDataset's workers: 1 when the first two batches of two workers were the same bytes and the first worker's second batch was not its first (each worker yields the same samples: its data is not split by worker); 0 when they differed. Absent until measured, and where it cannot tell.",
                int(repeats),
            )
        if per_epoch is not None:
            one("gpuwatch_loader_batches_per_epoch", "gauge", "Batches in an epoch: len of the DataLoader, or where it has none (an IterableDataset) the batches of the last epoch that ran to its end.", per_epoch)
        if epochs:
            one("gpuwatch_loader_epochs_total", "counter", "Epochs started (iterations over the DataLoader).", epochs)
            if rebuilt_epochs is not None:
                one(
                    "gpuwatch_loader_rebuilt_epochs_total",
                    "counter",
                    "Epochs over a DataLoader built anew while the last epoch's was gone (a new DataLoader each epoch starts new workers each epoch, persistent_workers or not).",
                    rebuilt_epochs,
                )
            one(
                "gpuwatch_loader_epoch_stall_seconds_total",
                "counter",
                "Time from each epoch's start to its first batch, summed over the epochs after the first.",
                stall_sum,
            )
            one("gpuwatch_loader_epoch_stalls_total", "counter", "Epochs after the first whose first batch came.", stalls)
            one(
                "gpuwatch_loader_between_epochs_seconds_total",
                "counter",
                "The training loop's time between the DataLoader's epochs (from an epoch's end to the next epoch's start: validation, checkpoints), summed.",
                gap_sum,
            )
            one(
                "gpuwatch_loader_between_epochs_seconds",
                "gauge",
                "How long the training loop has been between epochs at this read (the last epoch ran to its end, the next has not started); 0 inside one.",
                between,
            )
            one("gpuwatch_loader_epoch_gaps_total", "counter", "Times between epochs summed in gpuwatch_loader_between_epochs_seconds_total: epochs that ran to their end and were followed by another.", gaps)
        if pids:
            put("# HELP gpuwatch_loader_worker_info The loader's worker processes.\n")
            put("# TYPE gpuwatch_loader_worker_info gauge\n")
            for i, pid in enumerate(pids):
                put('gpuwatch_loader_worker_info{worker="%d",pid="%d"} 1\n' % (i, pid))
        render_stages(put, stages)
        render_payload(put, looked, last)
        render_h2d(put, h2d)
        if ceiling is not None:
            render_ceiling(put, ceiling.figures())
        if gpu_profile is not None:
            render_gpu_profile(put, gpu_profile.figures())
        if settings is not None:
            render_settings(put, settings, shapes_vary)
        if syncs is not None:
            render_syncs(put, syncs)
        render_cost(put, _cost.cost.seconds())
        one("gpuwatch_hook_errors_total", "counter", "Waits or steps the hook failed to record (the loop went on).", errors)
        put("# HELP gpuwatch_loader_info The loader's process and kind.\n# TYPE gpuwatch_loader_info gauge\n")
        # tid: the training loop's OS thread, so gpuwatch can tell it from the
        # process's compute threads (OpenBLAS, OpenMP, torch intra-op).
        labels = ',tid="%d"' % tid if tid else ""
        for name, v in _env.rank_env().items():
            labels += ',%s="%d"' % (name, v)
        put('gpuwatch_loader_info{pid="%d",kind="python"%s} 1\n' % (os.getpid(), labels))
        return "".join(out).encode()


def render_cost(put: Any, parts: Optional[Dict[str, float]]) -> None:
    """The hook's own CPU time (_cost), in all and by part; nothing where
    Python has no thread clock."""
    if parts is None:
        return
    put("# HELP gpuwatch_hook_cpu_seconds_total CPU time the hook's own instrumentation took in this process (its threads' clocks; the batches' timing sampled).\n")
    put("# TYPE gpuwatch_hook_cpu_seconds_total counter\n")
    put("gpuwatch_hook_cpu_seconds_total %s\n" % fmt(sum(parts.values())))
    put("# HELP gpuwatch_hook_part_cpu_seconds_total Of that, by part (%s).\n" % ", ".join(_cost.PARTS))
    put("# TYPE gpuwatch_hook_part_cpu_seconds_total counter\n")
    for k in _cost.PARTS:
        put('gpuwatch_hook_part_cpu_seconds_total{part="%s"} %s\n' % (k, fmt(parts[k])))


def render_stages(put: Any, stages: List[Tuple[str, float, int]]) -> None:
    """The stage series: seconds and batches per stage, for the stages
    measured (docs/prometheus.md)."""
    if not stages:
        return
    put("# HELP gpuwatch_loader_stage_seconds_total Time per pipeline stage, summed over batches (workers: getitem, collate, handover; training process: take, pin, step, first_batch).\n")
    put("# TYPE gpuwatch_loader_stage_seconds_total counter\n")
    for k, sec, _ in stages:
        put('gpuwatch_loader_stage_seconds_total{stage="%s"} %s\n' % (k, fmt(sec)))
    put("# HELP gpuwatch_loader_stage_batches_total Batches (first_batch: epochs) each stage was timed for.\n")
    put("# TYPE gpuwatch_loader_stage_batches_total counter\n")
    for k, _, n in stages:
        put('gpuwatch_loader_stage_batches_total{stage="%s"} %d\n' % (k, n))


def render_h2d(put: Any, h: "_h2d.Figures") -> None:
    """The copy series (docs/prometheus.md): the looked-at batches' copies
    to the GPU, once there was one."""
    if not h.copies:
        return
    for name, help_, v in (
        ("gpuwatch_loader_h2d_batches_total", "Batches looked at whose tensors the loop copied to a GPU.", h.batches),
        ("gpuwatch_loader_h2d_copies_total", "Copies to a GPU of those batches' tensors (tensor.to(device), tensor.cuda()).", h.copies),
        ("gpuwatch_loader_h2d_bytes_total", "Bytes of those copies.", h.bytes),
        ("gpuwatch_loader_h2d_pinned_bytes_total", "Of those, bytes copied from pinned (page-locked) memory.", h.pinned_bytes),
        ("gpuwatch_loader_h2d_non_blocking_bytes_total", "Of those, bytes copied with non_blocking=True.", h.non_blocking_bytes),
        ("gpuwatch_loader_h2d_host_seconds_total", "Time the loop's thread spent in those copy calls.", h.host_seconds),
        ("gpuwatch_loader_h2d_device_seconds_total", "Time those copies took on the GPU (CUDA events), of the copies whose time was read.", h.device_seconds),
        ("gpuwatch_loader_h2d_device_bytes_total", "Bytes of the copies whose GPU time was read.", h.device_bytes),
    ):
        put("# HELP %s %s\n# TYPE %s counter\n%s %s\n" % (name, help_, name, name, fmt(v)))
    if h.device is not None:
        put("# HELP gpuwatch_loader_h2d_device The GPU the last copy went to (its CUDA index).\n# TYPE gpuwatch_loader_h2d_device gauge\n")
        put("gpuwatch_loader_h2d_device %d\n" % h.device)


def render_settings(put: Any, s: "_settings.Settings", shapes_vary: bool = False) -> None:
    """The job's settings (docs/prometheus.md, "The job's settings"): one
    info series whose labels are the settings read, and gauges;
    flops_shapes="vary" where a FLOPs count was made and the batches looked
    at have differed in shape since (Stats.shapes_vary)."""
    labels = _settings.info_labels(s)
    if shapes_vary and s.flops_per_step is not None:
        labels.append(("flops_shapes", "vary"))
    if labels:
        put("# HELP gpuwatch_job_setting_info What the job already does, read in one step's window (absent labels: not read).\n")
        put("# TYPE gpuwatch_job_setting_info gauge\n")
        put("gpuwatch_job_setting_info{%s} 1\n" % ",".join('%s="%s"' % (k, label(v)) for k, v in labels))
    for name, help_, v in _settings.gauges(s):
        put("# HELP %s %s\n# TYPE %s gauge\n%s %s\n" % (name, help_, name, name, fmt(v)))


def render_syncs(put: Any, c: "_syncs.Counts") -> None:
    """The host syncs (docs/prometheus.md, "Host syncs"): the steps
    counted, and the top sites' calls and seconds per step."""
    put("# HELP gpuwatch_job_host_sync_steps_total Steps in which the hook counted host syncs (its windows, summed).\n")
    put("# TYPE gpuwatch_job_host_sync_steps_total counter\n")
    put("gpuwatch_job_host_sync_steps_total %d\n" % c.steps)
    if c.dropped:
        put("# HELP gpuwatch_job_host_syncs_dropped_total Syncs counted at sites past the hook's bound on sites (not shown).\n")
        put("# TYPE gpuwatch_job_host_syncs_dropped_total counter\n")
        put("gpuwatch_job_host_syncs_dropped_total %d\n" % c.dropped)
    top = c.top()
    if not top:
        return
    put("# HELP gpuwatch_job_host_syncs_per_step Calls that make the host wait for the GPU (item, cpu, tolist, numpy, repr, format, float, int, bool, synchronize) per step, by the job's file:line that made them.\n")
    put("# TYPE gpuwatch_job_host_syncs_per_step gauge\n")
    for site, call, n, _ in top:
        put('gpuwatch_job_host_syncs_per_step{site="%s",call="%s"} %s\n' % (label(site), call, fmt(n)))
    put("# HELP gpuwatch_job_host_sync_seconds_per_step Time per step the host spent inside those calls (on a GPU: waiting for its queue to drain).\n")
    put("# TYPE gpuwatch_job_host_sync_seconds_per_step gauge\n")
    for site, call, _, sec in top:
        put('gpuwatch_job_host_sync_seconds_per_step{site="%s",call="%s"} %s\n' % (label(site), call, fmt(sec)))


def render_ceiling(put: Any, c: Dict[str, Any]) -> None:
    """The ceiling's series (docs/prometheus.md): its state, and each
    figure measured so far (none that was not)."""
    put("# HELP gpuwatch_loader_ceiling_info The ceiling's measurement: its state (warming, keeping, replaying, done, refused) and why it was refused.\n")
    put("# TYPE gpuwatch_loader_ceiling_info gauge\n")
    put('gpuwatch_loader_ceiling_info{state="%s",reason="%s"} 1\n' % (label(c["state"]), label(c["reason"][:200])))
    for key, help_ in (
        ("seconds", "The replay asked for, seconds."),
        ("limit_bytes", "The most bytes of batches the measurement may keep."),
        ("kept_batches", "Batches kept for the replay."),
        ("kept_bytes", "Bytes of the batches kept."),
        ("before_samples_per_second", "Samples per second the loop took from its input before the replay (the rate now)."),
        ("before_batches_per_second", "Batches per second the loop took from its input before the replay."),
        ("starving_step_seconds", "The loop's mean step before the replay, with its input as it is."),
        ("samples_per_second", "Samples per second the loop took while its input was free (kept batches replayed): the ceiling."),
        ("batches_per_second", "Batches per second the loop took while its input was free."),
        ("step_seconds", "The loop's mean step while its input was free: the step at full speed."),
        ("measured_seconds", "How long the replay lasted."),
    ):
        v = c.get(key)
        if v is not None:
            name = "gpuwatch_loader_ceiling_" + key
            put("# HELP %s %s\n# TYPE %s gauge\n%s %s\n" % (name, help_, name, name, fmt(v)))


def render_gpu_profile(put: Any, g: Dict[str, Any]) -> None:
    """The GPU's time per step (docs/prometheus.md, "The GPU's time per
    step"): its state, and what was measured (none that was not)."""
    put("# HELP gpuwatch_job_gpu_profile_info The recording of the GPU's time per step (torch.profiler): its state (waiting, recording, done, refused), the device (cuda, cpu: no GPU, the loop's ops) and why it was refused.\n")
    put("# TYPE gpuwatch_job_gpu_profile_info gauge\n")
    put('gpuwatch_job_gpu_profile_info{state="%s",device="%s",reason="%s"} 1\n' % (label(g["state"]), label(g["device"]), label(g["reason"][:200])))
    put("# HELP gpuwatch_job_gpu_profile_steps Steps recorded (asked for, until done).\n# TYPE gpuwatch_job_gpu_profile_steps gauge\n")
    put("gpuwatch_job_gpu_profile_steps %d\n" % g["steps"])
    for key, help_ in (
        ("step_seconds", "Wall time per step while the profiler recorded."),
        ("before_step_seconds", "Wall time per step over the steps just before the recording."),
        ("cost_seconds", "What the recording cost the loop: its steps' extra wall time over the steps before, and the profiler's start, stop and summary."),
        ("cost_cpu_seconds", "What the recording cost in CPU: the training process's CPU time per step while recording beyond the steps before (every thread), times the steps, and the profiler's start, stop and summary."),
        ("busy_seconds_per_step", "Time per step the GPU worked (the union of its kernels, copies and sets); on a CPU, the loop thread's ops' self time."),
        ("idle_seconds_per_step", "Time per step the GPU waited, within the recording (GPU only)."),
        ("sync_seconds_per_step", "Of the GPU's wait per step, the waits that began while the host waited for the GPU in a sync (.item(), a blocking copy, torch.cuda.synchronize()) (GPU only)."),
        ("input_seconds_per_step", "Time per step the loop spent inside the DataLoader's next(), left out of the parts (CPU only)."),
    ):
        v = g.get(key)
        if v is not None:
            name = "gpuwatch_job_gpu_profile_" + key
            put("# HELP %s %s\n# TYPE %s gauge\n%s %s\n" % (name, help_, name, name, fmt(v)))
    if g["parts"]:
        put("# HELP gpuwatch_job_gpu_time_seconds_per_step Time per step by category of work (matmul, conv, elementwise, normalization, reduction, copy, communication, other) and, for matmul and conv, precision (empty: not said by the profiler); on a CPU, the ops' self time.\n")
        put("# TYPE gpuwatch_job_gpu_time_seconds_per_step gauge\n")
        for (cat, prec), v in g["parts"]:
            put('gpuwatch_job_gpu_time_seconds_per_step{category="%s",precision="%s"} %s\n' % (cat, prec, fmt(v)))
    if g["idle_sites"]:
        put("# HELP gpuwatch_job_gpu_idle_seconds_per_step Time per step the GPU waited, by the host call that ran when the wait began (op and the job's file:line; other: the rest).\n")
        put("# TYPE gpuwatch_job_gpu_idle_seconds_per_step gauge\n")
        for after, v in g["idle_sites"]:
            put('gpuwatch_job_gpu_idle_seconds_per_step{after="%s"} %s\n' % (label(after[:200]), fmt(v)))


def render_payload(put: Any, looked: Tuple[int, ...], last: Optional[_payload.Look]) -> None:
    """The payload series: counters over the batches looked at, and the
    last look's tensors (docs/prometheus.md)."""
    n, total, f64, pinned, slots, pad = looked
    if not n:
        return
    for name, help_, v in (
        ("gpuwatch_loader_batches_looked_total", "Batches the hook looked inside (a sample).", n),
        ("gpuwatch_loader_batch_bytes_total", "Bytes of tensors and arrays in the batches looked at.", total),
        ("gpuwatch_loader_batch_float64_bytes_total", "Of those, float64 bytes.", f64),
        ("gpuwatch_loader_batch_pinned_bytes_total", "Of those, bytes in pinned (page-locked) memory.", pinned),
        ("gpuwatch_loader_batch_token_slots_total", "Elements of the token tensors read for padding, in the batches looked at.", slots),
        ("gpuwatch_loader_batch_padding_slots_total", "Of those, padding (a mask's zeros, or the pad value ending the rows).", pad),
    ):
        put("# HELP %s %s\n# TYPE %s counter\n%s %d\n" % (name, help_, name, name, v))
    if last is None or not last.tensors:
        return
    put("# HELP gpuwatch_loader_batch_tensor_bytes The last batch looked at: each tensor's bytes (its path in the batch, dtype, shape, pinned).\n")
    put("# TYPE gpuwatch_loader_batch_tensor_bytes gauge\n")
    for i, t in enumerate(last.tensors[: _payload.MAX_SHOWN]):
        pinned = "" if t.pinned is None else ',pinned="%d"' % int(t.pinned)
        put(
            'gpuwatch_loader_batch_tensor_bytes{index="%d",path="%s",dtype="%s",shape="%s"%s} %d\n'
            % (i, label(t.path), label(t.dtype), "x".join(str(d) for d in t.shape), pinned, t.bytes)
        )


def label(s: str) -> str:
    """A Prometheus label value: backslash, quote and newline escaped."""
    return s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def fmt(v: Any) -> str:
    """A number as Go's strconv.FormatFloat(v, 'g', -1, 64) writes it for
    the values here: integers without a point."""
    if isinstance(v, int):
        return str(v)
    v = float(v)
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "+Inf" if v > 0 else "-Inf"
    if v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return repr(v)


def attach(it: Any, name: str, value: Any) -> bool:
    """Sets name on a DataLoader iterator, which the hook's patches read
    back (PRIVATE in _torch lists it: the iterator's __dict__). An
    iterator without one (a torch that gave it __slots__) is not timed
    there: a warning, once, and errors_total counts each."""
    try:
        vars(it)[name] = value
        return True
    except TypeError:  # vars() of an object without __dict__
        value = value if isinstance(value, Stats) else getattr(value, "stats", None)
        if isinstance(value, Stats):
            value.error()
        _env.warn_once("%s has no __dict__: its DataLoader is not timed there (%s)" % (type(it).__name__, name))
        return False


class Clock:
    """One epoch's timing of an iterator: each next()'s wait (how long it
    blocked), the step before it (from the last batch handed out to this
    next()), the batches ready when it was asked, and the epoch's start to
    its first batch. Both ways a loader is timed call its next: Timed
    (watch()) and gpuwatch run's patched __next__ (_auto) — one __next__."""

    __slots__ = ("stats", "handed", "depth_ok", "depth_at", "started", "n", "handed_one", "taken")

    def __init__(self, stats: Stats, started: Optional[float] = None) -> None:
        self.stats = stats
        self.handed: Optional[float] = None  # when the last batch was handed out
        self.depth_ok = True  # the iterator's ready batches are readable
        self.depth_at: Optional[float] = None  # when they are read next (None: at the next batch)
        self.started = started  # the epoch's start, until its first batch
        self.n = 0  # batches since the last whose cost was measured (_cost)
        self.handed_one = False  # this epoch has handed out a batch
        self.taken = 0  # batches this epoch handed out

    def next(self, it: Any, take: Any) -> Any:
        """take(it), timed (_next); one batch in _cost.LOOP_EVERY has the
        hook's own CPU time around it measured."""
        self.n += 1
        if self.n < _cost.LOOP_EVERY:
            return self._next(it, take, None)
        self.n = 0
        m = _cost.Measure()
        try:
            return self._next(it, take, m)
        finally:
            if not m.done():
                self.n = _cost.LOOP_EVERY - 1  # the collector ran inside: measure the next one

    def _next(self, it: Any, take: Any, m: Optional[_cost.Measure]) -> Any:
        """take(it), timed: the batch, or take's own exceptions
        (StopIteration included), which are the loop's. The hook's own
        errors never reach the loop: they count in errors_total. While the
        ceiling replays (_ceiling), a kept batch instead of take(it). m,
        where given, is paused while take runs (its time is the job's)."""
        t0 = _env.clock()
        stats = self.stats
        stats.handed_at = None  # the loop asks: no step under way
        if stats.window is not None and stats.window.ask():  # the settings' window is one step: it ends here
            try:
                _cost.cost.timed("settings", stats.close_settings)
            except Exception:
                stats.error()
        ceiling = stats.ceiling
        if ceiling is not None and ceiling.state == _ceiling.REPLAYING:
            batch = ceiling.replay(t0)
            if batch is not None:
                self.handed = None  # replayed steps are the ceiling's, not the stream's
                return batch
        step = None
        if self.handed is not None:
            step = t0 - self.handed  # recorded with the batch (Stats.record)
            self.handed = None
            if step > stats.longest_step:
                stats.longest_step = step
        depth = None
        if self.depth_ok and (self.depth_at is None or t0 >= self.depth_at):
            self.depth_at = t0 + DEPTH_EVERY  # a system call or two: not every batch
            try:
                depth = _torch.queue_depth(it)
            except Exception:
                depth = None
            self.depth_ok = depth is not None
        if m is not None:
            m.pause()
        stats.waiting_since[self] = (t0, not self.handed_one)
        try:
            batch = take(it)
        except StopIteration:
            # The loop's wait ended with the epoch: what the hook does now
            # (the drain, a GPU recording's stop and summary) is its own
            # work, never read as the loop waiting for its input.
            stats.waiting_since.pop(self, None)
            stats.epoch_ended(_env.clock())
            stats.ran_out(getattr(it, "_dataset", None), self.taken)  # a DataLoader's iterator holds its dataset
            self._last_step(step)
            try:  # the epoch's end: its last batches' figures (the inline stages: only this thread takes them) drained now
                _cost.cost.timed("loop", stats._loop_drain)
            except Exception:
                stats.error()
            if ceiling is not None:
                ceiling.epoch_ended(_env.clock())
            gp = stats.gpu_profile
            if gp is not None and gp.state == _gpuprofile.RECORDING:
                _cost.cost.timed("gpu_profile", gp.epoch_ended, _env.clock())
            if stats.sync_window is not None:  # the loop leaves: the syncs' window ends with it
                try:
                    stats.end_syncs()
                except Exception:
                    stats.error()
            self._close_window()
            raise
        except BaseException:  # the loader's error (a worker's, a timeout): the step before it was one
            self._last_step(step)
            self._close_window()
            raise
        finally:
            stats.waiting_since.pop(self, None)
        t1 = _env.clock()
        self.handed_one = True
        self.taken += 1
        seen = stats._seen_it
        if seen is not None and seen() is not it:
            stats.left_for_another()
        if m is not None:
            m.resume()
        try:
            stats.record(t1 - t0, batch, depth, step, t1)
            if self.started is not None:
                stats.record_stall(t1 - self.started)
                self.started = None
            if ceiling is not None and ceiling.state in (_ceiling.WARMING, _ceiling.KEEPING):
                ceiling.saw(batch, stats.last_n, step, t1)
            gp = stats.gpu_profile
            if gp is not None and gp.busy():  # its own thread's CPU is the hook's (and not the loop part's)
                _cost.cost.timed("gpu_profile", gp.saw, stats.taken, t1)
        except Exception:
            stats.error()
        self.handed = stats.handed_at = t1
        return batch

    def _close_window(self) -> None:
        """Closes the settings' window where the loop's next() gave no
        batch (the epoch's end, the loader's error): one kept open over an
        ask (_settings.Window.ask) is not left installed."""
        stats = self.stats
        if stats.window is not None:
            try:
                _cost.cost.timed("settings", stats.close_settings)
            except Exception:
                stats.error()

    def _last_step(self, step: Optional[float]) -> None:
        """Records the step before a next() that gave no batch (the
        others are recorded with their batch)."""
        if step is None:
            return
        try:
            self.stats.record_step(step)
        except Exception:  # never into the training loop
            self.stats.error()


class Timed:
    """The iterator the training loop sees: times each next() (Clock) and
    hands the batch through unchanged."""

    __slots__ = ("_it", "_clock")

    def __init__(self, it: Any, stats: Stats, started: Optional[float] = None) -> None:
        self._it = it
        self._clock = Clock(stats, started)

    def __iter__(self) -> "Timed":
        return self

    def __next__(self) -> Any:
        return self._clock.next(self._it, next)

    def __len__(self) -> int:
        return len(self._it)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._it, name)

"""The ceiling: the training loop's rate with its input free, measured in
the running job (docs/architecture.md §6, the loader protocol).

Asked for (gpuwatch run --ceiling, or POST /ceiling?seconds=N on the hook's
server), it goes through four phases on the loop's own thread, inside
next():

* warming: the loop runs as it would for at least WARM_BATCHES batches
  and WARM_SECONDS; its rate and mean step over that span are the rate
  "now" and the step "while starving";
* keeping: the next K batches the loop takes are kept as well as handed
  over (K × bytes per batch within the memory limit: the smaller of
  MAX_BYTES and MAX_RAM_SHARE of the machine's memory; at most MAX_KEPT);
* replaying: for the asked seconds next() hands the kept batches over
  again, in turn, and never asks the real iterator: its workers keep what
  they prefetched and get no new indices. The loop's steps over that span
  are its steps with input free; samples ÷ seconds is the ceiling;
* done: next() asks the real iterator again, exactly where it was: no
  batch lost, none repeated from the real stream. The kept batches are
  let go.

The loop trains on repeated batches for those seconds: that is why it is
opt-in. Replayed batches count in neither the wait nor the step figures,
nor in batches and samples handed out: those stay the real stream's.

Costs nothing while not asked: next() reads one attribute that is None."""

from __future__ import annotations

import os
import threading
import time
from typing import Any, List, Optional, Tuple

from . import _payload

#: Bounds: at most MAX_KEPT batches, MAX_BYTES and MAX_RAM_SHARE of memory.
MAX_KEPT = 32
MAX_BYTES = 1 << 30
MAX_RAM_SHARE = 0.10
#: Warm-up before the batches are kept: the rate "now" is measured over it.
WARM_BATCHES = 10
WARM_SECONDS = 2.0
#: The longest replay one may ask for, in seconds.
MAX_SECONDS = 600.0

WARMING, KEEPING, REPLAYING, DONE, REFUSED = "warming", "keeping", "replaying", "done", "refused"

_perf = time.perf_counter


def memory_limit() -> int:
    """The most bytes of batches kept: MAX_BYTES or MAX_RAM_SHARE of the
    machine's memory, whichever is smaller."""
    try:
        ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return MAX_BYTES
    return int(min(MAX_BYTES, MAX_RAM_SHARE * ram)) if ram > 0 else MAX_BYTES


class Ceiling:
    """One measurement of the ceiling. The loop's thread drives it through
    next() (take); the server's threads read it (figures) under lock."""

    def __init__(self, seconds: float, limit: Optional[int] = None) -> None:
        self.lock = threading.Lock()
        self.seconds = seconds
        self.limit = memory_limit() if limit is None else limit
        self.state = WARMING
        self.reason = ""  # why it was refused
        self.kept: List[Tuple[Any, Optional[int]]] = []  # (batch, its samples)
        self.want = 0  # batches to keep, once the first one's bytes are known
        self.kept_bytes = 0
        self._size = 0  # bytes of one batch (the first kept)
        # Warm-up and keep: the real stream's batches, samples and steps.
        self._t0: Optional[float] = None
        self._batches = self._samples = 0
        self._sized = True
        self._step_sum, self._steps = 0.0, 0
        # Replay.
        self._i = 0
        self._r0: Optional[float] = None
        self._last: Optional[float] = None
        self._r_batches = self._r_samples = 0
        self._r_step_sum, self._r_steps = 0.0, 0
        # Results, None until measured.
        self.before_rate: Optional[float] = None  # samples/s over warm-up and keep
        self.before_batch_rate: Optional[float] = None
        self.starving_step: Optional[float] = None
        self.free_rate: Optional[float] = None  # samples/s replaying: the ceiling
        self.free_batch_rate: Optional[float] = None
        self.free_step: Optional[float] = None
        self.measured_seconds: Optional[float] = None

    def replaying(self) -> bool:
        return self.state == REPLAYING

    def saw(self, batch: Any, samples: Optional[int], step: Optional[float], now: float) -> None:
        """A real batch the loop took (warming and keeping), with its
        samples (None: unknown) and the step before it (None: none)."""
        if self.state not in (WARMING, KEEPING):
            return
        if self._t0 is None:
            self._t0 = now  # the span starts at the first batch after the request
        else:
            self._batches += 1
            if samples is None:
                self._sized = False
            else:
                self._samples += samples
            if step is not None:
                self._step_sum += step
                self._steps += 1
        if self.state == WARMING:
            if self._batches >= WARM_BATCHES and now - self._t0 >= WARM_SECONDS:
                with self.lock:
                    self.state = KEEPING
            return
        self._keep(batch, samples, now)

    def _keep(self, batch: Any, samples: Optional[int], now: float) -> None:
        if not self.want:
            lk = _payload.look(batch)
            size = lk.bytes if lk is not None else 0
            if size <= 0:
                return self._refuse("its batches hold no tensor or array whose bytes can be read")
            fits = self.limit // size
            if fits < 2:
                return self._refuse("a batch holds %d bytes: not two within the limit of %d bytes" % (size, self.limit))
            self.want = int(min(MAX_KEPT, fits))
            self.kept_bytes = 0
            self._size = size
        self.kept.append((batch, samples))
        with self.lock:
            self.kept_bytes += self._size
        if len(self.kept) >= self.want:
            self._begin_replay(now)

    def epoch_ended(self, now: float) -> None:
        """The real iterator ran out while batches were being kept: replay
        the ones kept (at least two) from the next next() on."""
        if self.state == KEEPING and len(self.kept) >= 2:
            self._begin_replay(now)

    def _begin_replay(self, now: float) -> None:
        span = now - (self._t0 or now)
        with self.lock:
            if span > 0 and self._batches:
                self.before_batch_rate = self._batches / span
                self.before_rate = self._samples / span if self._sized else None
            self.starving_step = self._step_sum / self._steps if self._steps else None
            self.state = REPLAYING

    def _refuse(self, why: str) -> None:
        with self.lock:
            self.state, self.reason = REFUSED, why
        self.kept = []

    def replay(self, now: float) -> Optional[Any]:
        """The next kept batch, or None once the asked seconds are over
        (then the loop's next() asks the real iterator)."""
        if self._r0 is None:
            self._r0 = now
        else:
            self._r_step_sum += now - self._last
            self._r_steps += 1
            if now - self._r0 >= self.seconds:
                self._finish(now)
                return None
        batch, samples = self.kept[self._i % len(self.kept)]
        self._i += 1
        self._r_batches += 1
        if samples is None:
            self._sized = False
        else:
            self._r_samples += samples
        self._last = _perf()
        return batch

    def _finish(self, now: float) -> None:
        span = now - self._r0
        with self.lock:
            # The span holds the batches handed over and each one's step: the
            # last one's ends now.
            self.measured_seconds = span
            self.free_batch_rate = self._r_batches / span if span > 0 else None
            self.free_rate = self._r_samples / span if span > 0 and self._sized else None
            self.free_step = self._r_step_sum / self._r_steps if self._r_steps else None
            self.state = DONE
        self.kept = []  # let the batches go

    def figures(self) -> dict:
        """What the metrics page shows: the state, and what was measured."""
        with self.lock:
            return {
                "state": self.state,
                "reason": self.reason,
                "seconds": self.seconds,
                "limit_bytes": self.limit,
                "kept_batches": self.want if self.state in (REPLAYING, DONE) else len(self.kept),
                "kept_bytes": self.kept_bytes,
                "before_samples_per_second": self.before_rate,
                "before_batches_per_second": self.before_batch_rate,
                "starving_step_seconds": self.starving_step,
                "samples_per_second": self.free_rate,
                "batches_per_second": self.free_batch_rate,
                "step_seconds": self.free_step,
                "measured_seconds": self.measured_seconds,
            }


def parse_seconds(raw: str) -> Optional[float]:
    """A replay's seconds from outside (the environment, a request): a
    number in (0, MAX_SECONDS], else None."""
    try:
        v = float(raw)
    except (TypeError, ValueError):
        return None
    return v if 0 < v <= MAX_SECONDS else None

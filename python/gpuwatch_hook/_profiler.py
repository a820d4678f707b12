"""The CPU profiler: samples the stacks of the process's Python threads and
charges each the CPU time its own clock shows (_sampler), written as a pprof
profile; with workers, their profiles (_workerprof) join it. Nothing runs
until a profile is asked for."""

from __future__ import annotations

import sys
from typing import Callable, Iterable, Optional

from . import _workerprof
from ._sampler import Sampler

#: The switch interval while a fine-switched profile runs (CPython's
#: default is 5 ms).
FINE_SWITCH_SEC = 0.0002


def take_profile(
    seconds: float,
    hz: int = 100,
    exclude: Iterable[Optional[int]] = (),
    fine_switch: bool = False,
    workers: bool = False,
    inline: Optional[Callable[[], bool]] = None,
) -> bytes:
    """Samples the stacks of this process's Python threads at hz for
    seconds and returns a gzipped pprof profile of their CPU time. With
    workers, the DataLoader's workers profile themselves over the same
    seconds and their samples join the profile, labelled with their pid
    (_workerprof: under gpuwatch run only).

    Each tick charges every thread the CPU time its own clock shows since
    the last tick, at the stack where the thread is running. Whether it is
    running is seen, not guessed: the sampler reads the clocks, lets go of
    the GIL for half a millisecond, reads the stacks and clocks, lets go
    again, and reads the clocks once more. A thread stopped where CPython
    hands the GIL over (a loop's jump back, a function's start) is running
    Python there; one stopped anywhere else is in C code that let go of the
    GIL (a call, a lock, a read) and is running there if its clock moved
    through half of each window (a window lasts longer while the sampler
    waits for the GIL or, on a loaded box, for a core: time enough for a
    thread to block and wake). Either way its time goes there. Otherwise
    it is blocked there (a sleep, a queue, a socket), or nearly, and the
    time it used since the last tick is charged to the stack it last ran
    at. Idle threads cost nothing and show nothing.
    Threads without Python frames (torch's intra-op pool, say) are not seen.

    The GIL decides when the sampler gets to look: a thread running Python
    lets go of it only every sys.getswitchinterval() (5 ms by default) or at
    a blocking call, so the sampler mostly finds a busy thread where it lets
    go. With fine_switch the switch interval is 0.2 ms while it profiles
    (put back after), which shows CPU-bound Python where it runs but makes
    the whole process switch threads 25 times as often: it is opt-in
    (GPUWATCH_HOOK_FINE_SWITCH=1 in the job's environment, never from a
    request), because it costs the training loop (python/README.md gives
    the measurement). A loop that loads inline (num_workers=0: inline()
    says so, asked each tick) has it without asking: the profile is for
    its loading, which it would otherwise charge to the torch calls
    beside it.
    Ticks are spaced at random around 1/hz, so no rhythm of the program
    locks onto them.

    Off Linux there is no per-thread clock by TID; every tick then charges
    each thread 1/hz of wall time, and the profile's comment says so."""
    s = Sampler(hz, exclude)
    req = _workerprof.request(seconds) if workers else None
    switch = sys.getswitchinterval()
    fine = False

    def before_tick() -> None:  # inline is asked each tick: a loop may start or stop loading inline mid-profile
        nonlocal fine
        want = fine_switch or (inline is not None and inline())
        if want and not fine:
            sys.setswitchinterval(min(switch, FINE_SWITCH_SEC))
        elif fine and not want:  # a val loader inline, training with workers again
            sys.setswitchinterval(switch)
        fine = want

    try:
        s.run(seconds, before_tick)
    finally:
        if fine:
            sys.setswitchinterval(switch)
    return s.profile(_workerprof.collect(req))

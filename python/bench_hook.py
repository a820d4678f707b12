"""What the hook costs the training loop per batch, and what a profile
costs while it runs: python3 python/bench_hook.py (figures, not pass/fail).
"""

import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpuwatch_hook  # noqa: E402


class Tensor:
    shape = (32, 3, 224, 224)


def per_batch(n: int = 200_000) -> None:
    batch = (Tensor(), Tensor())
    batches = [batch] * n
    t = time.perf_counter()
    for _ in batches:
        pass
    bare = time.perf_counter() - t
    w = gpuwatch_hook.watch(batches, port=0, quiet=True)
    t = time.perf_counter()
    for _ in w:
        pass
    watched = time.perf_counter() - t
    print("per batch: %.2f µs watched, %.3f µs bare: the hook adds %.2f µs" % (watched / n * 1e6, bare / n * 1e6, (watched - bare) / n * 1e6))


def under_profile(seconds: float = 3.0, rounds: int = 5) -> None:
    """A busy Python loop with a second thread beside it (the shape of a
    loop with a pin-memory thread), alone and while a profile runs, with
    the default switch interval and with fine_switch (0.2 ms): rounds of
    each, interleaved, and the medians."""

    def spin(until, out=None):
        n = 0
        while time.perf_counter() < until:
            for i in range(1000):
                n += i
        if out is not None:
            out.append(n)
        return n

    def side(stop):
        while not stop.is_set():  # a thread that wants the GIL now and then
            time.sleep(0.001)
            sum(range(200))

    stop = threading.Event()
    helper = threading.Thread(target=side, args=(stop,), daemon=True)
    helper.start()
    spin(time.perf_counter() + 1)  # warm up
    ratios = {False: [], True: []}
    for _ in range(rounds):
        for fine in (False, True):
            alone = spin(time.perf_counter() + seconds)
            th = threading.Thread(target=lambda: gpuwatch_hook.take_profile(seconds, fine_switch=fine))
            th.start()
            profiled = spin(time.perf_counter() + seconds)
            th.join()
            ratios[fine].append(profiled / alone)
    stop.set()
    for fine in (False, True):
        r = sorted(ratios[fine])
        print(
            "a busy loop while profiled at 100 Hz, switch interval %s: median %.1f %% of its speed alone (%.1f–%.1f %% over %d rounds)"
            % ("0.2 ms (fine_switch)" if fine else "5 ms (default)", 100 * r[len(r) // 2], 100 * r[0], 100 * r[-1], len(r))
        )


if __name__ == "__main__":
    per_batch()
    under_profile()

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


def under_profile(seconds: float = 3.0) -> None:
    """A busy Python loop's throughput alone and while a profile runs."""

    def spin(until):
        n = 0
        while time.perf_counter() < until:
            for i in range(1000):
                n += i
        return n

    spin(time.perf_counter() + 1)  # warm up
    alone = spin(time.perf_counter() + seconds)
    res = {}
    th = threading.Thread(target=lambda: res.setdefault("p", gpuwatch_hook.take_profile(seconds)))
    th.start()
    t0 = time.perf_counter()
    profiled = spin(t0 + seconds)
    th.join()
    alone = (alone + spin(time.perf_counter() + seconds)) / 2  # before and after
    print(
        "a busy loop while profiled at 100 Hz: %.1f %% of its speed alone (profile %d bytes)"
        % (100 * profiled / alone, len(res["p"]))
    )


if __name__ == "__main__":
    per_batch()
    under_profile()

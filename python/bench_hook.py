"""What the hook costs the training loop per batch, what a profile costs
while it runs, and what the stage timing and the payload look cost a real
DataLoader loop: python3 python/bench_hook.py [--loop-only] [--rounds N]
(figures, not pass/fail).
"""

import os
import statistics
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


class _Variants:
    """Switches this process between the three ways a loop runs: plain,
    the hook as it was (the loop's wait and step: the stage patch undone),
    and with the stage timing and the payload look. A DataLoader's workers
    fork when it is first iterated, so each loader gets the state of that
    moment."""

    def __init__(self) -> None:
        from torch.utils.data import dataloader as dl
        from gpuwatch_hook import _payload, _stages

        self.dl, self.stages, self.payload = dl, _stages, _payload
        self.create = dl._DatasetKind.__dict__["create_fetcher"]
        self.process = dl._MultiProcessingDataLoaderIter._process_data
        self.look_every = _payload.LOOK_EVERY

    def set(self, variant: str) -> None:
        st = self.stages
        if variant == "stages":
            if self.dl._MultiProcessingDataLoaderIter._process_data is self.process:
                st._patched = False
                st.patch(self.dl)
            self.payload.LOOK_EVERY = self.look_every
            return
        self.dl._DatasetKind.create_fetcher = self.create
        self.dl._MultiProcessingDataLoaderIter._process_data = self.process
        st._patched = True  # watch() must not patch again
        self.payload.LOOK_EVERY = float("inf")  # the hook as it was looked at nothing (each epoch's first batch still is: one here)


def ticks(pids) -> int:
    """CPU time (user + system, all threads) of these processes, in
    clock ticks."""
    total = 0
    for pid in pids:
        try:
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return total


def real_loop(rounds: int = 9, seconds: float = 3.0, batch: int = 32, added_us: float = 0.0) -> None:
    """A real DataLoader loop — uint8 images made into normalised float32
    tensors in __getitem__, 2 workers, a small matmul as the step — plain,
    with the hook as it was, and with the stage timing and the payload
    look: one run of each in turn (the order alternating), rounds times,
    in this process; samples/s after a warm-up, and the medians. The
    machine is shared: only interleaved rounds and medians mean anything."""
    import torch
    from torch.utils.data import DataLoader, Dataset

    torch.set_num_threads(1)

    class Images(Dataset):
        def __init__(self):
            self.raw = torch.randint(0, 255, (64, 3, 64, 64), dtype=torch.uint8)

        def __len__(self):
            return 10**7

        def __getitem__(self, i):
            x = self.raw[i % 64].float().div_(255).sub_(0.5)
            return (x.flip(2) if i % 2 else x), i % 10

    v = _Variants()
    w = torch.randn(3 * 64 * 64, 64)

    def one(variant: str):
        """samples/s after a warm-up, and the CPU time (training process and
        workers) per sample over the same span."""
        v.set(variant)
        loader = DataLoader(Images(), batch_size=batch, num_workers=2)
        watched = gpuwatch_hook.watch(loader, port=0, quiet=True) if variant != "plain" else loader
        it = iter(watched)
        pids = [os.getpid()] + [p.pid for p in it._workers]
        n, t0, c0, start = 0, None, 0, time.perf_counter()
        for x, _ in it:
            x.view(x.shape[0], -1) @ w
            now = time.perf_counter()
            if t0 is None:
                if now - start > 1.0:  # warm: workers up, queues full
                    t0, c0 = now, ticks(pids)
            else:
                n += x.shape[0]
                if now - t0 > seconds:
                    break
        cpu = (ticks(pids) - c0) / os.sysconf("SC_CLK_TCK")
        rate = n / (time.perf_counter() - t0)
        del it
        if watched is not loader:
            watched.close()
        return rate, cpu / n * 1e6

    rates = {"plain": [], "hook": [], "stages": []}
    cpus = {k: [] for k in rates}
    for r in range(rounds):
        for variant in list(rates) if r % 2 == 0 else list(reversed(list(rates))):
            rate, cpu = one(variant)
            rates[variant].append(rate)
            cpus[variant].append(cpu)
    v.set("stages")
    med = {k: statistics.median(x) for k, x in rates.items()}
    cmed = {k: statistics.median(x) for k, x in cpus.items()}
    for k, x in rates.items():
        print("  %-6s samples/s: median %.0f (%s); CPU per sample: median %.1f µs (%s)"
              % (k, med[k], " ".join("%.0f" % y for y in x), cmed[k], " ".join("%.1f" % y for y in cpus[k])))
    print(
        "batch %d, %d rounds × %.0f s: stage timing + payload look: samples/s %+.2f %% (medians %.0f vs %.0f), "
        "CPU per sample %+.2f %% (medians %.1f vs %.1f µs; the CPU the pipeline needs per sample, steadier than the rate "
        "on a shared machine); the whole hook vs plain: samples/s %+.2f %%, CPU per sample %+.2f %%"
        % (batch, rounds, seconds, 100 * (med["stages"] / med["hook"] - 1), med["stages"], med["hook"],
           100 * (cmed["stages"] / cmed["hook"] - 1), cmed["stages"], cmed["hook"],
           100 * (med["stages"] / med["plain"] - 1), 100 * (cmed["stages"] / cmed["plain"] - 1))
    )
    # Each round's stages run against the same round's hook run, a few
    # seconds apart: what drifts over minutes (other users, the page
    # cache) cancels in the ratio, and the median of the ratios is the
    # paired figure.
    pr = sorted(s / h - 1 for s, h in zip(rates["stages"], rates["hook"]))
    pc = sorted(s / h - 1 for s, h in zip(cpus["stages"], cpus["hook"]))
    print("  paired by round, stage timing + payload look against the hook: samples/s median %+.2f %% (%+.2f to %+.2f %%), "
          "CPU per sample median %+.2f %% (%+.2f to %+.2f %%)"
          % (100 * statistics.median(pr), 100 * pr[0], 100 * pr[-1], 100 * statistics.median(pc), 100 * pc[0], 100 * pc[-1]))
    if added_us:
        print("  accounting: %.1f µs added a batch ÷ %.0f µs of CPU a batch (the hook's median) = %.2f %% of the pipeline's CPU"
              % (added_us, cmed["hook"] * batch, 100 * added_us / (cmed["hook"] * batch)))


def added_work(n: int = 20000) -> float:
    """What the stage timing adds per batch, without a loop around it:
    the fetcher's wrapping in a worker, the extra pickling and unpickling
    of a Carried (a batch of two tensors), the unwrapping and recording in
    the training process; and one look at a batch. Returns the CPU µs the
    stage timing and the look add to a batch."""
    import pickle
    from multiprocessing.reduction import ForkingPickler

    import torch
    from gpuwatch_hook import _payload, _stages, _timing

    batch = [torch.zeros(32, 3, 64, 64), torch.zeros(32, dtype=torch.int64)]

    class Fetcher:
        def __init__(self):
            self.collate_fn = lambda b: b

        def fetch(self, index):
            return self.collate_fn(batch)

    plain, timed = Fetcher(), _stages.wrap_fetcher(Fetcher(), True)
    stats = _timing.Stats()

    def cost(fn):
        best = float("inf")  # the least of 5 runs: what the work costs, less what others took
        for _ in range(5):
            t = time.perf_counter()
            for _ in range(n // 5):
                fn()
            best = min(best, (time.perf_counter() - t) / (n // 5) * 1e6)
        return best

    payload = ("x" * 200, 1, 2.0)  # the pickle of a batch in shared memory is a few hundred bytes of handles
    base = cost(lambda: pickle.loads(ForkingPickler.dumps((1, payload))))
    carried = cost(lambda: stats.record_carried(pickle.loads(ForkingPickler.dumps((1, _stages.Carried(payload, 0.0, 0.0))))[1]))
    fetch = cost(lambda: timed.fetch([0])) - cost(lambda: plain.fetch([0]))
    look = cost(lambda: _payload.look(batch))
    print(
        "per batch: fetch timing %.2f µs (worker), carrying the figures through pickle and back and recording them %.2f µs "
        "(worker + training process); a look at a 32×3×64×64 batch %.1f µs (at most 4 a second)" % (fetch, carried - base, look)
    )
    return fetch + carried - base + look * 4 / 100  # a look every 0.25 s, spread over (at least) 100 batches a second


if __name__ == "__main__":
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 9
    if "--loop-only" not in sys.argv:
        per_batch()
        under_profile(rounds=rounds)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("no torch: the real loop's cost is not measured")
    else:
        added = added_work()
        for batch in (32, 4):  # a real batch, and small ones (the hook's cost per batch counts most)
            real_loop(rounds=rounds, batch=batch, added_us=added)

"""Real DataLoader loops, each bound by one cause gpuwatch names (issue 39).

Each loop measures its own stages from inside its code — __getitem__
summed over a batch's samples, collate_fn, the training loop's wait and
step — and prints them as one JSON line at the end (and writes it to
--out). --fix applies the fix practice teaches for its cause:

    float64     numpy's default float64 arrays        --fix: float32 at the source
    padding     token sequences padded to the batch's longest
                                                      --fix: batches bucketed by length
    timeseries  windows built by a Python loop over numpy columns, torch.tensor per sample
                                                      --fix: one stored tensor, sliced
    images      JPEGs (PIL writes them) decoded and normalised to float32 in the workers
                                                      --fix: hand over uint8, normalise in the loop
    text        raw text tokenized in __getitem__ by a Python tokenizer, every epoch
                                                      --fix: tokenized once, the ids stored
    mmap        records of a memory-mapped file read at random, the file's pages
                dropped from the page cache first (run it in a memory cgroup
                smaller than the file: the data outgrows the cache)
                                                      --fix: shuffled blocks of consecutive records
    files       one small file per sample (16 KiB) under --files: mount network
                storage there (sshfs, NFS) to see what each open costs
                                                      --fix: shards of 1,024 samples, each read from start to end

The step stands for the accelerator's: it sleeps (the host's CPU is the
workers'), for a time proportional to the batch's elements where the
accelerator's work is (token slots, for padding). --workers sets
num_workers (a knob gpuwatch advised, applied). Run it under gpuwatch:

    gpuwatch run --once -- python3 causes_battery.py --loop padding --seconds 10
"""

import argparse
import json
import os
import random
import signal
import stat
import sys
import tempfile
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Sampler
from torch.utils.data._utils.collate import default_collate


class Timed(Dataset):
    """A dataset whose __getitem__ returns its sample and the seconds it took."""

    def __init__(self, inner):
        self.inner = inner

    def __len__(self):
        return len(self.inner)

    def __getitem__(self, i):
        t = time.perf_counter()
        s = self.inner[i]
        return s, time.perf_counter() - t


def timed_collate(collate):
    """collate wraps one that returns a dict or a tuple; the batch gets `t`:
    [__getitem__ seconds summed over its samples, collate seconds]."""

    def run(samples):
        t = time.perf_counter()
        b = collate([s for s, _ in samples])
        own = torch.tensor([sum(d for _, d in samples), time.perf_counter() - t], dtype=torch.float64)
        if isinstance(b, dict):
            b["t"] = own
            return b
        return (*b, own)

    return run


# float64: images as numpy makes them, float64; the fix stores float32.
class Arrays(Dataset):
    def __init__(self, fix):
        rng = np.random.default_rng(0)
        self.data = rng.random((256, 3, 96, 96))  # float64, numpy's default
        if fix:
            self.data = self.data.astype(np.float32)
        self.mean, self.std = self.data.mean(), self.data.std()

    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        x = (self.data[i % len(self.data)] - self.mean) / self.std
        return (torch.from_numpy(x), i % 10)


# padding: lognormal lengths, padded to the batch's longest; the fix
# batches sequences of similar length together.
class Tokens(Dataset):
    def __init__(self):
        rng = np.random.default_rng(1)
        lens = np.clip(rng.lognormal(3.6, 0.9, 4096), 4, 1024).astype(int)
        self.seqs = [torch.from_numpy(rng.integers(1, 30000, n)) for n in lens]

    def __len__(self):
        return len(self.seqs)

    def __getitem__(self, i):
        return self.seqs[i]


def pad_collate(seqs):
    n = max(len(s) for s in seqs)
    ids = torch.zeros(len(seqs), n, dtype=torch.int64)
    mask = torch.zeros(len(seqs), n, dtype=torch.int64)
    for r, s in enumerate(seqs):
        ids[r, : len(s)] = s
        mask[r, : len(s)] = 1
    return {"input_ids": ids, "attention_mask": mask}


class Buckets(Sampler):
    """Batches of similar length: shuffled chunks of 64 batches, sorted by
    length within each chunk, the batches in random order."""

    def __init__(self, lens, batch):
        self.lens, self.batch = lens, batch

    def __iter__(self):
        idx = list(range(len(self.lens)))
        random.shuffle(idx)
        out = []
        for c in range(0, len(idx), 64 * self.batch):
            chunk = sorted(idx[c : c + 64 * self.batch], key=lambda i: self.lens[i])
            out += [chunk[b : b + self.batch] for b in range(0, len(chunk), self.batch)]
        random.shuffle(out)
        return iter(out)

    def __len__(self):
        return (len(self.lens) + self.batch - 1) // self.batch


# timeseries: windows of 128 steps over 16 numpy columns; the loop builds a
# list of lists and calls torch.tensor per sample. The fix slices one
# stored tensor.
class Windows(Dataset):
    def __init__(self, fix):
        rng = np.random.default_rng(2)
        self.cols = [rng.random(100_000).astype(np.float32) for _ in range(16)]
        self.fix = fix
        if fix:
            self.table = torch.from_numpy(np.stack(self.cols, axis=1))

    def __len__(self):
        return 100_000 - 128

    def __getitem__(self, i):
        if self.fix:
            return (self.table[i : i + 128], 0)
        rows = [[float(c[i + t]) for c in self.cols] for t in range(128)]
        return (torch.tensor(rows, dtype=torch.float32), 0)


# images: JPEGs PIL writes, decoded and made float32 (ToTensor, Normalize)
# in the workers; the fix hands over uint8 and normalises in the loop.
class Images(Dataset):
    MEAN = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
    STD = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)

    def __init__(self, folder, fix):
        from PIL import Image

        self.files = []
        rng = np.random.default_rng(3)
        for k in range(32):
            p = os.path.join(folder, f"{k}.jpg")
            if not os.path.exists(p):
                base = rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)
                img = Image.fromarray(base).resize((256, 256), Image.BILINEAR)
                img.save(p, quality=90)
            self.files.append(p)
        self.fix = fix
        try:
            import torchvision.transforms as T

            self.tv = T.Compose([T.RandomCrop(224), T.RandomHorizontalFlip()])
            self.norm = T.Compose([T.ToTensor(), T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
        except ImportError:  # without torchvision: the same in numpy and torch
            self.tv = self.norm = None

    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        from PIL import Image

        img = Image.open(self.files[i % len(self.files)]).convert("RGB")
        if self.tv is not None:
            img = self.tv(img)
            if not self.fix:
                return (self.norm(img), 0)
            return (torch.from_numpy(np.asarray(img).copy()).permute(2, 0, 1), 0)
        x, y = random.randrange(32), random.randrange(32)
        a = np.asarray(img)[y : y + 224, x : x + 224]
        t = torch.from_numpy(a.copy()).permute(2, 0, 1)
        if self.fix:
            return (t, 0)
        return ((t.float() / 255 - self.MEAN) / self.STD, 0)


# files: one small file per sample, 16 KiB of float32 features, opened,
# read and closed in __getitem__; the fix reads the same samples from
# shards of SHARD samples each, kept open, a shard's samples in order (the
# shards in random order), as WebDataset reads tar shards.
class Files(Dataset):
    N, VALUES, SHARD = 8192, 4096, 1024

    def __init__(self, folder, fix):
        self.folder, self.fix = folder, fix
        self.open = {}  # shard → file, in each worker

    @classmethod
    def make(cls, folder):
        """Writes the files and the shards once (on the storage's own disk,
        not through a slow mount)."""
        os.makedirs(os.path.join(folder, "files"), exist_ok=True)
        os.makedirs(os.path.join(folder, "shards"), exist_ok=True)
        rng = np.random.default_rng(5)
        for s in range(cls.N // cls.SHARD):
            shard = os.path.join(folder, "shards", "%03d.bin" % s)
            files = [os.path.join(folder, "files", "%05d.bin" % (s * cls.SHARD + k)) for k in range(cls.SHARD)]
            if os.path.exists(shard) and all(os.path.exists(f) for f in files):
                continue
            data = rng.random((cls.SHARD, cls.VALUES), dtype=np.float32)
            for k, path in enumerate(files):
                with open(path, "wb") as f:
                    f.write(data[k].tobytes())
            with open(shard + ".tmp", "wb") as f:
                f.write(data.tobytes())
            os.replace(shard + ".tmp", shard)

    def __len__(self):
        return self.N

    def __getitem__(self, i):
        size = 4 * self.VALUES
        if not self.fix:
            with open(os.path.join(self.folder, "files", "%05d.bin" % i), "rb") as f:
                b = f.read()
        else:
            s = i // self.SHARD
            f = self.open.get(s)
            if f is None:
                f = self.open[s] = open(os.path.join(self.folder, "shards", "%03d.bin" % s), "rb")
            f.seek((i % self.SHARD) * size)
            b = f.read(size)
        return (torch.frombuffer(bytearray(b), dtype=torch.float32), i % 10)


# text: sentences of words from a made-up vocabulary, split into subword
# pieces by a greedy longest-match tokenizer written in Python (the shape of
# a WordPiece tokenizer without its Rust core), in __getitem__, every
# epoch. The fix tokenizes every text once and stores the ids. Sequences
# are cut or filled to SEQ ids, so padding is not the cause.
class Texts(Dataset):
    SEQ = 256

    def __init__(self, fix):
        rng = random.Random(4)
        letters = "abcdefghijklmnopqrstuvwxyz"
        words = ["".join(rng.choice(letters) for _ in range(rng.randint(3, 11))) for _ in range(4000)]
        self.vocab = {"[UNK]": 1}
        for w in words[:1500]:  # known words, and pieces of the rest
            self.vocab.setdefault(w, len(self.vocab) + 1)
        for w in words[1500:]:
            for k in range(0, len(w), 3):
                self.vocab.setdefault(("##" if k else "") + w[k : k + 3], len(self.vocab) + 1)
        self.texts = [" ".join(rng.choice(words) for _ in range(600)) for _ in range(2048)]
        self.ids = [self.tokenize(t) for t in self.texts] if fix else None

    def tokenize(self, text):
        """Lower-cases, splits on spaces, takes the longest known piece of
        each word from the left, as WordPiece does, and cuts to SEQ ids."""
        ids = []
        for word in text.lower().split():
            start = 0
            while start < len(word):
                end, piece = len(word), None
                while end > start:
                    sub = ("##" if start else "") + word[start:end]
                    if sub in self.vocab:
                        piece = sub
                        break
                    end -= 1
                if piece is None:
                    ids.append(self.vocab["[UNK]"])
                    break
                ids.append(self.vocab[piece])
                start = end
        ids = ids[: self.SEQ] + [0] * (self.SEQ - len(ids))  # every text is longer: no padding
        return torch.tensor(ids, dtype=torch.int64)

    def __len__(self):
        return 1 << 20  # long epochs: the workers are not restarted every few seconds

    def __getitem__(self, i):
        i %= len(self.texts)
        if self.ids is not None:
            return (self.ids[i], 0)
        return (self.tokenize(self.texts[i]), 0)


def build(args):
    """The loader, and the step's cost per batch (seconds) as a function of
    the batch."""
    base = args.step_ms / 1000

    def workers(n):
        return n if args.workers is None else args.workers

    if args.loop == "float64":
        ds, kw = Arrays(args.fix), dict(batch_size=64)
        return DataLoader(Timed(ds), num_workers=workers(2), collate_fn=timed_collate(default_collate), **kw), lambda b: base
    if args.loop == "padding":
        ds = Tokens()
        col = timed_collate(pad_collate)
        if args.fix:
            sampler = Buckets([len(s) for s in ds.seqs], 64)
            dl = DataLoader(Timed(ds), batch_sampler=sampler, num_workers=workers(2), collate_fn=col)
        else:
            dl = DataLoader(Timed(ds), batch_size=64, shuffle=True, num_workers=workers(2), collate_fn=col)
        # The accelerator's work is per token slot, padding included.
        return dl, lambda b: base + 4e-6 * b["input_ids"].numel()
    if args.loop == "timeseries":
        ds = Windows(args.fix)
        return DataLoader(Timed(ds), batch_size=64, shuffle=True, num_workers=workers(1), collate_fn=timed_collate(default_collate)), lambda b: base
    if args.loop == "mmap":
        from train_mmap import BlockShuffle, Records, drop_cache, make_data

        make_data(args.data, args.data_size, Records.RECORD)
        drop_cache(args.data)  # each run starts from the disk
        ds = Records(args.data, Records.RECORD)
        sampler = BlockShuffle(len(ds), 256) if args.fix else torch.utils.data.RandomSampler(ds)
        return DataLoader(Timed(ds), batch_size=64, sampler=sampler, num_workers=workers(2), collate_fn=timed_collate(default_collate)), lambda b: base
    if args.loop == "files":
        from train_mmap import BlockShuffle

        ds = Files(args.files, args.fix)
        sampler = BlockShuffle(len(ds), Files.SHARD) if args.fix else torch.utils.data.RandomSampler(ds)
        return DataLoader(Timed(ds), batch_size=64, sampler=sampler, num_workers=workers(2), collate_fn=timed_collate(default_collate)), lambda b: base
    if args.loop == "text":
        ds = Texts(args.fix)
        return DataLoader(Timed(ds), batch_size=32, shuffle=True, num_workers=workers(2), collate_fn=timed_collate(default_collate)), lambda b: base
    folder = args.images or os.path.join(private_dir(), "jpeg")
    os.makedirs(folder, exist_ok=True)
    ds = Images(folder, args.fix)
    return DataLoader(Timed(ds), batch_size=32, num_workers=workers(2), collate_fn=timed_collate(default_collate)), lambda b: base


def private_dir():
    """The data's default folder: gpuwatch-battery-UID in the temp dir,
    made 0700 and refused unless it is a folder of this user's that only
    they can use (another user of a shared /tmp could make it first, or
    make it a link, and hand the loops their files)."""
    path = os.path.join(tempfile.gettempdir(), "gpuwatch-battery-%d" % os.getuid())
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        sys.exit("causes_battery.py: %s is not a private folder of yours (a link, another user's, or open to others); "
                 "remove it or pass the data's paths" % path)
    return path


def on_loop(args, b):
    """What the loop does with a batch beside its step: the fix of the
    images loop normalises here (on an accelerator, after .to(device))."""
    if args.loop == "images" and args.fix and torch.cuda.is_available():
        x = b[0].cuda(non_blocking=True).float().div_(255)
        return x.sub_(Images.MEAN.cuda()).div_(Images.STD.cuda())
    # Without an accelerator its normalising is part of the step, which
    # sleeps: the host's CPU stays the workers'.
    if args.loop == "float64":
        return b[0].to(torch.float32)  # what a float32 model does with float64 input
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--loop", required=True, choices=["float64", "padding", "timeseries", "images", "text", "mmap", "files"])
    ap.add_argument("--fix", action="store_true", help="apply the fix practice teaches")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--warmup", type=float, default=2, help="seconds not measured at the start")
    ap.add_argument("--step-ms", type=float, default=5)
    ap.add_argument("--workers", type=int, help="num_workers (default: the loop's own)")
    ap.add_argument("--images", help="the JPEG folder (default: jpeg/ in a private folder of the temp dir)")
    ap.add_argument("--data", help="the mmap loop's data file, written once when missing (default: mmap.bin in the private folder)")
    ap.add_argument("--data-size", type=int, default=3 << 30, help="its bytes")
    ap.add_argument("--files", help="the files loop's folder, files/ and shards/ under it (default: files/ in the private folder)")
    ap.add_argument("--make-only", action="store_true", help="write the files loop's files and shards under --files, and exit")
    ap.add_argument("--out", help="also write the JSON line here")
    args = ap.parse_args()
    if args.data is None and args.loop == "mmap":
        args.data = os.path.join(private_dir(), "mmap.bin")
    if args.files is None and args.loop == "files":
        args.files = os.path.join(private_dir(), "files")
    if args.make_only:
        Files.make(args.files)
        return
    torch.set_num_threads(1)
    loader, step_cost = build(args)
    start = time.monotonic()
    end = start + args.warmup + args.seconds
    acc = {"own": torch.zeros(2, dtype=torch.float64), "wait": 0.0, "step": 0.0, "samples": 0, "batches": 0, "t0": None, "t1": None}
    # gpuwatch run --once interrupts the job when it has settled. The
    # KeyboardInterrupt may land in a finalizer (torch's StorageWeakRef.
    # __del__), where Python prints and drops it, and the workers, which
    # got the signal too, are gone before the batch in transit is taken: a
    # FileNotFoundError from its resource sharer, not the interrupt. So the
    # signal is remembered, and what breaks after it is the interrupt. It
    # may also land where Python drops it and nothing breaks (logging's
    # at-fork _releaseLock as the next epoch's workers fork: CI's padding
    # loop then ran on and was killed before it wrote its figures), so the
    # loop stops at its next batch once it is remembered.
    interrupted = INTERRUPTED

    def on_interrupt(signum, frame):
        interrupted.append(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_interrupt)
    try:
        measure(args, loader, step_cost, end, start, acc)
    except KeyboardInterrupt:
        pass
    except Exception:
        if not interrupted:
            raise
    report(args, acc)


#: The signals gpuwatch run --once interrupted the job with (main's
#: handler appends; measure stops at its next batch once one is here).
INTERRUPTED = []

#: Samples taken so far, warm-up included: bench/hook_cost_job.py reads it
#: while the loop runs, from `start` on (measure sets that global when the
#: loop begins; it is not defined before, which is how the bench knows).
samples = 0


def measure(args, loader, step_cost, end, began, acc):
    """Runs the loop until end, adding its own measurements to acc."""
    global samples, start
    start = began
    while time.monotonic() < end:
        it = iter(loader)
        while True:
            t = time.perf_counter()
            try:
                b = next(it)
            except StopIteration:
                break
            got = time.perf_counter()
            n = len(b["input_ids"]) if isinstance(b, dict) else len(b[0])
            samples += n
            on_loop(args, b)
            time.sleep(step_cost(b))
            done = time.perf_counter()
            if time.monotonic() - began < args.warmup:
                if INTERRUPTED:
                    return
                continue
            if acc["t0"] is None:
                acc["t0"] = t
            acc["wait"] += got - t
            acc["step"] += done - got
            acc["own"] += b["t"] if isinstance(b, dict) else b[-1]
            acc["samples"] += n
            acc["batches"] += 1
            acc["t1"] = done
            if time.monotonic() > end or INTERRUPTED:
                return


def report(args, acc):
    """Prints (and writes to --out) the loop's own measurements."""
    own, wait, step, samples, batches = acc["own"], acc["wait"], acc["step"], acc["samples"], acc["batches"]
    wall = acc["t1"] - acc["t0"] if acc["t0"] is not None else 0
    tot = float(own.sum()) or 1.0
    out = {"loop": args.loop, "fix": args.fix, "samples_per_sec": samples / wall if wall else 0,
           "wait_share": wait / (wait + step) if wait + step else 0, "batches": batches,
           "getitem_ms": 1000 * float(own[0]) / max(batches, 1), "collate_ms": 1000 * float(own[1]) / max(batches, 1),
           "getitem_share": float(own[0]) / tot, "collate_share": float(own[1]) / tot}
    line = json.dumps(out)
    print(line, flush=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write(line + "\n")


if __name__ == "__main__":
    main()

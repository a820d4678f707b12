"""What every layer of the hook shares, in a leaf that imports nothing of
the hook (as torch's data/_utils are leaves its loader imports): the
warning for the user (warn, warn_once), gpuwatch run's private folder
(run_dir), the launcher's ranks (rank_env), the clock the loop is timed
with, and attempt, which installs one patch on its own (_patches)."""

from __future__ import annotations

import os
import stat
import sys
import time
import warnings
from typing import Any, Callable, Dict, Mapping, Optional

#: The clock for wait and step (_timing, _auto, watch()); tests replace it.
clock = time.perf_counter


def warn(msg: str) -> None:
    """A warning for the user. Under gpuwatch run it goes to run's folder
    (run shows it), never into the job's own output."""
    run = os.environ.get("GPUWATCH_RUN_DIR", "")
    if os.path.isabs(run):
        try:
            with open(os.path.join(run, "hook-%d.log" % os.getpid()), "a") as f:
                f.write(msg.replace("\n", " ")[:1000] + "\n")
        except OSError:
            pass
        return
    warnings.warn("gpuwatch_hook: " + msg, RuntimeWarning, stacklevel=4)


_warned: set = set()


def warn_once(msg: str) -> None:
    """A warning for the user (warn), once per message in this process."""
    if msg in _warned or len(_warned) > 64:
        return
    _warned.add(msg)
    warn(msg)


def attempt(name: str, install: Callable[..., Any], *args: Any) -> bool:
    """Runs one patch's installer (a row of _patches.PATCHES): whether it is
    installed. An installer returns False where its patch does not apply
    (torch without CUDA) and raises where it failed: that is warned, once,
    naming the patch, and never raised — the other patches stand."""
    try:
        return bool(install(*args))
    except Exception as e:
        warn_once("%s is not patched (what it measures is left out; the other patches stand): %s: %s" % (name, type(e).__name__, e))
        return False


def run_dir() -> Optional[str]:
    """gpuwatch run's private folder (GPUWATCH_RUN_DIR), when this process
    runs under run, tune or sweep and the folder is this user's alone."""
    d = os.environ.get("GPUWATCH_RUN_DIR", "")
    if not os.path.isabs(d):
        return None
    try:
        check_private(d)
    except OSError:
        return None
    return d


def check_private(d: str) -> None:
    """Raises OSError unless d is a folder of this user that nobody else
    may read or write."""
    st = os.lstat(d)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        raise OSError("%s is not a private folder of this user (owner %d, mode %o)" % (d, st.st_uid, st.st_mode & 0o777))


def rank_env() -> Dict[str, int]:
    """RANK, LOCAL_RANK and WORLD_SIZE of this process (torch.distributed's
    launchers set them), those that are small non-negative numbers; where
    the process's default group is initialized, its rank and world size
    instead (a job started by torch.multiprocessing.spawn calls
    init_process_group(rank=…, world_size=…) and sets neither: a review's
    two-rank DDP job read as two separate jobs). local_world_size is the
    job's ranks on this node (local_world), at most its world size: a
    change to the script adds its workers on each of them, and gpuwatch
    watching one rank alone does not see the others as the job's
    (docs/diagnosis.md, "Knobs on a node that runs several ranks")."""
    out = {}
    for env, name in (("RANK", "rank"), ("LOCAL_RANK", "local_rank"), ("WORLD_SIZE", "world_size")):
        try:
            v = int(os.environ.get(env, ""))
        except ValueError:
            continue
        if 0 <= v < 1 << 20:
            out[name] = v
    out.update(_process_group())
    local = local_world(os.environ)
    if local is not None and local <= out.get("world_size", 0):
        out["local_world_size"] = local
    return out


def local_world(env: Mapping[str, str]) -> Optional[int]:
    """The ranks of this process's job on its node, as torchrun (and the
    launchers built on it) says: LOCAL_WORLD_SIZE; None where it is unset
    or not a number from 1. Its ranks are children of one agent and share
    its CPUs. Slurm's tasks on the node (SLURM_STEP_TASKS_PER_NODE) are
    not read: srun may bind each task to CPUs of its own, and whether it
    did is not the hook's to tell (a review: a bound task's own 8 CPUs
    split by 4)."""
    return _small(env.get("LOCAL_WORLD_SIZE", "")) or None


def _small(s: str) -> Optional[int]:
    """s as a number below 2^20 written in ASCII digits, or None ("²" is a
    digit to str.isdigit, not to int)."""
    if not s or len(s) > 7 or not s.isascii() or not s.isdigit():
        return None
    return int(s)


def _process_group() -> Dict[str, int]:
    """The default process group's rank and world size where the job
    initialized one ({} otherwise): torch.distributed is only looked at
    where the job imported it, never imported here."""
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is None or not dist.is_available() or not dist.is_initialized():
            return {}
        rank, world = int(dist.get_rank()), int(dist.get_world_size())
    except Exception:
        return {}
    if 0 <= rank < world < 1 << 20:
        return {"rank": rank, "world_size": world}
    return {}


def rendezvous() -> str:
    """MASTER_ADDR:MASTER_PORT of this process's distributed job, as its
    launcher set them; "" where either is unset or not a host and a port.
    Two jobs running at once cannot share one (rank 0 listens there), so
    gpuwatch tells two jobs of the same WORLD_SIZE apart by it."""
    host, port = os.environ.get("MASTER_ADDR", ""), os.environ.get("MASTER_PORT", "")
    try:
        p = int(port)
    except ValueError:
        return ""
    if not 0 < p < 65536 or not 0 < len(host) <= 253 or host.strip(_HOST_CHARS):
        return ""
    return "[%s]:%d" % (host, p) if ":" in host else "%s:%d" % (host, p)


_HOST_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:%"


def compiling(torch: Any) -> bool:
    """Whether torch.compile is tracing now (torch.compiler.is_compiling;
    False where torch has none): what the hook wraps stands aside then."""
    comp = getattr(torch, "compiler", None)
    f = getattr(comp, "is_compiling", None)
    try:
        return bool(f()) if f is not None else False
    except Exception:
        return False

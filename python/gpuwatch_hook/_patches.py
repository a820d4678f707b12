"""Every patch the hook installs into torch and the interpreter, in one
table (PATCHES): what is patched (a dotted target and its attribute), the
installer and the uninstaller where there is one, when it is installed,
and the torch versions whose source it was read on. TorchAttributesTest
(tests/test_package.py) checks every target and attribute on the torch it
runs with; tests/test_layers.py checks that a name a module warns with is
a row's.

Each patch is installed on its own (_env.attempt): an installer that
raises is warned, naming its patch, and the others stand — a torch that
drops one attribute loses what that patch measures, nothing else. A patch
that needs another (the fetcher's, whose batches only the unwrapping of
_process_data may let through) is installed only after it.

When: START (gpuwatch run's sitecustomize calls _auto.install, before
torch is imported), RUN (torch.utils.data.dataloader has just run, under
gpuwatch run) and WATCH (watch() of a torch DataLoader) are installed here,
by install(moment, arg): every row of the moment in the table's order, each
installer given arg. The others are installed by their own module at their
own moment, with the same _env.attempt: LOOK (the first batch looked at:
_h2d, once torch.backends is there), WINDOW (the settings' window:
_settings), SERVER (the first server: _server), PROFILE (a worker's
profile: _workerprof), SYNCS (the syncs' window: _syncs, installed at its
opening and put back at its close), SITE (python/run/sitecustomize.py
itself)."""

from __future__ import annotations

from typing import Any, Callable, Dict, NamedTuple, Optional, Tuple

from . import _env, _h2d, _run, _server, _settings, _stages, _syncs, _workerprof

START, RUN, WATCH = "start", "run", "watch"
LOOK, WINDOW, SERVER, PROFILE, SYNCS, SITE = "look", "window", "server", "profile", "syncs", "sitecustomize"
#: The moments install() installs; the others are their modules'.
HERE = (START, RUN, WATCH)

#: The torch versions the DataLoader's and Tensor's patches were read on:
#: Debian's (CI) and the GPU machine's.
TORCH_READ = ("1.13", "2.11")


class Patch(NamedTuple):
    #: How a failure names it (unique).
    name: str
    #: The dotted path of what is patched: a module, or a class in one.
    target: str
    #: The attribute replaced, or the call made on target.
    attribute: str
    #: Installs it: True once installed, False where it does not apply,
    #: raises where it failed. None: installed outside the package.
    install: Optional[Callable[..., Any]]
    #: Puts it back, where there is one.
    uninstall: Optional[Callable[..., Any]]
    #: The moments it is installed at.
    when: Tuple[str, ...]
    #: The torch versions whose source it was read on (none: not torch's).
    read_on: Tuple[str, ...]
    #: What it gives.
    why: str
    #: A row that must be installed first, or "".
    needs: str = ""


PATCHES: Tuple[Patch, ...] = (
    Patch("sys.meta_path: run's sitecustomize", "sys", "meta_path", None, None, (SITE,), (),
          "python/run/sitecustomize.py's finder: imports the hook when torch.utils.data.dataloader is first looked for, and takes itself off"),
    Patch("sys.meta_path: the hook's finder", "sys", "meta_path", _run.install_finder, _run.remove_finder, (START,), (),
          "runs the RUN patches right after torch.utils.data.dataloader has run, and takes itself off"),
    Patch("sys.excepthook: run's", "sys", "excepthook", _run.install_excepthook, None, (START,), (),
          "an uncaught exception's traceback is printed without the hook's pass-through frames (the run folder they name is gone when it ends)"),
    Patch("os.register_at_fork: run's", "os", "register_at_fork", _run.install_fork_handler, None, (START,), (),
          "a forked worker forgets run's stats and server"),
    Patch("DataLoader.__iter__", "torch.utils.data.dataloader.DataLoader", "__iter__", _run.patch_iter, None, (RUN,), TORCH_READ,
          "an epoch starts: run's server starts, the knobs are read, a Clock is kept on the iterator"),
    Patch("_BaseDataLoaderIter.__next__", "torch.utils.data.dataloader._BaseDataLoaderIter", "__next__", _run.patch_next, None, (RUN,), TORCH_READ,
          "each batch is timed (subclasses define _next_data, not __next__: one patch times them all)"),
    Patch("_MultiProcessingDataLoaderIter._process_data", "torch.utils.data.dataloader._MultiProcessingDataLoaderIter", "_process_data",
          _stages.patch_process_data, None, (RUN, WATCH), TORCH_READ,
          "every batch from a worker passes it: a carried batch is unwrapped and its stage times kept (torch ≥ 2.6 passes the worker too)"),
    Patch("_DatasetKind.create_fetcher", "torch.utils.data.dataloader._DatasetKind", "create_fetcher", _stages.patch_fetcher, None, (RUN, WATCH), TORCH_READ,
          "makes each worker's fetcher: its fetch and collate_fn are timed (getitem, collate)",
          needs="_MultiProcessingDataLoaderIter._process_data"),
    Patch("Tensor.to", "torch.Tensor", "to", _h2d.install_to, None, (LOOK,), TORCH_READ,
          "a looked-at batch's copy to the GPU is timed (only where torch has CUDA)"),
    Patch("Tensor.cuda", "torch.Tensor", "cuda", _h2d.install_cuda, None, (LOOK,), TORCH_READ,
          "as Tensor.to"),
    Patch("CUDAGraph.replay", "torch.cuda.graphs.CUDAGraph", "replay", _settings.patch_replay, None, (WINDOW,), TORCH_READ,
          "CUDA graph replays counted: whether the job replays them (only where torch has CUDA)"),
    Patch("forward pre-hook", "torch.nn.modules.module", "register_module_forward_pre_hook", _settings.Window.install, _settings.Window._remove, (WINDOW,), TORCH_READ,
          "the settings read inside the model's first forward of a window; removed there, or when the window closes"),
    Patch("syncs: Tensor.item", "torch.Tensor", "item", _syncs.patch_method, _syncs.uninstall_all, (SYNCS,), TORCH_READ,
          "a host sync counted at its file:line while the syncs' window is open (tensor on an accelerator; put back at the window's close)"),
    Patch("syncs: Tensor.cpu", "torch.Tensor", "cpu", _syncs.patch_method, _syncs.uninstall_all, (SYNCS,), TORCH_READ, "as Tensor.item"),
    Patch("syncs: Tensor.tolist", "torch.Tensor", "tolist", _syncs.patch_method, _syncs.uninstall_all, (SYNCS,), TORCH_READ, "as Tensor.item"),
    Patch("syncs: Tensor.numpy", "torch.Tensor", "numpy", _syncs.patch_method, _syncs.uninstall_all, (SYNCS,), TORCH_READ, "as Tensor.item"),
    Patch("syncs: Tensor.__repr__", "torch.Tensor", "__repr__", _syncs.patch_method, _syncs.uninstall_all, (SYNCS,), TORCH_READ,
          "as Tensor.item: print(tensor), str(tensor), repr(tensor)"),
    Patch("syncs: Tensor.__format__", "torch.Tensor", "__format__", _syncs.patch_method, _syncs.uninstall_all, (SYNCS,), TORCH_READ,
          "as Tensor.item: f\"{tensor}\", format(tensor)"),
    Patch("syncs: Tensor.__float__", "torch.Tensor", "__float__", _syncs.patch_method, _syncs.uninstall_all, (SYNCS,), TORCH_READ, "as Tensor.item: float(tensor)"),
    Patch("syncs: Tensor.__int__", "torch.Tensor", "__int__", _syncs.patch_method, _syncs.uninstall_all, (SYNCS,), TORCH_READ, "as Tensor.item: int(tensor)"),
    Patch("syncs: Tensor.__bool__", "torch.Tensor", "__bool__", _syncs.patch_method, _syncs.uninstall_all, (SYNCS,), TORCH_READ,
          "as Tensor.item: if tensor:, while tensor:"),
    Patch("syncs: torch.cuda.synchronize", "torch.cuda", "synchronize", _syncs.patch_synchronize, _syncs.uninstall_all, (SYNCS,), TORCH_READ,
          "every call counted at its file:line while the syncs' window is open (only where torch has CUDA)"),
    Patch("os.register_at_fork: the syncs'", "os", "register_at_fork", _syncs.install_fork_handler, None, (SYNCS,), (),
          "a child forked while the syncs' window is open puts the wrappers back"),
    Patch("os.register_at_fork: the server's", "os", "register_at_fork", _server.install_fork_handler, None, (SERVER,), (),
          "a forked worker lets go of the listening sockets"),
    Patch("atexit: the servers closed", "atexit", "register", _server.install_exit_handler, None, (SERVER,), (),
          "at exit the servers close and their announcements go"),
    Patch("signal.SIGPROF: a worker's profile", "signal", "SIGPROF", _workerprof._by_signal, _workerprof._restore, (PROFILE,), (),
          "a worker profiles itself by its own CPU time (ITIMER_PROF) where nobody else uses SIGPROF; else a sampler thread"),
    Patch("atexit: a worker's profile stopped", "atexit", "register", _workerprof.install_exit_handler, None, (PROFILE,), (),
          "a worker that exits while it profiles stops the timer first (SIGPROF's default would kill it)"),
)

_BY_NAME: Dict[str, Patch] = {p.name: p for p in PATCHES}


def install(moment: str, arg: Any) -> Dict[str, bool]:
    """Installs the rows of moment (one of HERE), in order, each on its own
    with arg: {name: installed}. Never raises."""
    done: Dict[str, bool] = {}
    for p in PATCHES:
        if moment not in p.when or p.install is None:
            continue
        if p.needs and not done.get(p.needs, False):
            _env.warn_once("%s is not patched: it needs %s, which is not" % (p.name, p.needs))
            done[p.name] = False
            continue
        done[p.name] = _env.attempt(p.name, p.install, arg)
    return done


def patch_run(module: Any) -> Dict[str, bool]:
    """gpuwatch run's patches of torch.utils.data.dataloader (module)."""
    return install(RUN, module)


def start() -> Dict[str, bool]:
    """gpuwatch run's start (_auto.install): the finder, whose patches
    (patch_run) follow torch.utils.data.dataloader's import, and run's
    fork handler."""
    return install(START, patch_run)


def row(name: str) -> Patch:
    return _BY_NAME[name]

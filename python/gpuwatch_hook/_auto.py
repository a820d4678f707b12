"""gpuwatch run's instrumentation: every torch.utils.data.DataLoader of this
Python process is timed as watch() times one, with no change to the script.

`gpuwatch run -- CMD` puts a sitecustomize on the command's PYTHONPATH that
calls install(). install() imports nothing: it adds a finder to
sys.meta_path that waits for torch.utils.data.dataloader to be imported,
and patches DataLoader.__iter__ and _BaseDataLoaderIter.__next__ (and the
stages' two) right after that module runs: _patches' START and RUN rows,
each on its own. A process that never imports torch.utils.data is left as
it was. The server starts (on an ephemeral loopback port, announced for
discovery) when a DataLoader is first iterated, never in a DataLoader
worker, so launchers and workers serve nothing (_run)."""

from __future__ import annotations

import os
import sys
from typing import Any

from . import _patches, _run
from ._run import Finder as _Finder  # noqa: F401 (the name run's sitecustomize looks for)

TARGET = _run.TARGET


def install() -> None:
    """Times every DataLoader of this process from the moment torch's data
    module is imported (at once if it already is)."""
    mod = sys.modules.get(TARGET)
    if mod is not None:
        patch(mod)
        return
    _patches.start()
    marker = os.environ.get("GPUWATCH_RUN_DIR", "")
    if os.path.isabs(marker):
        # Tells gpuwatch run that this process loaded the hook (a process
        # started with python -I or -S does not).
        try:
            fd = os.open(os.path.join(marker, "py-%d" % os.getpid()), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.close(fd)
        except OSError:
            pass


def patch(module: Any) -> None:
    """gpuwatch run's patches of torch.utils.data.dataloader (module), each
    on its own (_patches: a failed one is warned, naming it)."""
    _patches.patch_run(module)

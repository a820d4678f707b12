"""gpuwatch, installed by pip: the binary is the environment's bin/gpuwatch
(the wheel's scripts). This package finds it for `python -m gpuwatch`; the
hook is the gpuwatch_hook package beside it."""

import os
import sysconfig

__all__ = ["find_gpuwatch_bin"]


def find_gpuwatch_bin() -> str:
    """find_gpuwatch_bin returns the path of the gpuwatch binary this wheel
    installed: the scripts folder of the environment (a venv's bin/, a
    --user install's ~/.local/bin), as ruff's find_ruff_bin does."""
    candidates = [sysconfig.get_path("scripts")]
    candidates.append(sysconfig.get_path("scripts", scheme="posix_user"))
    # --target or --prefix installs: the scripts beside the package's root.
    here = os.path.dirname(os.path.abspath(__file__))
    candidates.append(os.path.join(here, "..", "bin"))
    candidates.append(os.path.join(here, "..", "..", "..", "..", "bin"))
    for d in candidates:
        path = os.path.join(d, "gpuwatch")
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.normpath(path)
    raise FileNotFoundError("the gpuwatch binary is not in " + ", ".join(candidates))

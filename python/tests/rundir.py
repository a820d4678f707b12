"""One XDG_RUNTIME_DIR for the hook's test modules (the hook's sockets
and files go there, never the user's own), made by the first module
imported and removed when the process that made it exits."""

import atexit
import os
import shutil
import tempfile

PREFIX = "gpuwatch-hook-test-"


def runtime_dir():
    """The tests' runtime folder: the one already set by another test
    module (or a parent test process), else a new one."""
    cur = os.environ.get("XDG_RUNTIME_DIR", "")
    if PREFIX in cur:
        return cur
    d = tempfile.mkdtemp(prefix=PREFIX)
    owner = os.getpid()

    def remove():
        if os.getpid() == owner:  # not in a forked child (a DataLoader worker)
            shutil.rmtree(d, ignore_errors=True)

    atexit.register(remove)
    os.environ["XDG_RUNTIME_DIR"] = d
    return d

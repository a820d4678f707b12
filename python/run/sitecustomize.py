"""gpuwatch run's sitecustomize: written with the hook into a private folder
that `gpuwatch run` puts first on the command's PYTHONPATH.

It costs a Python process that never imports torch's DataLoader next to
nothing (issue 41, item 14): it imports only what start-up has already
imported (os, sys, importlib's machinery), writes the marker that tells
gpuwatch run this process loaded it, and puts one finder on sys.meta_path.
The hook itself (gpuwatch_hook, with http.server and the rest) is imported
by that finder when torch.utils.data.dataloader is imported, never before.

It runs the sitecustomize it shadows (the system's or the user's) and then
leaves that module in sys.modules under its own name, so that
`import sitecustomize; sitecustomize.X` reaches the user's names as it does
without gpuwatch (item 15).

Every Python the job starts reads it, the hook's or not: a child of
Python 2 printed "'import sitecustomize' failed" under gpuwatch only. So
the file is of a grammar Python 2.7 and 3.4 parse (no annotations, no
f-strings: test_package checks it), and on an interpreter older than the
hook's (MIN_PYTHON, pyproject.toml's requires-python) it only runs the
sitecustomize it shadows: no marker (the hook is not loaded there), no
finder."""

import os
import sys

#: The module whose import brings the hook in.
_TARGET = "torch.utils.data.dataloader"
#: The oldest Python the hook runs on (pyproject.toml's requires-python).
MIN_PYTHON = (3, 9)


class _DataLoaderFinder(object):
    """Finds nothing itself. When torch's DataLoader module is first looked
    for, it takes itself off sys.meta_path, imports the hook, and hands the
    search to the hook's own finder (gpuwatch_hook._auto), which patches
    the module once it has run."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != _TARGET:
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        try:
            from gpuwatch_hook import _auto

            _auto.install()
            for f in sys.meta_path:
                if isinstance(f, _auto._Finder):
                    return f.find_spec(fullname, path, target)
        except Exception:  # a broken copy: the program runs uninstrumented
            pass
        return None


def _mark():
    """Tells gpuwatch run that this process loaded the hook (a process
    started with python -I or -S does not)."""
    run = os.environ.get("GPUWATCH_RUN_DIR", "")
    if os.path.isabs(run):
        try:
            os.close(os.open(os.path.join(run, "py-%d" % os.getpid()), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
        except OSError:
            pass


def _chain():
    """Runs the sitecustomize this one shadows; returns its module, or None
    when there is none."""
    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    try:
        import importlib.machinery  # importlib and its frozen bootstrap: cheap

        find_spec = importlib.machinery.PathFinder.find_spec
        try:  # what importlib.util.module_from_spec is, without contextlib and collections
            from importlib._bootstrap import module_from_spec
        except ImportError:
            from importlib.util import module_from_spec
    except (ImportError, AttributeError):  # Python 2, 3.4
        return _chain_imp(path)
    spec = find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return None
    module = module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _chain_imp(path):
    """_chain where importlib has no specs (Python 2, 3.4): imp's search.
    A source file runs in a module of its own (imp.load_module would run
    it in this one's, which sys.modules holds under the same name)."""
    import imp

    try:
        f, pathname, desc = imp.find_module("sitecustomize", path)
    except ImportError:
        return None
    try:
        if desc[2] != imp.PY_SOURCE:
            return imp.load_module("sitecustomize", f, pathname, desc)
        module = imp.new_module("sitecustomize")
        module.__file__ = pathname
        code = compile(f.read(), pathname, "exec")
        exec(code, module.__dict__)
        return module
    finally:
        if f is not None:
            f.close()


_user = None
try:
    _user = _chain()
finally:
    if tuple(sys.version_info[:2]) >= MIN_PYTHON:
        _mark()
        if _TARGET not in sys.modules and not any(type(f).__name__ == "_DataLoaderFinder" for f in sys.meta_path):
            sys.meta_path.insert(0, _DataLoaderFinder())
    if _user is not None:
        # The import of this module returns what sys.modules holds when it
        # ends (importlib's _load_unlocked): the user's module.
        sys.modules[__name__] = _user

"""gpuwatch run's sitecustomize: written with the hook into a private folder
that `gpuwatch run` puts first on the command's PYTHONPATH. It loads the
sitecustomize it shadows (the system's or the user's), then asks the hook
to time every torch DataLoader once torch.utils.data is imported. It
imports no torch and starts nothing itself."""


def _chain() -> None:
    import importlib.machinery
    import importlib.util
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


def _install() -> None:
    try:
        from gpuwatch_hook import _auto
    except Exception:  # a broken copy: the program runs uninstrumented
        return
    _auto.install()


try:
    _chain()
finally:
    _install()

"""The hook in layers that import only downward (issue 50, item 2), as
torch's torch/utils/data/_utils are leaves its loader imports, never the
reverse: every module of gpuwatch_hook is in LAYERS, and imports of the
hook's modules only from a lower layer, at its top (never inside a
function, where an import circle hides). Parsed with ast: nothing is
imported to check it."""

import ast
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, "..", "gpuwatch_hook")
sys.path.insert(0, os.path.join(HERE, ".."))

#: The layers, lowest first: a module imports only modules of a lower layer.
LAYERS = (
    # What every layer shares: the version; the warning, the run folder,
    # the ranks, the clock, one patch's install (attempt); the hook's own
    # CPU time.
    ("_version", "_env", "_cost"),
    # Leaves: what is read from torch, the profile's encoding, the C
    # function a frame calls, the look at a batch, the copies to the GPU,
    # what the job already does, the host syncs inside its step.
    ("_torch", "_pprof", "_callee", "_payload", "_repeats", "_h2d", "_settings", "_syncs"),
    # The stack sampler.
    ("_sampler",),
    # The workers' profiles; the ceiling; the GPU's time per step.
    ("_workerprof", "_ceiling", "_gpuprofile"),
    # The training process's profile; the stage times.
    ("_profiler", "_stages"),
    # Wait, step, the metrics page.
    ("_timing",),
    # The HTTP server and the announcement.
    ("_server",),
    # gpuwatch run's timing of every DataLoader.
    ("_run",),
    # The table of every patch.
    ("_patches",),
    # What run's sitecustomize calls; the package itself (watch()).
    ("_auto", "__init__"),
)

#: The one patch whose failure is no warning: where SIGPROF cannot be had,
#: a sampler thread profiles the worker instead (_workerprof._by_signal).
FALLS_BACK = "signal.SIGPROF: a worker's profile"

LAYER = {m: i for i, layer in enumerate(LAYERS) for m in layer}


def modules():
    return sorted(n[: -len(".py")] for n in os.listdir(PACKAGE) if n.endswith(".py"))


def parse(name):
    with open(os.path.join(PACKAGE, name + ".py"), encoding="utf-8") as f:
        return ast.parse(f.read(), name + ".py")


def hook_imports(tree):
    """(node, module imported) for every import of a hook module in tree,
    at any depth."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module is None:  # from . import a, b
                out.extend((node, a.name) for a in node.names)
            elif node.level == 1:  # from ._x import y
                out.append((node, node.module.split(".")[0]))
            elif node.level == 0 and node.module == "gpuwatch_hook":
                out.extend((node, a.name) for a in node.names)
            elif node.level == 0 and (node.module or "").startswith("gpuwatch_hook."):
                out.append((node, node.module.split(".")[1]))
            elif node.level > 1:
                out.append((node, "(outside the package)"))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "gpuwatch_hook":
                    out.append((node, "__init__"))
                elif a.name.startswith("gpuwatch_hook."):
                    out.append((node, a.name.split(".")[1]))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            v = node.args[0].value
            if isinstance(v, str) and (v == "gpuwatch_hook" or v.startswith("gpuwatch_hook.")):  # import_module("gpuwatch_hook._x")
                out.append((node, v.split(".")[1] if "." in v else "__init__"))
    return out


class LayersTest(unittest.TestCase):
    def test_every_module_is_in_a_layer(self):
        mods = modules()
        self.assertEqual([m for m in mods if m not in LAYER], [], "a module in no layer: add it to LAYERS")
        self.assertEqual([m for m in LAYER if m not in mods], [], "LAYERS names a module that is not there")
        self.assertEqual(len(LAYER), sum(len(layer) for layer in LAYERS), "a module in two layers")

    def test_imports_go_only_downward_and_at_the_top(self):
        bad = []
        for m in modules():
            tree = parse(m)
            top = set(id(n) for n in tree.body)
            for node, target in hook_imports(tree):
                where = "%s.py:%d" % (m, node.lineno)
                if target not in LAYER:
                    bad.append("%s imports %s, which is in no layer" % (where, target))
                elif LAYER[target] >= LAYER[m]:
                    bad.append("%s imports %s (layer %d) from layer %d: imports go only downward" % (where, target, LAYER[target], LAYER[m]))
                elif id(node) not in top:
                    bad.append("%s imports %s inside a function or block: at the module's top only" % (where, target))
        self.assertEqual(bad, [])

    def test_the_check_sees_what_it_must(self):
        """The parser finds each form of import, in a function too."""
        tree = ast.parse(
            "from . import _a, _b\nfrom ._c import x\nimport gpuwatch_hook._d\nfrom gpuwatch_hook import _e\n"
            "def f():\n    from . import _f\n    importlib.import_module('gpuwatch_hook._g')\n"
        )
        self.assertEqual(sorted(t for _, t in hook_imports(tree)), ["_a", "_b", "_c", "_d", "_e", "_f", "_g"])

    def test_a_patch_is_warned_by_its_rows_name(self):
        """Every name a module gives _env.attempt is a row of
        _patches.PATCHES (a warning names a patch the table lists), and
        every row a module installs at its own moment is named there."""
        from gpuwatch_hook import _patches

        names = {p.name for p in _patches.PATCHES}
        self.assertEqual(len(names), len(_patches.PATCHES), "two rows share a name")
        used = set()
        for m in modules():
            for node in ast.walk(parse(m)):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "attempt"
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                ):
                    used.add(node.args[0].value)
                    self.assertIn(node.args[0].value, names, "%s.py:%d warns a patch the table does not list" % (m, node.lineno))
        for p in _patches.PATCHES:
            if p.name == FALLS_BACK:
                continue
            if p.install is not None and not set(p.when) & set(_patches.HERE):
                self.assertIn(p.name, used, "%s is installed at its own moment but never through _env.attempt" % p.name)

    def test_the_architecture_names_every_module(self):
        with open(os.path.join(HERE, "..", "..", "docs", "architecture.md"), encoding="utf-8") as f:
            doc = f.read()
        missing = [m for m in modules() if m != "__init__" and not re.search(r"(?<![\w.])%s(?![\w])" % m, doc)]
        self.assertEqual(missing, [], "docs/architecture.md's python row or hook section names no such module")


if __name__ == "__main__":
    unittest.main()

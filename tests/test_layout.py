"""The import direction the README's Layout section states: a module imports only from its own
layer or the layers below it (imports inside functions included), so ``model`` imports nothing
above it and the pipeline reads top to bottom."""

import ast
import pathlib

from sources import GCE, nodes

#: Layers, lowest first; a module is matched by the longest prefix listed.
LAYERS = (
    ("errors", "validation", "resources"),
    ("accounting",),
    ("constraints",),
    ("priors.distributions", "priors.hypotheses"),
    ("model", "report"),
    ("solvers",),
    ("priors",),
    ("files",),
    ("solving",),
    ("calibration", "plot", "progress", "membership"),
    ("ledger",),
    ("cli", "__main__", ""),
)


def _layer(module: str) -> int:
    best, layer = -1, None
    for number, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".") or prefix == "") and len(prefix) > best:
                best, layer = len(prefix), number
    return layer


def _module(path: pathlib.Path) -> str:
    parts = path.relative_to(GCE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: pathlib.Path) -> tuple[str, set[str]]:
    package = path.relative_to(GCE).parts[:-1]
    module = _module(path)
    found = set()
    for node in nodes(path, ast.ImportFrom):
        if node.level:
            base = list(package)[: len(package) - (node.level - 1)]
            if node.module:
                found.add(".".join(base + [node.module]))
            else:
                found.update(".".join(base + [alias.name]) for alias in node.names)
        elif node.module and node.module.startswith("gce."):
            found.add(node.module[len("gce."):])
    return module, {name for name in found if name and name != module and name != "__version__"}


def test_every_module_has_a_layer():
    for path in GCE.rglob("*.py"):
        module = _module(path)
        assert _layer(module) is not None, module


def test_imports_point_down():
    upward = []
    for path in sorted(GCE.rglob("*.py")):
        module, imported = _imports(path)
        for target in imported:
            if _layer(target) > _layer(module):
                upward.append(f"{module} imports {target}")
    assert upward == []


def test_the_check_can_fail():
    """model importing the solvers would be reported (layer 4 importing layer 5)."""
    assert _layer("solvers.milp") > _layer("model") > _layer("accounting.kinds")
    assert _layer("priors.routes") > _layer("solvers") > _layer("priors.hypotheses")

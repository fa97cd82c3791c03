"""The import direction docs/contributing.md's Layout section states: a module imports only from its own
layer or the layers below it (imports inside functions included), so ``model`` imports nothing
above it and the pipeline reads top to bottom; and no two modules import each other, directly or
through others (a back-end the ledger opens by URL scheme is named by a dotted path in a table, not
imported, so it is no edge)."""

import ast
import importlib
import pathlib

import networkx as nx

from sources import GCE, nodes

#: Layers, lowest first; a module is matched by the longest prefix listed. The hypothesis records
#: (``hypotheses``, ``distributions``) sit below the model; ``priors`` (the engines, and the two thin
#: modules that re-export the records from their old place) above the solvers. The bridges from dp-accounting:
#: reading events (``bridges.dp_events``) beside the accounting it converts to, below the model that takes
#: events; ``GceAccountant`` (``bridges.accountant``, on the Poisson-subsampling engine) and the Opacus
#: accountants (``bridges.opacus``, on the allocation engines) above the priors. ``interrupts`` (Ctrl-C on the
#: command line) and ``files.paths`` (what a path is, before anything opens it) sit at the bottom: the ledger
#: and the table engines below the files use them. ``training`` (the noise for training, on the allocation
#: engines) beside ``calibration``, which reads its closed forms.
LAYERS = (
    ("errors", "validation", "resources", "effort", "interrupts", "files.paths"),
    ("accounting", "bridges"),
    ("constraints",),
    ("distributions", "hypotheses"),
    ("model", "report"),
    ("solvers",),
    ("priors",),
    ("files",),
    ("solving",),
    ("calibration", "training", "plot", "progress", "membership", "bridges.accountant", "bridges.opacus"),
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


#: Every module of the package, by dotted name below ``gce``.
MODULES = {_module(path): path for path in GCE.rglob("*.py")}


def _imports(path: pathlib.Path) -> tuple[str, set[str]]:
    """The module's name and the ``gce`` modules it imports: ``from .x import y`` names ``x``, and
    ``x.y`` as well when ``y`` is a submodule (``from .priors import routes``); ``import gce.x`` names ``x``."""
    package = path.relative_to(GCE).parts[:-1]
    module = _module(path)
    found = set()
    for node in nodes(path, ast.ImportFrom):
        if node.level:
            base = ".".join(list(package)[: len(package) - (node.level - 1)] + ([node.module] if node.module else []))
        elif node.module and (node.module == "gce" or node.module.startswith("gce.")):
            base = node.module[len("gce."):] if node.module != "gce" else ""
        else:
            continue
        if base:
            found.add(base)
        for alias in node.names:
            submodule = f"{base}.{alias.name}" if base else alias.name
            if submodule in MODULES:
                found.add(submodule)
    for node in nodes(path, ast.Import):
        for alias in node.names:
            if alias.name.startswith("gce."):
                found.add(alias.name[len("gce."):])
    return module, {name for name in found if name and name != module and name != "__version__"}


def _graph() -> nx.DiGraph:
    graph = nx.DiGraph()
    for module, path in sorted(MODULES.items()):
        graph.add_node(module)
        _, imported = _imports(path)
        graph.add_edges_from((module, target) for target in imported)
    return graph


def _cycles(graph: nx.DiGraph) -> list[list[str]]:
    """Every group of modules that reach each other through imports (a strongly connected component of
    more than one module, or a module importing itself), sorted."""
    return sorted(sorted(group) for group in nx.strongly_connected_components(graph)
                  if len(group) > 1 or graph.has_edge(*(next(iter(group)),) * 2))


def test_every_module_has_a_layer():
    for module in MODULES:
        assert _layer(module) is not None, module


def test_every_import_names_a_module():
    """An import the walk misreads would drop an edge: every target is a module of the package."""
    unknown = [f"{module} imports {target}" for module, target in _graph().edges if target not in MODULES]
    assert unknown == []


def test_imports_point_down():
    upward = []
    for path in sorted(MODULES.values()):
        module, imported = _imports(path)
        for target in imported:
            if _layer(target) > _layer(module):
                upward.append(f"{module} imports {target}")
    assert upward == []


def test_no_import_cycles():
    """No module reaches itself through imports; ``ledger.store`` opens ``ledger.postgres`` by a dotted path
    from its back-end table, so the two are a base and a plug-in, not a pair that import each other."""
    graph = _graph()
    assert _cycles(graph) == []
    assert graph.has_edge("ledger.postgres", "ledger.store")
    assert not graph.has_edge("ledger.store", "ledger.postgres")


def _above_the_records(graph: nx.DiGraph, module: str) -> list[str]:
    """What ``module`` reaches through imports, directly or not, that is in ``priors`` or above the model."""
    return sorted(target for target in nx.descendants(graph, module)
                  if target == "priors" or target.startswith("priors.") or _layer(target) > _layer("model"))


def test_the_records_sit_below_the_model():
    """Nothing ``model``, ``hypotheses`` or ``distributions`` imports, directly or not, is in ``priors``
    (the engines) or above the model; an import of the old home would be caught."""
    graph = _graph()
    for module in ("model", "hypotheses", "distributions"):
        assert _above_the_records(graph, module) == [], module
    assert graph.has_edge("model", "hypotheses") and graph.has_edge("hypotheses", "distributions")
    graph.add_edge("hypotheses", "priors.hypotheses")
    assert "priors.hypotheses" in _above_the_records(graph, "model")


def test_the_old_homes_re_export_the_same_objects():
    """``gce.priors.hypotheses`` and ``gce.priors.distributions`` still give every name they gave, and
    each is the object of the records' module (one class, so ``isinstance`` agrees either way)."""
    for old, new in (("gce.priors.hypotheses", "gce.hypotheses"), ("gce.priors.distributions", "gce.distributions")):
        old_module, new_module = importlib.import_module(old), importlib.import_module(new)
        assert old_module.__all__ == new_module.__all__
        for name in old_module.__all__:
            assert getattr(old_module, name) is getattr(new_module, name), f"{old}.{name}"
    assert importlib.import_module("gce.priors.hypotheses").format_log_count(0.0) == "1"


def test_the_checks_can_fail():
    """An upward import and a cycle would both be reported."""
    assert _layer("solvers.milp") > _layer("model") > _layer("accounting.kinds")
    assert _layer("priors.routes") > _layer("solvers") > _layer("hypotheses") > _layer("constraints")
    assert _layer("priors.hypotheses") > _layer("model")  # model importing the old home would be upward
    assert _cycles(nx.DiGraph([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")])) == [["a", "b", "c"]]
    assert _cycles(nx.DiGraph([("a", "a"), ("a", "b")])) == [["a"]]
    assert _cycles(nx.DiGraph([("a", "b"), ("b", "c")])) == []


def test_the_package_says_it_is_typed():
    """PEP 561: ``gce/py.typed`` exists (empty) and the wheel ships it (setuptools package data)."""
    import tomllib

    assert (GCE / "py.typed").read_bytes() == b""
    with open(GCE.parent / "pyproject.toml", "rb") as handle:
        package_data = tomllib.load(handle)["tool"]["setuptools"]["package-data"]
    assert "py.typed" in package_data["gce"]

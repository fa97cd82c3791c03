"""gce's own source files, parsed once per test run for the tests that read them (test_layout, test_validation)."""

from __future__ import annotations

import ast
import functools
import pathlib

GCE = pathlib.Path(__file__).resolve().parent.parent / "gce"

#: The node types those tests read; only these are kept (holding whole trees slows the garbage collector).
KINDS = (ast.ImportFrom, ast.Import, ast.BoolOp)


def nodes(path: pathlib.Path, kind: type[ast.AST]) -> tuple[ast.AST, ...]:
    """Every node of type ``kind`` (one of :data:`KINDS`) in the file's syntax tree, in ``ast.walk`` order."""
    if kind not in KINDS:
        raise ValueError(f"kind: {kind.__name__} is not kept; add it to sources.KINDS")
    return _kept(path)[KINDS.index(kind)]


@functools.cache
def _kept(path: pathlib.Path) -> tuple[tuple[ast.AST, ...], ...]:
    found: tuple[list, ...] = tuple([] for _ in KINDS)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, KINDS):
            found[KINDS.index(type(node))].append(node)
    return tuple(map(tuple, found))

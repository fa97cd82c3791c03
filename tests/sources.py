"""gce's own source files, parsed once per test run for the tests that read them (test_layout, test_validation)."""

from __future__ import annotations

import ast
import functools
import pathlib

GCE = pathlib.Path(__file__).resolve().parent.parent / "gce"


@functools.cache
def nodes(path: pathlib.Path) -> tuple[ast.AST, ...]:
    """Every node of the file's syntax tree (``ast.walk`` order)."""
    return tuple(ast.walk(ast.parse(path.read_text(encoding="utf-8"))))

"""One definition of integers and numbers for every reader (gce.validation)."""

import ast

import numpy as np
import pytest

from gce.validation import is_integer, is_number
from sources import GCE, nodes


@pytest.mark.parametrize("value", [0, -3, 10**30, np.int64(5), np.uint8(1)])
def test_integers(value):
    assert is_integer(value) and is_number(value)


@pytest.mark.parametrize("value", [True, False, np.bool_(True), 1.0, "1", None, [1]])
def test_not_integers(value):
    assert not is_integer(value)


@pytest.mark.parametrize("value", [0.5, float("inf"), float("nan"), np.float64(2.0), np.float32(0.25)])
def test_numbers(value):
    assert is_number(value) and not is_integer(value)


@pytest.mark.parametrize("value", [True, False, "0.5", None, 1j])
def test_not_numbers(value):
    assert not is_number(value)




def test_bool_exclusion_is_spelled_once():
    """`isinstance(x, bool) or not isinstance(x, ...)` appears only in gce/validation.py."""
    offenders = []
    for path in sorted(GCE.rglob("*.py")):
        rel = path.relative_to(GCE).as_posix()
        if rel == "validation.py":
            continue
        for node in nodes(path, ast.BoolOp):
            if (isinstance(node.op, ast.Or) and len(node.values) >= 2
                    and _is_bool_check(node.values[0])):
                offenders.append(f"{rel}:{node.lineno}")
    assert offenders == []


def _is_bool_check(node):
    return (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance"
            and len(node.args) == 2 and getattr(node.args[1], "id", None) == "bool")

"""What counts as an integer and a number in gce's inputs: one definition for every reader.

Records (guarantees, constraints, reports read back from JSON) and file readers all refuse
``True`` where a count or a parameter is expected: Python's ``bool`` is a subclass of ``int``,
so ``isinstance(True, int)`` alone would let ``epsilon = true`` through a TOML file as 1.
Each reader keeps its own message (the field it names and the range it states); these
predicates are the one place that decides the type.

Examples
--------
>>> is_integer(3), is_integer(True), is_integer(3.0)
(True, False, False)
>>> is_number(0.5), is_number(2), is_number(False), is_number("1")
(True, True, False, False)
"""

from __future__ import annotations

import numbers

__all__ = ["is_integer", "is_number"]


def is_integer(value: object) -> bool:
    """Whether ``value`` is an integer (Python or numpy), booleans excluded."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_number(value: object) -> bool:
    """Whether ``value`` is a real number (integer or float, Python or numpy), booleans excluded."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)

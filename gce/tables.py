"""Reading ``kind = "..."`` tables of scenario files (DESIGN.md, "Scenario files").

Mechanisms, constraints and hypotheses are all written as a table with a
``kind`` and that kind's keys. One reader checks them the same way and names
every offending field by its path in the file, e.g. ``constraints[3].m`` or
``hypotheses.h1.weights``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import InvalidParameterError, InvalidScenarioError

__all__ = ["TableKind", "in_file", "read_integer", "read_kind_table", "read_number"]

#: A reader checks a file value's type and returns the value for the record: reader(value, path).
Reader = Callable[[object, str], object]


def read_integer(value: object, path: str) -> int:
    """A file value that must be an integer (TOML booleans are not)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidScenarioError(path, f"must be an integer, got {value!r}")
    return value


def read_number(value: object, path: str) -> float:
    """A file value that must be a number (integer or float; booleans are not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidScenarioError(path, f"must be a number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class TableKind:
    """How one kind is written in a file.

    Parameters
    ----------
    record : callable
        Builds the object from keyword arguments (a frozen record's class).
    keys : mapping
        File key -> (record argument, reader, required).
    """

    record: Callable[..., Any]
    keys: Mapping[str, tuple[str, Reader, bool]]


def read_kind_table(table: object, path: str, kinds: Mapping[str, TableKind]) -> Any:
    """Build the record a ``kind`` table describes; errors name the field by its path.

    Raises
    ------
    InvalidScenarioError
        The value is not a table; ``kind`` is missing or unknown; a key is
        unknown or a required one missing; a reader or the record refuses a
        value (the record's field is mapped back to its file key).

    Examples
    --------
    >>> from gce.guarantees import PureDP
    >>> kinds = {"pure": TableKind(PureDP, {"epsilon": ("epsilon", lambda v, p: v, True)})}
    >>> read_kind_table({"kind": "pure", "epsilon": 1.0}, "mechanism", kinds)
    PureDP(epsilon=1.0)
    >>> read_kind_table({"kind": "pure", "epsilon": -1.0}, "invocations[2].mechanism", kinds)
    Traceback (most recent call last):
    ...
    gce.errors.InvalidScenarioError: invocations[2].mechanism.epsilon: must be >= 0, got -1.0
    """
    expected = ", ".join(kinds)
    if not isinstance(table, Mapping):
        raise InvalidScenarioError(path, f"must be a table with a 'kind' key ({expected}), got {table!r}")
    if "kind" not in table:
        raise InvalidScenarioError(f"{path}.kind", f"is missing; expected one of {expected}")
    kind = table["kind"]
    spec = kinds.get(kind) if isinstance(kind, str) else None
    if spec is None:
        raise InvalidScenarioError(f"{path}.kind", f"unknown kind {kind!r}; expected one of {expected}")
    for key in table:
        if key != "kind" and key not in spec.keys:
            raise InvalidScenarioError(f"{path}.{key}",
                                       f"is not a key of kind {kind!r}; its keys are {', '.join(spec.keys)}")
    arguments = {}
    for key, (argument, reader, required) in spec.keys.items():
        if key in table:
            arguments[argument] = reader(table[key], f"{path}.{key}")
        elif required:
            raise InvalidScenarioError(f"{path}.{key}", f"is missing (required for kind {kind!r})")
    try:
        return spec.record(**arguments)
    except InvalidScenarioError:
        raise
    except InvalidParameterError as error:
        raise in_file(error, path, spec) from None


def in_file(error: InvalidParameterError, path: str, spec: TableKind) -> InvalidScenarioError:
    """``error`` of a record's field, renamed to its key in the file under ``path``."""
    head, bracket, rest = error.field.partition("[")
    key = next((k for k, (argument, _, _) in spec.keys.items() if argument == head), head)
    return InvalidScenarioError(f"{path}.{key}{bracket}{rest}", error.detail)

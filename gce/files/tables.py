"""Reading ``kind = "..."`` tables of scenario files (docs/design.md, "Scenario files and the command line").

Mechanisms, constraints and hypotheses are all written as a table with a
``kind`` and that kind's keys. One reader checks them the same way and names
every offending field by its path in the file, e.g. ``constraints[3].m`` or
``hypotheses.h1.weights``.

Messages show the offending value as it is written in TOML
(:func:`toml_value`): ``true``, not ``True``; ``"x"``, not ``'x'``; long
values cut short; control characters escaped, so nothing a file holds can
reach a terminal as an escape sequence.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidParameterError, InvalidScenarioError
from ..validation import SHOWN_CHARACTERS as _SHOWN_CHARACTERS
from ..validation import is_integer, is_number, shown

__all__ = ["TableKind", "in_file", "key_path", "read_integer", "read_kind_table", "read_number", "toml_value"]

#: A reader checks a file value's type and returns the value for the record: reader(value, path).
Reader = Callable[[object, str], object]

#: The most characters of a value an error message shows; longer values end in "..." (:func:`gce.validation.shown`).
SHOWN_CHARACTERS = _SHOWN_CHARACTERS
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _key(key: object) -> str:
    text = key if isinstance(key, str) else str(key)
    return text if _BARE_KEY.fullmatch(text) else shown(text, SHOWN_CHARACTERS, spelling="toml")


def toml_value(value: object, limit: int = SHOWN_CHARACTERS) -> str:
    """``value`` as it is written in a TOML file, for error messages: :func:`gce.validation.shown` in TOML's
    spelling.

    Booleans are ``true``/``false``, strings are double-quoted basic strings
    (control characters, line and bidirectional-text controls as ``\\uXXXX``),
    infinities and NaN are ``inf``/``-inf``/``nan``. Values longer than
    ``limit`` characters end in ``...`` (a million-element list costs as much as
    its first few elements); integers wider than 128 bits are described by
    their size.

    Examples
    --------
    >>> toml_value(True), toml_value("x"), toml_value(float("inf")), toml_value(1e-06)
    ('true', '"x"', 'inf', '1e-06')
    >>> toml_value({"kind": "pure", "epsilon": -1.0, "a b": [1, 2]})
    '{ kind = "pure", epsilon = -1.0, "a b" = [1, 2] }'
    >>> toml_value("\\x1b[31m red")
    '"\\\\u001B[31m red"'
    >>> toml_value(list(range(100)))
    '[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, ...]'
    """
    return shown(value, limit, spelling="toml")


def key_path(path: str, key: object) -> str:
    """The path of ``key`` inside the table at ``path``: ``path.key``, quoted TOML-style unless a bare key.

    Examples
    --------
    >>> key_path("invocations[0]", "times"), key_path("", "title"), key_path("h", "a b")
    ('invocations[0].times', 'title', 'h."a b"')
    """
    return f"{path}.{_key(key)}" if path else _key(key)


def read_integer(value: object, path: str) -> int:
    """A file value that must be an integer (TOML booleans are not)."""
    if not is_integer(value):
        raise InvalidScenarioError(path, f"must be an integer, got {toml_value(value)}")
    return value


def read_number(value: object, path: str) -> float:
    """A file value that must be a number (integer or float; booleans are not)."""
    if not is_number(value):
        raise InvalidScenarioError(path, f"must be a number, got {toml_value(value)}")
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
    >>> from gce.accounting.guarantees import PureDP
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
        raise InvalidScenarioError(path, f"must be a table with a 'kind' key ({expected}), got {toml_value(table)}")
    if "kind" not in table:
        raise InvalidScenarioError(f"{path}.kind", f"is missing; expected one of {expected}")
    kind = table["kind"]
    spec = kinds.get(kind) if isinstance(kind, str) else None
    if spec is None:
        raise InvalidScenarioError(f"{path}.kind", f"unknown kind {toml_value(kind)}; expected one of {expected}")
    for key in table:
        if key != "kind" and key not in spec.keys:
            raise InvalidScenarioError(key_path(path, key),
                                       f"is not a key of kind {toml_value(kind)}; its keys are {', '.join(spec.keys)}")
    arguments = {}
    for key, (argument, reader, required) in spec.keys.items():
        if key in table:
            arguments[argument] = reader(table[key], f"{path}.{key}")
        elif required:
            raise InvalidScenarioError(f"{path}.{key}", f"is missing (required for kind {toml_value(kind)})")
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

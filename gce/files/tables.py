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

import datetime
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidParameterError, InvalidScenarioError
from ..validation import is_integer, is_number

__all__ = ["TableKind", "in_file", "key_path", "read_integer", "read_kind_table", "read_number", "toml_value"]

#: A reader checks a file value's type and returns the value for the record: reader(value, path).
Reader = Callable[[object, str], object]

#: The most characters of a value an error message shows; longer values end in "...".
SHOWN_CHARACTERS = 60
#: Nested lists and tables deeper than this are shown as [...] and {...} in messages.
_SHOWN_DEPTH = 3
#: Integers with more bits than this are described by their size, not written out.
_SHOWN_BITS = 128
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _escaped(char: str) -> str:
    """One character of a TOML basic string: escapes for quotes, backslash and every control character."""
    if char in _ESCAPES:
        return _ESCAPES[char]
    code = ord(char)
    if code < 0x20 or 0x7F <= code <= 0x9F or 0x2028 <= code <= 0x2029 or 0x202A <= code <= 0x202E \
            or 0x2066 <= code <= 0x2069:
        return f"\\u{code:04X}"
    return char


def _toml_string(text: str, budget: int) -> str:
    """A TOML basic string; one cut short ends in ``"...`` (after its closing quote)."""
    out, used = ['"'], 2
    for char in text:
        piece = _escaped(char)
        used += len(piece)
        if used > budget:
            return "".join(out) + '"...'
        out.append(piece)
    return "".join(out) + '"'


def _render(value: object, budget: int, depth: int) -> str:
    """``value`` in TOML syntax, stopping early once longer than ``budget`` characters."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if value.bit_length() > _SHOWN_BITS:
            return f"<an integer of {value.bit_length()} bits>"
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return repr(value) if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, str):
        return _toml_string(value, budget)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return _sequence(value, budget, depth)
    if isinstance(value, Mapping):
        return _table(value, budget, depth)
    return _toml_string(repr(value), budget)[1:-1]


def _sequence(items: list[object] | tuple[object, ...], budget: int, depth: int) -> str:
    if depth >= _SHOWN_DEPTH and items:
        return "[...]"
    parts, used = [], 2
    for item in items:
        if used > budget:
            parts.append("...")
            break
        parts.append(_render(item, budget - used, depth + 1))
        used += len(parts[-1]) + 2
    return "[" + ", ".join(parts) + "]"


def _table(table: Mapping[Any, object], budget: int, depth: int) -> str:
    if not table:
        return "{}"
    if depth >= _SHOWN_DEPTH:
        return "{...}"
    parts, used = [], 4
    for key, item in table.items():
        if used > budget:
            parts.append("...")
            break
        parts.append(f"{_key(key)} = {_render(item, budget - used, depth + 1)}")
        used += len(parts[-1]) + 2
    return "{ " + ", ".join(parts) + " }"


def _key(key: object) -> str:
    text = key if isinstance(key, str) else str(key)
    return text if _BARE_KEY.fullmatch(text) else _toml_string(text, SHOWN_CHARACTERS)


def toml_value(value: object, limit: int = SHOWN_CHARACTERS) -> str:
    """``value`` as it is written in a TOML file, for error messages.

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
    text = _render(value, limit, 0)
    return text if len(text) <= 2 * limit else text[:2 * limit] + "..."


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

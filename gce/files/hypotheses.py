"""The scenario-file form of hypotheses: the ``[hypotheses]`` table.

docs/design.md, "Scenario files and the command line".

One row per hypothesis kind (:data:`HYPOTHESIS_KINDS`): the record of
:mod:`gce.hypotheses` and, per file key, its reader. Read with
:func:`hypothesis_from_dict`, written back with :func:`hypothesis_to_dict`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..errors import InvalidScenarioError
from ..validation import is_integer
from ..hypotheses import Explicit, Hypothesis, Point, Rates, Uniform
from .tables import TableKind, read_integer, read_kind_table, read_number, toml_value

__all__ = ["HYPOTHESIS_KINDS", "hypothesis_from_dict", "hypothesis_to_dict"]


def _scenario_integer(value: object, path: str, n: int) -> int:
    """An integer key (``min_members``, ``max_members``)."""
    return read_integer(value, path)


def _scenario_indices(value: object, path: str, n: int) -> list[int]:
    """A list of database indices in [0, n), each named by its path on error."""
    if not isinstance(value, list):
        raise InvalidScenarioError(path, f"must be a list of database indices, got {toml_value(value)}")
    out = []
    for i, item in enumerate(value):
        if not is_integer(item):
            raise InvalidScenarioError(f"{path}[{i}]", f"must be a database index, got {toml_value(item)}")
        if not 0 <= item < n:
            raise InvalidScenarioError(f"{path}[{i}]", f"database {item} is out of range [0, {n})")
        out.append(item)
    return out


def _scenario_sets(value: object, path: str, n: int) -> list[list[int]]:
    """A list of membership sets (lists of database indices)."""
    if not isinstance(value, list):
        raise InvalidScenarioError(path, f"must be a list of lists of database indices, got {toml_value(value)}")
    return [_scenario_indices(item, f"{path}[{i}]", n) for i, item in enumerate(value)]


def _scenario_numbers(value: object, path: str, n: int) -> list[float]:
    """A list of numbers (``weights``)."""
    if not isinstance(value, list):
        raise InvalidScenarioError(path, f"must be a list of numbers, got {toml_value(value)}")
    return [read_number(item, f"{path}[{i}]") for i, item in enumerate(value)]


def _scenario_rates(value: object, path: str, n: int) -> list[float]:
    """One rate per database."""
    rates = _scenario_numbers(value, path, n)
    if len(rates) != n:
        raise InvalidScenarioError(path, f"needs one rate per database ({n}), got {len(rates)}")
    return rates


@dataclass(frozen=True)
class _Kind:
    """How one hypothesis kind is written in a file: record, and per key (reader, required).

    File keys are the record's field names; a reader checks the file's types
    (and database indices against ``n``) and returns the value for the record.
    """

    record: type[Hypothesis]
    keys: Mapping[str, tuple[Callable[[object, str, int], object], bool]]


#: The file form of every hypothesis kind, by ``kind`` (docs/design.md, "Scenario files and the command line").
HYPOTHESIS_KINDS: Mapping[str, _Kind] = {
    "point": _Kind(Point, {"members": (_scenario_indices, True)}),
    "uniform": _Kind(Uniform, {"min_members": (_scenario_integer, False), "max_members": (_scenario_integer, False)}),
    "explicit": _Kind(Explicit, {"support": (_scenario_sets, True), "weights": (_scenario_numbers, True)}),
    "rates": _Kind(Rates, {"rates": (_scenario_rates, True)}),
}


def hypothesis_from_dict(d: Mapping[str, object], path: str, n: int) -> Hypothesis:
    """Read one entry of a scenario file's ``[hypotheses]`` table.

    Parameters
    ----------
    d : mapping
        The entry, as parsed from TOML, e.g. ``{"kind": "uniform", "min_members": 1}``.
    path : str
        Its path in the file, used in error fields, e.g. ``"hypotheses.h1"``.
    n : int
        Number of databases; indices are range-checked against it.

    Returns
    -------
    Hypothesis

    Raises
    ------
    InvalidScenarioError
        On an unknown kind, a missing or unknown key, a wrong type, an
        out-of-range database or an invalid value; the field is the full path,
        e.g. ``hypotheses.h1.weights``.

    References
    ----------
    001, Sec. III-A (Examples 1-2) and Sec. V-B (adversary priors).

    Examples
    --------
    >>> hypothesis_from_dict({"kind": "uniform", "min_members": 1}, "hypotheses.h1", 3)
    Uniform(min_members=1, max_members=None)
    >>> hypothesis_from_dict({"kind": "explicit", "support": [[0], [1]], "weights": [0.5, 0.6]},
    ...                      "hypotheses.h1", 3)
    Traceback (most recent call last):
    ...
    gce.errors.InvalidScenarioError: hypotheses.h1.weights: must sum to 1, got 1.1
    """
    kinds = {
        name: TableKind(spec.record, {key: (key, _with_n(reader, n), required)
                                      for key, (reader, required) in spec.keys.items()})
        for name, spec in HYPOTHESIS_KINDS.items()
    }
    return read_kind_table(d, path, kinds)


def _with_n(reader: Callable[[object, str, int], object], n: int) -> Callable[[object, str], object]:
    """A reader with ``n`` bound, in the (value, path) form of :func:`~gce.files.tables.read_kind_table`."""
    return lambda value, path: reader(value, path, n)


def hypothesis_to_dict(hypothesis: Hypothesis) -> dict[str, object]:
    """The scenario-file table of a hypothesis; inverse of :func:`hypothesis_from_dict`.

    Examples
    --------
    >>> hypothesis_to_dict(Explicit(({1, 0},), (1.0,)))
    {'kind': 'explicit', 'support': [[0, 1]], 'weights': [1.0]}
    """
    table: dict[str, object] = {"kind": hypothesis.kind}
    for key in HYPOTHESIS_KINDS[hypothesis.kind].keys:
        value = getattr(hypothesis, key)
        if value is None:
            continue
        if key == "support":
            value = [sorted(s) for s in value]
        elif isinstance(value, tuple):
            value = list(value)
        table[key] = value
    return table

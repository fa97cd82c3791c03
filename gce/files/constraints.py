"""Membership constraints in the scenario-file format (docs/design.md, "Scenario files and the command line").

One ``[[constraints]]`` table per constraint::

    kind = "at_most"      m = 365, among = "all" | [indices]   (among optional)
    kind = "exclusive"    databases = [indices]
    kind = "together"     databases = [indices]
    kind = "conflicts"    edges = [[u, v], ...]
    kind = "patterns"     allowed = [[indices], ...]

The table of kinds below is the only place where file keys meet record
fields. Errors are :class:`~gce.errors.InvalidScenarioError` whose field is the
path in the file, e.g. ``constraints[3].m``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..errors import InvalidParameterError, InvalidScenarioError
from .tables import TableKind, in_file, read_integer, read_kind_table, toml_value
from ..constraints.base import Constraint, check_n
from ..constraints.constraint_set import ConstraintSet
from ..constraints.kinds import AtMost, Conflicts, Exclusive, Patterns, Together

__all__ = ["constraint_from_dict", "constraint_to_dict", "constraint_set_from_dicts", "CONSTRAINT_KINDS"]


def _index_list(value: object, path: str) -> list[int]:
    if not isinstance(value, list):
        raise InvalidScenarioError(path, f"must be a list of database indices, got {toml_value(value)}")
    return [read_integer(item, f"{path}[{position}]") for position, item in enumerate(value)]


def _among(value: object, path: str) -> list[int] | None:
    if value == "all":
        return None
    if isinstance(value, str):
        raise InvalidScenarioError(path, f'must be "all" or a list of database indices, got {toml_value(value)}')
    return _index_list(value, path)


def _list_of_index_lists(value: object, path: str) -> list[list[int]]:
    if not isinstance(value, list):
        raise InvalidScenarioError(path, f"must be a list of lists of database indices, got {toml_value(value)}")
    return [_index_list(item, f"{path}[{position}]") for position, item in enumerate(value)]


#: The file form of every constraint kind, by ``kind``: file key -> (record field, reader, required).
CONSTRAINT_KINDS: Mapping[str, TableKind] = {
    "at_most": TableKind(AtMost, {"m": ("m", read_integer, True), "among": ("among", _among, False)}),
    "exclusive": TableKind(Exclusive, {"databases": ("group", _index_list, True)}),
    "together": TableKind(Together, {"databases": ("group", _index_list, True)}),
    "conflicts": TableKind(Conflicts, {"edges": ("edges", _list_of_index_lists, True)}),
    "patterns": TableKind(Patterns, {"allowed": ("allowed", _list_of_index_lists, True)}),
}


def constraint_from_dict(d: Mapping[str, object], index: int, n: int | None = None) -> Constraint:
    """Read the ``index``-th ``[[constraints]]`` table of a scenario file.

    Parameters
    ----------
    d : mapping
        The table, as parsed from TOML.
    index : int
        Its position in the file, used in error fields (``constraints[index]``).
    n : int, optional
        Number of databases; when given, indices are also range-checked.

    Returns
    -------
    Constraint

    Raises
    ------
    InvalidScenarioError
        On an unknown kind, a missing or unknown key, a wrong type or an
        invalid value; the field is the path, e.g. ``constraints[3].m``.

    References
    ----------
    001, Sec. V-A (membership constraints on the b-vectors).

    Examples
    --------
    >>> constraint_from_dict({"kind": "at_most", "m": 365}, 0)
    AtMost(m=365, among=None)
    >>> constraint_from_dict({"kind": "exclusive", "databases": [0, 0]}, 2)
    Traceback (most recent call last):
    ...
    gce.errors.InvalidScenarioError: constraints[2].databases: lists database 0 more than once
    """
    record = read_kind_table(d, f"constraints[{index}]", CONSTRAINT_KINDS)
    if n is not None:
        try:
            record.validate(n)
        except InvalidParameterError as error:
            raise in_file(error, f"constraints[{index}]", CONSTRAINT_KINDS[record.kind]) from None
    return record


def _to_file_value(value: object) -> object:
    if isinstance(value, frozenset):
        return sorted(value)
    if isinstance(value, tuple):
        return [_to_file_value(item) for item in value]
    return value


def constraint_to_dict(constraint: Constraint) -> dict[str, object]:
    """The scenario-file table of a constraint; inverse of :func:`constraint_from_dict`.

    Parameters
    ----------
    constraint : Constraint

    Returns
    -------
    dict
        ``kind`` and the kind's keys; optional keys left at ``None`` are omitted.

    Examples
    --------
    >>> constraint_to_dict(Exclusive((2, 0)))
    {'kind': 'exclusive', 'databases': [0, 2]}
    """
    spec = CONSTRAINT_KINDS[constraint.kind]
    table: dict[str, object] = {"kind": constraint.kind}
    for key, (field, _, _) in spec.keys.items():
        value = getattr(constraint, field)
        if value is not None:
            table[key] = _to_file_value(value)
    return table


def constraint_set_from_dicts(n: int, tables: Sequence[Mapping[str, object]]) -> ConstraintSet:
    """The :class:`ConstraintSet` of a scenario file's ``[[constraints]]`` tables.

    Parameters
    ----------
    n : int
        Number of databases (the file's ``databases`` key).
    tables : sequence of mapping

    Returns
    -------
    ConstraintSet

    Raises
    ------
    InvalidScenarioError
        Naming the field in the file, e.g. ``constraints[1].databases``.
    """
    try:
        n = check_n(n, "databases")
    except InvalidParameterError as error:
        raise InvalidScenarioError(error.field, error.detail) from None
    if not isinstance(tables, Sequence) or isinstance(tables, (str, bytes)):
        raise InvalidScenarioError("constraints", f"must be a list of tables, got {toml_value(tables)}")
    return ConstraintSet(n, tuple(constraint_from_dict(t, i, n) for i, t in enumerate(tables)))

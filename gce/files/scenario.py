"""Scenario files: the TOML form of a scenario (docs/design.md, "Scenario files and the command line").

A scenario file is a contract other tools read, so this module is strict: every
key is known, every value is checked, and every error is an
:class:`~gce.errors.InvalidScenarioError` whose field is the path in the file,
e.g. ``invocations[0].mechanism.epsilon`` or ``constraints[2].m``, with the
value as written in TOML (:func:`gce.files.tables.toml_value`)::

    title = "Hospitals"
    databases = 1000                 # n, or a list of distinct names
    neighborhood = "unbounded"       # or "bounded"
    delta = 1e-6                     # or epsilon = ...; at most one

    [[invocations]]
    databases = "all"                # "all" | an index or name | a list of them
    repeat = 1
    mechanism = { kind = "approx", epsilon = 0.05, delta = 1e-10 }

    [[constraints]]
    kind = "at_most"
    m = 365

Where names are given, every database reference in invocations, constraints
and hypotheses may be a name or an index; ``databases = "all"`` also works for
the ``exclusive`` and ``together`` constraints. A constraint of kind
``from_data`` (``file = "members.csv"``, ``patterns = false``) estimates the
at_most bound (and optionally the allowed patterns) from a membership table
(001, Sec. V-A, the store chain); every report then says so.

What a file may ask for is limited before anything is allocated, so a few bytes
cannot ask for gigabytes (hardening):

- the file itself: at most :data:`MAX_SCENARIO_BYTES` (64 MiB), UTF-8 (a
  leading byte-order mark is skipped), tables and arrays nested at most
  :data:`MAX_DEPTH` deep;
- numbers: integers fit in 64 bits (TOML's own rule), floats are doubles (a
  number written that overflows to infinity or underflows to 0 is refused, with
  its path);
- ``databases``: at most :data:`MAX_DATABASES`; the invocation tables together
  list at most :data:`MAX_INVOCATION_ENTRIES` (database, invocation) pairs;
  ``repeat`` is a count, at most :data:`MAX_REPEAT` (2**53), never expanded;
- ``from_data`` files: resolved against the scenario's folder and refused
  outside it (symbolic links followed) unless ``allow_outside_files=True``
  (``gce --allow-outside-files``); only regular files, never echoed in errors
  (:func:`gce.constraints.estimate_membership`).
"""

from __future__ import annotations

import dataclasses
import glob
import math
import os
import pathlib
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..constraints import ConstraintSet, estimate_membership
from ..constraints.tables import MembershipTable, membership_statistics
from ..constraints.neighborhood import NEIGHBORHOODS
from .constraints import constraint_from_dict
from ..errors import InfeasibleConstraintsError, InvalidParameterError, InvalidScenarioError, ResourceLimitError
from ..validation import MAX_TABLE_NESTING, is_integer, shown, walk_data
from ..accounting.guarantees import Guarantee
from ..accounting.kinds import KINDS
from ..hypotheses import Hypothesis
from .hypotheses import hypothesis_from_dict
from .paths import open_regular, path_problem
from ..model import Databases, InvocationGroup, Invocations, Scenario, check_target
from .tables import TableKind, key_path, read_kind_table, read_number, toml_value

__all__ = [
    "MAX_DATABASES",
    "MAX_DEPTH",
    "MAX_INVOCATION_ENTRIES",
    "MAX_REPEAT",
    "MAX_SCENARIO_BYTES",
    "MECHANISM_KINDS",
    "load_scenario",
    "load_scenario_at_most",
    "read_fragment",
    "scenario_from_dict",
]

#: The largest scenario file read, in bytes (64 MiB); at most one byte more is read to tell.
MAX_SCENARIO_BYTES = 64 * 2**20
#: How deep tables and arrays may nest (the deepest real scenario nests about 6 levels;
#: :data:`gce.validation.MAX_TABLE_NESTING`), in a file and in a ``--mechanism`` fragment (:func:`read_fragment`).
MAX_DEPTH = MAX_TABLE_NESTING
#: The most databases a scenario file may declare (as a count or as names).
MAX_DATABASES = 10**7
#: The most (database, invocation) pairs all [[invocations]] tables together may list.
MAX_INVOCATION_ENTRIES = 10**7
#: The largest ``repeat``: a count kept as one number (every integer up to 2**53 is exact in a double).
MAX_REPEAT = 2**53
#: TOML integers are 64-bit signed (TOML 1.0, "Integer").
_INT64 = (-(2**63), 2**63 - 1)

_TOP_LEVEL = ("title", "databases", "neighborhood", "delta", "epsilon", "rtol", "invocations", "constraints",
              "hypotheses")
_INVOCATION_KEYS = ("databases", "repeat", "mechanism")


def _mechanism_table(value: object, path: str) -> Guarantee:
    return read_kind_table(value, path, MECHANISM_KINDS)


#: The file form of every mechanism kind, by ``kind``: file key -> (record field, reader, required).
#: Names and keys are each kind's row in :data:`gce.accounting.kinds.KINDS`; a field ``mechanism``
#: holds a nested mechanism table, every other one a number.
MECHANISM_KINDS: Mapping[str, TableKind] = {
    row.name: TableKind(row.record, {key: (field, _mechanism_table if field == "mechanism" else read_number, required)
                                     for key, field, required in row.keys})
    for row in KINDS.values()
}


def mechanism_from_dict(table: object, path: str) -> Guarantee:
    """Read a ``mechanism = { kind = ..., ... }`` table at ``path`` (nested at most :data:`MAX_DEPTH` levels,
    as in a file; every error names the field by its path under ``path``).

    Examples
    --------
    >>> mechanism_from_dict({"kind": "approx", "epsilon": 0.05, "delta": 1e-10}, "mechanism")
    ApproxDP(epsilon=0.05, delta=1e-10)
    >>> mechanism_from_dict({"kind": "pure", "epsilon": -1}, "invocations[0].mechanism")
    Traceback (most recent call last):
    ...
    gce.errors.InvalidScenarioError: invocations[0].mechanism.epsilon: must be >= 0, got -1.0
    """
    _check_tree(table, path)
    return _mechanism_table(table, path)


# ---------------------------------------------------------------------------
# The parsed tree: numbers TOML cannot hold, nesting


class _Unrepresentable:
    """A float written in the file that a double cannot hold (it overflowed or underflowed)."""

    def __init__(self, text: str, value: float):
        self.text, self.value = text, value

    def problem(self) -> str:
        if math.isinf(self.value):
            return f"must be finite, got {toml_value(self.value)} (the number written overflows a double)"
        return (f"is too small for a double: the number written rounds to {toml_value(self.value)} "
                f"(write 0 if 0 is meant)")


def _parse_float(text: str) -> float | _Unrepresentable:
    """tomllib's ``parse_float``: a double, or a marker for a number that overflowed or underflowed."""
    value = float(text)
    written = text.lower().lstrip("+-")
    if math.isinf(value) and written != "inf":
        return _Unrepresentable(text, value)
    if value == 0.0 and any(digit in "123456789" for digit in written.split("e")[0]):
        return _Unrepresentable(text, value)
    return value


def _problem(value: object) -> str | None:
    """What is wrong with a value of the file that is no table or array (:func:`_check_tree`)."""
    if isinstance(value, _Unrepresentable):
        return value.problem()
    if is_integer(value) and not _INT64[0] <= value <= _INT64[1]:
        return f"must fit in a 64-bit integer (TOML integers are 64-bit), got {toml_value(value)}"
    return None


def _check_tree(table: object, path: str = "") -> None:
    """Refuse numbers a double or a 64-bit integer cannot hold, and nesting deeper than :data:`MAX_DEPTH` (a
    table inside itself too: a Python table, :func:`scenario_from_dict`), without recursion
    (:func:`gce.validation.walk_data`).

    Raises
    ------
    InvalidScenarioError
        Naming the value by its path under ``path``, e.g. ``invocations[0].mechanism.rho``.
    """
    walk_data(table, path, _problem, limit=MAX_DEPTH, error=_at_scenario,
              too_deep=f"nests tables or arrays more than {MAX_DEPTH} levels deep",
              key_suffix=lambda key: "." + key_path("", key))


def _at_scenario(field: str, message: str) -> InvalidScenarioError:
    return InvalidScenarioError(field or "scenario", message)


# ---------------------------------------------------------------------------
# Databases and references to them


@dataclass(frozen=True)
class _Refs:
    """How a file refers to its databases: an index 0..n-1, or a name when names are given."""

    databases: Databases
    by_name: Mapping[str, int]

    @property
    def n(self) -> int:
        return self.databases.n

    def index(self, value: object, path: str) -> int:
        """The index of a reference, or an error naming ``path`` and the value as written."""
        if isinstance(value, str) and value in self.by_name:
            return self.by_name[value]
        if not is_integer(value) or not 0 <= value < self.n:
            names = " or their names" if self.by_name else ""
            raise InvalidScenarioError(path, f"unknown database {toml_value(value)} "
                                             f"(databases are 0..{self.n - 1}{names})")
        return value


def _databases(value: object) -> _Refs:
    """``databases``: a count 1..MAX_DATABASES or a list of distinct names (checked before anything is built)."""
    if isinstance(value, list):
        if not value:
            raise InvalidScenarioError("databases", "the list of names is empty")
        if len(value) > MAX_DATABASES:
            raise InvalidScenarioError("databases", f"lists {len(value):,} names; at most {MAX_DATABASES:,} "
                                                    f"databases are supported")
        by_name: dict[str, int] = {}
        for i, name in enumerate(value):
            if not isinstance(name, str):
                raise InvalidScenarioError(f"databases[{i}]", f"must be a name (a string), got {toml_value(name)}")
            if name in by_name:
                raise InvalidScenarioError(f"databases[{i}]", f"repeats the name {toml_value(name)} "
                                                              f"(databases[{by_name[name]}])")
            by_name[name] = i
        return _Refs(Databases(len(value), tuple(value)), by_name)
    if not is_integer(value):
        raise InvalidScenarioError("databases", f"must be a count or a list of names, got {toml_value(value)}")
    if not 1 <= value <= MAX_DATABASES:
        raise InvalidScenarioError("databases", f"must be a count in 1..{MAX_DATABASES:,}, got {toml_value(value)}")
    return _Refs(Databases(value), {})


def _resolve_names(refs: _Refs, value: object, path: str, inside: bool = False) -> object:
    """Replace database names by indices inside (nested) lists; other values are kept."""
    if not refs.by_name:
        return value
    if isinstance(value, list):
        return [_resolve_names(refs, item, f"{path}[{i}]", True) for i, item in enumerate(value)]
    if inside and isinstance(value, str):
        return refs.index(value, path)
    return value


def _constraint_value(refs: _Refs, key: str, value: object, path: str) -> object:
    """A constraint's value with names resolved; ``databases = "all"`` (exclusive, together) is every database."""
    if key == "kind":
        return value
    if key == "databases" and value == "all":
        return list(range(refs.n))
    return _resolve_names(refs, value, path)


# ---------------------------------------------------------------------------
# Invocations


def _members(refs: _Refs, value: object, path: str) -> range | np.ndarray:
    """The databases an invocation table lists: "all", one reference, or a non-empty list of them.

    A range for "all" and for one database (nothing per database is built), else an index array:
    a list of integers is checked and converted in one vectorised pass, a list with names one by one.
    """
    if value == "all":
        return range(refs.n)
    if isinstance(value, list):
        if not value:
            raise InvalidScenarioError(path, "the list is empty")
        if set(map(type, value)) == {int}:  # indices only (TOML integers fit in 64 bits): checked at once
            indices = np.array(value, dtype=np.int64)
            outside = (indices < 0) | (indices >= refs.n)
            if outside.any():
                j = int(np.argmax(outside))
                refs.index(value[j], f"{path}[{j}]")  # raises, naming the entry
            return indices
        return np.array([refs.index(r, f"{path}[{j}]") for j, r in enumerate(value)], dtype=np.int64)
    index = refs.index(value, path)
    return range(index, index + 1)


def _repeat(value: object, path: str) -> int:
    """``repeat``: a count 1..MAX_REPEAT, kept as one number (never expanded into invocations)."""
    if not is_integer(value) or not 1 <= value <= MAX_REPEAT:
        raise InvalidScenarioError(path, f"must be an integer in 1..2**53 ({MAX_REPEAT:,}), got {toml_value(value)}")
    return value


def _entries(refs: _Refs, value: object) -> int:
    """How many (database, invocation) pairs a table's ``databases`` lists (before they are built)."""
    return refs.n if value == "all" else len(value) if isinstance(value, list) else 1


def _invocation_table(refs: _Refs, table: object, path: str) -> InvocationGroup:
    if not isinstance(table, Mapping):
        raise InvalidScenarioError(path, f"must be a table, got {toml_value(table)}")
    for key in table:
        if key not in _INVOCATION_KEYS:
            raise InvalidScenarioError(key_path(path, key), f"is not a key of an invocation; its keys are "
                                                            f"{', '.join(_INVOCATION_KEYS)}")
    for key in ("databases", "mechanism"):
        if key not in table:
            raise InvalidScenarioError(f"{path}.{key}", "is missing")
    repeat = _repeat(table.get("repeat", 1), f"{path}.repeat")
    guarantee = _mechanism_table(table["mechanism"], f"{path}.mechanism")  # (the file's tree is checked)
    return InvocationGroup(_members(refs, table["databases"], f"{path}.databases"), guarantee, repeat)


def _invocations(refs: _Refs, tables: object) -> Invocations:
    """One :class:`~gce.model.InvocationGroup` per ``[[invocations]]`` table: the columnar form, never one
    object per database."""
    if not isinstance(tables, list) or not tables:
        raise InvalidScenarioError("invocations", "needs at least one [[invocations]] table")
    total = 0
    for i, table in enumerate(tables):
        total += _entries(refs, table.get("databases")) if isinstance(table, Mapping) else 0
        if total > MAX_INVOCATION_ENTRIES:
            raise InvalidScenarioError(f"invocations[{i}].databases",
                                       f"the invocation tables up to here list {total:,} (database, invocation) "
                                       f"pairs; at most {MAX_INVOCATION_ENTRIES:,} are supported (use repeat "
                                       f"for repeated runs)")
    return Invocations(_invocation_table(refs, table, f"invocations[{i}]") for i, table in enumerate(tables))


# ---------------------------------------------------------------------------
# Constraints, data files, hypotheses, target


def _data_file(file: str, folder: pathlib.Path, allow_outside: bool, field: str) -> pathlib.Path:
    """The path a ``from_data`` file names: relative to ``folder``, and inside it unless ``allow_outside``.

    Symbolic links are followed before the check, so a link in the folder to a
    file elsewhere is outside too.
    """
    named = toml_value(file)
    try:
        base = folder.resolve()
        target = (base / file).resolve()
    except ValueError:  # a NUL character
        raise InvalidScenarioError(field, f"cannot read {named}: a path has no NUL characters") from None
    except (OSError, RuntimeError) as error:  # a loop of symbolic links
        raise InvalidScenarioError(field, f"cannot read {named}: {getattr(error, 'strerror', None) or error}") \
            from None
    if not allow_outside and not target.is_relative_to(base):
        raise InvalidScenarioError(field, f"{named} is outside the scenario's folder {shown(str(base), 200)} (symbolic "
                                          f"links followed); data files are read there only, unless "
                                          f"allow_outside_files=True (gce: --allow-outside-files)")
    if not target.exists():
        raise InvalidScenarioError(field, f"cannot read {named} (looked for {shown(str(target), 200)})")
    problem = path_problem(target)  # a folder, a device, a named pipe: refused before an engine opens it
    if problem is not None:
        raise InvalidScenarioError(field, f"{named} {problem}")
    return target


#: The keys of a ``kind = "from_data"`` table; ``file`` is read by Python's csv module (as always), ``source``
#: (CSV or Parquet, one file or a glob) and ``database`` with ``query`` by the DuckDB engine.
_FROM_DATA_KEYS = ("kind", "file", "source", "database", "query", "columns", "patterns", "header", "enforced")


def _data_files(pattern: str, folder: pathlib.Path, allow_outside: bool, field: str) -> tuple[str, ...]:
    """The files a ``source`` names (a path or a glob), each relative to ``folder`` and confined to it."""
    if not any(c in pattern for c in "*?["):
        return (str(_data_file(pattern, folder, allow_outside, field)),)
    try:
        matches = sorted(glob.glob(os.path.join(folder, pattern), recursive=True))
    except ValueError:
        raise InvalidScenarioError(field, f"cannot read {toml_value(pattern)}: a path has no NUL characters") \
            from None
    files = [m for m in matches if os.path.isfile(m)]
    if not files:
        raise InvalidScenarioError(field, f"{toml_value(pattern)} matches no file (looked in "
                                          f"{shown(str(folder.resolve()), 200)})")
    return tuple(str(_data_file(os.path.relpath(f, folder), folder, allow_outside, field)) for f in files)


def _from_data_options(table: Mapping[str, object], path: str) -> tuple[bool, bool | None, bool, object]:
    patterns, header, enforced = table.get("patterns", False), table.get("header"), table.get("enforced", False)
    if not isinstance(patterns, bool):
        raise InvalidScenarioError(f"{path}.patterns", f"must be true or false, got {toml_value(patterns)}")
    if header is not None and not isinstance(header, bool):
        raise InvalidScenarioError(f"{path}.header", f"must be true or false, got {toml_value(header)}")
    if not isinstance(enforced, bool):
        raise InvalidScenarioError(f"{path}.enforced", f"must be true or false, got {toml_value(enforced)}")
    columns = table.get("columns")
    if columns is not None and not (isinstance(columns, list) and len(columns) == 2
                                    and all(isinstance(c, str) and c for c in columns)):
        raise InvalidScenarioError(f"{path}.columns", f"must be two column names [individual, database], "
                                                      f"got {toml_value(columns)}")
    return patterns, header, enforced, columns


def _from_data(refs: _Refs, table: Mapping[str, object], path: str, folder: pathlib.Path, allow_outside: bool):
    """A ``kind = "from_data"`` table: at_most (and optionally patterns) estimated from a membership table."""
    keys = _FROM_DATA_KEYS
    for key in table:
        if key not in keys:
            raise InvalidScenarioError(key_path(path, key), f'is not a key of kind "from_data"; its keys are '
                                                            f"{', '.join(keys[1:])}")
    given = [key for key in ("file", "source", "database") if key in table]
    if len(given) > 1:
        raise InvalidScenarioError(f"{path}.{given[1]}", f"give one of file, source and database, not "
                                                         f"{' and '.join(given)}")
    if given and given[0] != "file":
        return _from_engine(refs, table, path, given[0], folder, allow_outside)
    for key in ("query", "columns"):
        if key in table:
            raise InvalidScenarioError(f"{path}.{key}", 'is read with source or database, not file')
    file = table.get("file")
    if not isinstance(file, str):
        raise InvalidScenarioError(f"{path}.file", f"must be the path of a CSV file (individual, database), "
                                                   f"got {toml_value(file)}")
    patterns, header, enforced, _ = _from_data_options(table, path)
    target = _data_file(file, folder, allow_outside, f"{path}.file")
    try:
        estimate = estimate_membership(target, refs.databases, patterns=patterns, header=header, label=file)
    except InvalidParameterError as error:
        raise InvalidScenarioError(f"{path}.file", str(error)) from None
    return dataclasses.replace(estimate, enforced=True) if enforced else estimate


def _from_engine(refs: _Refs, table: Mapping[str, object], path: str, key: str, folder: pathlib.Path,
                 allow_outside: bool):
    """``source`` (CSV or Parquet files) or ``database`` with ``query``: the statistics from the DuckDB engine."""
    value = table[key]
    if not isinstance(value, str) or not value:
        what = "a CSV or Parquet file, or a glob" if key == "source" else "a DuckDB or SQLite database file"
        raise InvalidScenarioError(f"{path}.{key}", f"must be the path of {what}, got {toml_value(value)}")
    patterns, header, enforced, columns = _from_data_options(table, path)
    query = table.get("query")
    if key == "database":
        if not isinstance(query, str) or not query.strip():
            raise InvalidScenarioError(f"{path}.query", f"must be a SELECT returning (individual, database) "
                                                        f"from {toml_value(value)}, got {toml_value(query)}")
        if header is not None:
            raise InvalidScenarioError(f"{path}.header", "applies to CSV files only")
        files: tuple[str, ...] = ()
        database = str(_data_file(value, folder, allow_outside, f"{path}.database"))
    else:
        if query is not None:
            raise InvalidScenarioError(f"{path}.query", "is read with database, not source")
        files, database = _data_files(value, folder, allow_outside, f"{path}.source"), None
    try:
        source = MembershipTable(files, database, query if key == "database" else None,
                                 None if columns is None else tuple(columns), header, value)
    except InvalidParameterError as error:
        raise InvalidScenarioError(f"{path}.{error.field if error.field in ('query', 'columns') else key}",
                                   error.detail) from None
    if header is not None and source.format != "csv":
        raise InvalidScenarioError(f"{path}.header", "applies to CSV files only")
    try:
        statistics = membership_statistics(source, refs.databases, patterns=patterns)
        return statistics.estimate(enforced=enforced)
    except InvalidParameterError as error:
        field = {"query": "query", "columns": "columns"}.get(error.field, key)
        detail = error.detail if error.field in ("query", "columns", "source") else str(error)
        raise InvalidScenarioError(f"{path}.{field}", detail) from None
    except ResourceLimitError as error:  # stopped at the time limit, or out of the engine's memory
        raise ResourceLimitError(f"{path}.{'query' if key == 'database' else key}", str(error)) from None


def _constraints(refs: _Refs, tables: object, folder: pathlib.Path,
                 allow_outside: bool) -> tuple[ConstraintSet, list[str]]:
    if not isinstance(tables, list):
        raise InvalidScenarioError("constraints", f"must be a list of [[constraints]] tables, "
                                                  f"got {toml_value(tables)}")
    parsed, notes = [], []
    for i, table in enumerate(tables):
        if isinstance(table, Mapping) and table.get("kind") == "from_data":
            estimate = _from_data(refs, table, f"constraints[{i}]", folder, allow_outside)
            parsed.extend(estimate.constraints)
            notes.append(estimate.statement)
            continue
        if isinstance(table, Mapping):
            table = {k: _constraint_value(refs, k, v, key_path(f"constraints[{i}]", k)) for k, v in table.items()}
        parsed.append(constraint_from_dict(table, i, refs.n))
    try:
        return ConstraintSet(refs.n, tuple(parsed)), notes
    except InvalidParameterError as error:
        raise InvalidScenarioError(f"constraints.{error.field}" if error.field else "constraints",
                                   error.detail) from None


def _hypotheses(refs: _Refs, table: object) -> tuple[Hypothesis, Hypothesis]:
    """The ``[hypotheses]`` table: ``h0`` and ``h1``, each a prior (001, Sec. V-B; docs/design.md,
    "Neighbourhoods and hypotheses")."""
    if not isinstance(table, Mapping):
        raise InvalidScenarioError("hypotheses", f"must be a table with keys h0 and h1, got {toml_value(table)}")
    for key in table:
        if key not in ("h0", "h1"):
            raise InvalidScenarioError(key_path("hypotheses", key), "is not a key of [hypotheses]; its keys are "
                                                                    "h0, h1")
    pair = []
    for key in ("h0", "h1"):
        if key not in table:
            raise InvalidScenarioError(f"hypotheses.{key}", "is missing")
        entry = table[key]
        if isinstance(entry, Mapping):
            entry = {k: v if k in ("kind", "rates") else _resolve_names(refs, v, key_path(f"hypotheses.{key}", k))
                     for k, v in entry.items()}
        pair.append(hypothesis_from_dict(entry, f"hypotheses.{key}", refs.n))
    return pair[0], pair[1]


def _target(table: Mapping[str, object]) -> tuple[float | None, float | None]:
    delta = None if "delta" not in table else read_number(table["delta"], "delta")
    epsilon = None if "epsilon" not in table else read_number(table["epsilon"], "epsilon")
    try:
        check_target(delta, epsilon)
    except InvalidParameterError as error:
        raise InvalidScenarioError(error.field, error.detail) from None
    return delta, epsilon


def _header(table: Mapping[str, object]) -> tuple[str, str]:
    """``title`` and ``neighborhood``, checked; the other top-level keys are known."""
    for key in table:
        if key not in _TOP_LEVEL:
            raise InvalidScenarioError(key_path("", key), f"is not a scenario key; the keys are "
                                                          f"{', '.join(_TOP_LEVEL)}")
    if "databases" not in table:
        raise InvalidScenarioError("databases", "is missing (the number of databases, or their names)")
    title = table.get("title", "")
    if not isinstance(title, str):
        raise InvalidScenarioError("title", f"must be a string, got {toml_value(title)}")
    neighborhood = table.get("neighborhood", "unbounded")
    if neighborhood not in NEIGHBORHOODS:
        raise InvalidScenarioError("neighborhood", f'must be "unbounded" or "bounded", got {toml_value(neighborhood)}')
    return title, neighborhood


def _path_argument(value: object, name: str) -> pathlib.Path:
    """A path given to a public function (``path``, ``folder``), or an error naming the argument."""
    if not isinstance(value, (str, os.PathLike)):
        raise InvalidParameterError(name, f"must be a str or os.PathLike, got {shown(value)}")
    try:
        return pathlib.Path(value)
    except TypeError:  # a PathLike of bytes
        raise InvalidParameterError(name, f"must be a str or os.PathLike of str, got {shown(value)}") from None


def scenario_from_dict(table: Mapping[str, object], folder: str | os.PathLike[str] = ".", *,
                       allow_outside_files: bool = False) -> Scenario:
    """The :class:`~gce.model.Scenario` of a parsed scenario file.

    Parameters
    ----------
    table : mapping
        The file's top-level table, as :mod:`tomllib` parses it.
    folder : str or path
        Where relative data files (``kind = "from_data"``) are looked up.
    allow_outside_files : bool
        Read data files outside ``folder`` (an absolute path, ``..``, or a
        symbolic link leading out); refused by default, so a scenario file from
        elsewhere cannot make ``gce`` read, say, ``/etc/passwd``.

    Raises
    ------
    InvalidScenarioError
        Naming the offending field by its path in the file.
    InvalidParameterError
        ``folder`` or ``allow_outside_files`` has the wrong type.

    Examples
    --------
    >>> s = scenario_from_dict({
    ...     "databases": 3, "delta": 1e-6,
    ...     "invocations": [{"databases": "all", "mechanism": {"kind": "pure", "epsilon": 1.0}}],
    ...     "constraints": [{"kind": "at_most", "m": 1}]})
    >>> s.n, len(s.invocations), s.neighborhood
    (3, 3, 'unbounded')
    >>> scenario_from_dict({"databases": 3, "delta": 0.1, "epsilon": 1.0, "invocations": []})
    Traceback (most recent call last):
    ...
    gce.errors.InvalidScenarioError: delta: give exactly one of delta and epsilon, not both
    >>> scenario_from_dict({"databases": 10**9, "invocations": []})
    Traceback (most recent call last):
    ...
    gce.errors.InvalidScenarioError: databases: must be a count in 1..10,000,000, got 1000000000
    """
    if not isinstance(table, Mapping):
        raise InvalidScenarioError("scenario", f"must be a table, got {toml_value(table)}")
    folder = _path_argument(folder, "folder")
    if not isinstance(allow_outside_files, bool):
        raise InvalidParameterError("allow_outside_files", f"must be True or False, got {shown(allow_outside_files)}")
    _check_tree(table)
    title, neighborhood = _header(table)
    refs = _databases(table["databases"])
    delta, epsilon = _target(table)
    invocations = _invocations(refs, table.get("invocations"))
    constraints, notes = _constraints(refs, table.get("constraints", []), folder, allow_outside_files)
    hypotheses = _hypotheses(refs, table["hypotheses"]) if "hypotheses" in table else None
    rtol = read_number(table["rtol"], "rtol") if "rtol" in table else None
    try:
        return Scenario(refs.databases, invocations, constraints, neighborhood, delta, epsilon, title, hypotheses,
                        tuple(notes), rtol)
    except InvalidScenarioError:
        raise
    except InvalidParameterError as error:
        raise InvalidScenarioError(error.field, error.detail) from None
    except InfeasibleConstraintsError as error:
        raise InvalidScenarioError("constraints", str(error)) from None


# ---------------------------------------------------------------------------
# Reading the file


#: Bytes read at a time: ``read(64 MiB)`` would allocate its whole buffer up front, even for a file of 300 bytes.
_CHUNK = 2**16


def _read_at_most(handle, limit: int) -> bytes:
    """Up to ``limit`` bytes of an open binary file or pipe, in chunks (memory: what the file holds)."""
    chunks, size = [], 0
    while size < limit:
        chunk = handle.read(min(_CHUNK, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _read_bytes(path: pathlib.Path) -> bytes:
    """At most :data:`MAX_SCENARIO_BYTES` bytes of the file (one more is read to tell a larger one): a
    regular file, or a pipe handed to this process (``/dev/stdin``, ``/dev/fd/N``); a folder, a device or
    a named pipe is refused before it is opened (:func:`gce.files.paths.open_regular`)."""
    try:
        with open_regular(path, "file", pipes=True, error=InvalidScenarioError,
                          shown=f"cannot read {shown(str(path), 200)}:") as handle:
            data = _read_at_most(handle, MAX_SCENARIO_BYTES + 1)
    except InvalidScenarioError:
        raise
    except OSError as error:
        raise InvalidScenarioError("file", f"cannot read {shown(str(path), 200)}: {error.strerror or error}") from None
    except ValueError:  # a NUL character in the path
        raise InvalidScenarioError("file", f"cannot read {shown(str(path), 200)}: a path has no NUL "
                                           f"characters") from None
    if len(data) > MAX_SCENARIO_BYTES:
        raise InvalidScenarioError("file", f"{shown(str(path), 200)} is larger than {MAX_SCENARIO_BYTES // 2**20} MiB, "
                                           f"the limit for scenario files")
    return data


def _text(data: bytes, path: pathlib.Path) -> str:
    """The file's UTF-8 text without a leading byte-order mark; a bad byte is located, never shown."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        raise InvalidScenarioError("file", f"{shown(str(path), 200)} is not UTF-8 text (line {line}, byte {column} of "
                                           f"the line)") from None
    return text.removeprefix("\ufeff")


def _shortened(message: str, limit: int = 160) -> str:
    """tomllib's message, cut short when it quotes a long key, keeping its "(at line L, column C)"."""
    if len(message) <= limit:
        return message
    head, at, where = message.rpartition(" (at line ")
    return f"{head[:limit]}...{at}{where}" if at else message[:limit] + "..."


def _toml(text: str, path: pathlib.Path) -> dict[str, object]:
    try:
        return tomllib.loads(text, parse_float=_parse_float)
    except tomllib.TOMLDecodeError as error:
        raise InvalidScenarioError("file", f"{shown(str(path), 200)} is not valid TOML: "
                                           f"{_shortened(str(error))}") from None
    except RecursionError:
        raise InvalidScenarioError("file", f"{shown(str(path), 200)} nests tables or arrays too deeply (the limit is "
                                           f"{MAX_DEPTH} levels)") from None
    except ValueError as error:  # tomllib's int(): more than sys.get_int_max_str_digits() digits
        raise InvalidScenarioError("file", f"{shown(str(path), 200)} holds a number TOML cannot read: "
                                           f"{str(error).split(':')[0]}") from None


def read_fragment(text: object, name: str, *, table: bool = False, example: str = "") -> object:
    """One TOML value given on its own, e.g. on the command line (``--mechanism 'kind = "pure", epsilon = 0.1'``):
    the one way gce parses a fragment of TOML.

    The fragment must be one value with nothing after it: ``kind = "pure", epsilon = 0.1 } junk = {`` and a
    second table after the first are refused, not read up to the first value. It is read as a file's value is
    (the same parser, numbers a double cannot hold refused, nested at most :data:`MAX_DEPTH` levels).

    Parameters
    ----------
    text : str
        The fragment.
    name : str
        What gave it (``"--mechanism"``): the field of every error, and the root of the paths below it.
    table : bool
        The fragment is a table, its braces optional (``kind = "pure", epsilon = 0.1`` or ``{ kind = ... }``).
    example : str
        A well-formed fragment, shown when this one does not parse.

    Raises
    ------
    InvalidScenarioError
        Naming ``name`` (or the path under it).

    Examples
    --------
    >>> read_fragment('kind = "pure", epsilon = 0.1', "--mechanism", table=True)
    {'kind': 'pure', 'epsilon': 0.1}
    >>> read_fragment('kind = "pure", epsilon = 0.1 } junk = { ', "--mechanism", table=True)
    Traceback (most recent call last):
    ...
    gce.errors.InvalidScenarioError: --mechanism: not one TOML table: text follows it (in 'kind = "pure", epsilon = 0.1 } junk = {')
    """
    what = "TOML table" if table else "TOML value"
    if not isinstance(text, str):
        raise InvalidScenarioError(name, f"must be a {what} as text, got {shown(text)}")
    body = text.strip()
    if table and not body.startswith("{"):
        body = "{ " + body + " }"
    hint = f", e.g. {example}" if example else ""
    follows = InvalidScenarioError(name, f"not one {what}: text follows it (in {shown(text.strip())}){hint}")
    end = os.urandom(8).hex()  # a value after the fragment's on the same line: a comment cannot hide text after it
    documents = []
    for document in (f"value = {body}", f'value = [{body}, "{end}"]'):
        try:
            documents.append(tomllib.loads(document, parse_float=_parse_float))
        except tomllib.TOMLDecodeError as error:
            reason = str(error).split(" (at")[0]
            if documents or reason.startswith("Expected newline or end of document"):
                raise follows from None
            if "\n" in body or "\r" in body:  # TOML writes an inline table or a value on one line
                reason = f"{reason}; a {what} given on its own is written on one line"
            elif "#" in body and table and not text.strip().startswith("{"):  # the comment hid the added brace
                reason = f"{reason}; a comment cannot follow a table given on its own"
            raise InvalidScenarioError(name, f"not a {what} ({_shortened(reason)}){hint}") from None
        except RecursionError:
            raise InvalidScenarioError(name, f"nests tables or arrays more than {MAX_DEPTH} levels deep") from None
        except ValueError as error:  # tomllib's int(): more than sys.get_int_max_str_digits() digits
            raise InvalidScenarioError(name, f"holds a number TOML cannot read: {str(error).split(':')[0]}") \
                from None
    (first, second), values = documents, documents[1].get("value")
    if list(first) != ["value"] or list(second) != ["value"] or not isinstance(values, list) or len(values) != 2 \
            or values[1] != end:
        raise follows
    if table and not isinstance(values[0], dict):
        raise InvalidScenarioError(name, f"not a {what}, got {shown(values[0], spelling='toml')}{hint}")
    _check_tree(values[0], name)
    return values[0]


def load_scenario(path: str | os.PathLike[str], *, allow_outside_files: bool = False) -> Scenario:
    """Read and validate a scenario file (TOML; docs/design.md, "Scenario files and the command line").

    Parameters
    ----------
    path : str or path
        The file: UTF-8 (a leading byte-order mark is skipped), at most
        :data:`MAX_SCENARIO_BYTES`; it may be a pipe (``gce solve /dev/stdin``).
    allow_outside_files : bool
        Let ``from_data`` constraints read files outside the scenario's folder
        (see :func:`scenario_from_dict`).

    Returns
    -------
    Scenario

    Raises
    ------
    InvalidScenarioError
        The file cannot be read, is too large, is not UTF-8 TOML, or a field
        is malformed; the error names the field (or ``file`` for the file as
        a whole).
    InvalidParameterError
        ``path`` is not a str or path (named ``path``).

    Examples
    --------
    >>> load_scenario(123)
    Traceback (most recent call last):
    ...
    gce.errors.InvalidParameterError: path: must be a str or os.PathLike, got 123
    """
    path = _path_argument(path, "path")
    table = _toml(_text(_read_bytes(path), path), path)
    return scenario_from_dict(table, path.parent, allow_outside_files=allow_outside_files)


def load_scenario_at_most(path: str | os.PathLike[str], m: int, *, note: str = "") -> Scenario:
    """The scenario of a file with each ``from_data`` constraint replaced by ``at_most m`` (no table is read).

    What ``gce membership --scenario`` solves for each candidate m; ``note`` (say, how m was chosen) is the
    scenario's note in place of the estimate's statement.

    Raises
    ------
    InvalidScenarioError
        As :func:`load_scenario`, or the file has no ``from_data`` constraint to replace.
    """
    path = _path_argument(path, "path")
    table = _toml(_text(_read_bytes(path), path), path)
    constraints = table.get("constraints")
    found = isinstance(constraints, list) and any(isinstance(c, Mapping) and c.get("kind") == "from_data"
                                                  for c in constraints)
    if not found:
        raise InvalidScenarioError("constraints", f"{shown(str(path), 200)} has no from_data constraint to replace by "
                                                  f"at_most m")
    table = dict(table, constraints=[{"kind": "at_most", "m": m}
                                     if isinstance(c, Mapping) and c.get("kind") == "from_data" else c
                                     for c in constraints])
    scenario = scenario_from_dict(table, path.parent)
    return dataclasses.replace(scenario, notes=(note,) if note else ())

"""Scenario files: the TOML form of a scenario (DESIGN.md, "Scenario files and the command line").

A scenario file is a contract other tools read, so this module is strict: every
key is known, every value is checked, and every error is an
:class:`~gce.errors.InvalidScenarioError` whose field is the path in the file,
e.g. ``invocations[0].mechanism.epsilon`` or ``constraints[2].m``::

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
"""

from __future__ import annotations

import pathlib
import tomllib
from collections.abc import Mapping

from .constraints import ConstraintSet, constraint_from_dict, estimate_membership
from .errors import InfeasibleConstraintsError, InvalidParameterError, InvalidScenarioError
from .guarantees import (
    ZCDP,
    ApproxDP,
    GaussianDP,
    GaussianMechanism,
    Guarantee,
    LaplaceMechanism,
    PureDP,
    RandomizedResponse,
    Subsampled,
)
from .hypotheses import Hypothesis, hypothesis_from_dict
from .model import Databases, Invocation, Scenario, check_target
from .tables import TableKind, read_kind_table, read_number

__all__ = ["MECHANISM_KINDS", "load_scenario", "scenario_from_dict"]

_TOP_LEVEL = ("title", "databases", "neighborhood", "delta", "epsilon", "invocations", "constraints", "hypotheses")
_INVOCATION_KEYS = ("databases", "repeat", "mechanism")


def _mechanism_table(value: object, path: str) -> Guarantee:
    return mechanism_from_dict(value, path)


#: The file form of every mechanism kind, by ``kind``: file key -> (record field, reader, required).
MECHANISM_KINDS: Mapping[str, TableKind] = {
    "pure": TableKind(PureDP, {"epsilon": ("epsilon", read_number, True)}),
    "approx": TableKind(ApproxDP, {"epsilon": ("epsilon", read_number, True), "delta": ("delta", read_number, True)}),
    "zcdp": TableKind(ZCDP, {"rho": ("rho", read_number, True)}),
    "gdp": TableKind(GaussianDP, {"mu": ("mu", read_number, True)}),
    "gaussian": TableKind(GaussianMechanism, {"sigma": ("sigma", read_number, True),
                                              "sensitivity": ("sensitivity", read_number, False)}),
    "laplace": TableKind(LaplaceMechanism, {"scale": ("scale", read_number, True),
                                            "sensitivity": ("sensitivity", read_number, False)}),
    "randomized_response": TableKind(RandomizedResponse, {"epsilon": ("epsilon", read_number, True)}),
    "subsampled": TableKind(Subsampled, {"rate": ("rate", read_number, True),
                                         "mechanism": ("mechanism", _mechanism_table, True)}),
}


def mechanism_from_dict(table: object, path: str) -> Guarantee:
    """Read a ``mechanism = { kind = ..., ... }`` table at ``path``.

    Examples
    --------
    >>> mechanism_from_dict({"kind": "approx", "epsilon": 0.05, "delta": 1e-10}, "mechanism")
    ApproxDP(epsilon=0.05, delta=1e-10)
    >>> mechanism_from_dict({"kind": "pure", "epsilon": -1}, "invocations[0].mechanism")
    Traceback (most recent call last):
    ...
    gce.errors.InvalidScenarioError: invocations[0].mechanism.epsilon: must be >= 0, got -1.0
    """
    return read_kind_table(table, path, MECHANISM_KINDS)


def _databases(value: object) -> Databases:
    if isinstance(value, list):
        if not all(isinstance(name, str) for name in value):
            raise InvalidScenarioError("databases", f"must be a count or a list of names, got {value!r}")
        if not value:
            raise InvalidScenarioError("databases", "the list of names is empty")
    elif isinstance(value, bool) or not isinstance(value, int):
        raise InvalidScenarioError("databases", f"must be a count or a list of names, got {value!r}")
    try:
        return Databases(len(value), tuple(value)) if isinstance(value, list) else Databases(value)
    except InvalidParameterError as error:
        raise InvalidScenarioError(error.field, error.detail) from None


def _reference(databases: Databases, value: object, path: str) -> int:
    try:
        return databases.index(value, path)
    except InvalidParameterError as error:
        raise InvalidScenarioError(error.field, error.detail) from None


def _resolve_names(databases: Databases, value: object, path: str, inside: bool = False) -> object:
    """Replace database names by indices inside (nested) lists; other values are kept."""
    if not databases.names:
        return value
    if isinstance(value, list):
        return [_resolve_names(databases, item, f"{path}[{i}]", True) for i, item in enumerate(value)]
    if inside and isinstance(value, str):
        return _reference(databases, value, path)
    return value


def _constraint_value(databases: Databases, key: str, value: object, path: str) -> object:
    """A constraint's value with names resolved; ``databases = "all"`` (exclusive, together) is every database."""
    if key == "kind":
        return value
    if key == "databases" and value == "all":
        return list(range(databases.n))
    return _resolve_names(databases, value, path)


def _invocations(databases: Databases, tables: object) -> tuple[Invocation, ...]:
    if not isinstance(tables, list) or not tables:
        raise InvalidScenarioError("invocations", "needs at least one [[invocations]] table")
    out: list[Invocation] = []
    for i, table in enumerate(tables):
        path = f"invocations[{i}]"
        if not isinstance(table, Mapping):
            raise InvalidScenarioError(path, f"must be a table, got {table!r}")
        for key in table:
            if key not in _INVOCATION_KEYS:
                raise InvalidScenarioError(f"{path}.{key}", f"is not a key of an invocation; its keys are "
                                           f"{', '.join(_INVOCATION_KEYS)}")
        for key in ("databases", "mechanism"):
            if key not in table:
                raise InvalidScenarioError(f"{path}.{key}", "is missing")
        refs = table["databases"]
        if refs == "all":
            members = list(range(databases.n))
        elif isinstance(refs, list):
            if not refs:
                raise InvalidScenarioError(f"{path}.databases", "the list is empty")
            members = [_reference(databases, r, f"{path}.databases[{j}]") for j, r in enumerate(refs)]
        else:
            members = [_reference(databases, refs, f"{path}.databases")]
        repeat = table.get("repeat", 1)
        if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
            raise InvalidScenarioError(f"{path}.repeat", f"must be an integer >= 1, got {repeat!r}")
        guarantee = mechanism_from_dict(table["mechanism"], f"{path}.mechanism")
        out.extend(Invocation(database, guarantee, repeat) for database in members)
    return tuple(out)


def _from_data(databases: Databases, table: Mapping[str, object], path: str, folder: pathlib.Path):
    """A ``kind = "from_data"`` table: at_most (and optionally patterns) estimated from a membership CSV."""
    keys = ("kind", "file", "patterns", "header")
    for key in table:
        if key not in keys:
            raise InvalidScenarioError(f"{path}.{key}", f"is not a key of kind 'from_data'; its keys are "
                                       f"{', '.join(keys[1:])}")
    file = table.get("file")
    if not isinstance(file, str):
        raise InvalidScenarioError(f"{path}.file", f"must be the path of a CSV file (individual, database), "
                                   f"got {file!r}")
    patterns, header = table.get("patterns", False), table.get("header")
    if not isinstance(patterns, bool):
        raise InvalidScenarioError(f"{path}.patterns", f"must be true or false, got {patterns!r}")
    if header is not None and not isinstance(header, bool):
        raise InvalidScenarioError(f"{path}.header", f"must be true or false, got {header!r}")
    target = pathlib.Path(file) if pathlib.Path(file).is_absolute() else folder / file
    if not target.is_file():
        raise InvalidScenarioError(f"{path}.file", f"cannot read {file!r} (looked for {str(target)!r})")
    try:
        return estimate_membership(target, databases, patterns=patterns, header=header, source=file)
    except InvalidParameterError as error:
        raise InvalidScenarioError(f"{path}.file", str(error)) from None


def _constraints(databases: Databases, tables: object, folder: pathlib.Path) -> tuple[ConstraintSet, list[str]]:
    if not isinstance(tables, list):
        raise InvalidScenarioError("constraints", f"must be a list of [[constraints]] tables, got {tables!r}")
    parsed, notes = [], []
    for i, table in enumerate(tables):
        if isinstance(table, Mapping) and table.get("kind") == "from_data":
            estimate = _from_data(databases, table, f"constraints[{i}]", folder)
            parsed.extend(estimate.constraints)
            notes.append(estimate.statement)
            continue
        if isinstance(table, Mapping):
            table = {k: _constraint_value(databases, k, v, f"constraints[{i}].{k}") for k, v in table.items()}
        parsed.append(constraint_from_dict(table, i, databases.n))
    try:
        return ConstraintSet(databases.n, tuple(parsed)), notes
    except InvalidParameterError as error:
        raise InvalidScenarioError(f"constraints.{error.field}" if error.field else "constraints",
                                   error.detail) from None


def _hypotheses(databases: Databases, table: object) -> tuple[Hypothesis, Hypothesis]:
    """The ``[hypotheses]`` table: ``h0`` and ``h1``, each a prior (DESIGN.md; 001, Sec. V-B)."""
    if not isinstance(table, Mapping):
        raise InvalidScenarioError("hypotheses", f"must be a table with keys h0 and h1, got {table!r}")
    for key in table:
        if key not in ("h0", "h1"):
            raise InvalidScenarioError(f"hypotheses.{key}", "is not a key of [hypotheses]; its keys are h0, h1")
    pair = []
    for key in ("h0", "h1"):
        if key not in table:
            raise InvalidScenarioError(f"hypotheses.{key}", "is missing")
        entry = table[key]
        if isinstance(entry, Mapping):
            entry = {k: v if k in ("kind", "rates") else _resolve_names(databases, v, f"hypotheses.{key}.{k}")
                     for k, v in entry.items()}
        pair.append(hypothesis_from_dict(entry, f"hypotheses.{key}", databases.n))
    return pair[0], pair[1]


def _target(table: Mapping[str, object]) -> tuple[float | None, float | None]:
    delta = None if "delta" not in table else read_number(table["delta"], "delta")
    epsilon = None if "epsilon" not in table else read_number(table["epsilon"], "epsilon")
    try:
        check_target(delta, epsilon)
    except InvalidParameterError as error:
        raise InvalidScenarioError(error.field, error.detail) from None
    return delta, epsilon


def scenario_from_dict(table: Mapping[str, object], folder: str | pathlib.Path = ".") -> Scenario:
    """The :class:`~gce.model.Scenario` of a parsed scenario file.

    ``folder`` is where relative data files (``kind = "from_data"``) are looked up.

    Raises
    ------
    InvalidScenarioError
        Naming the offending field by its path in the file.

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
    """
    if not isinstance(table, Mapping):
        raise InvalidScenarioError("scenario", f"must be a table, got {table!r}")
    folder = pathlib.Path(folder)
    for key in table:
        if key not in _TOP_LEVEL:
            raise InvalidScenarioError(key, f"is not a scenario key; the keys are {', '.join(_TOP_LEVEL)}")
    if "databases" not in table:
        raise InvalidScenarioError("databases", "is missing (the number of databases, or their names)")
    databases = _databases(table["databases"])
    title = table.get("title", "")
    if not isinstance(title, str):
        raise InvalidScenarioError("title", f"must be a string, got {title!r}")
    neighborhood = table.get("neighborhood", "unbounded")
    if neighborhood not in ("unbounded", "bounded"):
        raise InvalidScenarioError("neighborhood", f'must be "unbounded" or "bounded", got {neighborhood!r}')
    delta, epsilon = _target(table)
    invocations = _invocations(databases, table.get("invocations"))
    constraints, notes = _constraints(databases, table.get("constraints", []), folder)
    hypotheses = _hypotheses(databases, table["hypotheses"]) if "hypotheses" in table else None
    try:
        return Scenario(databases, invocations, constraints, neighborhood, delta, epsilon, title, hypotheses,
                        tuple(notes))
    except InvalidScenarioError:
        raise
    except InvalidParameterError as error:
        raise InvalidScenarioError(error.field, error.detail) from None
    except InfeasibleConstraintsError as error:
        raise InvalidScenarioError("constraints", str(error)) from None


def load_scenario(path: str | pathlib.Path) -> Scenario:
    """Read and validate a scenario file (TOML; DESIGN.md, "Scenario files").

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    Scenario

    Raises
    ------
    InvalidScenarioError
        The file cannot be read, is not TOML, or a field is malformed; the
        error names the field (or ``file`` for the first two).
    """
    path = pathlib.Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise InvalidScenarioError("file", f"cannot read {str(path)!r}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise InvalidScenarioError("file", f"{str(path)!r} is not UTF-8 text") from None
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise InvalidScenarioError("file", f"{str(path)!r} is not valid TOML: {error}") from None
    return scenario_from_dict(table, path.parent)

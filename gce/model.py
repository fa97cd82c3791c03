"""Databases and invocations: what the curator runs, where (001, Sec. III, Alg. 2).

In the generalized composition experiment a curator runs mechanisms M_1..M_k,
each on one of the databases 0..n-1; the target individual's record is in the
databases of a membership set b (001 writes it as a b-vector). These records
describe the runs; they have no behaviour beyond validation and simple
aggregation.

What must never change: an invocation's ``guarantee`` holds for add/remove of the
target's record *in its own database*; ``repeat`` counts identical invocations on
that database (a database may be queried many times).
"""

from __future__ import annotations

import math
import operator
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .accounting.guarantees import Guarantee
from .accounting.kinds import is_guarantee
from .accounting.theorems import Multiset
from .constraints import ConstraintSet
from .constraints.base import MAX_DATABASES
from .constraints.neighborhood import check_neighborhood
from .errors import InvalidParameterError, UnsupportedCombinationError
from .validation import is_integer, is_number
from .priors.hypotheses import Hypothesis, check_listed

__all__ = ["Databases", "Invocation", "InvocationTable", "Scenario", "check_target",
           "invocation_multiset", "per_database_multisets", "MAX_DATABASES", "MAX_INVOCATIONS"]

#: Most invocations a scenario may count, repeats included (one invocation's ``repeat`` and the total).
#: Counts are kept as integers and as float64 weights (exact up to 2^53); the composition theorems
#: work in log space, O(1) memory in a repeat count.
MAX_INVOCATIONS = 2**53


@dataclass(frozen=True)
class Databases:
    """The databases 0..n-1, optionally named.

    Parameters
    ----------
    n : int
        How many databases.
    names : tuple of str, optional
        One distinct name per database, for reports.
    """

    n: int
    names: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not is_integer(self.n) or self.n < 1:
            raise InvalidParameterError("databases", f"must be an integer >= 1, got {self.n!r}")
        if self.n > MAX_DATABASES:
            raise InvalidParameterError("databases", f"{int(self.n):,} databases exceed the limit of "
                                                     f"{MAX_DATABASES:,} (gce keeps one entry per database in memory)")
        object.__setattr__(self, "n", int(self.n))
        if self.names is not None:
            if isinstance(self.names, (str, bytes)) or not isinstance(self.names, Iterable):
                raise InvalidParameterError("databases.names", f"must be a collection of names, got {self.names!r}")
            names = tuple(self.names)
            if not all(isinstance(name, str) for name in names):
                raise InvalidParameterError("databases.names", f"must be strings, got {names!r}")
            if len(names) != self.n or len(set(names)) != self.n:
                raise InvalidParameterError("databases.names", f"need {self.n} distinct names, got {names!r}")
            object.__setattr__(self, "names", names)

    def label(self, index: int) -> str:
        """The name of a database, or its index."""
        return self.names[index] if self.names else str(index)

    def index(self, ref: int | str, field: str) -> int:
        """Resolve a database reference (index or name); ``field`` names it in errors."""
        if isinstance(ref, str) and self.names and ref in self.names:
            return self.names.index(ref)
        if not is_integer(ref) or not 0 <= ref < self.n:
            raise InvalidParameterError(field, f"unknown database {ref!r} (databases are 0..{self.n - 1})")
        return ref


@dataclass(frozen=True)
class Invocation:
    """``repeat`` runs of a mechanism with ``guarantee`` on database ``database``."""

    database: int
    guarantee: Guarantee
    repeat: int = 1

    def __post_init__(self) -> None:
        if not is_integer(self.database) or self.database < 0:
            raise InvalidParameterError("database", f"must be a database index >= 0, got {self.database!r}")
        object.__setattr__(self, "database", int(self.database))
        if not is_guarantee(self.guarantee):
            raise InvalidParameterError("mechanism", f"must be a guarantee, got {self.guarantee!r}")
        if not is_integer(self.repeat) or self.repeat < 1:
            raise InvalidParameterError("repeat", f"must be an integer >= 1, got {self.repeat!r}")
        if self.repeat > MAX_INVOCATIONS:
            raise InvalidParameterError("repeat", f"{int(self.repeat):,} exceeds the limit of 2^53 = "
                                                  f"{MAX_INVOCATIONS:,} invocations")
        object.__setattr__(self, "repeat", int(self.repeat))


_DATABASE, _REPEAT, _GUARANTEE = (operator.attrgetter(a) for a in ("database", "repeat", "guarantee"))


@dataclass(frozen=True)
class InvocationTable:
    """The invocations of a scenario as arrays, for vectorized aggregation.

    ``kinds`` are the distinct guarantees; invocation j runs ``repeat[j]`` times
    guarantee ``kinds[kind[j]]`` on database ``database[j]``.
    """

    kinds: tuple[Guarantee, ...]
    kind: np.ndarray
    database: np.ndarray
    repeat: np.ndarray

    @classmethod
    def of(cls, invocations: Sequence[Invocation]) -> "InvocationTable":
        # Guarantees are grouped by object identity first (a file's "all" shares one object), then the
        # few distinct objects by equality; attribute access goes through C-level iterators.
        n = len(invocations)
        database = np.fromiter(map(_DATABASE, invocations), dtype=np.intp, count=n)
        repeat = np.fromiter(map(_REPEAT, invocations), dtype=np.int64, count=n)
        ids = np.fromiter(map(id, map(_GUARANTEE, invocations)), dtype=np.int64, count=n)
        _, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
        index: dict[Guarantee, int] = {}
        of_object = np.array([index.setdefault(invocations[j].guarantee, len(index)) for j in first], dtype=np.intp)
        return cls(tuple(index), of_object[inverse.ravel()], database, repeat)

    def weights(self, n: int, per_kind: np.ndarray) -> np.ndarray:
        """Per database, the sum over its invocations of repeat x ``per_kind[kind]``."""
        return np.bincount(self.database, weights=self.repeat * per_kind[self.kind], minlength=n)

    def on(self, members: Iterable[int]) -> np.ndarray:
        """Boolean mask of the invocations on ``members``."""
        return np.isin(self.database, np.fromiter(members, dtype=np.intp))

    def multiset(self, mask: np.ndarray | None = None) -> Multiset:
        """The guarantees of the (masked) invocations, as a multiset."""
        kind, repeat = (self.kind, self.repeat) if mask is None else (self.kind[mask], self.repeat[mask])
        counts = np.bincount(kind, weights=repeat, minlength=len(self.kinds))
        return tuple((g, int(c)) for g, c in zip(self.kinds, counts) if c > 0)


def invocation_multiset(invocations: Iterable[Invocation], members: Iterable[int] | None = None) -> Multiset:
    """The guarantees of the invocations on ``members`` (all when None), as a multiset."""
    chosen = None if members is None else set(members)
    counts: Counter[Guarantee] = Counter()
    for inv in invocations:
        if chosen is None or inv.database in chosen:
            counts[inv.guarantee] += inv.repeat
    return tuple(counts.items())


def _check_number(value: object, field: str) -> None:
    if not is_number(value):
        raise InvalidParameterError(field, f"must be a number, got {value!r}")


def per_database_multisets(invocations: Iterable[Invocation]) -> dict[int, Multiset]:
    """The guarantees run on each queried database, as multisets (one pass over the invocations)."""
    counts: dict[int, Counter[Guarantee]] = {}
    for inv in invocations:
        counts.setdefault(inv.database, Counter())[inv.guarantee] += inv.repeat
    return {database: tuple(c.items()) for database, c in counts.items()}


def check_target(delta: float | None, epsilon: float | None) -> None:
    """Validate a target: at most one of delta (in [0, 1)) and epsilon (finite, >= 0)."""
    for value, field in ((delta, "delta"), (epsilon, "epsilon")):
        if value is not None:
            _check_number(value, field)
    if delta is not None and epsilon is not None:
        raise InvalidParameterError("delta", "give exactly one of delta and epsilon, not both")
    if delta is not None and not (0.0 <= delta < 1.0):
        raise InvalidParameterError("delta", f"must lie in [0, 1), got {delta!r}")
    if epsilon is not None and not (epsilon >= 0.0 and math.isfinite(epsilon)):
        raise InvalidParameterError("epsilon", f"must be finite and >= 0, got {epsilon!r}")


@dataclass(frozen=True)
class Scenario:
    """One run of the generalized composition experiment: what runs where, and what is public.

    Parameters
    ----------
    databases : Databases or int
        The databases (an int n means 0..n-1).
    invocations : tuple of Invocation
        The mechanisms run; each database index must exist.
    constraints : ConstraintSet, optional
        The public membership constraints (001, Sec. V-A); default none.
    neighborhood : {"unbounded", "bounded"}
        Pairs (empty set, b) or (b, b') of allowed sets.
    delta, epsilon : float, optional
        The target: report epsilon at ``delta``, or delta at ``epsilon``
        (at most one; :func:`gce.solve` may be given one instead).
    title : str
        Shown in reports.
    hypotheses : (Hypothesis, Hypothesis), optional
        The adversary's composite hypotheses h0 and h1 (001, Sec. III-A, V-B);
        when given they replace the preset ``neighborhood``.
    notes : tuple of str
        Statements every report of the scenario repeats, e.g. that a
        constraint was estimated from data (001, Sec. V-A, the store chain).

    Raises
    ------
    InvalidParameterError
        A field is malformed; the error names it (e.g. ``invocations[1].databases``).
    InfeasibleConstraintsError
        The constraints allow no non-empty membership set (nothing to protect).
    """

    databases: Databases
    invocations: tuple[Invocation, ...]
    constraints: "ConstraintSet | None" = None
    neighborhood: str = "unbounded"
    delta: float | None = None
    epsilon: float | None = None
    title: str = ""
    hypotheses: "tuple[Hypothesis, Hypothesis] | None" = None
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if is_integer(self.databases):
            object.__setattr__(self, "databases", Databases(self.databases))
        if not isinstance(self.databases, Databases):
            raise InvalidParameterError("databases", f"must be a count or Databases, got {self.databases!r}")
        n = self.databases.n
        if isinstance(self.invocations, (str, bytes, Invocation)) or not isinstance(self.invocations, Iterable):
            raise InvalidParameterError("invocations", f"must be a collection of Invocation, got {self.invocations!r}")
        invocations = tuple(self.invocations)
        if not invocations:
            raise InvalidParameterError("invocations", "needs at least one invocation")
        wrong = next((i for i, inv in enumerate(invocations) if not isinstance(inv, Invocation)), None)
        if wrong is not None:
            raise InvalidParameterError(f"invocations[{wrong}]", f"must be an Invocation, got {invocations[wrong]!r}")
        outside = next((i for i, inv in enumerate(invocations) if inv.database >= n), None)
        if outside is not None:
            raise InvalidParameterError(f"invocations[{outside}].databases",
                                        f"unknown database {invocations[outside].database} "
                                        f"(databases are 0..{n - 1})")
        total = sum(inv.repeat for inv in invocations)
        if total > MAX_INVOCATIONS:
            raise InvalidParameterError("invocations", f"{total:,} invocations (repeats counted) exceed the limit "
                                                       f"of 2^53 = {MAX_INVOCATIONS:,}")
        object.__setattr__(self, "invocations", invocations)
        constraints = ConstraintSet(n) if self.constraints is None else self.constraints
        if not isinstance(constraints, ConstraintSet) or constraints.n != n:
            raise InvalidParameterError("constraints", f"must be a ConstraintSet over {n} databases")
        object.__setattr__(self, "constraints", constraints)
        try:
            constraints.require_nonempty()
        except UnsupportedCombinationError:  # too many blocks to check here; the solver still answers soundly
            pass
        check_neighborhood(self.neighborhood)
        check_target(self.delta, self.epsilon)
        if not isinstance(self.title, str):
            raise InvalidParameterError("title", f"must be a string, got {self.title!r}")
        if not isinstance(self.notes, (str, Iterable)):
            raise InvalidParameterError("notes", f"must be strings, got {self.notes!r}")
        notes = (self.notes,) if isinstance(self.notes, str) else tuple(self.notes)
        if not all(isinstance(note, str) for note in notes):
            raise InvalidParameterError("notes", f"must be strings, got {self.notes!r}")
        object.__setattr__(self, "notes", notes)
        if self.hypotheses is not None:
            object.__setattr__(self, "hypotheses", _checked_hypotheses(self.hypotheses, constraints))

    @property
    def n(self) -> int:
        return self.databases.n

    @cached_property
    def table(self) -> InvocationTable:
        """The invocations as arrays (computed once)."""
        return InvocationTable.of(self.invocations)


def _checked_hypotheses(hypotheses, constraints: ConstraintSet) -> tuple[Hypothesis, Hypothesis]:
    """Two hypotheses whose listed supports (point, explicit) are allowed; errors name ``hypotheses.h0|h1``.

    Priors whose support is generated (uniform, rates) are checked when solved
    (:func:`gce.solving.check_support`): enumerating them here could be as costly as the solve itself.
    """
    pair = tuple(hypotheses) if isinstance(hypotheses, (tuple, list)) else ()
    if len(pair) != 2 or not all(isinstance(h, Hypothesis) for h in pair):
        raise InvalidParameterError("hypotheses", f"must be two hypotheses (h0, h1), got {hypotheses!r}")
    for name, h in zip(("h0", "h1"), pair):
        check_listed(name, h, constraints)
    return pair  # type: ignore[return-value]

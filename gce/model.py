"""Databases and invocations: what the curator runs, where (001, Sec. III, Alg. 2).

In the generalized composition experiment a curator runs mechanisms M_1..M_k,
each on one of the databases 0..n-1; the target individual's record is in the
databases of a membership set b (001 writes it as a b-vector). These records
describe the runs; they have no behaviour beyond validation and simple
aggregation.

What must never change: an invocation's ``guarantee`` holds for add/remove of the
target's record *in its own database*; ``repeat`` counts identical invocations on
that database (a database may be queried many times). An :class:`InvocationGroup`
means exactly the records ``Invocation(d, guarantee, repeat)`` for each ``d`` of its
``databases``, in order; a scenario keeps its invocations as groups
(:class:`Invocations`: O(groups) Python objects, O(databases) numpy).
"""

from __future__ import annotations

import math
import operator
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from .accounting.guarantees import Guarantee
from .accounting.kinds import KINDS, is_guarantee
from .bridges.dp_events import as_guarantee
from .constraints import ConstraintSet
from .constraints.base import ALL, MAX_DATABASES, Constraint
from .constraints.neighborhood import check_neighborhood
from .effort import check_rtol
from .errors import InvalidParameterError, UnsupportedCombinationError
from .validation import is_integer, is_number, shown
from .hypotheses import Hypothesis, check_listed

if TYPE_CHECKING:  # pragma: no cover - a name for annotations; the theorems load with the engines
    from .accounting.theorems import Multiset

__all__ = ["Databases", "Invocation", "InvocationGroup", "Invocations", "Scenario", "check_target",
           "invocation_multiset", "per_database_multisets", "MAX_DATABASES", "MAX_INVOCATIONS"]

#: Most invocations a scenario may count, repeats included (one invocation's ``repeat`` and the total).
#: Counts are kept as integers and as float64 weights (exact up to 2^53); the composition theorems
#: work in log space, O(1) memory in a repeat count.
MAX_INVOCATIONS = 2**53
#: Most invocation groups for which the aggregates loop over the groups (each range group in O(1) memory);
#: beyond, one flat index of the records answers them in vectorised numpy (records, not groups x calls),
#: unless the groups list more than :data:`FLAT_RECORDS_PER_GROUP` databases each on average (a few large
#: ranges: the loop is cheap, the index would take memory per database).
LOOP_GROUPS_MAX = 64
FLAT_RECORDS_PER_GROUP = 1_000


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
            raise InvalidParameterError("databases", f"must be an integer >= 1, got {shown(self.n)}")
        if self.n > MAX_DATABASES:
            raise InvalidParameterError("databases", f"{int(self.n):,} databases exceed the limit of "
                                                     f"{MAX_DATABASES:,} (gce keeps one entry per database in memory)")
        object.__setattr__(self, "n", int(self.n))
        if self.names is not None:
            if isinstance(self.names, (str, bytes)) or not isinstance(self.names, Iterable):
                raise InvalidParameterError("databases.names", f"must be a collection of names, got {shown(self.names)}")
            names = tuple(self.names)
            if not all(isinstance(name, str) for name in names):
                raise InvalidParameterError("databases.names", f"must be strings, got {shown(names)}")
            if len(names) != self.n or len(set(names)) != self.n:
                raise InvalidParameterError("databases.names", f"need {self.n} distinct names, got {shown(names)}")
            object.__setattr__(self, "names", names)

    def label(self, index: int) -> str:
        """The name of a database, or its index."""
        return self.names[index] if self.names else str(index)

    @cached_property
    def _by_name(self) -> dict[str, int]:
        return {} if self.names is None else {name: i for i, name in enumerate(self.names)}

    def index(self, ref: int | str, field: str) -> int:
        """Resolve a database reference (index or name); ``field`` names it in errors.

        Examples
        --------
        >>> Databases(3, ("north", "south", "east")).index("east", "database")
        2
        >>> Databases(3, ("north", "south", "east")).index("west", "invocations[1].database")
        Traceback (most recent call last):
        ...
        gce.errors.InvalidParameterError: invocations[1].database: unknown database 'west' (databases are 'north', 'south', 'east' or 0..2)
        """
        if isinstance(ref, str) and ref in self._by_name:
            return self._by_name[ref]
        if not is_integer(ref) or not 0 <= ref < self.n:
            raise InvalidParameterError(field, f"unknown database {shown(ref)} (databases are {self._known()})")
        return int(ref)

    def _known(self) -> str:
        """The references a database may be given by, for errors: its names (up to 8) and the indices."""
        if not self.names:
            return f"0..{self.n - 1}"
        if self.n <= 8:
            return f"{', '.join(map(shown, self.names))} or 0..{self.n - 1}"
        return f"{', '.join(map(shown, self.names[:3]))}, ... (their names) or 0..{self.n - 1}"

    @classmethod
    def of(cls, value: "Databases | int | Iterable[str]", field: str = "databases") -> "Databases":
        """The databases a scenario is given: a :class:`Databases`, a count n (0..n-1) or a list of distinct
        names (as ``databases`` in a scenario file), or an error naming ``field``."""
        if isinstance(value, Databases):
            return value
        if is_integer(value):
            return cls(value)
        if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
            raise InvalidParameterError(field, f"must be a count, a list of names or Databases, got {shown(value)}")
        names = tuple(value)
        if not names:
            raise InvalidParameterError(field, "the list of names is empty")
        for i, name in enumerate(names):
            if not isinstance(name, str) or not name:
                raise InvalidParameterError(f"{field}[{i}]", f"must be a name (a non-empty string), got {shown(name)}")
        seen: dict[str, int] = {}
        for i, name in enumerate(names):
            if name in seen:
                raise InvalidParameterError(f"{field}[{i}]", f"repeats the name {shown(name)} ({field}[{seen[name]}])")
            seen[name] = i
        return cls(len(names), names)


#: The guarantee record classes themselves (subclasses take the general check, :func:`is_guarantee`).
_GUARANTEE_TYPES = frozenset(KINDS)


def _take_event(record: "Invocation | InvocationGroup") -> None:
    """A dp-accounting ``DpEvent`` given as a record's guarantee becomes its one mechanism, ``repeat`` times
    the runs it describes (:func:`gce.bridges.dp_events.as_guarantee`; an event of several distinct
    mechanisms is refused: a record holds one guarantee). Anything else is left for the record's checks."""
    guarantee, repeat = as_guarantee(record.guarantee, record.repeat)
    object.__setattr__(record, "guarantee", guarantee)
    object.__setattr__(record, "repeat", repeat)


@dataclass(frozen=True)
class Invocation:
    """``repeat`` runs of a mechanism with ``guarantee`` on database ``database``.

    ``database`` is an index, or a name that the :class:`Scenario` with named databases resolves (as in a
    scenario file): ``Scenario(databases=["north", "south"], invocations=[Invocation("north", PureDP(1))])``.
    """

    database: int | str
    guarantee: Guarantee
    repeat: int = 1

    def __post_init__(self) -> None:
        if type(self.database) is int and type(self.repeat) is int and 0 <= self.database \
                and 1 <= self.repeat <= MAX_INVOCATIONS and type(self.guarantee) in _GUARANTEE_TYPES:
            return  # the common case, checked without the numbers ABCs (a million records: 5.9 s -> 2 s)
        if isinstance(self.database, str):
            if not self.database:
                raise InvalidParameterError("database", "must be a database index or name, got ''")
        elif not is_integer(self.database) or self.database < 0:
            raise InvalidParameterError("database", f"must be a database index >= 0 or a name, got "
                                                    f"{shown(self.database)}")
        else:
            object.__setattr__(self, "database", int(self.database))
        _take_event(self)
        if not is_guarantee(self.guarantee):
            raise InvalidParameterError("mechanism", f"must be a guarantee, got {shown(self.guarantee)}")
        if not is_integer(self.repeat) or self.repeat < 1:
            raise InvalidParameterError("repeat", f"must be an integer >= 1, got {shown(self.repeat)}")
        if self.repeat > MAX_INVOCATIONS:
            raise InvalidParameterError("repeat", f"{int(self.repeat):,} exceeds the limit of 2^53 = "
                                                  f"{MAX_INVOCATIONS:,} invocations")
        object.__setattr__(self, "repeat", int(self.repeat))


# ---------------------------------------------------------------------------
# The columnar form: invocation groups


_DATABASE, _REPEAT, _GUARANTEE = (operator.attrgetter(a) for a in ("database", "repeat", "guarantee"))


def _database_indices(value: object, field: str) -> range | np.ndarray:
    """A group's databases: a non-empty range or collection of indices in [0, MAX_DATABASES), in the order
    given (duplicates allowed: a database listed twice runs the group twice). Arrays are copied read-only."""
    if isinstance(value, range):
        if len(value) == 0:
            raise InvalidParameterError(field, f"must list at least one database, got {shown(value)}")
        low, high = min(value[0], value[-1]), max(value[0], value[-1])
        if low < 0:
            raise InvalidParameterError(field, f"must be database indices >= 0, got {shown(value)}")
        if high >= MAX_DATABASES:
            raise InvalidParameterError(field, f"lists database {high:,}, beyond the limit of {MAX_DATABASES:,} "
                                               f"databases")
        return value
    if isinstance(value, np.ndarray):
        array = value
        if array.dtype.kind not in "iu":
            raise InvalidParameterError(field, f"must be an array of integer database indices, got dtype "
                                               f"{array.dtype}")
    elif isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InvalidParameterError(field, f"must be a range or a collection of database indices, "
                                           f"got {shown(value)}")
    else:
        items = value if isinstance(value, Sequence) else list(value)
        if not set(map(type, items)) <= {int}:  # the common case (Python ints) checked at C speed
            wrong = next((j for j, v in enumerate(items) if not is_integer(v)), None)
            if wrong is not None:
                raise InvalidParameterError(f"{field}[{wrong}]", f"must be a database index, got {shown(items[wrong])}")
        try:
            array = np.array(items, dtype=np.int64)
        except OverflowError:
            raise InvalidParameterError(field, "lists an index beyond the limit of databases") from None
    if array.ndim != 1:
        raise InvalidParameterError(field, f"must be one-dimensional, got shape {array.shape}")
    if array.size == 0:
        raise InvalidParameterError(field, "must list at least one database, got an empty collection")
    if array.dtype.kind == "i" and array.min() < 0:
        j = int(np.argmax(array < 0))
        raise InvalidParameterError(f"{field}[{j}]", f"must be a database index >= 0, got {int(array[j])}")
    if array.max() >= MAX_DATABASES:
        j = int(np.argmax(array >= MAX_DATABASES))
        raise InvalidParameterError(f"{field}[{j}]", f"database {int(array[j]):,} is beyond the limit of "
                                                     f"{MAX_DATABASES:,} databases")
    out = array.astype(np.intp, copy=True)
    out.setflags(write=False)
    return out


def _references(value: object, field: str) -> tuple[int | str, ...] | str | None:
    """A group's databases when they are given by name: ``"all"``, or the references in order (names, and
    indices >= 0 beside them); None when there is no name (indices, ranges, arrays: :func:`_database_indices`)."""
    if isinstance(value, str):
        if value == ALL:
            return ALL
        raise InvalidParameterError(field, f'must be "all", a range or a collection of database indices or '
                                           f"names, got {shown(value)}")
    if isinstance(value, (range, np.ndarray, bytes)) or not isinstance(value, Sequence):
        return None  # (an iterator is read once, by _database_indices: it holds indices)
    if str not in set(map(type, value)):
        return None
    out: list[int | str] = []
    for j, ref in enumerate(value):
        if isinstance(ref, str) and ref:
            out.append(ref)
        elif is_integer(ref) and ref >= 0:
            out.append(int(ref))
        else:
            raise InvalidParameterError(f"{field}[{j}]", f"must be a database index >= 0 or a name, got {shown(ref)}")
    if not out:
        raise InvalidParameterError(field, "must list at least one database, got an empty collection")
    return tuple(out)


def _as_range(array: np.ndarray) -> range | np.ndarray:
    """An index array that counts up by one, as a range (no memory per database); others unchanged."""
    if array.size > 1 and int(array[-1]) - int(array[0]) == array.size - 1 and bool(np.all(np.diff(array) == 1)):
        return range(int(array[0]), int(array[-1]) + 1)
    return array if array.size > 1 else range(int(array[0]), int(array[0]) + 1)


def _slice(r: range) -> slice:
    """The slice of an array that a range of indices selects (ranges counting down included)."""
    stop = r.stop if r.stop >= 0 else None
    return slice(r.start, stop, r.step)


def _describe_indices(databases: range | np.ndarray) -> str:
    if isinstance(databases, range):
        return repr(databases)
    head = ", ".join(map(str, databases[:4].tolist()))
    return f"[{head}{', ...' if databases.size > 4 else ''}] ({databases.size:,} databases)"


@dataclass(frozen=True, eq=False)
class InvocationGroup:
    """``repeat`` runs of a mechanism with ``guarantee`` on each database of ``databases``.

    The columnar form of many :class:`Invocation` records (one group per
    ``[[invocations]]`` table of a scenario file): what a scenario of a
    million databases stores instead of a million objects. Invocation ``j`` of
    the group runs on ``databases[j]``.

    Parameters
    ----------
    databases : range or collection of int
        The databases, in order: a ``range`` (kept as is: no memory per
        database) or indices (kept as a read-only numpy array). A database
        listed twice runs the group twice.
    guarantee : Guarantee
        Each invocation's guarantee.
    repeat : int
        Runs per listed database, 1..2^53 (a count, never expanded).

    Examples
    --------
    >>> from gce.accounting.guarantees import PureDP
    >>> g = InvocationGroup(range(1_000_000), PureDP(0.1), repeat=2)
    >>> len(g), g.total
    (1000000, 2000000)
    >>> InvocationGroup([0, -1], PureDP(0.1))
    Traceback (most recent call last):
    ...
    gce.errors.InvalidParameterError: databases[1]: must be a database index >= 0, got -1
    """

    databases: range | np.ndarray
    guarantee: Guarantee
    repeat: int = 1

    def __post_init__(self) -> None:
        references = _references(self.databases, "databases")
        if references is None:
            object.__setattr__(self, "databases", _database_indices(self.databases, "databases"))
        else:  # names (or "all"), kept as given until the scenario resolves them (:meth:`resolve`)
            object.__setattr__(self, "databases", references)
        _take_event(self)
        if not is_guarantee(self.guarantee):
            raise InvalidParameterError("mechanism", f"must be a guarantee, got {shown(self.guarantee)}")
        if not is_integer(self.repeat) or self.repeat < 1:
            raise InvalidParameterError("repeat", f"must be an integer >= 1, got {shown(self.repeat)}")
        if self.repeat > MAX_INVOCATIONS:
            raise InvalidParameterError("repeat", f"{int(self.repeat):,} exceeds the limit of 2^53 = "
                                                  f"{MAX_INVOCATIONS:,} invocations")
        object.__setattr__(self, "repeat", int(self.repeat))

    @property
    def unresolved(self) -> bool:
        """Whether the group lists databases by name or as ``"all"`` (a scenario resolves them)."""
        return isinstance(self.databases, (str, tuple))

    def resolve(self, databases: Databases, field: str = "databases") -> "InvocationGroup":
        """The group with its names replaced by the indices of ``databases`` and ``"all"`` by every database;
        errors name ``field[j]``.

        Examples
        --------
        >>> from gce.accounting.guarantees import PureDP
        >>> named = Databases(3, ("north", "south", "east"))
        >>> InvocationGroup(["east", "north"], PureDP(0.1)).resolve(named).databases
        array([2, 0])
        >>> InvocationGroup("all", PureDP(0.1)).resolve(named).databases
        range(0, 3)
        """
        if not self.unresolved:
            return self
        if isinstance(self.databases, str):  # "all"
            return InvocationGroup(range(databases.n), self.guarantee, self.repeat)
        indices = [databases.index(ref, f"{field}[{j}]") for j, ref in enumerate(self.databases)]
        return InvocationGroup(_as_range(np.array(indices, dtype=np.intp)), self.guarantee, self.repeat)

    def __len__(self) -> int:
        """How many databases the group lists (its invocation records, before repeats)."""
        if isinstance(self.databases, str):  # "all"
            raise TypeError("the group lists every database (\"all\"): its length is known once a scenario "
                            "resolves it")
        return len(self.databases)

    @property
    def total(self) -> int:
        """Invocations, repeats counted."""
        return self.repeat * len(self.databases)

    def largest(self) -> int:
        """The largest database index listed."""
        d = self.databases
        return max(d[0], d[-1]) if isinstance(d, range) else int(d.max())

    def positions(self, members: np.ndarray) -> np.ndarray:
        """Positions (ascending) of the group's databases that lie in ``members`` (sorted, unique)."""
        d = self.databases
        if not isinstance(d, range):
            return np.flatnonzero(np.isin(d, members, assume_unique=False))
        if d.step > 0:
            chosen = members[np.searchsorted(members, d.start):np.searchsorted(members, d.stop)]
        else:
            chosen = members[np.searchsorted(members, d.stop, "right"):np.searchsorted(members, d.start, "right")]
        offset = chosen - d.start
        if d.step != 1:
            offset = offset[offset % d.step == 0]
        positions = offset // d.step
        return positions if d.step > 0 else positions[::-1]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, InvocationGroup):
            return NotImplemented
        if (self.guarantee, self.repeat, len(self)) != (other.guarantee, other.repeat, len(other)):
            return False
        a, b = self.databases, other.databases
        if isinstance(a, range) and isinstance(b, range):
            return a == b
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))

    def __hash__(self) -> int:
        return hash((self.guarantee, self.repeat, len(self)))

    def __repr__(self) -> str:
        return (f"InvocationGroup(databases={_describe_indices(self.databases)}, guarantee={self.guarantee!r}, "
                f"repeat={self.repeat})")


class Invocations(Sequence):
    """The invocations of a scenario, stored column by column: a few groups, numpy per database.

    A :class:`Scenario` keeps its invocations in this form whatever it was
    given (:class:`Invocation` records are converted once, consecutive records
    with one guarantee and one repeat count becoming one group), so that a
    solve costs O(groups) in Python objects and O(databases) only in
    vectorised numpy. It is still a sequence of
    :class:`Invocation`: ``invocations[j]`` and iteration build the records
    on demand, in the order given (group after group), which is the order
    that a report's ``differing`` indices refer to.

    The aggregates the solvers need are computed from the groups: the
    per-database weights of any per-guarantee statistic (:meth:`weights`),
    and the multiset, count and positions of the invocations on a set of
    databases (:meth:`multiset_on`, :meth:`count_on`, :meth:`positions_on`).
    ``kind``, ``database`` and ``repeat`` give one entry per invocation record
    (built on first use) for code that wants the flat table.

    Parameters
    ----------
    groups : iterable of InvocationGroup

    Examples
    --------
    >>> from gce.accounting.guarantees import PureDP
    >>> inv = Invocations.of([Invocation(i, PureDP(0.1)) for i in range(5)] + [Invocation(2, PureDP(1.0), 3)])
    >>> inv.groups
    (InvocationGroup(databases=range(0, 5), guarantee=PureDP(epsilon=0.1), repeat=1), InvocationGroup(databases=range(2, 3), guarantee=PureDP(epsilon=1.0), repeat=3))
    >>> len(inv), inv[5], inv.total
    (6, Invocation(database=2, guarantee=PureDP(epsilon=1.0), repeat=3), 8)
    >>> inv.multiset_on({2, 4})
    ((PureDP(epsilon=0.1), 2), (PureDP(epsilon=1.0), 3))
    """

    def __init__(self, groups: Iterable[InvocationGroup]):
        groups = tuple(groups)
        if not groups:
            raise InvalidParameterError("invocations", "needs at least one invocation")
        wrong = next((j for j, g in enumerate(groups) if not isinstance(g, InvocationGroup)), None)
        if wrong is not None:
            raise InvalidParameterError(f"invocations[{wrong}]", f"must be an InvocationGroup, got "
                                                                 f"{shown(groups[wrong])}")
        named = next((j for j, g in enumerate(groups) if g.unresolved), None)
        if named is not None:
            raise InvalidParameterError(f"invocations[{named}].databases",
                                        f"{shown(groups[named].databases)} names databases: give the groups to a "
                                        f"Scenario, which resolves names against its databases")
        index: dict[Guarantee, int] = {}
        self._groups = groups
        self._group_kind = np.array([index.setdefault(g.guarantee, len(index)) for g in groups], dtype=np.intp)
        self._kinds = tuple(index)
        self._group_repeat = np.array([g.repeat for g in groups], dtype=np.float64)  # exact: repeats <= 2^53
        self._offsets = np.cumsum([0] + [len(g) for g in groups], dtype=np.int64)
        self._total = sum(g.total for g in groups)

    # --- building -----------------------------------------------------------------------------------
    @classmethod
    def of(cls, invocations: "Iterable[Invocation | InvocationGroup] | Invocations",
           n: int | None = None, databases: Databases | None = None) -> "Invocations":
        """The columnar form of :class:`Invocation` records and/or :class:`InvocationGroup` s (converted once).

        Consecutive records with the same guarantee and repeat count become one
        group; indices counting up by one become a ``range``. With ``n``, every
        database must lie in 0..n-1. With ``databases`` (n is then its count), database names and
        ``"all"`` are resolved against it; without, a name is an error.

        Raises
        ------
        InvalidParameterError
            Naming ``invocations`` (not a collection, or empty) or
            ``invocations[i]`` (the i-th item is neither an Invocation nor a
            group, or names an unknown database).
        """
        if isinstance(invocations, Invocations):
            if n is not None:
                invocations._check_range(n)
            return invocations
        if isinstance(invocations, (str, bytes, Invocation, InvocationGroup)) or not isinstance(invocations, Iterable):
            raise InvalidParameterError("invocations", f"must be a collection of Invocation, got "
                                                       f"{shown(invocations)}")
        items = invocations if isinstance(invocations, (tuple, list)) else tuple(invocations)
        if not items:
            raise InvalidParameterError("invocations", "needs at least one invocation")
        if databases is not None:
            n = databases.n
        types = set(map(type, items))
        if types == {Invocation}:  # the common case: records only, converted in one vectorised pass
            return cls(_groups_of_records(items, 0, n, databases))
        groups: list[InvocationGroup] = []
        start = None
        for i, item in enumerate(items):
            if isinstance(item, Invocation):
                start = i if start is None else start
                continue
            if not isinstance(item, InvocationGroup):
                raise InvalidParameterError(f"invocations[{i}]", f"must be an Invocation or an InvocationGroup, "
                                                                 f"got {shown(item)}")
            if start is not None:
                groups += _groups_of_records(items[start:i], start, n, databases)
                start = None
            if item.unresolved and databases is not None:
                item = item.resolve(databases, f"invocations[{i}].databases")
            if n is not None and item.largest() >= n:
                raise InvalidParameterError(f"invocations[{i}].databases", f"unknown database {item.largest()} "
                                                                           f"(databases are 0..{n - 1})")
            groups.append(item)
        if start is not None:
            groups += _groups_of_records(items[start:], start, n, databases)
        return cls(groups)

    def _check_range(self, n: int) -> None:
        for j, g in enumerate(self._groups):
            if g.largest() >= n:
                first = int(self._offsets[j]) + int(np.argmax(np.asarray(g.databases) >= n))
                raise InvalidParameterError(f"invocations[{first}].databases", f"unknown database {g.largest()} "
                                                                               f"(databases are 0..{n - 1})")

    def with_guarantees(self, mapping: "dict[Guarantee, Guarantee]") -> "Invocations":
        """The same invocations with each guarantee in ``mapping`` replaced by its value."""
        return Invocations(InvocationGroup(g.databases, mapping.get(g.guarantee, g.guarantee), g.repeat)
                           for g in self._groups)

    # --- the sequence of Invocation records ---------------------------------------------------------
    @property
    def groups(self) -> tuple[InvocationGroup, ...]:
        return self._groups

    @property
    def kinds(self) -> tuple[Guarantee, ...]:
        """The distinct guarantees, in order of first appearance."""
        return self._kinds

    @property
    def total(self) -> int:
        """All invocations, repeats counted."""
        return self._total

    def __len__(self) -> int:
        return int(self._offsets[-1])

    def __getitem__(self, j):
        if isinstance(j, slice):
            return tuple(self[i] for i in range(len(self))[j])
        if not is_integer(j):
            raise TypeError(f"invocation indices must be integers or slices, not {type(j).__name__}")
        j = int(j) + (len(self) if j < 0 else 0)
        if not 0 <= j < len(self):
            raise IndexError(f"invocation index {j} out of range (0..{len(self) - 1})")
        group = int(np.searchsorted(self._offsets, j, side="right")) - 1
        g = self._groups[group]
        return Invocation(int(g.databases[j - int(self._offsets[group])]), g.guarantee, g.repeat)

    def __iter__(self):
        for g in self._groups:
            databases = g.databases if isinstance(g.databases, range) else g.databases.tolist()
            for database in databases:
                yield Invocation(database, g.guarantee, g.repeat)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Invocations):
            return len(self) == len(other) and (self._groups == other._groups or tuple(self) == tuple(other))
        if isinstance(other, (tuple, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash((len(self), self._kinds))

    def __repr__(self) -> str:
        return (f"Invocations({len(self._groups)} group{'s' if len(self._groups) != 1 else ''}, {len(self):,} "
                f"invocation records, {self._total:,} invocations)")

    # --- aggregates ---------------------------------------------------------------------------------
    def weights(self, n: int, per_kind: np.ndarray) -> np.ndarray:
        """Per database, the sum over its invocations of repeat x ``per_kind[kind]``.

        O(n) numpy and no array per invocation for range groups. Each database's terms are added in the
        order of the invocation records, whatever the grouping, so records and groups describing the same
        invocations give the same floating-point weights.
        """
        # A sum beyond the double range (epsilon 1e303 repeated 10^6 times) is +inf, its correctly rounded
        # value: a bound built on it is infinite, as it must be (never a wrapped or clamped finite number).
        with np.errstate(over="ignore"):
            value = self._group_repeat * np.asarray(per_kind, dtype=np.float64)[self._group_kind]
            if self._many():
                # bincount adds each database's terms one by one in the order of the records, as the loop does
                return np.bincount(self.database, weights=value[self._record_group], minlength=n)
            out = np.zeros(n)
            for j, g in enumerate(self._groups):
                if value[j] == 0.0:
                    continue
                if isinstance(g.databases, range):
                    out[_slice(g.databases)] += value[j]
                else:
                    np.add.at(out, g.databases, value[j])  # unbuffered: a database listed twice counts twice
        return out

    @staticmethod
    def _members(members: Iterable[int]) -> np.ndarray:
        """A set of databases as a sorted array without repeats (an array already so is used as is)."""
        if isinstance(members, np.ndarray):
            chosen = members.astype(np.intp, copy=False)
            if chosen.size < 2 or bool(np.all(chosen[1:] > chosen[:-1])):
                return chosen
            chosen = np.sort(chosen)
        else:
            size = len(members) if hasattr(members, "__len__") else -1
            chosen = np.fromiter(members, dtype=np.intp, count=size)
            chosen.sort()  # (np.unique's hash table took 2 s for a million members)
        if chosen.size > 1 and bool(np.any(chosen[1:] == chosen[:-1])):
            chosen = chosen[np.r_[True, chosen[1:] != chosen[:-1]]]
        return chosen

    def members(self, members: Iterable[int]) -> np.ndarray:
        """``members`` as the sorted index array the methods below take without converting again."""
        return self._members(members)

    def _per_group_hits(self, members: Iterable[int]) -> list[np.ndarray]:
        chosen = self._members(members)
        return [g.positions(chosen) if chosen.size else np.empty(0, dtype=np.intp) for g in self._groups]

    @cached_property
    def _by_database(self) -> tuple[np.ndarray, np.ndarray]:
        """The invocation records ordered by database (stably), and their databases in that order: the
        index through which a set of databases finds its records when the groups are many."""
        order = np.argsort(self.database, kind="stable")
        return order, self.database[order]

    @cached_property
    def _record_group(self) -> np.ndarray:
        """Per invocation record, the index of its group."""
        return np.repeat(np.arange(len(self._groups), dtype=np.intp), np.diff(self._offsets))

    def _records_on(self, chosen: np.ndarray) -> np.ndarray:
        """The indices (ascending) of the records on the databases ``chosen`` (sorted, unique), found
        through :attr:`_by_database`: O(members log records + hits), whatever the number of groups."""
        order, databases = self._by_database
        low = np.searchsorted(databases, chosen, "left")
        high = np.searchsorted(databases, chosen, "right")
        lengths = high - low
        total = int(lengths.sum())
        if total == 0:
            return np.empty(0, dtype=np.int64)
        starts = np.repeat(low - (np.cumsum(lengths) - lengths), lengths)
        return np.sort(order[starts + np.arange(total)]).astype(np.int64)

    def _many(self) -> bool:
        """Whether the aggregates go through the flat index of the records (many small groups)."""
        groups = len(self._groups)
        return groups > LOOP_GROUPS_MAX and len(self) <= FLAT_RECORDS_PER_GROUP * groups

    def multiset_on(self, members: Iterable[int]) -> Multiset:
        """The guarantees of the invocations on the databases ``members``, as a multiset."""
        if self._many():
            records = self._records_on(self._members(members))
            # float64 counts are exact: a scenario's total is at most 2^53
            counts = np.bincount(self.kind[records], weights=self.repeat[records], minlength=len(self._kinds))
            return tuple((self._kinds[k], int(counts[k])) for k in np.flatnonzero(counts).tolist())
        counts: Counter[int] = Counter()
        for j, hits in enumerate(self._per_group_hits(members)):
            if hits.size:
                counts[int(self._group_kind[j])] += hits.size * self._groups[j].repeat
        return tuple((self._kinds[k], counts[k]) for k in range(len(self._kinds)) if counts[k] > 0)

    def count_on(self, members: Iterable[int]) -> int:
        """How many invocations (repeats counted) run on the databases ``members``."""
        if self._many():
            return int(self.repeat[self._records_on(self._members(members))].sum())
        return sum(hits.size * g.repeat for g, hits in zip(self._groups, self._per_group_hits(members)))

    def positions_on(self, members: Iterable[int]) -> np.ndarray:
        """The indices (ascending) of the invocation records on the databases ``members``."""
        if self._many():
            return self._records_on(self._members(members))
        parts = [hits + self._offsets[j] for j, hits in enumerate(self._per_group_hits(members)) if hits.size]
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)

    def kind_counts(self, n: int, kind: int) -> np.ndarray:
        """Per database, the invocations (repeats counted) of the guarantee :attr:`kinds` ``[kind]``: the
        weights of :meth:`weights` for the indicator of that guarantee, in O(n + its records)."""
        if not self._many():
            per_kind = np.zeros(len(self._kinds))
            per_kind[kind] = 1.0
            return self.weights(n, per_kind)
        order, starts = self._by_kind
        records = order[starts[kind]:starts[kind + 1]]
        # integer counts (each at most 2^53 in total): exact in any order of addition
        return np.bincount(self.database[records], weights=self.repeat[records], minlength=n).astype(np.float64)

    @cached_property
    def _by_kind(self) -> tuple[np.ndarray, np.ndarray]:
        """The invocation records ordered by guarantee (stably), and where each guarantee's run starts."""
        order = np.argsort(self.kind, kind="stable")
        starts = np.searchsorted(self.kind[order], np.arange(len(self._kinds) + 1))
        return order, starts

    @cached_property
    def kind_position(self) -> dict[Guarantee, int]:
        """The position of each distinct guarantee in :attr:`kinds`."""
        return {g: k for k, g in enumerate(self._kinds)}

    def top_counts(self, n: int, size: int) -> np.ndarray:
        """Per guarantee of :attr:`kinds`, its invocations (repeats counted) on the ``size`` databases that
        hold the most of them: no set of ``size`` databases holds more. float64, exact (<= 2^53)."""
        if size <= 0:
            return np.zeros(len(self._kinds))
        if size >= n:
            return self.kind_totals()
        key = self.kind.astype(np.int64) * n + self.database
        cells, inverse = np.unique(key, return_inverse=True)
        counts = np.bincount(inverse.ravel(), weights=self.repeat, minlength=cells.size)
        kind = cells // n
        order = np.lexsort((-counts, kind))  # by guarantee, each one's databases from the most invocations down
        kind, counts = kind[order], counts[order]
        first = np.searchsorted(kind, kind, "left")
        keep = np.arange(kind.size) - first < size
        return np.bincount(kind[keep], weights=counts[keep], minlength=len(self._kinds))

    def suffix_database_max(self, rank: np.ndarray) -> np.ndarray:
        """With the guarantees ranked (``rank[k]`` for :attr:`kinds` ``[k]``, a permutation of 0..K-1), for
        every j the most invocations (repeats counted) that one database runs with a guarantee of rank >= j.

        The records sorted by database, ranks descending: a running sum within each database gives, at each
        record, that database's invocations of rank >= the record's; the most per rank, then a suffix
        maximum. O(records log records)."""
        rank = np.asarray(rank, dtype=np.intp)
        ranks = rank[self.kind]
        order = np.lexsort((-ranks, self.database))
        counts = self.repeat[order].astype(np.float64)  # exact: a scenario's total is at most 2^53
        running = np.cumsum(counts)
        databases = self.database[order]
        starts = np.flatnonzero(np.r_[True, databases[1:] != databases[:-1]])
        before = np.repeat(running[starts] - counts[starts], np.diff(np.r_[starts, databases.size]))
        most = np.zeros(rank.size)
        np.maximum.at(most, ranks[order], running - before)
        return np.maximum.accumulate(most[::-1])[::-1]

    def kind_totals(self) -> np.ndarray:
        """Per guarantee of :attr:`kinds`, its invocations (repeats counted), as float64 (exact: <= 2^53)."""
        return np.bincount(self._group_kind, weights=self._group_repeat * np.diff(self._offsets),
                           minlength=len(self._kinds))

    def multiset(self, mask: np.ndarray | None = None) -> Multiset:
        """The guarantees of the (masked: one flag per invocation record) invocations, as a multiset."""
        if mask is None:
            counts = np.zeros(len(self._kinds), dtype=object)
            for k, g in zip(self._group_kind, self._groups):
                counts[k] += g.total
            return tuple((g, int(c)) for g, c in zip(self._kinds, counts) if c > 0)
        counts = np.bincount(self.kind[mask], weights=self.repeat[mask], minlength=len(self._kinds))
        return tuple((g, int(c)) for g, c in zip(self._kinds, counts) if c > 0)

    # --- the flat table (one entry per invocation record), built on first use -------------------------
    @cached_property
    def kind(self) -> np.ndarray:
        """Per invocation record, the index of its guarantee in :attr:`kinds`."""
        return np.repeat(self._group_kind, np.diff(self._offsets))

    @cached_property
    def database(self) -> np.ndarray:
        """Per invocation record, its database."""
        return np.concatenate([np.asarray(g.databases, dtype=np.intp) for g in self._groups])

    @cached_property
    def repeat(self) -> np.ndarray:
        """Per invocation record, its repeat count."""
        return np.repeat(np.array([g.repeat for g in self._groups], dtype=np.int64), np.diff(self._offsets))

    def on(self, members: Iterable[int]) -> np.ndarray:
        """Boolean mask of the invocation records on ``members``."""
        mask = np.zeros(len(self), dtype=bool)
        mask[self.positions_on(members)] = True
        return mask


def _groups_of_records(records: Sequence[Invocation], first: int, n: int | None,
                       databases: Databases | None = None) -> list[InvocationGroup]:
    """Consecutive :class:`Invocation` records as groups: one per run of equal (guarantee, repeat).

    Guarantees are grouped by object identity first (records built in a loop share one object), then
    the few distinct objects by equality; attribute access goes through C-level iterators.
    ``first`` is the position of ``records[0]`` among the scenario's items (for errors). A database given
    by name is resolved against ``databases`` (without, it is an unknown database).
    """
    count = len(records)
    try:  # operator.index refuses a name ("3" too, which int64 would read as 3)
        database = np.fromiter(map(operator.index, map(_DATABASE, records)), dtype=np.int64, count=count)
    except TypeError:
        known = Databases(n) if databases is None and n is not None else databases
        if known is None:
            j = next(j for j, r in enumerate(records) if isinstance(r.database, str))
            raise InvalidParameterError(f"invocations[{first + j}].database",
                                        f"names database {shown(records[j].database)}: give the invocations to "
                                        f"a Scenario, which resolves names against its databases") from None
        database = np.array([known.index(r.database, f"invocations[{first + j}].database")
                             if isinstance(r.database, str) else r.database for j, r in enumerate(records)],
                            dtype=np.int64)
    repeat = np.fromiter(map(_REPEAT, records), dtype=np.int64, count=count)
    if n is not None and database.max() >= n:
        j = int(np.argmax(database >= n))
        raise InvalidParameterError(f"invocations[{first + j}].databases",
                                    f"unknown database {int(database[j])} (databases are 0..{n - 1})")
    if database.max() >= MAX_DATABASES:
        j = int(np.argmax(database >= MAX_DATABASES))
        raise InvalidParameterError(f"invocations[{first + j}].databases",
                                    f"database {int(database[j]):,} is beyond the limit of {MAX_DATABASES:,}")
    ids = np.fromiter(map(id, map(_GUARANTEE, records)), dtype=np.int64, count=count)
    _, firsts, inverse = np.unique(ids, return_index=True, return_inverse=True)
    index: dict[Guarantee, int] = {}
    of_object = np.array([index.setdefault(records[j].guarantee, len(index)) for j in firsts], dtype=np.intp)
    kind = of_object[inverse.ravel()]
    kinds = tuple(index)
    starts = np.flatnonzero(np.r_[True, (kind[1:] != kind[:-1]) | (repeat[1:] != repeat[:-1])])
    ends = np.r_[starts[1:], count]
    database = database.astype(np.intp)
    groups = []
    for s, e in zip(starts.tolist(), ends.tolist()):
        indices = database[s:e]
        indices.setflags(write=False)
        group = object.__new__(InvocationGroup)  # the records were validated: no second check per database
        object.__setattr__(group, "databases", _as_range(indices))
        object.__setattr__(group, "guarantee", kinds[kind[s]])
        object.__setattr__(group, "repeat", int(repeat[s]))
        groups.append(group)
    return groups


def __getattr__(name: str) -> object:
    """``InvocationTable``: the former name of :class:`Invocations` (a table with one row per invocation
    record), kept as a deprecated alias that warns."""
    if name == "InvocationTable":
        from .validation import warn_renamed

        warn_renamed("gce.model.InvocationTable", "gce.model.Invocations")
        return Invocations
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def invocation_multiset(invocations: Iterable[Invocation], members: Iterable[int] | None = None) -> Multiset:
    """The guarantees of the invocations on ``members`` (all when None), as a multiset."""
    if members is None and isinstance(invocations, Invocations):
        return invocations.multiset()  # from the groups, no record built
    chosen = None if members is None else set(members)
    counts: Counter[Guarantee] = Counter()
    for inv in invocations:
        if chosen is None or inv.database in chosen:
            counts[inv.guarantee] += inv.repeat
    return tuple(counts.items())


def _check_number(value: object, field: str) -> None:
    if not is_number(value):
        raise InvalidParameterError(field, f"must be a number, got {shown(value)}")


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
        raise InvalidParameterError("delta", f"must lie in [0, 1), got {shown(delta)}")
    if epsilon is not None and not (epsilon >= 0.0 and math.isfinite(epsilon)):
        raise InvalidParameterError("epsilon", f"must be finite and >= 0, got {shown(epsilon)}")


@dataclass(frozen=True)
class Scenario:
    """One run of the generalized composition experiment: what runs where, and what is public.

    Parameters
    ----------
    databases : Databases, int or list of str
        The databases: an int n means 0..n-1; a list of distinct names names them, as ``databases`` in
        a scenario file (stored as :class:`Databases`).
    invocations : collection of Invocation or InvocationGroup, or Invocations
        The mechanisms run; each database must exist, given by index or, when the databases are named,
        by name (``Invocation("north", ...)``, ``InvocationGroup(["north", "east"], ...)``; a group's
        ``"all"`` is every database). Stored as :class:`Invocations` (columnar: groups of databases
        with one guarantee and repeat count, names resolved to indices), still a sequence of
        :class:`Invocation`.
    constraints : ConstraintSet, Constraint or list of Constraint, optional
        The public membership constraints (001, Sec. V-A); default none. A list (or one constraint)
        becomes a :class:`ConstraintSet` over the scenario's databases; database names in the
        constraints are resolved as in a scenario file, and ``Exclusive("all")`` groups every database.
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
    rtol : float, optional
        The relative accuracy asked of every refined number (its certified
        bracket's ``upper / lower - 1``: :func:`gce.effort.relative_width`); None: the default,
        :data:`gce.effort.DEFAULT_RTOL`. :func:`gce.solve` may be given one instead.

    Raises
    ------
    InvalidParameterError
        A field is malformed; the error names it (e.g. ``invocations[1].databases``), and an unknown
        database name names the field and the name (``constraints[0].group[1]: unknown database 'west'``).
    InfeasibleConstraintsError
        The constraints allow no non-empty membership set (nothing to protect).

    Examples
    --------
    >>> import gce
    >>> scenario = gce.Scenario(
    ...     databases=["north", "south", "east"],
    ...     invocations=[gce.Invocation("north", gce.PureDP(0.5)), gce.Invocation("east", gce.PureDP(0.5))],
    ...     constraints=gce.Exclusive("all"), delta=0.0)
    >>> scenario.invocations[1].database, scenario.constraints.constraints
    (2, (Exclusive(group=(0, 1, 2)),))
    >>> round(gce.solve(scenario).epsilon, 6)  # one employer among the three: one invocation differs
    0.5
    """

    databases: Databases
    invocations: Invocations
    constraints: "ConstraintSet | None" = None
    neighborhood: str = "unbounded"
    delta: float | None = None
    epsilon: float | None = None
    title: str = ""
    hypotheses: "tuple[Hypothesis, Hypothesis] | None" = None
    notes: tuple[str, ...] = ()
    rtol: float | None = None

    def __post_init__(self) -> None:
        databases = Databases.of(self.databases)
        object.__setattr__(self, "databases", databases)
        n = databases.n
        # records are converted once, groups kept; names resolved against the databases
        invocations = Invocations.of(self.invocations, n, databases)
        if invocations.total > MAX_INVOCATIONS:
            raise InvalidParameterError("invocations", f"{invocations.total:,} invocations (repeats counted) exceed "
                                                       f"the limit of 2^53 = {MAX_INVOCATIONS:,}")
        object.__setattr__(self, "invocations", invocations)
        constraints = _constraint_set(self.constraints, databases)
        object.__setattr__(self, "constraints", constraints)
        try:
            constraints.require_nonempty()
        except UnsupportedCombinationError:  # too many blocks to check here; the solver still answers soundly
            pass
        check_neighborhood(self.neighborhood)
        check_target(self.delta, self.epsilon)
        if self.rtol is not None:
            object.__setattr__(self, "rtol", check_rtol(self.rtol))
        if not isinstance(self.title, str):
            raise InvalidParameterError("title", f"must be a string, got {shown(self.title)}")
        if not isinstance(self.notes, (str, Iterable)):
            raise InvalidParameterError("notes", f"must be strings, got {shown(self.notes)}")
        notes = (self.notes,) if isinstance(self.notes, str) else tuple(self.notes)
        if not all(isinstance(note, str) for note in notes):
            raise InvalidParameterError("notes", f"must be strings, got {shown(self.notes)}")
        object.__setattr__(self, "notes", notes)
        if self.hypotheses is not None:
            object.__setattr__(self, "hypotheses", _checked_hypotheses(self.hypotheses, constraints,
                                                                            databases))

    @property
    def n(self) -> int:
        return self.databases.n

    @property
    def table(self) -> Invocations:
        """The invocations in columnar form (the same object as :attr:`invocations`)."""
        return self.invocations

    def _repr_html_(self) -> str:
        """The scenario in a notebook: databases, invocation groups, constraints, neighbourhood or hypotheses,
        and target, as a table (its curve and bracket come with the report: ``gce.solve(scenario)``)."""
        return _scenario_html(self)

    def __repr__(self) -> str:
        """One line: databases, invocation groups, constraint kinds, neighbourhood and target."""
        groups = len(self.invocations.groups)
        kinds_listed = Counter(getattr(c, "kind", type(c).__name__) for c in self.constraints.constraints)
        constraints = ", ".join(f"{k}" if count == 1 else f"{count} x {k}" for k, count in kinds_listed.items())
        target = (f"epsilon at delta {self.delta:g}" if self.epsilon is None and self.delta is not None
                  else f"delta at epsilon {self.epsilon:g}" if self.epsilon is not None else "none (given to solve)")
        hypotheses = ", hypotheses given" if self.hypotheses is not None else ""
        return (f"Scenario({self.n:,}{' named' if self.databases.names else ''} databases, "
                f"{groups} invocation group{'s' if groups != 1 else ''} ({self.invocations.total:,} "
                f"invocation{'s' if self.invocations.total != 1 else ''}), "
                f"constraints: {constraints or 'none'}, {self.neighborhood}, target {target}{hypotheses})")


#: How many invocation groups and constraints a scenario's notebook display lists before eliding the rest.
_HTML_ITEMS = 8


def _scenario_html(scenario: Scenario) -> str:
    """:meth:`Scenario._repr_html_`: a table of what the scenario holds, every text escaped."""
    import html

    def listed(items: list[str], total: int) -> str:
        more = [f"... {total - len(items):,} more"] if total > len(items) else []
        return "<br>".join(html.escape(item) for item in items + more) or "none"

    databases = scenario.databases
    names = f" ({', '.join(databases.names[:_HTML_ITEMS])}{', ...' if databases.n > _HTML_ITEMS else ''})" \
        if databases.names else ""
    groups = scenario.invocations.groups
    invocations = [f"{g.guarantee!r} x {g.repeat:,} on {_describe_names(g.databases, databases)}"
                   for g in groups[:_HTML_ITEMS]]
    constraints = [c.describe() for c in scenario.constraints.constraints[:_HTML_ITEMS]]
    target = (f"epsilon at delta {scenario.delta:g}" if scenario.epsilon is None and scenario.delta is not None
              else f"delta at epsilon {scenario.epsilon:g}" if scenario.epsilon is not None else "given to solve")
    rows = [("databases", html.escape(f"{databases.n:,}{names}")),
            ("invocations", f"{scenario.invocations.total:,} in {len(groups):,} group{'s' if len(groups) != 1 else ''}"
                            f":<br>{listed(invocations, len(groups))}"),
            ("constraints", listed(constraints, len(scenario.constraints.constraints))),
            ("neighbourhood", html.escape(scenario.neighborhood) if scenario.hypotheses is None else
             html.escape(", ".join(f"{name} = {h.describe()}" for name, h in zip(("h0", "h1"), scenario.hypotheses)))),
            ("target", html.escape(target))]
    rows += [("note", html.escape(note)) for note in scenario.notes]
    title = f"<strong>{html.escape(scenario.title)}</strong>" if scenario.title else ""
    body = "".join(f"<tr><th style='text-align:left'>{k}</th><td style='text-align:left'>{v}</td></tr>"
                   for k, v in rows)
    return f"{title}<table>{body}</table><p>gce.solve(scenario) gives its curve and bracket.</p>"


def _describe_names(indices: range | np.ndarray, databases: Databases) -> str:
    """A group's databases for a display: by name when the databases have names, else as indices."""
    if isinstance(indices, range) and len(indices) == databases.n and indices.step == 1:
        return "all databases"
    if not databases.names:
        return _describe_indices(indices)
    shown_names = [databases.label(int(i)) for i in list(indices[:4])]
    return f"[{', '.join(shown_names)}{', ...' if len(indices) > 4 else ''}]" + \
        (f" ({len(indices):,} databases)" if len(indices) > 4 else "")


def _constraint_set(constraints: object, databases: Databases) -> ConstraintSet:
    """A scenario's constraints as a :class:`ConstraintSet` over ``databases``: none, one constraint, a
    collection of them (names and ``"all"`` resolved, errors naming ``constraints[i].field``), or a set."""
    n = databases.n
    if constraints is None:
        return ConstraintSet(n)
    if isinstance(constraints, ConstraintSet):
        if constraints.n != n:
            raise InvalidParameterError("constraints", f"must be over the scenario's {n:,} databases, got a "
                                                       f"ConstraintSet over {constraints.n:,}")
        return constraints
    given = (constraints,) if isinstance(constraints, Constraint) else constraints
    if isinstance(given, (str, bytes, Mapping)) or not isinstance(given, Iterable):
        raise InvalidParameterError("constraints", f"must be a constraint, a list of constraints or a ConstraintSet, "
                                                   f"got {shown(constraints)}")
    resolved = []
    for i, constraint in enumerate(given):
        if isinstance(constraint, Constraint):
            try:
                constraint = constraint.resolve(databases.index, n)
            except InvalidParameterError as error:
                raise error.within(f"constraints[{i}]") from None
        resolved.append(constraint)
    return ConstraintSet(n, resolved)


def _checked_hypotheses(hypotheses, constraints: ConstraintSet,
                        databases: Databases) -> tuple[Hypothesis, Hypothesis]:
    """Two hypotheses whose listed supports (point, explicit) are allowed; errors name ``hypotheses.h0|h1``.

    Priors whose support is generated (uniform, rates) are checked when solved
    (:func:`gce.solving.check_support`): enumerating them here could be as costly as the solve itself.
    """
    pair = tuple(hypotheses) if isinstance(hypotheses, (tuple, list)) else ()
    if len(pair) != 2 or not all(isinstance(h, Hypothesis) for h in pair):
        raise InvalidParameterError("hypotheses", f"must be two hypotheses (h0, h1), got {shown(hypotheses)}")
    resolved = []
    for name, h in zip(("h0", "h1"), pair):
        try:
            h = h.resolve(databases.index)
        except InvalidParameterError as error:
            raise error.within(f"hypotheses.{name}") from None
        check_listed(name, h, constraints)
        resolved.append(h)
    pair = tuple(resolved)
    return pair  # type: ignore[return-value]

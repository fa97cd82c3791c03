"""The interface every membership constraint provides, and shared validation.

A membership constraint restricts the allowed sets B~ of databases that may
hold the target individual's record (001, Sec. V-A; a set ``b`` is the support
of 001's b-vector). The empty set is always allowed. Constraints intersect.

Every kind is a small frozen record validated at construction; the methods
below are the whole interface solvers and checkers use, one implementation per
kind instead of ``isinstance`` chains:

* :meth:`Constraint.validate` checks what needs the number of databases ``n``.
* :meth:`Constraint.satisfied` is the residual: does a membership set obey it?
* :meth:`Constraint.compile` gives the equivalent linear inequalities over
  binary variables (:class:`~gce.constraints.linear.LinearSystem`).
* Structural views (:meth:`Constraint.at_most_bounds`,
  :meth:`Constraint.conflict_edges`, :meth:`Constraint.together_groups`,
  :meth:`Constraint.explicit_sets`) feed the solvers' fast paths; each is a
  sound summary of the constraint (never allows a set the constraint forbids
  when read as a restriction), defaulting to "nothing to say".

What must never change: ``satisfied`` and ``compile`` describe the same set
family for every ``n`` the constraint validates against (tests check this on
all 2^n sets), and the empty set satisfies every constraint.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
import dataclasses
from collections.abc import Callable, Iterable, Iterator
from typing import ClassVar, NamedTuple


from ..errors import InvalidParameterError
from ..validation import is_integer, shown
from .linear import LinearSystem

__all__ = ["Constraint", "AtMostBound", "check_n", "MAX_DATABASES", "ALL", "Resolver"]

#: Most databases a scenario or constraint set may have. Solvers, priors and reports keep arrays
#: (and the witness sets) with one entry per database, so a count beyond this is refused up front
#: instead of failing on an allocation of gigabytes.
MAX_DATABASES = 10**7

#: A group (``Exclusive``, ``Together``) or ``among`` (``AtMost``) written ``"all"``: every database, as in a
#: scenario file's ``databases = "all"``; resolved when the number of databases is known.
ALL = "all"

#: How a database reference becomes an index: ``resolve(reference, field)`` (an index or a name; ``field``
#: names it in the error), e.g. :meth:`gce.model.Databases.index`.
Resolver = Callable[[object, str], int]

#: How many indices :func:`format_indices` shows before eliding the rest.
_SHOWN_INDICES = 8


class AtMostBound(NamedTuple):
    """A cardinality bound ``|b & among| <= m`` implied by a constraint."""

    among: frozenset[int]
    m: int


def check_n(n: object, field: str = "n") -> int:
    """Validate a number of databases: an integer in ``[1, MAX_DATABASES]``.

    Raises
    ------
    InvalidParameterError
        Naming ``field`` and the value.
    """
    if not is_integer(n) or n < 1:
        raise InvalidParameterError(field, f"must be an integer >= 1, got {shown(n)}")
    if n > MAX_DATABASES:
        raise InvalidParameterError(field, f"{int(n):,} databases exceed the limit of {MAX_DATABASES:,} "
                                           f"(gce keeps one entry per database in memory)")
    return int(n)


def as_index(value: object, field: str) -> int:
    """A database index: an integer >= 0 (``bool`` and floats are rejected)."""
    if not is_integer(value):
        raise InvalidParameterError(field, f"must be an integer database index, got {shown(value)}")
    if value < 0:
        raise InvalidParameterError(field, f"must be a database index >= 0, got {shown(value)}")
    return int(value)


def as_index_tuple(values: object, field: str) -> tuple[int, ...]:
    """A non-empty, duplicate-free, sorted tuple of database indices.

    Raises
    ------
    InvalidParameterError
        If ``values`` is not a collection of integers >= 0, is empty, or
        repeats an index.
    """
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise InvalidParameterError(field, f"must be a collection of database indices, got {shown(values)}")
    indices = [as_index(v, field) for v in values]
    if not indices:
        raise InvalidParameterError(field, "must list at least one database, got an empty collection")
    seen: set[int] = set()
    for index in indices:
        if index in seen:
            raise InvalidParameterError(field, f"lists database {index} more than once")
        seen.add(index)
    return tuple(sorted(indices))


def holds_names(values: object) -> bool:
    """Whether a collection (or a collection of collections: edges, patterns) holds a database name."""
    if isinstance(values, str):
        return True
    if isinstance(values, (bytes, range)) or not isinstance(values, Iterable) or hasattr(values, "dtype"):
        return False
    return any(isinstance(v, str) or (isinstance(v, (tuple, list, set, frozenset)) and
                                      any(isinstance(x, str) for x in v)) for v in values)


def as_reference_tuple(values: object, field: str) -> tuple[int | str, ...]:
    """A non-empty, duplicate-free tuple of database references, in the order given: indices >= 0 and
    names (non-empty strings) that a scenario with named databases resolves (:meth:`Constraint.resolve`).

    Raises
    ------
    InvalidParameterError
        As :func:`as_index_tuple`; an empty name is refused too.
    """
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise InvalidParameterError(field, f"must be a collection of database indices or names, got {shown(values)}")
    references: list[int | str] = []
    for value in values:
        if isinstance(value, str):
            if not value:
                raise InvalidParameterError(field, "holds an empty database name")
            references.append(value)
        else:
            references.append(as_index(value, field))
    if not references:
        raise InvalidParameterError(field, "must list at least one database, got an empty collection")
    seen: set[int | str] = set()
    for reference in references:
        if reference in seen:
            raise InvalidParameterError(field, f"lists database {shown(reference)} more than once")
        seen.add(reference)
    return tuple(references)


def index_only(n: int) -> Resolver:
    """The resolver of a collection of ``n`` unnamed databases: indices pass, a name is an error that says
    where names are resolved."""

    def resolve(reference: object, field: str) -> int:
        if isinstance(reference, str):
            raise InvalidParameterError(field, f"names database {shown(reference)}; database names are resolved "
                                               f"by a scenario that has them (gce.Scenario(databases=[names], "
                                               f"constraints=[...])); a ConstraintSet takes indices")
        return as_index(reference, field)

    return resolve


def resolve_references(value: object, resolve: Resolver, field: str) -> object:
    """``value`` with every name replaced by its index (``resolve``), collections kept as their kind
    (tuple, list, set, frozenset; nested ones too); errors name ``field[i]``."""
    if isinstance(value, str):
        return resolve(value, field)
    if isinstance(value, (tuple, list, set, frozenset)):
        items = [resolve_references(v, resolve, f"{field}[{i}]") for i, v in enumerate(value)]
        return frozenset(items) if isinstance(value, (set, frozenset)) else tuple(items)
    return value


def check_in_range(indices: Iterable[int], n: int, field: str) -> None:
    """Raise unless every index lies in ``[0, n)``."""
    for index in indices:
        if index >= n:
            raise InvalidParameterError(field, f"database {index} is out of range [0, {n})")


def format_indices(indices: Iterable[int], *, as_set: bool = False) -> str:
    """``(0, 1, 2)`` (a tuple) or ``{0, 1, 2}`` (a set), eliding the middle of long collections."""
    items = sorted(indices, key=lambda i: (isinstance(i, str), i))  # names (unresolved) after the indices
    if len(items) <= _SHOWN_INDICES:
        body = ", ".join(map(str, items)) + ("," if len(items) == 1 and not as_set else "")
    else:
        body = f"{', '.join(map(str, items[: _SHOWN_INDICES - 1]))}, ..., {items[-1]}; {len(items)} databases"
    return "{" + body + "}" if as_set else "(" + body + ")"


def clique_edges(group: Iterable[int]) -> Iterator[tuple[int, int]]:
    """Every pair ``(u, v)``, ``u < v``, of a group: its conflict clique."""
    items = sorted(group)
    for position, u in enumerate(items):
        for v in items[position + 1 :]:
            yield (u, v)


class Constraint(ABC):
    """A restriction on the allowed membership sets (001, Sec. V-A).

    Subclasses are frozen dataclasses; their constructors validate everything
    that does not depend on the number of databases ``n``.

    Attributes
    ----------
    kind : str
        The name used in scenario files and error messages, e.g. ``"at_most"``.
    hereditary : bool
        True when, for every allowed set ``b``, every union of
        :meth:`ConstraintSet.components <gce.constraints.ConstraintSet.components>`
        inside ``b`` is allowed too. Downward-closed kinds have it and so does
        ``together``; an explicit list of patterns does not. The feasibility
        check and solvers rely on it to reason about small candidate sets only.
    """

    kind: ClassVar[str]
    hereditary: ClassVar[bool] = False
    #: The fields that hold database references: indices, or, until a scenario resolves them, names
    #: (and ``"all"`` for a whole group).
    reference_fields: ClassVar[tuple[str, ...]] = ()

    @property
    def unresolved(self) -> bool:
        """Whether a field still holds a database name or ``"all"`` (:meth:`resolve` replaces them)."""
        return any(holds_names(getattr(self, name)) for name in self.reference_fields)

    def resolve(self, resolve: Resolver, n: int) -> "Constraint":
        """The same constraint with its database names replaced by indices and ``"all"`` by every database.

        Parameters
        ----------
        resolve : callable
            ``resolve(reference, field)``: the index of a name or index, or an error naming ``field``
            (:meth:`gce.model.Databases.index`).
        n : int
            How many databases (what ``"all"`` lists).

        Returns
        -------
        Constraint
            ``self`` when nothing is left to resolve.

        Examples
        --------
        >>> from gce.constraints import Exclusive
        >>> names = ("north", "south", "east")
        >>> Exclusive(("east", "north")).resolve(lambda ref, field: names.index(ref), 3)
        Exclusive(group=(0, 2))
        >>> Exclusive("all").resolve(lambda ref, field: ref, 3)
        Exclusive(group=(0, 1, 2))
        """
        if not self.unresolved:
            return self
        changes = {}
        for name in self.reference_fields:
            value = getattr(self, name)
            changes[name] = tuple(range(n)) if value == ALL else resolve_references(value, resolve, name)
        return dataclasses.replace(self, **changes)

    def require_resolved(self) -> None:
        """Raise unless every database reference is an index (what :meth:`validate` needs)."""
        for name in self.reference_fields:
            value = getattr(self, name)
            if holds_names(value):
                shown_value = "all" if value == ALL else shown(value)
                raise InvalidParameterError(name, f"{shown_value} names databases: resolve it first (a "
                                                  f"ConstraintSet resolves \"all\", a Scenario its database names)")

    @abstractmethod
    def describe(self) -> str:
        """A short human-readable form, e.g. ``at_most(m=365, among=all)``."""

    @abstractmethod
    def validate(self, n: int) -> None:
        """Check the constraint against ``n`` databases (indices in ``[0, n)``).

        Raises
        ------
        InvalidParameterError
            Whose ``field`` names the offending field of the constraint.
        """

    @abstractmethod
    def satisfied(self, members: frozenset[int]) -> bool:
        """Whether the membership set ``members`` obeys the constraint."""

    @abstractmethod
    def compile(self, n: int) -> LinearSystem:
        """Equivalent linear inequalities over binary variables.

        For every ``x`` in {0, 1}^n, some binary assignment of the auxiliary
        variables satisfies the system iff the set ``{i : x[i] = 1}``
        satisfies the constraint. Validates against ``n`` first.
        """

    def is_vacuous(self, n: int) -> bool:
        """Whether every subset of ``range(n)`` satisfies the constraint."""
        return False

    def at_most_bounds(self, n: int) -> tuple[AtMostBound, ...]:
        """Cardinality bounds ``|b & among| <= m`` the constraint states."""
        return ()

    def conflict_edges(self, n: int) -> Iterator[tuple[int, int]]:
        """Pairs ``(u, v)``, ``u < v``, that the constraint forbids together."""
        return iter(())

    def together_groups(self) -> tuple[frozenset[int], ...]:
        """Groups whose databases the constraint forces to be all in or all out."""
        return ()

    def explicit_sets(self) -> tuple[frozenset[int], ...] | None:
        """The complete list of allowed non-empty sets, if the constraint gives one."""
        return None


"""The kinds of membership constraints: small frozen records.

Each record describes public knowledge about which databases can hold one
individual's record (001, Sec. V-A, Examples 1-3; 000, Ex. IV.5). Records are
validated at construction; :meth:`validate` adds the checks that need the
number of databases ``n``. Index collections are stored sorted and without
duplicates.

What must never change about the meaning of a field (``b`` is the membership
set, the support of 001's b-vector):

* ``AtMost.m``, ``AtMost.among``: ``|b & among| <= m``; ``among = None`` means
  all databases (001, Sec. V-A, Example 1: at most 365 hospitals; 000,
  Ex. IV.5: each ambulance record in at most 3 parts).
* ``Exclusive.group``: ``|b & group| <= 1`` (001, Sec. V-A, Example 2: one
  employer among the subsidiaries).
* ``Together.group``: ``b`` contains all of ``group`` or none of it.
* ``Conflicts.edges``: for every edge ``(u, v)``, not both ``u`` and ``v`` in ``b``.
* ``Patterns.allowed``: ``b`` is empty or one of the listed non-empty sets
  (001, Sec. V-A, Example 3: the column-nullability patterns).

A membership limit estimated from data (001, Sec. V-A, "General case": the
store chain) is meant to become a subclass of :class:`AtMost` with its own
``kind`` and provenance fields; every method below then applies unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from ..errors import InvalidParameterError
from ..validation import is_integer, shown
from .base import (
    ALL,
    AtMostBound,
    Constraint,
    as_index,
    as_index_tuple,
    as_reference_tuple,
    holds_names,
    check_in_range,
    clique_edges,
    format_indices,
)
from .linear import LinearSystem

if TYPE_CHECKING:  # pragma: no cover - networkx is imported where a graph is built (start-up)
    import networkx as nx

__all__ = ["AtMost", "Exclusive", "Together", "Conflicts", "Patterns"]


def _sum_at_most(columns: Iterable[int], bound: int) -> tuple[list[int], list[float], float]:
    """The row ``sum_{i in columns} x_i <= bound``."""
    columns = list(columns)
    return columns, [1.0] * len(columns), float(bound)


@dataclass(frozen=True)
class AtMost(Constraint):
    """At most ``m`` of the databases in ``among`` hold the record.

    Parameters
    ----------
    m : int
        The bound, an integer >= 0.
    among : tuple of int, optional
        The databases the bound counts; ``None`` (default) or ``"all"`` means all of them. Names are
        resolved by a scenario with named databases (:meth:`Constraint.resolve`).

    Raises
    ------
    InvalidParameterError
        If ``m`` is not an integer >= 0 or ``among`` is empty or repeats an index.

    References
    ----------
    001, Sec. V-A, Example 1 (at most 365 hospitals a year); 000, Ex. IV.5
    (every ambulance record in at most 3 parts).

    Examples
    --------
    >>> c = AtMost(2)
    >>> c.satisfied(frozenset({0, 3})), c.satisfied(frozenset({0, 1, 3}))
    (True, False)
    >>> AtMost(1, among=(4, 2)).describe()
    'at_most(m=1, among=(2, 4))'
    """

    kind = "at_most"
    hereditary = True
    reference_fields = ("among",)

    m: int
    among: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if not is_integer(self.m) or self.m < 0:
            raise InvalidParameterError("m", f"must be an integer >= 0, got {shown(self.m)}")
        object.__setattr__(self, "m", int(self.m))
        if isinstance(self.among, str) and self.among == ALL:
            object.__setattr__(self, "among", None)
        elif holds_names(self.among):
            object.__setattr__(self, "among", as_reference_tuple(self.among, "among"))
        elif self.among is not None:
            object.__setattr__(self, "among", as_index_tuple(self.among, "among"))

    @cached_property
    def _among_set(self) -> frozenset[int] | None:
        return None if self.among is None else frozenset(self.among)

    def _counted(self, n: int) -> Iterable[int]:
        return range(n) if self.among is None else self.among

    def describe(self) -> str:
        among = "all" if self.among is None else format_indices(self.among)
        return f"{self.kind}(m={self.m}, among={among})"

    def validate(self, n: int) -> None:
        self.require_resolved()
        if self.among is not None:
            check_in_range(self.among, n, "among")

    def satisfied(self, members: frozenset[int]) -> bool:
        counted = len(members) if self._among_set is None else len(self._among_set.intersection(members))
        return counted <= self.m

    def compile(self, n: int) -> LinearSystem:
        self.validate(n)
        return LinearSystem.from_rows(n, 0, [_sum_at_most(self._counted(n), self.m)])

    def is_vacuous(self, n: int) -> bool:
        return self.m >= (n if self.among is None else len(self.among))

    def at_most_bounds(self, n: int) -> tuple[AtMostBound, ...]:
        return (AtMostBound(frozenset(self._counted(n)), self.m),)

    def conflict_edges(self, n: int) -> Iterator[tuple[int, int]]:
        # At most one of ``among`` is a clique of conflicts (m = 0 forbids more).
        return clique_edges(self._counted(n)) if self.m <= 1 else iter(())


@dataclass(frozen=True)
class _GroupConstraint(Constraint):
    """Shared by the constraints on one group of databases (exclusive, together)."""

    group: tuple[int, ...]
    reference_fields = ("group",)

    def __post_init__(self) -> None:
        if isinstance(self.group, str) and self.group == ALL:
            return  # every database, listed once the number of databases is known (Constraint.resolve)
        read = as_reference_tuple if holds_names(self.group) else as_index_tuple
        object.__setattr__(self, "group", read(self.group, "group"))

    @cached_property
    def _group_set(self) -> frozenset[int]:
        return frozenset(self.group)

    def describe(self) -> str:
        return f"{self.kind}(group={ALL if self.group == ALL else format_indices(self.group)})"

    def validate(self, n: int) -> None:
        self.require_resolved()
        check_in_range(self.group, n, "group")


@dataclass(frozen=True)
class Exclusive(_GroupConstraint):
    """At most one database of ``group`` holds the record.

    Parameters
    ----------
    group : tuple of int, or "all"
        A non-empty collection of distinct database indices (names, in a scenario with named databases),
        or ``"all"``: every database (as ``databases = "all"`` in a scenario file).

    Raises
    ------
    InvalidParameterError
        If ``group`` is empty, repeats an index, or holds a non-index.

    References
    ----------
    001, Sec. V-A, Example 2 (an employee works at exactly one subsidiary).

    Examples
    --------
    >>> c = Exclusive((0, 1, 2))
    >>> c.satisfied(frozenset({1, 5})), c.satisfied(frozenset({0, 2}))
    (True, False)
    """

    kind = "exclusive"
    hereditary = True

    def satisfied(self, members: frozenset[int]) -> bool:
        return len(self._group_set.intersection(members)) <= 1

    def compile(self, n: int) -> LinearSystem:
        self.validate(n)
        # One clique inequality rather than one per pair: same integer points.
        return LinearSystem.from_rows(n, 0, [_sum_at_most(self.group, 1)])

    def is_vacuous(self, n: int) -> bool:
        return len(self.group) <= 1

    def at_most_bounds(self, n: int) -> tuple[AtMostBound, ...]:
        return (AtMostBound(self._group_set, 1),)

    def conflict_edges(self, n: int) -> Iterator[tuple[int, int]]:
        return clique_edges(self.group)


@dataclass(frozen=True)
class Together(_GroupConstraint):
    """The databases of ``group`` hold the record all together or not at all.

    Parameters
    ----------
    group : tuple of int, or "all"
        A non-empty collection of distinct database indices (names, in a scenario with named databases),
        or ``"all"``: every database.

    Raises
    ------
    InvalidParameterError
        If ``group`` is empty, repeats an index, or holds a non-index.

    References
    ----------
    001, Sec. V-A, Example 3 (columns of one software version are non-null together).

    Examples
    --------
    >>> c = Together((1, 2))
    >>> c.satisfied(frozenset()), c.satisfied(frozenset({0, 1, 2})), c.satisfied(frozenset({1}))
    (True, True, False)
    """

    kind = "together"
    hereditary = True

    def satisfied(self, members: frozenset[int]) -> bool:
        return len(self._group_set.intersection(members)) in (0, len(self.group))

    def compile(self, n: int) -> LinearSystem:
        self.validate(n)
        first, rest = self.group[0], self.group[1:]
        rows = []
        for other in rest:  # x_first = x_other, as two inequalities
            rows.append(([first, other], [1.0, -1.0], 0.0))
            rows.append(([first, other], [-1.0, 1.0], 0.0))
        return LinearSystem.from_rows(n, 0, rows)

    def is_vacuous(self, n: int) -> bool:
        return len(self.group) <= 1

    def together_groups(self) -> tuple[frozenset[int], ...]:
        return (self._group_set,)


def _as_edge(value: object, field: str, names: bool = False) -> tuple[int, int]:
    """An edge as ``(min, max)``; with ``names``, its two references as given (a name is resolved later)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InvalidParameterError(field, f"must be a pair of database indices, got {shown(value)}")
    ends = tuple(value)
    if len(ends) != 2:
        raise InvalidParameterError(field, f"must be a pair of database indices, got {shown(value)}")
    if names:
        u, v = as_reference_tuple(ends, field)  # (a repeated end is a self-loop: refused there)
        return (u, v)
    u, v = (as_index(end, field) for end in ends)
    if u == v:
        raise InvalidParameterError(field, f"is a self-loop on database {u}; an edge needs two databases")
    return (min(u, v), max(u, v))


@dataclass(frozen=True)
class Conflicts(Constraint):
    """Never both ends of an edge: a conflict graph over the databases.

    Parameters
    ----------
    edges : tuple of (int, int)
        Distinct pairs of distinct database indices, stored as ``(min, max)``
        in the given order. May be empty (no conflicts).

    Raises
    ------
    InvalidParameterError
        On a malformed edge, a self-loop, or an edge listed twice; the field
        is ``edges[i]``.

    References
    ----------
    001, Sec. V-A (restrictions on the possible b-vectors).

    Examples
    --------
    >>> import networkx as nx
    >>> c = Conflicts.from_graph(nx.path_graph(3))
    >>> c.edges
    ((0, 1), (1, 2))
    >>> c.satisfied(frozenset({0, 2})), c.satisfied(frozenset({1, 2}))
    (True, False)
    """

    kind = "conflicts"
    hereditary = True
    reference_fields = ("edges",)

    edges: tuple[tuple[int, int], ...]

    def __post_init__(self) -> None:
        if isinstance(self.edges, (str, bytes)) or not isinstance(self.edges, Iterable):
            raise InvalidParameterError("edges", f"must be a collection of pairs, got {shown(self.edges)}")
        edges: list[tuple[int, int]] = []
        first_seen: dict[tuple[int, int], int] = {}
        named = holds_names(self.edges)
        for position, value in enumerate(self.edges):
            edge = _as_edge(value, f"edges[{position}]", named)
            if edge in first_seen:
                raise InvalidParameterError(
                    f"edges[{position}]", f"repeats edges[{first_seen[edge]}] = {edge}"
                )
            first_seen[edge] = position
            edges.append(edge)
        object.__setattr__(self, "edges", tuple(edges))

    @classmethod
    def from_graph(cls, graph: nx.Graph) -> "Conflicts":
        """The conflicts given by the edges of a networkx graph on database indices.

        Directed graphs and multigraphs are read as simple undirected graphs;
        isolated nodes carry no constraint and are dropped.

        Parameters
        ----------
        graph : networkx.Graph
            Nodes are database indices.

        Returns
        -------
        Conflicts
            Edges in the graph's edge order, each once.
        """
        edges: dict[tuple[int, int], None] = {}
        for position, (u, v, *_) in enumerate(graph.edges):
            ends = (as_index(u, f"edges[{position}]"), as_index(v, f"edges[{position}]"))
            edges.setdefault((min(ends), max(ends)), None)
        return cls(tuple(edges))

    @cached_property
    def _neighbours(self) -> dict[int, frozenset[int]]:
        return {node: frozenset(adj) for node, adj in self.graph().adjacency()}

    def graph(self) -> nx.Graph:
        """The conflict graph: nodes are the databases on some edge."""
        import networkx as nx

        graph = nx.Graph()
        graph.add_edges_from(self.edges)
        return graph

    def describe(self) -> str:
        shown = ", ".join(f"({u}, {v})" for u, v in self.edges[:4])
        more = f", ...; {len(self.edges)} edges" if len(self.edges) > 4 else ""
        return f"{self.kind}(edges=({shown}{more}))"

    def validate(self, n: int) -> None:
        self.require_resolved()
        for position, edge in enumerate(self.edges):
            check_in_range(edge, n, f"edges[{position}]")

    def satisfied(self, members: frozenset[int]) -> bool:
        neighbours = self._neighbours
        return all(neighbours.get(u, frozenset()).isdisjoint(members) for u in members)

    def compile(self, n: int) -> LinearSystem:
        self.validate(n)
        return LinearSystem.from_rows(n, 0, [_sum_at_most(edge, 1) for edge in self.edges])

    def is_vacuous(self, n: int) -> bool:
        return not self.edges

    def conflict_edges(self, n: int) -> Iterator[tuple[int, int]]:
        return iter(self.edges)


@dataclass(frozen=True)
class Patterns(Constraint):
    """The complete list of allowed non-empty membership sets.

    ``b`` must be empty or equal to one of ``allowed``.

    Parameters
    ----------
    allowed : tuple of frozenset of int
        At least one set; each non-empty, duplicate-free as a collection, and
        different from the others. Order is kept.

    Raises
    ------
    InvalidParameterError
        If ``allowed`` is empty, or a pattern is empty, malformed or listed
        twice; the field is ``allowed`` or ``allowed[i]``.

    References
    ----------
    001, Sec. V-A, Example 3 (free users never have premium-feature columns).

    Examples
    --------
    >>> c = Patterns(({0, 1}, {0, 2}))
    >>> c.satisfied(frozenset()), c.satisfied(frozenset({0, 2})), c.satisfied(frozenset({0}))
    (True, True, False)
    """

    kind = "patterns"
    reference_fields = ("allowed",)

    allowed: tuple[frozenset[int], ...]

    def __post_init__(self) -> None:
        if isinstance(self.allowed, (str, bytes)) or not isinstance(self.allowed, Iterable):
            raise InvalidParameterError("allowed", f"must be a collection of sets, got {shown(self.allowed)}")
        patterns: list[frozenset[int]] = []
        first_seen: dict[frozenset[int], int] = {}
        named = holds_names(self.allowed)
        for position, value in enumerate(self.allowed):
            field = f"allowed[{position}]"
            pattern = frozenset((as_reference_tuple if named else as_index_tuple)(value, field))
            if pattern in first_seen:
                raise InvalidParameterError(field, f"repeats allowed[{first_seen[pattern]}]")
            first_seen[pattern] = position
            patterns.append(pattern)
        if not patterns:
            raise InvalidParameterError(
                "allowed", "must list at least one non-empty set (the empty set is always allowed)"
            )
        object.__setattr__(self, "allowed", tuple(patterns))

    @cached_property
    def _allowed_set(self) -> frozenset[frozenset[int]]:
        return frozenset(self.allowed)

    def describe(self) -> str:
        shown = ", ".join(format_indices(p, as_set=True) for p in self.allowed[:3])
        more = f", ...; {len(self.allowed)} sets" if len(self.allowed) > 3 else ""
        return f"{self.kind}(allowed=({shown}{more}))"

    def validate(self, n: int) -> None:
        self.require_resolved()
        for position, pattern in enumerate(self.allowed):
            check_in_range(pattern, n, f"allowed[{position}]")

    def satisfied(self, members: frozenset[int]) -> bool:
        return not members or frozenset(members) in self._allowed_set

    def compile(self, n: int) -> LinearSystem:
        """One binary selector ``s_p`` per pattern: ``sum_p s_p <= 1`` and
        ``x_i = sum of s_p over the patterns p containing i`` for every ``i``.
        """
        self.validate(n)
        containing: list[list[int]] = [[] for _ in range(n)]
        for p, pattern in enumerate(self.allowed):
            for i in pattern:
                containing[i].append(n + p)
        rows = []
        for i, selectors in enumerate(containing):
            columns = [i, *selectors]
            rows.append((columns, [1.0] + [-1.0] * len(selectors), 0.0))
            rows.append((columns, [-1.0] + [1.0] * len(selectors), 0.0))
        rows.append(_sum_at_most(range(n, n + len(self.allowed)), 1))
        return LinearSystem.from_rows(n, len(self.allowed), rows)

    def is_vacuous(self, n: int) -> bool:
        # The patterns are distinct non-empty subsets of range(n) once validated; a list of all 2^n - 1
        # needs n < its length's bit count, so 2^n is never built for large n.
        return n <= len(self.allowed).bit_length() and len(self.allowed) == (1 << n) - 1

    def explicit_sets(self) -> tuple[frozenset[int], ...] | None:
        return self.allowed

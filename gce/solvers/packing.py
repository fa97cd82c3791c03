"""Packing structure of the constraints: capacity groups, cliques, odd cycles, a partition bound.

``at_most``, ``exclusive`` and ``conflicts`` (001, Sec. V-A, Examples 1-2 and
the conflict graphs of docs/design.md, "Membership sets and constraints") all say the same kind of thing:
a group ``G`` of databases holds at most ``m`` members of ``b``. An ``at_most``
bound is one group; an ``exclusive`` group is a group with ``m = 1``; a conflict
edge is a group of two with ``m = 1``, and so is every *clique* of the conflict
graph (no two of its members together is the same as at most one of them).

That view feeds the solvers three things:

* **Strong inequalities.** ``sum over a clique of x_i <= 1`` for the maximal
  cliques of the conflict graph (networkx) replaces the pairwise edge rows:
  the same integer points, a much tighter linear relaxation (on ``g``
  exclusive databases the edge rows allow ``x = 1/2`` everywhere, value
  ``g/2``; the clique row allows 1). Where cliques are small (sparse,
  unstructured conflicts) the odd cycles take over: a set with no two
  adjacent members holds at most ``(|C| - 1) / 2`` vertices of an odd cycle
  ``C`` (:func:`odd_holes`, :func:`violated_odd_cycles`).
* **A combinatorial upper bound** (:meth:`PackingStructure.partition_bound`):
  split the databases into parts, each inside one group; a membership set holds
  at most ``m`` members of a part per side.
* **A local search** (:mod:`gce.solvers.heuristics`) that keeps every group
  within capacity, for the witness.

Every group is *implied* by the constraints (each is an ``at_most`` bound the
constraints state, or a clique of real conflicts), so a bound computed from
the groups is a valid upper bound whatever other constraints there are. When
every constraint is of a packing kind (:data:`PACKING_KINDS`) the groups
describe the allowed family B~ *exactly* (:attr:`PackingStructure.exact`), and
a set obeying them is allowed; witnesses are re-checked against the
constraints all the same.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ..constraints import ConstraintSet
from ..effort import Deadline

if TYPE_CHECKING:  # pragma: no cover - networkx and scipy.sparse are imported where used (start-up)
    import networkx as nx

__all__ = [
    "PACKING_KINDS",
    "MAX_CLIQUES",
    "MAX_HOLES",
    "Group",
    "PackingStructure",
    "conflict_cliques",
    "odd_holes",
    "violated_odd_cycles",
]

#: Constraint kinds whose allowed sets are exactly those obeying their
#: ``at_most_bounds`` (``at_most``, ``exclusive``) or, without bounds, their
#: ``conflict_edges`` (``conflicts``).
PACKING_KINDS = frozenset({"at_most", "exclusive", "conflicts"})

#: Most maximal cliques enumerated (``networkx.find_cliques``) before the rest of the
#: conflict edges are covered by the edges themselves; dense graphs have exponentially many.
MAX_CLIQUES = 20_000

#: Most odd holes (induced 5-cycles) :func:`odd_holes` lists.
MAX_HOLES = 20_000

#: Most paths v1 - v0 - v4 :func:`odd_holes` extends (its work, counted: dense graphs have many).
HOLE_PATHS = 2_000_000

#: Slack below which a fractional value counts as zero, and a cycle length as 1.
CUT_EPSILON = 1e-6

#: Vertices searched from at once by :func:`violated_odd_cycles` (memory: 2n floats each).
DIJKSTRA_BATCH = 128

#: Length added to every edge in the odd-cycle search, so that among equally violated
#: cycles (all of them at x = 1/2) the one with fewest edges is found.
EDGE_TIE_BREAK = 1e-9

#: Largest ``m <= 1`` bound whose clique joins the conflict graph (``g`` members cost ``g^2 / 2`` edges).
MAX_GRAPH_GROUP = 64

#: Parts of :meth:`PackingStructure.partition_bound` larger than this take their heaviest members by
#: ``np.partition`` (linear) one part at a time; the smaller ones by one sort together. At 10 million databases
#: under at_most 365 the sort took 1 to 2.5 s of the bound, after any time limit (the bound is the answer).
_SORTED_PARTS = 4096

#: Conflict edges and group members :meth:`PackingStructure.of` handles per second (networkx's graph and
#: its maximal cliques: 100,000 edges of a path took 2 to 4 s on 2 shared cores): the cost estimate of
#: building a structure, checked before it is built (the build cannot be interrupted).
PACKING_UNITS_PER_SECOND = 50_000


@dataclass(frozen=True, eq=False)
class Group:
    """``|b & members| <= capacity`` (per side of a pair), implied by the constraints.

    Parameters
    ----------
    members : array of int
        Sorted database indices.
    capacity : int
        How many of them one membership set may hold (0 forbids them all).
    """

    members: NDArray[np.int64]
    capacity: int


@dataclass(frozen=True, eq=False)
class PackingStructure:
    """The capacity groups implied by a :class:`ConstraintSet`.

    Attributes
    ----------
    n : int
        Number of databases.
    groups : tuple of Group
        ``at_most`` bounds that bind (``m`` below the group size), then the
        maximal cliques (capacity 1) of :attr:`graph` not already listed.
    graph : networkx.Graph
        Known conflicts: the edges of constraints without cardinality bounds
        (``conflicts``) and the cliques of small ``m <= 1`` bounds
        (``exclusive`` groups of at most :data:`MAX_GRAPH_GROUP` databases).
        Every edge is a real conflict.
    exact : bool
        Whether a set is allowed iff it obeys every group (all constraints of
        :data:`PACKING_KINDS`, or vacuous).

    References
    ----------
    001, Sec. V-A (the allowed b-vectors B~; Examples 1-2).

    Examples
    --------
    >>> from gce.constraints import Conflicts, ConstraintSet, Exclusive
    >>> cs = ConstraintSet(5, (Exclusive((0, 1, 2)), Conflicts(((2, 3), (3, 4), (2, 4)))))
    >>> s = PackingStructure.of(cs)
    >>> [(g.members.tolist(), g.capacity) for g in s.groups]
    [([0, 1, 2], 1), ([2, 3, 4], 1)]
    >>> s.exact, s.partition_bound(np.ones(5), sides=1), s.partition_bound(np.ones(5), sides=2)
    (True, 2.0, 4.0)
    """

    n: int
    groups: tuple[Group, ...]
    graph: nx.Graph
    exact: bool

    @staticmethod
    def estimate_seconds(constraints: ConstraintSet) -> float:
        """Seconds :meth:`of` takes, about, from the conflict edges and group members it will handle
        (:data:`PACKING_UNITS_PER_SECOND`), counted without building anything.

        >>> from gce.constraints import Conflicts
        >>> PackingStructure.estimate_seconds(ConstraintSet(4, (Conflicts(((0, 1), (2, 3))),)))
        4e-05
        """
        n, units = constraints.n, 0
        for constraint in constraints.constraints:
            if constraint.is_vacuous(n):
                continue
            if constraint.kind == "conflicts":
                units += len(constraint.edges)
            elif constraint.kind == "at_most" and constraint.among is None:
                units += n * n // 2 if n <= MAX_GRAPH_GROUP else 0  # else one range array, no graph
            elif constraint.kind in PACKING_KINDS:
                for bound in constraint.at_most_bounds(n):
                    size = len(bound.among)
                    units += size + (size * size // 2 if bound.m <= 1 and size <= MAX_GRAPH_GROUP else 0)
        return units / PACKING_UNITS_PER_SECOND

    @classmethod
    def of(cls, constraints: ConstraintSet) -> "PackingStructure":
        """Collect the groups of a constraint set (cardinality bounds, then conflict cliques)."""
        import networkx as nx

        n = constraints.n
        groups: list[Group] = []
        graph = nx.Graph()
        for constraint in constraints.constraints:
            if constraint.is_vacuous(n):
                continue
            if constraint.kind == "at_most" and constraint.among is None:
                # over every database: the group as a range array, never a frozenset of n ints (10^7: 1 GB)
                groups.append(Group(np.arange(n, dtype=np.int64), constraint.m))
                if constraint.m == 1 and n <= MAX_GRAPH_GROUP:
                    graph.add_edges_from(combinations(range(n), 2))
                continue
            bounds = constraint.at_most_bounds(n)
            for bound in bounds:
                if bound.m < len(bound.among):
                    groups.append(Group(np.array(sorted(bound.among), dtype=np.int64), bound.m))
                if bound.m == 1 and len(bound.among) <= MAX_GRAPH_GROUP:
                    graph.add_edges_from(combinations(sorted(bound.among), 2))
            if not bounds:  # an at_most bound already implies its own conflict edges
                graph.add_edges_from(constraint.conflict_edges(n))
        listed = {frozenset(g.members.tolist()) for g in groups if g.capacity == 1}
        for clique in conflict_cliques(graph):
            if frozenset(clique) not in listed:
                groups.append(Group(np.array(clique, dtype=np.int64), 1))
        exact = all(c.kind in PACKING_KINDS or c.is_vacuous(n) for c in constraints.constraints)
        return cls(n, tuple(groups), graph, exact)

    def obeys(self, members: Iterable[int]) -> bool:
        """Whether a membership set holds at most ``capacity`` members of every group."""
        x = np.zeros(self.n, dtype=bool)
        x[list(members)] = True
        return all(int(x[g.members].sum()) <= g.capacity for g in self.groups)

    def partition_bound(self, weights: NDArray[np.float64], sides: int) -> float:
        """An upper bound on ``w(b)`` (``sides = 1``) or on ``w(b0) + w(b1)`` over
        disjoint ``b0, b1`` (``sides = 2``), all sets obeying the groups.

        The databases are split into parts, each inside one group (most
        restrictive groups first: lowest capacity per member), the rest as
        singletons. A set obeying a group of capacity ``m`` holds at most ``m``
        members of each part of it, so a disjoint pair holds at most
        ``sides * m`` distinct members: the part contributes at most its
        ``sides * m`` heaviest weights. For exclusive groups and ``sides = 2``
        this is the two heaviest per group, 001 Ex. 2's ``max_{i != j}``.

        Parameters
        ----------
        weights : array of float
            Non-negative, one per database.
        sides : {1, 2}
            One set (unbounded pairs) or two disjoint sets (bounded pairs).

        Returns
        -------
        float
        """
        w = np.asarray(weights, dtype=float)
        members, part, capacity, free = self._parts
        bound = 0.0
        if members.size:
            values = w[members]
            sizes = np.bincount(part, minlength=capacity.size)
            keep = np.minimum(sizes, sides * capacity)
            starts = np.cumsum(sizes) - sizes
            cut = keep < sizes
            bound = float(values[~cut[part]].sum())  # the parts kept whole
            large = np.flatnonzero(cut & (sizes > _SORTED_PARTS) & (keep > 0))  # (keep 0: nothing of the part)
            for j in large:  # a large part's heaviest in linear time (at_most m of millions of databases)
                chunk = values[starts[j]:starts[j] + sizes[j]]
                bound += float(np.partition(chunk, sizes[j] - keep[j])[sizes[j] - keep[j]:].sum())
            small = cut & (sizes <= _SORTED_PARTS)
            if small.any():  # the other parts' sides * m heaviest: one sort by (part, decreasing weight)
                chosen = small[part]
                values, in_part = values[chosen], part[chosen]
                order = np.lexsort((-values, in_part))
                counts = np.bincount(in_part, minlength=capacity.size)
                rank = np.arange(values.size) - (np.cumsum(counts) - counts)[in_part[order]]
                bound += float(values[order][rank < keep[in_part[order]]].sum())
        return bound + float(w[free].sum())

    @functools.cached_property
    def _parts(self) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
        """The partition of :meth:`partition_bound`, which depends on the groups only (computed once): the
        members of the parts, concatenated; the part of each; each part's capacity; the databases left free."""
        free = np.ones(self.n, dtype=bool)
        parts, capacities = [], []
        order = sorted(range(len(self.groups)), key=lambda j: self.groups[j].capacity / len(self.groups[j].members))
        for j in order:
            group = self.groups[j]
            part = group.members[free[group.members]]
            if part.size:
                free[part] = False
                parts.append(part)
                capacities.append(group.capacity)
        sizes = [p.size for p in parts]
        members = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        return (members.astype(np.int64, copy=False), np.repeat(np.arange(len(parts), dtype=np.int64), sizes),
                np.array(capacities, dtype=np.int64), np.flatnonzero(free))


def conflict_cliques(graph: nx.Graph) -> list[list[int]]:
    """Cliques of a conflict graph covering each of its edges: the maximal cliques
    (``networkx.find_cliques``), at most :data:`MAX_CLIQUES` of them, then any edge
    still uncovered by itself. Each clique is sorted.

    Examples
    --------
    >>> import networkx as nx
    >>> sorted(conflict_cliques(nx.Graph([(0, 1), (1, 2), (0, 2), (2, 3)])))
    [[0, 1, 2], [2, 3]]
    """
    import networkx as nx

    cliques: list[list[int]] = []
    covered: set[tuple[int, int]] = set()
    for clique in nx.find_cliques(graph):
        if len(clique) < 2:  # an isolated node
            continue
        if len(cliques) >= MAX_CLIQUES:
            cliques.extend([min(e), max(e)] for e in graph.edges if (min(e), max(e)) not in covered)
            break
        clique = sorted(clique)
        cliques.append(clique)
        covered.update(combinations(clique, 2))
    return cliques


def odd_holes(graph: nx.Graph, limit: int = MAX_HOLES, deadline: Deadline | None = None,
              paths: int = HOLE_PATHS) -> list[tuple[int, ...]]:
    """Induced cycles of length 5 (odd holes) of a conflict graph: at most ``limit``, those found
    from the first ``paths`` paths ``v1 - v0 - v4`` (a deterministic amount of work); ``deadline``
    only caps the search (:meth:`~gce.effort.Deadline.stop` records where).

    A set with no two members adjacent holds at most two vertices of a
    5-cycle: the odd-cycle inequality ``x(C) <= (|C| - 1) / 2`` of the stable
    set polytope (Padberg 1973). Triangles are cliques, and a 5-cycle with a
    chord is implied by a triangle and an edge, so induced 5-cycles are the
    first inequalities the clique rows miss. On sparse random conflict graphs
    they tighten the MILP's bound markedly.

    Each hole is listed once, starting at its smallest vertex ``v0``, its two
    cycle neighbours ``v1 < v4``.

    Examples
    --------
    >>> import networkx as nx
    >>> odd_holes(nx.cycle_graph(5)), odd_holes(nx.complete_graph(5))
    ([(0, 1, 2, 3, 4)], [])
    """
    adj = {v: set(graph[v]) for v in graph}
    holes: list[tuple[int, ...]] = []
    for v0 in sorted(adj):
        if deadline is not None and deadline.expired():
            deadline.stop(f"odd-hole search on {len(adj):,} conflicting databases ({len(holes):,} holes found)")
            break
        higher = sorted(u for u in adj[v0] if u > v0)
        for a, v1 in enumerate(higher):
            paths -= len(higher) - a - 1
            if paths < 0:
                return holes
            for v4 in higher[a + 1:]:
                if v4 in adj[v1]:
                    continue  # v0 v1 v4 is a triangle
                for v2 in adj[v1]:
                    if v2 <= v0 or v2 == v4 or v2 in adj[v0] or v2 in adj[v4]:
                        continue
                    for v3 in adj[v2] & adj[v4]:
                        if v3 <= v0 or v3 == v1 or v3 in adj[v0] or v3 in adj[v1]:
                            continue
                        holes.append((v0, v1, v2, v3, v4))
                        if len(holes) >= limit:
                            return holes
    return holes


def violated_odd_cycles(graph: nx.Graph, x: NDArray[np.float64], limit: int = MAX_HOLES,
                        deadline: Deadline | None = None) -> list[list[int]]:
    """Odd cycles ``C`` of a conflict graph whose inequality ``x(C) <= (|C| - 1) / 2``
    a fractional point ``x`` violates: at most ``limit``, each listed once (the search
    runs from :data:`DIJKSTRA_BATCH` vertices at a time, in order, until ``limit`` are
    found; ``deadline`` only caps it, and :meth:`~gce.effort.Deadline.stop` records where).

    Exact separation of the odd-cycle inequalities (Groetschel, Lovasz and
    Schrijver 1988, Lemma 9.1.11): give edge ``uv`` the length
    ``1 - x_u - x_v`` (>= 0 when the edge rows hold); an odd cycle violates
    its inequality iff its length is below 1. The shortest odd closed walk
    through ``v`` is a shortest path from ``v`` to its twin in the bipartite
    double cover (``scipy.sparse.csgraph.dijkstra`` from every vertex with
    ``x_v > 0``), and a closed odd walk contains an odd cycle no longer than
    itself (:func:`_odd_cycle`).

    Examples
    --------
    >>> import networkx as nx
    >>> violated_odd_cycles(nx.cycle_graph(5), np.full(5, 0.5))
    [[0, 4, 3, 2, 1]]
    >>> violated_odd_cycles(nx.cycle_graph(5), np.array([1.0, 0, 1, 0, 0]))
    []
    """
    if graph.number_of_edges() == 0:
        return []
    import scipy.sparse as sp
    from scipy.sparse.csgraph import dijkstra

    n = len(x)
    edges = np.array(graph.edges, dtype=np.int64).reshape(-1, 2)
    u, v = edges[:, 0], edges[:, 1]
    length = np.maximum(1.0 - x[u] - x[v], 0.0) + EDGE_TIE_BREAK
    # The double cover: vertex i is i (even side) and i + n (odd side); each edge crosses sides.
    cover = sp.csr_array((np.tile(length, 4), (np.concatenate([u, u + n, v, v + n]),
                                               np.concatenate([v + n, v, u + n, u]))), shape=(2 * n, 2 * n))
    sources = np.array([i for i in graph.nodes if x[i] > CUT_EPSILON], dtype=np.int64)
    found: dict[frozenset[int], list[int]] = {}
    for batch in np.array_split(sources, -(-sources.size // DIJKSTRA_BATCH)) if sources.size else []:
        if len(found) >= limit:
            break
        if deadline is not None and deadline.expired():
            deadline.stop(f"odd-cycle separation on {n:,} databases ({len(found):,} cycles found)")
            break
        dist, pred = dijkstra(cover, indices=batch, return_predecessors=True)
        for row in np.flatnonzero(dist[np.arange(batch.size), batch + n] < 1.0 - CUT_EPSILON):
            source, walk, node = batch[row], [], batch[row] + n
            while node != source:
                walk.append(int(node % n))
                node = pred[row, node]
            cycle = _odd_cycle(walk)
            found.setdefault(frozenset(cycle), cycle)
    return list(found.values())[:limit]


def _odd_cycle(walk: list[int]) -> list[int]:
    """An odd cycle inside a closed walk of odd length (consecutive vertices adjacent,
    the last adjacent to the first): split at a repeated vertex, keep the odd part."""
    while True:
        seen: dict[int, int] = {}
        for i, vertex in enumerate(walk):
            if vertex in seen:
                j = seen[vertex]
                inner, outer = walk[j:i], walk[:j] + walk[i:]
                walk = inner if len(inner) % 2 else outer
                break
            seen[vertex] = i
        else:
            return walk

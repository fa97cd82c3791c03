"""The intersection of membership constraints over ``n`` databases.

A :class:`ConstraintSet` is the allowed family B~ of 001, Sec. V-A: the
membership sets (supports of b-vectors) that satisfy every constraint, the
empty set always among them. It validates its constraints against ``n`` and
offers what the solvers and checkers need: the residual check, the compiled
linear system, brute-force enumeration for small instances, the structure
(components, conflict graph, cardinality bounds), and the feasibility check.

What must never change: ``satisfied``, ``compile`` and ``allowed_sets``
describe the same family, and every structural view is implied by it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ..errors import InfeasibleConstraintsError, InvalidParameterError, UnsupportedCombinationError
from ..resources import check_memory
from .base import AtMostBound, Constraint, as_index, check_in_range, check_n, format_indices, index_only
from .linear import LinearSystem
from ..validation import shown

if TYPE_CHECKING:  # pragma: no cover - networkx and scipy.sparse are imported where used (start-up)
    import networkx as nx

__all__ = ["ConstraintSet", "MAX_ENUMERATED_COMPONENTS"]

#: Largest number of free blocks (components, see :meth:`ConstraintSet.components`)
#: that :meth:`ConstraintSet.allowed_sets` enumerates by brute force (2**20 unions).
MAX_ENUMERATED_COMPONENTS = 20

#: How many excluded candidates :meth:`ConstraintSet.require_nonempty` names.
_SHOWN_CANDIDATES = 3
#: Bytes a block of :meth:`ConstraintSet.components` takes as a Python frozenset (216 for one member),
#: and each further member; what the memory policy is asked before the tuple is built.
_BLOCK_BYTES, _MEMBER_BYTES = 224, 40
#: Blocks :meth:`ConstraintSet.iter_components` converts to Python at a time.
_BLOCKS_AT_ONCE = 4096


@dataclass(frozen=True)
class ConstraintSet:
    """Membership constraints on ``n`` databases; the allowed sets are their intersection.

    Parameters
    ----------
    n : int
        Number of databases, indexed ``0..n-1``; an integer >= 1.
    constraints : tuple of Constraint, or Constraint, optional
        Any iterable is converted to a tuple; one constraint is a tuple of one. Empty means
        unconstrained. A group written ``"all"`` (``Exclusive("all")``) lists every database; database
        names are resolved by a :class:`~gce.model.Scenario` with named databases, not here.

    Raises
    ------
    InvalidParameterError
        If ``n`` is invalid, an entry is not a constraint, or a constraint does
        not fit ``n``; the field reads ``constraints[i] (kind).field``.

    References
    ----------
    001, Sec. V-A (the allowed b-vectors B~ and Examples 1-3); 000, Ex. IV.5.

    Examples
    --------
    >>> from gce.constraints import AtMost, Exclusive
    >>> cs = ConstraintSet(4, (AtMost(2),))
    >>> len(list(cs.allowed_sets()))  # 1 + 4 + 6 subsets of size <= 2
    11
    >>> ConstraintSet(3, (Exclusive((0, 5)),))
    Traceback (most recent call last):
    ...
    gce.errors.InvalidParameterError: constraints[0] (exclusive).group: database 5 is out of range [0, 3)
    """

    n: int
    constraints: tuple[Constraint, ...] = ()

    def __post_init__(self) -> None:
        n = check_n(self.n)
        object.__setattr__(self, "n", n)
        given = (self.constraints,) if isinstance(self.constraints, Constraint) else self.constraints
        if isinstance(given, (str, bytes)) or not isinstance(given, Iterable):
            raise InvalidParameterError(
                "constraints", f"must be a constraint or a collection of constraints, got {shown(self.constraints)}"
            )
        constraints = list(given)
        by_index = index_only(n)
        for position, constraint in enumerate(constraints):
            if not isinstance(constraint, Constraint):
                raise InvalidParameterError(
                    f"constraints[{position}]",
                    f"must be a constraint (AtMost, Exclusive, ...), got {shown(constraint)}",
                )
            try:
                constraints[position] = constraint = constraint.resolve(by_index, n)  # "all": every database
                constraint.validate(n)
            except InvalidParameterError as error:
                raise error.within(self._label(position, constraint)) from None
        object.__setattr__(self, "constraints", tuple(constraints))

    @staticmethod
    def _label(position: int, constraint: Constraint) -> str:
        return f"constraints[{position}] ({constraint.kind})"

    def _members(self, members: Iterable[int]) -> frozenset[int]:
        if type(members) is frozenset and (not members or set(map(type, members)) == {int}):
            # The solvers' own sets (witnesses of a million databases): checked at C speed.
            if members and (min(members) < 0 or max(members) >= self.n):
                check_in_range(members, self.n, "members")
                as_index(min(members), "members")
            return members
        members = frozenset(as_index(index, "members") for index in members)
        check_in_range(members, self.n, "members")
        return members

    def _allows(self, members: frozenset[int]) -> bool:
        return all(c.satisfied(members) for c in self.constraints)

    def violated(self, members: Iterable[int]) -> tuple[int, ...]:
        """Positions of the constraints that ``members`` violates.

        Parameters
        ----------
        members : iterable of int
            A membership set; every index must lie in ``[0, n)``.

        Returns
        -------
        tuple of int
            Empty when the set is allowed.

        Raises
        ------
        InvalidParameterError
            If a member is not a database index in range.
        """
        members = self._members(members)
        return tuple(i for i, c in enumerate(self.constraints) if not c.satisfied(members))

    def satisfied(self, members: Iterable[int]) -> bool:
        """Whether ``members`` is an allowed membership set (in B~).

        Examples
        --------
        >>> from gce.constraints import Together
        >>> cs = ConstraintSet(3, (Together((0, 1)),))
        >>> cs.satisfied({0, 1}), cs.satisfied({0, 2})
        (True, False)
        """
        return self._allows(self._members(members))

    def compile(self) -> LinearSystem:
        """All constraints as one system ``A @ [x, s] <= b`` over binary variables.

        Columns ``0..n-1`` are the membership variables (001's b-vector); each
        constraint's auxiliary variables follow in a block of their own, in
        constraint order.

        Returns
        -------
        LinearSystem
        """
        return LinearSystem.stack(self.n, [c.compile(self.n) for c in self.constraints])

    @property
    def is_unconstrained(self) -> bool:
        """True when every subset of the databases is allowed."""
        return all(c.is_vacuous(self.n) for c in self.constraints)

    def components(self) -> tuple[frozenset[int], ...]:
        """The blocks of databases that ``together`` constraints tie to each other.

        Connected components of the graph joining the members of each
        together-group; every allowed set is a union of components. Databases
        in no group are singletons.

        Returns
        -------
        tuple of frozenset of int
            A partition of ``range(n)``, ordered by smallest member.

        Raises
        ------
        ResourceLimitError
            When the tuple would not fit the memory limit (:mod:`gce.resources`); :meth:`block_labels`,
            :meth:`block_count` and :meth:`iter_components` give the same blocks without it.
        """
        check_memory("databases", _BLOCK_BYTES * self.block_count() + _MEMBER_BYTES * self.n,
                     f"components: {self.block_count():,} blocks of {self.n:,} databases as Python sets")
        return self._components

    @cached_property
    def _components(self) -> tuple[frozenset[int], ...]:
        return tuple(self.iter_components())

    def block_labels(self) -> tuple[NDArray[np.int64], int] | None:
        """Each database's block (see :meth:`components`) as an array, and the number of blocks.

        Blocks are numbered by their smallest member. ``None`` when no ``together`` constraint ties
        databases (every database is its own block; nothing is allocated).
        """
        return self._block_labels

    @cached_property
    def _block_labels(self) -> tuple[NDArray[np.int64], int] | None:
        """The components of the graph of ``together`` ties on the tied databases only (every other database
        is a block of its own): linear in ``n`` with small constants (a graph over all ``n`` databases and a
        sort of their labels took seconds at 10^7, before a time limit could stop them)."""
        groups = [sorted(group) for constraint in self.constraints for group in constraint.together_groups()]
        if not groups:
            return None
        import scipy.sparse as sp
        from scipy.sparse.csgraph import connected_components

        check_memory("databases", 40 * self.n, f"blocks: labels of {self.n:,} databases")
        heads = np.fromiter((a for g in groups for a in g[:-1]), dtype=np.int64)
        tails = np.fromiter((b for g in groups for b in g[1:]), dtype=np.int64)
        tied, ends = np.unique(np.concatenate([heads, tails]), return_inverse=True)
        graph = sp.coo_array((np.ones(heads.size), (ends[:heads.size], ends[heads.size:])),
                             shape=(tied.size, tied.size)).tocsr()
        _, component = connected_components(graph, directed=False)
        smallest = np.full(int(component.max()) + 1 if component.size else 0, self.n, dtype=np.int64)
        np.minimum.at(smallest, component, tied)  # each component's smallest member: its block's number
        head = smallest[component]  # of each tied database
        absorbed = np.zeros(self.n, dtype=np.int64)
        absorbed[tied[tied != head]] = 1  # a tied database that is not its block's smallest member
        labels = np.arange(self.n, dtype=np.int64)
        labels -= np.cumsum(absorbed) - absorbed  # a smallest member's number: the smallest members before it
        labels[tied] = labels[head]
        return labels, self.n - int(absorbed.sum())

    def block_count(self) -> int:
        """The number of blocks of :meth:`components`, without building them."""
        labels = self.block_labels()
        return self.n if labels is None else labels[1]

    def iter_components(self) -> Iterator[frozenset[int]]:
        """The blocks of :meth:`components`, in the same order, built one at a time (for 10^7 databases,
        where the tuple would take gigabytes)."""
        labels = self.block_labels()
        if labels is None:
            yield from (frozenset((i,)) for i in range(self.n))
            return
        label, count = labels
        order = np.argsort(label, kind="stable")
        ends = np.cumsum(np.bincount(label, minlength=count))
        start = 0
        for first in range(0, count, _BLOCKS_AT_ONCE):
            for end in ends[first:first + _BLOCKS_AT_ONCE].tolist():
                yield frozenset(order[start:end].tolist())
                start = end

    def conflict_graph(self) -> nx.Graph:
        """Pairs of databases the constraints forbid together, as a graph.

        Edges come from ``conflicts`` edges, cliques on ``exclusive`` groups,
        and cliques on ``among`` for ``at_most`` with ``m <= 1``. Every edge
        is a real conflict; pairs excluded only by ``patterns`` or by larger
        bounds are not listed. A clique on ``g`` databases costs ``g**2 / 2``
        edges.

        Returns
        -------
        networkx.Graph
            Nodes ``0..n-1``.
        """
        import networkx as nx

        graph = nx.Graph()
        graph.add_nodes_from(range(self.n))
        for constraint in self.constraints:
            graph.add_edges_from(constraint.conflict_edges(self.n))
        return graph

    def at_most_bounds(self) -> tuple[AtMostBound, ...]:
        """The cardinality bounds ``|b & among| <= m`` the constraints state.

        ``at_most`` gives its own bound (``among`` all databases when
        unspecified) and ``exclusive`` gives ``m = 1`` on its group, in
        constraint order.

        Returns
        -------
        tuple of AtMostBound
        """
        return self._at_most_bounds

    @cached_property
    def _at_most_bounds(self) -> tuple[AtMostBound, ...]:
        return tuple(bound for c in self.constraints for bound in c.at_most_bounds(self.n))

    def explicit_sets(self) -> tuple[frozenset[int], ...] | None:
        """The shortest explicit list of candidate non-empty sets, if a constraint gives one.

        Every allowed non-empty set is in the list (``patterns``); listed sets
        may still violate other constraints. ``None`` without ``patterns``.

        Examples
        --------
        >>> from gce.constraints import AtMost, Patterns
        >>> ConstraintSet(3, (AtMost(1), Patterns(({0}, {1, 2})))).explicit_sets()
        (frozenset({0}), frozenset({1, 2}))
        """
        lists = [sets for c in self.constraints if (sets := c.explicit_sets()) is not None]
        return min(lists, key=len) if lists else None


    def _candidates(self) -> Iterable[frozenset[int]] | None:
        """Non-empty sets such that some allowed non-empty set exists iff one of them is allowed.

        An explicit pattern list gives its patterns (every allowed non-empty
        set is one of them). When every constraint is hereditary, the
        components do: a component inside an allowed set is itself allowed.
        ``None`` when neither argument applies.
        """
        explicit = self.explicit_sets()
        if explicit is not None:
            return explicit
        if all(c.hereditary for c in self.constraints):
            return self.iter_components()
        return None

    def allowed_sets(self) -> Iterator[frozenset[int]]:
        """Every allowed membership set, the empty set first.

        Unions of components are enumerated by brute force, or the listed
        patterns when a ``patterns`` constraint is present; each candidate is
        checked with :meth:`satisfied`.

        Yields
        ------
        frozenset of int

        Raises
        ------
        UnsupportedCombinationError
            If more than :data:`MAX_ENUMERATED_COMPONENTS` components would
            have to be enumerated.

        Examples
        --------
        >>> from gce.constraints import Exclusive
        >>> sorted(map(sorted, ConstraintSet(3, (Exclusive((0, 1, 2)),)).allowed_sets()))
        [[], [0], [1], [2]]
        """
        explicit = self.explicit_sets()
        if explicit is not None:
            yield frozenset()
            yield from (members for members in explicit if self._allows(members))
            return
        if self.block_count() > MAX_ENUMERATED_COMPONENTS:
            raise UnsupportedCombinationError(
                f"allowed_sets: brute-force enumeration is limited to {MAX_ENUMERATED_COMPONENTS} "
                f"independent blocks of databases, got {self.block_count()} (n = {self.n}); use a solver"
            )
        blocks = self.components()
        for mask in range(1 << len(blocks)):
            members = frozenset().union(*(b for j, b in enumerate(blocks) if mask >> j & 1))
            if self._allows(members):
                yield members

    def has_nonempty_allowed(self) -> bool:
        """Whether some non-empty membership set is allowed.

        Exact and cheap: it checks the components (when every constraint is
        hereditary) or the listed patterns, one :meth:`satisfied` call each;
        otherwise it enumerates :meth:`allowed_sets`.

        Examples
        --------
        >>> from gce.constraints import AtMost, Together
        >>> ConstraintSet(2, (Together((0, 1)), AtMost(1))).has_nonempty_allowed()
        False
        """
        if all(c.hereditary for c in self.constraints) and not any(c.together_groups() for c in self.constraints):
            # Hereditary and no blocks: some non-empty set is allowed iff some singleton is (stop at the first).
            return any(self._allows(frozenset((i,))) for i in range(self.n))
        candidates = self._candidates()
        if candidates is None:
            return any(members for members in self.allowed_sets())
        return any(self._allows(members) for members in candidates)

    def require_nonempty(self) -> None:
        """Raise unless some non-empty membership set is allowed.

        Raises
        ------
        InfeasibleConstraintsError
            Naming, for the first few candidate sets (components or listed
            patterns), a constraint that excludes it.

        Examples
        --------
        >>> from gce.constraints import AtMost, Together
        >>> ConstraintSet(2, (Together((0, 1)), AtMost(1))).require_nonempty()
        Traceback (most recent call last):
        ...
        gce.errors.InfeasibleConstraintsError: no non-empty membership set is allowed on n = 2 databases: {0, 1} violates constraints[1] (at_most(m=1, among=all))
        """
        if self.has_nonempty_allowed():
            return
        candidates = self._candidates() or ()
        total = len(candidates) if isinstance(candidates, tuple) else self.block_count()
        reasons = []
        for members in itertools.islice(candidates, _SHOWN_CANDIDATES):
            position = self.violated(members)[0]
            culprit = f"constraints[{position}] ({self.constraints[position].describe()})"
            reasons.append(f"{format_indices(members, as_set=True)} violates {culprit}")
        if total > _SHOWN_CANDIDATES:
            reasons.append(f"and {total - _SHOWN_CANDIDATES} more candidate sets")
        detail = ": " + "; ".join(reasons) if reasons else ""
        raise InfeasibleConstraintsError(
            f"no non-empty membership set is allowed on n = {self.n} databases{detail}"
        )

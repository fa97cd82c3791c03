"""The filter statistic under membership constraints, kept up to date one invocation at a time.

For a component of a filter (epsilon, delta, a Renyi order, rho, mu^2) the ledger
keeps the per-database sums S of the admitted invocations' statistics, and the
filter statistic is

    F(S) = max over allowed pairs (b0, b1) of sum_{i in b0 XOR b1} S_i,

the maximum-weight problem of :mod:`gce.solvers` (001, Sec. IV-V). Solving it
afresh at every query would cost up to the solver's time limit (a MILP when
constraints conflict), so :class:`WorstCase` keeps a certified bracket
``lower <= F(S) <= upper`` and updates it in O(|group|) per invocation:

* ``lower`` is the weight of a witness pair (an allowed pair, kept as the mask
  of its differing databases): adding w to the databases D raises it by
  w |D & witness|, exactly.
* ``upper`` rises by w r(D), where r(D) >= max over allowed pairs of
  |D & (b0 XOR b1)| (the *reach* of the group: 1 for one database, a solved
  bound for a group), since F(S + w 1_D) <= F(S) + F(w 1_D).

When a decision falls inside the bracket (lower admits, upper does not), the
bracket is narrowed, cheapest first: :func:`packing_bracket` (capacity groups
and conflict edges: a greedy witness and a partition bound, O(n log n)), then
:func:`gce.solvers.worst_pair` within a time limit. An invocation on a database
of the witness, or far from the budget, never solves anything.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..constraints import ConstraintSet
from ..errors import GCEError
from ..solvers import WeightProblem, worst_pair

__all__ = ["Bracket", "WorstCase", "packing_bracket", "reach"]

#: Relative slack under which a lower and an upper bound count as equal (exact).
EXACT_TOLERANCE = 1e-12


@dataclass(frozen=True)
class Bracket:
    """lower <= F <= upper for one component, and the witness: the mask of databases where the pair differs."""

    lower: float
    upper: float
    witness: NDArray[np.bool_]

    @property
    def exact(self) -> bool:
        return self.upper <= self.lower + EXACT_TOLERANCE * max(1.0, abs(self.upper))


def _pair_mask(n: int, pair: tuple[frozenset[int], frozenset[int]]) -> NDArray[np.bool_]:
    mask = np.zeros(n, dtype=bool)
    differing = pair[0] ^ pair[1]
    if differing:
        mask[np.fromiter(differing, dtype=np.intp, count=len(differing))] = True
    return mask


@functools.lru_cache(maxsize=16)
def _packing(constraints: ConstraintSet) -> tuple[NDArray[np.intp], NDArray[np.int64], dict[int, list[int]]] | None:
    """(group of each database or -1, capacity of each group, conflict neighbours) when every constraint is
    ``at_most`` / ``exclusive`` on pairwise disjoint groups or ``conflicts``; None otherwise."""
    n = constraints.n
    group = np.full(n, -1, dtype=np.intp)
    capacity: list[int] = []
    neighbours: dict[int, list[int]] = {}
    for constraint in constraints.constraints:
        if constraint.is_vacuous(n):
            continue
        if constraint.kind in ("at_most", "exclusive"):
            for bound in constraint.at_most_bounds(n):
                members = np.fromiter(bound.among, dtype=np.intp, count=len(bound.among))
                if np.any(group[members] >= 0):
                    return None  # overlapping groups: left to the solvers
                group[members] = len(capacity)
                capacity.append(int(bound.m))
        elif constraint.kind == "conflicts":
            for u, v in constraint.conflict_edges(n):
                neighbours.setdefault(int(u), []).append(int(v))
                neighbours.setdefault(int(v), []).append(int(u))
        else:
            return None
    return group, np.array(capacity, dtype=np.int64), neighbours


def _greedy(weights: NDArray[np.float64], group: NDArray[np.intp], capacity: NDArray[np.int64],
            neighbours: dict[int, list[int]], banned: NDArray[np.bool_] | None
            ) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """Heaviest first, a database joins while its group has room and no chosen database conflicts with it.
    Returns (chosen, absorbed): ``absorbed`` marks databases skipped for a conflict with a chosen database
    of the same group (or both ungrouped) that absorbed no other one (each such pair is a part of at most
    one member, used by the partition bound)."""
    n = weights.size
    positive = np.flatnonzero(weights > 0.0)
    if banned is not None:
        positive = positive[~banned[positive]]
    order = positive[np.argsort(-weights[positive], kind="stable")]  # heaviest first, ties by index
    room = int(capacity.sum()) + int(np.count_nonzero(group < 0))
    count = capacity.tolist()  # room left per group
    chosen_list: list[int] = []
    chosen_set: set[int] = set()
    absorbed_list: list[int] = []
    partner_taken: set[int] = set()
    for i, g in zip(order.tolist(), group[order].tolist()):  # plain Python values: no numpy scalars
        if room == 0:
            break
        if g >= 0 and count[g] == 0:
            continue
        blockers = [u for u in neighbours.get(i, ()) if u in chosen_set]
        if blockers:
            for u in blockers:
                if u not in partner_taken and group[u] == g:
                    partner_taken.add(u)
                    absorbed_list.append(i)
                    break
            continue
        chosen_list.append(i)
        chosen_set.add(i)
        room -= 1
        if g >= 0:
            count[g] -= 1
    chosen = np.zeros(n, dtype=bool)
    chosen[chosen_list] = True
    absorbed = np.zeros(n, dtype=bool)
    absorbed[absorbed_list] = True
    return chosen, absorbed


def _partition_bound(weights: NDArray[np.float64], group: NDArray[np.intp], capacity: NDArray[np.int64],
                     absorbed: NDArray[np.bool_], sides: int) -> float:
    """Parts: {chosen u, the database it absorbed} (a conflict edge: at most one member per set) and
    singletons. A set holds at most ``capacity`` members of a group, one per part, so its weight is at most
    the sum over groups of the ``capacity`` largest part maxima, plus every ungrouped part's maximum.
    The absorbed database is never heavier than its partner, so a part's maximum is its other member's
    weight: dropping the absorbed weights gives the part maxima. Bounded pairs (``sides = 2``): two
    disjoint sets may hold both members of a part, so nothing is dropped and capacities double."""
    values = weights if sides == 2 else np.where(absorbed, 0.0, weights)
    total = float(values[group < 0].sum())
    if capacity.size:
        order = np.lexsort((-values, group))  # by group, heaviest first within
        g_sorted = group[order]
        inside = g_sorted >= 0
        order, g_sorted = order[inside], g_sorted[inside]
        starts = np.searchsorted(g_sorted, np.arange(capacity.size))
        rank = np.arange(order.size) - starts[g_sorted]
        keep = rank < sides * capacity[g_sorted]
        total += float(values[order[keep]].sum())
    return total


def packing_bracket(constraints: ConstraintSet, weights: NDArray[np.float64], neighborhood: str) -> Bracket | None:
    """A bracket on the maximum weight from a greedy witness and a partition bound, in O(n log n), when the
    constraints are capacity groups on disjoint sets (``at_most``, ``exclusive``) and conflict edges; None
    for other constraints. The witness is re-checked against the constraints (a bug would raise)."""
    structure = _packing(constraints)
    if structure is None:
        return None
    group, capacity, neighbours = structure
    w = np.asarray(weights, dtype=float)
    b1, absorbed = _greedy(w, group, capacity, neighbours, None)
    sides = 1
    if neighborhood == "bounded":
        b0, _ = _greedy(w, group, capacity, neighbours, b1)
        sides = 2
    else:
        b0 = np.zeros_like(b1)
    for side in (b0, b1):  # a frozenset of ints: checked at C speed
        if not constraints.satisfied(frozenset(np.flatnonzero(side).tolist())):  # pragma: no cover - defensive
            raise GCEError("packing_bracket: the greedy witness violates the constraints")
    witness = b0 ^ b1
    with np.errstate(over="ignore"):  # sums beyond the double range: +inf, above any budget
        lower = float(w[witness].sum())
        upper = max(_partition_bound(w, group, capacity, absorbed, sides), lower)
    return Bracket(lower, upper, witness)


def solved_bracket(constraints: ConstraintSet, weights: NDArray[np.float64], neighborhood: str,
                   time_limit: float) -> Bracket:
    """:func:`gce.solvers.worst_pair` within ``time_limit``: its witness and certified upper bound."""
    result = worst_pair(WeightProblem(constraints, weights, neighborhood), time_limit)
    witness = _pair_mask(constraints.n, result.witness)
    with np.errstate(over="ignore"):  # a sum beyond the double range: +inf
        lower = float(np.asarray(weights)[witness].sum())
    return Bracket(lower, float(result.upper_bound), witness)


def reach(constraints: ConstraintSet, neighborhood: str, members: NDArray[np.intp] | None,
          time_limit: float) -> float:
    """An upper bound on max over allowed pairs of |members & (b0 XOR b1)| (``None``: every database)."""
    n = constraints.n
    if members is not None and members.size == 1:
        return 1.0
    ones = np.zeros(n)
    ones[slice(None) if members is None else members] = 1.0
    quick = packing_bracket(constraints, ones, neighborhood)
    if quick is not None and quick.exact:
        return math.floor(quick.upper + 1e-9)
    solved = solved_bracket(constraints, ones, neighborhood, time_limit)
    bound = solved.upper if quick is None else min(solved.upper, quick.upper)
    return float(math.floor(bound + 1e-6))


class WorstCase:
    """Per-database sums of every component and a certified bracket on each component's maximum.

    Parameters
    ----------
    constraints : ConstraintSet
    neighborhood : {"unbounded", "bounded"}
    components : int
        How many statistics (the filter's components).
    time_limit : float
        Seconds :func:`gce.solvers.worst_pair` may search when a bracket must be narrowed.
    """

    def __init__(self, constraints: ConstraintSet, neighborhood: str, components: int, time_limit: float):
        self.constraints = constraints
        self.neighborhood = neighborhood
        self.time_limit = time_limit
        n = constraints.n
        self.sums = np.zeros((components, n))
        self.lower = np.zeros(components)
        self.upper = np.zeros(components)
        self.witness = np.zeros((components, n), dtype=bool)
        self.solves = 0  # how many times a bracket was narrowed (a measure of incrementality)

    @property
    def n(self) -> int:
        return self.constraints.n

    def load(self, sums: NDArray[np.float64]) -> None:
        """Start from given sums (a checkpoint plus replayed entries): every bracket solved once."""
        self.sums = np.array(sums, dtype=float)
        for k in range(self.sums.shape[0]):
            self._adopt(k, self.narrow(self.sums[k], k, full=True))

    def _adopt(self, k: int, bracket: Bracket) -> None:
        self.lower[k], self.upper[k], self.witness[k] = bracket.lower, bracket.upper, bracket.witness

    def narrow(self, weights: NDArray[np.float64], k: int, full: bool) -> Bracket:
        """A bracket on the maximum of ``weights``: the quick packing bracket, then (``full`` or when the
        quick one is not exact) the solvers; the tighter of the two sides."""
        self.solves += 1
        if not np.any(weights > 0):
            return Bracket(0.0, 0.0, np.zeros(self.n, dtype=bool))
        infinite = np.isinf(weights)
        if np.any(infinite):
            return self._narrow_infinite(weights, infinite, k, full)
        quick = packing_bracket(self.constraints, weights, self.neighborhood)
        if quick is not None and (quick.exact or not full):
            return quick
        solved = solved_bracket(self.constraints, weights, self.neighborhood, self.time_limit)
        if quick is None:
            return solved
        best = solved if solved.lower >= quick.lower else quick
        return Bracket(best.lower, min(solved.upper, quick.upper), best.witness)

    def _narrow_infinite(self, weights: NDArray[np.float64], infinite: NDArray[np.bool_], k: int, full: bool
                         ) -> Bracket:
        """:meth:`narrow` when some sums are +inf (spends beyond the double range): the maximum is +inf when
        an allowed pair differs on such a database, else that of the finite sums (the others never differ)."""
        hits = self.narrow(infinite.astype(float), k, full)
        if hits.lower >= 1.0:
            return Bracket(math.inf, math.inf, hits.witness)
        finite = self.narrow(np.where(infinite, 0.0, weights), k, full)
        if hits.upper < 1.0:
            return finite
        return Bracket(finite.lower, math.inf, finite.witness)  # not settled within the time limit

    def tentative(self, members: NDArray[np.intp] | None, weights: NDArray[np.float64], reach_bound: float
                  ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(lower, upper) per component after adding ``weights`` to ``members`` (None: all), not applied."""
        hit = self.witness.sum(axis=1) if members is None else self.witness[:, members].sum(axis=1)
        with np.errstate(over="ignore"):  # beyond the double range: +inf, above any budget (weights are finite)
            return self.lower + weights * hit, self.upper + weights * reach_bound

    def with_added(self, k: int, members: NDArray[np.intp] | None, weight: float) -> NDArray[np.float64]:
        """Component k's sums after adding ``weight`` to ``members`` (a copy)."""
        sums = self.sums[k].copy()
        with np.errstate(over="ignore"):  # a sum beyond the double range: +inf (see :meth:`narrow`)
            sums[slice(None) if members is None else members] += weight
        return sums

    def apply(self, members: NDArray[np.intp] | None, weights: NDArray[np.float64], reach_bound: float,
              narrowed: Sequence[tuple[int, Bracket]] = (), upper_hint: Sequence[float] | None = None) -> None:
        """Add an admitted invocation: the sums, the brackets (incrementally), then brackets narrowed on the
        new sums (``narrowed``) and another process's upper bounds (``upper_hint``), each only if tighter."""
        lower, upper = self.tentative(members, weights, reach_bound)
        where = slice(None) if members is None else members
        with np.errstate(over="ignore"):  # a sum beyond the double range: +inf (see :meth:`narrow`)
            self.sums[:, where] += weights[:, None]
        self.lower, self.upper = lower, upper
        for k, bracket in narrowed:
            self._offer(k, bracket)
        if upper_hint is not None:
            self.upper = np.minimum(self.upper, np.maximum(np.asarray(upper_hint, dtype=float), self.lower))

    def offer(self, k: int, bracket: Bracket) -> None:
        """A bracket computed on sums at least as large as the current ones (a refused invocation's): its
        upper bound holds for the current sums too (the maximum is monotone), its witness is re-weighed."""
        with np.errstate(over="ignore"):  # a sum beyond the double range: +inf
            lower = float(self.sums[k][bracket.witness].sum())
        self._offer(k, Bracket(lower, bracket.upper, bracket.witness))

    def _offer(self, k: int, bracket: Bracket) -> None:
        if bracket.lower > self.lower[k]:
            self.lower[k], self.witness[k] = bracket.lower, bracket.witness
        self.upper[k] = max(min(self.upper[k], bracket.upper), self.lower[k])

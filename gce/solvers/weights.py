"""Maximum-weight solvers for the worst-case pair, fastest first.

* :class:`Unconstrained`: no constraint limits the weight (only ``together``
  groups): every database differs.
* :class:`TopM`: ``at_most`` / ``exclusive`` bounds on disjoint groups: the m
  heaviest of each group (2m for bounded pairs). 001 Ex. 1 (365-subsets
  unbounded, 730-subsets bounded) and Ex. 2 (one subsidiary, or two).
* :class:`PatternList`: an explicit list of allowed sets (001 Ex. 3): every set,
  or every pair of sets, is weighed.
* :class:`Exhaustive`: every allowed set enumerated, for small instances.
* :class:`~gce.solvers.milp.MILP`: the general case (conflict graphs, mixed
  constraints) as a strengthened mixed-integer program solved by HiGHS
  (interruptible: :mod:`gce.solvers.highs`), with a local-search witness and a
  certified upper bound (HiGHS' dual bound or a clique-partition bound) when
  the time cap stops it.

Every solver's work is decided by the problem; the time limit only caps it
(:mod:`gce.effort`): the same problem gives the same answer on any machine,
unless the cap stops a search, which the cap's deadline then records.

:func:`worst_pair` picks the first solver that accepts the problem and
re-checks the witness against the constraints (STYLE: "check every optimizer
output").
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .. import effort
from ..constraints import ConstraintSet
from ..effort import Deadline
from ..errors import GCEError, InvalidParameterError
from ..resources import check_memory
from .base import Solver, WeightProblem, WeightResult, check_time_limit, membership_matrix
from .milp import MILP
from ..validation import shown

__all__ = ["Unconstrained", "TopM", "PatternList", "Exhaustive", "MILP", "SOLVERS", "worst_pair", "DEFAULT_TIME_LIMIT"]

#: Seconds a solve may take by default before the cap stops its searches (they answer with their bounds).
DEFAULT_TIME_LIMIT = 5.0
#: Largest n that :class:`Exhaustive` enumerates (2^n sets, (2^n)^2 pairs).
EXHAUSTIVE_MAX_N = 12
#: Largest pattern list for which all pairs are weighed (bounded pairs).
PATTERN_PAIRS_MAX = 2000

_EMPTY: frozenset[int] = frozenset()


def _as_set(mask: np.ndarray) -> frozenset[int]:
    return frozenset(np.flatnonzero(mask).tolist())


def _kinds(problem: WeightProblem) -> set[str]:
    return {c.kind for c in problem.constraints.constraints if not c.is_vacuous(problem.n)}


#: A capacity group of :class:`TopM`: its members (sorted indices; ``None`` for every database, with no
#: index array built) and how many of them one membership set may hold.
Group = tuple["np.ndarray | None", int]


def _group_bounds(constraints: ConstraintSet) -> dict[bytes | None, Group] | None:
    """The (members, m) bound of every group of ``at_most``/``exclusive`` constraints, keyed by its members
    (the least m of a group bounded twice), or None when other kinds are present. An ``at_most`` over every
    database is kept as ``None`` (a million databases are not listed as a set of a million indices); an
    explicit group of all n databases is the same group."""
    n = constraints.n
    if not {c.kind for c in constraints.constraints if not c.is_vacuous(n)} <= {"at_most", "exclusive"}:
        return None
    groups: dict[bytes | None, Group] = {}
    for c in constraints.constraints:
        if c.kind == "at_most" and getattr(c, "among", ()) is None:  # the record's "all databases"
            bounds = [(None, c.m)]
        else:
            bounds = []
            for bound in c.at_most_bounds(n):
                members = np.sort(np.fromiter(bound.among, dtype=np.intp, count=len(bound.among)))
                bounds.append((None if members.size == n else members, bound.m))
        for members, m in bounds:
            key = None if members is None else members.tobytes()
            found = groups.get(key)
            groups[key] = (members, m if found is None else min(found[1], m))
    return groups


@functools.lru_cache(maxsize=32)
def _disjoint_groups(constraints: ConstraintSet) -> tuple[Group, ...] | None:
    """The (members, m) bounds of ``at_most``/``exclusive`` constraints on pairwise disjoint groups,
    or None when other kinds are present or groups overlap (cached: a solve asks several times;
    :func:`_group_bounds`)."""
    groups = _group_bounds(constraints)
    if groups is None:
        return None
    if None in groups and len(groups) > 1:
        return None  # every database's group overlaps any other
    listed = [members for members, _ in groups.values() if members is not None]
    if listed:
        everything = np.concatenate(listed)
        if np.unique(everything).size != everything.size:
            return None
    return tuple(groups.values())


def _heaviest(values: np.ndarray, k: int) -> np.ndarray:
    """Positions (ascending) of the ``k`` largest ``values``, ties to the smaller position: the first k of a
    stable sort by decreasing value, found in O(len) (a partition) instead of a sort."""
    size = values.size
    if k >= size:
        return np.arange(size)
    if k <= 0:
        return np.empty(0, dtype=np.intp)
    if values.min() == values.max():  # equal weights (one query per database): the first k
        return np.arange(k)
    threshold = np.partition(values, size - k)[size - k]
    above = np.flatnonzero(values > threshold)
    tied = np.flatnonzero(values == threshold)[: k - above.size]
    return np.sort(np.concatenate([above, tied]))


class Unconstrained(Solver):
    """Every database may differ: no cardinality or conflict limits (``together`` only)."""

    name = "unconstrained"

    def can_solve(self, problem: WeightProblem) -> bool:
        return _kinds(problem) <= {"together"}

    def solve(self, problem: WeightProblem, time_limit: float | None = None) -> WeightResult:
        everything = frozenset(range(problem.n))
        value = float(problem.weights.sum())
        return WeightResult((_EMPTY, everything), value, value, self.name)


class TopM(Solver):
    """``at_most`` and ``exclusive`` bounds on pairwise disjoint groups: the heaviest
    m members of each group (2m for bounded pairs, split between b and b')."""

    name = "top-m"

    @staticmethod
    def _groups(problem: WeightProblem) -> dict[frozenset[int], int] | None:
        return _disjoint_groups(problem.constraints)

    def can_solve(self, problem: WeightProblem) -> bool:
        return self._groups(problem) is not None

    def solve(self, problem: WeightProblem, time_limit: float | None = None) -> WeightResult:
        w = problem.weights
        grouped, b0, b1 = (np.zeros(problem.n, dtype=bool) for _ in range(3))
        for members, m in self._groups(problem):
            values = w if members is None else w[members]
            index = (lambda p: p) if members is None else (lambda p, members=members: members[p])
            grouped[slice(None) if members is None else members] = True
            if problem.neighborhood == "bounded":  # the 2m heaviest, split: the m heaviest in b1, the rest in b0
                both = _heaviest(values, 2 * m)
                first = both[_heaviest(values[both], m)]
                b1[index(first)] = True
                b0[index(np.setdiff1d(both, first, assume_unique=True))] = True
            else:
                b1[index(_heaviest(values, m))] = True
        b1 |= ~grouped
        witness = (_as_set(b0), _as_set(b1))
        value = float(w[b0].sum() + w[b1].sum())
        return WeightResult(witness, value, value, self.name)


def _laminar_groups(constraints: ConstraintSet) -> tuple[tuple[np.ndarray | None, int], ...] | None:
    """The (members, m) bounds of ``at_most``/``exclusive`` constraints when any two groups are disjoint
    or one contains the other (a laminar family; an ``at_most`` over every database contains them all),
    innermost first; None otherwise (other kinds, or groups that cross)."""
    groups = _group_bounds(constraints)
    if groups is None:
        return None
    listed = sorted((g for g in groups.values() if g[0] is not None), key=lambda g: g[0].size)
    if len(listed) > LAMINAR_GROUPS_MAX:
        return None
    sets = [frozenset(members.tolist()) for members, _ in listed]
    for i, a in enumerate(sets):  # sorted by size: a crossing pair is a smaller set meeting but not inside
        for b in sets[i + 1:]:
            if a & b and not a <= b:
                return None
    return tuple(listed) + ((None, groups[None][1]),) if None in groups else tuple(listed)


#: Most groups :class:`Laminar` checks pairwise for crossing (a quadratic check).
LAMINAR_GROUPS_MAX = 2_000


class Laminar(Solver):
    """``at_most`` and ``exclusive`` bounds on groups that are pairwise disjoint or nested (a laminar
    family, e.g. ``at_most`` m of all databases with ``exclusive`` groups), unbounded pairs: the allowed
    sets are the independent sets of a laminar matroid, so the greedy choice (heaviest first, each taken
    while every group holding it has room) is a heaviest allowed set (Edmonds 1971: greedy is optimal
    exactly on matroids)."""

    name = "laminar"

    def can_solve(self, problem: WeightProblem) -> bool:
        return problem.neighborhood == "unbounded" and _laminar_groups(problem.constraints) is not None

    def solve(self, problem: WeightProblem, time_limit: float | None = None) -> WeightResult:
        w = problem.weights
        groups = _laminar_groups(problem.constraints)
        room = np.array([m for _, m in groups], dtype=np.int64)
        holding: list[list[int]] = [[] for _ in range(problem.n)]  # database -> the groups holding it
        for g, (members, _) in enumerate(groups):
            for i in (range(problem.n) if members is None else members.tolist()):
                holding[i].append(g)
        chosen = []
        for i in np.lexsort((np.arange(problem.n), -w)).tolist():  # heaviest first, ties to the smaller index
            if w[i] <= 0.0:
                break
            own = holding[i]
            if all(room[g] > 0 for g in own):
                room[own] -= 1
                chosen.append(i)
        witness = (_EMPTY, frozenset(chosen))
        value = problem.value(*witness)
        return WeightResult(witness, value, value, self.name)


class PatternList(Solver):
    """An explicit list of allowed sets (001 Ex. 3, column nullability): weigh them all."""

    name = "patterns"

    def can_solve(self, problem: WeightProblem) -> bool:
        explicit = problem.constraints.explicit_sets()
        if explicit is None:
            return False
        return problem.neighborhood == "unbounded" or len(explicit) + 1 <= PATTERN_PAIRS_MAX

    def solve(self, problem: WeightProblem, time_limit: float | None = None) -> WeightResult:
        sets = list(problem.constraints.allowed_sets())  # the empty set first, then allowed patterns
        members = membership_matrix(sets, problem.n)  # sparse: sets x databases dense was 16 GB at 10^6 x 2,000
        totals = members @ problem.weights
        if problem.neighborhood == "unbounded":
            best = int(np.argmax(totals))
            witness = (_EMPTY, sets[best])
        else:
            check_memory("constraints", 3 * 8 * len(sets) ** 2, f"patterns: {len(sets):,} x {len(sets):,} pairs "
                                                                f"of allowed sets weighed (bounded)")
            import scipy.sparse as sp

            common = (members @ sp.diags_array(problem.weights) @ members.T).toarray()
            xor = totals[:, None] + totals[None, :] - 2.0 * common
            i, j = np.unravel_index(int(np.argmax(xor)), xor.shape)
            witness = (sets[i], sets[j])
        value = problem.value(*witness)
        return WeightResult(witness, value, value, self.name)


@functools.lru_cache(maxsize=8)
def _allowed_masks(constraints: ConstraintSet) -> tuple[list[frozenset[int]], np.ndarray]:
    """The allowed sets of a small constraint set, and their bit masks (listed once: a branch and bound or a
    Renyi bound weighs the same sets many times)."""
    sets = list(constraints.allowed_sets())
    return sets, np.array([sum(1 << i for i in s) for s in sets], dtype=np.int64)


class Exhaustive(Solver):
    """Every allowed set (and pair) enumerated: small instances, any constraints."""

    name = "exhaustive"

    def can_solve(self, problem: WeightProblem) -> bool:
        return problem.n <= EXHAUSTIVE_MAX_N

    def solve(self, problem: WeightProblem, time_limit: float | None = None) -> WeightResult:
        sets, masks = _allowed_masks(problem.constraints)
        bits = (np.arange(1 << problem.n)[:, None] >> np.arange(problem.n)[None, :]) & 1
        weight_of = bits @ problem.weights  # the weight of every subset, by its bit mask
        if problem.neighborhood == "unbounded":
            best = int(np.argmax(weight_of[masks]))
            witness = (_EMPTY, sets[best])
        else:
            xor = weight_of[masks[:, None] ^ masks[None, :]]
            i, j = np.unravel_index(int(np.argmax(xor)), xor.shape)
            witness = (sets[i], sets[j])
        value = problem.value(*witness)
        return WeightResult(witness, value, value, self.name)


#: Largest weights outside this range are brought into [1, 2) by a power of two before solving (exact):
#: HiGHS takes a cost of 1e20 or more as infinite (a MILP on weights of order 1e20 returned an "exact" bound
#: 10% below the optimum), sums of weights near 1e308 overflow, and the MILP's absolute bound slack swamps
#: weights below 1e-6.
SCALE_RANGE = (2.0**-20, 2.0**60)


def _scaled(problem: WeightProblem, time_limit: float | None, exponent: int) -> WeightResult:
    """:func:`worst_pair` on the weights times 2^-``exponent``: its witness, weighed on the original weights,
    and its bound scaled back.

    Weights that scaling down sends below the normal range lose bits (at most 2^-1074 each, before scaling
    back): the bound is raised by that much per database. A sum beyond the double range is +inf, the
    correctly rounded value."""
    scaled = WeightProblem(problem.constraints, np.ldexp(problem.weights, -exponent), problem.neighborhood)
    result = worst_pair(scaled, None)
    with np.errstate(over="ignore"):
        value = problem.value(*result.witness)
        pad = float(np.ldexp(problem.n * 2.0**-1074, exponent)) if exponent > 0 else 0.0
        upper = float(np.ldexp(result.upper_bound, exponent)) + pad
    detail = f"{result.detail}; weights scaled by 2^{-exponent}".lstrip("; ")
    return WeightResult(result.witness, value, max(upper, value), result.method, detail, result.stopped)


#: Solvers in the order the dispatcher tries them.
SOLVERS: tuple[Solver, ...] = (Unconstrained(), TopM(), Laminar(), PatternList(), Exhaustive(), MILP())


def worst_pair(problem: WeightProblem, time_limit: float | None = DEFAULT_TIME_LIMIT) -> WeightResult:
    """The heaviest allowed pair and a certified upper bound, from the first solver that accepts.

    The work is decided by the problem alone; the time only caps it. The cap
    is the running computation's deadline (:func:`gce.effort.current`, set by
    :func:`gce.solve`), tightened to ``time_limit`` seconds when given (then
    its stops are passed on to the running computation's deadline). Code
    running inside a computation passes ``time_limit=None``.

    Raises
    ------
    InvalidParameterError
        If ``problem`` is not a :class:`WeightProblem` or ``time_limit`` is not a finite
        number of seconds in (0, :data:`~gce.solvers.base.MAX_TIME_LIMIT`].
    GCEError
        If a solver's witness violates the constraints (a bug, never silenced).
    """
    if not isinstance(problem, WeightProblem):
        raise InvalidParameterError("problem", f"must be a WeightProblem, got {shown(problem)}")
    if time_limit is not None:
        outer = effort.current()
        with effort.within(Deadline(min(check_time_limit(time_limit), outer.left()))) as deadline:
            result = worst_pair(problem, None)
        for stop in deadline.stops:
            outer.stop(stop)
        return result
    largest = float(problem.weights.max()) if problem.n else 0.0
    if largest > 0.0 and not SCALE_RANGE[0] <= largest <= SCALE_RANGE[1]:
        return _scaled(problem, time_limit, math.frexp(largest)[1] - 1)
    for solver in SOLVERS:
        if solver.can_solve(problem):
            result = solver.solve(problem)
            if not problem.allowed_pair(*result.witness):  # pragma: no cover - defensive
                raise GCEError(f"solver {solver.name} returned a pair outside the constraints: {result.witness}")
            return result
    raise GCEError("no solver accepts the problem")  # pragma: no cover - MILP accepts everything

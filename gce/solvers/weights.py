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
  the time budget ends first.

:func:`worst_pair` picks the first solver that accepts the problem and
re-checks the witness against the constraints (STYLE: "check every optimizer
output").
"""

from __future__ import annotations

import functools

import numpy as np

from ..constraints import ConstraintSet
from ..errors import GCEError, InvalidParameterError
from .base import Solver, WeightProblem, WeightResult, check_time_limit
from .milp import MILP

__all__ = ["Unconstrained", "TopM", "PatternList", "Exhaustive", "MILP", "SOLVERS", "worst_pair", "DEFAULT_TIME_LIMIT"]

#: Seconds a time-limited solver may spend before answering with its bound.
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


@functools.lru_cache(maxsize=32)
def _disjoint_groups(constraints: ConstraintSet) -> dict[frozenset[int], int] | None:
    """The (among, m) bounds of ``at_most``/``exclusive`` constraints on pairwise disjoint groups,
    or None when other kinds are present or groups overlap (cached: a solve asks several times)."""
    if not {c.kind for c in constraints.constraints if not c.is_vacuous(constraints.n)} <= {"at_most", "exclusive"}:
        return None
    groups: dict[frozenset[int], int] = {}
    for bound in constraints.at_most_bounds():
        groups[bound.among] = min(bound.m, groups.get(bound.among, bound.m))
    seen: set[int] = set()
    for among in groups:
        if seen & among:
            return None
        seen |= among
    return groups


class Unconstrained(Solver):
    """Every database may differ: no cardinality or conflict limits (``together`` only)."""

    name = "unconstrained"

    def can_solve(self, problem: WeightProblem) -> bool:
        return _kinds(problem) <= {"together"}

    def solve(self, problem: WeightProblem, time_limit: float) -> WeightResult:
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

    def solve(self, problem: WeightProblem, time_limit: float) -> WeightResult:
        w = problem.weights
        grouped, b0, b1 = (np.zeros(problem.n, dtype=bool) for _ in range(3))
        for among, m in self._groups(problem).items():
            members = np.sort(np.fromiter(among, dtype=np.int64, count=len(among)))
            grouped[members] = True
            ranked = members[np.argsort(-w[members], kind="stable")]  # heaviest first, ties by index
            b1[ranked[:m]] = True
            if problem.neighborhood == "bounded":
                b0[ranked[m:2 * m]] = True
        b1 |= ~grouped
        witness = (_as_set(b0), _as_set(b1))
        value = float(w[b0].sum() + w[b1].sum())
        return WeightResult(witness, value, value, self.name)


class PatternList(Solver):
    """An explicit list of allowed sets (001 Ex. 3, column nullability): weigh them all."""

    name = "patterns"

    def can_solve(self, problem: WeightProblem) -> bool:
        explicit = problem.constraints.explicit_sets()
        if explicit is None:
            return False
        return problem.neighborhood == "unbounded" or len(explicit) + 1 <= PATTERN_PAIRS_MAX

    def solve(self, problem: WeightProblem, time_limit: float) -> WeightResult:
        sets = list(problem.constraints.allowed_sets())  # the empty set first, then allowed patterns
        members = np.zeros((len(sets), problem.n))
        for row, s in enumerate(sets):
            members[row, list(s)] = 1.0
        totals = members @ problem.weights
        if problem.neighborhood == "unbounded":
            best = int(np.argmax(totals))
            witness = (_EMPTY, sets[best])
        else:
            common = (members * problem.weights) @ members.T
            xor = totals[:, None] + totals[None, :] - 2.0 * common
            i, j = np.unravel_index(int(np.argmax(xor)), xor.shape)
            witness = (sets[i], sets[j])
        value = problem.value(*witness)
        return WeightResult(witness, value, value, self.name)


class Exhaustive(Solver):
    """Every allowed set (and pair) enumerated: small instances, any constraints."""

    name = "exhaustive"

    def can_solve(self, problem: WeightProblem) -> bool:
        return problem.n <= EXHAUSTIVE_MAX_N

    def solve(self, problem: WeightProblem, time_limit: float) -> WeightResult:
        sets = list(problem.constraints.allowed_sets())
        masks = np.array([sum(1 << i for i in s) for s in sets], dtype=np.int64)
        weight_of = np.zeros(1 << problem.n)
        for i in range(problem.n):
            weight_of[[m for m in range(1 << problem.n) if m >> i & 1]] += problem.weights[i]
        if problem.neighborhood == "unbounded":
            best = int(np.argmax(weight_of[masks]))
            witness = (_EMPTY, sets[best])
        else:
            xor = weight_of[masks[:, None] ^ masks[None, :]]
            i, j = np.unravel_index(int(np.argmax(xor)), xor.shape)
            witness = (sets[i], sets[j])
        value = problem.value(*witness)
        return WeightResult(witness, value, value, self.name)


#: Solvers in the order the dispatcher tries them.
SOLVERS: tuple[Solver, ...] = (Unconstrained(), TopM(), PatternList(), Exhaustive(), MILP())


def worst_pair(problem: WeightProblem, time_limit: float = DEFAULT_TIME_LIMIT) -> WeightResult:
    """The heaviest allowed pair and a certified upper bound, from the first solver that accepts.

    Raises
    ------
    InvalidParameterError
        If ``problem`` is not a :class:`WeightProblem` or ``time_limit`` is not a finite
        number of seconds in (0, :data:`~gce.solvers.base.MAX_TIME_LIMIT`].
    GCEError
        If a solver's witness violates the constraints (a bug, never silenced).
    """
    if not isinstance(problem, WeightProblem):
        raise InvalidParameterError("problem", f"must be a WeightProblem, got {problem!r}")
    time_limit = check_time_limit(time_limit)
    for solver in SOLVERS:
        if solver.can_solve(problem):
            result = solver.solve(problem, time_limit)
            if not problem.allowed_pair(*result.witness):  # pragma: no cover - defensive
                raise GCEError(f"solver {solver.name} returned a pair outside the constraints: {result.witness}")
            return result
    raise GCEError("no solver accepts the problem")  # pragma: no cover - MILP accepts everything

"""Maximum-weight solvers for the worst-case pair, fastest first.

* :class:`Unconstrained`: no constraint limits the weight (only ``together``
  groups): every database differs.
* :class:`TopM`: ``at_most`` / ``exclusive`` bounds on disjoint groups: the m
  heaviest of each group (2m for bounded pairs). 001 Ex. 1 (365-subsets
  unbounded, 730-subsets bounded) and Ex. 2 (one subsidiary, or two).
* :class:`PatternList`: an explicit list of allowed sets (001 Ex. 3): every set,
  or every pair of sets, is weighed.
* :class:`Exhaustive`: every allowed set enumerated, for small instances.
* :class:`MILP`: the general case (conflict graphs, mixed constraints) as a
  mixed-integer program through cvxpy and HiGHS, with HiGHS' dual bound as the
  certified upper bound when the time budget ends first.

:func:`worst_pair` picks the first solver that accepts the problem and
re-checks the witness against the constraints (STYLE: "check every optimizer
output").
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..errors import GCEError
from .base import Solver, WeightProblem, WeightResult, round_bound

__all__ = ["Unconstrained", "TopM", "PatternList", "Exhaustive", "MILP", "SOLVERS", "worst_pair", "DEFAULT_TIME_LIMIT"]

#: Seconds a time-limited solver may spend before answering with its bound.
DEFAULT_TIME_LIMIT = 5.0
#: Largest n that :class:`Exhaustive` enumerates (2^n sets, (2^n)^2 pairs).
EXHAUSTIVE_MAX_N = 12
#: Largest pattern list for which all pairs are weighed (bounded pairs).
PATTERN_PAIRS_MAX = 2000

_EMPTY: frozenset[int] = frozenset()


def _kinds(problem: WeightProblem) -> set[str]:
    return {c.kind for c in problem.constraints.constraints if not c.is_vacuous(problem.n)}


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
        if not _kinds(problem) <= {"at_most", "exclusive"}:
            return None
        groups: dict[frozenset[int], int] = {}
        for bound in problem.constraints.at_most_bounds():
            groups[bound.among] = min(bound.m, groups.get(bound.among, bound.m))
        seen: set[int] = set()
        for among in groups:
            if seen & among:
                return None
            seen |= among
        return groups

    def can_solve(self, problem: WeightProblem) -> bool:
        return self._groups(problem) is not None

    def solve(self, problem: WeightProblem, time_limit: float) -> WeightResult:
        groups = self._groups(problem)
        per_side = 2 if problem.neighborhood == "bounded" else 1
        grouped = set().union(*groups) if groups else set()
        b0, b1 = set(), {i for i in range(problem.n) if i not in grouped}
        for among, m in groups.items():
            ranked = sorted(among, key=lambda i: (-problem.weights[i], i))
            b1.update(ranked[:m])
            if per_side == 2:
                b0.update(ranked[m:2 * m])
        witness = (frozenset(b0), frozenset(b1))
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


class MILP(Solver):
    """The general case as a mixed-integer linear program (cvxpy with HiGHS).

    Unbounded: maximize w.x subject to the compiled constraints A [x, s] <= b.
    Bounded: two copies (x, s), (y, t) and z_i <= x_i + y_i, z_i <= 2 - x_i - y_i,
    maximize w.z (z is x XOR y at the optimum since w >= 0). HiGHS' MIP dual
    bound is the certified upper bound when the time budget runs out.
    """

    name = "milp"
    always_exact = False

    def can_solve(self, problem: WeightProblem) -> bool:
        return True

    def solve(self, problem: WeightProblem, time_limit: float) -> WeightResult:
        import cvxpy as cp

        system = problem.constraints.compile()
        width = system.n + system.aux
        w = problem.weights

        def copy() -> tuple[cp.Variable, list]:
            v = cp.Variable(width, boolean=True)
            return v, ([system.A @ v <= system.b] if system.A.shape[0] else [])

        x, cons = copy()
        if problem.neighborhood == "unbounded":
            objective = w @ x[: problem.n]
            variables = (x,)
        else:
            y, more = copy()
            z = cp.Variable(problem.n)
            cons += more + [z >= 0, z <= x[: problem.n] + y[: problem.n], z <= 2 - x[: problem.n] - y[: problem.n]]
            objective = w @ z
            variables = (y, x)
        prob = cp.Problem(cp.Maximize(objective), cons)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                prob.solve(solver=cp.HIGHS, time_limit=float(time_limit), mip_rel_gap=0.0)
            except cp.error.SolverError as error:  # pragma: no cover - solver failure
                raise GCEError(f"the MILP solver failed: {error}") from None
        witness = (_EMPTY, _EMPTY)
        if all(v.value is not None for v in variables):
            chosen = [frozenset(int(i) for i in np.flatnonzero(v.value[: problem.n] > 0.5)) for v in variables]
            candidate = (chosen[0], chosen[1]) if len(chosen) == 2 else (_EMPTY, chosen[0])
            if problem.allowed_pair(*candidate):
                witness = candidate
        greedy = _greedy_pair(problem)
        if problem.value(*greedy) > problem.value(*witness):
            witness = greedy
        value = problem.value(*witness)
        upper = float(w.sum())
        stats = prob.solver_stats.extra_stats if prob.solver_stats is not None else None
        dual = getattr(stats, "mip_dual_bound", math.nan)
        if dual is not None and math.isfinite(dual):
            upper = min(upper, -float(dual) + 1e-7 * max(1.0, abs(dual)))  # cvxpy minimizes -objective
        upper = max(round_bound(problem, upper), value)
        return WeightResult(witness, value, upper, self.name)


def _greedy_set(problem: WeightProblem, start: frozenset[int], banned: frozenset[int]) -> frozenset[int]:
    """Add whole ``together`` blocks, heaviest first, while the set stays allowed."""
    blocks = [b for b in problem.constraints.components() if not b & banned]
    blocks.sort(key=lambda b: -sum(problem.weights[i] for i in b))
    chosen = start
    for block in blocks:
        if not block <= chosen and problem.constraints.satisfied(chosen | block):
            chosen = chosen | block
    return chosen


def _greedy_pair(problem: WeightProblem) -> tuple[frozenset[int], frozenset[int]]:
    """A quick allowed pair: greedy b1, then (bounded) a greedy b0 on the other databases."""
    b1 = _greedy_set(problem, _EMPTY, _EMPTY)
    if problem.neighborhood == "unbounded":
        return _EMPTY, b1
    b0 = _greedy_set(problem, _EMPTY, b1)
    return (b0, b1) if problem.allowed_pair(b0, b1) else (_EMPTY, b1)


#: Solvers in the order the dispatcher tries them.
SOLVERS: tuple[Solver, ...] = (Unconstrained(), TopM(), PatternList(), Exhaustive(), MILP())


def worst_pair(problem: WeightProblem, time_limit: float = DEFAULT_TIME_LIMIT) -> WeightResult:
    """The heaviest allowed pair and a certified upper bound, from the first solver that accepts.

    Raises
    ------
    GCEError
        If a solver's witness violates the constraints (a bug, never silenced).
    """
    for solver in SOLVERS:
        if solver.can_solve(problem):
            result = solver.solve(problem, time_limit)
            if not problem.allowed_pair(*result.witness):  # pragma: no cover - defensive
                raise GCEError(f"solver {solver.name} returned a pair outside the constraints: {result.witness}")
            return result
    raise GCEError("no solver accepts the problem")  # pragma: no cover - MILP accepts everything

"""The worst-case search as a weight problem, and the interface every solver implements.

For a preset neighbourhood the adversary's worst case is a pair of point
masses (001 Thm. 1 with convexity of the hockey-stick divergence), so the
search is over pairs of allowed membership sets (b0, b1): ``unbounded`` pairs
(empty set, b) and ``bounded`` pairs (b, b'). Only the invocations on databases
in b0 XOR b1 differ between the two hypotheses (001, Sec. IV), and composition
is monotone in the multiset of differing invocations. When every invocation
has the same guarantee the composed curve depends only on *how many* differ,
so the worst case is a maximum-weight problem:

    maximize   sum_i w_i [i in b0 XOR b1]   over allowed pairs,

with w_i the invocations on database i. Solvers answer that problem; they state
what they accept (``can_solve``) and whether an answer is exact, and every
answer carries a certified upper bound (STYLE: "report bounds, not just points").
"""

from __future__ import annotations

import abc
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ..constraints import ConstraintSet
from ..constraints.neighborhood import NEIGHBORHOODS, check_neighborhood
from ..errors import InvalidParameterError
from ..validation import as_float, shown

if TYPE_CHECKING:  # pragma: no cover - scipy.sparse is imported where used (start-up)
    import scipy.sparse as sp

__all__ = ["NEIGHBORHOODS", "WeightProblem", "WeightResult", "Solver", "check_time_limit", "MAX_TIME_LIMIT",
           "membership_matrix"]

#: Largest time budget accepted, in seconds (about 11.6 days): beyond it a budget is a mistake, not a plan.
MAX_TIME_LIMIT = 1e6


def check_time_limit(value: object, field: str = "time_limit") -> float:
    """A time budget in seconds: a finite number in (0, :data:`MAX_TIME_LIMIT`].

    Raises
    ------
    InvalidParameterError
        Naming ``field`` and the value (``inf``, NaN, 0, negative, too large, not a number).
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidParameterError(field, f"must be a number of seconds, got {shown(value)}")
    seconds = as_float(value)
    if not 0.0 < seconds <= MAX_TIME_LIMIT:
        raise InvalidParameterError(field, f"must be a finite number of seconds in (0, {MAX_TIME_LIMIT:g}], "
                                           f"got {shown(value)}")
    return seconds


def membership_matrix(sets: Sequence[frozenset[int]], n: int) -> sp.csr_array:
    """The sets as rows of a sparse 0/1 matrix over ``n`` databases (CSR, float64).

    Memory is proportional to the members listed, never to sets x databases: 10^6 patterns of a few
    databases each on 2,000 databases take about 40 MB, where the dense matrix took 16 GB.

    >>> membership_matrix([frozenset(), frozenset({0, 2})], 3).toarray()
    array([[0., 0., 0.],
           [1., 0., 1.]])
    """
    sizes = np.fromiter((len(s) for s in sets), dtype=np.int64, count=len(sets))
    indptr = np.zeros(len(sets) + 1, dtype=np.int64)
    np.cumsum(sizes, out=indptr[1:])
    indices = np.fromiter((i for s in sets for i in sorted(s)), dtype=np.int64, count=int(indptr[-1]))
    import scipy.sparse as sp

    return sp.csr_array((np.ones(indices.size), indices, indptr), shape=(len(sets), n))


@dataclass(frozen=True, eq=False)
class WeightProblem:
    """Maximize the weight of b0 XOR b1 over allowed pairs.

    Parameters
    ----------
    constraints : ConstraintSet
        The allowed membership sets B~ (001, Sec. V-A).
    weights : array of float
        One non-negative weight per database (invocation counts, or an additive
        statistic of their guarantees).
    neighborhood : {"unbounded", "bounded"}
        Pairs (empty, b) or pairs (b, b'), both in B~.
    """

    constraints: ConstraintSet
    weights: NDArray[np.float64]
    neighborhood: str = "unbounded"

    def __post_init__(self) -> None:
        if not isinstance(self.constraints, ConstraintSet):
            raise InvalidParameterError("constraints", f"must be a ConstraintSet, got {shown(self.constraints)}")
        try:
            w = np.asarray(self.weights, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            raise InvalidParameterError("weights", f"must be numbers, one per database, got "
                                                   f"{shown(self.weights)}") from None
        if w.shape != (self.constraints.n,):
            raise InvalidParameterError("weights", f"needs one weight per database ({self.constraints.n}), got {w.size}")
        if w.size and not (w.min() >= 0.0 and np.isfinite(w.max())):  # NaN fails both; no array allocated
            raise InvalidParameterError("weights", "must be finite and >= 0")
        w.setflags(write=False)
        object.__setattr__(self, "weights", w)
        check_neighborhood(self.neighborhood)

    @property
    def n(self) -> int:
        return self.constraints.n

    @property
    def integral(self) -> bool:
        """Whether all weights are integers (then bounds can be rounded down)."""
        return bool(np.all(self.weights == np.round(self.weights)))

    def value(self, b0: frozenset[int], b1: frozenset[int]) -> float:
        """The weight of b0 XOR b1."""
        differing = b0 ^ b1
        return float(self.weights[np.fromiter(differing, dtype=np.intp, count=len(differing))].sum())

    def allowed_pair(self, b0: frozenset[int], b1: frozenset[int]) -> bool:
        """Whether (b0, b1) is a pair of this neighbourhood (the generic witness check)."""
        ok = self.constraints.satisfied(b0) and self.constraints.satisfied(b1)
        return ok and (self.neighborhood == "bounded" or not b0)


@dataclass(frozen=True)
class WeightResult:
    """A solver's answer: a witness pair, its weight, and a certified upper bound.

    ``exact`` holds when ``value == upper_bound`` (the witness is optimal).
    ``method`` names the solver; ``detail`` says how it got there (for example
    the MILP's formulation and which bound won), for reports and tests.
    """

    witness: tuple[frozenset[int], frozenset[int]]
    value: float
    upper_bound: float
    method: str
    detail: str = ""
    #: Whether the time cap stopped a step of the search (then the answer may differ on a faster machine;
    #: it is sound all the same, and the cap's :class:`~gce.effort.Deadline` records the stop).
    stopped: bool = False

    @property
    def exact(self) -> bool:
        return self.value >= self.upper_bound - 1e-9 * max(1.0, abs(self.upper_bound))

    @property
    def gap(self) -> float:
        """upper_bound - value (0 when exact)."""
        return max(self.upper_bound - self.value, 0.0)


class Solver(abc.ABC):
    """A worst-case solver: declares what it accepts and answers with bounds."""

    name: str = ""
    #: Whether answers are always exact (solvers whose cap can stop them may not be).
    always_exact: bool = True

    @abc.abstractmethod
    def can_solve(self, problem: WeightProblem) -> bool:
        """Whether this solver handles the problem's constraints and neighbourhood."""

    @abc.abstractmethod
    def solve(self, problem: WeightProblem, time_limit: float | None = None) -> WeightResult:
        """Solve; the result's witness must be an allowed pair. The work is decided by the problem alone;
        ``time_limit`` (seconds; default: the running computation's :func:`gce.effort.current`) only caps it."""


def round_bound(problem: WeightProblem, bound: float) -> float:
    """An upper bound, rounded down to an integer when the weights are integral."""
    if problem.integral:
        return float(math.floor(bound + 1e-6))
    return bound

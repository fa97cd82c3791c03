"""Worst-case solvers: the adversary's heaviest pair of membership sets (001, Sec. IV-V).

See :mod:`gce.solvers.base` for the problem and :mod:`gce.solvers.weights` for the
solvers and the dispatcher :func:`worst_pair`.
"""

from .base import NEIGHBORHOODS, Solver, WeightProblem, WeightResult
from .weights import DEFAULT_TIME_LIMIT, SOLVERS, worst_pair

__all__ = ["NEIGHBORHOODS", "Solver", "WeightProblem", "WeightResult", "SOLVERS", "worst_pair", "DEFAULT_TIME_LIMIT"]

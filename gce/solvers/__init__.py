"""Worst-case solvers: the adversary's heaviest pair of membership sets (001, Sec. IV-V).

See :mod:`gce.solvers.base` for the problem, :mod:`gce.solvers.weights` for the
fast paths and the dispatcher :func:`worst_pair`, :mod:`gce.solvers.milp` for
the general case, and :mod:`gce.solvers.packing` / :mod:`gce.solvers.heuristics`
for the conflict-graph structure and the local search behind it.
"""

from .base import NEIGHBORHOODS, Solver, WeightProblem, WeightResult
from .milp import MILP, PlainMILP, formulation
from .weights import DEFAULT_TIME_LIMIT, SOLVERS, worst_pair

__all__ = [
    "NEIGHBORHOODS",
    "Solver",
    "WeightProblem",
    "WeightResult",
    "SOLVERS",
    "MILP",
    "PlainMILP",
    "formulation",
    "worst_pair",
    "DEFAULT_TIME_LIMIT",
]

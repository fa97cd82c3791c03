"""Worst-case solvers: the adversary's heaviest pair of membership sets (001, Sec. IV-V).

See :mod:`gce.solvers.base` for the problem, :mod:`gce.solvers.weights` for the
fast paths and the dispatcher :func:`worst_pair`, :mod:`gce.solvers.milp` for
the general case, and :mod:`gce.solvers.packing` / :mod:`gce.solvers.heuristics`
for the conflict-graph structure and the local search behind it.

The names below are imported from their modules on first use (a module ``__getattr__``), so that
``from gce.solvers.base import ...`` (the command line's time cap) does not load the MILP.
"""

import importlib
from typing import TYPE_CHECKING

#: Where each name of this face lives.
_SOURCES = {
    "base": ("NEIGHBORHOODS", "Solver", "WeightProblem", "WeightResult"),
    "milp": ("MILP", "PlainMILP", "formulation"),
    "weights": ("DEFAULT_TIME_LIMIT", "SOLVERS", "worst_pair"),
}
_MODULE_OF = {name: module for module, names in _SOURCES.items() for name in names}

if TYPE_CHECKING:  # pragma: no cover - what a type checker sees: the names, eagerly
    from .base import NEIGHBORHOODS, Solver, WeightProblem, WeightResult
    from .milp import MILP, PlainMILP, formulation
    from .weights import DEFAULT_TIME_LIMIT, SOLVERS, worst_pair


def __getattr__(name: str) -> object:
    """A name of this face on first use, imported from its module and kept here."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


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

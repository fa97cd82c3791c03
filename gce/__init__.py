"""gce: differential-privacy guarantees under the generalized composition experiment.

The generalized composition experiment (001, Alg. 2) lets public facts limit which
databases one person can be in; ``gce`` turns per-invocation guarantees and those
facts into a hypothesis-DP guarantee (001, Def. 3). This package level exposes what
a script or notebook needs: guarantees, constraints, hypotheses, scenarios,
``solve``, ``calibrate``, the noise for training (``calibrate_noise``), the composition selector and the
online ``Accountant``; dp-accounting's events in (``from_dp_event``, ``GceAccountant``).

Examples
--------
>>> import gce
>>> c = gce.compose({gce.ApproxDP(0.05, 1e-10): 365})
>>> best = c.at_delta(1e-6)
>>> round(best.epsilon, 3), best.theorem, c.exact
(4.62, 'kairouz-III.3', True)

A scenario built in Python, no file needed:

>>> scenario = gce.Scenario(
...     databases=1000,
...     invocations=[gce.Invocation(i, gce.ApproxDP(0.05, 1e-10)) for i in range(1000)],
...     constraints=gce.ConstraintSet(1000, [gce.AtMost(365)]),
...     delta=1e-6)
>>> report = gce.solve(scenario)
>>> round(report.epsilon, 3), report.exact, report.differing_count
(4.62, True, 365)
"""

import importlib
import os

#: ``typing.TYPE_CHECKING`` without importing typing (6 ms: the ``gce`` command imports this package before its
#: Ctrl-C handler is installed, gce/__main__.py); mypy and pyright read a name ``TYPE_CHECKING`` as true.
TYPE_CHECKING = False

__version__ = "0.1.0"

#: Where each public name lives (``gce.X`` is ``gce.<module>.X``), imported on first use (SPEC 1: a module
#: ``__getattr__``): ``import gce`` costs no scipy, networkx or solver, so that the command line and a script
#: that needs one part start at once. ``EAGER_IMPORT=1`` in the environment imports everything up front.
_SOURCES = {
    "accounting.curves": ("PrivacyCurve",),
    "errors": ("GCEError", "InfeasibleConstraintsError", "InvalidParameterError", "InvalidScenarioError",
               "NumericalLimitError", "UnsupportedCombinationError"),
    "accounting.guarantees": ("ZCDP", "ApproxDP", "GaussianDP", "GaussianMechanism", "Guarantee", "LaplaceMechanism",
                              "PureDP", "RandomizedResponse", "Subsampled"),
    "accounting.theorems": ("THEOREMS", "Composition", "compose"),
    "constraints": ("AtMost", "Conflicts", "ConstraintSet", "Exclusive", "MembershipEstimate", "Patterns", "Together",
                    "estimate_membership"),
    "hypotheses": ("Explicit", "Point", "Rates", "Uniform"),
    "model": ("Databases", "Invocation", "InvocationGroup", "Scenario"),
    "report": ("Report",),
    "files.scenario": ("load_scenario",),
    "solving": ("solve",),
    "calibration": ("Calibration", "calibrate"),
    "training": ("NoiseCalibration", "calibrate_noise"),
    "ledger": ("Accountant", "LedgerError"),
    "bridges.dp_events": ("from_dp_event",),
    # GceAccountant subclasses dp-accounting's PrivacyAccountant, and dp-accounting is slow to import.
    "bridges.accountant": ("GceAccountant",),
}
_MODULE_OF = {name: module for module, names in _SOURCES.items() for name in names}
#: The subpackages and modules reachable as attributes (``gce.solving``, ``gce.plot``, ...), imported on first use.
_SUBMODULES = frozenset({
    "accounting", "bridges", "calibration", "cli", "constraints", "distributions", "effort", "errors", "files",
    "hypotheses", "ledger", "membership", "model", "plot", "priors", "progress", "report", "resources", "solvers",
    "solving", "training", "validation",
})

if TYPE_CHECKING:  # pragma: no cover - what a type checker and an editor see: the names, eagerly
    from .accounting.curves import PrivacyCurve
    from .accounting.guarantees import (ZCDP, ApproxDP, GaussianDP, GaussianMechanism, Guarantee, LaplaceMechanism,
                                        PureDP, RandomizedResponse, Subsampled)
    from .accounting.theorems import THEOREMS, Composition, compose
    from .bridges.accountant import GceAccountant
    from .bridges.dp_events import from_dp_event
    from .calibration import Calibration, calibrate
    from .constraints import (AtMost, Conflicts, ConstraintSet, Exclusive, MembershipEstimate, Patterns, Together,
                              estimate_membership)
    from .errors import (GCEError, InfeasibleConstraintsError, InvalidParameterError, InvalidScenarioError,
                         NumericalLimitError, UnsupportedCombinationError)
    from .files.scenario import load_scenario
    from .hypotheses import Explicit, Point, Rates, Uniform
    from .ledger import Accountant, LedgerError
    from .model import Databases, Invocation, InvocationGroup, Scenario
    from .report import Report
    from .solving import solve
    from .training import NoiseCalibration, calibrate_noise
del TYPE_CHECKING


def __getattr__(name: str) -> object:
    """A public name (or a submodule) on first use: imported from its module, then kept in this namespace."""
    module = _MODULE_OF.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f".{module}", __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module 'gce' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "Accountant",
    "ApproxDP",
    "Composition",
    "GCEError",
    "GaussianDP",
    "GaussianMechanism",
    "GceAccountant",
    "Guarantee",
    "InfeasibleConstraintsError",
    "InvalidParameterError",
    "InvalidScenarioError",
    "LaplaceMechanism",
    "LedgerError",
    "NumericalLimitError",
    "PrivacyCurve",
    "PureDP",
    "RandomizedResponse",
    "Subsampled",
    "THEOREMS",
    "UnsupportedCombinationError",
    "ZCDP",
    "compose",
    "AtMost",
    "Calibration",
    "Conflicts",
    "ConstraintSet",
    "Databases",
    "Exclusive",
    "Explicit",
    "Invocation",
    "InvocationGroup",
    "MembershipEstimate",
    "NoiseCalibration",
    "Patterns",
    "Point",
    "Rates",
    "Report",
    "Scenario",
    "Together",
    "Uniform",
    "calibrate",
    "calibrate_noise",
    "estimate_membership",
    "from_dp_event",
    "load_scenario",
    "solve",
]

if os.environ.get("EAGER_IMPORT", "") not in ("", "0"):  # pragma: no cover - every name now, as before
    for _name in __all__:
        __getattr__(_name)

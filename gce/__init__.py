"""gce: differential-privacy guarantees under the generalized composition experiment.

The generalized composition experiment (001, Alg. 2) lets public facts limit which
databases one person can be in; ``gce`` turns per-invocation guarantees and those
facts into a hypothesis-DP guarantee (001, Def. 3). This package level exposes what
a script or notebook needs: guarantees, constraints, hypotheses, scenarios,
``solve``, ``calibrate``, the composition selector and the online ``Accountant``; dp-accounting's
events in (``from_dp_event``, ``GceAccountant``).

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

from .accounting.curves import PrivacyCurve
from .errors import (
    GCEError,
    InfeasibleConstraintsError,
    InvalidParameterError,
    InvalidScenarioError,
    NumericalLimitError,
    UnsupportedCombinationError,
)
from .accounting.guarantees import (
    ZCDP,
    ApproxDP,
    GaussianDP,
    GaussianMechanism,
    Guarantee,
    LaplaceMechanism,
    PureDP,
    RandomizedResponse,
    Subsampled,
)
from .accounting.theorems import THEOREMS, Composition, compose
from .constraints import (
    AtMost,
    Conflicts,
    ConstraintSet,
    Exclusive,
    MembershipEstimate,
    Patterns,
    Together,
    estimate_membership,
)
from .hypotheses import Explicit, Point, Rates, Uniform
from .model import Databases, Invocation, InvocationGroup, Scenario
from .report import Report
from .files.scenario import load_scenario
from .solving import solve
from .calibration import Calibration, calibrate
from .ledger import Accountant, LedgerError
from .bridges.dp_events import from_dp_event


def __getattr__(name: str) -> object:
    """``GceAccountant`` (:mod:`gce.bridges.accountant`) on first use: it subclasses dp-accounting's
    ``PrivacyAccountant``, and dp-accounting is slow to import."""
    if name == "GceAccountant":
        from .bridges.accountant import GceAccountant

        return GceAccountant
    raise AttributeError(f"module 'gce' has no attribute {name!r}")


__version__ = "0.1.0"

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
    "Patterns",
    "Point",
    "Rates",
    "Report",
    "Scenario",
    "Together",
    "Uniform",
    "calibrate",
    "estimate_membership",
    "from_dp_event",
    "load_scenario",
    "solve",
]

"""gce: differential-privacy guarantees under the generalized composition experiment.

The generalized composition experiment (001, Alg. 2) lets public facts limit which
databases one person can be in; ``gce`` turns per-invocation guarantees and those
facts into a hypothesis-DP guarantee (001, Def. 3). This package level exposes the
guarantee records, the composition selector and the privacy curves.

Examples
--------
>>> import gce
>>> c = gce.compose({gce.ApproxDP(0.05, 1e-10): 365})
>>> eps, theorem = c.epsilon(1e-6)
>>> round(eps, 3), theorem, c.exact
(4.62, 'kairouz-III.3', True)
"""

from .curves import PrivacyCurve
from .errors import (
    GCEError,
    InfeasibleConstraintsError,
    InvalidParameterError,
    InvalidScenarioError,
    NumericalLimitError,
    UnsupportedCombinationError,
)
from .guarantees import (
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
from .theorems import THEOREMS, Composition, compose
from .model import Databases, Invocation, Scenario
from .report import Report
from .scenario import load_scenario
from .solve import solve  # the function; the module stays importable as gce.solve via sys.modules

__version__ = "0.1.0"

__all__ = [
    "ApproxDP",
    "Composition",
    "GCEError",
    "GaussianDP",
    "GaussianMechanism",
    "Guarantee",
    "InfeasibleConstraintsError",
    "InvalidParameterError",
    "InvalidScenarioError",
    "LaplaceMechanism",
    "NumericalLimitError",
    "PrivacyCurve",
    "PureDP",
    "RandomizedResponse",
    "Subsampled",
    "THEOREMS",
    "UnsupportedCombinationError",
    "ZCDP",
    "compose",
    "Databases",
    "Invocation",
    "Report",
    "Scenario",
    "load_scenario",
    "solve",
]

"""The finite distribution over membership sets, importable from here as before; it lives in
:mod:`gce.distributions`, beside the hypothesis records (:mod:`gce.hypotheses`) that become one.

This module only re-exports: ``gce.priors.distributions.Distribution`` is
:class:`gce.distributions.Distribution`.
"""

from ..distributions import WEIGHT_TOLERANCE, Distribution

__all__ = ["Distribution", "WEIGHT_TOLERANCE"]

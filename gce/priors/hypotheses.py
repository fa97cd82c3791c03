"""The hypothesis records, importable from here as before; they live in :mod:`gce.hypotheses`.

The records (:class:`Point`, :class:`Uniform`, :class:`Explicit`, :class:`Rates`) describe a prior and
sit below the model, which holds them; this package holds the engines that read them (exact, coupling,
allocation, routes), above the model and the solvers. This module only re-exports, so that a name
imported from ``gce.priors.hypotheses`` is the very object of :mod:`gce.hypotheses`.
"""

from ..hypotheses import (
    SUPPORT_LIMIT,
    Distribution,
    Explicit,
    Hypothesis,
    Point,
    Rates,
    SupportCover,
    Uniform,
    check_distribution,
    check_listed,
    format_log_count,
)

__all__ = [
    "Distribution",
    "Hypothesis",
    "Point",
    "Uniform",
    "Explicit",
    "Rates",
    "SupportCover",
    "SUPPORT_LIMIT",
    "check_distribution",
    "check_listed",
]

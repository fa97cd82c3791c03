"""The one adapter to Google's dp-accounting package: every use of it in gce goes through here.

dp-accounting is imported lazily (it is slow to import and most answers never
need it). Two kinds of use:

* its public API (``privacy_loss_distribution``, ``common``): the PLD builders,
  composition and ``get_delta_for_epsilon``;
* a fast path that reads a PLD's private dense pmfs (``_pmf_remove``,
  ``_pmf_add``, ``_probs``, ``_lower_loss``, ``_discretization``,
  ``_infinity_mass``) to evaluate it by cumulative sums. Private layouts change
  between versions, so the fast path is taken only on a version listed in
  :data:`TESTED_VERSIONS` (``tests/test_dp_accounting_adapter.py`` checks it
  against the public API at many points); on any other version gce warns once
  (:class:`UntestedVersionWarning`) and uses the public API alone.

pyproject.toml pins ``dp-accounting>=0.4,<0.7``.
"""

from __future__ import annotations

import functools
import importlib.metadata
import warnings
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:  # pragma: no cover
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution  # noqa: F401

__all__ = [
    "TESTED_VERSIONS",
    "UntestedVersionWarning",
    "installed_version",
    "fast_path",
    "privacy_loss_distribution",
    "common",
    "DensePMF",
    "dense_pmfs",
]

#: Versions whose private PLD layout the fast path has been tested against.
TESTED_VERSIONS = ("0.6.0",)
#: The distribution name of the package.
DISTRIBUTION = "dp-accounting"


class UntestedVersionWarning(UserWarning):
    """The installed dp-accounting is not one of :data:`TESTED_VERSIONS`: gce uses its public API only."""


def installed_version() -> str | None:
    """The installed dp-accounting version, or None when it is not installed."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None


def _check(version: str | None) -> bool:
    """Whether the fast path may read ``version``'s private layout; warns when it may not."""
    if version in TESTED_VERSIONS:
        return True
    warnings.warn(
        f"dp-accounting {version} is not among the versions gce was tested with "
        f"({', '.join(TESTED_VERSIONS)}); privacy-loss distributions are evaluated through its public API only "
        "(slower, same bounds)", UntestedVersionWarning, stacklevel=3)
    return False


@functools.cache
def fast_path() -> bool:
    """Whether the private dense pmfs may be read (the installed version is tested); warns once if not."""
    return _check(installed_version())


def privacy_loss_distribution() -> ModuleType:
    """``dp_accounting.pld.privacy_loss_distribution`` (the PLD builders), imported on first use."""
    fast_path()  # the version check, once
    from dp_accounting.pld import privacy_loss_distribution as module

    return module


def common() -> ModuleType:
    """``dp_accounting.pld.common`` (``DifferentialPrivacyParameters``), imported on first use."""
    fast_path()
    from dp_accounting.pld import common as module

    return module


class DensePMF(NamedTuple):
    """One direction of a PLD as arrays: P(loss = (lower + i) * discretization) = probs[i]."""

    probs: NDArray[np.float64]
    lower: int
    discretization: float
    infinity_mass: float

    def losses(self) -> NDArray[np.float64]:
        return (np.arange(self.probs.size) + self.lower) * self.discretization


def dense_pmfs(distribution: Any) -> list[DensePMF] | None:
    """Each direction of a dp-accounting PLD ("remove", then "add" when it differs) as a
    :class:`DensePMF`; None when the fast path is off or the layout is not the expected one
    (the caller then uses the public API)."""
    if not fast_path():
        return None
    try:
        pmfs = [getattr(distribution, name, None) for name in ("_pmf_remove", "_pmf_add")]
        if pmfs[0] is None:
            return None
        out = []
        for pmf in pmfs:
            if pmf is None:
                continue
            dense = pmf.to_dense_pmf()
            out.append(DensePMF(np.asarray(dense._probs, dtype=float), int(dense._lower_loss),
                                float(dense._discretization), float(dense._infinity_mass)))
        return out
    except AttributeError:
        return None

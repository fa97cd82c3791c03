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
    "privacy_accountant",
    "DensePMF",
    "dense_pmfs",
    "vectorised_gaussian",
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


def privacy_accountant() -> ModuleType:
    """``dp_accounting.privacy_accountant`` (``PrivacyAccountant``, ``NeighboringRelation``), imported on
    first use: the base class of :class:`gce.bridges.accountant.GceAccountant`."""
    fast_path()
    from dp_accounting import privacy_accountant as module

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


# ---------------------------------------------------------------------------
# Vectorised hockey-stick divergences for Gaussian noise (the builders' inner loop)


def _gaussian_inverse_privacy_loss(loss: Any, epsilons: NDArray[np.float64]) -> NDArray[np.float64]:
    """``GaussianPrivacyLoss.inverse_privacy_loss`` at every epsilon at once: the same formulas as
    dp-accounting 0.6.0's scalar code (``privacy_loss_mechanism.py``: ``_inverse_privacy_loss_remove``
    and ``_add``, ``common.log_a_times_exp_b_plus_c``), for the epsilons its ``get_delta_for_epsilon``
    passes (strictly inside the range where the inverse exists)."""
    from dp_accounting.pld.privacy_loss_mechanism import AdjacencyType

    s, var, q = loss.sensitivity, loss._standard_deviation ** 2, loss.sampling_prob
    remove = loss.adjacency_type == AdjacencyType.REMOVE
    if q == 1.0:
        without = epsilons
    else:
        b = epsilons if remove else -epsilons
        d = b + np.log(1.0 / q)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            # log(a e^b + c) with a = 1/q > 0, c = 1 - 1/q < 0: _log_sub(d, log(-c)); log(a + c) = 0 at b = 0
            logged = np.where(b == 0.0, 0.0, d + np.log1p(-np.exp(np.log(-(1.0 - 1.0 / q)) - d)))
        without = logged if remove else -logged
        threshold = np.log1p(-q) if remove else -np.log1p(-q)
        close = np.isclose(epsilons, threshold, rtol=1e-9, atol=0.0)  # math.isclose's default tolerance
        without = np.where(close, -np.inf if remove else np.inf, without)
    x = -0.5 * s - without * var / s  # _inverse_privacy_loss_without_subsampling_remove
    return x if remove else s + x


def _gaussian_delta_for_epsilon(self: Any, epsilon: Any) -> Any:
    """``AdditiveNoisePrivacyLoss.get_delta_for_epsilon`` of dp-accounting 0.6.0 with the inverse
    privacy losses computed at once (:func:`_gaussian_inverse_privacy_loss`) instead of one Python call
    per epsilon (the builders ask for one per grid point: 99% of a subsampled Gaussian's build)."""
    import math
    import numbers

    from dp_accounting.pld.privacy_loss_mechanism import AdjacencyType

    is_scalar = isinstance(epsilon, numbers.Number)
    epsilons = np.array([epsilon]) if is_scalar else np.asarray(epsilon)
    deltas = np.zeros_like(epsilons, dtype=float)
    if self.sampling_prob == 1.0 or self.adjacency_type == AdjacencyType.REPLACE:
        if self.adjacency_type == AdjacencyType.REPLACE:
            return _ORIGINAL_DELTA[0](self, epsilon)
        inverse_indices = np.full_like(epsilons, True, dtype=bool)
    elif self.adjacency_type == AdjacencyType.ADD:
        inverse_indices = epsilons < -math.log1p(-self.sampling_prob)
    elif self.adjacency_type == AdjacencyType.REMOVE:
        inverse_indices = epsilons > math.log1p(-self.sampling_prob)
        other_indices = np.logical_not(inverse_indices)
        deltas[other_indices] = -np.expm1(epsilons[other_indices])
    else:
        return _ORIGINAL_DELTA[0](self, epsilon)
    x_cutoffs = _gaussian_inverse_privacy_loss(self, np.asarray(epsilons[inverse_indices], dtype=float))
    deltas[inverse_indices] = (self.mu_upper_cdf(x_cutoffs)
                               - np.exp(epsilons[inverse_indices] + self.mu_lower_log_cdf(x_cutoffs)))
    deltas = np.clip(deltas, 0, 1)
    return float(deltas[0]) if is_scalar else deltas


_ORIGINAL_DELTA: list = []


class vectorised_gaussian:
    """Context: dp-accounting's Gaussian builders evaluate their hockey-stick divergences vectorised
    (:func:`_gaussian_delta_for_epsilon`; the same numbers to a few ulps, 50 times faster). Only on a
    version in :data:`TESTED_VERSIONS` (the private code it mirrors); elsewhere it changes nothing.
    ``tests/test_dp_accounting_adapter.py`` compares the distributions built with and without it."""

    def __enter__(self) -> "vectorised_gaussian":
        self._patched = False
        if fast_path():
            from dp_accounting.pld.privacy_loss_mechanism import GaussianPrivacyLoss

            if not _ORIGINAL_DELTA:
                _ORIGINAL_DELTA.append(GaussianPrivacyLoss.get_delta_for_epsilon)
            GaussianPrivacyLoss.get_delta_for_epsilon = _gaussian_delta_for_epsilon
            self._patched = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self._patched:
            from dp_accounting.pld.privacy_loss_mechanism import GaussianPrivacyLoss

            GaussianPrivacyLoss.get_delta_for_epsilon = _ORIGINAL_DELTA[0]

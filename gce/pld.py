"""Privacy-loss distributions through Google's dp-accounting, rounded pessimistically.

dp-accounting discretises each mechanism's privacy loss on a grid, rounding
loss values *up* (``pessimistic_estimate=True``) and sending truncated tail mass
to +inf (``pld/pld_pmf.py``), so the composed distribution's hockey-stick
divergence is an upper bound on the true one (Koskela et al. 2020; Doroshenko
et al. 2022, "Connect the dots"). It is the route for concrete mechanisms
(Gaussian, Laplace, subsampled) and for heterogeneous lists too large to
enumerate exactly.

dp-accounting is imported lazily: it is slow to import and most answers never
need it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from .curves import DiscreteLossCurve, PrivacyCurve
from .guarantees import (
    ApproxDP,
    GaussianDP,
    GaussianMechanism,
    Guarantee,
    LaplaceMechanism,
    PureDP,
    RandomizedResponse,
    Subsampled,
    amplified,
    epsilon_delta,
)

if TYPE_CHECKING:  # pragma: no cover
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

__all__ = ["supports", "guarantee_pld", "compose_pld", "infinite_mass", "one_directional", "PLDCurve", "DISCRETIZATION"]

#: Grid width of the privacy-loss discretisation (dp-accounting's default).
DISCRETIZATION = 1e-4
#: Mass dropped from each composition's tails; dp-accounting moves it to +inf (pessimistic).
TAIL_MASS_TRUNCATION = 1e-15


def supports(guarantee: Guarantee) -> bool:
    """Whether a guarantee has a privacy-loss distribution here (every kind but zCDP)."""
    if isinstance(guarantee, Subsampled):
        return supports(guarantee.mechanism)
    return isinstance(
        guarantee, (PureDP, ApproxDP, RandomizedResponse, GaussianDP, GaussianMechanism, LaplaceMechanism)
    )


def guarantee_pld(guarantee: Guarantee, interval: float = DISCRETIZATION) -> "PrivacyLossDistribution":
    """A pessimistic PLD dominating every mechanism with ``guarantee``.

    (epsilon, delta) guarantees use the canonical pair (002 eqs. 9-10, which is
    what ``from_privacy_parameters`` builds); concrete mechanisms their own
    distributions; Poisson subsampling dp-accounting's ``sampling_prob`` for
    Gaussian and Laplace noise, and amplification (Balle et al. 2018, Thm. 8)
    for (epsilon, delta) guarantees.
    """
    from dp_accounting.pld import common, privacy_loss_distribution as pld

    rate = 1.0
    inner = guarantee
    if isinstance(guarantee, Subsampled):
        rate, inner = guarantee.rate, guarantee.mechanism
    if isinstance(inner, GaussianDP):
        inner = GaussianMechanism(sigma=1.0 / inner.mu) if inner.mu > 0 else PureDP(0.0)
    if isinstance(inner, GaussianMechanism) and inner.sensitivity > 0:
        return pld.from_gaussian_mechanism(
            inner.sigma, sensitivity=inner.sensitivity, pessimistic_estimate=True,
            value_discretization_interval=interval, sampling_prob=rate,
        )
    if isinstance(inner, LaplaceMechanism) and inner.sensitivity > 0:
        return pld.from_laplace_mechanism(
            inner.scale, sensitivity=inner.sensitivity, pessimistic_estimate=True,
            value_discretization_interval=interval, sampling_prob=rate,
        )
    point = epsilon_delta(inner) if not isinstance(inner, GaussianMechanism) else (0.0, 0.0)
    if point is None:
        raise TypeError(f"no privacy-loss distribution for {guarantee!r}")
    eps, delta = amplified(*point, rate) if rate < 1.0 else point
    if eps == 0.0 and delta == 0.0:
        return pld.identity(value_discretization_interval=interval)
    return pld.from_privacy_parameters(
        common.DifferentialPrivacyParameters(eps, delta), value_discretization_interval=interval
    )


def compose_pld(items: Sequence[tuple[Guarantee, int]], interval: float = DISCRETIZATION) -> "PrivacyLossDistribution":
    """The pessimistic PLD of the composition of ``count`` copies of each guarantee."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    total = None
    for guarantee, count in items:
        if count == 0:
            continue
        one = guarantee_pld(guarantee, interval)
        part = one.self_compose(count, tail_mass_truncation=TAIL_MASS_TRUNCATION) if count > 1 else one
        total = part if total is None else total.compose(part, tail_mass_truncation=TAIL_MASS_TRUNCATION)
    return total if total is not None else pld.identity(value_discretization_interval=interval)


class PLDCurve(PrivacyCurve):
    """The privacy curve of a dp-accounting PLD (both directions when it has two),
    made safe against floating-point error.

    dp-accounting's numbers carry two kinds of round-off, both of which can put
    its curve *below* the exact one (seen in tests: 10,000 copies of
    (0.05, 1e-10), where its delta at eps = 50 lies under its own infinite mass):

    * the mass at infinite loss is formed from ``1 - delta`` in floating point,
      which loses about six digits for delta = 1e-10;
    * FFT convolution leaves entries of absolute size ~1e-17 of either sign.

    So the curve returned here is ``max(raw, exact infinite mass) * (1 + ROUND_OFF)
    + ABSOLUTE_ROUND_OFF``, with the infinite mass computed exactly by the
    caller (log1p/expm1).
    """

    #: Relative allowance for floating-point error in dp-accounting's sums.
    ROUND_OFF = 1e-9
    #: Absolute allowance for FFT round-off in the composed distribution.
    ABSOLUTE_ROUND_OFF = 1e-12

    def __init__(self, distribution: "PrivacyLossDistribution", infinite_mass: float = 0.0):
        self.distribution = distribution
        self._directions = _loss_curves(distribution)
        self._floor = max(float(distribution.get_delta_for_epsilon(1e6)), float(infinite_mass))
        self.delta_floor = self._safe(np.array([self._floor]))[0]

    def _safe(self, raw: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.maximum(raw, self._floor) * (1.0 + self.ROUND_OFF) + self.ABSOLUTE_ROUND_OFF

    def _delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        if self._directions is not None:  # the same sums, by cumulative sums instead of a Python loop
            raw = np.max([curve.delta(eps) for curve in self._directions], axis=0)
            return self._safe(np.atleast_1d(raw))
        # dp-accounting wants increasing epsilons: evaluate sorted, then put back in the caller's order.
        order = np.argsort(eps, kind="stable")
        raw = np.atleast_1d(np.asarray(self.distribution.get_delta_for_epsilon(eps[order]), dtype=float))
        out = np.empty_like(raw)
        out[order] = raw
        return self._safe(out)

    def _epsilon(self, d: NDArray[np.float64]) -> NDArray[np.float64]:
        out = np.empty_like(d)
        for i, t in enumerate(d):
            if t >= 1.0:
                out[i] = 0.0
            elif t < self.delta_floor:
                out[i] = math.inf
            else:
                raw_target = (t - self.ABSOLUTE_ROUND_OFF) / (1.0 + self.ROUND_OFF)
                out[i] = max(float(self.distribution.get_epsilon_for_delta(raw_target)), 0.0)
        return out


def _loss_curves(distribution: "PrivacyLossDistribution") -> list[DiscreteLossCurve] | None:
    """Each direction of a dp-accounting PLD as a :class:`~gce.curves.DiscreteLossCurve`.

    dp-accounting evaluates delta(eps) = P(inf) + sum_{L > eps} P(L)(1 - e^{eps - L})
    with a Python loop over its (tens of thousands of) loss values; the same
    discrete distribution as a DiscreteLossCurve is evaluated by cumulative
    sums. Reads the PLD's dense pmfs (``_pmf_remove``, ``_pmf_add``); None, and
    dp-accounting's own evaluation, when a version lays them out differently.
    """
    curves = []
    for name in ("_pmf_remove", "_pmf_add"):
        pmf = getattr(distribution, name, None)
        if pmf is None:
            continue
        try:
            dense = pmf.to_dense_pmf()
            probs = np.asarray(dense._probs, dtype=float)
            loss = (np.arange(probs.size) + dense._lower_loss) * dense._discretization
            infinity = float(dense._infinity_mass)
        except AttributeError:
            return None
        positive = probs > 0.0
        curves.append(DiscreteLossCurve(loss[positive], np.log(probs[positive]), infinity))
    return curves or None


def one_directional(guarantee: Guarantee) -> bool:
    """Whether compose() may bound this guarantee with a curve that differs between directions.

    Poisson-subsampled Gaussian and Laplace noise go through dp-accounting's
    privacy-loss distributions with separate "remove" and "add" directions,
    and a composition of them covers all-remove or all-add runs, not a run that
    adds the record to some databases and removes it from others (a bounded
    pair). Every other kind is bounded by a symmetric pair (canonical,
    Gaussian) or a symmetric divergence bound (zCDP).
    """
    return isinstance(guarantee, Subsampled) and isinstance(
        guarantee.mechanism, (GaussianMechanism, LaplaceMechanism, GaussianDP))


def infinite_mass(items: Sequence[tuple[Guarantee, int]]) -> float:
    """1 - prod (1 - delta_i)^n_i over the guarantees' (epsilon, delta) points, computed exactly."""
    log_survival = 0.0
    for guarantee, count in items:
        point = epsilon_delta(guarantee)
        if point is not None and point[1] > 0:
            log_survival += count * math.log1p(-point[1])
    return -math.expm1(log_survival)

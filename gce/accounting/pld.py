"""Privacy-loss distributions through Google's dp-accounting, rounded pessimistically.

dp-accounting discretises each mechanism's privacy loss on a grid, rounding
loss values *up* (``pessimistic_estimate=True``) and sending truncated tail mass
to +inf (``pld/pld_pmf.py``), so the composed distribution's hockey-stick
divergence is an upper bound on the true one (Koskela et al. 2020; Doroshenko
et al. 2022, "Connect the dots"). It is the route for concrete mechanisms
(Gaussian, Laplace, subsampled) and for heterogeneous lists too large to
enumerate exactly.

dp-accounting is reached through :mod:`gce.accounting.dp_accounting` only (imported
lazily: it is slow to import and most answers never need it); what each
guarantee kind's distribution is built from is its row in
:mod:`gce.accounting.kinds` (:func:`~gce.accounting.kinds.pld_source`).
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray
from scipy import special

from . import dp_accounting as _dpa
from . import kinds
from .curves import DiscreteLossCurve, PrivacyCurve, at_or_above
from ..errors import NumericalLimitError, UnsupportedCombinationError
from .guarantees import Guarantee
from ..validation import shown

if TYPE_CHECKING:  # pragma: no cover
    from .dp_accounting import PrivacyLossDistribution

__all__ = ["supports", "within_grid", "GRID_LIMIT", "guarantee_pld", "compose_pld", "infinite_mass", "one_directional", "PLDCurve", "DISCRETIZATION",
           "build_seconds", "clear_caches"]

#: Grid width of the privacy-loss discretisation (dp-accounting's default).
DISCRETIZATION = 1e-4
#: Mass dropped from each composition's tails; dp-accounting moves it to +inf (pessimistic).
TAIL_MASS_TRUNCATION = 1e-15


#: Largest number of grid points (loss range / DISCRETIZATION) a composition may need: about 130 MB
#: per dense array. Beyond it the PLD route declines and closed forms answer (valid, looser).
GRID_LIMIT = 2**24
#: (kind, noise, sensitivity, rate) when dp-accounting builds the PLD from the mechanism itself, None when
#: from a canonical pair: the one decision :func:`_guarantee_pld` acts on and the grid estimate relies on.
_noise = kinds.pld_noise


def _half_width(guarantee: Guarantee) -> float:
    """A bound on the largest |privacy loss| one guarantee's PLD holds before truncation.

    (epsilon, delta) pairs and Laplace noise have losses in [-eps, eps];
    mu-Gaussian losses are N(mu^2 / 2, mu^2), which dp-accounting truncates a
    few standard deviations out. Subsampling only shrinks the loss, so the
    inner mechanism's width bounds it.
    """
    noise = _noise(guarantee)
    if noise is not None:
        kind, scale, sensitivity, _ = noise
        mu = sensitivity / scale
        return mu * mu / 2.0 + 10.0 * mu if kind == "gaussian" else mu
    point = kinds.point(kinds.sampling(guarantee)[1])
    return 0.0 if point is None else point[0]  # None: mu or sensitivity 0, the identity


#: The Chernoff orders of dp-accounting's truncation, in units of 1 / len (``common.py``).
_CHERNOFF_ORDERS = np.concatenate((np.arange(-20, 0), np.arange(1, 21))).astype(float)


def _self_convolve_width(index: NDArray[np.float64], probs: NDArray[np.float64], length: int, count: int) -> float:
    """Width of the range dp-accounting keeps when it self-composes a pmf ``count`` times.

    The same Chernoff bound as ``common.compute_self_convolve_bounds`` (orders
    j / len, j = +-1..20, tail mass ``TAIL_MASS_TRUNCATION``), evaluated on the
    pmf's non-zero entries only (two atoms for a canonical pair). The orders
    are fixed, so for large counts the width grows linearly in the count.
    """
    orders = _CHERNOFF_ORDERS / length
    log_mgf = special.logsumexp(orders[:, None] * index[None, :], b=probs[None, :], axis=1)
    with np.errstate(over="ignore", invalid="ignore"):
        bounds = (count * log_mgf + math.log(2.0 / TAIL_MASS_TRUNCATION)) / orders
    upper = min([(length - 1) * count] + [math.ceil(x) for x in bounds[orders > 0] if math.isfinite(x)])
    lower = max([0] + [math.floor(x) for x in bounds[orders < 0] if math.isfinite(x)])
    return float(upper - lower + 1)


@functools.lru_cache(maxsize=256)
def _composed_points(guarantee: Guarantee, count: int, interval: float) -> float:
    """Grid points of the PLD of ``count`` copies of ``guarantee``, as dp-accounting will size it.

    A canonical (epsilon, delta) pair has two atoms, at the ends of its range,
    so the bound is computed from them directly; concrete mechanisms from their
    (cached) dense pmfs, per direction.
    """
    width = 2.0 * _half_width(guarantee) / interval + 1.0
    if width > (MECHANISM_GRID_LIMIT if _noise(guarantee) is not None else GRID_LIMIT):
        return math.inf
    if count == 1:
        try:
            guarantee_pld(guarantee, interval)  # cached for the composition that follows
        except NumericalLimitError:
            return math.inf
        return width
    if _noise(guarantee) is None:
        point = kinds.point(guarantee)
        if point is None:  # mu = 0 or sensitivity 0: the identity PLD, one point
            return 1.0
        eps, delta = point
        length = 2 * math.ceil(eps / interval) + 1
        p_low = (1.0 - delta) / (1.0 + math.exp(eps))
        atoms = (np.array([0.0, length - 1.0]), np.array([p_low, 1.0 - delta - p_low]))
        return _self_convolve_width(*atoms, length, count)
    try:
        pmfs = _dpa.dense_pmfs(guarantee_pld(guarantee, interval))
    except NumericalLimitError:  # dp-accounting cannot build it: the route declines
        return math.inf
    if pmfs is None:  # another layout: the untruncated range, linear in the count
        return count * width
    points = 0.0
    for dense in pmfs:
        probs = dense.probs
        nonzero = np.flatnonzero(probs > 0.0)
        points = max(points, _self_convolve_width(nonzero.astype(float), probs[nonzero], probs.size, count))
    return points


def within_grid(items: Sequence[tuple[Guarantee, int]], interval: float = DISCRETIZATION) -> bool:
    """Whether every guarantee has a PLD here and the composition fits in :data:`GRID_LIMIT` points.

    Composition by dp-accounting convolves the parts, so their grid sizes add.
    """
    if not all(supports(g) for g, _ in items):
        return False
    total = 0.0
    for guarantee, count in items:
        total += _composed_points(guarantee, int(count), interval)
        if total > GRID_LIMIT:
            return False
    return True


def supports(guarantee: Guarantee) -> bool:
    """Whether a guarantee has a privacy-loss distribution here (every kind but zCDP, and but a
    subsampled noise mechanism subsampled again): the same decision :func:`_guarantee_pld` builds from."""
    return kinds.pld_source(guarantee) is not None


#: Largest grid (points) of one concrete mechanism's PLD: dp-accounting builds Laplace and
#: Gaussian PLDs point by point, about a minute for 10^7 points.
MECHANISM_GRID_LIMIT = 2**21
#: What dp-accounting raises or warns when its parameters leave its numerical range.
_DP_ACCOUNTING_FAILURES = (ArithmeticError, ValueError, IndexError, RuntimeWarning)


def _guarded(build):
    """Run a dp-accounting computation; its numerical failures and warnings become NumericalLimitError."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            with np.errstate(over="raise", invalid="raise", divide="raise"), _dpa.vectorised_gaussian():
                return build()
        except _DP_ACCOUNTING_FAILURES as error:
            raise NumericalLimitError(
                f"dp-accounting cannot build this privacy-loss distribution ({type(error).__name__}: {error})"
            ) from None


def guarantee_pld(guarantee: Guarantee, interval: float = DISCRETIZATION) -> "PrivacyLossDistribution":
    """A pessimistic PLD dominating every mechanism with ``guarantee`` (see :func:`_guarantee_pld`),
    built once per (guarantee, interval) however it is called.

    Raises
    ------
    NumericalLimitError
        dp-accounting fails or warns for these parameters (a sigma near 1e308, a
        delta within 1e-12 of 1, ...).
    """
    return _cached_pld(guarantee, float(interval))


@functools.lru_cache(maxsize=256)
def _cached_pld(guarantee: Guarantee, interval: float) -> "PrivacyLossDistribution":
    _BUILT.add((guarantee, interval))
    return _guarded(lambda: _guarantee_pld(guarantee, interval))


#: (guarantee, interval) of the distributions :func:`guarantee_pld` has built (or tried to): a cost estimate
#: (:func:`build_seconds`) counts the others only. Cleared with the caches (:func:`clear_caches`).
_BUILT: set = set()
#: Seconds dp-accounting takes per grid point of :func:`_half_width`'s range (both directions), measured on
#: 2 shared cores: it builds a noise mechanism's distribution point by point in Python (Laplace noise,
#: and every optimistic build); Gaussian noise's pessimistic build with the hockey-stick divergences
#: vectorised (:class:`~gce.accounting.dp_accounting.vectorised_gaussian`).
SECONDS_PER_POINT = 3e-6
GAUSSIAN_SECONDS_PER_POINT = 6e-7
#: Seconds per grid point of an optimistic build (the lower curves' pmfs, privacy buckets without connecting
#: the dots), measured on 2 shared cores: 1 to 3 s for a subsampled Gaussian on the default interval.
OPTIMISTIC_SECONDS_PER_POINT = 8e-6


def build_seconds(guarantee: Guarantee, interval: float = DISCRETIZATION, pessimistic: bool = True,
                  fresh: bool = False) -> float:
    """An estimate of the seconds dp-accounting takes to build the distribution of a noise mechanism
    at ``interval``; 0 when it is built already (unless ``fresh``: the cost in a new process, which
    decisions that shape an answer read, so that the answer does not depend on what was computed
    before) or comes from a canonical pair (two atoms)."""
    noise = _noise(guarantee)
    if noise is None or (pessimistic and not fresh and (guarantee, float(interval)) in _BUILT):
        return 0.0
    fast = pessimistic and noise[0] == "gaussian" and _dpa.fast_path()
    per_point = GAUSSIAN_SECONDS_PER_POINT if fast else SECONDS_PER_POINT if pessimistic else OPTIMISTIC_SECONDS_PER_POINT
    return per_point * 2.0 * _half_width(guarantee) / interval


def clear_caches() -> None:
    """Forget every built distribution (benchmarks: each run as a fresh process would)."""
    _cached_pld.cache_clear()
    _composed_points.cache_clear()
    _BUILT.clear()


def _guarantee_pld(guarantee: Guarantee, interval: float) -> "PrivacyLossDistribution":
    """A pessimistic PLD dominating every mechanism with ``guarantee``.

    (epsilon, delta) guarantees use the canonical pair (002 eqs. 9-10, which is
    what ``from_privacy_parameters`` builds); concrete mechanisms their own
    distributions; Poisson subsampling dp-accounting's ``sampling_prob`` for
    Gaussian and Laplace noise, and amplification (Balle et al. 2018, Thm. 8)
    for (epsilon, delta) guarantees.
    """
    pld = _dpa.privacy_loss_distribution()
    source = kinds.pld_source(guarantee)
    if source is None:
        raise UnsupportedCombinationError(f"no privacy-loss distribution for {shown(guarantee)}")
    if source.kind != "point":
        scale, sensitivity, rate = source.parameters
        build = pld.from_gaussian_mechanism if source.kind == "gaussian" else pld.from_laplace_mechanism
        return build(scale, sensitivity=sensitivity, pessimistic_estimate=True,
                     value_discretization_interval=interval, sampling_prob=rate)
    eps, delta = source.parameters
    if eps == 0.0 and delta == 0.0:
        return pld.identity(value_discretization_interval=interval)
    return pld.from_privacy_parameters(
        _dpa.common().DifferentialPrivacyParameters(eps, delta), value_discretization_interval=interval
    )


def compose_pld(items: Sequence[tuple[Guarantee, int]], interval: float = DISCRETIZATION) -> "PrivacyLossDistribution":
    """The pessimistic PLD of the composition of ``count`` copies of each guarantee.

    Raises
    ------
    NumericalLimitError
        The composition spans more than :data:`GRID_LIMIT` grid points (an epsilon of
        thousands, a sigma near 0, or billions of invocations): no dense PLD is built.
    """
    pld = _dpa.privacy_loss_distribution()

    if not within_grid(items, interval):
        raise NumericalLimitError(
            f"a privacy-loss distribution of this composition would span more than {GRID_LIMIT} grid points "
            "(an epsilon of thousands, a sigma near 0, or billions of invocations); use a closed-form theorem")

    total = None
    for guarantee, count in items:
        if count == 0:
            continue
        if kinds.point(guarantee) == (0.0, 0.0):
            continue  # the identity: composing it changes nothing
        one = guarantee_pld(guarantee, interval)
        part = _guarded(lambda: one.self_compose(count, tail_mass_truncation=TAIL_MASS_TRUNCATION)) \
            if count > 1 else one
        total = part if total is None else _guarded(
            lambda: total.compose(part, tail_mass_truncation=TAIL_MASS_TRUNCATION))
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
        """Inverts :meth:`_delta` itself (the same evaluator), and checks the answer against it:
        a candidate whose delta exceeds the target is replaced by the generic safe bisection."""
        out = np.empty_like(d)
        for i, t in enumerate(d):
            if t >= 1.0:
                out[i] = 0.0
            elif not at_or_above(t, self.delta_floor):
                out[i] = math.inf
            else:
                raw_target = max((t - self.ABSOLUTE_ROUND_OFF) / (1.0 + self.ROUND_OFF), 0.0)
                if self._directions is not None:
                    eps = max(float(c.epsilon(raw_target)) for c in self._directions)
                else:
                    eps = max(float(self.distribution.get_epsilon_for_delta(raw_target)), 0.0)
                if not (math.isfinite(eps) and self._delta(np.array([eps]))[0] <= t):
                    eps = self._bisect(float(t))
                out[i] = eps
        return out


def _loss_curves(distribution: "PrivacyLossDistribution") -> list[DiscreteLossCurve] | None:
    """Each direction of a dp-accounting PLD as a :class:`~gce.accounting.curves.DiscreteLossCurve`.

    dp-accounting evaluates delta(eps) = P(inf) + sum_{L > eps} P(L)(1 - e^{eps - L})
    with a Python loop over its (tens of thousands of) loss values; the same
    discrete distribution as a DiscreteLossCurve is evaluated by cumulative
    sums. Reads the PLD's dense pmfs through the adapter
    (:func:`gce.accounting.dp_accounting.dense_pmfs`); None, and dp-accounting's
    own evaluation, when the adapter cannot.
    """
    pmfs = _dpa.dense_pmfs(distribution)
    if pmfs is None:
        return None
    curves = []
    for dense in pmfs:
        positive = dense.probs > 0.0
        curves.append(DiscreteLossCurve(dense.losses()[positive], np.log(dense.probs[positive]), dense.infinity_mass))
    return curves or None


#: Whether compose() may bound a guarantee with a curve that differs between directions
#: (Poisson-subsampled noise mechanisms; :func:`gce.accounting.kinds.one_directional`).
one_directional = kinds.one_directional


def infinite_mass(items: Sequence[tuple[Guarantee, int]]) -> float:
    """1 - prod (1 - delta_i)^n_i over the guarantees' (epsilon, delta) points, computed exactly."""
    log_survival = 0.0
    for guarantee, count in items:
        point = kinds.point(guarantee)
        if point is not None and point[1] > 0:
            log_survival += count * math.log1p(-point[1])
    return -math.expm1(log_survival)

"""Batch composition of privacy-loss distributions on one grid, with a certified bracket.

Every invocation's privacy-loss distribution (PLD) is put on one common loss
grid ``{i * h}`` and all of them are composed at once: the discrete Fourier
transform of the composition is the product of the transforms of the parts
(a closed form for the few-atom laws of canonical pairs, one real FFT for a
dense pmf), ``count`` copies are a power, and one inverse transform gives the
composed pmf. Two compositions are made, one that bounds the exact curve from
above (:class:`BatchCurve`, the curve a theorem returns) and one from below
(:attr:`BatchCurve.lower`), so every answer carries a certified bracket.

Where the laws come from
------------------------
* An (epsilon, delta) guarantee (pure, approximate, randomized response, and
  subsampled ones through their amplified point, BBG18 Thm. 8) is bounded by
  its canonical pair (002 Thm. II.5, eqs. 9-10): loss +eps with mass
  (1 - delta) e^eps / (1 + e^eps), -eps with mass (1 - delta) / (1 + e^eps),
  +inf with mass delta. Upper law: each atom at loss L in a grid cell
  [a, b] is *split* into a and b with masses p (1 - e^{a-L}) / (1 - e^{a-b})
  at b and the rest at a. The split keeps both the P- and the Q-mass of the
  outcome, so the original pair is the post-processing "merge a and b" of the
  split pair: the split pair dominates it (a refinement; Doroshenko et al.
  2022, "Connect the dots", for the same construction on the privacy curve),
  and its loss differs from the true one by O(h^2) on average, not O(h) as
  with rounding up (dp-accounting's ``from_privacy_parameters``). Lower law:
  every atom rounded *down* to the grid. Up to :data:`POINT_COPIES_EXACT`
  copies of one point are composed exactly first (a binomial law on
  ``(2k - n) eps``, the pair of 002 Thm. III.3) and its atoms split or rounded down
  once: the totals then meet the grid once per distinct point, not per copy.
* Laplace, Gaussian and subsampled Gaussian or Laplace noise: dp-accounting's
  dense pmfs at interval ``h`` (through :mod:`gce.accounting.dp_accounting`),
  its pessimistic estimate for the upper law and its optimistic one (privacy
  buckets, rounded down) for the lower law; both directions ("remove" and
  "add") where they differ, the curve being the larger of the two.

Soundness (proof sketch)
------------------------
delta(eps) = P(L = inf) + E[(1 - e^{eps - L})_+ ; L finite], and
f_eps(s) = (1 - e^{eps - s})_+ is non-decreasing in s with 0 <= f <= 1.
*Upper.* The composition of dominating pairs dominates the composition
(post-processing of a product is the product of post-processings), and
raising any loss raises E[f(S)] (a coupling with S' >= S). The cyclic
convolution of the FFT places the mass of a total S at S - jN for the j
that brings it into the window [lo, lo + N): mass below the window moves
*up* (f does not decrease), mass above it lands inside as extra mass and is
also charged at +inf through a Chernoff bound tau_hi >= P(S > lo + N - 1),
computed from the exact moment-generating function of the discretised
total (a product over the parts): so the computed curve is >= the true one.
*Lower.* Rounding down lowers E[f(S)], dropping mass lowers it (f >= 0); the
wrapped-around mass is at most tau_lo + tau_hi (Chernoff bounds on the
rounded-down total) and contributes at most that much (f <= 1), so it is
subtracted. Frequencies whose running product falls below :data:`PRUNE` are
left out (every later factor has modulus <= 1): at most ``PRUNE`` per pmf
entry, charged. Repeats are powers, ``exp(count * log F)`` with ``log F``
formed without cancellation (:func:`_log_spectrum`), so that a million copies
do not multiply the transform's rounding by a million. Floating-point error
of the transforms is covered by an allowance (:data:`ROUND_OFF`,
:data:`ABSOLUTE_ROUND_OFF` per sqrt(grid point), and the FFT part of powered
dense laws), as for :class:`~gce.accounting.pld.PLDCurve`: an estimate
checked in the tests against brute force and closed forms, not a proof.

The grid width ``h`` comes from the requested accuracy: upper and lower
totals differ by at most ``h`` per law that meets the grid
(:func:`point_splits`), so the epsilon bracket is at most ``K h`` wide (K
such laws), about ``K h / 2`` on
average; ``h = 2 rtol * scale / K`` asks for a relative width ``rtol``,
scale an estimate of epsilon (mean plus three standard deviations of the
total loss). Lists with concrete noise mechanisms use dp-accounting's
default interval (:data:`~gce.accounting.pld.DISCRETIZATION`), whose
pessimistic pmfs are cached and shared with the ``pld`` route.

References
----------
002: Kairouz, Oh, Viswanath, "The Composition Theorem for Differential Privacy".
BBG18: Balle, Barthe, Gaboardi, "Privacy Amplification by Subsampling".
Koskela, Jalko, Honkela 2020, "Computing tight differential privacy guarantees
using FFT"; Doroshenko, Ghazi, Kamath, Kumar, Manurangsi 2022, "Connect the
dots: tighter discrete approximations of privacy loss distributions".
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import fft as _fft
from scipy import special

from . import dp_accounting as _dpa
from . import kinds
from . import pld as _pld
from .curves import DiscreteLossCurve, PrivacyCurve, at_or_above
from ..errors import NumericalLimitError, UnsupportedCombinationError
from .guarantees import GaussianMechanism, Guarantee
from .. import effort
from ..validation import shown

__all__ = ["BatchCurve", "LowerCurve", "LawCurve", "batch_compose", "compose_laws", "loss_law", "plan", "log_mgf_bounds",
           "auxiliary", "auxiliary_compositions", "auxiliary_interval", "merge_gaussians", "closed_form",
           "aligned_interval", "noise_interval", "lower_at", "lower_seconds", "DEFAULT_RTOL", "TAIL", "GRID_LIMIT",
           "clear_caches"]

#: Default requested relative width of the epsilon bracket: the user's (:data:`gce.effort.DEFAULT_RTOL`).
DEFAULT_RTOL = effort.DEFAULT_RTOL
#: Tail mass above each Chernoff window (charged at +inf in the upper curve, subtracted in the lower).
TAIL = 2.0**-60
#: Tail mass below each window: it wraps *up* into the window (harmless above, subtracted below), so it
#: only costs tightness, at most this much delta.
TAIL_BELOW = 1e-15
#: Largest grid (points) of one composition: a complex spectrum of 2^21 entries, 32 MB.
GRID_LIMIT = 2**22
#: Finest and coarsest grid widths the accuracy may ask for.
FINEST, COARSEST = 1e-7, 0.5
#: Relative allowance for floating-point error (as PLDCurve's).
ROUND_OFF = 1e-9
#: Absolute allowance for FFT round-off, per square root of grid points.
ABSOLUTE_ROUND_OFF = 1e-16
#: Masses of dense pmfs below this are cut (module doc of :func:`_dense_law`).
TINY_MASS = 1e-250
#: Mass of a dense upper law's lowest atoms raised onto the next one (per copy: divided by the count).
CLAMP_MASS = 1e-18
#: Laws with at most this many atoms are transformed by their closed form, larger ones by an FFT.
_FEW_ATOMS = 8
#: Grid indices beyond this are refused (products with frequencies must stay in int64).
_INDEX_LIMIT = 2**52


@dataclass(frozen=True)
class _Law:
    """A sub-probability law on the grid: masses at integer indices, ``count`` copies, and the
    mass at +inf of one copy (exact, so that 1 - prod (1 - inf)^count can be formed in log space)."""

    index: NDArray[np.int64]
    mass: NDArray[np.float64]
    count: int
    infinite: float

    def log_mgf(self, t: NDArray[np.float64], h: float) -> NDArray[np.float64]:
        """log E[e^{t L}; L finite] of one copy at each t (L = index * h), exactly."""
        positive = self.mass > 0
        return log_mgf_of(self.index[positive] * h, self.mass[positive], t)


def log_mgf_of(x: NDArray[np.float64], mass: NDArray[np.float64], t: NDArray[np.float64]) -> NDArray[np.float64]:
    """``log sum_j mass_j e^{t x_j}`` at each ``t`` (masses positive), shifted by the largest exponent so that
    nothing overflows; -inf without mass."""
    if not x.size:
        return np.full(t.shape, -np.inf)
    shift = np.maximum(t * x.max(), t * x.min())
    with np.errstate(over="ignore", divide="ignore"):
        return np.log(np.exp(t[:, None] * x[None, :] - shift[:, None]) @ mass) + shift


@dataclass(frozen=True)
class _GaussianLaw(_Law):
    """A Gaussian pair's loss law on the grid (:func:`_gaussian_law`): its log-MGF bounded in closed form."""

    mu: float = 0.0
    #: The most a loss moves onto the grid, in grid widths (1 rounded, 1 + 1/k split from a k times finer grid).
    moved: float = 1.0

    def log_mgf(self, t: NDArray[np.float64], h: float) -> NDArray[np.float64]:
        """An upper bound on log E[e^{t L}; L finite]: the loss N(mu^2 / 2, mu^2) has log-MGF
        t mu^2 / 2 + t^2 mu^2 / 2, and the grid moves each loss by at most ``moved`` h (up or down; tails
        raised onto the window or dropped), which multiplies e^{tL} by at most e^{|t| moved h}. Chernoff's
        bounds (:func:`_window`) hold with any upper bound."""
        mu2 = self.mu * self.mu
        return 0.5 * t * mu2 + 0.5 * t * t * mu2 + np.abs(t) * self.moved * h


# ---------------------------------------------------------------------------
# The laws of one guarantee


def _grid_index(x: float, h: float, up: bool) -> int:
    """ceil(x / h) (up) or floor(x / h), corrected so that the index times h lies on the right side of x."""
    q = x / h
    if not abs(q) < _INDEX_LIMIT:
        raise NumericalLimitError(f"a privacy loss of {x} is beyond {_INDEX_LIMIT} grid points of width {h}")
    i = math.ceil(q) if up else math.floor(q)
    while up and i * h < x:
        i += 1
    while not up and i * h > x:
        i -= 1
    return i


def _split_share(above: NDArray[np.float64] | float, width: float) -> NDArray[np.float64]:
    """The share of an atom's mass that the *split* (module doc) moves to the upper grid point.

    An atom at loss ``L = A + above`` between the grid points ``A`` and ``B = A + width`` goes to ``B`` with
    the share ``(1 - e^{A-L}) / (1 - e^{A-B})`` of its mass and to ``A`` with the rest: its P-mass is kept and,
    as an outcome of loss ``x`` has Q-mass ``e^-x`` times its P-mass, so is its Q-mass. The given pair is then
    the post-processing "merge A and B" of the split one, which dominates it.

    Parameters
    ----------
    above : float or ndarray
        ``L - A`` per atom, in ``[0, width]``.
    width : float
        ``B - A``, positive.

    Returns
    -------
    ndarray
        The share moved to ``B`` per atom, clipped to [0, 1] (0 on ``A``, 1 on ``B``).

    Examples
    --------
    >>> float(_split_share(0.0, 0.1)), float(_split_share(0.1, 0.1))
    (0.0, 1.0)
    >>> p, a, b, loss = 1.0, 0.0, 0.1, 0.04  # the Q-mass e^-L is kept
    >>> share = float(_split_share(loss - a, b - a))
    >>> abs(p * (1 - share) * math.exp(-a) + p * share * math.exp(-b) - p * math.exp(-loss)) < 1e-15
    True
    """
    return np.clip(np.expm1(-np.asarray(above, dtype=float)) / math.expm1(-width), 0.0, 1.0)


#: Most copies of one (eps, delta) point composed exactly before they meet the grid (:func:`_point_laws`).
POINT_COPIES_EXACT = 4096


def point_splits(guarantee: Guarantee, count: int) -> int:
    """How many times ``count`` copies of ``guarantee`` meet the grid (each split raises epsilon, each rounding
    down lowers it, by up to a grid width): once for an (eps, delta) point of at most
    :data:`POINT_COPIES_EXACT` copies (composed exactly first, :func:`_point_laws`), else once per copy."""
    source = kinds.pld_source(guarantee)
    exact = source is not None and source.kind == "point" and count <= POINT_COPIES_EXACT
    return 1 if exact else int(count)


def _point_laws(eps: float, delta: float, count: int, h: float) -> tuple[_Law, _Law]:
    """Upper (split) and lower (rounded down) laws of ``count`` copies of the canonical pair of (eps, delta).

    Up to :data:`POINT_COPIES_EXACT` copies are composed exactly first: ``k`` of ``count`` copies at loss
    ``+eps`` and the others at ``-eps`` with P-mass ``C(count, k) p_hi^k p_lo^(count - k)``, and
    ``1 - (1 - delta)^count`` at +inf (002 Thm. III.3: the canonical pairs compose
    to this pair); its atoms are then split or rounded down once (:func:`loss_law`: a dominating and a
    dominated pair of the composition), where each copy's own atoms would meet the grid ``count`` times."""
    if delta >= 1.0:
        empty = _Law(np.zeros(0, np.int64), np.zeros(0), count, 1.0)
        return empty, empty
    survive = 1.0 - delta
    p_hi = survive / (1.0 + math.exp(-eps)) if eps < 700 else survive
    p_lo = survive / (1.0 + math.exp(eps)) if eps < 700 else survive * math.exp(-eps)
    if eps == 0.0:
        law = _Law(np.zeros(1, np.int64), np.array([survive]), count, delta)
        return law, law
    if 1 < count <= POINT_COPIES_EXACT and eps < 700:
        k = np.arange(count + 1, dtype=float)
        # log C(count, k) + k log p_hi + (count - k) log p_lo, with p_hi, p_lo over (1 - delta) factored out
        log_mass = (special.gammaln(count + 1.0) - special.gammaln(k + 1.0) - special.gammaln(count - k + 1.0)
                    - k * np.logaddexp(0.0, -eps) - (count - k) * np.logaddexp(0.0, eps))
        mass = np.exp(log_mass + count * math.log1p(-delta))
        infinite = -math.expm1(count * math.log1p(-delta))
        tiny = mass <= TINY_MASS  # (as dense laws: charged at +inf above, left out below)
        loss = (2.0 * k - count) * eps
        upper = loss_law(loss[~tiny], mass[~tiny], 1, h, upper=True,
                         infinite=min(infinite + float(mass[tiny].sum()), 1.0))
        lower = loss_law(loss[~tiny], mass[~tiny], 1, h, upper=False, infinite=infinite)
        return upper, lower
    up_index, up_mass = [], []
    for loss, p in ((eps, p_hi), (-eps, p_lo)):
        b = _grid_index(loss, h, up=True)
        a = b - 1
        share = float(_split_share(loss - a * h, h))
        up_index += [a, b]
        up_mass += [p * (1.0 - share), p * share]
    upper = _Law(np.array(up_index, np.int64), np.array(up_mass), count, delta)
    lower = _Law(np.array([_grid_index(eps, h, up=False), _grid_index(-eps, h, up=False)], np.int64),
                 np.array([p_hi, p_lo]), count, delta)
    return upper, lower


@functools.lru_cache(maxsize=256)
def _noise_pmfs(guarantee: Guarantee, h: float, pessimistic: bool) -> tuple[_dpa.DensePMF, ...]:
    """dp-accounting's dense pmfs (one per direction) of a noise mechanism at interval h.

    Raises NumericalLimitError before building when the mechanism's losses span more than
    :data:`~gce.accounting.pld.MECHANISM_GRID_LIMIT` points of width h (dp-accounting would allocate them).
    """
    points = 2.0 * _pld._half_width(guarantee) / h + 1.0
    if not points <= _pld.MECHANISM_GRID_LIMIT:
        raise NumericalLimitError(f"the privacy losses of {shown(guarantee)} span {points:.3g} points of width {h:g} "
                                  f"(limit {_pld.MECHANISM_GRID_LIMIT})")
    if pessimistic:
        distribution = _pld.guarantee_pld(guarantee, h)
    else:
        scale, sensitivity, rate = kinds.pld_source(guarantee).parameters
        module = _dpa.privacy_loss_distribution()
        build = module.from_gaussian_mechanism if kinds.pld_noise(guarantee)[0] == "gaussian" \
            else module.from_laplace_mechanism
        distribution = _pld._guarded(lambda: build(scale, sensitivity=sensitivity, pessimistic_estimate=False,
                                                   value_discretization_interval=h, sampling_prob=rate,
                                                   use_connect_dots=False))
    pmfs = _dpa.dense_pmfs(distribution)
    if not pmfs:
        raise NumericalLimitError("dp-accounting's dense pmfs are not readable with this version")
    if not pessimistic:
        _OPTIMISTIC_BUILT.add((guarantee, h))
    return tuple(pmfs)


#: (guarantee, interval) whose optimistic pmfs :func:`_noise_pmfs` has built: the lower curve's cost
#: estimate (:meth:`BatchCurve.lower_seconds`) counts the others.
_OPTIMISTIC_BUILT: set = set()


def clear_caches() -> None:
    """Forget every plan and pmf, here and in :mod:`gce.accounting.pld` (benchmarks: a fresh process)."""
    plan.cache_clear()
    _noise_pmfs.cache_clear()
    _gaussian_law.cache_clear()
    _OPTIMISTIC_BUILT.clear()
    _pld.clear_caches()


def _dense_law(dense: _dpa.DensePMF, count: int, upper: bool) -> _Law:
    # Masses below TINY_MASS (subnormal ones slow every product down a hundredfold) are dropped:
    # charged at +inf in the upper law, left out of the lower one.
    nonzero = np.flatnonzero(dense.probs > TINY_MASS)
    mass = dense.probs[nonzero]
    infinite = dense.infinity_mass
    if upper:  # whatever the pmf lost to round-off, truncation or the cut above is charged at +inf
        infinite = min(max(infinite, 1.0 - math.fsum(mass)) + float(dense.probs[dense.probs <= TINY_MASS].sum()), 1.0)
    if upper and mass.size > 1:
        # The lowest atoms, together below CLAMP_MASS / count, are raised onto the next one: raising a
        # loss only raises the curve, and it keeps a rare very negative loss from widening the window.
        j = int(np.searchsorted(np.cumsum(mass), CLAMP_MASS / count, side="right"))
        if 0 < j < mass.size:
            mass = np.concatenate(([mass[:j + 1].sum()], mass[j + 1:]))
            nonzero = nonzero[j:]
    return _Law(nonzero.astype(np.int64) + dense.lower, mass, count, infinite)


def _split_coarsen(law: _Law, k: int, h: float) -> _Law:
    """An upper law on the grid of width ``k h`` from one on width ``h``: each atom at loss L between
    grid points A < L < B is split into A and B (:func:`_split_share`), so that both its P- and Q-mass are
    kept: the law is that of a pair of which the original is a post-processing (merge A and B), hence
    dominating, and its losses differ from the original's by O(k^2 h^2) on average rather than O(k h)
    (module doc)."""
    if k == 1 or not law.mass.size:
        return law
    a = np.floor_divide(law.index, k)
    rest = (law.index - a * k).astype(float)
    share = _split_share(rest * h, k * h)  # 0 on a grid point
    low = int(a.min())
    mass = np.bincount(a - low, weights=law.mass * (1.0 - share), minlength=int(a.max()) - low + 2)
    mass += np.bincount(a + 1 - low, weights=law.mass * share, minlength=mass.size)
    keep = np.flatnonzero(mass > 0)
    return _Law(keep.astype(np.int64) + low, mass[keep], law.count, law.infinite)


#: Mass of a Gaussian law's loss beyond its window on each side (charged at +inf above, or dropped).
GAUSSIAN_TAIL = 1e-22


#: The upper Gaussian law is built on a grid this many times finer and split onto its own (:func:`_gaussian_law`),
#: halved while the finer grid would be finer than dp-accounting's interval (there raising costs 1e-4 of a
#: loss: nothing to gain, and 20 times the work) or hold more than :data:`GAUSSIAN_SPLIT_POINTS` points.
GAUSSIAN_SPLIT, GAUSSIAN_SPLIT_POINTS = 16, 2**21


@functools.lru_cache(maxsize=64)
def _gaussian_law(mu: float, h: float, upper: bool) -> _Law:
    """The law of a mu-GDP pair's privacy loss, N(mu^2 / 2, mu^2) (DRS22 Sec. 2.2: the loss of
    N(mu, 1) against N(0, 1) is mu x - mu^2 / 2, x ~ N(mu, 1)), on the grid in closed form.

    Upper: the mass of each cell (a h', (a + 1) h'] of a grid ``k`` (:data:`GAUSSIAN_SPLIT`, at most) times finer at
    (a + 1) h' (raised; the mass above the window at +inf, below it at its lowest point), then split onto
    the grid of width h (:func:`_split_coarsen`: both measures' masses kept, a dominating pair). Raising is
    a first-order error (every loss up by up to h), the split a second-order one: the raise is ``k`` times
    smaller and the split adds O(h^2) on average (25 databases of mixed guarantees with Gaussian noise on a
    grid of 0.0064: epsilon 0.7% above its limit raised, 0.06% split). Lower: the mass of each cell [a h, (a + 1) h) at a h (lowered, the mass outside
    the window dropped). Both directions alike. One copy: the merged Gaussian mechanisms
    (:func:`merge_gaussians`) meet the grid once."""
    mean, sd = 0.5 * mu * mu, mu
    reach = float(-special.ndtri(GAUSSIAN_TAIL))
    if not (mean + reach * sd) / h < GRID_LIMIT:
        raise NumericalLimitError(f"a Gaussian loss of mu = {mu:g} spans more than {GRID_LIMIT} grid points of width {h:g}")
    if upper:
        k = GAUSSIAN_SPLIT
        while k > 1 and (h / k < _pld.DISCRETIZATION * (1.0 - 1e-9) or 2.0 * reach * sd * k / h > GAUSSIAN_SPLIT_POINTS):
            k //= 2
        index, mass, infinite = _gaussian_cells(mean, sd, reach, h / k, True)
        if k == 1:
            return _read_only(_GaussianLaw(index, mass, 1, infinite, mu))
        law = _split_coarsen(_Law(index, mass, 1, infinite), k, h / k)
        return _read_only(_GaussianLaw(law.index, law.mass, 1, law.infinite, mu, 1.0 + 1.0 / k))
    index, mass, infinite = _gaussian_cells(mean, sd, reach, h, False)
    return _read_only(_GaussianLaw(index, mass, 1, infinite, mu))


def _read_only(law: _Law) -> _Law:
    """``law`` with its arrays read-only (cached laws are shared)."""
    law.index.flags.writeable = False
    law.mass.flags.writeable = False
    return law


def _gaussian_cells(mean: float, sd: float, reach: float, h: float, upper: bool):
    """(index, mass, mass at +inf) of N(mean, sd^2) on the cells of width h within ``reach`` standard
    deviations: each cell's mass at its upper end (and the mass below the window there too, the mass above
    at +inf), or at its lower end (the mass outside dropped)."""
    lo, hi = math.floor((mean - reach * sd) / h), math.ceil((mean + reach * sd) / h)
    edges = (np.arange(lo, hi + 1, dtype=float) * h - mean) / sd  # cell edges, standardised
    # Cell masses without cancellation: lower-tail differences below the mean, upper-tail ones above.
    below = special.ndtr(edges)
    above = special.ndtr(-edges)
    cells = np.where(edges[1:] <= 0.0, below[1:] - below[:-1], above[:-1] - above[1:])
    cells = np.maximum(cells, 0.0)
    if upper:  # cell (lo + j, lo + j + 1] at index lo + j + 1; below the window onto lo + 1
        cells[0] += below[0]
        return np.arange(lo + 1, hi + 1, dtype=np.int64), cells, min(float(above[-1]), 1.0)
    return np.arange(lo, hi, dtype=np.int64), cells, 0.0


def _laws(guarantee: Guarantee, count: int, h: float, upper: bool) -> list[_Law]:
    """Upper or lower laws of ``count`` copies of ``guarantee``, one per direction (one when symmetric).

    An upper law of a noise mechanism on a whole multiple of the interval of its summaries' pmfs
    (:func:`_source_interval`) is split onto it from those pmfs (:func:`_split_coarsen`: no new build).
    Which pmfs a law comes from follows from the question alone, never from what was built before, so
    that the same composition gives the same curve in any process."""
    source = kinds.pld_source(guarantee)
    if source is None:
        raise UnsupportedCombinationError(f"no privacy-loss distribution for {shown(guarantee)}")
    if source.kind == "point":
        return [_point_laws(*source.parameters, count, h)[0 if upper else 1]]
    if closed_form(guarantee):
        return [_gaussian_law(math.sqrt(count) * kinds.gdp_mu(guarantee), h, upper)]
    k = _multiple(h)
    j = round(_source_interval(guarantee) / _pld.DISCRETIZATION)
    if upper and k > j and k % j == 0:  # split from the pmfs the summaries read (built once, shared)
        fine = j * _pld.DISCRETIZATION
        return [_split_coarsen(_dense_law(d, count, True), k // j, fine) for d in _noise_pmfs(guarantee, fine, True)]
    return [_dense_law(d, count, upper) for d in _noise_pmfs(guarantee, h, upper)]


def build_seconds(guarantee: Guarantee, h: float) -> float:
    """An estimate of the seconds dp-accounting's builds for the upper laws of ``guarantee`` on the grid of
    width ``h`` take (:func:`_laws`: on the interval they are split from, or on ``h``); 0 when built already,
    for canonical pairs and for closed-form laws."""
    if kinds.pld_noise(guarantee) is None or closed_form(guarantee):
        return 0.0
    k, j = _multiple(h), round(_source_interval(guarantee) / _pld.DISCRETIZATION)
    return _pld.build_seconds(guarantee, j * _pld.DISCRETIZATION if k > j and k % j == 0 else h)


def closed_form(guarantee: Guarantee) -> bool:
    """Whether the laws of ``guarantee`` are built here in closed form (:func:`_gaussian_law`: a Gaussian
    mechanism or GDP, not subsampled), not by dp-accounting."""
    noise = kinds.pld_noise(guarantee)
    return noise is not None and noise[0] == "gaussian" and noise[3] == 1.0 and kinds.gdp_mu(guarantee) is not None


def _multiple(h: float) -> int:
    """k when ``h`` is k > 1 times dp-accounting's default interval (to round-off), else 1."""
    k = round(h / _pld.DISCRETIZATION)
    return k if k > 1 and math.isclose(k * _pld.DISCRETIZATION, h, rel_tol=1e-9) else 1


def log_mgf_bounds(guarantee: Guarantee, t: NDArray[np.float64]) -> tuple[NDArray[np.float64], float]:
    """(log E[e^{t L}; L finite], P(L = inf)) of one invocation's upper law, the larger of its directions.

    The upper law (a dominating pair's loss, rounded up to the interval of
    the noise mechanisms' pmfs, then split onto a grid :data:`MGF_COARSENING`
    times coarser: the law of a dominating pair still) bounds the
    mechanism's moment-generating function at every t > 0, and every
    composition of such laws is bounded through them by Chernoff: the
    moment-generating function of a sum of independent losses is the
    product (the Renyi bound of :mod:`gce.solvers.mixed`). For a noise
    mechanism it reuses the pmfs the composition builds (cached).
    """
    t = np.asarray(t, dtype=float)
    h = _summary_interval(guarantee)
    laws = _laws(guarantee, 1, h, True)  # raises UnsupportedCombinationError without a distribution
    return np.max([law.log_mgf(t, h) for law in laws], axis=0), max(law.infinite for law in laws)


def _source_interval(guarantee: Guarantee) -> float:
    """The interval of the pessimistic pmfs a noise mechanism's coarser upper laws are split from: the
    default interval when a build there is cheap in a new process (:data:`MGF_FINE_SECONDS`), or for
    Laplace noise, whose pessimistic pmfs on a coarse interval are far above the mechanism; else
    :data:`MGF_COARSENING` times coarser (Gaussian noise: dp-accounting connects the dots, O(h^2)).
    Decided from the mechanism alone, never from what is built already."""
    fine = _pld.DISCRETIZATION
    noise = kinds.pld_noise(guarantee)
    if noise is None or noise[0] != "gaussian" or \
            _pld.build_seconds(guarantee, fine, fresh=True) <= MGF_FINE_SECONDS:
        return fine
    return MGF_COARSENING * fine


def _summary_interval(guarantee: Guarantee) -> float:
    """The grid of the laws that summarise a guarantee (:func:`log_mgf_bounds`, :func:`_coarsening`):
    split 4 times coarser from the default interval when the pmfs are built there
    (:func:`_source_interval`), else the coarser interval they are built on."""
    fine = _pld.DISCRETIZATION
    if kinds.pld_noise(guarantee) is None:
        return fine
    source = _source_interval(guarantee)
    if source == fine:
        _noise_pmfs(guarantee, fine, True)
        return 4 * fine
    return source


#: Intervals of dp-accounting's default width per grid point of the laws :func:`log_mgf_bounds` and
#: :func:`_coarsening` read: pessimistic pmfs there cost a sixteenth of those on the default interval
#: (dp-accounting's connect-the-dots pmfs: their error is O(h^2) per copy, as the split's).
MGF_COARSENING = 16
#: Largest estimated build on the default interval that :func:`log_mgf_bounds` makes rather than a coarser
#: one (a Laplace mechanism's pmf: a few thousand points).
MGF_FINE_SECONDS = 0.02


# ---------------------------------------------------------------------------
# The plan: grid width and laws


@dataclass(frozen=True)
class Plan:
    """What one batch composition needs: the grid width and the upper laws per direction
    (the lower laws are built on first use, :meth:`lower`)."""

    guarantees: tuple[tuple[Guarantee, int], ...]
    interval: float
    upper: tuple[tuple[_Law, ...], ...]  # per direction

    def lower(self) -> tuple[tuple[_Law, ...], ...]:
        """The rounded-down laws per direction."""
        return _directions([_laws(g, int(n), self.interval, False) for g, n in self.guarantees])


def _directions(per_guarantee: list[list[_Law]]) -> tuple[tuple[_Law, ...], ...]:
    """Per direction ("remove", then "add" where some guarantee has two), one law per guarantee."""
    count = max([1] + [len(laws) for laws in per_guarantee])
    return tuple(tuple(laws[min(d, len(laws) - 1)] for laws in per_guarantee) for d in range(count))


def _point_moments(eps: float) -> tuple[float, float]:
    mean = eps * math.tanh(eps / 2.0)
    return mean, max(eps * eps - mean * mean, 0.0)


def _interval(ms: Sequence[tuple[Guarantee, int]], rtol: float) -> float:
    """Grid width for a relative epsilon-bracket width ``rtol`` (module doc)."""
    if any(kinds.pld_source(g) is not None and kinds.pld_source(g).kind != "point" for g, _ in ms):
        return _pld.DISCRETIZATION
    mean = var = 0.0
    off_grid = 0
    for g, n in ms:
        eps, _ = kinds.pld_source(g).parameters
        if eps > 0:
            m, v = _point_moments(eps)
            mean += n * m
            var += n * v
            off_grid += point_splits(g, n)
    if off_grid == 0:
        return COARSEST
    sd = math.sqrt(var)
    scale = max(mean + 3.0 * sd, 1e-3)
    h = 2.0 * rtol * scale / off_grid
    window = 2.0 * (math.sqrt(2.0 * math.log(1.0 / TAIL)) + 2.0) * sd  # about the Chernoff window
    h = max(h, 2.0 * window / GRID_LIMIT)
    return float(min(max(h, FINEST), COARSEST))


def aligned_interval(ms: Sequence[tuple[Guarantee, int]], rtol: float = DEFAULT_RTOL) -> float:
    """The grid width for ``rtol``, made dp-accounting's default interval divided by a whole number
    when finer (else that interval itself), so that the split laws on it are never above the rounded-up
    laws of the ``pld`` route: a finer grid that contains the coarser one rounds up to no more, and a
    split atom lies below its rounded-up one."""
    h = _interval(ms, rtol)
    return _pld.DISCRETIZATION / max(1, math.ceil(_pld.DISCRETIZATION / h * (1.0 - 1e-12)))


#: Whether compositions may take a grid coarser than dp-accounting's interval (:func:`auxiliary`).
_AUXILIARY: contextvars.ContextVar[bool] = contextvars.ContextVar("gce_batch_auxiliary", default=False)


@contextlib.contextmanager
def auxiliary():
    """Within it, batch compositions of noise mechanisms are *auxiliary*: bounds that only have to be
    within :data:`COARSENING_SHARE` of the requested accuracy (a witness's rival, a baseline), not as
    tight as dp-accounting on its own interval, so their grid may be coarser (:func:`_coarsening`:
    at most :data:`GRID_TARGET` points where the total is wide).

    >>> with auxiliary():
    ...     auxiliary_compositions()
    True
    >>> auxiliary_compositions()
    False
    """
    token = _AUXILIARY.set(True)
    try:
        yield
    finally:
        _AUXILIARY.reset(token)


def auxiliary_compositions() -> bool:
    """Whether compositions made now are auxiliary (:func:`auxiliary`)."""
    return _AUXILIARY.get()


@functools.lru_cache(maxsize=32)
def plan(ms: tuple[tuple[Guarantee, int], ...], rtol: float = DEFAULT_RTOL, interval: float | None = None,
         coarsen: bool = False) -> Plan:
    """The grid and laws of a composition; ``coarsen``: an auxiliary one (:func:`auxiliary`).

    Raises
    ------
    UnsupportedCombinationError
        A guarantee has no privacy-loss distribution (zCDP, a subsampled noise mechanism
        subsampled again).
    NumericalLimitError
        dp-accounting cannot build a pmf, or a loss lies beyond the grid's integer range.
    """
    h = float(interval) if interval is not None else _interval(ms, rtol)
    ms = merge_gaussians(tuple((g, int(n)) for g, n in ms if n > 0))
    if h == _pld.DISCRETIZATION and (coarsen or rtol > DEFAULT_RTOL):
        # noise mechanisms' pmfs: a coarser grid where the accuracy asked for allows it (noise_interval)
        h *= _coarsening(ms, h, rtol)
    return Plan(ms, h, _directions([_laws(g, n, h, True) for g, n in ms]))


#: Grid points a composition of noise mechanisms aims at (:func:`_coarsening`): a transform of 2^17
#: points takes about 2 ms, one of dp-accounting's default interval over a wide total 50 times more.
GRID_TARGET = 2**17
#: Share of the requested bracket width that the coarser grid's own error may take.
COARSENING_SHARE = 0.1


def noise_interval(ms: tuple[tuple[Guarantee, int], ...], rtol: float = DEFAULT_RTOL, coarsen: bool = False) -> float:
    """The grid width of a composition with noise mechanisms at the accuracy ``rtol``: dp-accounting's
    interval at :data:`DEFAULT_RTOL` and finer accuracies (whose brackets :func:`lower_at` narrows from
    below), the grid of an auxiliary composition (:func:`auxiliary_interval`) for an auxiliary one
    (``coarsen``) or a looser accuracy. A function of the question alone."""
    if coarsen or rtol > DEFAULT_RTOL:
        return auxiliary_interval(ms, rtol)
    return _pld.DISCRETIZATION


def auxiliary_interval(ms: tuple[tuple[Guarantee, int], ...], rtol: float = DEFAULT_RTOL) -> float:
    """The grid width of an auxiliary composition of noise mechanisms (:func:`auxiliary`)."""
    try:
        return _pld.DISCRETIZATION * _coarsening(merge_gaussians(tuple(ms)), _pld.DISCRETIZATION, rtol)
    except (NumericalLimitError, UnsupportedCombinationError):
        return _pld.DISCRETIZATION


def _coarsening(ms: tuple[tuple[Guarantee, int], ...], h: float, rtol: float) -> int:
    """How many intervals of dp-accounting's default width one grid point of a composition may span.

    The total's window is about (2 sqrt(2 log(1 / TAIL)) + 4) standard deviations wide; a grid of
    :data:`GRID_TARGET` points over it asks for k = width / (GRID_TARGET h). Splitting an atom onto a
    grid of width w raises the mean loss by at most w^2 / 8 (the split of a loss L in [A, A + w]
    moves P-mass s = (1 - e^{A-L}) / (1 - e^{-w}) to A + w, so the mean moves by s w - (L - A) <=
    w^2 / 8 + O(w^3)), so the accuracy allows w^2 / 8 per split copy up to
    :data:`COARSENING_SHARE` of ``rtol`` times the scale of epsilon (mean plus three standard
    deviations); a closed-form Gaussian law is one copy rounded once (at most w). k is the smaller
    of the two (the first at least :data:`MGF_COARSENING`, the grid of the summaries' pmfs, built
    already), at least 1, rounded down to a power of 2. The moments: the closed forms of Gaussian and canonical laws, and the
    pmfs on the default interval of the others (built once, shared with the composition).
    """
    directions: list[list[tuple[float, float]]] = [[], []]  # per direction: (mean, variance) per guarantee
    copies, dense = 0, False
    for g, n in ms:
        source = kinds.pld_source(g)
        if closed_form(g):
            mu2 = n * kinds.gdp_mu(g) ** 2
            parts, dense = [(0.5 * mu2, mu2)], True
        elif source is None:
            raise UnsupportedCombinationError(f"no privacy-loss distribution for {shown(g)}")
        elif source.kind == "point":
            m, v = _point_moments(source.parameters[0])
            parts = [(n * m, n * v)]
            copies += point_splits(g, n)
        else:
            coarse = _summary_interval(g)
            parts = [_moments([law], coarse) for law in _laws(g, n, coarse, True)]
            copies += n
            dense = True
        for d in range(2):
            directions[d].append(parts[min(d, len(parts) - 1)])
    if not dense:
        return 1
    worst = 1
    for parts in directions:
        mean, var = sum(p[0] for p in parts), sum(p[1] for p in parts)
        sd = math.sqrt(max(var, 0.0))
        width = 2.0 * (math.sqrt(2.0 * math.log(1.0 / TAIL)) + 2.0) * sd
        if not (math.isfinite(width) and math.isfinite(mean)):
            continue  # moments beyond floating point: the default grid (whose own checks decide)
        k_grid = math.ceil(width / (GRID_TARGET * h))
        scale = max(mean + 3.0 * sd, 1e-3)
        budget = COARSENING_SHARE * rtol * scale
        w_max = min(math.sqrt(8.0 * budget / copies) if copies else math.inf, budget)
        # At least the summaries' grid where the accuracy allows it: their pmfs are built already.
        worst = max(worst, min(max(k_grid, MGF_COARSENING), int(w_max / h)))
    return 1 << (max(worst, 1).bit_length() - 1)  # a power of 2: compositions of one solve share builds


def merge_gaussians(ms: tuple[tuple[Guarantee, int], ...]) -> tuple[tuple[Guarantee, int], ...]:
    """The multiset with its Gaussian mechanisms (not subsampled; GDP alike) replaced by one Gaussian
    mechanism of mu = sqrt(sum n mu_i^2): exactly their composition (DRS22 Cor. 3.3: the loss of
    each is normal, N(mu_i^2 / 2, mu_i^2), and a sum of independent normals is normal), so one law
    on the grid instead of one per mechanism.

    >>> merge_gaussians(((GaussianMechanism(1.0), 3), (GaussianMechanism(2.0, 2.0), 1)))
    ((GaussianMechanism(sigma=0.5, sensitivity=1.0), 1),)
    """
    gaussian, rest = [], []
    for g, n in ms:
        if closed_form(g) and kinds.gdp_mu(g) > 0:
            mu = kinds.gdp_mu(g)
            if not mu < 1e100:
                raise NumericalLimitError(f"a Gaussian mechanism of mu = {mu:g} is beyond the grid")
            gaussian.append((mu, n))
        else:
            rest.append((g, n))
    if len(gaussian) <= 1 and all(n == 1 for _, n in gaussian):
        return ms
    top = max(mu for mu, _ in gaussian)  # scaled, so that tiny mu do not underflow to 0
    mu = top * math.sqrt(math.fsum(n * (m / top) ** 2 for m, n in gaussian))
    return tuple(rest) + ((GaussianMechanism(1.0 / mu), 1),)


# ---------------------------------------------------------------------------
# Composition on one grid


def _moments(laws: Sequence[_Law], h: float) -> tuple[float, float]:
    mean = var = 0.0
    for law in laws:
        total = law.mass.sum()
        if total <= 0:
            continue
        x = law.index * h
        # Elementwise products, not np.dot: BLAS's threaded dot takes 15 ms per 40,000-entry pmf on a
        # busy 2-core machine, 50 times the plain sum (3 s of a 100-mechanism composition).
        m = float((law.mass * x).sum() / total)
        mean += law.count * m
        var += law.count * float((law.mass * (x - m) ** 2).sum() / total)
    return mean, var


def _window(laws: Sequence[_Law], h: float) -> tuple[int, int, float, float]:
    """[lo, hi] (grid indices) and Chernoff bounds on the finite mass of the total below lo / above hi.

    P(S > x) <= E[e^{tS}] e^{-tx} for t > 0 (and symmetrically for t < 0), with the exact
    log-MGF of the discretised total, a sum over the laws; hard bounds from the supports.
    """
    present = [law for law in laws if law.mass.size]
    if not present:
        return 0, 0, 0.0, 0.0
    hard_hi = sum(law.count * int(law.index.max()) for law in present)
    hard_lo = sum(law.count * int(law.index.min()) for law in present)
    few = [law for law in present if law.mass.size <= _FEW_ATOMS]
    many = [law for law in present if law.mass.size > _FEW_ATOMS]
    index = np.zeros((len(few), _FEW_ATOMS))
    log_mass = np.full((len(few), _FEW_ATOMS), -np.inf)
    for row, law in enumerate(few):
        index[row, :law.mass.size] = law.index * h
        with np.errstate(divide="ignore"):
            log_mass[row, :law.mass.size] = np.log(law.mass)
    counts = np.array([law.count for law in few], dtype=float)
    mass = np.exp(log_mass)
    total = mass.sum(axis=1)
    mean = (mass * index).sum(axis=1) / np.where(total > 0, total, 1.0)
    var = float(np.dot(counts, (mass * (index - mean[:, None]) ** 2).sum(axis=1) / np.where(total > 0, total, 1.0)))
    var += _moments(many, h)[1]
    if var <= 0.0 or hard_hi == hard_lo:
        return hard_lo, hard_hi, 0.0, 0.0
    log_tail = math.log(TAIL)
    t0 = math.sqrt(-2.0 * log_tail / var)
    ts = t0 * 2.0 ** (np.arange(-4, 5) / 2.0)
    t = np.concatenate((ts, -ts))
    k = np.zeros_like(t)
    if few:
        with np.errstate(invalid="ignore"):
            terms = special.logsumexp(t[:, None, None] * index[None] + log_mass[None], axis=2)
        k += (np.where(np.isnan(terms), np.inf, terms) * counts[None, :]).sum(axis=1)  # NaN: no bound
    for law in many:
        k += law.count * law.log_mgf(t, h)
    with np.errstate(over="ignore", invalid="ignore"):
        # P(S > x) <= TAIL for t > 0; P(S < x) <= TAIL_BELOW for t < 0.
        x = (k - np.where(t > 0, log_tail, math.log(TAIL_BELOW))) / t
    upper = x[t > 0]
    lower = x[t < 0]
    hi_x = np.nanmin(upper[np.isfinite(upper)]) if np.any(np.isfinite(upper)) else math.inf
    lo_x = np.nanmax(lower[np.isfinite(lower)]) if np.any(np.isfinite(lower)) else -math.inf
    hi = hard_hi if not hi_x / h < hard_hi else max(math.ceil(hi_x / h), hard_lo)
    lo = hard_lo if not lo_x / h > hard_lo else min(math.floor(lo_x / h), hi)
    return lo, hi, (0.0 if lo == hard_lo else TAIL_BELOW), (0.0 if hi == hard_hi else TAIL)


def _spectrum(law: _Law, size: int, k: NDArray[np.int64], table: NDArray[np.complex128]) -> NDArray[np.complex128]:
    """sum_a m_a w^{a k} (w = e^{-2 pi i / size}) at the real-FFT frequencies ``k`` (a subset of 0..size/2):
    the closed form for few atoms or few frequencies, a real FFT of the folded pmf otherwise."""
    positive = law.mass > 0
    index, mass = law.index[positive] % size, law.mass[positive]
    if index.size <= _FEW_ATOMS or index.size * k.size <= size * max(math.log2(size), 1.0) / 32:
        out = np.zeros(k.size, dtype=complex)
        for start in range(0, index.size, 256):  # blocks of atoms: (atoms, frequencies) at most 256 rows
            a, m = index[start:start + 256], mass[start:start + 256]
            out += m @ table[(a[:, None] * k[None, :]) % size] if a.size > 1 else m[0] * table[a[0] * k % size]
        return out
    folded = np.bincount(index, weights=mass, minlength=size)
    return _fft.rfft(folded)[k]


@functools.lru_cache(maxsize=4)
def _shift_tables(size: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """-(w^j - 1) split as (2 sin^2(phi/2), sin(phi)), phi = 2 pi j / size reduced to [-pi, pi): both
    accurate relative to themselves, so that w^j - 1 = -2 sin^2(phi/2) - i sin(phi) has no cancellation."""
    j = (np.arange(size) + size // 2) % size - size // 2
    phi = 2.0 * np.pi * j / size
    half, sine = 2.0 * np.sin(phi / 2.0) ** 2, np.sin(phi)
    half.flags.writeable = sine.flags.writeable = False  # cached: shared by every composition of this size
    return half, sine


def _shift_minus_one(index: NDArray[np.int64], mass: NDArray[np.float64], size: int, k: NDArray[np.int64],
                     tables: tuple[NDArray[np.float64], NDArray[np.float64]]) -> NDArray[np.complex128]:
    """sum_a m_a (w^{ak} - 1) without cancellation (:func:`_shift_tables`)."""
    half, sine = tables
    re = np.zeros(k.size)
    im = np.zeros(k.size)
    for start in range(0, index.size, 256):  # blocks of atoms: (atoms, frequencies) at most 256 rows
        a, m = index[start:start + 256] % size, mass[start:start + 256]
        j = (a[:, None] * k[None, :]) % size
        re -= m @ half[j]
        im -= m @ sine[j]
    return re + 1j * im


def _log_spectrum(law: _Law, size: int, k: NDArray[np.int64],
                  tables: tuple[NDArray[np.float64], NDArray[np.float64]]) -> tuple[NDArray[np.complex128], float]:
    """log of a law's transform at the frequencies ``k``, accurate to a few ulps *relative to itself*,
    and the L2 norm of the part whose transform has an absolute error (by an FFT).

    A power ``count`` multiplies the relative error of the transform by ``count``: the transform
    F = 1 + D rounded to doubles has an error of 1e-16 absolute, which a million copies turn into
    1e-10 and the pmf's far tail into nonsense (a curve below the exact one). So D = F - 1 =
    sum_a m_a (w^{ak} - 1) - (1 - sum_a m_a) is formed without cancellation: directly for the
    heaviest atoms (:data:`_DIRECT_TERMS` terms in all), by an FFT of the rest minus its mass (an absolute error of
    eps log2(size) times its L2 norm, small when the rest is light); 1 - sum_a m_a is the law's
    infinite mass. Then log(1 + D) = log1p(2 Re D + |D|^2) / 2 + i atan2(Im D, 1 + Re D).
    """
    positive = law.mass > 0
    index, mass = law.index[positive], law.mass[positive]
    # A canonical pair's finite mass is 1 - delta exactly; a dense pmf's is what it holds (its infinite
    # mass may be charged more, which the caller's infinite total carries).
    deficit = law.infinite if law.mass.size <= _FEW_ATOMS else 1.0 - math.fsum(mass)
    heavy = np.argsort(-mass, kind="stable")[:max(_FEW_ATOMS, _DIRECT_TERMS // max(k.size, 1))]
    d = _shift_minus_one(index[heavy], mass[heavy], size, k, tables) - deficit
    rest = np.ones(mass.size, dtype=bool)
    rest[heavy] = False
    rest_norm = 0.0
    if np.any(rest):
        folded = np.bincount(index[rest] % size, weights=mass[rest], minlength=size)
        d += _fft.rfft(folded)[k] - math.fsum(mass[rest])
        rest_norm = float(np.linalg.norm(mass[rest]))
    with np.errstate(divide="ignore"):
        real = 0.5 * np.log1p(2.0 * d.real + d.real**2 + d.imag**2)
    return real + 1j * np.arctan2(d.imag, 1.0 + d.real), rest_norm


@dataclass(frozen=True)
class _Composed:
    """One direction of one side: the composed pmf on [lo, lo + size) and its certified extras."""

    curve: DiscreteLossCurve
    tail_below: float
    tail_above: float
    size: int
    power_round_off: float = 0.0

    @property
    def round_off(self) -> float:
        """Allowance for transform round-off, for the frequencies left out (each <= PRUNE per entry)
        and for the powers of dense transforms (:func:`_compose`)."""
        return ABSOLUTE_ROUND_OFF * math.sqrt(self.size) + PRUNE * self.size + self.power_round_off


#: Frequencies whose running product falls below this are left out: every later factor has modulus
#: <= 1, so each left-out coefficient is below it, and it moves each pmf entry by at most this much.
PRUNE = 1e-30
#: Largest power of a dense law's transform taken as it is (its round-off allowed for, times the power).
_SMALL_POWER = 64
#: Terms (atoms x frequencies) of a powered law's transform summed directly (:func:`_log_spectrum`).
_DIRECT_TERMS = 2**18
#: Widest block (grid points) of single laws convolved directly before it is transformed.
_BLOCK_WIDTH = 2**15


def _blocks(laws: Sequence[_Law], size: int):
    """The laws' convolution in blocks, each a dense :class:`_Law` at most ``_BLOCK_WIDTH`` (or ``size``) wide.

    Convolving a dense array with a law of a few atoms is a few shifted additions.
    """
    limit = min(_BLOCK_WIDTH, size)
    dense, start = np.ones(1), 0
    for law in laws:
        low = int(law.index.min())
        width = int(law.index.max()) - low
        if dense.size > 1 and dense.size + width > limit:
            yield _Law(start + np.arange(dense.size, dtype=np.int64), dense, 1, 0.0)
            dense, start = np.ones(1), 0
        out = np.zeros(dense.size + width)
        for a, m in zip(law.index, law.mass):
            out[a - low:a - low + dense.size] += m * dense
        dense, start = out, start + low
    if dense.size > 1 or laws:
        yield _Law(start + np.arange(dense.size, dtype=np.int64), dense, 1, 0.0)


def _compose(laws: Sequence[_Law], h: float) -> _Composed:
    lo, pmf, tail_below, tail_above, power_round_off = convolve(laws, h)
    size = pmf.size
    log_survival = sum(law.count * math.log1p(-law.infinite) if law.infinite < 1 else -math.inf for law in laws)
    infinite = -math.expm1(log_survival)
    positive = pmf > 0
    losses = (lo + np.flatnonzero(positive)) * h
    with np.errstate(divide="ignore"):
        curve = DiscreteLossCurve(losses, np.log(pmf[positive]), infinite_mass=infinite)
    return _Composed(curve, tail_below, tail_above, size, power_round_off)


def convolve(laws: Sequence[_Law], h: float) -> tuple[int, NDArray[np.float64], float, float, float]:
    """The finite part of the laws' composition on the grid ``{i h}``: ``(lo, pmf, tail_below, tail_above,
    power_round_off)``, the pmf at the indices ``lo .. lo + pmf.size - 1`` (a cyclic convolution on the
    Chernoff window of :func:`_window`, module doc), the window's tail bounds and the powers' round-off
    allowance (:class:`_Composed`'s ``round_off`` adds the transform's own)."""
    lo, hi, tail_below, tail_above = _window(laws, h)
    if max(abs(lo), abs(hi)) >= 2**62:  # counts of ~2**63 copies: grid indices beyond 64-bit integers
        raise NumericalLimitError(f"a batch composition's window reaches grid index {max(abs(lo), abs(hi)):.3g} "
                                  f"(beyond 64-bit integers)")
    size = _fft.next_fast_len(hi - lo + 1, real=True)
    if size > GRID_LIMIT:
        raise NumericalLimitError(f"a batch composition would span {size} grid points (limit {GRID_LIMIT})")
    k = np.arange(size // 2 + 1, dtype=np.int64)
    table = np.exp(-2j * np.pi * np.arange(size) / size)
    acc = table[(-lo % size) * k % size]  # shifts the window to start at lo
    tables = _shift_tables(size)
    powered = 0.0
    singles = [law for law in laws if law.count == 1 and 0 < law.mass.size <= _FEW_ATOMS]
    others = [law for law in laws if not (law.count == 1 and 0 < law.mass.size <= _FEW_ATOMS)]
    if any(not law.mass.size for law in others):
        acc = acc * 0.0
    else:
        # Single few-atom laws: convolved directly in blocks (exact, cheap while a block is narrow),
        # each block then one factor of the product of transforms.
        for block in _blocks(singles, size):
            acc = acc * _spectrum(block, size, k, table)
            keep = np.abs(acc) > PRUNE
            k, acc = k[keep], acc[keep]
        powered = 0.0  # count * L2 norm of the FFT-transformed part, summed over the powered laws
        for law in others:
            if law.count == 1 or (law.mass.size > _FEW_ATOMS and law.count <= _SMALL_POWER):
                spec = _spectrum(law, size, k, table)  # a small power amplifies round-off little
                acc = acc * (spec if law.count == 1 else np.power(spec, law.count))
                if law.count > 1:
                    powered += law.count * float(np.linalg.norm(law.mass))
            else:
                log_spec, rest_norm = _log_spectrum(law, size, k, tables)  # parts apart: -inf * count
                acc = acc * np.exp(law.count * log_spec.real + 1j * (law.count * log_spec.imag))
                powered += law.count * rest_norm
            keep = np.abs(acc) > PRUNE
            k, acc = k[keep], acc[keep]
    full = np.zeros(size // 2 + 1, dtype=complex)
    full[k] = acc
    pmf = np.maximum(_fft.irfft(full, n=size), 0.0)
    # A dense transform's rounding error is multiplied by its power ``count``. The FFT's error is
    # about eps log2(size) ||m||_2 per frequency (relative L2 error, Higham, "Accuracy and Stability",
    # Sec. 24.1); a power multiplies it by count, and the sum of the pmf above any epsilon moves by
    # about the spectrum's error (the partial sums of w^{-ik} fall off as 1 / k). Eight times that:
    # an estimate, like ABSOLUTE_ROUND_OFF, not a proof.
    power_round_off = 8.0 * np.finfo(float).eps * max(math.log2(size), 1.0) * powered
    return lo, pmf, tail_below, tail_above, power_round_off


# ---------------------------------------------------------------------------
# Curves


def _multiset(guarantees) -> tuple[tuple[Guarantee, int], ...]:
    """((guarantee, count), ...) from a mapping, a multiset or a list of guarantees (counts merged)."""
    items = guarantees.items() if isinstance(guarantees, dict) else (
        item if isinstance(item, tuple) else (item, 1) for item in guarantees)
    counts: dict = {}
    for g, n in items:
        kinds.kind_of(g)
        counts[g] = counts.get(g, 0) + int(n)
    return tuple((g, n) for g, n in counts.items() if n > 0)


class LowerCurve:
    """A certified *lower* bound on the exact privacy curve (not a guarantee: never report it as one).

    ``delta(eps)`` is at most the exact delta; ``epsilon(delta)`` at most the exact epsilon.
    """

    def __init__(self, parts: Sequence[_Composed]):
        self._parts = tuple(parts)
        self._slack = max(p.tail_below + p.tail_above + p.round_off for p in parts)

    def delta(self, epsilon):
        raw = np.max([np.atleast_1d(p.curve.delta(epsilon)) for p in self._parts], axis=0)
        out = np.maximum(raw * (1.0 - ROUND_OFF) - self._slack, 0.0)
        return float(out[0]) if np.ndim(epsilon) == 0 else out

    def direction_delta(self, which: int, epsilon) -> NDArray[np.float64]:
        """The lower delta of one direction alone (``which`` indexes the parts; the same allowances)."""
        raw = np.atleast_1d(self._parts[which].curve.delta(epsilon))
        return np.maximum(raw * (1.0 - ROUND_OFF) - self._slack, 0.0)

    def epsilon(self, delta):
        d = np.atleast_1d(np.asarray(delta, dtype=float))
        target = np.minimum((d + self._slack) / (1.0 - ROUND_OFF), 1.0)
        eps = np.max([np.atleast_1d(p.curve.epsilon(target)) for p in self._parts], axis=0)
        out = np.where(np.isfinite(eps), eps * (1.0 - 1e-11), eps)  # undo the inversion's rounding up
        return float(out[0]) if np.ndim(delta) == 0 else out


class BatchCurve(PrivacyCurve):
    """The batch composition's upper curve (a valid bound, what the ``batch`` theorem returns),
    with its certified lower curve (:attr:`lower`, computed on first use) and the bracket between.

    Examples
    --------
    >>> from gce.accounting.guarantees import ApproxDP, PureDP
    >>> c = BatchCurve(((PureDP(0.1), 20), (ApproxDP(0.2, 1e-7), 10)))
    >>> low, high = c.epsilon_bracket(1e-6)
    >>> 0 < low <= high <= low * 1.05
    True
    """

    def __init__(self, guarantees, rtol: float = DEFAULT_RTOL, interval: float | None = None, coarsen: bool = False):
        self.guarantees = _multiset(guarantees)
        self.plan = plan(self.guarantees, float(rtol), interval, bool(coarsen))
        self.interval = self.plan.interval
        self._parts = tuple(_compose(laws, self.interval) for laws in self.plan.upper)
        self._slack = max(p.tail_above + p.round_off for p in self._parts)
        self._floor = max(p.curve.delta_floor for p in self._parts)
        self.delta_floor = min(self._safe(np.array([self._floor]))[0], 1.0)
        self._lower: LowerCurve | None = None

    def _safe(self, raw: NDArray[np.float64]) -> NDArray[np.float64]:
        return raw * (1.0 + ROUND_OFF) + self._slack

    @property
    def upper(self) -> "BatchCurve":
        """The upper curve: this curve itself."""
        return self

    def lower_seconds(self) -> float:
        """An estimate of the seconds :attr:`lower` takes (:func:`lower_seconds`; 0 once composed)."""
        return 0.0 if self._lower is not None else lower_seconds(self, self.interval)

    @property
    def lower(self) -> LowerCurve:
        """The certified lower curve (composed on first use)."""
        if self._lower is None:
            self._lower = LowerCurve([_compose(laws, self.interval) for laws in self.plan.lower()])
        return self._lower

    def _delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        raw = np.max([np.atleast_1d(p.curve.delta(eps)) for p in self._parts], axis=0)
        return np.minimum(self._safe(raw), 1.0)

    def _epsilon(self, d: NDArray[np.float64]) -> NDArray[np.float64]:
        out = np.empty_like(d)
        for i, t in enumerate(d):
            if t >= 1.0:
                out[i] = 0.0
            elif not at_or_above(t, self.delta_floor):
                out[i] = math.inf
            else:
                raw = max((t - self._slack) / (1.0 + ROUND_OFF), 0.0)
                eps = max(float(p.curve.epsilon(raw)) for p in self._parts)
                if not (math.isfinite(eps) and self._delta(np.array([eps]))[0] <= t):
                    eps = self._bisect(float(t))
                out[i] = eps
        return out

    def epsilon_bracket(self, delta: float) -> tuple[float, float]:
        """(lower, upper): the exact epsilon at ``delta`` lies between them."""
        return float(self.lower.epsilon(delta)), float(self.epsilon(delta))

    def delta_bracket(self, epsilon: float) -> tuple[float, float]:
        """(lower, upper): the exact delta at ``epsilon`` lies between them."""
        return float(self.lower.delta(epsilon)), float(self.delta(epsilon))


#: Seconds per grid point per law of one transform of a composition (both directions counted apart), measured
#: on 2 shared cores: what :func:`lower_seconds` charges for composing on a given grid.
SECONDS_PER_LAW_POINT = 6e-8


#: Seconds the transforms of one law of noise mechanisms take over a composition on dp-accounting's interval
#: (both directions, a wide total), measured on 2 shared cores; a coarser grid takes proportionally less.
TRANSFORM_SECONDS = 0.01


def transform_seconds(ms: Sequence[tuple[Guarantee, int]], interval: float) -> float:
    """An estimate of the seconds the transforms of a composition take on the grid of width ``interval``,
    from the question: canonical pairs and closed-form Gaussian laws over the window their moments give
    (:func:`_window`'s Chernoff window, about that many standard deviations), at
    :data:`SECONDS_PER_LAW_POINT` per law and grid point; each law of a noise mechanism at
    :data:`TRANSFORM_SECONDS` on the default interval, proportionally less on a coarser grid."""
    var, laws, noise = 0.0, 0, 0
    for g, n in ms:
        source = kinds.pld_source(g)
        if source is None:
            continue
        if source.kind == "point":
            var += n * _point_moments(source.parameters[0])[1]
            laws += 1
        elif closed_form(g):
            var += n * kinds.gdp_mu(g) ** 2
            laws += 1
        else:
            noise += 1
    width = 2.0 * (math.sqrt(2.0 * math.log(1.0 / TAIL)) + 2.0) * math.sqrt(var)
    points = min(width / interval, float(GRID_LIMIT)) if math.isfinite(width) else float(GRID_LIMIT)
    return SECONDS_PER_LAW_POINT * laws * points + TRANSFORM_SECONDS * noise * _pld.DISCRETIZATION / interval


def lower_at(guarantees, interval: float) -> LowerCurve:
    """The certified lower curve of a composition on the grid of width ``interval`` (the rounded-down laws
    of :meth:`Plan.lower`, composed as :attr:`BatchCurve.lower` is): a lower bound at any width, tighter
    as it shrinks (each copy's loss drops by at most ``interval``). What refines a bracket from below
    when a batch composition's is wider than the accuracy asked for."""
    ms = merge_gaussians(_multiset(guarantees))
    return LowerCurve([_compose(laws, float(interval)) for laws in _directions(
        [_laws(g, int(n), float(interval), False) for g, n in ms])])


def lower_seconds(curve: BatchCurve, interval: float) -> float:
    """An estimate of the seconds :func:`lower_at` takes for ``curve``'s guarantees at ``interval``, from the
    question: dp-accounting's builds of the optimistic pmfs not built yet and the transforms over a grid
    as wide as the curve's (its points scaled by the widths' ratio)."""
    ms = curve.plan.guarantees
    builds = sum(_pld.build_seconds(g, interval, pessimistic=False) for g, _ in ms
                 if (g, interval) not in _OPTIMISTIC_BUILT and not closed_form(g))
    points = max(p.size for p in curve._parts) * curve.interval / interval
    return builds + SECONDS_PER_LAW_POINT * len(ms) * len(curve._parts) * points


def batch_compose(guarantees, rtol: float = DEFAULT_RTOL, interval: float | None = None) -> BatchCurve:
    """Compose guarantees on one grid: the upper curve, with ``.lower`` and the brackets.

    Parameters
    ----------
    guarantees : iterable of Guarantee, or mapping Guarantee -> count, or multiset
    rtol : float
        Requested relative width of the epsilon bracket (sets the grid width).
    interval : float, optional
        The grid width itself, overriding ``rtol``.
    """
    return BatchCurve(guarantees, rtol, interval)


# ---------------------------------------------------------------------------
# Laws given as (loss, mass) pairs (random allocation, :mod:`gce.priors.allocation`)


def loss_law(loss, mass, count: int, h: float, *, upper: bool, infinite: float = 0.0) -> _Law:
    """``count`` copies of a discrete privacy-loss law (finite ``loss`` values with their masses under the
    direction's first measure, plus ``infinite`` at +inf) on the grid ``{i h}``.

    Upper: each atom split between its two grid neighbours keeping both measures' masses (the module doc's
    split: the given pair is a post-processing of the split one). Lower: each atom rounded down. Losses
    below the grid's integer range are rounded onto its lowest point (up: safe above; down: dropped below).
    """
    loss = np.asarray(loss, dtype=float)
    mass = np.asarray(mass, dtype=float)
    keep = (mass > 0) & np.isfinite(loss)
    extra = float(mass[(mass > 0) & (loss == np.inf)].sum())
    loss, mass = loss[keep], mass[keep]
    floor = -_INDEX_LIMIT // 4
    if upper:
        b = np.ceil(loss / h)
        b = np.where(b * h < loss, b + 1.0, b)
        a = b - 1.0
        share = _split_share(loss - a * h, h)
        index = np.concatenate((a, b))
        weights = np.concatenate((mass * (1.0 - share), mass * share))
        index = np.maximum(index, floor)
    else:
        index = np.floor(loss / h)
        index = np.where(index * h > loss, index - 1.0, index)
        weights = mass
        weights = np.where(index >= floor, weights, 0.0)
        index = np.maximum(index, floor)
    if np.any(np.abs(index) >= _INDEX_LIMIT):
        raise NumericalLimitError(f"a privacy loss beyond {_INDEX_LIMIT} grid points of width {h}")
    index = index.astype(np.int64)
    if index.size:
        lo = int(index.min())
        if int(index.max()) - lo < 4 * index.size + 1024:
            summed = np.bincount(index - lo, weights=weights)
            nonzero = np.flatnonzero(summed > 0)
            index, weights = nonzero.astype(np.int64) + lo, summed[nonzero]
        else:  # sparse atoms over a wide range (many copies of a point composed): not a dense array
            index, inverse = np.unique(index, return_inverse=True)
            summed = np.bincount(inverse, weights=weights)
            nonzero = summed > 0
            index, weights = index[nonzero], summed[nonzero]
    else:
        index, weights = np.zeros(0, np.int64), np.zeros(0)
    infinite = min(float(infinite) + extra if upper else float(infinite), 1.0)
    return _Law(index, weights, int(count), infinite)


class LawCurve(BatchCurve):
    """:class:`BatchCurve` of laws given directly (:func:`loss_law`), per direction: the upper curve from
    ``upper`` and the certified lower curve (:attr:`lower`) from ``lower`` (lists of laws, one list per
    direction)."""

    def __init__(self, upper: Sequence[Sequence[_Law]], lower: Sequence[Sequence[_Law]], interval: float):
        self.guarantees = ()
        self.interval = float(interval)
        self._lower_laws = tuple(tuple(laws) for laws in lower)
        self._parts = tuple(_compose(laws, self.interval) for laws in upper)
        self._slack = max(p.tail_above + p.round_off for p in self._parts)
        self._floor = max(p.curve.delta_floor for p in self._parts)
        self.delta_floor = min(self._safe(np.array([self._floor]))[0], 1.0)
        self._lower = None

    def lower_seconds(self) -> float:
        return 0.0

    @property
    def lower(self) -> LowerCurve:
        if self._lower is None:
            self._lower = LowerCurve([_compose(laws, self.interval) for laws in self._lower_laws])
        return self._lower

    def direction(self, which: int) -> PrivacyCurve:
        """The upper curve of one direction alone (``which`` indexes ``upper``; the same allowances)."""
        return _DirectionUpper(self, which)


class _DirectionUpper(PrivacyCurve):
    """One direction of a :class:`LawCurve`'s upper curve (:meth:`LawCurve.direction`)."""

    def __init__(self, curve: LawCurve, which: int):
        self._curve, self._which = curve, int(which)
        self.delta_floor = min(curve._safe(np.array([curve._parts[self._which].curve.delta_floor]))[0], 1.0)

    def _delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        raw = np.atleast_1d(self._curve._parts[self._which].curve.delta(eps))
        return np.minimum(self._curve._safe(raw), 1.0)


def compose_laws(upper: Sequence[Sequence[_Law]], lower: Sequence[Sequence[_Law]], interval: float) -> LawCurve:
    """Compose given laws on one grid (:class:`LawCurve`)."""
    return LawCurve(upper, lower, interval)

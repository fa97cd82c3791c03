"""Compositions tilted towards the target: the transform's round-off relative to the answer at any delta.

The batch engine (:mod:`gce.accounting.batch`) composes privacy-loss laws on a grid by one FFT. Its round-off
is absolute, about ``1e-16`` times the square root of the grid's size, charged as mass at infinite loss: a few
``1e-13`` for a composition of a million points, a third of a target of ``1e-12`` (100 epochs of 100 steps at
sigma 0.6 stalled at a bracket 1.8% wide however fine the grids). This module composes the same laws after an
*exponential tilt* towards the target, so that the round-off is relative to the mass that decides the answer.

The tilt
--------
Let ``p`` be the composed law of the total loss ``S`` (each part's finite masses on the grid ``{i h}``,
``count`` copies each, independent). For ``theta >= 0`` the tilted law ``p_theta(s) = p(s) e^(theta s) / Z``,
``Z = prod_i M_i(theta)^count_i`` with ``M_i(theta) = sum_j m_ij e^(theta h j)``, is the composition of the
parts tilted one by one (``m_ij e^(theta h j) / M_i``): independence makes the tilt factor. So the FFT
composes the tilted parts and ``p(s) = Z e^(-theta s) p_theta(s)`` is read back exactly, but for the
transform's errors. With ``theta`` chosen so that the tilted mean is the target epsilon (:func:`tilt`), the
tilted law has its bulk where ``delta(eps) = P(S = inf) + sum_s p(s) (1 - e^(eps - s))_+`` is decided.

Allowance (upper and lower)
---------------------------
Write ``e(s)`` for the error of the computed tilted pmf: the transform's round-off (``R``, the batch engine's
own estimate of the largest partial sum ``|sum_(s >= u) e(s)|``, :class:`~gce.accounting.batch._Composed`)
plus the window's aliasing (the tilted mass outside the Chernoff window, at most ``tau_lo + tau_hi``, lands
inside it). Read at ``eps``, only ``s >= eps`` counts, each entry weighted by
``g(s) = Z e^(-theta s) (1 - e^(eps - s))``, which is at most ``Z e^(-theta eps)`` and of total variation at
most twice that on ``s >= eps``; by Abel summation the error of ``sum_s g(s) e(s)`` is at most
``2 Z e^(-theta eps) R`` for the round-off and ``Z e^(-theta eps) (tau_lo + tau_hi)`` for the aliased mass.
The mass truly outside the window counts at most ``Z e^(-theta eps)`` times its tilted mass when it lies
above ``eps`` (below it, ``f = 0``), and ``Z e^(-theta top)`` times it above the window's top loss when the
target is beyond the top. So ``A(eps) = Z e^(-theta eps) (3 R + 2 (tau_lo + tau_hi))`` is added
above and subtracted below: at the target it is about ``3R`` over the tilted mass that decides delta, relative
to the answer whatever delta is. Like the batch engine's, ``R`` is an estimate (checked against exact
compositions in the tests), not a proof. ``theta = 0`` is the plain composition with the allowance constant.

References
----------
Koskela, Jalko, Honkela, "Computing tight differential privacy guarantees using FFT", AISTATS 2020.
Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., SIAM 2002 (Sec. 24.1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from ...accounting import batch
from ...accounting.curves import DiscreteLossCurve, PrivacyCurve

#: Relative allowance on the read-back masses (as the batch engine's :data:`~gce.accounting.batch.ROUND_OFF`).
_RELATIVE = batch.ROUND_OFF
#: Rungs of the ladder of epsilons on which a lower curve's envelope is taken (:meth:`TiltedCurve._delta`).
_LADDER = 4096
#: Largest tilt (per unit of loss): beyond it the tilted parts would be single atoms.
_THETA_MAX = 200.0
#: Tilts of :func:`saddle_epsilon`'s ladder taken in one pass over a law (a pass holds this many rows of it).
_SADDLE_CHUNK = 8


def _log_mgfs(laws: Sequence[batch._Law], h: float, theta: float) -> list[float]:
    """``log M_i(theta)`` of each part's finite masses (:meth:`~gce.accounting.batch._Law.log_mgf`)."""
    return [float(law.log_mgf(np.array([theta]), h)[0]) for law in laws]


def _tilted_mean(laws: Sequence[batch._Law], h: float, theta: float) -> float:
    """The mean of the total loss under the tilt ``theta`` (finite masses of each part, normalised)."""
    mean = 0.0
    for law in laws:
        positive = law.mass > 0
        if not np.any(positive):
            continue
        x = h * law.index[positive]
        log_w = np.log(law.mass[positive]) + theta * x
        w = np.exp(log_w - log_w.max())
        mean += law.count * float((w * x).sum() / w.sum())
    return mean


def tilt(laws: Sequence[batch._Law], h: float, epsilon: float) -> float:
    """The tilt ``theta >= 0`` whose tilted mean total loss is ``epsilon`` (0 when the plain mean is already at
    least ``epsilon``; :data:`_THETA_MAX` when no tilt reaches it), by bisection (the tilted mean increases
    with ``theta``)."""
    if not math.isfinite(epsilon) or _tilted_mean(laws, h, 0.0) >= epsilon:
        return 0.0
    lo, hi = 0.0, 1.0
    while _tilted_mean(laws, h, hi) < epsilon:
        lo, hi = hi, 2.0 * hi
        if hi > _THETA_MAX:
            return _THETA_MAX
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _tilted_mean(laws, h, mid) < epsilon else (lo, mid)
    return lo


def saddle_epsilon(laws: Sequence[batch._Law], h: float, delta: float) -> float:
    """An estimate of the composition's epsilon at ``delta`` to tilt towards: Chernoff's bound
    ``min_theta (K(theta) - log delta) / theta`` on ``P(S >= eps)``, ``K`` the total log-MGF (finite masses),
    over a ladder of tilts (an estimate only: the tilt decides accuracy, never validity)."""
    thetas = 2.0 ** np.arange(-8.0, 7.5, 0.5)
    k = np.zeros(thetas.size)
    for law in laws:  # each law's log-MGF at the whole ladder at once, a few tilts a pass (a law of 10^5 points)
        k += law.count * np.concatenate([law.log_mgf(thetas[i:i + _SADDLE_CHUNK], h)
                                         for i in range(0, thetas.size, _SADDLE_CHUNK)])
    finite = np.isfinite(k)
    return float(np.min((k[finite] - math.log(delta)) / thetas[finite])) if np.any(finite) else math.inf


class TiltedCurve(PrivacyCurve):
    """One direction's curve of a tilted composition (module doc): the read-back law's curve plus the
    allowance ``A(eps)`` (``upper``) or minus it (a certified lower curve, never a guarantee)."""

    def __init__(self, curve: DiscreteLossCurve, log_z: float, theta: float, charge: float, upper: bool,
                 top: float = math.inf, above: float = 0.0):
        self._curve, self._log_z, self._theta, self._charge, self._upper = curve, log_z, theta, charge, upper
        #: The window's top loss and the tilted mass above it: charged at e^(-theta top) where the target is
        #: beyond the top (the allowance charges it at e^(-theta eps) otherwise).
        self._top, self._above = top, above
        self._ladder: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None
        floor = curve.delta_floor + (self._allowance(np.array([math.inf]))[0] if upper else 0.0)
        self.delta_floor = float(min(floor, 1.0))

    def _allowance(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        eps = np.maximum(eps, 0.0)
        exponent = self._log_z - (self._theta * eps if self._theta > 0 else np.zeros_like(eps))  # (an array)
        out = np.exp(np.minimum(exponent, 700.0)) * self._charge
        beyond = eps > self._top  # the mass above the window lies below eps' tilt factor: charge it at the top
        if np.any(beyond) and self._theta > 0:
            out[beyond] += math.exp(min(self._log_z - self._theta * self._top, 700.0)) * self._above
        return out

    def _delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        raw = np.atleast_1d(self._curve.delta(eps))
        if self._upper:
            return np.minimum(raw * (1.0 + _RELATIVE) + self._allowance(eps), 1.0)
        direct = raw * (1.0 - _RELATIVE) - self._allowance(eps)
        # The allowance grows below the tilt's centre, so the lower values need not decrease in eps; each
        # is certified at its own eps, and the exact curve decreases, so the largest value at any eps' >= eps
        # is certified at eps too: the envelope on a ladder of eps (the next rung at or above eps).
        if self._ladder is None:
            ladder = np.linspace(0.0, max(self._curve.max_loss, 1e-9), _LADDER + 1)
            values = np.atleast_1d(self._curve.delta(ladder)) * (1.0 - _RELATIVE) - self._allowance(ladder)
            self._ladder = (ladder, np.maximum.accumulate(values[::-1])[::-1])
        ladder, envelope = self._ladder
        rung = np.searchsorted(ladder, eps, side="left")
        above = np.where(rung < ladder.size, envelope[np.minimum(rung, ladder.size - 1)], 0.0)
        return np.maximum(np.maximum(direct, above), 0.0)


def compose_tilted(laws: Sequence[batch._Law], h: float, epsilon: float, upper: bool) -> TiltedCurve:
    """The composition of ``laws`` (the batch engine's, :func:`~gce.accounting.batch.loss_law`) tilted towards
    ``epsilon`` (:func:`tilt`) and read back with its allowance (module doc): an upper curve (``upper``, the
    laws of dominating pairs) or a certified lower one (garbled pairs' laws)."""
    theta = tilt(laws, h, epsilon)
    log_m = _log_mgfs(laws, h, theta)
    tilted = []
    for law, lm in zip(laws, log_m):
        positive = law.mass > 0
        index = law.index[positive]
        mass = np.exp(np.log(law.mass[positive]) + theta * h * index - lm) if math.isfinite(lm) else law.mass[positive]
        tilted.append(batch._Law(index, mass, law.count, 0.0))
    lo, pmf, tail_below, tail_above, power_round_off = batch.convolve(tilted, h)
    size = pmf.size
    round_off = batch.ABSOLUTE_ROUND_OFF * math.sqrt(size) + batch.PRUNE * size + power_round_off
    log_z = sum(law.count * lm for law, lm in zip(laws, log_m))
    positive = pmf > 0
    s = (lo + np.flatnonzero(positive)) * h
    log_survival = sum(law.count * math.log1p(-law.infinite) if law.infinite < 1 else -math.inf for law in laws)
    infinite = -math.expm1(log_survival)
    with np.errstate(divide="ignore"):
        # far below the tilt's centre the read-back multiplies the transform's noise by e^(theta (centre - s)):
        # no mass exceeds 1 (clipping only moves an entry towards its truth; the allowance covers the rest)
        log_p = np.minimum(np.log(pmf[positive]) + log_z - theta * s, 0.0)
    curve = DiscreteLossCurve(s, log_p, infinite_mass=min(infinite, 1.0))
    out = TiltedCurve(curve, log_z, theta, 3.0 * round_off + 2.0 * (tail_below + tail_above), upper,
                      top=(lo + size - 1) * h, above=tail_above)
    out.size = size
    return out

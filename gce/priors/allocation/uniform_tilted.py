"""1 of t on the uniform grid, its transforms tilted: the round-off relative to each entry, at any delta.

The uniform grid (:mod:`.uniform_grid`) computes the law of ``S = sum_i W_i`` by one FFT power. Its round-off
is absolute, about ``t`` times the transform's error times the square root of the grid, charged as mass at
infinite loss: some ``1e-9`` at ``t = 1,000`` and ``1e-7`` at ``t = 10,000``. That is nothing at one epoch and
delta ``1e-5``, and everything over many epochs at ``1e-10`` (it is charged once an epoch). The geometric grid
(:mod:`.geometric_grid`) has relative errors but is slow where ``W`` is concentrated (large noise, many steps).
This module computes the same laws as the uniform grid with the entries' errors relative to themselves.

A ladder of tilts, stitched
---------------------------
The terms are independent, so tilting each term's masses by ``e^(theta x)`` (``x = j dx``, normalised by its
moment-generating function ``M(theta)``) tilts their sum: the FFT power of the tilted terms is
``p_theta(s) = p(s) e^(theta s dx) / prod M^count``, and ``p(s)`` is read back by multiplying by
``Z e^(-theta s dx)``. The transform's error is then about ``eta_theta`` (:data:`~.bracket.ROUND_OFF` times the
FFT's relative error, Higham Sec. 24.1, times the terms, times the L2 norm of the tilted term: a bound on every
entry, as the L2 norm of the error is) in the tilted law, so ``Z e^(-theta s dx) eta_theta`` at ``s``: small
where the tilted law has its bulk. A ladder of tilts (steps of two standard deviations of the tilted sum, both
ways, while the tilted bulk stays inside the window) covers the whole range; each entry is read from the tilt
whose allowance there is least.

The tilt is exponential in ``W``, whose law is heavy-tailed up to the clamp ``B``: a tilt much beyond
``log(1 / Q(W near B)) / B`` puts the tilted bulk at the clamp, so the ladder stops where the tilted bulk
leaves the window. For the direction P||Q at many steps and moderate noise (1 of 10,000 at sigma 1) that is
before the tail that decides small deltas: the geometric grid decides there (:mod:`.epochs` keeps whichever
composes narrower).

The cyclic wrap. A tilted law's mass beyond the window (``S >= N dx``) lands inside it; it is at most
``tau_theta``, a Chernoff bound from the terms' moment-generating functions, and is added to every entry's
allowance (each entry can receive at most all of it).

The laws
--------
*Upper* (the spread pair of :mod:`.uniform_grid`): the masses raised by their error bounds, by blocks of
entries read from one tilt (:func:`_raised`: within a block of ``L`` entries the errors add up to at most
``sqrt(L)`` times the L2 bound, charged at the block's largest loss; more mass at a larger loss only raises
delta, and under composition too, since every sum with the other epochs is a non-decreasing function of the
loss), the mass of
``S >= N dx`` charged at infinite loss by a Chernoff bound under P and Q (exact moment-generating functions of
the spread terms, no transform), the clamp's excess as before. *Lower* (the garbling by the cells of
:mod:`.uniform_grid`): per entry the P-mass lowered and the Q-mass raised by their allowances (in each outcome
``(p - e^eps q)_+`` only decreases, in both directions, and so does every product of outcomes: a lower bound
under composition too); the outcomes ``S_J >= N`` dropped (a sub-law: dropping outcomes lowers delta).

References
----------
Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., SIAM 2002 (Sec. 24.1).
Koskela, Jalko, Honkela, "Computing tight differential privacy guarantees using FFT", AISTATS 2020.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import fft as _fft

from ... import effort
from ...accounting.batch import log_mgf_of
from ...errors import NumericalLimitError
from .bracket import ROUND_OFF, _Law
from .uniform_grid import _cells, _direction_grid, _Grid, _linear_seconds, _power, _spread

#: Steps of the ladder of tilts, in standard deviations of the tilted sum (half-way between two rungs an entry's
#: allowance is at most about e^(step^2 / 8) times its least), and the most rungs.
_STEP_SDS, _RUNGS = 4.0, 24
#: The ladder stops where the untilted mass about the tilted mean is below e^this (1e-40: past every target).
_NEGLIGIBLE = math.log(1e-40)
#: Estimated seconds of a ladder's moments, whatever the grid (:func:`_tilted_seconds`).
_LADDER_SECONDS = 0.3
#: Chernoff's bounds are taken at these multiples of one standard deviation's tilt.
_CHERNOFF = 2.0 ** np.arange(-2.0, 8.5, 0.5)


def _log_mgf(mass: NDArray[np.float64], x: NDArray[np.float64], theta: NDArray[np.float64]) -> NDArray[np.float64]:
    """``log sum_j mass_j e^(theta x_j)`` at each theta (:func:`gce.accounting.batch.log_mgf_of`)."""
    keep = mass > 0
    return log_mgf_of(x[keep], mass[keep], np.atleast_1d(np.asarray(theta, dtype=float)))


def _moments(parts: Sequence[tuple[NDArray[np.float64], int]], dx: float, theta: float) -> tuple[float, float]:
    """Mean and variance of the sum under the tilt ``theta`` (each part normalised)."""
    mean = var = 0.0
    for mass, count in parts:
        x = np.arange(mass.size) * dx
        keep = mass > 0
        with np.errstate(divide="ignore"):
            log_w = np.log(mass[keep]) + theta * x[keep]
        w = np.exp(log_w - log_w.max())
        w /= w.sum()
        m = float((w * x[keep]).sum())
        mean += count * m
        var += count * float((w * (x[keep] - m) ** 2).sum())
    return mean, var


def _lambdas(parts: Sequence[tuple[NDArray[np.float64], int]], dx: float, theta: float, top: float
             ) -> NDArray[np.float64]:
    """The tilts ``lambda > 0`` at which Chernoff's bound on the mass at or above ``top`` is taken: multiples of
    one standard deviation's tilt (a light tail), and of ``1 / top`` (a heavy one up to the clamp, where the
    moment-generating function at larger tilts is dominated by the clamp's mass)."""
    _, var = _moments(parts, dx, theta)
    return np.concatenate((_CHERNOFF / max(math.sqrt(var), dx), _CHERNOFF / top))


def _beyond(parts: Sequence[tuple[NDArray[np.float64], int]], dx: float, theta: float, top: float) -> float:
    """A Chernoff bound on the mass of the sum at or above ``top`` under the tilt ``theta`` (parts as laws, each
    normalised: the tilted probability), at tilts ``theta + lambda`` for a ladder of ``lambda > 0``."""
    lambdas = _lambdas(parts, dx, theta, top)
    total = np.zeros(lambdas.size)
    for mass, count in parts:
        x = np.arange(mass.size) * dx
        total += count * (_log_mgf(mass, x, theta + lambdas) - _log_mgf(mass, x, np.array([theta]))[0])
    return float(np.exp(min(float(np.min(total - lambdas * top)), 0.0)))


def _ladder(parts: Sequence[tuple[NDArray[np.float64], int]], dx: float, size: int, which: str) -> list[float]:
    """Tilts 0, then steps of :data:`_STEP_SDS` tilted standard deviations up (``remove``: the direction P||Q
    is decided by large sums) while the tilted bulk (mean and seven deviations) stays inside the window
    ``[0, size dx)``, or down (``add``: small sums) while the tilted mean is above two cells (module doc)."""
    top = size * dx
    thetas = [0.0]
    for sign in ((1.0,) if which == "remove" else (-1.0,)):
        theta = 0.0
        for _ in range(_RUNGS):
            _, var = _moments(parts, dx, theta)
            theta += sign * _STEP_SDS / max(math.sqrt(var), dx)
            mean, var = _moments(parts, dx, theta)
            sd = math.sqrt(var)
            if (sign > 0 and mean + 7.0 * sd >= top) or (sign < 0 and mean <= 2.0 * dx) or sd < dx:
                break
            thetas.append(theta)
            # the untilted mass about the tilted mean, Z e^(-theta mean): below _NEGLIGIBLE no entry matters
            log_z = sum(count * float(_log_mgf(mass, np.arange(mass.size) * dx, np.array([theta]))[0])
                        for mass, count in parts)
            if log_z - theta * mean < _NEGLIGIBLE:
                break
    return thetas


@dataclass(frozen=True)
class _Stitched:
    """The law of a sum read from a ladder of tilts (:func:`_stitched`): per entry its value, the bound on
    its round-off error ``eta`` and on the aliased mass ``tau`` at the tilt it was read from, both already
    multiplied by the read-back factor ``Z e^(-theta s dx)`` (``round_off``, ``aliased``), that tilt's
    index (``rung``) and the tilts themselves."""

    value: NDArray[np.float64]
    round_off: NDArray[np.float64]
    aliased: NDArray[np.float64]
    rung: NDArray[np.int64]
    thetas: tuple[float, ...]

    @property
    def allowance(self) -> NDArray[np.float64]:
        """Each entry's own error bound (every entry can carry the whole L2 error and the whole aliased mass)."""
        return np.minimum(self.round_off + self.aliased, 1.0)


def _stitched(parts: Sequence[tuple[NDArray[np.float64], int]], dx: float, size: int, thetas: Sequence[float]
              ) -> _Stitched:
    """The law of the sum of the parts (each a non-negative array on ``{j dx}`` with its count of terms) on the
    ``size`` entries of the window, each entry read from the tilt of ``thetas`` whose error bound there is
    least (module doc). Values are capped at 1 (no mass exceeds it)."""
    s = np.arange(size) * dx
    terms = sum(count for _, count in parts)
    value, round_off, aliased = np.zeros(size), np.full(size, np.inf), np.full(size, np.inf)
    rung = np.zeros(size, dtype=np.int64)
    for index, theta in enumerate(thetas):
        effort.checkpoint()  # a rung is short: a step that overran on a loaded machine stops here
        spectra, log_z, l2 = [], 0.0, 0.0
        for mass, count in parts:
            x = np.arange(mass.size) * dx
            lm = float(_log_mgf(mass, x, np.array([theta]))[0])
            with np.errstate(divide="ignore"):
                tilted = np.exp(np.log(mass) + theta * x - lm)
            spectra.append((_fft.rfft(tilted, size), count))
            log_z += count * lm
            l2 = max(l2, float(np.linalg.norm(tilted)))
        y = np.maximum(_fft.irfft(_power(spectra), size), 0.0)
        # the L2 norm of the transform's error (Higham Sec. 24.1, times the power), and the tilted mass
        # beyond the window that the cyclic sum folds in
        eta = ROUND_OFF * np.finfo(float).eps * max(math.log2(size), 1.0) * (terms + 2) * l2
        tau = _beyond(parts, dx, theta, size * dx)
        scale = log_z - theta * s
        with np.errstate(divide="ignore", over="ignore"):
            r = np.exp(np.minimum(math.log(eta) + scale, 0.0))
            a = np.exp(np.minimum(math.log(tau) + scale, 0.0)) if tau > 0 else np.zeros(size)
            v = np.exp(np.minimum(np.log(y) + scale, 0.0))
        better = r + a < round_off + aliased
        value[better], round_off[better], aliased[better], rung[better] = v[better], r[better], a[better], index
    return _Stitched(value, round_off, aliased, rung, tuple(thetas))


#: Longest block of entries whose round-off is charged together (:func:`_raised`).
_BLOCK = 4096


def _raised(law: _Stitched, dx: float, top_last: bool) -> NDArray[np.float64]:
    """The upper law's masses: the values raised by their error bounds, charged by blocks.

    Within a block of ``L`` consecutive entries read from one tilt, the errors add up to at most
    ``sqrt(L)`` times the transform's L2 error bound (Cauchy and Schwarz) plus the aliased mass (at most
    ``tau`` in all), each times the block's largest read-back factor: that total is added to the block's
    entry of largest loss (the last one when ``top_last``, else the first), which raises the law's delta
    at every epsilon by at least what the errors could lower it (more mass at a larger loss). Blocks are at
    most :data:`_BLOCK` long and short enough that the read-back factor changes by at most 2 within one."""
    out = law.value.copy()
    n = out.size
    starts = np.flatnonzero(np.diff(law.rung, prepend=-1))  # runs of one tilt
    ends = np.append(starts[1:], n)
    for start, end in zip(starts, ends):
        theta = law.thetas[int(law.rung[start])]
        length = _BLOCK if theta == 0 else max(1, min(_BLOCK, int(math.log(2.0) / (abs(theta) * dx))))
        edges = np.arange(start, end, length)
        size = np.diff(np.append(edges, end))
        worst_r = np.maximum.reduceat(law.round_off[start:end], edges - start)
        worst_a = np.maximum.reduceat(law.aliased[start:end], edges - start)
        charge = np.sqrt(size) * worst_r + worst_a
        at = np.minimum(edges + size - 1, n - 1) if top_last else edges
        out[at] += charge
    return np.minimum(out, 1.0)


def _chernoff_tail(parts: Sequence[tuple[NDArray[np.float64], int]], dx: float, top: float) -> float:
    """A Chernoff bound on the (unnormalised) mass of the sum at or above ``top``: the exact
    moment-generating functions of the parts, at a ladder of tilts."""
    lambdas = _lambdas(parts, dx, 0.0, top)
    total = np.zeros(lambdas.size)
    for mass, count in parts:
        total += count * _log_mgf(mass, np.arange(mass.size) * dx, lambdas)
    return float(np.exp(min(float(np.min(total - lambdas * top)), 0.0)))


def _tilted_upper(ratio, t: int, grid: _Grid, which: str) -> _Law:
    """One direction's law of the spread pair (module doc, "The laws")."""
    law, moment, excess = _spread(ratio, grid)
    n, dx = grid.size, grid.dx
    s = np.arange(n) * dx
    finite = s > 0
    with np.errstate(divide="ignore"):
        loss = np.log(s[finite] / t)
    if which == "remove":  # P(S~ = s) = E_Q[W~_1; S~ = s]: the moment law once, the law t - 1 times
        parts = [(moment, 1), (law, t - 1)] if t > 1 else [(moment, 1)]
        p = _raised(_stitched(parts, dx, n, _ladder(parts, dx, n, which)), dx, top_last=True)
        beyond = _chernoff_tail(parts, dx, n * dx)
        return _Law(loss, p[finite], min(excess + beyond, 1.0))
    parts = [(law, t)]
    q = _raised(_stitched(parts, dx, n, _ladder(parts, dx, n, which)), dx, top_last=False)
    beyond = _chernoff_tail(parts, dx, n * dx)  # (S = 0 is the largest loss of Q||P: infinite)
    return _Law(-loss, q[finite], min(q[0] + beyond, 1.0))


def _tilted_lower(ratio, t: int, grid: _Grid, which: str) -> _Law:
    """One direction's law of the garbled pair by the cells (module doc, "The laws"), k = 1."""
    q_cells, p_cells = _cells(ratio, grid)
    n, dx = grid.size, grid.dx
    q_parts = [(q_cells, t)]
    p_parts = [(p_cells, 1), (q_cells, t - 1)] if t > 1 else [(p_cells, 1)]
    q_law = _stitched(q_parts, dx, n, _ladder(q_parts, dx, n, which))
    p_law = _stitched(p_parts, dx, n, _ladder(p_parts, dx, n, which))
    q, aq, p, ap = q_law.value, q_law.allowance, p_law.value, p_law.allowance
    only_p = ratio.singular  # a member's output outside Q's support: an outcome of its own (uniform_grid)
    if which == "remove":
        low, high, infinite = np.maximum(p - ap, 0.0), q + aq, only_p
    else:
        low, high, infinite = np.maximum(q - aq, 0.0), p + ap, 0.0
    keep = low > 0
    with np.errstate(divide="ignore"):
        loss = np.log(low[keep]) - np.log(high[keep])
    # outcomes where the other measure has no mass at all (high = 0): infinite loss for this direction
    sure = keep & (high <= 0)
    infinite += float(low[sure].sum()) if np.any(sure) else 0.0
    finite = np.isfinite(loss)
    return _Law(loss[finite], low[keep][finite], min(infinite, 1.0))


def _tilted_laws(ratio, t: int, points: int, tail: float, which: str) -> tuple[_Law, _Law, str]:
    """One direction's (upper, lower) laws of 1 of t on the uniform grid of ``points`` cells, tilted
    (module doc)."""
    grid = _direction_grid(ratio, t, points, tail, which)
    return (_tilted_upper(ratio, t, grid, which), _tilted_lower(ratio, t, grid, which),
            f"{points:,} cells, tilted")


def _tilted_seconds(ratio, t: int, points: int, tail: float, which: str) -> float:
    """Estimated seconds of :func:`_tilted_laws`: three times the plain grid's estimate (a ladder of a few
    rungs, three sums a rung, short where the grid is large) and :data:`_LADDER_SECONDS` for the ladder's
    moments (from the grid's size, never measured: measured 0.04 to 7.9 s against estimates of 0.3 to 29 s)."""
    seconds = _linear_seconds(ratio, t, points, tail, which)
    return 0.0 if seconds == 0.0 else 3.0 * seconds + _LADDER_SECONDS

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

The window
----------
At many steps the sum ``S`` of ``t`` ratios concentrates about ``t`` (standard deviation ``sqrt(t Var W)``: 34 at
``t = 10,000``, sigma 3) while a grid from 0 must hold ``t / dx`` cells: at the cells the loss needs (``epsilon``
is 0.008 there, so a 1% bracket needs the loss ``log(S / t)`` to about ``1e-5``) that passed the grid limit, and
the geometric grid's cells (``rho t``: 40 at ``rho = 1/256``) were wider than the sum's spread. The cyclic
transform needs no origin: entry ``r`` holds every ``s`` with ``s = r mod N``, so the window ``[b, b + N)`` (cells)
is read by a rotation, each entry at its own ``s``. It is placed by Chernoff's bounds on both tails of the four
laws (the spread's and the garbling's, under P and Q; :func:`_window_grid`), at ``tail^2 1e-10``: deep enough
for the ladder's rungs to reach past the target. Above, the mass outside the window (Chernoff's bounds, both
tails) is charged at infinite loss, besides the folded copies already in the entries (more mass only raises
delta); below, its outcomes are dropped (a sub-law), the folded ones covered by the aliased allowance
``tau``, which now bounds the tilted mass on both sides. The error of the spread is still of second order: a
term's spread adds at most ``dx^2 / 4`` to its variance, ``t dx^2 / 4`` to the sum's, so the epsilon moves by
about ``dx^2 / (8 Var W)`` of itself (0.005% at sigma 3 with 1,024 cells up to the clamp), and the garbling's
loss is as small. Where the window saves less than half of the grid from 0 (few steps) the grid from 0 is
kept, as before.

Heavy tails
-----------
The tilt ``e^(theta W)`` of a lognormal term clamped at ``B`` piles the tilted mass at ``B`` once ``theta B``
passes ``log(1 / Q(W near B))``: at sigma 1, 1 of 10,000, delta 1e-8, the clamp is about 1,400 and the tilt
that moves the sum to the target (``theta`` about 0.04) already passes it, so the ladder stops at the untilted
law, whose round-off allowance (1e-10 an entry) swamps the target. For P||Q (the direction decided by large
sums) the terms are split at the *heavy cut* ``c``, where one term's Q-mass above is ``1e-3 / t``: with ``L``
and ``H`` the masses below and from ``c`` (a term's law is ``L + H``), the sum's law is the binomial expansion
``(L + H)^m = sum_n C(m, n) L^(m - n) H^n`` (exact: no conditioning), the member's law split the same way. The
light sums ``L^(m - n)`` are tilted without obstruction (their terms stop at ``c``); the heavy powers and the
products are direct convolutions of non-negative terms (relative round-off, :data:`ROUND_OFF` times twice the
lengths times ``u``), except the products whose FFT errs by at most a share of the clamp's tail in all
(:func:`_strided`: the pieces of two or more heavy terms, whose mass is far below the target, and which were
half the time of a training run's epochs), each entry's error then charged (above: ``sqrt(size)`` times the
L2 bound at the product's largest loss; below: entrywise); the heavy cells go to a coarser grid (at most
:data:`_HEAVY_POINTS`, cells at most ``c dx / 32``): above, each point split between its coarse neighbours keeping
its mean (a spread of the spread: convex order holds), the member's P-masses recomputed as the Q-masses times the
points; below, the cells merged (a coarser statistic: a garbling). Above, each light sum is raised by blocks
(:func:`_raised`) before it is convolved: the raised law has larger upper tails than the true one, and a
convolution with a non-negative law keeps that, so delta only rises; the binomial tail beyond :data:`_HEAVY_TERMS`
heavy terms (at most the clamp's ``tail``) is charged at infinite loss. Below, the light sums enter entrywise
lowered (P) and raised (Q), and Q's binomial tail beyond the terms composed is the lower law's ``slack_other``
(``sum (p - e^eps q)_+`` falls by at most ``e^eps`` times the Q-mass left out). Measured (1 of 10,000 at rtol 1%,
one epoch, a loaded 2-core machine): sigma 3 at 1e-5 [0.0081521, 0.0081543] in 0.6 s (was [0.00791, 0.00878] in
24-56 s); sigma 1 at 1e-8 [0.060365, 0.060474] in 1.8 s (was 2.7% wide in 22-28 s); sigma 2 at 1e-10 [0.027714,
0.027737] in 2.3 s (was 4.0%, 35 s); 10 epochs of sigma 1 at 1e-8 through :mod:`.epochs`: [0.19544, 0.19736] 0.98%
in 11 s (was 2.2%).

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

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import fft as _fft
from scipy import special

from ... import effort
from ...accounting.batch import log_mgf_of
from ...errors import NumericalLimitError
from .bracket import ROUND_OFF, _fft_seconds, _Law
from .uniform_grid import GRID_LIMIT, _cells, _Grid, _power, _spread, _transform_error

#: Steps of the ladder of tilts, in standard deviations of the tilted sum (half-way between two rungs an entry's
#: allowance is at most about e^(step^2 / 8) times its least), and the most rungs.
_STEP_SDS, _RUNGS = 4.0, 24
#: On a window (not from 0), the ladder stops where the tilted mean is this many deviations from its end.
_BULK_SDS = 5.0
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


def _below(parts: Sequence[tuple[NDArray[np.float64], int]], dx: float, theta: float, bottom: float) -> float:
    """A Chernoff bound on the mass of the sum below ``bottom`` under the tilt ``theta`` (as :func:`_beyond`, at
    tilts ``theta - lambda``); 0 when ``bottom <= 0``."""
    if bottom <= 0.0:
        return 0.0
    lambdas = _lambdas(parts, dx, theta, bottom)
    total = np.zeros(lambdas.size)
    for mass, count in parts:
        x = np.arange(mass.size) * dx
        total += count * (_log_mgf(mass, x, theta - lambdas) - _log_mgf(mass, x, np.array([theta]))[0])
    return float(np.exp(min(float(np.min(total + lambdas * bottom)), 0.0)))


def _outside(parts: Sequence[tuple[NDArray[np.float64], int]], dx: float, theta: float, bottom: float,
             top: float) -> float:
    """Chernoff's bounds on the tilted mass of the sum below ``bottom`` and at or above ``top``, added."""
    return min(_beyond(parts, dx, theta, top) + _below(parts, dx, theta, bottom), 1.0)


def _ladder(parts: Sequence[tuple[NDArray[np.float64], int]], dx: float, size: int, which: str,
            start: int = 0) -> list[float]:
    """Tilts 0, then steps of :data:`_STEP_SDS` tilted standard deviations up (``remove``: the direction P||Q
    is decided by large sums) while the tilted bulk (mean and seven deviations) stays inside the window
    ``[start dx, (start + size) dx)``, or down (``add``: small sums) while the tilted mean is above two cells
    (the window from 0) or its bulk above the window's bottom (module doc)."""
    top = (start + size) * dx
    bottom = start * dx
    thetas = [0.0]
    for sign in ((1.0,) if which == "remove" else (-1.0,)):
        theta = 0.0
        for _ in range(_RUNGS):
            _, var = _moments(parts, dx, theta)
            theta += sign * _STEP_SDS / max(math.sqrt(var), dx)
            mean, var = _moments(parts, dx, theta)
            sd = math.sqrt(var)
            low = mean <= bottom + 2.0 * dx
            reach = 7.0 if start == 0 else _BULK_SDS
            if (sign > 0 and mean + reach * sd >= top) or (sign < 0 and low) or sd < dx:
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


def _folded(x: NDArray[np.float64], size: int) -> NDArray[np.float64]:
    """``x`` summed modulo ``size`` (the cyclic transform of a term longer than the window: exact)."""
    if x.size <= size:
        return x
    padded = np.zeros(-(-x.size // size) * size)
    padded[: x.size] = x
    return padded.reshape(-1, size).sum(axis=0)


def _stitched(parts: Sequence[tuple[NDArray[np.float64], int]], dx: float, size: int, thetas: Sequence[float],
              start: int = 0) -> _Stitched:
    """The law of the sum of the parts (each a non-negative array on ``{j dx}`` with its count of terms) on the
    ``size`` entries of the window ``s = start .. start + size - 1`` (in cells), each entry read from the tilt
    of ``thetas`` whose error bound there is least (module doc). Values are capped at 1 (no mass exceeds it)."""
    s = (start + np.arange(size)) * dx
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
            spectra.append((_fft.rfft(_folded(tilted, size), size), count))
            log_z += count * lm
            l2 = max(l2, float(np.linalg.norm(tilted)))
        y = np.maximum(_fft.irfft(_power(spectra), size), 0.0)
        if start:  # the cyclic index of s is s mod size
            y = np.roll(y, -(start % size))
        # the L2 norm of the transform's error (Higham Sec. 24.1, times the power), and the tilted mass
        # outside the window that the cyclic sum folds in
        eta = _transform_error(size, terms, l2)
        tau = _outside(parts, dx, theta, start * dx, (start + size) * dx)
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


def _chernoff_tail(parts: Sequence[tuple[NDArray[np.float64], int]], dx: float, top: float,
                   bottom: float = 0.0) -> float:
    """A Chernoff bound on the (unnormalised) mass of the sum at or above ``top`` and, when ``bottom > 0``,
    below ``bottom``: the exact moment-generating functions of the parts, at a ladder of tilts. The mass
    outside a window lands, folded, on other entries: charged at infinite loss (module doc, "The window")."""
    lambdas = _lambdas(parts, dx, 0.0, top)
    total = np.zeros(lambdas.size)
    for mass, count in parts:
        total += count * _log_mgf(mass, np.arange(mass.size) * dx, lambdas)
    above = float(np.exp(min(float(np.min(total - lambdas * top)), 0.0)))
    if bottom <= 0.0:
        return above
    lambdas = _lambdas(parts, dx, 0.0, bottom)
    total = np.zeros(lambdas.size)
    for mass, count in parts:
        total += count * _log_mgf(mass, np.arange(mass.size) * dx, -lambdas)
    return min(above + float(np.exp(min(float(np.min(total + lambdas * bottom)), 0.0))), 1.0)


#: The heavy split (module doc, "Heavy tails"): one term's cells from the cut up are heavy, the cut where a
#: term's Q-mass above it is at most ``_HEAVY / t``; at most :data:`_HEAVY_TERMS` heavy terms are composed
#: (the binomial tail beyond is charged).
_HEAVY = 1e-3
_HEAVY_TERMS = 4
#: Most coarse cells of one term's heavy part (:func:`_coarse_heavy`).
_HEAVY_POINTS = 512
#: ... and at most ``1 / this`` of the cut (relative to the heavy values: the spread's error is of second order).
_HEAVY_RELATIVE = 32
#: Estimated seconds per multiply-add of the heavy split's direct convolutions (measured 1.2e-9 on a loaded
#: 2-core machine; with a margin): only decides whether a step fits.
_CONVOLVE_SECONDS = 2e-9
#: Allocations of more databases than this are split (fewer: the binomial expansion has no room).
_SPLIT_FROM = 64
_U = float(np.finfo(float).eps)
#: The transforms' error summed over the heavy split's products is at most this share of the clamp's tail
#: (:func:`_strided`); and products shorter than this (length times length) are summed directly.
_FFT_SHARE, _FFT_FROM = 10.0, 1 << 20


def _cut(term: NDArray[np.float64], t: int) -> int | None:
    """The first heavy cell of ``term`` (module doc, "Heavy tails"), or None when no cell is heavy."""
    tails = np.cumsum(term[::-1])[::-1]
    above = np.flatnonzero(tails <= _HEAVY / t)
    c = int(above[0]) if above.size else term.size
    return c if 0 < c < term.size else None


def _heavy_count(term: NDArray[np.float64], c: int, m: int, tail: float) -> tuple[int, float]:
    """How many heavy terms of ``m`` are composed, and the mass of the outcomes with more: the least count
    whose binomial tail is at most ``tail`` (at most :data:`_HEAVY_TERMS`)."""
    light, heavy = float(term[:c].sum()), float(term[c:].sum())
    total = light + heavy
    if heavy <= 0.0:
        return 0, 0.0
    for n in range(min(_HEAVY_TERMS, m) + 1):
        rest = float(special.bdtrc(n, m, heavy / total)) * total**m if n < m else 0.0  # binomial P(> n)
        if rest <= tail or n == min(_HEAVY_TERMS, m):
            return n, rest
    raise AssertionError("unreachable")


def _entrywise(law: _Stitched, side: str) -> NDArray[np.float64]:
    """Entrywise bounds on a stitched law: each entry's error is at most its own allowance (module doc)."""
    if side == "up":
        return np.minimum(law.value + law.allowance, 1.0)
    return np.maximum(law.value - law.allowance, 0.0)


def _coarse_heavy(member: NDArray[np.float64] | None, term: NDArray[np.float64], c: int, dx: float,
                  spread: bool) -> tuple[NDArray[np.float64] | None, NDArray[np.float64], int]:
    """The heavy cells (from ``c`` up) on a coarser grid ``c + stride b`` (module doc, "Heavy tails"):
    ``spread``, each point split between its two coarse neighbours keeping its mean (a spread of a spread:
    above), the member's masses then the law's times the points (its P-masses); else the cells merged, Q- and
    P-masses summed (a coarser garbling: below). Returns (member's heavy masses, term's, stride)."""
    heavy = term[c:]
    stride = max(1, min(-(-heavy.size // _HEAVY_POINTS), c // _HEAVY_RELATIVE))  # coarse cells <= c dx / 32
    if stride == 1:
        return (None if member is None else member[c:]), heavy, 1
    coarse = -(-heavy.size // stride) + 1
    j = np.arange(heavy.size)
    b, r = j // stride, (j % stride) / stride
    if spread:
        out = np.bincount(b, heavy * (1.0 - r), coarse) + np.bincount(b + 1, heavy * r, coarse)
        moment = None if member is None else out * ((c + stride * np.arange(coarse)) * dx)
        return moment, out, stride
    out = np.bincount(b, heavy, coarse)
    return (None if member is None else np.bincount(b, member[c:], coarse)), out, stride


def _strided(sums: NDArray[np.float64], factor: NDArray[np.float64], stride: int, budget: float = 0.0,
             charged: bool = False) -> tuple[NDArray[np.float64], float]:
    """``sums`` (unit cells) convolved with ``factor`` on cells ``stride`` apart, and a bound ``eta`` on the
    L2 norm of its error (0 when exact up to the relative round-off of direct sums).

    Both are non-negative. Direct convolution (one per phase of ``sums``) has a relative round-off of the
    shorter length. The FFT of the two (``factor`` spread to unit cells) errs by at most ``eta`` in L2 norm,
    :func:`~.uniform_grid._transform_error` for two terms (``ROUND_OFF u log2(n) 4 max(|a|_1 |b|_2, |a|_2
    |b|_1)``), so by at most ``eta`` in every entry and ``sqrt(size) eta`` in all (Cauchy and Schwarz).
    It is used when what the caller charges is at most ``budget`` (a share of the clamp's tail: the pieces
    of many heavy terms, whose mass is far below the target): the total when ``charged``, else ``eta`` in
    each entry; otherwise the direct sums."""
    size = sums.size + stride * (factor.size - 1)
    if budget > 0.0 and sums.size * factor.size > _FFT_FROM:
        n = _fft.next_fast_len(size, real=True)
        a1, b1 = float(sums.sum()), float(factor.sum())
        a2, b2 = float(np.linalg.norm(sums)), float(np.linalg.norm(factor))
        eta = _transform_error(n, 2, max(a1 * b2, a2 * b1))
        if (math.sqrt(size) if charged else size) * eta <= budget:
            spread = np.zeros(stride * (factor.size - 1) + 1)
            spread[::stride] = factor
            y = _fft.irfft(_fft.rfft(sums, n) * _fft.rfft(spread, n), n)[:size]
            return np.maximum(y, 0.0), eta
    if stride == 1:
        return np.convolve(sums, factor), 0.0
    out = np.zeros(size)
    for phase in range(min(stride, sums.size)):
        part = np.convolve(sums[phase::stride], factor)
        out[phase: phase + stride * part.size: stride] += part
    return out, 0.0


def _split(member: NDArray[np.float64] | None, term: NDArray[np.float64], m: int, dx: float, grid: _Grid,
           c: int, heavy_terms: int, mode: str, which: str, budget: float = 0.0
           ) -> tuple[NDArray[np.float64], float]:
    """The law of ``member + m terms`` split at the heavy cut ``c`` (module doc, "Heavy tails"): the binomial
    expansion ``(L + H)^m = sum_n C(m, n) L^(m - n) H^n`` (the member split the same way), the light powers
    by the tilted transform on the window, the heavy cells on a coarser grid (:func:`_coarse_heavy`), their
    powers and the products by direct convolution (non-negative terms: a relative round-off). ``mode``:
    ``raised`` (an upper law: the heavy cells spread, the light sums raised by blocks as :func:`_raised`; tail
    dominance survives convolution with non-negative laws), ``up`` or ``down`` (the garbling's entrywise
    bounds, the heavy cells merged). Returns the law on the entries ``start, start + 1, ...`` of ``grid``
    (longer than its window) and the mass of the light sums outside the window (Chernoff's bound, weighted by
    the heavy factor's mass; to be charged)."""
    n_window, start = grid.size, grid.start
    light = term[:c]
    member_heavy, heavy, stride = _coarse_heavy(member, term, c, dx, spread=mode == "raised")
    powers = [np.ones(1)]
    for _ in range(heavy_terms):
        powers.append(np.convolve(powers[-1], heavy))
    pieces = []  # (light parts, heavy factor on the coarse grid, offset of the heavy factor in cells)
    for n in range(heavy_terms + 1):
        weight = float(math.comb(m, n))
        rest = [(light, m - n)] if m - n > 0 else []
        if member is None:
            pieces.append((rest, weight * powers[n], n * c))
        else:
            pieces.append(([(member[:c], 1)] + rest, weight * powers[n], n * c))
            pieces.append((rest, weight * np.convolve(member_heavy, powers[n]), (n + 1) * c))
    out = np.zeros(n_window + (heavy_terms + 2) * (term.size + stride) + 2)
    relative, outside = 0.0, 0.0
    for parts, factor, offset in pieces:
        effort.checkpoint()
        if any(count > 0 and not np.any(mass > 0) for mass, count in parts):
            continue  # a part of no mass (all of a term beyond the cut: very small noise): a piece of probability 0
        if not parts:  # heavy terms only (t of them): the sum of none is the point 0, below the window's start
            product, _ = _strided(np.ones(1), factor, stride)
            at = offset - start
            if at < 0:  # below the window: merged into its first entry (a larger S: a garbling, and above, a
                product = np.concatenate(([product[:-at].sum()], product[-at:]))  # larger loss for P||Q)
                at = 0
            out[at: at + product.size] += product
            continue
        law = _stitched(parts, dx, n_window, _ladder(parts, dx, n_window, which, start), start)
        sums = _raised(law, dx, top_last=which == "remove") if mode == "raised" else \
            _entrywise(law, "up" if mode == "up" else "down")
        outside += float(factor.sum()) * _chernoff_tail(parts, dx, (start + n_window) * dx, start * dx)
        product, eta = _strided(sums, factor, stride, budget / len(pieces), charged=mode == "raised")
        of_powers = (heavy_terms + 2) * heavy.size  # the lengths of the heavy powers' direct sums, and of this one's
        direct = min(-(-sums.size // stride), factor.size) if eta == 0.0 else 0
        relative = max(relative, 2.0 * _U * (of_powers + direct))
        if eta > 0.0 and mode == "raised":  # the transform's errors, at most sqrt(size) eta in all, charged at
            product[-1] += math.sqrt(product.size) * eta  # the product's largest sum (P||Q: its largest loss)
        elif eta > 0.0:  # the garbling's entrywise bounds: each entry's error is at most eta
            product = np.maximum(product - eta, 0.0) if mode == "down" else product + eta
        out[offset: offset + product.size] += product
    scale = 1.0 + ROUND_OFF * relative if mode != "down" else 1.0 - ROUND_OFF * relative
    return out * scale, outside


def _tilted_upper(ratio, t: int, grid: _Grid, which: str, tail: float | None = None) -> _Law:
    """One direction's law of the spread pair (module doc, "The laws"), on the window of ``grid``; with
    ``tail``, P||Q split at the heavy cut (module doc, "Heavy tails"; the binomial tail beyond the heavy terms
    composed at most ``tail``, charged)."""
    law, moment, excess = _spread(ratio, grid)
    n, dx, start = grid.size, grid.dx, grid.start
    c = _cut(law, t) if which == "remove" and tail is not None and t > _SPLIT_FROM else None
    if c is not None:
        heavy_terms, rest = _heavy_count(law, c, t - 1, tail)
        p, outside = _split(moment, law, t - 1, dx, grid, c, heavy_terms, "raised", which, _FFT_SHARE * tail)
        s = (start + np.arange(p.size)) * dx
        finite = s > 0
        return _Law(np.log(s[finite] / t), p[finite], min(excess + outside + rest, 1.0))
    s = (start + np.arange(n)) * dx
    finite = s > 0
    with np.errstate(divide="ignore"):
        loss = np.log(s[finite] / t)
    if which == "remove":  # P(S~ = s) = E_Q[W~_1; S~ = s]: the moment law once, the law t - 1 times
        parts = [(moment, 1), (law, t - 1)] if t > 1 else [(moment, 1)]
        p = _raised(_stitched(parts, dx, n, _ladder(parts, dx, n, which, start), start), dx, top_last=True)
        beyond = _chernoff_tail(parts, dx, (start + n) * dx, start * dx)
        return _Law(loss, p[finite], min(excess + beyond, 1.0))
    parts = [(law, t)]
    q = _raised(_stitched(parts, dx, n, _ladder(parts, dx, n, which, start), start), dx, top_last=False)
    beyond = _chernoff_tail(parts, dx, (start + n) * dx, start * dx)  # (S = 0 is the largest loss of Q||P)
    return _Law(-loss, q[finite], min((q[0] if start == 0 else 0.0) + beyond, 1.0))


def _tilted_lower(ratio, t: int, grid: _Grid, which: str, tail: float | None = None) -> _Law:
    """One direction's law of the garbled pair by the cells (module doc, "The laws"), k = 1; with ``tail``,
    P||Q split at the heavy cut (module doc, "Heavy tails")."""
    q_cells, p_cells = _cells(ratio, grid)
    n, dx = grid.size, grid.dx
    c = _cut(q_cells, t) if which == "remove" and tail is not None and t > _SPLIT_FROM else None
    if c is not None:
        p, _ = _split(p_cells, q_cells, t - 1, dx, grid, c, _heavy_count(q_cells, c, t - 1, tail)[0], "down", which,
                      _FFT_SHARE * tail)
        heavy_terms, rest = _heavy_count(q_cells, c, t, tail)
        q, _ = _split(None, q_cells, t, dx, grid, c, heavy_terms, "up", which, _FFT_SHARE * tail)
        size = max(p.size, q.size)
        p, q = np.pad(p, (0, size - p.size)), np.pad(q, (0, size - q.size))
        keep = p > 0
        with np.errstate(divide="ignore"):
            loss = np.log(p[keep]) - np.log(q[keep])
        sure = keep & (q <= 0)
        infinite = ratio.singular + (float(p[sure].sum()) if np.any(sure) else 0.0)
        finite = np.isfinite(loss)
        # the Q-mass of more heavy terms than composed: lowering Q's masses by it costs at most e^eps times
        # it (the lower curve's slack_other)
        return _Law(loss[finite], p[keep][finite], min(infinite, 1.0), 0.0, rest)
    q_parts = [(q_cells, t)]
    p_parts = [(p_cells, 1), (q_cells, t - 1)] if t > 1 else [(p_cells, 1)]
    start = grid.start
    q_law = _stitched(q_parts, dx, n, _ladder(q_parts, dx, n, which, start), start)
    p_law = _stitched(p_parts, dx, n, _ladder(p_parts, dx, n, which, start), start)
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


#: The window reaches where Chernoff's bound on the mass beyond it is ``tail^2 e^this``: deep enough that the
#: ladder's tilted bulk (five deviations) fits about the sums that decide the target (at ``tail``).
_WINDOW_DEPTH = math.log(1e-10)
#: Points of the first tilted grid (:mod:`.one_of_t`; each refinement doubles them): on its window the sum
#: costs little, and its error is of second order in the cell.
TILTED_START_POINTS = 1024
#: The window is used where it is at most this share of the plain grid's (uniform_grid._grid, from 0).
_WINDOW_SAVES = 0.5
#: Tilts at which the window's Chernoff bounds are taken: ``2^(j/2)`` times one over the sum's spread.
_WINDOW_LAMBDAS = 2.0 ** np.arange(-40.0, 16.5, 0.5)


def _window_log_mgf(mass: NDArray[np.float64], dx: float, lambdas: NDArray[np.float64]) -> NDArray[np.float64]:
    """:func:`_log_mgf` of one term at each tilt, in chunks (a term of a million cells and a hundred tilts)."""
    x = np.arange(mass.size) * dx
    return np.concatenate([_log_mgf(mass, x, lambdas[i:i + 8]) for i in range(0, lambdas.size, 8)])


@functools.lru_cache(maxsize=64)
def _window_grid(ratio, t: int, points: int, tail: float, which: str) -> _Grid:
    """The grid of :func:`~.uniform_grid._direction_grid` (``points`` cells up to the clamp) with the sum's
    window where its laws have their mass (module doc, "The window"): from the largest ``b`` with Chernoff's
    bound on the mass below ``b`` at most ``tail`` (under P and under Q) to the least ``c`` with the mass at or
    above ``c`` at most ``tail``. Raises :class:`NumericalLimitError` beyond :data:`~.uniform_grid.GRID_LIMIT`."""
    clamp = ratio.clamp(tail)
    if which == "add":
        clamp = min(clamp, float(t))
    dx = clamp / points
    base = _Grid(dx, points, points + 1)
    sd = math.sqrt(max(t * min(ratio.variance(), clamp * clamp), dx * dx))
    lambdas = _WINDOW_LAMBDAS / sd
    log_tail = max(2.0 * math.log(tail) + _WINDOW_DEPTH, math.log(1e-300))
    ups, downs = [], []
    for q, p in (_spread(ratio, base)[:2], _cells(ratio, base)):  # the spread's laws and the garbling's
        k_q_up, k_q_down = _window_log_mgf(q, dx, lambdas), _window_log_mgf(q, dx, -lambdas)
        k_p_up, k_p_down = _window_log_mgf(p, dx, lambdas), _window_log_mgf(p, dx, -lambdas)
        ups += [t * k_q_up, k_p_up + (t - 1) * k_q_up]
        downs += [t * k_q_down, k_p_down + (t - 1) * k_q_down]
    with np.errstate(invalid="ignore", divide="ignore"):  # (a spread too large for any tilt: no window)
        top = max(float(np.nanmin((k - log_tail) / lambdas)) for k in ups)
        bottom = min(float(np.nanmax((log_tail - k) / lambdas)) for k in downs)
    windowed = math.isfinite(top) and math.isfinite(bottom)
    start = max(int(math.floor(bottom / dx)) - 1, 0) if windowed else 0
    end = min(int(math.ceil(top / dx)) + 2, t * points + 1) if windowed else t * points + 1
    plain = t + 12.0 * sd + clamp + 2.0 * dx  # the window of the plain grid (uniform_grid._grid), from 0
    if not math.isfinite(plain / dx):  # a ratio of unbounded variance (very small noise): no grid holds it
        raise NumericalLimitError("random allocation: the sum's spread is beyond any grid")
    if not windowed or end - start > _WINDOW_SAVES * plain / dx:  # a window saves little: the plain one
        start, end = 0, int(math.ceil(plain / dx)) + points + 2
    size = _fft.next_fast_len(max(end - start, 2), real=True)
    if size > GRID_LIMIT:
        raise NumericalLimitError(f"random allocation: a window of {size:,} points exceeds the limit of "
                                  f"{GRID_LIMIT:,}")
    return _Grid(dx, points, size, start)


def _tilted_laws(ratio, t: int, points: int, tail: float, which: str) -> tuple[_Law, _Law, str]:
    """One direction's (upper, lower) laws of 1 of t on the uniform grid of ``points`` cells, tilted, on the
    window where the sum's laws have their mass (module doc)."""
    grid = _window_grid(ratio, t, points, tail, which)
    return (_tilted_upper(ratio, t, grid, which, tail), _tilted_lower(ratio, t, grid, which, tail),
            f"{points:,} cells, tilted")


def _tilted_seconds(ratio, t: int, points: int, tail: float, which: str) -> float:
    """Estimated seconds of :func:`_tilted_laws`: three times a plain law's on the window (a ladder of a few
    rungs, three sums a rung, short where the grid is large), :data:`_LADDER_SECONDS` for the ladder's
    moments and the heavy split's convolutions (from the grid's size, never measured)."""
    try:
        size = _window_grid(ratio, t, points, tail, which).size
    except NumericalLimitError:
        return 0.0
    # the heavy split (P||Q at many steps): about fifteen light sums, each convolved with the coarse heavy cells
    split = 15.0 * size * _HEAVY_POINTS * _CONVOLVE_SECONDS if which == "remove" and t > _SPLIT_FROM else 0.0
    return 3.0 * _fft_seconds(size) + _LADDER_SECONDS + split

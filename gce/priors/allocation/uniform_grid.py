"""1 of t on a uniform grid: the law of ``S = sum_i W_i`` by one FFT (package doc, "The pair, written under Q").

Certified rounding: a spread above, a garbling below
----------------------------------------------------
*Upper.* Each ``W_i`` (clamped at ``B``) is replaced by a mean-preserving spread ``W~_i`` onto the grid
``{j dx}``: the mass at ``w`` in ``[j dx, (j+1) dx)`` goes to ``j dx`` and ``(j+1) dx`` with weights that keep
its mean. Then ``E[S~ | S] = S``, and Jensen's inequality for the convex functions of the package doc gives
``E h(S~) >= E h(S)`` for every ``gamma > 0``: the spread pair dominates the true one in the Blackwell order
(the likelihood ratio of one experiment is a mean-preserving spread of the other's), so it also dominates it
under composition. Clamping at ``B``: the mass of ``W >= B`` keeps Q-mass ``q`` at ``B`` (P-mass ``B q``) and
its remaining P-mass ``E_Q[(W - B)_+]`` becomes mass outside Q's support: the true pair is the post-processing
"merge the two" of that one. For the direction Q||P the clamp is exact once ``B >= t`` (then ``S >= t`` and
the integrand is 0 either way).

*Lower.* The statistic ``S_J = sum_i floor(W_i / dx)`` (cells, the last one ``[B, inf)``) is a function of
the output, so the pair of its laws under P and Q is a post-processing of the true pair, and its divergence
is a lower bound (data processing). Its laws are convolutions too: under Q of the cell masses ``q_j``, under
P of ``q_j`` for ``t - k`` terms and of the tilted cell masses ``p_j = P_i(cell j) = E_Q[W; cell j]`` for
``k`` terms (by exchangeability the member's coordinate can be taken to be the first ones).
For k = 1 this equals Jensen's bound ``E h(E[S | S_J])``: the bracket is of second order in ``dx``.

The cyclic FFT: a garbling below, a charge above
------------------------------------------------
The FFT of size ``N`` adds up the mass of ``S_J = s`` and ``s + N``: merging outcomes, a post-processing
again, so the lower bound stays valid. Above, the mass of ``S~ >= N dx`` lands too low; its amount under P is
at most ``(E_P[S~] - sum_s s dx P~(s)) / (N dx)``, both terms known (the first from the moments of one term),
and it is charged as mass at infinite loss.

Floating point
--------------
The transforms' round-off is covered by an allowance (:data:`ROUND_OFF`): per law, an estimate of the L1
error (square root of the grid times the L2 error of an FFT power, Higham, "Accuracy and Stability of
Numerical Algorithms", Sec. 24.1), charged at infinite loss above and subtracted below (times ``e^eps`` for
the other measure's mass). As for :mod:`gce.accounting.batch`, this is an estimate checked by the tests
against direct convolution and quadrature, not a proof.

References
----------
Blackwell, "Equivalent comparisons of experiments", Ann. Math. Stat. 1953 (garblings and dominance).
Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., SIAM 2002 (Sec. 24.1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import fft as _fft

from ...errors import NumericalLimitError
from .bracket import _WHICH, ROUND_OFF, _fft_seconds, _Law
from .ratios import GaussianRatio


#: Largest single-term grid (points) and FFT size: beyond it the computation declines.
GRID_LIMIT = 2**22
#: Points of the first grid; each refinement doubles them.
START_POINTS = 2**12


@dataclass(frozen=True)
class _Grid:
    """Cells of width ``dx`` up to the clamp ``B = points * dx`` and the FFT size ``size``; the sum's entries
    are ``s = start .. start + size - 1`` (in cells: a window, :mod:`.uniform_tilted`; 0 for this module)."""

    dx: float
    points: int
    size: int
    start: int = 0

    @property
    def clamp(self) -> float:
        return self.points * self.dx


def _spread(ratio: GaussianRatio, grid: _Grid) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
    """The mean-preserving spread of ``min(W, B)`` onto ``{0, dx, ..., B}``: (Q-masses, first-moment masses
    ``j dx Q(j)``, P-mass left outside Q's support ``E[(W - B)_+]``) (module doc)."""
    m, dx = grid.points, grid.dx
    edges = np.append(np.arange(m + 1) * dx, np.inf)
    q, p = ratio.cells(edges)
    j = np.arange(m, dtype=float)
    law = np.zeros(m + 1)
    law[:-1] += (j + 1.0) * q[:-1] - p[:-1] / dx  # the share of cell j kept at j dx
    law[1:] += p[:-1] / dx - j * q[:-1]           # the share moved to (j + 1) dx
    law[-1] += q[-1]                               # W >= B: clamped at B
    law = np.maximum(law, 0.0)
    return law, law * (np.arange(m + 1) * dx), ratio.excess(grid.clamp)


def _cells(ratio: GaussianRatio, grid: _Grid) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Q- and P-masses of the cells ``[j dx, (j+1) dx)``, j < points, and ``[B, inf)`` (the garbling)."""
    edges = np.append(np.arange(grid.points + 1) * grid.dx, np.inf)
    return ratio.cells(edges)


def _transform_error(size: int, terms: int, l2: float) -> float:
    """Bound on the L2 norm of the error of the inverse transform (``size`` points) of a product of ``terms``
    transformed laws of mass at most 1, the largest of their L2 norms ``l2`` (module doc, "Floating point";
    Higham Sec. 24.1); for laws of masses ``m_i``, ``l2`` is the largest of their L2 norms times the others'
    masses (the bound scales with the product of the masses)."""
    return ROUND_OFF * np.finfo(float).eps * max(math.log2(size), 1.0) * (terms + 2) * l2


def _noise(size: int, terms: int, laws: Sequence[NDArray[np.float64]]) -> float:
    """Estimated L1 error of the inverse transform of a product of ``terms`` transformed laws
    (module doc, "Floating point"): :func:`_entry_noise` times the root of the points."""
    return _entry_noise(size, terms, laws) * math.sqrt(size)


def _entry_noise(size: int, terms: int, laws: Sequence[NDArray[np.float64]]) -> float:
    """Estimated error of each point of the same inverse transform: :func:`_transform_error`, the L2 bound,
    which no point's error exceeds (``|x_j| <= ||x||_2``)."""
    return _transform_error(size, terms, max(float(np.linalg.norm(x)) for x in laws))


def integer_power(spectrum: NDArray[np.complex128], count: int) -> NDArray[np.complex128]:
    """``spectrum ** count`` (``count >= 1``) by repeated squaring, as numpy's own power does below a count
    of 100; above it numpy calls the complex ``pow``, thirty times slower (0.8 ms on 3,000 points at 338).
    Each product of two numbers of modulus at most 1 (a law's transform) adds at most a few ``eps`` to the
    error it inherits, which squaring doubles: the error of the power stays linear in ``count``, as the
    allowance (:func:`_transform_error`) takes it (module doc, "Floating point")."""
    if count < 1:
        raise ValueError(f"count must be at least 1, got {count}")
    out, base = None, spectrum
    while True:
        if count & 1:
            out = base.copy() if out is None else np.multiply(out, base, out=out)
        count >>= 1
        if not count:
            return out
        # squared in place once it is a new array: two arrays a power (allocating large arrays is slow where
        # the freed memory goes back to the system, as in virtual machines that report it to their host)
        base = base * base if base is spectrum else np.multiply(base, base, out=base)


def _power(spectra: Sequence[tuple[NDArray[np.complex128], int]],
           times: NDArray[np.complex128] | None = None) -> NDArray[np.complex128]:
    """The product of the ``spectra`` each raised to its count (:func:`integer_power`; a count of 0 left out),
    multiplied in place: every factor is a new array; then times ``times`` where given (left unchanged: a power
    its caller carries on, :func:`.circle._carried`)."""
    out = None
    for spectrum, count in spectra:
        if count == 0:
            continue
        factor = integer_power(spectrum, count)
        out = factor if out is None else np.multiply(out, factor, out=out)
    if times is not None:
        out = times.copy() if out is None else np.multiply(times, out, out=out)
    return out


def _upper_laws(ratio: GaussianRatio, t: int, grid: _Grid) -> tuple[_Law, _Law]:
    """The dominating pair of the 1-of-t allocation on ``grid`` (spread, clamp, wrap charged): its laws in
    the directions P||Q and Q||P."""
    law, moment, excess = _spread(ratio, grid)
    n, dx = grid.size, grid.dx
    f_law = _fft.rfft(law, n)
    f_moment = _fft.rfft(moment, n)
    rest = _power([(f_law, t - 1)]) if t > 1 else np.ones_like(f_law)
    q = np.maximum(_fft.irfft(rest * f_law, n), 0.0)              # Q(S~ = s dx)
    # P(S~ = s dx) = Q(s) s dx / t = E_Q[W~_1; S~ = s dx] (exchangeable terms): the moment law once
    p = np.maximum(_fft.irfft(rest * f_moment, n), 0.0)
    noise = _noise(n, t, (law,))
    noise_p = _noise(n, t, (moment,))
    # The wrap: P-mass of S~ >= N dx is at most (E_P[S~] - sum_s s dx p(s)) / (N dx) (module doc).
    m1 = math.fsum(moment)                           # E[W~]
    m2 = math.fsum(moment * (np.arange(law.size) * dx))  # E[W~^2]
    e_p = (m2 + (t - 1) * m1 * m1) / t               # E_P[S~] = E_Q[S~^2] / t
    s = np.arange(n) * dx
    computed = math.fsum(p * s)
    wrapped = max(e_p - computed, 0.0) / (n * dx) + noise_p * 2.0 + 4.0 * np.finfo(float).eps * e_p / (n * dx)
    with np.errstate(divide="ignore"):
        ratio_loss = np.log(s / t)
    finite = s > 0
    singular = excess  # P-mass outside Q's support: (1/t) sum_i E[(W_i - B)_+]
    remove = _Law(ratio_loss[finite], p[finite], min(singular + wrapped + noise_p, 1.0))
    add = _Law(-ratio_loss[finite], q[finite], min(q[0] + noise + wrapped, 1.0))
    return remove, add


def _lower_laws(ratio: GaussianRatio, t: int, k: int, grid: _Grid) -> tuple[_Law, _Law]:
    """The garbled pair (laws of S_J under P and Q; module doc): its laws in both directions, with the
    round-off to subtract."""
    q_cells, p_cells = _cells(ratio, grid)
    n = grid.size
    f_q = _fft.rfft(q_cells, n)
    f_p = _fft.rfft(p_cells, n)
    q = _fft.irfft(_power([(f_q, t)]), n)
    p = _fft.irfft(_power([(f_p, k), (f_q, t - k)]), n)
    noise = _noise(n, t, (q_cells, p_cells))
    q, p = np.maximum(q, 0.0), np.maximum(p, 0.0)
    keep_pq = p > 0
    keep_qp = q > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        loss = np.log(p) - np.log(q)
    # P-mass outside Q's support (a canonical pair's output 0): the event "a member showed it" is an outcome
    # of its own, P-mass 1 - (1 - singular)^k, Q-mass 0 (the cells hold the rest of each member's P-mass).
    only_p = -math.expm1(k * math.log1p(-ratio.singular)) if ratio.singular > 0 else 0.0
    remove = _Law(loss[keep_pq], p[keep_pq], only_p, noise, noise)
    add = _Law(-loss[keep_qp], q[keep_qp], 0.0, noise, noise)
    return remove, add


def _grid(t: int, clamp: float, points: int, mean: float, variance: float) -> _Grid:
    """A grid of ``points`` cells up to ``clamp`` and an FFT window holding S's bulk plus one clamp."""
    dx = clamp / points
    window = t * mean + 12.0 * math.sqrt(t * variance) + clamp + 2.0 * dx
    size = _fft.next_fast_len(int(math.ceil(window / dx)) + points + 2, real=True)
    if size > GRID_LIMIT:
        raise NumericalLimitError(f"random allocation: a grid of {size:,} points exceeds the limit of "
                                  f"{GRID_LIMIT:,}")
    return _Grid(dx, points, size)


def _direction_grid(ratio: GaussianRatio, t: int, points: int, tail: float, which: str) -> _Grid:
    """The grid of one direction: ``remove`` (P||Q) clamps where the tail budget ends, ``add`` (Q||P) at
    ``min(that, t)`` (exact there: module doc)."""
    clamp = ratio.clamp(tail)
    if which == "add":
        clamp = min(clamp, float(t))
    return _grid(t, clamp, points, 1.0, min(ratio.variance(), clamp * clamp))


def _linear_laws(ratio, t: int, points: int, tail: float, which: str) -> tuple[_Law, _Law, str]:
    """One direction's (upper, lower) laws of 1 of t on the uniform grid of ``points`` cells (FFT)."""
    d = _WHICH.index(which)
    grid = _direction_grid(ratio, t, points, tail, which)
    return _upper_laws(ratio, t, grid)[d], _lower_laws(ratio, t, 1, grid)[d], f"{points:,} cells"


def _linear_seconds(ratio, t: int, points: int, tail: float, which: str) -> float:
    """Estimated seconds of :func:`_linear_laws` (from the grid's size, never measured: bracket module doc);
    0 when the grid exceeds the limit (the step then declines at once)."""
    try:
        return _fft_seconds(_direction_grid(ratio, t, points, tail, which).size)
    except NumericalLimitError:
        return 0.0

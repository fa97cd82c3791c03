"""k of t, direction P||Q, a count of few large ratios: power sums of the small ratios, cells of the large ones.

Where it serves
---------------
Cauchy's circle (:mod:`.circle`) bounds ``e_k`` by its modulus on a circle, which stays above ``e_k`` by a factor
that does not vanish with the grids: about ``1 + 5 / (24 k)`` where many small ratios make up the saddle point
(a Poisson law: ``e^k i0e(k) k! / k^k``), and more where one or two large ratios carry ``L``. At two or three
members that factor is most of the bracket (sigma 0.74, 3 of 347, delta 1e-8: the circle's delta at the exact
epsilon 3.835 is 1.68 times the exact one). On the counts of :mod:`.circle` with at most k (and
:data:`MOST_LARGE`) ratios above the threshold, this module bounds ``E_Q[(L - c)_+; counts = n]`` instead by an
exact algebraic form of ``e_k``, loose only by terms of order ``tau p_2 / p_1^3``. At few databases a member the
members' own ratios pass the threshold, so the counts of three and four large ratios decide there (sigma 0.92, 4
of 8, delta 1e-10: the circle's second level 12.237 with the counts of up to two, 12.148 with those of up to
four and the threshold of :data:`.circle.FEW_SHIFT_SUMS`, an importance-sampled Monte Carlo near 12.11).

The bound
---------
Under ``Q`` the databases' ratios ``W_i`` are independent. On ``{counts = n}`` the ``n`` large ratios (``W >=
tau = e^cut``) and the ``t - n`` small ones split ``e_k`` as ``e_k(W) = sum_j e_j(large) e_{k - j}(small)``.
Newton's identities give ``e_j`` of the small ratios from their power sums ``p_i = sum w^i``::

    e_1 = p_1,   e_2 = (p_1^2 - p_2) / 2,   e_3 = (p_1^3 - 3 p_1 p_2 + 2 p_3) / 6 <= (p_1^3 - 3 p_1 p_2 + 2 tau p_2) / 6

(``p_3 <= tau p_2``: every small ``w < tau``), and with ``p_4 >= p_2^2 / m`` (Cauchy-Schwarz over the ``m = t - n``
small ratios)::

    e_4 = (p_1^4 - 6 p_1^2 p_2 + 3 p_2^2 + 8 p_1 p_3 - 6 p_4) / 24 <= (g(p_1, p_2) + 8 tau p_1 p_2 + (3 - 6 / m) p_2^2) / 24

with ``g = p_1^4 - 6 p_1^2 p_2`` where ``p_1^2 >= p_2``, and below it (where ``g`` is concave in ``p_1``) its tangent
at ``p_1 = p_2^(1/2)``, ``3 p_2^2 - 8 p_1 p_2^(3/2)``: above ``g``, convex in ``p_1`` across (C^1) and in ``p_2``
(``6 - 6 p_1 / p_2^(1/2) > 0`` there). So ``L <= L~ = sum_j e_j(large) E_{k - j}(p_1, p_2) / C(t, k)`` with ``E``
those forms, exact for ``k = 2`` (Macdonald, "Symmetric functions and Hall polynomials", 1995, I.2).

The law, certified
------------------
``(p_1, p_2)`` of the small ratios is a sum of ``t - n`` independent terms ``(w, w^2)``, each split onto a
lattice of ``p_1`` (step ``h_1``) and of ``p_2`` (step ``h_2``) by two independent splits that keep the mean of
``w`` and of ``w^2`` (the cells of ``w`` cut at both lattices' points; their moments ``E_Q[W^j; cell]`` in
closed form, the split's cross term ``E_Q[(W - a)(W^2 - b); cell]`` by Gauss-Legendre in ``z``); each large
ratio is split between the ends of its cell of ``log W`` (mean kept), from two large ratios onto every
:data:`PAIR_MERGE`-th end (mean kept again; each configuration a sorted tuple of ends times its orderings); with
large ratios the sum's law is split once more onto a lattice :data:`COARSER` times coarser (one split of the sum
against ``t - n`` of its terms), from three large ratios coarser still while the configurations times the nodes
pass :data:`MANY_WORK`. ``L~`` is convex in ``p_1``
at fixed ``p_2`` (``E_2``: ``p_1^2``; ``E_3``: second derivative ``p_1 >= 0``; ``E_4`` above), convex in ``p_2`` at
fixed ``p_1`` (affine but for ``E_4``) and affine in each large ratio, so ``(L~ - c)_+`` is convex along each of
these directions and, the splits being independent given the outputs, Jensen's inequality one split at a time
(as for :mod:`.circle`'s grid) gives ``E[(L~(spread) - c)_+] >= E[(L~ - c)_+] >= E[(L - c)_+]``. The sums' law
is a 2-D FFT power of one term's, tilted by ``e^{theta p_1}`` towards the target (floating point, as in
:mod:`.circle`).

Charges, each added to the count's bound:

* *Range.* Spread sums beyond the lattice's range (``p_1 >= R_1`` or ``p_2 >= R_2``) wrap to smaller ones, which
  only adds mass; what they lose is at most ``E[L~(spread); p_1 >= R_1 or p_2 >= R_2]``, charged with ``L~ <=
  sum_i c_i E+_i`` (``E+_i`` monomials of ``p_1`` and ``p_2`` above ``E_i``) and each monomial's tail by Chernoff
  on the spread law's own generating function (:func:`_wrap_charge`). While the part along ``p_1`` or ``p_2``
  passes its share, that axis' range is widened (:data:`WIDEN`) and the lattice laid again.
* *Round-off.* Each node of the inverse transform is off by at most the L2 bound of
  :func:`.uniform_grid._transform_error` (tilted units, an estimate checked by the tests, as everywhere in the
  package; times ``||A||_2 <= 2 (f_1 f_2)^(1/2)`` after the coarser lattice's split ``A``). Charged by
  Cauchy-Schwarz: ``sum_x |err_x| sum_b beta_b u_xb <= ||err||_2 (B sum_{x, b} beta_b u_xb^2)^(1/2)`` with ``B
  = sum_b beta_b`` (the large configurations' total mass), per loss cell.
* *Dropped.* Nodes whose mass (plus its round-off bound) times ``E_b[L~]`` is least are dropped while their sum
  stays below half of :data:`DROP_SHARE` times the caller's ``tail``, then the configurations of large ratios
  likewise, and charged at those sums (``(L~ - c)_+ <= L~``).

Large ratios beyond the clamp are the caller's charge (:func:`.circle.circle_curve`).

References
----------
Newton's identities (Macdonald 1995, I.2); Jensen's inequality (convex order); Chernoff bounds.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import fft as _fft

from ... import effort
from .ratios import GaussianRatio, _phi_between
from .uniform_grid import _transform_error

#: Members for which the forms of the module doc bound ``e_k``.
MEMBERS = (2, 3, 4)
#: Counts of at most this many large ratios (and at most k) are bounded here: up to four since 2026-12 (the
#: configurations of three and four large ratios, :func:`_configurations`; before, up to two).
MOST_LARGE = 4
#: Lattice points of ``p_1`` and of ``p_2`` (finer ones gained little: sigma 0.74, 3 of 347, delta 1e-8, 4096 and 256
#: points and cells of 0.025, 3.846 to 3.842 in ten times the time).
P1_POINTS = 2048
P2_POINTS = 128
#: Step of the large ratios' cells in ``log W``.
LARGE_STEP = 0.05
#: With large ratios, the sums' law on a lattice this many times coarser in ``p_1`` and ``p_2`` (one split of
#: the sum against ``t - n`` of the terms; sigma 0.74, 3 of 347, delta 1e-8: 3.846 either way).
COARSER = (8, 2)
#: From three large ratios, the lattice is made coarser still (both factors doubled at a time) until the
#: configurations times its nodes are at most this many: the configurations of three and four large ratios number
#: tens of thousands to over a million, and the work is both together (:func:`_coarser`).
MANY_WORK = 2.5e8
#: The pairs of large ratios on every this-many-th end of the cells (fewer pairs).
PAIR_MERGE = 3
#: Most configurations of three or four large ratios (sorted tuples of merged ends): beyond, the ends are merged
#: onto every ``2 PAIR_MERGE``-th, ``3 PAIR_MERGE``-th, ... (:func:`_merge_every`; their arrays take about 100
#: bytes each: sigma 0.62, 4 of 13, delta 1e-8 has 1.35 million at every third end; at smaller noise the clamp
#: is farther and every third end would give tens of millions).
MOST_CONFIGURATIONS = 1_500_000
#: The range of each sum: its tilted mean plus this many standard deviations.
RANGE_SD = 14.0
#: Nodes, then configurations of large ratios, are dropped (and charged) while their sum stays below this
#: multiple of the caller's tail (half each; the tail is about a ten-thousandth of the target delta).
DROP_SHARE = 10.0
#: The lattice's range along ``p_1`` or ``p_2`` is widened by this factor, at most :data:`WIDENINGS` times, while
#: the sums that wrap along it are charged more than a quarter of :data:`DROP_SHARE` times the caller's tail (sigma
#: 1.48, 4 of 138, delta 1e-10: with one large ratio the tilt centred near the sum's mean left ``p_2`` 1.5 ``tau^2``
#: of range, and the wrap's charge was 1.5e-11, a sixth of the target; widened twice, 1.2e-14).
WIDEN, WIDENINGS = 1.3, 3
#: Seconds of one count's bound (an estimate, for :func:`.circle.seconds`): measured 0.04 to 0.25 s at 2 and 3
#: of 10 to 593 (sigma 0.52 to 1.82, delta 1e-5 to 1e-10; one core, 2026-12).
SECONDS = 0.2
#: Seconds per configuration of three or four large ratios (their generation, worth and reach; the lattice's part
#: is bounded by :data:`MANY_WORK`), besides :data:`MANY_SECONDS` a count: measured 0.25 to 1.0 s at 4 of 8 to 28
#: (27,000 to 1.35 million configurations, sigma 0.62 to 1.25, delta 1e-8 and 1e-10; 2026-12).
CONFIGURATION_SECONDS, MANY_SECONDS = 5e-7, 0.2
#: Gauss-Legendre points per cell for the split's cross term.
_GAUSS = np.polynomial.legendre.leggauss(8)
#: Configurations of large ratios evaluated at once (memory: this many times the nodes kept).
_CHUNK = 256


@dataclass(frozen=True)
class PowerSumBound:
    """One count's bound on the loss cells of the caller (from ``low``, step ``cell``): ``weight`` the masses
    ``E_Q[L~; counts, log L~ in cell]``, ``squares`` the round-off's Cauchy-Schwarz weights per cell, and
    ``charge`` (range, nodes dropped) to add at every epsilon."""

    low: float
    weight: NDArray[np.float64]
    squares: NDArray[np.float64]
    charge: float


def applies(ratio, k: int, n: int) -> bool:
    """Whether a count of ``n`` large ratios of k-of-t is bounded here (a Gaussian, :data:`MEMBERS`,
    :data:`MOST_LARGE`)."""
    return isinstance(ratio, GaussianRatio) and ratio.mu > 0.0 and k in MEMBERS and 0 <= n <= min(MOST_LARGE, k)


def _moments(mu: float, edges: NDArray[np.float64], power: int) -> NDArray[np.float64]:
    """``E_Q[W^power; W in cell]`` for the cells between ``edges`` (the first may be 0, the last inf):
    ``e^{power (power - 1) mu^2 / 2} (Phi(z_1 - power mu) - Phi(z_0 - power mu))``."""
    with np.errstate(divide="ignore"):
        z = (np.log(edges) + 0.5 * mu * mu) / mu
    return math.exp(power * (power - 1) * mu * mu / 2.0) * _phi_between(z[:-1] - power * mu, z[1:] - power * mu)


def _cross(mu: float, lo: NDArray[np.float64], hi: NDArray[np.float64], a: NDArray[np.float64],
           b: NDArray[np.float64]) -> NDArray[np.float64]:
    """``E_Q[(W - a)(W^2 - b); lo <= W < hi]`` by Gauss-Legendre in ``z`` (the integrand is smooth and
    nonnegative on the cell); ``lo = 0`` (with ``a = b = 0``) in closed form, ``E_Q[W^3; W < hi]``."""
    out = np.empty(lo.size)
    first = lo <= 0.0
    if np.any(first):
        out[first] = _moments(mu, np.array([0.0, float(hi[first][0])]), 3)[0]
    rest = ~first
    if np.any(rest):
        z0 = (np.log(lo[rest]) + 0.5 * mu * mu) / mu
        z1 = (np.log(hi[rest]) + 0.5 * mu * mu) / mu
        nodes, weights = _GAUSS
        half = 0.5 * (z1 - z0)
        z = (z0 + z1)[:, None] * 0.5 + half[:, None] * nodes[None, :]
        w = np.exp(mu * z - 0.5 * mu * mu)
        f = (w - a[rest, None]) * (w * w - b[rest, None]) * np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
        out[rest] = np.maximum(half * (f * weights[None, :]).sum(axis=1), 0.0)
    return out


def _forms(p1: NDArray[np.float64], p2: NDArray[np.float64], k: int, tau: float, terms: int) -> NDArray[np.float64]:
    """``E_0 .. E_k`` of the module doc at the nodes (rows); ``terms`` small ratios (``p_4 >= p_2^2 / terms``).
    (``p_3 <= p_2^(3/2)`` in place of ``tau p_2`` where the typical ``p_2`` is below ``tau^2`` was looser: sigma
    1.48, 4 of 138, delta 1e-10, 1.6837 to 1.6891.)"""
    forms = [np.ones_like(p1), p1, 0.5 * (p1 * p1 - p2)]
    if k >= 3:
        forms.append((p1 ** 3 - 3.0 * p1 * p2 + 2.0 * tau * p2) / 6.0)
    if k >= 4:
        # below p_1^2 = p_2 the part in p_1 is concave: its tangent there (above it, convex across, C^1)
        inside = p1 * p1 >= p2
        part = np.where(inside, p1 ** 4 - 6.0 * p1 * p1 * p2, 3.0 * p2 * p2 - 8.0 * p1 * p2 * np.sqrt(p2))
        forms.append((part + 8.0 * tau * p1 * p2 + (3.0 - 6.0 / terms) * p2 * p2) / 24.0)
    return np.stack(forms[:k + 1])


def _tilted_moments(mu: float, tau: float, theta: float, points: int = 4096) -> tuple[float, float, float, float]:
    """Mean and variance of ``w`` and of ``w^2`` of one small ratio (``w < tau``) under ``Q`` tilted by
    ``e^{theta w}`` (read on a partition of ``[0, tau)``: the lattice's choice only)."""
    edges = np.linspace(0.0, tau, points + 1)
    mid = 0.5 * (edges[:-1] + edges[1:])
    mass = _moments(mu, edges, 0) * np.exp(theta * (mid - tau))
    total = float(mass.sum())
    m1 = float((mass * mid).sum()) / total
    m2 = float((mass * mid ** 2).sum()) / total
    m4 = float((mass * mid ** 4).sum()) / total
    return m1, max(m2 - m1 * m1, 0.0), m2, max(m4 - m2 * m2, 0.0)


def _tilt(mu: float, tau: float, terms: int, p1_target: float) -> float:
    """The tilt ``theta >= 0`` that centres the sum of ``terms`` small ratios near ``p1_target`` (bisection;
    0 when the untilted mean is already past it)."""
    if terms * _tilted_moments(mu, tau, 0.0)[0] >= p1_target:
        return 0.0
    lo, hi = 0.0, 50.0 / tau
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if terms * _tilted_moments(mu, tau, mid, 1024)[0] < p1_target else (lo, mid)
    return lo


def _log_mgf(x1: NDArray[np.float64], x2: NDArray[np.float64], log_mass: NDArray[np.float64], a: float,
             b: float) -> float:
    """``log E[e^{a p_1 + b p_2}]`` of one small ratio's lattice law (its corners ``x1, x2``, Q-masses)."""
    logs = log_mass + a * x1 + b * x2
    top = float(np.max(logs))
    return top + math.log(float(np.sum(np.exp(logs - top))))


def _wrap_charge(single: NDArray[np.float64], terms: int, h1: float, h2: float, k: int, tau: float,
                 coefficients: NDArray[np.float64]) -> tuple[float, float]:
    """``E[L~(sum); p_1 >= R_1 or p_2 >= R_2]`` of the spread sum of ``terms`` small ratios (``R`` the
    lattice's ranges), the sums that wrap (module doc, "Charges"): ``L~ <= sum_i c_i E+_i`` with ``E+_i =
    p_1^i / i!`` for ``i <= 2``, ``p_1^3 / 6 + tau p_2 / 3`` and ``p_1^4 / 24 + 5 p_2^2 / 12 + tau^2 p_1^2 / 6``
    (above ``E_3`` and ``E_4``), each monomial's tail by Chernoff, ``X^i 1{Z >= R} <= (i / (e nu))^i e^{nu X +
    lambda (Z - R)}``, on the lattice law's own generating function: (the part for ``p_1 >= R_1``, for ``p_2 >=
    R_2``), their sum the charge."""
    ranges = (single.shape[0] * h1, single.shape[1] * h2)
    scales = (tau, tau * tau)
    i1, i2 = np.nonzero(single > 0.0)
    x1, x2, log_mass = i1 * h1, i2 * h2, np.log(single[i1, i2])
    # E_3 <= p_1^3 / 6 + tau p_2 / 3; E_4 <= p_1^4 / 24 + p_2^2 / 4 + tau p_1 p_2 / 3, tau p_1 p_2 <= (tau^2 p_1^2 + p_2^2) / 2
    monomials = {0: [(1.0, 0, 0)], 1: [(1.0, 0, 1)], 2: [(0.5, 0, 2)], 3: [(1.0 / 6.0, 0, 3), (tau / 3.0, 1, 1)],
                 4: [(1.0 / 24.0, 0, 4), (5.0 / 12.0, 1, 2), (tau * tau / 6.0, 0, 2)]}
    ladder = np.geomspace(1e-3, 40.0, 24)
    total = [0.0, 0.0]
    for i, c in enumerate(coefficients):
        if c <= 0.0:
            continue
        for factor, axis, power in monomials[i]:
            for event in (0, 1):
                best = math.inf
                for lam in ladder / scales[event]:
                    for nu in (ladder / scales[axis] if power else (0.0,)):
                        a = (nu if axis == 0 else 0.0) + (lam if event == 0 else 0.0)
                        b = (nu if axis == 1 else 0.0) + (lam if event == 1 else 0.0)
                        log_bound = (power * math.log(power / (math.e * nu)) if power else 0.0) - lam * ranges[event] \
                            + terms * _log_mgf(x1, x2, log_mass, a, b)
                        best = min(best, log_bound)
                total[event] += c * factor * math.exp(min(best, 700.0))
    return total[0], total[1]


def _small_law(mu: float, tau: float, h1: float, h2: float) -> tuple[NDArray[np.int64], NDArray[np.int64],
                                                                     NDArray[np.float64]]:
    """One small ratio's law on the lattice: (p_1 index, p_2 index, mass) of the corners of each cell's two
    independent splits (module doc, "The law, certified")."""
    cuts = np.concatenate([np.arange(0.0, tau, h1), np.sqrt(np.arange(0.0, tau * tau, h2)), [tau]])
    edges = np.unique(cuts)
    lo, hi = edges[:-1], edges[1:]
    mid = 0.5 * (lo + hi)
    i = np.floor(mid / h1).astype(np.int64)
    j = np.floor(mid * mid / h2).astype(np.int64)
    a, b = i * h1, j * h2
    m0 = _moments(mu, edges, 0)
    u1 = np.clip((_moments(mu, edges, 1) - a * m0) / h1, 0.0, m0)
    u2 = np.clip((_moments(mu, edges, 2) - b * m0) / h2, 0.0, m0)
    u12 = np.minimum(np.minimum(_cross(mu, lo, hi, a, b) / (h1 * h2), u1), u2)
    corners = [(i, j, np.maximum(m0 - u1 - u2 + u12, 0.0)), (i + 1, j, u1 - u12), (i, j + 1, u2 - u12),
               (i + 1, j + 1, u12)]
    return (np.concatenate([c[0] for c in corners]), np.concatenate([c[1] for c in corners]),
            np.concatenate([c[2] for c in corners]))


def _rebin(grid: NDArray[np.float64], factor: int, axis: int) -> NDArray[np.float64]:
    """``grid``'s masses onto every ``factor``-th point along ``axis`` (one more at the end), each split between
    its two neighbours there (mean kept)."""
    if factor == 1:
        return grid
    moved = np.moveaxis(grid, axis, 0)
    size = moved.shape[0]
    blocks = moved.reshape((size // factor, factor) + moved.shape[1:])
    share = (np.arange(factor) / factor).reshape((1, factor) + (1,) * (moved.ndim - 1))
    out = np.zeros((size // factor + 1,) + moved.shape[1:])
    out[:-1] += ((1.0 - share) * blocks).sum(axis=1)
    out[1:] += (share * blocks).sum(axis=1)
    return np.moveaxis(out, 0, axis)


def _cells(tau: float, clamp: float, step: float) -> int:
    """Cells of ``log W`` ``step`` apart from ``tau`` to the clamp, at least one (:func:`_large_nodes`)."""
    return max(int(math.ceil(math.log(clamp / tau) / step)), 1)


def _large_nodes(mu: float, tau: float, clamp: float, step: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The ends of the large ratios' cells (``log W`` ``step`` apart from ``tau`` to the clamp) and the Q-mass each
    receives (each cell's mass split between its ends, mean kept)."""
    count = _cells(tau, clamp, step)
    ends = tau * np.exp(step * np.arange(count + 1))
    ends[-1] = clamp
    q = _moments(mu, ends, 0)
    p = _moments(mu, ends, 1)
    up = np.clip((p - ends[:-1] * q) / np.diff(ends), 0.0, q)
    mass = np.zeros(ends.size)
    mass[:-1] += q - up
    mass[1:] += up
    return ends, mass


def _merged(ends: NDArray[np.float64], mass: NDArray[np.float64], every: int) -> tuple[NDArray[np.float64],
                                                                                      NDArray[np.float64]]:
    """The nodes' masses moved onto every ``every``-th node (and the last), each split between its two
    neighbours there (mean kept)."""
    coarse = np.unique(np.append(ends[::every], ends[-1]))
    if coarse.size < 2:
        return ends, mass
    at = np.clip(np.searchsorted(coarse, ends, side="right") - 1, 0, coarse.size - 2)
    share = (ends - coarse[at]) / (coarse[at + 1] - coarse[at])
    out = np.zeros(coarse.size)
    np.add.at(out, at, mass * (1.0 - share))
    np.add.at(out, at + 1, mass * share)
    return coarse, out


def _tuples(ends: int, every: int, n: int) -> int:
    """Sorted ``n``-tuples of ``ends`` nodes merged onto every ``every``-th (:func:`_merged`: at most one node
    more than the stride's), an upper count."""
    return math.comb(-(-ends // every) + 1 + n - 1, n)


def _merge_every(ends: int, n: int) -> int:
    """The large ratios' nodes are merged onto every this-many-th of ``ends`` (:func:`_merged`) for ``n >= 2``:
    :data:`PAIR_MERGE`, or its least multiple that leaves at most :data:`MOST_CONFIGURATIONS` sorted tuples."""
    every = PAIR_MERGE
    while _tuples(ends, every, n) > MOST_CONFIGURATIONS and every < ends:
        every += PAIR_MERGE
    return every


def _configurations(n: int, k: int, ends: NDArray[np.float64], mass: NDArray[np.float64]) -> tuple[
        NDArray[np.float64], NDArray[np.float64]]:
    """The large ratios' configurations: rows ``e_0 .. e_k`` of the large ratios (``e_j = 0`` past ``n``) and
    their Q-masses (ordered tuples: each sorted tuple times the ways to order it, ``n!`` over the factorials of
    its runs of equal nodes). From two large ratios the nodes are merged onto every :data:`PAIR_MERGE`-th end
    (mean kept)."""
    if n == 0:
        return np.eye(1, k + 1), np.ones(1)
    if n >= 2:
        ends, mass = _merged(ends, mass, _merge_every(ends.size, n))
    tuples = np.fromiter(itertools.chain.from_iterable(itertools.combinations_with_replacement(range(ends.size), n)),
                         dtype=np.int64).reshape(-1, n)  # every a_1 <= ... <= a_n, in lexicographic order
    w = ends[tuples]
    e = np.zeros((tuples.shape[0], k + 1))
    e[:, 0] = 1.0
    for i in range(n):  # e_j += w_i e_{j - 1}, all j at once from the old row
        e[:, 1:] = e[:, 1:] + w[:, i:i + 1] * e[:, :-1]
    runs = np.ones(tuples.shape[0])
    run = np.ones(tuples.shape[0])
    for i in range(1, n):
        run = np.where(tuples[:, i] == tuples[:, i - 1], run + 1.0, 1.0)
        runs *= run
    return e, np.prod(mass[tuples], axis=1) * (math.factorial(n) / runs)


def seconds(ratio, k: int, cut: float, clamp: float, counts) -> float:
    """Estimated seconds of :func:`count_bound` for each number of large ratios in ``counts`` that
    :func:`applies` (never measured): :data:`SECONDS` each, and from three large ratios :data:`MANY_SECONDS`
    and :data:`CONFIGURATION_SECONDS` per configuration (the ends of :func:`_large_nodes` merged as in
    :func:`_configurations`)."""
    tau = math.exp(cut)
    total = 0.0
    for n in counts:
        if not applies(ratio, k, n):
            continue
        total += SECONDS
        if n >= 3 and clamp > tau:
            ends = _cells(tau, clamp, LARGE_STEP) + 1
            total += MANY_SECONDS + CONFIGURATION_SECONDS * _tuples(ends, _merge_every(ends, n), n)
    return total


def _coarser(n: int, configurations: int) -> tuple[int, int]:
    """The factors of the sums' coarser lattice with ``n > 0`` large ratios: :data:`COARSER`, and from three large
    ratios doubled while ``configurations`` times the lattice's nodes pass :data:`MANY_WORK` (at most 64 and 16
    points left)."""
    f1, f2 = COARSER
    if n >= 3:
        while configurations * (P1_POINTS // f1) * (P2_POINTS // f2) > MANY_WORK and P1_POINTS // f1 > 32 \
                and P2_POINTS // f2 > 8:
            f1, f2 = 2 * f1, 2 * f2
    return f1, f2


def count_bound(ratio: GaussianRatio, t: int, k: int, cut: float, n: int, target: float, tail: float,
                clamp: float, low: float, cell: float) -> PowerSumBound | None:
    """``E_Q[(L - c)_+; n of the t ratios at or above e^cut, none beyond the clamp]`` above (module doc), on the
    loss cells from ``low`` (step ``cell``, ``log L~`` rounded up); the lattice centred for the loss
    ``target``. None when the count has no small ratios to sum or no mass."""
    if not applies(ratio, k, n) or t - n < 2 or (n > 0 and clamp <= math.exp(cut)):
        return None
    mu, tau, terms = ratio.mu, math.exp(cut), t - n
    log_choose = math.lgamma(t + 1) - math.lgamma(k + 1) - math.lgamma(t - k + 1)
    # the tilt: at no large ratio the sum must reach e_k ~ p_1^k / k! ~ e^target C(t, k); else near its mean
    mean0, var0, _, _ = _tilted_moments(mu, tau, 0.0)
    if n == 0:
        p1_target = math.exp((target + log_choose + math.lgamma(k + 1)) / k)
    else:
        p1_target = terms * mean0 + 2.0 * math.sqrt(terms * var0)
    theta = _tilt(mu, tau, terms, min(p1_target, 0.5 * terms * tau))
    m1, v1, m2, v2 = _tilted_moments(mu, tau, theta)
    reach1 = max(terms * m1 + RANGE_SD * math.sqrt(terms * v1), 1.5 * tau)
    reach2 = max(terms * m2 + RANGE_SD * math.sqrt(terms * v2), 1.5 * tau * tau)
    n1, n2 = P1_POINTS, P2_POINTS
    # the large ratios' configurations (times the ways to choose which n databases are large)
    ends, big = _large_nodes(mu, tau, clamp, LARGE_STEP)
    e_large, beta = _configurations(n, k, ends, big)
    keep = beta > 0.0
    e_large, beta = e_large[keep], beta[keep] * math.exp(math.lgamma(t + 1) - math.lgamma(n + 1)
                                                         - math.lgamma(t - n + 1))
    if beta.size == 0:
        return None
    choose = math.exp(log_choose)
    mean_large = beta @ e_large
    # the lattice's range, widened along each axis whose wrap charge passes its share (module doc, "Charges")
    widths = [reach1, reach2]
    for widening in range(WIDENINGS + 1):
        h1, h2 = widths[0] / n1, widths[1] / n2
        effort.checkpoint()
        i, j, mass = _small_law(mu, tau, h1, h2)
        plain = np.zeros((n1, n2))  # (the lattice holds one term: at most tau + h_1 and tau^2 + h_2)
        np.add.at(plain, (i, j), mass)
        if not np.any(plain > 0.0):
            return None
        wraps = _wrap_charge(plain, terms, h1, h2, k, tau, mean_large[::-1] / choose)
        over = [wrap > 0.25 * DROP_SHARE * tail for wrap in wraps]
        if not any(over) or widening == WIDENINGS:
            break
        widths = [width * WIDEN if wide else width for width, wide in zip(widths, over)]
    charge = wraps[0] + wraps[1]
    # one small ratio's law, tilted by e^{theta p_1}, normalised
    with np.errstate(divide="ignore"):
        logs = np.log(plain) + theta * (np.arange(n1) * h1)[:, None]
    top = float(np.max(logs))
    single = np.exp(logs - top)
    log_total = top + math.log(float(single.sum()))  # log E_Q[e^{theta w}; w < tau] on the lattice
    single /= float(single.sum())
    log_scale = terms * log_total  # untilted mass = tilted * e^{log_scale - theta p_1}
    per_node = _transform_error(n1 * n2, terms, float(np.linalg.norm(single)))
    summed = _fft.irfft2(_fft.rfft2(single) ** terms, s=(n1, n2))
    effort.checkpoint()
    with np.errstate(over="ignore"):
        untilt_rows = np.exp(log_scale - theta * np.arange(n1) * h1)
    if not np.all(np.isfinite(untilt_rows)):  # (beyond the doubles: no bound from this count)
        return None
    masses = untilt_rows[:, None] * np.maximum(summed, 0.0)
    # with large ratios, the sum's law onto a coarser lattice (mean kept: one more split, of the sum alone;
    # module doc, "The law, certified"): the configurations times the nodes are the work
    f1, f2 = (1, 1) if n == 0 else _coarser(n, beta.size)
    masses = _rebin(_rebin(masses, f1, 0), f2, 1)
    lowest = np.maximum(np.arange(masses.shape[0]) * f1 - f1 + 1, 0)  # the least p_1 row feeding each row
    units = np.repeat(untilt_rows[np.minimum(lowest, n1 - 1)], masses.shape[1])
    per_node *= 2.0 * math.sqrt(f1 * f2)  # ||A err||_2 <= ||A||_2 ||err||_2, ||A||_2^2 <= (2 f1 - 1)(2 f2 - 1)
    p1 = (np.arange(masses.shape[0]) * f1 * h1)[:, None] * np.ones((1, masses.shape[1]))
    p2 = np.ones((masses.shape[0], 1)) * (np.arange(masses.shape[1]) * f2 * h2)[None, :]
    forms = _forms(p1.ravel(), p2.ravel(), k, tau, terms)
    # E_b[L~] at each node, and the most L~ there
    reversed_forms = forms[::-1]  # row j: E_{k - j}
    positive = np.maximum(reversed_forms, 0.0)  # (L~ - c)_+ <= sum_j e_j(large) max(E_{k - j}, 0)
    mean_l = mean_large @ positive / choose
    most_l = np.max(e_large, axis=0) @ positive / choose
    nodes_mass = masses.ravel()
    bound_mass = nodes_mass + units * per_node
    # nodes that never reach the loss cells, or whose whole E_b[L~] is below the share: dropped (charged)
    reaches = most_l >= math.exp(low)
    worth = np.where(reaches, bound_mass * mean_l, 0.0)
    order = np.argsort(worth)
    dropped = np.cumsum(worth[order]) <= 0.5 * DROP_SHARE * tail
    charge += float(np.sum(worth[order][dropped]))
    kept = np.sort(order[~dropped])
    kept = kept[reaches[kept]]
    # the configurations likewise: each one's E_x[L~] over the nodes kept
    worth_of = beta * (e_large @ (positive[:, kept] @ bound_mass[kept])) / choose
    order = np.argsort(worth_of)
    dropped = np.cumsum(worth_of[order]) <= 0.5 * DROP_SHARE * tail
    charge += float(np.sum(worth_of[order][dropped]))
    chosen = np.sort(order[~dropped])
    e_large, beta = e_large[chosen], beta[chosen]
    total_beta = float(beta.sum())
    if kept.size:  # configurations whose L~ stays below the loss cells at every node kept add nothing there
        reaches_cells = e_large @ np.max(positive[:, kept], axis=1) / choose >= math.exp(low)
        e_large, beta = e_large[reaches_cells], beta[reaches_cells]
    size = int(math.ceil((math.log(max(float(np.max(most_l[kept])), 1e-300)) - low) / cell)) + 2 if kept.size else 1
    weight = np.zeros(size)
    squares = np.zeros(size)
    forms_kept = reversed_forms[:, kept]
    mass_kept = nodes_mass[kept]
    unit_kept = units[kept]
    for start in range(0, beta.size, _CHUNK):
        effort.checkpoint()
        l_tilde = np.maximum(e_large[start:start + _CHUNK] @ forms_kept / choose, 1e-300)
        b = beta[start:start + _CHUNK, None]
        index = np.ceil((np.log(l_tilde) - low) / cell)
        inside = index >= 0
        index = np.where(inside, index, 0).astype(np.int64)  # (below size: most_l bounds every l_tilde)
        weight += np.bincount(index[inside], weights=(b * mass_kept[None, :] * l_tilde)[inside], minlength=size)
        squares += np.bincount(index[inside], weights=(b * (unit_kept[None, :] * l_tilde) ** 2)[inside],
                               minlength=size)
    return PowerSumBound(low, weight, per_node ** 2 * total_beta * squares, charge)

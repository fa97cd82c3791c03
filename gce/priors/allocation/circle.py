"""k of t above, direction P||Q, one allocation: Cauchy's formula on a circle, the rate chosen per count.

The bound
---------
Under ``Q`` the databases' likelihood ratios ``W_1, ..., W_t`` are independent and the k-of-t pair's ratio
is ``L = e_k(W) / C(t, k)``. For ``r > 0``, ``prod_i (1 + r W_i z) = sum_j e_j(W) r^j z^j``, so Cauchy's
formula on ``|z| = 1`` gives ``e_k(W) r^k = (1 / 2 pi) int prod_i (1 + r W_i e^{i theta}) e^{-i k theta}
d theta``, and with ``p_i = r W_i / (1 + r W_i)``, ``|1 + r W_i e^{i theta}| = (1 + r W_i) (1 - 2 v_i (1 -
cos theta))^(1/2)``, ``v_i = p_i (1 - p_i)``. For each ``theta`` the logarithm of the last factor is concave in
``v_i``, so its sum over the ``t`` databases is at most ``t`` times its value at their mean ``V / t`` (Jensen;
equal at equal ``v_i``)::

    L <= G(A, V) = exp(A - k log r) h_t(V) / C(t, k),   A = sum_i log(1 + r W_i),   V = sum_i v_i,       (1)
    h_t(V) = (1 / pi) int_0^pi (1 - 2 (V / t) (1 - cos theta))_+^(t / 2) d theta  <=  i0e(V)

with ``i0e(V) = e^-V I_0(V) = (1 / pi) int_0^pi e^{-V (1 - cos theta)} d theta`` (Watson, "A Treatise on the
Theory of Bessel Functions", 1944, 3.71; ``1 - x <= e^-x``), the limit of ``h_t`` as ``t`` grows. At the saddle
point of ``W`` (the ``r`` with ``sum_i p_i = k``) the right side is about the saddle-point approximation of
``e_k``, ``i0e(V) ~ (2 pi V)^(-1/2)`` (Good, "Saddle-point methods for the multinomial distribution", Ann. Math.
Stat. 1957). ``h_t`` in place of ``i0e`` is tighter at few databases, where a handful of large ``p_i`` hold
``V`` (measured at level 1, against importance-sampled Monte Carlos: sigma 1.8, 5 of 12, delta 1e-10, 5.486 to
5.396, the truth near 5.37; sigma 0.97, 4 of 18, 1e-10, 8.726 to 8.658, near 8.54; sigma 0.74, 3 of 6, 1e-10,
14.509 to 14.465, near 14.22; sigma 2.37, 3 of 17, 1e-10, 2.066 to 2.008; at 10 of 393 unchanged). Then
``delta_PQ(eps) = E_Q[(L - e^eps)_+] <= E_Q[(G - e^eps)_+]``: a bound on the direction P||Q only (the other
direction is left to the decomposition, whose upper curve bounds it too), and on one allocation (``G`` is
not a pair's ratio, so it does not compose).

The law of (A, V), certified
----------------------------
``(A, V)`` is a sum of ``t`` independent terms, each a function of one database's ``W``. Three steps, each
only raising the bound:

1. *Monotone.* ``G`` grows with ``A`` and falls with ``V``. Each term is replaced by ``a`` at the upper end
   of its cell of ``log W`` and ``v`` at its least over the cell (``v`` is unimodal).
2. *Jensen.* Each replaced point is split between the four nodes of the ``(A, V)`` grid around
   it with bilinear weights: two independent splits, one of ``a`` and one of ``v``, each keeping its mean.
   ``(G - c)_+`` is convex in ``A`` at fixed ``V`` and in ``V`` at fixed ``A`` (each integrand of ``h_t``,
   ``(1 - 2 (V / t) (1 - cos theta))_+^(t / 2)``, is convex in ``V`` for ``t >= 2``), so given the outputs and
   the split of ``V``, Jensen in ``A``, then in ``V``: ``E[(G(A^, V^) - c)_+] >= E[(G(A, V^) - c)_+] >=
   (G(A, V) - c)_+``. (Joint convexity is not needed, and fails: at ``t = 2``, ``h_2(V) = 1 - V`` near 0.)
   ``h_t`` is read at the nodes of ``V`` as a left Riemann sum (:func:`log_modulus`: the integrand falls in
   ``theta``, so an upper bound, and never above ``i0e``); only ``h_t`` itself has to be convex, the nodes'
   values only above it.
3. *Sums.* The node laws' sums by 2-D FFT. ``V`` wraps (``V^ >= N_V dv`` counted at ``V^ - N_V dv``: ``G``
   only larger); ``A`` does not: the part of ``E_Q[G]`` beyond the transform's range ``R`` is charged,
   ``E_Q[e^A; A >= R] <= e^{-lambda R} E_Q[e^{(1 + lambda) a}]^t`` (Chernoff, ``lambda > 0`` the exponent of a
   few that gives the least range, :func:`_range`), times ``r^-k / C(t, k)``.

Databases whose ``W`` lies beyond the clamp ``B`` (P-mass ``tail``) are charged: ``E_Q[(L - c)_+; some
W_i > B] <= E_Q[L; ...] = P(some W_i > B) <= k P_1(W > B) + (t - k) Q(W > B)``.

Which r: the saddle point moves with W
--------------------------------------
(1) holds for every ``r`` and is tight near the saddle point of ``W``, which moves with the outputs. The
counts ``n_j`` of databases with ``log W`` above each threshold of :data:`THRESHOLDS` (around ``log((t - k)
/ k)``, where a non-member's ``r W`` reaches 1 at the rate ``k / (t - k)``) locate it: the bound is split
by the count vector ``n`` (the law of ``(A, V)`` on ``{counts = n}`` is the multinomial coefficient times
the convolution of ``n_j`` terms from each band), and each ``n`` takes the rate of the grid
(:data:`RATE_STEP` apart) with the least value at the target (at few databases a member the threshold moves up
towards the members' ratios at the target, and from the second level at many databases a member and a small target
it is lowered where power sums apply: :func:`thresholds`, :data:`LOW_SHIFT`). Each is a bound on ``E_Q[(L - c)_+;
counts = n]``, which is also at most ``P(counts = n)`` (``(L - c)_+ <= L``): the least of the two is kept, and a
count of P-mass below the cut is charged at its mass. Two levels, one threshold each: the second halves the fine
grid's nodes of ``A`` and ``V`` and its cells of ``log W`` (:func:`fine_grid`; the caller takes it while the
bracket is wider than asked). Measured (delta 1e-5, sigma 0.5, 10 of 100): one rate for all outputs 23.7, a rate
per count of one threshold 23.39 (10 s; the threshold moved by -0.4 or 0.3: 23.40, 23.41), of two 23.35 (80 s),
against an independent Monte Carlo of 23.18 (400,000 draws tilted towards the decisive outputs, 99.9%: 23.16 to
23.20; (1) at each output's best rate would give 23.26). Two thresholds were the second level until 2026-12, but
the grid's nodes cost more than the counts' coarseness where the circle decides (one quiet core, the level alone):
sigma 1.17, 10 of 393, delta 1e-10, from 3.5278 to 3.5261 by two thresholds (3.7 s) and to 3.5134 by the halved
grid (1.7 s; an importance-sampled Monte Carlo puts epsilon near 3.483); sigma 0.96, 13 of 328, 1e-10, 7.2235 to
7.2166 (11.9 s) and 7.2104 (2.3 s); sigma 0.76, 19 of 724, 1e-6, to 8.2943 (2.4 s; the Monte Carlo near 8.25).

Each count tries two rates on the fine grid: the coarse grid's choice (:func:`_coarse_search`) and the
count's saddle point (:func:`saddle_rate`: the rate at which the mean of ``sum_i p_i`` is ``k`` under the
exponential tilt of ``A`` that puts ``log G`` at the target, on a lattice :data:`SADDLE_STEP` apart). The
coarse grid's blur (its nodes of ``A`` 0.1 apart) moves its least off the fine grid's: at sigma 1.23, 24 of 575,
delta 1e-10 it chose 0.0384 where the saddle point is 0.0343, and (1) at 0.0384 is 0.10 above ``log L`` on the
decisive outputs against 0.006 at each output's own saddle point (the Monte Carlo below, its outputs near the
target). Where one or two large ratios decide (sigma 0.52, 2 of 593, delta 1e-5) the tilt of the sum
misplaces the saddle point and the search's rate is the better one. Measured at the first level against
importance-sampled Monte Carlos, with the round-off node by node ("Floating point") and the cells of ``log W``
of :func:`fine_grid`: 0.5% to 0.8% above the exact epsilon at 16 to 25 members, sigma 0.71 to 2.8, delta 1e-5
to 1e-10 (24 of 575 at sigma 1.23: 6.452 against 6.406; before, 6.61), 1.5% at 8 of 347 (sigma 0.67), 2.1% at
9 of 229 (sigma 1.44, epsilon 1.86); at two to four members 2% to 13% (the blocks of members decided there
until the power sums below). A later level that starts from an earlier one's counts tries only the rate the
earlier level chose for each (a rate is only a choice: any gives a valid bound); at the second level over nine
cases (3 to 24 members, sigma 0.62 to 2.2, delta 1e-8 to 1e-10; 2026-12) the same epsilon to 1e-5 (sigma 0.67,
8 of 347, 1e-8: 9.02026 to 9.02027; sigma 2.2, 4 of 22, 1e-8: 2.20269 to 2.20262) in 0.7 to 0.9 times the time.

The counts of one rate come tilt by tilt, each tilt's in the order of the count of its band below the
threshold (the bulk, hundreds of databases), whose transform's power is carried from one count to the next
(:func:`_carried`) instead of raised afresh; an earlier tilt's transforms are freed. With the large arrays
reused (:func:`gce.resources.heap_kept`), the second level at sigma 1.06, 11 of 310, delta 1e-10 took 1.8 s
where it took 4.7 s, at sigma 1.23, 24 of 575, 1e-10 1.3 s where 3.1 s (one quiet core, 2026-12).

Counts of few large ratios: power sums
--------------------------------------
The modulus in (1) stays above ``e_k`` by a factor no grid removes (about ``1 + 5 / (24 k)`` in the Poisson
limit, more where one or two ratios carry ``L``). On each count with at most k (and
:data:`.power_sums.MOST_LARGE`) ratios above the threshold, at two to four members, :mod:`.power_sums` bounds the same
``E_Q[(L - c)_+; counts = n]`` from Newton's identities (exact at two members), and the count keeps the lesser of
the two at the target (sigma 0.74, 3 of 347, delta 1e-8: 3.957 to 3.846, an importance-sampled Monte Carlo
near 3.835). Its charges (the sums that wrap, the nodes dropped) are added to the curve's.

Cut by the time limit
---------------------
Each count's bound on the coarse grid is valid on its own; the fine grid only replaces it where lower at the
target. The fine rates run in the order of their counts' largest P-mass, so when the running computation's
limit passes during them (a checkpoint, :mod:`gce.effort`) the counts that decide have their fine bounds and
the others keep their coarse ones: the curve is returned, marked incomplete, and the stop is recorded (at
sigma 0.54, 20 of 278, delta 1e-5, a level that finished 0.02 s past the default 5 s was thrown away: 29.45,
the decomposition's, against 26.67). The second level starts from the first's bounds count by count (and its
power sums, which do not depend on the level), so that cut it is never looser than the first at the target;
it then starts when half its estimate fits (sigma 1.06, 11 of 310, delta 1e-10: it had 2.1 s left for an
estimate of 2.8 s, took 1.9 s, and brought [5.190, 5.243] to [5.190, 5.237] within the default 5 s).

Floating point
--------------
Where the test decides, ``Q``'s law of ``A`` is about ``e^-A`` times its bulk: each count's sum is
transformed tilted by ``e^{theta A}``, ``theta`` from :data:`TILTS` chosen to centre the tilted sum at the
target, and untilted cell by cell. The round-off of the inverse transform is bounded two ways, both from
the L2 bound of :func:`.uniform_grid._transform_error` (an estimate checked by the tests, as everywhere in the
package), and the lesser charge is kept at each epsilon (each bounds the same error):

* *in L1* (:func:`.uniform_grid._noise`, the L2 bound times the root of the nodes): the whole error on the
  worst node, charged as that allowance times the largest weight ``(G - e^eps)_+`` untilted over the cells
  it can reach;
* *by Cauchy-Schwarz*: the charge is ``sum_j w_j |x_j| <= ||w||_2 ||x||_2``, the weights ``w_j`` the nodes'
  untilted ``(G - e^eps)_+`` (each node's gap read at its cell of ``log G``, rounded up: only larger) and
  ``||x||_2`` the L2 bound itself. The L1 charge puts all of the error where a node at ``V = 0`` reaches the
  target, up to ``e^{theta log i0e(V)}`` below the nodes where the mass is: at delta 1e-10 it was 65% of the
  bound (sigma 1.23, 24 of 575, the count without a large ratio at the rate 0.0345: 1.19e-10 of 1.84e-10).
  Node by node (each node's error at most ``||x||_2``, the charge ``||w||_1 ||x||_2``) it was still 31% of the
  bound at sigma 1.17, 10 of 393, delta 1e-10 (6.6e-11 at the exact epsilon 3.483, an importance-sampled Monte
  Carlo); by Cauchy-Schwarz (``||w||_2 <= ||w||_1``, and ``<= sqrt(nodes) max w``, so never above either) 3.8e-12:
  the circle's epsilon 3.572 became 3.528.

References
----------
Cauchy's integral formula for the coefficients of a polynomial; Watson 1944 (``I_0``); Good 1957 (saddle
points); Jensen's inequality (convex order).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import fft as _fft
from scipy import special

from ... import effort
from ...accounting.curves import PrivacyCurve
from ...errors import NumericalLimitError
from .log_statistic import _count_masses, _log_choose
from .power_sums import seconds as _power_seconds
from .power_sums import applies as _power_sums_apply
from .power_sums import count_bound as _power_sum_bound
from .uniform_grid import _entry_noise, _noise, _power, integer_power

#: The grid on which each count's rate is chosen (every rate tried).
COARSE = (0.01, 0.1, 0.25)
#: Thresholds of ``log W`` for the counts, relative to ``log((t - k) / k)``, per level (module doc, "Which r":
#: the second level halves the fine grid instead).
THRESHOLDS = ((0.0,), (0.0,))
#: Spacing of the rates' grid, in ``log r``.
RATE_STEP = 0.125
#: Spacing of the lattice of the rates chosen at the saddle point (:func:`saddle_rate`), in ``log r``: a count's
#: rate is the lattice's nearest, so that neighbouring counts share their transforms.
SADDLE_STEP = RATE_STEP / 4
#: A count stops trying smaller rates once its value has risen this many times past its least.
RISES = 2
#: The fine grid tries each count's coarse choice of rate and this many neighbours on either side, per level
#: (measured: sigma 0.74, 18 of 234, delta 1e-10, one on either side 18.9808 in 19.7 s, none 18.9848 in
#: 9.0 s; at the halved grid of the second level, one on either side took 2.4 times as long for at most 0.1%:
#: sigma 0.74, 3 of 347, delta 1e-8, 3.9551 against 3.9602; sigma 1.17, 10 of 393, 1e-10, 3.5119 against 3.5134).
FINE_NEIGHBOURS = (0, 0)
#: Tilts of the transforms (module doc, "Floating point").
TILTS = tuple(float(theta) for theta in np.arange(1.0, 8.01, 1.0))
#: The range of ``V`` in the transforms, ``V_SPAN k + V_MARGIN`` (at most ``t / 4``): near the saddle point
#: ``V <= sum_i p_i`` is about ``k``; a larger sum wraps, counted lower (``G`` only larger).
V_SPAN = 1.5
V_MARGIN = 10.0
#: Largest 2-D transform (cells).
SIZE_LIMIT = 2**23
#: Cells of the loss ``log G`` (rounded up onto them).
CELL_LOSS = 0.002
#: A count bounded by power sums has no round-off charge in L1 (:mod:`.power_sums`: by Cauchy-Schwarz only).
_NO_L1 = 1e300
#: The curve claims nothing (delta 1) more than this below the target loss: the cells there are dropped.
LOSS_SPAN = 10.0
#: Seconds per point and log2(points) of a 2-D transform and the work around it (the power of each band's
#: spectrum, the count's collapse onto the loss), the bound read without BLAS (:meth:`_CountBound.raw`); the
#: level is interruptible. Measured over 10 levels of 0.3 to 3.4 s (2 to 24 of 13 to 724, sigma 0.5 to 2.6,
#: delta 1e-5 to 1e-10; one rate a count on the fine grid, ``V`` over :data:`V_SPAN`; 2 cores, 2026-12):
#: :func:`seconds` 0.5 to 1.4 times the time taken (:data:`_FIXED_SECONDS` included; a busy neighbour on the
#: other core). Again after the cells once per rate and the in-place sums, 15 first levels of 0.3 to 2.9 s (4 to
#: 23 of 12 to 724, sigma 0.54 to 1.8; one quiet core): 0.58 to 1.72 times, median 1.26 (kept: the
#: underestimates are at 1e-10, 11 of 310 the largest). With the saddle points and the sparse cells of ``log W``
#: (2026-12, one quiet core) :func:`seconds` was 1.1 to 2.2 times the time taken at 8 to 25 of 139 to 724
#: (sigma 0.67 to 2.8): 1.5e-9 and :data:`_FIXED_SECONDS` 0.4 bring it to 0.75 to 1.5 (the level is interruptible).
#: The spectra's logarithms and exponentials from real functions (since replaced by powers) made the level about 1.5
#: times faster (10 of 393 at sigma 1.17, delta 1e-10: 1.55 s to 1.12 s): at 1.5e-9 :func:`seconds` was 1.3 to 2.2
#: times the time taken at 3 to 22 of 138 to 999 (sigma 0.54 to 1.48, one quiet core); 1.1e-9 now.
_TRANSFORM_SECONDS = 1.1e-9
#: Seconds of a level's fixed work (the node laws, the counts' masses and saddle points, the curve read at the
#: target): 0.2 until the saddle points and the cells of ``log W`` a fiftieth of A's (2026-12), then with these
#: :func:`seconds` was 0.2 to 0.6 times the time taken at two to four members (0.41 s for 1.9 s at 4 of 13,
#: sigma 0.62), and 0.6 was kept until the node laws' sparse cells made the level about 1.6 times faster; now 0.4.
_FIXED_SECONDS = 0.4


def fine_grid(target: float, k: int, level: int = 0) -> tuple[float, float, float]:
    """The grid of the answer: cells of ``log W`` (step 1, the monotone replacement), nodes of ``A`` and of
    ``V`` (step 2); the nodes of ``A`` a 1000th of the target loss, from 0.005 to 0.02, and half that at the
    second level (the split's spread costs about a constant in ``log G``), the cells of ``log W``
    a fiftieth of them (step 1 raises each term by up to a cell of ``log W`` times its ``p``: about ``k`` cells
    in all; the cells cost only the node laws, not the transforms: from a tenth to a hundredth, sigma 2.8, 25 of
    139, delta 1e-8, 4.4032 to 4.3964, sigma 1.23, 16 of 89, delta 1e-5, 7.4254 to 7.4178). Measured (a
    tenth), delta 1e-5:
    sigma 1, 10 of 100 at (0.002, 0.02, 0.05) 5.905, (0.0005, 0.005, 0.1) 5.880 (finer: 5.879); sigma 0.5 at
    (0.002, 0.02, 0.1) 23.41, (0.001, 0.01, 0.1) 23.39; sigma 0.74, 18 of 234, delta 1e-10, a 2000th of the
    target 18.985 in 9.0 s, a 1000th 19.022 in 4.1 s (+0.2%: about half the time). The nodes of ``V`` a
    hundredth of ``k`` apart (``V`` is about ``k`` near the saddle point), from 0.1 to 0.2: at 0.2 instead of
    0.1, +0.01% to 0.06% in 0.3 to 0.75 times the time at 18 to 23 members (sigma 0.7 to 0.76, 74 to 724
    databases, delta 1e-6 to 1e-10), but +0.6% at 2 of 10 (sigma 0.79, 1e-10); halved at the second level
    with the nodes of ``A`` (module doc, "Which r")."""
    cell_a = min(max(target / 1000.0, 0.005), 0.02) / (1.0 + level)
    return cell_a / 50.0, cell_a, min(max(k / 100.0, 0.1), 0.2) / (1.0 + level)


@dataclass(frozen=True)
class _CountBound:
    """One count's bound: losses ``log G`` on a grid from ``low`` (step :data:`CELL_LOSS`), the masses
    ``E_Q[G; counts, log G in cell]`` (``weight``), the round-off allowances per cell in the same units (module
    doc, "Floating point"): in L1 (``allowance``: the charge at eps is the largest of ``allowance (1 -
    e^{eps - loss})_+``) and by Cauchy-Schwarz (``squares``, each cell's sum of its nodes' squared untilted
    weights times the square of the L2 bound: the charge is the root of the sum of ``squares (1 - e^{eps -
    loss})_+^2``), the lesser kept; the count's P-mass ``cap`` and the rate."""

    low: float
    weight: NDArray[np.float64]
    allowance: NDArray[np.float64]
    squares: NDArray[np.float64]
    cap: float
    rate: float

    def delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.minimum(self.raw(eps), self.cap)

    def raw(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        """The bound by (1) alone, without the cap."""
        loss = self.low + CELL_LOSS * np.arange(self.weight.size)
        gap = 1.0 - np.exp(np.minimum(eps[:, None] - loss[None, :], 0.0))
        # sums of products, not a matrix product: BLAS' threads cost milliseconds a call on a loaded machine
        # (read thousands of times while the rates are chosen: the circle took 3 to 4 times its estimate there)
        with np.errstate(invalid="ignore"):  # (a square beyond the doubles where the gap is 0: no charge)
            squared = np.where(gap > 0.0, gap * gap * self.squares[None, :], 0.0)
        return (gap * self.weight[None, :]).sum(axis=1) + np.minimum(np.max(gap * self.allowance[None, :], axis=1),
                                                                     np.sqrt(squared.sum(axis=1)))


class CircleCurve(PrivacyCurve):
    """The upper curve of the direction P||Q of one k-of-t allocation by (1) (module doc): the counts'
    bounds added up, with the charges (clamp, counts cut, the transforms' range). A valid bound on that
    direction only."""

    def __init__(self, counts: list[_CountBound], charge: float, description: str, complete: bool = True,
                 parts: dict[tuple[int, ...], tuple[_CountBound, float]] | None = None,
                 cuts: tuple[float, ...] = (), sums: dict | None = None):
        self._counts = tuple(counts)
        # each count's bound with a charge that covers it alone (its transform's range, or its power sums'
        # charges), the thresholds, and every count's power sums computed (None: no bound there), chosen or
        # not: what a later level starts from (:func:`circle_curve`, ``earlier``)
        self.parts = dict(parts or {})
        self.cuts = tuple(cuts)
        self.sums = dict(sums or {})
        self.complete = complete  # False: the time limit cut the fine grid (some counts kept their coarse bounds)
        self._charge = float(charge)
        self.description = description
        self.delta_floor = min(self._charge, 1.0)
        self._low = max((count.low for count in counts), default=0.0)
        self._epsilons: dict[float, float] = {}  # epsilon at each delta read (the curve never changes)

    def _delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        eps = np.atleast_1d(np.asarray(eps, dtype=float))
        total = np.full(eps.shape, self._charge)
        for count in self._counts:
            total = total + count.delta(eps)
        return np.where(eps >= self._low, np.minimum(total, 1.0), 1.0)

    def _epsilon(self, d: NDArray[np.float64]) -> NDArray[np.float64]:
        """As every curve's (a bisection of :meth:`_delta`), each delta's once: the bracket at the target is
        read before every later step of :func:`~.random_allocation.allocation_curve`, and each bisection sums
        the counts' bounds some sixty times."""
        out = np.empty(d.shape)
        for i, target in enumerate(d):
            key = float(target)
            if key not in self._epsilons:
                self._epsilons[key] = self._bisect(key)
            out[i] = self._epsilons[key]
        return out


def thresholds(t: int, k: int, level: int = 0, target: float | None = None, sums: bool = False
               ) -> tuple[float, ...]:
    """The thresholds of ``log W`` at a level of :data:`THRESHOLDS` (module doc, "Which r"); at few databases a
    member (``t <= FEW_DATABASES k``), with the loss ``target``, moved up by :data:`FEW_SHIFT` of the way to
    ``log W`` of the members that reach the target alone (each ``(target + log C(t, k)) / k``), by
    :data:`FEW_SHIFT_SUMS` where the counts of at most k large ratios have power sums (``sums``)."""
    centre = math.log((t - k) / k)
    if target is not None and t <= FEW_DATABASES * k:
        share = FEW_SHIFT_SUMS if sums else FEW_SHIFT
        centre += share * max((target + _log_choose(t, k)) / k - centre, 0.0)
    if _lowered(t, k, level, target, sums):
        centre += LOW_SHIFT
    return tuple(centre + d for d in THRESHOLDS[level])


#: From the second level, at three or four members with power sums, many databases a member (``t >=
#: LOW_DATABASES k``) and a small loss target (below ``LOW_LOSS``), the threshold is lowered by ``-LOW_SHIFT``
#: (:func:`thresholds`). There the outputs that decide have no ratio near the threshold ``tau``, and the power
#: sums' count without large ratios reads ``p_3 <= tau p_2`` (:mod:`.power_sums`), loose by about ``tau`` over
#: the ratios' own scale; a lower threshold moves the few large ratios into the counts the sums bound exactly.
#: At larger losses a few large ratios decide, and more counts above a lower threshold (beyond k of them the
#: circle's alone) cost more than they gain. Measured at the second level (2026-12; epsilon at the threshold as
#: before, lowered by 0.5 and by 1): lower at all twelve cases with a target below 2 and ``t >= 10 k`` (sigma
#: 1.48, 4 of 138, 1e-10: 1.6752, 1.6629, 1.6582; sigma 1.6, 3 of 500, 1e-8: 0.5157, 0.4905, 0.4784; sigma 1.8,
#: 3 of 200, 1e-10: 0.7746, 0.7614 at 1; sigma 1.2, 4 of 300, 1e-8: 1.3522, 1.3349; sigma 2, 4 of 60, 1e-10:
#: 1.7084, 1.6849; sigma 1, 4 of 200, 1e-6: 1.9282, 1.9173; sigma 3, 4 of 120, 1e-5: 0.4567, 0.4447; also 4 of
#: 100, 3 of 90, 4 of 80, 4 of 400, 4 of 600), and higher at all eleven others (targets 2.14 to 5.55, or ``t
#: < 10 k``: sigma 1.6, 3 of 40, 1e-10: 2.1369, 2.1564 at 1; sigma 1.25, 4 of 28, 1e-8: 4.1638, 4.1978; sigma
#: 2.37, 3 of 17, 1e-10: 1.9630, 2.0148; sigma 0.74, 3 of 347, 1e-8: 3.8447, 3.8479; sigma 1, 4 of 150, 1e-10:
#: 3.6658, 3.6718).
LOW_DATABASES, LOW_LOSS, LOW_SHIFT = 10, 2.0, -1.0


def _lowered(t: int, k: int, level: int, target: float | None, sums: bool) -> bool:
    """Whether the threshold of ``level`` is lowered by :data:`LOW_SHIFT`."""
    return (level >= 1 and sums and k >= 3 and t >= LOW_DATABASES * k and target is not None
            and target < LOW_LOSS)


#: At most this many databases a member, the threshold moves up by this share of the way to the members'
#: ``log W`` at the target (:func:`thresholds`): there the members' ratios decide the saddle point, and one
#: count of all that pass ``log((t - k) / k)`` mixes members far apart. Measured at level 1 (one quiet core,
#: 2026-12): sigma 0.74, 3 of 6, delta 1e-10, 14.411 to 14.344 (the truth near 14.22); sigma 0.92, 4 of 8,
#: 1e-10, 12.298 to 12.256; sigma 0.62, 4 of 13, 1e-8, 16.891 to 16.814 (near 16.575); sigma 0.7, 5 of 20,
#: 1e-10, 16.667 to 16.647; but sigma 0.97, 4 of 18, 1e-10, 8.658 to 8.662, sigma 1.25, 4 of 28, 1e-8, 4.201
#: to 4.207, and from 7 of 73 (sigma 0.78, 1e-8, 10.318 to 10.340) to 24 of 575 looser or no better.
FEW_DATABASES, FEW_SHIFT = 4, 1.0 / 3.0
#: The same share where the counts of up to k large ratios are bounded by power sums (two to four members,
#: :mod:`.power_sums`): more of the outputs then fall in those counts. Measured at level 1 (2026-12, the
#: counts of three and four large ratios included): sigma 0.92, 4 of 8, delta 1e-10, 12.194 at 1/3, 12.164 at
#: 1/2, 12.148 at 2/3, 12.166 at 0.8, 12.311 at 1 (an importance-sampled Monte Carlo near 12.11); sigma 0.74,
#: 3 of 6, 1e-10, 14.284, 14.260, 14.249, 14.247, 14.285 (near 14.22); sigma 0.62, 4 of 13, 1e-8, 16.659,
#: 16.618, 16.608, 16.632, 16.914 (near 16.575); sigma 0.74, 3 of 6, 1e-6, 10.663 to 10.607 at 2/3; two
#: members unchanged (2 of 8 at sigma 2.48, 2 of 11 at sigma 0.52). Without power sums 2/3 was looser (sigma
#: 0.7, 5 of 20, 1e-10: 16.627 at 1/3, 16.713 at 2/3).
FEW_SHIFT_SUMS = 2.0 / 3.0


def rates(t: int, k: int) -> tuple[float, ...]:
    """The rates tried: ``k / (t - k)`` times ``e^{j RATE_STEP}``, ``j`` from -40 to 4 (``e^-5`` to ``e^0.5``
    of it; the search stops past a count's least, so the low end costs only where it decides: at few databases
    and large losses the members' large ratios put the saddle point low, sigma 0.74, 3 of 6, delta 1e-10,
    14.465 with ``j`` from -20, 14.411 from -40)."""
    base = math.log(k / (t - k))
    return tuple(math.exp(base + j * RATE_STEP) for j in range(4, -41, -1))


#: Counts of at least this share of the largest count's P-mass take their saddle point's rate on the lattice
#: :data:`SADDLE_STEP` apart, the others on every other point (fewer rates, so fewer transforms: sigma 0.76, 9 of
#: 97, delta 1e-6, 40 rates in 3.7 s on the lattice, every other point 2.3 s; at 24 of 575, sigma 1.23, delta
#: 1e-10, where one count holds 99% of the mass, 6.452 on the lattice, 6.464 on every other point).
MAIN_COUNTS = 0.01
#: The clamp of each database's ratio is placed where the P-mass beyond it is this share of the caller's
#: ``tail``: the charge beyond it is the members' P-mass and the others' Q-mass there (module doc), which at the
#: caller's clamp was up to 7% of the bound (sigma 2.8, 25 of 139, delta 1e-8: 7.0e-10; here 6.5e-14, epsilon
#: 4.3964 to 4.3861); the transforms' range of A grows by about ``-log CLAMP_SHARE``.
CLAMP_SHARE = 1e-2
#: The node laws' cells of ``log W`` start where ``r W = e^_LOWEST_X``: below, one cell from 0 (its ``a`` at
#: most 1e-9, each database's term raised by at most that).
_LOWEST_X = math.log(1e-9)
#: Below ``r W = e^_SPARSE_X`` the node laws' cells of ``log W`` are :data:`_SPARSE_CELLS` times wider (each term
#: is raised by at most ``p`` times its cell, and ``p < e^_SPARSE_X`` there).
_SPARSE_X, _SPARSE_CELLS = -5.0, 10
#: Cells of ``log W`` on which :func:`saddle_rate` reads the bands' tilted means (only a rate's choice).
SADDLE_CELL = 0.01


def _bands(t: int, n: tuple[int, ...]) -> tuple[int, ...]:
    """The databases in each band of ``log W`` (below the first cut, between cuts, above the last) for the
    count vector ``n`` (the databases above each cut); a negative entry: the count is impossible."""
    return (t - n[0],) + tuple(n[j] - n[j + 1] for j in range(len(n) - 1)) + (n[-1],)


def saddle_laws(ratio, cuts: tuple[float, ...], top: float) -> list[tuple[NDArray[np.float64], NDArray[np.float64]]]:
    """Per band of ``log W`` (as :func:`_bands`), one database's law on cells :data:`SADDLE_CELL` of ``log W``
    up to ``top``: the cells' middles and the logarithms of their Q-masses (the cells of no mass left out), as
    :func:`saddle_rate` reads them; the same for every count and rate."""
    u = np.arange(min(cuts[0], -30.0), top + SADDLE_CELL, SADDLE_CELL)
    q, _ = ratio.cells(np.concatenate([[0.0], np.exp(u[1:])]))
    middle = np.concatenate([[u[0]], 0.5 * (u[1:-1] + u[2:])])
    band = np.searchsorted(np.asarray(cuts), middle, side="right")
    with np.errstate(divide="ignore"):
        log_q = np.log(q)
    return [(middle[here], log_q[here]) for here in ((band == b) & (q > 0) for b in range(len(cuts) + 1))]


def saddle_rate(ratio, t: int, k: int, cuts: tuple[float, ...], top: float, n: tuple[int, ...], target: float,
                log_choose: float, laws: list | None = None) -> float | None:
    """A count's rate at the saddle point of the outputs that decide the target (module doc, "Which r"): the
    ``r`` at which, under the exponential tilt ``e^{theta A}`` that puts the mean of ``log G`` at ``target``,
    the mean of ``sum_i p_i`` is ``k``. (1) is least in ``r`` where ``sum_i p_i = k`` (``d/d log r (A - k log
    r) = sum_i p_i - k``), and the tilt is where the bound's mass at the target lies; the bands' laws of one
    database are read on cells :data:`SADDLE_CELL` of ``log W``. Any rate gives a valid bound: this one only
    chooses. None when no rate in ``e^-3`` to ``e^1`` times ``k / (t - k)`` brackets it (the grid search then
    decides). Measured at the first level (sigma 1.23, 24 of 575, delta 1e-10; sigma 1.28, 25 of 341, delta
    1e-8): the rates 0.0349 and 0.0617, where the grid search's coarse choices were 0.0384 and 0.0698 (their
    epsilons 6.580 and 7.528, at the saddle 6.46 and 7.344; importance-sampled Monte Carlos 6.406 and 7.295).
    ``laws``: :func:`saddle_laws` of ``ratio``, ``cuts`` and ``top``, computed here when not given."""
    bands = _bands(t, n)
    if any(c < 0 for c in bands):
        return None
    laws = saddle_laws(ratio, cuts, top) if laws is None else laws
    if any(c and not x.size for c, (x, _) in zip(bands, laws)):
        return None
    parts = [(c, x, log_q) for c, (x, log_q) in zip(bands, laws) if c]

    def means(lr: float, theta: float) -> tuple[float, float, float, float]:
        """The tilted sums' means of A, V and sum p, and the variance of A."""
        a_sum = v_sum = p_sum = var = 0.0
        for c, x, log_q in parts:
            a = np.logaddexp(0.0, x + lr)
            e = log_q + theta * a
            with np.errstate(invalid="ignore"):  # a tilt beyond the doubles: the caller's check
                w = np.exp(e - np.max(e))
            w /= w.sum()
            p = special.expit(x + lr)
            mean = float(w @ a)
            a_sum += c * mean
            var += c * float(w @ (a - mean) ** 2)
            v_sum += c * float(w @ (p * (1.0 - p)))
            p_sum += c * float(w @ p)
        return a_sum, v_sum, p_sum, var

    def members(lr: float, theta: float) -> tuple[float, float]:
        """Sum p less k at the tilt that puts log G's mean at the target (Newton's steps from ``theta``, kept
        at least 0), and that tilt."""
        for _ in range(_NEWTON_STEPS):
            a, v, p, var = means(lr, theta)
            miss = a - k * lr - log_choose + _log_modulus_at(t, v) - target
            if abs(miss) < 1e-3 or var <= 0.0:
                break
            theta = max(theta - miss / var, 0.0)
            if not math.isfinite(theta):
                return math.nan, 1.0
        return means(lr, theta)[2] - k, theta

    base = math.log(k / (t - k))
    low, high = base - 3.0, base + 1.0
    f_low, theta_low = members(low, 1.0)
    f_high, theta_high = members(high, theta_low)
    if not f_low < 0.0 < f_high:  # (also a tilt that is not a number: no rate chosen here)
        return None
    for _ in range(_RATE_STEPS):  # regula falsi (Illinois), kept inside the bracket
        lr = (low * f_high - high * f_low) / (f_high - f_low)
        f, theta = members(lr, 0.5 * (theta_low + theta_high))
        if not math.isfinite(f):
            return None
        if abs(f) < 1e-3 * k or high - low < 1e-4:
            return math.exp(lr)
        if f < 0.0:
            low, f_low, theta_low = lr, f, theta
            f_high *= 0.5
        else:
            high, f_high, theta_high = lr, f, theta
            f_low *= 0.5
    return math.exp(lr)


#: Newton's steps of the tilt and steps of the rate in :func:`saddle_rate` (a choice only: any rate is valid).
_NEWTON_STEPS, _RATE_STEPS = 12, 30


def _node_laws(ratio, r: float, cuts: tuple[float, ...], top: float, grid: tuple[float, float, float]
               ) -> list[NDArray[np.float64]]:
    """Steps 1 and 2 (module doc): per band of ``log W`` (below the first cut, between cuts, above the last;
    ``W <= e^top`` only), the masses of one database's ``(a^, v^)`` on the nodes of ``grid`` (cells of
    ``log W``, ``A``, ``V``)."""
    cell_u, cell_a, cell_v = grid
    lr = math.log(r)
    first = cuts[0]
    lowest = _LOWEST_X - lr  # below, a = log(1 + r W) < 1e-9: one cell from 0 (each term raised by at most that)
    j_low = math.floor((lowest - first) / cell_u)
    j_high = max(math.floor((top - first) / cell_u) + 1, j_low + 1)  # the last edge above e^top
    # cells _SPARSE_CELLS times wider where r W < e^_SPARSE_X (p below 0.7%: a term there is raised by at most p
    # times its cell); every cut is an edge (a cell's band is that of its lower edge)
    j_fine = min(max(math.floor((_SPARSE_X - lr - first) / cell_u), j_low), j_high)
    u = np.unique(np.concatenate([first + cell_u * np.arange(j_low, j_fine, _SPARSE_CELLS),
                                  first + cell_u * np.arange(j_fine, j_high + 1),
                                  [c for c in cuts if first + cell_u * j_low < c < first + cell_u * j_high]]))
    q, _ = ratio.cells(np.concatenate([[0.0], np.exp(u)]))  # [0, e^u_0), [e^u_j, e^u_{j+1})
    x = u + lr  # log(r W) at each cell's upper edge
    a_high = np.logaddexp(0.0, x)
    v_edges = 0.25 / np.cosh(0.5 * x) ** 2  # p (1 - p) at the edges
    v_low = np.concatenate([[0.0], np.minimum(v_edges[:-1], v_edges[1:])])
    lower_edge = np.concatenate([[-np.inf], u[:-1]])
    band = np.searchsorted(np.asarray(cuts) - 1e-9 * cell_u, lower_edge, side="right")
    fa, fv = a_high / cell_a, v_low / cell_v
    ia, iv = np.floor(fa).astype(np.int64), np.floor(fv).astype(np.int64)
    la, lv = fa - ia, fv - iv
    shape = (int(ia.max()) + 2, int(iv.max()) + 2)
    laws = []
    flat = ia * shape[1] + iv  # the node below and to the left, row-major
    for b in range(len(cuts) + 1):
        here = band == b
        cell, mass, a_up, v_up = flat[here], q[here], la[here], lv[here]
        law = np.zeros(shape[0] * shape[1])
        for da, wa in ((0, 1.0 - a_up), (1, a_up)):
            for dv, wv in ((0, 1.0 - v_up), (1, v_up)):
                law += np.bincount(cell + (da * shape[1] + dv), weights=mass * wa * wv, minlength=law.size)
        laws.append(law.reshape(shape))
    return laws


def seconds(ratio, t: int, k: int, target: float, tail: float, level: int = 0,
            earlier: CircleCurve | None = None) -> float:
    """Estimated seconds of :func:`circle_curve` (from the transforms' sizes at the rate ``k / (t - k)`` and
    the counts above the cut, never measured): :data:`_FIXED_SECONDS`, the coarse search (from each count's
    saddle point, :data:`RISES` rates either way past its least) and the fine one (:data:`FINE_NEIGHBOURS` of
    the level on either side of each count's coarse choice and of its saddle point), on the level's fine grid;
    infinite when the fine transform would exceed :data:`SIZE_LIMIT` there. Measured at the second level
    (one quiet core, 2026-12): 0.7 to 1.45 times the time taken at 3 to 25 of 13 to 999 (sigma 0.54 to 2.8).
    A level that takes over an earlier one's counts tries only their rates (:func:`circle_curve`).
    ``earlier``: the level :func:`circle_curve` starts from, whose power sums it takes over at the same
    thresholds (:func:`_takes_over`)."""
    cuts = _level_cuts(ratio, t, k, level, target, earlier)
    kept = [n for n, m in _count_masses(ratio, t, k, cuts).items() if m > tail]
    counts = len(kept)
    total = _FIXED_SECONDS
    reach = _reach(ratio, t, k, tail)
    searched = (2 * RISES + 1) * (counts + 4)  # (from the saddle point both ways: :func:`_coarse_search`)
    # the search's rate and the saddle point's, or at a level that takes over the earlier one's counts, its rate
    tries = 1 if _takes_over(earlier, cuts) and earlier.parts else 2
    fine_tries = tries * (2 * FINE_NEIGHBOURS[level] + 1) * (counts + 4)
    for grid, evaluations in ((COARSE, searched), (fine_grid(target, k, level), fine_tries)):
        n = _v_cells(t, k, grid) * reach / grid[1]
        if n > SIZE_LIMIT:
            return math.inf
        total += evaluations * _TRANSFORM_SECONDS * n * math.log2(n)
    if len(cuts) == 1 and _power_sums_apply(ratio, k, 0) and not (_takes_over(earlier, cuts) and earlier.sums):
        try:
            clamp = ratio.clamp(CLAMP_SHARE * tail)
        except NumericalLimitError:
            return total
        total += _power_seconds(ratio, k, cuts[0], clamp, [n[0] for n in kept])
    return total


def _reach(ratio, t: int, k: int, tail: float) -> float:
    """The range of ``A`` the transforms need at the rate ``k / (t - k)`` (the Chernoff charge at most
    ``tail``, :func:`_rate_bounds`), on the coarse grid's cells."""
    r = k / (t - k)
    try:
        top = math.log(ratio.clamp(CLAMP_SHARE * tail))
    except NumericalLimitError:
        return math.inf
    total = sum(_node_laws(ratio, r, thresholds(t, k), top, COARSE))
    a_nodes = COARSE[1] * np.arange(total.shape[0])[:, None]
    return _range(total, a_nodes, t, k * math.log(r) + _log_choose(t, k) + math.log(tail))[0]


def _range(total: NDArray[np.float64], a_nodes: NDArray[np.float64], t: int, log_unit: float
           ) -> tuple[float, float, float]:
    """The range ``R`` of ``A`` past which ``E_Q[e^A; A >= R] r^-k / C(t, k)`` is at most ``tail`` (``log_unit =
    k log r + log C(t, k) + log tail``), from one term's node law ``total`` (module doc, "The law of (A, V),
    certified", step 3): for every ``lambda > 0``, ``E_Q[e^A; A >= R] <= e^{-lambda R} E_Q[e^{(1 + lambda) A}]
    = e^{-lambda R} E[e^{(1 + lambda) a}]^t`` (Chernoff), at the exponent of :data:`_RANGE_EXPONENTS` that
    gives the least ``R``: (R, lambda, log E[e^{(1 + lambda) a}]). Measured (the rate ``k / (t - k)``): at 10 of
    393, sigma 1.17, delta 1e-10, 44.7 at ``lambda = 1`` (the only exponent before), 19.5 at 4; at 20 of 278,
    sigma 0.54, delta 1e-5, 78.9 at 0.5, 83.9 at 1."""
    best = None
    marginal, a_column = total.sum(axis=1), a_nodes[:, 0]  # (the moments read A alone)
    for exponent in _RANGE_EXPONENTS:
        log_moment = _log_tilted(marginal, (1.0 + exponent) * a_column)[1]
        reach = max((t * log_moment - log_unit) / exponent, 1.0)
        if best is None or reach < best[0]:
            best = (reach, exponent, log_moment)
    return best


#: The exponents of :func:`_range`'s Chernoff bound.
_RANGE_EXPONENTS = (0.5, 1.0, 2.0, 4.0, 8.0)


def _v_cells(t: int, k: int, grid: tuple[float, float, float]) -> int:
    """Cells of ``V`` in the transforms: its whole range ``t / 4``, or :data:`V_SPAN` times ``k`` and
    :data:`V_MARGIN` where that is less (module doc, "The law of (A, V), certified", step 3: larger sums wrap)."""
    return _fft.next_fast_len(int(math.ceil((min(0.25 * t, V_SPAN * k + V_MARGIN) + 1.0) / grid[2])), real=True)


def circle_curve(ratio, t: int, k: int, target: float, tail: float, level: int = 0,
                 earlier: CircleCurve | None = None) -> CircleCurve | None:
    """The upper curve of the direction P||Q of one k-of-t allocation (module doc), each count's rate chosen
    at the loss ``target`` (the epsilon the caller expects): on the coarse grid :data:`COARSE` every rate
    from the largest down (a count stops once its value has risen :data:`RISES` times past its least), then
    on the fine grid (:func:`fine_grid`) the coarse choice (and :data:`FINE_NEIGHBOURS` of the level on either
    side). None when the ratio has P-mass outside Q's support or every rate's transform would exceed
    :data:`SIZE_LIMIT`.

    ``earlier``: a curve of an earlier level of the same question (the same thresholds). Each of its counts'
    bounds (valid on its own, with its own charge) starts as that count's bound where lower at the target than
    the coarse grid's, so that a level cut by the time limit is never looser than the last one count by count,
    and its power sums (which do not depend on the level) are not computed again."""
    if not 1 < k < t:
        raise ValueError(f"k must be in (1, t), got k = {k}, t = {t}")
    if ratio.singular > 0 or ratio.trivial:
        return None
    cuts = _level_cuts(ratio, t, k, level, target, earlier)
    try:
        clamp = ratio.clamp(CLAMP_SHARE * tail)
    except NumericalLimitError:
        return None
    # W > clamp (an atom at the clamp is in the cells: the last one ends above it)
    q_top, p_top = ratio.cells(np.array([np.nextafter(clamp, np.inf), np.inf]))
    charge = k * float(p_top[0]) + (t - k) * float(q_top[0])
    if _v_cells(t, k, fine_grid(target, k, level)) * _reach(ratio, t, k, tail) / fine_grid(target, k, level)[1] > SIZE_LIMIT:
        return None  # the fine transforms would not fit (small noise: a member's a reaches hundreds)
    masses = _count_masses(ratio, t, k, cuts)
    kept = {n for n, m in masses.items() if m > tail}
    charge += sum(m for n, m in masses.items() if n not in kept)
    grid_rates = rates(t, k)
    question = (ratio, t, k, cuts, math.log(clamp), masses, target, tail)
    # each count's rate: the search on the coarse grid and the saddle point (on the lattice :data:`SADDLE_STEP`
    # apart, so that neighbouring counts share their transforms), both tried on the fine grid
    base, log_choose = math.log(k / (t - k)), _log_choose(t, k)
    steps = round(RATE_STEP / SADDLE_STEP)
    largest = max(masses[n] for n in kept) if kept else 0.0
    laws = saddle_laws(ratio, cuts, math.log(clamp))
    saddle_at: dict[tuple[int, ...], int] = {}  # a count's saddle point, an index on the lattice
    for n in sorted(kept):
        r = saddle_rate(ratio, t, k, cuts, math.log(clamp), n, target, log_choose, laws)
        if r is not None:  # the counts of the most mass on the lattice, the others on every other point of it
            every = 1 if masses[n] >= MAIN_COUNTS * largest else 2
            saddle_at[n] = every * round((math.log(r) - base) / (every * SADDLE_STEP))
    # the lattice's index j is the coarse grid's 4 - j / steps: e^{(4 - i) RATE_STEP} k / (t - k) (:func:`rates`)
    saddles = {n: 4 - j / steps for n, j in saddle_at.items()}
    coarse = _coarse_search(question, grid_rates, kept, saddles, target)
    chosen_at = {n: {saddle_at[n]} if n in saddle_at else set() for n in kept}
    for n, (_, i, _, _) in coarse.items():
        if n not in saddles or abs(i - saddles[n]) > 1.0:  # within a step of it, the saddle point alone
            chosen_at[n].add((4 - i) * steps)
    same = _takes_over(earlier, cuts)
    reused = earlier.parts if same else {}
    for n, (bound, _) in reused.items():
        if n in chosen_at and math.isfinite(bound.rate):  # the rate the earlier level chose alone (module doc)
            chosen_at[n] = {round((math.log(bound.rate) - base) / SADDLE_STEP)}
    # fine: the chosen rates and their neighbours on the lattice
    fine = fine_grid(target, k, level)
    tries: dict[int, set[tuple[int, ...]]] = {}
    for n, chosen in chosen_at.items():
        for i in chosen:
            for j in range(i - FINE_NEIGHBOURS[level] * steps, i + FINE_NEIGHBOURS[level] * steps + 1, steps):
                tries.setdefault(j, set()).add(n)
    # each count's bound: the coarse grid's least (valid too), then the fine grid's where lower at the target;
    # the charge beyond the transforms' range is each (grid, rate)'s that a chosen bound uses
    best: dict[tuple[int, ...], tuple[float, _CountBound, tuple]] = {
        n: (value, bound, (False, i)) for n, (value, i, bound, _) in coarse.items()}
    wraps: dict[tuple, float] = {(False, i): wrap for _, i, _, wrap in coarse.values()}
    for n, (bound, own) in reused.items():
        if n in kept:  # (an earlier count's own charge: as it is chosen, once per count)
            value = float(bound.raw(np.array([target]))[0]) + own
            if n not in best or value < best[n][0]:
                best[n] = (value, bound, ("earlier", n))
                wraps["earlier", n] = own
    # the rates of the counts of the most P-mass first: where the time limit cuts the fine grid (an estimate
    # short on a loaded machine), the counts that decide have their fine bounds and the others keep their
    # coarse ones (module doc, "Which r")
    order = sorted(tries, key=lambda j: (-max(masses[n] for n in tries[j]), -j))
    complete = True
    try:
        for j in order:
            rate = math.exp(base + j * SADDLE_STEP)
            built = _rate_bounds(*question, rate, sorted(tries[j]), fine)
            if built is None:
                continue
            bounds, wraps[True, j] = built
            for n, bound in bounds.items():
                effort.checkpoint()  # (a count's read is short: a level that overran stops here)
                value = float(bound.raw(np.array([target]))[0])
                if n not in best or value < best[n][0]:
                    best[n] = (value, bound, (True, j))
    except effort.Overdue:
        complete = False
        effort.current().stop("allocation (the direction P||Q by Cauchy's circle: the fine grid, some counts on "
                              "the coarse one) at its loss target: a step overran its estimate")
    # the counts of few large ratios: power sums where they are lower at the target (:mod:`.power_sums`); an
    # earlier level's (the same thresholds) are not computed again
    sums: dict[tuple[int, ...], tuple[_CountBound, float] | None] = dict(earlier.sums) if same else {}
    if complete and len(cuts) == 1 and _power_sums_apply(ratio, k, 0):
        try:
            for n in sorted(n for n in kept if _power_sums_apply(ratio, k, n[0])):
                if n not in sums:
                    effort.checkpoint()
                    found = _power_sum_bound(ratio, t, k, cuts[0], n[0], target, tail, clamp,
                                             target - LOSS_SPAN, CELL_LOSS)
                    sums[n] = None if found is None else (
                        _CountBound(found.low, found.weight, np.full(found.weight.size, _NO_L1), found.squares,
                                    masses[n], math.nan), found.charge)
                if sums[n] is None:
                    continue
                bound, own = sums[n]
                value = float(bound.raw(np.array([target]))[0]) + own
                if n not in best or value < best[n][0]:
                    best[n] = (value, bound, ("sums", n))
                    wraps["sums", n] = own  # (its own charges, as it is chosen)
        except effort.Overdue:  # the counts done keep their power sums, the others the circle's bounds
            complete = False
            effort.current().stop("allocation (the direction P||Q by Cauchy's circle: the power sums of some "
                                  "counts) at its loss target: a step overran its estimate")
    # a count without a bound (a band of no mass below the clamp, or no rate fits) is charged at its P-mass
    charge += sum(masses[n] for n in kept if n not in best)
    if not best:
        return None
    chosen = [bound for _, bound, _ in best.values()]
    summed = sum(1 for _, bound, _ in best.values() if math.isnan(bound.rate))
    used = sorted({bound.rate for bound in chosen if not math.isnan(bound.rate)})
    charge += sum(wraps[key] for key in {key for _, _, key in best.values()})
    coarse_left = sum(1 for _, _, (on_fine, _) in best.values() if on_fine is False)
    parts = {n: (bound, wraps[key]) for n, (_, bound, key) in best.items()}
    rates_text = f", rates {used[0]:.3g} to {used[-1]:.3g}" if used else ""
    return CircleCurve(chosen, charge, f"Cauchy's circle, {len(cuts)} threshold(s), {len(chosen)} counts"
                                       f"{rates_text}" + (f", {summed} by power sums" if summed else "")
                                       + ("" if complete else f", {coarse_left} on the coarse grid (the time "
                                                              f"limit)"), complete, parts, cuts, sums)


def _level_cuts(ratio, t: int, k: int, level: int, target: float, earlier: CircleCurve | None) -> tuple[float, ...]:
    """The thresholds of a level (:func:`thresholds`), or those of ``earlier``, the level it starts from, where
    it had as many: at few databases a member the thresholds move with the target, and a later level at the
    earlier one's takes over its counts' power sums instead of computing them again (:func:`_takes_over`; sigma
    0.62, 4 of 13, delta 1e-8: 1.3 s of the level's 1.8 s; 2026-12); not where this level's is lowered
    (:func:`_lowered`)."""
    sums = _power_sums_apply(ratio, k, 0)
    lowered = _lowered(t, k, level, target, sums)
    if earlier is not None and len(earlier.cuts) == len(THRESHOLDS[level]) and not lowered:
        return earlier.cuts
    return thresholds(t, k, level, target, sums)


def _takes_over(earlier: CircleCurve | None, cuts: tuple[float, ...]) -> bool:
    """Whether a level at the thresholds ``cuts`` starts from ``earlier``'s counts and power sums (the same
    thresholds: at few databases a member they move with the target, :func:`thresholds`)."""
    return earlier is not None and earlier.cuts == cuts


def _coarse_search(question, grid_rates: tuple[float, ...], kept, saddles: dict[tuple[int, ...], float],
                   target: float) -> dict[tuple[int, ...], tuple[float, int, _CountBound, float]]:
    """Each count's least value at the target over the rates of the coarse grid (:data:`COARSE`), its index,
    its bound there (valid on its own) and that rate's charge beyond the transforms' range: from the grid's
    rate nearest the count's saddle point (``saddles``, a fractional index) both ways, or for a count without
    one from the largest rate down, a direction stopping once the value has risen
    :data:`RISES` times past the count's least (measured, sigma 0.76, 19 of 724, delta 1e-6: 13 rates of the
    grid down from the largest, 3.4 s in all, or 5 from the saddle points, the same choices). The rates of a
    round are computed together for the counts that ask for them."""
    best: dict[tuple[int, ...], tuple[float, int, _CountBound, float]] = {}
    walks = []  # (count, step, next index, rises)
    for n in kept:
        if n in saddles:
            start = min(max(int(round(saddles[n])), 0), len(grid_rates) - 1)
            walks += [(n, 1, start, 0), (n, -1, start - 1, 0)]
        else:
            walks.append((n, 1, 0, 0))
    while walks:
        asked: dict[int, list[tuple[int, ...]]] = {}
        for n, _, i, _ in walks:
            if 0 <= i < len(grid_rates):
                asked.setdefault(i, []).append(n)
        values: dict[tuple[tuple[int, ...], int], tuple[float, _CountBound, float]] = {}
        for i in sorted(asked):
            built = _rate_bounds(*question, grid_rates[i], sorted(set(asked[i])), COARSE)
            if built is None:
                continue
            for n, bound in built[0].items():
                effort.checkpoint()  # (a count's read is short: a level that overran stops here)
                values[n, i] = (float(bound.raw(np.array([target]))[0]), bound, built[1])
        later = []
        for n, step, i, rises in walks:
            if not 0 <= i < len(grid_rates):
                continue
            if (n, i) in values:
                if n not in best or values[n, i][0] < best[n][0]:
                    value, bound, wrap = values[n, i]
                    best[n], rises = (value, i, bound, wrap), 0
                else:
                    rises += 1
            if rises < RISES:
                later.append((n, step, i + step, rises))
        walks = later
    return best


def _rate_bounds(ratio, t: int, k: int, cuts, top: float, masses, target: float, tail: float, r: float, kept,
                 grid: tuple[float, float, float]):
    """Every kept count's bound at the rate ``r`` on ``grid`` and the rate's charge beyond the transforms'
    range; None when the transform would exceed :data:`SIZE_LIMIT`."""
    _, cell_a, cell_v = grid
    log_choose = _log_choose(t, k)
    laws = _node_laws(ratio, r, cuts, top, grid)
    lr = math.log(r)
    one = laws[0].shape
    a_nodes = cell_a * np.arange(one[0])[:, None]
    v_nodes = cell_v * np.arange(one[1])[None, :]
    total = sum(laws)
    # range R: the charge e^{-lambda R} E[e^{(1 + lambda) a}]^t r^-k / C(t, k) at most tail (:func:`_range`)
    reach, exponent, log_moment = _range(total, a_nodes, t, k * lr + log_choose + math.log(tail))
    n_v = _v_cells(t, k, grid)
    if not reach / cell_a * n_v <= SIZE_LIMIT:
        return None
    n_a = _fft.next_fast_len(int(math.ceil(reach / cell_a)), real=True)
    if n_a * n_v > SIZE_LIMIT:
        return None
    wrap = math.exp(t * log_moment - exponent * n_a * cell_a - k * lr - log_choose)
    a_grid = cell_a * np.arange(n_a)
    log_g = log_modulus(t, cell_v, n_v) - k * lr - log_choose  # log G = A + log_g
    moments = {}
    for theta in TILTS:
        for b, law in enumerate(laws):
            w, log_z = _log_tilted(law, theta * a_nodes)
            moments[theta, b] = (float((w * a_nodes).sum()), float((w * v_nodes).sum())) if log_z > -math.inf else None
    spectra = {}
    bounds = {}
    cells = _loss_cells(a_grid, log_g, target, cell_a)  # the same for every count at this rate
    chosen = []  # (tilt, bands, count)
    for n in kept:
        effort.checkpoint()  # a count is short: a level that overran on a loaded machine stops here
        bands = _bands(t, n)
        if any(c < 0 for c in bands):
            continue

        def gap(theta):
            mean_a = sum(c * moments[theta, b][0] for b, c in enumerate(bands) if c)
            mean_v = sum(c * moments[theta, b][1] for b, c in enumerate(bands) if c)
            return abs(mean_a - (target + log_choose + k * lr - _log_modulus_at(t, mean_v)))

        if any(c and moments[TILTS[0], b] is None for b, c in enumerate(bands)):
            continue  # a band of no mass: the count is impossible (its P-mass is 0 too)
        chosen.append((min(TILTS, key=gap), bands, n))
    # the counts of one tilt by the first band's count, rising: its power (the bulk, hundreds of databases) is
    # carried from one count to the next (:func:`_carried`)
    chosen.sort()
    running: tuple | None = None  # (tilt, exponent, the first band's transform to that power)
    for theta, bands, n in chosen:
        effort.checkpoint()
        if theta not in spectra:
            spectra.clear()  # (an earlier tilt's transforms are done with: the counts come tilt by tilt)
            tilted, logs = [], []
            for law in laws:
                w, log_z = _log_tilted(law, theta * a_nodes)
                tilted.append(w)
                logs.append(log_z)
            spectra[theta] = ([_fft.rfft2(w, (n_a, n_v)) for w in tilted], logs,
                              _noise(n_a * n_v, t, tilted), _entry_noise(n_a * n_v, t, tilted))
        transforms, logs, noise, per_node = spectra[theta]
        scale = math.lgamma(t + 1) + sum(c * logs[b] - math.lgamma(c + 1) for b, c in enumerate(bands) if c)
        running = _carried(running, theta, transforms[0], bands[0])
        law = _fft.irfft2(_power(list(zip(transforms[1:], bands[1:])), running[2]), (n_a, n_v))
        np.maximum(law, 0.0, out=law)
        bounds[n] = _collapse(law, noise, per_node, scale, theta, a_grid, log_g, target, masses[n], r, cells)
    return bounds, wrap


def _carried(running: tuple | None, theta: float, spectrum: NDArray[np.complex128], count: int) -> tuple:
    """``(theta, count, spectrum ** count)``, from ``running`` (the same triple at a count at most ``count``,
    the same tilt) by the power of the difference, else by :func:`.uniform_grid.integer_power` (a count of 0:
    None). Each product adds a few ``eps`` to the error it inherits, so that the error stays linear in the
    count, as the allowance takes it (:func:`.uniform_grid.integer_power`)."""
    if running is not None and running[0] == theta and running[1] <= count:
        if running[1] == count:
            return running
        if running[1] > 0:
            power = integer_power(spectrum, count - running[1])
            return theta, count, np.multiply(running[2], power, out=power)
    return theta, count, integer_power(spectrum, count) if count > 0 else None


#: Points of the left Riemann sum of :func:`log_modulus` (its integrand falls along ``theta``, so the sum is
#: an upper bound, above by at most ``1 / MODULUS_POINTS``).
MODULUS_POINTS = 2**15


@functools.lru_cache(maxsize=64)
def log_modulus(t: int, cell_v: float, n_v: int) -> NDArray[np.float64]:
    """``log h_t(V)`` at the nodes ``V = j cell_v``, ``j < n_v`` (module doc, (1)): an upper bound on
    ``(1 / pi) int_0^pi (1 - 2 (V / t) (1 - cos theta))_+^(t / 2) d theta`` by the left Riemann sum on
    :data:`MODULUS_POINTS` points (:func:`_modulus_sums`), and never above ``log i0e(V)`` (a bound too: ``(1 -
    x / t)^(t / 2) <= e^{-x / 2}``). Cached: the same for every rate and count of one ``t``."""
    v = cell_v * np.arange(n_v)
    with np.errstate(divide="ignore"):
        out = np.minimum(np.log(_modulus_sums(t, v, MODULUS_POINTS)) * (1.0 - 1e-12) + 1e-12,
                         np.log(special.i0e(v)))  # (round-off, upward)
    out.setflags(write=False)
    return out


def _log_modulus_at(t: int, v: float) -> float:
    """``log h_t(v)`` as :func:`log_modulus`, on 1,024 points (one value: only a rate's or a tilt's choice)."""
    return min(math.log(float(_modulus_sums(t, np.array([v]), 1024)[0])), math.log(special.i0e(v)))


def _modulus_sums(t: int, v: NDArray[np.float64], points: int) -> NDArray[np.float64]:
    """The left Riemann sums on ``points`` points of ``h_t`` at each of ``v`` (module doc, (1)): upper bounds, the
    integrand falling in ``theta``, above by at most ``1 / points``."""
    one_minus_cos = 1.0 - np.cos(np.arange(points) * (math.pi / points))
    out = np.empty(v.size)
    for start in range(0, v.size, 64):  # (64 rows of the sum at a time)
        base = np.maximum(1.0 - np.outer(2.0 * v[start:start + 64] / t, one_minus_cos), 0.0)
        out[start:start + 64] = (base ** (0.5 * t)).mean(axis=1)
    return out


def _log_tilted(law: NDArray[np.float64], exponent: NDArray[np.float64]) -> tuple[NDArray[np.float64], float]:
    """``law e^exponent`` normalised, and the log of its total (-inf when the law has no mass), computed in
    log space (a member's ``a`` can reach hundreds at small noise)."""
    with np.errstate(divide="ignore"):
        logs = np.log(law) + exponent
    top = float(np.max(logs))
    if top == -math.inf:
        return np.zeros_like(law), -math.inf
    weights = np.exp(logs - top)
    total = float(weights.sum())
    return weights / total, top + math.log(total)


@dataclass(frozen=True)
class _LossCells:
    """The cells of ``log G`` (rounded up) of the grid of (A, V) at one rate, the same for every count: the
    first row with a loss at or above ``target - LOSS_SPAN``, each node's cell from there (``size``, one past
    the last, for the nodes below: dropped) and the number of cells."""

    first: int
    index: NDArray[np.int64]
    size: int


def _loss_cells(a_grid, log_g, target: float, cell_a: float) -> _LossCells:
    low = target - LOSS_SPAN
    first = max(int(math.floor((low - float(log_g[0])) / cell_a)), 0)  # rows with some loss >= low
    index = np.ceil((a_grid[first:, None] + log_g[None, :] - low) / CELL_LOSS)
    keep = index >= 0
    size = int(index[keep].max()) + 1 if np.any(keep) else 1
    return _LossCells(first, np.where(keep, index, size).astype(np.int64).ravel(), size)


def _collapse(law, noise: float, per_node: float, scale: float, theta: float, a_grid, log_g, target: float,
              cap: float, r: float, cells: _LossCells) -> _CountBound:
    """A count's tilted law of (A, V) onto the grid of ``log G`` (rounded up), untilted: ``weight`` per cell
    ``E_Q[G; cell]``, ``allowance`` and ``squares`` the round-off's weights in L1 (``noise``) and by
    Cauchy-Schwarz (``per_node``, the L2 bound of the error; module doc, "Floating point"). Losses below
    ``target - LOSS_SPAN`` are dropped: the curve claims nothing below it. ``cells``: :func:`_loss_cells`
    of the rate, computed once for all its counts."""
    low = target - LOSS_SPAN
    first, size = cells.first, cells.size
    a_rows = a_grid[first:, None]
    # E_Q[G; cell] = tilted mass e^{scale - theta A} e^{log G}
    with np.errstate(over="ignore"):
        unit = np.exp(np.minimum(scale - theta * a_rows + (a_rows + log_g[None, :]), 700.0))
    weight = np.bincount(cells.index, weights=(law[first:] * unit).ravel(), minlength=size + 1)[:size]
    with np.errstate(over="ignore"):  # (a square beyond the doubles: that cell's charge is unbounded)
        unit_squared = np.broadcast_to(unit * unit, law[first:].shape).ravel()
    squares = per_node ** 2 * np.bincount(cells.index, weights=unit_squared, minlength=size + 1)[:size]
    # the largest unit in a loss cell: A >= loss - log_g[0] there (log_g is largest at V = 0)
    top = low + CELL_LOSS * np.arange(size)
    a_least = np.maximum(top - CELL_LOSS - float(log_g[0]), 0.0)
    with np.errstate(over="ignore"):
        allowance = noise * np.exp(np.minimum(scale - theta * a_least + top, 700.0))
    return _CountBound(low, weight, allowance, squares, cap, r)

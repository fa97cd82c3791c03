"""Random allocation with curve mechanisms: the privacy curve of "in none" against "in exactly k of t".

An adversary prior that puts the target in exactly ``k`` of ``t`` databases, uniformly, against "in none"
(``h0 = point([])``, ``h1 = uniform(min_members=k, max_members=k)``) is what the DP-SGD literature calls
*random allocation* or balls-and-bins batching (Feldman and Shenfeld, arXiv 2502.08202; Chua et al.,
AISTATS 2025; "Efficient privacy loss accounting for subsampling and random allocation", arXiv 2602.17284).
This module computes its curve, both directions, as a certified bracket, for Gaussian, Laplace, (eps, delta)
and subsampled mechanisms, and the curves of the per-database-rate and uniform(min, max) priors (Poisson
subsampling).

The pair, written under Q (k = 1)
---------------------------------
Database ``i`` runs a mechanism whose output law is ``P_i`` with the target and ``Q_i`` without; write
``W_i = dP_i / dQ_i`` (its *likelihood ratio*; for a Gaussian of ``mu = sensitivity / sigma``,
``W = exp(mu Z - mu^2 / 2)`` with ``Z ~ N(0, 1)`` under ``Q_i``, a lognormal of mean 1). The two priors give
``Q = prod_i Q_i`` and ``P = (1/t) sum_i P_i x prod_{j != i} Q_j``, so ``dP/dQ = S / t`` with
``S = sum_i W_i``, the ``W_i`` independent under Q. Both directions of the hockey-stick divergence are then
expectations *under Q* of convex functions of ``S`` (with ``gamma = e^eps``)::

    delta_PQ(eps) = c + E_Q[(S/t - gamma)_+],      delta_QP(eps) = E_Q[(1 - gamma S/t)_+],

``c`` the mass of P outside Q's support (0 for Gaussians). The law of ``S`` is the convolution of the
``W_i``'s laws: one grid, one FFT, powers for equal databases; at small noise (k = 1), pairwise sums on a
geometric grid instead ("Small noise" below).

Certified rounding: a spread above, a garbling below
----------------------------------------------------
*Upper.* Each ``W_i`` (clamped at ``B``) is replaced by a mean-preserving spread ``W~_i`` onto the grid
``{j dx}``: the mass at ``w`` in ``[j dx, (j+1) dx)`` goes to ``j dx`` and ``(j+1) dx`` with weights that keep
its mean. Then ``E[S~ | S] = S``, and Jensen's inequality for the convex functions above gives
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

Small noise: the geometric grid (k = 1)
---------------------------------------
For a large ``mu`` the law of ``W`` spans many orders of magnitude (``mu = 4``: the clamp ``B ~ e^34``, the
bulk ``~ e^-8``) and no uniform grid of :data:`GRID_LIMIT` cells resolves both. The second method puts the
law of ``S`` on a geometric grid ``g_j = g_0 r^j`` (``r = 1 + rho``, relative cell width ``rho``, from a
point ``g_0`` below which one term has Q-mass :data:`_LOG_LOW_MASS` up to past ``t B``) and builds ``S`` by
pairwise sums of independent partial sums: doubling ``S_2m = S_m + S_m'`` and binary assembly for the bits
of ``t`` (about ``2 log2 t`` sums, :func:`_binary`).

*Upper: a spread after every sum.* One term: the mean-preserving spread of ``min(W, B)`` onto ``{0} u {g_j}``
(the mass below ``g_0`` onto 0 and ``g_0``). After each pairwise sum, the atom ``g_i + g_j`` is split
between the two grid points around it keeping its mean (:func:`_spread_sum`). If ``A~`` is a mean-preserving
spread of ``A`` and ``B~`` of ``B`` (independent), ``A~ + B~`` is one of ``A + B`` (``E[A~ + B~ | A, B] = A
+ B``), and spreading it again keeps that: ``E[S~ | S] = S`` at the end, so Jensen's inequality gives
``E h(S~) >= E h(S)`` for both directions' convex ``h``, exactly as for the uniform grid (the spread pair
dominates; the clamp is charged, or exact for Q||P with ``B <= t``, as above; 0 + x = x needs no split).
Geometric points make this cheap: ``g_i + g_j = g_max(i,j) (1 + r^-d)``, ``d = |i - j|``, so the target
point and the split depend on ``d`` only: one vector operation per offset, and from the offset where
``r^-d <= rho / 2`` on the sum stays in the larger one's cell and the share moved up is ``g_j / (g_{i+1} -
g_i)``: all those pairs at once by prefix sums of the smaller's masses and first moments (exactly).

*Lower: a garbling after every sum.* One term: its cells (``[0, g_0)``, ``[g_j, g_{j+1})``, ``[B, inf)``),
each kept as (Q-mass, first moment ``E_Q[W; cell]``). After each pairwise sum, every pair of cells goes to one
cell chosen from the two (the cell holding the sum of their conditional means; pairs far apart, to the
larger one's), with Q-mass ``q_i q_j`` and first moment ``M_i q_j + q_i M_j`` (:func:`_contract_sum`): all
the atoms of a cell merged into one at their Q-weighted conditional mean, a mean-preserving contraction.
The cell of a partial sum is a function of the cells of its terms, hence of the output: the final cell is a
statistic ``T`` of the output, a garbling, and its pair's divergence is a lower bound (data processing). Its
laws are exact: Q-masses by products, and for k = 1 ``P(T = c) = E_Q[S / t; T = c] = M_c / t`` (tilting, as
above), the tracked first moment (``E_Q[S_2m; T = c]`` is a sum of ``M_i q_j + q_i M_j`` over the pairs sent
to ``c``, by independence). The rule choosing the cell only decides how fine the garbling is, never whether
it is valid.

The errors are of second order in ``rho`` in both directions. :func:`_single` starts with the uniform grid
(it stays alone when it meets ``rtol`` at once: ``mu <= 1`` as before), then tries the geometric grid at
:data:`LOG_START_RHO` for the directions still too wide, and refines (points doubled, ``rho`` halved)
whichever method is predicted to reach the width first from its observed convergence and cost
(:func:`_time_to`); each direction keeps the least upper and the largest lower value of all laws computed
(each valid on its own).

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

The geometric grid's sums are direct, with non-negative terms only in the garbling and one subtraction of
at most half in the spread's bulk, so their round-off is bounded cell by cell: ``(n - 1) u`` relative for n
non-negative terms (Higham, Sec. 4.2), n the offsets a cell receives, added in blocks of :data:`_LOG_BLOCK`,
the prefix sums in long double (:func:`_log_sum_round_off`). A partial sum's error reaches the final law
once per copy of it, so the law's relative error is at most ``t`` times one sum's plus one term's; one term's
cell masses are differences of distribution functions in the nearer tail, whose error is taken to be ``u``
times the smaller tail mass (an estimate, as above; it costs the spread at most as much in mass and mean).
Above, that L1 error (and the relative error of the grid's positions, which moves means as much) is charged
at infinite loss; below, with ``p`` and ``q`` known cell by cell to a relative ``e``, ``sum (p - e^eps
q)_+`` moves by at most ``2e (1 + 2e)``: subtracted, with no ``e^eps`` term. Both are multiplied by
:data:`ROUND_OFF`.

k > 1: decomposition above, a garbling below
--------------------------------------------
*Upper* (Feldman and Shenfeld, arXiv 2502.08202, the decomposition of k-of-t allocation; proof here):
draw a uniformly random ordered partition of the ``t`` databases into ``k`` blocks, ``r = t mod k`` of
size ``ceil(t / k)`` and ``k - r`` of size ``floor(t / k)``, and put the target in one database of each
block, uniformly. The law of the resulting set is invariant under permutations of the databases and it has
``k`` members, so it is the uniform law over k-sets: the true prior. Revealing the partition to the
adversary can only help (post-processing: forgetting it), and given the partition, ``P`` is the product over
blocks of 1-of-(block size) allocations while ``Q`` does not depend on it. So the curve of k-of-t is at most
the composition of ``k - r`` allocations of 1 of ``floor(t/k)`` and ``r`` of 1 of ``ceil(t/k)``, for
every ``k <= t`` (divisible or not), both directions, adaptive mechanisms included (each database's
mechanism is a post-processing of its dominating pair, the same map with or without the target).
*Lower*: the garbling by ``S_J`` above, with ``k`` tilted terms. ``exact`` is never claimed; the report
gives the gap.

Repeats
-------
``epochs`` independent allocations (fresh each epoch, as DP-SGD reshuffles) compose: the dominating pairs
above and the garbled pairs below are composed by the batch engine
(:func:`gce.accounting.batch.compose_laws`). Several invocations on one database (``repeat``) are one
Gaussian of ``mu = sqrt(sum mu_i^2)`` (Dong, Roth and Su): the same allocation, not a fresh one.

Other mechanisms
----------------
Nothing above is particular to the Gaussian: the spread, the garbling and the decomposition need only the
law of one database's ratio ``W`` under Q (its cell masses ``Q(cell)``, ``E_Q[W; cell]`` and its tail
``E_Q[(W - B)_+]``). :class:`LaplaceRatio` is the Laplace pair's (two atoms, ``e^-eps`` and ``e^eps``, and
a continuous part between, bounded: its clamp is exact), :class:`CanonicalRatio` the canonical pair of an
(eps, delta) guarantee's (002 eqs. 9-10: the atoms ``0``, ``e^-eps``, ``e^eps`` and P's own mass ``delta``),
:class:`SubsampledRatio` any of them on a Poisson subsample (``1 - r + r W``). Databases with different
parameters of one family: the largest dominates (a pair of smaller parameter is a garbling of it:
Blackwell's theorem for binary experiments, the curves being ordered), so it bounds the allocation above and
the smallest below; for (eps, delta) the order is partial (larger eps and larger delta).

P-mass outside Q's support (``singular``: a canonical pair's ``delta``, W = +inf) is in no cell: above it is
part of the clamp's leftover (``excess``), charged at infinite loss; below, "some member showed it" is an
outcome of the garbling of its own (P-mass ``1 - (1 - singular)^k``, Q-mass 0), kept through the
compositions. Q-mass outside P's support (W = 0) is an ordinary value of W (the spread keeps it at 0, where
the direction Q||P charges ``Q(S = 0)`` at infinite loss). With canonical pairs the decomposition's blocks
are computed exactly (``S`` over the multinomial counts of the three atoms: :func:`_canonical_block_laws`).

Gaussian allocations are also never reported above the composition of their k members' Gaussians over the
epochs (joint convexity: the prior is a mixture of k-sets), which coarse grids at small noise can exceed.

Per-database rates and uniform(min, max)
----------------------------------------
"In none" against a rates prior (each database independently at its rate ``r_i``, no constraints) is the
composition of the databases' subsampled pairs ``((1 - r_i) Q_i + r_i P_i, Q_i)``: Poisson subsampling
(001 Sec. V-B). :func:`poisson_curve` rounds each pair to a dominating one (the spread of ``W`` on a grid
uniform in ``log W``) and garbles it by its cells below, and composes them on the batch engine, both
directions. The uniform law over all subsets is rate 1/2; :func:`uniform_curve` takes the empty set's
share out exactly for "none vs at least one" and charges the excluded sizes' mass otherwise.

Time
----
The refinements (points doubled, or ``rho`` halved) stop when the next one, estimated from the last, would
overrun the ``seconds`` given (the route gives a share of solve's time left): the bracket is then wider, still
certified, and the description says so.

References
----------
Feldman, Shenfeld, "Privacy amplification by random allocation", arXiv 2502.08202.
"Efficient privacy loss accounting for subsampling and random allocation", arXiv 2602.17284.
Chua, Ghazi, Kamath, Kumar, Manurangsi, Sinha, Zhang, "Balls-and-bins sampling for DP-SGD", AISTATS 2025.
Blackwell, "Equivalent comparisons of experiments", Ann. Math. Stat. 1953 (garblings and dominance).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import fft as _fft
from scipy import special

from ..accounting import batch
from ..accounting.curves import DiscreteLossCurve, PrivacyCurve, at_or_above
from ..errors import InvalidParameterError, NumericalLimitError
from ..validation import is_integer, is_number

__all__ = ["GaussianRatio", "LaplaceRatio", "CanonicalRatio", "SubsampledRatio", "allocation_curve", "poisson_curve", "uniform_curve", "log_size_mass_outside",
           "AllocationCurve", "LowerBound", "DEFAULT_RTOL", "TAIL",
           "GRID_LIMIT"]

#: Default requested relative width of the epsilon (or delta) bracket at the target.
DEFAULT_RTOL = 0.005
#: P-mass of one database's likelihood ratio beyond the clamp ``B`` (charged at infinite loss).
TAIL = 1e-14
#: With a target delta, the clamp's charge may reach this share of it (:func:`allocation_curve`).
_TAIL_SHARE = 1e-4
#: Largest single-term grid (points) and FFT size: beyond it the computation declines.
GRID_LIMIT = 2**22
#: Points of the first grid; each refinement doubles them.
START_POINTS = 2**12
#: Safety factor of the round-off allowance (module doc).
ROUND_OFF = 8.0
#: Cells of the garbled k-of-t pair (the lower bound when k > 1 or several epochs).
_LOWER_POINTS = 2**15
#: Cells of one subsampled database's ratio, uniform in log W (:func:`poisson_curve`; refined by doubling).
_POISSON_POINTS = 2**12
#: The first loss grid of :func:`poisson_curve`, in multiples of its estimate (halved while needed).
_POISSON_COARSE = 8.0
#: Loss grid of the composition (k > 1, epochs): relative to the requested width.
_LOSS_GRID_SHARE = 0.25


# ---------------------------------------------------------------------------
# One database: the law of its likelihood ratio under Q


def _phi_between(lo: NDArray[np.float64], hi: NDArray[np.float64]) -> NDArray[np.float64]:
    """Phi(hi) - Phi(lo) for lo <= hi, accurate in both tails (upper tail by survival functions)."""
    return np.where(lo > 0, special.ndtr(-lo) - special.ndtr(-hi), special.ndtr(hi) - special.ndtr(lo))


@dataclass(frozen=True)
class GaussianRatio:
    """The likelihood ratio ``W = dP/dQ`` of the Gaussian pair ``P = N(mu, 1)``, ``Q = N(0, 1)``, under Q:
    ``W = exp(mu Z - mu^2 / 2)``, lognormal with mean 1 (``mu = 0``: ``W = 1``).

    Every Gaussian mechanism of L2 sensitivity ``c`` and noise ``sigma`` is a post-processing of this pair with
    ``mu = c / sigma``, the same map with and without the target (Dong, Roth and Su 2022).
    """

    mu: float

    def __post_init__(self) -> None:
        if not is_number(self.mu) or not 0.0 <= self.mu < 40.0:
            raise InvalidParameterError("mu", f"must be a number in [0, 40), got {self.mu!r}")
        object.__setattr__(self, "mu", float(self.mu))

    @property
    def label(self) -> str:
        return f"mu {self.mu:g}"

    @property
    def trivial(self) -> bool:
        return self.mu == 0.0

    @property
    def singular(self) -> float:
        """P-mass outside Q's support: none."""
        return 0.0

    def _z(self, w: NDArray[np.float64]) -> NDArray[np.float64]:
        with np.errstate(divide="ignore"):
            return (np.log(w) + 0.5 * self.mu**2) / self.mu

    def cells(self, edges: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(Q(W in [e_j, e_{j+1})), P(W in [e_j, e_{j+1}))) for ascending edges (the last may be inf);
        P(cell) = E_Q[W; cell]."""
        edges = np.asarray(edges, dtype=float)
        if self.mu == 0.0:  # W = 1
            q = ((edges[:-1] <= 1.0) & (1.0 < edges[1:])).astype(float)
            return q, q.copy()
        z = self._z(edges)
        return _phi_between(z[:-1], z[1:]), _phi_between(z[:-1] - self.mu, z[1:] - self.mu)

    def excess(self, b: float) -> float:
        """E_Q[(W - b)_+] = P(W >= b) - b Q(W >= b): the P-mass left over by clamping W at b."""
        if self.mu == 0.0:
            return max(1.0 - b, 0.0)
        z = float(self._z(np.array([b]))[0])
        return max(float(special.ndtr(self.mu - z)) - b * float(special.ndtr(-z)), 0.0)

    def clamp(self, tail: float) -> float:
        """The smallest b (to 1%) with ``excess(b) <= tail``."""
        if self.mu == 0.0:
            return 1.0
        lo, hi = 0.0, 1.0
        while self.excess(math.exp(hi)) > tail:
            lo, hi = hi, 2.0 * hi
            if hi > 700:
                raise NumericalLimitError(f"mu = {self.mu:g}: the likelihood ratio's tail reaches beyond e^700")
        while hi - lo > 0.01:
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if self.excess(math.exp(mid)) > tail else (lo, mid)
        return math.exp(hi)

    def variance(self) -> float:
        """Var_Q(W) = e^{mu^2} - 1."""
        return math.expm1(min(self.mu**2, 700.0))


@dataclass(frozen=True)
class LaplaceRatio:
    """The likelihood ratio ``W = dP/dQ`` of the Laplace pair ``P = Lap(s, b)``, ``Q = Lap(0, b)`` under Q,
    with ``epsilon = s / b``: ``W = exp((|x| - |x - s|) / b)``, an atom ``e^-eps`` of Q-mass 1/2 (x <= 0), an
    atom ``e^eps`` of Q-mass ``e^-eps / 2`` (x >= s) and ``exp((2x - s) / b)`` in between.

    Every Laplace mechanism of L1 sensitivity ``s`` and scale ``b`` is a post-processing of this pair (its
    output is x itself); a pair of smaller epsilon is a garbling of it (its curve lies below in both
    directions: Blackwell's theorem for binary experiments).
    """

    epsilon: float

    def __post_init__(self) -> None:
        if not is_number(self.epsilon) or not 0.0 <= self.epsilon < 700.0:
            raise InvalidParameterError("epsilon", f"must be a number in [0, 700), got {self.epsilon!r}")
        object.__setattr__(self, "epsilon", float(self.epsilon))

    @property
    def label(self) -> str:
        return f"Laplace epsilon {self.epsilon:g}"

    @property
    def trivial(self) -> bool:
        return self.epsilon == 0.0

    @property
    def singular(self) -> float:
        """P-mass outside Q's support: none."""
        return 0.0

    def cells(self, edges: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(Q(W in [e_j, e_{j+1})), P(W in [e_j, e_{j+1}))) for ascending edges (the last may be inf)."""
        edges = np.asarray(edges, dtype=float)
        e = self.epsilon
        lo_edge, hi_edge = edges[:-1], edges[1:]
        if e == 0.0:
            q = ((lo_edge <= 1.0) & (1.0 < hi_edge)).astype(float)
            return q, q.copy()
        low, high = math.exp(-e), math.exp(e)
        # the open middle, in u = x / b in (0, e): W = exp(2u - e); clip each cell's u-range to it
        with np.errstate(divide="ignore"):
            u = np.clip((np.log(np.maximum(edges, 0.0)) + e) / 2.0, 0.0, e)
        u0, u1 = u[:-1], u[1:]
        q = 0.5 * (np.exp(-u0) - np.exp(-u1))                 # Q density e^{-u} / 2 on (0, e)
        p = 0.5 * (np.exp(u1 - e) - np.exp(u0 - e))           # P density e^{-(e - u)} / 2 on (0, e)
        at_low = (lo_edge <= low) & (low < hi_edge)
        at_high = (lo_edge <= high) & (high < hi_edge)
        q = q + 0.5 * at_low + 0.5 * math.exp(-e) * at_high
        p = p + 0.5 * math.exp(-e) * at_low + 0.5 * at_high
        return q, p

    def excess(self, b: float) -> float:
        """E_Q[(W - b)_+] (0 once b >= e^eps), by the cells above b."""
        if b >= math.exp(self.epsilon):
            return 0.0
        q, p = self.cells(np.array([b, np.inf]))
        return max(float(p[0] - b * q[0]), 0.0)

    def clamp(self, tail: float) -> float:
        """W <= e^eps: the clamp is exact."""
        return math.exp(self.epsilon)

    def variance(self) -> float:
        """Var_Q(W) = e^{-2eps} / 2 + e^eps / 2 + (e^eps - e^{-2eps}) / 6 - 1."""
        e = self.epsilon
        return max(0.5 * math.exp(-2 * e) + 0.5 * math.exp(e) + (math.exp(e) - math.exp(-2 * e)) / 6 - 1, 0.0)


@dataclass(frozen=True)
class CanonicalRatio:
    """The likelihood ratio ``W = dP/dQ`` of the canonical pair of an ``(epsilon, delta)`` guarantee under Q
    (002, eqs. 9-10; Kairouz, Oh and Viswanath 2015, Thm. 2.4; docs/design.md, "The canonical pair makes brute
    force possible").

    With ``a = (1 - delta) e^eps / (1 + e^eps)`` and ``b = (1 - delta) / (1 + e^eps)`` the pair on the outputs
    {0, 1, 2, 3} is ``P = (delta, a, b, 0)`` (with the target) and ``Q = (0, b, a, delta)`` (without), so under
    Q the ratio takes the values ``e^eps`` (Q-mass b), ``e^-eps`` (Q-mass a) and ``0`` (Q-mass delta, output 3:
    Q's only), and P has the mass ``delta`` where Q has none (output 0, ``W = +inf``): :attr:`singular`. Pure
    DP is ``delta = 0`` (randomized response).

    Every (epsilon, delta)-DP mechanism is a post-processing of this pair, the same map with and without the
    target (002 Thm. II.5), so the allocation of canonical pairs is the worst case of (epsilon, delta)-DP
    mechanisms, and the pair of ``(e2, d2)`` with ``e2 <= e1`` and ``d2 <= d1`` is a garbling of the pair of
    ``(e1, d1)`` (its curve ``d + (1 - d)(e^e - e^eps')_+ / (1 + e^e)`` lies below in both directions:
    Blackwell's theorem for binary experiments). Two pairs with the larger epsilon on one and the larger delta
    on the other are not ordered.

    P-mass outside Q's support (module doc): :meth:`cells` gives the absolutely continuous part only
    (``P(cell) = E_Q[W; cell]``, the values of W on Q's support), :meth:`excess` counts ``delta`` in the mass
    left over by any clamp (so the spread pair above charges it at infinite loss), and the garbled pair below
    keeps the event "a member showed output 0" as an outcome of its own (its P-mass ``1 - (1 - delta)^k``, Q-mass
    0: :func:`_lower_laws`). Q's only output (``W = 0``) is a value of W like the others: it stays at 0 in the
    spread and in the first cell of the garbling.

    Examples
    --------
    1 of 10 databases, each (1, 1e-6)-DP: exact-count (:func:`gce.priors.exact.exact_count_curve`) gives
    delta 0.0181118702 at epsilon 0.5.

    >>> low, high = allocation_curve(CanonicalRatio(1.0, 1e-6), 10, epsilon=0.5).delta_bracket(0.5)
    >>> 0.01811186 < low <= 0.0181118702 <= high < 0.01811188
    True
    """

    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        if not is_number(self.epsilon) or not 0.0 <= self.epsilon < 700.0:
            raise InvalidParameterError("epsilon", f"must be a number in [0, 700), got {self.epsilon!r}")
        if not is_number(self.delta) or not 0.0 <= self.delta < 1.0:
            raise InvalidParameterError("delta", f"must be a number in [0, 1), got {self.delta!r}")
        object.__setattr__(self, "epsilon", float(self.epsilon))
        object.__setattr__(self, "delta", float(self.delta))

    @property
    def label(self) -> str:
        if self.delta == 0.0:
            return f"pure epsilon {self.epsilon:g}"
        return f"approx epsilon {self.epsilon:g}, delta {self.delta:g}"

    @property
    def trivial(self) -> bool:
        return self.epsilon == 0.0 and self.delta == 0.0

    @property
    def singular(self) -> float:
        """P-mass outside Q's support (output 0, ``W = +inf``): ``delta``."""
        return self.delta

    def _atoms(self) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """(values of W on Q's support, their Q-masses, their P-masses): ``0``, ``e^-eps``, ``e^eps``."""
        e, keep = self.epsilon, 1.0 - self.delta
        high, low = float(special.expit(e)), float(special.expit(-e))  # e^eps / (1 + e^eps), 1 / (1 + e^eps)
        values = np.array([0.0, math.exp(-e), math.exp(e)])
        return values, np.array([self.delta, keep * high, keep * low]), np.array([0.0, keep * low, keep * high])

    def cells(self, edges: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(Q(W in [e_j, e_{j+1})), P(W in [e_j, e_{j+1}))) for ascending edges (the last may be inf), P's part
        on Q's support only (``E_Q[W; cell]``; the mass :attr:`singular` is in no cell)."""
        edges = np.asarray(edges, dtype=float)
        values, q_mass, p_mass = self._atoms()
        inside = (edges[:-1, None] <= values[None, :]) & (values[None, :] < edges[1:, None])
        return inside @ q_mass, inside @ p_mass

    def excess(self, b: float) -> float:
        """The P-mass left over by clamping W at b, ``P(W >= b) - b Q(W >= b) = E_Q[(W - b)_+] + delta``: the
        singular mass is never clamped away."""
        values, q_mass, _ = self._atoms()
        return float(np.sum(q_mass * np.maximum(values - b, 0.0))) + self.delta

    def clamp(self, tail: float) -> float:
        """W <= e^eps on Q's support: the clamp is exact (what is left, ``delta``, is P's own mass)."""
        return math.exp(self.epsilon)

    def variance(self) -> float:
        """Var_Q(W) = (1 - delta) (e^{2 eps} + e^{-eps}) / (1 + e^eps) - (1 - delta)^2."""
        e, keep = self.epsilon, 1.0 - self.delta
        second = math.exp(min(2.0 * e - float(np.logaddexp(0.0, e)), 700.0)) + math.exp(-e) * float(special.expit(-e))
        return max(keep * second - keep * keep, 0.0)


@dataclass(frozen=True)
class SubsampledRatio:
    """The ratio of a mechanism run on a Poisson subsample at ``rate``: the pair ``((1 - r) Q + r P, Q)``,
    whose likelihood ratio is ``1 - r + r W`` (``inner`` the mechanism's ratio W)."""

    inner: object
    rate: float

    def __post_init__(self) -> None:
        if not isinstance(self.inner, (GaussianRatio, LaplaceRatio, CanonicalRatio)):
            raise InvalidParameterError("inner", f"must be a Gaussian, Laplace or canonical ratio, got "
                                                 f"{self.inner!r}")
        if not is_number(self.rate) or not 0.0 < self.rate <= 1.0:
            raise InvalidParameterError("rate", f"must be a probability in (0, 1], got {self.rate!r}")
        object.__setattr__(self, "rate", float(self.rate))

    @property
    def label(self) -> str:
        return f"{self.inner.label} subsampled at {self.rate:g}"

    @property
    def trivial(self) -> bool:
        return self.inner.trivial

    @property
    def singular(self) -> float:
        """P-mass outside Q's support: ``rate`` times the mechanism's."""
        return self.rate * self.inner.singular

    def _inner_edges(self, edges: NDArray[np.float64]) -> NDArray[np.float64]:
        r = self.rate
        with np.errstate(invalid="ignore"):
            return np.maximum((np.asarray(edges, dtype=float) - (1.0 - r)) / r, 0.0)

    def cells(self, edges: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        q, p = self.inner.cells(self._inner_edges(edges))
        return q, (1.0 - self.rate) * q + self.rate * p

    def excess(self, b: float) -> float:
        r = self.rate
        return r * self.inner.excess(max((b - (1.0 - r)) / r, 0.0))

    def clamp(self, tail: float) -> float:
        r = self.rate
        return 1.0 - r + r * self.inner.clamp(tail / r)

    def variance(self) -> float:
        return self.rate**2 * self.inner.variance()


_RATIOS = (GaussianRatio, LaplaceRatio, CanonicalRatio, SubsampledRatio)


# ---------------------------------------------------------------------------
# One grid: the laws of S


@dataclass(frozen=True)
class _Grid:
    """Cells of width ``dx`` up to the clamp ``B = points * dx`` and the FFT size ``size``."""

    dx: float
    points: int
    size: int

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


@dataclass(frozen=True)
class _Law:
    """One direction's law for composition: finite losses with their masses (under the direction's first
    measure), mass at +inf, and the L1 allowance for round-off already included in ``infinite`` (upper) or
    to subtract (lower: ``slack`` plus ``slack_other`` times e^eps)."""

    loss: NDArray[np.float64]
    mass: NDArray[np.float64]
    infinite: float
    slack: float = 0.0
    slack_other: float = 0.0

    def curve(self) -> DiscreteLossCurve:
        with np.errstate(divide="ignore"):
            return DiscreteLossCurve(self.loss, np.log(self.mass), infinite_mass=min(self.infinite, 1.0))


def _noise(size: int, terms: int, laws: Sequence[NDArray[np.float64]]) -> float:
    """Estimated L1 error of the inverse transform of a product of ``terms`` transformed laws
    (module doc, "Floating point")."""
    l2 = max(float(np.linalg.norm(x)) for x in laws)
    return ROUND_OFF * np.finfo(float).eps * max(math.log2(size), 1.0) * (terms + 2) * l2 * math.sqrt(size)


def _power(spectra: Sequence[tuple[NDArray[np.complex128], int]]) -> NDArray[np.complex128]:
    out = None
    for spectrum, count in spectra:
        if count == 0:
            continue
        factor = spectrum if count == 1 else np.power(spectrum, count)
        out = factor if out is None else out * factor
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


# ---------------------------------------------------------------------------
# The log-space method (k = 1): the law of S on a geometric grid (module doc, "Small noise")


#: Relative cell width of the first geometric grid (each refinement halves it).
LOG_START_RHO = 1.0 / 16.0
#: Q-mass of one database's ratio below the geometric grid's first point ``g_0`` (spread onto 0 and g_0).
_LOG_LOW_MASS = 1e-16
#: Largest (points x offsets) of one pairwise sum on the geometric grid: beyond it the refinement stops.
LOG_WORK_LIMIT = 2**26
#: Offsets accumulated in a scratch array before they are added to a pairwise sum's output (this bounds the
#: round-off of the accumulation by ``(block + offsets / block) u`` instead of ``offsets u``).
_LOG_BLOCK = 32
#: Smallest positive grid point (log): below it the grid would underflow.
_LOG_FLOOR = -690.0

_U = float(np.finfo(float).eps)
_U_LONG = float(np.finfo(np.longdouble).eps)


@dataclass(frozen=True)
class _GeometricGrid:
    """Points ``g_j = g_0 r^j``, ``r = 1 + rho``, ``j < size`` (and the point 0 below them); ``B = g_top`` is
    the clamp of one database's ratio, and ``size`` reaches past ``t B`` (no sum of t clamped terms leaves it).

    With ``x = r^-d`` (d = |i - j|), ``g_i + g_j = g_max(i,j) (1 + x)`` lies in ``[g_{m + c_d}, g_{m + c_d + 1})``
    with ``c_d = floor(log_r(1 + x))``, a fraction ``f_d = (1 + x - r^c_d) / (r^c_d rho)`` of the way up:
    both depend on d only. From ``d0`` on (``x <= rho / 2``) ``c_d = 0``: those pairs are merged in bulk."""

    g0: float
    rho: float
    size: int
    top: int

    @property
    def log_r(self) -> float:
        return math.log1p(self.rho)

    @property
    def log_values(self) -> NDArray[np.float64]:
        return math.log(self.g0) + np.arange(self.size) * self.log_r

    @property
    def values(self) -> NDArray[np.float64]:
        return np.exp(self.log_values)

    def offsets(self, bulk_ratio: float) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """(c_d, f_d) for ``d < d_b``, ``d_b`` the first offset with ``r^-d <= rho * bulk_ratio`` (so that
        ``c_d = 0`` from there on when ``bulk_ratio <= 1``)."""
        lr = self.log_r
        count = max(int(math.ceil(math.log(1.0 / (self.rho * bulk_ratio)) / lr)), 1)
        x = np.exp(-np.arange(count) * lr)
        c = np.floor(np.log1p(x) / lr).astype(np.int64)
        # f in [0, 1]: correct c where rounding put 1 + x on the wrong side of a grid point
        for _ in range(2):
            f = (x - np.expm1(c * lr)) / (np.exp(c * lr) * self.rho)
            c = c - (f < 0) + (f >= 1)
        f = (x - np.expm1(c * lr)) / (np.exp(c * lr) * self.rho)
        return c, np.clip(f, 0.0, 1.0)


def _geometric_grid(ratio, t: int, rho: float, tail: float, which: str) -> _GeometricGrid:
    """The geometric grid of one direction: the clamp as :func:`_direction_grid` (``remove``: where the tail
    budget ends; ``add``: at most t), the first point where one term's Q-mass below is :data:`_LOG_LOW_MASS`."""
    clamp = ratio.clamp(tail)
    if which == "add":
        clamp = min(clamp, float(t))
    top_log = math.log(clamp)
    # the first point: bisection in log W on Q(W < x) <= _LOG_LOW_MASS (x at most the clamp / e)
    lo, hi = max(top_log - 64.0, _LOG_FLOOR), top_log - 1.0
    while lo > _LOG_FLOOR and float(ratio.cells(np.array([0.0, math.exp(lo)]))[0][0]) > _LOG_LOW_MASS:
        lo = max(top_log - 2.0 * (top_log - lo), _LOG_FLOOR)
    if float(ratio.cells(np.array([0.0, math.exp(hi)]))[0][0]) <= _LOG_LOW_MASS:
        lo = hi
    while hi - lo > 0.05:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if float(ratio.cells(np.array([0.0, math.exp(mid)]))[0][0]) <= _LOG_LOW_MASS else (lo, mid)
    log_r = math.log1p(rho)
    if top_log + math.log(t) + 1.0 > 700.0:
        raise NumericalLimitError(f"random allocation: sums of t = {t} clamped ratios reach beyond e^700")
    top = int(math.ceil((top_log - lo) / log_r))
    g0 = math.exp(top_log - top * log_r)
    # t clamped terms sum to at most t B, and each spread may move an atom up by one point
    size = top + int(math.ceil(math.log(t) / log_r)) + _levels(t) + 3
    return _GeometricGrid(g0, rho, size, top)


def _log_work(grid: _GeometricGrid) -> float:
    """Points times offsets of one pairwise sum (the lower's, the larger)."""
    return grid.size * grid.offsets(1.0 / 64.0)[0].size


def _blocked_add(out: NDArray[np.float64], pieces) -> None:
    """``out[start:stop] += value`` for each (start, value), accumulated in blocks of :data:`_LOG_BLOCK`."""
    scratch = np.zeros_like(out)
    for n, (start, value) in enumerate(pieces, 1):
        scratch[start:start + value.size] += value
        if n % _LOG_BLOCK == 0:
            out += scratch
            scratch[:] = 0.0
    out += scratch


def _prefix(x: NDArray[np.float64], first: float, shift: int) -> NDArray[np.float64]:
    """``first + sum_{j <= i - shift} x_j`` for each i (``first`` alone where ``i < shift``), summed in long
    double."""
    cum = (np.cumsum(x, dtype=np.longdouble) + first).astype(float)
    out = np.full(x.size, float(first))
    if shift < x.size:
        out[shift:] = cum[: x.size - shift]
    return out


def _spread_sum(grid: _GeometricGrid, a: tuple[float, NDArray[np.float64]], b: tuple[float, NDArray[np.float64]],
                same: bool = False) -> tuple[float, NDArray[np.float64]]:
    """The law of ``A + B`` (independent; each a mass at 0 and masses at the points) spread back onto the
    grid: each sum ``g_i + g_j`` split between the two points around it keeping its mean (module doc). Exact
    in real arithmetic: total mass and mean are kept."""
    (za, qa), (zb, qb) = a, b
    m = grid.size
    c, f = grid.offsets(0.5)
    d0 = min(c.size, m)  # no pair of points is m or more apart (a short grid: large noise, a fine rho)
    out = np.zeros(m + int(c[0]) + 2)

    def pieces():
        for d in range(d0):
            w = qa[d:] * qb[: m - d]
            if d and same:
                w = 2.0 * w
            elif d:
                w = w + qb[d:] * qa[: m - d]
            cd = int(c[d])
            yield d + cd, (1.0 - f[d]) * w
            yield d + cd + 1, f[d] * w

    _blocked_add(out, pieces())
    # Bulk, d >= d0: g_i + g_j stays in [g_i, g_{i+1}); the share f = g_j / (g_{i+1} - g_i) moves up. The
    # mass at 0 joins every point (exactly: no share moves).
    values = grid.values
    width = values * grid.rho
    mass_b, mass_a = _prefix(qb, zb, d0), _prefix(qa, za, d0)
    moment_b, moment_a = _prefix(qb * values, 0.0, d0), _prefix(qa * values, 0.0, d0)
    up = (qa * moment_b + qb * moment_a) / width
    out[:m] += qa * mass_b + qb * mass_a - up
    out[1: m + 1] += up
    if np.any(out[m:] > 0):
        raise NumericalLimitError("random allocation: a sum left the geometric grid (internal sizing)")
    return za * zb, out[:m]


def _contract_sum(grid: _GeometricGrid, a, b, same: bool = False):
    """The garbling of ``A + B`` (each a law of cells: the low cell ``[0, g_0)`` as (Q-mass, first moment),
    then arrays of Q-masses and first moments of the cells ``[g_j, g_{j+1})``): a pair of cells goes to the
    cell that holds the sum of their conditional means (pairs ``d1`` or more cells apart, to the larger's
    cell; beyond the grid, to the last cell), its Q-mass the product and its first moment
    ``M_i q_j + q_i M_j`` (module doc). Any such rule is a function of the output: a garbling."""
    (la, ma_low), qa, ma_ = a
    (lb, mb_low), qb, mb_ = b
    m = grid.size
    c, _ = grid.offsets(1.0 / 64.0)
    d1 = min(c.size, m)  # no pair of cells is m or more apart (a short grid: large noise, a fine rho)
    ext = int(c[0]) + 3
    edges = np.exp(math.log(grid.g0) + np.arange(m + ext + 1) * grid.log_r)
    values = grid.values
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_a = np.where(qa > 0, ma_ / np.where(qa > 0, qa, 1.0), values)
        mean_b = np.where(qb > 0, mb_ / np.where(qb > 0, qb, 1.0), values)
    out_q = np.zeros(m + ext)
    out_m = np.zeros(m + ext)
    orders = ((qa, ma_, mean_a, qb, mb_, mean_b),) if same else \
        ((qa, ma_, mean_a, qb, mb_, mean_b), (qb, mb_, mean_b, qa, ma_, mean_a))

    def pieces(moments: bool):
        for d in range(d1):
            cd = int(c[d])
            for xq, xm, xmean, yq, ym, ymean in orders:
                if moments:
                    w = xm[d:] * yq[: m - d] + xq[d:] * ym[: m - d]
                else:
                    w = xq[d:] * yq[: m - d]
                if same and d:
                    w = 2.0 * w
                high = xmean[d:] + ymean[: m - d] >= edges[d + cd + 1: m + cd + 1]
                part = np.where(high, w, 0.0)
                yield d + cd, w - part
                yield d + cd + 1, part
                if d == 0:
                    break

    _blocked_add(out_q, pieces(False))
    _blocked_add(out_m, pieces(True))
    mass_a, mass_b = _prefix(qa, la, d1), _prefix(qb, lb, d1)
    moment_a, moment_b = _prefix(ma_, ma_low, d1), _prefix(mb_, mb_low, d1)
    out_q[:m] += qa * mass_b + qb * mass_a
    out_m[:m] += ma_ * mass_b + qa * moment_b + mb_ * mass_a + qb * moment_a
    out_q[m - 1] += out_q[m:].sum()
    out_m[m - 1] += out_m[m:].sum()
    return (la * lb, ma_low * lb + la * mb_low), out_q[:m], out_m[:m]


def _binary(t: int, one, add):
    """``one + ... + one`` (t independent copies) by doubling and binary assembly: about ``2 log2 t`` sums;
    ``add(x, y, same)`` sums two laws (``same``: x and y are the same law)."""
    result, power, n = None, one, t
    while True:
        if n & 1:
            result = power if result is None else add(result, power, False)
        n >>= 1
        if not n:
            return result
        power = add(power, power, True)


def _tails(q: NDArray[np.float64]) -> NDArray[np.float64]:
    """Per cell, the smaller of the Q-masses at or below it and at or above it: cell masses computed as
    differences of distribution functions in the nearer tail (as :meth:`GaussianRatio.cells` does) carry an
    absolute round-off of about u times that (an estimate, like :data:`ROUND_OFF`'s)."""
    return np.minimum(np.cumsum(q), np.cumsum(q[::-1])[::-1])


def _log_sum_round_off(grid: _GeometricGrid, offsets: int) -> float:
    """Relative round-off of each cell of one pairwise sum on the geometric grid (module doc, "Floating
    point"): non-negative products (a few u each) added up ``offsets`` per cell in blocks of
    :data:`_LOG_BLOCK` (Higham, "Accuracy and Stability of Numerical Algorithms", Sec. 4.2: at most
    ``(n - 1) u`` relative for n non-negative terms), the bulk's prefix sums in long double."""
    return (_LOG_BLOCK + offsets / _LOG_BLOCK + 16.0) * _U + grid.size * _U_LONG


def _levels(t: int) -> int:
    return 2 * max(t.bit_length(), 1)


def _log_upper_laws(ratio, t: int, grid: _GeometricGrid, which: str) -> _Law:
    """The dominating pair of 1 of t on the geometric grid (module doc, "Small noise"): one term's
    ``min(W, B)`` spread onto 0 and the points, then ``S`` by pairwise sums each spread back; its law in the
    direction ``which`` (remove: P-masses ``q s / t`` at loss ``log(s / t)``, the clamp's excess at infinite
    loss; add: Q-masses at ``-log(s / t)``, the mass at 0 at infinite loss)."""
    top = grid.top
    values = grid.values
    edges = np.concatenate(([0.0], values[: top + 1], [np.inf]))
    q, p = ratio.cells(edges)  # [0, g_0), [g_j, g_{j+1}) for j < top, [B, inf)
    law = np.zeros(grid.size)
    zero = q[0] - p[0] / values[0]
    law[0] += p[0] / values[0]
    inner = values[: top + 1]
    width = np.diff(inner)
    law[:top] += (inner[1:] * q[1:top + 1] - p[1:top + 1]) / width
    law[1:top + 1] += (p[1:top + 1] - inner[:-1] * q[1:top + 1]) / width
    law[top] += q[-1]  # W >= B: clamped at B
    one = (max(float(zero), 0.0), np.maximum(law, 0.0))
    zero, mass = _binary(t, one, lambda x, y, same: _spread_sum(grid, x, y, same))
    # L1 round-off, relative to the mass (module doc, "Floating point"): a partial sum's error reaches the
    # final law once per copy of it (t times one sum's and one term's), the grid's positions (exp of a sum)
    # carry a relative error per sum that moves each mean by as much.
    per_sum = _log_sum_round_off(grid, 4 * grid.offsets(0.5)[0].size + 4)
    cells = 4.0 * _U * (float(_tails(q).sum()) + 1.0)
    positions = 4.0 * _U * (abs(math.log(grid.g0)) + grid.size * grid.log_r + 2.0) * _levels(t)
    noise = ROUND_OFF * (t * (per_sum + cells) + positions)
    loss = grid.log_values - math.log(t)
    loss = loss + 4.0 * _U * (np.abs(loss) + 1.0)  # rounded up (a larger loss: a larger delta)
    if which == "remove":
        p_law = np.exp(np.log(np.maximum(mass, 1e-320)) + grid.log_values - math.log(t)) * (mass > 0)
        return _Law(loss, p_law, min(ratio.excess(float(values[top])) + noise, 1.0))
    return _Law(-loss, mass, min(zero + noise, 1.0))


def _log_lower_laws(ratio, t: int, grid: _GeometricGrid, which: str) -> _Law:
    """The garbled pair of 1 of t on the geometric grid (module doc, "Small noise"): one term's cells, then
    ``S`` by pairwise sums each garbled (:func:`_contract_sum`); the final cells' Q-masses ``q`` and first
    moments ``M = E_Q[S; cell]``, so ``P(cell) = M / t`` (k = 1); its law in the direction ``which``, with the
    round-off to subtract."""
    top = grid.top
    edges = np.concatenate(([0.0], grid.values[: top + 1], [np.inf]))
    q, p = ratio.cells(edges)
    cells_q = np.zeros(grid.size)
    cells_m = np.zeros(grid.size)
    cells_q[: top + 1] = q[1:]
    cells_m[: top + 1] = p[1:]
    one = ((float(q[0]), float(p[0])), cells_q, cells_m)
    (low_q, low_m), cells_q, cells_m = _binary(t, one, lambda x, y, same: _contract_sum(grid, x, y, same))
    mass = np.append(cells_q, low_q)
    moment = np.append(cells_m, low_m)
    keep = (mass > 0) & (moment > 0)
    mass, moment = mass[keep], moment[keep]
    loss = np.log(moment) - np.log(mass) - math.log(t)
    # Relative round-off of every cell (all terms non-negative, no subtraction): a partial sum's relative error
    # reaches the final cells once per copy of it, so t times one sum's and one term's. With p = p~ (1 +- e)
    # and q = q~ (1 +- e) cell by cell, sum (p - e^eps q)_+ moves by at most 2e (1 + 2e) sum p: no e^eps term.
    with np.errstate(divide="ignore", invalid="ignore"):
        term = 2.0 * _U * float(np.max(np.where(q > 0, _tails(q) / q, 0.0)))
    relative = ROUND_OFF * t * (_log_sum_round_off(grid, 4 * grid.offsets(1.0 / 64.0)[0].size + 4) + term)
    slack = 2.0 * relative * (1.0 + 2.0 * relative)
    if which == "remove":
        return _Law(loss, moment / t, 0.0, slack, 0.0)
    return _Law(-loss, mass, 0.0, slack, 0.0)


# ---------------------------------------------------------------------------
# Curves


class LowerBound:
    """A certified *lower* bound on an exact privacy curve (never a guarantee): the maximum over directions
    of each direction's delta minus its allowance ``a + b e^eps``.

    ``delta(eps)`` is at most the exact delta; ``epsilon(delta)`` at most the exact epsilon.
    """

    def __init__(self, parts: Sequence[tuple[PrivacyCurve, float, float]]):
        self._parts = tuple(parts)

    def delta(self, epsilon):
        eps = np.atleast_1d(np.asarray(epsilon, dtype=float))
        raw = [np.atleast_1d(c.delta(eps)) - a - b * np.exp(np.minimum(eps, 700.0)) for c, a, b in self._parts]
        out = np.maximum(np.max(raw, axis=0), 0.0)
        return float(out[0]) if np.ndim(epsilon) == 0 else out

    def epsilon(self, delta):
        d = np.atleast_1d(np.asarray(delta, dtype=float))
        out = np.array([self._epsilon(float(x)) for x in d])
        return float(out[0]) if np.ndim(delta) == 0 else out

    def _epsilon(self, target: float) -> float:
        """The largest eps with delta(eps) > target (0 if none): every smaller eps is certified too small."""
        if self.delta(0.0) <= target:
            return 0.0
        lo, hi = 0.0, 1.0
        while self.delta(hi) > target:
            lo, hi = hi, 2.0 * hi
            if hi > 2.0**20:
                return lo  # certified (delta(lo) > target); not inf, which no lower bound may claim unchecked
        while hi - lo > 1e-12 * hi:
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if self.delta(mid) > target else (lo, mid)
        return lo


class AllocationCurve(PrivacyCurve):
    """The upper curve of a random allocation (a valid guarantee: the maximum over both directions of the
    dominating pairs' curves), with its certified lower curve :attr:`lower` and the brackets.

    Built by :func:`allocation_curve`; ``description`` says what was computed (grids, decomposition).
    """

    def __init__(self, upper: Sequence[PrivacyCurve], lower: LowerBound, description: str):
        self._upper = tuple(upper)
        self.lower = lower
        self.description = description
        self.delta_floor = max(c.delta_floor for c in self._upper)

    @property
    def upper(self) -> "AllocationCurve":
        return self

    def _delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.max([np.atleast_1d(c.delta(eps)) for c in self._upper], axis=0)

    def _epsilon(self, d: NDArray[np.float64]) -> NDArray[np.float64]:
        out = np.empty_like(d)
        for i, target in enumerate(d):
            if not at_or_above(target, self.delta_floor):
                out[i] = math.inf
                continue
            out[i] = max(float(c.epsilon(target)) for c in self._upper)
        return out

    def epsilon_bracket(self, delta: float) -> tuple[float, float]:
        """(lower, upper): the exact epsilon at ``delta`` lies between them."""
        return min(float(self.lower.epsilon(delta)), float(self.epsilon(delta))), float(self.epsilon(delta))

    def delta_bracket(self, epsilon: float) -> tuple[float, float]:
        """(lower, upper): the exact delta at ``epsilon`` lies between them."""
        return min(float(self.lower.delta(epsilon)), float(self.delta(epsilon))), float(self.delta(epsilon))

    def lower_seconds(self) -> float:
        """The lower curve is computed with the upper one: nothing left to spend."""
        return 0.0


# ---------------------------------------------------------------------------
# Grids


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


def _width(low: float, high: float) -> float:
    if not math.isfinite(high):
        return 0.0 if not math.isfinite(low) else math.inf
    return (high - low) / high if high > 0 else 0.0


_WHICH = ("remove", "add")


def _bracket_at(uppers: Sequence[_Law], lowers: Sequence[_Law], delta: float | None,
                epsilon: float | None) -> tuple[list[float], list[float]]:
    """Per direction, the (lower, upper) values at the target (epsilon at delta, or delta at epsilon)."""
    lows, highs = [], []
    for upper, lower in zip(uppers, lowers):
        low = LowerBound([(lower.curve(), lower.slack, lower.slack_other)])
        up = upper.curve()
        if epsilon is None:
            lows.append(float(low.epsilon(delta)))
            highs.append(float(up.epsilon(delta)))
        else:
            lows.append(float(low.delta(epsilon)))
            highs.append(float(up.delta(epsilon)))
    return lows, highs


def _linear_laws(ratio, t: int, points: int, tail: float, which: str) -> tuple[_Law, _Law, str]:
    """One direction's (upper, lower) laws of 1 of t on the uniform grid of ``points`` cells (FFT)."""
    d = _WHICH.index(which)
    grid = _direction_grid(ratio, t, points, tail, which)
    return _upper_laws(ratio, t, grid)[d], _lower_laws(ratio, t, 1, grid)[d], f"{points:,} cells"


def _geometric_laws(ratio, t: int, rho: float, tail: float, which: str) -> tuple[_Law, _Law, str]:
    """One direction's (upper, lower) laws of 1 of t on the geometric grid of relative width ``rho``."""
    grid = _geometric_grid(ratio, t, rho, tail, which)
    if _log_work(grid) > LOG_WORK_LIMIT:
        raise NumericalLimitError(f"random allocation: a geometric grid of {grid.size:,} points at rho {rho:g} "
                                  f"exceeds the work limit")
    label = f"geometric grid rho 1/{round(1.0 / rho):,} ({grid.size:,} points)"
    return _log_upper_laws(ratio, t, grid, which), _log_lower_laws(ratio, t, grid, which), label


#: How much longer each method's next refinement takes (measured: points doubled, resp. rho halved).
_GROWTH = {"linear": 2.2, "log": 3.0}


def _time_to(history: Sequence[tuple[float, float]], target: float, growth: float) -> float:
    """The time a method is predicted to need to bring its bracket's width down to ``target``, from its
    (width, seconds) history: the width shrinks by its last observed factor a refinement (0.3 before two
    steps: the rounding's error is of second order), each step costs ``growth`` times the last. A method
    whose bracket has stopped shrinking (round-off, the clamp) is predicted to need many steps."""
    width, seconds = history[-1]
    if not math.isfinite(width):
        return math.inf
    factor = 0.3 if len(history) < 2 or not history[-2][0] > 0 else min(max(width / history[-2][0], 0.05), 0.95)
    steps = max(math.ceil(math.log(max(width / target, 1.0 + 1e-9)) / -math.log(factor)), 1)
    return seconds * sum(growth**i for i in range(1, min(steps, 60) + 1))


#: The two methods of 1 of t: the uniform grid (refined by doubling its points) and the geometric one
#: (refined by halving rho), with their first parameter and their refinement.
_METHODS = {"linear": (_linear_laws, START_POINTS, lambda points: 2 * points),
            "log": (_geometric_laws, LOG_START_RHO, lambda rho: rho / 2.0)}


def _single(ratio: GaussianRatio, t: int, rtol: float, delta: float | None, epsilon: float | None,
            tail: float, clock: _Clock | None = None) -> dict[str, tuple[_Law, _Law, str]]:
    """The 1-of-t laws per direction, ``{"remove": (upper, lower, label), "add": (...)}``, each direction on
    its own grids, by two methods: the uniform grid (FFT; best when W's bulk and clamp are of one scale,
    large noise) and the geometric grid (pairwise sums; best when W spans many orders of magnitude, small
    noise: module doc, "Small noise"). Both give valid bounds, so each direction keeps the least upper value
    and the largest lower value at the target among the laws computed.

    The uniform grid is computed first; while the bracket of the larger direction at the target is wider
    than ``rtol``, each direction that could decide the answer (its upper value above the other's lower one)
    and whose own bracket is too wide is refined: first by the geometric grid at :data:`LOG_START_RHO`, then
    by refining whichever method is predicted to reach the width first (:func:`_time_to`; up to
    :data:`GRID_LIMIT` points, resp. :data:`LOG_WORK_LIMIT`), while the clock allows."""
    clock = clock or _Clock(None)
    params = {w: {"linear": START_POINTS} for w in _WHICH}   # each method's next parameter
    done: dict[str, dict[str, tuple[_Law, _Law, str, float, float]]] = {w: {} for w in _WHICH}
    spent: dict[str, set[str]] = {w: set() for w in _WHICH}  # methods past their limit
    history: dict[str, dict[str, list[tuple[float, float]]]] = {w: {m: [] for m in _METHODS} for w in _WHICH}
    pending = {w: "linear" for w in _WHICH}
    while True:
        step = time.perf_counter()
        for which, method in pending.items():
            laws, _, _ = _METHODS[method]
            started = time.perf_counter()
            try:
                up, low, label = laws(ratio, t, params[which][method], tail, which)
            except NumericalLimitError:
                spent[which].add(method)
                if not done[which] and len(spent[which]) == len(_METHODS):
                    raise
                continue
            (lo,), (hi,) = _bracket_at([up], [low], delta, epsilon)
            done[which][method] = (up, low, label, lo, hi)
            history[which][method].append((_width(lo, hi), time.perf_counter() - started))
        if any(not done[w] for w in _WHICH):  # the uniform grid failed at once: the geometric one next
            pending = {w: "log" for w in _WHICH if not done[w] and "log" not in spent[w]}
            for w in pending:
                params[w]["log"] = LOG_START_RHO
            if not pending:
                raise NumericalLimitError("random allocation: neither grid fits")
            continue
        lows = [max(r[3] for r in done[w].values()) for w in _WHICH]
        highs = [min(r[4] for r in done[w].values()) for w in _WHICH]
        if _width(max(lows), max(highs)) <= rtol:
            break
        pending = {}
        for d, which in enumerate(_WHICH):
            if not (highs[d] > max(lows) and _width(lows[d], highs[d]) > rtol / 2):
                continue
            # A direction whose bracket is within a few times its round-off allowance is done: refining only
            # grows the allowance (a delta of 0 at the target, e.g. a pure pair beyond its epsilon).
            best_lower = max(done[which].values(), key=lambda r: r[3])[1]
            if highs[d] - lows[d] <= _SETTLED * (best_lower.slack + best_lower.slack_other):
                continue
            if "log" not in params[which]:
                params[which]["log"] = LOG_START_RHO
                pending[which] = "log"
                continue
            usable = [m for m in done[which] if m not in spent[which]]
            if not usable:
                continue
            method = min(usable, key=lambda m: _time_to(history[which][m], rtol / 2, _GROWTH[m]))
            params[which][method] = _METHODS[method][2](params[which][method])
            pending[which] = method
        # the next step: each refined method's last time times its growth (a first geometric step: the last
        # step's time)
        last = time.perf_counter() - step
        estimate = sum(history[w][m][-1][1] * _GROWTH[m] if history[w][m] else last for w, m in pending.items())
        if not pending or not clock.another(estimate, growth=1.0):
            break
    laws: dict[str, tuple[_Law, _Law, str]] = {}
    for which in _WHICH:
        results = done[which].values()
        upper = min(results, key=lambda r: r[4])
        lower = max(results, key=lambda r: r[3])
        label = upper[2] if lower is upper else f"upper {upper[2]}, lower {lower[2]}"
        laws[which] = (upper[0], lower[1], label)
    return laws


class _Clock:
    """The time a computation may take (None: no limit): refinements stop when the next one, estimated at
    :data:`_STEP_GROWTH` times the last, would overrun it (the grid kept is coarser: the bracket wider,
    still certified)."""

    def __init__(self, seconds: float | None):
        self.start = time.perf_counter()
        self.seconds = seconds
        self.stopped = False

    def another(self, last_step: float, growth: float | None = None) -> bool:
        """Whether a step estimated from ``last_step`` (``growth`` times it, :data:`_STEP_GROWTH` by default)
        fits in the time left (records when it does not)."""
        if self.seconds is None:
            return True
        growth = _STEP_GROWTH if growth is None else growth
        fits = time.perf_counter() - self.start + growth * last_step <= self.seconds
        self.stopped = self.stopped or not fits
        return fits

    def note(self) -> str:
        return "; refinement stopped by the time budget (a wider bracket)" if self.stopped else ""


#: A direction's bracket within this many times its round-off allowance is not refined (:func:`_single`).
_SETTLED = 16.0
#: A refinement (points doubled) costs about this many times the previous step.
_STEP_GROWTH = 2.5


# ---------------------------------------------------------------------------
# The public entry point


def _check_count(value: object, name: str, low: int = 1) -> int:
    if not is_integer(value) or value < low:
        raise InvalidParameterError(name, f"must be an integer >= {low}, got {value!r}")
    return int(value)


def allocation_curve(mu: float, t: int, k: int = 1, epochs: int = 1, rtol: float = DEFAULT_RTOL,
                     delta: float | None = 1e-6, epsilon: float | None = None,
                     tail: float = TAIL, seconds: float | None = None) -> AllocationCurve:
    """The curve of "in none" against "in exactly k of t" databases, each running a Gaussian of ``mu``,
    allocations repeated ``epochs`` times (fresh each time): an upper curve with its certified lower curve.

    Parameters
    ----------
    mu : float or ratio
        Each database's mechanism is mu-GDP (a Gaussian of ``sensitivity / sigma``; several on one database
        combine to ``sqrt(sum mu_i^2)``); or the likelihood ratio of its pair: :class:`GaussianRatio`,
        :class:`LaplaceRatio`, :class:`CanonicalRatio`, :class:`SubsampledRatio` (the method holds for any
        ratio law: spread above, garbling below).
    t, k : int
        Databases (steps) and members (1 <= k <= t).
    epochs : int
        Independent allocations composed.
    rtol : float
        Requested relative width of the bracket at the target (grids are refined until it holds, or up to
        :data:`GRID_LIMIT`; for k = 1 and one epoch, a uniform and a geometric grid: module doc).
    delta, epsilon : float
        The target the width refers to: epsilon at ``delta`` (default) or, if ``epsilon`` is given, delta
        at ``epsilon``.
    tail : float
        P-mass beyond the clamp of one database's ratio, charged at infinite loss (with a delta target, up
        to ``1e-4 * delta``: it then costs at most that share of the bracket).
    seconds : float, optional
        Time the refinements may take: a refinement estimated to overrun it is not made (the bracket is
        then wider than ``rtol``, still certified, and the description says so).

    Returns
    -------
    AllocationCurve
        A valid curve (both directions); ``.lower`` a certified lower curve; ``epsilon_bracket(delta)``.

    Raises
    ------
    InvalidParameterError
        Naming ``mu``, ``t``, ``k``, ``epochs`` or ``rtol``.
    NumericalLimitError
        When even the first grid exceeds :data:`GRID_LIMIT` (very small noise; for k = 1 and one epoch, when
        neither the uniform nor the geometric grid fits).

    Examples
    --------
    >>> c = allocation_curve(1.0, 10)
    >>> low, high = c.epsilon_bracket(1e-6)
    >>> 2.6507 <= low <= high <= 2.6588
    True
    """
    beyond = not isinstance(mu, _RATIOS) and is_number(mu) and mu >= MU_LIMIT
    ratio = mu if isinstance(mu, _RATIOS) or beyond else GaussianRatio(mu)
    t = _check_count(t, "t")
    k = _check_count(k, "k")
    epochs = _check_count(epochs, "epochs")
    if k > t:
        raise InvalidParameterError("k", f"must be <= t = {t}, got {k}")
    if beyond:
        return _beyond_grids(float(mu), t, k, epochs)
    if not is_number(rtol) or not 0.0 < rtol < 1.0:
        raise InvalidParameterError("rtol", f"must be a number in (0, 1), got {rtol!r}")
    if epsilon is None and delta is None:
        delta = 1e-6
    if epsilon is None and delta > 0:
        # The clamp's charge only has to be small against the target: a smaller clamp, a finer grid.
        tail = max(tail, _TAIL_SHARE * delta)
    if isinstance(ratio, GaussianRatio) and (ratio.mu == 0.0 or t == k):
        return _plain(ratio.mu, k, epochs)
    if ratio.trivial:
        return _plain(0.0, k, epochs)
    if seconds is not None and (not is_number(seconds) or seconds <= 0):
        raise InvalidParameterError("seconds", f"must be a positive number of seconds, got {seconds!r}")
    clock = _Clock(seconds)
    if k == 1 and epochs == 1:
        laws = _single(ratio, t, rtol, delta, epsilon, tail, clock)
        upper = [laws[w][0].curve() for w in ("remove", "add")]
        lower = LowerBound([(laws[w][1].curve(), laws[w][1].slack, laws[w][1].slack_other)
                            for w in ("remove", "add")])
        grids = ", ".join(f"{w}: {laws[w][2]}" for w in ("remove", "add"))
        curve = AllocationCurve(upper, lower, f"1 of {t}, {ratio.label} ({grids}){clock.note()}")
    else:
        curve = _composed(ratio, t, k, epochs, rtol, delta, epsilon, tail, clock)
    if isinstance(ratio, GaussianRatio):
        return _no_worse_than_composition(curve, ratio.mu * math.sqrt(k * epochs))
    return curve


class _Least(PrivacyCurve):
    """The pointwise least of valid upper curves (each a guarantee, so their minimum at every eps is one)."""

    def __init__(self, curves: Sequence[PrivacyCurve]):
        self._curves = tuple(curves)
        self.delta_floor = min(c.delta_floor for c in self._curves)

    def _delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.min([np.atleast_1d(c.delta(eps)) for c in self._curves], axis=0)

    def _epsilon(self, d: NDArray[np.float64]) -> NDArray[np.float64]:
        # nonincreasing curves: the least reaches d at the smallest of their epsilons
        return np.min([np.atleast_1d(c.epsilon(d)) for c in self._curves], axis=0)


def _no_worse_than_composition(curve: AllocationCurve, mu: float) -> AllocationCurve:
    """The allocation's upper curve, or the composition of its k members' Gaussians over the epochs where
    that is less (joint convexity: the k-set prior is a mixture of point masses, each a GDP(mu sqrt(k))
    pair per epoch; coarse grids at small noise can be looser than that)."""
    from ..accounting.curves import GaussianCurve
    least = _Least([curve, GaussianCurve(mu)])
    return AllocationCurve([least], curve.lower, curve.description)


#: Largest mu the grids take (:class:`GaussianRatio`); from it on, :func:`_beyond_grids` (closed forms).
MU_LIMIT = 40.0


def _beyond_grids(mu: float, t: int, k: int, epochs: int) -> AllocationCurve:
    """Gaussians of ``mu >= MU_LIMIT`` (nearly no noise, up to mu = inf), beyond the grids: above, the
    composition of the k members' Gaussians over the epochs (joint convexity, as in
    :func:`_no_worse_than_composition`); below, the sum of every database's output: N(k mu, t) against
    N(0, t) in each epoch, a post-processing of the pair, so GDP(k mu sqrt(epochs / t)) in both directions
    is a certified lower curve (data processing)."""
    from ..accounting.curves import GaussianCurve
    with np.errstate(over="ignore"):  # mu near 1.8e308: mu = inf, the output reveals the target
        high, low = np.float64(mu) * math.sqrt(k * epochs), np.float64(mu) * (k * math.sqrt(epochs / t))
    upper = GaussianCurve(float(high))
    return AllocationCurve([upper], LowerBound([(GaussianCurve(float(low)), 0.0, 0.0)]),
                           f"{k} of {t}, mu {mu:g} (beyond the grids' mu < {MU_LIMIT:g}): above, the members' "
                           f"Gaussians composed (GDP mu {high:g}); below, the sum of the outputs (GDP mu {low:g})")


def _plain(mu: float, k: int, epochs: int) -> AllocationCurve:
    """k of k (every database a member) or mu = 0: the composition of k epochs Gaussians, exactly."""
    from ..accounting.curves import GaussianCurve
    curve = GaussianCurve(mu * math.sqrt(k * epochs))
    return AllocationCurve([curve], LowerBound([(curve, 0.0, 0.0)]), f"every database a member: GDP "
                                                                     f"mu {mu * math.sqrt(k * epochs):g}")


def _blocks(t: int, k: int) -> list[tuple[int, int]]:
    """(block size, count) of the decomposition of k of t (module doc): r blocks of ceil(t/k), k - r of
    floor(t/k)."""
    small, r = divmod(t, k)
    return [(size, count) for size, count in ((small, k - r), (small + 1, r)) if count > 0]


def _block_laws(ratio: GaussianRatio, size: int, points: int, tail: float) -> tuple[tuple[_Law, _Law],
                                                                                   tuple[_Law, _Law]]:
    """((upper remove, upper add), (lower remove, lower add)) of 1 of ``size`` on ``points`` cells."""
    if size == 1 and isinstance(ratio, GaussianRatio):  # a block of one database: the Gaussian itself
        return _gaussian_laws(ratio), _gaussian_laws(ratio, upper=False)
    if size == 1 and isinstance(ratio, LaplaceRatio):  # the Laplace pair itself
        return _laplace_laws(ratio), _laplace_laws(ratio, upper=False)
    if _exact_blocks(ratio, size):
        laws = _canonical_block_laws(ratio, size)  # exact: a few atoms
        return laws, laws
    uppers, lowers = [], []
    for d, which in enumerate(_WHICH):
        grid = _direction_grid(ratio, size, points, tail, which)
        uppers.append(_upper_laws(ratio, size, grid)[d])
        lowers.append(_lower_laws(ratio, size, 1, grid)[d])
    return tuple(uppers), tuple(lowers)


def _compose_blocks(blocks, epochs: int, interval: float):
    """The decomposition's blocks composed (upper, and their garbled pairs below: a lower bound on the
    decomposition, which measures its discretisation; for k = 1 a lower bound on the allocation itself)."""
    ups = [[batch.loss_law(up[d].loss, up[d].mass, count * epochs, interval, upper=True,
                           infinite=up[d].infinite) for (up, _), count in blocks] for d in range(2)]
    lows = [[batch.loss_law(low[d].loss, low[d].mass, count * epochs, interval, upper=False,
                            infinite=low[d].infinite) for (_, low), count in blocks] for d in range(2)]
    slack = max(low[d].slack for (_, low), _ in blocks for d in range(2))
    return batch.compose_laws(ups, lows, interval), slack


def _at(curve, lower, delta: float | None, epsilon: float | None) -> tuple[float, float]:
    if epsilon is None:
        return float(lower.epsilon(delta)), float(curve.epsilon(delta))
    return float(lower.delta(epsilon)), float(curve.delta(epsilon))


def _composed(ratio: GaussianRatio, t: int, k: int, epochs: int, rtol: float, delta: float | None,
              epsilon: float | None, tail: float, clock: _Clock | None = None) -> AllocationCurve:
    """k of t and/or several epochs: the decomposition's 1-of-m pairs composed above, a garbled pair composed
    below (module doc), on the batch engine's loss grid. The cells and the loss grid are refined together
    while the decomposition's own discretisation bracket is wider than ``rtol / 8``."""
    sizes = _blocks(t, k)
    copies = sum(count for _, count in sizes) * epochs
    points = START_POINTS
    interval = None
    blocks_lower, kept = None, (points, interval)  # kept: the last grids that fit
    clock = clock or _Clock(None)
    # Epochs of 1 of t: a second lower bound, the best garbled pair of one allocation by both methods
    # (uniform and geometric grids: :func:`_single`; at small noise the uniform grid's garbled pair is a
    # poor lower bound), composed over the epochs on the same loss grid; the larger of the two is kept.
    single = None
    if k == 1 and t > 1 and not _exact_blocks(ratio, t):
        laws = _single(ratio, t, rtol / 100, delta, epsilon, tail, clock)  # fine: composed, errors add up
        target = delta if epsilon is None else float(PrivacyCurve.delta(laws["remove"][0].curve(), epsilon))
        floor = max(math.log(max(1e-6 * target, 1e-300) / epochs) if target else -40.0, -40.0)
        single = [_merged_below(laws[w][1], floor) for w in _WHICH]
    while True:
        step = time.perf_counter()
        try:
            blocks = [(_block_laws(ratio, size, points, tail), count) for size, count in sizes]
            if interval is None:
                interval = _loss_interval([(up, count * epochs) for (up, _), count in blocks], rtol, delta,
                                          epsilon)
            trial, slack = _compose_blocks(blocks, epochs, interval)
            grow = copies * (1.0 + slack) ** max(copies - 1, 0)
            parts = [(_DirectionLower(trial.lower), slack * grow, slack * grow)]
            if single is not None:  # both directions composed once, each read alone with its own allowances
                lows = [[batch.loss_law(low.loss, low.mass, epochs, interval, upper=False, infinite=low.infinite)]
                        for low in single]  # (the geometric grid's errors are relative: no e^eps term)
                composed_lower = batch.compose_laws(lows, lows, interval).lower
                for which, low in enumerate(single):
                    factor = epochs * (1.0 + max(low.slack, low.slack_other)) ** max(epochs - 1, 0)
                    parts.append((_DirectionLower(composed_lower, which), low.slack * factor,
                                  low.slack_other * factor))
            trial_lower = LowerBound(parts)
            low, high = _at(trial, trial_lower, delta, epsilon)  # (composes the lower curve: may not fit)
        except NumericalLimitError:
            if blocks_lower is None:
                raise
            points, interval = kept  # the last grids that fit, and their curves
            break
        composed, blocks_lower, kept = trial, trial_lower, (points, interval)
        width = _width(low, high)
        # settled: within a few times the round-off allowance (e.g. a delta of 0 at the target), which
        # refining only grows
        if width <= rtol / 8 or high - low <= _SETTLED * slack * grow or points >= GRID_LIMIT // 8 \
                or not clock.another(time.perf_counter() - step):
            break
        if not all(_exact_blocks(ratio, size) for size, _ in sizes):  # exact blocks need no finer cells
            points *= 2
        interval /= 2
    if k == 1:
        lower = blocks_lower  # the blocks are 1-of-t allocations: their garbled pairs composed bound it below
        how = "garbled pairs composed" + ("" if single is None else f" (also {', '.join(laws[w][2] for w in _WHICH)})")
    else:
        lows = []
        for d, which in enumerate(_WHICH):
            grid = _direction_grid(ratio, t, _LOWER_POINTS, tail, which)
            lows.append(_lower_laws(ratio, t, k, grid)[d])
        garbled, coarse = None, interval
        while garbled is None:  # a coarser loss grid below when the composition would not fit (still a lower)
            laws = [[batch.loss_law(low.loss, low.mass, epochs, coarse, upper=False, infinite=low.infinite)]
                    for low in lows]
            try:
                garbled = batch.compose_laws(laws, laws, coarse)
            except NumericalLimitError:
                if coarse >= 0.05:
                    raise
                coarse *= 2.0
        slack = max(low.slack for low in lows)
        grow = epochs * (1.0 + slack) ** max(epochs - 1, 0)
        lower = LowerBound([(_DirectionLower(garbled.lower), slack * grow, slack * grow)])
        how = f"the {k}-of-{t} pair garbled by sum_i W_i, composed"
    blocks_text = " + ".join(f"{count * epochs} x (1 of {size})" for size, count in sizes)
    return AllocationCurve([composed], lower, f"{k} of {t}, {ratio.label}, {epochs} epoch(s): upper "
                                              f"{blocks_text} composed (Feldman and Shenfeld decomposition), "
                                              f"{points:,} cells, loss grid {interval:.3g}; lower: {how}{clock.note()}")


def _merged_below(law: _Law, floor: float) -> _Law:
    """A garbled pair's ``law`` with its outcomes of loss below ``floor`` merged into one, of loss
    log(sum P / sum Q) (merging outcomes is a post-processing, so still a lower bound): they keep a
    composition's window from growing, and their first-measure mass (at most e^floor each: P = Q e^loss)
    moves a composition of n copies by at most n e^floor."""
    low = law.loss < floor
    if not np.any(low):
        return law
    with np.errstate(divide="ignore"):
        log_p = special.logsumexp(np.log(law.mass[low]))
        log_q = special.logsumexp(np.log(law.mass[low]) - law.loss[low])
    keep = ~low
    if log_p == -math.inf:  # no mass below the floor: nothing to merge, the empty outcomes dropped
        return _Law(law.loss[keep], law.mass[keep], law.infinite, law.slack, law.slack_other)
    return _Law(np.append(law.loss[keep], log_p - log_q), np.append(law.mass[keep], math.exp(log_p)),
                law.infinite, law.slack, law.slack_other)


class _DirectionLower(PrivacyCurve):
    """The batch engine's lower curve seen as a curve, both directions or one (``which``: its
    :meth:`~gce.accounting.batch.LowerCurve.direction_delta`); only to be wrapped in :class:`LowerBound`."""

    def __init__(self, lower, which: int | None = None):
        self._lower, self._which = lower, which

    def _delta(self, eps):
        if self._which is None:
            return np.atleast_1d(self._lower.delta(eps))
        return self._lower.direction_delta(self._which, eps)


def _gaussian_laws(ratio: GaussianRatio, upper: bool = True) -> tuple[_Law, _Law]:
    """The Gaussian pair's own law (a block of one database; symmetric, so one law for both directions):
    its loss ``mu z + mu^2 / 2`` (z ~ N(0, 1) under P) on cells of ``z``, each cell's P-mass at its largest
    loss (upper; beyond |z| = 12 at +inf) or its smallest (lower; beyond: dropped)."""
    mu = max(ratio.mu, 1e-9)
    z = np.linspace(-12.0, 12.0, 2**16 + 1)
    mass = _phi_between(z[:-1], z[1:])
    edge = z[1:] if upper else z[:-1]
    infinite = 2.0 * float(special.ndtr(-12.0)) if upper else 0.0
    law = _Law(mu * edge + 0.5 * mu * mu, mass, infinite)
    return law, law


def _laplace_laws(ratio: LaplaceRatio, upper: bool = True) -> tuple[_Law, _Law]:
    """The Laplace pair's own law (a block of one database; symmetric, so one law for both directions): the
    loss ``e`` (P-mass 1/2), ``-e`` (P-mass e^-e / 2) and ``2u - e`` on u in (0, e) with P-density
    ``e^{u - e} / 2``, on cells of u, each cell's P-mass at its largest loss (upper) or its smallest (lower)."""
    e = ratio.epsilon
    u = np.linspace(0.0, e, 2**14 + 1)
    mass = 0.5 * (np.exp(u[1:] - e) - np.exp(u[:-1] - e))
    edge = u[1:] if upper else u[:-1]
    loss = np.concatenate(([-e, e], 2.0 * edge - e))
    law = _Law(loss, np.concatenate(([0.5 * math.exp(-e), 0.5], mass)), 0.0)
    return law, law


#: Most atoms of a block's exact law with canonical pairs (:func:`_canonical_block_laws`); beyond, the grid.
_CANONICAL_BLOCK_ATOMS = 2**20


def _exact_blocks(ratio, size: int) -> bool:
    """Whether a block of ``size`` is computed exactly (:func:`_canonical_block_laws`), not on cells."""
    return isinstance(ratio, CanonicalRatio) and (size + 1) * (size + 2) // 2 <= _CANONICAL_BLOCK_ATOMS


def _canonical_block_laws(ratio: CanonicalRatio, size: int) -> tuple[_Law, _Law]:
    """1 of ``size`` with canonical pairs, exactly (both directions; the same laws above and below): W takes
    the values 0, e^-eps, e^eps under Q (:class:`CanonicalRatio`), so ``S = n_1 e^-eps + n_2 e^eps`` over the
    multinomial counts ``(n_0, n_1, n_2)`` of the databases at each value, ``dP/dQ = S / size`` on Q's support
    (module doc), and P's mass outside it is ``delta`` (the member's output 0); Q's outside P's is
    ``Q(S = 0) = delta^size`` (every database at output 3)."""
    values, q_mass, _ = ratio._atoms()
    n1, n2 = (a.ravel() for a in np.meshgrid(np.arange(size + 1), np.arange(size + 1)))
    keep = n1 + n2 <= size
    n1, n2 = n1[keep], n2[keep]
    n0 = size - n1 - n2
    with np.errstate(divide="ignore"):
        log_m = np.log(q_mass)  # log 0 = -inf for delta = 0: those counts carry no mass
    log_q = special.gammaln(size + 1.0) - special.gammaln(n0 + 1.0) - special.gammaln(n1 + 1.0) \
        - special.gammaln(n2 + 1.0)
    for count, log_mass in zip((n0, n1, n2), log_m):
        some = count > 0
        log_q[some] += count[some] * log_mass
    s = (n1 * values[1] + n2 * values[2]) / size
    finite = (s > 0) & (log_q > -np.inf)
    loss = np.log(s[finite])
    q = np.exp(log_q[finite])
    only_q = ratio.delta**size  # Q(S = 0): every database at output 3
    return _Law(loss, q * s[finite], ratio.singular), _Law(-loss, q, only_q)


def _loss_interval(uppers, rtol: float, delta: float | None, epsilon: float | None) -> float:
    """Loss grid of the composition: the split (upper) costs O(h^2) per copy and the rounding down (lower)
    h per copy; h = share * rtol * scale / copies, scale about the composed epsilon (sum of the parts')."""
    copies = sum(count for _, count in uppers)
    scale = 0.0
    for (remove, _), count in uppers:
        curve = remove.curve()
        target = 1e-6 if delta is None else delta
        scale += count * max(min(float(curve.epsilon(min(target * 10, 0.5))), 50.0), 1e-3) / max(copies, 1)
    scale = max(scale * math.sqrt(copies), 1e-2)
    h = _LOSS_GRID_SHARE * rtol * scale / copies
    return float(min(max(h, 1e-6), 0.05))


# ---------------------------------------------------------------------------
# Per-database rates (Poisson subsampling) and uniform(min, max) priors


def _log_grid(ratio: GaussianRatio, points: int, tail: float) -> NDArray[np.float64]:
    """Grid points ``0 = g_0 < g_1 < ... < g_m = B`` of one database's ratio W, uniform in ``log W`` from
    ``z = -12`` up to the clamp ``B`` (a privacy-loss grid: the loss ``log(1 - r + r W)`` moves little
    within a cell)."""
    clamp = ratio.clamp(tail)
    z_top = float(ratio._z(np.array([clamp]))[0])
    z = np.linspace(min(-12.0, z_top - 1.0), z_top, points)
    inner = np.exp(ratio.mu * z - 0.5 * ratio.mu**2)
    inner[-1] = clamp
    return np.concatenate(([0.0], inner))


def _poisson_laws(ratio: GaussianRatio, rate: float, points: int, tail: float) -> tuple[tuple[_Law, _Law],
                                                                                        tuple[_Law, _Law]]:
    """((upper remove, upper add), (lower remove, lower add)) of one database subsampled at ``rate``: the pair
    ``((1 - r) Q_i + r P_i, Q_i)``, whose likelihood ratio is ``V = 1 - r + r W``.

    Upper: the mean-preserving spread of ``min(W, B)`` onto the grid (each cell's mass to its two endpoints,
    keeping its mean; W >= B clamped at B, the P-mass ``r E[(W - B)_+]`` left outside Q's support), so
    ``E[V~ | V] = V``: a dominating pair (module doc, "Certified rounding"). Lower: the garbling by the cell
    of W (a post-processing), whose masses are ``Q_i(cell)`` and ``(1 - r) Q_i(cell) + r P_i(cell)``.
    """
    grid = _log_grid(ratio, points, tail)
    q, p = ratio.cells(np.append(grid, np.inf))  # cells [g_j, g_{j+1}), the last [B, inf)
    width = np.diff(grid)
    law = np.zeros(grid.size)
    law[:-1] += (grid[1:] * q[:-1] - p[:-1]) / width   # kept at the cell's left end
    law[1:] += (p[:-1] - grid[:-1] * q[:-1]) / width   # moved to its right end
    law[-1] += q[-1]
    law = np.maximum(law, 0.0)
    value = 1.0 - rate + rate * grid
    with np.errstate(divide="ignore"):
        loss = np.log(value)
    excess = rate * ratio.excess(float(grid[-1]))
    upper = (_Law(loss, law * value, excess), _Law(-loss, law, 0.0))
    mixed = (1.0 - rate) * q + rate * p
    with np.errstate(divide="ignore", invalid="ignore"):
        cell_loss = np.log(mixed) - np.log(q)
    keep_pq, keep_qp = mixed > 0, q > 0
    lower = (_Law(cell_loss[keep_pq], mixed[keep_pq], 0.0), _Law(-cell_loss[keep_qp], q[keep_qp], 0.0))
    return upper, lower


def _check_rate(value: object, name: str) -> float:
    if not is_number(value) or not 0.0 <= value <= 1.0:
        raise InvalidParameterError(name, f"must be a probability in [0, 1], got {value!r}")
    return float(value)


def poisson_curve(parts: Sequence[tuple[float, float, int]], rtol: float = DEFAULT_RTOL,
                  delta: float | None = 1e-6, epsilon: float | None = None, tail: float = TAIL,
                  seconds: float | None = None) -> AllocationCurve:
    """The curve of "in none" against "in each database independently at its rate" (the per-database-rate
    prior: Poisson subsampling of the target's record, database by database), each database running a
    Gaussian of its ``mu``: an upper curve with its certified lower curve.

    Without constraints the rates prior is a product law, so ``P = prod_i ((1 - r_i) Q_i + r_i P_i)``
    against ``Q = prod_i Q_i``: the composition of the databases' subsampled Gaussian pairs (001 Sec. V-B;
    Balle, Barthe and Gaboardi 2018). Each pair is rounded to a dominating one above and garbled below
    (:func:`_poisson_laws`), and the pairs are composed by the batch engine
    (:func:`gce.accounting.batch.compose_laws`), both directions. The grids are refined while the bracket at
    the target is wider than ``rtol``.

    Parameters
    ----------
    parts : sequence of (mu, rate, count)
        ``count`` databases running a mu-GDP mechanism each (several on one database: one Gaussian of
        ``sqrt(sum mu_i^2)``), each holding the target with probability ``rate``.
    rtol, delta, epsilon, tail, seconds
        As in :func:`allocation_curve`.

    Examples
    --------
    >>> low, high = poisson_curve([(1.0, 0.1, 10)]).epsilon_bracket(1e-6)
    >>> 3.44 < low <= 3.4659 <= high < 3.47  # dp-accounting: 3.46598
    True
    """
    if isinstance(parts, (str, bytes)) or not isinstance(parts, Sequence) or not parts:
        raise InvalidParameterError("parts", f"must be a non-empty list of (mu, rate, count), got {parts!r}")
    clean = []
    for i, part in enumerate(parts):
        if not isinstance(part, Sequence) or len(part) != 3:
            raise InvalidParameterError(f"parts[{i}]", f"must be (mu, rate, count), got {part!r}")
        mu, rate, count = part
        ratio = GaussianRatio(mu)
        rate = _check_rate(rate, f"parts[{i}].rate")
        count = _check_count(count, f"parts[{i}].count")
        if rate > 0.0 and ratio.mu > 0.0:
            clean.append((ratio, rate, count))
    if not is_number(rtol) or not 0.0 < rtol < 1.0:
        raise InvalidParameterError("rtol", f"must be a number in (0, 1), got {rtol!r}")
    if epsilon is None and delta is None:
        delta = 1e-6
    if epsilon is None and delta > 0:
        tail = max(tail, _TAIL_SHARE * delta / max(sum(c for _, _, c in clean), 1))
    if not clean:  # nobody can hold the target, or no database's output depends on it
        from ..accounting.curves import GaussianCurve
        curve = GaussianCurve(0.0)
        return AllocationCurve([curve], LowerBound([(curve, 0.0, 0.0)]), "no database depends on the target")
    copies = sum(count for _, _, count in clean)
    points = _POISSON_POINTS
    blocks = [(_poisson_laws(ratio, rate, points, tail), count) for ratio, rate, count in clean]
    # Coarse to fine: the loss grid starts _POISSON_COARSE times the estimate and is halved while the
    # bracket is too wide and the time allows (the lower curve's rounding down costs a grid step per copy).
    target = _loss_interval([(up, count) for (up, _), count in blocks], rtol, delta, epsilon)
    interval = min(target * _POISSON_COARSE, 0.05)
    done = None
    clock = _Clock(seconds)
    while True:
        step = time.perf_counter()
        try:
            composed, _ = _compose_blocks(blocks, 1, interval)
            lower = LowerBound([(_DirectionLower(composed.lower), 0.0, 0.0)])
            low, high = _at(composed, lower, delta, epsilon)
        except NumericalLimitError:
            # The composed window exceeds the batch engine's grid: keep the last (coarser) grid.
            if done is not None:
                break
            if interval >= 0.05:
                raise
            interval *= 2.0
            continue
        done = (composed, lower, points, interval)
        if _width(low, high) <= rtol or not clock.another(time.perf_counter() - step):
            break
        if interval > target / 2:
            interval /= 2
        elif points < GRID_LIMIT // 8:
            points *= 2
            blocks = [(_poisson_laws(ratio, rate, points, tail), count) for ratio, rate, count in clean]
        else:
            break
    composed, lower, points, interval = done
    shown = ", ".join(f"{count} x (mu {ratio.mu:g} at rate {rate:g})" for ratio, rate, count in clean[:4])
    more = ", ..." if len(clean) > 4 else ""
    return AllocationCurve([composed], lower, f"Poisson subsampling, {copies} database(s): {shown}{more}; "
                                              f"{points:,} cells each, loss grid {interval:.3g}{clock.note()}")


class _Charged(PrivacyCurve):
    """``delta(eps) + e^(eps + log_b)`` (capped at 1): an upper curve moved up by a charge
    (:func:`uniform_curve`); in log space, as the charge ``2^-n`` underflows for large n."""

    def __init__(self, curve: PrivacyCurve, a: float, log_b: float):
        self._curve, self._a, self._log_b = curve, float(a), float(log_b)
        self.delta_floor = min(curve.delta_floor + self._a, 1.0)

    def _delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        charge = self._a + np.exp(np.minimum(eps + self._log_b, 700.0))
        return np.minimum(np.atleast_1d(self._curve.delta(eps)) + charge, 1.0)


def log_size_mass_outside(n: int, min_members: int, max_members: int | None) -> float:
    """``log(1 - p)``: the log of the Binomial(n, 1/2) mass of sizes outside ``[min_members, max_members]``
    (``-inf`` when every size is allowed), rounded up; in log space, as ``2^-n`` underflows for large n."""
    high = n if max_members is None else min(max_members, n)
    sizes = np.arange(n + 1)
    log_pmf = special.gammaln(n + 1) - special.gammaln(sizes + 1) - special.gammaln(n - sizes + 1) - n * math.log(2)
    outside = (sizes < min_members) | (sizes > high)
    if not outside.any():
        return -math.inf
    return float(special.logsumexp(log_pmf[outside])) + 1e-9


def uniform_curve(mus: Sequence[float], min_members: int, max_members: int | None = None,
                  rtol: float = DEFAULT_RTOL, delta: float | None = 1e-6,
                  epsilon: float | None = None, seconds: float | None = None) -> AllocationCurve:
    """The curve of "in none" against uniform over the sets of ``min_members`` to ``max_members`` of the
    ``n = len(mus)`` databases (001's "in at least one" for ``min_members = 1``), database ``i`` running a
    Gaussian of ``mus[i]``: an upper curve with its certified lower curve.

    The uniform law over all subsets is Poisson subsampling at rate 1/2, ``P_1/2 = p P_U + (1 - p) P_R``
    with ``P_U`` the prior's output law, ``p`` the Binomial(n, 1/2) mass of the allowed sizes and ``P_R``
    the rest. Hence, for every event A, ``P_U(A) <= P_1/2(A) / p <= P_1/2(A) + (1 - p) / p`` and
    ``P_U(A) >= P_1/2(A) - (1 - p)``, so both directions obey

        delta_1/2(eps) - (1 - p) - e^eps (1 - p) / p  <=  delta_U(eps)  <=  delta_1/2(eps) + e^eps (1 - p) / p,

    with ``delta_1/2`` the curve of :func:`poisson_curve` at rate 1/2 (its own bracket carried through).
    For "none vs at least one" (and uniform(0..n)) the empty set's share is taken out exactly
    (:class:`_WithoutEmpty`). Other priors of at most :data:`SIZES_LIMIT` sizes: joint convexity over the
    sizes (:func:`_sizes_curve`); more sizes: the charge above (refused when ``1 - p >= 1/2``).
    """
    mus = [float(GaussianRatio(m).mu) for m in mus]
    n = len(mus)
    if n == 0:
        raise InvalidParameterError("mus", "needs one mu per database, got none")
    min_members = _check_count(min_members, "min_members", low=0)
    if max_members is not None:
        max_members = _check_count(max_members, "max_members", low=min_members)
    log_outside = log_size_mass_outside(n, min_members, max_members)
    outside = math.exp(log_outside)
    high = n if max_members is None else min(max_members, n)
    without_empty = min_members <= 1 and high >= n
    if not without_empty and high - min_members + 1 <= SIZES_LIMIT:
        return _sizes_curve(mus, min_members, high, rtol, delta, epsilon, seconds)
    if outside >= 0.5:
        raise NumericalLimitError(f"uniform({min_members}, {max_members}) holds only {1.0 - outside:.3g} of "
                                  f"the subsets of {n} databases (the rate-1/2 bound would charge more than "
                                  f"1) over more than {SIZES_LIMIT} sizes (joint convexity over the sizes)")
    values, counts = np.unique(np.array(mus), return_counts=True)
    half = poisson_curve([(float(m), 0.5, int(c)) for m, c in zip(values, counts)], rtol=rtol, delta=delta,
                         epsilon=epsilon, seconds=seconds)
    log_b = log_outside - math.log1p(-outside)  # log((1 - p) / p)
    if without_empty:
        composed = half._upper[0]  # the batch engine's LawCurve: directions P||Q (0) and Q||P (1)
        remove, add = composed.direction(0), composed.direction(1)
        floor = max(remove.delta_floor / (1.0 - outside), add.delta_floor * (1.0 + 1.0 / (1.0 - outside)))
        upper = _WithoutEmpty(remove.delta, add.delta, outside, floor)
        below = composed.lower
        lower = LowerBound([(_WithoutEmpty(lambda e: below.direction_delta(0, e),
                                           lambda e: below.direction_delta(1, e), outside, upper=False),
                              0.0, 0.0)])
        how = f"less the empty set's share e^{log_outside:.6g} (exactly)"
    else:
        upper = _Charged(half, 0.0, log_b)
        how = f"conditioned on the size (charge e^(eps {log_b:+.4g}))"
        lower = LowerBound([(half.lower, outside, math.exp(log_b))])
    shown = max_members if max_members is not None else n
    return AllocationCurve([upper], lower, f"uniform({min_members}..{shown}) of {n} as Poisson subsampling at "
                                           f"rate 1/2 {how}; {half.description}")


class _WithoutEmpty(PrivacyCurve):
    """The rate-1/2 curve with the empty set's share ``c`` taken out exactly (:func:`uniform_curve` with only
    the empty set excluded, whose output law is Q itself): ``P_U = (P_1/2 - c Q) / (1 - c)``, so for every A

        P_U(A) - e^eps Q(A) = (P_1/2(A) - e^eps' Q(A)) / (1 - c),            e^eps' = c + (1 - c) e^eps,
        Q(A) - e^eps P_U(A) = (1 + e^eps c / (1 - c)) (Q(A) - e^eps'' P_1/2(A)),  e^eps'' = e^eps / (1 - c + c e^eps),

    so delta_U(eps) is the larger of ``delta_1/2,PQ(eps') / (1 - c)`` and
    ``(1 + e^eps c / (1 - c)) delta_1/2,QP(eps'')`` (eps', eps'' in [0, eps] for eps >= 0), each direction's
    upper curve bounding its own term (the same identities turn each direction's lower curve into a lower
    curve of P_U's).

    ``remove`` and ``add``: each direction's delta as a function of eps (upper, or lower)."""

    def __init__(self, remove, add, c: float, floor: float = 0.0, upper: bool = True):
        self._remove, self._add, self._c, self._upper = remove, add, float(c), bool(upper)
        self.delta_floor = min(float(floor), 1.0)

    def _delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        eps = np.atleast_1d(np.asarray(eps, dtype=float))
        c = self._c
        log_c = math.log(c) if c > 0 else -np.inf
        e = eps
        # log(c + (1 - c) e^eps), in log space (c may underflow to 0; eps may exceed e^eps's range).
        first = np.maximum(np.logaddexp(log_c, math.log1p(-c) + e), 0.0)
        pq = np.atleast_1d(self._remove(first)) / (1.0 - c)
        # Q||P: the true delta does not increase with eps, so the term at min(eps, log(1/c)) bounds it too
        # (there the factor 1 + e^eps c / (1 - c) is at most 1 + 1 / (1 - c)); not for a lower curve.
        qp = np.full_like(e, np.inf)
        for x in (e, np.minimum(e, -log_c)) if self._upper else (e,):
            second = np.maximum(x - np.logaddexp(math.log1p(-c), log_c + x), 0.0)
            factor = 1.0 + np.exp(np.minimum(x + log_c, 700.0)) / (1.0 - c)
            qp = np.minimum(qp, factor * np.atleast_1d(self._add(second)))
        return np.minimum(np.maximum(pq, qp), 1.0)


#: Most sizes of a uniform(min, max) prior bounded by joint convexity over its sizes (:func:`_sizes_curve`).
SIZES_LIMIT = 8


class _Mixed(PrivacyCurve):
    """``sum_s w_s delta_s(eps)``: joint convexity over a mixture's components (:func:`_sizes_curve`)."""

    def __init__(self, curves: Sequence[PrivacyCurve], weights: Sequence[float]):
        self._curves, self._weights = tuple(curves), tuple(float(w) for w in weights)
        self.delta_floor = min(sum(w * c.delta_floor for c, w in zip(self._curves, self._weights)), 1.0)

    def _delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        total = sum(w * np.atleast_1d(c.delta(eps)) for c, w in zip(self._curves, self._weights))
        return np.minimum(total * (1.0 + 1e-12), 1.0)


def _mixture_lower_laws(ratio: GaussianRatio, n: int, weights: dict[int, float], grid: _Grid) -> tuple[_Law, _Law]:
    """The mixture prior's pair garbled by the cells of each ``W_i`` summed (as :func:`_lower_laws`, module
    doc): under P the law of ``S_J`` is ``sum_s w_s`` (s tilted terms, ``n - s`` plain), a post-processing of
    the true pair, so its divergence is a lower bound."""
    q_cells, p_cells = _cells(ratio, grid)
    size = grid.size
    f_q = _fft.rfft(q_cells, size)
    f_p = _fft.rfft(p_cells, size)
    q = _fft.irfft(_power([(f_q, n)]), size)
    p = sum(w * _fft.irfft(_power([(f_p, s), (f_q, n - s)]), size) for s, w in weights.items() if w > 0)
    noise = _noise(size, n, (q_cells, p_cells))
    q, p = np.maximum(q, 0.0), np.maximum(p, 0.0)
    keep_pq, keep_qp = p > 0, q > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        loss = np.log(p) - np.log(q)
    return (_Law(loss[keep_pq], p[keep_pq], 0.0, noise, noise), _Law(-loss[keep_qp], q[keep_qp], 0.0, noise, noise))


def _sizes_curve(mus: Sequence[float], low: int, high: int, rtol: float, delta: float | None,
                 epsilon: float | None, seconds: float | None) -> AllocationCurve:
    """uniform(low..high) of n = len(mus) databases by joint convexity over its sizes: the prior is the
    mixture ``sum_s w_s U_s`` (w_s proportional to C(n, s), U_s uniform over the s-sets), and hockey-stick
    divergences are jointly convex, so in both directions ``delta <= sum_s w_s delta_s`` with ``delta_s`` the
    s-of-n allocation's upper curve at the largest mu (0 for s = 0: the same law as "in none"). Below: the
    mixture garbled by the summed cells at the smallest mu (:func:`_mixture_lower_laws`)."""
    n = len(mus)
    sizes = np.arange(low, high + 1)
    log_w = special.gammaln(n + 1) - special.gammaln(sizes + 1) - special.gammaln(n - sizes + 1)
    weights = np.exp(log_w - special.logsumexp(log_w))
    top, bottom = max(mus), min(mus)
    curves = []
    share = None if seconds is None else seconds / max(len(sizes), 1)
    from ..accounting.curves import GaussianCurve
    for s in sizes.tolist():
        curves.append(GaussianCurve(0.0) if s == 0 or top == 0.0
                      else allocation_curve(top, n, s, rtol=rtol, delta=delta, epsilon=epsilon, seconds=share))
    upper = _Mixed(curves, weights)
    ratio = GaussianRatio(bottom)
    parts = []
    if bottom > 0.0:
        tail = TAIL if delta is None else max(TAIL, _TAIL_SHARE * delta)
        for d, which in enumerate(_WHICH):
            grid = _direction_grid(ratio, n, _LOWER_POINTS, tail, which)
            law = _mixture_lower_laws(ratio, n, dict(zip(sizes.tolist(), weights.tolist())), grid)[d]
            parts.append((law.curve(), law.slack, law.slack_other))
    lower = LowerBound(parts or [(GaussianCurve(0.0), 0.0, 0.0)])
    return AllocationCurve([upper], lower, f"uniform({low}..{high}) of {n}: joint convexity over its "
                                           f"{len(sizes)} sizes (allocations at mu {top:g}); below: the "
                                           f"mixture garbled by sum_i W_i at mu {bottom:g}")

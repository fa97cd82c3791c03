"""Per-database rates (Poisson subsampling): "in none" against each database independently at its rate.

"In none" against a rates prior (each database independently at its rate ``r``, no constraints) is the
composition of the databases' subsampled pairs ``((1 - r) Q_i + r P_i, Q_i)``: Poisson subsampling (001
Sec. V-B; Balle, Barthe and Gaboardi 2018), whose likelihood ratio is ``V = 1 - r + r W`` with ``W = dP_i /
dQ_i``. :func:`poisson_curve` composes them on one *lattice* of the privacy loss, ``{a h + phi}``, both
directions, as a certified bracket.

The lattice
-----------
Each database's grid of ``V`` is the lattice itself: ``V_a = e^(a h + phi)``, ``phi`` chosen so that the
lowest point is ``1 - r`` (``W = 0``, where a steep part of the mass lies at small rates), up to the clamp
``B`` (``E_Q[(W - B)_+]`` at most the tail). Its cells ``[V_a, V_{a+1})`` are cells of the loss ``log V``
of width ``h``, uniform in the loss rather than in ``log W``: at a rate of 0.001 the loss is about
``r (W - 1)``, and a grid uniform in ``log W`` spends most of its cells where the loss hardly moves.

*Upper: a mean-preserving spread.* ``min(W, B)`` is spread onto the grid keeping each cell's Q-mass and its
mean (so its P-mass): every outcome goes to one of the two lattice points around its loss, the true pair is
the post-processing "merge the two" of the spread one, which dominates it (Blackwell 1953) in both
directions and under composition; the P-mass above ``B`` is charged at infinite loss. The error is of second
order in ``h`` (Doroshenko et al. 2022, the same construction on the loss: "connect the dots").

*Lower: a garbling, rounded down by a known amount.* The cell of ``V`` is a function of the output, so the
pair of the cells' masses is a post-processing of the true pair: its composition's delta is a lower bound.
Cell ``c``'s loss ``L_c = log(P(c) / Q(c))`` lies anywhere in its cell; write it ``a_c h + phi + o_c`` with
``a_c = floor((L_c - phi) / h)`` and ``0 <= o_c < h``. The composition's loss is ``h sum a + N phi + O``
with ``O = sum o`` over the ``N`` copies: the first part lies on the lattice (one FFT), and ``O`` is a sum of
independent bounded terms whose mean ``N E[o]`` and variance ``N Var(o)`` are computed exactly from the
cells, so Bernstein's inequality bounds its deviation: ``P(O < N E_P[o] - t) <= eta`` for
``t = b l / 3 + sqrt((b l / 3)^2 + 2 N Var_P(o) l)``, ``l = log(1 / eta)``, ``b`` the largest deviation of one
``o``. Since ``delta(eps) = E_P[(1 - e^(eps - S))_+]`` only grows with ``S``,

    delta_garbled(eps) >= E_P[(1 - e^(eps + t - (h sum a + N phi + N E_P[o])))_+] - eta,

the lattice composition shifted by the exact mean ``N E_P[o]`` and read ``t`` further; the add direction
alike under Q (``O`` bounded above). The largest over ``eta = 10^(-j/2)`` is kept. The cells furthest
from the mean on the side read, as many as a P-mass (add: Q-mass) of a share of the target delta over ``N``
holds, are left out of the mean, ``Var(o)`` and ``b`` (*stray* cells: one of negligible mass far from the
bulk would otherwise set ``b``), and the probability ``N stray`` that some copy lands in one is charged to
``eta``.

*Levelled.* ``t`` grows as ``sqrt(N) sd(o)``, and ``o`` is not constant: where the loss's density changes on
the scale of ``h``, above all in the bottom cells at ``1 - r`` (at a rate of 0.001 a cell ``h`` wide there
can hold a quarter of the mass, its loss well above its middle), ``sd(o)`` was 0.016 to 0.03 ``h`` and ``t``
5 to 9 ``h`` at 1,000 to 10,000 steps: the lower end, not the upper one, set the bracket, which narrowed
only as ``h``, and a delta bracket ``rtol`` wide (the curve is steep: ``-d log delta / d eps`` about 5 to 15)
asked a lattice 10 to 20 times finer than an epsilon bracket. So the cells are first relabelled, each step
a post-processing (an outcome of one cell sent to another with a probability), so that every cell's loss
sits at the bulk's rounding ``o*`` (:func:`_level`): cell by cell upwards, a cell rounded below ``o*``
takes a share of the next cell's outcomes, one above a share of the cell below's, the share solving
``log(P / Q) = a h + phi + o*``; a thinned cell keeps its loss, so the result is exact up to round-off
(and whatever it is, it is a garbling: the roundings are read again from its masses). The bottom cell has
no cell below: the lower laws may take a lattice of their own phase (:func:`_phased_cells`) whose bottom
cell ``[1 - r, (1 - r) e^x)`` has ``x`` solved so that its loss sits at ``o*``; of the two garblings (this
lattice's cells levelled, the phased lattice's) the one whose lower curve is estimated the highest (the
composed loss's mean and standard deviations at the target's level, less ``t``: :func:`_score`, a choice,
never a bound) is composed. Measured: ``sd(o)`` 1e-6 to 1e-5 ``h``,
``t`` below ``h / 2``, and both ends then err to second order in ``h``: 1,000 steps at a rate of 0.01,
sigma 1, delta 1e-5 give [1.8280, 1.8287] on the first lattice (was [1.8216, 1.8287]) and delta at 1.8287 in
[9.954e-6, 9.993e-6] there too (was [9.65e-6, 9.99e-6], then a lattice 5 times finer); 10,000 steps at 0.001,
sigma 0.8: epsilon on one lattice of 16,384 points (was two), delta on one of 57,600 after it (was 384,000).

Composition, tilted
-------------------
Each direction's laws are composed by one FFT over a window whose tails are bounded by Chernoff's inequality
from the laws' moment-generating functions over the orders ``2^(j/2)``, ``j = -20 .. 30`` (the loss of a
subsampled Gaussian is heavy-tailed upwards: small orders decide its upper end, where the batch engine's
orders about the standard deviation ask for a window hundreds of times too wide). A power of ``N`` copies
multiplies the transform's round-off by ``N`` (:func:`gce.accounting.batch._log_spectrum`), which at delta
1e-12 is more than the delta itself. Then the laws are tilted by ``e^(theta L)`` (an exponential change of
measure, Esscher 1932), composed, and untilted cell by cell: ``p(s) = p_theta(s) Z^N e^(-theta s)``, the
round-off relative to the pmf near the target. Its allowance in delta at ``eps`` is the tilted one times
``2 Z^N e^(-theta eps)`` (Abel summation: ``(1 - e^(eps - s)) e^(-theta s)`` has total variation at most
twice its largest value ``e^(-theta eps)`` above ``eps``); ``theta`` is the least order whose untilted
allowance at the target is within :data:`_ROUND_SHARE` of the delta asked (the least distortion of the curve
below the target), none when the untilted transform is accurate enough. The window starts where the
untilted total's mass below is at most 1e-15, or :data:`_ROUND_SHARE` of a smaller target (what the cyclic
transform wraps up from there is untilted by a smaller factor than its own: at most that mass, subtracted
below and charged above) and ends where the tilted total's mass above is at most 2^-60, or that share of a
smaller target (wrapped down, it lands above ``eps`` untilted by at most ``Z^N e^(-theta eps)``: part of the
allowance). Below targets of 1e-14 these tails were all of the delta asked: 100 steps of q 0.01 at 1e-20
had an infinite upper end, [5.036, 5.056] now (dp-accounting's RDP: 5.49).

Many copies at a small rate make a smooth pmf on a fine lattice: of a window's thousands of frequencies, the
transform of 1,000 to 100,000 copies keeps a few dozen above :data:`~gce.accounting.batch.PRUNE`, the rest
pruned (and charged) anyway. So a powered law's transform is first bounded from one plain FFT of its atoms
(:func:`_support`), and only the frequencies whose power can exceed the pruning level are transformed
without cancellation, their roots taken directly; the composed pmf's curve is then built in linear passes
(:class:`_LatticeCurve`). The lower laws are composed when first read: a direction whose own certified
upper epsilon (delta) is at most a lower reading already made cannot raise it, and is neither read nor
composed (at small rates the add direction, well below the remove one). Measured on the 108 Poisson rows of
``benchmarks/bench_dp_sgd.py --full`` (rates 1e-4 to 0.01, the same process, best of three, 2 cores beside
another one's load): 0.2 to 0.7 times the time of the code before at rates 0.001 and 0.01, 0.1 to 0.9 at
1e-4, with the same brackets to round-off (up to twice narrower where the transform's round-off had been
charged), or narrower where the first lattice is made finer.

Accuracy decides the work
-------------------------
The lattice follows a schedule that depends on the question only: a first lattice spans the composition's
window in :data:`_FIRST_POINTS` points, or fewer (at least :data:`_LEAST_POINTS`) where the lower end's
Bernstein reading predicts a coarser one within a share of ``rtol`` (:func:`_predicted`), or more (at most
4 times finer) where the lattice's second-order error predicts that this one would not reach ``rtol``
(:func:`_spread_first`: many copies, a near-Gaussian loss; the bracket's width is about
``C N h^2 z / (sigma eps)``, the Gaussian's sensitivity of epsilon to the variance the spread adds, ``C``
measured 0.1 to 0.2): 100,000 steps at a rate of 0.001 then take one lattice, not two; while the bracket
at the target is wider than ``rtol`` the next is predicted from the width reached (the bracket narrows about
as ``h^2``, both ends levelled: aiming at :data:`_AIM` ``rtol``), at least twice and at most 64 times finer;
the clamps' charges are kept a share 1e-4 of the target delta. The time limit of the running computation only stops it
(:func:`~.bracket._may_refine`: a step whose estimated cost does not fit is not started, the last certified
bracket is kept and the description says so; a first lattice that does not fit is tried 4 and 16 times
coarser, a stop too, before the closed forms answer), and so does the grid limit (then the description says
the bracket is wider than asked, and why).

References
----------
Balle, Barthe, Gaboardi, "Privacy amplification by subsampling: tight analyses via couplings and
divergences", NeurIPS 2018.
Blackwell, "Equivalent comparisons of experiments", Ann. Math. Stat. 1953 (garblings and dominance).
Doroshenko, Ghazi, Kamath, Kumar, Manurangsi, "Connect the dots: tighter discrete approximations of privacy
loss distributions", PETS 2022.
Bernstein's inequality: Boucheron, Lugosi, Massart, "Concentration Inequalities", OUP 2013, Thm. 2.10.
Esscher, "On the probability function in the collective theory of risk", Skand. Aktuarietidskr. 1932
(the exponential tilt).
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
from ...accounting import batch, kinds
from ...accounting.curves import DiscreteLossCurve, PrivacyCurve, at_or_above
from ...errors import InvalidParameterError, NumericalLimitError
from ...validation import is_number, shown
from .bracket import (_STOPPED, _TAIL_SHARE, TAIL, AllocationCurve, LowerBound, _check_count,
                      _check_target, _may_refine, _negligible, _width)
from .ratios import GaussianRatio

#: Points of the first lattice over the composition's window (:func:`poisson_curve`).
_FIRST_POINTS = 2**14
#: The first lattice has at least this many points over the window, however coarse the predicted one
#: (:func:`_predicted`) allows.
_LEAST_POINTS = 2**10
#: The predicted lattice aims at this share of ``rtol`` (Chernoff's epsilon is above the target's), with
#: roundings of this standard deviation per copy, in lattice widths (0.01 to 0.04 measured).
_PREDICTED_SHARE, _PREDICTED_SD = 0.3, 0.05
#: The second-order error's prediction of the first lattice (:func:`_spread_first`): the constant below which
#: a first lattice predicted wider than ``rtol`` is made finer, the one and the share of ``rtol`` the finer
#: one aims at, and how many times finer it may be at most.
_SPREAD_LOW, _SPREAD_HIGH, _SPREAD_SHARE, _SPREAD_FINER = 0.05, 0.15, 0.6, 4.0
#: ... and the largest skewness of the composed loss at which the model is read (it is a Gaussian's: sigma 0.6
#: at a rate of 1e-4, skewness 0.08 to 0.25 over 10,000 to 100,000 steps, had brackets 25 times narrower
#: than it predicts, and one more composition than needed).
_SPREAD_SKEW = 0.05
#: Cells of one database's provisional lattice, read only for the window of the first one.
_PROVISIONAL_CELLS = 2**11
#: Each refinement makes the lattice at least this many times finer, at most :data:`_MOST_FINER`.
_LEAST_FINER, _MOST_FINER = 2.0, 64.0
#: When the first lattice does not fit in the time left, lattices 4, 16, ... times coarser are tried this many
#: times (the stop recorded) before the closed forms answer.
_COARSER_FIRST = 2
#: The next lattice is predicted to reach this share of ``rtol`` (the bracket narrows about as ``h^2``).
_AIM = 0.5
#: Chernoff orders of the windows and the tilts (both signs): ``2^(j/2)``, ``j = -20 .. 30``.
_ORDERS = 2.0 ** (np.arange(-20, 31) / 2.0)
#: Both signs: the orders of the lower tails' bounds follow.
_SIGNED = np.concatenate((_ORDERS, -_ORDERS))
#: Relative width of the blocks the moment-generating functions are summed over (:func:`_log_mgf`).
_MGF_BLOCK = 0.05
#: Most terms (atoms x frequencies) of a powered law's transform summed directly (:func:`_spectrum_power`; a
#: quarter of the batch engine's: beyond, a tilt is cheaper).
_DIRECT_TERMS = 2**16
#: Frequencies above which a powered law's transform is first read by a plain FFT, to transform without
#: cancellation only those that can matter (:func:`_support`).
_SUPPORTED = 256
#: :func:`_support` reads a law's transform on at least this many times its atoms' span of points.
_SUPPORT_SPAN = 4
#: Tilted only when the untilted transforms' round-off would exceed this share of the target delta.
_ROUND_SHARE = 1e-4
#: The Bernstein levels ``eta`` of the lower curve (module doc).
_ETAS = 10.0 ** (-np.arange(4, 601) / 2.0)
#: ``log(1 / delta)`` at which the lower laws' garbling is chosen when the target's is not given (:func:`_score`).
_LEVEL = math.log(1e6)
#: Points up to twice the target at which the lower curve is also read (:class:`_LatticeLower`).
_ANCHORS = 17
#: Estimated seconds per grid point and log2(points) of one composition (transforms, the window's spectra and
#: the curve's sums), measured on a loaded 2-core machine with a margin; and per cell of a database's lattice.
#: Only decide whether a step fits in the time left.
_POINT_SECONDS, _CELL_SECONDS = 6e-8, 2e-7


@dataclass(frozen=True)
class _Part:
    """``count`` databases of one (mu, rate) on the lattice of width ``h`` (module doc): per direction
    (remove, add), the spread laws (``upper``) and the garbled cells' lattice laws (``lower``), the lattice's
    offset ``phi`` and, per direction, the mean, variance and largest deviation (below for remove, above for
    add) of one copy's rounding ``o`` (under P for remove, under Q for add)."""

    count: int
    phi: float
    #: The lower laws' own offset (:func:`_phased_cells`; ``phi`` when on the same lattice).
    phi_low: float
    upper: tuple[batch._Law, batch._Law]
    lower: tuple[batch._Law, batch._Law]
    mean: tuple[float, float]
    variance: tuple[float, float]
    reach: tuple[float, float]
    #: Per direction, the mass of the stray cells left out of ``mean``, ``variance`` and ``reach``
    #: (:func:`_roundings`).
    stray: tuple[float, float]
    cells: int
    #: ``log E[e^(t L)]`` of one copy of ``upper`` and ``lower``, per direction, at the orders :data:`_SIGNED`
    #: (:func:`_log_mgf`).
    upper_mgf: tuple[NDArray[np.float64], NDArray[np.float64]]
    lower_mgf: tuple[NDArray[np.float64], NDArray[np.float64]]


@functools.lru_cache(maxsize=64)
def _clamp(ratio: GaussianRatio, tail: float) -> float:
    """``ratio.clamp(tail)``, kept: one question reads it for the window, each lattice and each estimate."""
    return ratio.clamp(tail)


def _floor_index(x: NDArray[np.float64], h: float) -> NDArray[np.float64]:
    """``floor(x / h)``, corrected so that ``a h <= x < (a + 1) h`` in floating point."""
    a = np.floor(x / h)
    a = np.where(a * h > x, a - 1.0, a)
    return np.where((a + 1.0) * h <= x, a + 1.0, a)


def _law(index: NDArray[np.int64], mass: NDArray[np.float64], count: int, infinite: float,
         upper: bool) -> batch._Law:
    """The masses summed by lattice index; masses below :data:`~gce.accounting.batch.TINY_MASS` (subnormal
    ones slow every product) charged at infinite loss above, dropped below."""
    low = int(index.min())
    summed = np.bincount(index - low, weights=mass)
    keep = np.flatnonzero(summed > batch.TINY_MASS)
    cut = float(summed.sum() - summed[keep].sum()) if upper else 0.0
    return batch._Law(keep.astype(np.int64) + low, summed[keep], int(count), min(infinite + max(cut, 0.0), 1.0))


def _lattice_part(ratio: GaussianRatio, rate: float, count: int, h: float, tail: float, low_tail: float,
                  below: bool = True, level: float = _LEVEL) -> _Part:
    """One database kind's laws on the lattice ``{a h + phi}`` (module doc, "The lattice").

    The grid of ``V`` runs from ``1 - r`` (``phi`` puts a lattice point there) to the clamp; where ``1 - r`` is
    far below the Q-mass (rates near 1), from the lattice point below ``V`` at Q's lower tail instead
    (``Q(W < w) = low_tail``), with ``V = 0`` (``W = -(1 - r) / r``) as the spread's lowest point: the Q-mass
    the spread moves there has infinite loss in the add direction (charged), none in the remove direction.
    ``below``: with the lower laws (a provisional lattice reads only the upper ones: its lower laws are empty
    and their statistics 0). ``level``:
    ``log(1 / delta)`` of the target, where the garbling of the lower laws is chosen (:func:`_score`)."""
    top = math.log1p(rate * (_clamp(ratio, tail) - 1.0))
    w_low = math.exp(ratio.mu * float(special.ndtri(low_tail)) - 0.5 * ratio.mu**2)
    bottom = math.log1p(-rate) if rate < 1.0 else -math.inf
    v_low = math.log1p(rate * (w_low - 1.0))
    clamped = rate >= 1.0 or v_low - bottom > 0.25 * (top - bottom)
    if clamped:
        a_lo, phi = math.floor(v_low / h), 0.0
    else:
        a_lo = math.floor(bottom / h)
        phi = bottom - a_lo * h
    a_hi = math.ceil((top - phi) / h)
    if a_hi - a_lo + 2 > batch.GRID_LIMIT:
        raise NumericalLimitError(f"one database's lattice of width {h:g} would hold {a_hi - a_lo + 2:,} "
                                  f"cells (limit {batch.GRID_LIMIT:,})")
    a = np.arange(a_lo, a_hi + 1, dtype=np.int64)
    loss = a * h + phi
    values = np.exp(loss)
    w = (np.expm1(loss) + rate) / rate
    if clamped:
        grid = np.concatenate(([-(1.0 - rate) / rate], w))
    else:
        grid = w
        grid[0] = 0.0  # V = 1 - r exactly
    q, p = ratio.cells(np.concatenate(([0.0], grid[1:], [np.inf])))  # cells [g_j, g_{j+1}), the last [B, inf)
    width = np.diff(grid)
    spread = np.zeros(grid.size)
    spread[:-1] += (grid[1:] * q[:-1] - p[:-1]) / width   # kept at the cell's left end
    spread[1:] += (p[:-1] - grid[:-1] * q[:-1]) / width   # moved to its right end
    spread[-1] += q[-1]
    spread = np.maximum(spread, 0.0)
    own = slice(1, None) if clamped else slice(None)
    excess = rate * ratio.excess(float(grid[-1]))
    upper = (_law(a, values * spread[own], count, excess, True),
             _law(-a, spread[own], count, float(spread[0]) if clamped else 0.0, True))
    upper_mgf = tuple(_log_mgf(law, h, _SIGNED) for law in upper)
    if not below:  # (a provisional lattice: its upper laws only)
        nothing = batch._Law(np.zeros(0, dtype=np.int64), np.zeros(0), int(count), 0.0)
        return _Part(int(count), phi, phi, upper, (nothing, nothing), (0.0, 0.0), (0.0, 0.0), (0.0, 0.0),
                     (0.0, 0.0), int(grid.size), upper_mgf, (np.zeros(0), np.zeros(0)))
    # Below: the cells' own losses (the bottom cell of a clamped grid left out: its loss lowered to -inf).
    mixed = (1.0 - rate) * q + rate * p
    keep = (q > 0.0) & (mixed > 0.0)
    keep[0] &= not clamped
    under_p, under_q = mixed[keep], q[keep]
    with np.errstate(divide="ignore"):
        cell_loss = np.log(under_p) - np.log(under_q) - phi
    index = _floor_index(cell_loss, h)
    offset = cell_loss - index * h
    # the cells relabelled onto the bulk's rounding (module doc, "Lower"), on this lattice and on the one whose
    # phase puts the bottom cell's loss at the bulk's rounding: the garbling whose lower curve is estimated the
    # highest (each is a garbling of the true pair)
    base = (under_p, under_q, cell_loss, index, offset)
    candidates = [(_level(*base, h, phi), phi)]
    phased = None if clamped else _phased_cells(ratio, rate, h, float(grid[-1]), _bulk_rounding(under_p, offset))
    if phased is not None:
        cells, phi_low = phased
        candidates.append((_level(*cells, h, phi_low, _bulk_rounding(cells[0], cells[4])), phi_low))
    best, score = None, -math.inf
    for candidate, phi_c in candidates:
        stats = (_roundings(candidate[0], candidate[4], low_tail, True),
                 _roundings(candidate[1], candidate[4], low_tail, False))
        value = _score(candidate, stats, h, count, level, phi_c)
        if best is None or value > score:
            best, score, chosen, phi_low = candidate, value, stats, phi_c
    under_p, under_q, cell_loss, index, offset = best
    index = index.astype(np.int64)
    (mean_p, var_p, reach_p, stray_p), (mean_q, var_q, reach_q, stray_q) = chosen
    mean, variance, reach, stray = (mean_p, mean_q), (var_p, var_q), (reach_p, reach_q), (stray_p, stray_q)
    lower = (_law(index, under_p, count, 0.0, False), _law(-index, under_q, count, 0.0, False))
    lower_mgf = tuple(_log_mgf(law, h, _SIGNED) for law in lower)
    return _Part(int(count), phi, phi_low, upper, lower, mean, variance, reach, stray, int(grid.size),
                 upper_mgf, lower_mgf)


def _roundings(w: NDArray[np.float64], offset: NDArray[np.float64], budget: float, below: bool
               ) -> tuple[float, float, float, float]:
    """One copy's roundings under the law ``w`` of the cells (module doc, "Lower"): ``(mean, variance, reach,
    stray)`` given that the copy is not in a *stray* cell, with ``stray`` the mass of the stray cells: those
    furthest from the mean on the side read (``below``: offsets under the mean, the remove direction; above
    for add), as many as fit in ``budget`` of mass. Bernstein's inequality then reads the others' roundings
    (their largest deviation ``reach`` on that side: a cell of negligible mass far from the bulk no longer
    sets it), and the event "some copy is in a stray cell", of probability at most ``N stray``, is charged
    to the lower curve's delta. Cells left out of the laws count with the mean (no deviation; they add
    nothing to the lower curve anyway)."""
    # (sums of products, not np.dot: BLAS' threads cost milliseconds a call on a loaded machine)
    mean = float((w * offset).sum() / w.sum())
    side = (mean - offset) if below else (offset - mean)
    order = np.argsort(-side, kind="stable")
    within = np.cumsum(w[order]) <= budget
    stray = 0.0
    if within.any():
        out = order[:int(np.flatnonzero(~within)[0]) if not within.all() else order.size]
        if out.size < w.size:
            kept = np.ones(w.size, dtype=bool)
            kept[out] = False
            stray = float(w[out].sum())
            w, offset = w[kept], offset[kept]
            mean = float((w * offset).sum() / w.sum())
    variance = float((w * (offset - mean) ** 2).sum()) / max(1.0 - stray, 0.5)
    reach = max(mean - float(offset.min()), 0.0) if below else max(float(offset.max()) - mean, 0.0)
    return mean, variance, reach, stray


#: Points and rounds of :func:`_phased_cells`' search for the bottom cell's width (to 64 h / 64^4: 4e-6 h).
_PHASE_POINTS, _PHASE_ROUNDS = 64, 4


def _bulk_rounding(p: NDArray[np.float64], offset: NDArray[np.float64]) -> float:
    """The P-median of the cells' roundings: the bulk's (:func:`_level`)."""
    order = np.argsort(offset, kind="stable")
    weights = np.cumsum(p[order])
    return float(offset[order][min(int(np.searchsorted(weights, 0.5 * weights[-1])), offset.size - 1)])


def _phased_cells(ratio: GaussianRatio, rate: float, h: float, clamp: float, star: float
                  ) -> tuple[tuple[NDArray[np.float64], ...], float] | None:
    """Cells of ``V`` for the lower laws on a lattice of their own phase (module doc, "Lower"): the bottom cell
    ``[1 - r, (1 - r) e^x)`` with ``x`` such that its loss lies ``h - star`` below its top, a lattice point
    (its rounding is then the bulk's ``star``: the loss's density is steep there, so that a cell ``h`` wide
    from ``1 - r`` has its loss far from the bulk's rounding and, at small rates, much of the mass), then
    cells ``h`` wide up to the clamp and ``[clamp, inf)``. ``x`` where ``x - loss`` (0 at ``x = 0``) first
    reaches ``h - star``, on grids of :data:`_PHASE_POINTS` points, each within a step of the last; None when
    it does not below ``64 h``. Returns the cells as
    :func:`_level` takes them and the lattice's offset ``phi``."""
    bottom = math.log1p(-rate)
    ratio_bottom = rate / (1.0 - rate)

    def gaps(x: NDArray[np.float64]) -> NDArray[np.float64]:  # x less the bottom cell's loss above 1 - r
        w = (1.0 - rate) * np.expm1(x) / rate
        q, p = ratio.cells(np.concatenate(([0.0], w)))
        q, p = np.cumsum(q), np.cumsum(p)  # the cells [0, w)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(q > 0.0, x - np.log1p(ratio_bottom * p / np.where(q > 0.0, q, 1.0)), x)

    goal = h - star
    lo, hi = 0.0, 64.0 * h
    for _ in range(_PHASE_ROUNDS):  # the first point where the gap reaches the goal, on ever finer grids
        x = np.linspace(lo, hi, _PHASE_POINTS + 1)[1:]
        reached = np.flatnonzero(gaps(x) >= goal)
        if not reached.size:
            return None
        k = int(reached[0])
        lo, hi = (float(x[k - 1]) if k else lo), float(x[k])
    start = bottom + hi
    top = math.log1p(rate * (clamp - 1.0))
    steps = max(int(math.ceil((top - start) / h)), 0)
    if steps + 3 > batch.GRID_LIMIT:
        return None
    edges_v = start + h * np.arange(steps + 1)
    w = (1.0 - rate) * np.expm1(edges_v - bottom) / rate
    q, p = ratio.cells(np.concatenate(([0.0], w, [np.inf])))
    mixed = (1.0 - rate) * q + rate * p
    keep = (q > 0.0) & (mixed > 0.0)
    phi = start - math.floor(start / h) * h
    under_p, under_q = mixed[keep], q[keep]
    with np.errstate(divide="ignore"):
        loss = np.log(under_p) - np.log(under_q) - phi
    index = _floor_index(loss, h)
    return (under_p, under_q, loss, index, loss - index * h), phi


#: Cells whose P- or Q-mass is below this share of the largest are left as they are by :func:`_level` (their
#: roundings weigh nothing in the variance).
_LEVEL_MASS = 1e-9


def _level(p: NDArray[np.float64], q: NDArray[np.float64], loss: NDArray[np.float64],
           index: NDArray[np.float64], offset: NDArray[np.float64], h: float, phi: float,
           star: float | None = None) -> tuple[NDArray[np.float64], ...]:
    """The garbled cells relabelled so that each one's rounding is the bulk's ``o*`` (the P-median rounding;
    module doc, "Lower"), cell by cell upwards: a cell rounded below ``o*`` takes a share of the next cell's
    outcomes, one rounded above a share of the (relabelled) cell below's, the share solving
    ``log(P / Q) = a h + phi + o*`` for the cell's own ``a``; a share above 1 is not taken (the cell keeps its
    rounding). Each step relabels the outcomes of one cell with a probability (a post-processing), so the
    result is a garbling of the true pair whatever the shares' round-off: the roundings are read again from
    its masses. Cells whose masses are below :data:`_LEVEL_MASS` of the largest are left as they are."""
    if p.size < 2:
        return p, q, loss, index, offset
    if star is None:
        star = _bulk_rounding(p, offset)
    heavy = np.flatnonzero((p > _LEVEL_MASS * p.max()) | (q > _LEVEL_MASS * q.max()))
    first, last = int(heavy[0]), int(heavy[-1])
    # (plain floats: numpy's scalars cost microseconds an operation)
    lo, hi = max(first - 1, 0), min(last + 2, p.size)
    lp, lq = p[lo:hi].tolist(), q[lo:hi].tolist()
    fp, fq = list(lp), list(lq)  # the cells' own masses (the one above is untouched when a cell takes from it)
    goal = np.exp(index[lo:hi] * h + star + phi)
    goals = goal.tolist()
    raise_ = (offset[lo:hi] < star).tolist()
    n = hi - lo
    # a raised cell's room in the cell above, whose own masses it reads (as the loop would: the same operations)
    rooms = (p[lo + 1:hi] - goal[:-1] * q[lo + 1:hi]).tolist() + [0.0]
    for c in range(first - lo, min(last + 1, p.size) - lo):
        e = goals[c]
        if raise_[c]:
            if c + 1 >= n:
                continue
            room = rooms[c]
            need = e * lq[c] - lp[c]
            if room > 0.0 and 0.0 <= need <= room:
                f = need / room
                lp[c] += f * fp[c + 1]
                lq[c] += f * fq[c + 1]
                g = 1.0 - f
                lp[c + 1] *= g
                lq[c + 1] *= g
        elif c > 0:
            below_p, below_q = lp[c - 1], lq[c - 1]
            room = e * below_q - below_p
            need = lp[c] - e * lq[c]
            if room > 0.0 and 0.0 <= need <= room:
                f = need / room
                lp[c] += f * below_p
                lq[c] += f * below_q
                g = 1.0 - f
                lp[c - 1] = below_p * g
                lq[c - 1] = below_q * g
    lp = np.concatenate((p[:lo], lp, p[hi:]))
    lq = np.concatenate((q[:lo], lq, q[hi:]))
    keep = (lp > 0.0) & (lq > 0.0)
    lp, lq = lp[keep], lq[keep]
    new_loss = np.log(lp) - np.log(lq) - phi
    new_index = _floor_index(new_loss, h)
    new_offset = new_loss - new_index * h
    return lp, lq, new_loss, new_index, new_offset


def _score(cells: tuple[NDArray[np.float64], ...], stats, h: float, count: int, level: float,
           phi: float) -> float:
    """An estimate (never a bound) of how high the lower curve of ``count`` copies of the garbled ``cells`` reads
    at the level ``level = log(1 / delta)``, to choose among garblings: per direction, the composed loss's
    mean and ``z = sqrt(2 level)`` standard deviations (a garbling lowers both), less Bernstein's ``t``
    (:func:`_bernstein`) for its roundings, summed over the two directions (``loss`` less ``phi``)."""
    p, q, loss, index, offset = cells
    z = math.sqrt(2.0 * level)
    total = 0.0
    for w, sign, (_, variance, reach, _) in ((p, 1.0, stats[0]), (q, -1.0, stats[1])):
        keep = w > batch.TINY_MASS  # (subnormal masses slow every product)
        w, x = w[keep], sign * (loss[keep] + phi)
        mass = w.sum()
        mean = float((w * x).sum() / mass)
        spread = float((w * (x - mean) ** 2).sum() / mass)
        c = reach * level / 3.0
        t = c + math.sqrt(c * c + 2.0 * count * variance * level)
        total += count * mean + z * math.sqrt(count * spread) - t
    return total


def _log_mgf(law: batch._Law, h: float, t: NDArray[np.float64]) -> NDArray[np.float64]:
    """An upper bound on ``log E[e^(t L); L finite]`` of one copy at each order ``t``: the atoms summed in blocks
    whose width grows by :data:`_MGF_BLOCK` of their distance from the heaviest atom, each block at its
    highest loss for ``t > 0`` and its lowest for ``t < 0`` (exact near the mass, cheap in the tails)."""
    index, mass = law.index, law.mass
    if not index.size:
        return np.full(t.shape, -np.inf)
    distance = (index - index[int(np.argmax(mass))]).astype(float)
    block = np.sign(distance) * np.floor(np.log1p(np.abs(distance)) / math.log1p(_MGF_BLOCK))
    starts = np.concatenate(([0], np.flatnonzero(np.diff(block)) + 1))
    ends = np.concatenate((starts[1:], [index.size])) - 1
    log_mass = np.log(np.add.reduceat(mass, starts))
    out = np.empty(t.shape)
    for side, x in ((t > 0, index[ends] * h), (~(t > 0), index[starts] * h)):  # (each side its own ends)
        if side.any():
            terms = t[side][:, None] * x[None, :] + log_mass[None, :]
            top = terms.max(axis=1)
            out[side] = np.log(np.exp(terms - top[:, None]).sum(axis=1)) + top
    return out


def _chernoff(k: NDArray[np.float64], t: NDArray[np.float64], log_tail: float, above: bool) -> float:
    """The loss beyond which the total's mass is at most ``e^log_tail`` by Chernoff's inequality
    (``P(S > x) <= E[e^(t S)] e^(-t x)``, t > 0; below with t < 0): inf (-inf) when no order bounds it."""
    side = t > 0 if above else t < 0
    with np.errstate(over="ignore", invalid="ignore"):
        x = (k[side] - log_tail) / t[side]
    x = x[np.isfinite(x)]
    if not x.size:
        return math.inf if above else -math.inf
    return float(x.min()) if above else float(x.max())


def _tilt(k: NDArray[np.float64], target: float) -> float:
    """The Chernoff order of the total's upper tail at ``target`` (the ``theta >= 0`` minimising
    ``log E[e^(theta S)] - theta target`` over :data:`_ORDERS`, ``k`` the total's log-MGF at :data:`_SIGNED`):
    where the tilted total is centred."""
    exponent = k[:_ORDERS.size] - _ORDERS * target
    if not np.any(np.isfinite(exponent)):
        return 0.0
    best = int(np.nanargmin(np.where(np.isfinite(exponent), exponent, np.inf)))
    return float(_ORDERS[best]) if exponent[best] < 0.0 else 0.0


@dataclass(frozen=True)
class _Composed:
    """One direction's composition on the lattice, untilted: ``curve`` (losses shifted by ``shift``), the
    tilted transform's round-off ``round_off`` and its mass above the window ``tail`` (both untilted at
    ``eps`` by :meth:`allowance`), the untilted mass the upper curve loses (``above``: above the window, and
    below it when tilted, moved up by the transform but scaled down by the untilt) and the untilted mass below
    the window (``below``: wrapped into it, at most that much)."""

    curve: DiscreteLossCurve
    theta: float
    log_scale: float
    shift: float
    round_off: float
    tail: float
    above: float
    below: float
    size: int

    def allowance(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        """The bound on what the tilted transform's round-off and the tilted mass wrapped from above the window
        move delta by at each ``eps``, untilted (module doc, "Composition, tilted")."""
        if self.theta == 0.0:
            return np.full(np.shape(eps), self.round_off + self.tail)
        with np.errstate(over="ignore"):
            scale = np.exp(np.minimum(self.log_scale - self.theta * (eps - self.shift), 700.0))
        return (2.0 * self.round_off + self.tail) * scale


def _support(law: batch._Law, size: int, k: NDArray[np.int64], magnitude: NDArray[np.float64] | None
             ) -> NDArray[np.bool_]:
    """Which of the frequencies ``k`` can matter once ``law``'s transform is raised to its power and multiplied
    by transforms of the given ``magnitude`` (None: 1): where ``magnitude |F|^count`` may exceed
    :data:`~gce.accounting.batch.PRUNE`. The others are pruned by :func:`_compose` anyway: a composition of many
    copies at a small rate keeps a few dozen of its thousands of frequencies (its pmf is smooth on the
    lattice), which are then the only ones transformed without cancellation.

    ``|F|`` is bounded from one plain FFT of the law's atoms on ``M`` points, ``M`` at least
    :data:`_SUPPORT_SPAN` times their span (no folding: the exact transform at ``2 pi j / M``), plus that
    FFT's error (``8 eps log2(M) sqrt(M)`` times the masses' L2 norm: an FFT's error in the L2 norm of the
    whole transform bounds each frequency's) and, between two of its frequencies, ``|F|``'s Lipschitz
    constant ``sum_a m_a |a - c|`` times half their distance; on the window's own points when that is no
    fewer."""
    low = int(law.index.min())
    span = int(law.index.max()) - low + 1
    points = _fft.next_fast_len(max(_SUPPORT_SPAN * span, 64), real=True)
    if points >= size:
        points, folded = size, np.bincount(law.index % size, weights=law.mass, minlength=size)
    else:
        folded = np.bincount(law.index - low, weights=law.mass, minlength=points)
    plain = np.abs(_fft.rfft(folded))
    plain += 8.0 * np.finfo(float).eps * max(math.log2(points), 1.0) * math.sqrt(points) \
        * math.sqrt(float((law.mass * law.mass).sum()))
    if points == size:
        top = plain[k]
    else:  # the largest |F| between the two of the M points around each frequency
        centre = float((law.mass * law.index).sum() / law.mass.sum())
        slope = float((law.mass * np.abs(law.index - centre)).sum())  # (per radian)
        ends = np.concatenate((plain, plain[-2:0:-1] if points % 2 == 0 else plain[-1:0:-1]))
        between = np.maximum(ends[:-1], ends[1:]) + slope * math.pi / points
        top = between[(k * points) // size]
    with np.errstate(divide="ignore"):
        bound = law.count * np.log(np.minimum(top + 1e-300, 1.0))
        if magnitude is not None:
            bound += np.log(magnitude)
    return bound > math.log(batch.PRUNE)


def _shift_minus_one(index: NDArray[np.int64], mass: NDArray[np.float64], size: int, k: NDArray[np.int64]
                     ) -> NDArray[np.complex128]:
    """``sum_a m_a (w^(a k) - 1)`` without cancellation, as :func:`gce.accounting.batch._shift_minus_one` forms
    it (``-2 sin^2(phi / 2) - i sin(phi)``, ``phi`` reduced to ``[-pi, pi)``), the sines taken directly: for
    few terms, cheaper than the tables of a transform's every root."""
    j = (index[:, None] % size * k[None, :]) % size
    j = np.where(j >= size - size // 2, j - size, j)
    phi = 2.0 * np.pi * j / size
    half = np.sin(phi / 2.0)
    return -(mass @ (2.0 * half * half)) - 1j * (mass @ np.sin(phi))


def _spectrum_power(law: batch._Law, size: int, k: NDArray[np.int64], budget: float
                    ) -> tuple[NDArray[np.complex128], float]:
    """``law``'s transform to the power ``count`` at the frequencies ``k``, and its round-off (the L2 norm of
    the part transformed by an FFT times the power, :func:`_round_off`).

    As :func:`gce.accounting.batch._log_spectrum`: ``log(1 + D)``, ``D = sum_a m_a (w^(a k) - 1)``, formed
    without cancellation, the heaviest atoms directly and the rest by an FFT; here the heaviest are as few as
    keep the rest's round-off, times the power, within ``budget`` (at most :data:`_DIRECT_TERMS` terms in
    all, at least :data:`~gce.accounting.batch._FEW_ATOMS` atoms)."""
    if law.count == 1:
        return batch._spectrum(law, size, k, _tables(size)[0]), 0.0
    order = np.argsort(-law.mass, kind="stable")
    # the rest's L2 norm after the j heaviest, for every j
    rest = np.sqrt(np.maximum(np.cumsum((law.mass[order] ** 2)[::-1])[::-1], 0.0))
    scale = 8.0 * np.finfo(float).eps * max(math.log2(size), 1.0) * law.count
    most = min(max(batch._FEW_ATOMS, _DIRECT_TERMS // max(k.size, 1)), law.mass.size)
    heavy = batch._FEW_ATOMS
    while heavy < most and scale * rest[heavy] > budget:
        heavy *= 2
    heavy = min(heavy, most)
    direct, others = order[:heavy], order[heavy:]
    if direct.size * k.size <= size:  # (few terms: their sines directly, no tables of the size)
        d = _shift_minus_one(law.index[direct], law.mass[direct], size, k)
    else:
        d = batch._shift_minus_one(law.index[direct], law.mass[direct], size, k, _tables(size)[1])
    d -= 1.0 - math.fsum(law.mass.tolist())  # (math.fsum reads a list of floats faster than an array)
    norm = 0.0
    if others.size:
        folded = np.bincount(law.index[others] % size, weights=law.mass[others], minlength=size)
        d += _fft.rfft(folded)[k] - math.fsum(law.mass[others].tolist())
        norm = float(rest[heavy])
    with np.errstate(divide="ignore"):
        real = 0.5 * np.log1p(2.0 * d.real + d.real**2 + d.imag**2)
    log_spec = real + 1j * np.arctan2(d.imag, 1.0 + d.real)
    return np.exp(law.count * log_spec.real + 1j * (law.count * log_spec.imag)), scale * norm


def _round_off(laws: Sequence[batch._Law], size: int) -> float:
    """The transforms' round-off allowance of composing ``laws`` on ``size`` points untilted (as
    :func:`gce.accounting.batch._log_spectrum` forms them: its heaviest atoms summed directly, the rest by an
    FFT whose error a power of ``count`` multiplies), read from the laws before any transform."""
    heavy = max(batch._FEW_ATOMS, _DIRECT_TERMS // (size // 2 + 1))
    powered = 0.0
    for law in laws:
        if law.count > 1 and law.mass.size > heavy:
            rest = np.sort(law.mass)[:-heavy]
            powered += law.count * math.sqrt(float((rest * rest).sum()))  # (not np.linalg.norm: BLAS)
    return (batch.ABSOLUTE_ROUND_OFF * math.sqrt(size) + batch.PRUNE * size
            + 8.0 * np.finfo(float).eps * max(math.log2(size), 1.0) * powered)


@functools.lru_cache(maxsize=4)
def _tables(size: int) -> tuple[NDArray[np.complex128], tuple[NDArray[np.float64], NDArray[np.float64]]]:
    """The roots of unity of a transform of ``size`` points and their shift tables
    (:func:`gce.accounting.batch._shift_tables`), shared by the compositions of one lattice (read only)."""
    table = np.exp(-2j * np.pi * np.arange(size) / size)
    tables = batch._shift_tables(size)
    for array in (table, *tables):
        array.flags.writeable = False
    return table, tables


def _compose(laws: Sequence[batch._Law], k_plain: NDArray[np.float64], h: float, theta: float, shift: float,
             target: float, at: float) -> _Composed:
    """The composition of ``laws`` (one direction), on a window of its own, tilted by ``e^(theta s)`` when the
    untilted transform's round-off would exceed :data:`_ROUND_SHARE` of ``target`` (the delta asked, at the
    epsilon ``at`` read on the lattice, before ``shift``), then untilted (module doc, "Composition, tilted");
    ``k_plain`` is the total's log-MGF at :data:`_SIGNED`.

    Raises
    ------
    NumericalLimitError
        The window exceeds :data:`~gce.accounting.batch.GRID_LIMIT` points.
    """
    hard_lo = sum(law.count * int(law.index[0]) for law in laws if law.index.size)
    hard_hi = sum(law.count * int(law.index[-1]) for law in laws if law.index.size)
    t = _SIGNED
    # the mass left below the window, charged above: at most a share of the target (1e-15 was all of a target
    # of 1e-15, and the upper end infinite)
    tail_below = min(batch.TAIL_BELOW, _ROUND_SHARE * target) if target > 0.0 else batch.TAIL_BELOW
    tail_above = min(batch.TAIL, _ROUND_SHARE * target) if target > 0.0 else batch.TAIL  # (likewise, above)
    x_lo = _chernoff(k_plain, t, math.log(tail_below), above=False)
    lo = hard_lo if not x_lo / h > hard_lo else min(math.floor(x_lo / h), hard_hi)
    below = 0.0 if lo == hard_lo else tail_below
    x_hi = _chernoff(k_plain, t, math.log(tail_above), above=True)
    hi = hard_hi if not x_hi / h < hard_hi else max(math.ceil(x_hi / h), lo)
    plain = _round_off(laws, _fft.next_fast_len(hi - lo + 1, real=True))
    if theta > 0.0:
        # the least order (up to the Chernoff one) whose untilted round-off at the target is within the share:
        # the least distortion of the curve below the target (0: untilted, when that is accurate enough)
        bound = np.concatenate(([0.0], np.log(2.0 * plain) + k_plain[:_ORDERS.size] - _ORDERS * at))
        orders = np.concatenate(([0.0], _ORDERS))
        fits = np.flatnonzero((bound <= math.log(_ROUND_SHARE * target)) & (orders <= theta))
        if plain <= _ROUND_SHARE * target:
            theta = 0.0
        elif fits.size:
            theta = float(orders[fits[0]])
    tilted, log_scale, dropped = [], 0.0, 0.0
    for law in laws:
        log_mass = np.log(law.mass) + theta * h * law.index
        top = float(log_mass.max())  # (log-sum-exp: scipy's costs a quarter of a millisecond a call)
        log_z = top + math.log(float(np.exp(log_mass - top).sum()))
        mass = np.exp(log_mass - log_z)
        keep = mass > batch.TINY_MASS  # (the rest, at most TINY_MASS an atom, counted with the round-off)
        dropped += law.count * float(mass[~keep].sum())
        tilted.append(batch._Law(law.index[keep], mass[keep], law.count, 0.0))
        log_scale += law.count * log_z  # (of the finite parts: each tilted law's finite mass is 1)
    if theta > 0.0:  # the tilted total's own upper tail: its log-MGF at t' - theta is K(t') - K(theta)
        higher = _ORDERS > theta
        x_hi = _chernoff(k_plain[:_ORDERS.size][higher] - log_scale, _ORDERS[higher] - theta, math.log(tail_above),
                         above=True)
        hi = hard_hi if not x_hi / h < hard_hi else max(math.ceil(x_hi / h), lo)
    tail_hi = 0.0 if hi == hard_hi else tail_above
    if max(abs(lo), abs(hi)) >= 2**62:
        raise NumericalLimitError(f"a Poisson composition's window reaches lattice index {max(abs(lo), abs(hi)):.3g}")
    size = _fft.next_fast_len(hi - lo + 1, real=True)
    if size > batch.GRID_LIMIT:
        raise NumericalLimitError(f"a Poisson composition would span {size:,} lattice points (limit "
                                  f"{batch.GRID_LIMIT:,})")
    k = np.arange(size // 2 + 1, dtype=np.int64)
    acc = np.ones(k.size, dtype=complex)
    start = -lo % size  # the window shifted to start at lo: its transform formed at the frequencies kept
    powered = 0.0
    # each law's share of the round-off allowed at the target (tilted: what untilts to it there)
    budget = _ROUND_SHARE * target / max(len(tilted), 1)
    if theta > 0.0:
        budget *= 0.5 * math.exp(min(theta * at - log_scale, 700.0))
    for first, law in zip([True] + [False] * (len(tilted) - 1), tilted):
        if law.count > 1 and k.size > _SUPPORTED:  # (only the frequencies that can matter are transformed)
            keep = _support(law, size, k, None if first else np.abs(acc))
            k, acc = k[keep], acc[keep]
        spectrum, rest = _spectrum_power(law, size, k, budget)
        acc = acc * spectrum
        powered += rest
        keep = np.abs(acc) > batch.PRUNE
        k, acc = k[keep], acc[keep]
    full = np.zeros(size // 2 + 1, dtype=complex)
    full[k] = acc * np.exp(-2j * np.pi * (start * k % size) / size)
    pmf = np.maximum(_fft.irfft(full, n=size), 0.0)
    round_off = batch.ABSOLUTE_ROUND_OFF * math.sqrt(size) + batch.PRUNE * size + dropped + powered
    log_survival = sum(law.count * math.log1p(-law.infinite) if law.infinite < 1 else -math.inf for law in laws)
    infinite = -math.expm1(log_survival)
    # descending losses (the curve's sort is a pass), those above 0 only (the curve reads no other)
    from_zero = min(max(math.floor(-shift / h) - lo, 0), size) if math.isfinite(shift / h) else 0
    positive = (np.flatnonzero(pmf[from_zero:] > 0) + from_zero)[::-1]
    s = (lo + positive) * h
    with np.errstate(divide="ignore"):
        # (no entry above 1: far below the tilt's centre the untilted round-off can say more, never the truth)
        curve = _LatticeCurve(s + shift, np.minimum(np.log(pmf[positive]) + log_scale - theta * s, 0.0),
                              infinite_mass=infinite)
    # Untilted: the mass above the window is at most tail_hi Z^N e^(-theta hi h). The cyclic transform wraps
    # it below: where it lands above eps it is untilted by at most Z^N e^(-theta eps) (:meth:`allowance`).
    # Mass below the window wraps up, untilted by a smaller factor than its own: at most its mass, and lost
    # above when tilted (moved up, but scaled down).
    lost = tail_hi * math.exp(min(log_scale - theta * h * hi, 700.0)) + (below if theta > 0.0 else 0.0)
    return _Composed(curve, theta, log_scale, shift, round_off, tail_hi, lost, below, size)


#: :func:`_log_cumsum` sums in linear scale the terms within this of the largest (``e^-600``: far from
#: underflow), and in log scale the ones before the first of them.
_LINEAR_RANGE = 600.0


def _log_cumsum(c: NDArray[np.float64]) -> NDArray[np.float64]:
    """``log(cumsum(e^c))`` (as ``np.logaddexp.accumulate``, to round-off): the leading terms below
    ``e^-600`` times the largest in log scale, the rest in linear scale relative to the largest (a term
    that underflows there is below ``e^-145`` times the sum already reached)."""
    if not c.size:
        return c.copy()
    top = float(c.max())
    if not math.isfinite(top):
        return np.logaddexp.accumulate(c)
    head = int(np.argmax(c >= top - _LINEAR_RANGE))
    out = np.empty_like(c)
    seed = 0.0
    if head:
        out[:head] = np.logaddexp.accumulate(c[:head])
        seed = math.exp(float(out[head - 1]) - top)  # (0 where it underflows)
    with np.errstate(under="ignore"):
        terms = np.exp(c[head:] - top)
    terms[0] += seed
    out[head:] = np.log(np.cumsum(terms)) + top
    return out


class _LatticeCurve(DiscreteLossCurve):
    """A composition's pmf on the lattice as a :class:`~gce.accounting.curves.DiscreteLossCurve`, its losses
    given descending and finite: built without a sort, its cumulative sums in linear passes
    (:func:`_log_cumsum`); its readings are the parent's."""

    def __init__(self, loss: NDArray[np.float64], log_p: NDArray[np.float64], infinite_mass: float = 0.0):
        keep = (loss > 0.0) & (log_p > -np.inf)  # L <= 0 never contributes for eps >= 0
        self._loss = loss[keep]
        log_p = log_p[keep]
        self._log_a = _log_cumsum(log_p)
        with np.errstate(over="ignore"):
            self._log_b = _log_cumsum(log_p - self._loss)
        self.delta_floor = float(min(max(infinite_mass, 0.0), 1.0))
        self._kept()


class _LatticeUpper(PrivacyCurve):
    """The upper curve: the larger of the two directions' spread compositions, each raised by its round-off
    allowance and the mass lost above its window (as :class:`~gce.accounting.batch.BatchCurve`)."""

    def __init__(self, parts: Sequence[_Composed], lower: "_LatticeLower | None" = None):
        self._parts = tuple(parts)
        #: The certified lower curve per direction (:meth:`_LatticeLower.direction_delta`), as the batch
        #: engine's :class:`~gce.accounting.batch.LawCurve` has it (:mod:`.uniform_prior` reads both).
        self.lower = lower
        if lower is not None:
            lower.uppers = self._parts
        floor = max(p.curve.delta_floor + p.above for p in self._parts)
        self.delta_floor = min(floor * (1.0 + batch.ROUND_OFF), 1.0)
        self._memo: dict[float, float] = {}
        #: Per target, each direction's own inverse (:meth:`_inverse`), which :class:`_LatticeLowerBound` reads.
        self._own: dict[float, list[float]] = {}

    def _delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.minimum(np.max([self._one(p, eps) for p in self._parts], axis=0), 1.0)

    @staticmethod
    def _one(part: _Composed, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.atleast_1d(part.curve.delta(eps)) * (1.0 + batch.ROUND_OFF) + part.above + part.allowance(eps)

    def direction(self, which: int) -> PrivacyCurve:
        """The upper curve of one direction alone (0: remove, P||Q; 1: add, Q||P), a valid bound on it."""
        return _LatticeDirection(self._parts[which])

    def _epsilon(self, d: NDArray[np.float64]) -> NDArray[np.float64]:
        out = np.empty_like(d)
        for i, target in enumerate(d):
            key = float(target)
            if key in self._memo:  # (a bracket reads its upper end twice)
                out[i] = self._memo[key]
                continue
            if target >= 1.0:
                out[i] = 0.0
            elif not at_or_above(target, self.delta_floor):
                out[i] = math.inf
            else:  # each direction's own inverse at the target less its allowances there, then checked
                own = [self._inverse(p, float(target)) for p in self._parts]
                self._own[key] = own
                guess = max(own)
                if not (math.isfinite(guess) and self._delta(np.array([guess]))[0] <= target):
                    guess = self._bisect(float(target))
                out[i] = guess
            self._memo[key] = float(out[i])
        return out

    @staticmethod
    def _inverse(part: _Composed, target: float) -> float:
        """About the least eps with ``_one(part, eps) <= target``: the composition's own inverse at the target
        less the allowances, read again where the allowances were read until it holds."""
        guess = float(part.curve.epsilon(max(target - part.above, 0.0) / (1.0 + 2.0 * batch.ROUND_OFF)))
        for _ in range(4):
            if not math.isfinite(guess) or _LatticeUpper._one(part, np.array([guess]))[0] <= target:
                break
            room = target - part.above - float(part.allowance(np.array([guess]))[0])
            again = float(part.curve.epsilon(max(room, 0.0) / (1.0 + 2.0 * batch.ROUND_OFF)))
            guess = max(guess * (1.0 + 1e-12), again)
        return guess


class _LatticeDirection(PrivacyCurve):
    """One direction of :class:`_LatticeUpper` (:meth:`_LatticeUpper.direction`)."""

    def __init__(self, part: _Composed):
        self._part = part
        self.delta_floor = min((part.curve.delta_floor + part.above) * (1.0 + batch.ROUND_OFF), 1.0)

    def _delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.minimum(_LatticeUpper._one(self._part, eps), 1.0)


class _LatticeLower:
    """The certified lower curve (never a guarantee): per direction, the garbled cells' lattice composition
    shifted by its mean rounding and read ``t(eta)`` further, less ``eta`` and its allowances (module doc,
    "Lower"); the largest over the levels ``eta`` and the directions.

    A tilted composition's allowance grows as ``e^(-theta eps)`` below the target, where this reading can fall
    below its value further up; the exact curve is non-increasing, so a lower bound at ``eps' >= eps`` is one
    at ``eps`` too: the reading is also taken at :data:`_ANCHORS` points up to twice the target ``at``, and
    each ``eps`` gets the largest of its own and those at or above it."""

    def __init__(self, parts: Sequence[tuple], at: float):
        # per direction (its composition, or a function composing it the first time it is read; reach; etas)
        self._parts = [list(part) for part in parts]
        self._anchors = np.linspace(0.0, 2.0 * max(at, 0.0), _ANCHORS)
        self._suffix: dict[int, NDArray[np.float64]] = {}
        self._memo: dict[tuple[int, float], NDArray[np.float64]] = {}
        #: The upper curve's directions (:class:`_LatticeUpper` sets them): a direction whose upper delta is at
        #: most a lower reading already made cannot raise the lower curve there, and is not read.
        self.uppers: Sequence[_Composed] | None = None
        #: While the step that made it reads its bracket, a composition beyond the grid limit is raised (the
        #: step fails, as when every composition was made at once); read later, that direction says nothing
        #: (delta 0, a lower bound still).
        self.strict = True

    def part(self, which: int) -> tuple[_Composed | None, NDArray[np.float64], NDArray[np.float64]]:
        """One direction's composition (None: beyond the grid limit), ``t(eta)`` and levels ``eta`` (composed
        when first read)."""
        entry = self._parts[which]
        if callable(entry[0]):
            try:
                entry[0] = entry[0]()
            except NumericalLimitError:
                if self.strict:
                    raise
                entry[0] = None
        return entry[0], entry[1], entry[2]

    def composed(self) -> list[_Composed]:
        """The directions' compositions made so far."""
        return [entry[0] for entry in self._parts if entry[0] is not None and not callable(entry[0])]

    def _raw(self, which: int, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        composed, reach, etas = self.part(which)
        out = np.zeros(eps.size)
        if composed is None:
            return out
        for i, e in enumerate(eps):
            at = e + reach
            raw = (np.atleast_1d(composed.curve.delta(at)) * (1.0 - batch.ROUND_OFF) - composed.below
                   - composed.allowance(at) - etas)
            out[i] = max(float(np.max(raw)), 0.0)
        return out

    def direction_delta(self, which: int, epsilon) -> NDArray[np.float64]:
        eps = np.atleast_1d(np.asarray(epsilon, dtype=float))
        if eps.size == 1:  # the bisections of a bracket ask the same points again
            key = (which, float(eps[0]))
            if key not in self._memo:
                self._memo[key] = self._direction_delta(which, eps)
            return self._memo[key].copy()
        return self._direction_delta(which, eps)

    def _direction_delta(self, which: int, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        if which not in self._suffix:  # the largest reading at the anchors at or above each
            self._suffix[which] = np.maximum.accumulate(self._raw(which, self._anchors)[::-1])[::-1]
        index = np.searchsorted(self._anchors, eps, side="left")
        above = np.where(index < self._anchors.size, self._suffix[which][np.minimum(index, self._anchors.size - 1)],
                         0.0)
        return np.maximum(self._raw(which, eps), above)

    def delta(self, epsilon):
        directions = range(len(self._parts))
        if np.size(epsilon) == 1 and self.uppers is not None and len(self.uppers) == len(self._parts):
            # one epsilon: the directions by their upper delta there, the largest first; one at most the best
            # reading so far cannot raise it (its exact delta, above its reading, lies below) and is not read
            at = np.atleast_1d(np.asarray(epsilon, dtype=float))
            ups = [float(_LatticeUpper._one(part, at)[0]) for part in self.uppers]
            best = 0.0
            for which in sorted(directions, key=lambda d: -ups[d]):
                if ups[which] > best:
                    best = max(best, float(self.direction_delta(which, at)[0]))
            return best if np.ndim(epsilon) == 0 else np.array([best])
        out = np.max([self.direction_delta(which, epsilon) for which in directions], axis=0)
        return float(out[0]) if np.ndim(epsilon) == 0 else out


class _LatticeLowerBound(LowerBound):
    """:class:`~.bracket.LowerBound` of :class:`_LatticeLower` whose ``epsilon`` inverts each direction's
    composition at every level ``eta`` at once (``D(eps + t) - eta - allowances > delta`` holds below
    ``D^-1(delta + eta + allowances) - t``, the allowances read at the upper curve's epsilon, then at the
    reading), the largest kept once checked; the bisection of :class:`~.bracket.LowerBound` only when no
    reading passes its check."""

    def __init__(self, lower: _LatticeLower, upper: PrivacyCurve):
        super().__init__([(_DirectionLower(lower), 0.0, 0.0)])
        self._lower, self._upper = lower, upper
        self._memo: dict[float, float] = {}

    def _epsilon(self, target: float) -> float:
        if target not in self._memo:  # (a bracket is read at its target twice: by the schedule, then the caller)
            self._memo[target] = self._find(target)
        return self._memo[target]

    def _find(self, target: float) -> float:
        start = float(self._upper.epsilon(target))
        if not math.isfinite(start):
            return super()._epsilon(target)
        # the directions by their own upper epsilon, the largest first: one whose certified upper epsilon is at
        # most a reading already certified cannot raise it (its exact epsilon lies below), and is not read
        # (nor composed: a small rate's add direction, well below the remove one)
        ups = getattr(self._upper, "_parts", None)
        if ups is not None and len(ups) == len(self._lower._parts):
            own = self._upper._own.get(target) or [_LatticeUpper._inverse(part, target) for part in ups]
        else:
            own = [math.inf] * len(self._lower._parts)
        best = 0.0
        for which in sorted(range(len(own)), key=lambda d: -own[d]):
            if own[which] <= best and _LatticeUpper._one(ups[which], np.array([own[which]]))[0] <= target:
                continue
            composed, reach, etas = self._lower.part(which)
            if composed is None:
                continue
            guess = start
            for _ in range(3):  # the allowances where the reading lies (until it stays)
                need = (target + etas + composed.below + composed.allowance(guess + reach)) / (1.0 - batch.ROUND_OFF)
                x = np.atleast_1d(composed.curve.epsilon(np.minimum(need, 1.0)))
                reading = np.where(need < 1.0, x * (1.0 - 1e-9) - reach, -math.inf)
                guess, last = min(max(float(np.max(reading)), 0.0), start), guess
                if guess == last:
                    break
            for _ in range(4):  # checked: a certified lower bound at the reading
                if guess <= best or self._lower._raw(which, np.array([guess]))[0] > target:
                    break
                guess *= 1.0 - 1e-6
            else:
                continue
            best = max(best, guess)
        return best if best > 0.0 else super()._epsilon(target)


class _DirectionLower(PrivacyCurve):
    """:class:`_LatticeLower` as a curve, only to be wrapped in :class:`~.bracket.LowerBound`."""

    def __init__(self, lower: _LatticeLower):
        self._lower = lower

    def _delta(self, eps):
        return np.atleast_1d(self._lower.delta(eps))


def _bernstein(variance: float, reach: float) -> NDArray[np.float64]:
    """``t`` at each level of :data:`_ETAS`: ``P(sum (mean - o) > t) <= eta`` for independent roundings of
    total variance ``variance``, each at most ``reach`` from its mean on that side (Bernstein's inequality,
    Boucheron et al. Thm. 2.10: ``eta = exp(-t^2 / (2 (variance + reach t / 3)))``)."""
    level = -np.log(_ETAS)
    c = reach * level / 3.0
    return c + np.sqrt(c * c + 2.0 * variance * level)


@dataclass(frozen=True)
class _Step:
    """One lattice's curves and its bracket at the target."""

    h: float
    upper: _LatticeUpper
    lower: LowerBound
    low: float
    high: float
    cells: int
    sizes: tuple[int, ...]


def _step(parts: Sequence[_Part], h: float, delta: float | None, epsilon: float | None) -> _Step:
    """Both directions composed on the lattice of width ``h``, each tilted at the Chernoff order of the target
    (none for a delta target above the transforms' reach), and the bracket at the target."""
    uppers, lowers = [], []
    shifts = [sum(part.count * part.phi for part in parts) * (1.0 if d == 0 else -1.0) for d in range(2)]
    k_up = [sum(part.count * part.upper_mgf[d] for part in parts) for d in range(2)]
    k_low = [sum(part.count * part.lower_mgf[d] for part in parts) for d in range(2)]
    positive = slice(0, _ORDERS.size)
    if epsilon is None:  # the target's epsilon by Chernoff's bound, the larger direction's (true losses)
        at = max(_chernoff(k_up[d][positive], _ORDERS, math.log(delta), above=True) + shifts[d] for d in range(2))
    else:
        at = epsilon
    for d in range(2):
        theta = _tilt(k_up[d], at - shifts[d])
        reference = delta if epsilon is None else \
            math.exp(min(float(np.min(k_up[d][positive] - _ORDERS * (at - shifts[d]))), 0.0))
        reference = max(reference, 1e-300)
        ups = [part.upper[d] for part in parts]
        upper = _compose(ups, k_up[d], h, theta, shifts[d], reference, at - shifts[d])
        mean = sum(part.count * part.mean[d] for part in parts)
        variance = sum(part.count * part.variance[d] for part in parts)
        reach = max(part.reach[d] for part in parts)
        low_shift = sum(part.count * part.phi_low for part in parts) * (1.0 if d == 0 else -1.0)
        shift = low_shift + mean if d == 0 else low_shift - mean
        lower = functools.partial(_compose, [part.lower[d] for part in parts], k_low[d], h, theta, shift, reference,
                                  at - shift)  # (composed when first read: a bracket may not need it)
        uppers.append(upper)
        stray = sum(part.count * part.stray[d] for part in parts)
        lowers.append((lower, _bernstein(variance, reach), _ETAS + stray))
    below = _LatticeLower(lowers, at)
    curve = _LatticeUpper(uppers, below)
    lower = _LatticeLowerBound(below, curve)
    if epsilon is None:
        low, high = float(lower.epsilon(delta)), float(curve.epsilon(delta))
    else:
        low, high = float(lower.delta(epsilon)), float(curve.delta(epsilon))
    below.strict = False
    sizes = tuple(part.size for part in uppers) + tuple(part.size for part in below.composed())
    return _Step(h, curve, lower, min(low, high), high, sum(part.cells for part in parts), sizes)


def _parts(clean, h: float, tails: tuple[float, float], below: bool = True, level: float = _LEVEL) -> list[_Part]:
    return [_lattice_part(ratio, rate, count, h, *tails, below, level) for ratio, rate, count in clean]


def _span(parts: Sequence[_Part], h: float) -> float:
    """The width (in loss) of the larger direction's untilted window."""
    span = 0.0
    for d in range(2):
        laws = [part.upper[d] for part in parts]
        k = sum(part.count * part.upper_mgf[d] for part in parts)
        hard_lo = sum(law.count * int(law.index[0]) for law in laws) * h
        hard_hi = sum(law.count * int(law.index[-1]) for law in laws) * h
        hi = min(_chernoff(k, _SIGNED, math.log(batch.TAIL), True), hard_hi)
        lo = max(_chernoff(k, _SIGNED, math.log(batch.TAIL_BELOW), False), hard_lo)
        span = max(span, hi - lo)
    return span


def _chernoff_delta(parts: Sequence[_Part], epsilon: float) -> float:
    """Chernoff's bound on the larger direction's delta at ``epsilon`` (an estimate of the target delta)."""
    best = 0.0
    for d in range(2):
        shift = sum(part.count * part.phi for part in parts) * (1.0 if d == 0 else -1.0)
        k = sum(part.count * part.upper_mgf[d] for part in parts)[:_ORDERS.size]
        best = max(best, math.exp(min(float(np.min(k - _ORDERS * (epsilon - shift))), 0.0)))
    return best


def _predicted(parts: Sequence[_Part], h: float, rtol: float, delta: float | None, epsilon: float | None) -> float:
    """A lattice width predicted to give a bracket well within ``rtol`` (a share :data:`_PREDICTED_SHARE` of
    it): the lower end's Bernstein reading ``t`` (module doc) with a rounding of ``h / 2`` at most and a
    standard deviation of :data:`_PREDICTED_SD` ``h`` per copy, against the target's epsilon by Chernoff's
    bound (read on the provisional lattice ``h``; an epsilon target is its own). A function of the question:
    it only lets a small composition start on a coarser lattice than the window's :data:`_FIRST_POINTS`."""
    copies = sum(part.count for part in parts)
    if epsilon is None:
        level = math.log(1.0 / delta) + 2.0  # (eta about delta / 10)
        at = max(_chernoff(sum(part.count * part.upper_mgf[d] for part in parts)[:_ORDERS.size], _ORDERS,
                           math.log(delta), above=True)
                 + sum(part.count * part.phi for part in parts) * (1.0 if d == 0 else -1.0) for d in range(2))
    else:
        level = math.log(1.0 / max(_chernoff_delta(parts, epsilon), 1e-300)) + 2.0
        at = epsilon
    if not (math.isfinite(at) and at > 0.0):
        return 0.0
    return _PREDICTED_SHARE * rtol * at / (level / 6.0 + _PREDICTED_SD * math.sqrt(2.0 * copies * level))


def _gaussian_epsilon(mu: float, delta: float) -> float:
    """The epsilon of mu-GDP at ``delta`` (Dong, Roth and Su 2022, Cor. 2.13), by Newton's method on
    ``log delta(eps)`` from ``mu ndtri(1 - delta) + mu^2 / 2`` (where the profile's first term alone is
    ``delta``), four steps: an estimate for :func:`_spread_first` (the exact inversion costs a bisection)."""
    eps = mu * float(-special.ndtri(delta)) + 0.5 * mu * mu
    for _ in range(4):
        log_a = float(special.log_ndtr(-eps / mu + mu / 2.0))
        log_b = float(special.log_ndtr(-eps / mu - mu / 2.0))
        gap = eps + log_b - log_a
        if not gap < 0.0:
            break
        log_delta = log_a + math.log(-math.expm1(gap))
        slope = -math.exp(eps + log_b - log_delta)  # d log delta / d eps = -e^eps Phi(b) / delta
        if not (math.isfinite(log_delta) and slope < 0.0):
            break
        eps = max(eps - (log_delta - math.log(delta)) / slope, 0.5 * eps)
    return eps


def _spread_first(parts: Sequence[_Part], h: float, first: float, rtol: float, delta: float | None) -> float:
    """The first lattice's width: ``first``, or finer where the lattice's second-order error predicts that
    ``first`` would not reach ``rtol`` (so that a second, finer lattice would follow it).

    The bracket's relative width on a lattice of width ``h`` is modelled as ``C N h^2 z / (sigma eps)``
    (module doc, "Accuracy decides the work"): ``N`` copies, ``sigma`` the composed loss's standard deviation
    (read on the provisional lattice ``h``, the lesser direction's), ``z = sqrt(2 log(1 / delta))`` and ``eps``
    the Gaussian one of that ``sigma`` (``C`` measured 0.01 to 0.2 over the benchmark's first lattices of
    10,000 and 100,000 copies at rates 1e-4 to 0.01, mostly 0.1 to 0.13: lower where the loss's upper tail is
    heavy, its epsilon above the Gaussian's). When even :data:`_SPREAD_LOW` predicts ``first`` wider than
    ``rtol``, the lattice aims at :data:`_SPREAD_SHARE` ``rtol`` at :data:`_SPREAD_HIGH` instead, at most
    :data:`_SPREAD_FINER` times finer. An epsilon target keeps ``first``. A function of the question only."""
    if delta is None:
        return first
    copies = sum(part.count for part in parts)
    variance, skew = math.inf, 0.0
    for d in range(2):
        total, third = 0.0, 0.0
        for part in parts:
            law = part.upper[d]
            mass = law.mass / law.mass.sum()
            x = law.index * h
            x = x - float((mass * x).sum())
            total += part.count * float((mass * x * x).sum())
            third += part.count * float((mass * x * x * x).sum())
        variance = min(variance, total)
        skew = max(skew, abs(third) / total**1.5 if total > 0.0 else math.inf)
    if not (0.0 < variance < math.inf and skew <= _SPREAD_SKEW):
        return first
    sigma, z = math.sqrt(variance), math.sqrt(2.0 * math.log(1.0 / delta))
    eps = _gaussian_epsilon(sigma, delta)
    if not (math.isfinite(eps) and eps > 0.0):
        return first
    shape = copies * z / (sigma * eps)  # the width is C shape h^2
    if _SPREAD_LOW * shape * first**2 <= rtol:
        return first
    return max(math.sqrt(_SPREAD_SHARE * rtol / (_SPREAD_HIGH * shape)), first / _SPREAD_FINER)


def _seconds(clean, h: float, span: float, tails: tuple[float, float]) -> float:
    """Estimated seconds of one step on the lattice of width ``h`` (from its sizes, never measured): the
    databases' cells and four compositions over ``span``."""
    cells = 0.0
    for ratio, rate, _ in clean:
        top = math.log1p(rate * (_clamp(ratio, tails[0]) - 1.0))
        cells += (top - (math.log1p(-rate) if rate < 1.0 else -40.0 * ratio.mu)) / h
    points = span / h + 1.0
    return _CELL_SECONDS * cells + 4.0 * _POINT_SECONDS * points * max(math.log2(points), 1.0)


#: The theorem's name in a solve's report (:func:`gce.solve`) when a multiset of Gaussians, some of them
#: Poisson-subsampled, is composed by :func:`poisson_curve`.
THEOREM = "poisson subsampling"


def gaussian_parts(guarantees) -> list[tuple[float, float, int]] | None:
    """``[(mu, rate, count)]`` when every guarantee of the multiset ``((guarantee, count), ...)`` is a Gaussian
    mechanism (or GDP), Poisson-subsampled or not, and at least one is subsampled: what :func:`poisson_curve`
    composes (an unsampled one at rate 1); None otherwise. In the order of the guarantees' ``repr``, so that
    every caller (:func:`gce.solve`, :class:`gce.bridges.accountant.GceAccountant`) asks the same question
    of the same multiset and gets the same numbers."""
    parts, sampled = [], False
    for guarantee, count in sorted(guarantees, key=lambda item: repr(item[0])):
        rate, inner = kinds.sampling(guarantee)
        family = kinds.family(inner)
        if family is None or family[0] != "gaussian":  # (a Subsampled inner has no gaussian family either)
            return None
        mu = kinds.gdp_mu(inner)
        if mu is None:
            return None
        sampled |= rate < 1.0
        parts.append((float(mu), float(rate), int(count)))
    return parts if sampled else None


def _check_rate(value: object, name: str) -> float:
    if not is_number(value) or not 0.0 <= value <= 1.0:
        raise InvalidParameterError(name, f"must be a probability in [0, 1], got {shown(value)}")
    return float(value)


def poisson_curve(parts: Sequence[tuple[float, float, int]], rtol: float = effort.DEFAULT_RTOL,
                  delta: float | None = 1e-6, epsilon: float | None = None, tail: float = TAIL) -> AllocationCurve:
    """The curve of "in none" against "in each database independently at its rate" (the per-database-rate
    prior: Poisson subsampling of the target's record, database by database), each database running a
    Gaussian of its ``mu``: an upper curve with its certified lower curve.

    Without constraints the rates prior is a product law, so ``P = prod_i ((1 - r_i) Q_i + r_i P_i)``
    against ``Q = prod_i Q_i``: the composition of the databases' subsampled Gaussian pairs (001 Sec. V-B;
    Balle, Barthe and Gaboardi 2018), DP-SGD's accounting. Each pair is spread onto a lattice of the loss
    above and garbled by its cells below (module doc), and the copies are composed by one tilted transform per
    direction. The lattice is refined while the bracket at the target is wider than ``rtol`` (a schedule that
    depends on the question only; the time limit of the running computation only stops it, and the grid
    limit too: the description then says the bracket is wider than asked).

    Parameters
    ----------
    parts : sequence of (mu, rate, count)
        ``count`` databases running a mu-GDP mechanism each (several on one database: one Gaussian of
        ``sqrt(sum mu_i^2)``), each holding the target with probability ``rate``.
    rtol : float
        The width asked of the bracket at the target, ``upper / lower - 1`` (:data:`gce.effort.DEFAULT_RTOL`).
    delta, epsilon
        The target: epsilon at ``delta`` (the default, 1e-6), or delta at ``epsilon``.
    tail : float
        P-mass of one database's ratio beyond its clamp (charged at infinite loss), lowered until the clamps'
        charge is at most a share ``1e-4`` of the target delta (for a target epsilon, of its Chernoff bound).

    Examples
    --------
    >>> low, high = poisson_curve([(1.0, 0.1, 10)]).epsilon_bracket(1e-6)
    >>> 3.44 < low <= 3.46598 <= high < 3.48  # dp-accounting: 3.46598 (at a grid of 1e-6: 3.465985)
    True
    """
    if isinstance(parts, (str, bytes)) or not isinstance(parts, Sequence) or not parts:
        raise InvalidParameterError("parts", f"must be a non-empty list of (mu, rate, count), got {shown(parts)}")
    clean = []
    for i, part in enumerate(parts):
        if not isinstance(part, Sequence) or len(part) != 3:
            raise InvalidParameterError(f"parts[{i}]", f"must be (mu, rate, count), got {shown(part)}")
        mu, rate, count = part
        ratio = GaussianRatio(mu)
        rate = _check_rate(rate, f"parts[{i}].rate")
        count = _check_count(count, f"parts[{i}].count")
        if rate > 0.0 and ratio.mu > 0.0:
            clean.append((ratio, rate, count))
    if not is_number(rtol) or not 0.0 < rtol < 1.0:
        raise InvalidParameterError("rtol", f"must be a number in (0, 1), got {shown(rtol)}")
    if epsilon is None and delta is None:
        delta = 1e-6
    _check_target(delta, epsilon)
    if any(rate < RATE_FLOOR or ratio.mu < MU_FLOOR for ratio, rate, _ in clean):
        return _at_floors(clean, rtol, delta, epsilon, tail)
    copies = sum(count for _, _, count in clean)
    if not clean:  # nobody can hold the target, or no database's output depends on it
        from ...accounting.curves import GaussianCurve
        curve = GaussianCurve(0.0)
        return AllocationCurve([curve], LowerBound([(curve, 0.0, 0.0)]), "no database depends on the target")
    negligible = _negligible(_all_members(clean), epsilon, delta)
    if negligible:
        return _closed_forms(clean, negligible, stopped=False)
    # The first lattice spans the larger direction's window in _FIRST_POINTS points: its size read on a
    # provisional lattice of _PROVISIONAL_CELLS cells per database (the window hardly depends on it).
    # The clamps' charges (the P-mass above, at infinite loss, N r times the tail; the Q-mass below a clamped
    # grid's start, N times its own) at most a share of the target delta: of its Chernoff bound for a target
    # epsilon (read on the provisional lattice).
    reach = max(math.log1p(rate * (_clamp(ratio, tail) - 1.0)) - (math.log1p(-rate) if rate < 1.0 else 0.0)
                for ratio, rate, _ in clean)
    provisional = max(reach, 1e-12) / _PROVISIONAL_CELLS
    tails = (tail, tail)
    try:
        first = _parts(clean, provisional, tails, below=False)
        span = _span(first, provisional)
        reference = delta if epsilon is None else _chernoff_delta(first, epsilon)
    except NumericalLimitError:
        return _closed_forms(clean, "the lattice exceeds the grid limit")
    share = _TAIL_SHARE * max(reference, 1e-290)
    level = math.log(1.0 / min(max(reference, 1e-290), 0.5))
    tails = (min(tail, share / sum(count * rate for _, rate, count in clean)), min(tail, share / copies))
    h = max(span / _FIRST_POINTS, min(_predicted(first, provisional, rtol, delta, epsilon), span / _LEAST_POINTS))
    plain, h = h, _spread_first(first, provisional, h, rtol, delta)
    if not plain > 0.0:  # the losses span less than a double resolves (10^16 steps at rates of 1e-16)
        return _closed_forms(clean, "no lattice is fine enough (the losses' span underflows)", stopped=False)
    if h < plain and not effort.current().fits(_seconds(clean, h, span, tails)):
        h = plain  # (the finer first lattice does not fit in the time left: the schedule's own, no stop recorded)
    done: _Step | None = None
    stopped, limited, coarser = False, "", 0
    while True:
        what = "Poisson subsampling (first grid)" if done is None else "Poisson subsampling refinement"
        width = math.inf if done is None else _width(done.low, done.high)
        if not _may_refine(_seconds(clean, h, span, tails), what, delta, epsilon, width):
            stopped = True
            if done is None and coarser < _COARSER_FIRST:  # a coarser first lattice (the stop is recorded)
                h, coarser = h * 4.0, coarser + 1
                continue
            break
        try:
            step = _step(_parts(clean, h, tails, level=level), h, delta, epsilon)
        except NumericalLimitError as error:  # the lattice exceeds the grid: the last one stands
            limited = str(error)
            if done is None and h < plain:  # (a first lattice made finer: the one it was made finer than)
                h = plain
                continue
            break
        if done is None or _width(step.low, step.high) <= _width(done.low, done.high):
            done = step
        width = _width(done.low, done.high)
        if width <= rtol or step.h / _LEAST_FINER < batch.FINEST:
            break
        # Both ends err to second order in h (the lower laws' roundings levelled: module doc, "Lower"): the next
        # lattice aims at _AIM rtol by sqrt(width / (_AIM rtol)), at least twice finer.
        factor = _MOST_FINER if not math.isfinite(width) else min(max(math.sqrt(width / (_AIM * rtol)),
                                                                      _LEAST_FINER), _MOST_FINER)
        h = step.h / factor
    if done is None:
        if stopped:
            return _closed_forms(clean, "the time limit leaves no room for the first grid")
        return _closed_forms(clean, f"no lattice fits ({limited})")
    listed = ", ".join(f"{count} x (mu {ratio.mu:g} at rate {rate:g})" for ratio, rate, count in clean[:4])
    more = ", ..." if len(clean) > 4 else ""
    width = _width(done.low, done.high)
    text = (f"Poisson subsampling of {copies} Gaussian(s): {listed}{more}; lattice {done.h:.3g} "
            f"({done.cells:,} cells, windows of {max(done.sizes):,} points); "
            f"bracket {effort.describe_width(width)} wide")
    if stopped:
        text += _STOPPED
    elif width > rtol:
        text += (f", wider than the {rtol:.3g} asked: the grid limit stopped the refinement ({limited})" if limited
                 else f", wider than the {rtol:.3g} asked: the lattice reached its finest")
    return AllocationCurve([done.upper], done.lower, text)


#: Below these a database's rate, or its Gaussian's ``mu``, is beyond the lattices (the loss of such a step spans
#: less than the double's resolution of the others', and alone none fits: the lattice's width would be 0): the
#: step is composed at the floor above and left out below (:func:`_at_floors`).
RATE_FLOOR = 1e-12
MU_FLOOR = 1e-12


def _at_floors(clean, rtol: float, delta: float | None, epsilon: float | None, tail: float) -> AllocationCurve:
    """The databases below :data:`RATE_FLOOR` or :data:`MU_FLOOR` at that floor above and left out below.

    Above: a step at a rate ``r < r'`` is a post-processing of the step at ``r'`` (keep its output with
    probability ``r / r'``, else draw it afresh from ``Q``), and a Gaussian of ``mu < mu'`` one of the Gaussian
    of ``mu'`` (scale the output by ``mu / mu'`` and add independent noise), so the curve at the floors
    dominates. Below: the composition without those steps is a post-processing of the whole (drop their
    outputs), so its lower curve is one of the whole."""
    from ...accounting.curves import GaussianCurve
    raised = [(max(ratio.mu, MU_FLOOR), max(rate, RATE_FLOOR), count) for ratio, rate, count in clean]
    kept = [(ratio.mu, rate, count) for ratio, rate, count in clean if rate >= RATE_FLOOR and ratio.mu >= MU_FLOOR]
    upper = poisson_curve(raised, rtol, delta, epsilon, tail)
    lower = (poisson_curve(kept, rtol, delta, epsilon, tail).lower if kept
             else LowerBound([(GaussianCurve(0.0), 0.0, 0.0)]))
    return AllocationCurve(upper._upper, lower, f"{upper.description}; databases of rate below {RATE_FLOOR:g} or "
                                                f"mu below {MU_FLOOR:g}: at that floor above, left out below")


def _closed_forms(clean, why: str, stopped: bool = True) -> AllocationCurve:
    """Bounds in closed form, for when no lattice fits: above, every database a member (joint convexity: the
    rates prior is a mixture of sets, each a composition of at most all the databases' Gaussians, GDP
    ``sqrt(sum mu_i^2)``, both directions); below, nothing (delta 0)."""
    from ...accounting.curves import GaussianCurve
    mu = _all_members(clean)
    return AllocationCurve([GaussianCurve(mu)], LowerBound([(GaussianCurve(0.0), 0.0, 0.0)]),
                           f"Poisson subsampling, {why}: above, every database a member (GDP mu {mu:g}); "
                           f"below, delta 0{_STOPPED if stopped else ''}")


def _all_members(clean) -> float:
    """The GDP parameter of every database a member, ``sqrt(sum count mu^2)``: the closed-form upper curve of
    :func:`_closed_forms`, also the one :func:`poisson_curve` reads a target epsilon on first."""
    return math.sqrt(sum(count * ratio.mu**2 for ratio, _, count in clean))

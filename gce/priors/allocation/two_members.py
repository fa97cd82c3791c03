"""Two members of t: the recursion of the elementary symmetric polynomial, spread above and garbled below.

The pair, written under Q
-------------------------
With ``W_i = dP_i / dQ_i`` (independent under Q, package doc), "in exactly 2 of t, uniformly" against "in
none" has ``dP/dQ = L = e_2(W_1..W_t) / C(t, 2)``. Both directions are expectations under Q of convex
functions of ``L`` (``delta_PQ(eps) = c + E_Q[(L - e^eps)_+]``, ``delta_QP(eps) = E_Q[(1 - e^eps L)_+]``).
Processing the databases one at a time, the state ``X_i = (S_i, E_i) = (e_1, e_2)(W_1..W_i)`` moves by

    S_{i+1} = S_i + W_{i+1},        E_{i+1} = E_i + W_{i+1} S_i,

an affine map of the state for a fixed ``W_{i+1}``, and ``L = E_t / C(t, 2)``.

Upper: mean-preserving spreads of the state (the convex order)
---------------------------------------------------------------
Let ``V_i(x) = E[phi(L) | X_i = x]`` for a convex ``phi`` (the integrand of either direction at any eps),
the expectation over the *true* dynamics of the remaining databases. ``V_t = phi(E / C)`` is convex in the
state; if ``V_{i+1}`` is convex, ``V_i(x) = E_W[V_{i+1}(A_W x + b_W)]`` is an average of convex functions of
affine maps of ``x``: convex. So every ``V_i`` is convex in the state, and replacing the state at any step by a
random point whose conditional mean is the state (a mean-preserving spread) can only raise ``E V``: by
induction over the steps the spread process gives ``E phi(L~) >= E phi(L)`` for every such ``phi`` at once, and
``E L~ = E L`` (the state's mean is kept). The law of ``L~`` under Q is then a dominating pair of the
allocation (both directions at every eps; Blackwell's theorem for binary experiments), which also dominates it
under composition. Two spreads are used at every step, on a grid ``g`` of ``S`` and a grid ``e`` of ``E``, both
starting at 0 (:func:`_grids`; any grids are sound, these are placed for accuracy):

* *Along the segment.* From a grid state ``(S, E)`` the true next state ``(S + w, E + w S)`` lies, for ``w``
  in the cell ``[g_a - S, g_{a+1} - S)``, on the segment from ``(g_a, E + (g_a - S) S)`` to
  ``(g_{a+1}, E + (g_{a+1} - S) S)``; it is sent to the two ends with the weights that keep its mean. Summed
  over the cell, the right end receives ``(E_Q[W; cell] - (g_a - S) Q(cell)) / (g_{a+1} - g_a)``: only the
  cell masses of one database's ratio are read (:mod:`.ratios`), never a grid of ``W``. Both ends are true
  states (``w >= 0``), so ``E >= 0`` throughout.
* *Along E at fixed S.* Each end's ``E`` is sent to its two neighbours on ``e`` (mean kept).

* *Along the segment, cut by E.* Where the cells of ``w`` cut by ``g`` are wide (far out, ``S`` large: a
  cell of ``g`` is then wider than most ``w``, and the spread above sends ``E`` to ``E`` or to
  ``E + (g_{a+1} - S) S``, lumps far apart), a state ``(S, E)`` of ``g`` and ``e`` is moved instead along the
  cells of ``w`` cut by ``e``: for ``w`` in ``[u_m, u_{m+1})``, ``u_m = (e_m - E) / S``, the true next state lies on
  the segment from ``(S + u_m, e_m)`` to ``(S + u_{m+1}, e_{m+1})`` and is sent to its two ends (mean kept, the
  same cell masses as above), then each end's ``S`` to its two neighbours on ``g`` at fixed ``E`` (mean kept).
  Spreads along any line are allowed: ``V_{i+1}`` is convex on the whole plane (``phi(E / C)`` composed with
  affine maps and averaged), so the ends need not be reachable states; ``E`` stays on ``e`` (nonnegative) and
  ``S`` on ``g``. Used for the states whose cell of ``g`` above them is wider than :data:`_E_CUT_FROM` (or
  at ``E = 0``) and than their cell of ``e`` seen in ``w`` (``(e_{m+1} - e_m) / S``); any choice is sound. The
  mass from the last point of ``e`` on (``w >= u_last``, the clamp's atom included) is lowered to
  ``w = u_last``, which lowers ``E`` by ``(w - u_last) S`` and ``S`` by ``w - u_last``, so every future ``L`` by
  ``(w - u_last)(S + S') / C``: charged ``E_Q[(W - u_last)_+] (S + t - i - 1) / C`` at infinite loss; an end
  beyond the last point of ``g`` is lowered to it and charged as below.

*Clamps, charged.* Each ``W`` is clamped at ``B`` (:meth:`clamp` of the ratio): the clamped pair with the
excess ``x = E_Q[(W - B)_+]`` (and a canonical pair's own ``delta``) as P-mass outside Q's support dominates
the database's pair, and the allocation of dominating pairs dominates the allocation (each database's
output is the same post-processing of its dominating pair with or without the target); P-mass
``1 - (1 - x)^2`` is then charged at infinite loss. Above the last point of ``e``, ``E`` is lowered to it and
the lost mean, ``(E - e_max) / C`` of P-mass a unit of Q-mass, charged at infinite loss: the future of
``L`` is ``(E + S S' + E') / C`` with ``S', E'`` of the databases left, so lowering ``E`` by ``y`` lowers
every future ``L`` by ``y / C``, which lowers ``(L - c)_+`` by at most that (P||Q) and only raises
``(1 - e^eps L)_+`` (Q||P). Beyond the last point of ``g``, ``S`` is lowered to it likewise, charged
``(S - g_max) E[S'] / C`` with ``E[S'] <= t - i - 1`` (and ``E`` spread between its values at the ends of the
cell of ``w``, at fixed ``S``).

Lower: a garbling by the same recursion
---------------------------------------
The statistic ``T_{i+1} = (a, m)``: ``a`` the point of ``g`` nearest to ``S(T_i) + W_{i+1}`` (cells of ``W``
between the midpoints), ``m`` the point of ``e`` nearest to ``E(T_i) + (g_a - S(T_i)) S(T_i)``, is a
deterministic function of the outputs (each ``W_i`` is), so the pair of its laws under P and Q is a garbling
of the allocation and its divergences are lower bounds (data processing). Its laws are computed exactly:
under Q with the cell masses ``Q(cell)``; under P, a mixture over the member pairs of product laws whose
members' cells have the masses ``P_i(cell) = E_Q[W; cell]``, by carrying three measures (0, 1 and 2 members
among the databases processed) and dividing the last by ``C(t, 2)``. The final statistic is ``m`` alone
(forgetting ``a``, a further garbling). From the statistics moved along the cut by E above, the rule rounds
``E`` first: ``m`` the point of ``e`` nearest to ``E(T_i) + W_{i+1} S(T_i)``, ``a`` the point of ``g`` nearest to
``S(T_i) + (e_m - E(T_i)) / S(T_i)`` (still a function of the statistic and of the output; its cells of ``W``
are cut at the midpoints of ``e``). P-mass outside Q's support (a canonical pair's ``delta``) is the
outcome "a member showed it", P-mass ``1 - (1 - delta)^2``, Q-mass 0.

More members, below
--------------------
The same statistic is a function of the outputs for any number of members: carrying ``k + 1`` measures (0
to k members among the databases processed, the members' cells at ``E_Q[W; cell]``) and dividing the last
by ``C(t, k)`` gives its law under the k-of-t prior exactly, so the pair of the final ``(S, E)`` is a garbling
of k of t and its divergences are lower bounds. It is not sufficient for k > 2 (``L = e_k / C(t, k)`` reads
``e_3 .. e_k`` too), but it reads far more than the sum ``S`` alone (:mod:`.decomposition`'s garbling).

Floating point
--------------
Every mass is a sum of nonnegative terms (a sparse product by columns, in a fixed order); the spread's weights
are clipped at 0. *Above*, the round-off is covered by an allowance (:data:`~.bracket.ROUND_OFF` times the unit
round-off, the steps and the logarithm of the state count) charged at infinite loss, as for the grids of
:mod:`.uniform_grid` (an estimate checked by the tests against quadrature, not a proof). *Below*, every mass
of the garbled pair is a sum over paths of products of cell masses, with no subtraction but the cells' own (a
difference of a distribution function, within its condition number of unit round-offs: :func:`_condition`),
so each is within a factor ``1 +- g`` of the computed one, ``g`` from the steps, the cells' condition and the
terms of the longest sum (:func:`_relative_noise`); the remove direction's laws are read with ``p >= p^ /
(1 + g)`` and ``q <= q^ / (1 - g)`` (the add direction's likewise). An absolute allowance times ``e^eps``
swamps the small deltas where the tail is read (2 of 10 at sigma 0.79, delta 1e-10: the garbled pair's
epsilon 8.11 with it, 8.81 with the relative one, the exact value near 8.81 by an importance-sampled Monte
Carlo); where a cell's condition makes ``g`` over 1e-6 the absolute allowance is kept.

One map, every step
-------------------
The step's moves from a state (its cells of ``w``, its ends, their spreads and the charges per unit of its
mass) depend on the state and the grids only, never on the step (the charges' ``E[S'] <= rest`` enters as
``alpha + rest beta`` per unit of mass). So each state's moves are computed once, when it is first reached
(:class:`_Transitions`), and every step applies them all at once as a sparse product: the work of one step
of the former recursion, which computed them afresh at every step, plus ``t`` products. Measured (one quiet
core, upper and lower): 2 of 10 at sigma 0.79, grid ratio 1.03, 4.4 s to 0.9 s; at 1.014, 28 s to 5.0 s; 2 of
50 at sigma 1.74, ratio 1.03, 10.9 s to 1.5 s. The same laws as the recursion step by step (to the last
digits' round-off above; below, far out where a statistic's last point of ``E`` is now its own, not its
row's: the divergences to 1e-17). The moves are held in memory (about 12 bytes a move above, 20 below), so
a level is also refused by its estimated size (:data:`MEMORY_LIMIT`). Moves of negligible mass were dropped
and charged until 2026-12, to save time; the map costs too little for that to pay.

Refinement
----------
The grid of ``S`` is refined along :data:`RATIOS` (its ratio far out; ``E``'s ratio follows,
:func:`_e_ratio`), the first level cheapest; each level's cost is estimated from its grids' sizes
(:func:`_pair_seconds`, never measured) and a level that would not fit in the running computation's time
limit is not started (:func:`~.bracket._may_refine`). Until 2026-12 a level whose cut by E did not fit ran
without it; at small noise that level's remove direction is far looser (2 of 11 at sigma 0.52, delta 1e-8:
17.17 without the cut, 14.43 with it), and it took the time of the steps after it, so the level is now left
out instead. After a level the next is the coarsest predicted to bring the bracket within ``rtol``
(:func:`~.random_allocation._next_level`), not the next in the list.

Where the error is (measured)
-----------------------------
With the cut by E (loaded 2-core machine, delta 1e-5, the pair alone, grid ratio 1.03): sigma 0.5, 2 of 20,
remove direction's upper 11.74 -> 10.277 and the add direction's from unbounded to 5.7 (the lumps far out
were the cause: refining ``g`` only above ``S = 2e4`` moved it to 11.00, below ``2e4`` not at all), the
garbling's lower 10.187 -> 10.251; sigma 1, 2 of 20: [2.6454, 2.7145] -> [2.6585, 2.7068] at 1.03 and
[2.6675, 2.6934] at 1.02, where the spacing of ``e`` now decides (its ratio halved at 1.03: [2.674, 2.682],
four times the work). Before the cut by E:

At 2 of 20, sigma 1, delta 1e-5, both ends are about equally far from the truth at every level (upper
2.7145, 2.6975, 2.6881 and lower 2.6454, 2.6613, 2.6687 at ratios 1.02, 1.014, 1.01; the truth near 2.678):
the upper converges as the square of the grid's spacing, the lower about linearly. The error comes from the
points of ``S`` far out (a member's large ``W``): there the spacing is relative, as wide as an ordinary
``W`` once ``S`` is large, and every later database's step spreads ``E`` by about ``spacing x S``. The ratio
of ``S`` below :data:`_S_UNIFORM` moves it by under 0.01%, a coarse ``E`` far less than ``S`` at epsilon
near 3 (at epsilon near 1, sigma 3, ``E`` decides: hence :func:`_e_ratio`). Refining only the last steps
does not help: each step contributes about equally.

References
----------
Feldman, Shenfeld, "Privacy amplification by random allocation", arXiv 2502.08202.
Blackwell, "Equivalent comparisons of experiments", Ann. Math. Stat. 1953 (garblings and dominance).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from ... import effort
from .bracket import ROUND_OFF, _Law
from .ratios import GaussianRatio

#: Ratios of the grid of S above :data:`_S_UNIFORM`, cheapest first (the grid of E: :func:`_e_ratio`).
RATIOS = (1.03, 1.02, 1.014, 1.01, 1.007)
#: The levels of the blocks of two at two members where the first of RATIOS is costly
#: (:data:`~.random_allocation.PAIRS_COARSE_FIRST`; the block is then the pair itself, whose levels decide the
#: bracket): a coarser one first. A single level at 1.03 can take most of
#: the default 5 s, and one cut by the limit is lost whole: at sigma 0.52, 2 of 11, delta 1e-8 it was estimated
#: at 2.7 s and took 3.5 s, and on a machine a quarter slower it came out at 5.68% wide instead of 0.19% (at
#: 1.05 first: 0.39% in 2.0 s; 2 of 25 at sigma 0.58, 1e-10, 7.31% or 0.28% at 1.03, 0.88% at 1.05; one core,
#: 2026-12).
PAIR_RATIOS = (1.05, *RATIOS)
#: The grid of S: geometric from 1e-2 up to this point at ratio ``1 + 2 (level - 1)``, then at the level's
#: ratio up to ``2 B + 4 t`` (:func:`_s_top`): a rare state far out (one large W) is what the remove
#: direction reads at small deltas, so the relative resolution there decides (measured: the ratio below
#: ``_S_UNIFORM`` moves 2 of 20 at sigma 1 by under 0.01%, the ratio above it by 2% from 1.03 to 1.01);
#: near 0 the grid keeps the spread from sending mass to ``S = 0`` (where ``L = 0``: infinite loss for the
#: add direction) and resolves small W's (small noise).
_S_UNIFORM = 5.0
_S_LOW = 1e-2
#: The grid of E: uniform below ``C(t, 2) e^-high / 20`` (there the add direction's integrand is affine in L:
#: spreading costs nothing), geometric up to ``C(t, 2) e^(high + 7)`` (the clamp's charge beyond is below the
#: remove direction's delta at ``high + 7``), ``high`` the block's epsilon at the target (about).
_L_BELOW, _L_ABOVE = 0.05, 7.0
#: Estimated seconds per unit of work (:func:`_pair_seconds`) to compute the moves (once, :class:`_Transitions`),
#: upper and lower together: 6.2e-8 fitted with the constants below over 42 levels of 0.3 to 7 s (8 to 300
#: databases, sigma 0.5 to 2.6, grid ratios 1.03 to 1.014, with and without the cut by E; one quiet core,
#: 2026-12), which then take 0.64 to 1.76 times the fit (more at large noise, less at small); with a margin of
#: 1.4. Only decides whether a level fits (a level past the limit is stopped at a step and lost).
_UNIT_SECONDS = 8.7e-8
#: Estimated seconds per unit of work and step to apply the moves (the sparse products): 3.6e-9 fitted.
_APPLY_SECONDS = 5e-9
#: The work of a state moved along the segment cut by E (:func:`_e_segment_moves`, :func:`_e_garble_moves`), a
#: point of E above it, in units of a move along S (:func:`_pair_seconds`): the cells of w are read for each
#: state (fitted 7.5).
_E_CELL_WEIGHT = 7.5
#: The cells of w are cut by the grid of E (:func:`_e_segment_moves`, :func:`_e_garble_moves`) only where those of S are
#: wider than this (W has mean 1 under Q): where S is far out, the spacing of S is the lumpy part; and from
#: the states at E = 0 (there the cut by S keeps E = 0 at the cell's left end, step after step: Q-mass at
#: L = 0, the add direction unbounded; measured 1e-6 of it at sigma 0.5, 2 of 20 without this).
_E_CUT_FROM = 1.0
#: Estimated seconds a point of S and a step (the states reached, row by row, and the rows' products): 4.9e-5
#: fitted (:data:`_UNIT_SECONDS`), with its margin.
_ROW_SECONDS = 6.8e-5
#: Estimated seconds a point of S with states moved along the cut by E, and a step: 4.0e-5 fitted, with its
#: margin.
_E_ROW_SECONDS = 5.6e-5
#: Most bytes of a level's moves (:class:`_Transitions`, 12 a move above and 20 below, each unit of
#: :func:`_pair_seconds`'s work two moves above and one below, twice while chunks are joined; the upper's are
#: freed before the lower's are made): a level beyond is refused.
MEMORY_LIMIT = 3.0e9
#: Bytes per unit of work (:data:`MEMORY_LIMIT`): the larger of the two recursions', joined.
_UNIT_BYTES = 2.0 * max(2 * 12, 20)


def _s_top(t: int, b: float) -> float:
    """The last point of the grid of S: ``2 B + 4 t`` (at most ``2 t B``). Beyond it S is lowered and
    charged (module doc, "Clamps, charged"): one W above ``B`` is clamped already, and ``S_i - W`` has mean
    ``i - 1 < t`` under Q, so states beyond are two large W's at once or far in the sum's tail, whose charge
    is of the order of the clamp's. Any top is sound; this one only sets the accuracy."""
    return min(2.0 * b + 4.0 * t, 2.0 * t * b)


def _e_ratio(level: float, high: float) -> float:
    """Ratio of the grid of E: its relative spacing is the relative resolution of L, so of the loss, whose
    error is read against the epsilon at the target (``high``, about): ``1 + 2 (level - 1) high / 1.5``, high
    within [0.5, 8] (measured: 2 members of 8 at sigma 3, epsilon 0.9, went from 1.4% to 0.5% wide when the
    ratio went from 1.06 to 1.02; at sigma 1, epsilon 2.7, from 1.06 to 1.03 moved it by 0.15%). Where the
    block's epsilon is only guessed (blocks composed), the caller passes at most 1.5: never coarser than
    ``1 + 2 (level - 1)`` (at 3 of 10, a block guessed at 3.7, the ratio 1.15 lost 1.5%)."""
    return 1.0 + 2.0 * (level - 1.0) * min(max(high, 0.5), 8.0) / 1.5


def _grids(ratio, t: int, level: float, tail: float, high: float,
           e_high: float | None = None) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
    """(grid of S, grid of E, clamp B) of a level (:data:`_S_UNIFORM`, :data:`_L_BELOW`, :func:`_e_ratio` of
    ``e_high``, by default ``high``)."""
    b = ratio.clamp(tail)
    c = t * (t - 1) / 2.0
    near_ratio = 1.0 + 2.0 * (level - 1.0)
    near = _S_LOW * near_ratio ** np.arange(int(math.log(_S_UNIFORM / _S_LOW) / math.log(near_ratio)) + 1)
    far = _S_UNIFORM * level ** np.arange(int(math.ceil(math.log(max(_s_top(t, b), 2.0 * _S_UNIFORM) / _S_UNIFORM)
                                                                 / math.log(level))) + 2)
    s = np.concatenate(([0.0], near, far))
    return s, _l_grid(c, _e_ratio(level, high if e_high is None else e_high), high), b


def _l_grid(c: float, rho: float, high: float) -> NDArray[np.float64]:
    """A grid of ``e_k`` whose ``L = e_k / c`` is read (:data:`_L_BELOW`, :data:`_L_ABOVE`): uniform up to
    ``c e^-high / 20`` at the spacing ``rho - 1`` of it, then geometric at ratio ``rho`` up to ``c e^(high + 7)``."""
    high = min(max(high, 0.1), 30.0)
    e0 = c * _L_BELOW * math.exp(-high)
    return np.concatenate((e0 * (rho - 1.0) * np.arange(int(round(1.0 / (rho - 1.0)))),
                           e0 * rho ** np.arange(int(math.ceil((2.0 * high + _L_ABOVE - math.log(_L_BELOW))
                                                                / math.log(rho))) + 2)))


def _pair_seconds(ratio, t: int, level: float, tail: float, high: float, e_high: float | None = None) -> float:
    """Estimated seconds of :func:`_pair_laws` at ``level`` (from the grids' sizes, never measured); infinite
    when its moves would exceed :data:`MEMORY_LIMIT` (the level is then refused). Each state ``(S, E)`` moves
    to the points of S up to ``S + B``, and E lies in ``[(S^2 - S min(S, B)) / 2, S^2 / 2]`` (``e_2 = (e_1^2 -
    sum W^2) / 2``, each W at most B), so the work is the sum over the points of S of the points reachable
    times the points of E in that range: computed once (:data:`_UNIT_SECONDS`) and applied at every step
    (:data:`_APPLY_SECONDS`), plus a cost a point of S and a step. The states moved along the cut by E
    (:func:`_e_segment_moves`: far out, and at E = 0) read instead the points of E above them up to ``E + B
    S``, each :data:`_E_CELL_WEIGHT` units, and each point of S with such states :data:`_E_ROW_SECONDS` a step."""
    s, e, b = _grids(ratio, t, level, tail, high, e_high)
    reach = np.searchsorted(s, s + b, side="right") - np.arange(s.size)
    # E = (S^2 - sum W^2) / 2 with every W <= min(S, B) (clamped): E in [(S^2 - S min(S, B)) / 2, S^2 / 2]
    top = np.minimum(np.searchsorted(e, 0.5 * s * s, side="right") + 1, e.size)
    bottom = np.searchsorted(e, 0.5 * s * (s - np.minimum(s, b)), side="left")
    # the states moved along the segment cut by E (:func:`_e_segment_moves`): each reads the points of E above it
    gaps = np.diff(e)
    along_e = np.zeros(s.size)
    work_e = np.zeros(s.size)
    for j in range(1, s.size - 1):
        sel = np.arange(bottom[j], min(top[j], e.size - 1))
        if s[j + 1] - s[j] <= _E_CUT_FROM:  # only the state at E = 0 (:data:`_E_CUT_FROM`)
            sel = sel[:1] if bottom[j] == 0 else sel[:0]
        sel = sel[(s[j + 1] - s[j]) * s[j] > gaps[sel]]
        along_e[j] = sel.size
        if sel.size:  # each reads the points of E above it up to the first beyond the row's E + b S
            reach_e = min(e.size, int(np.searchsorted(e, e[sel[-1]] + b * s[j], side="right")) + 1)
            work_e[j] = float(np.sum(reach_e - sel))
    work = float(np.sum(reach * (top - bottom - along_e)))
    if _UNIT_BYTES * (work + float(np.sum(work_e))) > MEMORY_LIMIT:
        return math.inf
    return _noise_factor(ratio) * (_UNIT_SECONDS * (work + _E_CELL_WEIGHT * float(np.sum(work_e)))
                                   + t * (_APPLY_SECONDS * (work + float(np.sum(work_e))) + _ROW_SECONDS * s.size
                                          + _E_ROW_SECONDS * int(np.count_nonzero(along_e))))


#: :func:`_noise_factor`: a Gaussian's level takes about ``_NOISE_SCALE sigma^_NOISE_POWER`` times the grids'
#: estimate, within ``_NOISE_CLIP``, and this margin above it.
_NOISE_SCALE, _NOISE_POWER, _NOISE_CLIP, _NOISE_MARGIN = 0.74, 0.28, (0.55, 1.05), 1.1


def _noise_factor(ratio) -> float:
    """The share of the grids' estimate a level of a Gaussian's pair takes, by its noise ``sigma = 1 / mu``: the
    states reached are fewer than the grids' feasible region at small noise. Fitted (least squares in logs, one
    quiet core, 2026-12) over 30 random levels of 0.4 to 5.4 s (2 of 6 to 52, sigma 0.56 to 2.91, grid ratios
    1.03 to 1.014, the grid of E for epsilon 0.87 to 13.8): the time over the estimate without it 0.55 to 1.26,
    with it (no margin) 0.74 to 1.28; neither the databases nor the epsilon explained more. Without it a level
    at small noise that would have fitted was not started (2 of 11 at sigma 0.52, delta 1e-8: 2.9 s, estimated
    5.0 s with 4.0 s left; its bracket 2.3% wide against 0.19%). Other ratios: 1."""
    if not isinstance(ratio, GaussianRatio) or ratio.mu <= 0.0:
        return 1.0
    low, high = _NOISE_CLIP
    return _NOISE_MARGIN * min(max(_NOISE_SCALE * ratio.mu ** -_NOISE_POWER, low), high)


def _locate(grid: NDArray[np.float64], x: NDArray[np.float64]) -> NDArray[np.int64]:
    """Index j of the cell ``[grid[j], grid[j+1])`` holding x (the last cell closed)."""
    return np.clip(np.searchsorted(grid, x, side="right") - 1, 0, grid.size - 2)


class _Rows:
    """The moves of S from each point ``j`` of the grid ``s``, which depend on the point alone, not on the step:
    computed once a recursion (the cells of w are a normal CDF each). :meth:`spread`: :func:`_spread_weights`
    from ``s[j]``; :meth:`nearest`: (k, the shifts to the points j..j+k, their cells' Q- and P-masses) of the
    points nearest ``s[j] + w`` (the garbling's cells of w cut at the midpoints, up to the clamp ``b``), and
    :meth:`condition`, their cells' condition."""

    def __init__(self, ratio, s: NDArray[np.float64], b: float):
        self._ratio, self._s, self._b = ratio, s, b
        self._spread: dict[int, tuple] = {}
        self._nearest: dict[int, tuple] = {}
        self._condition: dict[int, float] = {}

    def spread(self, j: int) -> tuple:
        if j not in self._spread:
            self._spread[j] = _spread_weights(self._ratio, self._s[j:] - self._s[j], self._b)
        return self._spread[j]

    def nearest(self, j: int) -> tuple:
        if j not in self._nearest:
            off = self._s[j:] - self._s[j]
            mid = 0.5 * (off[1:] + off[:-1])
            k = int(np.searchsorted(mid, self._b, side="right"))
            q, p = self._ratio.cells(np.concatenate(([0.0], mid[:k], [np.inf])))
            self._nearest[j] = (k, off[:k + 1], q, p)
        return self._nearest[j]

    def condition(self, j: int) -> float:
        """The largest condition number of :meth:`nearest`'s cell masses (:func:`_condition`)."""
        if j not in self._condition:
            _, _, q, p = self.nearest(j)
            self._condition[j] = max(_condition(q), _condition(p))
        return self._condition[j]


def _spread_weights(ratio, off: NDArray[np.float64], b: float):
    """From a state of S, the weights of the next S on the grid points ``S + off`` (``off[0] = 0``), the
    segment's mean kept (module doc), W clamped at ``b``: (weights, offsets of E's shift / S, overflow)
    where ``overflow`` is the first moment beyond the last point (for the charge) or 0."""
    k = int(np.searchsorted(off, b, side="right")) - 1  # b in [off[k], off[k+1])
    if k + 1 < off.size:
        q, p = ratio.cells(np.append(off[:k + 1], [b, np.inf]))
        width = off[1:k + 2] - off[:k + 1]
        right = np.maximum((p[:k + 1] - off[:k + 1] * q[:k + 1]) / width, 0.0)
        left = np.maximum(q[:k + 1] - right, 0.0)
        at_b = q[k + 1] * (b - off[k]) / width[k]  # the clamped mass, an atom at b
        right[k] += at_b
        left[k] += max(q[k + 1] - at_b, 0.0)
        weights = np.zeros(k + 2)
        weights[:k + 1] += left
        weights[1:] += right
        return weights, off[:k + 2], np.arange(k + 2), 0.0
    n = off.size  # b beyond the last point: what lands above it stays at the last S (charged), E spread
    q, p = ratio.cells(np.append(off, [b, np.inf]))
    width = off[1:] - off[:-1]
    right = np.maximum((p[:n - 1] - off[:n - 1] * q[:n - 1]) / width, 0.0)
    left = np.maximum(q[:n - 1] - right, 0.0)
    weights = np.zeros(n + 1)
    weights[:n - 1] += left
    weights[1:n] += right
    q_over, m_over = q[n - 1] + q[n], p[n - 1] + b * q[n]
    to_b = max((m_over - off[-1] * q_over) / (b - off[-1]), 0.0) if b > off[-1] else 0.0
    weights[n - 1] += max(q_over - to_b, 0.0)
    weights[n] = to_b
    rows = np.append(np.arange(n), n - 1)
    return weights, np.append(off, b), rows, max(m_over - off[-1] * q_over, 0.0)


class _Transitions:
    """The recursion's step as a linear map on the flat states (``s`` index times ``e`` index), which does not
    depend on the step: each state's moves are computed once, when the state is first reached (module doc,
    "One map, every step"), and every step applies them to the masses, a sparse product (sums of nonnegative
    terms in a fixed order). ``values`` weights per move (one for the spread above; the Q- and P-masses
    below). The moves are kept in chunks, each a matrix from its own source states (in the order reached) to
    the states, merged two at a time while the later is at least half the earlier and the two hold at most
    :data:`MERGE_MOST` moves (a few chunks, each move copied a few times; chunks beyond that stay apart, as
    each product's cost is its moves'), each chunk's matrices built once. The charges per unit of a state's
    mass, ``alpha + rest beta`` (``rest`` the databases after the step), are kept beside them."""

    def __init__(self, size: int, values: int = 1):
        self.size, self.values = size, values
        self.built = np.zeros(size, dtype=bool)
        self.alpha, self.beta = np.zeros(size), np.zeros(size)
        self.moves = 0  # moves held
        self.condition = 0.0  # the largest condition number of a weight (:func:`_condition`)
        self._chunks: list[tuple] = []  # (sources, indptr, targets, [weights of each value])
        self._new: list[tuple] = []  # chunks of the states built since the last merge
        self._matrices: list[list | None] = []  # each chunk's matrices (one per value), built when first applied

    def add(self, src: NDArray[np.int64], dst: NDArray[np.int64], *w: NDArray[np.float64]) -> None:
        """Moves from the flat states ``src`` to ``dst`` with the weights ``w`` (one array per value); each
        state's moves consecutive, and all of them in one call."""
        src = np.asarray(src).ravel()
        if not src.size:
            return
        starts = np.flatnonzero(np.diff(src, prepend=-1))
        self._new.append((src[starts], np.append(starts, src.size), np.asarray(dst, dtype=np.int32).ravel(),
                          [np.ascontiguousarray(x, dtype=float).ravel() for x in w]))
        self.moves += src.size

    def ready(self) -> None:
        """The chunks added since the last call made one, then merged (class doc)."""
        if not self._new:
            return
        self._chunks.append(_joined(self._new, self.values))
        self._matrices.append(None)
        self._new = []
        while len(self._chunks) >= 2 and 2 * self._chunks[-1][2].size >= self._chunks[-2][2].size \
                and self._chunks[-1][2].size + self._chunks[-2][2].size <= MERGE_MOST:
            self._chunks[-2:] = [_joined(self._chunks[-2:], self.values)]
            self._matrices[-2:] = [None]

    def terms(self) -> int:
        """The most moves into one state: the terms of the longest sum of a step."""
        into = np.zeros(self.size, dtype=np.int64)
        for chunk in self._chunks + self._new:
            into += np.bincount(chunk[2], minlength=self.size)
        return int(into.max()) if self.moves else 0

    def apply(self, state: NDArray[np.float64], value: int = 0) -> NDArray[np.float64]:
        """The masses after a step from ``state`` (flat; or states by columns, one per measure), by the moves'
        weights ``value``."""
        from scipy import sparse
        out = np.zeros(state.shape)
        for i, (sources, indptr, dst, w) in enumerate(self._chunks):
            if self._matrices[i] is None:
                self._matrices[i] = [sparse.csc_matrix((w[v], dst, indptr), shape=(self.size, sources.size))
                                     for v in range(self.values)]
            out += self._matrices[i][value] @ state[sources]
        return out


#: Chunks of moves (:class:`_Transitions`) are merged only while the two hold at most this many moves: a merge
#: copies both, and at fine grids the states reached grow step after step, so that merging at any size copied
#: every move at every step (sigma 1.5, 2 of 11, grid ratio 1.01: 9 s of the level's 15 s in the copies).
MERGE_MOST = 2**22


def _joined(chunks: list[tuple], values: int) -> tuple:
    """Chunks of moves (:class:`_Transitions`) with disjoint sources as one."""
    if len(chunks) == 1:
        return chunks[0]
    offsets = np.cumsum([0] + [c[1][-1] for c in chunks[:-1]])
    return (np.concatenate([c[0] for c in chunks]),
            np.concatenate([chunks[0][1][:1]] + [c[1][1:] + o for c, o in zip(chunks, offsets)]),
            np.concatenate([c[2] for c in chunks]),
            [np.concatenate([c[3][v] for c in chunks]) for v in range(values)])


def _along_e(s: NDArray[np.float64], e: NDArray[np.float64], j: int, cols: NDArray[np.int64],
             cut: bool) -> NDArray[np.bool_]:
    """Which states ``(s[j], e[cols])`` move along the cells of ``w`` cut by the grid of E (above) or round E
    first (below): those at E = 0, and with ``cut`` those far out (their cell of S wider than
    :data:`_E_CUT_FROM`), whose cell of S seen in E is wider than their cell of E (module doc)."""
    here = s[j]
    if not (here > 0.0 and j + 1 < s.size):
        return np.zeros(cols.size, dtype=bool)
    along_e = (cols < e.size - 1) & ((cut and s[j + 1] - here > _E_CUT_FROM) | (cols == 0))
    along_e[along_e] = (s[j + 1] - here) * here > e[cols[along_e] + 1] - e[cols[along_e]]
    return along_e


def _upper_moves(ratio, s: NDArray[np.float64], e: NDArray[np.float64], b: float, c: float, j: int,
                 cols: NDArray[np.int64], moves: "_Rows", cut: bool, maps: _Transitions) -> None:
    """The spread process's moves (module doc, "Upper") from the states ``(s[j], e[cols])`` into ``maps``, with
    their charges per unit of mass."""
    n_e = e.size
    here = s[j]
    src = j * n_e + cols
    along_e = _along_e(s, e, j, cols, cut)  # states whose cells of w are narrower along E
    if np.any(along_e):
        _e_segment_moves(ratio, s, e, b, c, j, cols[along_e], maps)
        cols, src = cols[~along_e], src[~along_e]
        if not cols.size:
            return
    weights, shifts, rows, overflow = moves.spread(j)
    maps.beta[src] += overflow / c  # the mean beyond the last point of S: E[S'] <= rest
    x = e[cols][None, :] + (shifts * here)[:, None]
    over = np.maximum(x - e[-1], 0.0)
    maps.alpha[src] += (weights @ over) / c  # E lowered to the last point of E
    x = np.minimum(x, e[-1])
    idx = _locate(e, x)
    f = np.clip((x - e[idx]) / (e[idx + 1] - e[idx]), 0.0, 1.0)
    where = (((j + rows) * n_e)[:, None] + idx).T
    mass = np.broadcast_to(weights[None, :], where.shape)
    upper = mass * f.T
    maps.add(np.broadcast_to(src[:, None, None], where.shape + (2,)), np.stack((where, where + 1), axis=2),
             np.stack((mass - upper, upper), axis=2))


def _e_segment_moves(ratio, s: NDArray[np.float64], e: NDArray[np.float64], b: float, c: float, j: int,
                     cols: NDArray[np.int64], maps: _Transitions) -> None:
    """The moves from the states ``(s[j], e[cols])`` along the cells of ``w`` cut by the grid of E (module doc,
    "Along the segment, cut by E"), with the charges of what lands beyond the last point of E (lowered to it)
    or of S (lowered to it), per unit of mass."""
    n_e = e.size
    here = s[j]
    src = j * n_e + cols
    # the points of E up to the first beyond every state's E + b S (past it the cells of w are empty)
    e = e[:min(n_e, int(np.searchsorted(e, e[cols].max() + b * here, side="right")) + 1)]
    # the points of w from each state: u_m = (e_m - E) / S (0 for the points at or below the state's E); the
    # cells [u_m, u_{m+1}) cut at the clamp b, then [u_last, b) and the atom at b
    u = np.maximum(e[None, :] - e[cols][:, None], 0.0) / here
    edges = np.concatenate((np.minimum(u, b), np.full((cols.size, 1), b), np.full((cols.size, 1), np.inf)), axis=1)
    q, p = _cells_from(ratio, edges, cols)  # only from each state's own E on (those below are [0, 0), empty)
    lo, hi = u[:, :-1], u[:, 1:]
    inner = hi > lo
    gap = np.where(inner, hi - lo, 1.0)
    right = np.where(inner, np.clip((p[:, :e.size - 1] - lo * q[:, :e.size - 1]) / gap, 0.0, q[:, :e.size - 1]), 0.0)
    weights = np.zeros((cols.size, e.size))
    weights[:, :e.size - 1] += q[:, :e.size - 1] - right
    weights[:, 1:] += right
    rows = np.arange(cols.size)
    # b inside the points: the atom at b lies in the cell k with u_k <= b < u_{k+1}, sent to its ends (mean kept)
    inside = u[:, -1] > b
    k = np.sum(u <= b, axis=1) - 1
    ri, ki = rows[inside], k[inside]
    to_right = q[ri, e.size] * (b - u[ri, ki]) / (u[ri, ki + 1] - u[ri, ki])
    weights[ri, ki + 1] += to_right
    weights[ri, ki] += np.maximum(q[ri, e.size] - to_right, 0.0)
    # b at or beyond the last point of E: the mass from it on (the atom included) is lowered to w = u_last
    # and charged: E lowered by (w - u_last) S and S by (w - u_last), so every future L by (w - u_last)(S + S') / C
    free = ~inside
    over_q = q[free, e.size - 1] + q[free, e.size]
    over_p = p[free, e.size - 1] + b * q[free, e.size]
    weights[free, e.size - 1] += over_q
    lost = np.maximum(over_p - u[free, -1] * over_q, 0.0) / c
    maps.alpha[src[free]] += lost * here
    maps.beta[src[free]] += lost
    # the ends (here + u_m, e_m): spread along S at fixed E onto the grid of S (beyond its top: lowered, charged)
    keep = weights > 0.0
    s_end = here + u[keep]
    m_end = weights[keep]
    e_idx = np.broadcast_to(np.arange(e.size)[None, :], weights.shape)[keep]
    sources = np.broadcast_to(src[:, None], weights.shape)[keep]
    above = s_end > s[-1]
    if np.any(above):
        np.add.at(maps.beta, sources[above], m_end[above] * (s_end[above] - s[-1]) / c)
        s_end = np.minimum(s_end, s[-1])
    idx = _locate(s, s_end)
    f = np.clip((s_end - s[idx]) / (s[idx + 1] - s[idx]), 0.0, 1.0)
    upper = m_end * f
    maps.add(np.stack((sources, sources), axis=1), np.stack((idx * n_e + e_idx, (idx + 1) * n_e + e_idx), axis=1),
             np.stack((m_end - upper, upper), axis=1))


def _upper_pair(ratio, t: int, s: NDArray[np.float64], e: NDArray[np.float64], b: float,
                cut: bool = True) -> tuple[_Law, _Law]:
    """The spread process's law of L under Q (module doc): (remove, add) laws of the dominating pair.
    ``cut``: whether states far out move along the cells cut by E (module doc; either is sound; the states at
    E = 0 always do)."""
    c = t * (t - 1) / 2.0
    n_s, n_e = s.size, e.size
    state = np.zeros(n_s * n_e)
    state[0] = 1.0
    charge = 0.0
    maps = _Transitions(n_s * n_e)
    moves = _Rows(ratio, s, b)
    for step in range(t):
        effort.checkpoint()  # a database's step is short: a level that overran on a loaded machine stops here
        _build(state, maps, n_e, lambda j, cols: _upper_moves(ratio, s, e, b, c, j, cols, moves, cut, maps))
        rest = t - step - 1  # databases after this one: E[S'] = rest, E[E'] = C(rest, 2)
        charge += float(maps.alpha @ state) + rest * float(maps.beta @ state)
        state = maps.apply(state)
    q = state.reshape(n_s, n_e).sum(axis=0)
    noise = _noise(t, n_s * n_e)
    return _block_laws(e / c, q, 2, ratio.excess(b), charge, 0.0, noise)


def _build(state: NDArray[np.float64], maps: _Transitions, n_e: int, moves) -> None:
    """The moves of the states with mass not yet in ``maps`` (``moves(j, cols)``, row of S by row), then merged."""
    reached = np.flatnonzero(state if state.ndim == 1 else state.any(axis=1))
    new = reached[~maps.built[reached]]
    if new.size:
        rows = new // n_e
        starts = np.flatnonzero(np.diff(rows, prepend=-1))
        for a, z in zip(starts, np.append(starts[1:], new.size)):
            effort.checkpoint()
            moves(int(rows[a]), new[a:z] - rows[a] * n_e)
        maps.built[new] = True
    maps.ready()


def _lower_moves(ratio, s: NDArray[np.float64], e: NDArray[np.float64], b: float, j: int, cols: NDArray[np.int64],
                 moves: "_Rows", cut: bool, maps: _Transitions) -> None:
    """The garbling's moves (module doc, "Lower") from the statistics ``(s[j], e[cols])``: to the nearest points,
    with the cells' Q- and P-masses."""
    n_e = e.size
    here = s[j]
    src = j * n_e + cols
    along_e = _along_e(s, e, j, cols, cut)  # the statistic rounds E first where its cells of w are narrower
    if np.any(along_e):
        _e_garble_moves(ratio, s, e, b, j, cols[along_e], maps)
        cols, src = cols[~along_e], src[~along_e]
        if not cols.size:
            return
    k, shifts, q, p = moves.nearest(j)  # to rows j..j+k (nearest)
    maps.condition = max(maps.condition, moves.condition(j))
    x = np.minimum(e[cols][None, :] + (shifts * here)[:, None], e[-1])
    idx = _locate(e, x)
    idx = idx + ((x - e[idx]) > (e[idx + 1] - x)).astype(np.int64)  # the nearest point
    where = (((j + np.arange(k + 1)) * n_e)[:, None] + idx).T
    shape = where.shape
    maps.add(np.broadcast_to(src[:, None], shape), where, np.broadcast_to(q[None, :], shape),
             np.broadcast_to(p[None, :], shape))


def _e_garble_moves(ratio, s: NDArray[np.float64], e: NDArray[np.float64], b: float, j: int,
                    cols: NDArray[np.int64], maps: _Transitions) -> None:
    """The garbling's moves from the statistics ``(s[j], e[cols])`` rounding E first: the next ``m`` the point of E
    nearest to ``E + W S`` up to the first point beyond ``E + b S`` (W beyond the clamp ends there), the next
    ``a`` the point of S nearest to ``S + (e_m - E) / S`` (module doc, "Lower", cut by E): a function of the
    statistic and of ``W``."""
    n_e = e.size
    here = s[j]
    e = e[:min(n_e, int(np.searchsorted(e, e[cols].max() + b * here, side="right")) + 1)]
    mid = 0.5 * (e[1:] + e[:-1])
    bounds = np.maximum(mid[None, :] - e[cols][:, None], 0.0) / here
    edges = np.concatenate((np.zeros((cols.size, 1)), bounds, np.full((cols.size, 1), np.inf)), axis=1)
    q, p = _cells_from(ratio, edges, cols)  # cell m: to the point m of E
    maps.condition = max(maps.condition, _condition(q), _condition(p))
    # each statistic's own last point, whatever the others' (the cells past it merged into it)
    last = np.minimum(np.searchsorted(e, e[cols] + b * here, side="right"), e.size - 1)
    past = np.arange(e.size)[None, :] > last[:, None]
    rows = np.arange(cols.size)
    q[rows, last] += np.where(past, q, 0.0).sum(axis=1)
    p[rows, last] += np.where(past, p, 0.0).sum(axis=1)
    q[past], p[past] = 0.0, 0.0
    x = np.minimum(here + np.maximum(e[None, :] - e[cols][:, None], 0.0) / here, s[-1])
    idx = _locate(s, x)
    idx = idx + ((x - s[idx]) > (s[idx + 1] - x)).astype(np.int64)
    keep = (q > 0.0) | (p > 0.0)
    where = (idx * n_e + np.arange(e.size)[None, :])[keep]
    sources = np.broadcast_to((j * n_e + cols)[:, None], q.shape)[keep]
    maps.add(sources, where, q[keep], p[keep])


def _lower_pair(ratio, t: int, s: NDArray[np.float64], e: NDArray[np.float64], b: float,
                members: int = 2, cut: bool = True) -> tuple[_Law, _Law]:
    """The garbled pair (module doc) of ``members`` of ``t``: its (remove, add) laws, with the round-off to
    subtract. For 2 members the final statistic is E alone (L is a function of it); for more, the final
    (S, E) (the statistic is not sufficient then, still a garbling: "More members, below"). ``cut``: whether
    the statistics far out round E first (module doc, "Lower"; either rule is a garbling; those at E = 0
    always do)."""
    c = float(math.comb(t, members))
    n_s, n_e = s.size, e.size
    state = np.zeros((n_s * n_e, members + 1))  # Q-measures with 0, 1, ..., members among those processed
    state[0, 0] = 1.0
    maps = _Transitions(n_s * n_e, values=2)
    moves = _Rows(ratio, s, b)
    for _ in range(t):
        effort.checkpoint()
        _build(state, maps, n_e, lambda j, cols: _lower_moves(ratio, s, e, b, j, cols, moves, cut, maps))
        by_p = maps.apply(state[:, :-1], 1)  # a member here: its cell's P-mass
        state = maps.apply(state, 0)
        state[:, 1:] += by_p
    state = state.T.reshape(members + 1, n_s, n_e)
    if members == 2:
        q_law, p_law = state[0].sum(axis=0), state[2].sum(axis=0) / c
    else:
        q_law, p_law = state[0].ravel(), state[members].ravel() / c
    only_p = -math.expm1(members * math.log1p(-ratio.singular)) if ratio.singular > 0 else 0.0
    both = (p_law > 0) & (q_law > 0)
    with np.errstate(divide="ignore"):
        loss = np.log(p_law[both]) - np.log(q_law[both])
    relative = _relative_noise(t, maps.condition, maps.terms(), n_s)
    if relative <= _RELATIVE_AT_MOST:  # each mass within a factor 1 +- relative of the computed one ("Floating point")
        shift = math.log1p(relative) - math.log1p(-relative)  # p >= p^ / (1 + g), q <= q^ / (1 - g)
        remove = _Law(loss - shift, p_law[both] / (1.0 + relative),
                      only_p + float(p_law[(p_law > 0) & (q_law == 0)].sum()) / (1.0 + relative))
        add = _Law(-loss - shift, q_law[both] / (1.0 + relative),
                   float(q_law[(q_law > 0) & (p_law == 0)].sum()) / (1.0 + relative))
        return remove, add
    noise = _noise(t, n_s * n_e)
    remove = _Law(loss, p_law[both], only_p + float(p_law[(p_law > 0) & (q_law == 0)].sum()), noise, noise)
    add = _Law(-loss, q_law[both], float(q_law[(q_law > 0) & (p_law == 0)].sum()), noise, noise)
    return remove, add


#: The garbled pair's masses are read with a relative allowance (:func:`_relative_noise`) while it is at most
#: this; beyond (a cell's mass lost to cancellation), with the absolute one (:func:`_noise`).
_RELATIVE_AT_MOST = 1e-6


def _condition(cells: NDArray[np.float64]) -> float:
    """The largest condition number of nonzero cell masses computed as differences of a distribution function
    (``cells`` over edges from 0 to infinity, by rows): each cell's two tails (the lesser of the masses below
    and above its edges, each read from the cells) over its mass. A cell's relative round-off is about this
    times the unit round-off."""
    cells = np.atleast_2d(cells)
    below = np.cumsum(cells, axis=1)
    above = np.cumsum(cells[:, ::-1], axis=1)[:, ::-1]
    # the cell [e_i, e_{i+1}): below its edges sum_{<i} and sum_{<=i}; above them sum_{>=i} and sum_{>i}
    tails = np.minimum(2.0 * below - cells, 2.0 * above - cells)
    nonzero = cells > 0
    return float(np.max(tails[nonzero] / cells[nonzero])) if np.any(nonzero) else 0.0


def _relative_noise(t: int, condition: float, terms: int, final: int) -> float:
    """A relative bound on the round-off of every mass of the garbled pair (module doc, "Floating point"): each
    mass is a sum over paths of products of ``t`` cell masses, each within ``condition`` unit round-offs of
    its own, summed ``terms`` at a time, step by step, then ``final`` at a time (over the grid of S), and
    divided and logged: ``t (condition + terms + 1) + final + 2`` unit round-offs, with
    :data:`~.bracket.ROUND_OFF`'s margin."""
    return ROUND_OFF * np.finfo(float).eps * (t * (condition + terms + 1) + final + 2)


def _block_laws(lr: NDArray[np.float64], q: NDArray[np.float64], members: int, excess: float, charge: float,
                charge_q: float, noise: float) -> tuple[_Law, _Law]:
    """(remove, add) laws of a block of ``members`` members from the likelihood ratio ``lr`` at each point of the
    last coordinate's grid and its Q-mass ``q``: P's mass beyond the clamp (``1 - (1 - excess)^members``), the
    moves charged and the round-off ``noise`` at +inf; Q's mass where the ratio is 0 at +inf in the add direction."""
    singular = -math.expm1(members * math.log1p(-excess)) if excess < 1.0 else 1.0
    pos = (lr > 0) & (q > 0)
    remove = _Law(np.log(lr[pos]), lr[pos] * q[pos], min(singular + charge + noise, 1.0))
    add = _Law(-np.log(lr[pos]), q[pos], min(float(q[~pos].sum()) + charge_q + noise, 1.0))
    return remove, add


def _cells_from(ratio, edges: NDArray[np.float64], first: NDArray[np.int64]) -> tuple[NDArray[np.float64],
                                                                                     NDArray[np.float64]]:
    """(Q, P) masses of the cells between consecutive ``edges`` of each row (ascending), the row's cells before
    its index ``first`` left empty (0): the used edges of all the rows in one call of ``ratio.cells``, the
    cells between two rows' edges left out."""
    rows, width = edges.shape
    used = np.arange(width)[None, :] >= first[:, None]
    cell_q, cell_p = ratio.cells(edges[used])
    last = np.cumsum(np.sum(used, axis=1)) - 1
    within = np.ones(cell_q.size, dtype=bool)
    within[last[:-1]] = False
    q, p = np.zeros((rows, width - 1)), np.zeros((rows, width - 1))
    q[used[:, :-1]] = np.maximum(cell_q[within], 0.0)
    p[used[:, :-1]] = np.maximum(cell_p[within], 0.0)
    return q, p


def _members_lower(ratio, t: int, k: int, level: float, tail: float, high: float,
                   e_high: float | None = None) -> tuple[_Law, _Law]:
    """(remove, add) laws of the garbling of k of ``t`` by the recursion's statistic (module doc, "More
    members, below"), on the grids of ``level``."""
    s, e, b = _grids(ratio, t, level, tail, high, e_high)
    return _lower_pair(ratio, t, s, e, b, k)


def _members_seconds(ratio, t: int, k: int, level: float, tail: float, high: float,
                     e_high: float | None = None) -> float:
    """Estimated seconds of :func:`_members_lower`: :data:`_MEMBERS_SHARE` of the pair's (upper and lower)
    for each of its ``k + 1`` measures against the pair's lower's 4."""
    return _MEMBERS_SHARE * _pair_seconds(ratio, t, level, tail, high, e_high) * (k + 1) / 4.0


#: The garbled pair's share of :func:`_pair_seconds` (:func:`_members_seconds`), a measure: measured 0.37 to
#: 0.49 (4 and 5 of 12 to 28, sigma 0.7 to 1.8, grid ratio 1.03; at the former share 1 the estimate was 2.0 to
#: 2.7 times the time taken; one quiet core, 2026-12), with a margin.
_MEMBERS_SHARE = 0.6


def _noise(t: int, states: int) -> float:
    """Round-off allowance (module doc, "Floating point")."""
    return ROUND_OFF * np.finfo(float).eps * (t + 2) * max(math.log2(max(states, 2)), 1.0)


def _pair_blocks(t: int, k: int) -> list[tuple[int, int, int]]:
    """(block size, members, count) of the decomposition of k of t into blocks of two members (and one of
    one when k is odd), the sizes as even as the members allow (:func:`~.random_allocation._with_pairs`)."""
    members = [2] * (k // 2) + [1] * (k % 2)
    sizes = [t * m // k for m in members]
    for i in range(t - sum(sizes)):  # the remainder, one database a block, pairs first
        sizes[i % len(sizes)] += 1
    out: dict[tuple[int, int], int] = {}
    for size, m in zip(sizes, members):
        out[(size, m)] = out.get((size, m), 0) + 1
    return [(size, m, count) for (size, m), count in sorted(out.items())]


def _pair_laws(ratio, t: int, level: float, tail: float, high: float, e_high: float | None = None,
               cut: bool = True) -> tuple[tuple[_Law, _Law], tuple[_Law, _Law]]:
    """((upper remove, upper add), (lower remove, lower add)) of 2 of ``t`` at grid ratio ``level``, the grid
    of E placed for an epsilon about ``high`` (:func:`_grids`; any value is sound), far out the cut by E
    unless ``cut`` is False (at E = 0 always: without it the add direction keeps Q-mass at L = 0, 4e-6 of it at
    2 of 10 and sigma 0.79, unbounded below that delta)."""
    s, e, b = _grids(ratio, t, level, tail, high, e_high)
    return _upper_pair(ratio, t, s, e, b, cut), _lower_pair(ratio, t, s, e, b, cut=cut)

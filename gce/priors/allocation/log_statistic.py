"""k of t below: the pair garbled by a sum of logarithms, ``T_r = sum_i floor(log(1 + r W_i) / dx)``.

Why this statistic
------------------
Under ``Q`` the outputs' likelihood ratios ``W_1, ..., W_t`` are independent; the k-of-t pair's likelihood
ratio is ``e_k(W) / C(t, k)``, the k-th elementary symmetric polynomial of the ``W_i`` over its number of
terms. Its generating function is a product, ``prod_i (1 + r W_i) = sum_j e_j(W) r^j``, so for every
``r > 0``, ``log e_k(W) <= sum_i log(1 + r W_i) - k log r``, with equality to first order at the saddle point
``r`` where ``sum_i r W_i / (1 + r W_i) = k`` (the k largest terms saturate, the others count ``r W_i``).
``T_r`` is that sum, rounded: a sum of independent terms whose law is a convolution, and a near-sufficient
statistic where the adversary's test decides, unlike ``sum_i W_i`` (the 1-of-t ratio, far from ``e_k`` when
a few ``W_i`` are large: at sigma 0.5, 10 of 100, delta 1e-5, the sum's garbling certifies epsilon 13.2, this
one 23.0, and an independent Monte Carlo puts the exact value between 20 and 23).

Proof that it bounds below
--------------------------
``T_r`` is a function of the output (each term of the database's own ``W_i``, which is a function of its
output), so the pair of its laws under ``P`` and ``Q`` is a post-processing of the true pair and its
divergence is at most the true one in both directions (data processing; Blackwell 1953). Its laws are
convolutions: under ``Q`` of the cell masses ``q_j = Q(log(1 + r W) in [j dx, (j + 1) dx))`` (t terms);
under ``P`` the members' coordinates can be taken to be the first ``k`` (exchangeability: ``T_r`` is
symmetric), so of ``p_j = P(cell j) = E_Q[W; cell j]`` for ``k`` terms and ``q_j`` for ``t - k``. The cells
are the intervals ``[(e^{j dx} - 1) / r, (e^{(j+1) dx} - 1) / r)`` of ``W`` (the last one unbounded), so
``q_j`` and ``p_j`` are the ratio's own cell masses (:meth:`~.ratios.GaussianRatio.cells`). The cyclic FFT
adds up the mass of ``T_r = s`` and ``s + N``: merging outcomes, a post-processing again. P-mass outside Q's
support (a canonical pair's outcome 0) is its own outcome, as in :func:`.uniform_grid._lower_laws`.

Floating point
--------------
Where the adversary's test decides, ``Q``'s law of ``T_r`` is about ``e^-eps`` times ``P``'s: an FFT's
round-off (relative to the largest mass) times ``e^eps`` would swamp it. So each law is transformed tilted:
the terms' cell masses times ``e^(theta j dx)``, normalised; the sum's law is the tilted sum's times
``e^(-theta s dx)`` and the normalisers, and the tilted sum's round-off is at most the allowance of
:func:`.uniform_grid._noise` in any cell (an L1 estimate, as in :mod:`.uniform_grid`: checked by the tests,
not a proof). Each cell keeps the tilt whose allowance is least there, and the allowance is applied cell by
cell: ``P`` lowered and ``Q`` raised for the direction P||Q, the other way for Q||P. ``sum (P - e^eps Q)_+``
only grows with ``P`` and falls with ``Q`` in every cell (and so do its compositions), so the bound stays
below the true one. At small deltas the decisive cells lie beyond the reach of a tilt of 1 (their masses
below its allowance), so a target delta under :data:`DEEP_DELTA` transforms at the tilts 0, 1, 2, 4 and 8
(:func:`tilts`; any set is sound, each cell keeping the least allowance). Measured at sigma 1.71, 14 of
724, delta 1e-10 (an importance-sampled Monte Carlo puts epsilon near 2.02): the best rate certified 1.666
at the tilts 0 and 1, 2.011 at the five (cells 0.01); at delta 1e-5 and 1e-6 they move nothing.

The sum's reach
---------------
A sum of ``t`` terms spans ``t`` times one term's cells (a member's ``log(1 + r W)`` reaches 10 or more: a
million cells at ``t = 999`` and cells of 0.005), but its mass lies in a small part of that: by Chernoff,
``P(S >= x) <= e^(-lambda x) E[e^(lambda S)]`` for every ``lambda > 0``, and ``E[e^(lambda S)]`` is the product
of the terms' moments, so the cells past which a sum (tilted and normalised) has at most :data:`WRAP_MASS`
are known before it is transformed (:func:`_reach`). The laws are read on the cells up to the plain sums'
reach (:func:`_length`; the outcomes past it, at most 1e-20 of either measure, are left out: a sum of
nonnegative terms ``(p - g q)_+`` over fewer outcomes is smaller, so a lower bound still), and each tilt is
transformed on the cells up to its own reach: the cyclic FFT then adds what lies past them, at most
:data:`WRAP_MASS` of the tilted sum, onto the cells read, which the allowance carries (lowered below,
raised above, as the round-off). A tilt whose sum reaches past :data:`TILT_REACH` times the cells read is not
transformed: its mass lies far past them. Measured (2 cores, 2026-12): sigma 1.01, 22 of 999, delta 1e-8, the
garbling at every rate took 1.19 s on the whole range and 0.10 s to the reach, and within the default 5 s the
lower end rose from 5.145 to 5.309 (an importance-sampled Monte Carlo puts epsilon near 5.32): the finer cells
now fit. The round-off allowance shrinks with the transform: at sigma 1.71, 14 of 724, delta 1e-10 the
tilts 0 and 1 certify 1.837 instead of 1.666.

Which r
-------
Every ``r`` gives a lower bound, so the largest over a fixed set is one too: ``r = k / (t - k)`` (each
non-member counts ``r W_i``, mean ``r``: together about ``k``) times ``2^(1 - m)``, ``m = 0..RATES - 1``,
read at the target; a function of the question only. Measured (delta 1e-5): sigma 0.5, 10 of 100 is best at
a quarter of it (23.03; 22.49 at ``k / (t - k)``), sigma 1 at about ``k / (t - k)`` (5.77; the sum: 5.17).

A rate per count
----------------
The saddle point moves with the outputs, and one ``r`` serves them all. :func:`by_counts` garbles by the
pair ``(N, T_{r(N)})``, ``N`` the number of databases with ``log W`` above ``log((t - k) / k)`` (where a
non-member's ``r W`` reaches 1 at ``r = k / (t - k)``) and ``r(N)`` a rate chosen for each count (at the
target, from a grid ``RATE_STEP`` apart): a function of the output again, so a garbling. Its laws on
``{N = n}``: under ``Q`` the multinomial coefficient ``C(t, n)`` times the convolution of ``n`` terms
above the cut and ``t - n`` below; under ``P`` (the members first) the sum over ``j`` members above of
``C(k, j) C(t - k, n - j)`` times the convolution of the members' and the others' terms on each side. The
direction P||Q only (the larger of the directions is at least it). The rates are read on every other point of
the lattice (``2 RATE_STEP`` apart) on cells of :data:`CHOOSING_CELL` and coarser; finer cells read each count's
choice there and its neighbours on the whole lattice (the coarse cells' blur moves the best rate by a step or
two; :data:`CHOOSING_CELL`). Measured (sigma 0.5, 10 of 100, delta
1e-5): 23.08 (one rate) to 23.15; against the quadrature at 2 of 4 to 3 of 5 within 0.1-2% of the exact
delta (one rate: 0.4-2.4%).

The cell
--------
Each term is rounded down on its own, so ``dx T_r`` is ``sum_i log(1 + r W_i)`` less ``t`` rounding errors of
spread about ``dx / sqrt(12)`` each: the statistic reads the log-ratio through a blur of about ``dx sqrt(t /
12)`` (0.14 at ``t = 100``, ``dx = 0.05``), which costs about ``lambda t dx^2 / 24`` in epsilon, ``lambda``
the slope of ``log delta`` in epsilon. That is small where ``lambda`` is (sigma 0.5, 10 of 100: ``lambda``
about 0.9; 23.150 at 0.05, 23.156 at 0.02) and not where it is large (sigma 1: ``lambda`` about 3; 5.781 at
0.05, 5.814 at 0.02, 5.818 at 0.01, against an importance-sampled Monte Carlo of 5.823). The caller takes the
cells of :data:`COUNT_CELLS` in turn while its bracket is wider than asked (each about twice the time of the
one before).

References
----------
Blackwell, "Equivalent comparisons of experiments", Ann. Math. Stat. 1953 (garblings).
Macdonald, "Symmetric Functions and Hall Polynomials", 2nd ed., Oxford 1995, Ch. I.2 (the generating function
of the elementary symmetric polynomials).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import fft as _fft
from scipy import special

from ... import effort
from ...errors import NumericalLimitError
from .bracket import _Law
from .uniform_grid import _entry_noise, _noise, _power

#: Width of the statistic's cells (in log(1 + r W)): at 0.02 the epsilon certified at sigma 0.5, 10 of 100
#: moved by under 0.3%.
CELL = 0.05
#: The cells of :func:`by_counts`, coarsest first (module doc, "The cell"; 0.005 since the sums are transformed
#: to their reach, "The sum's reach", and 0.01 no longer: the finest chooses its rates on 0.02, CHOOSING_CELL).
COUNT_CELLS = (0.05, 0.02, 0.005)
#: Largest FFT of the statistic's sum (larger sums wrap: merged outcomes, still a lower bound).
SIZE_LIMIT = 2**20
#: A sum's mass past the cells it is transformed on, at most this (relative to its total; module doc, "The
#: sum's reach"): an allowance of its own, far under the round-off's.
WRAP_MASS = 1e-20
#: The exponents of the Chernoff bound on a sum's reach (:func:`_reach`), per unit of ``log(1 + r W)``.
_EXPONENTS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
#: A tilt whose sum reaches past this many times the cells read is not transformed (:func:`_convolved`).
TILT_REACH = 4.0
#: How many rates ``r`` are tried (module doc, "Which r").
RATES = 8
#: Tilts of the sums' transforms (module doc, "Floating point"): 0 for the bulk, 1 for the upper tail, where
#: the terms' likelihood ratio grows as e^(j dx) (a tilt of 1 turns Q's cells into about P's).
TILTS = (0.0, 1.0)
#: Tilts for a target delta below :data:`DEEP_DELTA` (or an epsilon target): the decisive cells lie beyond
#: the reach of a tilt of 1, where its round-off allowance swamps them (module doc, "Floating point").
DEEP_TILTS = (0.0, 1.0, 2.0, 4.0, 8.0)
#: Below this target delta the sums are transformed at :data:`DEEP_TILTS`.
DEEP_DELTA = 1e-7
#: Seconds per point and log2(points) of one real transform and the work around it (tilts, products, the
#: untilting): measured 1.2e-9 to 2e-9 on 2 cores, 2026-12, from :func:`laws` at every rate (24 cases, 2 to 25
#: of 8 to 999, sigma 0.5 to 2.8) and :func:`by_counts` (42 steps, 0.1 to 36 s); the estimates were 3 to
#: 7 times too large at 1e-8 (a rate per count at 10.77 s ran in 3.56 s), and stopped the steps that fit.
_TRANSFORM_SECONDS = 1.5e-9
#: Seconds of one transform's fixed work (its tilt's weights, the calls; short sums).
_TRANSFORM_CALL_SECONDS = 5e-5
#: Seconds of a call's fixed work (the cells of each rate, the laws' curves read at the target): measured 0.03
#: to 0.05 s where the transforms are small.
_CALL_SECONDS = 0.1
#: A sum's share of its five transforms' time in :func:`by_counts` (:func:`count_seconds`), its terms' forward
#: transforms shared by a rate's sums (:func:`_tilted`) and its powers taken by squaring: over 24 steps (8
#: cases of 4 to 25 of 18 to 418, cells 0.05, 0.02 and 0.005; one quiet core, 2026-12-06) the estimate was
#: 1.04 times the time taken (median; 0.61 to 1.94) before and 2.05 times after; 1.01 (0.68 to 1.95) with this
#: share.
_SHARED_SUM = 0.55
#: Masses below this (relative to 1) in the last cells are not worth cells of their own: merged into the last.
_NEGLIGIBLE = 1e-300
#: The rates of :func:`by_counts`: ``k / (t - k)`` times ``e^{j RATE_STEP}``, ``j`` from 4 down to -16 (``e^1`` to
#: ``e^-4`` of it). 0.5 until the sums were transformed to their reach (2026-12); at 0.25 (one quiet core, cells
#: 0.005, twice the time) sigma 1.17, 10 of 393, delta 1e-10 certifies 3.4794 instead of 3.4696 (an
#: importance-sampled Monte Carlo puts epsilon near 3.483), sigma 0.76, 19 of 724, 1e-6, 8.2444 instead of 8.2155
#: (the Monte Carlo near 8.252); at 0.125 the same (the best rates are on the lattice of 0.25).
RATE_STEP = 0.25
#: Counts of P-mass below this are left out of :func:`by_counts` (a garbling may forget outcomes' detail:
#: they are merged into one outcome whose contribution is dropped, which only lowers the bound).
_COUNT_FLOOR = 1e-13


def tilts(delta: float | None) -> tuple[float, ...]:
    """The tilts of the sums' transforms for a target delta (None: an epsilon target, whose delta may be any):
    :data:`TILTS`, or :data:`DEEP_TILTS` below :data:`DEEP_DELTA` (module doc, "Floating point")."""
    return TILTS if delta is not None and delta >= DEEP_DELTA else DEEP_TILTS


def rates(t: int, k: int) -> tuple[float, ...]:
    """The rates tried, largest first (module doc, "Which r")."""
    base = k / max(t - k, 1)
    return tuple(base * 2.0 ** (1 - m) for m in range(RATES))


def _cells(ratio, r: float, dx: float) -> tuple[np.ndarray, np.ndarray]:
    """Q- and P-masses of the cells of ``log(1 + r W)`` of width ``dx``, the last one unbounded, trimmed
    where both measures have no more than :data:`_NEGLIGIBLE` left (merged into the last cell kept)."""
    try:  # above the clamp, one cell: merged outcomes (a garbling), of P-mass at most 1e-30
        top = math.log1p(r * ratio.clamp(1e-30)) if not ratio.trivial else dx
    except NumericalLimitError:  # a ratio's tail beyond e^700
        top = 700.0 + math.log(r)
    cells = max(int(math.ceil(top / dx)) + 1, 2)
    edges = np.append(np.expm1(np.arange(cells + 1) * dx) / r, np.inf)
    q, p = ratio.cells(edges)
    heavy = np.flatnonzero((q > _NEGLIGIBLE) | (p > _NEGLIGIBLE))
    last = int(heavy[-1]) + 1 if heavy.size else 1
    q = np.append(q[:last - 1], q[last - 1:].sum())
    p = np.append(p[:last - 1], p[last - 1:].sum())
    return q, p


def _log_moments(masses: np.ndarray, dx: float, theta: float) -> tuple[np.ndarray, float]:
    """One term's tilted law (its cells' masses times ``e^(theta j dx)``, normalised): the logarithms of its
    moments ``E[e^(lambda j dx)]`` at each exponent of :data:`_EXPONENTS`, and its largest cell."""
    with np.errstate(divide="ignore"):
        logs = np.log(masses) + theta * np.arange(masses.size) * dx
    logs = logs - special.logsumexp(logs)
    exponents = np.asarray(_EXPONENTS)[:, None] * (np.arange(masses.size) * dx)[None, :]
    return special.logsumexp(logs[None, :] + exponents, axis=1), masses.size - 1


def _reach(terms, dx: float, theta: float, cache: dict | None = None) -> int:
    """The cells ``n`` past which the sum of ``terms`` (``(cell masses, count)`` each), tilted by ``e^(theta s
    dx)`` and normalised, has at most :data:`WRAP_MASS` (module doc, "The sum's reach"): by Chernoff,
    ``P(S >= x) <= e^(-lambda x) E[e^(lambda S)]`` at the best exponent of :data:`_EXPONENTS`; the whole range
    where that is shorter (nothing lies past it). ``cache``: the moments of each term's cells (keyed by the
    array's identity and the tilt) across the calls of one computation, whose cells stay alive meanwhile."""
    total, whole = np.zeros(len(_EXPONENTS)), 1
    for masses, count in terms:
        if count == 0:
            continue
        key = (id(masses), theta)
        if cache is not None and key in cache:
            moments, top = cache[key]
        else:
            moments, top = _log_moments(masses, dx, theta)
            if cache is not None:
                cache[key] = (moments, top)
        total += count * moments
        whole += count * top
    x = float(np.min((total - math.log(WRAP_MASS)) / np.asarray(_EXPONENTS)))
    return min(whole, int(math.ceil(x / dx)) + 1)


def _length(term_sets, dx: float, cache: dict | None = None) -> int:
    """The laws' length for sums of each of ``term_sets``: the largest reach of the plain sums (past it each
    has at most :data:`WRAP_MASS`: outcomes left out, a lower bound still; module doc, "The sum's reach"), a
    fast length, at most :data:`SIZE_LIMIT` (a longer sum then wraps: merged outcomes)."""
    reach = max(_reach(terms, dx, 0.0, cache) for terms in term_sets)
    return _fft.next_fast_len(min(reach, SIZE_LIMIT), real=True)


def seconds(ratio, t: int, k: int, dx: float = CELL, thetas: tuple[float, ...] = TILTS) -> float:
    """Estimated seconds of :func:`laws` at every rate of :func:`rates` (from the FFT sizes, never measured):
    per rate and tilt, five transforms of each law's size (Q's sum: one forward, one back; P's: two forward,
    one back), each :data:`_TRANSFORM_SECONDS` a point and log2(points), and :data:`_CALL_SECONDS` plus half
    of it (the decomposition's lower curve, not interruptible: 1.25 to 2.1 times the time taken, median 1.55,
    over 14 steps of 0.1 to 0.85 s on 2 cores, 2026-12)."""
    return 1.5 * _CALL_SECONDS + 2 * sum(_transforms_seconds(ratio, t, k, r, dx, thetas) for r in rates(t, k))


def _transforms_seconds(ratio, t: int, k: int, r: float, dx: float, thetas: tuple[float, ...]) -> float:
    """Estimated seconds of the five transforms of :func:`laws` at the rate ``r``, each tilt at its sums'
    reach (:func:`_convolved`: from the cells, never measured), :data:`_TRANSFORM_SECONDS` a point and
    log2(points) and :data:`_TRANSFORM_CALL_SECONDS` each."""
    q, p = _cells(ratio, r, dx)
    cache: dict = {}
    sets = [[(q, t)], [(p, k), (q, t - k)]]
    n = _length(sets, dx, cache)
    return sum(2.5 * _TRANSFORM_SECONDS * size * math.log2(max(size, 2)) + 2.5 * _TRANSFORM_CALL_SECONDS
               for terms in sets for _, size in _tilt_reaches(terms, n, dx, thetas, cache))


def _tilt_reaches(terms, n: int, dx: float, thetas: tuple[float, ...], cache: dict | None = None
                  ) -> list[tuple[float, int]]:
    """The tilts :func:`_convolved` transforms a sum on when it reads ``n`` cells, each with the cells its
    sum reaches (at least ``n``): the plain transform alone, on ``n`` cells, when the plain sum reaches past
    them (wrapped); else each tilt of ``thetas`` but those reaching past :data:`TILT_REACH` times ``n``."""
    if _reach(terms, dx, 0.0, cache) > n:
        return [(0.0, n)]
    reaches = [(theta, max(_reach(terms, dx, theta, cache), n)) for theta in thetas]
    return [(theta, reach) for theta, reach in reaches if theta == 0.0 or reach <= TILT_REACH * n]


def laws(ratio, t: int, k: int, r: float, dx: float = CELL, thetas: tuple[float, ...] = TILTS,
         per_cell: bool = False) -> tuple[_Law, _Law]:
    """The k-of-t pair garbled by ``T_r`` (module doc): its laws in the directions P||Q and Q||P, their
    round-off applied cell by cell (module doc, "Floating point"; ``per_cell``: each cell's at the L2 bound,
    :func:`_convolved`), the sums transformed at the tilts ``thetas`` (:func:`tilts`)."""
    if not 1 <= k <= t:
        raise ValueError(f"k must be in [1, t], got k = {k}, t = {t}")
    if not (math.isfinite(r) and r > 0.0 and math.isfinite(dx) and dx > 0.0):
        raise ValueError(f"r and dx must be positive numbers, got r = {r!r}, dx = {dx!r}")
    q_cells, p_cells = _cells(ratio, r, dx)
    cache: dict = {}
    n = _length([[(q_cells, t)], [(p_cells, k), (q_cells, t - k)]], dx, cache)
    q_low, q_high = _convolved([(q_cells, t)], n, dx, thetas, per_cell, cache)
    p_low, p_high = _convolved([(p_cells, k), (q_cells, t - k)], n, dx, thetas, per_cell, cache)
    only_p = -math.expm1(k * math.log1p(-ratio.singular)) if ratio.singular > 0 else 0.0
    with np.errstate(divide="ignore"):
        keep = p_low > 0
        remove = _Law(np.log(p_low[keep]) - np.log(q_high[keep]), p_low[keep], only_p)
        keep = q_low > 0
        add = _Law(np.log(q_low[keep]) - np.log(p_high[keep]), q_low[keep], 0.0)
    return remove, add


def _convolved(terms, n: int, dx: float, thetas: tuple[float, ...] = TILTS, per_cell: bool = False,
               cache: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) bounds, cell by cell, on the law of a sum of independent terms (``(cell masses,
    count)`` each) in its first ``n`` cells, from the FFT of the terms tilted by ``e^(theta j dx)`` for
    each theta of ``thetas`` (:func:`tilts`): the sum's law is ``e^(-theta s dx) prod Z^count`` times the tilted sum's,
    whose round-off is at most the allowance of :func:`.uniform_grid._noise` in every cell (the L1 bound: the
    L2 bound of :func:`.uniform_grid._transform_error`, smaller by the root of the cells, also bounds each cell,
    and with ``per_cell`` it is charged instead: one allocation's steps below, :func:`by_counts` and the finer
    sums; over several epochs it moved the rate chosen for one allocation of 4 of 100 over 10 epochs at 1e-10 to
    one that composes worse, 11.366 to 10.870 below), so each cell
    keeps the tilt whose allowance, untilted, is least there (far in the upper tail: the steepest tilt).

    Each tilt is transformed on as many cells as its sum reaches (:func:`_reach`, at least ``n``), and what
    lies past them, at most :data:`WRAP_MASS` of the tilted sum, wraps onto the cells read: added to the
    allowance (module doc, "The sum's reach"). A tilt that reaches past :data:`TILT_REACH` times ``n`` is
    not transformed (its mass is far past the cells read). A plain sum that reaches past ``n`` (at most
    :data:`SIZE_LIMIT`) is transformed plain only, wrapped around ``n``: its cells merge ``s`` and ``s + n``, a
    garbling, which a tilt would weigh wrongly. ``cache``: :func:`_reach`'s."""
    s = np.arange(n) * dx
    best, error = np.zeros(n), np.full(n, np.inf)
    whole = sum(count * (masses.size - 1) for masses, count in terms) + 1
    # wrapped (a plain sum longer than n): s and s + n merge, which the untilting by e^(-theta s dx) would
    # not know; only the plain transform's merged law is then a garbling
    wraps = _reach(terms, dx, 0.0, cache) > n
    for theta, reach in _tilt_reaches(terms, n, dx, thetas, cache):
        effort.checkpoint()  # a tilt's transforms are one part: a step that overran on a loaded machine stops here
        if wraps:
            size, past = n, 0.0
        else:
            size = _fft.next_fast_len(reach, real=True)
            past = WRAP_MASS if size < whole else 0.0
        log_scale, tilted, spectra = 0.0, [], []
        for masses, count in terms:
            if count == 0:
                continue
            weights, one_scale, transform = _tilted(masses, dx, theta, size, cache)
            log_scale += count * one_scale
            tilted.append(weights)
            spectra.append((transform, count))
        law = _fft.irfft(_power(spectra), size)[:n]
        noise = (_entry_noise if per_cell else _noise)(size, sum(count for _, count in terms), tilted) + past
        with np.errstate(over="ignore"):
            scale = np.exp(np.minimum(log_scale - theta * s, 700.0))
        here = scale * noise
        better = here < error
        best[better], error[better] = (scale * law)[better], here[better]
    return np.maximum(best - error, 0.0), best + error


def _tilted(masses: np.ndarray, dx: float, theta: float, size: int, cache: dict | None
            ) -> tuple[np.ndarray, float, np.ndarray]:
    """One term's cells tilted by ``e^(theta j dx)`` and normalised, the logarithm of the normaliser, and their
    transform on ``size`` points; kept in ``cache`` (as :func:`_reach`'s, keyed by the array's identity) for
    the other sums of one computation that hold the same term (a rate's counts and members' splits)."""
    key = ("tilted", id(masses), theta, size)
    if cache is not None and key in cache:
        return cache[key]
    with np.errstate(divide="ignore"):
        logs = np.log(masses) + theta * np.arange(masses.size) * dx
    top = float(np.max(logs))
    weights = np.exp(logs - top)
    total = float(weights.sum())
    weights /= total
    out = (weights, top + math.log(total), _fft.rfft(weights, size))
    if cache is not None:
        cache[key] = out
    return out


def count_seconds(ratio, t: int, k: int, dx: float = CELL, thetas: tuple[float, ...] = TILTS,
                  chosen: dict[int, int] | None = None) -> float:
    """Estimated seconds of :func:`by_counts` at the cell ``dx`` (from the FFT sizes and the counts kept,
    never measured): per rate and count, ``min(k, n) + 2`` sums of each law's size (Q's and P's for each
    number of members among the ``n``), each tilt up to five transforms (four terms forward, one back) of
    :data:`_TRANSFORM_SECONDS`, and :data:`_CALL_SECONDS`. Measured on 2 cores, 2026-12, over 42 steps of 0.1
    to 36 s (2 to 25 of 8 to 993, sigma 0.6 to 2.6, cells 0.05 to 0.01): 0.87 to 2.8 times the time taken,
    median 1.36 (it is interruptible: :func:`~.random_allocation._overdue_kept`; 18 of 234 at sigma 0.74, cells
    0.05: 43.7 s estimated, 35.9 s taken). Since the terms' forward transforms are shared by a rate's sums
    (:func:`_tilted`) and powers are taken by squaring, each sum costs :data:`_SHARED_SUM` of that."""
    terms = _SHARED_SUM * sum(min(k, c) + 2 for c in _kept_counts(ratio, t, k))
    total = _CALL_SECONDS
    rates = count_rates(t, k)
    # every other rate, or (finer cells) five of them per count; the choice on CHOOSING_CELL made before (chosen)
    share = 0.5 if dx >= CHOOSING_CELL else min((2 * CHOSEN_NEIGHBOURS + 1) / len(rates), 1.0)
    for r in rates:
        total += terms * share * _transforms_seconds(ratio, t, k, r, dx, thetas)
        if dx < CHOOSING_CELL and not chosen:  # every other rate on the choosing cells first
            total += 0.5 * terms * _transforms_seconds(ratio, t, k, r, CHOOSING_CELL, thetas)
    return total


def count_rates(t: int, k: int) -> tuple[float, ...]:
    """The rates of :func:`by_counts`, largest first."""
    base = math.log(k / max(t - k, 1))
    return tuple(math.exp(base + j * RATE_STEP) for j in range(4, -17, -1))


def _cut(t: int, k: int) -> float:
    return math.log((t - k) / k)


def _kept_counts(ratio, t: int, k: int) -> list[int]:
    masses = _count_masses(ratio, t, k, (_cut(t, k),))
    return sorted(n for (n,), m in masses.items() if m > _COUNT_FLOOR)


def _count_masses(ratio, t: int, k: int, cuts: tuple[float, ...]) -> dict[tuple[int, ...], float]:
    """P-masses of the count vectors (databases with ``log W`` above each cut; the members taken first, by
    exchangeability), by adding the databases one at a time."""
    q, p = ratio.cells(np.concatenate([[0.0], np.exp(np.asarray(cuts)), [np.inf]]))
    bands = len(cuts) + 1
    law = np.zeros((t + 1,) * len(cuts))
    law[(0,) * len(cuts)] = 1.0
    for masses, count in ((p, k), (q, t - k)):
        for _ in range(count):
            effort.checkpoint()  # two cuts: (t + 1)^2 a database (seconds at hundreds of databases)
            new = masses[0] * law
            for b in range(1, bands):  # a database in band b adds one to the counts of cuts 1..b
                shifted = law
                for axis in range(b):
                    shifted = np.roll(shifted, 1, axis=axis)
                    index = [slice(None)] * len(cuts)
                    index[axis] = 0
                    shifted[tuple(index)] = 0.0
                new = new + masses[b] * shifted
            law = new
    return {tuple(int(i) for i in index): float(law[index]) for index in zip(*np.nonzero(law > 0))}


def _band_cells(ratio, r: float, dx: float, cut: float) -> dict[tuple[str, bool], np.ndarray]:
    """The cells of :func:`_cells` split at ``W = e^cut``: (Q or P, above the cut) -> masses."""
    q, _ = _cells(ratio, r, dx)
    edges = np.append(np.expm1(np.arange(q.size) * dx) / r, np.inf)  # the kept cells, the last unbounded
    fine = np.unique(np.append(edges, math.exp(cut)))
    q_fine, p_fine = ratio.cells(fine)
    cell = np.searchsorted(edges, fine[:-1], side="right") - 1
    above = fine[:-1] >= math.exp(cut)
    out = {}
    for name, masses in (("q", q_fine), ("p", p_fine)):
        for side in (False, True):
            band = np.zeros(q.size)
            np.add.at(band, cell[above == side], masses[above == side])
            out[name, side] = band
    return out


#: e^this is near the largest double (a reading's factor e^eps is capped there).
_LOG_LARGEST = 709.0


def by_counts(ratio, t: int, k: int, target: float, dx: float = CELL, thetas: tuple[float, ...] = TILTS,
              per_cell: bool = False, chosen: dict[int, int] | None = None) -> _Law | None:
    """The k-of-t pair garbled by ``(N, T_{r(N)})`` (module doc, "A rate per count"), direction P||Q: its law
    (every count's cells together, the round-off applied cell by cell), each count's rate the one that reads
    largest at ``target`` (an epsilon). On cells of :data:`CHOOSING_CELL` or coarser every other rate of
    :func:`count_rates` is read (the lattice ``2 RATE_STEP`` apart); on finer cells each count's rate is the one
    chosen so on :data:`CHOOSING_CELL` and its :data:`CHOSEN_NEIGHBOURS` on either side (any rate is a garbling:
    sound). ``chosen``: count -> the index of its rate in :func:`count_rates`, filled where the choice is made
    on :data:`CHOOSING_CELL` and read on finer cells (one computation's steps, so that the finest does not
    choose again; empty: it chooses itself). None for a ratio with P-mass outside Q's support."""
    if not 1 < k < t:
        raise ValueError(f"k must be in (1, t), got k = {k}, t = {t}")
    if not (math.isfinite(dx) and dx > 0.0):
        raise ValueError(f"dx must be a positive number, got dx = {dx!r}")
    if ratio.singular > 0 or ratio.trivial:
        return None
    counts = _kept_counts(ratio, t, k)
    lattice = range(0, len(count_rates(t, k)), 2)
    if dx < CHOOSING_CELL:
        if not chosen:
            choice = _count_readings(ratio, t, k, target, CHOOSING_CELL, thetas, per_cell, {n: lattice for n in counts})
            chosen = {} if chosen is None else chosen
            chosen.update({n: i for n, (_, _, _, i) in choice.items()})
        last = len(count_rates(t, k)) - 1
        tries = {n: range(max(i - CHOSEN_NEIGHBOURS, 0), min(i + CHOSEN_NEIGHBOURS, last) + 1)
                 for n, i in chosen.items()}
    else:
        tries = {n: lattice for n in counts}
    best = _count_readings(ratio, t, k, target, dx, thetas, per_cell, tries)
    if dx == CHOOSING_CELL and chosen is not None:
        chosen.clear()
        chosen.update({n: i for n, (_, _, _, i) in best.items()})
    if not best:
        return None
    p_low = np.concatenate([p for _, p, _, _ in best.values()])
    q_high = np.concatenate([q for _, _, q, _ in best.values()])
    keep = p_low > 0
    with np.errstate(divide="ignore"):
        loss = np.log(p_low[keep]) - np.log(q_high[keep])
    return _Law(loss, p_low[keep], 0.0)


#: :func:`by_counts` on finer cells chooses each count's rate on these first, and reads the chosen rate and
#: :data:`CHOSEN_NEIGHBOURS` on either side of it on the finer cells. Measured (one quiet core, cells 0.005):
#: sigma 1.17, 10 of 393, delta 1e-10, every rate 3.4794 in 0.96 s, chosen on 0.02 with two neighbours 3.4794 in
#: 0.56 s (on 0.05 with one 3.4476: the coarse cells' blur moves the best rate); sigma 1.06, 11 of 310, 5.19 in
#: 2.57 s and 1.48 s; sigma 1.15, 13 of 505, 1e-8, 3.508 in 1.42 s and 0.89 s.
CHOOSING_CELL = 0.02
CHOSEN_NEIGHBOURS = 2


def _count_readings(ratio, t: int, k: int, target: float, dx: float, thetas: tuple[float, ...], per_cell: bool,
                    tries) -> dict[int, tuple[float, np.ndarray, np.ndarray, int]]:
    """Each count's best rate among its ``tries`` (indices into :func:`count_rates`) at ``target``: count ->
    (its reading, P's lower masses, Q's upper masses, the rate's index)."""
    cut = _cut(t, k)
    rates = count_rates(t, k)
    best: dict[int, tuple[float, np.ndarray, np.ndarray, int]] = {}
    for i, r in enumerate(rates):
        here = [n for n, indices in tries.items() if i in indices]
        if not here:
            continue
        cells = _band_cells(ratio, r, dx, cut)
        cache: dict = {}
        for n in here:
            effort.checkpoint()  # a count is short: a step that overran on a loaded machine stops here
            q_terms = [(cells["q", False], t - n), (cells["q", True], n)]
            if any(c > 0 and not np.any(m > 0) for m, c in q_terms):
                continue  # a band of no mass: the count is impossible
            p_terms = {j: [(cells["p", True], j), (cells["p", False], k - j), (cells["q", True], n - j),
                           (cells["q", False], t - k - n + j)] for j in range(max(0, n - (t - k)), min(k, n) + 1)}
            p_terms = {j: terms for j, terms in p_terms.items() if not any(c > 0 and not np.any(m > 0) for m, c in terms)}
            n_fft = _length([q_terms, *p_terms.values()], dx, cache)
            q_high = _convolved(q_terms, n_fft, dx, thetas, per_cell, cache)[1] * math.exp(_log_choose(t, n))
            p_low = np.zeros(n_fft)
            for j, terms in p_terms.items():
                p_low += _convolved(terms, n_fft, dx, thetas, per_cell, cache)[0] * math.exp(_log_choose(k, j) + _log_choose(t - k, n - j))
            # the count's reading at the target, which chooses its rate (any rate is a garbling: sound); e^target
            # capped below the largest double (beyond it, only the outcomes without Q-mass count anyway)
            value = float(np.sum(np.maximum(p_low - math.exp(min(target, _LOG_LARGEST)) * q_high, 0.0)))
            if n not in best or value > best[n][0]:
                best[n] = (value, p_low, q_high, i)
    return best


def _log_choose(t: int, k: int) -> float:
    return math.lgamma(t + 1) - math.lgamma(k + 1) - math.lgamma(t - k + 1)

"""k of t and epochs: the decomposition into 1-of-(block size) allocations composed above, a garbling below.

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
*Lower*: the garbling by ``S_J`` (:mod:`.uniform_grid`, "Certified rounding"), with ``k`` tilted terms. ``exact`` is never claimed; the report
gives the gap.

Repeats
-------
``epochs`` independent allocations (fresh each epoch, as DP-SGD reshuffles) compose: the dominating pairs
above and the garbled pairs below are composed by the batch engine
(:func:`gce.accounting.batch.compose_laws`). Several invocations on one database (``repeat``) are one
Gaussian of ``mu = sqrt(sum mu_i^2)`` (Dong, Roth and Su): the same allocation, not a fresh one.

References
----------
Feldman, Shenfeld, "Privacy amplification by random allocation", arXiv 2502.08202.
Dong, Roth, Su, "Gaussian differential privacy", J. R. Stat. Soc. B 2022.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ...accounting import batch
from ...accounting.curves import PrivacyCurve
from ...errors import NumericalLimitError
from .bracket import (_SETTLED, _STOPPED, _WHICH, AllocationCurve, LowerBound, _at, _DirectionLower, _fft_seconds, _Law,
                      _may_refine, _reading, _width)
from .log_statistic import CELL as _LOG_CELL
from .log_statistic import laws as _log_laws
from .log_statistic import rates as _log_rates
from .log_statistic import seconds as _log_seconds
from .log_statistic import tilts as _log_tilts
from .one_of_t import _single
from .ratios import CanonicalRatio, GaussianRatio, LaplaceRatio, _phi_between
from .uniform_grid import GRID_LIMIT, START_POINTS, _direction_grid, _lower_laws, _upper_laws


#: Cells of the garbled k-of-t pair (the lower bound when k > 1 or several epochs).
_LOWER_POINTS = 2**15
#: Loss grid of the composition (k > 1, epochs): relative to the requested width.
_LOSS_GRID_SHARE = 0.25
#: The first loss grid of the composition, in multiples of its estimate (halved while needed; at most 0.05).
_COARSE = 8.0


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


def _composed(ratio: GaussianRatio, t: int, k: int, epochs: int, rtol: float, delta: float | None,
              epsilon: float | None, tail: float, upper: AllocationCurve | None = None) -> AllocationCurve:
    """k of t and/or several epochs: the decomposition's 1-of-m pairs composed above, a garbled pair composed
    below (module doc), on the batch engine's loss grid. The cells and the loss grid are refined together
    while the decomposition's own discretisation bracket is wider than ``rtol / 8`` (the loss grid from
    :data:`_COARSE` times its estimate, halved alone down to it, then with the cells): a schedule that depends
    on the question only, stopped only by the time limit (:func:`~.bracket._may_refine`, each step's cost
    estimated from its grids' sizes, :func:`_step_seconds`)."""
    sizes = _blocks(t, k)
    copies = sum(count for _, count in sizes) * epochs
    points = START_POINTS
    interval = None
    blocks_lower, kept = None, (points, interval)  # kept: the last grids that fit
    last = math.inf  # the width of the last step kept
    stopped = False
    # Epochs of 1 of t: a second lower bound, the best garbled pair of one allocation by both methods
    # (uniform and geometric grids: :func:`_single`; at small noise the uniform grid's garbled pair is a
    # poor lower bound), composed over the epochs on the same loss grid; the larger of the two is kept.
    single = composed_lower = None
    if upper is not None:  # k > 1: the decomposition's blocks composed elsewhere (epochs.compose_epochs)
        return _below_k_of_t(ratio, t, k, epochs, rtol, delta, epsilon, tail, upper, sizes)
    if k == 1 and t > 1 and not _exact_blocks(ratio, t):
        laws, _, stopped = _single(ratio, t, rtol / _SINGLE_SHARE, delta, epsilon, tail)  # composed: errors add up
        target = delta if epsilon is None else float(PrivacyCurve.delta(laws["remove"][0].curve(), epsilon))
        floor = max(math.log(max(1e-6 * target, 1e-300) / epochs) if target else -40.0, -40.0)
        single = [_merged_below(laws[w][1], floor) for w in _WHICH]
    while True:
        try:
            blocks = [(_block_laws(ratio, size, points, tail), count) for size, count in sizes]
            if interval is None:  # coarse to fine: the first steps are cheap (the time limit may stop any)
                target = _loss_interval([(up, count * epochs) for (up, _), count in blocks], rtol, delta, epsilon)
                interval = min(target * _COARSE, max(target, 0.05))
            if blocks_lower is None and not _may_refine(_first_compose_seconds(blocks, epochs, interval, single),
                                                        "allocation (first composition)", delta, epsilon, math.inf):
                raise _NoRoom("the time limit leaves no room for the first composition")
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
        width = _width(low, high)
        # the cells refined and the bracket not narrower by a twentieth: at small deltas the uniform loss
        # grid's round-off (absolute) grows with the grids (14 of 724 at 1e-10: unbounded at every step;
        # sigma 1.8, 5 of 12 at 1e-10: 10.7% wide, then 11.8%, 13.1%, 14.4%), so no finer step pays; a
        # wider one is not kept (the steps after this one, :func:`~.random_allocation.allocation_curve`,
        # take the time: the blocks at any delta, of two members, the circle)
        stalled = blocks_lower is not None and points > kept[0] and not width < _STALLED * last
        if stalled and width > last:
            points, interval = kept
            break
        composed, blocks_lower, kept = trial, trial_lower, (points, interval)
        if stalled:
            break
        last = width
        # settled: within a few times the round-off allowance (e.g. a delta of 0 at the target), which
        # refining only grows
        if width <= rtol / 8 or high - low <= _SETTLED * slack * grow or points >= GRID_LIMIT // 8:
            break
        finer = points if all(_exact_blocks(ratio, size) for size, _ in sizes) else 2 * points  # exact blocks
        if interval > target:  # the loss grid down to its estimate first, then the cells with it
            finer = points
        windows = _windows(trial, composed_lower, 2.0, finer > points)  # (composed_lower: None without single)
        if not _may_refine(_step_seconds(ratio, sizes, blocks, finer, tail, windows),
                           "allocation refinement (decomposition)", delta, epsilon, width):
            stopped = True
            break
        points, interval = finer, interval / 2
    if k == 1:
        lower = blocks_lower  # the blocks are 1-of-t allocations: their garbled pairs composed bound it below
        how = "garbled pairs composed" + ("" if single is None else f" (also {', '.join(laws[w][2] for w in _WHICH)})")
    else:
        lower, how, below_stopped = _k_of_t_lower(ratio, t, k, epochs, rtol, interval, delta, epsilon, tail,
                                                  composed)
        stopped = stopped or below_stopped
    blocks_text = " + ".join(f"{count * epochs} x (1 of {size})" for size, count in sizes)
    return AllocationCurve([composed], lower, f"{k} of {t}, {ratio.label}, {epochs} epoch(s): upper "
                                              f"{blocks_text} composed (Feldman and Shenfeld decomposition), "
                                              f"{points:,} cells, loss grid {interval:.3g}; lower: {how}"
                                              f"{_STOPPED if stopped else ''}",
                           directions=(composed.direction(0), composed.direction(1)))


def _k_of_t_lower(ratio, t: int, k: int, epochs: int, rtol: float, interval: float, delta: float | None,
                  epsilon: float | None, tail: float, composed) -> tuple[LowerBound, str, bool]:
    """k > 1: the lower curve of k of t over the epochs (module doc: the garbled k-of-t pair composed, and the
    sums of logarithms where the sum's garbling leaves the bracket against ``composed``, the upper curve,
    wider than it should be), its description, and whether the time limit stopped a step."""
    stopped = False
    if not _may_refine(_lower_seconds(ratio, t, epochs, tail, interval, composed),
                       "allocation (the garbled k-of-t pair)", delta, epsilon, math.inf):
        from ...accounting.curves import GaussianCurve
        lower = LowerBound([(GaussianCurve(0.0), 0.0, 0.0)])  # nothing certified here: 0 (Gaussians: see the caller)
        how = "not computed (the time limit)"
        stopped = True
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
        parts = [(_DirectionLower(garbled.lower), slack * grow, slack * grow)]
        how = f"the {k}-of-{t} pair garbled by sum_i W_i, composed"
        sum_low, high = _at(composed, LowerBound(parts), delta, epsilon)
        if _width(sum_low, high) <= rtol:  # the sum's garbling meets the decomposition already
            pass
        elif _may_refine(_log_seconds(ratio, t, k, thetas=_sum_tilts(delta, epochs)), "allocation (the k-of-t pair garbled by sums of "
                         "logarithms)", delta, epsilon, _width(sum_low, high)):
            best = _log_statistic_part(ratio, t, k, epochs, interval, delta, epsilon)
            if best is not None and _reading(LowerBound([best[0]]), delta, epsilon) > sum_low:
                parts.append(best[0])
                how = (f"the {k}-of-{t} pair garbled by sum_i floor(log(1 + r W_i) / {_LOG_CELL:g}), "
                       f"r = {best[1]:.4g}" + (", composed" if epochs > 1 else ""))
            else:
                how += " (beside it, by sums of logarithms: no higher)"
        else:
            stopped = True
        lower = LowerBound(parts)
    return lower, how, stopped


def _below_k_of_t(ratio, t: int, k: int, epochs: int, rtol: float, delta: float | None, epsilon: float | None,
                  tail: float, upper: AllocationCurve, sizes) -> AllocationCurve:
    """k of t over several epochs with the decomposition's upper curve ``upper`` computed already (its blocks
    composed by :func:`~.epochs.compose_epochs`: at any delta), and the true k-of-t lower curve below."""
    # the loss grid of the lower composition: h per copy below, a share of rtol of the composed epsilon
    scale = float(upper.epsilon(delta)) if epsilon is None else float(epsilon)
    scale = scale if math.isfinite(scale) and scale > 0 else 1.0
    interval = float(min(max(_LOSS_GRID_SHARE * rtol * scale / epochs, 1e-6), 0.05))
    lower, how, stopped = _k_of_t_lower(ratio, t, k, epochs, rtol, interval, delta, epsilon, tail, upper)
    blocks_text = " + ".join(f"{count * epochs} x (1 of {size})" for size, count in sizes)
    return AllocationCurve(upper._upper, lower, f"{k} of {t}, {ratio.label}, {epochs} epoch(s): upper {blocks_text} "
                                                f"composed (Feldman and Shenfeld decomposition; {upper.description}); "
                                                f"lower: {how}{_STOPPED if stopped else ''}",
                           directions=upper.directions)


def _sum_tilts(delta: float | None, epochs: int) -> tuple[float, ...]:
    """The tilts of the sums of logarithms (:func:`~.log_statistic.tilts`) for one allocation; over several
    epochs those of a delta near 1e-5 (each epoch's decisive cells are far less extreme than the composed
    target's, and the rate is chosen by one epoch's reading at the target: at the deep tilts it chose a rate
    whose composition certified less, sigma 1, 4 of 100, 10 epochs at 1e-10: 10.87 against 11.37)."""
    return _log_tilts(delta if epochs == 1 else 1.0)


def _log_statistic_part(ratio, t: int, k: int, epochs: int, interval: float, delta: float | None,
                        epsilon: float | None):
    """The k-of-t pair garbled by the sum of logarithms (:mod:`.log_statistic`) at the rate of
    :func:`~.log_statistic.rates` that reads highest at the target, as a part of a :class:`LowerBound`
    (composed over the epochs on the loss grid ``interval`` when there are several), and that rate; None when
    no rate certifies anything at the target. Over several epochs the :data:`_COMPOSED_RATES` rates that read
    highest on one epoch are composed and the composition that reads highest is kept: one epoch's reading
    does not order the compositions (sigma 1, 4 of 100, 10 epochs, delta 1e-10: one epoch read 3.923 at
    the rate 0.0208 and 3.917 at 0.0417, whose compositions certify 10.874 and 11.366)."""
    readings = []
    for r in _log_rates(t, k):
        remove, add = _log_laws(ratio, t, k, r, thetas=_sum_tilts(delta, epochs), per_cell=epochs == 1)
        bound = LowerBound([(remove.curve(), 0.0, 0.0), (add.curve(), 0.0, 0.0)])
        value = _reading(bound, delta, epsilon)
        if value > 0.0:
            readings.append((value, r, (remove, add)))
    if not readings:
        return None
    readings.sort(key=lambda reading: -reading[0])
    if epochs == 1:
        _, rate, best = readings[0]
        return (LowerBound([(law.curve(), 0.0, 0.0) for law in best]), 0.0, 0.0), rate
    chosen, chosen_value = None, -math.inf
    for _, rate, best in readings[:_COMPOSED_RATES]:
        laws = [[batch.loss_law(law.loss, law.mass, epochs, interval, upper=False, infinite=law.infinite)]
                for law in best]
        try:
            composed = batch.compose_laws(laws, laws, interval)
        except NumericalLimitError:
            continue
        part = (_DirectionLower(composed.lower), 0.0, 0.0)
        value = _reading(LowerBound([part]), delta, epsilon)
        if value > chosen_value:
            chosen, chosen_value = (part, rate), value
    return chosen


#: How many rates of the sums of logarithms are composed over the epochs (:func:`_log_statistic_part`).
_COMPOSED_RATES = 3


class _NoRoom(Exception):
    """The time limit leaves no room for the first step of the schedule (:func:`_composed`): the caller
    answers in closed form."""


#: A refinement of the cells that narrows the decomposition's bracket by less than this factor ends them
#: (:func:`_composed`).
_STALLED = 0.95

#: The 1-of-t laws that bound epochs of 1 of t below are asked for this many times finer a bracket than
#: the composition (their errors add up over the epochs).
_SINGLE_SHARE = 16.0


#: Seconds per unit of transform work (``n log2 n``, ``n`` the points of a block's FFT grid) of one direction's
#: laws of a block, above and below (:func:`_block_laws`), below :data:`_LAW_CELLS` cells and from them on:
#: measured 0.9e-8 to 1.6e-8, then 2.2e-8 to 3.7e-8 on 2 cores, 2026-12, quiet (4 to 19 of 12 to 724 databases,
#: sigma 0.6 to 2.5, 4,096 to 131,072 cells; up to 2.8e-8 and 5.7e-8 beside another process). The step is not
#: interruptible: the constants are the largest measured quiet, with a margin.
_LAW_SECONDS = (2e-8, 4e-8)
_LAW_CELLS = 2**14
#: The same for the garbled k-of-t pair's laws of a direction (:func:`_lower_seconds`: the laws below only, half
#: a block's): measured 0.8e-8 to 1.9e-8 over 28 cases (2 to 25 of 8 to 999, sigma 0.5 to 2.8), 2 cores, 2026-12;
#: then 2.5e-8 left the whole step 2 to 5 times under its estimate, and at 6 of 827 (sigma 2.41, delta 1e-5; 0.96 s
#: estimated at 4.54 s) it did not fit in the default 5 s, which cost the bracket 1.5%. Measured again (one quiet
#: core, 2026-12): 3.2e-9 to 9.5e-9 over 8 cases (2 to 25 of 12 to 999, sigma 0.5 to 2.8, 0.13 to 3 million points).
_GARBLED_SECONDS = 1.2e-8
#: Seconds per atom of the blocks' laws put on the loss grid (:func:`gce.accounting.batch.loss_law`, the
#: window's moments and the folding before the transform): about 7e-8, measured with :data:`_COMPOSE_SECONDS`.
_ATOM_SECONDS = 8e-8
#: Seconds per unit of transform work (``S log2 S``, ``S`` the window's grid points) of one direction composed,
#: above or below, the curve read at the target included: 2.9e-8 fitted beside :data:`_ATOM_SECONDS` over 5
#: cases of 40 refinements (1.5e-8 to 5.6e-8 alone), 2 cores, 2026-12.
_COMPOSE_SECONDS = 3.5e-8
#: A refinement's window in units of the loss, at most this many times the last one's: the laws refined add
#: mass to their far ends (measured 0.8 to 1.28 over the same refinements, one of 2.6: 15 of 613 at sigma 2.5,
#: whose upper window widened ninefold at 8,192 cells and narrowed again at the next).
_WINDOW_GROWTH = 1.3


def _step_seconds(ratio, sizes, blocks, points: int, tail: float, windows: list[float]) -> float:
    """Estimated seconds of one step of :func:`_composed` at ``points`` cells (never measured: a function of the
    question): each block's laws on its FFT grid (:data:`_LAW_SECONDS` times ``n log2 n`` a direction),
    their atoms put on the loss grid (:data:`_ATOM_SECONDS`: a law above and one below a direction, as many
    atoms as the grid has points) and the compositions, whose sizes ``windows`` are read from the last
    composition (:func:`_windows`). The window of a composition is where the composed law has its mass (the
    Chernoff window of :func:`gce.accounting.batch.convolve`): about ``sqrt(copies)`` times a block's
    spread, not the copies' supports laid end to end (that span, the estimate until 2026-12, was 50 to
    100 times too large: 4.66 s estimated for a step of 0.04 s, 14 of 724 at sigma 1.71). A step that fails
    (a grid beyond :data:`~.uniform_grid.GRID_LIMIT`, a window surely beyond the batch engine's) ends there:
    it costs what comes before. Measured 1.1 to 4 times the steps' time quiet (median 2.4 over the steps of
    0.1 s or more; 2 to 25 of 8 to 999, sigma 0.5 to 2.8, delta 1e-5 to 1e-10; 2 cores, 2026-12): the step is
    not interruptible, and beside another process it takes up to twice as long."""
    work = atoms = 0.0
    unit = _LAW_SECONDS[points >= _LAW_CELLS]
    for (size, _), ((ups, lows), _) in zip(sizes, blocks):
        if _exact_blocks(ratio, size) or (size == 1 and isinstance(ratio, (GaussianRatio, LaplaceRatio))):
            atoms += sum(law.loss.size for law in (*ups, *lows))  # fixed laws: the same atoms
            continue
        for which in _WHICH:
            try:
                n = _direction_grid(ratio, size, points, tail, which).size
            except NumericalLimitError:  # _block_laws stops here
                return unit * work
            work += n * math.log2(n)
            atoms += 2.0 * n
    composed = []
    for window in windows:  # in the order composed: the first refused ends the step
        if window > _WINDOW_GROWTH * batch.GRID_LIMIT:
            break
        composed.append(window)
    return unit * work + _ATOM_SECONDS * atoms + _compose_seconds(composed)


def _lower_seconds(ratio, t: int, epochs: int, tail: float, interval: float, composed) -> float:
    """Estimated seconds of the garbled k-of-t pair below (:func:`_k_of_t_lower`): its laws on the FFT grid of
    :data:`_LOWER_POINTS` cells (:data:`_GARBLED_SECONDS` times ``n log2 n`` a direction), their atoms on the
    loss grid, and their composition on the loss grid ``interval`` (above and below). One allocation: its
    windows at most the decomposition's on the same loss grid (``composed``, whose pair dominates the one
    garbled here, so spreads more). Several (``composed`` from
    :func:`~.epochs.compose_epochs`, on other grids): a span of about 40 a copy over the interval, as
    :func:`~.bracket._fft_seconds` times two (not measured again)."""
    work = atoms = 0.0
    for which in _WHICH:
        try:
            n = _direction_grid(ratio, t, _LOWER_POINTS, tail, which).size
        except NumericalLimitError:
            continue
        work += n * math.log2(n)
        atoms += n
    if isinstance(composed, batch.LawCurve):
        below = _compose_seconds(_windows(composed, None, 1.0, False))
    else:
        below = 2.0 * _fft_seconds(int(min(40.0 * epochs / interval, 2**31)) + 1)
    return _GARBLED_SECONDS * work + _ATOM_SECONDS * atoms + below


def _compose_seconds(windows: list[float]) -> float:
    """Estimated seconds of compositions of ``windows`` grid points each (:data:`_COMPOSE_SECONDS`)."""
    return _COMPOSE_SECONDS * sum(w * math.log2(max(w, 2.0)) for w in windows)


def _windows(composed, composed_lower, finer: float, refined: bool) -> list[float]:
    """The windows (grid points) of the next compositions like ``composed`` (a
    :class:`~gce.accounting.batch.LawCurve`: its directions above and below; ``composed_lower``, the garbled
    1-of-t pairs' lower curve, composed above too, or None) on a loss grid ``finer`` times finer: the last
    ones' times ``finer``, and :data:`_WINDOW_GROWTH` when the laws are ``refined`` (a loss grid halved alone
    keeps the window, in units of the loss, to 1%)."""
    sizes = [part.size for part in composed._parts] + [part.size for part in composed.lower._parts]
    if composed_lower is not None:
        sizes += 2 * [part.size for part in composed_lower._parts]
    growth = _WINDOW_GROWTH if refined else 1.0
    return [finer * growth * size for size in sizes]


def _first_compose_seconds(blocks, epochs: int, interval: float, single) -> float:
    """Estimated seconds of the first composition of :func:`_composed` (:func:`_step_seconds` without the
    laws, at hand), its windows from :func:`_first_windows`; the garbled 1-of-t pairs (``single``, or None)
    as wide as the blocks' below."""
    windows = _first_windows(blocks, epochs, interval)
    if single is not None:  # composed above and below alike
        windows += 2 * windows[2:]
    atoms = sum(law.loss.size for (ups, lows), _ in blocks for law in (*ups, *lows))
    return _ATOM_SECONDS * atoms + _compose_seconds(windows)


def _first_windows(blocks, epochs: int, interval: float) -> list[float]:
    """The windows (grid points on the loss grid ``interval``) of the blocks' laws composed, above then below,
    each direction: computed as :func:`gce.accounting.batch.convolve` does (the Chernoff window of
    :func:`gce.accounting.batch._window`), from the laws put on a grid of at most 1,024 cells a law's span (a
    few milliseconds; the window moves by at most two of those cells)."""
    windows = []
    for side in range(2):  # above, below
        for d in range(2):
            laws = [(pair[side][d], count * epochs) for pair, count in blocks]
            finite = [law.loss[np.isfinite(law.loss) & (law.mass > 0)] for law, _ in laws]
            span = max((float(np.ptp(f)) for f in finite if f.size), default=0.0)
            coarse = max(interval, span / 1024.0)
            rounded = [batch.loss_law(law.loss, law.mass, copies, coarse, upper=side == 0, infinite=law.infinite)
                       for law, copies in laws]
            low, high, _, _ = batch._window(rounded, coarse)
            windows.append((high - low + 2) * coarse / interval)
    return windows


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
    (package doc), and P's mass outside it is ``delta`` (the member's output 0); Q's outside P's is
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

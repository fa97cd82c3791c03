"""The public entry point of random allocation: "in none" against "in exactly k of t" (:func:`allocation_curve`).

One epoch of 1 of t is computed on the grids of :mod:`.one_of_t`, k of t and several epochs by the
decomposition of :mod:`.decomposition`; Gaussians beyond the grids (``mu >= MU_LIMIT``) and every database a
member (k = t) in closed form.

Gaussian allocations are also never reported above the composition of their k members' Gaussians over the
epochs (joint convexity: the prior is a mixture of k-sets), which coarse grids at small noise can exceed.
"""

from __future__ import annotations

import math

import numpy as np

from ... import effort
from ...accounting.curves import PrivacyCurve
from ...errors import InvalidParameterError, NumericalLimitError
from ...resources import heap_kept
from ...validation import is_number
from .bracket import (_STOPPED, _Least, _WHICH, DEFAULT_RTOL, TAIL, AllocationCurve, LowerBound, _at,
                      _check_count, _check_target, _DirectionLower, _may_refine, _negligible, _reading, _target_text,
                      _width)
from .circle import FEW_DATABASES
from .circle import THRESHOLDS as CIRCLE_LEVELS
from .circle import circle_curve
from .circle import seconds as _circle_seconds
from .decomposition import _blocks, _composed, _exact_blocks, _loss_interval, _NoRoom
from .epochs import compose_epochs, epochs_tail
from .log_statistic import by_counts as _by_counts
from .log_statistic import COUNT_CELLS
from .log_statistic import tilts as _log_tilts
from .log_statistic import count_seconds as _count_seconds
from .log_statistic import laws as _log_laws
from .log_statistic import rates as _log_rates
from .log_statistic import seconds as _log_seconds
from .one_of_t import _single
from .power_sums import applies as _power_sums_apply
from .three_members import _three_laws, _three_seconds
from .two_members import (PAIR_RATIOS, RATIOS, _members_lower, _members_seconds, _pair_blocks, _pair_laws,
                          _pair_seconds)
from .ratios import _RATIOS, GaussianRatio
from .uniform_grid import START_POINTS, _linear_seconds


def allocation_curve(mu: float, t: int, k: int = 1, epochs: int = 1, rtol: float = DEFAULT_RTOL,
                     delta: float | None = 1e-6, epsilon: float | None = None,
                     tail: float = TAIL) -> AllocationCurve:
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
        :data:`GRID_LIMIT`; for k = 1 and one epoch, a uniform and a geometric grid: :mod:`.one_of_t`). It
        alone decides the work: the time limit of the running computation (:func:`gce.effort.current`)
        only stops a refinement that would not fit (the bracket is then wider than ``rtol``, still
        certified; the description and the deadline say so).
    delta, epsilon : float
        The target the width refers to: epsilon at ``delta`` (default) or, if ``epsilon`` is given, delta
        at ``epsilon``.
    tail : float
        P-mass beyond the clamp of one database's ratio, charged at infinite loss (with a delta target, up
        to ``1e-4 * delta``: it then costs at most that share of the bracket).

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
    with heap_kept():  # (the grids' large arrays reused, not faulted in again: resources.heap_kept)
        return _allocation_curve(mu, t, k, epochs, rtol, delta, epsilon, tail)


def _allocation_curve(mu, t: int, k: int, epochs: int, rtol: float, delta: float | None, epsilon: float | None,
                      tail: float) -> AllocationCurve:
    """:func:`allocation_curve`."""
    beyond = not isinstance(mu, _RATIOS) and is_number(mu) and mu >= MU_LIMIT
    ratio = mu if isinstance(mu, _RATIOS) or beyond else GaussianRatio(mu)
    t = _check_count(t, "t")
    k = _check_count(k, "k")
    epochs = _check_count(epochs, "epochs")
    if k > t:
        raise InvalidParameterError("k", f"must be <= t = {t}, got {k}")
    _check_target(delta, epsilon)
    if beyond:
        return _beyond_grids(float(mu), t, k, epochs)
    if not is_number(rtol) or not 0.0 < rtol < 1.0:
        raise InvalidParameterError("rtol", f"must be a number in (0, 1), got {rtol!r}")
    if epsilon is None and delta is None:
        delta = 1e-6
    elif epsilon is not None:  # the target is epsilon: the default delta must not size any grid (same question,
        delta = None  # same answer: GceAccountant's delta at an epsilon passes none)
    if epsilon is None and delta > 0:
        # The clamp's charge only has to be small against the target: a smaller clamp, a finer grid; over
        # several epochs each one's charge is a share of it (epochs.epochs_tail).
        tail = epochs_tail(delta, epochs * k if epochs > 1 else 1, tail)
    if isinstance(ratio, GaussianRatio) and (ratio.mu == 0.0 or t == k):
        return _plain(ratio.mu, k, epochs)
    if ratio.trivial:
        return _plain(0.0, k, epochs)
    negligible = _negligible(ratio.mu * math.sqrt(k * epochs), epsilon, delta) if isinstance(ratio, GaussianRatio) \
        else None
    if negligible:
        return _closed_forms(ratio.mu, t, k, epochs, negligible)
    if isinstance(ratio, GaussianRatio) and not _first_step_fits(ratio, t, k, epochs, tail, delta, epsilon):
        return _closed_forms(ratio.mu, t, k, epochs, "the time limit leaves no room for the first grid")
    if k == 1 and epochs == 1:
        laws, kept, stopped = _single(ratio, t, rtol, delta, epsilon, tail, ladder=True)
        # each direction: the least of its upper laws (each valid) and the largest of its lower ones
        upper = [_Least([law.curve() for law in kept[w][0]]) if len(kept[w][0]) > 1 else kept[w][0][0].curve()
                 for w in _WHICH]
        lower = LowerBound([(law.curve(), law.slack, law.slack_other) for w in _WHICH for law in kept[w][1]])
        grids = ", ".join(f"{w}: {laws[w][2]}" for w in _WHICH)
        curve = AllocationCurve(upper, lower, f"1 of {t}, {ratio.label} ({grids}){_STOPPED if stopped else ''}")
    elif k == 1 and not _exact_blocks(ratio, t):  # epochs of 1 of t (module epochs)
        try:
            curve = compose_epochs({(ratio, t): epochs}, {(ratio, t): epochs}, rtol, delta, epsilon, tail)
        except _NoRoom as why:
            if not isinstance(ratio, GaussianRatio):
                raise NumericalLimitError(f"random allocation: {why}") from None
            return _closed_forms(ratio.mu, t, k, epochs, str(why))
        except NumericalLimitError:  # no grid fits a law: the decomposition's own schedule (closed forms last)
            curve = _composed(ratio, t, k, epochs, rtol, delta, epsilon, tail)
    else:
        try:
            upper = None
            if k > 1 and epochs > 1 and not _exact_blocks(ratio, t // k):  # the blocks' epochs at any delta
                blocks = {(ratio, size): count * epochs for size, count in _blocks(t, k)}
                try:
                    upper = compose_epochs(blocks, blocks, rtol / 4, delta, epsilon, tail)
                except NumericalLimitError:
                    upper = None
            curve = _composed(ratio, t, k, epochs, rtol, delta, epsilon, tail, upper)
        except _NoRoom as why:
            if not isinstance(ratio, GaussianRatio):
                raise NumericalLimitError(f"random allocation: {why}") from None
            return _closed_forms(ratio.mu, t, k, epochs, str(why))

        def circle_first(bracket: AllocationCurve) -> bool:
            # the circle first (after the finer sums below, cheap): the blocks of members seldom tighten these
            return (epochs == 1 and bracket.directions is not None and 1 < k < t
                    and _circle_first(ratio, t, k, bracket, delta, epsilon))

        # the blocks composed again where the uniform grid is far off; after the circle where it comes first and
        # the direction Q||P is below the lower end (the circle then decides the upper end: _with_blocks_at_any_delta)
        again = k > 1 and epochs == 1 and not _exact_blocks(ratio, t // k)
        later = again and circle_first(curve) and _q_p_below(curve, delta, epsilon)
        if again and not later:
            curve = _with_blocks_at_any_delta(ratio, t, k, rtol, delta, epsilon, tail, curve)
        # (read on the blocks' curve where they came first: an upper end the uniform grid left unbounded may now be
        # bounded)
        circled = later or circle_first(curve)
        decomposition = curve.directions
        first = (0,) if CIRCLE_SECOND_LAST else None  # (the second level after the lower end's steps)
        circles: dict[str, object] = {}  # the last level of the circle computed (_with_circle), one computation's
        if circled:  # the sums below first (cheap): the circle's rates are chosen at the bracket's lower end
            for dx in dict.fromkeys((*COUNT_CELLS[1:], FINEST_SUMS)):
                curve = _overdue_kept(curve, "sums of logarithms", delta, epsilon, _with_finer_sums, ratio, t, k,
                                      rtol, delta, epsilon, curve, dx)
            curve = _overdue_kept(curve, "Cauchy's circle", delta, epsilon, _with_circle, ratio, t, k, rtol, delta,
                                  epsilon, tail, curve, decomposition, True, first, circles)
            if later:
                curve = _overdue_kept(curve, "the blocks composed again", delta, epsilon, _with_blocks_at_any_delta,
                                      ratio, t, k, rtol, delta, epsilon, tail, curve)
        pairs = _pairs_may_tighten(t, k, epochs)
        if k > 1 and pairs:
            curve = _overdue_kept(curve, "blocks of two", delta, epsilon, _with_pairs, ratio, t, k, epochs, rtol,
                                  delta, epsilon, tail, curve)
        if k > 2 and pairs:
            curve = _overdue_kept(curve, "blocks of three", delta, epsilon, _with_threes, ratio, t, k, epochs, rtol,
                                  delta, epsilon, tail, curve)
        if 1 < k < t and epochs == 1:  # one allocation: below, the circle above, finer cells below
            early = (decomposition is not None and not circled
                     and (not isinstance(ratio, GaussianRatio) or ratio.mu >= CIRCLE_EARLY_MU))
            if early:  # the circle before the lower end's rate per count (its seconds decide more there)
                curve = _overdue_kept(curve, "Cauchy's circle", delta, epsilon, _with_circle, ratio, t, k, rtol,
                                      delta, epsilon, tail, curve, decomposition, True, first, circles)
            chosen: dict[int, int] = {}  # the counts' rates, chosen by one step for the next (log_statistic)
            if not circled:  # (after the circle first, the finer cells choose their own rates: _with_counts_below)
                curve = _overdue_kept(curve, "a rate per count", delta, epsilon, _with_counts_below, ratio, t, k,
                                      rtol, delta, epsilon, curve, COUNT_CELLS[0], chosen)
            for dx in COUNT_CELLS[1:]:  # while wider than rtol (log_statistic, "The cell")
                if not circled:
                    curve = _overdue_kept(curve, "sums of logarithms", delta, epsilon, _with_finer_sums, ratio, t, k,
                                          rtol, delta, epsilon, curve, dx)
                curve = _overdue_kept(curve, "a rate per count", delta, epsilon, _with_counts_below, ratio, t, k,
                                      rtol, delta, epsilon, curve, dx, chosen)
            if not circled and FINEST_SUMS not in COUNT_CELLS:
                curve = _overdue_kept(curve, "sums of logarithms", delta, epsilon, _with_finer_sums, ratio, t, k,
                                      rtol, delta, epsilon, curve, FINEST_SUMS)
            if decomposition is not None and not circled and not early:
                # at large noise, last: the circle once the lower end has had its steps (_with_circle)
                curve = _overdue_kept(curve, "Cauchy's circle", delta, epsilon, _with_circle, ratio, t, k, rtol, delta,
                                      epsilon, tail, curve, decomposition, True, None, circles)
            elif first is not None and _CIRCLE_TEXT in curve.description:  # its second level, after the lower end
                curve = _overdue_kept(curve, "Cauchy's circle", delta, epsilon, _with_circle, ratio, t, k, rtol, delta,
                                      epsilon, tail, curve, decomposition, True, tuple(range(1, len(CIRCLE_LEVELS))),
                                      circles)
    if isinstance(ratio, GaussianRatio):
        return _no_worse_than_composition(curve, ratio.mu * math.sqrt(k * epochs), ratio.mu * k * math.sqrt(epochs / t))
    return curve


#: Beyond two members, a level of the blocks of two starts only when this many times its estimate fits in the
#: time left (:func:`_with_pairs`): their partition is itself a loss there, and a level took the time of the
#: steps after it. Measured within the default 5 s (2026-12, the blocks' moves computed once): sigma 1.8, 5 of
#: 12, delta 1e-10, the ratio 1.014 took 2.2 s and left the rate per count and the circle's second level no
#: time, [5.366, 5.486] against [5.375, 5.480] without it (an importance-sampled Monte Carlo puts epsilon near
#: 5.37); sigma 0.7, 5 of 20, 1e-10, the ratio 1.03 took 2.3 s: [16.251, 16.731] against [16.409, 16.707].
PAIRS_FINER_SHARE = 2.0
#: At two members (the blocks are then the pair itself), a level starts when this many times its estimate fits:
#: the estimates run up to 1.8 times short at large noise (:data:`~.two_members._UNIT_SECONDS`), and a level
#: that overruns the limit is lost with the lower end's steps after it (sigma 1.82, 2 of 17, delta 1e-10: the
#: ratio 1.01, estimated 3.2 s with 3.4 s left, took 3.5 s: [1.808, 1.926] against [1.849, 1.864] at 1.014).
PAIRS_SHARE = 1.25
#: At two members, the blocks of two start at the coarser level of :data:`~.two_members.PAIR_RATIOS` where the
#: first of :data:`~.two_members.RATIOS` is estimated above this many seconds (a rule on the question:
#: deterministic). Estimated at 1.03 (2026-12): sigma 0.52, 2 of 11, delta 1e-8, 2.65 s; sigma 0.58, 2 of 25,
#: 1e-10, 3.04 s (each came out 5.7% and 7.3% wide when that level was cut by the limit); below it, where a
#: coarser first level only delays the finer ones (sigma 2.48, 2 of 8, 1e-10: 0.22 s at 1.03, 0.75% wide in 1.5
#: s; with 1.05 first the next level predicted within rtol overran the limit, 3.65%), 2 of 10 at sigma 0.79
#: (1.08 s), 2 of 50 at sigma 1.74 (1.5 s).
PAIRS_COARSE_FIRST = 2.0
#: One allocation of at least this many members, and databases at least :data:`PAIRS_SPREAD` times as many,
#: leaves out the blocks of two and three (:func:`_pairs_may_tighten`).
PAIRS_MEMBERS, PAIRS_SPREAD = 5, 5


def _pairs_may_tighten(t: int, k: int, epochs: int) -> bool:
    """Whether the blocks of two and three members are computed for one allocation of k of t (always for
    several epochs): not from :data:`PAIRS_MEMBERS` members with ``t >= PAIRS_SPREAD k``, where their
    partition reveals nearly as much as the decomposition's and the time is better spent on the sums below
    and the circle. Measured within the default 5 s (seeds 1 to 4 of ``benchmarks/bench_allocation.py grid``,
    2026-12): in 12 such cases (5 to 25 of 19 to 617, sigma 1.1 to 2.8) the blocks of two took 1.5 to 4.4 s
    and moved neither end; they tightened only at two to four members or few databases a member (sigma 2.61,
    19 of 45: the upper end 1.9% lower; 4 of 22, 3 of 17, 2 of 8 to 2 of 17: 0.1 to 2.1%). A rule on the
    question: deterministic."""
    return epochs > 1 or k < PAIRS_MEMBERS or t < PAIRS_SPREAD * k


def _overdue_kept(curve: AllocationCurve, what: str, delta: float | None, epsilon: float | None, step,
                  *args) -> AllocationCurve:
    """``step(*args)``, a tightening of ``curve``, run so that it stops at a checkpoint once the time limit
    has passed (:func:`gce.effort.interruptible`): each step is started only when its estimate fits, but on a
    loaded machine it may take several times that; ``curve`` (valid on its own) is then kept and the stop
    recorded, so that the limit is overrun by one part of a step (a database of a recursion, a count of a
    transform), not by a step. Once the limit has passed and the curve already says it stopped there, the step
    is not started: even its estimate and its reading of the bracket cost 0.1 to 0.2 s (sigma 1.2, 3 of 7,
    delta 1e-5 beside a busy loop: four steps after the limit, 0.65 s past it)."""
    if effort.current().expired() and _STOPPED in curve.description:
        return curve
    try:
        with effort.interruptible():
            return step(*args)
    except effort.Overdue:
        effort.current().stop(f"allocation ({what}) at {_target_text(delta, epsilon)}: a step overran its "
                              f"estimate")
        stopped = "" if _STOPPED in curve.description else _STOPPED
        return AllocationCurve(curve._upper, curve.lower, f"{curve.description}{stopped}", curve.directions)


def _q_p_below(curve: AllocationCurve, delta: float | None, epsilon: float | None) -> bool:
    """Whether the direction Q||P of ``curve`` (its second direction) reads at most the bracket's lower end at
    the target: no tightening of it can then lower the upper end."""
    low, _ = _at(curve, curve.lower, delta, epsilon)
    return curve.directions is not None and _reading(curve.directions[1], delta, epsilon) <= low


def _wide_at(curve: AllocationCurve, rtol: float, delta: float | None, epsilon: float | None
             ) -> tuple[float, float, float | None]:
    """The bracket at the target and the epsilon the one-allocation steps choose their rates at (its lower
    end, or the target epsilon); None for the latter when the bracket is within ``rtol`` (or unbounded)."""
    low, high = _at(curve, curve.lower, delta, epsilon)
    if _width(low, high) <= rtol:
        return low, high, None
    target = float(epsilon) if epsilon is not None else float(low if low > 0 else high)
    return low, high, (target if math.isfinite(target) else None)


#: :func:`_with_blocks_at_any_delta` runs where the bracket is wider than this many times ``rtol``.
_BLOCKS_AGAIN = 5.0


def _with_blocks_at_any_delta(ratio, t: int, k: int, rtol: float, delta: float | None, epsilon: float | None,
                              tail: float, curve: AllocationCurve) -> AllocationCurve:
    """k of t, one allocation: the decomposition's blocks composed again by :func:`~.epochs.compose_epochs`
    (grids that follow the tail, module epochs) when the bracket of ``curve`` (the decomposition on the batch
    engine's uniform loss grid, :func:`~.decomposition._composed`) is wider than ``rtol``; each direction
    then keeps the least of its two upper curves (each valid). At small deltas the uniform loss grid's
    round-off is absolute and swamps the target (sigma 1.71, 14 of 724 at 1e-10: [1.834, 15.85], the
    composition's bound; with the blocks by the epochs engine [1.834, 2.031] within the same 5 s); the lower
    curve is left to the decomposition's garbled pair and the steps after this one.

    Only where the uniform grid's upper end is far off: unbounded, or more than :data:`_BLOCKS_AGAIN` times
    ``rtol`` above a positive lower end (14 of 724 at 1e-10: unbounded; 23 of 74 at 1e-8: 42%). Nearer, the
    blocks of two and the circle after it decide the upper end and this step only takes their time (sigma
    2.61, 19 of 45 at 1e-5: 3.7% wide after the decomposition, the same after this step, 3.28% at the 5 s
    limit against 2.04% without it). A rule on the numbers computed: deterministic.

    Where the circle comes first (:func:`_circle_first`) and the decomposition's direction Q||P reads below its
    lower end (:func:`_q_p_below`: no tightening of it can lower the upper end), this step comes after the
    circle, and then only where the circle left the bracket that far off: over the 24 cases of seeds 1 to 4
    of the benchmark's grid where the circle comes first the blocks composed again read 0.4% to 11% above it
    (2026-12), and they took 0.14 to 0.63 s first (sigma 0.67, 8 of 347, delta 1e-8: 0.5 s, its P||Q 9.909 to
    9.619, the circle 9.048). Where Q||P reads above the lower end it still comes first: its Q||P decides there
    (sigma 1.8, 5 of 12, delta 1e-10: 5.418 with it, 5.432 after the circle)."""
    low, high = _at(curve, curve.lower, delta, epsilon)
    if math.isfinite(high) and not (low > 0 and _width(low, high) > _BLOCKS_AGAIN * rtol):
        return curve
    blocks = {(ratio, size): count for size, count in _blocks(t, k)}
    try:
        engine = compose_epochs(blocks, blocks, rtol, delta, epsilon, tail)
    except (_NoRoom, NumericalLimitError):
        return curve
    if _at(engine, curve.lower, delta, epsilon)[1] >= high:
        return curve
    if curve.directions is not None and engine.directions is not None:
        directions = tuple(_Least([mine, its]) for mine, its in zip(curve.directions, engine.directions))
        upper = list(directions)
    else:
        directions, upper = None, [_Least([curve, engine])]
    return AllocationCurve(upper, curve.lower, f"{curve.description}; above, the same blocks composed again "
                                               f"({engine.description})", directions)


#: The last cell of :func:`_with_finer_sums` (after :data:`~.log_statistic.COUNT_CELLS`).
FINEST_SUMS = 0.005
#: :func:`_with_finer_sums`'s share of :func:`~.log_statistic.seconds` (which counts every rate and a margin
#: for the decomposition's uninterruptible step): measured 2.1 to 3.3 times the time taken, median 2.4, over
#: 13 steps of 0.1 to 2.8 s (13 to 24 of 282 to 993, sigma 1.15 to 1.71, delta 1e-6 to 1e-10; 2 cores, 2026-12).
_SUMS_SHARE = 0.45


def _with_finer_sums(ratio, t: int, k: int, rtol: float, delta: float | None, epsilon: float | None,
                     curve: AllocationCurve, dx: float) -> AllocationCurve:
    """k of t, one allocation: the lower curve raised by the garbling by the sum of logarithms at every rate of
    :func:`~.log_statistic.rates` on the finer cells ``dx`` (the decomposition's lower bound reads it on cells
    :data:`~.log_statistic.CELL`), when the bracket is wider than ``rtol`` and its estimate fits the time
    limit. Each cell's rounding blurs the sum of ``t`` terms (:mod:`.log_statistic`, "The cell"), which costs
    most at many databases and small deltas, where the rate per count (a transform per count and member) may
    not fit: sigma 1.71, 14 of 724, delta 1e-10, 1.629 on cells 0.05, 2.011 on 0.01, 2.020 on 0.005 (0.5 s),
    an importance-sampled Monte Carlo near 2.02. Where the circle comes first (:func:`_circle_first`) these
    come before it: its rates are chosen at the bracket's lower end, and the nearer that is to the circle's
    own epsilon the lower it reads (sigma 0.67, 8 of 347, delta 1e-8: its first level 9.048 chosen at the
    decomposition's 8.825, 9.035 at the sums' 8.918 (0.3 s), the same from 8.93 to 9.2; at 10 of 393, sigma
    1.17, 1e-10, 3.526 from 3.44 to 3.55)."""
    low, high, target = _wide_at(curve, rtol, delta, epsilon)
    if target is None or ratio.singular > 0 or ratio.trivial:
        return curve
    thetas = _log_tilts(delta)
    if not _may_refine(_SUMS_SHARE * _log_seconds(ratio, t, k, dx, thetas), f"allocation (the k-of-t pair garbled by sums of "
                       f"logarithms, cells {dx:g})", delta, epsilon, _width(low, high)):
        stopped = "" if _STOPPED in curve.description else _STOPPED
        return AllocationCurve(curve._upper, curve.lower, f"{curve.description}{stopped}", curve.directions)
    best, best_low, peak, falls = None, low, -math.inf, 0
    for r in _log_rates(t, k):  # from the largest rate down, until the reading has fallen twice in a row
        effort.checkpoint()
        remove, add = _log_laws(ratio, t, k, r, dx, thetas, per_cell=True)
        own = [(remove.curve(), 0.0, 0.0), (add.curve(), 0.0, 0.0)]
        reading = _reading(LowerBound(own), delta, epsilon)
        peak, falls = (reading, 0) if reading > peak else (peak, falls + 1)
        lower = LowerBound([(curve.lower, 0.0, 0.0)] + own)
        value = _reading(lower, delta, epsilon)
        if value > best_low:
            best, best_low = (lower, r), value
        if falls >= 2:
            break
    if best is None:
        return curve
    return AllocationCurve(curve._upper, best[0], f"{curve.description}; below, sums of logarithms on cells {dx:g} "
                                                  f"(r = {best[1]:.4g})", curve.directions)


def _with_counts_below(ratio, t: int, k: int, rtol: float, delta: float | None, epsilon: float | None,
                       curve: AllocationCurve, dx: float, chosen: dict[int, int] | None = None) -> AllocationCurve:
    """k of t, one allocation: the lower curve raised by the garbling ``(N, T_{r(N)})`` on cells ``dx`` (a
    rate of the sum of logarithms per count of large ratios, :func:`~.log_statistic.by_counts`, direction
    P||Q), when the bracket is wider than ``rtol`` and its estimate fits the time limit; the rates chosen at
    the bracket's lower end (or the target epsilon). The coarsest cell before the circle above, whose rates
    are then chosen nearer the truth (sigma 0.5, 10 of 100: 23.08 to 23.15, an importance-sampled Monte
    Carlo 23.18 +- 0.02); the finer ones after it, while still wider (sigma 1: 5.781 to 5.818, the Monte
    Carlo 5.823). Where the circle comes first (:func:`_circle_first`) the coarsest cell is left out: the circle
    has chosen its rates, and the next cell chooses its own on :data:`~.log_statistic.CHOOSING_CELL`, less
    blurred (sigma 0.67, 8 of 347, delta 1e-8: the coarsest cell took 0.5 s and moved neither end; its seconds
    go to the circle's second level). ``chosen``: the counts' rates chosen by an earlier step
    (:func:`~.log_statistic.by_counts`), one computation's."""
    low, high, target = _wide_at(curve, rtol, delta, epsilon)
    if target is None:
        return curve
    width = _width(low, high)
    if not _may_refine(_count_seconds(ratio, t, k, dx, _log_tilts(delta), chosen), f"allocation (the k-of-t pair garbled by a rate per "
                       f"count, cells {dx:g})", delta, epsilon, width):
        stopped = "" if _STOPPED in curve.description else _STOPPED
        return AllocationCurve(curve._upper, curve.lower, f"{curve.description}{stopped}", curve.directions)
    law = _by_counts(ratio, t, k, target, dx, _log_tilts(delta), per_cell=True, chosen=chosen)
    if law is None:
        return curve
    lower = LowerBound([(curve.lower, 0.0, 0.0), (law.curve(), 0.0, 0.0)])
    if _reading(lower, delta, epsilon) <= low:
        return curve
    text = (f"a rate per count of large ratios (sums of logarithms, cells {dx:g})" if dx == COUNT_CELLS[0] else
            f"the same on cells {dx:g}")
    return AllocationCurve(curve._upper, lower, f"{curve.description}; below, {text}", curve.directions)


#: Gaussians of at least this ``mu`` (sigma at most 1.11) are tightened by Cauchy's circle (:func:`_with_circle`);
#: below it and from the second (sigma at most 2), allocations of at least three members and this share of the
#: databases (:func:`_circle_first`).
CIRCLE_MU, CIRCLE_FIRST_MU, CIRCLE_SHARE = 0.9, 0.5, 0.1
#: Where the circle is not computed first (:func:`_circle_first`), from this ``mu`` it comes before the lower end's
#: rate per count, below it last (:func:`_with_circle`).
CIRCLE_EARLY_MU = 0.75
#: Where the circle comes before the lower end's steps, its second level waits until after them (the lower
#: end's rate per count costs less than the second level and decides more often: seeds 1 to 4 of the benchmark's
#: grid within 5 s, with the second level at once, 13 of 328 at sigma 0.96, delta 1e-10, went from [7.160, 7.223]
#: to [7.096, 7.210]: the rate per count no longer fitted).
CIRCLE_SECOND_LAST = True
#: How the circle's tightening reads in a curve's description (:func:`_with_circle`).
_CIRCLE_TEXT = "P||Q tightened by Cauchy's circle"
#: The circle's first level starts when this share of its estimate fits the time left (:func:`_with_circle`): a
#: fine grid cut by the limit keeps its coarse bounds where it did not reach (:func:`.circle.circle_curve`).
CIRCLE_STARTS = 0.75
#: A later level of the circle, which starts from each count's bound of the earlier one (:func:`.circle.circle_curve`,
#: ``earlier``: cut by the limit it is never looser count by count), starts when this share of its estimate fits.
CIRCLE_AGAIN_STARTS = 0.5


def _circle_first(ratio, t: int, k: int, curve: AllocationCurve, delta: float | None, epsilon: float | None) -> bool:
    """Whether a Gaussian's circle is computed first, before the blocks of members (and below
    :data:`CIRCLE_MU`, whether at all): from :data:`CIRCLE_FIRST_MU`, at least three members, below
    :data:`CIRCLE_MU` at least :data:`CIRCLE_SHARE` of the databases members, and the decomposition's direction
    Q||P (which the circle leaves as it is) in the lower half of its bracket ``curve`` at the target.

    Measured within the default 5 s (2 cores, 2026-12; each against the decomposition and the blocks of two
    computed first). Below CIRCLE_MU at a large share many databases pass the cut and the circle's rate per
    count reads the saddle point that the blocks miss: sigma 1.23, 16 of 89, delta 1e-5, 7.430 in 1.0 s
    against 7.575 (the blocks without a limit: 7.572 in 8 s; an importance-sampled Monte Carlo puts the exact
    value near 7.38); sigma 1.48, 5 of 19, 1e-6, 4.119 against 4.163; sigma 1.25, 4 of 28, 1e-8, 4.254 against
    4.281; sigma 1.8, 5 of 12, 1e-10, 5.494 against 5.511. Not first: at a smaller share the circle was looser
    than the blocks (sigma 1.28, 25 of 341, 1e-8, 7.528 against 7.467; sigma 1.61, 17 of 282, 1e-6, 3.496
    against 3.261); at two members the blocks of two are the exact pair's recursion (sigma 2.48, 2 of 8: 2.077
    against 1.811); at large noise the circle left the blocks no time (sigma 2.2, 4 of 22, 1e-8: 2.214 against
    2.195; sigma 2.37, 3 of 17, 1e-10: 1.993 against 1.986); where Q||P is near the top the blocks of two
    tighten both directions (sigma 2.61, 19 of 45, 1e-5: Q||P 5.020 in [4.868, 5.049]; the blocks 4.952, the
    circle first 5.020). With the power sums on its counts of few large ratios (:mod:`.power_sums`, two and three
    members, 2026-12) it comes first at large noise too (below CIRCLE_EARLY_MU, more than FEW_DATABASES databases
    a member), where it was last: sigma 1.82, 2 of 17, 1e-10, 1.861 in 0.35 s against the blocks of two's 1.872
    in 2.8 s; sigma 2.37, 3 of 17, 1e-10, 1.963 (the blocks 1.981). Not at four members, where the two blocks of
    two were the tighter (sigma 2.2, 4 of 22, 1e-8: 2.1950 first, 2.1875 last). From CIRCLE_MU the circle decided the upper end wherever it was computed (8 of 8
    random cases), and first it fits where it did not after the others (sigma 0.71, 18 of 447, 1e-10:
    [15.674, 16.039] -> [15.810, 16.039]; over 16 cases one 0.2% narrower, the others within 0.07%)."""
    summed = _power_sums_apply(ratio, k, 0) and k <= 3 and ratio.mu < CIRCLE_EARLY_MU and t > FEW_DATABASES * k
    if not summed and not (isinstance(ratio, GaussianRatio) and CIRCLE_FIRST_MU <= ratio.mu and k >= 3
                           and (ratio.mu >= CIRCLE_MU or k >= CIRCLE_SHARE * t)):
        return False
    low, high = _at(curve, curve.lower, delta, epsilon)
    return math.isfinite(high) and _reading(curve.directions[1], delta, epsilon) <= low + (high - low) / 2.0


def _with_circle(ratio, t: int, k: int, rtol: float, delta: float | None, epsilon: float | None, tail: float,
                 curve: AllocationCurve, decomposition: tuple[PrivacyCurve, PrivacyCurve],
                 early: bool = False, levels: tuple[int, ...] | None = None,
                 circles: dict[str, object] | None = None) -> AllocationCurve:
    """k of t, one allocation: the curve tightened in the direction P||Q by Cauchy's circle (:mod:`.circle`),
    the direction Q||P left to the decomposition (``decomposition``: its two directions' upper curves). Each
    direction's least upper curve is valid and the pair's curve is the larger of its two directions, so the
    least of ``curve`` and that pair is valid. Computed when the bracket is still wider than ``rtol`` and the
    circle's estimate fits the time limit; each count's rate is chosen at the bracket's lower end (or
    the target epsilon). Levels of :data:`~.circle.THRESHOLDS` while wider than ``rtol``, each estimated
    before it starts. It pays at many members (10 of 100 at sigma 0.5: 23.39, then 23.35, against 24.31 for
    the blocks of two at 15 minutes); at two or three the blocks of members are tighter. A Gaussian's circle
    is computed only at small noise (``mu >= CIRCLE_MU``): above it, few databases pass the cut and one
    rate serves nearly every output (measured at level 1 against the decomposition and blocks: sigma 1.23,
    24 of 575, delta 1e-10, 6.61 against 6.51; sigma 1.61, 17 of 282, 1e-6, 3.49 against 3.26; sigma 1.71,
    14 of 724, 1e-10, 3.34 against 2.03; and below it, sigma 0.7 to 0.76, 18 to 23 of 74 to 724: 19.02
    against 20.60, 37.03 against 41.04, 8.33 against 8.62; sigma 1, 10 of 100, 1e-5: 5.88 against 5.99), and
    its seconds go to the finer cells below. ``early``: below it, where :func:`_circle_first` holds, from
    :data:`CIRCLE_EARLY_MU` before the lower end's rate per count, and below that last, after every step of
    the lower end: since each count also tries its saddle point (:mod:`.circle`, 2026-12) the circle is
    tighter than the blocks there too (sigma 1.23, 24 of 575, delta 1e-10: 6.452 against 6.514; sigma 1.28, 25
    of 341, 1e-8: 7.344 against 7.467), and with its round-off by Cauchy-Schwarz before the rate per count
    (seeds 1 to 4 of the benchmark's grid within 5 s: 20 within 1% and 36 within 2% against 18 and 35; at
    large noise and a small share it stays loose, sigma 1.71, 14 of 724, 1e-10: 2.577 against 2.031). The
    first level starts when :data:`CIRCLE_STARTS` of its estimate fits (a fine grid cut by the limit keeps its
    coarse bounds). ``levels``: those of :data:`~.circle.THRESHOLDS` to try (all by default); where the circle
    comes before the lower end's steps the caller takes the first there and the second after them
    (:data:`CIRCLE_SECOND_LAST`). ``circles``: the last level computed, kept by the caller for the next call (one
    computation's): a later level starts from it count by count, and when ``CIRCLE_AGAIN_STARTS`` of its
    estimate fits."""
    low, high, target = _wide_at(curve, rtol, delta, epsilon)
    if target is None or (isinstance(ratio, GaussianRatio) and ratio.mu < CIRCLE_MU and not early):
        return curve
    width = _width(low, high)
    best, done, stopped, beyond, tried, done_level = curve, None, False, False, False, 0
    circles = {} if circles is None else circles
    for level in range(len(CIRCLE_LEVELS)) if levels is None else levels:  # the fine grid, then halved
        earlier = circles.get("last")
        seconds = _circle_seconds(ratio, t, k, target, tail, level, earlier)
        if not math.isfinite(seconds):  # beyond the transforms' size (small noise): not a stop of the clock
            beyond = True
            break
        # (its fine grid, the larger part, keeps what it did when the limit cuts it, and a later level each count's
        # earlier bound: a level starts when CIRCLE_STARTS, a later one CIRCLE_AGAIN_STARTS, of its estimate fits)
        share = CIRCLE_STARTS if earlier is None else CIRCLE_AGAIN_STARTS
        if not _may_refine(seconds * share, f"allocation (the direction P||Q by Cauchy's circle, level {level + 1})",
                           delta, epsilon, width):
            stopped = _STOPPED not in curve.description
            break
        tried = True
        try:  # (run by :func:`_overdue_kept`: a level that overruns keeps the last completed one)
            circle = circle_curve(ratio, t, k, target, tail, level, earlier)
            if circle is None:
                break
            circles["last"] = circle
            pair = AllocationCurve([_Least([decomposition[0], circle]), decomposition[1]], curve.lower, "")
            tightened = AllocationCurve([_Least([best, pair])], curve.lower, "")
            new_high = _at(tightened, curve.lower, delta, epsilon)[1]
        except effort.Overdue:
            effort.current().stop(f"allocation (the direction P||Q by Cauchy's circle, level {level + 1}) at "
                                  f"{_target_text(delta, epsilon)}: a step overran its estimate")
            stopped, tried = _STOPPED not in curve.description, False
            break
        if not circle.complete:  # the time limit cut its fine grid (the stop is recorded): no further level
            stopped = _STOPPED not in curve.description
        if new_high >= high:
            break
        best, done, high, done_level = tightened, circle, new_high, level
        width = _width(low, high)
        if width <= rtol or not circle.complete:
            break
    if done is not None:
        text = f"; P||Q tightened by {done.description}" + (f" (level {done_level + 1})" if done_level else "")
    elif beyond:
        text = "; P||Q by Cauchy's circle: its transforms beyond their size limit"
    else:
        text = "; beside it, P||Q by Cauchy's circle: no lower" if tried else ""
    return AllocationCurve(best._upper, curve.lower, f"{curve.description}{text}{_STOPPED if stopped else ''}")


def _with_pairs(ratio, t: int, k: int, epochs: int, rtol: float, delta: float | None, epsilon: float | None,
                tail: float, curve: AllocationCurve) -> AllocationCurve:
    """k > 1: the decomposition's curve (``curve``) tightened by blocks of two members (:mod:`.two_members`):
    above, the least of the two upper curves (each valid); below, for k = 2, the larger of the two lower
    curves (the garbled pair of the recursion is a garbling of the allocation itself); for k > 2, the larger
    of the decomposition's lower curve and the k-of-t garbling by the recursion's statistic
    (:func:`~.two_members._members_lower`).

    A uniformly random partition of the databases into blocks of given sizes, with ``k_j`` members placed
    uniformly in block ``j`` (``sum k_j = k``), gives a law over k-sets invariant under permutations of the
    databases: the uniform one. Revealing the partition only helps the adversary, and given it the pair is
    the product of the blocks' ``k_j``-of-``n_j`` allocations (the argument of :mod:`.decomposition` with
    blocks of any sizes): blocks of two members (and one of one when k is odd) instead of k blocks of one.

    The grids of the blocks are refined along :data:`~.two_members.RATIOS` (at two members, where its first level
    is estimated above :data:`PAIRS_COARSE_FIRST`, :data:`~.two_members.PAIR_RATIOS`, a coarser level first)
    while the bracket is wider than
    ``rtol`` and the level's estimated cost is at most :data:`PAIR_WORK_LIMIT` (a schedule that depends on
    the question only), from the first level to the coarsest predicted within ``rtol`` (:func:`_next_level`;
    a level beyond the work limit or the time left falls back towards the last computed one); each level's
    cost is estimated from its grids' sizes and a level that would not fit in the running computation's time
    limit is not started (the curve then keeps the last completed level); beyond two members only when twice
    its estimate fits (:data:`PAIRS_FINER_SHARE`), and without the k-of-t garbling by the recursion's statistic
    when only that fits. A finer level is computed only where the blocks' own width, taken to fall as the square
    of the grid's spacing, is predicted below the bracket's. Moves of the blocks of three
    below the clamp's tail (``tail``, at most 1e-4 of a target delta) are dropped and charged (three_members'
    module doc); a block's grid of E is placed for its own epsilon, about the whole's over the root of the
    number of blocks composed.
    """
    from ...accounting import batch
    blocks = _pair_blocks(t, k)
    low, high = _at(curve, curve.lower, delta, epsilon)
    if _width(low, high) <= rtol:
        return curve
    # the grids of E are placed for the decomposition's epsilon at the target (or the target epsilon)
    scale = float(high) if epsilon is None else float(epsilon)
    scale = scale if math.isfinite(scale) else 30.0
    # a block's own epsilon: about the whole's over the root of the copies composed (as for Gaussians); only
    # a guess when several are composed, so its grid of E is then never coarser than at 1.5 (:func:`_e_ratio`)
    block_scale = scale / math.sqrt(sum(count for _, _, count in blocks) * epochs)
    e_scale = block_scale if len(blocks) == 1 and blocks[0][2] * epochs == 1 else min(block_scale, 1.5)
    best, level_done, stopped, own_width = curve, None, False, math.inf
    decomposition = (low, high)
    # the k-of-t garbling below by the recursion's statistic: computed while it reads more than the sum's, and
    # only while it costs at most twice the blocks (it reads e_1 and e_2 only, and its k + 1 measures run over
    # all t databases: measured no better than the sum's at 4 of 16, sigma 3, and 10 of 100, sigma 1)
    by_statistic, members_part = k > 2, None
    at = after = 0  # the level tried, the first level after the last computed
    # at two members, the coarser level first where the first of RATIOS is estimated above PAIRS_COARSE_FIRST
    coarse_first = k == 2 and sum(_pair_seconds(ratio, size, RATIOS[0], tail, block_scale, e_scale)
                                  for size, members, _ in blocks if members == 2) > PAIRS_COARSE_FIRST
    ratios = PAIR_RATIOS if coarse_first else RATIOS
    while at < len(ratios):
        level = ratios[at]
        seconds = sum(_pair_seconds(ratio, size, level, tail, block_scale, e_scale) for size, members, _ in blocks
                      if members == 2)
        if by_statistic:  # below: the k-of-t garbling by the recursion's statistic
            garbling = _members_seconds(ratio, t, k, level, tail, scale, min(scale, 1.5))
            by_statistic = garbling <= 2.0 * seconds
            seconds += garbling if by_statistic else 0.0
        # beyond two members a level leaves the steps after it their share (:data:`PAIRS_FINER_SHARE`)
        share = PAIRS_FINER_SHARE if k > 2 else PAIRS_SHARE
        # a jump (:func:`_next_level`) beyond the route's share of work or the time left falls back a level
        if at > after and (seconds > PAIR_WORK_LIMIT or not effort.current().fits(share * seconds)):
            if seconds <= PAIR_WORK_LIMIT:  # the time left, not the route's work, decided: the stop recorded
                effort.current().stop(f"allocation refinement (blocks of two, grid ratio {level:g}) at "
                                      f"{_target_text(delta, epsilon)}")
                stopped = True
            at -= 1
            continue
        if seconds > PAIR_WORK_LIMIT:  # beyond the route's share of work (from the question alone, as rtol)
            break
        fits = effort.current().fits
        if by_statistic and not fits(share * seconds) and fits(share * (seconds - garbling)):
            # the blocks without the statistic's garbling (the lower end left to the other steps), the stop recorded
            effort.current().stop(f"allocation refinement (blocks of two, grid ratio {level:g}, the garbling by "
                                  f"the recursion's statistic) at {_target_text(delta, epsilon)}")
            seconds, by_statistic, stopped = seconds - garbling, False, True
        if level_done is not None and own_width * ((level - 1.0) / (level_done - 1.0)) ** 2 > _width(low, high):
            break  # not predicted to narrow the bracket (the blocks' own width falls as the square of the spacing)
        if not _may_refine(share * seconds, f"allocation refinement (blocks of two, grid ratio {level:g})", delta,
                           epsilon, _width(low, high)):
            stopped = True
            break
        try:  # a level that overruns its estimate past the limit is abandoned, the last completed one kept
            done = _blocks_composed(ratio, blocks, epochs, level, tail, block_scale, e_scale, rtol, delta, epsilon)
            if done is None:
                break
            composed, own, interval = done
            parts = [(best.lower, 0.0, 0.0)]  # every level's lower curve is valid: the best of them is kept
            if k == 2:  # one block: its garbled pair composed over the epochs bounds the allocation below
                parts.extend(own)
            elif by_statistic:  # the k-of-t allocation garbled by the recursion's statistic, composed over the epochs
                garbled = _members_lower(ratio, t, k, level, tail, scale, e_high=min(scale, 1.5))
                below = [[batch.loss_law(law.loss, law.mass, epochs, interval, upper=False, infinite=law.infinite)]
                         for law in garbled]
                try:
                    composed_below = batch.compose_laws(below, below, interval).lower
                    g_slack = max(law.slack for law in garbled)
                    g_grow = epochs * (1.0 + g_slack) ** max(epochs - 1, 0)
                    members_part = (_DirectionLower(composed_below), g_slack * g_grow, g_slack * g_grow)
                except NumericalLimitError:
                    members_part = None
                # the statistic reads e_1 and e_2 only: when it is no better than the decomposition's garbling by
                # the sum at the target (measured: 4 of 16 at sigma 3, 10 of 100 at sigma 1), finer grids of it
                # are not computed (a function of the numbers computed: deterministic)
                if members_part is None or _reading(LowerBound([members_part]), delta, epsilon) <= decomposition[0]:
                    by_statistic = False
            if members_part is not None:
                parts.append(members_part)
        except effort.Overdue:
            effort.current().stop(f"allocation refinement (blocks of two, grid ratio {level:g}) at "
                                  f"{_target_text(delta, epsilon)}: a level overran its estimate")
            stopped = True
            break
        best = AllocationCurve([_Least([curve, composed])], LowerBound(parts), curve.description)
        level_done = level
        low, high = _at(best, best.lower, delta, epsilon)
        own_low, own_high = _at(composed, LowerBound(own), delta, epsilon)
        own_width = _width(own_low, own_high)
        if _width(low, high) <= rtol or _width(own_low, own_high) <= rtol / 8:
            break
        if not math.isfinite(own_high):  # the blocks' own upper end unbounded at the first levels (measured:
            break  # sigma 0.5, the add direction's mass at L = 0): finer grids would cost much for the lower end
        reachable = min(own_low, decomposition[1])  # no finer grid brings the upper end below the blocks' lower
        if k > 2 and _width(low, reachable) > rtol:  # the blocks' decomposition itself is the loss: finer grids
            break  # would not bring the upper end within rtol of the lower (measured: 3 of 10, 10 of 100; the
            # statistic's garbling moved the lower end by under 0.1% from 1.03 to 1.01 at 3 of 10)
        at = after = at + 1
        at = _next_level(at - 1, _width(own_low, own_high), rtol, ratios)
    if level_done is None:
        return curve
    text = " + ".join(f"{count * epochs} x ({members} of {size})" for size, members, count in blocks)
    return AllocationCurve(best._upper, best.lower, f"{curve.description}; tightened by blocks of two members: "
                                                    f"{text} composed (grid ratio {level_done:g})"
                                                    f"{_STOPPED if stopped else ''}")


def _three_blocks(t: int, k: int) -> list[list[tuple[int, int, int]]]:
    """The partitions tried by :func:`_with_threes`, each as (block size, members, count): blocks of three
    members and the rest in one block (of one or two members), and when k leaves 1 over three, one block of
    three fewer and two of two; the sizes proportional to the members (as :func:`~.two_members._pair_blocks`).
    Only the partitions with a block of three (3 of t: the whole as one block) and fewer blocks than the
    blocks of two (``ceil(k / 2)``): what a partition loses grows with the blocks composed (measured: 4 of 16
    at sigma 3 as 3 + 1 gained nothing on 2 + 2, in three times the time)."""
    options = [[3] * (k // 3) + ([k % 3] if k % 3 else [])]
    if k % 3 == 1 and k > 4:
        options.append([3] * (k // 3 - 1) + [2, 2])
    out = []
    for members in (m for m in options if len(m) < (k + 1) // 2):
        sizes = [t * m // k for m in members]
        for i in range(t - sum(sizes)):  # the remainder, one database a block, the first blocks first
            sizes[i % len(sizes)] += 1
        counted: dict[tuple[int, int], int] = {}
        for size, m in zip(sizes, members):
            counted[(size, m)] = counted.get((size, m), 0) + 1
        out.append([(size, m, count) for (size, m), count in sorted(counted.items())])
    return out


def _blocks_seconds(ratio, blocks: list[tuple[int, int, int]], level: float, tail: float, scale: float,
                    e_scale: float) -> float:
    """Estimated seconds of one level of a partition's blocks of three and two members (those of one are a
    grid of :mod:`.decomposition`, cheap)."""
    seconds = 0.0
    for size, members, _ in blocks:
        if members == 3:
            seconds += _three_seconds(ratio, size, level, tail, scale, e_scale)
        elif members == 2:
            seconds += _pair_seconds(ratio, size, level, tail, scale, e_scale)
    return seconds


def _blocks_composed(ratio, blocks: list[tuple[int, int, int]], epochs: int, level: float, tail: float,
                     scale: float, e_scale: float, rtol: float, delta: float | None, epsilon: float | None):
    """A partition's blocks at ``level``, composed over the blocks and the epochs: (the composed curves, the
    parts of its lower curve (:class:`~.bracket.LowerBound`), the composition's loss grid), or None when the
    composition exceeds its limits. One block once is its own laws, not composed (the composition's uniform
    loss grid would add its absolute round-off, which swamps small deltas: 2 of 10 at sigma 0.79, delta 1e-10,
    the pair's own lower end 8.81, composed 8.11); its loss grid is then None."""
    from ...accounting import batch
    from .decomposition import _block_laws
    laws = []
    for size, members, count in blocks:
        if members == 3:
            laws.append((_three_laws(ratio, size, level, tail, scale, drop=tail, e_high=e_scale), count))
        elif members == 2:
            laws.append((_pair_laws(ratio, size, level, tail, scale, e_high=e_scale), count))
        else:
            laws.append((_block_laws(ratio, size, 2**16, tail), count))
    if len(laws) == 1 and laws[0][1] * epochs == 1:
        (up, lo), _ = laws[0]
        own = [(law.curve(), law.slack, law.slack_other) for law in lo]
        return AllocationCurve([law.curve() for law in up], LowerBound(own), ""), own, None
    interval = _loss_interval([(up, count * epochs) for (up, _), count in laws], rtol, delta, epsilon)
    ups = [[batch.loss_law(up[d].loss, up[d].mass, count * epochs, interval, upper=True, infinite=up[d].infinite)
            for (up, _), count in laws] for d in range(2)]
    lows = [[batch.loss_law(lo[d].loss, lo[d].mass, count * epochs, interval, upper=False, infinite=lo[d].infinite)
             for (_, lo), count in laws] for d in range(2)]
    try:
        composed = batch.compose_laws(ups, lows, interval)
    except NumericalLimitError:
        return None
    slack = max(lo[d].slack for (_, lo), _ in laws for d in range(2))
    n = sum(count for _, count in laws) * epochs
    grow = slack * n * (1.0 + slack) ** max(n - 1, 0)
    return composed, [(_DirectionLower(composed.lower), grow, grow)], interval


def _with_threes(ratio, t: int, k: int, epochs: int, rtol: float, delta: float | None, epsilon: float | None,
                 tail: float, curve: AllocationCurve) -> AllocationCurve:
    """k > 2: ``curve`` (the decomposition and blocks of two) tightened by blocks of three members
    (:mod:`.three_members`): above, the least of the upper curves (each valid: a uniformly random partition
    into blocks holding ``k_j`` members each is again the uniform k-set, :func:`_with_pairs`); below, for
    k = 3, the larger of the lower curves (the garbled triple of the recursion is a garbling of 3 of t).

    The partitions of :func:`_three_blocks` are all computed at the first level and the one with the least
    upper end at the target kept for the finer levels (a function of the numbers computed: deterministic).
    The levels follow :data:`~.two_members.RATIOS` as in :func:`_with_pairs`: while the bracket is wider than
    ``rtol``, each level's cost estimated from its grids' sizes (:func:`~.three_members._three_seconds`), a
    level beyond :data:`THREE_WORK_LIMIT` or the time left falling back towards the last computed one, a
    level that does not fit not started (the stop recorded), the next the coarsest predicted within ``rtol``
    (:func:`_next_level`). A block's grids of E and F are placed for its own epsilon (about the whole's over
    the root of the blocks composed; never coarser than at 1.5 when several are composed)."""
    options = _three_blocks(t, k)
    low, high = _at(curve, curve.lower, delta, epsilon)
    if _width(low, high) <= rtol or not options:
        return curve
    scale = float(high) if epsilon is None else float(epsilon)
    scale = scale if math.isfinite(scale) else 30.0
    best, level_done, stopped, chosen = curve, None, False, None
    decomposition = (low, high)
    at = after = 0
    while at < len(RATIOS):
        level = RATIOS[at]
        tried = options if chosen is None else [chosen]
        scales = []
        for blocks in tried:
            block_scale = scale / math.sqrt(sum(count for _, _, count in blocks) * epochs)
            single = len(blocks) == 1 and blocks[0][2] * epochs == 1
            scales.append((block_scale, block_scale if single else min(block_scale, 1.5)))
        seconds = sum(_blocks_seconds(ratio, blocks, level, tail, *sc) for blocks, sc in zip(tried, scales))
        if at > after and (seconds > THREE_WORK_LIMIT or not effort.current().fits(seconds)):
            if seconds <= THREE_WORK_LIMIT:  # the time left, not the route's work, decided: the stop recorded
                effort.current().stop(f"allocation refinement (blocks of three, grid ratio {level:g}) at "
                                      f"{_target_text(delta, epsilon)}")
                stopped = True
            at -= 1
            continue
        if seconds > THREE_WORK_LIMIT:
            break
        if not _may_refine(seconds, f"allocation refinement (blocks of three, grid ratio {level:g})", delta, epsilon,
                           _width(low, high)):
            stopped = True
            break
        results = []
        for blocks, sc in zip(tried, scales):
            done = _blocks_composed(ratio, blocks, epochs, level, tail, *sc, rtol, delta, epsilon)
            if done is not None:
                results.append((_reading(done[0], delta, epsilon), blocks, done))
        if not results:
            break
        _, chosen, (composed, own, _) = min(results, key=lambda r: r[0])
        parts = [(curve.lower, 0.0, 0.0)] + (own if k == 3 else [])
        best = AllocationCurve([_Least([curve, composed])], LowerBound(parts), curve.description)
        level_done = level
        low, high = _at(best, best.lower, delta, epsilon)
        own_low, own_high = _at(composed, LowerBound(own), delta, epsilon)
        if _width(low, high) <= rtol or _width(own_low, own_high) <= rtol / 8:
            break
        if not math.isfinite(own_high):
            break
        if k > 3 and _width(low, min(own_low, decomposition[1])) > rtol:
            break  # the partition itself is the loss: finer grids would not bring the upper end within rtol
        at = after = at + 1
        at = _next_level(at - 1, _width(own_low, own_high), rtol)
    if level_done is None:
        return curve
    text = " + ".join(f"{count * epochs} x ({members} of {size})" for size, members, count in chosen)
    return AllocationCurve(best._upper, best.lower, f"{curve.description}; tightened by blocks of three members: "
                                                    f"{text} composed (grid ratio {level_done:g})"
                                                    f"{_STOPPED if stopped else ''}")


def _next_level(at: int, width: float, rtol: float, ratios: tuple[float, ...] = RATIOS) -> int:
    """The next level of ``ratios`` (:data:`~.two_members.RATIOS` or :data:`~.two_members.PAIR_RATIOS`) after
    ``ratios[at]``, whose blocks' own bracket was ``width`` wide: the coarsest predicted within ``rtol`` (with a
    margin), the width taken to fall as the square of the grid's relative spacing (measured: 2 of 20 at sigma 1
    went from 2.55% to 0.72% wide from 1.02 to 1.01), or the finest. A function of the numbers computed, so of
    the question: deterministic."""
    spacing = (ratios[at] - 1.0) * math.sqrt(0.8 * rtol / width) if width > 0 else 0.0
    for later in range(at + 1, len(ratios)):
        if ratios[later] - 1.0 <= spacing:
            return later
    return len(ratios) - 1 if at + 1 < len(ratios) else len(ratios)


def _no_worse_than_composition(curve: AllocationCurve, mu: float, below: float) -> AllocationCurve:
    """The allocation's upper curve, or the composition of its k members' Gaussians over the epochs (GDP
    ``mu``) where that is less (joint convexity: the k-set prior is a mixture of point masses, each a
    GDP(mu sqrt(k)) pair per epoch; coarse grids at small noise can be looser than that); and its lower
    curve, or the sum of every database's output (GDP ``below``, :func:`_beyond_grids`) where that is more
    (coarse grids at large noise, ``mu`` far below the cells, can be looser than that)."""
    from ...accounting.curves import GaussianCurve
    least = _Least([curve, GaussianCurve(mu)])
    lower = LowerBound([(curve.lower, 0.0, 0.0), (GaussianCurve(below), 0.0, 0.0)])
    return AllocationCurve([least], lower, curve.description)


#: Most estimated seconds of one level of the blocks of two members (:func:`_with_pairs`): beyond, the
#: finer levels are not computed (deterministic: estimated from the grids' sizes, never measured). Lowered
#: from 80 in 2026-12 with the estimates (:data:`~.two_members._UNIT_SECONDS`: about half the former ones), so
#: that the same levels are computed without a time limit (the same decisions on 45 levels of 8 to 30
#: databases, sigma 0.3 to 3, the nearest 78.0 and 80.3 s before, 39.0 and 40.2 s now: 2 of 20 at sigma 1
#: and delta 1e-5 still reaches the grid ratio 1.014, 0.70% wide); 2 of 20 at sigma 1, grid ratio 1.01
#: (the cut by E placed at 2): estimated 242 s, taken 209 s. Since the moves are computed once and applied at
#: every step (two_members, "One map, every step"; 2026-12), the same limit takes finer levels: about 5 times
#: the work at 10 databases, more at more, each level also within :data:`~.two_members.MEMORY_LIMIT`.
PAIR_WORK_LIMIT = 40.0

#: Most estimated seconds of one level of the blocks of three members (:func:`_with_threes`), as
#: :data:`PAIR_WORK_LIMIT`: 3 of 10 at sigma 1 needs the grid ratio 1.02 for 2% at delta 1e-5 (estimated
#: 227 s, measured 99 s on a loaded 2-core machine: [5.017, 5.079], 1.2%; at 1.03, [4.992, 5.104], 2.2%).
THREE_WORK_LIMIT = 240.0

#: Largest mu the grids take (:class:`GaussianRatio`); from it on, :func:`_beyond_grids` (closed forms).
MU_LIMIT = 40.0


def _first_step_fits(ratio: GaussianRatio, t: int, k: int, epochs: int, tail: float, delta: float | None,
                     epsilon: float | None) -> bool:
    """Whether the first grid (both directions; for k > 1 or epochs, the decomposition's blocks) fits in the
    running computation's time limit (estimated from its size: :func:`~.bracket._may_refine`)."""
    if k == 1 and epochs == 1:
        sizes = [t]
    else:
        sizes = sorted({size for size, _ in _blocks(t, k)} | ({t} if k == 1 and t > 1 else set()))
    estimate = sum(_linear_seconds(ratio, size, START_POINTS, tail, which) for size in sizes for which in _WHICH)
    return _may_refine(estimate, "allocation (first grid)", delta, epsilon, math.inf)


def _closed_forms(mu: float, t: int, k: int, epochs: int, why: str) -> AllocationCurve:
    """The bounds in closed form (:func:`_beyond_grids`), valid for every mu: above, the members' Gaussians
    composed over the epochs; below, the sum of every database's output."""
    from ...accounting.curves import GaussianCurve
    high, low = mu * math.sqrt(k * epochs), mu * k * math.sqrt(epochs / t)
    return AllocationCurve([GaussianCurve(high)], LowerBound([(GaussianCurve(low), 0.0, 0.0)]),
                           f"{k} of {t}, mu {mu:g}, {why}: above, the members' Gaussians composed (GDP mu {high:g}); "
                           f"below, the sum of the outputs (GDP mu {low:g})")


def _beyond_grids(mu: float, t: int, k: int, epochs: int) -> AllocationCurve:
    """Gaussians of ``mu >= MU_LIMIT`` (nearly no noise, up to mu = inf), beyond the grids: above, the
    composition of the k members' Gaussians over the epochs (joint convexity, as in
    :func:`_no_worse_than_composition`); below, the sum of every database's output: N(k mu, t) against
    N(0, t) in each epoch, a post-processing of the pair, so GDP(k mu sqrt(epochs / t)) in both directions
    is a certified lower curve (data processing)."""
    from ...accounting.curves import GaussianCurve
    with np.errstate(over="ignore"):  # mu near 1.8e308: mu = inf, the output reveals the target
        high, low = np.float64(mu) * math.sqrt(k * epochs), np.float64(mu) * (k * math.sqrt(epochs / t))
    upper = GaussianCurve(float(high))
    return AllocationCurve([upper], LowerBound([(GaussianCurve(float(low)), 0.0, 0.0)]),
                           f"{k} of {t}, mu {mu:g} (beyond the grids' mu < {MU_LIMIT:g}): above, the members' "
                           f"Gaussians composed (GDP mu {high:g}); below, the sum of the outputs (GDP mu {low:g})")


def _plain(mu: float, k: int, epochs: int) -> AllocationCurve:
    """k of k (every database a member) or mu = 0: the composition of k epochs Gaussians, exactly."""
    from ...accounting.curves import GaussianCurve
    curve = GaussianCurve(mu * math.sqrt(k * epochs))
    return AllocationCurve([curve], LowerBound([(curve, 0.0, 0.0)]), f"every database a member: GDP "
                                                                     f"mu {mu * math.sqrt(k * epochs):g}")

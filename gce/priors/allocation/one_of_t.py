"""1 of t, one epoch: the uniform grid, the tilted uniform grid on a window and the geometric grid, each
refined while the bracket is too wide.

All three grids' errors are of second order in the cell width. :func:`_single` starts with the uniform grid
(it stays alone when it meets ``rtol`` at once: ``mu <= 1`` as before), then tries, for the directions still
too wide, the tilted grid on the sum's window (:mod:`.uniform_tilted`, from :data:`TILTED_START_POINTS`: at
many steps its window is a few thousand standard deviations of the sum's cells, not ``t / dx``, and its
round-off is relative at the target: 1 of 10,000 within 0.2% in a few seconds where the others gave 3% to
11% in half a minute), then the geometric grid at :data:`LOG_START_RHO` (small noise: ``W`` over many orders
of magnitude, where one uniform cell cannot follow both the bulk and the clamp), and refines (points doubled, ``rho`` halved)
whichever method is predicted to reach the width first from its observed convergence and its estimated
cost (:func:`_time_to`: grid sizes, never measured times, so the schedule is the same on every machine);
each direction keeps the least upper and the largest lower value of all laws computed (each valid on its
own). The time limit only stops the schedule (:func:`~.bracket._may_refine`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ...errors import NumericalLimitError
from .bracket import _SETTLED, _WHICH, _brackets_at, _Law, _may_refine, _width
from .geometric_grid import LOG_START_RHO, _geometric_laws, _log_seconds
from .ratios import GaussianRatio
from .uniform_grid import START_POINTS, _linear_laws, _linear_seconds
from .uniform_tilted import TILTED_START_POINTS, _tilted_laws, _tilted_seconds


#: How much longer each method's next refinement takes (measured: points doubled, resp. rho halved).
_GROWTH = {"linear": 2.2, "tilted": 2.2, "log": 3.0}


def _time_to(history: Sequence[tuple[float, float]], target: float, growth: float) -> float:
    """The time a method is predicted to need to bring its bracket's width down to ``target``, from its
    (width, estimated seconds) history: the width shrinks by its last observed factor a refinement (0.3 before two
    steps: the rounding's error is of second order), each step costs ``growth`` times the last. A method
    whose bracket has stopped shrinking (round-off, the clamp) is predicted to need many steps."""
    width, seconds = history[-1]
    if not math.isfinite(width):
        return math.inf
    factor = 0.3 if len(history) < 2 or not history[-2][0] > 0 else min(max(width / history[-2][0], 0.05), 0.95)
    steps = max(math.ceil(math.log(max(width / target, 1.0 + 1e-9)) / -math.log(factor)), 1)
    return seconds * sum(growth**i for i in range(1, min(steps, 60) + 1))


#: The two methods of 1 of t: the uniform grid (refined by doubling its points) and the geometric one
#: (refined by halving rho), with their first parameter, their refinement and their cost estimate.
_METHODS = {"linear": (_linear_laws, START_POINTS, lambda points: 2 * points, _linear_seconds),
            "tilted": (_tilted_laws, TILTED_START_POINTS, lambda points: 2 * points, _tilted_seconds),
            "log": (_geometric_laws, LOG_START_RHO, lambda rho: rho / 2.0, _log_seconds)}
#: The order in which a direction still too wide takes up the methods it has not tried.
_NEXT = ("tilted", "log")


#: Largest delta at which the bracket of a curve is checked besides the target's (:func:`_checkpoints`).
_LADDER_TOP = 1e-2


def _checkpoints(delta: float | None, epsilon: float | None, ladder: bool) -> list[tuple[float | None, float | None]]:
    """Where the bracket must be within ``rtol``: the target and, with a delta target and ``ladder``, every
    power of ten above it up to :data:`_LADDER_TOP` (a curve is read at many deltas: ``gce curve`` solves at
    the smallest and tabulates the rest; the relative error of the grids grows as epsilon shrinks)."""
    points = [(delta, epsilon)]
    if ladder and epsilon is None and delta is not None and 0.0 < delta < _LADDER_TOP:
        power = math.floor(math.log10(delta)) + 1
        while 10.0**power <= _LADDER_TOP:
            points.append((10.0**power, None))
            power += 1
    return points


def _single(ratio: GaussianRatio, t: int, rtol: float, delta: float | None, epsilon: float | None,
            tail: float, ladder: bool = False):
    """The 1-of-t laws per direction, by two methods: the uniform grid (FFT; best when W's bulk and clamp
    are of one scale, large noise) and the geometric grid (pairwise sums; best when W spans many orders of
    magnitude, small noise, and at small deltas, its round-off being relative cell by cell:
    :mod:`.geometric_grid`). Both give valid bounds, so every law computed is kept where it is the best.

    Returns ``(laws, kept, stopped)``: ``laws[which] = (upper, lower, label)`` the laws with the least upper
    and the largest lower value at the target; ``kept[which] = (uppers, lowers)`` every law that is the best
    at one of the :func:`_checkpoints` (the pointwise least of the uppers and largest of the lowers bound
    the curve at every delta); ``stopped``: whether the time limit stopped the schedule.

    The uniform grid is computed first; while the bracket of the larger direction at a checkpoint is wider
    than ``rtol``, each direction that could decide the answer there (its upper value above the other's
    lower one) and whose own bracket is too wide is refined: first by the geometric grid at
    :data:`LOG_START_RHO`, then by refining whichever method is predicted to reach the width first
    (:func:`_time_to`; up to :data:`GRID_LIMIT` points, resp. :data:`LOG_WORK_LIMIT`), while the time limit
    allows (:func:`~.bracket._may_refine`)."""
    targets = _checkpoints(delta, epsilon, ladder)
    params = {w: {"linear": START_POINTS} for w in _WHICH}   # each method's next parameter
    # every law computed: (upper, lower, label, method, lows at the checkpoints, highs at the checkpoints)
    done: dict[str, list[tuple[_Law, _Law, str, str, list[float], list[float]]]] = {w: [] for w in _WHICH}
    spent: dict[str, set[str]] = {w: set() for w in _WHICH}  # methods past their limit
    history: dict[str, dict[str, list[tuple[float, float]]]] = {w: {m: [] for m in _METHODS} for w in _WHICH}
    pending = {w: "linear" for w in _WHICH}
    stopped = False
    while True:
        for which, method in pending.items():
            laws, _, _, cost = _METHODS[method]
            seconds = cost(ratio, t, params[which][method], tail, which)
            try:
                up, low, label = laws(ratio, t, params[which][method], tail, which)
            except NumericalLimitError:
                spent[which].add(method)
                if not done[which] and len(spent[which]) == len(_METHODS):
                    raise
                continue
            los, his = _brackets_at(up, low, targets)
            done[which].append((up, low, label, method, los, his))
            history[which][method].append((max(_width(lo, hi) for lo, hi in zip(los, his)), seconds))
        if any(not done[w] for w in _WHICH):  # the uniform grid failed at once: the next method
            pending = {}
            for w in _WHICH:
                untried = [m for m in _NEXT if m not in params[w]] if not done[w] else []
                if untried:
                    pending[w] = untried[0]
                    params[w][untried[0]] = _METHODS[untried[0]][1]
            if not pending:
                raise NumericalLimitError("random allocation: no grid fits")
            continue
        # per checkpoint and direction, the best values of all laws computed
        lows = [[max(r[4][c] for r in done[w]) for w in _WHICH] for c in range(len(targets))]
        highs = [[min(r[5][c] for r in done[w]) for w in _WHICH] for c in range(len(targets))]
        widths = [_width(max(lo), max(hi)) for lo, hi in zip(lows, highs)]
        width = max(widths)
        if width <= rtol:
            break
        pending = {}
        for d, which in enumerate(_WHICH):
            if not any(highs[c][d] > max(lows[c]) and _width(lows[c][d], highs[c][d]) > rtol / 2
                       and widths[c] > rtol for c in range(len(targets))):
                continue
            # A direction whose bracket is within a few times its round-off allowance is done: refining only
            # grows the allowance (a delta of 0 at the target, e.g. a pure pair beyond its epsilon).
            best_lower = max(done[which], key=lambda r: r[4][0])[1]
            if highs[0][d] - lows[0][d] <= _SETTLED * (best_lower.slack + best_lower.slack_other) \
                    and len(targets) == 1:
                continue
            untried = [m for m in _NEXT if m not in params[which]]
            if untried:
                params[which][untried[0]] = _METHODS[untried[0]][1]
                pending[which] = untried[0]
                continue
            usable = [m for m in _METHODS if history[which][m] and m not in spent[which]]
            if not usable:
                continue
            method = min(usable, key=lambda m: _time_to(history[which][m], rtol / 2, _GROWTH[m]))
            params[which][method] = _METHODS[method][2](params[which][method])
            pending[which] = method
        if not pending:
            break
        estimate = sum(_METHODS[m][3](ratio, t, params[w][m], tail, w) for w, m in pending.items())
        worst = targets[widths.index(width)]
        if not _may_refine(estimate, "allocation refinement", worst[0], worst[1], width):
            stopped = True
            break
    best: dict[str, tuple[_Law, _Law, str]] = {}
    kept: dict[str, tuple[list[_Law], list[_Law]]] = {}
    for which in _WHICH:
        results = done[which]
        upper = min(results, key=lambda r: r[5][0])
        lower = max(results, key=lambda r: r[4][0])
        label = upper[2] if lower is upper else f"upper {upper[2]}, lower {lower[2]}"
        best[which] = (upper[0], lower[1], label)
        uppers = {id(min(results, key=lambda r: r[5][c])): c for c in range(len(targets))}
        lowers = {id(max(results, key=lambda r: r[4][c])): c for c in range(len(targets))}
        kept[which] = ([r[0] for r in results if id(r) in uppers], [r[1] for r in results if id(r) in lowers])
    return best, kept, stopped

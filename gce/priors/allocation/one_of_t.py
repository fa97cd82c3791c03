"""1 of t, one epoch: the uniform and the geometric grid, each refined while the bracket is too wide.

Both grids' errors are of second order in the cell width. :func:`_single` starts with the uniform grid
(it stays alone when it meets ``rtol`` at once: ``mu <= 1`` as before), then tries the geometric grid at
:data:`LOG_START_RHO` for the directions still too wide, and refines (points doubled, ``rho`` halved)
whichever method is predicted to reach the width first from its observed convergence and cost
(:func:`_time_to`); each direction keeps the least upper and the largest lower value of all laws computed
(each valid on its own).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from ...errors import NumericalLimitError
from .bracket import _SETTLED, _WHICH, _bracket_at, _Clock, _Law, _width
from .geometric_grid import LOG_START_RHO, _geometric_laws
from .ratios import GaussianRatio
from .uniform_grid import START_POINTS, _linear_laws


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
    noise: :mod:`.geometric_grid`). Both give valid bounds, so each direction keeps the least upper value
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

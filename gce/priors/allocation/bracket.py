"""What every method of the package returns and shares: one direction's law (:class:`_Law`), the upper curve
with its certified lower curve (:class:`AllocationCurve`, :class:`LowerBound`), the bracket's width at the
target, and the clock that stops the refinements.

An upper curve is a valid guarantee (the maximum over both directions of dominating pairs' curves); a lower
curve is never one: it bounds the exact curve from below (garbled pairs, less their round-off allowance), so
the exact value at the target lies in the bracket between them.

Accuracy decides the work
-------------------------
The refinements (points doubled, ``rho`` halved, the loss grid halved) follow a schedule that depends only
on the question and the requested relative width ``rtol`` of the bracket at the target: the same question
gives the same numbers on any machine (docs/design.md, "Random allocation", "Time"). The time limit of the
running computation (:func:`gce.effort.current`) only *stops*: before each step its cost is estimated from
its grid's size (:func:`_linear_seconds`, :func:`_log_seconds`: cells times a constant, never a measured
time), and a step that would not fit is not made; the last completed step is kept (a certified bracket,
wider) and the stop is recorded on the deadline (the report then says ``time limit reached``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ... import effort
from ...accounting.curves import DiscreteLossCurve, GaussianCurve, PrivacyCurve, at_or_above
from ...errors import InvalidParameterError
from ...validation import is_integer, is_number, shown


#: Default requested relative width of the epsilon (or delta) bracket at the target.
DEFAULT_RTOL = 0.005
#: P-mass of one database's likelihood ratio beyond the clamp ``B`` (charged at infinite loss).
TAIL = 1e-14
#: With a target delta, the clamp's charge may reach this share of it (:func:`allocation_curve`).
_TAIL_SHARE = 1e-4
#: A target epsilon at which the closed-form upper curve (every member's Gaussian composed) already gives a
#: delta below this is answered by the closed forms: no grid is sized for it (a grid reaching ``epsilon``
#: would be as large as the epsilon asked, up to 1e308), and the bracket's ends are both below this delta.
#: So is a target delta below it (down to 5e-324): the clamps' charges, a share of it, would underflow.
NEGLIGIBLE_DELTA = 1e-30
#: Safety factor of the round-off allowance (:mod:`.uniform_grid` and :mod:`.geometric_grid`, "Floating point").
ROUND_OFF = 8.0


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
    #: A relative round-off allowance already applied to the masses and losses (the geometric grid's,
    #: cell by cell): for the record only.
    relative: float = 0.0

    def curve(self) -> DiscreteLossCurve:
        with np.errstate(divide="ignore"):
            return DiscreteLossCurve(self.loss, np.log(self.mass), infinite_mass=min(self.infinite, 1.0))


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

    def __init__(self, upper: Sequence[PrivacyCurve], lower: LowerBound, description: str,
                 directions: tuple[PrivacyCurve, PrivacyCurve] | None = None):
        self._upper = tuple(upper)
        self.lower = lower
        self.description = description
        #: Each direction's own upper curve (remove, add), where the method computes them apart (the
        #: decomposition): each a valid bound on its direction alone.
        self.directions = directions
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


def _width(low: float, high: float) -> float:
    """``high / low - 1``: :func:`gce.effort.relative_width`."""
    return effort.relative_width(low, high)


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


def _brackets_at(upper: _Law, lower: _Law, targets) -> tuple[list[float], list[float]]:
    """One direction's (lower, upper) values at each target ``(delta, epsilon)`` (each curve built once)."""
    low = LowerBound([(lower.curve(), lower.slack, lower.slack_other)])
    up = upper.curve()
    pairs = [_at(up, low, delta, epsilon) for delta, epsilon in targets]
    return [lo for lo, _ in pairs], [hi for _, hi in pairs]


def _reading(curve, delta: float | None, epsilon: float | None) -> float:
    """A curve at the target: its epsilon at ``delta``, or its delta at ``epsilon`` when that is given."""
    return float(curve.epsilon(delta)) if epsilon is None else float(curve.delta(epsilon))


def _at(curve, lower, delta: float | None, epsilon: float | None) -> tuple[float, float]:
    """The bracket at the target: (``lower``'s reading, ``curve``'s); a step that needs only the lower end
    reads it alone (:func:`_reading`: the upper curve, a circle's say, can cost a bisection)."""
    return _reading(lower, delta, epsilon), _reading(curve, delta, epsilon)


class _DirectionLower(PrivacyCurve):
    """The batch engine's lower curve seen as a curve, both directions or one (``which``: its
    :meth:`~gce.accounting.batch.LowerCurve.direction_delta`); only to be wrapped in :class:`LowerBound`."""

    def __init__(self, lower, which: int | None = None):
        self._lower, self._which = lower, which

    def _delta(self, eps):
        if self._which is None:
            return np.atleast_1d(self._lower.delta(eps))
        return self._lower.direction_delta(self._which, eps)


#: Estimated seconds per unit of FFT work (points x log2 points) of one uniform-grid law (spread, powers,
#: garbling, both measures): measured on a 2-core machine, with a margin. Only decides whether a step fits.
_FFT_SECONDS = 1.5e-7
#: Estimated seconds per unit of pairwise-sum work (points x offsets) of one geometric-grid sum (spread and
#: garbling), and per sum whatever its size: as :data:`_FFT_SECONDS`.
_LOG_SECONDS = (8e-8, 1.5e-2)


def _fft_seconds(size: int) -> float:
    """Estimated seconds of one law on an FFT of ``size`` points (:data:`_FFT_SECONDS`)."""
    return _FFT_SECONDS * size * max(math.log2(max(size, 2)), 1.0)


def _target_text(delta: float | None, epsilon: float | None) -> str:
    return f"delta {delta:g}" if epsilon is None else f"epsilon {epsilon:g}"


def _may_refine(seconds: float, what: str, delta: float | None, epsilon: float | None, width: float) -> bool:
    """Whether the next refinement, estimated at ``seconds``, fits in the running computation's time limit
    (:func:`gce.effort.current`); when it does not, the stop is recorded there (``what`` at the target, with
    the width of the bracket kept) and the caller keeps its last completed step."""
    deadline = effort.current()
    if deadline.fits(seconds):
        return True
    shown = "unbounded" if not math.isfinite(width) else f"{width:.1%} wide"
    deadline.stop(f"{what} at {_target_text(delta, epsilon)} (bracket {shown})")
    return False


_STOPPED = "; refinement stopped at the time limit (a wider bracket, still certified)"


#: A direction's bracket within this many times its round-off allowance is not refined (:func:`_single`).
_SETTLED = 16.0


def _check_target(delta: object, epsilon: object) -> None:
    """The target's own checks (before any grid is sized): ``epsilon`` a finite number >= 0, else ``delta`` a
    number in (0, 1) (None for both: the default delta)."""
    if epsilon is not None:
        if not is_number(epsilon) or not 0.0 <= epsilon < math.inf:
            raise InvalidParameterError("epsilon", f"must be a finite number >= 0, got {shown(epsilon)}")
    elif delta is not None and (not is_number(delta) or not 0.0 < delta < 1.0):
        raise InvalidParameterError("delta", f"must be a number in (0, 1), got {shown(delta)}")


def _negligible(mu: float, epsilon: float | None, delta: float | None = None) -> str | None:
    """Why the target is answered in closed form, not refined (None: it is refined): GDP ``mu`` (an upper
    curve in closed form) gives a delta below :data:`NEGLIGIBLE_DELTA` at a target ``epsilon``, or the
    target ``delta`` itself is below it."""
    if epsilon is not None:
        if float(GaussianCurve(mu).delta(float(epsilon))) < NEGLIGIBLE_DELTA:
            return f"delta at epsilon {epsilon:g} below {NEGLIGIBLE_DELTA:g} in closed form (not refined)"
    elif delta is not None and delta < NEGLIGIBLE_DELTA:
        return f"epsilon at delta {delta:g}, below {NEGLIGIBLE_DELTA:g}, in closed form (not refined)"
    return None


def _check_count(value: object, name: str, low: int = 1) -> int:
    if not is_integer(value) or value < low:
        raise InvalidParameterError(name, f"must be an integer >= {low}, got {shown(value)}")
    return int(value)

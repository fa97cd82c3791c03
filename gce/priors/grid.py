"""Curve and grid utilities shared by the coupling and subsampling routes (001, Sec. V-B).

Both routes tabulate valid upper bounds delta(eps) on one grid
(:data:`TABLE_GRID`), refine between the two grid points that bracket a
target, and interpolate with chords in e^eps: every hockey-stick divergence is
convex in e^eps, so a chord between two valid bounds is a valid bound in
between (:func:`_chord`). Also here: basic composition of two blocks whatever
their direction (:func:`_split_curve`, 002 Thm. III.1), the ordered evaluation
dp-accounting needs (:func:`_sorted_call`), and the argument checks both
routes share.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray

from ..accounting.curves import FunctionCurve, PrivacyCurve
from ..errors import InvalidParameterError
from ..validation import is_number, shown
from ..model import Invocation

__all__ = ["TABLE_GRID", "LOCAL_POINTS", "ROUND_UP", "SPLIT_POINTS"]

#: Grid on which every profile is tabulated once (0, then 4 points per octave from 2^-16 to 2^12).
TABLE_GRID = np.concatenate([[0.0], 2.0 ** np.arange(-16.0, 12.0 + 1e-9, 0.25)])

#: Points of the local table between the two points of TABLE_GRID that bracket the answer.
LOCAL_POINTS = 129

#: Relative amount by which an epsilon from interpolation is rounded up, against round-off.
ROUND_UP = 1e-12

#: Points of the split between two blocks in the mixed-orientation bound.
SPLIT_POINTS = 257


def _check_epsilon(epsilon: float) -> float:
    """``epsilon`` as a float if it is a finite number >= 0, else InvalidParameterError."""
    if not is_number(epsilon):
        raise InvalidParameterError("epsilon", f"must be a number, got {shown(epsilon)}")
    epsilon = float(epsilon)
    if not (epsilon >= 0.0 and math.isfinite(epsilon)):
        raise InvalidParameterError("epsilon", f"must be finite and >= 0, got {shown(epsilon)}")
    return epsilon


def _check_invocations(invocations: Iterable[Invocation]) -> tuple[Invocation, ...]:
    """The invocations as a tuple, each an Invocation, else InvalidParameterError naming ``invocations[i]``."""
    invocations = tuple(invocations)
    for i, inv in enumerate(invocations):
        if not isinstance(inv, Invocation):
            raise InvalidParameterError(f"invocations[{i}]", f"must be an Invocation, got {shown(inv)}")
    return invocations


def _split_curve(a: PrivacyCurve, b: PrivacyCurve) -> PrivacyCurve:
    """delta(eps) <= min_s delta_a(s) + delta_b(eps - s): basic composition of two blocks
    (002 Thm. III.1), valid whatever direction each block's pair is in. The blocks'
    invocations may interleave: concurrent composition of interactive mechanisms obeys
    the same (epsilon, delta) composition theorems (Lyu 2022; Vadhan and Zhang 2023)."""
    share = np.linspace(0.0, 1.0, SPLIT_POINTS)

    def delta_fn(eps: NDArray[np.float64]) -> NDArray[np.float64]:
        """min over the split s = share * eps of delta_a(s) + delta_b(eps - s), capped at 1."""
        s = eps[:, None] * share[None, :]
        da = _sorted_call(a, s.ravel()).reshape(s.shape)
        db = _sorted_call(b, (eps[:, None] - s).ravel().clip(min=0.0)).reshape(s.shape)
        return np.minimum((da + db).min(axis=1), 1.0)

    return FunctionCurve(delta_fn, delta_floor=min(a.delta_floor + b.delta_floor, 1.0))


def _chord(x_lo: float, v_lo: float, x_hi: float, v_hi: float, eps: float) -> float:
    """The chord in e^eps through (x_lo, v_lo) and (x_hi, v_hi), at eps in [x_lo, x_hi].

    Every hockey-stick divergence H_{e^eps}(P || Q) = sup_S P(S) - e^eps Q(S) is a
    supremum of functions affine in e^eps, hence convex in e^eps: where valid bounds
    v_lo, v_hi hold at x_lo and x_hi, the chord between them is a valid bound in between.
    """
    if eps <= x_lo:
        return v_lo
    if eps >= x_hi:
        return v_hi
    return v_lo + (v_hi - v_lo) * (math.expm1(eps - x_lo) / math.expm1(x_hi - x_lo))


def _crossing(x_lo: float, v_lo: float, x_hi: float, v_hi: float, target: float) -> float:
    """Smallest eps in [x_lo, x_hi] where the chord in e^eps meets the target (needs v_hi <= target).

    Rounded up and checked, so the chord's value there is at most the target.
    """
    if v_lo <= target:
        return x_lo
    frac = (v_lo - target) / (v_lo - v_hi)
    eps = min(x_hi, (x_lo + math.log1p(frac * math.expm1(x_hi - x_lo))) * (1.0 + ROUND_UP))
    return eps if _chord(x_lo, v_lo, x_hi, v_hi, eps) <= target else x_hi


def _first_below(grid: NDArray[np.float64], values: NDArray[np.float64], target: float) -> int | None:
    """Index of the first grid point whose value is <= target, or None."""
    ok = values <= target
    return int(np.argmax(ok)) if ok.any() else None


def _sorted_call(curve: PrivacyCurve, eps: NDArray[np.float64]) -> NDArray[np.float64]:
    """curve.delta(eps) evaluated on ascending eps (dp-accounting refuses other orders).

    A curve that still passes an unordered array to dp-accounting internally
    (gce.accounting.theorems' split of zCDP and PLD groups does, for several eps at once)
    raises ValueError; it is then evaluated one eps at a time.
    """
    order = np.argsort(eps, kind="stable")
    out = np.empty(eps.size)
    try:
        out[order] = np.asarray(curve.delta(eps[order]), dtype=float).reshape(eps.size)
    except ValueError:
        out[order] = [float(curve.delta(float(e))) for e in eps[order]]
    return out

"""Calibration for training: the noise multiplier that gives (epsilon, delta) after E epochs of t steps.

The question DP-SGD users ask (:func:`calibrate_noise`): which sigma (the Gaussian noise's standard
deviation over the clipping norm) makes E epochs of t steps (epsilon, delta)-DP for one example, under
add/remove neighbours, when the batches are

* ``"shuffled"``: random allocation, each example in exactly one of the t batches of an epoch, its batch
  uniform and independent of the other examples' (Feldman and Shenfeld 2025; the epochs fresh allocations):
  :func:`gce.priors.allocation.allocation_curve`;
* ``"poisson"``: Poisson subsampling, each step taking each example independently at rate ``q = 1 / t``
  (Balle, Barthe and Gaboardi 2018; ``t E`` steps): :func:`gce.priors.allocation.poisson_curve`.

Both engines give a certified bracket ``[lower, upper]`` of epsilon at the target delta, at a requested
relative accuracy; the exact epsilon is non-increasing in sigma. A sigma whose *upper* epsilon is at most
the target certainly meets it; a sigma whose *lower* epsilon exceeds the target certainly does not, nor
does any smaller one. The answer is the smallest sigma found of the first kind, ``sigma_high``, with the
largest found of the second, ``sigma_low``: the exact minimal sigma lies in ``[sigma_low, sigma_high]``, a
bracket certified both ways whose relative width is the ``rtol`` asked (or said to be wider).

The search (:class:`_Search`), on ``u = log(sigma)``:

* *Closed forms first.* ``mu*``, the Gaussian-DP parameter whose curve has epsilon = target at the target
  delta (Dong, Roth and Su 2022, Cor. 2.13), gives three landmarks: the composition without amplification,
  every step the example can be in composed (``sqrt(t E) / mu*`` for Poisson, ``sqrt(E) / mu*`` shuffled:
  an upper bound on the sigma needed, amplification only helps; the search goes up to 1.1 times it); the
  sum of every batch's output over each epoch (one Gaussian of noise ``sigma sqrt(t)`` an epoch: a
  post-processing of the shuffled run, so ``sqrt(E / t) / mu*`` is a lower bound on its sigma, the lower end
  of its bracket until an evaluation certifies a larger one); and, between them, the central-limit
  estimate ``mu* = sqrt(E / t) sqrt(exp(1 / sigma^2) - 1)`` (Bu, Dong, Long and Su 2020) where the search
  starts (:func:`clt_sigma`).
* *From coarse to fine.* Each evaluation asks the engine for an accuracy proportional to its distance from
  the estimated root (coarse far away, where any bracket decides, fine only next to the root), first four
  times coarser still, or as much coarser as the engine's last brackets were narrower than asked (the
  allocation engines often return a tenth of the width asked; when not decisive, the point is evaluated
  again at what it needs); the root estimate and its uncertainty come from the best-resolved
  evaluation and the slope of ``log epsilon`` against ``u`` (a secant of two well-resolved evaluations,
  else the closed form's). While the estimate is more uncertain than the bracket asked, the next
  evaluation is at the estimate; then the two ends are placed either side of it, the end that meets
  first, the other as far out as still closes the bracket. A bisection of the certified bracket takes over
  when two steps did not halve it (once both its ends were evaluated: the closed form's lower end is far).
  Where an engine cannot narrow its bracket of epsilon below some width, the ends go further out and the
  bracket of sigma is wider than asked (a note says so).
* *The answer re-checked.* The returned sigma's bracket is the one an evaluation at the final accuracy gave
  (evaluated again when it is wider than the accuracy asked of sigma allows, ``slope x rtol``).

Every step is a function of the values seen, so the same question gives the same answer, byte for byte; the
time limit (one :class:`gce.effort.Deadline`, which the engines read too) only stops the search or an
engine's refinement, and then the answer is the best certified one reached and says so. Should the limit
pass before any sigma is found to meet the target, 1.1 times the composition's sigma is the answer
(certified in closed form; the engines fall back on it when no grid fits in the time left).

References
----------
Feldman, Shenfeld, "Privacy amplification by random allocation", arXiv 2502.08202 (2025).
Balle, Barthe, Gaboardi, "Privacy amplification by subsampling: tight analyses via couplings and
divergences", NeurIPS 2018.
Dong, Roth, Su, "Gaussian differential privacy", JRSS B 2022 (Cor. 2.13: the GDP curve).
Bu, Dong, Long, Su, "Deep learning with Gaussian differential privacy", HDSR 2020 (the central-limit mu).
Abadi et al., "Deep learning with differential privacy", CCS 2016 (DP-SGD).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .effort import Deadline, check_rtol, describe_width, relative_width, within
from .errors import InvalidParameterError, NumericalLimitError
from .progress import ProgressCallback
from .report import json_number
from .validation import as_float, is_integer, is_number, shown

__all__ = ["NoiseCalibration", "calibrate_noise", "clt_sigma", "gdp_mu", "SAMPLINGS", "SIGMA_RTOL", "COARSE_RTOL",
           "MAX_EVALUATIONS"]

#: The two ways of forming batches :func:`calibrate_noise` accounts.
SAMPLINGS = ("shuffled", "poisson")
#: The relative width of the certified bracket of sigma asked by default: ``sigma_high / sigma_low - 1``.
SIGMA_RTOL = 2e-3
#: The accuracy asked of the engines far from the root (their bracket of epsilon, ``upper / lower - 1``).
COARSE_RTOL = 0.05
#: The finest accuracy asked of the engines (:data:`gce.effort.MIN_RTOL` is the library's floor).
FINEST_RTOL = 1e-5
#: Evaluations after which the search stops with the bracket it has (it says so); about 6 to 10 are usual.
MAX_EVALUATIONS = 40
#: The share of the distance to the estimated root an evaluation's accuracy may use (in log epsilon): an
#: evaluation that far from the root decides its side with a margin of two.
_SHARE = 0.5
#: How much coarser the first request at a point is than what deciding its side needs (engines often return
#: a narrower bracket than asked; when not, the point is evaluated again at what it needs).
_COARSER = 4.0
#: The most by which a request is made coarser for an engine that returned narrower brackets than asked
#: (:meth:`_Search._gain`), and the share of the observed gain used (a margin: gains vary a little).
_GAIN_CAP, _GAIN_SHARE = 16.0, 0.8
#: How far each end is placed from the estimated root, as a share of the width asked (both ends: 0.9 of it).
_PLACE = 0.45
#: How far above the composition's sigma (closed form, module doc) the search may go: every engine certifies
#: the target there, with room for its round-up.
_ABOVE_COMPOSITION = 1.1
#: The relative error assumed of a slope read from the closed form, and added to a secant's.
_SLOPE_ERROR_MODEL, _SLOPE_ERROR_SECANT = 0.25, 0.03


# ---------------------------------------------------------------------------
# The answer


@dataclass(frozen=True)
class NoiseCalibration:
    """The answer of :func:`calibrate_noise`.

    Attributes
    ----------
    sigma : float
        The noise multiplier to train with: the smallest sigma found whose certified upper epsilon is at
        most ``target_epsilon`` (also ``sigma_high``).
    sigma_low : float
        A sigma certified *not* to meet the target (its certified lower epsilon exceeds it), or for shuffled
        batches the closed form of the summed batches (module doc) when no evaluation found a larger one; 0
        when neither is known: the exact minimal sigma lies in ``[sigma_low, sigma]``.
    epsilon_low, epsilon_high : float
        The certified bracket of epsilon at ``sigma`` (``epsilon_high <= target_epsilon``).
    target_epsilon, target_delta : float
        The target.
    steps_per_epoch, epochs : int
        The training run: ``steps_per_epoch * epochs`` steps.
    sampling : {"shuffled", "poisson"}
        How the batches are formed.
    rtol : float
        The relative width asked of the bracket of sigma.
    evaluations : int
        How many times an engine was evaluated.
    epsilon_rtol : float
        The accuracy asked of the engine at ``sigma`` (the re-check).
    time_limit_reached : bool
        Whether the time limit stopped the search or an engine's refinement (the answer still meets the
        target; its bracket may be wider).
    stops : tuple of str
        What the time limit stopped, in order.
    notes : tuple of str
        Why the bracket of sigma is wider than asked, when it is.

    Raises
    ------
    InvalidParameterError
        If the fields disagree (``epsilon_high`` above the target, ``sigma_low`` not below ``sigma``,
        stops without ``time_limit_reached``).
    """

    sigma: float
    sigma_low: float
    epsilon_low: float
    epsilon_high: float
    target_epsilon: float
    target_delta: float
    steps_per_epoch: int
    epochs: int
    sampling: str
    rtol: float
    evaluations: int
    epsilon_rtol: float
    time_limit_reached: bool = False
    stops: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.sampling not in SAMPLINGS:
            raise InvalidParameterError("sampling", f"must be one of {', '.join(SAMPLINGS)}, got "
                                                    f"{shown(self.sampling)}")
        if not (0.0 < self.sigma < math.inf):
            raise InvalidParameterError("sigma", f"must be finite and > 0, got {shown(self.sigma)}")
        if not (0.0 <= self.sigma_low < self.sigma):
            raise InvalidParameterError("sigma_low", f"must lie in [0, sigma = {shown(self.sigma)}), got "
                                                     f"{shown(self.sigma_low)}")
        if not (0.0 <= self.epsilon_low <= self.epsilon_high <= self.target_epsilon):
            raise InvalidParameterError(
                "epsilon_high", f"the bracket [{shown(self.epsilon_low)}, {shown(self.epsilon_high)}] does not meet "
                                f"the target epsilon {shown(self.target_epsilon)}")
        if self.time_limit_reached != bool(self.stops):
            raise InvalidParameterError("stops", "must be given exactly when the time limit was reached")

    @property
    def sigma_high(self) -> float:
        """The upper end of the bracket of sigma: :attr:`sigma`, the one returned."""
        return self.sigma

    @property
    def sigma_bracket(self) -> tuple[float, float]:
        """``(sigma_low, sigma_high)``: the exact minimal sigma lies in it."""
        return self.sigma_low, self.sigma

    @property
    def epsilon_bracket(self) -> tuple[float, float]:
        """``(epsilon_low, epsilon_high)`` at :attr:`sigma`."""
        return self.epsilon_low, self.epsilon_high

    @property
    def accuracy(self) -> float:
        """The relative width reached, ``sigma / sigma_low - 1`` (``inf`` when ``sigma_low`` is 0)."""
        return relative_width(self.sigma_low, self.sigma)

    @property
    def steps(self) -> int:
        """Steps in all, ``steps_per_epoch * epochs``."""
        return self.steps_per_epoch * self.epochs

    @property
    def sample_rate(self) -> float:
        """Each example's share of a batch, ``1 / steps_per_epoch`` (Poisson: the rate of every step)."""
        return 1.0 / self.steps_per_epoch

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``gce calibrate --steps-per-epoch ... --json``): plain Python values."""
        return {
            "sigma": float(self.sigma),
            "sigma_low": float(self.sigma_low),
            "sigma_high": float(self.sigma),
            "epsilon": json_number(self.epsilon_high),
            "epsilon_low": json_number(self.epsilon_low),
            "epsilon_high": json_number(self.epsilon_high),
            "delta": float(self.target_delta),
            "target": {"epsilon": float(self.target_epsilon), "delta": float(self.target_delta)},
            "sampling": self.sampling,
            "steps_per_epoch": int(self.steps_per_epoch),
            "epochs": int(self.epochs),
            "steps": int(self.steps),
            "sample_rate": float(self.sample_rate),
            "rtol": float(self.rtol),
            "accuracy": json_number(self.accuracy),
            "epsilon_rtol": float(self.epsilon_rtol),
            "evaluations": int(self.evaluations),
            "status": "time limit reached" if self.time_limit_reached else "complete",
            "time_limit_reached": bool(self.time_limit_reached),
            "stops": list(self.stops),
            "notes": list(self.notes),
        }

    def __str__(self) -> str:
        what = ("shuffled batches (random allocation)" if self.sampling == "shuffled"
                else f"Poisson sampling at rate {self.sample_rate:.6g}")
        lines = []
        if self.time_limit_reached:
            lines.append(f"time limit reached: a certified but coarser answer (sigma bracket "
                         f"{describe_width(self.accuracy)} wide, {100 * self.rtol:.3g}% asked)")
        lines += [
            f"{self.epochs} epoch(s) of {self.steps_per_epoch} steps, {what}",
            f"sigma {self.sigma:.6g} meets the target (epsilon {self.target_epsilon:g}, delta "
            f"{self.target_delta:g}): epsilon in [{self.epsilon_low:.6g}, {self.epsilon_high:.6g}]",
            f"the minimal sigma lies in [{self.sigma_low:.6g}, {self.sigma:.6g}] (bracket "
            f"{describe_width(self.accuracy)} wide; {self.evaluations} evaluations)",
        ]
        lines += [f"note: {note}" for note in self.notes]
        lines += [f"note: time limit reached: {stop}" for stop in self.stops]
        return "\n".join(lines)


# ---------------------------------------------------------------------------
# Closed forms


def gdp_mu(epsilon: float, delta: float) -> float:
    """The mu whose Gaussian-DP curve has ``epsilon`` at ``delta`` (Dong, Roth and Su 2022, Cor. 2.13):
    the root of ``Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) = delta``, increasing in mu, by a fixed
    bisection on ``log mu`` (deterministic, within 1e-12 relative).

    >>> round(gdp_mu(1.0, 1e-5), 6)
    0.268051
    """
    from .accounting.curves import gaussian_delta

    target = math.log(delta)

    def above(mu: float) -> bool:
        value = float(gaussian_delta(np.array([epsilon]), mu)[0])
        return value > 0.0 and math.log(value) > target

    low, high = math.log(1e-8), math.log(1e4)
    if above(math.exp(low)):
        return math.exp(low)
    if not above(math.exp(high)):
        return math.exp(high)
    for _ in range(64):
        middle = 0.5 * (low + high)
        if above(math.exp(middle)):
            high = middle
        else:
            low = middle
        if high - low < 1e-12:
            break
    return math.exp(low)  # delta(epsilon) <= target there: the composition's sigma from it meets the target


def _gdp_slope(mu: float, delta: float) -> float:
    """``d log epsilon / d log mu`` of the Gaussian-DP curve at ``delta`` (between 1 and 2)."""
    from .accounting.curves import GaussianCurve

    e1, e2 = (float(GaussianCurve(mu * f).epsilon(delta)) for f in (1.0, 1.01))
    if not (e1 > 0.0 and math.isfinite(e2)):
        return 1.5
    return min(max(math.log(e2 / e1) / math.log(1.01), 1.0), 2.0)


def clt_sigma(parts, target_epsilon: float, target_delta: float) -> tuple[float, float, float]:
    """Closed forms for the sigma with which Poisson-subsampled Gaussians meet a target.

    Parameters
    ----------
    parts : sequence of (sensitivity, rate, count)
        ``count`` Gaussian mechanisms of noise ``sigma`` and this sensitivity, each Poisson-subsampled at
        ``rate`` (1: not subsampled).
    target_epsilon, target_delta : float
        The target (epsilon > 0, delta in (0, 1)).

    Returns
    -------
    (estimate, composition, slope) : tuple of float
        ``composition``, the sigma with which every mechanism composed without amplification meets the
        target (GDP ``sqrt(sum count sensitivity^2) / sigma = mu*``; an upper bound on the sigma needed:
        subsampling only helps); ``estimate``, the central-limit one, ``sum count rate^2 (exp(sensitivity^2 /
        sigma^2) - 1) = mu*^2`` (Bu, Dong, Long and Su 2020), at most ``composition``; ``slope``, the
        estimate's ``-d log epsilon / d log sigma`` there (within [0.5, 4]).

    Raises
    ------
    InvalidParameterError
        Naming ``parts`` when no mechanism has a sensitivity and a rate above 0.

    Examples
    --------
    >>> estimate, composition, slope = clt_sigma([(1.0, 0.01, 1000)], 1.0, 1e-5)
    >>> round(estimate, 3), round(composition, 1)
    (1.359, 118.0)
    """
    parts = [(float(s), float(r), int(c)) for s, r, c in parts if s > 0 and r > 0 and c > 0]
    if not parts:
        raise InvalidParameterError("parts", "no mechanism has a sensitivity and a rate above 0")
    mu = gdp_mu(target_epsilon, target_delta)
    composition = math.sqrt(sum(c * s * s for s, _, c in parts)) / mu

    def clt_squared(sigma: float) -> float:
        return sum(c * r * r * math.expm1(min(s * s / (sigma * sigma), 700.0)) for s, r, c in parts)

    low, high = math.log(composition) - math.log(1e6), math.log(composition)
    if clt_squared(math.exp(high)) >= mu * mu:
        estimate = composition
    else:
        for _ in range(100):  # clt_squared decreases in sigma: its root on log sigma, by bisection
            middle = 0.5 * (low + high)
            if clt_squared(math.exp(middle)) > mu * mu:
                low = middle
            else:
                high = middle
            if high - low < 1e-12:
                break
        estimate = math.exp(high)
    weights = [(c * r * r, min(s * s / (estimate * estimate), 700.0)) for s, r, c in parts]
    amplification = (sum(w * math.exp(x) * x for w, x in weights) / sum(w * math.expm1(x) for w, x in weights))
    slope = _gdp_slope(mu, target_delta) * amplification
    return estimate, composition, min(max(slope, 0.5), 4.0)


@dataclass(frozen=True)
class _Landmarks:
    """The closed forms of the module doc, as sigmas: the composition's (certified upper bound on the sigma
    needed), the sum of the batches' (certified lower bound for shuffled batches), the central-limit
    estimate, and the slope of log epsilon against log sigma there."""

    composition: float
    summed: float
    estimate: float
    slope: float


def _landmarks(target_epsilon: float, target_delta: float, t: int, epochs: int, sampling: str) -> _Landmarks:
    estimate, composition, slope = clt_sigma([(1.0, 1.0 / t, t * epochs)], target_epsilon, target_delta)
    mu = gdp_mu(target_epsilon, target_delta)
    if sampling == "shuffled":  # an example is in E steps, not t E
        composition = math.sqrt(epochs) / mu
    summed = math.sqrt(epochs / t) / mu
    return _Landmarks(composition, summed, min(max(estimate, summed), composition), slope)


# ---------------------------------------------------------------------------
# The search


@dataclass(frozen=True)
class _Point:
    """One evaluation: ``u = log(sigma)``, the certified bracket of epsilon there, the accuracy asked."""

    u: float
    low: float
    high: float
    asked: float
    target: float

    @property
    def meets(self) -> bool:
        return self.high <= self.target

    @property
    def fails(self) -> bool:
        return self.low > self.target

    @property
    def width(self) -> float:
        """``log(high / low)`` (inf when nothing above 0 is certified, or nothing finite above)."""
        if not (self.low > 0.0 and math.isfinite(self.high)):
            return math.inf
        return math.log(self.high / self.low)

    @property
    def gap(self) -> float:
        """``log(epsilon / target)`` at the bracket's geometric middle (its upper end when the lower is 0)."""
        if not math.isfinite(self.high):
            return math.inf
        middle = math.sqrt(self.low * self.high) if self.low > 0.0 else self.high
        return math.log(middle / self.target) if middle > 0.0 else -math.inf


@dataclass(frozen=True)
class _Found:
    """Where the search ended: the answer's point, the certified failing sigma (0: none), what stopped it."""

    answer: _Point
    low: float
    evaluations: int
    stopped: bool
    notes: tuple[str, ...]


class _Search:
    """The smallest sigma meeting the target (module doc), from an evaluator ``(sigma, rtol) -> (lower,
    upper)`` of epsilon at the target delta.

    ``u_min``, ``u_max`` bound the search on ``u = log(sigma)`` (``u_max``: a sigma the closed forms
    certify; evaluating there always meets the target, the engines falling back on that closed form at
    worst); ``u_start`` and ``slope`` are the closed forms' estimate of the root and of ``-d log epsilon /
    d u`` there; ``rtol`` is the relative width asked of the bracket of sigma; ``u_below``, a log sigma
    certified in closed form not to exceed the minimal one (None: none known).
    """

    def __init__(self, evaluate: Callable[[float, float], tuple[float, float]], target: float, rtol: float,
                 u_start: float, slope: float, u_min: float, u_max: float, deadline: Deadline,
                 progress: ProgressCallback | None = None, u_below: float | None = None):
        self.evaluate, self.target, self.deadline, self.progress = evaluate, target, deadline, progress
        self.u_below = u_below
        self.width = math.log1p(rtol)
        self.u_start, self.model_slope, self.u_min, self.u_max = u_start, slope, u_min, u_max
        self.points: dict[tuple[float, float], _Point] = {}
        self.evaluations = 0

    # --- evaluations

    def at(self, u: float, rtol: float) -> _Point:
        key = (u, rtol)
        if key not in self.points:
            low, high = self.evaluate(math.exp(u), rtol)
            self.points[key] = _Point(u, float(low), float(high), rtol, self.target)
            self.evaluations += 1
            if self.progress is not None:
                self.progress(self.evaluations, None, f"sigma {math.exp(u):.6g}: epsilon in [{low:.6g}, {high:.6g}]")
        return self.points[key]

    def _gain(self) -> float:
        """How much narrower than asked the engine's brackets have been: the least ratio of the accuracy asked
        to the width returned over the last two evaluations (log scale; the gain changes with the accuracy, and
        the last requests are the nearest to the next), within [1, :data:`_GAIN_CAP`]. The
        allocation engines often return a bracket ten times narrower than asked (their grids refine in
        steps); asking for the need times this gain, rather than for the need, is several times faster, and
        a request that still comes back too wide is asked again at the need."""
        ratios = [math.log1p(p.asked) / p.width for p in list(self.points.values())[-2:]
                  if math.isfinite(p.width) and p.width > 0.0]
        return min(max(min(ratios, default=1.0), 1.0), _GAIN_CAP)

    def _request(self, need: float, coarser: float) -> float:
        """The accuracy first asked of an evaluation that needs ``need``: ``coarser`` times it, or the gain
        the engine showed (:meth:`_gain`), whichever is coarser."""
        return _rtol_at(max(coarser, _GAIN_SHARE * self._gain()) * need)

    def _best_at(self, u: float) -> tuple[float, float]:
        """The bracket of epsilon at ``u``: every evaluation there intersected (each is certified)."""
        found = [p for p in self.points.values() if p.u == u]
        high = min(p.high for p in found)
        return min(max(p.low for p in found), high), high

    # --- the model of the root

    def _slope(self, points: list[_Point]) -> tuple[float, float]:
        """(slope of log epsilon against ``-u``, its relative error): the secant of the pair of resolved
        points whose error (their brackets against the change between them) is least, when below the
        closed form's; else the closed form's."""
        usable = sorted((p for p in points if math.isfinite(p.width) and math.isfinite(p.gap)),
                        key=lambda p: (abs(p.gap) + p.width, p.u))[:6]
        best = (self.model_slope, _SLOPE_ERROR_MODEL)
        for i, p in enumerate(usable):
            for q in usable[i + 1:]:
                change = p.gap - q.gap
                if p.u == q.u or change == 0.0:
                    continue
                secant = change / (q.u - p.u) * -1.0
                error = 0.5 * (p.width + q.width) / abs(change) + _SLOPE_ERROR_SECANT
                if error < best[1] and 0.2 * self.model_slope <= secant <= 5.0 * self.model_slope:
                    best = (secant, error)
        return best

    def _estimate(self, points: list[_Point], lo: float | None, hi: float | None) -> tuple[float, float, float]:
        """(estimated u of the root, its uncertainty, the slope): from the best-resolved point, the one
        whose bracket is nearest the target."""
        slope, error = self._slope(points)
        resolved = [p for p in points if math.isfinite(p.gap) and math.isfinite(p.width)]
        low = self.u_min if lo is None else lo
        high = self.u_max if hi is None else hi
        if not resolved:
            return min(max(self.u_start, low), high), high - low, slope
        best = min(resolved, key=lambda p: (abs(p.gap) + p.width, p.u))
        u = min(max(best.u + best.gap / slope, low), high)
        spread = (0.5 * best.width + error * abs(best.gap)) / slope
        return u, min(spread, high - low), slope

    # --- the schedule

    def run(self) -> _Found:
        """The module doc's schedule; stops at :data:`MAX_EVALUATIONS` or when the deadline passed."""
        self.lo: float | None = self.u_below  # the largest u certified to fail (or, in closed form, not above the root)
        self.hi: float | None = None  # the smallest u certified to meet
        place = _PLACE * self.width
        floor = math.inf  # the narrowest bracket an engine returned while failing to reach what was asked
        notes: list[str] = []
        stopped = False
        x, need, ask = self.u_start, COARSE_RTOL, COARSE_RTOL
        lengths: list[float] = []
        self.slope, span = self.model_slope, self.width
        while True:
            point = None
            for rtol in dict.fromkeys((ask, need)):  # a coarser request first: engines often return narrower
                if self.deadline.expired():
                    stopped = True
                    break
                if self.evaluations >= MAX_EVALUATIONS:
                    notes.append(f"the search stopped after {MAX_EVALUATIONS} evaluations")
                    break
                point = self.at(x, rtol)
                if point.meets and (self.hi is None or x < self.hi):
                    self.hi = x
                if point.fails and (self.lo is None or x > self.lo):
                    self.lo = x
                if math.isfinite(point.width) and point.width > 1.5 * math.log1p(point.asked):
                    floor = min(floor, point.width)
                if point.meets or point.fails or point.width <= math.log1p(need):
                    break
            if stopped or notes:
                break
            lo, hi = self.lo, self.hi
            if hi is not None and lo is not None:
                if lo != self.u_below:  # the closed form's end is far: no measure of the model's progress
                    lengths.append(hi - lo)
                if hi - lo <= span * (1.0 + 1e-9):
                    break
            u_est, spread, slope = self._estimate(list(self.points.values()), lo, hi)
            self.slope = slope
            # where an engine cannot narrow its bracket below ``floor``, the ends go further out
            reach = place if not math.isfinite(floor) else max(place, floor / (_SHARE * slope))
            span = max(self.width, reach / _PLACE)  # the width aimed at (wider where the engines cannot narrow)
            slow = len(lengths) >= 3 and lengths[-1] > 0.5 * lengths[-3]
            placing = True
            if hi is not None and lo is not None and slow:
                x = 0.5 * (lo + hi)  # a bisection: the model did not narrow the bracket
                distance = 0.25 * (hi - lo)
                lengths.clear()
            elif spread > 0.5 * reach:
                x = u_est  # the estimate is too uncertain to place the ends: sharpen it where the root is
                distance, placing = max(0.4 * spread, 2.0 * reach), False
            elif hi is None or hi > u_est + 1.1 * reach:  # the end that meets: closing the bracket if it can
                x = u_est + reach
                if lo is not None and lo + 0.95 * span - u_est - spread >= 0.5 * reach:
                    x = lo + 0.95 * span
                distance = x - u_est - spread
            else:  # the end that fails: closing the bracket if it can
                x = u_est - reach
                if u_est - (hi - 0.95 * span) - spread >= 0.5 * reach:
                    x = hi - 0.95 * span
                distance = u_est - x - spread
            if lo is not None and x <= lo:
                x = 0.5 * (lo + (hi if hi is not None else lo + 2 * reach))
            if hi is not None and x >= hi:
                x = 0.5 * (hi + (lo if lo is not None else hi - 2 * reach))
            x = min(max(x, self.u_min), self.u_max)
            need = _rtol_at(_SHARE * slope * distance)
            ask = self._request(need, _COARSER if placing else 2.0)
            # a point already evaluated next to x at that accuracy would say the same: ask more of it
            near = [p.asked for p in self.points.values() if abs(p.u - x) <= 0.1 * max(distance, 0.0) + 1e-12]
            if near and min(near) <= ask:
                need = ask = _rtol_at(min(near) / 4.0)
                if need >= min(near):
                    notes.append("the engines could not narrow the bracket of epsilon near the root further")
                    break
        return self._answer(floor, stopped, notes)

    def _answer(self, floor: float, stopped: bool, notes: list[str]) -> _Found:
        lo, hi = self.lo, self.hi
        if hi is None:  # the closed form (module doc): evaluated, the engines fall back on it at worst
            hi = self.hi = self.u_max
            self.at(hi, COARSE_RTOL)
        # the re-check: the bracket of epsilon at the answer no wider than the accuracy asked of sigma allows
        # (unless an engine already failed to narrow its bracket below this one's width: it would again)
        final = _rtol_at(self.slope * math.expm1(self.width))
        low, high = self._best_at(hi)
        at_floor = math.isfinite(floor) and low > 0.0 and math.log(high / low) <= floor
        for request in dict.fromkeys((self._request(final, 1.0), final)):  # the gain first, then what is needed
            if relative_width(low, high) > final and (hi, request) not in self.points and not at_floor \
                    and not self.deadline.expired():
                self.at(hi, request)
                low, high = self._best_at(hi)
        if not high <= self.target:  # pragma: no cover - an evaluation that met the target is kept
            raise NumericalLimitError(f"sigma {shown(math.exp(hi))} met the target and then did not (epsilon "
                                      f"{shown(high)} > target_epsilon {shown(self.target)})")
        answer = _Point(hi, low, high, min(p.asked for p in self.points.values() if p.u == hi), self.target)
        if lo is not None and lo >= hi:  # pragma: no cover - certified brackets of a monotone epsilon
            raise NumericalLimitError(f"sigma {shown(math.exp(lo))} is certified not to meet the target and the larger "
                                      f"{shown(math.exp(hi))} to meet it: the engines' brackets contradict each other")
        sigma_low = 0.0 if lo is None else math.exp(lo)
        if not stopped and not notes and not self.deadline.reached \
                and (lo is None or hi - lo > self.width * (1.0 + 1e-9)):  # (a cap that stopped an engine says so)
            if math.isfinite(floor):
                notes.append(f"the bracket of sigma is wider than asked: the engines could not narrow epsilon's "
                             f"below {describe_width(math.expm1(floor))} near the root")
            else:  # pragma: no cover - the loop ends narrow enough, stopped, or with a note
                notes.append("the bracket of sigma is wider than asked")
        return _Found(answer, sigma_low, self.evaluations, stopped, tuple(notes))


def _rtol_at(value: float) -> float:
    """An engine accuracy: ``value`` within [:data:`FINEST_RTOL`, :data:`COARSE_RTOL`], rounded down to
    two significant digits (so that nearby requests are one request)."""
    value = min(max(value, FINEST_RTOL), COARSE_RTOL)
    scale = 10.0 ** math.floor(math.log10(value) - 1)
    return max(math.floor(value / scale) * scale, FINEST_RTOL)


# ---------------------------------------------------------------------------
# The engines


def _engine(sampling: str, t: int, epochs: int, target_delta: float) -> Callable[[float, float], tuple[float, float]]:
    """``(sigma, rtol) -> (lower, upper)``: epsilon at ``target_delta`` of the training run."""
    from .priors.allocation import MU_LIMIT, allocation_curve, poisson_curve

    def evaluate(sigma: float, rtol: float) -> tuple[float, float]:
        mu = 1.0 / sigma
        if not mu < MU_LIMIT:  # beyond every grid (a huge target epsilon asks for almost no noise)
            return _closed_bracket(sigma, t, epochs, sampling, target_delta)
        try:
            if sampling == "shuffled":
                curve = allocation_curve(mu, t, epochs=epochs, rtol=rtol, delta=target_delta)
            else:
                curve = poisson_curve([(mu, 1.0 / t, t * epochs)], rtol=rtol, delta=target_delta)
            low, high = curve.epsilon_bracket(target_delta)
        except NumericalLimitError:  # no grid fits: the closed forms (composition above; the sum below)
            low, high = _closed_bracket(sigma, t, epochs, sampling, target_delta)
        return max(float(low), 0.0), float(high)

    return evaluate


def _closed_bracket(sigma: float, t: int, epochs: int, sampling: str, delta: float) -> tuple[float, float]:
    from .accounting.curves import GaussianCurve

    members = epochs if sampling == "shuffled" else t * epochs
    high = float(GaussianCurve(math.sqrt(members) / sigma).epsilon(delta))
    low = float(GaussianCurve(math.sqrt(epochs / t) / sigma).epsilon(delta)) if sampling == "shuffled" else 0.0
    return low, high


# ---------------------------------------------------------------------------
# The entry point


def _check_count(value: object, name: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not is_integer(value) or value < 1:
        raise InvalidParameterError(name, f"must be an integer >= 1, got {shown(value)}")
    return int(value)


def calibrate_noise(
    target_epsilon: float,
    target_delta: float,
    *,
    steps_per_epoch: int,
    epochs: int,
    sampling: str,
    rtol: float = SIGMA_RTOL,
    time_limit: float | None = None,
    progress: ProgressCallback | None = None,
) -> NoiseCalibration:
    """The smallest noise multiplier sigma for which E epochs of t DP-SGD steps are (epsilon, delta)-DP.

    Each step adds Gaussian noise of standard deviation ``sigma`` (times the clipping norm) to the sum of
    its batch's clipped gradients; one example's privacy is accounted under add/remove neighbours over all
    ``steps_per_epoch * epochs`` steps, as a certified bracket (module doc).

    Parameters
    ----------
    target_epsilon : float
        The epsilon to meet, finite and > 0.
    target_delta : float
        The delta at which it is met, in (0, 1) (a Gaussian mechanism has no finite epsilon at 0).
    steps_per_epoch : int
        Steps (batches) per epoch, t >= 1: the expected batch is ``1 / t`` of the data.
    epochs : int
        Epochs, E >= 1.
    sampling : {"shuffled", "poisson"}
        How the batches are formed, which must match the data loader: ``"shuffled"``, each example in
        exactly one batch per epoch (random allocation: a loader that shuffles into equal batches, Opacus'
        ``poisson_sampling=False``); ``"poisson"``, each step takes each example independently at rate
        ``1 / t`` (Opacus' default ``poisson_sampling=True``). Required: the two answers differ, and
        accounting a Poisson loader as shuffled undercounts.
    rtol : float
        The relative width asked of the certified bracket of sigma, ``sigma_high / sigma_low - 1``, in
        [1e-6, 0.5] (default :data:`SIGMA_RTOL`, 0.2%). It alone decides the work.
    time_limit : float, optional
        Seconds the calibration may take (a cap: the answer does not depend on it unless it is reached, and
        then it still meets the target, with a wider bracket, and says so); None: no cap.
    progress : callable, optional
        Called as ``progress(step, None, message)`` after each evaluation (e.g. a
        :class:`gce.progress.Progress`).

    Returns
    -------
    NoiseCalibration
        ``sigma`` (its certified upper epsilon at most ``target_epsilon``), ``sigma_low`` (certified not to
        meet it), the bracket of epsilon at ``sigma``, the evaluations made, whether the time limit stopped
        it; ``to_dict()`` for JSON.

    Raises
    ------
    InvalidParameterError
        Naming the argument: ``target_epsilon`` not finite and > 0, ``target_delta`` not in (0, 1),
        ``steps_per_epoch`` or ``epochs`` not an integer >= 1, ``sampling`` not one of :data:`SAMPLINGS`,
        ``rtol`` not in [1e-6, 0.5], ``time_limit`` not a number of seconds in (0, 1e6].

    References
    ----------
    Feldman and Shenfeld, "Privacy amplification by random allocation", arXiv 2502.08202 (shuffled);
    Balle, Barthe and Gaboardi, "Privacy amplification by subsampling", NeurIPS 2018 (Poisson);
    dp-accounting's ``mechanism_calibration.calibrate_dp_mechanism`` (the same question by bisection of an
    accountant; ``benchmarks/bench_calibration_training.py`` compares them).

    Examples
    --------
    >>> c = calibrate_noise(1.0, 1e-5, steps_per_epoch=100, epochs=1, sampling="poisson")
    >>> round(c.sigma, 3), c.epsilon_high <= 1.0, c.sigma_low < c.sigma <= c.sigma_low * 1.002
    (0.902, True, True)
    """
    from .solvers.base import check_time_limit

    if not is_number(target_epsilon) or not 0.0 < as_float(target_epsilon) < math.inf:
        raise InvalidParameterError("target_epsilon", f"must be finite and > 0, got {shown(target_epsilon)}")
    if not is_number(target_delta) or not 0.0 < target_delta < 1.0:
        raise InvalidParameterError("target_delta", f"must lie in (0, 1) (a Gaussian mechanism has no finite "
                                                    f"epsilon at delta 0), got {shown(target_delta)}")
    t = _check_count(steps_per_epoch, "steps_per_epoch")
    epochs = _check_count(epochs, "epochs")
    if not isinstance(sampling, str) or sampling not in SAMPLINGS:
        raise InvalidParameterError("sampling", f"must be 'shuffled' (each example in one batch an epoch) or "
                                                f"'poisson' (each step samples each example at rate 1 / t), "
                                                f"got {shown(sampling)}")
    rtol = check_rtol(rtol)
    seconds = None if time_limit is None else check_time_limit(time_limit)
    target_epsilon, target_delta = float(target_epsilon), float(target_delta)

    marks = _landmarks(target_epsilon, target_delta, t, epochs, sampling)
    # the composition's sigma meets the target exactly: 10% above it, the engines' round-up (at most their
    # rtol, 5% at the coarsest) cannot take their upper end above the target
    u_max = math.log(marks.composition * _ABOVE_COMPOSITION)
    # shuffled: the sum of the batches certifies the lower end; Poisson: a decade below it, as a range only
    u_min = math.log(marks.summed) - (0.0 if sampling == "shuffled" else math.log(10.0))
    with within(Deadline(seconds)) as deadline:
        search = _Search(_engine(sampling, t, epochs, target_delta), target_epsilon, rtol,
                         math.log(marks.estimate), marks.slope, u_min, u_max, deadline, progress,
                         u_below=u_min if sampling == "shuffled" else None)
        found = search.run()
        if found.stopped:
            deadline.stop(f"the search for sigma (after {found.evaluations} evaluations)")
    answer = found.answer
    return NoiseCalibration(
        sigma=math.exp(answer.u), sigma_low=min(found.low, math.exp(answer.u) * (1 - 1e-15)),
        epsilon_low=min(answer.low, answer.high), epsilon_high=answer.high,
        target_epsilon=target_epsilon, target_delta=target_delta, steps_per_epoch=t, epochs=epochs,
        sampling=sampling, rtol=rtol, evaluations=found.evaluations, epsilon_rtol=answer.asked,
        time_limit_reached=deadline.reached, stops=deadline.stops, notes=found.notes)

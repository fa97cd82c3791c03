"""Calibration: the per-invocation parameter whose HDP guarantee meets a target (docs/design.md, "Calibration").

Two questions, chosen by the scenario's invocations:

* every invocation is :class:`~gce.accounting.guarantees.PureDP` or
  :class:`~gce.accounting.guarantees.ApproxDP`: the **largest common per-invocation
  epsilon** (each invocation keeps its own delta) such that the scenario's HDP
  guarantee (001, Def. 3) at ``target_delta`` has epsilon <= ``target_epsilon``;
* every invocation is a :class:`~gce.accounting.guarantees.GaussianMechanism`: the
  **smallest common sigma** (each keeps its own sensitivity) that does the same;
* every invocation is a Gaussian mechanism, some of them Poisson-subsampled
  (:class:`~gce.accounting.guarantees.Subsampled` of a Gaussian: DP-SGD's steps, each keeping its rate
  and sensitivity): the smallest common sigma too. Composed, they are the Poisson-subsampling engine's
  question (:func:`gce.priors.allocation.poisson_curve`; Balle, Barthe and Gaboardi 2018), which
  :func:`gce.solve` asks of them: the classic calibration searches on that engine's certified upper
  epsilon at the solves' ``rtol`` (the same number a solve of every invocation reports), from the
  central-limit estimate of the sigma (:func:`gce.training.clt_sigma`). For the training question
  itself (E epochs of t steps, shuffled or Poisson), :func:`gce.training.calibrate_noise` answers directly.

The HDP epsilon is non-decreasing in the per-invocation epsilon and
non-increasing in sigma (each invocation's guarantee only weakens or
strengthens; every composition theorem is monotone), so the answer is the
boundary of a monotone predicate, found by bracketing and narrowing on a log
scale. The search always keeps a parameter that is known to meet the target and
returns it, never the other end.

The schedule (docs/design.md, "Same question, same answer"). The search is a
sequence of parameters that depends on the values seen only (:func:`_boundary`):
from a first guess, secant steps on the log scale (at least a factor 2, at most
:data:`STEP_MAX`) towards the boundary until it is bracketed, never jumping over
the edge of a route's domain (:func:`_family`); then regula falsi (Illinois)
safeguarded by bisection until the bracket is narrower than a relative
tolerance. The tolerance is :data:`PARAMETER_RTOL` where the answers are exact
(the first solve is ``exact``: the search composes the worst-case multiset, or
solves exactly at every step), and the ``rtol`` asked of every solve where they
are certified brackets (each solve's epsilon is then known only to ``rtol``, so
a finer parameter would resolve the solves' brackets, not the boundary). Every
solve, the final check included, is asked the same ``rtol``. So the same
question gives the same calibration, byte for byte.

The time limit only caps: the whole calibration runs under one
:class:`gce.effort.Deadline`; each solve is given what is left of it. When the
cap stops the search (or any solve), the answer is the loosest parameter a
solve confirmed so far (sound: it meets the target), the bracket reached is
stated, and :attr:`Calibration.time_limit_reached` is set. Should the cap stop
the search before any solve confirmed a parameter, the classic calibration
(below: composition of every invocation meets the target there, so the scenario
does too) is solved once as the certificate.

Soundness (STYLE.md: "calibration answers are re-evaluated before they are
returned"): the returned parameter is the argument of a :func:`gce.solve` call
whose report meets the target, and :class:`Calibration` refuses to be built
otherwise.

Speed. With every invocation substituted by the common parameter p, the
allowed pairs, the partition of the invocations into kinds of guarantee, and so
the multisets :func:`gce.solve` composes (per-kind and chain bounds of the worst
counts) do not depend on p. When one solve is ``exact``, the multiset M of the
invocations where its witness pair differs *is* the multiset it composed, so
solve(p) <= compose(M at p) for every p: searching on compose(M) is on the safe
side. The pair is allowed, so compose(M at p) is also what the worst case costs
wherever composition is exact: nothing is lost. The final :func:`gce.solve`
re-checks the answer; should it fail (e.g. a time-limited solver answering
differently), the search is redone with :func:`gce.solve` at every step.

The classic calibration (001 Alg. 1: every invocation composed, the
``classic`` baseline of the report) is the same search on the full multiset;
the ratio says how much the constraints buy per invocation. It is computed
first (compositions only): it bounds the GCE's answer on the private side, so
the GCE search starts no further from the boundary than it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .effort import DEFAULT_RTOL, Deadline, check_rtol, describe_width, relative_width, within
from .errors import InvalidParameterError, NumericalLimitError, ResourceLimitError, UnsupportedCombinationError
from .validation import is_number, shown
from .accounting import kinds
from .accounting.guarantees import Guarantee
from .model import Invocation, Scenario, invocation_multiset
from .priors.allocation import MU_LIMIT
from .progress import ProgressCallback
from .report import Report, json_number, terminal_text
from .solving import check_scenario, solve
from .solvers import DEFAULT_TIME_LIMIT
from .solvers.base import check_time_limit
from .accounting.theorems import compose

__all__ = ["Calibration", "calibrate", "PARAMETER_RTOL", "EPSILON_RANGE", "SIGMA_RANGE", "LEAST_SOLVE"]

#: Relative width of the final bracket where the answers are exact: the returned parameter p meets the
#: target and p * (1 + PARAMETER_RTOL) (epsilon) or p / (1 + PARAMETER_RTOL) (sigma) does not. Where they
#: are certified brackets the width is the ``rtol`` asked of the solves (module docstring).
PARAMETER_RTOL = 1e-6
#: Per-invocation epsilons searched (the "most private" end first).
EPSILON_RANGE = (1e-12, 100.0)
#: Sigmas searched, in units of the largest sensitivity (the "most private" end first).
SIGMA_RANGE = (1e9, 1e-9)
#: Cap on bisection steps (the widest bracket, 18 decades, needs about 36).
SEARCH_MAXITER = 200
#: The largest bracketing step on the log scale (a factor 16): far from the boundary the evaluations cost
#: most (random allocation at small noise), and the first guess is seldom off by more than a few factors.
STEP_MAX = math.log(16.0)
#: The slope of log(epsilon) against the log of the parameter assumed for the first bracketing step:
#: between 1 (Gaussian and composition curves at small epsilon) and 2 (the Gaussian at large epsilon).
SLOPE_GUESS = 1.5
#: Seconds a solve is given at least when little or nothing of the time limit is left (the final check,
#: the certificate): enough for its cheapest certified bound.
LEAST_SOLVE = 0.02

_LABEL = {"epsilon": "per_invocation_epsilon", "sigma": "sigma"}
_NAME = {"epsilon": "per-invocation epsilon", "sigma": "sigma"}
#: How :func:`gce.solve` words a stop of its cap in its notes.
_STOP = "time limit reached: "


@dataclass(frozen=True)
class Calibration:
    """The answer of :func:`calibrate`.

    Attributes
    ----------
    parameter : {"epsilon", "sigma"}
        What was calibrated.
    per_invocation_epsilon, sigma : float or None
        The calibrated value (the other one is None): the largest common
        per-invocation epsilon, or the smallest common sigma.
    report : Report
        :func:`gce.solve` of the scenario at that value, at ``target_delta``;
        its epsilon is at most ``target_epsilon``.
    target_epsilon, target_delta : float
        The target HDP guarantee.
    classic : float or None
        The same calibration under classic composition (every invocation
        composed); None when no value meets the target that way.
    classic_epsilon : float or None
        Classic composition's epsilon at ``classic`` (at ``target_delta``).
    classic_theorem : str
        The theorem that gave it.
    ratio : float
        How much the constraints buy per invocation: ``per_invocation_epsilon /
        classic`` or ``classic / sigma`` (>= 1; ``inf`` when classic composition
        cannot meet the target).
    method : str
        How the search evaluated the HDP epsilon (``"worst-case multiset"`` or
        ``"solve at every step"``).
    evaluations : int
        How many parameters the GCE search evaluated.
    rtol : float or None
        The accuracy asked of every solve (module docstring).
    tolerance : float or None
        The relative width the search's bracket on the parameter was to reach.
    accuracy : float or None
        The relative width it reached: between the returned value and the
        nearest value known not to meet the target (None when the cap stopped
        the search before one was found).
    time_limit_reached : bool
        Whether the time limit stopped a step (the search or a solve): the value
        still meets the target, but may be further from the boundary.
    stops : tuple of str
        What the time limit stopped, in order.

    Raises
    ------
    InvalidParameterError
        If the report does not meet the target, or the fields disagree.
    """

    parameter: str
    per_invocation_epsilon: float | None
    sigma: float | None
    report: Report
    target_epsilon: float
    target_delta: float
    classic: float | None
    classic_epsilon: float | None
    classic_theorem: str
    ratio: float
    method: str
    evaluations: int
    rtol: float | None = None
    tolerance: float | None = None
    accuracy: float | None = None
    time_limit_reached: bool = False
    stops: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.parameter not in _LABEL:
            raise InvalidParameterError("parameter", f"must be 'epsilon' or 'sigma', got {shown(self.parameter)}")
        value, other = ((self.per_invocation_epsilon, self.sigma) if self.parameter == "epsilon"
                        else (self.sigma, self.per_invocation_epsilon))
        if value is None or other is not None:
            raise InvalidParameterError(_LABEL[self.parameter], "must be the only calibrated value")
        if not (self.report.epsilon <= self.target_epsilon and self.report.delta <= self.target_delta):
            raise InvalidParameterError(
                "report", f"({shown(self.report.epsilon)}, {shown(self.report.delta)}) does not meet the target "
                          f"({shown(self.target_epsilon)}, {shown(self.target_delta)})")
        if self.time_limit_reached != bool(self.stops):
            raise InvalidParameterError("stops", "must be given exactly when the time limit was reached")

    @property
    def value(self) -> float:
        """The calibrated parameter (per-invocation epsilon or sigma)."""
        return self.per_invocation_epsilon if self.parameter == "epsilon" else self.sigma  # type: ignore[return-value]

    @property
    def bracket(self) -> tuple[float, float] | None:
        """(lower, upper) of the parameter: the calibrated value and the nearest one the search evaluated
        whose certified HDP epsilon exceeds the target (a smaller sigma, a larger per-invocation epsilon);
        their relative width is :attr:`accuracy`. None when no such value was evaluated (the time limit)."""
        if self.accuracy is None:
            return None
        value = self.value
        if self.parameter == "sigma":
            return value / (1.0 + self.accuracy), value
        return value, value * (1.0 + self.accuracy)

    @property
    def epsilon(self) -> float:
        """The HDP epsilon at the calibrated value (at most ``target_epsilon``)."""
        return self.report.epsilon

    @property
    def delta(self) -> float:
        """The HDP delta (``target_delta``)."""
        return self.report.delta

    @property
    def notes(self) -> tuple[str, ...]:
        """The report's notes, then what the time limit stopped (each once)."""
        stops = tuple(f"{_STOP}{stop}" for stop in self.stops)
        return tuple(self.report.notes) + tuple(note for note in stops if note not in self.report.notes)

    def _limit_line(self) -> list[str]:
        """The first line when the time limit stopped a step (as :class:`~gce.report.Report` words it)."""
        if not self.time_limit_reached:
            return []
        reached = (f"no {_NAME[self.parameter]} known not to meet the target" if self.accuracy is None
                   else f"{_NAME[self.parameter]} bracket {describe_width(self.accuracy)} wide")
        asked = "" if self.tolerance is None else f", {100 * self.tolerance:.3g}% asked"
        return [f"time limit reached: a certified but coarser answer ({reached}{asked})"]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``gce calibrate --json``)."""
        label = _LABEL[self.parameter]
        return {
            "title": self.report.title,
            "parameter": self.parameter,
            label: self.value,
            "epsilon": json_number(self.epsilon),
            "delta": json_number(self.delta),
            "theorem": self.report.theorem,
            "exact": self.report.exact,
            "target": {"epsilon": self.target_epsilon, "delta": self.target_delta},
            "classic": {label: self.classic, "epsilon": json_number(self.classic_epsilon),
                        "delta": self.target_delta, "theorem": self.classic_theorem},
            "ratio": json_number(self.ratio),
            "method": self.method,
            "evaluations": self.evaluations,
            "notes": list(self.notes),
            "status": "time limit reached" if self.time_limit_reached else "complete",
            "time_limit_reached": self.time_limit_reached,
            "rtol": self.rtol,
            "tolerance": self.tolerance,
            "accuracy": json_number(self.accuracy),
            "bracket": None if self.bracket is None else [float(end) for end in self.bracket],
        }

    def __str__(self) -> str:
        name = _NAME[self.parameter]
        target = f"(epsilon {self.target_epsilon:g}, delta {self.target_delta:g})"
        lines = self._limit_line() + ([self.report.title] if self.report.title else [])
        lines.append(f"{name} {self.value:.6g} meets the target {target}: HDP epsilon {self.epsilon:.6g} "
                     f"({self.report.theorem}{', exact' if self.report.exact else ''})")
        if self.classic is None:
            lines.append(f"classic composition (every invocation composed): no {name} meets the target")
        else:
            lines.append(f"classic composition (every invocation composed): {name} {self.classic:.6g} "
                         f"(epsilon {self.classic_epsilon:.6g}, {self.classic_theorem})")
            if self.parameter == "epsilon":
                lines.append(f"the constraints allow {self.ratio:.4g}x the per-invocation epsilon")
            else:
                lines.append(f"classic composition needs {self.ratio:.4g}x the noise")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(terminal_text(line) for line in lines)  # titles and notes come from files


# ---------------------------------------------------------------------------
# The scenario as a function of the parameter


def _parameter(scenario: Scenario) -> str:
    """'epsilon' or 'sigma', from the scenario's guarantee kinds."""
    parameters = {"sigma" if _subsampled_gaussian(inv.guarantee) else kinds.calibrated_parameter(inv.guarantee)
                  for inv in scenario.invocations}
    if len(parameters) == 1 and None not in parameters:
        return parameters.pop()
    names = ", ".join(sorted({_kind_name(inv.guarantee) for inv in scenario.invocations}))
    raise UnsupportedCombinationError(
        f"invocations: calibration needs every invocation to be PureDP/ApproxDP (calibrates epsilon) or every "
        f"one a GaussianMechanism, Poisson-subsampled or not (calibrates sigma); got {names}")


def _subsampled_gaussian(guarantee: Guarantee) -> bool:
    """Whether ``guarantee`` is a Poisson-subsampled Gaussian mechanism (its sigma is calibrated); read from
    the kinds table (:func:`gce.accounting.kinds.sampling`), as every question about a kind is."""
    _, mechanism = kinds.sampling(guarantee)
    return mechanism is not guarantee and kinds.calibrated_parameter(mechanism) == "sigma"


def _kind_name(guarantee: Guarantee) -> str:
    """The record's name, and its mechanism's for a subsampled one (``Subsampled(LaplaceMechanism)``)."""
    _, mechanism = kinds.sampling(guarantee)
    name = type(guarantee).__name__
    return name if mechanism is guarantee else f"{name}({type(mechanism).__name__})"


def _sensitivity(guarantee: Guarantee) -> float:
    """The sensitivity of a (Poisson-subsampled or not) Gaussian mechanism."""
    return kinds.sampling(guarantee)[1].sensitivity


def _poisson(scenario: Scenario) -> bool:
    """Whether a sigma calibration composes Poisson-subsampled Gaussians (module docstring)."""
    return any(_subsampled_gaussian(inv.guarantee) for inv in scenario.invocations)


def _invocations_at(invocations: tuple[Invocation, ...], p: float) -> tuple[Invocation, ...]:
    """The invocations with the common parameter ``p`` substituted."""
    cache: dict[Guarantee, Guarantee] = {}
    out = []
    for inv in invocations:
        g = inv.guarantee
        if g not in cache:
            cache[g] = (dataclasses.replace(g, mechanism=kinds.with_parameter(g.mechanism, p))
                        if _subsampled_gaussian(g) else kinds.with_parameter(g, p))
        out.append(dataclasses.replace(inv, guarantee=cache[g]))
    return tuple(out)


def _scenario_at(scenario: Scenario, p: float) -> Scenario:
    return dataclasses.replace(scenario, invocations=_invocations_at(scenario.invocations, p),
                               delta=None, epsilon=None)


def _composed_epsilon(invocations: tuple[Invocation, ...], target_delta: float) -> Callable[[float], float]:
    """p -> epsilon at ``target_delta`` of composing ``invocations`` at parameter p."""
    def epsilon(p: float) -> float:
        with np.errstate(over="ignore"):  # e^eps at the loose end overflows to its correct limit (delta 0)
            return compose(invocation_multiset(_invocations_at(invocations, p))).epsilon(target_delta)
    return epsilon


def _poisson_epsilon(invocations: tuple[Invocation, ...], target_delta: float,
                     rtol: float) -> Callable[[float], float]:
    """sigma -> the certified upper epsilon at ``target_delta`` of composing ``invocations`` (Gaussian
    mechanisms, some Poisson-subsampled) at sigma, by the Poisson-subsampling engine at ``rtol``: what
    :func:`gce.solve` reports for every invocation composed (the same question of the same multiset, module
    docstring); each sigma evaluated once. Where no lattice fits, their composition's bound."""
    from .priors.allocation.poisson import gaussian_parts, poisson_curve

    values: dict[float, float] = {}

    def epsilon(p: float) -> float:
        if p not in values:
            multiset = invocation_multiset(_invocations_at(invocations, p))
            try:
                curve = poisson_curve(gaussian_parts(multiset), rtol, delta=target_delta)
                values[p] = float(curve.epsilon_bracket(target_delta)[1])
            except (NumericalLimitError, InvalidParameterError):  # (sigma near 0: the theorems bound it)
                with np.errstate(over="ignore"):
                    values[p] = compose(multiset).epsilon(target_delta)
        return values[p]
    return epsilon


def _poisson_start(invocations: tuple[Invocation, ...], target_epsilon: float, target_delta: float) -> float:
    """The central-limit estimate of the sigma (:func:`gce.training.clt_sigma`), for the classic search."""
    from .training import clt_sigma

    counts: dict[tuple[float, float], int] = {}
    for inv in invocations:
        rate, mechanism = kinds.sampling(inv.guarantee)
        key = (mechanism.sensitivity, rate)
        counts[key] = counts.get(key, 0) + inv.repeat
    parts = [(s, r, c) for (s, r), c in counts.items() if s > 0]
    if not parts:
        return 1.0
    return clt_sigma(parts, target_epsilon, target_delta if target_delta > 0 else 1e-12)[0]


# ---------------------------------------------------------------------------
# The monotone search


@dataclass(frozen=True)
class _Family:
    """The searched parameter as u on the real line, the target met for u <= u*.

    Epsilon: u = log(epsilon). Sigma: u = -log(sigma). ``private`` and ``loose``
    are the two ends of the searched range, as parameter values; ``scale`` is
    the unit of sigma (the largest sensitivity); ``landmarks`` are values of u
    the bracketing steps towards the loose end land on rather than jump over
    (the edges of a route's domain).
    """

    parameter: str
    private: float
    loose: float
    scale: float = 1.0
    landmarks: tuple[float, ...] = ()

    def to_p(self, u: float) -> float:
        return math.exp(u) if self.parameter == "epsilon" else math.exp(-u)

    def to_u(self, p: float) -> float:
        return math.log(p) if self.parameter == "epsilon" else -math.log(p)

    @property
    def u_range(self) -> tuple[float, float]:
        """u at the private and at the loose end (the first is the smaller)."""
        return self.to_u(self.private), self.to_u(self.loose)

    def clamp(self, p: float) -> float:
        """u of ``p``, within the range."""
        u_min, u_max = self.u_range
        return min(max(self.to_u(p), u_min), u_max)

    def looser(self, a: float, b: float) -> float:
        """Of two parameters, the one further towards the loose end."""
        return max(a, b) if self.parameter == "epsilon" else min(a, b)

    def start(self, target_epsilon: float, target_delta: float) -> float:
        """A first guess: the target epsilon itself, or the sigma with which one
        Gaussian mechanism meets the target (Dwork and Roth 2014, Thm. A.1)."""
        if self.parameter == "epsilon":
            guess = target_epsilon
        else:
            d = target_delta if target_delta > 0 else 1e-12
            guess = self.scale * math.sqrt(2 * math.log(1.25 / d)) / target_epsilon
        return min(max(guess, min(self.private, self.loose)), max(self.private, self.loose))


def _family(parameter: str, scenario: Scenario) -> _Family:
    """The searched range. With hypotheses, the random allocation route may answer: it takes Gaussians of
    ``mu = sensitivity / sigma`` below :data:`gce.priors.allocation.MU_LIMIT`, so the search starts no further
    than the sigma where the largest ``mu`` is just below it, lands on it when bracketing and crosses only
    when the target is met there (the boundary lies beyond, where closed forms answer)."""
    if parameter == "epsilon":
        return _Family("epsilon", *EPSILON_RANGE)
    scale = max(_sensitivity(inv.guarantee) for inv in scenario.invocations) or 1.0
    landmarks = (-math.log(scale / (MU_LIMIT * (1.0 - 1e-9))),) if scenario.hypotheses is not None else ()
    return _Family("sigma", SIGMA_RANGE[0] * scale, SIGMA_RANGE[1] * scale, scale, landmarks)


class _Search:
    """Counts evaluations and reports progress; ``ok(u)``: is the target met at the parameter of ``u``?

    None when the time limit has passed before an evaluation that is not known yet (``known(p)``: it costs
    nothing, e.g. a solve already made): the search then stops (:func:`_boundary`).
    """

    def __init__(self, evaluate: Callable[[float], float], family: _Family, target_epsilon: float,
                 deadline: Deadline, progress: ProgressCallback | None = None,
                 known: Callable[[float], bool] = lambda p: False):
        self.evaluate, self.family, self.target = evaluate, family, target_epsilon
        self.deadline, self.progress, self.known = deadline, progress, known
        self.values: dict[float, float] = {}
        self.evaluations = 0

    def ok(self, u: float, stoppable: bool = True) -> bool | None:
        p = self.family.to_p(u)
        if u not in self.values:
            if stoppable and not self.known(p) and self.deadline.expired():
                return None
            self.values[u] = self.evaluate(p)
        value = self.values[u]
        self.evaluations += 1
        if self.progress is not None:
            self.progress(self.evaluations, None, f"{self.family.parameter} {p:.6g}: epsilon {value:.6g}")
        return value <= self.target

    def gap(self, u: float) -> float:
        """``log(epsilon / target_epsilon)`` at an evaluated ``u`` (``-inf`` at epsilon 0, ``inf`` at inf)."""
        value = self.values[u]
        with np.errstate(divide="ignore"):
            return float(np.log(value / self.target)) if math.isfinite(value) else math.inf


@dataclass(frozen=True)
class _Bracket:
    """Where a search ended: ``met`` the u of the loosest parameter known to meet the target, ``unmet`` the
    u of the most private one known not to (None: none found), ``stopped`` whether the time limit stopped
    it."""

    met: float | None
    unmet: float | None
    stopped: bool

    def accuracy(self, family: _Family, value: float) -> float | None:
        """The relative width between ``value`` and the parameter known not to meet the target."""
        if self.unmet is None:
            return None
        other = family.to_p(self.unmet)
        return relative_width(min(value, other), max(value, other))

    def describe(self, family: _Family) -> str:
        name = _NAME[family.parameter]
        if self.met is None:
            return f"no {name} known to meet the target yet"
        met = family.to_p(self.met)
        if self.unmet is None:
            return f"{name} {met:.6g} meets the target, none known not to"
        unmet = family.to_p(self.unmet)
        low, high = min(met, unmet), max(met, unmet)
        return f"{name} in [{low:.6g}, {high:.6g}], bracket {describe_width(relative_width(low, high))} wide"


def _boundary(search: _Search, family: _Family, u0: float, tolerance: float, until_met: bool = False) -> _Bracket:
    """The bracket around the boundary, from ``u0`` (within the range).

    The schedule (every step a function of the values seen, so the same question takes the same steps):

    * *Bracketing.* From ``u0`` towards the loose end while the target is met, towards the private end
      while it is not, by the step that would reach the target were ``log(epsilon / target_epsilon)``
      linear on the log scale: its slope the secant's through the last two points, or
      :data:`SLOPE_GUESS` at the first; at least ``log 2`` and at most :data:`STEP_MAX`; landing on
      ``family.landmarks`` rather than jumping over them; until the boundary is bracketed or an end of
      the range is reached (then one side stays None).
    * *Narrowing.* The Illinois variant of regula falsi on ``log(epsilon / target_epsilon)`` (Dowell and
      Jarratt 1971), each point kept at least 0.9 x the tolerance inside the bracket (so a boundary that
      near an end is caught by the next step), a bisection whenever two steps did not halve the bracket
      (unless the step is such a probe and the last was not), until the bracket is narrower than
      ``tolerance`` (relative).

    The time limit only stops it (``stopped``); with ``until_met``, not before a parameter meeting the
    target is known.
    """
    u_min, u_max = family.u_range
    met: float | None = None
    unmet: float | None = None
    u, previous = u0, None
    while True:
        verdict = search.ok(u, stoppable=not until_met or met is not None)
        if verdict is None:
            return _Bracket(met, unmet, True)
        if verdict:
            met = u
        else:
            unmet = u
        if met is not None and unmet is not None:
            break
        gap, slope = search.gap(u), SLOPE_GUESS
        if previous is not None:
            secant = (gap - search.gap(previous)) / (u - previous)
            slope = secant if math.isfinite(secant) and secant > 0 else slope
        size = abs(gap) / slope if math.isfinite(gap) else STEP_MAX
        size = min(max(size, math.log(2.0)), STEP_MAX)
        previous = u
        if met is not None:  # towards the loose end
            if u >= u_max:
                return _Bracket(met, None, False)
            after = min(u + size, u_max)
            u = min([after] + [mark for mark in family.landmarks if u < mark < after])
        else:  # towards the private end
            if u <= u_min:
                return _Bracket(None, unmet, False)
            u = max(u - size, u_min)
    width = math.log1p(tolerance)
    margin = 0.9 * width
    g_met, g_unmet = search.gap(met), search.gap(unmet)
    kept, probed, lengths = None, False, []  # the end the last step kept; whether it probed near an end
    for _ in range(SEARCH_MAXITER):  # invariant: met at ``met``, not at ``unmet``
        length = abs(unmet - met)
        if length <= width:
            break
        lengths.append(length)
        lo, hi = min(met, unmet), max(met, unmet)
        x = None
        if math.isfinite(g_met) and math.isfinite(g_unmet) and g_unmet > g_met and length > 2 * margin:
            line = met + (unmet - met) * g_met / (g_met - g_unmet)  # where the secant crosses the target
            x = min(max(line, lo + margin), hi - margin)
            slow = len(lengths) >= 3 and length > lengths[-3] / 2  # two steps did not halve the bracket
            near = x != line  # a probe just inside an end: it closes the bracket if the boundary is there
            if slow and not (near and not probed):
                x = None
            probed = near and x is not None
        if x is None:  # bisection; the interpolation starts afresh after it
            x, kept, probed = 0.5 * (lo + hi), None, False
        verdict = search.ok(x)
        if verdict is None:
            return _Bracket(met, unmet, True)
        if kept is None:
            g_met, g_unmet = search.gap(met), search.gap(unmet)
        if verdict:
            met, g_met = x, search.gap(x)
            if kept == "unmet":
                g_unmet /= 2  # Illinois: the end kept twice counts half
            kept = "unmet"
        else:
            unmet, g_unmet = x, search.gap(x)
            if kept == "met":
                g_met /= 2
            kept = "met"
    return _Bracket(met, unmet, False)


def _infeasible(where: str, family: _Family, target_epsilon: float, target_delta: float,
                floor: Report | None) -> InvalidParameterError:
    """The error for a target no parameter meets (or every parameter meets); ``floor`` is
    the report at the private end when the per-invocation deltas are to blame."""
    name = _NAME[family.parameter]
    if where == "delta":
        if family.parameter == "sigma" and target_delta == 0:
            why = "Gaussian mechanisms have no finite epsilon at delta 0"
        elif floor is None:
            why = "the per-invocation deltas alone exceed it"
        else:
            pair = "the worst-case pair" if floor.exact else "the certified bound on the worst case"
            why = f"the per-invocation deltas alone give delta >= {floor.curve.delta_floor:.4g} for {pair}"
        return InvalidParameterError("target_delta", f"{target_delta:g} cannot be met: {why}, so no {name} "
                                                     f"gives a finite HDP epsilon at it")
    if where == "epsilon":
        return InvalidParameterError("target_epsilon", f"{target_epsilon:g} is not met even at {name} "
                                                       f"{family.private:g}")
    return InvalidParameterError(
        "target_epsilon", f"{target_epsilon:g} is met at every {name} up to {family.loose:g}: the allowed "
                          f"pairs of hypotheses differ on too few invocations for calibration to have an answer")


# ---------------------------------------------------------------------------
# The entry point

_MULTISET, _BY_SOLVE = "worst-case multiset", "solve at every step"


def calibrate(
    scenario: Scenario,
    *,
    target_epsilon: float,
    target_delta: float,
    time_limit: float = DEFAULT_TIME_LIMIT,
    rtol: float | None = None,
    progress: ProgressCallback | None = None,
) -> Calibration:
    """The largest common per-invocation epsilon, or smallest common sigma, meeting a target.

    Parameters
    ----------
    scenario : Scenario
        Its invocations are all :class:`~gce.accounting.guarantees.PureDP` /
        :class:`~gce.accounting.guarantees.ApproxDP` (their epsilons are replaced by the
        calibrated one, their deltas kept) or all
        :class:`~gce.accounting.guarantees.GaussianMechanism` (their sigmas replaced,
        sensitivities kept), Poisson-subsampled or not (``Subsampled(rate, GaussianMechanism(...))``:
        rates kept too; composed by the Poisson-subsampling engine, Balle, Barthe and Gaboardi 2018). Its
        own target (delta / epsilon) is ignored.
    target_epsilon : float
        The HDP epsilon to meet, finite and > 0.
    target_delta : float
        The HDP delta at which it is met, in [0, 1).
    time_limit : float
        Seconds the whole calibration may take (one :class:`gce.effort.Deadline`;
        each solve is given what is left). A cap only: the answer does not
        depend on it unless it is reached, and then it still meets the target
        and says ``time_limit_reached``.
    rtol : float, optional
        The relative accuracy asked of every :func:`gce.solve` (the scenario's
        ``rtol``, else :data:`gce.effort.DEFAULT_RTOL`); it is also the
        tolerance of the search when the solves are not exact (module docstring).
    progress : callable, optional
        Called as ``progress(step, total, message)`` after each evaluation
        (e.g. a :class:`gce.progress.Progress`).

    Returns
    -------
    Calibration
        Its report is :func:`gce.solve` at the returned value and meets the target;
        unless the time limit was reached, the value is within the search's
        relative ``tolerance`` of the boundary.

    Raises
    ------
    InvalidParameterError
        If ``scenario`` is not a :class:`~gce.model.Scenario`, ``time_limit``
        is not a finite number of seconds in (0, :data:`~gce.solvers.base.MAX_TIME_LIMIT`]
        or ``rtol`` is not an accuracy (naming the argument); on an invalid target; naming
        ``target_delta`` when the per-invocation deltas alone exceed it (or, for Gaussian
        mechanisms, when it is 0), and ``target_epsilon`` when no value in range meets it or
        every value does.
    ResourceLimitError
        Naming ``time_limit`` when it passed before any value was found to meet the target.
    UnsupportedCombinationError
        When the invocations are not all of one calibratable family.

    References
    ----------
    docs/design.md, "Calibration", "Infeasible targets" and "Same question, same answer";
    001, Def. 3 (HDP), Alg. 1 (classic) and 2 (GCE), Sec. V-A.

    Examples
    --------
    >>> from gce.constraints import AtMost, ConstraintSet
    >>> from gce.accounting.guarantees import ApproxDP
    >>> from gce.model import Invocation, Scenario
    >>> hospitals = Scenario(1000, tuple(Invocation(i, ApproxDP(0.1, 1e-10)) for i in range(1000)),
    ...                      ConstraintSet(1000, (AtMost(365),)))
    >>> c = calibrate(hospitals, target_epsilon=1.0, target_delta=1e-6)
    >>> round(c.per_invocation_epsilon, 5), c.epsilon <= 1.0, round(c.ratio, 2), c.time_limit_reached
    (0.01241, True, 1.66, False)
    """
    check_scenario(scenario)
    time_limit = check_time_limit(time_limit)
    if not is_number(target_epsilon) \
            or not (0.0 < target_epsilon < math.inf):
        raise InvalidParameterError("target_epsilon", f"must be finite and > 0, got {shown(target_epsilon)}")
    if not is_number(target_delta) \
            or not (0.0 <= target_delta < 1.0):
        raise InvalidParameterError("target_delta", f"must lie in [0, 1), got {shown(target_delta)}")
    rtol = check_rtol(rtol) if rtol is not None else scenario.rtol if scenario.rtol is not None else DEFAULT_RTOL
    target_epsilon, target_delta = float(target_epsilon), float(target_delta)
    parameter = _parameter(scenario)
    family = _family(parameter, scenario)
    if parameter == "sigma" and target_delta == 0.0 \
            and any(_sensitivity(inv.guarantee) > 0 for inv in scenario.invocations):
        raise _infeasible("delta", family, target_epsilon, target_delta, None)  # before any (costly) solve
    with within(Deadline(time_limit)) as deadline:
        return _Calibrator(scenario, family, target_epsilon, target_delta, rtol, deadline, progress).run()


class _Calibrator:
    """One calibration under one deadline: the solves made (each once), the classic and the GCE search."""

    def __init__(self, scenario: Scenario, family: _Family, target_epsilon: float, target_delta: float,
                 rtol: float, deadline: Deadline, progress: ProgressCallback | None):
        self.scenario, self.family, self.rtol, self.deadline = scenario, family, rtol, deadline
        self.target_epsilon, self.target_delta, self.progress = target_epsilon, target_delta, progress
        self.name = _NAME[family.parameter]
        self.reports: dict[float, Report] = {}
        #: Poisson-subsampled Gaussians: the classic calibration on the engine (module docstring).
        self.poisson = family.parameter == "sigma" and _poisson(scenario)
        self.classic_epsilon = (_poisson_epsilon(scenario.invocations, target_delta, rtol) if self.poisson
                                else _composed_epsilon(scenario.invocations, target_delta))

    # --- the evaluations

    def solved(self, p: float) -> Report:
        """:func:`gce.solve` at ``p`` (once), given what is left of the time limit (at least
        :data:`LEAST_SOLVE`); what its cap stopped is recorded on the calibration's deadline."""
        if p not in self.reports:
            try:
                report = solve(_scenario_at(self.scenario, p), delta=self.target_delta,
                               time_limit=max(self.deadline.left(), LEAST_SOLVE), rtol=self.rtol)
            except InvalidParameterError as error:  # the user's input was checked: a route's own domain
                raise NumericalLimitError(
                    f"{_LABEL[self.family.parameter]}: the scenario cannot be evaluated at {self.name} {p:.6g}, "
                    f"which the search for the target reached") from error
            for note in report.notes:
                if note.startswith(_STOP):
                    self.deadline.stop(f"{note[len(_STOP):]} (in the solve at {self.name} {p:.6g})")
            self.reports[p] = report
        return self.reports[p]

    def meets(self, report: Report) -> bool:
        return report.epsilon <= self.target_epsilon and report.delta <= self.target_delta

    def confirmed(self) -> float | None:
        """The loosest parameter a solve confirmed meets the target, or None."""
        found = [p for p, report in self.reports.items() if self.meets(report)]
        if not found:
            return None
        return max(found) if self.family.parameter == "epsilon" else min(found)

    def _raise_if_infeasible(self, bracket: _Bracket, search: _Search) -> None:
        """The search ended at an end of the range (not stopped): the target is met nowhere or everywhere."""
        if bracket.stopped:
            return
        if bracket.met is None:
            at_private = search.values[self.family.u_range[0]]
            where = "delta" if math.isinf(at_private) else "epsilon"
            floor = self.solved(self.family.private) if where == "delta" else None
            raise _infeasible(where, self.family, self.target_epsilon, self.target_delta, floor)
        if bracket.unmet is None:
            raise _infeasible("everywhere", self.family, self.target_epsilon, self.target_delta, None)

    # --- the calibrations

    def classic(self) -> tuple[float | None, _Bracket]:
        """The classic calibration (every invocation composed, 001 Alg. 1), compositions only. The cap
        stops it only once a value is known to meet the target classically: that value is the certificate
        of every calibration the cap stops (module docstring)."""
        family = self.family
        search = _Search(self.classic_epsilon, family, self.target_epsilon, self.deadline)
        if self.poisson:  # certified brackets at ``rtol``: a finer parameter would resolve them, not the boundary
            start = _poisson_start(self.scenario.invocations, self.target_epsilon, self.target_delta)
            tolerance = self.rtol
        else:
            start, tolerance = family.start(self.target_epsilon, self.target_delta), PARAMETER_RTOL
        bracket = _boundary(search, family, family.clamp(start), tolerance, until_met=True)
        if bracket.stopped:
            self.deadline.stop(f"the classic calibration ({bracket.describe(family)})")
        return (None if bracket.met is None else family.to_p(bracket.met)), bracket

    def run(self) -> Calibration:
        family, deadline = self.family, self.deadline
        classic, classic_bracket = self.classic()
        start = family.start(self.target_epsilon, self.target_delta)
        if classic is not None and classic_bracket.unmet is not None:
            start = family.looser(start, classic)  # the GCE's answer lies on the loose side of the classic one
        u0 = min([family.clamp(start), *family.landmarks])  # within the routes' domains (:func:`_family`)

        method, tolerance, evaluations = _BY_SOLVE, self.rtol, 0
        value: float | None = None
        bracket = _Bracket(None, None, True)
        if not deadline.expired():
            first = self.solved(family.to_p(u0))
            search = self._gce_search(first)
            method = _MULTISET if search is not None else _BY_SOLVE
            tolerance = PARAMETER_RTOL if first.exact else self.rtol
            if search is None:
                search = self._by_solve()
            bracket = _boundary(search, family, u0, tolerance)
            evaluations += search.evaluations
            self._raise_if_infeasible(bracket, search)
            if bracket.met is not None:
                p = family.to_p(bracket.met)
                if self.meets(self.solved(p)):  # the re-check (solve mode: the search's own solve)
                    value = p
                elif method == _MULTISET and not deadline.expired():
                    method = _BY_SOLVE
                    search = self._by_solve()
                    bracket = _boundary(search, family, u0, tolerance)
                    evaluations += search.evaluations
                    self._raise_if_infeasible(bracket, search)
                    value = None if bracket.met is None else family.to_p(bracket.met)
                elif not bracket.stopped:
                    deadline.stop(f"the search by solve at every step after the re-check at {self.name} "
                                  f"{p:.6g} failed")
        if bracket.stopped:
            deadline.stop(f"the calibration's search ({bracket.describe(family)})")
        if value is None:  # the cap stopped the search before a solve confirmed its answer
            value = self.confirmed()
        if value is None and classic is not None and self.meets(self.solved(classic)):
            value = classic  # the certificate: classic composition meets the target there
        if value is None:
            raise ResourceLimitError(
                "time_limit", f"{deadline.seconds:g} s passed before any {self.name} was found to meet the "
                              f"target (epsilon {self.target_epsilon:g}, delta {self.target_delta:g}); give "
                              f"more time")
        report = self.solved(value)
        if not self.meets(report):  # pragma: no cover - a solve that met the target is kept as it was
            raise NumericalLimitError(f"{_LABEL[family.parameter]}: {shown(value)} met the target during the search "
                                      f"but not on re-check (epsilon {shown(report.epsilon)} > target_epsilon "
                                      f"{shown(self.target_epsilon)})")

        classic_eps, classic_theorem = None, ""
        if classic is not None and self.poisson:
            from .priors.allocation.poisson import THEOREM

            classic_eps, classic_theorem = self.classic_epsilon(classic), THEOREM
        elif classic is not None:
            composition = compose(invocation_multiset(_invocations_at(self.scenario.invocations, classic)))
            classic_eps, _, classic_theorem = composition.at_delta(self.target_delta)
        if classic is None:
            ratio = math.inf
        else:
            ratio = value / classic if family.parameter == "epsilon" else classic / value
        return Calibration(
            parameter=family.parameter,
            per_invocation_epsilon=value if family.parameter == "epsilon" else None,
            sigma=value if family.parameter == "sigma" else None,
            report=report, target_epsilon=self.target_epsilon, target_delta=self.target_delta,
            classic=classic, classic_epsilon=classic_eps, classic_theorem=classic_theorem,
            ratio=ratio, method=method, evaluations=evaluations, rtol=self.rtol, tolerance=tolerance,
            accuracy=bracket.accuracy(family, value), time_limit_reached=deadline.reached, stops=deadline.stops,
        )

    def _gce_search(self, first: Report) -> _Search | None:
        """The search on the composition of the worst-case multiset, when the first solve pins it down
        (module docstring), else None."""
        if not (first.exact and first.witness is not None):
            return None
        differ = first.witness[0] ^ first.witness[1]
        invocations = tuple(i for i in self.scenario.invocations if i.database in differ)
        return _Search(_composed_epsilon(invocations, self.target_delta), self.family, self.target_epsilon,
                       self.deadline, self.progress)

    def _by_solve(self) -> _Search:
        return _Search(lambda p: self.solved(p).epsilon, self.family, self.target_epsilon, self.deadline,
                       self.progress, known=lambda p: p in self.reports)

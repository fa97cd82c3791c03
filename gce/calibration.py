"""Calibration: the per-invocation parameter whose HDP guarantee meets a target (docs/design.md, "Calibration").

Two questions, chosen by the scenario's invocations:

* every invocation is :class:`~gce.accounting.guarantees.PureDP` or
  :class:`~gce.accounting.guarantees.ApproxDP`: the **largest common per-invocation
  epsilon** (each invocation keeps its own delta) such that the scenario's HDP
  guarantee (001, Def. 3) at ``target_delta`` has epsilon <= ``target_epsilon``;
* every invocation is a :class:`~gce.accounting.guarantees.GaussianMechanism`: the
  **smallest common sigma** (each keeps its own sensitivity) that does the same.

The HDP epsilon is non-decreasing in the per-invocation epsilon and
non-increasing in sigma (each invocation's guarantee only weakens or
strengthens; every composition theorem is monotone), so the answer is the
boundary of a monotone predicate, found by bracketing and bisection on a log
scale to a relative width of :data:`PARAMETER_RTOL`. The search always keeps a
parameter that is known to meet the target and returns it, never the other end.

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
the ratio says how much the constraints buy per invocation.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import InvalidParameterError, NumericalLimitError, UnsupportedCombinationError
from .validation import is_number
from .accounting import kinds
from .accounting.guarantees import Guarantee
from .model import Invocation, Scenario, invocation_multiset
from .progress import ProgressCallback
from .report import Report, json_number, terminal_text
from .solving import check_scenario, solve
from .solvers import DEFAULT_TIME_LIMIT
from .solvers.base import check_time_limit
from .accounting.theorems import compose

__all__ = ["Calibration", "calibrate", "PARAMETER_RTOL", "EPSILON_RANGE", "SIGMA_RANGE"]

#: Relative width of the final bracket: the returned parameter p meets the target
#: and p * (1 + PARAMETER_RTOL) (epsilon) or p / (1 + PARAMETER_RTOL) (sigma) does not.
PARAMETER_RTOL = 1e-6
#: Per-invocation epsilons searched (the "most private" end first).
EPSILON_RANGE = (1e-12, 100.0)
#: Sigmas searched, in units of the largest sensitivity (the "most private" end first).
SIGMA_RANGE = (1e9, 1e-9)
#: Cap on bisection steps (the widest bracket, 18 decades, needs about 36).
SEARCH_MAXITER = 200

_LABEL = {"epsilon": "per_invocation_epsilon", "sigma": "sigma"}


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

    def __post_init__(self) -> None:
        if self.parameter not in _LABEL:
            raise InvalidParameterError("parameter", f"must be 'epsilon' or 'sigma', got {self.parameter!r}")
        value, other = ((self.per_invocation_epsilon, self.sigma) if self.parameter == "epsilon"
                        else (self.sigma, self.per_invocation_epsilon))
        if value is None or other is not None:
            raise InvalidParameterError(_LABEL[self.parameter], "must be the only calibrated value")
        if not (self.report.epsilon <= self.target_epsilon and self.report.delta <= self.target_delta):
            raise InvalidParameterError(
                "report", f"({self.report.epsilon!r}, {self.report.delta!r}) does not meet the target "
                          f"({self.target_epsilon!r}, {self.target_delta!r})")

    @property
    def value(self) -> float:
        """The calibrated parameter (per-invocation epsilon or sigma)."""
        return self.per_invocation_epsilon if self.parameter == "epsilon" else self.sigma  # type: ignore[return-value]

    @property
    def epsilon(self) -> float:
        """The HDP epsilon at the calibrated value (at most ``target_epsilon``)."""
        return self.report.epsilon

    @property
    def delta(self) -> float:
        """The HDP delta (``target_delta``)."""
        return self.report.delta

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
            "notes": list(self.report.notes),
        }

    def __str__(self) -> str:
        name = "per-invocation epsilon" if self.parameter == "epsilon" else "sigma"
        target = f"(epsilon {self.target_epsilon:g}, delta {self.target_delta:g})"
        lines = [self.report.title] if self.report.title else []
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
        lines += [f"note: {n}" for n in self.report.notes]
        return "\n".join(terminal_text(line) for line in lines)  # titles and notes come from files


# ---------------------------------------------------------------------------
# The scenario as a function of the parameter


def _parameter(scenario: Scenario) -> str:
    """'epsilon' or 'sigma', from the scenario's guarantee kinds."""
    parameters = {kinds.calibrated_parameter(inv.guarantee) for inv in scenario.invocations}
    if len(parameters) == 1 and None not in parameters:
        return parameters.pop()
    names = ", ".join(sorted({type(inv.guarantee).__name__ for inv in scenario.invocations}))
    raise UnsupportedCombinationError(
        f"invocations: calibration needs every invocation to be PureDP/ApproxDP (calibrates epsilon) or every "
        f"one a GaussianMechanism (calibrates sigma); got {names}")


def _invocations_at(invocations: tuple[Invocation, ...], p: float) -> tuple[Invocation, ...]:
    """The invocations with the common parameter ``p`` substituted."""
    cache: dict[Guarantee, Guarantee] = {}
    out = []
    for inv in invocations:
        g = inv.guarantee
        if g not in cache:
            cache[g] = kinds.with_parameter(g, p)
        out.append(dataclasses.replace(inv, guarantee=cache[g]))
    return tuple(out)


def _scenario_at(scenario: Scenario, p: float) -> Scenario:
    return dataclasses.replace(scenario, invocations=_invocations_at(scenario.invocations, p),
                               delta=None, epsilon=None)


def _composed_epsilon(invocations: tuple[Invocation, ...], target_delta: float) -> Callable[[float], float]:
    """p -> epsilon at ``target_delta`` of composing ``invocations`` at parameter p."""
    return lambda p: compose(invocation_multiset(_invocations_at(invocations, p))).epsilon(target_delta)


# ---------------------------------------------------------------------------
# The monotone search


@dataclass(frozen=True)
class _Family:
    """The searched parameter as u on the real line, the target met for u <= u*.

    Epsilon: u = log(epsilon). Sigma: u = -log(sigma). ``private`` and ``loose``
    are the two ends of the searched range, as parameter values; ``scale`` is
    the unit of sigma (the largest sensitivity).
    """

    parameter: str
    private: float
    loose: float
    scale: float = 1.0

    def to_p(self, u: float) -> float:
        return math.exp(u) if self.parameter == "epsilon" else math.exp(-u)

    def to_u(self, p: float) -> float:
        return math.log(p) if self.parameter == "epsilon" else -math.log(p)

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
    if parameter == "epsilon":
        return _Family("epsilon", *EPSILON_RANGE)
    scale = max(inv.guarantee.sensitivity for inv in scenario.invocations) or 1.0
    return _Family("sigma", SIGMA_RANGE[0] * scale, SIGMA_RANGE[1] * scale, scale)


class _Search:
    """Counts evaluations and reports progress; ``ok(p)``: is the target met at p?"""

    def __init__(self, evaluate: Callable[[float], float], target_epsilon: float,
                 progress: ProgressCallback | None, label: str):
        self.evaluate, self.target = evaluate, target_epsilon
        self.progress, self.label = progress, label
        self.evaluations = 0

    def ok(self, p: float) -> bool:
        value = self.evaluate(p)
        self.evaluations += 1
        if self.progress is not None:
            self.progress(self.evaluations, None, f"{self.label} {p:.6g}: epsilon {value:.6g}")
        return value <= self.target


def _boundary(search: _Search, family: _Family, start: float) -> float:
    """The parameter at the boundary, on the side that meets the target.

    Precondition: the target is met at ``family.private`` and not at
    ``family.loose`` (:func:`_ends`). Brackets from ``start`` by doubling steps
    on the log scale, then bisects until the bracket is narrower than
    :data:`PARAMETER_RTOL`; returns the end that meets the target.
    """
    u_min, u_max = family.to_u(family.private), family.to_u(family.loose)
    u0 = family.to_u(start)
    step = math.log(2.0)
    if search.ok(family.to_p(u0)):  # expand towards the loose end
        lo, hi = u0, u0 + step
        while hi < u_max and search.ok(family.to_p(hi)):
            lo, step = hi, 2 * step
            hi = lo + step
        hi = min(hi, u_max)
    else:  # expand towards the private end
        lo, hi = u0 - step, u0
        while lo > u_min and not search.ok(family.to_p(lo)):
            hi, step = lo, 2 * step
            lo = hi - step
        lo = max(lo, u_min)
    width = math.log1p(PARAMETER_RTOL)
    for _ in range(SEARCH_MAXITER):  # invariant: met at lo, not at hi
        if hi - lo <= width:
            break
        mid = 0.5 * (lo + hi)
        if search.ok(family.to_p(mid)):
            lo = mid
        else:
            hi = mid
    return family.to_p(lo)


def _ends(evaluate: Callable[[float], float], family: _Family, target_epsilon: float) -> str:
    """Where the target stands at the two ends of the range.

    ``"delta"``: no finite epsilon even at the private end (the per-invocation
    deltas alone exceed the target delta); ``"epsilon"``: finite but above the
    target there; ``"everywhere"``: met even at the loose end; ``"ok"``: a
    boundary lies in between.
    """
    at_private = evaluate(family.private)
    if math.isinf(at_private):
        return "delta"
    if at_private > target_epsilon:
        return "epsilon"
    with np.errstate(over="ignore"):  # e^eps at the loose end overflows to its correct limit (delta 0)
        at_loose = evaluate(family.loose)
    return "everywhere" if at_loose <= target_epsilon else "ok"


def _infeasible(where: str, family: _Family, target_epsilon: float, target_delta: float,
                floor: Report | None) -> InvalidParameterError:
    """The error for a target no parameter meets (or every parameter meets); ``floor`` is
    the report at the private end when the per-invocation deltas are to blame."""
    name = "per-invocation epsilon" if family.parameter == "epsilon" else "sigma"
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


def calibrate(
    scenario: Scenario,
    *,
    target_epsilon: float,
    target_delta: float,
    time_limit: float = DEFAULT_TIME_LIMIT,
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
        sensitivities kept). Its own target (delta / epsilon) is ignored.
    target_epsilon : float
        The HDP epsilon to meet, finite and > 0.
    target_delta : float
        The HDP delta at which it is met, in [0, 1).
    time_limit : float
        Passed to every :func:`gce.solve` call (each solve's searches share it;
        the calibration makes several solves).
    progress : callable, optional
        Called as ``progress(step, total, message)`` after each evaluation
        (e.g. a :class:`gce.progress.Progress`).

    Returns
    -------
    Calibration
        Its report is :func:`gce.solve` at the returned value and meets the target;
        the value is within a relative :data:`PARAMETER_RTOL` of the boundary.

    Raises
    ------
    InvalidParameterError
        If ``scenario`` is not a :class:`~gce.model.Scenario` or ``time_limit``
        is not a finite number of seconds in (0, :data:`~gce.solvers.base.MAX_TIME_LIMIT`]
        (naming the argument); on an invalid target; naming ``target_delta`` when the per-invocation
        deltas alone exceed it (or, for Gaussian mechanisms, when it is 0), and
        ``target_epsilon`` when no value in range meets it or every value does.
    UnsupportedCombinationError
        When the invocations are not all of one calibratable family.

    References
    ----------
    docs/design.md, "Calibration" and "Infeasible targets"; 001, Def. 3 (HDP),
    Alg. 1 (classic) and 2 (GCE), Sec. V-A.

    Examples
    --------
    >>> from gce.constraints import AtMost, ConstraintSet
    >>> from gce.accounting.guarantees import ApproxDP
    >>> from gce.model import Invocation, Scenario
    >>> hospitals = Scenario(1000, tuple(Invocation(i, ApproxDP(0.1, 1e-10)) for i in range(1000)),
    ...                      ConstraintSet(1000, (AtMost(365),)))
    >>> c = calibrate(hospitals, target_epsilon=1.0, target_delta=1e-6)
    >>> round(c.per_invocation_epsilon, 5), c.epsilon <= 1.0, round(c.ratio, 2)
    (0.01241, True, 1.66)
    """
    check_scenario(scenario)
    time_limit = check_time_limit(time_limit)
    if not is_number(target_epsilon) \
            or not (0.0 < target_epsilon < math.inf):
        raise InvalidParameterError("target_epsilon", f"must be finite and > 0, got {target_epsilon!r}")
    if not is_number(target_delta) \
            or not (0.0 <= target_delta < 1.0):
        raise InvalidParameterError("target_delta", f"must lie in [0, 1), got {target_delta!r}")
    target_epsilon, target_delta = float(target_epsilon), float(target_delta)
    parameter = _parameter(scenario)
    family = _family(parameter, scenario)
    start = family.start(target_epsilon, target_delta)
    reports: dict[float, Report] = {}

    def solved(p: float) -> Report:
        if p not in reports:
            reports[p] = solve(_scenario_at(scenario, p), delta=target_delta, time_limit=time_limit)
        return reports[p]

    def by_solve(p: float) -> float:
        return solved(p).epsilon

    # The worst-case multiset when one exact solve pins it down (module docstring), else solve at every step.
    first = solved(start)
    evaluate, method = by_solve, "solve at every step"
    if first.exact and first.witness is not None:
        differ = first.witness[0] ^ first.witness[1]
        evaluate = _composed_epsilon(tuple(i for i in scenario.invocations if i.database in differ), target_delta)
        method = "worst-case multiset"
    where = _ends(evaluate, family, target_epsilon)
    if where != "ok":
        floor = solved(family.private) if where == "delta" else None
        raise _infeasible(where, family, target_epsilon, target_delta, floor)
    search = _Search(evaluate, target_epsilon, progress, parameter)
    value = _boundary(search, family, start)
    evaluations = search.evaluations
    report = solved(value)  # the re-check (STYLE.md: calibration answers are re-evaluated)
    if not report.epsilon <= target_epsilon and method != "solve at every step":
        method = "solve at every step"
        search = _Search(by_solve, target_epsilon, progress, parameter)
        value = _boundary(search, family, start)
        evaluations += search.evaluations
        report = solved(value)
    if not report.epsilon <= target_epsilon:  # pragma: no cover - solve() disagreed with itself
        raise NumericalLimitError(
            f"{_LABEL[parameter]}: {value!r} met the target during the search but not on re-check "
            f"(epsilon {report.epsilon!r} > target_epsilon {target_epsilon!r})")

    # The classic calibration: every invocation composed (the report's ``classic`` baseline, 001 Alg. 1).
    # It charges at least as much as the GCE (its multiset contains every differing one), so it is not met at
    # the loose end either, and its answer lies on the private side of ``value``: start there.
    classic_of = _composed_epsilon(scenario.invocations, target_delta)
    classic = classic_eps = None
    classic_theorem = ""
    at_private = classic_of(family.private)
    if at_private <= target_epsilon:  # finite and met: classic composition has an answer
        classic = _boundary(_Search(classic_of, target_epsilon, None, parameter), family, value)
        composition = compose(invocation_multiset(_invocations_at(scenario.invocations, classic)))
        classic_eps, _, classic_theorem = composition.at_delta(target_delta)
    if classic is None:
        ratio = math.inf
    else:
        ratio = value / classic if parameter == "epsilon" else classic / value

    return Calibration(
        parameter=parameter,
        per_invocation_epsilon=value if parameter == "epsilon" else None,
        sigma=value if parameter == "sigma" else None,
        report=report, target_epsilon=target_epsilon, target_delta=target_delta,
        classic=classic, classic_epsilon=classic_eps, classic_theorem=classic_theorem,
        ratio=ratio, method=method, evaluations=evaluations,
    )

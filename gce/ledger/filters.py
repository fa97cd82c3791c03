"""Privacy filters: admission rules that stay valid when each query's parameters are chosen adaptively.

A *filter* (Rogers, Roth, Ullman, Vadhan 2016) receives the guarantees of the
invocations one at a time, each chosen after seeing the answers to the earlier
ones, and halts before a fixed budget would be exceeded. A composition theorem
that holds only for parameters fixed in advance (Kairouz et al.'s optimal
composition, privacy-loss distributions) may not decide admission: stopping when
such a composition crosses the budget is not valid in general (arXiv 2602.06756).
Only these rules decide here, each a sum of per-invocation statistics:

========  ===================================  =======================================================
filter    statistic per invocation             theorem (valid for adaptively chosen parameters)
========  ===================================  =======================================================
basic     (epsilon, delta) of its point        Rogers et al. 2016, the basic-composition filter:
                                               sum eps_i <= E and sum delta_i <= D gives (E, D)-DP
renyi     Renyi divergence at fixed orders     Feldman and Zrnic 2021, the Renyi filter at each
                                               order, with a union bound over the orders (below)
zcdp      rho                                  Whitehouse et al. 2023 (zCDP filter; Feldman and Zrnic
                                               at every order): sum rho_i <= rho_B gives rho_B-zCDP
gdp       mu^2                                 Smith and Thakurta 2022: sum mu_i^2 <= mu_B^2 gives
                                               mu_B-GDP
========  ===================================  =======================================================

Each statistic is read from the guarantee's row in the kinds table
(:mod:`gce.accounting.kinds`: ``point``, ``zcdp_rho``, ``gdp_mu``); a kind
without one for the ledger's filter is refused with the reason
(:class:`~gce.errors.UnsupportedCombinationError`), never converted silently.

Across databases (001, Sec. III, Alg. 2), the adversary's pair of membership
sets (b0, b1) is fixed before the interaction, and an invocation on database i
contributes its statistic only when i is in b0 XOR b1. For every allowed pair
the sequence of those contributions is predictable, so each filter's theorem
applies pair by pair: the interaction is (E, D)-HDP when, for every allowed
pair, the sums stay within budget, i.e. when the maximum over allowed pairs of
the per-database sums does (the maximum-weight problem of :mod:`gce.solvers`).

Renyi filter at several orders. Fix the pair and an order a. With L_t the
privacy loss of step t and R_t(a) its Renyi bound, Z_t = exp((a - 1)(sum L_s -
sum R_s(a))) is a non-negative supermartingale (the Renyi bound holds
conditionally on the past, which is Feldman and Zrnic's argument), so by
Ville's inequality P(sup_t Z_t >= k / D) <= D / k for k orders. With B(a) = E -
log(k / D) / (a - 1), a run that stops while some order a has sum R_s(a) <=
B(a) has total loss below E outside an event of probability D (union bound over
the k orders), which gives (E, D)-DP. Each order's own budget is B(a); the
filter admits while *some* order stays within its budget.

References
----------
Rogers, Roth, Ullman, Vadhan, "Privacy Odometers and Filters: Pay-as-you-Go Composition", NeurIPS 2016
(arXiv 1605.08294): filters, and basic composition as one.
Feldman, Zrnic, "Individual Privacy Accounting via a Renyi Filter", NeurIPS 2021 (arXiv 2008.11193).
Whitehouse, Ramdas, Rogers, Wu, "Fully-Adaptive Composition in Differential Privacy", ICML 2023
(arXiv 2203.05481): filters for zCDP.
Smith, Thakurta, "Fully Adaptive Composition for Gaussian Differential Privacy" (arXiv 2210.17520).
Canonne, Kamath, Steinke 2020, Prop. 12 (zCDP to (eps, delta), :class:`~gce.accounting.curves.ZCDPCurve`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..accounting import kinds
from ..accounting.guarantees import Guarantee
from ..errors import InvalidParameterError, UnsupportedCombinationError
from ..validation import is_number, shown

__all__ = ["Filter", "FILTERS", "RENYI_FILTER_ORDERS", "filter_named", "check_budget"]

#: The orders of the Renyi filter (fixed when the ledger is created; the budget is split over them).
RENYI_FILTER_ORDERS = (1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 32.0, 64.0)

#: Bisection steps for the zCDP and GDP budgets (the answer is kept on the safe side of the bracket).
_BISECTION_STEPS = 200


def check_budget(epsilon: object, delta: object) -> tuple[float, float]:
    """A budget: epsilon finite and > 0, delta in [0, 1); errors name ``budget_epsilon`` / ``budget_delta``."""
    values = []
    for value, field in ((epsilon, "budget_epsilon"), (delta, "budget_delta")):
        if not is_number(value):
            raise InvalidParameterError(field, f"must be a number, got {shown(value)}")
        values.append(float(value))
    eps, d = values
    if not (math.isfinite(eps) and eps > 0.0):
        raise InvalidParameterError("budget_epsilon", f"must be finite and > 0, got {shown(epsilon)}")
    if not 0.0 <= d < 1.0:
        raise InvalidParameterError("budget_delta", f"must lie in [0, 1), got {shown(delta)}")
    return eps, d


def _largest(fits: Callable[[float], bool], start: float) -> float:
    """The largest x >= 0 with ``fits(x)`` found by bisection (``fits`` monotone decreasing): the lower
    end of the final bracket, so the answer always fits."""
    lo, hi = 0.0, start
    while fits(hi):
        lo, hi = hi, 2.0 * hi
        if hi > 1e12:
            return lo
    for _ in range(_BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


@dataclass(frozen=True)
class Filter:
    """One admission rule: a per-invocation statistic (a vector, one entry per component) and budgets.

    Attributes
    ----------
    name : str
        ``basic``, ``renyi``, ``zcdp`` or ``gdp``.
    theorem : str
        The theorem that makes it a filter (shown in every answer).
    components : callable
        () -> the component labels, e.g. ``("epsilon", "delta")``.
    statistic : callable
        guarantee -> the statistic vector, or None when the kind has none.
    budgets : callable
        (epsilon, delta) -> the budget of each component.
    any_component : bool
        True: admit while *some* component is within its budget (Renyi orders);
        False: while *every* component is.
    needs : str
        What a kind must have to be accepted (the refusal message).
    """

    name: str
    theorem: str
    components: tuple[str, ...]
    statistic: Callable[[Guarantee], NDArray[np.float64] | None]
    budgets: Callable[[float, float], NDArray[np.float64]]
    any_component: bool
    needs: str

    def weights(self, guarantee: Guarantee, field: str = "mechanism") -> NDArray[np.float64]:
        """The statistic of one invocation of ``guarantee``.

        Raises
        ------
        UnsupportedCombinationError
            The kind has no statistic for this filter (naming the kind and what the filter needs).
        """
        kinds.kind_of(guarantee)
        value = self.statistic(guarantee)
        if value is None:
            raise UnsupportedCombinationError(
                f"{field}: the {self.name} filter needs {self.needs}; {shown(guarantee)} has none "
                f"(create the ledger with another filter: {', '.join(self._others())})")
        value = np.asarray(value, dtype=float)
        if not np.all(np.isfinite(value)) or np.any(value < 0):
            raise InvalidParameterError(field, f"its {self.name} statistic {value.tolist()} is not finite")
        return value

    def _others(self) -> list[str]:
        return [name for name in FILTERS if name != self.name]

    def admits(self, values: NDArray[np.float64], budgets: NDArray[np.float64]) -> bool:
        """Whether sums ``values`` (per component) are within ``budgets`` by this filter's rule."""
        within = np.asarray(values) <= np.asarray(budgets)
        return bool(within.any() if self.any_component else within.all())


def _basic(g: Guarantee) -> NDArray[np.float64] | None:
    point = kinds.point(g)
    return None if point is None else np.array(point, dtype=float)


def _zcdp(g: Guarantee) -> NDArray[np.float64] | None:
    rho = kinds.zcdp_rho(g)
    return None if rho is None else np.array([rho])


def _gdp(g: Guarantee) -> NDArray[np.float64] | None:
    mu = kinds.gdp_mu(g)
    return None if mu is None else np.array([mu * mu])


_ORDERS = np.array(RENYI_FILTER_ORDERS)


def _renyi(g: Guarantee) -> NDArray[np.float64] | None:
    """Renyi divergences at the filter's orders without a delta: a pure point through its canonical pair
    (binary randomized response; 002 Thm. II.5 and the data-processing inequality), alpha rho from zCDP
    (Bun and Steinke 2016, Def. 1.1), the smaller where both apply. A point with delta > 0 has none."""
    best = None
    point = kinds.point(g)
    if point is not None and point[1] == 0.0:
        from ..solvers.mixed import renyi_terms  # here: the solvers (and scipy) load with the first spend

        terms = renyi_terms(g, _ORDERS)
        if terms is not None and terms[1] == 0.0:
            best = np.asarray(terms[0], dtype=float)
    rho = kinds.zcdp_rho(g)
    if rho is not None:
        best = _ORDERS * rho if best is None else np.minimum(best, _ORDERS * rho)
    return best


def _zcdp_budget(epsilon: float, delta: float) -> NDArray[np.float64]:
    """The largest rho whose zCDP conversion (CKS20 Prop. 12) meets (epsilon, delta)."""
    if delta <= 0.0:
        return np.array([0.0])
    from ..accounting.curves import ZCDPCurve

    fits = lambda rho: float(ZCDPCurve(rho).epsilon(delta)) <= epsilon  # noqa: E731
    return np.array([_largest(fits, max(epsilon * epsilon, 1e-6))])


def _gdp_budget(epsilon: float, delta: float) -> NDArray[np.float64]:
    """mu_B^2 for the largest mu whose GDP curve (DRS22 Cor. 2.13) has delta(epsilon) <= delta."""
    if delta <= 0.0:
        return np.array([0.0])
    from ..accounting.curves import GaussianCurve

    fits = lambda mu: float(GaussianCurve(mu).delta(epsilon)) <= delta  # noqa: E731
    mu = _largest(fits, max(epsilon, 1e-3))
    return np.array([mu * mu])


def _renyi_budget(epsilon: float, delta: float) -> NDArray[np.float64]:
    """B(a) = epsilon - log(k / delta) / (a - 1) per order (module docstring: Ville plus a union bound)."""
    if delta <= 0.0:
        return np.full(_ORDERS.size, -math.inf)
    return epsilon - math.log(_ORDERS.size / delta) / (_ORDERS - 1.0)


#: The filters, by name.
FILTERS: Mapping[str, Filter] = {
    f.name: f for f in (
        Filter("basic", "basic composition as a filter (Rogers, Roth, Ullman, Vadhan 2016)",
               ("epsilon", "delta"), _basic, lambda e, d: np.array([e, d]), False,
               "an (epsilon, delta) point (pure, approx, laplace, randomized_response, subsampled points)"),
        Filter("renyi", "Renyi filter at fixed orders (Feldman and Zrnic 2021), union bound over the orders",
               tuple(f"renyi({a:g})" for a in RENYI_FILTER_ORDERS), _renyi, _renyi_budget, True,
               "a Renyi bound without delta (pure points, laplace, randomized_response, zcdp, gdp, gaussian)"),
        Filter("zcdp", "zCDP filter (Whitehouse, Ramdas, Rogers, Wu 2023; Feldman and Zrnic 2021 at every order)",
               ("rho",), _zcdp, _zcdp_budget, False, "a zCDP rho (zcdp, gdp, gaussian, pure points, laplace)"),
        Filter("gdp", "Gaussian DP filter through sum mu^2 (Smith and Thakurta 2022)",
               ("mu^2",), _gdp, _gdp_budget, False, "a GDP mu (gdp, gaussian)"),
    )
}


def filter_named(name: object) -> Filter:
    """The filter called ``name``; an unknown name is an error naming ``filter``."""
    if not isinstance(name, str) or name not in FILTERS:
        raise InvalidParameterError("filter", f"must be one of {', '.join(FILTERS)}, got {shown(name)}")
    return FILTERS[name]

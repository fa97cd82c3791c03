"""The subsampling route for "none vs at least one" (001, Sec. V-B, Thm. 3, App. C), in the convexity form.

The subsampling route (001 Sec. V-B, Thm. 3, proof in App. C) is the same
inequality for one particular decomposition: h0 = the empty set, h1 = uniform
over the non-empty subsets of k databases. Conditioned on the first database
i of b (weight 2^{k-i} / (2^k - 1)), the databases before i are out, i is in,
and each later one is in with probability 1/2 independently: a Poisson
subsample at rate 1/2 of the target's record. So
delta(eps) <= sum_i w_i delta_i(eps), with delta_i the profile of the
composition of database i's invocations and the later databases' invocations
subsampled at rate 1/2 (:func:`subsampling_delta`, :class:`SubsamplingCurve`)
-- never 001's ln of an average of e^{eps_i}.

The route returns upper bounds, never exact values.

References
----------
001: Hartmann, Bindschaedler, West, "On the Choice of Databases in Differential
Privacy Composition", Sec. V-B, Thm. 3, App. C.
BBG18: Balle, Barthe, Gaboardi, "Privacy Amplification by Subsampling" (Thm. 8;
hockey-stick divergences are f-divergences, hence jointly convex, Sec. 3).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..accounting import kinds
from ..accounting.curves import PrivacyCurve
from ..accounting.guarantees import ApproxDP, GaussianMechanism, Guarantee, PureDP, Subsampled
from .. import effort
from ..accounting.theorems import Multiset, compose
from ..errors import InvalidParameterError, UnsupportedCombinationError
from ..validation import is_integer, shown
from ..model import Invocation, per_database_multisets
from .grid import LOCAL_POINTS, TABLE_GRID, _check_epsilon, _check_invocations, _crossing, _first_below, _sorted_call

__all__ = [
    "SubsamplingTerm",
    "SubsamplingResult",
    "SubsamplingCurve",
    "subsampling_delta",
    "subsampled_group",
    "SUBSAMPLING_ORDERS",
]

#: Weight of the subsampling route's terms beyond which the remaining terms are charged delta = 1.
TAIL_WEIGHT = 2.0**-60
#: Orders of the databases the subsampling route tries (any order gives a valid bound).
SUBSAMPLING_ORDERS = ("given", "strongest-first", "weakest-first", "best")
#: Epsilon grid on which database groups are ranked by strength (the area under their curve).
_STRENGTH_GRID = np.geomspace(1e-3, 32.0, 48)


def subsampled_group(invocations: Multiset, rate: float = 0.5, database: int | None = None) -> Multiset:
    """The invocations of one database, run only when a coin of probability ``rate`` says the record is in.

    All invocations on a database share the database's membership coin, so the
    group is subsampled *as a whole*: the pair is ((1 - q) M(D) + q M(D + x),
    M(D)) for the composition M of the group. Subsampling each invocation on
    its own (independent coins) would understate the loss (a test shows it).
    The group may interleave with other databases' invocations: it is then one
    interactive mechanism in a concurrent composition, which obeys the same
    (epsilon, delta) composition theorems (Lyu 2022; Vadhan and Zhang 2023).

    Supported groups, each as one subsampled guarantee:

    * a single invocation: ``Subsampled(rate, g)`` (a subsampled g at rate r
      becomes rate r * rate; mu-GDP becomes the Gaussian mechanism with
      sigma = 1/mu, whose pair dominates every mu-GDP pair);
    * only Gaussian (GDP) invocations: one Gaussian mechanism with
      mu = sqrt(sum mu_i^2) (exact composition, Dong, Roth, Su 2022 Cor. 3.3);
    * only invocations with an (epsilon, delta) point: the point
      (sum eps_i, 1 - prod (1 - delta_i)) of their composition (002 Thm. III.3
      at eps' = sum eps_i), subsampled.

    A subsampled pure, approximate or randomized-response guarantee is
    returned as its amplified point (ln(1 + q(e^eps - 1)), q delta) (BBG18
    Thm. 8), the only thing any composition theorem here uses of it; as a
    canonical (epsilon, delta) guarantee it composes exactly and fast.

    Raises
    ------
    UnsupportedCombinationError
        zCDP invocations, repeated subsampled Gaussian or Laplace invocations,
        or Gaussian mixed with (epsilon, delta) invocations on one database.
    """
    entries = [(g, n) for g, n in invocations if n > 0]
    where = "" if database is None else f"database {database}: "
    if not entries:
        return ()
    if len(entries) == 1 and entries[0][1] == 1:
        return ((kinds.as_point(kinds.subsample(entries[0][0], rate, where)), 1),)
    mus = [kinds.gdp_mu(g) for g, _ in entries]
    if all(mu is not None for mu in mus):
        mu = math.sqrt(sum(n * mu * mu for (_, n), mu in zip(entries, mus)))
        return ((Subsampled(rate, GaussianMechanism(sigma=1.0 / mu)), 1),) if mu > 0 else ()
    points = [kinds.point(g) for g, _ in entries]
    if all(p is not None for p in points):
        eps = math.fsum(n * p[0] for (_, n), p in zip(entries, points))
        delta = -math.expm1(math.fsum(n * math.log1p(-p[1]) for (_, n), p in zip(entries, points)))
        if delta >= 1.0:
            raise UnsupportedCombinationError(f"{where}the composed delta of its invocations reaches 1")
        inner = PureDP(eps) if delta == 0.0 else ApproxDP(eps, delta)
        return ((kinds.as_point(Subsampled(rate, inner)), 1),)
    raise UnsupportedCombinationError(
        f"{where}no subsampling theorem for the group {sorted(map(repr, dict(entries)))}: "
        "a database's invocations share one membership coin, and only a single invocation, "
        "Gaussian-only groups or (epsilon, delta) groups can be subsampled as a whole here")


def _order_weights(k: int) -> tuple[list[float], float]:
    """w_i = 2^{k-i} / (2^k - 1) for i = 1..k while the remaining weight exceeds TAIL_WEIGHT,
    and the remaining weight (charged delta = 1)."""
    weights: list[float] = []
    norm = -math.expm1(-k * math.log(2.0))  # 1 - 2^-k
    for i in range(1, k + 1):
        remaining = math.ldexp(1.0, -(i - 1)) * -math.expm1(-(k - i + 1) * math.log(2.0)) / norm
        if remaining <= TAIL_WEIGHT:
            return weights, remaining * (1.0 + 1e-9)
        weights.append(math.ldexp(1.0, -i) / norm)
    return weights, 0.0


@dataclass(frozen=True)
class SubsamplingTerm:
    """Term i of the route: database ``database`` first in b, with weight 2^{k-i}/(2^k - 1)."""

    database: int
    weight: float
    delta: float
    theorem: str


@dataclass(frozen=True)
class SubsamplingResult:
    """delta(epsilon) <= sum_i weight_i delta_i(epsilon) (+ tail), for the order that gave the least.

    Attributes
    ----------
    epsilon, delta : float
        The certified point (both directions).
    order : tuple of int
        The databases in the order used (term i: the first database of b is order[i]).
    terms : tuple of SubsamplingTerm
    tail : float
        Weight of the terms left out (charged delta = 1); 0 unless k > 60.
    """

    epsilon: float
    delta: float
    order: tuple[int, ...]
    terms: tuple[SubsamplingTerm, ...]
    tail: float
    theorem: str = "subsampling route (001 Thm. 3, convexity form)"


class _OrderTerms:
    """The subsampling bound for one order of the databases: weights and term curves."""

    def __init__(self, order: tuple[int, ...], groups: dict[int, Multiset],
                 subsampled: Callable[[int], Multiset], rtol: float = effort.DEFAULT_RTOL):
        self.order = order
        self.weights, self.tail = _order_weights(len(order))
        self.curves: list[PrivacyCurve] = []
        self.names: list[str] = []
        later: Counter[Guarantee] = Counter()
        suffix: list[Counter[Guarantee]] = [Counter()] * len(order)
        for i in range(len(order) - 1, -1, -1):  # suffix[i]: subsampled groups of the databases after i
            suffix[i] = later.copy()
            if i > 0:  # the first database is never subsampled
                later.update(dict(subsampled(order[i])))
        for i in range(len(self.weights)):
            term = suffix[i].copy()
            term.update(dict(groups[order[i]]))
            c = compose(dict(+term), rtol)
            self.curves.append(c.curve)
            self.names.append("+".join(name for name, _ in c.candidates))
        self.delta_floor = min(math.fsum(w * c.delta_floor for w, c in zip(self.weights, self.curves)) + self.tail,
                               1.0)

    def values(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        """Per-term deltas, shape (terms, len(eps)); NaN from a theorem counts as delta = 1."""
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            out = np.array([_sorted_call(c, eps) for c in self.curves]).reshape(len(self.curves), eps.size)
        return np.clip(np.nan_to_num(out, nan=1.0), 0.0, 1.0)

    def delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        """sum_i w_i delta_i(eps) + tail (the convexity form of 001 Thm. 3), capped at 1."""
        return np.minimum(np.asarray(self.weights) @ self.values(eps) + self.tail, 1.0)


class SubsamplingCurve(PrivacyCurve):
    """The subsampling route of 001 Sec. V-B for h0 = {} and h1 = uniform over the non-empty
    subsets of ``databases``, in the sound convexity form.

    delta(eps) <= sum_{i=1..k} 2^{k-i}/(2^k - 1) delta_i(eps), with delta_i the
    profile of compose(invocations on the i-th database, the later databases'
    invocations subsampled at rate 1/2): App. C's decomposition of h1 by the
    first database in b, and joint convexity of the hockey-stick divergence, all
    terms at the SAME eps. 001 Thm. 3 / Cor. 6 instead take ln of an average of
    e^{eps_i}, which is unsound (docs/design.md, "Unsound formulas").

    Parameters
    ----------
    invocations : iterable of Invocation
        The mechanisms; those on databases outside ``databases`` are out under
        both hypotheses and do not matter.
    databases : sequence of int, optional
        The k databases of the prior (default: those with invocations), in the
        "given" order.
    order : {"given", "strongest-first", "weakest-first", "best"}
        Any order of the databases gives a valid bound. "strongest-first" sorts
        by the area under each database's composed curve (smallest first);
        "best" (default) takes the pointwise minimum of the three orders.
    rtol : float
        The relative accuracy every term's composition is computed to (:func:`gce.accounting.theorems.compose`;
        :mod:`gce.effort`, default :data:`gce.effort.DEFAULT_RTOL`).

    Raises
    ------
    UnsupportedCombinationError
        When, in every order tried, some database after the first has a group
        with no subsampling theorem (:func:`subsampled_group`); an order that
        fails is skipped when another one works.

    Examples
    --------
    >>> from gce.accounting.guarantees import ApproxDP, PureDP
    >>> from gce.model import Invocation
    >>> curve = SubsamplingCurve([Invocation(0, PureDP(6.0)), Invocation(1, ApproxDP(0.0, 0.4))])
    >>> round(float(curve.delta(5.5958)), 4)   # 001 Cor. 6 claims 0.2667; the exact value is 0.3102
    0.3772
    """

    def __init__(self, invocations: Iterable[Invocation], databases: Sequence[int] | None = None,
                 order: str = "best", rtol: float = effort.DEFAULT_RTOL):
        rtol = effort.check_rtol(rtol)
        invocations = _check_invocations(invocations)
        if databases is None:
            databases = sorted({inv.database for inv in invocations})
        databases = tuple(databases)
        if not databases:
            raise InvalidParameterError("databases", "needs at least one database")
        for i, d in enumerate(databases):
            if not is_integer(d) or d < 0:
                raise InvalidParameterError(f"databases[{i}]", f"must be a database index >= 0, got {shown(d)}")
        if len(set(databases)) != len(databases):
            raise InvalidParameterError("databases", f"lists a database more than once: {list(databases)}")
        if order not in SUBSAMPLING_ORDERS:
            raise InvalidParameterError("order", f"must be one of {SUBSAMPLING_ORDERS}, got {shown(order)}")
        self.databases = tuple(int(d) for d in databases)
        queried = per_database_multisets(invocations)
        groups = {d: queried.get(d, ()) for d in self.databases}
        cache: dict[int, Multiset] = {}

        def subsampled(d: int) -> Multiset:
            """Database d's invocations subsampled at rate 1/2 as one group (cached)."""
            if d not in cache:
                cache[d] = subsampled_group(groups[d], 0.5, d)
            return cache[d]

        orders: list[tuple[int, ...]] = []
        if order in ("given", "best"):
            orders.append(self.databases)
        if order != "given":
            strength = {d: float(np.sum(_sorted_call(compose(dict(groups[d]), rtol).curve, _STRENGTH_GRID)))
                        if groups[d] else 0.0 for d in self.databases}
            ranked = tuple(sorted(self.databases, key=lambda d: strength[d]))
            if order in ("strongest-first", "best"):
                orders.append(ranked)
            if order in ("weakest-first", "best"):
                orders.append(ranked[::-1])
        self._routes: list[_OrderTerms] = []
        failure: UnsupportedCombinationError | None = None
        seen: set[tuple[frozenset, ...]] = set()
        for o in orders:  # an order fails when a database that must be subsampled cannot be
            key = tuple(frozenset(groups[d]) for d in o)  # orders with the same groups in turn are the same
            if key in seen:
                continue
            seen.add(key)
            try:
                self._routes.append(_OrderTerms(o, groups, subsampled, rtol))
            except UnsupportedCombinationError as err:
                failure = failure or err
        if not self._routes:
            raise failure
        self._table: NDArray[np.float64] | None = None
        self.delta_floor = min(r.delta_floor for r in self._routes)

    @property
    def orders(self) -> tuple[tuple[int, ...], ...]:
        """The orders whose pointwise minimum this curve is."""
        return tuple(r.order for r in self._routes)

    def _delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.min([r.delta(eps) for r in self._routes], axis=0)

    def _epsilon(self, d: NDArray[np.float64]) -> NDArray[np.float64]:
        out = np.empty_like(d)
        for i, t in enumerate(d):
            if t >= 1.0:
                out[i] = 0.0
            elif t < self.delta_floor:
                out[i] = math.inf
            else:
                out[i] = self._certify(float(t))
        return out

    def _certify(self, target: float) -> float:
        """Certified epsilon: the route tabulated on TABLE_GRID, then on a local grid between the
        two points that bracket the target, then the chord in e^eps between the last two (the
        composite divergence is convex in e^eps, see :func:`_chord`)."""
        if self._table is None:
            self._table = self._delta(TABLE_GRID)
        j = _first_below(TABLE_GRID, self._table, target)
        if j is None:
            return math.inf
        if j == 0:
            return 0.0
        local = np.linspace(TABLE_GRID[j - 1], TABLE_GRID[j], LOCAL_POINTS)
        values = self._delta(local)
        values[0], values[-1] = self._table[j - 1], self._table[j]
        k = _first_below(local, values, target)
        return _crossing(float(local[k - 1]), float(values[k - 1]), float(local[k]), float(values[k]), target)

    def at_epsilon(self, epsilon: float) -> SubsamplingResult:
        """The bound at ``epsilon`` with its terms, for the order that gives the least."""
        eps = np.array([_check_epsilon(epsilon)])
        values = [(float(r.delta(eps)[0]), n) for n, r in enumerate(self._routes)]
        bound, n = min(values)
        route = self._routes[n]
        per_term = route.values(eps)[:, 0]
        terms = tuple(SubsamplingTerm(d, w, float(v), name)
                      for d, w, v, name in zip(route.order, route.weights, per_term, route.names))
        return SubsamplingResult(float(eps[0]), bound, route.order, terms, route.tail)


def subsampling_delta(
    invocations: Iterable[Invocation],
    epsilon: float,
    databases: Sequence[int] | None = None,
    order: str = "best",
) -> SubsamplingResult:
    """A sound delta at ``epsilon`` for "in none" against "in at least one, uniformly" (001 Sec. V-B).

    Parameters
    ----------
    invocations : iterable of Invocation
    epsilon : float
    databases : sequence of int, optional
        The k databases of the uniform prior (default: those with invocations).
    order : {"given", "strongest-first", "weakest-first", "best"}
        See :class:`SubsamplingCurve`.

    Returns
    -------
    SubsamplingResult

    References
    ----------
    001 Sec. V-B ("General derivation for the example using subsampling"),
    Thm. 3 and App. C, made sound by joint convexity (docs/design.md, "Unsound formulas"); BBG18 Thm. 8.

    Examples
    --------
    >>> from gce.accounting.guarantees import PureDP
    >>> from gce.model import Invocation
    >>> r = subsampling_delta([Invocation(d, PureDP(1.0)) for d in range(3)], 1.0)
    >>> round(r.delta, 4), r.order, [round(t.weight, 4) for t in r.terms]
    (0.1883, (0, 1, 2), [0.5714, 0.2857, 0.1429])
    """
    return SubsamplingCurve(invocations, databases, order).at_epsilon(epsilon)

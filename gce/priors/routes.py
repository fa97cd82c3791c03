"""Routes for composite hypotheses: each way to the privacy curve of two priors is one row (001, Sec. V-B).

A route is to composite hypotheses what a solver (:class:`gce.solvers.base.Solver`)
is to the worst-pair search and a theorem (:class:`gce.accounting.theorems.Theorem`)
to composition: it states what it takes (:meth:`Route.accepts`, with its
limits as class attributes), whether its answer is exact, and why it declines
(:class:`Decline`). :func:`gce.solving.solve` walks :data:`ROUTES` in order,
keeps every answer, returns the tightest (exact answers first) and writes each
decline into the report's notes. Adding a route is adding a row.

* :class:`IdenticalRoute`: h0 and h1 the same prior: 0, exactly;
* :class:`ExactRoute`: the two-sided hockey-stick divergence between the two
  mixtures of canonical products (:func:`gce.priors.exact.exact_curve`: the
  methods of :data:`gce.priors.exact.EXACT_METHODS`, counting then enumeration);
* :class:`CouplingRoute`: the best coupling of h0 and h1, joint convexity
  (:class:`gce.priors.coupling.CouplingCurve`; the sound replacement in docs/design.md, "Unsound formulas" of
  001's averaging formula);
* :class:`AllocationRoute`: "in none" against "in exactly k", Gaussian mechanisms, or one Laplace, (eps,
  delta) or subsampled mechanism per database (random allocation:
  :func:`gce.priors.allocation.allocation_curve`, a certified bracket), and against a rates prior or
  uniform(min, max) without constraints (Poisson subsampling: :func:`~gce.priors.allocation.poisson_curve`,
  :func:`~gce.priors.allocation.uniform_curve`, certified brackets);
* :class:`SubsamplingRoute`: "none vs at least one" as amplification by
  subsampling (:class:`gce.priors.subsampling.SubsamplingCurve`; 001 Thm. 3 in
  the convexity form);
* :class:`WorstPairRoute`: the worst pair of point masses over the supports
  (001 Thm. 1 and joint convexity), always valid; the pairs are searched by the
  caller (the solvers sit above the priors), given through :class:`RouteContext`.

Once a route has answered exactly, the routes that are not exact are not run
(an exact answer is the tightest); the worst pair is still searched, for the
report's baseline.

What must never change: a route's answer is a valid upper bound on the curve
of the two priors in both directions (001 Def. 3), and ``exact`` only when it
is the curve itself.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from ..accounting.curves import PrivacyCurve
from ..accounting import kinds
from ..accounting.theorems import compose
from ..errors import InvalidParameterError, NumericalLimitError, UnsupportedCombinationError
from ..model import Scenario
from . import exact as exact_module
from .coupling import CouplingCurve
from ..distributions import Distribution
from ..hypotheses import SUPPORT_LIMIT, Point, Rates, Uniform
from .subsampling import SubsamplingCurve
from . import allocation as allocation_module
from .. import effort
from ..validation import shown

if TYPE_CHECKING:  # pragma: no cover
    from ..report import Report

__all__ = ["Route", "Decline", "RouteAnswer", "RouteContext", "WorstPair", "IdenticalRoute", "ExactRoute", "CouplingRoute",
           "AllocationRoute", "SubsamplingRoute", "WorstPairRoute", "ROUTES", "attempt", "none_vs_any"]


@dataclass(frozen=True)
class Decline:
    """Why a route gave no answer for a scenario (a limit, an unsupported guarantee, a prior it does not take).

    The report's note is ``f"{route.declined}: {reason}"``, unless ``quiet`` (a route that applies only to
    a special case, declining every other scenario, says nothing).
    """

    reason: str
    quiet: bool = False


@dataclass(frozen=True)
class RouteAnswer:
    """A route's curve for the two priors: ``name`` as the report shows it (its ``theorem``), and
    ``exact`` when the curve is the exact one (001 Def. 3), not only an upper bound.

    ``lower``, when given, is a certified lower bound on the exact curve (``delta(eps)`` and
    ``epsilon(delta)`` never above the truth): the report then carries the bracket. ``note`` is what the
    report says about how the curve was computed (None: nothing).
    """

    name: str
    curve: PrivacyCurve
    exact: bool
    lower: object = None
    note: str | None = None


@dataclass(frozen=True)
class WorstPair:
    """The worst pair of point masses over covers of the supports (:func:`gce.solving._support_pairs`).

    ``report`` is the preset solve, ``preset`` its neighbourhood and ``cover``
    what the covers restrict (None when nothing: the scenario's own pairs).
    """

    report: "Report"
    preset: str
    cover: str | None


class RouteContext:
    """What a route sees: the scenario (with its hypotheses) and, on demand, shared work.

    Parameters
    ----------
    scenario : Scenario
        With ``hypotheses`` set.
    worst_pair : callable
        ``worst_pair() -> WorstPair``: the search of the worst pair over the
        supports, done by the caller (:func:`gce.solving.solve`); run at most
        once, when a route or the report first asks.
    target : (delta, epsilon), optional
        Where the answer is asked (one of them None); the scenario's own target by default.
    seconds_left : callable, optional
        Seconds left of the solve's time limit (routes that refine read the cap from
        :func:`gce.effort.current` instead, and stop only there).
    rtol : float
        The relative width of the certified bracket asked for (:data:`gce.effort.DEFAULT_RTOL`): routes
        that refine (random allocation, Poisson subsampling) refine until their bracket at the target is
        that narrow, whatever the time (the cap only stops them).
    """

    def __init__(self, scenario: Scenario, worst_pair: Callable[[], WorstPair],
                 target: tuple[float | None, float | None] | None = None,
                 seconds_left: Callable[[], float] | None = None, rtol: float = effort.DEFAULT_RTOL):
        self.scenario = scenario
        #: The relative width of the bracket asked for.
        self.rtol = effort.check_rtol(rtol)
        #: Seconds left of the solve's time budget (None: no budget), for routes that refine.
        self.seconds_left = seconds_left
        self._search = worst_pair
        self._worst_pair: WorstPair | None = None
        #: (delta, epsilon) the answer is asked at (one of them None): routes that refine to a
        #: requested accuracy refine there. Defaults to the scenario's own target.
        self.target = (scenario.delta, scenario.epsilon) if target is None else target

    @property
    def hypotheses(self):
        """The pair (h0, h1)."""
        return self.scenario.hypotheses

    def worst_pair(self) -> WorstPair:
        """The worst pair over the supports, searched on first use."""
        if self._worst_pair is None:
            self._worst_pair = self._search()
        return self._worst_pair


class Route(abc.ABC):
    """One way to the curve of two composite hypotheses.

    Class attributes
    ----------------
    name : str
        The route's name (its row in :data:`ROUTES`).
    exact : bool
        Whether its answer can be exact; routes that cannot are skipped once
        an exact answer is in hand.
    limits : mapping of str to number
        The sizes beyond which it declines (empty when it has none).
    declined : str
        How the report's note opens when it declines, e.g. ``"no coupling bound"``.
    declines : tuple of exception types
        Errors of :meth:`run` that mean "does not apply here" (a limit reached
        while computing): :func:`attempt` turns them into a :class:`Decline`.
        Other errors propagate.
    """

    name: ClassVar[str]
    exact: ClassVar[bool]
    limits: ClassVar[Mapping[str, float]]
    declined: ClassVar[str]
    declines: ClassVar[tuple[type[Exception], ...]] = ()

    @abc.abstractmethod
    def accepts(self, context: RouteContext) -> Decline | None:
        """None when the route applies to the scenario, else why not."""

    @abc.abstractmethod
    def run(self, context: RouteContext) -> RouteAnswer:
        """The route's curve (call only when :meth:`accepts` returned None)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def attempt(route: Route, context: RouteContext) -> RouteAnswer | Decline:
    """The route's answer, or why it declined (in :meth:`Route.accepts` or through :attr:`Route.declines`)."""
    decline = route.accepts(context)
    if decline is not None:
        return decline
    try:
        return route.run(context)
    except route.declines as error:
        return Decline(str(error))


def _index(databases: range | np.ndarray) -> slice | np.ndarray:
    """A group's databases as an index into a per-database array (a range as a slice)."""
    if isinstance(databases, range):
        return slice(databases.start, databases.stop if databases.stop >= 0 else None, databases.step)
    return databases


def none_vs_any(scenario: Scenario) -> bool:
    """h0 = in no database, h1 = uniform over the non-empty sets, no constraints, every database queried.

    The setting of 001 Thm. 3 and Cor. 7 (Sec. V-B), where the subsampling route applies.
    """
    h0, h1 = scenario.hypotheses
    if not (h0 == Point(()) and h1 == Uniform(1, None) and scenario.constraints.is_unconstrained):
        return False
    queried = np.zeros(scenario.n, dtype=bool)
    for group in scenario.table.groups:  # every database queried: marked group by group (a range in O(1))
        queried[_index(group.databases)] = True
    return bool(queried.all())


class IdenticalRoute(Route):
    """h0 and h1 are the same prior: every output has the same law under both, so the curve is 0 at every
    epsilon >= 0 (001 Def. 3: the hockey-stick divergence of a distribution from itself), exactly.

    Equal records are identical; two priors that list their supports (point, explicit) are identical when
    their distributions over the allowed sets are equal set for set and weight for weight.
    """

    name = "identical hypotheses"
    exact = True
    limits = MappingProxyType({})
    declined = "no identical-hypotheses answer"

    def accepts(self, context: RouteContext) -> Decline | None:
        """Declines unless h0 and h1 describe the same distribution."""
        h0, h1 = context.hypotheses
        if h0 == h1:
            return None
        if h0.listed and h1.listed:
            d0, d1 = (h.distribution(context.scenario.constraints) for h in (h0, h1))
            if dict(zip(d0.sets, d0.weights)) == dict(zip(d1.sets, d1.weights)):
                return None
        return Decline("h0 and h1 are different priors", quiet=True)

    def run(self, context: RouteContext) -> RouteAnswer:
        """The zero curve (the composition of nothing)."""
        return RouteAnswer(self.name, compose(()).curve, True)


class ExactRoute(Route):
    """The exact curve (:func:`gce.priors.exact.exact_curve`): 001 Def. 3 for (eps, delta) guarantees through
    their canonical pairs (002 eqs. 9-10, Thm. II.5). Its answer is exact when every guarantee is canonical
    (pure, approx, randomized response), else a valid bound through the guarantees' points."""

    name = "exact"
    exact = True
    limits = MappingProxyType({"enumeration cells": exact_module.ENUMERATION_CELL_LIMIT,
                               "count classes": exact_module.COUNT_LIMIT,
                               "count recursion cells": exact_module.RECURSION_LIMIT,
                               "support sets": SUPPORT_LIMIT})
    declined = "no exact computation"
    declines = (UnsupportedCombinationError, NumericalLimitError)

    def accepts(self, context: RouteContext) -> Decline | None:
        """Declines when an invocation has no (eps, delta) point (zCDP, GDP, Gaussian)."""
        try:
            exact_module.check_points(context.scenario.invocations, context.scenario.n)
        except UnsupportedCombinationError as error:
            return Decline(str(error))
        return None

    def run(self, context: RouteContext) -> RouteAnswer:
        """The first of :data:`gce.priors.exact.EXACT_METHODS` within its limits; named by its method."""
        h0, h1 = context.hypotheses
        curve = exact_module.exact_curve(h0, h1, context.scenario.invocations, context.scenario.constraints)
        return RouteAnswer(curve.method, curve, curve.exact)


class CouplingRoute(Route):
    """The best coupling of h0 and h1, every pair's composed curve at the same eps (joint convexity;
    :class:`gce.priors.coupling.CouplingCurve`; the sound replacement of 001 Sec. V-B's average: docs/design.md,
    "Unsound formulas")."""

    name = "coupling (joint convexity)"
    exact = False
    #: Largest |supp h0| x |supp h1| for which the coupling LP is set up.
    PAIR_LIMIT = 250_000
    limits = MappingProxyType({"pairs": PAIR_LIMIT, "support sets": SUPPORT_LIMIT})
    declined = "no coupling bound"
    declines = (NumericalLimitError, UnsupportedCombinationError)

    def _supports(self, context: RouteContext) -> tuple[Distribution, Distribution]:
        """Both priors as distributions over the allowed sets, refused beyond :attr:`PAIR_LIMIT` pairs."""
        d0, d1 = (h.distribution(context.scenario.constraints) for h in context.hypotheses)
        if len(d0) * len(d1) > self.PAIR_LIMIT:
            raise NumericalLimitError(f"{len(d0)} x {len(d1)} pairs exceed {self.PAIR_LIMIT:,}")
        return d0, d1

    def accepts(self, context: RouteContext) -> Decline | None:
        """Any guarantee kind and any priors; the limits are met while the supports are listed (:meth:`run`)."""
        return None

    def run(self, context: RouteContext) -> RouteAnswer:
        """The coupling curve of the two listed supports."""
        d0, d1 = self._supports(context)
        return RouteAnswer(self.name, CouplingCurve(d0, d1, context.scenario.invocations,
                                                        rtol=context.rtol), False)


class AllocationRoute(Route):
    """Random allocation (:mod:`gce.priors.allocation`): h0 = in no database against h1 = uniform over the
    allowed sets of exactly k members (or the two swapped: both directions are computed), every member's
    database running Gaussian (or GDP) mechanisms, or one Laplace, (epsilon, delta) (pure, approximate,
    randomized response: their canonical pairs, :class:`~gce.priors.allocation.CanonicalRatio`) or subsampled
    mechanism each. A certified bracket: the curve is a valid upper bound, :attr:`RouteAnswer.lower` a
    certified lower one. With (epsilon, delta) guarantees the exact route (counting or enumeration) usually
    answers exactly first, and this route is then not run (:func:`gce.solving.solve` skips the routes that are
    not exact once one is); it answers where that one declines or is not exact (subsampled (epsilon, delta)
    guarantees, which it takes through their amplified points only).

    Under constraints: for k = 1 the support is the allowed singletons (databases outside it hold the target
    under neither prior, so their outputs are alike and drop out); for k > 1 the constraints must allow every
    k-set (cardinality bounds over all databases), else it declines and the coupling or worst-pair routes
    answer. Databases of the support with different mu: the allocation with the largest mu bounds it above
    and the one with the smallest below (each database's Gaussian pair is a post-processing of one with a
    larger mu, the same map with and without the target).
    """

    name = "random allocation"
    exact = False
    limits = MappingProxyType({"grid points": allocation_module.GRID_LIMIT})
    declined = "no random-allocation bound"
    declines = (NumericalLimitError, UnsupportedCombinationError)

    @staticmethod
    def _members(context: RouteContext) -> int | None:
        """k when the priors are point([]) and uniform(min_members = max_members = k), either way round."""
        h0, h1 = context.hypotheses
        empty = Point(())
        other = h1 if h0 == empty else h0 if h1 == empty else None
        if not isinstance(other, Uniform) or other.max_members is None or other.min_members != other.max_members:
            return None
        return other.min_members if other.min_members >= 1 else None

    def _support(self, context: RouteContext, k: int) -> tuple[int, ...] | str:
        """The databases the k-sets range over, or why the route does not apply."""
        scenario = context.scenario
        constraints = scenario.constraints
        if k == 1:
            return tuple(i for i in range(scenario.n) if not constraints.violated(frozenset((i,))))
        h = Uniform(k, k)
        if h.log_size_weights(constraints) is None:
            return (f"with k = {k} members the constraints must allow every {k}-set (bounds on the number "
                    f"of databases over all of them); these do not")
        return tuple(range(scenario.n))

    @staticmethod
    def _other(context: RouteContext):
        """The prior that is not point([]) (either way round), or None when neither is."""
        h0, h1 = context.hypotheses
        empty = Point(())
        return h1 if h0 == empty else h0 if h1 == empty else None

    def accepts(self, context: RouteContext) -> Decline | None:
        """Declines other priors (quietly), mechanisms other than Gaussian / GDP or one Laplace, (epsilon,
        delta) or subsampled mechanism per database of one family (:meth:`_ratios`), constraints that break the exchangeability of k-sets (k > 1), and any
        constraint with a rates or uniform(min, max) prior."""
        k = self._members(context)
        other = self._other(context)
        product = isinstance(other, Rates) or (isinstance(other, Uniform) and k is None)
        if k is None and not product:
            return Decline("it takes h0 = point([]) against h1 = uniform(min_members = max_members = k), "
                           "uniform(min, max) or rates", quiet=True)
        gaussian = all(kinds.gdp_mu(g) is not None for g in context.scenario.table.kinds)
        if not gaussian:
            if product:  # quiet: the exact, coupling and subsampling routes take them
                return Decline("with a rates or uniform prior it takes Gaussian and GDP mechanisms", quiet=True)
            ratios = self._ratios(context)
            if isinstance(ratios, str):
                return Decline(ratios)
        if product:
            if not context.scenario.constraints.is_unconstrained:
                return Decline(f"with {other.describe()} it takes no constraints (the prior is then a product "
                               f"law: Poisson subsampling)")
            if isinstance(other, Rates) and len(other.rates) != context.scenario.n:
                return Decline(f"rates: {len(other.rates)} rates for {context.scenario.n} databases")
            return None
        support = self._support(context, k)
        if isinstance(support, str):
            return Decline(support)
        if len(support) < k:
            return Decline(f"fewer than {k} databases can hold the target")
        return None

    @staticmethod
    def _ratio(guarantee):
        """The likelihood ratio of one Laplace, (epsilon, delta) or subsampled (Gaussian, Laplace, (epsilon,
        delta)) mechanism's pair, or None (the kind's noise from :func:`gce.accounting.kinds.pld_noise`; a
        pure, approximate or randomized-response guarantee by its canonical pair, 002 eqs. 9-10, the worst
        case of its class, 002 Thm. II.5)."""
        rate, inner = kinds.sampling(guarantee)
        if kinds.is_canonical(inner):
            base = allocation_module.CanonicalRatio(*kinds.point(inner))
            return base if inner is guarantee else allocation_module.SubsampledRatio(base, rate)
        noise = kinds.pld_noise(guarantee)
        if noise is None:
            return None
        kind, scale, sensitivity, rate = noise
        if kind == "laplace":
            base = allocation_module.LaplaceRatio(sensitivity / scale)
        elif kind == "gaussian" and rate < 1.0:
            base = allocation_module.GaussianRatio(sensitivity / scale)
        else:
            return None
        return base if rate == 1.0 else allocation_module.SubsampledRatio(base, rate)

    def _ratios(self, context: RouteContext) -> list | str:
        """Per database, the ratio of its one Laplace, (epsilon, delta) or subsampled mechanism (None: no
        invocation), or why the route does not apply: one invocation per database, one family (Laplace,
        (epsilon, delta), or one of them or the Gaussian subsampled, one rate), so that the family's largest
        parameter dominates every database and the smallest is dominated (for (epsilon, delta) guarantees
        the largest epsilon and the largest delta, possibly of different databases: :meth:`_dominating`)."""
        scenario = context.scenario
        table = scenario.table
        counts = table.weights(scenario.n, np.ones(len(table.kinds)))
        if counts.max() > 1:
            return ("with Laplace, (epsilon, delta) or subsampled mechanisms it takes one invocation per "
                    "database (several do not combine into one mechanism of the family)")
        family = set()
        out: list = [None] * scenario.n
        for database, kind in zip(table.database.tolist(), table.kind.tolist()):
            try:
                ratio = self._ratio(table.kinds[kind])
            except InvalidParameterError as error:  # e.g. an epsilon beyond e^700
                return f"database {database}: {shown(table.kinds[kind])} is beyond the allocation's range ({error})"
            if ratio is None:
                return (f"it takes Gaussian, GDP, Laplace, (epsilon, delta) or subsampled (Gaussian, Laplace, "
                        f"(epsilon, delta)) mechanisms; {type(table.kinds[kind]).__name__} is not one")
            inner = getattr(ratio, "inner", ratio)
            family.add((type(inner).__name__, getattr(ratio, "rate", 1.0)))
            out[database] = ratio
        if len(family) > 1:
            return "it takes one mechanism family at one sampling rate across the databases"
        return out

    @staticmethod
    def _inner(ratio):
        """The mechanism's own ratio (a subsampled one's inner)."""
        return getattr(ratio, "inner", ratio)

    @classmethod
    def _parameter(cls, ratio) -> tuple[float, ...]:
        """The family's parameter: (epsilon, delta) of a canonical pair, epsilon of Laplace, mu of Gaussian."""
        inner = cls._inner(ratio)
        if isinstance(inner, allocation_module.CanonicalRatio):
            return inner.epsilon, inner.delta
        if isinstance(inner, allocation_module.LaplaceRatio):
            return (inner.epsilon,)
        return (inner.mu,)

    @classmethod
    def _extreme(cls, ratios: list, largest: bool):
        """The pair of the largest (``largest``) or the smallest parameters; for (epsilon, delta) the
        canonical pair of the largest (smallest) epsilon and delta, possibly of different databases, at the
        family's rate. The largest dominates every ratio, the smallest is dominated by every one: every
        (e, d)-DP pair is a post-processing of the canonical pair of (e1, d1) when e <= e1 and d <= d1
        (Kairouz, Oh and Viswanath 2015 Thm. 2.1), and within the other families the parameter orders
        the pairs."""
        pick, reduce = (max, np.max) if largest else (min, np.min)
        chosen = pick(ratios, key=cls._parameter)
        inner = cls._inner(chosen)
        if not isinstance(inner, allocation_module.CanonicalRatio):
            return chosen
        pair = allocation_module.CanonicalRatio(*reduce([cls._parameter(r) for r in ratios], axis=0).tolist())
        return pair if chosen is inner else allocation_module.SubsampledRatio(pair, chosen.rate)

    @classmethod
    def _dominating(cls, ratios: list):
        """A pair that dominates every ratio (:meth:`_extreme`, largest)."""
        return cls._extreme(ratios, largest=True)

    @classmethod
    def _dominated(cls, ratios: list):
        """A pair that every ratio dominates (:meth:`_extreme`, smallest)."""
        return cls._extreme(ratios, largest=False)

    @staticmethod
    def _mus(context: RouteContext) -> np.ndarray:
        """Each database's combined mu (several Gaussians on one database: sqrt(sum mu_i^2))."""
        scenario = context.scenario
        table = scenario.table
        with np.errstate(over="ignore"):  # sigma near 1e-300: mu^2 = inf, the output reveals the target
            mu_squared = np.array([kinds.gdp_mu(g) for g in table.kinds], dtype=float) ** 2
        return np.sqrt(table.weights(scenario.n, mu_squared))

    def run(self, context: RouteContext) -> RouteAnswer:
        """The allocation curve of the support's k-sets at the largest mu, bracketed below at the smallest;
        for a rates prior the composition of the databases' subsampled Gaussians
        (:func:`gce.priors.allocation.poisson_curve`), for uniform(min, max) its rate-1/2 bound
        (:func:`gce.priors.allocation.uniform_curve`). Each refines to the bracket width ``context.rtol``
        (only the time limit, :func:`gce.effort.current`, stops it sooner, and says so)."""
        delta, epsilon = context.target
        rtol = context.rtol
        other = self._other(context)
        k = self._members(context)
        if k is not None and not all(kinds.gdp_mu(g) is not None for g in context.scenario.table.kinds):
            return self._run_family(context, k, self._support(context, k), delta, epsilon)
        mus = self._mus(context)
        if isinstance(other, Rates):
            pairs = {}
            for mu, rate in zip(mus.tolist(), other.rates):
                pairs[(mu, rate)] = pairs.get((mu, rate), 0) + 1
            curve = allocation_module.poisson_curve([(m, r, c) for (m, r), c in sorted(pairs.items())],
                                                    rtol=rtol, delta=delta, epsilon=epsilon)
            return RouteAnswer("Poisson subsampling (rates prior)", curve, False, lower=curve.lower,
                               note=curve.description)
        if k is None:
            curve = allocation_module.uniform_curve(mus.tolist(), other.min_members, other.max_members,
                                                    rtol=rtol, delta=delta, epsilon=epsilon)
            return RouteAnswer("Poisson subsampling at rate 1/2 (uniform prior)", curve, False,
                               lower=curve.lower, note=curve.description)
        support = self._support(context, k)
        per_database = mus[list(support)]
        high, low = float(per_database.max()), float(per_database.min())
        curve = allocation_module.allocation_curve(high, len(support), k, rtol=rtol, delta=delta, epsilon=epsilon)
        lower = curve.lower
        note = curve.description
        if low < high:
            lower = allocation_module.allocation_curve(low, len(support), k, rtol=rtol, delta=delta,
                                                       epsilon=epsilon).lower
            note += f"; below at the smallest mu {low:g}"
        return RouteAnswer(self.name, curve, False, lower=lower, note=note)


    def _run_family(self, context: RouteContext, k: int, support, delta, epsilon) -> RouteAnswer:
        """Laplace, (epsilon, delta) or subsampled mechanisms: the allocation of the family's largest parameter
        above, its smallest below (a database without an invocation: the trivial pair, W = 1, no lower)."""
        ratios = self._ratios(context)
        if isinstance(ratios, str):
            raise UnsupportedCombinationError(ratios)
        chosen = [ratios[i] for i in support]
        present = [r for r in chosen if r is not None]
        if not present:
            raise UnsupportedCombinationError("no database that can hold the target runs a mechanism")
        # The pair of the support's largest parameters dominates every database of the support.
        high = self._dominating(present)
        curve = allocation_module.allocation_curve(high, len(support), k, rtol=context.rtol, delta=delta,
                                                   epsilon=epsilon)
        lower, note = curve.lower, curve.description
        if len(present) < len(chosen):
            lower, note = None, note + "; a database without an invocation: no certified lower curve"
        else:
            low = self._dominated(present)
            if self._parameter(low) != self._parameter(high):
                lower = allocation_module.allocation_curve(low, len(support), k, rtol=context.rtol, delta=delta,
                                                           epsilon=epsilon).lower
                note += f"; below at the smallest ({low.label})"
        return RouteAnswer(self.name, curve, False, lower=lower, note=note)


class SubsamplingRoute(Route):
    """001 Thm. 3 in the convexity form (:class:`gce.priors.subsampling.SubsamplingCurve`): h0 = no database
    against h1 = uniform over the non-empty sets, as amplification by subsampling at rate 1/2."""

    name = "subsampling (001 Thm. 3, convexity form)"
    exact = False
    #: Most databases when some guarantee has only a curve (zCDP, GDP, Gaussian): each of the route's terms
    #: composes privacy-loss distributions (about half a second per database).
    CURVE_LIMIT = 32
    limits = MappingProxyType({"databases with curve-only guarantees": CURVE_LIMIT})
    declined = "no subsampling bound"
    declines = (UnsupportedCombinationError,)

    def accepts(self, context: RouteContext) -> Decline | None:
        """Declines unless the priors are "none vs at least one" (:func:`none_vs_any`), and beyond
        :attr:`CURVE_LIMIT` databases when a guarantee is known only by its curve."""
        scenario = context.scenario
        if not none_vs_any(scenario):
            return Decline("it takes h0 = in no database against h1 = uniform over the non-empty sets "
                           "(uniform(min_members=1)), without constraints, every database queried (001 Thm. 3)")
        curve_only = any(kinds.point(g) is None for g in scenario.table.kinds)
        if curve_only and scenario.n > self.CURVE_LIMIT:
            return Decline(f"with mechanisms known only by their curves it composes one privacy-loss "
                           f"distribution per database, limited to {self.CURVE_LIMIT} databases")
        return None

    def run(self, context: RouteContext) -> RouteAnswer:
        """The subsampling curve over all databases, in the order that gives the least."""
        scenario = context.scenario
        return RouteAnswer(self.name, SubsamplingCurve(scenario.invocations, tuple(range(scenario.n)),
                                                            rtol=context.rtol), False)


class WorstPairRoute(Route):
    """The worst pair of point masses over covers of the supports (001 Thm. 1 and joint convexity: every
    coupling of h0 and h1 puts its mass on pairs of their supports). Always valid, never exact."""

    name = "worst pair"
    exact = False
    limits = MappingProxyType({})
    declined = "no worst pair"

    def accepts(self, context: RouteContext) -> Decline | None:
        """Every scenario: the preset solvers take any constraints and guarantees."""
        return None

    def run(self, context: RouteContext) -> RouteAnswer:
        """The pair searched by the caller (:meth:`RouteContext.worst_pair`), named with its neighbourhood
        and theorem."""
        pair = context.worst_pair()
        over = "" if pair.cover is None else " over the supports"
        return RouteAnswer(f"worst pair{over} ({pair.preset}, {pair.report.theorem})", pair.report.curve, False)


#: The routes, in the order they are tried and their declines reported.
ROUTES: tuple[Route, ...] = (IdenticalRoute(), ExactRoute(), AllocationRoute(), CouplingRoute(), SubsamplingRoute(),
                             WorstPairRoute())

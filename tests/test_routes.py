"""The routes for composite hypotheses (gce.priors.routes): one contract, answers against brute force.

Every route in ROUTES states its name, limits and exactness, answers or
declines with a reason; an answer is a valid upper bound on the exact curve of
the two priors (tests/reference.py ``mixture_delta``: naive enumeration over
canonical pairs, independent of gce), equal to it when the route says exact.
solve() walks the table: the reasons of the routes that declined are its
notes, the route it names won.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping

import pytest

import tiers

import gce.priors.routes as routes_module
import gce.solving as gce_solve
import reference
from gce.accounting.guarantees import ApproxDP, GaussianMechanism, LaplaceMechanism, PureDP
from gce.accounting.theorems import compose
from gce.constraints import AtMost, ConstraintSet, Exclusive
from gce.model import Invocation, Scenario, invocation_multiset
from gce.priors.hypotheses import Explicit, Point, Uniform
from gce.priors.routes import (
    ROUTES,
    AllocationRoute,
    CouplingRoute,
    Decline,
    ExactRoute,
    IdenticalRoute,
    Route,
    RouteAnswer,
    RouteContext,
    SubsamplingRoute,
    WorstPair,
    WorstPairRoute,
    attempt,
)
from gce.solving import solve

POOL = [(0.2, 0.0), (0.7, 0.0), (1.5, 0.0), (0.4, 1e-3), (1.0, 0.02)]


def context(scenario: Scenario, epsilon: float = 1.0) -> RouteContext:
    """A route context whose worst pair is searched as solve() does (over covers of the supports)."""
    def worst_pair() -> WorstPair:
        restricted, preset, cover = gce_solve._support_pairs(scenario)
        return WorstPair(solve(restricted, epsilon=epsilon), preset, cover)
    return RouteContext(scenario, worst_pair)


def random_instance(rng: random.Random, none_vs_any: bool = False):
    """A small scenario over canonical guarantees, and its (database, eps, delta) list for the reference."""
    n = rng.randint(2, 4)
    invocations, flat = [], []
    for db in range(n):
        eps, delta = rng.choice(POOL)
        invocations.append(Invocation(db, PureDP(eps) if delta == 0 else ApproxDP(eps, delta)))
        flat.append((db, eps, delta))
    if none_vs_any:
        return Scenario(n, tuple(invocations), hypotheses=(Point(()), Uniform(1))), flat
    constraints = ConstraintSet(n, rng.choice([(), (AtMost(rng.randint(1, n)),), (Exclusive((0, 1)),)]))
    allowed = list(constraints.allowed_sets())

    def explicit():
        support = rng.sample(allowed, rng.randint(1, min(5, len(allowed))))
        weights = [rng.random() + 0.05 for _ in support]
        return Explicit(tuple(support), tuple(w / sum(weights) for w in weights))

    return Scenario(n, tuple(invocations), constraints, hypotheses=(explicit(), explicit())), flat


def brute(scenario: Scenario, flat, eps: float) -> float:
    h0, h1 = (list(h.distribution(scenario.constraints)) for h in scenario.hypotheses)
    return reference.mixture_delta(h0, h1, flat, eps)


# ---------------------------------------------------------------------------
# The contract every row keeps


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: type(r).__name__)
def test_every_route_declares_name_limits_exactness_and_its_decline(route):
    assert isinstance(route, Route)
    assert isinstance(route.name, str) and route.name
    assert isinstance(route.exact, bool)
    assert isinstance(route.limits, Mapping)
    assert all(isinstance(k, str) and v > 0 for k, v in route.limits.items())
    assert isinstance(route.declined, str) and route.declined.startswith("no ")
    assert all(issubclass(e, Exception) for e in route.declines)
    assert callable(route.accepts) and callable(route.run)


#: The routes for two different priors (the identical-hypotheses row declines them quietly; the
#: random-allocation row takes only "none" against "exactly k" with Gaussian mechanisms, and has its own
#: tests against quadrature in test_allocation.py).
GENERAL = tuple(route for route in ROUTES if not isinstance(route, (IdenticalRoute, AllocationRoute)))


def test_the_table_holds_each_route_once_exact_first_and_the_worst_pair_last():
    assert [type(r) for r in ROUTES] == [IdenticalRoute, ExactRoute, AllocationRoute, CouplingRoute, SubsamplingRoute,
                                         WorstPairRoute]
    assert len({r.name for r in ROUTES}) == len(ROUTES)
    assert [r.exact for r in ROUTES] == [True, True, False, False, False, False]
    assert CouplingRoute.limits["pairs"] == CouplingRoute.PAIR_LIMIT == 250_000
    assert SubsamplingRoute.limits["databases with curve-only guarantees"] == SubsamplingRoute.CURVE_LIMIT == 32


# ---------------------------------------------------------------------------
# Every answer is sound; exact answers are the truth


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("none_vs_any", [False, True])
def test_each_accepting_route_bounds_the_brute_force_curve(seed, none_vs_any):
    rng = random.Random(700 + seed)
    scenario, flat = random_instance(rng, none_vs_any)
    for eps in (0.3, 1.0):
        truth = brute(scenario, flat, eps)
        ctx = context(scenario, eps)
        outcomes = {type(route): attempt(route, ctx) for route in ROUTES}
        # Canonical guarantees on small supports: every route answers here, the subsampling route only
        # for "none vs at least one".
        declined = {t for t, o in outcomes.items() if isinstance(o, Decline)}
        # (the random-allocation row takes "none" against "exactly k" with Gaussian mechanisms only)
        assert declined == ({IdenticalRoute, AllocationRoute} if none_vs_any
                            else {IdenticalRoute, AllocationRoute, SubsamplingRoute})
        for route_type, outcome in outcomes.items():
            if isinstance(outcome, Decline):
                continue
            value = float(outcome.curve.delta(eps))
            assert truth <= value * (1 + 1e-9) + 1e-12, (route_type, truth, value)
            if outcome.exact:
                assert route_type.exact and value == pytest.approx(truth, rel=1e-9, abs=1e-12)
        assert outcomes[ExactRoute].exact  # pure / approx guarantees: the exact route is exact
        assert not any(o.exact for t, o in outcomes.items() if t is not ExactRoute and t not in declined)


def test_bound_routes_are_strictly_above_the_exact_route_where_it_matters():
    """None vs at least one, 4 pure 1.0 databases: the worst pair composes all 4 (delta 0.73 at eps 1),
    the exact curve is far lower; the coupling and subsampling routes lie in between."""
    scenario = Scenario(4, tuple(Invocation(i, PureDP(1.0)) for i in range(4)), hypotheses=(Point(()), Uniform(1)))
    flat = [(i, 1.0, 0.0) for i in range(4)]
    ctx = context(scenario, 1.0)
    values = {type(r): float(attempt(r, ctx).curve.delta(1.0)) for r in GENERAL}
    truth = brute(scenario, flat, 1.0)
    assert values[ExactRoute] == pytest.approx(truth, rel=1e-9)
    assert values[WorstPairRoute] == pytest.approx(reference.exact_delta([(1.0, 0.0)] * 4, 1.0), rel=1e-9)
    for bound in (CouplingRoute, SubsamplingRoute):
        assert truth < values[bound] <= values[WorstPairRoute] + 1e-12


# ---------------------------------------------------------------------------
# Declines: reasons, in the report


def test_every_decline_has_a_reason_and_the_report_gives_it():
    """Gaussian noise on 40 databases, none vs at least one: no (eps, delta) point for the exact route,
    2^40 sets for the coupling, more than 32 curve-only databases for the subsampling route."""
    n = 40
    scenario = Scenario(n, tuple(Invocation(i, GaussianMechanism(sigma=3.0)) for i in range(n)),
                        hypotheses=(Point(()), Uniform(1)), delta=1e-6)
    ctx = context(scenario)
    outcomes = [attempt(route, ctx) for route in GENERAL]
    assert [isinstance(o, Decline) for o in outcomes] == [True, True, True, False]
    report = solve(scenario)
    notes = [f"{route.declined}: {o.reason}" for route, o in zip(GENERAL, outcomes) if isinstance(o, Decline)]
    assert all(o.reason for o in outcomes[:3])
    assert "(epsilon, delta) point" in outcomes[0].reason and "limit" in outcomes[1].reason
    assert "limited to 32 databases" in outcomes[2].reason
    # In the table's order, right after the hypotheses line.
    assert list(report.notes[1:4]) == notes
    assert outcomes[3].name == "worst pair (unbounded, gaussian-dp)"
    # the allocation route (not in GENERAL) answers this prior as Poisson subsampling at rate 1/2, the
    # empty set's share 2^-40 taken out: below the worst pair
    assert report.theorem == "Poisson subsampling at rate 1/2 (uniform prior)"
    assert report.epsilon < report.baselines["worst pair"].epsilon
    assert not report.exact


def test_subsampling_declines_other_priors_with_its_reason():
    scenario = Scenario(3, tuple(Invocation(i, LaplaceMechanism(scale=1.0)) for i in range(3)),
                        hypotheses=(Point(()), Uniform(2)), delta=1e-6)
    outcome = attempt(GENERAL[2], context(scenario))
    assert isinstance(outcome, Decline) and "001 Thm. 3" in outcome.reason
    assert f"no subsampling bound: {outcome.reason}" in solve(scenario).notes


def test_an_exact_answer_skips_the_routes_that_cannot_be_exact():
    scenario = Scenario(6, tuple(Invocation(i, ApproxDP(0.5, 1e-8)) for i in range(6)),
                        hypotheses=(Point(()), Uniform(1)), delta=1e-6)
    report = solve(scenario)
    assert report.exact and report.theorem == "exact-count"
    assert not any(note.startswith(("no ", "coupling", "subsampling", "worst pair")) for note in report.notes)
    assert "worst pair" in report.baselines  # still searched, for the baseline


# ---------------------------------------------------------------------------
# Several routes answer: the report names the tightest


@tiers.parametrize("target", [{"delta": 1e-4}, {"epsilon": 1.0}], default=[1])  # the delta target: 1 s
def test_when_several_routes_answer_on_two_databases_the_report_names_the_tightest(target):
    """The fast twin of the next test (0.4 s, not 1.5 to 2.5 s): the same routes on two databases."""
    several_routes_answer(2, target)


@pytest.mark.slow
@pytest.mark.parametrize("target", [{"delta": 1e-4}, {"epsilon": 1.0}])
def test_when_several_routes_answer_the_report_names_the_tightest(target):
    several_routes_answer(4, target)


def several_routes_answer(n: int, target: dict) -> None:
    """Laplace noise: the exact route answers through the (eps, 0) point, not exactly, so every route
    competes; the report's theorem is the answer with the least epsilon (or delta), the others are notes."""
    scenario = Scenario(n, tuple(Invocation(i, LaplaceMechanism(scale=1.0 + 0.5 * i)) for i in range(n)),
                        hypotheses=(Point(()), Uniform(1)))
    ctx = context(scenario, target.get("epsilon", 1.0))
    answers = [attempt(route, ctx) for route in GENERAL]
    assert all(isinstance(a, RouteAnswer) and not a.exact for a in answers)
    if "delta" in target:
        values = [float(a.curve.epsilon(target["delta"])) for a in answers]
    else:
        values = [float(a.curve.delta(target["epsilon"])) for a in answers]
    best = min(range(len(answers)), key=values.__getitem__)
    report = solve(scenario, **target)
    assert report.theorem == answers[best].name and not report.exact
    assert (report.epsilon if "delta" in target else report.delta) == pytest.approx(values[best], rel=1e-9)
    losers = [a.name for i, a in enumerate(answers) if i != best]
    assert [n.split(":")[0] for n in report.notes if n.split(":")[0] in losers] == losers
    # The winner is below the worst pair: the priors help.
    assert values[best] < values[-1]


# ---------------------------------------------------------------------------
# Adding a route is adding a row


class _ClassicRoute(Route):
    """Every invocation composed: a valid bound for any priors (each pair's differing invocations are a
    sub-multiset of all of them; joint convexity)."""

    name = "classic (test row)"
    exact = False
    limits = {}
    declined = "no classic row"

    def accepts(self, context):
        return None

    def run(self, context):
        return RouteAnswer(self.name, compose(invocation_multiset(context.scenario.invocations)).curve, False)


class _NeverRoute(_ClassicRoute):
    name = "never (test row)"
    declined = "no test row"

    def accepts(self, context):
        return Decline("this row takes nothing")


def test_a_new_row_is_tried_and_reported(monkeypatch):
    monkeypatch.setattr(routes_module, "ROUTES", ROUTES + (_NeverRoute(), _ClassicRoute()))
    scenario = Scenario(3, tuple(Invocation(i, GaussianMechanism(sigma=2.0)) for i in range(3)),
                        hypotheses=(Explicit(({0}, {1, 2}), (0.5, 0.5)), Point((2,))), delta=1e-6)
    report = solve(scenario)
    assert "no test row: this row takes nothing" in report.notes
    classic = [n for n in report.notes if n.startswith("classic (test row): epsilon ")]
    assert len(classic) == 1 or report.theorem == "classic (test row)"
    assert math.isfinite(report.epsilon)
    assert report.epsilon <= compose(invocation_multiset(scenario.invocations)).epsilon(1e-6) + 1e-12


# ---------------------------------------------------------------------------
# Identical priors: 0, exactly


@tiers.parametrize("hypotheses", [
    (Point((1,)), Explicit(({1},), (1.0,))),
    (Point(()), Point(())),
    (Uniform(1), Uniform(1)),
    (Explicit(({0}, {1, 2}), (0.25, 0.75)), Explicit(({1, 2}, {0}), (0.75, 0.25))),  # same law, other order
], default=1)  # each case composes the Gaussian mix for the baselines (0.2-0.6 s): the others in the slow tier
def test_identical_priors_answer_zero_exactly(hypotheses):
    """Gaussian noise (no exact route) or (eps, delta) points: whatever the mechanisms, a prior against itself
    reveals nothing; before this row the answer was the coupling bound 0 with exact false."""
    invocations = (Invocation(0, GaussianMechanism(sigma=1.0)), Invocation(1, ApproxDP(0.5, 1e-7)),
                   Invocation(2, PureDP(2.0)))
    report = solve(Scenario(3, invocations, hypotheses=hypotheses, delta=1e-6))
    assert report.theorem == "identical hypotheses" and report.exact
    assert report.epsilon == 0.0 and report.delta == 1e-6
    assert float(report.curve.delta(0.0)) == 0.0
    assert not any(n.startswith(IdenticalRoute.declined) for n in report.notes)


def test_different_priors_are_declined_quietly():
    """Weights that differ by one part in 10^12 are different priors: the row declines, and says nothing."""
    h0 = Explicit(({0}, {1}), (0.5, 0.5))
    h1 = Explicit(({0}, {1}), (0.5 + 1e-12, 0.5 - 1e-12))
    scenario = Scenario(2, (Invocation(0, PureDP(1.0)), Invocation(1, PureDP(1.0))), hypotheses=(h0, h1),
                        delta=0.0)
    outcome = attempt(ROUTES[0], context(scenario))
    assert isinstance(outcome, Decline) and outcome.quiet
    report = solve(scenario)
    assert report.theorem != IdenticalRoute.name and 0.0 < report.epsilon < 1e-9
    assert not any(n.startswith(IdenticalRoute.declined) for n in report.notes)

"""solve() with composite hypotheses against brute force over mixtures of canonical products.

001 Def. 3 with priors h0, h1 over membership sets: the exact curve is the
two-sided hockey-stick divergence between the two mixtures (tests/reference.py
``mixture_delta``, naive and independent of gce). Every returned guarantee must
be sound; where ``exact`` is claimed it must match within 1e-9.
"""

from __future__ import annotations

import math
import random

import pytest

import gce.priors.exact
import reference
import tiers
from gce.constraints import AtMost, ConstraintSet, Exclusive
from gce.errors import InvalidParameterError, InvalidScenarioError, NumericalLimitError
from gce.accounting.guarantees import ApproxDP, PureDP
from gce.priors.hypotheses import Explicit, Point, Uniform
from gce.model import Invocation, Scenario
from gce.solving import solve

POOL = [(0.2, 0.0), (0.7, 0.0), (1.5, 0.0), (0.4, 1e-3), (1.0, 0.02)]


def random_instance(rng: random.Random):
    n = rng.randint(2, 5)
    invocations, flat = [], []
    for db in range(n):
        for _ in range(rng.choice([1, 1, 2])):
            if len(flat) >= 8:
                break
            eps, delta = rng.choice(POOL)
            invocations.append(Invocation(db, PureDP(eps) if delta == 0 else ApproxDP(eps, delta)))
            flat.append((db, eps, delta))
    constraints = ConstraintSet(n, rng.choice([(), (AtMost(rng.randint(1, n)),), (Exclusive((0, 1)),)]))
    allowed = list(constraints.allowed_sets())

    def explicit():
        support = rng.sample(allowed, rng.randint(1, min(8, len(allowed))))
        weights = [rng.random() + 0.05 for _ in support]
        total = sum(weights)
        return Explicit(tuple(support), tuple(w / total for w in weights))

    h0 = explicit() if rng.random() < 0.7 else Point(())
    h1 = explicit() if rng.random() < 0.8 else Uniform(1)
    return Scenario(n, tuple(invocations), constraints, hypotheses=(h0, h1)), flat


def pairs(h, constraints):
    return list(h.distribution(constraints))


def brute(scenario, flat, eps):
    h0, h1 = (pairs(h, scenario.constraints) for h in scenario.hypotheses)
    return reference.mixture_delta(h0, h1, flat, eps)


@tiers.parametrize("seed", range(60), default=10)
def test_composite_guarantees_are_sound_and_exact_where_claimed(seed):
    rng = random.Random(1000 + seed)
    scenario, flat = random_instance(rng)
    for eps in (0.0, 0.5, 1.7):
        report = solve(scenario, epsilon=eps)
        truth = brute(scenario, flat, eps)
        assert truth <= report.delta * (1 + 1e-9) + 1e-12
        if report.exact:
            assert report.delta == pytest.approx(truth, rel=1e-9, abs=1e-12)
    report = solve(scenario, delta=0.05)
    if math.isfinite(report.epsilon):
        assert brute(scenario, flat, report.epsilon) <= 0.05 * (1 + 1e-9)


@tiers.parametrize("seed", range(20), default=5)
def test_without_the_exact_route_the_answer_is_still_sound(seed, monkeypatch):
    def unavailable(*args, **kwargs):
        raise NumericalLimitError("disabled for this test")

    monkeypatch.setattr(gce.priors.exact, "exact_curve", unavailable)
    rng = random.Random(5000 + seed)
    scenario, flat = random_instance(rng)
    report = solve(scenario, epsilon=0.5)
    # Only identical priors (drawn now and then, e.g. point({}) against explicit({}: 1)) are still exact: 0.
    assert not report.exact or (report.theorem == "identical hypotheses" and report.delta == 0.0)
    assert report.theorem != "exact-count"
    assert brute(scenario, flat, 0.5) <= report.delta * (1 + 1e-9) + 1e-12


def test_design_counterexample_one_is_answered_soundly():
    # docs/design.md, "Unsound formulas": db 0 runs (0, 0.1)-DP, db 1 pure 5-DP; h0 = {}, h1 = 1/2 {0} + 1/2 {1}.
    # The averaging formula claims (4.3136, 0.05); the exact delta there is 0.0743.
    scenario = Scenario(2, (Invocation(0, ApproxDP(0.0, 0.1)), Invocation(1, PureDP(5.0))),
                        hypotheses=(Point(()), Explicit(({0}, {1}), (0.5, 0.5))))
    report = solve(scenario, epsilon=4.3136)
    assert report.exact and report.delta == pytest.approx(0.0743299, abs=1e-6)
    assert report.delta > 0.05


def test_design_counterexample_two_is_answered_soundly():
    # Pure 5-DP on each of three databases; h0 = 1/2 {0} + 1/2 {1,2}, h1 = 1/2 {} + 1/2 {1,2}:
    # the averaging formula claims pure DP at 4.3136, the exact delta there is 0.243.
    scenario = Scenario(3, tuple(Invocation(i, PureDP(5.0)) for i in range(3)),
                        hypotheses=(Explicit(({0}, {1, 2}), (0.5, 0.5)), Explicit(((), {1, 2}), (0.5, 0.5))))
    report = solve(scenario, epsilon=4.3136)
    assert report.exact and report.delta == pytest.approx(0.2433441, abs=1e-6)


def test_none_vs_at_least_one_beats_the_point_mass_worst_case():
    scenario = Scenario(10, tuple(Invocation(i, ApproxDP(0.5, 1e-8)) for i in range(10)),
                        hypotheses=(Point(()), Uniform(1)), delta=1e-6)
    report = solve(scenario)
    assert report.exact and report.theorem == "exact-count"
    assert report.epsilon < 0.6 * report.baselines["worst pair"].epsilon


def test_invalid_priors_name_the_field():
    cs = ConstraintSet(3, (AtMost(1),))
    inv = tuple(Invocation(i, PureDP(1.0)) for i in range(3))
    with pytest.raises(InvalidParameterError, match=r"^hypotheses\.h1\.support\[0\]"):
        Scenario(3, inv, cs, hypotheses=(Point(()), Explicit(({0, 1},), (1.0,))))
    with pytest.raises(InvalidParameterError, match=r"^hypotheses\.h0\.members"):
        Scenario(3, inv, cs, hypotheses=(Point((0, 2)), Uniform(1)))
    with pytest.raises(InvalidScenarioError, match=r"^hypotheses\.h1"):
        solve(Scenario(3, inv, cs, hypotheses=(Point(()), Uniform(2)), delta=1e-6))
    with pytest.raises(InvalidParameterError, match=r"min_members"):
        Uniform(3, 2)
    with pytest.raises(InvalidParameterError, match=r"weights"):
        Explicit(({0}, {1}), (0.5, 0.6))


@tiers.parametrize("seed", range(12), default=4)
def test_none_vs_any_bound_routes_are_sound_and_beat_the_worst_pair(seed, monkeypatch):
    def unavailable(*args, **kwargs):
        raise NumericalLimitError("disabled for this test")

    monkeypatch.setattr(gce.priors.exact, "exact_curve", unavailable)
    rng = random.Random(9000 + seed)
    k = rng.randint(2, 5)
    points = [rng.choice(POOL) for _ in range(k)]
    invocations = tuple(Invocation(i, PureDP(e) if d == 0 else ApproxDP(e, d)) for i, (e, d) in enumerate(points))
    scenario = Scenario(k, invocations, hypotheses=(Point(()), Uniform(1)))
    h1 = [(s, 1 / (2 ** k - 1)) for s in ConstraintSet(k).allowed_sets() if s]
    flat = [(i, e, d) for i, (e, d) in enumerate(points)]
    for eps in (0.3, 1.0):
        report = solve(scenario, epsilon=eps)
        assert report.theorem.startswith(("coupling", "subsampling"))
        truth = reference.mixture_delta([(frozenset(), 1.0)], h1, flat, eps)
        assert truth <= report.delta * (1 + 1e-9) + 1e-12
        assert report.delta <= report.baselines["worst pair"].delta + 1e-12

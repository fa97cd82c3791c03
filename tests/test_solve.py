"""solve() against brute force over every allowed pair, on random small scenarios.

For each allowed pair of membership sets the differing invocations' exact
composition is computed from canonical pairs (reference.exact_delta for few
invocations, the exact enumeration already checked against it otherwise); the
worst case over pairs is the exact HDP curve (001 Thm. 1; docs/design.md, "The worst-case search").
"""

from __future__ import annotations

import itertools
import math
import random

import pytest

import reference
import tiers
from gce.constraints import AtMost, Conflicts, ConstraintSet, Exclusive, Patterns, Together
from gce.errors import InvalidParameterError
from gce.accounting.guarantees import ApproxDP, PureDP
from gce.model import Invocation, Scenario
from gce.solving import solve
from gce.accounting.theorems import canonical_composition

POOL = [(0.1, 0.0), (0.5, 0.0), (1.0, 0.0), (0.3, 1e-4), (0.8, 1e-3)]


def guarantee(point):
    return PureDP(point[0]) if point[1] == 0 else ApproxDP(*point)


def random_scenario(rng: random.Random, identical: bool) -> Scenario:
    n = rng.randint(2, 6)
    kinds = [rng.choice(POOL)] if identical else rng.sample(POOL, rng.randint(2, 3))
    invocations = []
    for db in range(n):
        for _ in range(rng.randint(1, 2)):
            invocations.append(Invocation(db, guarantee(rng.choice(kinds)), repeat=rng.choice([1, 1, 2])))
    group = rng.sample(range(n), rng.randint(2, n))
    kind = rng.choice(["at_most", "exclusive", "together", "conflicts", "patterns", "mixed"])
    cons = {
        "at_most": [AtMost(rng.randint(1, n - 1))],
        "exclusive": [Exclusive(tuple(group))],
        "together": [Together(tuple(group[:2]))],
        "conflicts": [Conflicts(tuple(itertools.combinations(group[:3], 2)))],
        "patterns": [Patterns(tuple({frozenset(rng.sample(range(n), rng.randint(1, n))) for _ in range(3)}))],
        "mixed": [AtMost(rng.randint(1, n - 1)), Together(tuple(group[:2])), Conflicts(((group[0], group[-1]),))]
        if group[0] != group[-1] and len(group) > 2 else [AtMost(1)],
    }[kind]
    return Scenario(n, tuple(invocations), ConstraintSet(n, tuple(cons)),
                    neighborhood=rng.choice(["unbounded", "bounded"]), delta=rng.choice([1e-3, 0.05]))


def pair_points(scenario, b0, b1):
    diff = b0 ^ b1
    return sorted((inv.guarantee.epsilon, getattr(inv.guarantee, "delta", 0.0))
                  for inv in scenario.invocations if inv.database in diff for _ in range(inv.repeat))


def exact_delta(points, eps):
    if len(points) <= 6:
        return reference.exact_delta(points, eps)
    return float(canonical_composition([(e, d, 1) for e, d in points]).delta(eps))


def allowed_pairs(scenario):
    sets = list(scenario.constraints.allowed_sets())
    if scenario.neighborhood == "unbounded":
        return [(frozenset(), s) for s in sets]
    return [(a, b) for a in sets for b in sets]


@tiers.parametrize("seed", range(320), default=24)
def test_solve_is_sound_and_exact_against_brute_force(seed):
    rng = random.Random(seed)
    identical = seed % 2 == 0
    scenario = random_scenario(rng, identical)
    report = solve(scenario)
    distinct = {tuple(p) for p in {tuple(pair_points(scenario, *pr)) for pr in allowed_pairs(scenario)}}
    if math.isfinite(report.epsilon):
        worst = max(exact_delta(list(p), report.epsilon) for p in distinct)
        assert worst <= scenario.delta * (1 + 1e-9) + 1e-15  # sound
    else:  # infinite only when some pair's floor exceeds the target
        assert any(1 - math.prod(1 - d for _, d in p) > scenario.delta for p in distinct)
    optimum = max(float(canonical_composition([(e, d, 1) for e, d in p]).epsilon(scenario.delta)) for p in distinct)
    if identical:
        assert report.exact
    if report.exact:
        assert report.epsilon == pytest.approx(optimum, rel=1e-6, abs=1e-9)
    assert report.epsilon >= optimum * (1 - 1e-9)
    assert report.witness_epsilon <= report.epsilon * (1 + 1e-9)


def test_hospitals_example_by_hand():
    # 001 Sec. V-A Example 1: 1,000 hospitals, one (0.05, 1e-10) query each, at most 365 per patient.
    inv = tuple(Invocation(i, ApproxDP(0.05, 1e-10)) for i in range(1000))
    cs = ConstraintSet(1000, (AtMost(365),))
    unb = solve(Scenario(1000, inv, cs, delta=1e-6))
    bnd = solve(Scenario(1000, inv, cs, neighborhood="bounded", delta=1e-6))
    k365 = canonical_composition([(0.05, 1e-10, 365)]).epsilon(1e-6)
    k730 = canonical_composition([(0.05, 1e-10, 730)]).epsilon(1e-6)
    assert unb.epsilon == pytest.approx(k365) and unb.exact and len(unb.differing) == 365
    assert bnd.epsilon == pytest.approx(k730) and bnd.exact and len(bnd.differing) == 730
    assert unb.baselines["classic"].epsilon == pytest.approx(canonical_composition([(0.05, 1e-10, 1000)]).epsilon(1e-6))


def test_infeasible_target_says_why():
    inv = tuple(Invocation(i, ApproxDP(0.1, 1e-7)) for i in range(400))
    report = solve(Scenario(400, inv, ConstraintSet(400, (AtMost(365),)), delta=1e-6))
    assert math.isinf(report.epsilon)
    assert any("no finite epsilon" in n for n in report.notes)
    assert report.to_dict()["epsilon"] == "inf"


def test_parallel_baseline_for_pure_guarantees():
    # 000 Cor. IV.13: bounded DP over disjoint parts: max over i != j of eps_i + eps_j.
    eps = [0.3, 1.0, 0.2, 0.7]
    inv = tuple(Invocation(i, PureDP(e)) for i, e in enumerate(eps))
    cs = ConstraintSet(4, (Exclusive((0, 1, 2, 3)),))
    report = solve(Scenario(4, inv, cs, neighborhood="bounded", delta=0.0))
    assert report.epsilon == pytest.approx(1.7) and report.exact
    assert report.baselines["parallel"].epsilon == pytest.approx(2 * 1.0)


@pytest.mark.parametrize(
    "kwargs,field",
    [
        (dict(delta=1e-6, epsilon=1.0), "delta"),
        (dict(delta=1.5), "delta"),
        (dict(neighborhood="sideways"), "neighborhood"),
    ],
)
def test_scenario_errors_name_the_field(kwargs, field):
    inv = (Invocation(0, PureDP(1.0)),)
    with pytest.raises(InvalidParameterError) as info:
        Scenario(2, inv, **kwargs)
    assert info.value.field == field


def test_unknown_database_names_the_invocation():
    with pytest.raises(InvalidParameterError) as info:
        Scenario(2, (Invocation(0, PureDP(1.0)), Invocation(5, PureDP(1.0))))
    assert info.value.field == "invocations[1].databases"


def test_dominance_chain_orders_by_implication():
    from gce.accounting.guarantees import LaplaceMechanism, Subsampled
    from gce.solving import _dominance_chain

    sub = Subsampled(0.5, LaplaceMechanism(2.0))  # (ln(1 + (e^0.5 - 1)/2), 0) = (0.2812, 0)
    # sub implies pure 0.5, so it goes first; pure 0.2 does not imply sub's curve, and sub does not imply it.
    assert _dominance_chain([PureDP(0.5), sub]) == [sub, PureDP(0.5)]
    assert _dominance_chain([PureDP(0.2), sub]) is None
    # (0.1, 1e-6) and (0.5, 0) are incomparable: no chain.
    assert _dominance_chain([ApproxDP(0.5, 1e-6), PureDP(0.5), ApproxDP(0.1, 1e-6)]) is None
    assert _dominance_chain([PureDP(0.1), ApproxDP(0.5, 1e-6)]) == [PureDP(0.1), ApproxDP(0.5, 1e-6)]


def test_concrete_and_point_guarantees_meet_in_the_chain_bound():
    from gce.accounting.guarantees import LaplaceMechanism, Subsampled

    sub = Subsampled(0.5, LaplaceMechanism(2.0))
    invocations = (Invocation(0, sub), Invocation(1, PureDP(0.5), repeat=2), Invocation(2, sub))
    scenario = Scenario(3, invocations, ConstraintSet(3, (Exclusive((0, 1)),)), delta=1e-6)
    report = solve(scenario)
    # The worst pair is {} vs {1, 2}: two pure 0.5 and one sub (pure 0.2812); all three composed is 1.5625.
    assert report.witness == (frozenset(), frozenset({1, 2}))
    assert report.epsilon <= 1.0 + math.log1p(0.5 * math.expm1(0.5)) + 1e-12
    assert report.epsilon < report.baselines["classic"].epsilon - 0.25


def test_bounded_pairs_with_subsampled_noise_use_symmetric_points():
    from gce.errors import UnsupportedCombinationError
    from gce.accounting.guarantees import GaussianMechanism, LaplaceMechanism, Subsampled

    sub = Subsampled(0.5, LaplaceMechanism(2.0))  # pure ln(1 + (e^0.5 - 1)/2) = 0.28093 in both directions
    inv = (Invocation(0, sub), Invocation(1, sub), Invocation(2, PureDP(0.3)))
    report = solve(Scenario(3, inv, neighborhood="bounded", delta=0.0))
    assert report.epsilon == pytest.approx(2 * math.log1p(0.5 * math.expm1(0.5)) + 0.3, rel=1e-9)
    assert not report.exact and any("composed through its point" in n for n in report.notes)
    with pytest.raises(UnsupportedCombinationError, match="bounded"):
        solve(Scenario(1, (Invocation(0, Subsampled(0.5, GaussianMechanism(2.0))),), neighborhood="bounded",
                       delta=1e-6))

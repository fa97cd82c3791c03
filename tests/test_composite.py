"""Exact curves between composite hypotheses, checked against brute force and hand-derived formulas.

References used here share nothing with ``gce.priors.exact``: ``tests/reference.py``
enumerates every output tuple of the canonical pairs (002 eqs. 9-10) and mixes
the product distributions; Cor. 7 of 001 and the counterexamples of docs/design.md, "Unsound formulas" are
written out by hand; the product-prior reference below is a separate trinomial
sum.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

import tiers
from gce.priors.exact import (
    CompositeCurve,
    _geometric_law,
    _geometric_tables,
    _symmetric_sums,
    database_pair,
    exact_count_curve,
    exact_curve,
    exact_enumeration_curve,
)
from gce.constraints import AtMost, ConstraintSet, Exclusive
from gce.errors import NumericalLimitError, UnsupportedCombinationError
from gce.accounting.guarantees import ZCDP, ApproxDP, LaplaceMechanism, PureDP, RandomizedResponse
from gce.priors.hypotheses import Distribution, Explicit, Point, Rates, Uniform
from gce.model import Invocation
from reference import canonical_pair, mixture_delta

EPSILONS = [0.0, 0.2, 0.7, 1.5, 3.0]


def reference_delta(h0, h1, invocations, constraints, eps):
    """tests/reference.py's brute force on the hypotheses' supports."""
    points = []
    for inv in invocations:
        g = inv.guarantee
        points += [(inv.database, g.epsilon, getattr(g, "delta", 0.0))] * inv.repeat
    d0 = h0 if isinstance(h0, Distribution) else h0.distribution(constraints)
    d1 = h1 if isinstance(h1, Distribution) else h1.distribution(constraints)
    return mixture_delta(list(d0), list(d1), points, eps)


# ---------------------------------------------------------------------------
# the counterexamples of docs/design.md, "Unsound formulas" to 001 Sec. V-B's averaging formula


def averaging_formula(pairs):
    """001 Sec. V-B: eps = ln sum_i w_i e^{eps_i}, delta = sum_i w_i delta_i (unsound)."""
    return math.log(sum(w * math.exp(e) for w, e, _ in pairs)), sum(w * d for w, _, d in pairs)


def test_first_counterexample():
    # db 0 runs (0, 0.1), db 1 pure 5; p0 = {}, p1 = 1/2 {0} + 1/2 {1}.
    invocations = [Invocation(0, ApproxDP(0.0, 0.1)), Invocation(1, PureDP(5.0))]
    h0, h1 = Point(()), Explicit(({0}, {1}), (0.5, 0.5))
    cs = ConstraintSet(2)
    claimed_eps, claimed_delta = averaging_formula([(0.5, 0.0, 0.1), (0.5, 5.0, 0.0)])
    assert (round(claimed_eps, 4), claimed_delta) == (4.3136, 0.05)
    curve = exact_curve(h0, h1, invocations, cs)
    assert curve.method == "exact-enumeration" and curve.exact
    exact = curve.delta(claimed_eps)
    assert round(exact, 4) == 0.0743
    assert exact == pytest.approx(reference_delta(h0, h1, invocations, cs, claimed_eps), abs=1e-12)
    assert exact > claimed_delta  # the formula's guarantee is violated
    assert curve.epsilon(claimed_delta) > claimed_eps


def test_second_counterexample():
    # pure 5-DP randomized response on each of 3 databases; p0 = 1/2 {0} + 1/2 {1,2}, p1 = 1/2 {} + 1/2 {1,2}.
    invocations = [Invocation(i, RandomizedResponse(5.0)) for i in range(3)]
    h0 = Explicit(({0}, {1, 2}), (0.5, 0.5))
    h1 = Explicit(((), {1, 2}), (0.5, 0.5))
    cs = ConstraintSet(3)
    # refinement pairs ({0}, {}) -> (5, 0) and ({1,2}, {1,2}) -> (0, 0), each weight 1/2
    claimed_eps, claimed_delta = averaging_formula([(0.5, 5.0, 0.0), (0.5, 0.0, 0.0)])
    assert (round(claimed_eps, 4), claimed_delta) == (4.3136, 0.0)
    curve = exact_curve(h0, h1, invocations, cs)
    exact = curve.delta(claimed_eps)
    assert round(exact, 3) == 0.243
    assert exact == pytest.approx(reference_delta(h0, h1, invocations, cs, claimed_eps), abs=1e-12)
    assert curve.epsilon(0.0) > claimed_eps  # "pure DP at 4.3136" is false


# ---------------------------------------------------------------------------
# Random small instances against brute force


def random_instance(seed: int):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 7))
    invocations = []
    budget = 8
    for database in rng.permutation(n):
        for _ in range(int(rng.integers(1, 3))):
            if budget == 0:
                break
            kind = rng.integers(3)
            eps = float(rng.choice([0.0, 0.3, 1.0, 2.2])) if kind else float(rng.uniform(0.1, 3))
            if kind == 0:
                g = ApproxDP(eps, float(rng.choice([0.01, 0.1, 0.3])))
            elif kind == 1:
                g = PureDP(eps)
            else:
                g = RandomizedResponse(eps)
            invocations.append(Invocation(int(database), g))
            budget -= 1

    def hypothesis():
        size = int(rng.integers(1, 9))
        sets = {frozenset(np.flatnonzero(rng.random(n) < rng.random()).tolist()) for _ in range(size)}
        weights = rng.dirichlet(np.ones(len(sets)))
        return Distribution(tuple(sets), tuple(weights / weights.sum()))

    return invocations, hypothesis(), hypothesis(), ConstraintSet(n)


@tiers.parametrize("seed", range(40), default=8)
def test_enumeration_equals_brute_force(seed):
    invocations, h0, h1, cs = random_instance(seed)
    curve = exact_curve(h0, h1, invocations, cs)
    assert isinstance(curve, CompositeCurve)
    exact = [reference_delta(h0, h1, invocations, cs, e) for e in EPSILONS]
    assert curve.delta(np.array(EPSILONS)) == pytest.approx(exact, abs=1e-9)
    # the inverse: the smallest eps certified at delta, checked against brute force
    for target in [1e-3, 0.05, 0.2]:
        eps = curve.epsilon(target)
        if math.isinf(eps):
            assert curve.delta(50.0) > target
            continue
        assert reference_delta(h0, h1, invocations, cs, eps) <= target + 1e-12
        if eps > 1e-6:
            assert reference_delta(h0, h1, invocations, cs, eps * (1 - 1e-6)) > target - 1e-12


def test_both_directions_are_needed():
    """001 Def. 3 has two inequalities; here eq. (2) is the larger one (the delta events of h1)."""
    invocations = [Invocation(i, ApproxDP(1.0, 0.05)) for i in range(3)]
    curve = exact_curve(Point(()), Uniform(min_members=1), invocations, ConstraintSet(3))
    eps = np.array(EPSILONS)
    forward, backward = curve.forward.delta(eps), curve.backward.delta(eps)
    assert np.any(backward > forward + 1e-3)
    assert curve.delta(eps) == pytest.approx(np.maximum(forward, backward), abs=0)
    assert curve.delta(eps) == pytest.approx(
        [reference_delta(Point(()), Uniform(min_members=1), invocations, ConstraintSet(3), e) for e in eps], abs=1e-12
    )


# ---------------------------------------------------------------------------
# Counting against enumeration (and brute force where it is cheap)


def count_cases(k: int):
    yield "none vs at least one", Point(()), Uniform(min_members=1), ConstraintSet(k)
    yield "none vs 1..k-1 (recursion)", Point(()), Uniform(1, max(k - 1, 1)), ConstraintSet(k)
    kp = max(1, k // 2)
    yield "fewer than k' vs at least k'", Uniform(max_members=kp - 1), Uniform(min_members=kp), ConstraintSet(k)
    yield "equal rates vs none", Rates((0.3,) * k), Point(()), ConstraintSet(k)
    yield "equal rates vs all (complement)", Rates((0.6,) * k), Point(tuple(range(k))), ConstraintSet(k)
    if k >= 2:
        yield "at least one under at_most 2", Point(()), Uniform(min_members=1), ConstraintSet(k, (AtMost(2),))
        one_of_all = ConstraintSet(k, (Exclusive(tuple(range(k))),))
        yield "rates vs uniform under exclusive", Rates((0.2,) * k), Uniform(), one_of_all


@tiers.parametrize(
    "k, guarantee, repeat",
    [(k, PureDP(0.8), 1) for k in (1, 4, 10)]
    + [(k, ApproxDP(0.6, 0.05), 1) for k in (2, 5, 7)]
    + [(k, ApproxDP(0.4, 0.1), 2) for k in (2, 4)]
    + [(3, RandomizedResponse(1.3), 3)],
    default=[1, 3, 6, 8],  # one per guarantee kind and repeat
)
def test_count_equals_enumeration(k, guarantee, repeat):
    invocations = [Invocation(i, guarantee, repeat) for i in range(k)]
    for name, h0, h1, cs in count_cases(k):
        counted = exact_count_curve(h0, h1, invocations, cs)
        enumerated = exact_enumeration_curve(h0, h1, invocations, cs)
        assert counted.method == "exact-count" and enumerated.method == "exact-enumeration"
        eps = np.array(EPSILONS)
        assert counted.delta(eps) == pytest.approx(enumerated.delta(eps), abs=1e-10), name
        targets = np.array([1e-4, 0.01, 0.1])
        assert counted.epsilon(targets) == pytest.approx(enumerated.epsilon(targets), rel=1e-8, abs=1e-10), name
        if k * repeat <= 6:
            exact = [reference_delta(h0, h1, invocations, cs, e) for e in EPSILONS]
            assert counted.delta(eps) == pytest.approx(exact, abs=1e-10), name


@tiers.parametrize(
    "h0, h1, cs",
    [
        (Point(()), Uniform(min_members=1), ConstraintSet(12)),
        (Uniform(max_members=2), Uniform(min_members=3), ConstraintSet(9)),
        (Rates((0.4,) * 10), Uniform(1, 4), ConstraintSet(10, (AtMost(6),))),
        (Point(tuple(range(8))), Uniform(), ConstraintSet(8)),
    ],
    default=[1, 2, 3],  # the 12 databases of the first: 0.4 s
)
def test_count_sums_out_unqueried_databases(h0, h1, cs):
    invocations = [Invocation(1, ApproxDP(0.9, 0.02)), Invocation(4, ApproxDP(0.9, 0.02)),
                   Invocation(6, ApproxDP(0.9, 0.02))]
    counted = exact_curve(h0, h1, invocations, cs)
    assert counted.method == "exact-count"
    exact = [reference_delta(h0, h1, invocations, cs, e) for e in EPSILONS]
    assert counted.delta(np.array(EPSILONS)) == pytest.approx(exact, abs=1e-10)
    enumerated = exact_enumeration_curve(h0, h1, invocations, cs)
    assert enumerated.delta(np.array(EPSILONS)) == pytest.approx(exact, abs=1e-10)


def test_dispatcher_prefers_counting_and_falls_back():
    k = 5
    same = [Invocation(i, ApproxDP(0.5, 1e-3)) for i in range(k)]
    assert exact_curve(Point(()), Uniform(min_members=1), same, ConstraintSet(k)).method == "exact-count"
    mixed = same[:-1] + [Invocation(k - 1, PureDP(1.0))]
    assert exact_curve(Point(()), Uniform(min_members=1), mixed, ConstraintSet(k)).method == "exact-enumeration"
    # neither fits: different invocations and a support of 2^30 sets
    many = [Invocation(i, PureDP(0.1 + 0.01 * i)) for i in range(30)]
    with pytest.raises(NumericalLimitError, match="enumeration"):
        exact_curve(Point(()), Uniform(min_members=1), many, ConstraintSet(30))
    with pytest.raises(UnsupportedCombinationError, match="invocations\\[1\\]"):
        exact_curve(Point(()), Uniform(), [Invocation(0, PureDP(1.0)), Invocation(1, ZCDP(0.1))], ConstraintSet(2))


def test_concrete_mechanisms_are_bounded_not_exact():
    invocations = [Invocation(0, LaplaceMechanism(scale=2.0)), Invocation(1, PureDP(0.5))]
    curve = exact_curve(Point(()), Uniform(min_members=1), invocations, ConstraintSet(2))
    assert not curve.exact
    pure = exact_curve(Point(()), Uniform(min_members=1), [Invocation(0, PureDP(0.5)), Invocation(1, PureDP(0.5))],
                       ConstraintSet(2))
    assert pure.exact and curve.delta(0.1) == pytest.approx(pure.delta(0.1), abs=1e-15)


# ---------------------------------------------------------------------------
# 001 Cor. 7 is never below the exact value


def corollary_7(k: int, eps1: float, delta1: float) -> tuple[float, float]:
    """001 Sec. V-B, Cor. 7, written out: "none" vs uniform "at least one", all mechanisms (eps', delta')."""
    eps = math.log(((math.exp(eps1) + 1) ** k - 1) / (2**k - 1))
    delta = 2 ** (k - 1) * k * delta1 / (2**k - 1)
    return eps, delta


def test_corollary_7_by_hand():
    eps, delta = corollary_7(2, math.log(2), 0.1)  # ((2 + 1)^2 - 1) / 3 = 8/3; delta = 2 * 2 * 0.1 / 3
    assert eps == pytest.approx(math.log(8 / 3)) and delta == pytest.approx(0.4 / 3)


@pytest.mark.parametrize("k", range(2, 13))
@pytest.mark.parametrize("eps1, delta1", [(0.1, 1e-6), (0.5, 1e-3), (1.0, 0.01), (2.0, 0.05), (0.3, 0.0)])
def test_corollary_7_is_an_upper_bound(k, eps1, delta1):
    invocations = [Invocation(i, ApproxDP(eps1, delta1)) for i in range(k)]
    curve = exact_count_curve(Point(()), Uniform(min_members=1), invocations, ConstraintSet(k))
    eps, delta = corollary_7(k, eps1, delta1)
    assert curve.delta(eps) <= delta + 1e-15
    if k <= 5:
        exact = reference_delta(Point(()), Uniform(min_members=1), invocations, ConstraintSet(k), eps)
        assert curve.delta(eps) == pytest.approx(exact, abs=1e-12)


# ---------------------------------------------------------------------------
# Large k: log space, against an independent product-prior reference


def product_prior_delta(k: int, eps1: float, delta1: float, rate: float, eps: float) -> float:
    """Point(()) vs Rates((rate,) * k): each database's view is the mixture (1 - q) P0 + q P1 of the
    canonical pair, independently, so the pair is a k-fold product. Sum over the trinomial counts
    (m0, m1, m2) of symbols 0, 1, 2; any symbol 3 has infinite loss in direction (h1, h0)."""
    p0, p1 = canonical_pair(eps1, delta1)
    mix = (1 - rate) * p0 + rate * p1
    m1, m2 = np.meshgrid(np.arange(k + 1), np.arange(k + 1), indexing="ij")
    m0 = k - m1 - m2
    ok = m0 >= 0
    m0, m1, m2 = m0[ok], m1[ok], m2[ok]
    log_multi = special.gammaln(k + 1) - special.gammaln(m0 + 1) - special.gammaln(m1 + 1) - special.gammaln(m2 + 1)

    def log_law(p):
        with np.errstate(divide="ignore"):
            lp = np.log(p[:3])
        return log_multi + special.xlogy(m0, p[0]) * (m0 > 0) + m1 * lp[1] + m2 * lp[2]

    a, b = log_law(p0), log_law(mix)
    forward = np.sum(np.maximum(np.exp(a) - np.exp(eps + b), 0.0))
    backward = np.sum(np.maximum(np.exp(b) - np.exp(eps + a), 0.0)) + (1 - (1 - mix[3]) ** k)
    return max(forward, backward)


@pytest.mark.parametrize("k, rate", [(300, 0.5), (300, 0.2), (120, 0.9)])
def test_large_k_against_product_reference(k, rate):
    invocations = [Invocation(i, ApproxDP(0.1, 1e-7)) for i in range(k)]
    curve = exact_count_curve(Point(()), Rates((rate,) * k), invocations, ConstraintSet(k))
    for eps in [0.0, 0.5, 1.0, 2.0, 4.0]:
        assert curve.delta(eps) == pytest.approx(product_prior_delta(k, 0.1, 1e-7, rate, eps), abs=1e-12)


def test_a_thousand_databases_stay_finite():
    k = 1000
    invocations = [Invocation(i, ApproxDP(0.1, 1e-10)) for i in range(k)]
    curve = exact_count_curve(Point(()), Uniform(min_members=1), invocations, ConstraintSet(k))
    grid = np.linspace(0.0, 20.0, 81)
    d = curve.delta(grid)
    assert np.all(np.isfinite(d)) and np.all(np.diff(d) <= 1e-15) and d[0] > 0.5
    # the delta floor is the chance that some member database reveals itself: E[1 - (1 - 1e-10)^|b|]
    assert curve.delta_floor == pytest.approx(1e-10 * k * 2 ** (k - 1) / (2**k - 1), rel=1e-6)
    eps = curve.epsilon(1e-6)
    assert 0 < eps < 20 and curve.delta(eps) <= 1e-6


def test_recursion_equals_closed_form():
    """The symmetric-sum recursion against the generating-function closed form (k = 40, two levels)."""
    n, eps1 = 40, 0.7
    log_rho = np.array([-eps1, eps1])
    sizes = np.arange(n + 1, dtype=float)
    log_w = Uniform(min_members=1).log_size_weights(ConstraintSet(n))
    log_v = log_w - (special.gammaln(n + 1) - special.gammaln(sizes + 1) - special.gammaln(n - sizes + 1))
    law = _geometric_law(log_v)
    assert law is not None and law[0] == 1
    closed = {prefix: table for prefix, first, table in _geometric_tables(n, law, log_rho, cutoff=n)}
    for prefix, table in _symmetric_sums(log_v[None, :], log_rho):
        expected = closed[prefix]
        finite = np.isfinite(expected)
        assert np.array_equal(finite, np.isfinite(table[0, :, 0]))
        assert table[0, finite, 0] == pytest.approx(expected[finite], rel=1e-12, abs=1e-12)


def test_database_pair_merges_levels():
    # two copies of (eps, 0) and one of (2 eps, 0): ratios e^{-4eps}, e^{-2eps} (x2), 1 (x2), e^{2eps}... merged
    eps = 0.5
    pair = database_pair([(eps, 0.0, 2), (2 * eps, 0.0, 1)])
    ratios = pair.log_b - pair.log_a
    assert ratios == pytest.approx([-4 * eps, -2 * eps, 0.0, 2 * eps, 4 * eps])
    assert np.exp(pair.log_a).sum() == pytest.approx(1.0) and np.exp(pair.log_b).sum() == pytest.approx(1.0)
    assert pair.log_a_only == -math.inf and pair.log_b_only == -math.inf
    approx = database_pair([(1.0, 0.1, 2)])
    assert math.exp(approx.log_a_only) == pytest.approx(1 - 0.9**2)
    assert np.exp(approx.log_a).sum() + math.exp(approx.log_a_only) == pytest.approx(1.0)

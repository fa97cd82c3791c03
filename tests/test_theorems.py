"""Composition theorems against brute force, closed forms and each other."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from scipy import integrate, stats

import reference
import tiers
from gce.accounting.curves import GaussianCurve, ZCDPCurve
from gce.errors import InvalidParameterError
from gce.accounting.guarantees import (
    ZCDP,
    ApproxDP,
    GaussianDP,
    GaussianMechanism,
    LaplaceMechanism,
    PureDP,
    RandomizedResponse,
    Subsampled,
)
from gce.accounting.theorems import (
    THEOREMS,
    AdvancedComposition,
    KairouzClosedForm,
    KairouzExact,
    OptimalHeterogeneous,
    PLDComposition,
    SimpleComposition,
    as_multiset,
    compose,
)

BY_NAME = {t.name: t for t in THEOREMS}
TARGETS = [0.0, 0.05, 0.3, 1.0, 2.5]


def curve(theorem, guarantees):
    ms = as_multiset(guarantees)
    assert theorem.accepts(ms)
    return theorem.curve(ms)


# ---------------------------------------------------------------------------
# 002 Thm. III.3 is exact


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8, 10])
@pytest.mark.parametrize("eps,delta", [(0.1, 0.0), (0.5, 1e-3), (1.0, 0.05), (0.03, 0.2)])
def test_kairouz_iii3_equals_brute_force(k, eps, delta):
    if k == 10 and (eps, delta) != (0.5, 1e-3):
        pytest.skip("one k = 10 case suffices (4^10 outputs)")
    c = curve(KairouzExact(), [ApproxDP(eps, delta)] * k)
    for target in TARGETS + [k * eps * 0.5, k * eps]:
        exact = reference.exact_delta([(eps, delta)] * k, target)
        assert c.delta(target) == pytest.approx(exact, abs=1e-9, rel=1e-9)
        assert c.delta(target) == pytest.approx(reference.kairouz_iii3_by_formula(k, eps, delta, target), abs=1e-9)


def test_kairouz_iii3_inverse_is_exact():
    c = curve(KairouzExact(), {ApproxDP(0.5, 1e-3): 6})
    assert math.isinf(c.epsilon(0.002))  # below the floor 1 - 0.999^6 = 0.00599
    for delta in [0.006, 0.01, 0.1, 0.3]:
        eps = c.epsilon(delta)
        assert reference.exact_delta([(0.5, 1e-3)] * 6, eps) <= delta * (1 + 1e-9)
        assert reference.exact_delta([(0.5, 1e-3)] * 6, eps * (1 - 1e-6) - 1e-9) > delta


def test_kairouz_iii3_hand_values():
    # k = 2, eps = ln 2, delta = 0: outputs (+,+) loss 2 ln 2 with P0 = 4/9; (+,-) loss 0.
    # delta(0) = 4/9 - 1/9 = 1/3; delta(ln 2) = 4/9 - 2/9 = 2/9.
    c = curve(KairouzExact(), [PureDP(math.log(2))] * 2)
    assert c.delta(0.0) == pytest.approx(1 / 3, abs=1e-15)
    assert c.delta(math.log(2)) == pytest.approx(2 / 9, abs=1e-15)
    assert c.delta(2 * math.log(2)) == pytest.approx(0.0, abs=1e-15)
    # A single (eps, delta): the canonical profile itself.
    single = curve(KairouzExact(), [ApproxDP(1.0, 0.01)])
    assert single.delta(0.0) == pytest.approx(0.01 + 0.99 * (math.e - 1) / (math.e + 1), abs=1e-15)
    assert single.epsilon(0.01) == pytest.approx(1.0, rel=1e-11)


def test_kairouz_iii3_large_k_log_space():
    c = compose({ApproxDP(0.01, 1e-10): 10**6})
    eps, _, name = c.at_delta(1e-3)
    assert name == "kairouz-III.3" and c.exact
    # Floor 1 - (1 - 1e-10)^1e6 ~ 1e-4; the CLT gives eps ~ k eps^2/2 + eps sqrt(k) z ~ 50 + 10*3.3.
    assert 60 < eps < 100
    assert math.isinf(c.epsilon(9e-5))  # below the floor: no finite epsilon
    assert c.curve.delta(eps) <= 1e-3


# ---------------------------------------------------------------------------
# Heterogeneous optimum


def test_optimal_heterogeneous_equals_brute_force():
    points = [(0.2, 0.0), (1.0, 1e-3), (0.5, 0.01), (0.5, 0.01), (2.0, 0.0), (0.05, 0.1)]
    c = compose([ApproxDP(e, d) for e, d in points])
    assert c.candidates[0][0] == "optimal-enumeration" and c.exact
    for target in TARGETS + [3.0, 4.0]:
        assert c.curve.delta(target) == pytest.approx(reference.exact_delta(points, target), abs=1e-12, rel=1e-9)


@tiers.given(5, 25, st.lists(st.tuples(st.sampled_from([0.05, 0.3, 0.7, 1.5]), st.sampled_from([0.0, 1e-4, 0.02])),
                             min_size=2, max_size=6),
             settings=settings(deadline=None, suppress_health_check=[HealthCheck.too_slow]))
def _pld_route_is_above_and_within_one_percent(points):
    ms = as_multiset([ApproxDP(e, d) for e, d in points])
    pld = PLDComposition().curve(ms)
    floor = 1 - math.prod(1 - d for _, d in points)
    for delta in [floor + 1e-3, floor + 0.05, floor + 0.2]:
        eps = pld.epsilon(delta)
        assert reference.exact_delta(points, eps) <= delta * (1 + 1e-9)  # never below the optimum
        exact_eps = OptimalHeterogeneous().curve(ms).epsilon(delta) if len(set(points)) > 1 else \
            KairouzExact().curve(ms).epsilon(delta)
        assert eps >= exact_eps - 1e-9
        assert eps <= exact_eps * 1.01 + 2e-3  # 1%, plus the grid width 1e-4 per invocation
    for target in [0.1, 0.5, 1.0]:
        assert pld.delta(target) >= reference.exact_delta(points, target) - 1e-15


test_pld_route_is_above_and_within_one_percent, test_pld_route_is_above_and_within_one_percent_slow = \
    _pld_route_is_above_and_within_one_percent


# ---------------------------------------------------------------------------
# Soundness of every theorem and the ordering between them

guarantee_points = st.lists(
    st.tuples(st.floats(0.0, 2.0), st.sampled_from([0.0, 0.0, 1e-6, 1e-3, 0.05])), min_size=1, max_size=6
)


@tiers.given(10, 60, guarantee_points, st.sampled_from([False, True]),
             settings=settings(deadline=None, suppress_health_check=[HealthCheck.too_slow]))
def _every_theorem_sound_against_brute_force(points, homogeneous):
    if homogeneous:
        points = [points[0]] * len(points)
    # Pure guarantees as PureDP so that the zCDP route (eps^2/2 each) is exercised too.
    ms = as_multiset([PureDP(e) if d == 0 else ApproxDP(e, d) for e, d in points])
    exact = {t: reference.exact_delta(points, t) for t in TARGETS}
    checked = []
    for theorem in THEOREMS:
        if not theorem.accepts(ms):
            continue
        c = theorem.curve(ms)
        for t in TARGETS:
            assert c.delta(t) >= exact[t] * (1 - 1e-9) - 1e-12, (theorem.name, t)
        for d in [0.01, 0.1, 0.4]:
            eps = c.epsilon(d)
            if math.isfinite(eps):
                assert reference.exact_delta(points, eps) <= d * (1 + 1e-9) + 1e-12, (theorem.name, d)
        checked.append(theorem.name)
    assert "simple" in checked and "pld" in checked
    if all(d == 0 for _, d in points):
        assert "zcdp" in checked


test_every_theorem_sound_against_brute_force, test_every_theorem_sound_against_brute_force_slow = \
    _every_theorem_sound_against_brute_force


@tiers.given(10, 60, guarantee_points, st.sampled_from([False, True]))
def _theorems_ordered_as_theory_says(points, homogeneous):
    if homogeneous:
        points = [points[0]] * len(points)
    ms = as_multiset([ApproxDP(e, d) for e, d in points])
    closed = KairouzClosedForm(homogeneous=len(set(points)) == 1)
    optimum = (KairouzExact() if len(set(points)) == 1 else OptimalHeterogeneous()).curve(ms)
    simple, advanced, kov = (t.curve(ms) for t in (SimpleComposition(), AdvancedComposition(), closed))
    grid = np.linspace(0.0, 1.2 * sum(e for e, _ in points) + 0.1, 40)
    s, a, k, o = (c.delta(grid) for c in (simple, advanced, kov, optimum))
    assert np.all(s >= a - 1e-12)
    assert np.all(a >= k - 1e-12)
    assert np.all(k >= o - 1e-12)


test_theorems_ordered_as_theory_says, test_theorems_ordered_as_theory_says_slow = _theorems_ordered_as_theory_says


def test_closed_forms_hand_values():
    # 002 eq. (7), k = 100, eps = 0.1, delta = 0, d~ = 1e-5:
    # third term: 100 * 0.1 * tanh(0.05) + 0.1 * sqrt(200 ln(1e5)) = 0.49958 + 4.79852 = 5.29810
    k, e, slack = 100, 0.1, 1e-5
    third = k * e * math.tanh(e / 2) + e * math.sqrt(2 * k * math.log(1 / slack))
    second = k * e * math.tanh(e / 2) + e * math.sqrt(2 * k * math.log(math.e + math.sqrt(k * e * e) / slack))
    c = curve(KairouzClosedForm(True), [PureDP(e)] * k)
    assert c.epsilon(slack) == pytest.approx(min(second, third), rel=1e-9)
    assert min(second, third) == pytest.approx(5.2981, abs=1e-4)
    # DRV eq. (4): k eps (e^eps - 1) + eps sqrt(2 k log(1/d~)).
    drv = k * e * math.expm1(e) + e * math.sqrt(2 * k * math.log(1 / slack))
    assert curve(AdvancedComposition(), [PureDP(e)] * k).epsilon(slack) == pytest.approx(drv, rel=1e-9)
    # Simple: (k eps, k delta) exactly at delta = k delta.
    assert curve(SimpleComposition(), [ApproxDP(e, 1e-4)] * k).epsilon(1e-2) == pytest.approx(k * e, rel=1e-9)


# ---------------------------------------------------------------------------
# Gaussian DP and zCDP


def gaussian_delta_by_integration(mu: float, eps: float) -> float:
    f = lambda t: max(stats.norm.pdf(t) - math.exp(eps) * stats.norm.pdf(t, loc=mu), 0.0)
    crossing = mu / 2 + eps / mu
    return integrate.quad(f, -np.inf, crossing, limit=400, epsabs=1e-14, epsrel=1e-12)[0]


@tiers.parametrize("sigmas", [[1.0], [2.0, 3.0, 0.5], [4.0] * 10], default=2)
def test_gdp_composition_equals_exact_gaussian_curve(sigmas):
    c = compose([GaussianMechanism(s) for s in sigmas])
    assert c.exact and c.candidates[0][0] == "gaussian-dp"
    mu = math.sqrt(sum(1 / s**2 for s in sigmas))
    for eps in [0.0, 0.5, 1.0, 3.0]:
        assert c.curve.delta(eps) == pytest.approx(gaussian_delta_by_integration(mu, eps), abs=1e-9)


@pytest.mark.parametrize("mu", [0.1, 0.5, 1.0, 3.0])
def test_zcdp_conversion_never_tighter_than_the_gaussian(mu):
    gauss, z = GaussianCurve(mu), ZCDPCurve(mu * mu / 2)
    grid = np.linspace(0.0, 20.0, 101)
    assert np.all(z.delta(grid) >= gauss.delta(grid) - 1e-15)
    for d in [1e-12, 1e-6, 1e-3, 0.1]:
        assert z.epsilon(d) >= gauss.epsilon(d)


def test_zcdp_conversion_hand_value():
    # rho = 0.5, delta = 1e-5: the classic bound rho + 2 sqrt(rho log(1/delta)) = 5.298 is looser;
    # the tight conversion is smaller but above the Gaussian's (mu = 1) exact 4.3.
    z = ZCDPCurve(0.5).epsilon(1e-5)
    assert z < 0.5 + 2 * math.sqrt(0.5 * math.log(1e5))
    assert z > GaussianCurve(1.0).epsilon(1e-5)
    # Every alpha gives an upper bound; alpha = 4 by hand: 0.5*4 + ln(3/4) - (ln 1e-5 + ln 4)/3
    assert z <= 2.0 + math.log(0.75) - (math.log(1e-5) + math.log(4)) / 3 + 1e-12


def test_gaussian_pld_is_sound_and_close():
    ms = as_multiset({GaussianMechanism(5.0): 20})
    exact, pld = GaussianCurve(math.sqrt(20) / 5).delta, PLDComposition().curve(ms)
    for eps in [0.1, 0.5, 1.0, 2.0]:
        assert exact(eps) <= pld.delta(eps) <= exact(eps) * 1.01 + 1e-9


# ---------------------------------------------------------------------------
# Concrete and subsampled mechanisms


def laplace_delta(eps0: float, eps: float) -> float:
    """Exact profile of one Laplace mechanism with eps0 = sensitivity / scale."""
    return max(0.0, 1 - math.exp((eps - eps0) / 2)) if eps < eps0 else 0.0


def test_laplace_is_sound_and_tighter_than_pure():
    c = compose([LaplaceMechanism(scale=2.0)])
    for eps in [0.0, 0.1, 0.3, 0.5]:
        assert c.curve.delta(eps) >= laplace_delta(0.5, eps) - 1e-12
        assert c.curve.delta(eps) <= reference.exact_delta([(0.5, 0.0)], eps) + 1e-12
    many = compose({LaplaceMechanism(scale=10.0): 50})
    assert many.epsilon(1e-6) < compose({PureDP(0.1): 50}).epsilon(1e-6)


def subsampled_exact_delta(points, rate, eps):
    """Brute force for Poisson-subsampled canonical pairs under add/remove."""
    p0, p1 = np.ones(1), np.ones(1)
    for e, d in points:
        q0, q1 = reference.canonical_pair(e, d)
        p0 = np.outer(p0, rate * q0 + (1 - rate) * q1).ravel()
        p1 = np.outer(p1, q1).ravel()
    return max(reference.hockey_stick(p0, p1, eps), reference.hockey_stick(p1, p0, eps))


@pytest.mark.parametrize("rate", [0.01, 0.2, 0.5, 1.0])
def test_subsampling_amplification_sound(rate):
    points = [(1.0, 1e-3), (2.0, 0.0), (0.5, 0.01)]
    c = compose([Subsampled(rate, ApproxDP(e, d)) for e, d in points])
    for eps in [0.0, 0.1, 0.5, 1.0]:
        assert c.curve.delta(eps) >= subsampled_exact_delta(points, rate, eps) - 1e-12
    # Amplification (Balle et al. 2018 Thm. 8) by hand for one invocation.
    single = compose([Subsampled(0.1, PureDP(1.0))])
    assert single.epsilon(0.0) == pytest.approx(math.log1p(0.1 * math.expm1(1.0)), rel=1e-9)


def test_randomized_response_is_the_canonical_pure_pair():
    rr = compose({RandomizedResponse(0.7): 5}).curve
    pure = compose({PureDP(0.7): 5}).curve
    assert np.allclose(rr.delta(np.linspace(0, 4, 30)), pure.delta(np.linspace(0, 4, 30)))


# ---------------------------------------------------------------------------
# The selector


def test_selector_names_and_exactness():
    assert compose({ApproxDP(0.1, 1e-6): 30}).candidates[0][0] == "kairouz-III.3"
    assert compose([PureDP(0.1), PureDP(0.2)]).candidates[0][0] == "optimal-enumeration"
    big = compose({PureDP(0.01 * i): 40 for i in range(1, 6)})  # 41^5 outcomes: no enumeration
    assert not big.exact and "pld" in dict(big.candidates)
    eps, _, name = big.at_delta(1e-6)
    assert name == "pld" and eps < big.curve.epsilon(1e-6) + 1e-12
    assert compose([]).curve.delta(0.0) == 0.0


def test_mixed_kinds_fall_back_to_a_valid_curve():
    # A rho-zCDP guarantee covers the Gaussian mechanism with mu = sqrt(2 rho); together with a
    # canonical (eps, delta) pair the true curve of that member must lie under ours.
    rho, (e, d) = 0.125, (0.5, 1e-4)
    mixed = compose([ZCDP(rho), ApproxDP(e, d)])
    assert mixed.candidates[0][0].startswith("split")
    mu = math.sqrt(2 * rho)
    q0, q1 = reference.canonical_pair(e, d)
    for eps in [0.0, 0.5, 1.0, 2.0, 4.0]:
        member = d  # outputs 0 of P0 have no P1 mass
        for a, b in zip(q0[1:3], q1[1:3]):  # Gaussian part times each finite canonical output
            t = (mu * mu / 2 - math.log(math.exp(eps) * b / a)) / mu
            member += a * stats.norm.cdf(t) - math.exp(eps) * b * stats.norm.cdf(t - mu)
        assert mixed.curve.delta(eps) >= member - 1e-12
    assert math.isinf(mixed.epsilon(1e-5))  # below the floor delta = 1e-4
    assert math.isfinite(mixed.epsilon(1e-3))


def test_gdp_and_gaussian_mechanism_agree():
    a = compose({GaussianDP(0.5): 4}).curve
    b = compose({GaussianMechanism(sigma=4.0, sensitivity=2.0): 4}).curve
    assert a.epsilon(1e-6) == pytest.approx(b.epsilon(1e-6))


# ---------------------------------------------------------------------------
# Validation and numerical range


@pytest.mark.parametrize(
    "make,field",
    [
        (lambda: PureDP(-1.0), "epsilon"),
        (lambda: PureDP(float("nan")), "epsilon"),
        (lambda: ApproxDP(1.0, 1.0), "delta"),
        (lambda: ApproxDP(1.0, -0.1), "delta"),
        (lambda: ZCDP(-0.5), "rho"),
        (lambda: GaussianDP(float("inf")), "mu"),
        (lambda: GaussianMechanism(0.0), "sigma"),
        (lambda: GaussianMechanism(1.0, sensitivity=-1), "sensitivity"),
        (lambda: LaplaceMechanism(-2.0), "scale"),
        (lambda: Subsampled(0.0, PureDP(1.0)), "rate"),
        (lambda: Subsampled(1.5, PureDP(1.0)), "rate"),
        (lambda: Subsampled(0.5, "laplace"), "mechanism"),
        (lambda: ApproxDP("1", 0.0), "epsilon"),
        (lambda: as_multiset({PureDP(1.0): -2}), "count"),
        (lambda: as_multiset([1.0]), "guarantees[0]"),
        (lambda: GaussianCurve(1.0).delta(-1.0), "epsilon"),
        (lambda: GaussianCurve(1.0).epsilon(2.0), "delta"),
    ],
)
def test_bad_parameters_name_the_parameter(make, field):
    with pytest.raises(InvalidParameterError) as info:
        make()
    assert field in str(info.value)


@tiers.parametrize(
    "guarantees",
    [
        {ApproxDP(100.0, 0.0): 3},
        {ApproxDP(0.001, 1e-300): 10**6},
        {PureDP(1e-3): 10**6},
        {GaussianMechanism(0.01): 10},
        {ZCDP(50.0): 2},
        {LaplaceMechanism(0.01): 2},
        {PureDP(0.5): 3, ApproxDP(100.0, 1e-300): 2},
    ],
    default=lambda guarantees: LaplaceMechanism(0.01) not in guarantees,  # that one: 8 s
)
def test_no_nan_or_inf_leaks(guarantees):
    c = compose(guarantees)
    eps_grid = np.array([0.0, 1e-6, 1.0, 10.0, 100.0])
    values = c.curve.delta(eps_grid)
    assert np.all(np.isfinite(values)) and np.all((values >= 0) & (values <= 1))
    assert np.all(np.diff(values) <= 1e-15)  # non-increasing
    for d in [1e-300, 1e-12, 1e-6, 0.5]:
        eps = c.curve.epsilon(d)
        assert not math.isnan(eps) and eps >= 0
        if math.isfinite(eps):
            assert c.curve.delta(eps) <= d * (1 + 1e-6)


def test_pld_curves_accept_unsorted_epsilons():
    import numpy as np

    from gce.accounting.guarantees import LaplaceMechanism, Subsampled, ZCDP

    curve = compose({ZCDP(0.1): 1, Subsampled(0.2, LaplaceMechanism(0.5)): 1}).curve
    forward = curve.delta(np.array([0.5, 1.0]))
    backward = curve.delta(np.array([1.0, 0.5]))
    assert forward[0] > forward[1] and list(backward) == list(forward[::-1])


@tiers.parametrize("gaussians, laplaces", [(20, 3), (5, 1)], default=[1])  # (20, 3): 0.7 s, dp-accounting's loop
def test_pld_curve_by_cumulative_sums_matches_dp_accounting(gaussians, laplaces):
    import numpy as np

    from gce.accounting import pld
    from gce.accounting.guarantees import GaussianMechanism, LaplaceMechanism, Subsampled

    items = [(Subsampled(0.1, GaussianMechanism(2.0)), gaussians), (LaplaceMechanism(1.0), laplaces)]
    curve = pld.PLDCurve(pld.compose_pld(items), pld.infinite_mass(items))
    assert curve._directions is not None and len(curve._directions) == 2
    eps = np.linspace(0.0, 6.0, 61)
    theirs = curve._safe(np.asarray(curve.distribution.get_delta_for_epsilon(eps), dtype=float))
    ours = curve.delta(eps)
    # The same sums evaluated two ways: equal to within the named round-off allowances.
    assert np.allclose(ours, theirs, rtol=1e-6, atol=pld.PLDCurve.ABSOLUTE_ROUND_OFF)
    assert np.all(np.diff(ours) <= 1e-15)

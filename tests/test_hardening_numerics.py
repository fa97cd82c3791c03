"""Numerical hardening of guarantees, curves and theorems (issue: no input gives a wrong number).

Each case here was a defect: an epsilon of 1e308 reported as 0 (perfect privacy) with
NaN deltas, overflow tracebacks for sigma = 1e-308 or mu = 1e200, billions of
invocations allocating O(n) memory, a target delta at the floor answered with
infinity. The references are independent: 002 Thm. III.3 in 60-digit decimals
(tests/reference.py), mpmath binomials, hand-derived limits.
"""

from __future__ import annotations

import math
import tracemalloc
import warnings

import mpmath
import numpy as np
import pytest

from gce.accounting import binomial
from gce.accounting.curves import DiscreteLossCurve, GaussianCurve, ZCDPCurve
from gce.accounting.guarantees import (
    ZCDP,
    ApproxDP,
    GaussianDP,
    GaussianMechanism,
    LaplaceMechanism,
    PureDP,
    RandomizedResponse,
    Subsampled,
    amplified,
)
from gce.accounting.theorems import EXACT_COUNT_LIMIT, canonical_composition, compose

import tiers
from reference import exact_delta, kairouz_iii3_by_formula


@pytest.fixture(autouse=True)
def _no_warnings():
    """Every case must run without a numpy or Python warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


# --- an absurd epsilon is never perfect privacy -------------------------------------------


@pytest.mark.parametrize("guarantee", [PureDP(1e308), ApproxDP(1e308, 1e-6), RandomizedResponse(1e308)])
def test_epsilon_1e308_is_infinite_not_zero(guarantee):
    # Two invocations: the loss is 2e308 with probability ~1, beyond every double, so no finite
    # epsilon is valid at 1e-6; delta at eps = 10 is 1 - (1 - d)^2 (delta events, infinite loss)
    # + (1 - d)^2 (1 - e^{10 - 2e308}) / (1 + e^{-1e308})^2 = 1 in doubles.
    c = compose({guarantee: 2})
    eps, _, theorem = c.at_delta(1e-6)
    assert eps == math.inf and theorem == "kairouz-III.3"
    d = c.delta(10.0)
    assert d == 1.0


def test_epsilon_1e303_repeated_a_million_times_is_infinite():
    eps = compose({PureDP(1e303): 1_000_000}).epsilon(1e-6)
    assert eps == math.inf


def test_classic_sum_that_overflows_is_infinite():
    # 5e307 on four invocations: 2e308 in total, beyond the double range.
    assert compose({PureDP(5e307): 4}).epsilon(1e-6) == math.inf


@pytest.mark.parametrize("eps", [300.0, 700.0])
def test_extreme_but_valid_epsilon_is_exact(eps):
    # Two pure eps-DP invocations: loss 2 eps with P0-mass (e^eps / (1 + e^eps))^2, else <= 0.
    # delta(t) = m (1 - e^{t - 2 eps}) <= 1e-6  <=>  t = 2 eps + log(1 - 1e-6 / m).
    m = (1.0 / (1.0 + math.exp(-eps))) ** 2
    expected = 2 * eps + math.log1p(-1e-6 / m)
    got, _, theorem = compose({PureDP(eps): 2}).at_delta(1e-6)
    assert theorem == "kairouz-III.3"
    assert got == pytest.approx(expected, rel=2e-12) and got >= expected  # ROUND_UP: 1e-12, upward
    assert kairouz_iii3_by_formula(2, eps, 0.0, got) <= 1e-6 * (1 + 1e-12)


def test_delta_down_to_1e_300_against_decimal_formula():
    c = compose({PureDP(1.0): 10})
    eps = c.epsilon(1e-300)
    # The largest loss is 10; delta(t) = P(L = 10)(1 - e^{t - 10}) reaches 1e-300 within an ulp of 10,
    # and the answer is rounded up by ROUND_UP (1e-12 relative).
    assert 9.0 < eps <= 10.0 * (1 + 2e-12)
    assert kairouz_iii3_by_formula(10, 1.0, 0.0, eps) <= 1e-300 * (1 + 1e-9)
    assert kairouz_iii3_by_formula(10, 1.0, 0.0, eps * (1 - 1e-6)) > 1e-300


def test_extreme_heterogeneous_against_brute_force():
    points = [(700.0, 0.0), (0.5, 1e-3), (3.0, 0.0)]
    c = compose(dict((ApproxDP(e, d), 1) for e, d in points))
    eps, _, theorem = c.at_delta(1e-2)
    assert theorem == "optimal-enumeration" and c.exact
    assert exact_delta(points, eps) <= 1e-2 * (1 + 1e-9)
    assert exact_delta(points, eps * (1 - 1e-6)) > 1e-2


# --- concrete mechanisms and curve kinds at the edge of the double range ---------------------


@pytest.mark.parametrize("guarantee", [
    GaussianMechanism(1e-308), GaussianDP(1e200), LaplaceMechanism(1e-308), ZCDP(1e308),
    Subsampled(0.5, PureDP(1e308)), Subsampled(0.5, LaplaceMechanism(1e-308)),
])
def test_overflowing_mechanisms_answer_infinity(guarantee):
    c = compose({guarantee: 2})
    eps = c.epsilon(1e-6)
    assert eps == math.inf or eps >= 1e307
    assert c.delta(10.0) == pytest.approx(1.0)


def test_mixed_with_overflowing_guarantee_is_valid():
    for mix in ({LaplaceMechanism(1e-308): 1, PureDP(1.0): 1}, {GaussianMechanism(1e-308): 1, PureDP(1.0): 1},
                {ZCDP(1e308): 1, PureDP(1.0): 1}, {ZCDP(0.5): 1, ApproxDP(1e308, 0.1): 1}):
        eps = compose(mix).epsilon(1e-6)
        assert eps >= 1e307  # the huge guarantee alone needs that much


def test_infinite_mu_and_rho_curves():
    for curve in (GaussianCurve(math.inf), ZCDPCurve(math.inf)):
        assert curve.delta_floor == 1.0
        assert curve.delta(50.0) == 1.0 and curve.epsilon(0.5) == math.inf and curve.epsilon(1.0) == 0.0


def test_amplification_beyond_expm1_range():
    # ln(1 + q (e^eps - 1)) = eps + ln q + ln(1 + (1 - q) e^{-eps} / q) -> eps + ln q.
    eps, delta = amplified(1000.0, 1e-6, 0.25)
    assert eps == pytest.approx(1000.0 + math.log(0.25), rel=1e-15) and delta == 0.25e-6
    assert amplified(1e308, 0.0, 1.0)[0] == 1e308
    # Continuity where the two formulas meet.
    assert amplified(699.999, 0, 0.3)[0] == pytest.approx(amplified(700.001, 0, 0.3)[0] - 0.002, rel=1e-12)


def test_discrete_loss_curve_sends_overflowed_losses_to_infinity():
    c = DiscreteLossCurve([math.inf, 1.0, -math.inf], np.log([0.25, 0.5, 0.25]))
    assert c.delta_floor == pytest.approx(0.25)
    assert c.delta(1.0) == pytest.approx(0.25)
    assert c.epsilon(0.2) == math.inf
    with pytest.raises(Exception, match="NaN"):
        DiscreteLossCurve([math.nan], [0.0])


# --- the floor: a target equal to it in exact arithmetic is finite --------------------------


def test_target_at_the_floor_is_finite():
    # Loss 1 with mass 0.7 and the floor 0.1 + 0.2 (0.30000000000000004 in doubles): at delta 0.3 the
    # answer is the largest finite loss, 1, not infinity.
    c = DiscreteLossCurve([1.0], [math.log(0.7)], infinite_mass=0.1 + 0.2)
    assert c.epsilon(0.3) == pytest.approx(1.0, rel=1e-9)
    assert c.epsilon(0.3 * (1 - 1e-12)) == math.inf  # clearly below the floor: still infinite


# --- billions of invocations in bounded memory ----------------------------------------------


@pytest.mark.parametrize("n,eps", [(16, 0.3), (365, 0.05), (10**6, 0.01), (10**9, 1e-4), (10**12, 0.5),
                                   (2, 700.0), (10**6, 700.0)])
def test_log_binomial_against_mpmath(n, eps):
    mpmath.mp.dps = 50
    log_p, log_q = binomial.log_softplus_pair(eps)
    p = 1 / (1 + mpmath.e ** mpmath.mpf(eps))
    mean = n * float(p)
    ls = sorted({0, 1, n // 2, n - 1, n, int(mean), int(mean + 3 * math.sqrt(mean + 1)) % (n + 1)})
    got = binomial.log_pmf(np.array(ls, dtype=float), n, log_p, log_q)
    for l, g in zip(ls, got):
        ref = float(mpmath.log(mpmath.binomial(n, l)) + l * mpmath.log(p) + (n - l) * mpmath.log(1 - p))
        if ref < -700:
            assert g < -690
            continue
        # The double p itself carries one rounding: its effect grows like sqrt(n) (1e-10 at 10^12).
        assert g == pytest.approx(ref, abs=1e-12 * max(1.0, math.sqrt(n) / 1e3) * max(1.0, abs(ref)))


def test_window_tail_bound_holds(monkeypatch):
    monkeypatch.setattr(binomial, "FULL_RANGE", 100)
    n, eps = 4000, 0.2
    log_p, log_q = binomial.log_softplus_pair(eps)
    w = binomial.window(n, log_p, log_q)
    assert 0 < w.lo and w.hi < n  # both tails left out
    mpmath.mp.dps = 50
    p = 1 / (1 + mpmath.e ** mpmath.mpf(eps))
    outside = mpmath.fsum(mpmath.binomial(n, l) * p**l * (1 - p) ** (n - l)
                          for l in list(range(w.lo)) + list(range(w.hi + 1, n + 1)))
    assert float(mpmath.log(outside)) <= w.log_outside
    inside = np.exp(binomial.log_pmf(w.counts(), n, log_p, log_q)).sum()
    assert inside == pytest.approx(1.0, abs=1e-12)


def test_windowed_composition_equals_the_full_sum(monkeypatch):
    n = 150_000
    windowed = canonical_composition([(0.01, 1e-9, n)])
    monkeypatch.setattr(binomial, "FULL_RANGE", 10**7)
    full = canonical_composition([(0.01, 1e-9, n)])
    eps = np.linspace(0.0, 40.0, 81)
    assert np.allclose(windowed.delta(eps), full.delta(eps), rtol=1e-12, atol=1e-300)
    for d in (1e-3, 1e-6, 1e-8):
        assert windowed.epsilon(d) == pytest.approx(full.epsilon(d), rel=1e-12)


@pytest.mark.slow
def test_a_billion_invocations_exact_in_bounded_memory():
    tracemalloc.start()
    c = compose({PureDP(0.01): 10**9})
    eps, _, theorem = c.at_delta(1e-6)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert theorem == "kairouz-III.3" and c.exact
    assert peak < 400 * 2**20
    # Closed forms bound it from above (002 Thm. III.4), the mean loss n eps tanh(eps/2) from below.
    assert 1e9 * 0.01 * math.tanh(0.005) < eps
    kairouz_iii4 = 1e9 * 0.01 * math.tanh(0.005) + math.sqrt(2 * 1e9 * 1e-4 * math.log(math.e + math.sqrt(1e5) / 1e-6))
    assert eps < kairouz_iii4


def test_beyond_the_exact_limit_a_closed_form_answers():
    k = EXACT_COUNT_LIMIT * 100
    c = compose({ApproxDP(1e-5, 1e-20): k})
    eps, _, theorem = c.at_delta(1e-6)
    assert not c.exact and theorem in {"kairouz-III.4", "advanced", "simple", "zcdp"}
    # 002 Thm. III.4 by hand: k eps tanh(eps/2) + sqrt(2 k eps^2 log(e + sqrt(k eps^2) / d~)),
    # d~ = 1 - (1 - 1e-6) / (1 - 1e-20)^k.
    survival = math.exp(k * math.log1p(-1e-20))
    slack = 1 - (1 - 1e-6) / survival
    s1, s2 = k * 1e-5 * math.tanh(5e-6), k * 1e-10
    assert eps <= s1 + math.sqrt(2 * s2 * math.log(math.e + math.sqrt(s2) / slack)) * (1 + 1e-9)


def test_huge_heterogeneous_counts_do_not_allocate():
    # 2 x 10^9 invocations of two kinds: no exact enumeration, no PLD grid (it would need ~10^10
    # points); a closed form answers at once, and it is at least the first group's exact value.
    c = compose({PureDP(0.01): 10**9, ApproxDP(0.02, 1e-19): 10**9})
    eps, _, theorem = c.at_delta(1e-6)
    assert not c.exact and math.isfinite(eps)
    # The composed loss concentrates at its mean, 10^9 (0.01 tanh(0.005) + 0.02 tanh(0.01)) = 2.5e5,
    # with standard deviation ~700: no valid epsilon at 1e-6 lies below ~2.4e5.
    assert eps >= 2.4e5


# --- found by the fuzz suite ---------------------------------------------------------------


def test_split_curve_at_infinite_epsilon_is_its_floor():
    c = compose({ZCDP(0.01): 1, ApproxDP(0.0, 1e-6): 1})
    assert c.curve.delta(math.inf) == pytest.approx(1e-6)  # the zCDP group has no floor, the approx one 1e-6


@tiers.parametrize("mix,expected", [
    ({Subsampled(1.0, LaplaceMechanism(0.001)): 2}, 2000.0),            # rate 1: the Laplace point, 1000 each
    ({GaussianMechanism(0.5, 0.5): 5, ApproxDP(0.5, 0.999999999999): 5}, math.inf),  # floor ~1
    ({ApproxDP(0.5, 1e-3): 365, GaussianDP(1e-308): 365}, math.inf),    # floor 1 - 0.999^365 = 0.31
    ({Subsampled(1.0, PureDP(0.0)): 2**63}, 0.0),                       # the identity, 2^63 times
    ({LaplaceMechanism(1e308, 2.0): 10**9}, 0.0),                        # eps 2e-308 each
], default=[0, 1, 3, 4])  # the third takes about 1 s (the second, its floor by the same route, 0.1 s)
def test_degenerate_mechanisms_answer_at_once(mix, expected):
    eps = compose(mix).epsilon(1e-6)
    assert eps == pytest.approx(expected, rel=1e-6) if math.isfinite(expected) else eps == expected


def test_dp_accounting_out_of_range_is_declined_not_raised():
    # sigma of 1e308 (GDP mu = 1e-308) and a sensitivity of 5e-324: dp-accounting overflows or warns;
    # the PLD route declines and another theorem answers.
    c = compose({GaussianMechanism(5e-324, 5e-324): 2, RandomizedResponse(0.1): 2})
    eps, _, theorem = c.at_delta(1e-6)
    assert math.isfinite(eps) and theorem != "pld"
    # mu = 1 twice and eps 0.1 twice: at least the two Gaussians' exact value (GDP, sqrt(2)).
    assert eps >= compose({GaussianDP(1.0): 2}).epsilon(1e-6)


@tiers.parametrize("count", [1000, 100], default=[1])  # 1000: 0.6 to 0.8 s
def test_pld_epsilon_is_certified_by_its_own_delta(count):
    c = compose({LaplaceMechanism(0.5, 1e-3): count, LaplaceMechanism(0.1): 1})
    eps = c.epsilon(1e-6)
    assert c.delta(eps) <= 1e-6

"""Hardening of solve, the model, the priors and the searches (issue #9).

Each test states the number it expects and where it comes from: a closed form
derived by hand in the test, a brute-force reference, or a bound that a wrong
answer would cross.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special
from scipy.optimize import brentq

import gce.composite
from gce.composite import exact_count_curve
from gce.constraints import ConstraintSet
from gce.errors import NumericalLimitError
from gce.guarantees import ApproxDP, PureDP
from gce.hypotheses import Point, Rates, Uniform
from gce.model import Invocation, Scenario
from gce.solve import solve
from gce.theorems import compose

# ---------------------------------------------------------------------------
# Item 2: generated priors on thousands of databases


def none_vs_any_pure_delta(n: int, eps: float, target_eps: float) -> float:
    """Exact delta(target_eps) of "in none" vs "uniform over the non-empty sets", pure eps on each of n databases.

    Derived by hand: the canonical pair of pure eps is randomized response, output 1 with probability
    a = 1/(1 + e^eps) without the record and 1 - a with it. For an output y with m ones, the sum over
    *all* sets b of prod_i P_{b_i}(y_i) is prod_i (P_0(y_i) + P_1(y_i)) = 1, so
    P1(y) = (1 - P0(y)) / (2^n - 1) with P0(y) = a^m (1 - a)^(n - m). Both depend on y through m only.
    """
    m = np.arange(n + 1, dtype=float)
    log_a, log_1a = -np.logaddexp(0.0, eps), -np.logaddexp(0.0, -eps)
    log_binom = special.gammaln(n + 1.0) - special.gammaln(m + 1.0) - special.gammaln(n - m + 1.0)
    log_point = m * log_a + (n - m) * log_1a
    log_p0 = log_binom + log_point
    log_p1 = log_binom + np.log(-np.expm1(log_point)) - (n * math.log(2.0) + math.log1p(-2.0 ** -n))
    with np.errstate(over="ignore"):  # e^(large) - 1 = inf: the term is 0 after the max
        forward = np.sum(np.exp(log_p0) * np.maximum(-np.expm1(target_eps + log_p1 - log_p0), 0.0))
        backward = np.sum(np.exp(log_p1) * np.maximum(-np.expm1(target_eps + log_p0 - log_p1), 0.0))
    return float(max(forward, backward))


def none_vs_any(n: int, guarantee, delta: float) -> Scenario:
    return Scenario(n, tuple(Invocation(i, guarantee) for i in range(n)),
                    hypotheses=(Point(()), Uniform(min_members=1)), delta=delta)


def test_uniform_support_count_on_2000_databases_is_an_error_not_an_overflow():
    # 2^2000 - 1 sets: the message gives its size in powers of ten instead of formatting it as a float.
    with pytest.raises(NumericalLimitError, match=r"about 10\^602 membership sets"):
        Uniform(min_members=1).distribution(ConstraintSet(2000))
    with pytest.raises(NumericalLimitError, match="2\\^5000 membership sets"):
        Rates((0.5,) * 5000).distribution(ConstraintSet(5000))


def test_none_vs_any_pure_on_10000_databases_matches_the_closed_form():
    n, eps = 10_000, 0.1
    report = solve(none_vs_any(n, PureDP(eps), 1e-6))
    assert report.theorem == "exact-count" and report.exact
    expected = brentq(lambda e: none_vs_any_pure_delta(n, eps, e) - 1e-6, 0.0, n * eps, xtol=1e-13)
    assert expected == pytest.approx(35.558, abs=1e-3)  # the closed form itself, not only the agreement
    assert report.epsilon == pytest.approx(expected, rel=1e-9)
    assert report.epsilon >= expected * (1 - 1e-12)  # never below the exact value
    # Bounds a wrong count would cross: the worst pair (all 10,000 composed) and one database alone.
    assert compose({PureDP(eps): 1}).epsilon(1e-6)[0] < report.epsilon < report.baselines["worst pair"].epsilon


def test_none_vs_any_approx_on_10000_databases_is_sandwiched_by_pure():
    """(eps, delta) on each database: with probability (1 - delta)^n no "delta" output occurs, so the exact
    curve lies between the pure curve and the pure curve plus n delta (joint convexity); the pure
    curve itself is the closed form above."""
    n, eps, delta = 10_000, 0.1, 1e-10
    report = solve(none_vs_any(n, ApproxDP(eps, delta), 1e-5))
    assert report.theorem == "exact-count" and report.exact
    low = brentq(lambda e: none_vs_any_pure_delta(n, eps, e) - 1e-5, 0.0, n * eps, xtol=1e-13)
    high = brentq(lambda e: none_vs_any_pure_delta(n, eps, e) - (1e-5 - n * delta), 0.0, n * eps, xtol=1e-13)
    assert low <= report.epsilon <= high
    assert report.epsilon < report.baselines["worst pair"].epsilon


def test_count_truncation_is_an_upper_bound_within_its_tail(monkeypatch):
    """The count method leaves out outcomes with many "surely absent" symbols, charging their mass at
    infinite loss. With a coarse tail (1e-6 instead of 2^-1000) the curve must stay within
    [exact, exact + tail]; delta 0.05 per database makes the cutoff bite (m_a <= 8 of 60)."""
    n = 60
    invocations = [Invocation(i, ApproxDP(0.3, 0.05)) for i in range(n)]
    args = (Point(()), Uniform(min_members=1), invocations, ConstraintSet(n))
    full = exact_count_curve(*args)
    monkeypatch.setattr(gce.composite, "COUNT_TAIL", 1e-6)
    cutoff, tail = gce.composite._a_only_cutoff(n, math.log(0.05))
    assert cutoff < n and 0 < tail <= 1e-6
    cut = exact_count_curve(*args)
    assert cut.outcomes < full.outcomes
    eps = np.linspace(0.0, 6.0, 25)
    assert np.all(cut.delta(eps) >= full.delta(eps) - 1e-15)
    assert np.all(cut.delta(eps) <= full.delta(eps) + tail + 1e-15)

"""Mixed guarantees at scale against lower bounds computed by dp-accounting alone (never gce's composition).

The exact worst case is a maximum over allowed pairs (001 Thm. 1), so any one allowed pair's epsilon is a
lower bound on it. ``benchmarks/bench_mixed_scale.py`` composes the invocations of a few allowed sets (gce's
witness, a greedy set, random maximal sets) with dp-accounting's optimistic rounding; gce's certified
epsilon must lie above every such bound. The bracket's lower end is the witness's optimistic composition, so
it must lie below dp-accounting's pessimistic epsilon of the same set. The scenarios are those of the
benchmark (``mixed_scenarios.shapes(54, 1)``), one per some shapes, 40 to 1,000 databases, some with
exclusive groups. The first tests check the independent composition itself against closed forms.
"""

from __future__ import annotations

import functools
import math
import os
import sys

import numpy as np
import pytest
from scipy import optimize, special, stats

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))

import bench_mixed_scale as bench  # noqa: E402
import mixed_scenarios  # noqa: E402

from gce import GaussianMechanism, Invocation, PureDP, Scenario, solve  # noqa: E402

pytestmark = pytest.mark.slow

#: Relative margin of the soundness comparisons (floating point only).
MARGIN = 1e-9


def _epsilon_at(delta_of, target: float) -> float:
    """The smallest epsilon >= 0 with ``delta_of(epsilon) <= target`` (a decreasing curve), by bisection."""
    if delta_of(0.0) <= target:
        return 0.0
    hi = 1.0
    while delta_of(hi) > target:
        hi *= 2.0
    return float(optimize.brentq(lambda e: delta_of(e) - target, 0.0, hi, xtol=1e-12, rtol=1e-12))


def _pure_composed_delta(epsilon: float, k: int, x: float) -> float:
    """delta(x) of k compositions of the canonical epsilon-DP pair (randomized response): loss
    ``epsilon (k - 2 i)`` with probability ``C(k, i) p^(k-i) (1-p)^i``, ``p = e^eps / (1 + e^eps)``."""
    i = np.arange(k + 1)
    log_p = -np.logaddexp(0.0, -epsilon)
    log_q = -np.logaddexp(0.0, epsilon)
    log_mass = (special.gammaln(k + 1) - special.gammaln(i + 1) - special.gammaln(k - i + 1)
                + (k - i) * log_p + i * log_q)
    loss = epsilon * (k - 2 * i)
    keep = loss > x
    return float(np.sum(np.exp(log_mass[keep]) * -np.expm1(x - loss[keep])))


def _gaussian_delta(mu: float, x: float) -> float:
    """delta(x) of the Gaussian pair N(0, 1) vs N(mu, 1) (Balle and Wang 2018, Thm. 8)."""
    return float(stats.norm.cdf(-x / mu + mu / 2) - math.exp(x) * stats.norm.cdf(-x / mu - mu / 2))


@pytest.mark.parametrize("epsilon,k,target", [(0.1, 30, 1e-6), (0.23, 7, 1e-5), (0.05, 5, 1e-5)])
def test_independent_pure_composition_brackets_the_closed_form(epsilon: float, k: int, target: float) -> None:
    scenario = Scenario(databases=k, invocations=[Invocation(d, PureDP(epsilon)) for d in range(k)], delta=target)
    composer = bench.Composer(scenario)
    exact = _epsilon_at(lambda x: _pure_composed_delta(epsilon, k, x), target)
    optimistic, pessimistic = composer.epsilon(range(k)), composer.epsilon(range(k), pessimistic=True)
    assert optimistic <= exact * (1 + MARGIN) <= pessimistic * (1 + 2 * MARGIN)
    assert exact - optimistic <= k * bench.INTERVAL + 1e-9  # each loss rounded down by less than the interval


@pytest.mark.parametrize("sigma,k,target", [(3.0, 4, 1e-6), (11.0, 9, 1e-5)])
def test_independent_gaussian_composition_brackets_the_closed_form(sigma: float, k: int, target: float) -> None:
    scenario = Scenario(databases=k, invocations=[Invocation(d, GaussianMechanism(sigma)) for d in range(k)],
                        delta=target)
    composer = bench.Composer(scenario)
    exact = _epsilon_at(lambda x: _gaussian_delta(math.sqrt(k) / sigma, x), target)
    optimistic, pessimistic = composer.epsilon(range(k)), composer.epsilon(range(k), pessimistic=True)
    assert optimistic <= exact * (1 + MARGIN) <= pessimistic * (1 + 2 * MARGIN)
    assert exact - optimistic <= k * bench.INTERVAL + 1e-9


def test_greedy_and_random_sets_are_maximal_and_allowed() -> None:
    scenario = mixed_scenarios.scenario(mixed_scenarios.shapes(54, 1)[1])  # 40 databases, exclusive groups
    for members in [bench.greedy_set(scenario), *bench.random_maximal_sets(scenario, 3, seed=0)]:
        assert scenario.constraints.satisfied(members)
        assert not any(scenario.constraints.satisfied(members | {d}) for d in range(scenario.n) if d not in members)


#: Indices into ``mixed_scenarios.shapes(54, 1)`` (the benchmark's default list) -> None, or, for a case
#: measured outside 2%, (why, strict): an expected failure, reported. A case that fails only because the
#: time limit was reached is not strict (a faster machine may finish it).
CASES: dict[int, tuple[str, bool] | None] = {
    0: None,    # 40 databases, 5 guarantees, at_most 3
    1: None,    # 40, 5, at_most 8 + exclusive groups
    4: None,    # 40, 20, at_most 8
    5: None,    # 40, 20, at_most 25 (0.78%: the count search closes in about 1.5 s)
    6: None,    # 40, 60, at_most 3 + exclusive groups
    10: None,   # 200, 5, at_most 8
    13: None,   # 200, 20, at_most 8
    15: None,   # 200, 60, at_most 3 (an exact witness composition: its epsilon is the bracket's lower end)
    18: None,   # 1000, 5, at_most 3 + exclusive groups
    22: None,   # 1000, 20, at_most 8
}


@functools.lru_cache(maxsize=None)
def _solved(index: int):
    shape = mixed_scenarios.shapes(54, 1)[index]
    scenario = mixed_scenarios.scenario(shape)
    report = solve(scenario)
    composer = bench.Composer(scenario)
    bounds = bench.lower_bounds(scenario, report.witness, randoms=3, seed=shape.seed, composer=composer)
    return scenario, report, composer, bounds


@pytest.mark.parametrize("index", sorted(CASES))
def test_epsilon_above_every_independent_lower_bound(index: int) -> None:
    scenario, report, _, bounds = _solved(index)
    assert math.isfinite(report.epsilon)
    for bound in bounds:
        assert report.epsilon >= bound.epsilon * (1 - MARGIN), (bound.name, sorted(bound.members))


@pytest.mark.parametrize("index", sorted(CASES))
def test_witness_allowed_and_bracket_consistent(index: int) -> None:
    scenario, report, composer, _ = _solved(index)
    assert report.witness is not None
    members = bench.differing(report.witness)
    assert members and scenario.constraints.satisfied(members)
    if report.bracket is not None:
        lower, upper = report.bracket
        assert 0 < lower <= upper
        assert upper == pytest.approx(report.epsilon, rel=MARGIN)
        # the lower end is the witness's optimistic composition: below dp-accounting's pessimistic answer
        assert lower <= composer.epsilon(members, pessimistic=True) * (1 + MARGIN)


@pytest.mark.parametrize("index", [i if case is None else pytest.param(
    i, marks=pytest.mark.xfail(reason=case[0], strict=case[1])) for i, case in sorted(CASES.items())])
def test_within_two_percent(index: int) -> None:
    _, report, _, _ = _solved(index)
    assert bench.width(report) <= 0.02

"""solve() within its time limit, composition included, and the report's bracket.

The bracket's values are checked against the exact worst case: exact composition of canonical pairs
(gce.accounting.theorems.canonical_composition, itself checked against brute force in test_theorems.py)
maximised over the allowed pairs by listing them here. The time-limit tests check a sound answer by a
certified lower curve (BatchCurve.lower, checked against brute force in test_batch.py).
"""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest

import tiers

from gce import ApproxDP, GaussianMechanism, Invocation, PureDP, Scenario, Subsampled, solve
from gce.accounting import batch, theorems
from gce.accounting.theorems import canonical_composition, compose
from gce.constraints import AtMost, ConstraintSet
from gce.errors import InvalidParameterError
from gce.report import Report

POINTS = [(0.05 + 0.03 * i, 1e-9 * (i + 1)) for i in range(10)]  # 8 or more distinct points: the batch row


def _scenario(m: int | None, repeat: int = 2, **target) -> Scenario:
    n = len(POINTS)
    constraints = ConstraintSet(n, [AtMost(m)]) if m is not None else None
    return Scenario(databases=n, invocations=[Invocation(i, ApproxDP(e, d), repeat) for i, (e, d) in enumerate(POINTS)],
                    constraints=constraints, **target)


def _exact_worst(m: int, repeat: int, delta=None, epsilon=None) -> float:
    """max over the unbounded pairs (empty, b), |b| <= m, of the exact composition (monotone: |b| = m)."""
    values = []
    for b in itertools.combinations(range(len(POINTS)), m):
        curve = canonical_composition([(*POINTS[i], repeat) for i in b])
        values.append(float(curve.epsilon(delta)) if epsilon is None else float(curve.delta(epsilon)))
    return max(values)


@pytest.fixture
def batch_wins(monkeypatch):
    """Exact enumeration off, so that the batch row answers lists small enough to check exactly."""
    monkeypatch.setattr(theorems, "ENUMERATION_LIMIT", 1)


@tiers.parametrize("m", [10, 8], default=1)  # at most 8 of 10: 45 maximal pairs composed, 1 s (slow tier)
def test_the_bracket_holds_the_exact_worst_case(batch_wins, m):
    report = solve(_scenario(m, delta=1e-6))
    exact = _exact_worst(m, 2, delta=1e-6)
    assert report.theorem == "batch" and not report.exact
    low, high = report.bracket
    assert high == report.epsilon
    assert low <= exact <= high <= exact * 1.01
    assert high - low <= 0.02 * high
    note = next(n for n in report.notes if n.startswith("batch composition: epsilon in ["))
    assert f"[{low:.5g}, {high:.5g}]" in note and f"bracket {(high - low) / high:.2%} wide" in note
    assert report.to_dict()["bracket"] == {"lower": low, "upper": high}


def test_the_delta_bracket_at_an_epsilon_target(batch_wins):
    report = solve(_scenario(10, epsilon=1.0))
    exact = _exact_worst(10, 2, epsilon=1.0)
    low, high = report.bracket
    assert high == report.delta and low <= exact <= high
    assert any(n.startswith("batch composition: delta at epsilon 1 in [") for n in report.notes)


def test_exact_answers_carry_no_bracket():
    report = solve(_scenario(3, delta=1e-6))  # optimal enumeration: exact
    assert report.exact and report.bracket is None and report.to_dict()["bracket"] is None
    assert not any("bracket" in n for n in report.notes)


def test_the_bracket_round_trips_through_json(batch_wins):
    data = solve(_scenario(10, delta=1e-6)).to_dict()
    assert Report.from_dict(data).to_dict() == data and Report.from_dict(data).bracket is not None
    with pytest.raises(InvalidParameterError, match=r"data\.bracket: lower must be at most upper"):
        Report.from_dict({**data, "bracket": {"lower": 2.0, "upper": 1.0}})
    with pytest.raises(InvalidParameterError, match=r"data\.bracket\.lower: must be a number"):
        Report.from_dict({**data, "bracket": {"lower": "x", "upper": 1.0}})
    with pytest.raises(InvalidParameterError, match=r"data\.bracket: must be null or"):
        Report.from_dict({**data, "bracket": [1.0, 2.0]})


# ---------------------------------------------------------------------------
# The time limit covers the compositions

#: Seconds a solve may overrun its limit: the fallback compositions (a few milliseconds per distinct
#: noise mechanism on the coarsest grid) and the searches' minimum shares, on a shared machine.
OVERHEAD = 1.0


def _noise_mix(n: int, repeat: int, seed: int) -> Scenario:
    rng = np.random.default_rng(seed)
    invocations = [Invocation(i, Subsampled(float(rng.uniform(0.001, 0.01)), GaussianMechanism(float(rng.uniform(0.8, 1.5)))),
                              repeat) for i in range(n)]
    invocations.append(Invocation(0, PureDP(0.1), 2))
    return Scenario(databases=n, invocations=invocations, delta=1e-6)


def _certified_lower(scenario: Scenario, interval: float) -> float:
    """A certified lower bound on the exact answer (no constraints: every invocation differs)."""
    return float(batch.BatchCurve(scenario.table.multiset(), interval=interval).lower.epsilon(1e-6))


#: A certified lower bound on the exact epsilon at 1e-6 of ``_noise_mix(4, 100, seed=11)``: its batch
#: composition's lower curve on a grid of 0.002 (0.6 s to build; recomputed in the slow tier). The
#: composition at dp-accounting's default grid gives 1.41528 (4.6 s).
LOWER_4_100_11 = 1.039103  # rounded down


def test_a_tiny_time_limit_bounds_a_big_noise_mix_within_the_limit():
    compose({GaussianMechanism(2.0): 1, PureDP(0.1): 1})  # dp-accounting imported (a one-off second)
    scenario = _noise_mix(4, 100, seed=11)  # fresh mechanisms: about 2.5 s of dp-accounting builds at 1e-4
    start = time.perf_counter()
    report = solve(scenario, time_limit=0.05)
    assert time.perf_counter() - start < 0.05 + OVERHEAD
    assert report.time_limit_reached
    assert any(n.startswith("time limit reached: composition of [") and " on a grid of width " in n
               for n in report.notes)
    assert LOWER_4_100_11 <= report.epsilon < 1.1 * 1.41528  # sound, and within 10% of the full composition


@pytest.mark.slow
def test_the_certified_lower_bound_of_the_fast_twin():
    assert LOWER_4_100_11 <= _certified_lower(_noise_mix(4, 100, seed=11), 0.002) <= LOWER_4_100_11 * (1 + 1e-6)


@pytest.mark.slow
def test_the_time_limit_covers_a_noise_mix_of_the_benchmark_size():
    compose({GaussianMechanism(2.0): 1, PureDP(0.1): 1})
    scenario = _noise_mix(40, 1000, seed=12)
    start = time.perf_counter()
    tiny = solve(scenario, time_limit=0.5)
    assert time.perf_counter() - start < 0.5 + OVERHEAD
    start = time.perf_counter()
    default = solve(scenario)  # 5 s: a finer fallback grid, close to the full composition
    assert time.perf_counter() - start < 5.0 + OVERHEAD
    full = solve(scenario, time_limit=600)
    assert not full.time_limit_reached and not any(n.startswith("time limit reached") for n in full.notes)
    assert full.epsilon <= default.epsilon <= tiny.epsilon
    assert default.epsilon <= full.epsilon * 1.02

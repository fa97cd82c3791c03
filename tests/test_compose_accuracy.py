"""Compositions at the accuracy asked for; the time limit only stops (docs/design.md, "Brackets and
exactness" and "Same question, same answer"; gce/effort.py).

* The same question gives the same numbers: a solve under a clock ten times faster (a machine ten times
  slower, :func:`gce.effort.slowed`) with a generous limit gives the same report as under the real clock,
  and a composition does not depend on what was built before it in the process.
* A tiny limit is visible (``time_limit_reached``) and the answer stays sound: checked against the exact
  worst case (canonical pairs composed exactly, gce.accounting.theorems.canonical_composition, itself
  checked against brute force in test_theorems.py) or against the certified lower end of a fine bracket.
* ``rtol`` decides the bracket: at most ``rtol`` wide at the target, holding the exact value.
* The certified lower curves (:func:`gce.accounting.batch.lower_at`, ``Report.lower_curve``) lie below
  brute force at every point.
"""

from __future__ import annotations

import itertools
import math

import pytest

import reference

from gce import ApproxDP, GaussianMechanism, Invocation, PureDP, Scenario, Subsampled, effort, solve
from gce.accounting import batch, theorems
from gce.accounting.theorems import canonical_composition, compose, compose_within
from gce.constraints import AtMost, ConstraintSet

#: 10 distinct (epsilon, delta) points: the batch row composes them (exact enumeration switched off).
POINTS = [(0.05 + 0.03 * i, 1e-9 * (i + 1)) for i in range(10)]


@pytest.fixture
def batch_wins(monkeypatch):
    """Exact enumeration off, so that the batch row answers lists small enough to check exactly."""
    monkeypatch.setattr(theorems, "ENUMERATION_LIMIT", 1)


def _points_scenario(m: int, repeat: int = 2) -> Scenario:
    n = len(POINTS)
    return Scenario(databases=n, invocations=[Invocation(i, ApproxDP(e, d), repeat) for i, (e, d) in enumerate(POINTS)],
                    constraints=ConstraintSet(n, [AtMost(m)]), delta=1e-6)


def _exact_worst(m: int, repeat: int, delta: float) -> float:
    """max over the unbounded pairs (empty, b), |b| <= m, of the exact epsilon (monotone: |b| = m)."""
    return max(float(canonical_composition([(*POINTS[i], repeat) for i in b]).epsilon(delta))
               for b in itertools.combinations(range(len(POINTS)), m))


def _mixed() -> Scenario:
    """A Gaussian mechanism beside many copies of three (epsilon, delta) guarantees: the batch row, whose
    bracket at dp-accounting's interval is 0.36% wide (the rounded-down copies), so that rtol 0.001 refines it."""
    invocations = [Invocation(0, GaussianMechanism(3.0), 1), Invocation(1, PureDP(0.01), 1000),
                   Invocation(2, ApproxDP(0.02, 1e-9), 500), Invocation(3, PureDP(0.03), 200)]
    return Scenario(databases=4, invocations=invocations, constraints=ConstraintSet(4, [AtMost(3)]), delta=1e-6)


def _width(bracket: tuple[float, float]) -> float:
    return effort.relative_width(*bracket)


def test_the_width_is_what_the_upper_end_can_overstate(batch_wins):
    """rtol bounds ``upper / lower - 1``: a bracket (0.99, 1.0) is 1.0101% wide (its upper end can be that
    much above the exact value), so it does not meet rtol 0.01; nothing certified above 0, or an infinite
    upper end, is unboundedly wide; the ends meeting is 0."""
    assert effort.relative_width(0.99, 1.0) == pytest.approx(1 / 0.99 - 1, rel=1e-12)
    assert effort.relative_width(0.99, 1.0) > 0.01
    assert effort.relative_width(1.0, 1.01) == pytest.approx(0.01, rel=1e-12)
    assert effort.relative_width(0.0, 1e-9) == math.inf == effort.relative_width(1.0, math.inf)
    assert effort.relative_width(2.0, 2.0) == 0.0 == effort.relative_width(math.inf, math.inf)
    assert effort.describe_width(1 / 0.99 - 1) == "1.01%" and effort.describe_width(math.inf) == "unbounded"
    # and the reports state it so
    report = solve(_points_scenario(10), rtol=0.01, time_limit=60)
    low, high = report.bracket
    assert report.accuracy == high / low - 1 <= 0.01


# ---------------------------------------------------------------------------
# Same question, same answer


def test_a_slowed_clock_gives_the_same_report():
    scenario = _mixed()
    batch.clear_caches()
    plain = solve(scenario, time_limit=60)
    batch.clear_caches()
    with effort.clock(effort.slowed(10.0)):
        slowed = solve(scenario, time_limit=60)
    assert plain.theorem == "batch" and not plain.exact and plain.bracket is not None
    assert not plain.time_limit_reached and not slowed.time_limit_reached
    assert slowed.to_dict() == plain.to_dict()
    deltas = [1e-3, 1e-6, 1e-9]
    assert [slowed.lower_curve.epsilon(d) for d in deltas] == [plain.lower_curve.epsilon(d) for d in deltas]


@pytest.mark.slow
def test_a_slowed_clock_gives_the_same_report_on_subsampled_gaussians():
    # Subsampled Gaussians beside Gaussians and points: dp-accounting's pessimistic and optimistic pmfs,
    # auxiliary (coarser) compositions for the ranking and the baselines, enumeration of the maximal pairs.
    invocations = [Invocation(0, GaussianMechanism(2.0), 3), Invocation(1, GaussianMechanism(3.0), 5),
                   Invocation(2, Subsampled(0.05, GaussianMechanism(1.5)), 20), Invocation(3, PureDP(0.1), 4),
                   Invocation(2, PureDP(0.05), 2)]
    scenario = Scenario(databases=4, invocations=invocations, constraints=ConstraintSet(4, [AtMost(3)]), delta=1e-6)
    batch.clear_caches()
    plain = solve(scenario, time_limit=60)
    batch.clear_caches()
    with effort.clock(effort.slowed(10.0)):
        slowed = solve(scenario, time_limit=60)
    assert plain.theorem == "batch" and plain.bracket is not None and not slowed.time_limit_reached
    assert slowed.to_dict() == plain.to_dict()


def test_a_composition_does_not_depend_on_what_was_built_before():
    # An auxiliary composition's pmfs are split from those of a fixed interval, whichever were built before
    # (a subsampled Gaussian whose build on dp-accounting's interval is not cheap: from the 16 times coarser one).
    ms = {Subsampled(0.05, GaussianMechanism(2.0)): 100, PureDP(0.1): 3}  # differed in the 8th digit
    batch.clear_caches()
    with batch.auxiliary():
        fresh = compose(ms).epsilon(1e-6)
    compose(ms)  # builds the pmfs on dp-accounting's interval
    batch.plan.cache_clear()
    with batch.auxiliary():
        after = compose(ms).epsilon(1e-6)
    assert after == fresh


def test_compose_within_is_compose_when_the_cost_fits():
    ms = {ApproxDP(e, d): 2 for e, d in POINTS}
    with effort.clock(effort.slowed(10.0)):
        deadline = effort.Deadline(60.0)
    composition, stopped = compose_within(ms, 0.01, deadline)
    assert stopped is None and not deadline.reached
    assert composition.epsilon(1e-6) == compose(ms, 0.01).epsilon(1e-6)


# ---------------------------------------------------------------------------
# The cap only stops, visibly, soundly


def test_compose_within_a_spent_deadline_falls_back_soundly_and_says_so():
    ms = {Subsampled(0.01, GaussianMechanism(1.3)): 50, PureDP(0.1): 2}
    deadline = effort.Deadline(1e-9)
    composition, stopped = compose_within(ms, 0.01, deadline)
    assert deadline.reached and deadline.stops == (stopped,)
    assert " on a grid of width " in stopped and "the grid for rtol 0.01" in stopped
    full = compose(ms, 0.01).curve
    lower = full.lower  # certified below the exact curve (test_batch.py)
    for d in (1e-3, 1e-6):
        assert composition.epsilon(d) >= lower.epsilon(d)
        assert composition.epsilon(d) >= full.epsilon(d) * (1 - 1e-9)  # a coarser grid: looser, never tighter


def test_a_tiny_limit_is_reached_visibly_and_soundly(batch_wins):
    report = solve(_points_scenario(10), time_limit=1e-3)
    exact = _exact_worst(10, 2, 1e-6)
    assert report.time_limit_reached and report.to_dict()["time_limit_reached"]
    assert any(n.startswith("time limit reached: ") for n in report.notes)
    assert report.epsilon >= exact


def test_a_tiny_limit_on_the_mixed_scenario_is_sound():
    fine = solve(_mixed(), time_limit=60, rtol=0.001)
    tiny = solve(_mixed(), time_limit=1e-3)
    assert tiny.time_limit_reached and not fine.time_limit_reached
    assert tiny.epsilon >= fine.bracket[0]  # above the certified lower end of the fine bracket


# ---------------------------------------------------------------------------
# rtol decides the bracket


@pytest.mark.parametrize("rtol", [0.05, 0.01, 0.001])
def test_the_bracket_holds_the_exact_worst_case_within_rtol(batch_wins, rtol):
    report = solve(_points_scenario(10), rtol=rtol, time_limit=60)
    exact = _exact_worst(10, 2, 1e-6)
    low, high = report.bracket
    assert report.rtol == rtol and not report.time_limit_reached
    assert low <= exact <= high and high == report.epsilon
    assert _width(report.bracket) <= rtol


def test_rtol_refines_the_bracket_of_the_mixed_scenario():
    default, fine, loose = (solve(_mixed(), time_limit=60, rtol=r) for r in (0.01, 0.001, 0.05))
    assert 0.001 < _width(default.bracket) <= 0.01
    assert _width(fine.bracket) <= 0.001
    assert any("lower curve on a grid of width" in n for n in fine.notes)
    assert _width(loose.bracket) <= 0.05
    # Every bracket holds the exact value: they meet.
    for a, b in itertools.permutations((default, fine, loose), 2):
        assert a.bracket[0] <= b.bracket[1]
    # The looser accuracy composes on a coarser grid (less work), the finer one never coarser.
    ms = _mixed().table.multiset()
    intervals = [compose(dict(ms), r).curve.interval for r in (0.001, 0.01, 0.05)]
    assert intervals[0] == intervals[1] < intervals[2]


def test_the_grid_of_a_list_of_points_follows_rtol():
    ms = {ApproxDP(e, d): 2 for e, d in POINTS}
    coarse, fine = (batch.BatchCurve(tuple(ms.items()), r, batch.aligned_interval(tuple(ms.items()), r))
                    for r in (0.01, 0.0001))
    assert fine.interval < coarse.interval
    assert _width(fine.epsilon_bracket(1e-6)) <= _width(coarse.epsilon_bracket(1e-6))


# ---------------------------------------------------------------------------
# Certified lower curves


@pytest.mark.parametrize("interval", [1e-2, 1e-3, 1e-4])
def test_lower_at_any_grid_lies_below_brute_force(interval):
    points = [(0.3, 0.0), (0.7, 1e-4), (1.1, 0.0), (0.2, 0.02)]
    guarantees = [PureDP(e) if d == 0 else ApproxDP(e, d) for e, d in points]
    lower = batch.lower_at(guarantees, interval)
    for eps in (0.0, 0.5, 1.0, 2.0):
        assert lower.delta(eps) <= reference.exact_delta(points, eps) * (1 + 1e-12) + 1e-15
    exact = compose(guarantees)
    for d in (1e-2, 1e-4):
        assert lower.epsilon(d) <= exact.epsilon(d)


def test_the_report_carries_the_lower_curve_below_the_exact_worst_case(batch_wins):
    report = solve(_points_scenario(10))
    assert report.lower_curve is not None and not report.exact
    assert report.lower_curve.epsilon(1e-6) == pytest.approx(report.bracket[0], rel=1e-12)
    worst = canonical_composition([(*p, 2) for p in POINTS])  # AtMost(10) of 10: every database differs
    for d in (1e-2, 1e-4, 1e-8):
        assert report.lower_curve.epsilon(d) <= float(worst.epsilon(d)) <= report.curve.epsilon(d)
    for eps in (0.5, 2.0, 4.0):
        assert report.lower_curve.delta(eps) <= float(worst.delta(eps)) <= report.curve.delta(eps)


def test_an_exact_report_is_its_own_lower_curve():
    report = solve(_points_scenario(3))  # optimal enumeration: exact
    assert report.exact and report.lower_curve is report.curve

"""The Poisson route (none vs at least one of many databases) keeps to the accuracy contract: within rtol and
the same numbers under a slowed clock, a visible stop under a tiny limit, sound against a fine reference."""

from __future__ import annotations

import functools
import math
import time

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution

from gce import Invocation, Point, Scenario, Uniform, effort, solve
from gce.accounting.guarantees import GaussianMechanism
from gce.priors.allocation import poisson_curve

import tiers

SIGMA = 50.0


def _none_vs_any(n: int, epsilon: float, sigma: float = SIGMA) -> Scenario:
    return Scenario(n, [Invocation(i, GaussianMechanism(sigma)) for i in range(n)],
                    hypotheses=(Point(()), Uniform(1)), epsilon=epsilon)


def test_split_lower_curve_brackets_dp_accounting_poisson_subsampled_gaussians():
    # 10 databases at rate 0.1, mu 1: dp-accounting's subsampled Gaussian composed (pessimistic: at
    # far below 1e-4 here); ours: a certified bracket around it, within the default rtol.
    curve = poisson_curve([(1.0, 0.1, 10)], epsilon=1.0)
    low, high = curve.delta_bracket(1.0)
    pld = privacy_loss_distribution.from_gaussian_mechanism(1.0, sampling_prob=0.1, value_discretization_interval=1e-4)
    peer = float(pld.self_compose(10).get_delta_for_epsilon(1.0))
    assert low <= peer * (1 + 1e-4) and peer * (1 - 1e-4) <= high
    assert (high - low) / high <= 0.005


@functools.cache
def _fine(n: int, epsilon: float):
    """The n-database question under a generous limit (shared by the tests below)."""
    return solve(_none_vs_any(n, epsilon), time_limit=60)


#: The default tier's question (200 databases, delta about 5.5e-3 at epsilon 0.2: two seconds); 1,000 databases
#: at epsilon 1 (delta about 1e-3) in the slow tier.
SIZES = tiers.parametrize("n, epsilon", [(200, 0.2), (1000, 1.0)], default=1)


@SIZES
def test_none_vs_any_within_rtol_and_identical_under_a_slowed_clock(n, epsilon):
    scenario = _none_vs_any(n, epsilon)
    report = _fine(n, epsilon)
    with effort.clock(effort.slowed(10.0)):
        slowed = solve(scenario, time_limit=60)
    assert not report.time_limit_reached and not slowed.time_limit_reached
    assert report.accuracy <= 0.01
    assert report.delta == slowed.delta and report.bracket == slowed.bracket
    # Poisson subsampling at rate 1/2 of n Gaussians (mu 0.02): dp-accounting's, the empty set's share
    # 2^-n being nothing at this scale.
    pld = privacy_loss_distribution.from_gaussian_mechanism(SIGMA, sampling_prob=0.5,
                                                            value_discretization_interval=1e-4)
    peer = float(pld.self_compose(n).get_delta_for_epsilon(epsilon))
    low, high = report.bracket
    assert low <= peer * 1.001 and peer * 0.999 <= high


@SIZES
def test_none_vs_any_tiny_limit_is_visible_and_sound(n, epsilon):
    scenario = _none_vs_any(n, epsilon)
    fine = _fine(n, epsilon)
    start = time.perf_counter()
    # on a clock a hundred times fast (0.5 ms of this machine's time): the uncapped solve takes about 30 ms
    # (200 databases) or 60 ms (1,000) on 2 shared cores under load (the lattice engine; 0.9 s and 4.5 s
    # before), so that the cap binds on a machine several times faster too; the overrun is checked on real time
    with effort.clock(effort.slowed(100.0)):
        cut = solve(scenario, time_limit=0.05)
    assert time.perf_counter() - start <= 3 * (1.1 * 0.05 + 0.5)
    assert cut.time_limit_reached
    assert any("time limit reached" in note for note in cut.notes)
    low, high = cut.bracket
    # sound: the stopped bracket holds the fine one
    assert low <= fine.bracket[1] and fine.bracket[0] <= high
    assert cut.delta >= fine.bracket[0]


def test_first_grid_that_does_not_fit_gives_closed_forms_and_a_stop():
    deadline = effort.Deadline(1e-9)
    with effort.within(deadline):
        curve = poisson_curve([(0.02, 0.5, 10_000)], epsilon=2.0)
    assert deadline.reached and "first grid" in deadline.stops[0]
    # above: every database a member, GDP(0.02 * sqrt(10,000)) = GDP(2); below: delta 0
    from gce.accounting.curves import GaussianCurve
    assert math.isclose(curve.delta(2.0), GaussianCurve(2.0).delta(2.0), rel_tol=1e-12)
    assert curve.delta_bracket(2.0)[0] == 0.0


@pytest.mark.slow
def test_none_vs_any_10000_under_the_default_limit():
    scenario = _none_vs_any(10_000, 2.0)
    start = time.perf_counter()
    report = solve(scenario, time_limit=5.0)
    elapsed = time.perf_counter() - start
    assert elapsed <= 3 * (1.1 * 5.0 + 0.5)
    assert report.accuracy <= 0.01 or report.time_limit_reached
    pld = privacy_loss_distribution.from_gaussian_mechanism(SIGMA, sampling_prob=0.5,
                                                            value_discretization_interval=1e-4)
    peer = float(pld.self_compose(10_000).get_delta_for_epsilon(2.0))
    low, high = report.bracket
    assert low <= peer * 1.01 and peer * 0.99 <= high


@pytest.mark.slow  # about 6 s; the rtol's path through the routes is checked fast in test_routes_rtol.py
def test_a_finer_rtol_reaches_the_poisson_route():
    scenario = _none_vs_any(3, 1.0, sigma=2.0)
    coarse, fine = solve(scenario, time_limit=60), solve(scenario, time_limit=60, rtol=0.001)
    assert fine.theorem == coarse.theorem == "Poisson subsampling at rate 1/2 (uniform prior)"
    assert not fine.time_limit_reached and fine.rtol == 0.001
    # the finer rtol reaches the route: its bracket is within it and narrower than the default's (the lattice
    # engine can meet the default well inside it: 0.087% here at 3 steps)
    assert fine.accuracy <= 0.001 and coarse.accuracy <= 0.01 and fine.accuracy < coarse.accuracy
    # both brackets hold the exact value: they overlap, the finer inside the coarser's upper end
    assert coarse.bracket[0] <= fine.bracket[1] and fine.bracket[0] <= coarse.bracket[1]


@pytest.mark.parametrize("interval", [0.05, 0.01, 1e-3])
def test_the_lattice_lower_curve_is_below_the_truth_on_any_loss_grid(interval):
    # 40 databases of mu 0.5 at rate 0.3: dp-accounting's optimistic composition (a lower bound on the exact
    # curve) at a fine interval; ours, both curves on a coarse lattice of the loss (the spread above, the
    # garbled cells shifted by their mean rounding below), must stay on either side of it.
    from gce.priors.allocation import poisson as poisson_module
    from gce.priors.allocation.ratios import GaussianRatio
    parts = [poisson_module._lattice_part(GaussianRatio(0.5), 0.3, 40, interval, 1e-14, 1e-14)]
    composed = poisson_module._step(parts, interval, 1e-6, None)
    eps = np.array([0.25, 0.5, 1.0, 2.0])
    optimistic = privacy_loss_distribution.from_gaussian_mechanism(
        2.0, sampling_prob=0.3, value_discretization_interval=1e-4, pessimistic_estimate=False).self_compose(40)
    truth_below = np.array([optimistic.get_delta_for_epsilon(float(e)) for e in eps])
    pessimistic = privacy_loss_distribution.from_gaussian_mechanism(
        2.0, sampling_prob=0.3, value_discretization_interval=1e-4).self_compose(40)
    truth_above = np.array([pessimistic.get_delta_for_epsilon(float(e)) for e in eps])
    low = composed.lower.delta(eps)
    assert np.all(low <= truth_above * (1 + 1e-6) + 1e-12)
    assert np.all(composed.upper.delta(eps) >= truth_below)
    assert np.all(low > 0)  # and not vacuous

"""Parameters at the ends of the double range: sound answers without numpy warnings.

Epsilons of 1e303 repeated a million times and of 5e307, Renyi statistics near 1e308, weight problems
with weights of 1e20 (HiGHS's infinite cost) and beyond, ledgers whose spends reach 1e308. Each case
ran into an overflow warning, a misleading error or (the MILP) a bound below the optimum. The
references are hand-derived limits, 60-digit mpmath and the same problem at unit scale.
"""

from __future__ import annotations

import json
import math
import warnings

import mpmath
import numpy as np
import pytest

import gce
from gce.cli import main
from gce.constraints import ConstraintSet
from gce.constraints.kinds import AtMost, Conflicts, Together
from gce.ledger.worst import WorstCase
from gce.solvers import WeightProblem, worst_pair
from gce.solvers.mixed import RENYI_ORDERS, renyi_terms


@pytest.fixture(autouse=True)
def _no_warnings():
    """Every case must run without a numpy or Python warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def _scenario_file(tmp_path, epsilon: float, repeat: int = 1, m: int = 2) -> str:
    path = tmp_path / "huge.toml"
    path.write_text(f'title = "huge"\ndatabases = 5\ndelta = 1e-6\n\n[[invocations]]\ndatabases = "all"\n'
                    f'mechanism = {{ kind = "pure", epsilon = {epsilon!r} }}\nrepeat = {repeat}\n\n'
                    f'[[constraints]]\nkind = "at_most"\nm = {m}\n')
    return str(path)


def test_solve_json_pure_1e303_repeated_a_million_times_is_infinite(capsys, tmp_path):
    # Two databases differ, 2 x 10^6 invocations of 1e303: the loss is 2e309 with probability ~1, beyond
    # every double, so no finite epsilon is valid at 1e-6 (and parallel composition gives inf too).
    assert main(["solve", _scenario_file(tmp_path, 1e303, repeat=1_000_000), "--json"]) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert err == "" and report["epsilon"] == "inf" and report["differing_count"] == 2_000_000
    assert report["baselines"]["parallel"]["epsilon"] == "inf"
    assert "beyond the floating-point range" in report["notes"][-1]


def test_solve_json_pure_5e307_twice_is_1e308(capsys, tmp_path):
    # Two invocations of 5e307 differ: P(L = 1e308) = (1 + e^-5e307)^-2 = 1 in doubles, so delta(e) >=
    # 1 - e^(e - 1e308) - 2e^-5e307 > 1e-6 below 1e308 - 14: the exact epsilon is 1e308 in doubles.
    assert main(["solve", _scenario_file(tmp_path, 5e307), "--json"]) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert err == "" and 1e308 <= report["epsilon"] <= 1e308 * (1 + 1e-9)
    assert report["baselines"]["parallel"]["epsilon"] == 1e308


def _rr_divergence(eps: float, alpha: float) -> float:
    """Renyi divergence of binary randomized response at eps, in 60 digits."""
    with mpmath.workdps(60):
        e, a = mpmath.mpf(eps), mpmath.mpf(alpha)
        return float((mpmath.log(mpmath.exp(a * e) + mpmath.exp((1 - a) * e)) - mpmath.log(1 + mpmath.exp(e)))
                     / (a - 1))


@pytest.mark.parametrize("eps", [1e-300, 1e-12, 1e-6, 0.01, 0.5, 0.999, 1.0, 3.0, 40.0, 1e4, 1e300, 1e308])
def test_renyi_terms_of_pure_points_are_upper_bounds_within_1e_11(eps):
    terms, leak = renyi_terms(gce.PureDP(eps))
    assert leak == 0.0 and np.all(np.isfinite(terms)) and np.all(terms <= eps)
    for alpha, value in zip(RENYI_ORDERS, terms):
        reference = _rr_divergence(eps, float(alpha))
        # (at eps = 1e-12 the zCDP candidate alpha eps^2 / 2 is one ulp below the 60-digit value)
        assert reference * (1 - 2.3e-16) <= value <= reference * (1 + 1e-11) + 1e-320, (alpha, value, reference)


def _conflicted(n: int = 60) -> ConstraintSet:
    """Overlapping at_most groups, conflicts and a together group: only the MILP accepts it."""
    return ConstraintSet(n, [AtMost(7, range(0, 40)), AtMost(9, range(20, 60)), AtMost(5, range(10, 50, 2)),
                             Conflicts([(0, 5), (1, 9), (2, 3)]), Together([6, 7])])


@pytest.mark.parametrize("scale", [1e20, 1e300, 1e-300])
def test_weight_problem_answer_scales_with_its_weights(scale):
    # HiGHS takes costs of 1e20 and more as infinite: at scale 1e20 the MILP called a pair of weight
    # 10.90 optimal, below the 12.163 found at unit scale. The maximum scales with the weights.
    constraints = _conflicted()
    base = np.random.default_rng(0).random(constraints.n)
    unit = worst_pair(WeightProblem(constraints, base), 20.0)
    scaled = worst_pair(WeightProblem(constraints, base * scale), 20.0)
    assert unit.method == scaled.method == "milp" and "scaled" in scaled.detail
    assert scaled.upper_bound >= unit.value * scale * (1 - 1e-12)
    assert scaled.value >= unit.upper_bound * scale * (1 - 1e-4)  # the same optimum, up to the MILP's gap
    assert scaled.value == pytest.approx(WeightProblem(constraints, base * scale).value(*scaled.witness), rel=0)


def test_weight_problem_of_weights_near_the_double_range_has_an_infinite_bound_not_an_error():
    constraints = ConstraintSet(12, [AtMost(3), Conflicts([(0, 1)])])  # exhaustive: every set enumerated
    result = worst_pair(WeightProblem(constraints, np.full(12, 1.5e308)), 5.0)
    assert result.value == math.inf and result.upper_bound == math.inf


def test_worst_case_with_infinite_sums_is_infinite_only_where_a_pair_reaches_them():
    # Database 4 can never be in a set (at_most 0 among it): its infinite sum never differs.
    constraints = ConstraintSet(5, [AtMost(1), AtMost(0, [4])])
    tracker = WorstCase(constraints, "unbounded", 1, 1.0)
    bracket = tracker.narrow(np.array([1e308, 0.0, 2.0, 0.0, math.inf]), 0, full=True)
    assert bracket.lower == bracket.upper == 1e308 and np.flatnonzero(bracket.witness).tolist() == [0]
    bracket = tracker.narrow(np.array([1e308, math.inf, 2.0, 0.0, math.inf]), 0, full=True)
    assert bracket.lower == bracket.upper == math.inf and np.flatnonzero(bracket.witness).tolist() == [1]
    lower, upper = tracker.tentative(None, np.array([1e308]), 2.0)
    assert upper[0] == math.inf


@pytest.mark.parametrize("filter_name", ["basic", "renyi"])
def test_ledger_with_spends_of_1e308_answers_offline_without_warnings(capsys, tmp_path, filter_name):
    path = tmp_path / "huge.toml"
    path.write_text('title = "huge"\ndatabases = 5\ndelta = 1e-6\n\n[[invocations]]\ndatabases = [0]\n'
                    'mechanism = { kind = "pure", epsilon = 1e308 }\n\n[[invocations]]\ndatabases = [1]\n'
                    'mechanism = { kind = "pure", epsilon = 1.0 }\n\n[[constraints]]\nkind = "at_most"\nm = 1\n')
    ledger = str(tmp_path / "l.sqlite")
    assert main(["ledger", "init", str(path), "--budget-epsilon", "1e308", "--budget-delta", "0.5",
                 "--filter", filter_name, "--ledger", ledger]) == 0
    assert main(["ledger", "spend", "--ledger", ledger, "--databases", "2,3", "--analyst", "a",
                 "--mechanism", 'kind = "pure", epsilon = 1e308']) == 0
    capsys.readouterr()
    assert main(["ledger", "status", "--offline", "--ledger", ledger]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "offline" in out and "epsilon 1e+308 at delta 0.5" in out


# --- random allocation from sigma 1e-300 to 1e300 ------------------------------------------------------


def _allocation_answer(sigma: float):
    """epsilon at 1e-6 of examples/dp_sgd_allocation.toml (1 of 100 Gaussians) at ``sigma``: the report,
    or the project's own error."""
    import dataclasses
    scenario = gce.load_scenario(str(__import__("pathlib").Path(__file__).parents[1] / "examples"
                                     / "dp_sgd_allocation.toml"))
    swap = {g: gce.GaussianMechanism(sigma) for g in scenario.table.kinds}
    scenario = dataclasses.replace(scenario, invocations=scenario.invocations.with_guarantees(swap))
    try:
        return gce.solve(scenario, time_limit=2.0)
    except gce.GCEError as error:
        return error


def _check_allocation(sigma: float) -> None:
    """Sound: between the sum-of-outputs lower bound GDP(mu / sqrt(100)) and the un-amplified GDP(mu)
    (joint convexity), both closed forms. Every sigma answers (beyond mu = 1e100 the Gaussian merge of the
    batch grid declines and the closed forms answer: it was an error there); an infinite answer only where the
    lower bound itself is beyond the largest float."""
    from gce.accounting.curves import GaussianCurve
    mu = 1.0 / sigma
    report = _allocation_answer(sigma)
    assert not isinstance(report, gce.GCEError), report
    unamplified = float(GaussianCurve(mu).epsilon(1e-6))
    summed = float(GaussianCurve(mu / 10.0).epsilon(1e-6))
    if math.isinf(report.epsilon):
        assert math.isinf(summed), (sigma, summed)  # the truth lies beyond the floats: inf is the answer
        return
    assert report.epsilon <= unamplified * (1 + 1e-12), (sigma, report.epsilon, unamplified)
    assert report.bracket is not None
    low, high = report.bracket
    assert 0.0 <= low <= report.epsilon == high
    if summed < 2.0**20:  # the lower curve's search stops there (certified below it)
        assert report.epsilon >= summed * (1 - 1e-9), (sigma, report.epsilon, summed)


@pytest.mark.parametrize("sigma", [1e-300, 1e-120, 1e-10, pytest.param(1e4, marks=pytest.mark.slow),
                                   pytest.param(1e150, marks=pytest.mark.slow)])  # (2-3 s each)
def test_random_allocation_is_sound_from_sigma_1e_minus_300_to_1e300(sigma):
    _check_allocation(sigma)


@pytest.mark.slow
@pytest.mark.parametrize("sigma", np.logspace(-300, 300, 25).tolist())
def test_random_allocation_is_sound_over_a_log_spaced_sweep_of_sigma(sigma):
    _check_allocation(sigma)


@pytest.mark.parametrize("mu", [40.0, 1e3, 1e10, 1e300, math.inf])
def test_allocation_beyond_the_grids_is_bracketed_by_closed_forms(mu):
    from gce.accounting.curves import GaussianCurve
    from gce.priors.allocation import allocation_curve
    curve = allocation_curve(mu, 100, 3, epochs=2)
    assert "beyond the grids" in curve.description
    # above: GDP(mu sqrt(6)); below: GDP(3 mu sqrt(2 / 100)), at a few epsilons
    for eps in (0.0, 1.0, 1e3, 1e20):
        assert curve.delta(eps) == pytest.approx(float(GaussianCurve(mu * math.sqrt(6)).delta(eps)), rel=1e-12)
        assert curve.lower.delta(eps) == pytest.approx(float(GaussianCurve(mu * 3 * math.sqrt(0.02)).delta(eps)),
                                                       rel=1e-12)


@pytest.mark.parametrize("mu", [1e3, 1e4, 1e10, 1e150])
def test_gaussian_curve_at_large_mu_is_the_tail_bound_and_meets_its_own_delta(mu):
    from gce.accounting.curves import GaussianCurve
    from scipy import special
    curve = GaussianCurve(mu)
    for target in (1e-300, 1e-6, 0.3):
        eps = float(curve.epsilon(target))
        # eps = mu^2 / 2 + mu z is the epsilon of the bound Phi(mu/2 - eps/mu) >= delta (above the exact one)
        assert eps == pytest.approx(mu * mu / 2 + mu * -special.ndtri(target), rel=1e-14)
        assert float(curve.delta(eps)) <= target
    with mpmath.workdps(60):  # within 2e-6 of the exact epsilon at mu = 1000 (mpmath root of the exact form)
        if mu == 1e3:
            m = mpmath.mpf(mu)
            exact = mpmath.findroot(lambda e: mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2)
                                    - mpmath.mpf("1e-6"), m * m / 2 + 4 * m)
            assert float(exact) <= float(curve.epsilon(1e-6)) <= float(exact) * (1 + 2e-6)


@pytest.mark.parametrize("epsilon", [17.0, 60.0, 1e4, 1e308])
def test_an_epsilon_target_whose_closed_form_delta_is_negligible_is_answered_by_the_closed_forms(epsilon):
    """A target epsilon at which the members' Gaussians composed (an upper curve: joint convexity) give a delta
    below NEGLIGIBLE_DELTA is not refined: grids sized to reach it were as large as the epsilon (1e308 raised
    OverflowError in the circle's cells for k of t, and "epsilon ... got array([nan ...])" for Poisson; 2 of 10
    at epsilon 50 took 17 s for [0, 9e-265]). The bracket is the closed forms', both ends below 1e-30."""
    from gce.accounting.curves import GaussianCurve
    from gce.priors.allocation import allocation_curve, poisson_curve
    from gce.priors.allocation.bracket import NEGLIGIBLE_DELTA

    for k in (1, 2):
        curve = allocation_curve(1.0, 10, k, epsilon=epsilon)
        assert "not refined" in curve.description
        low, high = curve.delta_bracket(epsilon)
        assert high == float(GaussianCurve(math.sqrt(k)).delta(epsilon)) < NEGLIGIBLE_DELTA and 0.0 <= low <= high
        assert low == float(GaussianCurve(k / math.sqrt(10)).delta(epsilon))  # the sum of the outputs, below
    poisson = poisson_curve([(0.3, 0.01, 10)], epsilon=epsilon)
    assert "not refined" in poisson.description and "stopped" not in poisson.description
    assert poisson.delta_bracket(epsilon) == (0.0, float(GaussianCurve(0.3 * math.sqrt(10)).delta(epsilon)))


@pytest.mark.parametrize("delta", [1e-31, 1e-100, 1e-320, 5e-324])
def test_a_delta_target_below_the_negligible_delta_is_answered_by_the_closed_forms(delta):
    """epsilon at a delta below NEGLIGIBLE_DELTA: the clamps' charges (a share of delta) underflowed ("math
    domain error" at 1e-320 over epochs); the closed forms answer, every member's Gaussians composed above."""
    from gce.accounting.curves import GaussianCurve
    from gce.priors.allocation import allocation_curve, poisson_curve

    for k, epochs in ((1, 1), (1, 2), (2, 1)):
        curve = allocation_curve(1.0, 100, k, epochs=epochs, delta=delta)
        assert "not refined" in curve.description and f"epsilon at delta {delta:g}" in curve.description
        low, high = curve.epsilon_bracket(delta)
        assert high == float(GaussianCurve(math.sqrt(k * epochs)).epsilon(delta)) and 0.0 <= low <= high
    poisson = poisson_curve([(1.0, 0.01, 200)], delta=delta)
    assert "not refined" in poisson.description
    assert poisson.epsilon_bracket(delta)[1] == float(GaussianCurve(math.sqrt(200)).epsilon(delta))
    from gce import effort

    with effort.within(effort.Deadline(1.0)):  # (above it the grids run: uncapped, minutes at 1e-29)
        assert "not refined" not in allocation_curve(1.0, 100, delta=1e-29).description


def test_an_epsilon_target_just_above_the_negligible_delta_is_refined():
    """At 16.9 the composition of 2 Gaussians of mu 1 gives a delta above 1e-30, at 17.0 below: at 16.9 the grids
    run (stopped at a time limit here: uncapped they take 3 minutes)."""
    from gce import effort
    from gce.accounting.curves import GaussianCurve
    from gce.priors.allocation import allocation_curve

    assert float(GaussianCurve(math.sqrt(2)).delta(16.9)) > 1e-30 > float(GaussianCurve(math.sqrt(2)).delta(17.0))
    with effort.within(effort.Deadline(2.0)):
        curve = allocation_curve(1.0, 10, 2, epsilon=16.9)
    assert "not refined" not in curve.description


@pytest.mark.parametrize("epsilon", ["x", -1.0, math.nan, math.inf, True])
def test_a_bad_epsilon_target_names_the_field(epsilon):
    from gce.errors import InvalidParameterError
    from gce.priors.allocation import allocation_curve, poisson_curve

    for call in (lambda: allocation_curve(1.0, 10, 2, epsilon=epsilon),
                 lambda: poisson_curve([(1.0, 0.1, 10)], epsilon=epsilon)):
        with pytest.raises(InvalidParameterError) as info:
            call()
        assert info.value.field == "epsilon" and "finite number >= 0" in str(info.value)

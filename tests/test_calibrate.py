"""Calibration (docs/design.md, "Calibration"): real values, brute force, infeasible targets.

The brute-force references enumerate every allowed pair of membership sets and
take the exact delta of the canonical pairs of the invocations on the databases
where the pair differs (``tests/reference.py``: 002 Thm. II.5 makes the
canonical pair a worst case; it is symmetric, so the direction of each
differing invocation does not matter).
"""

from __future__ import annotations

import importlib
import itertools
import json
import math

import pytest

from gce.calibration import PARAMETER_RTOL, Calibration, calibrate
from gce.constraints import AtMost, ConstraintSet, Exclusive
from gce.errors import GCEError, InvalidParameterError, UnsupportedCombinationError
from gce.accounting.guarantees import ZCDP, ApproxDP, GaussianMechanism, LaplaceMechanism, PureDP
from gce.model import Invocation, Scenario
from gce.progress import Progress
from gce.solving import solve
from gce.accounting.theorems import compose
from reference import exact_delta

TARGET = (1.0, 1e-6)


def hospitals(guarantee, n: int = 1000, m: int = 365, neighborhood: str = "unbounded") -> Scenario:
    """001, Sec. V-A, Example 1: one query per hospital, nobody in more than m hospitals."""
    return Scenario(n, tuple(Invocation(i, guarantee) for i in range(n)), ConstraintSet(n, (AtMost(m),)),
                    neighborhood=neighborhood, title="hospitals")


def with_epsilon(scenario: Scenario, eps: float) -> Scenario:
    swap = {PureDP: lambda g: PureDP(eps), ApproxDP: lambda g: ApproxDP(eps, g.delta)}
    return Scenario(scenario.databases, tuple(Invocation(i.database, swap[type(i.guarantee)](i.guarantee), i.repeat)
                                              for i in scenario.invocations),
                    scenario.constraints, scenario.neighborhood)


def with_sigma(scenario: Scenario, sigma: float) -> Scenario:
    return Scenario(scenario.databases, tuple(
        Invocation(i.database, GaussianMechanism(sigma, i.guarantee.sensitivity), i.repeat)
        for i in scenario.invocations), scenario.constraints, scenario.neighborhood)


def hdp_epsilon(scenario: Scenario, delta: float) -> float:
    return solve(scenario, delta=delta).epsilon


@pytest.fixture(scope="module")
def hospital_calibration() -> Calibration:
    # Timing is a benchmark, not a test (docs/design.md, "Performance targets"): about 0.1 s here.
    return calibrate(hospitals(ApproxDP(0.05, 1e-10)), target_epsilon=TARGET[0], target_delta=TARGET[1])


# --- the hospital example (001, Sec. V-A, Example 1) -------------------------------------------


def test_hospitals_meet_the_target_and_are_tight(hospital_calibration):
    c = hospital_calibration
    scenario = hospitals(ApproxDP(0.05, 1e-10))
    eps = c.per_invocation_epsilon
    assert c.parameter == "epsilon" and c.sigma is None
    assert hdp_epsilon(with_epsilon(scenario, eps), TARGET[1]) <= TARGET[0]
    assert hdp_epsilon(with_epsilon(scenario, 1.01 * eps), TARGET[1]) > TARGET[0]
    assert hdp_epsilon(with_epsilon(scenario, eps * (1 + 2 * PARAMETER_RTOL)), TARGET[1]) > TARGET[0]
    # The report is solve() at the returned value, at the target delta.
    assert c.report.epsilon == hdp_epsilon(with_epsilon(scenario, eps), TARGET[1])
    assert (c.epsilon, c.delta) == (c.report.epsilon, TARGET[1])
    assert c.report.exact and c.report.theorem == "kairouz-III.3"
    low, high = c.bracket  # the epsilon bracket: the answer below, above it one found not to meet the target
    assert low == eps and hdp_epsilon(with_epsilon(scenario, high), TARGET[1]) > TARGET[0]


def test_hospitals_by_independent_composition(hospital_calibration):
    # The worst case differs on 365 invocations: 002 Thm. III.3 on 365 copies, through compose().
    c = hospital_calibration
    eps = c.per_invocation_epsilon
    assert compose({ApproxDP(eps, 1e-10): 365}).epsilon(TARGET[1]) <= TARGET[0]
    assert compose({ApproxDP(1.01 * eps, 1e-10): 365}).epsilon(TARGET[1]) > TARGET[0]
    assert 0.0124 < eps < 0.0125


def test_hospitals_classic_calibration(hospital_calibration):
    c = hospital_calibration
    assert c.classic is not None and c.classic < c.per_invocation_epsilon
    # classic = every one of the 1,000 invocations composed (the report's classic baseline)
    assert compose({ApproxDP(c.classic, 1e-10): 1000}).epsilon(TARGET[1]) <= TARGET[0]
    assert compose({ApproxDP(1.01 * c.classic, 1e-10): 1000}).epsilon(TARGET[1]) > TARGET[0]
    assert c.classic_epsilon <= TARGET[0] and c.classic_theorem == "kairouz-III.3"
    assert c.ratio == pytest.approx(c.per_invocation_epsilon / c.classic)
    assert 1.6 < c.ratio < 1.7


def test_to_dict_is_json(hospital_calibration):
    c = hospital_calibration
    d = json.loads(json.dumps(c.to_dict()))
    assert d["per_invocation_epsilon"] == c.per_invocation_epsilon and "sigma" not in d
    assert d["epsilon"] == c.epsilon and d["delta"] == TARGET[1]
    assert d["classic"]["per_invocation_epsilon"] == c.classic
    assert d["target"] == {"epsilon": TARGET[0], "delta": TARGET[1]}
    assert d["title"] == "hospitals"
    text = str(c)
    assert "per-invocation epsilon" in text and "classic" in text


def test_bounded_hospitals_use_twice_the_bound():
    # 001, Sec. V-A, Example 1, bounded: pairs differ on up to 730 hospitals.
    c = calibrate(hospitals(ApproxDP(0.05, 1e-10), neighborhood="bounded"),
                  target_epsilon=TARGET[0], target_delta=TARGET[1])
    eps = c.per_invocation_epsilon
    assert compose({ApproxDP(eps, 1e-10): 730}).epsilon(TARGET[1]) <= TARGET[0]
    assert compose({ApproxDP(1.01 * eps, 1e-10): 730}).epsilon(TARGET[1]) > TARGET[0]


def test_pure_dp_is_the_simple_split():
    # Pure eps: at most 365 differing invocations compose to 365 eps exactly at delta 0.
    c = calibrate(hospitals(PureDP(1.0)), target_epsilon=1.0, target_delta=0.0)
    assert c.per_invocation_epsilon == pytest.approx(1.0 / 365, rel=2 * PARAMETER_RTOL)
    assert 365 * c.per_invocation_epsilon <= 1.0 + 1e-12
    assert c.classic == pytest.approx(1.0 / 1000, rel=2 * PARAMETER_RTOL)


# --- brute force on small instances -------------------------------------------------------------


def allowed_pairs(scenario: Scenario):
    sets = [frozenset(s) for r in range(scenario.n + 1) for s in itertools.combinations(range(scenario.n), r)
            if scenario.constraints.satisfied(s)]
    if scenario.neighborhood == "unbounded":
        return [(frozenset(), b) for b in sets]
    return list(itertools.product(sets, sets))


def brute_force_delta(scenario: Scenario, eps: float, target_eps: float) -> float:
    """The exact worst-case delta at ``target_eps`` over allowed pairs, per-invocation epsilon ``eps``."""
    worst = 0.0
    for b0, b1 in allowed_pairs(scenario):
        points = [(eps, getattr(i.guarantee, "delta", 0.0))
                  for i in scenario.invocations if i.database in b0 ^ b1 for _ in range(i.repeat)]
        worst = max(worst, exact_delta(points, target_eps))
    return worst


SMALL = [
    # 4 databases, at most 2 hold the record; database 0 queried twice.
    Scenario(4, (Invocation(0, ApproxDP(0.3, 1e-4), repeat=2), Invocation(1, ApproxDP(0.3, 1e-4)),
                 Invocation(2, ApproxDP(0.3, 1e-4)), Invocation(3, ApproxDP(0.3, 1e-4))),
             ConstraintSet(4, (AtMost(2),))),
    # The same, bounded pairs (up to 4 differing databases with |b|, |b'| <= 2).
    Scenario(4, (Invocation(0, ApproxDP(0.3, 1e-4)), Invocation(1, ApproxDP(0.3, 1e-4)),
                 Invocation(2, ApproxDP(0.3, 1e-4)), Invocation(3, ApproxDP(0.3, 1e-4))),
             ConstraintSet(4, (AtMost(2),)), neighborhood="bounded"),
    # Pure DP, an exclusive pair (001 Example 2 in miniature) and a repeated database.
    Scenario(4, (Invocation(0, PureDP(0.3)), Invocation(1, PureDP(0.3), repeat=3), Invocation(2, PureDP(0.3)),
                 Invocation(3, PureDP(0.3))),
             ConstraintSet(4, (Exclusive((0, 1)), AtMost(2)))),
]


@pytest.mark.parametrize("scenario", SMALL, ids=["at_most", "bounded", "exclusive-pure"])
def test_small_instances_against_brute_force(scenario):
    target_eps, target_delta = 1.0, 1e-3
    c = calibrate(scenario, target_epsilon=target_eps, target_delta=target_delta)
    eps = c.per_invocation_epsilon
    assert brute_force_delta(scenario, eps, target_eps) <= target_delta
    assert brute_force_delta(scenario, 1.01 * eps, target_eps) > target_delta


def test_mixed_deltas_are_sound_against_brute_force():
    # Per-invocation deltas differ and stay fixed; only soundness is claimed when the bound is not exact.
    scenario = Scenario(4, (Invocation(0, ApproxDP(0.3, 1e-4), repeat=2), Invocation(1, PureDP(0.3)),
                            Invocation(2, ApproxDP(0.3, 5e-4)), Invocation(3, ApproxDP(0.3, 1e-4))),
                        ConstraintSet(4, (AtMost(2),)))
    c = calibrate(scenario, target_epsilon=1.0, target_delta=1e-3)
    eps = c.per_invocation_epsilon
    assert brute_force_delta(scenario, eps, 1.0) <= 1e-3
    if c.report.exact:
        assert brute_force_delta(scenario, 1.01 * eps, 1.0) > 1e-3
    # Per-invocation guarantees keep their own deltas and kinds.
    kinds = {type(i.guarantee) for i in scenario.invocations}
    assert kinds == {ApproxDP, PureDP}


# --- Gaussian sigma ----------------------------------------------------------------------------


def test_gaussian_sigma_meets_the_target_and_is_tight():
    scenario = hospitals(GaussianMechanism(1.0))
    c = calibrate(scenario, target_epsilon=TARGET[0], target_delta=TARGET[1])
    sigma = c.sigma
    assert c.parameter == "sigma" and c.per_invocation_epsilon is None
    assert hdp_epsilon(with_sigma(scenario, sigma), TARGET[1]) <= TARGET[0]
    assert hdp_epsilon(with_sigma(scenario, 0.99 * sigma), TARGET[1]) > TARGET[0]
    # 365 differing Gaussians compose to mu = sqrt(365) / sigma (Dong, Roth and Su 2022, Cor. 3.3).
    from gce.accounting.curves import GaussianCurve
    assert GaussianCurve(math.sqrt(365) / sigma).epsilon(TARGET[1]) <= TARGET[0]
    assert c.classic > sigma and c.ratio == pytest.approx(c.classic / sigma)
    # classic composition of 1000 needs sqrt(1000 / 365) times the noise, exactly for GDP
    assert c.ratio == pytest.approx(math.sqrt(1000 / 365), rel=1e-5)
    d = c.to_dict()
    assert d["sigma"] == sigma and "per_invocation_epsilon" not in d and d["classic"]["sigma"] == c.classic
    # the sigma bracket: the answer above, below it a sigma the search found not to meet the target
    low, high = c.bracket
    assert high == sigma and low < sigma and sigma / low - 1 == pytest.approx(c.accuracy, rel=1e-12)
    assert hdp_epsilon(with_sigma(scenario, low), TARGET[1]) > TARGET[0] and d["bracket"] == [low, high]


def test_gaussian_keeps_each_sensitivity():
    scenario = Scenario(3, (Invocation(0, GaussianMechanism(1.0, 2.0)), Invocation(1, GaussianMechanism(1.0)),
                            Invocation(2, GaussianMechanism(1.0))), ConstraintSet(3, (AtMost(2),)))
    c = calibrate(scenario, target_epsilon=1.0, target_delta=1e-5)
    # Worst pair: databases 0 and one other, mu^2 = (2^2 + 1) / sigma^2.
    from gce.accounting.curves import GaussianCurve
    assert GaussianCurve(math.sqrt(5.0) / c.sigma).epsilon(1e-5) <= 1.0
    assert GaussianCurve(math.sqrt(5.0) / (0.99 * c.sigma)).epsilon(1e-5) > 1.0


# --- infeasible targets and unsupported scenarios ----------------------------------------------


def test_per_invocation_deltas_alone_exceed_the_target():
    # docs/design.md, "Infeasible targets": 365 invocations of delta 1e-8 give delta >= 3.65e-6 > 1e-6.
    with pytest.raises(InvalidParameterError) as info:
        calibrate(hospitals(ApproxDP(0.01, 1e-8)), target_epsilon=1.0, target_delta=1e-6)
    assert info.value.field == "target_delta"
    assert "target_delta" in str(info.value) and "3.65e-06" in str(info.value)


def test_gaussian_at_delta_zero_is_infeasible():
    with pytest.raises(InvalidParameterError) as info:
        calibrate(hospitals(GaussianMechanism(1.0), n=10, m=3), target_epsilon=1.0, target_delta=0.0)
    assert info.value.field == "target_delta"


def test_classic_may_be_infeasible_where_the_gce_is_not():
    # 1,000 x 1e-9 reaches the target delta classically only at the limit; 365 x 1e-9 leaves room.
    c = calibrate(hospitals(ApproxDP(0.01, 2e-9)), target_epsilon=1.0, target_delta=1e-6)
    assert c.classic is None and c.classic_epsilon is None and math.isinf(c.ratio)
    assert c.to_dict()["ratio"] == "inf" and c.to_dict()["classic"]["per_invocation_epsilon"] is None
    assert "no per-invocation epsilon meets the target" in str(c)


def test_target_met_at_every_epsilon():
    # The only queried database can never hold the record: nothing differs.
    scenario = Scenario(2, (Invocation(0, PureDP(1.0)),), ConstraintSet(2, (AtMost(0, among=(0,)),)))
    with pytest.raises(InvalidParameterError) as info:
        calibrate(scenario, target_epsilon=1.0, target_delta=1e-6)
    assert info.value.field == "target_epsilon"


@pytest.mark.parametrize("kwargs, field", [
    ({"target_epsilon": 0.0, "target_delta": 1e-6}, "target_epsilon"),
    ({"target_epsilon": math.inf, "target_delta": 1e-6}, "target_epsilon"),
    ({"target_epsilon": 1.0, "target_delta": 1.0}, "target_delta"),
    ({"target_epsilon": 1.0, "target_delta": -1e-6}, "target_delta"),
])
def test_invalid_targets_name_the_field(kwargs, field):
    with pytest.raises(InvalidParameterError) as info:
        calibrate(hospitals(PureDP(1.0), n=5, m=2), **kwargs)
    assert info.value.field == field


@pytest.mark.parametrize("guarantees", [
    (ZCDP(0.1), ZCDP(0.1)),
    (LaplaceMechanism(1.0), LaplaceMechanism(1.0)),
    (PureDP(1.0), GaussianMechanism(1.0)),
])
def test_unsupported_families(guarantees):
    scenario = Scenario(2, tuple(Invocation(i, g) for i, g in enumerate(guarantees)))
    with pytest.raises(UnsupportedCombinationError, match="invocations"):
        calibrate(scenario, target_epsilon=1.0, target_delta=1e-6)


def test_calibration_refuses_a_report_that_misses_the_target(hospital_calibration):
    c = hospital_calibration
    with pytest.raises(GCEError, match="does not meet the target"):
        Calibration(parameter="epsilon", per_invocation_epsilon=1.0, sigma=None, report=c.report,
                    target_epsilon=0.5, target_delta=TARGET[1], classic=None, classic_epsilon=None,
                    classic_theorem="", ratio=math.inf, method="", evaluations=0)


# --- progress ---------------------------------------------------------------------------------


def test_progress_callback_sees_every_evaluation():
    calls = []
    c = calibrate(hospitals(ApproxDP(0.05, 1e-10), n=50, m=10), target_epsilon=1.0, target_delta=1e-6,
                  progress=lambda step, total=None, message="": calls.append((step, total, message)))
    assert [s for s, _, _ in calls] == list(range(1, c.evaluations + 1))
    assert all(m.startswith("epsilon ") for _, _, m in calls)


def test_progress_reporter_is_silent_off_a_terminal():
    import io

    stream = io.StringIO()
    with Progress(stream=stream, label="calibrate") as progress:
        calibrate(hospitals(PureDP(1.0), n=20, m=5), target_epsilon=1.0, target_delta=0.0, progress=progress)
    assert stream.getvalue() == ""


# --- the search route and its safety net --------------------------------------------------------


def _without_enumeration(monkeypatch):
    """Mixed guarantees are enumerated or searched until exact; these tests need an inexact
    certified bound, which large scenarios out of time give: switch the enumeration, the searches (over the
    memberships and over the slots) and the Renyi bound off."""
    mixed = importlib.import_module("gce.solvers.mixed")
    monkeypatch.setattr(mixed, "ENUMERATION_BLOCKS_MAX", -1)
    monkeypatch.setattr(mixed, "NODES_MAX", 0)
    solving = importlib.import_module("gce.solving")
    monkeypatch.setattr(solving, "_renyi_bound", lambda scenario, budget: None)
    monkeypatch.setattr(solving, "_slot_search", lambda *args: None)


def test_inexact_bounds_are_searched_with_solve_and_stay_sound(monkeypatch):
    # Two kinds that no single pair maximizes together: the certified bound is not exact.
    _without_enumeration(monkeypatch)
    scenario = Scenario(2, (Invocation(0, ApproxDP(0.3, 1e-4), repeat=3), Invocation(1, ApproxDP(0.3, 5e-4), repeat=2)),
                        ConstraintSet(2, (AtMost(1),)))
    c = calibrate(scenario, target_epsilon=1.0, target_delta=2e-3)
    assert not c.report.exact and c.method == "solve at every step"
    assert hdp_epsilon(with_epsilon(scenario, c.per_invocation_epsilon), 2e-3) <= 1.0
    assert hdp_epsilon(with_epsilon(scenario, 1.01 * c.per_invocation_epsilon), 2e-3) > 1.0
    assert brute_force_delta(scenario, c.per_invocation_epsilon, 1.0) <= 2e-3


def test_enumerated_mixed_scenarios_calibrate_exactly():
    # The same two kinds, enumerated: the worst pair is exact, its multiset drives the search.
    scenario = Scenario(2, (Invocation(0, ApproxDP(0.3, 1e-4), repeat=3), Invocation(1, ApproxDP(0.3, 5e-4), repeat=2)),
                        ConstraintSet(2, (AtMost(1),)))
    c = calibrate(scenario, target_epsilon=1.0, target_delta=2e-3)
    assert c.report.exact and c.report.epsilon <= 1.0
    assert hdp_epsilon(with_epsilon(scenario, 1.01 * c.per_invocation_epsilon), 2e-3) > 1.0
    assert brute_force_delta(scenario, c.per_invocation_epsilon, 1.0) <= 2e-3


def test_inexact_infeasibility_says_it_is_the_bound(monkeypatch):
    _without_enumeration(monkeypatch)
    scenario = Scenario(2, (Invocation(0, ApproxDP(0.3, 1e-4), repeat=3), Invocation(1, ApproxDP(0.3, 5e-4), repeat=2)),
                        ConstraintSet(2, (AtMost(1),)))
    with pytest.raises(InvalidParameterError, match="certified bound on the worst case") as info:
        calibrate(scenario, target_epsilon=1.0, target_delta=1e-3)
    assert info.value.field == "target_delta"


def test_a_failed_recheck_falls_back_to_solve(monkeypatch):
    # Sabotage the fast route (it under-reports epsilon): the final solve() catches it.
    module = importlib.import_module("gce.calibration")

    real = module._composed_epsilon
    monkeypatch.setattr(module, "_composed_epsilon", lambda inv, d: (lambda p, f=real(inv, d): 0.5 * f(p)))
    scenario = hospitals(ApproxDP(0.05, 1e-10), n=50, m=10)
    c = calibrate(scenario, target_epsilon=1.0, target_delta=1e-6)
    assert c.method == "solve at every step"
    assert hdp_epsilon(with_epsilon(scenario, c.per_invocation_epsilon), 1e-6) <= 1.0
    assert hdp_epsilon(with_epsilon(scenario, 1.01 * c.per_invocation_epsilon), 1e-6) > 1.0

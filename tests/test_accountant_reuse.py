"""Answers kept by the accountants (issue 39, item 4) and their answers inside Opacus' calibration (item 2).

* GceAccountant: the same question again is not composed again; another target is read on the kept curve
  when that bracket is within rtol, and then it is certified (it meets the bracket composed from scratch for
  that target, and dp-accounting's optimistic and pessimistic PLD values lie in or beside it as they must);
  composing an event drops what was kept (the answer is then the one from scratch, number for number).
* The Opacus accountants: the same for a history at another delta; the shuffled accountant composes at most
  one new allocation an epoch, and its brackets are those of a fresh accountant, number for number.
* Opacus' get_noise_multiplier with gce's accountants: every answer is a valid epsilon (at least the
  certified lower end at its sigma, composed afresh), the sigma returned meets the target, and it is the
  sigma the plain bisection returns, or within Opacus' tolerance of it.
"""

from __future__ import annotations

import math
import warnings

import dp_accounting
import pytest
from dp_accounting.pld import PLDAccountant

import gce
import gce.bridges.accountant as accountant_module
import gce.bridges.opacus as opacus_module
from gce.bridges.accountant import GceAccountant
from gce.bridges.opacus import AllocationAccountant, PoissonAccountant

RTOL = gce.effort.DEFAULT_RTOL


def _event(q: float = 0.01, sigma: float = 1.0):
    return dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma))


def _pld(steps: int, pessimistic: bool, q: float = 0.01, sigma: float = 1.0):
    """dp-accounting's PLD of the same steps (optimistic: below the exact curve; pessimistic: above it, at any
    grid: 1e-3 here, coarse and cheap, so that only the side matters)."""
    from dp_accounting.pld import privacy_loss_distribution as pld
    one = pld.from_gaussian_mechanism(sigma, sampling_prob=q, pessimistic_estimate=pessimistic,
                                      value_discretization_interval=1e-3)
    return one.self_compose(steps)


@pytest.fixture
def counted(monkeypatch):
    """How many times the Poisson engine was asked (by GceAccountant and the Opacus accountants)."""
    calls = []
    original = opacus_module.poisson_history

    def counting(*args, **kwargs):
        calls.append(args[2:])
        return original(*args, **kwargs)

    monkeypatch.setattr(accountant_module, "poisson_history", counting)
    monkeypatch.setattr(opacus_module, "poisson_history", counting)
    return calls


def test_gce_accountant_repeats_and_reads_the_kept_curve(counted):
    accountant = GceAccountant().compose(_event(), 1000)
    delta_bracket = accountant.get_delta_bracket(1.5)
    assert len(counted) == 1 and accountant.engine == "poisson subsampling"
    assert accountant.get_delta_bracket(1.5) == delta_bracket and len(counted) == 1  # the same question
    # epsilon at the delta found: read on the curve refined for the delta bracket, no composition
    low, high = accountant.get_epsilon_bracket(delta_bracket[1])
    assert len(counted) == 1 and not accountant.time_limit_reached
    assert gce.effort.relative_width(low, high) <= RTOL
    # certified: it meets the bracket composed from scratch at that delta, and holds 1.5 (whose delta is
    # at most the upper end asked: its epsilon there at most 1.5), up to the lower end's reading
    fresh = GceAccountant().compose(_event(), 1000).get_epsilon_bracket(delta_bracket[1])
    assert len(counted) == 2
    assert max(low, fresh[0]) <= min(high, fresh[1])
    assert low <= 1.5 * (1 + 1e-9) and high >= fresh[0]
    # and dp-accounting's values lie where they must: optimistic below the upper end, pessimistic above the lower
    optimistic, pessimistic = _pld(1000, False), _pld(1000, True)
    assert optimistic.get_epsilon_for_delta(delta_bracket[1]) <= high * (1 + 1e-9)
    assert pessimistic.get_epsilon_for_delta(delta_bracket[1]) >= low * (1 - 1e-9)


def test_gce_accountant_reads_the_delta_on_the_epsilon_curve(counted):
    """1,000 steps at q 0.01: the lower laws' roundings levelled (poisson's module doc, "Lower"), the curve
    refined for an epsilon bracket rtol wide reads the delta at its upper end within rtol too (the steep curve
    used to leave it about 4% wide there): answered without composing, and certified."""
    accountant = GceAccountant().compose(_event(), 1000)
    low, high = accountant.get_epsilon_bracket(1e-5)
    d_low, d_high = accountant.get_delta_bracket(high)
    assert len(counted) == 1 and gce.effort.relative_width(d_low, d_high) <= RTOL
    assert d_low <= 1e-5 * (1 + 1e-9)  # the exact delta at the upper epsilon is at most 1e-5
    fresh = GceAccountant().compose(_event(), 1000).get_delta_bracket(high)
    assert len(counted) == 2 and max(d_low, fresh[0]) <= min(d_high, fresh[1])
    optimistic, pessimistic = _pld(1000, False), _pld(1000, True)
    assert optimistic.get_delta_for_epsilon(high) <= d_high * (1 + 1e-9)
    assert pessimistic.get_delta_for_epsilon(high) >= d_low * (1 - 1e-9)


def test_gce_accountant_composes_a_target_the_kept_curve_does_not_reach(counted):
    """10,000 steps at q 0.001, sigma 0.8: an epsilon bracket rtol wide reads a delta bracket several times
    wider (a steep curve): composed, and certified against dp-accounting's PLD on both sides."""
    event = _event(0.001, 0.8)
    accountant = GceAccountant().compose(event, 10000)
    low, high = accountant.get_epsilon_bracket(1e-5)
    kept = accountant._kept[0][0].delta_bracket(high)
    assert gce.effort.relative_width(*kept) > RTOL  # (about 6%: the reason it is composed again)
    d_low, d_high = accountant.get_delta_bracket(high)
    assert len(counted) == 2 and gce.effort.relative_width(d_low, d_high) <= RTOL
    assert (d_low, d_high) == GceAccountant().compose(event, 10000).get_delta_bracket(high)
    assert d_low <= 1e-5 * (1 + 1e-9)  # the exact delta at the upper epsilon is at most 1e-5
    assert max(kept[0], d_low) <= min(kept[1], d_high)
    optimistic, pessimistic = _pld(10000, False, 0.001, 0.8), _pld(10000, True, 0.001, 0.8)
    assert optimistic.get_delta_for_epsilon(high) <= d_high * (1 + 1e-9)
    assert pessimistic.get_delta_for_epsilon(high) >= d_low * (1 - 1e-9)


def test_gce_accountant_drops_what_it_kept_when_an_event_is_composed(counted):
    accountant = GceAccountant().compose(_event(), 1000)
    before = accountant.get_epsilon_bracket(1e-5)
    accountant.compose(_event(), 100)
    after = accountant.get_epsilon_bracket(1e-5)
    assert len(counted) == 2 and after[0] > before[1]  # 100 steps more: a larger epsilon, certified apart
    assert after == GceAccountant().compose(_event(), 1100).get_epsilon_bracket(1e-5)


def test_opacus_poisson_reads_the_kept_curve_at_another_delta(counted):
    """200 steps at q 0.01, sigma 1: the curve refined at 1e-5 answers 1.05e-5 and 1e-10 within rtol (its
    clamps were charged far below both); each answer meets the fresh one, and dp-accounting's optimistic and
    pessimistic PLD values lie below its upper and above its lower end (at 1e-10: 2.3371 and 2.3470)."""
    accountant = PoissonAccountant()
    for _ in range(200):
        accountant.step(noise_multiplier=1.0, sample_rate=0.01)
    first = accountant.get_epsilon_bracket(1e-5)
    assert accountant.get_epsilon(1e-5) == first[1] and len(counted) == 1
    read = {delta: accountant.get_epsilon_bracket(delta) for delta in (1.05e-5, 1e-10)}
    assert len(counted) == 1
    assert read[1.05e-5][1] <= first[1] and read[1e-10][0] > first[1]
    optimistic, pessimistic = _pld(200, False), _pld(200, True)
    for delta, (low, high) in read.items():
        assert gce.effort.relative_width(low, high) <= RTOL
        fresh = PoissonAccountant()
        fresh.history = list(accountant.history)
        scratch = fresh.get_epsilon_bracket(delta)
        assert max(low, scratch[0]) <= min(high, scratch[1])
        assert optimistic.get_epsilon_for_delta(delta) <= high and pessimistic.get_epsilon_for_delta(delta) >= low
    assert len(counted) == 3


@pytest.fixture
def allocations(monkeypatch):
    calls = []
    original = opacus_module.allocation_curve

    def counting(mu, t, **kwargs):
        calls.append((mu, t, kwargs.get("epochs")))
        return original(mu, t, **kwargs)

    monkeypatch.setattr(opacus_module, "allocation_curve", counting)  # (the shuffled accountant's engine)
    return calls


def test_shuffled_accountant_composes_once_an_epoch(allocations):
    """t = 10 batches an epoch at sigma 2: queries after every few steps compose one allocation per epoch
    opened (the upper end; the lower end is the epochs completed, composed before), and each bracket is a
    fresh accountant's, number for number."""
    accountant = AllocationAccountant()
    seen = []
    for steps in (20, 1, 4, 5, 1):  # 2 epochs; the third opened; inside it; completed; the fourth opened
        for _ in range(steps):
            accountant.step(noise_multiplier=2.0, sample_rate=0.1)
        seen.append(accountant.get_epsilon_bracket(1e-6))
    assert [epochs for _, _, epochs in allocations] == [2, 3, 4]
    fresh = AllocationAccountant()
    for total, bracket in zip((20, 21, 25, 30, 31), seen):
        fresh.history = [(2.0, 0.1, total)]
        assert fresh.get_epsilon_bracket(1e-6) == bracket
    assert seen[1] == seen[2] and seen[1][1] == seen[3][1]  # (upper: 3 epochs both; lower: 2, then 3)
    assert seen[3][0] >= seen[2][0] and seen[4][1] > seen[3][1]


def _noise(accountant: str, monkeypatch=None, **question) -> tuple[float, list[tuple[float, float]], int]:
    """Opacus' get_noise_multiplier with a gce accountant, the (sigma, epsilon) answers it was given and how
    many sigmas the accountant evaluated."""
    from opacus.accountants.utils import get_noise_multiplier
    opacus_module.register()
    answers, evaluated = [], [0]
    original = opacus_module._HistoryAccountant.get_epsilon

    def recording(self, delta, *args, **kwargs):
        value = original(self, delta, *args, **kwargs) if monkeypatch is None else \
            self.get_epsilon_bracket(delta)[1]  # (the plain answer: nothing read on the call stack)
        answers.append((self.history[0][0], value))
        evaluated[:] = [sum(len(points) for points in self._points.values())]
        return value

    patch = pytest.MonkeyPatch()
    patch.setattr(opacus_module._HistoryAccountant, "get_epsilon", recording)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sigma = get_noise_multiplier(accountant=accountant, **question)
    finally:
        patch.undo()
    return sigma, answers, evaluated[0]


@pytest.mark.parametrize("accountant", ["gce-poisson"])
def test_get_noise_multiplier_answers_are_valid(accountant):
    """Inside get_noise_multiplier every answer is a valid epsilon at its sigma (at least the lower end
    composed afresh there), the sigma returned meets the target, and the plain bisection (every sigma composed
    at rtol) returns a sigma within Opacus' tolerance of the same epsilon."""
    pytest.importorskip("opacus")
    question = dict(target_epsilon=1.0, target_delta=1e-5, sample_rate=0.01, steps=1000)
    sigma, answers, evaluated = _noise(accountant, **question)
    plain, plain_answers, _ = _noise(accountant, monkeypatch=True, **question)
    assert len(answers) >= 10 and len(plain_answers) >= 10  # (Opacus' own bisection: doubling, then halving)
    assert evaluated <= len(answers) // 2  # (the others decided by brackets evaluated at other sigmas)
    cls = opacus_module.MECHANISMS[accountant]
    for s, value in answers[::3] + answers[-1:]:
        fresh = cls()
        fresh.history = [(s, 0.01, 1000)]
        low, high = fresh.get_epsilon_bracket(1e-5)
        assert value >= low * (1 - 1e-12)  # a valid epsilon: at least the exact value's lower bound
    fresh = cls()
    fresh.history = [(sigma, 0.01, 1000)]
    assert fresh.get_epsilon(1e-5) < 1.0 and answers[-1][1] < 1.0 <= answers[-1][1] + 0.01
    assert sigma == pytest.approx(plain, rel=0.01)  # dp-accounting's PLD calibration: 1.41462 (issue 39)
    assert 1.40 < sigma < 1.43


def test_the_call_stack_is_read_only_inside_get_noise_multiplier():
    assert opacus_module._calibration_target(None) is None

    def get_noise_multiplier(target_epsilon, epsilon_tolerance):  # (a module not named opacus*)
        import sys
        return opacus_module._calibration_target(sys._getframe(0))

    assert get_noise_multiplier(1.0, 0.01) is None
    namespace = {"__name__": "opacus.accountants.utils", "sys": __import__("sys"), "opacus_module": opacus_module}
    exec("def get_noise_multiplier(target_epsilon, epsilon_tolerance):\n"
         "    return opacus_module._calibration_target(sys._getframe(0))\n", namespace)
    assert namespace["get_noise_multiplier"](1.0, 0.01) == (1.0, 0.01)
    assert namespace["get_noise_multiplier"](1.0, 2.0) is None  # a tolerance above the target: no target
    assert namespace["get_noise_multiplier"](math.inf, 0.01) is None


@pytest.mark.slow
def test_get_noise_multiplier_shuffled():
    """The shuffled accountant inside get_noise_multiplier: valid answers, and the sigma within Opacus'
    tolerance of the plain bisection's (1,000 steps of 1 of 100 at (1, 1e-5): 1.3770 both)."""
    question = dict(target_epsilon=1.0, target_delta=1e-5, sample_rate=0.01, steps=1000)
    sigma, answers, _ = _noise("gce-shuffled", **question)
    plain, _, _ = _noise("gce-shuffled", monkeypatch=True, **question)
    for s, value in answers:
        fresh = AllocationAccountant()
        fresh.history = [(s, 0.01, 1000)]
        assert value >= fresh.get_epsilon_bracket(1e-5)[0] * (1 - 1e-12)
    assert answers[-1][1] < 1.0 <= answers[-1][1] + 0.01
    assert sigma == pytest.approx(plain, rel=0.01)


def test_pld_reference_is_what_it_says():
    """The references above: dp-accounting's optimistic PLD below its pessimistic one (not the other way),
    and the pessimistic one what its PLDAccountant says (up to the grid)."""
    assert _pld(100, False).get_epsilon_for_delta(1e-5) < _pld(100, True).get_epsilon_for_delta(1e-5)
    accountant = PLDAccountant(value_discretization_interval=1e-3)
    accountant.compose(_event(), 100)
    assert accountant.get_epsilon(1e-5) == pytest.approx(_pld(100, True).get_epsilon_for_delta(1e-5), rel=1e-2)

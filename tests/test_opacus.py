"""gce's Opacus accountants (gce.bridges.opacus): shuffled batches as random allocation, Poisson batches as
subsampled Gaussians composed; against gce's allocation curve, dp-accounting's PLD accountant and a real
Opacus training loop (the Opacus tests are skipped when the extra gce[opacus] is not installed)."""

from __future__ import annotations

import math
import pathlib
import re
import runpy

import dp_accounting
import pytest
from dp_accounting.pld import pld_privacy_accountant

from gce.bridges.opacus import AllocationAccountant, PoissonAccountant, epochs_curve, epochs_of
from gce.effort import DEFAULT_RTOL
from gce.errors import InvalidParameterError
from gce.priors.allocation import allocation_curve

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _run(accountant, history):
    for sigma, rate, steps in history:
        for _ in range(steps):
            accountant.step(noise_multiplier=sigma, sample_rate=rate)
    return accountant


def _pld(history, delta):
    """dp-accounting's PLD accountant on the same steps, Poisson-subsampled Gaussians."""
    accountant = pld_privacy_accountant.PLDAccountant()
    for sigma, rate, steps in history:
        accountant.compose(dp_accounting.PoissonSampledDpEvent(rate, dp_accounting.GaussianDpEvent(sigma)), steps)
    return accountant.get_epsilon(delta)


def test_one_shuffled_epoch_is_the_random_allocation_curve_and_below_poisson():
    """Sigma 1, 10 batches, delta 1e-6: the shuffled epoch is allocation_curve's 1 of 10 (2.652), the same
    steps as Poisson at rate 0.1 are dp-accounting's 3.466, inside gce's Poisson bracket."""
    history = [(1.0, 0.1, 10)]
    shuffled = _run(AllocationAccountant(), history)
    assert len(shuffled) == 10 and shuffled.history == [(1.0, 0.1, 10)]
    low, high = shuffled.get_epsilon_bracket(1e-6)
    assert (low, high) == allocation_curve(1.0, 10, delta=1e-6, rtol=DEFAULT_RTOL).epsilon_bracket(1e-6)
    assert 2.650 < low <= high < 2.655 and shuffled.get_epsilon(1e-6) == high
    p_low, p_high = _run(PoissonAccountant(), history).get_epsilon_bracket(1e-6)
    pld = _pld(history, 1e-6)
    assert p_low <= pld <= p_high and (p_high - p_low) <= 0.01 * p_high
    assert 3.46 < pld < 3.47 and high < 0.8 * p_low


@pytest.mark.slow
def test_poisson_steps_of_different_noise_and_rate_compose_as_dp_accounting():
    history = [(2.0, 0.2, 3), (1.0, 0.05, 4), (2.0, 0.2, 2)]  # the equal first and last parts merge
    low, high = _run(PoissonAccountant(), history).get_epsilon_bracket(1e-5)
    pld = _pld(history, 1e-5)
    assert low <= pld <= high and high - low <= 0.01 * high
    assert 1.0 < pld < 3.0


def test_epochs_of_a_history():
    # 2.5 epochs of 4: the cut-short third counts above only
    assert epochs_of([(1.0, 0.25, 10)]) == ({(1.0, 4): 3}, {(1.0, 4): 2})
    # noise changed mid-epoch: above at the smaller noise (mu 1), below at the larger (mu 0.5)
    above, below = epochs_of([(2.0, 0.25, 6), (1.0, 0.25, 6)])
    assert above == {(0.5, 4): 1, (1.0, 4): 2} and below == {(0.5, 4): 2, (1.0, 4): 1}
    # a new sample rate starts a new epoch (the open one is cut short)
    assert epochs_of([(1.0, 0.25, 2), (1.0, 0.5, 4)]) == ({(1.0, 4): 1, (1.0, 2): 2}, {(1.0, 2): 2})
    assert epochs_of([]) == ({}, {})


def test_a_cut_short_epoch_is_bracketed_by_the_full_epochs_around_it():
    """15 steps of 10 a epoch: above, two epochs; below, the one complete epoch."""
    low, high = _run(AllocationAccountant(), [(1.0, 0.1, 15)]).get_epsilon_bracket(1e-6)
    one = allocation_curve(1.0, 10, epochs=1, delta=1e-6, rtol=DEFAULT_RTOL).epsilon_bracket(1e-6)
    two = allocation_curve(1.0, 10, epochs=2, delta=1e-6, rtol=DEFAULT_RTOL).epsilon_bracket(1e-6)
    assert high == two[1] and low == one[0] and low < high
    # nothing complete yet: nothing certified below
    low, high = _run(AllocationAccountant(), [(1.0, 0.1, 5)]).get_epsilon_bracket(1e-6)
    assert low == 0.0 and high == one[1]


def test_epochs_at_several_noises_compose_between_their_bounds():
    """The general composition agrees with allocation_curve on one (mu, t), and a mixed history lies between
    every epoch at its least and at its most noise."""
    low, high = epochs_curve({(1.0, 10): 2}, {(1.0, 10): 2}, DEFAULT_RTOL, 1e-6).epsilon_bracket(1e-6)
    ref_low, ref_high = allocation_curve(1.0, 10, epochs=2, delta=1e-6, rtol=DEFAULT_RTOL).epsilon_bracket(1e-6)
    assert max(low, ref_low) <= min(high, ref_high) and high - low <= 0.01 * high
    mixed = _run(AllocationAccountant(), [(1.0, 0.1, 10), (2.0, 0.1, 10)])
    low, high = mixed.get_epsilon_bracket(1e-6)
    assert "2 epochs at 2 (mu, t)" in mixed.curve(1e-6).description
    all_less = allocation_curve(0.5, 10, epochs=2, delta=1e-6, rtol=DEFAULT_RTOL).epsilon_bracket(1e-6)
    one = allocation_curve(1.0, 10, epochs=1, delta=1e-6, rtol=DEFAULT_RTOL).epsilon_bracket(1e-6)
    assert all_less[0] <= low <= high <= ref_high and high - low <= 0.01 * high
    assert high > one[1]  # the second epoch costs something


def test_a_time_limit_only_widens_the_bracket():
    history = [(1.0, 0.1, 20), (2.0, 0.1, 10)]
    fine = _run(AllocationAccountant(), history)
    low, high = fine.get_epsilon_bracket(1e-6)
    assert not fine.time_limit_reached
    capped = _run(AllocationAccountant(time_limit=1e-9), history)
    c_low, c_high = capped.get_epsilon_bracket(1e-6)
    assert capped.time_limit_reached and c_low <= low <= high <= c_high
    assert c_high > 1.01 * high  # the closed forms: the Gaussians composed above


def test_no_step_costs_nothing_and_a_step_without_noise_everything():
    assert AllocationAccountant().get_epsilon_bracket(1e-5) == (0.0, 0.0)
    assert PoissonAccountant().get_epsilon(1e-5) == 0.0
    for cls in (AllocationAccountant, PoissonAccountant):
        assert _run(cls(), [(0.0, 0.1, 1)]).get_epsilon(1e-5) == math.inf


def test_history_state_and_validation():
    accountant = _run(AllocationAccountant(), [(1.0, 0.1, 3), (2.0, 0.1, 2), (1.0, 0.1, 1)])
    assert accountant.history == [(1.0, 0.1, 3), (2.0, 0.1, 2), (1.0, 0.1, 1)] and len(accountant) == 6
    state = accountant.state_dict()
    assert state["mechanism"] == "gce-shuffled" and AllocationAccountant.mechanism() == "gce-shuffled"
    other = AllocationAccountant()
    other.load_state_dict(state)
    assert other.history == accountant.history and other.get_epsilon(1e-6) == accountant.get_epsilon(1e-6)
    with pytest.raises(InvalidParameterError, match="state_dict"):
        PoissonAccountant().load_state_dict(state)
    with pytest.raises(InvalidParameterError, match="noise_multiplier"):
        accountant.step(noise_multiplier=-1.0, sample_rate=0.1)
    with pytest.raises(InvalidParameterError, match="sample_rate"):
        accountant.step(noise_multiplier=1.0, sample_rate=0.0)
    with pytest.raises(InvalidParameterError, match="delta"):
        accountant.get_epsilon(0.0)
    with pytest.raises(InvalidParameterError, match="rtol"):
        AllocationAccountant(rtol=0.0)
    with pytest.raises(InvalidParameterError, match="time_limit"):
        AllocationAccountant(time_limit=-1)


@pytest.mark.slow
def test_the_literature_case_one_epoch_of_100_batches():
    """Sigma 1, 100 batches, delta 1e-6 (examples/dp_sgd_allocation.toml): shuffled 0.858, Poisson at rate
    0.01 0.954 (dp-accounting's PLD inside gce's bracket)."""
    history = [(1.0, 0.01, 100)]
    low, high = _run(AllocationAccountant(), history).get_epsilon_bracket(1e-6)
    p_low, p_high = _run(PoissonAccountant(), history).get_epsilon_bracket(1e-6)
    pld = _pld(history, 1e-6)
    assert 0.8579 < low <= high < 0.8581
    assert p_low <= pld <= p_high and 0.953 < pld < 0.955 and high < p_low


# --- with Opacus (the extra gce[opacus]) -------------------------------------------------------------------


@pytest.mark.slow
def test_registered_in_opacus():
    pytest.importorskip("opacus")
    from opacus.accountants import IAccountant
    from opacus.accountants.registry import create_accountant

    from gce.bridges.opacus import register

    classes = register()
    assert register() == classes  # again: the same classes
    for name, mode in (("gce-shuffled", "shuffled"), ("gce-poisson", "poisson")):
        accountant = create_accountant(name)
        assert isinstance(accountant, IAccountant) and accountant.mode == mode and accountant.mechanism() == name
    accountant = create_accountant("gce-shuffled")
    accountant.history = [(1.0, 0.1, 10)]  # as make_private_with_epsilon sets it
    one = allocation_curve(1.0, 10, delta=1e-6, rtol=DEFAULT_RTOL)
    assert accountant.get_epsilon(1e-6) == one.epsilon_bracket(1e-6)[1]


@pytest.mark.slow
def test_opacus_training_on_shuffled_batches(capsys):
    """examples/opacus_shuffled.py: a real PrivacyEngine training loop with the shuffled accountant; its
    history is Opacus' (10 steps at rate 1/10), and the epsilons are allocation_curve's below Opacus' own."""
    pytest.importorskip("opacus")
    module = runpy.run_path(str(ROOT / "examples" / "opacus_shuffled.py"), run_name="example")
    out = module["train"](epochs=2)
    assert out["accountant"].history == [(1.0, 0.1, 20)] and out["steps"] == 20
    assert out["accountant"].mechanism() == "gce-shuffled"
    low, high = out["shuffled"]
    assert (low, high) == allocation_curve(1.0, 10, epochs=2, delta=1e-6, rtol=DEFAULT_RTOL).epsilon_bracket(1e-6)
    p_low, p_high = out["poisson"]
    assert p_low <= _pld([(1.0, 0.1, 20)], 1e-6) <= p_high
    assert high < p_low < p_high < out["prv"] * 1.01 and p_high < out["rdp"]
    assert out["accuracy"] > 0.6
    module["main"](1)
    assert "gce, shuffled (random allocation)  2.65" in capsys.readouterr().out


@pytest.mark.slow
def test_guide_opacus_block_runs(capsys):
    pytest.importorskip("opacus")
    page = (ROOT / "docs" / "guide" / "opacus.md").read_text()
    (block,) = re.findall(r"```py\n(.*?)```", page, re.S)
    exec(compile(block, "docs/guide/opacus.md", "exec"), {})
    printed = capsys.readouterr().out.split()
    one = allocation_curve(1.0, 10, delta=1e-6, rtol=DEFAULT_RTOL)
    assert float(printed[0]) == pytest.approx(one.epsilon_bracket(1e-6)[1])


@pytest.mark.slow
def test_opacus_calibrates_the_noise_with_the_shuffled_accountant():
    """make_private_with_epsilon rebuilds the accountant through Opacus' registry with a history of its own
    and bisects the noise on get_epsilon: the noise found spends at most the target (gce's allocation curve,
    checked independently) and is less than what Opacus' PRV accountant asks for, at 3 epochs of 10 batches."""
    pytest.importorskip("opacus")
    import warnings

    import torch
    from opacus import PrivacyEngine

    from gce.bridges.opacus import register

    register()
    data = torch.utils.data.TensorDataset(torch.randn(200, 4), torch.randint(0, 2, (200,)))
    sigmas = {}
    for name in ("gce-shuffled", "prv"):
        model = torch.nn.Linear(4, 2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            engine = PrivacyEngine(accountant=name)
            _, optimizer, _ = engine.make_private_with_epsilon(
                module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                data_loader=torch.utils.data.DataLoader(data, batch_size=20, shuffle=True), target_epsilon=2.0,
                target_delta=1e-6, epochs=3, max_grad_norm=1.0, poisson_sampling=False)
        sigmas[name] = optimizer.noise_multiplier
    low, high = allocation_curve(1.0 / sigmas["gce-shuffled"], 10, epochs=3, delta=1e-6,
                                 rtol=DEFAULT_RTOL).epsilon_bracket(1e-6)
    assert 1.98 <= high <= 2.0 and high - low <= 0.01 * high
    assert sigmas["gce-shuffled"] < 0.9 * sigmas["prv"]  # 1.46 against 1.67


def test_each_accountant_refuses_the_loaders_it_does_not_account():
    """The sampler guard (module doc, "Which accountant for which loader"): a shuffled accountant with a
    Poisson loader would report 2.65 where the loader spends 3.47 (sigma 1, 10 batches, delta 1e-6)."""
    with pytest.raises(InvalidParameterError, match="^poisson_sampling: .*gce-poisson"):
        AllocationAccountant()._check_loader("poisson")
    for cls in (AllocationAccountant, PoissonAccountant):
        with pytest.raises(InvalidParameterError, match="^data_loader: does not shuffle"):
            cls()._check_loader("sequential")
        cls()._check_loader(None)  # a hook attached by hand: nothing to read
    AllocationAccountant()._check_loader("shuffled")
    PoissonAccountant()._check_loader("poisson")
    with pytest.warns(UserWarning, match="gce-shuffled"):
        PoissonAccountant()._check_loader("shuffled")


def _make_private(accountant, shuffle=True, **options):
    """Opacus' make_private on a small model and loader with ``accountant``; returns (engine, loader)."""
    import warnings

    import torch
    from opacus import PrivacyEngine

    from gce.bridges.opacus import register

    register()
    data = torch.utils.data.TensorDataset(torch.randn(200, 4), torch.randint(0, 2, (200,)))
    model = torch.nn.Linear(4, 2)
    engine = PrivacyEngine(accountant=accountant)
    with warnings.catch_warnings():  # Opacus' own warning (secure RNG), not gce's
        warnings.filterwarnings("ignore", message="Secure RNG")
        _, optimizer, loader = engine.make_private(
            module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
            data_loader=torch.utils.data.DataLoader(data, batch_size=20, shuffle=shuffle), noise_multiplier=1.0,
            max_grad_norm=1.0, **options)
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    return engine, loader


@pytest.mark.slow
def test_the_sampler_guard_in_a_real_training_run():
    """The shuffled accountant with Opacus' default Poisson loader is refused before training; with a loader
    that does not shuffle, both are; correctly paired loaders give the numbers they always gave (2.65 shuffled,
    3.47 Poisson for one epoch of 10 batches at sigma 1, delta 1e-6)."""
    pytest.importorskip("opacus")
    with pytest.raises(InvalidParameterError, match="^poisson_sampling: is True"):
        _make_private("gce-shuffled")  # poisson_sampling=True is Opacus' default
    with pytest.raises(InvalidParameterError, match="^poisson_sampling"):
        _make_private("gce-shuffled", poisson_sampling=True)
    for name in ("gce-shuffled", "gce-poisson"):
        with pytest.raises(InvalidParameterError, match="^data_loader: does not shuffle"):
            _make_private(name, shuffle=False, poisson_sampling=False)
    with pytest.warns(UserWarning, match="gce-shuffled"):
        _make_private("gce-poisson", poisson_sampling=False)
    engine, _ = _make_private("gce-shuffled", poisson_sampling=False)
    assert engine.accountant.history == [(1.0, 0.1, 10)]
    assert 2.650 < engine.get_epsilon(1e-6) < 2.655
    engine, loader = _make_private("gce-poisson")
    assert type(loader).__name__ == "DPDataLoader" and len(engine.accountant) == 10
    low, high = engine.accountant.get_epsilon_bracket(1e-6)
    assert low <= _pld([(1.0, 0.1, 10)], 1e-6) <= high and 3.46 < high < 3.50

"""The events no guarantee record holds (gce/bridges/event_laws.py) and the discrete Laplace mechanism, read by
GceAccountant: discrete Laplace against dp-accounting's PLD and its exact law convolved here, sampling without
replacement (replace-one) between dp-accounting's optimistic Poisson PLD and its RDP bound, random allocation
equal to gce's own allocation curve, random trees against dp-accounting's PLDs, and the refusals.

References: dp-accounting 0.6.0 (``PLDAccountant``, ``RdpAccountant``, optimistic PLDs); its pull request
#414 defines ``RandomAllocationDpEvent(event, num_selected, num_steps)`` (a stand-in below when the installed
release lacks it)."""

from __future__ import annotations

import math
import random

import attr
import numpy as np
import pytest
from dp_accounting import dp_event as de
from dp_accounting import privacy_accountant as pa
from dp_accounting.pld import privacy_loss_distribution as pld
from dp_accounting.pld.pld_privacy_accountant import PLDAccountant
from dp_accounting.rdp.rdp_privacy_accountant import RdpAccountant
from scipy import optimize, special

import gce
import tiers
from gce.bridges.accountant import GceAccountant
from gce.bridges.dp_events import UnsupportedEventError, from_dp_event, read_dp_event
from gce.bridges.event_laws import (DiscreteLaplaceLoss, RandomAllocation, ReplaceOneSampledGaussian,
                                    sampled_gaussian_atoms)
from gce.bridges.opacus import epochs_curve
from gce.priors.allocation import allocation_curve
from test_dp_events import H, RTOL, optimistic, pessimistic_epsilon

REPLACE_ONE = pa.NeighboringRelation.REPLACE_ONE

RandomAllocationDpEvent = getattr(de, "RandomAllocationDpEvent", None)
if RandomAllocationDpEvent is None:  # not in any release; dp-accounting's pull request #414 defines it so:
    @attr.s(frozen=True, slots=True, auto_attribs=True)
    class RandomAllocationDpEvent(de.DpEvent):  # type: ignore[no-redef]
        event: de.DpEvent
        num_selected: int
        num_steps: int


# ---------------------------------------------------------------------------
# Discrete Laplace


def test_discrete_laplace_readings():
    assert from_dp_event(de.DiscreteLaplaceDpEvent(0.5, 1)) == {gce.PureDP(0.5): 1}  # the canonical pair exactly
    assert from_dp_event(de.DiscreteLaplaceDpEvent(0.5, 0)) == {}
    assert from_dp_event(de.PoissonSampledDpEvent(0.1, de.DiscreteLaplaceDpEvent(0.5, 1))) == \
        {gce.Subsampled(0.1, gce.PureDP(0.5)): 1}
    assert read_dp_event(de.SelfComposedDpEvent(de.DiscreteLaplaceDpEvent(0.5, 3), 4)) == \
        {DiscreteLaplaceLoss(0.5, 3): 4}
    with pytest.raises(UnsupportedEventError, match="sensitivity 3.*GceAccountant") as info:
        from_dp_event(de.ComposedDpEvent([de.GaussianDpEvent(1.0), de.DiscreteLaplaceDpEvent(0.5, 3)]))
    assert info.value.field == "event.events[1]"
    with pytest.raises(gce.InvalidParameterError, match="sensitivity") as info:
        read_dp_event(de.DiscreteLaplaceDpEvent(0.5, 1.5))
    assert info.value.field == "event.sensitivity"
    with pytest.raises(UnsupportedEventError, match="noise_parameter inf adds no noise"):
        read_dp_event(de.DiscreteLaplaceDpEvent(math.inf, 1))
    with pytest.raises(UnsupportedEventError, match="PoissonSampledDpEvent of .*DiscreteLaplaceLoss"):
        read_dp_event(de.PoissonSampledDpEvent(0.1, de.DiscreteLaplaceDpEvent(0.5, 2)))
    # the law: both directions the same, total mass 1, dp-accounting's atoms
    z, mass = DiscreteLaplaceLoss(0.7, 3).atoms()
    assert math.fsum(mass) == pytest.approx(1.0, abs=1e-15)
    ref = pld.from_discrete_laplace_mechanism(0.7, 3, value_discretization_interval=1e-6)
    for eps in (0.0, 0.5, 1.3):
        exact = float(np.sum(mass * np.maximum(0.0, 1.0 - np.exp(eps - 0.7 * (3 - 2 * z)))))
        assert exact == pytest.approx(ref.get_delta_for_epsilon(eps), rel=1e-4)


def exact_discrete_laplace(a: float, s: int, copies: int) -> tuple[np.ndarray, np.ndarray]:
    """(loss, mass) of ``copies`` discrete Laplace mechanisms composed, from the two-sided geometric law itself:
    ``P(Z = z) = tanh(a / 2) e^{-a |z|}`` on |z| <= 200 (the rest below 1e-50), loss ``a (|z - s| - |z|)``
    aggregated on its lattice (multiples of a) and convolved directly."""
    zs = np.arange(-200, 201)
    pmf = math.tanh(a / 2.0) * np.exp(-a * np.abs(zs))
    lattice = np.abs(zs - s) - np.abs(zs)  # in [-s, s], step 2 between the ends
    one = np.bincount(lattice + s, weights=pmf, minlength=2 * s + 1)
    total = np.ones(1)
    for _ in range(copies):
        total = np.convolve(total, one)
    loss = a * (np.arange(total.size) - s * copies)
    return loss, total


def exact_delta(loss: np.ndarray, mass: np.ndarray, eps: float) -> float:
    return float(np.sum(mass * np.maximum(0.0, -np.expm1(eps - loss))))


@pytest.mark.parametrize("a, s, copies", [(0.7, 2, 4), (0.3, 3, 6), (1.1, 5, 3)])
def test_discrete_laplace_against_its_exact_law(a, s, copies):
    """Brute force: the two-sided geometric law convolved here; gce's bracket holds it at every point and is
    the exact value up to round-off (the lattice lies on gce's grid)."""
    loss, mass = exact_discrete_laplace(a, s, copies)
    accountant = GceAccountant().compose(de.DiscreteLaplaceDpEvent(a, s), copies)
    for eps in (0.0, 0.4, 1.3, 2.9, a * s * copies - 0.2):
        low, high = accountant.get_delta_bracket(eps)
        exact = exact_delta(loss, mass, eps)
        assert low <= exact * (1 + 1e-9) + 1e-15 and exact <= high * (1 + 1e-9) + 1e-15
        assert high <= exact * (1 + 1e-6) + 1e-14
    for delta in (1e-3, 1e-6):
        exact = optimize.brentq(lambda e: exact_delta(loss, mass, e) - delta, 0.0, a * s * copies, xtol=1e-13)
        low, high = accountant.get_epsilon_bracket(delta)
        assert low <= exact + 1e-9 and exact <= high + 1e-9 and high <= exact * (1 + 1e-6) + 1e-9


def test_discrete_laplace_figures_against_dp_accounting():
    """The issue's figure: 10 steps of noise parameter 0.5 give 5.0000 at 1e-6 with dp-accounting's PLD;
    gce's upper end is at most that, and at least its optimistic PLD; the same with sensitivity 3 and mixed
    with a Gaussian (the laws on dp-accounting's grid)."""
    for event in (de.SelfComposedDpEvent(de.DiscreteLaplaceDpEvent(0.5, 1), 10),
                  de.SelfComposedDpEvent(de.DiscreteLaplaceDpEvent(0.5, 3), 10),
                  de.ComposedDpEvent([de.SelfComposedDpEvent(de.DiscreteLaplaceDpEvent(0.2, 2), 5),
                                      de.GaussianDpEvent(2.0)])):
        accountant = GceAccountant().compose(event)
        reference = PLDAccountant().compose(event)
        low_pld = optimistic(event)
        for delta in (1e-6, 1e-3):
            low, high = accountant.get_epsilon_bracket(delta)
            ref = reference.get_epsilon(delta)
            assert low_pld.get_epsilon_for_delta(delta) <= high * (1 + 1e-9)
            # at most dp-accounting's value: up to gce's round-off allowance (ROUND_OFF, 1e-9 of delta), where both
            # are the exact value to a few 1e-9 (the lattice on the grid; the Gaussian split as connect-the-dots)
            assert low <= ref * (1 + 1e-9) and high <= ref * (1 + 1e-8)
            assert gce.effort.relative_width(low, high) <= RTOL
    first = GceAccountant().compose(de.DiscreteLaplaceDpEvent(0.5, 1), 10)
    assert 4.9998 < first.get_epsilon(1e-6) <= 5.0 and first.engine == "compose: kairouz-III.3"  # exact


# ---------------------------------------------------------------------------
# Sampling without replacement, replace-one


def test_sampling_without_replacement_readings():
    inner = de.ComposedDpEvent([de.GaussianDpEvent(3.0), de.GaussianDpEvent(4.0)])  # one Gaussian of sigma 2.4
    (record, count), = read_dp_event(de.SampledWithoutReplacementDpEvent(100, 10, inner), "REPLACE_ONE").items()
    assert count == 1 and record.rate == 0.1 and record.mu == pytest.approx(1 / 2.4)
    # the whole dataset: the Gaussian itself; no sample or no inner mechanism: nothing
    assert read_dp_event(de.SampledWithoutReplacementDpEvent(10, 10, de.GaussianDpEvent(2.0)), "REPLACE_ONE") == \
        {gce.GaussianMechanism(2.0): 1}
    assert read_dp_event(de.SampledWithoutReplacementDpEvent(10, 0, de.GaussianDpEvent(2.0)), "REPLACE_ONE") == {}
    with pytest.raises(UnsupportedEventError, match="NeighboringRelation.REPLACE_ONE only") as info:
        from_dp_event(de.SampledWithoutReplacementDpEvent(100, 10, de.GaussianDpEvent(1.0)))
    assert "ADD_OR_REMOVE_ONE" in str(info.value)
    with pytest.raises(gce.InvalidParameterError, match="sample_size") as info:
        read_dp_event(de.SampledWithoutReplacementDpEvent(10, 11, de.GaussianDpEvent(1.0)), "REPLACE_ONE")
    assert info.value.field == "event.sample_size"
    with pytest.raises(gce.InvalidParameterError, match="source_dataset_size"):
        read_dp_event(de.SampledWithoutReplacementDpEvent(0, 0, de.GaussianDpEvent(1.0)), "REPLACE_ONE")
    with pytest.raises(UnsupportedEventError, match="Gaussian mechanisms only"):
        read_dp_event(de.SampledWithoutReplacementDpEvent(10, 3, de.LaplaceDpEvent(1.0)), "REPLACE_ONE")
    # under replace-one Poisson sampling and random allocation are refused naming the relation
    for event in (de.PoissonSampledDpEvent(0.1, de.GaussianDpEvent(1.0)),
                  RandomAllocationDpEvent(de.GaussianDpEvent(1.0), 1, 10)):
        with pytest.raises(UnsupportedEventError, match="ADD_OR_REMOVE_ONE only"):
            read_dp_event(event, "REPLACE_ONE")
        assert not GceAccountant(REPLACE_ONE).supports(event)
    assert not GceAccountant().supports(de.SampledWithoutReplacementDpEvent(100, 10, de.GaussianDpEvent(1.0)))
    # the noise events mean the same pairs under both relations
    assert read_dp_event(de.GaussianDpEvent(1.0), "REPLACE_ONE") == from_dp_event(de.GaussianDpEvent(1.0))


@pytest.mark.parametrize("mu, rate", [(1.0, 0.01), (0.5, 0.3), (3.0, 0.05)])
def test_sampled_gaussian_law_is_the_symmetrised_pair(mu, rate):
    """The law's masses are those of a pair (P*- and Q*-mass 1), it is symmetric (mass at -l is e^-l times the
    mass at l), and its profile at eps >= 0 is that of ((1 - rate) N(0, 1) + rate N(mu, 1), N(0, 1)) in
    closed form, up to the grid (the split: above; rounded down: below)."""
    h = 1e-3
    up_loss, up_mass, up_inf = sampled_gaussian_atoms(mu, rate, h, True)
    lo_loss, lo_mass, _ = sampled_gaussian_atoms(mu, rate, h, False)
    assert math.fsum(up_mass) + up_inf == pytest.approx(1.0, abs=1e-12)
    assert math.fsum(up_mass * np.exp(-up_loss)) == pytest.approx(1.0, abs=1e-12)
    positive = up_loss > 0
    mirror = dict(zip(np.round(-up_loss[~positive & (up_loss < 0)], 12), up_mass[~positive & (up_loss < 0)]))
    for loss, mass in list(zip(up_loss[positive], up_mass[positive]))[::997]:
        assert mirror[round(loss, 12)] == pytest.approx(mass * math.exp(-loss), rel=1e-12)

    def remove_profile(eps):  # the mixture against N(0, 1): the loss exceeds eps where x > x(eps)
        x = mu / 2 + (math.log(math.expm1(eps) + rate) - math.log(rate)) / mu
        return (1 - rate) * special.ndtr(-x) + rate * special.ndtr(mu - x) - math.exp(eps) * special.ndtr(-x)

    accountant = GceAccountant(REPLACE_ONE).compose(
        de.SampledWithoutReplacementDpEvent(1000, round(1000 * rate), de.GaussianDpEvent(1 / mu)))
    for eps in (0.0, 0.05, 0.3, 1.0):
        exact = remove_profile(eps)
        low, high = accountant.get_delta_bracket(eps)
        assert low <= exact * (1 + 1e-9) + 1e-15 <= high * (1 + 2e-9) + 2e-15
        assert exact_delta(up_loss, up_mass, eps) + up_inf >= exact * (1 - 1e-9)
        assert exact_delta(lo_loss, lo_mass, eps) <= exact * (1 + 1e-9) + 1e-15


def test_sampling_without_replacement_against_rdp_and_poisson():
    """The issue's figure: 100 steps of 10 of 1,000 at sigma 1 give 1.79157 at 1e-6 with dp-accounting's RDP
    accountant (replace-one). gce's upper end is at most that and at least dp-accounting's optimistic PLD of the
    Poisson pair at rate 10 / 1,000 (realised by a dataset whose other records equal the replacing one: a lower
    bound on the event), with a bracket within rtol."""
    event = de.SelfComposedDpEvent(de.SampledWithoutReplacementDpEvent(1000, 10, de.GaussianDpEvent(1.0)), 100)
    rdp = RdpAccountant(neighboring_relation=REPLACE_ONE).compose(event).get_epsilon(1e-6)
    assert rdp == pytest.approx(1.79157, abs=1e-5)
    low_pld = pld.from_gaussian_mechanism(1.0, sampling_prob=0.01, pessimistic_estimate=False,
                                          value_discretization_interval=H, use_connect_dots=False).self_compose(100)
    accountant = GceAccountant(REPLACE_ONE).compose(event)
    low, high = accountant.get_epsilon_bracket(1e-6)
    assert low_pld.get_epsilon_for_delta(1e-6) <= low <= high <= rdp
    assert gce.effort.relative_width(low, high) <= RTOL
    assert accountant.guarantees == {ReplaceOneSampledGaussian(1.0, 0.01): 100}
    assert "ReplaceOneSampledGaussian" in accountant.engine


@pytest.mark.slow
def test_sampling_without_replacement_with_other_events():
    """Composed with Gaussians and canonical pairs on one grid: between the optimistic Poisson PLD composed with
    their optimistic PLDs and the RDP accountant (randomized response: the canonical pair, k = 2)."""
    event = de.ComposedDpEvent([
        de.SelfComposedDpEvent(de.SampledWithoutReplacementDpEvent(200, 20, de.GaussianDpEvent(1.5)), 30),
        de.GaussianDpEvent(4.0)])
    accountant = GceAccountant(REPLACE_ONE).compose(event)
    rdp = RdpAccountant(neighboring_relation=REPLACE_ONE).compose(event)
    low_pld = pld.from_gaussian_mechanism(1.5, sampling_prob=0.1, pessimistic_estimate=False,
                                          value_discretization_interval=H, use_connect_dots=False).self_compose(30)
    low_pld = low_pld.compose(pld.from_gaussian_mechanism(4.0, pessimistic_estimate=False,
                                                          value_discretization_interval=H, use_connect_dots=False))
    for delta in (1e-5, 1e-3):
        low, high = accountant.get_epsilon_bracket(delta)
        assert low_pld.get_epsilon_for_delta(delta) <= high <= rdp.get_epsilon(delta)
        assert low <= high


# ---------------------------------------------------------------------------
# Random allocation


#: (sigma, num_steps, num_selected, epochs): the default run's case, then k of t (its engine takes 5 to 50 s).
ALLOCATIONS = [(2.0, 10, 1, 2), (2.0, 10, 2, 1)]


@tiers.parametrize("sigma, t, k, epochs", ALLOCATIONS, default=1, ids=["1 of 10", "2 of 10"])
def test_random_allocation_is_allocation_curve(sigma, t, k, epochs):
    """``RandomAllocationDpEvent`` (matched by class name and fields): GceAccountant's bracket is exactly
    allocation_curve's (both ends, at a delta and at an epsilon), epochs counted from self-composition."""
    accountant = GceAccountant().compose(
        de.SelfComposedDpEvent(RandomAllocationDpEvent(de.GaussianDpEvent(sigma), k, t), epochs))
    assert accountant.guarantees == {RandomAllocation(1 / sigma, t, k): epochs}
    assert accountant.get_epsilon_bracket(1e-6) == \
        allocation_curve(1 / sigma, t, k, epochs=epochs, rtol=RTOL, delta=1e-6).epsilon_bracket(1e-6)
    assert accountant.engine.startswith("random allocation")
    assert accountant.get_epsilon(1e-6) == accountant.get_epsilon_bracket(1e-6)[1]
    if k == 1:  # (k of t at an epsilon target: 45 s more; a fresh accountant: one that answered at a delta
        accountant = GceAccountant().compose(  # reads the kept curve where it is within rtol, test_accountant_reuse)
            de.SelfComposedDpEvent(RandomAllocationDpEvent(de.GaussianDpEvent(sigma), k, t), epochs))
        assert accountant.get_delta_bracket(1.0) == \
            allocation_curve(1 / sigma, t, k, epochs=epochs, rtol=RTOL, epsilon=1.0).delta_bracket(1.0)


def test_random_allocation_readings():
    step = RandomAllocationDpEvent(de.GaussianDpEvent(1.0), 1, 20)
    assert read_dp_event(step) == {RandomAllocation(1.0, 20, 1): 1}
    assert read_dp_event(de.ComposedDpEvent([step, de.SelfComposedDpEvent(step, 2)])) == \
        {RandomAllocation(1.0, 20, 1): 3}
    two = RandomAllocationDpEvent(de.ComposedDpEvent([de.GaussianDpEvent(3.0), de.GaussianDpEvent(4.0)]), 1, 5)
    (record, _), = read_dp_event(two).items()
    assert record.mu == pytest.approx(1 / 2.4)  # several Gaussians on one batch: one (DRS22)
    # every step: the k Gaussians composed
    assert read_dp_event(RandomAllocationDpEvent(de.GaussianDpEvent(2.0), 3, 3)) == {gce.GaussianMechanism(2.0): 3}
    assert read_dp_event(RandomAllocationDpEvent(de.GaussianDpEvent(2.0), 0, 3)) == {}


def test_random_allocation_epochs_at_several_parameters():
    """Epochs of 1 of t at two (sigma, t): the Opacus bridge's epochs composition, at an epsilon target too."""
    accountant = GceAccountant().compose(RandomAllocationDpEvent(de.GaussianDpEvent(1.0), 1, 10))
    accountant.compose(RandomAllocationDpEvent(de.GaussianDpEvent(2.0), 1, 20), 2)
    low, high = accountant.get_epsilon_bracket(1e-6)
    assert (low, high) == epochs_curve({(1.0, 10): 1, (0.5, 20): 2}, {(1.0, 10): 1, (0.5, 20): 2}, RTOL,
                                       1e-6).epsilon_bracket(1e-6)
    d_low, d_high = accountant.get_delta_bracket(high)
    assert d_low <= 1e-6 * (1 + 1e-9) and gce.effort.relative_width(d_low, d_high) <= 0.05


def test_random_allocation_refusals():
    gaussian = de.GaussianDpEvent(1.0)
    with pytest.raises(UnsupportedEventError, match="RandomAllocationDpEvent.*GceAccountant"):
        from_dp_event(RandomAllocationDpEvent(gaussian, 1, 10))
    with pytest.raises(gce.InvalidParameterError, match="num_selected") as info:
        read_dp_event(RandomAllocationDpEvent(gaussian, 11, 10))
    assert info.value.field == "event.num_selected"
    with pytest.raises(UnsupportedEventError, match="Gaussian mechanisms only"):
        read_dp_event(RandomAllocationDpEvent(de.LaplaceDpEvent(1.0), 1, 10))
    held = GceAccountant().compose(RandomAllocationDpEvent(gaussian, 1, 10))
    for other in (gaussian, de.PoissonSampledDpEvent(0.1, gaussian), de.DiscreteLaplaceDpEvent(1.0, 3)):
        assert not held.supports(other)
        with pytest.raises(pa.UnsupportedEventError, match="RandomAllocationDpEvent composes only with"):
            held.compose(other)
    assert not GceAccountant().supports(de.ComposedDpEvent([gaussian, RandomAllocationDpEvent(gaussian, 1, 10)]))
    with pytest.raises(pa.UnsupportedEventError, match="num_selected 1"):
        GceAccountant().compose(RandomAllocationDpEvent(gaussian, 2, 10)).compose(
            RandomAllocationDpEvent(de.GaussianDpEvent(2.0), 1, 10))
    assert held.guarantees == {RandomAllocation(1.0, 10, 1): 1}  # nothing refused was composed


def test_laws_refuse_zcdp():
    with pytest.raises(pa.UnsupportedEventError, match="DiscreteLaplaceDpEvent.*zCDP"):
        GceAccountant().compose(de.DiscreteLaplaceDpEvent(1.0, 2)).compose(de.ZCDpEvent(0.1))
    with pytest.raises(pa.UnsupportedEventError, match="SampledWithoutReplacementDpEvent.*zCDP"):
        GceAccountant(REPLACE_ONE).compose(de.ZCDpEvent(0.1)).compose(
            de.SampledWithoutReplacementDpEvent(10, 2, de.GaussianDpEvent(1.0)))


# ---------------------------------------------------------------------------
# Random trees against dp-accounting's PLDs


def random_tree(seed: int) -> de.DpEvent:
    """A small random tree of the events dp-accounting's PLD accountant reads (add/remove)."""
    rng = random.Random(seed)

    def leaf() -> de.DpEvent:
        kind = rng.choice(["gaussian", "laplace", "discrete", "discrete", "poisson"])
        if kind == "gaussian":
            return de.GaussianDpEvent(rng.choice([1.5, 2.0, 4.0]))
        if kind == "laplace":
            return de.LaplaceDpEvent(rng.choice([2.0, 5.0]))
        if kind == "discrete":
            return de.DiscreteLaplaceDpEvent(rng.choice([0.1, 0.25, 0.6]), rng.choice([1, 2, 3]))
        return de.PoissonSampledDpEvent(rng.choice([0.05, 0.2]), de.GaussianDpEvent(rng.choice([1.0, 2.0])))

    def tree(depth: int) -> de.DpEvent:
        if depth == 0 or rng.random() < 0.4:
            return leaf()
        if rng.random() < 0.5:
            return de.SelfComposedDpEvent(tree(depth - 1), rng.randint(1, 4))
        return de.ComposedDpEvent([tree(depth - 1) for _ in range(rng.randint(2, 3))])

    return de.ComposedDpEvent([tree(2), leaf()])


@tiers.parametrize("seed", range(24), default=[0, 1, 2, 3])
def test_random_trees_against_dp_accounting(seed):
    """Every accepted tree: gce's upper end at least dp-accounting's optimistic PLD (below the exact curve), and
    at most its pessimistic PLD (dp-accounting's best certified value here) plus gce's own bracket: gce's lower
    end is at most dp-accounting's value, its upper end within rtol of it."""
    event = random_tree(seed)
    accountant = GceAccountant()
    assert accountant.supports(event)
    accountant.compose(event)
    low_pld = optimistic(event)
    for delta in (1e-6, 1e-3):
        low, high = accountant.get_epsilon_bracket(delta)
        ref = pessimistic_epsilon(event, delta)
        assert low_pld.get_epsilon_for_delta(delta) <= high * (1 + 1e-9), event
        assert low <= ref * (1 + 1e-9), event
        assert high <= ref * (1 + RTOL) + 1e-9, event

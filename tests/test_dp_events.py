"""dp-accounting events in, gce answers out (gce/bridges): every event kind read against dp-accounting's
own accountants on the same event, unsupported events refused by name, events accepted by Invocation and
the ledger, and GceAccountant against PLDAccountant and RdpAccountant on DP-SGD-like sequences.

References: dp-accounting's ``PLDAccountant`` (pessimistic PLDs: an upper bound on the exact curve) and its
optimistic PLDs (``pessimistic_estimate=False``: a lower bound), ``RdpAccountant`` (an upper bound, looser)."""

from __future__ import annotations

import logging
import math

import attr
import pytest
from dp_accounting import dp_event as de
from dp_accounting import privacy_accountant as pa
from dp_accounting.pld import common
from dp_accounting.pld import privacy_loss_distribution as pld
from dp_accounting.pld.pld_privacy_accountant import PLDAccountant
from dp_accounting.rdp.rdp_privacy_accountant import RdpAccountant

import gce
import tiers
from gce.bridges.accountant import GceAccountant
from gce.bridges.dp_events import UnsupportedEventError, as_guarantee, from_dp_event, rr_epsilon

logging.getLogger().setLevel(logging.ERROR)  # dp-accounting's connect-the-dots notice on optimistic builds

RTOL = gce.effort.DEFAULT_RTOL if hasattr(gce, "effort") else 0.01
REPLACE_ONE = pa.NeighboringRelation.REPLACE_ONE

EpsilonDeltaDpEvent = getattr(de, "EpsilonDeltaDpEvent", None)
if EpsilonDeltaDpEvent is None:  # dp-accounting 0.6.0 lacks it; its repository's main defines it so:
    @attr.define(frozen=True)
    class EpsilonDeltaDpEvent(de.DpEvent):  # type: ignore[no-redef]
        epsilon: float
        delta: float


#: dp-accounting's grid for the references (its default): a coarser one would only loosen them.
H = 1e-4


def build(event: de.DpEvent, pessimistic: bool, relation=pa.NeighboringRelation.ADD_OR_REMOVE_ONE):
    """dp-accounting's PLD of an event, rounded up (pessimistic: an upper bound on the exact curve) or
    down (optimistic: a lower bound)."""
    h = H
    if isinstance(event, de.SelfComposedDpEvent):
        return build(event.event, pessimistic, relation).self_compose(event.count)
    if isinstance(event, de.ComposedDpEvent):
        out = build(event.events[0], pessimistic, relation)
        for e in event.events[1:]:
            out = out.compose(build(e, pessimistic, relation))
        return out
    q, inner = (event.sampling_probability, event.event) if isinstance(event, de.PoissonSampledDpEvent) \
        else (1.0, event)
    if isinstance(inner, de.GaussianDpEvent):
        return pld.from_gaussian_mechanism(inner.noise_multiplier, pessimistic_estimate=pessimistic,
                                           value_discretization_interval=h, sampling_prob=q,
                                           use_connect_dots=pessimistic)
    if isinstance(inner, de.LaplaceDpEvent):
        return pld.from_laplace_mechanism(inner.noise_multiplier, pessimistic_estimate=pessimistic,
                                          value_discretization_interval=h, sampling_prob=q)
    if isinstance(inner, de.RandomizedResponseDpEvent):
        return pld.from_randomized_response(inner.noise_parameter, inner.num_buckets,
                                            pessimistic_estimate=pessimistic, value_discretization_interval=h,
                                            neighboring_relation=relation)
    if isinstance(inner, de.DiscreteLaplaceDpEvent):  # the exact law, its atoms rounded up or down
        return pld.from_discrete_laplace_mechanism(inner.noise_parameter, inner.sensitivity,
                                                   pessimistic_estimate=pessimistic, value_discretization_interval=h,
                                                   sampling_prob=q)
    if isinstance(inner, EpsilonDeltaDpEvent):  # the canonical pair: exact when epsilon is on the grid
        return pld.from_privacy_parameters(common.DifferentialPrivacyParameters(inner.epsilon, inner.delta), h)
    raise AssertionError(f"no PLD for {event}")


def optimistic(event: de.DpEvent, relation=pa.NeighboringRelation.ADD_OR_REMOVE_ONE):
    return build(event, False, relation)


def pessimistic_epsilon(event: de.DpEvent, delta: float, relation=pa.NeighboringRelation.ADD_OR_REMOVE_ONE) -> float:
    """dp-accounting's PLDAccountant where it takes the event, else the same pessimistic PLDs composed
    directly: 0.6.0 has no EpsilonDeltaDpEvent, and its PLDAccountant composes a randomized response once
    whatever the count (``_maybe_compose`` never self-composes it: 6 runs answer as 1)."""
    accountant = PLDAccountant(relation, H)
    if accountant.supports(event) and "RandomizedResponse" not in repr(event):
        return accountant.compose(event).get_epsilon(delta)
    return build(event, True, relation).get_epsilon_for_delta(delta)


# ---------------------------------------------------------------------------
# from_dp_event: every kind


def test_every_kind_is_read_as_its_guarantee():
    g, lap = de.GaussianDpEvent(1.5), de.LaplaceDpEvent(2.0)
    assert from_dp_event(g) == {gce.GaussianMechanism(1.5, 1.0): 1}
    assert from_dp_event(lap) == {gce.LaplaceMechanism(2.0, 1.0): 1}
    assert from_dp_event(EpsilonDeltaDpEvent(0.5, 1e-6)) == {gce.ApproxDP(0.5, 1e-6): 1}
    assert from_dp_event(EpsilonDeltaDpEvent(0.5, 0.0)) == {gce.PureDP(0.5): 1}
    (rr, one), = from_dp_event(de.RandomizedResponseDpEvent(0.5, 2)).items()
    assert one == 1 and rr.epsilon == pytest.approx(math.log(3.0), rel=1e-15)
    assert rr_epsilon(0.2, 5) == pytest.approx(math.log(1 + 5 * 0.8 / 0.2))
    assert from_dp_event(de.ZCDpEvent(0.3)) == {gce.ZCDP(0.3): 1}
    assert from_dp_event(de.PoissonSampledDpEvent(0.01, g)) == {gce.Subsampled(0.01, gce.GaussianMechanism(1.5)): 1}
    nested = de.PoissonSampledDpEvent(0.5, de.PoissonSampledDpEvent(0.1, lap))
    assert from_dp_event(nested) == {gce.Subsampled(0.05, gce.LaplaceMechanism(2.0)): 1}
    # several Gaussians on one sample are one Gaussian of mu = sqrt(sum mu_i^2) (DRS22)
    two = de.PoissonSampledDpEvent(0.1, de.ComposedDpEvent([de.GaussianDpEvent(3.0), de.GaussianDpEvent(4.0)]))
    (sampled, count), = from_dp_event(two).items()
    assert count == 1 and sampled.rate == 0.1 and sampled.mechanism.sigma == pytest.approx(2.4)
    tree = de.ComposedDpEvent([de.SelfComposedDpEvent(g, 3), de.NoOpDpEvent(), g,
                               de.SelfComposedDpEvent(de.ComposedDpEvent([lap, g]), 2)])
    assert from_dp_event(tree) == {gce.GaussianMechanism(1.5): 6, gce.LaplaceMechanism(2.0): 2}
    # nothing runs: the empty multiset, which gce.compose takes (delta 0 everywhere)
    for empty in (de.NoOpDpEvent(), de.SelfComposedDpEvent(g, 0), de.PoissonSampledDpEvent(0.0, g),
                  de.RandomizedResponseDpEvent(1.0, 4), de.RandomizedResponseDpEvent(0.3, 1)):
        assert from_dp_event(empty) == {}
    assert gce.compose(from_dp_event(de.NoOpDpEvent())).epsilon(1e-6) == 0.0


@pytest.mark.parametrize("event, bad", [
    (de.NonPrivateDpEvent(), "NonPrivateDpEvent"),
    (de.UnsupportedDpEvent(), "UnsupportedDpEvent"),
    (de.SampledWithoutReplacementDpEvent(100, 10, de.GaussianDpEvent(1.0)),
     "SampledWithoutReplacementDpEvent is read under NeighboringRelation.REPLACE_ONE only"),
    (de.SampledWithReplacementDpEvent(100, 10, de.GaussianDpEvent(1.0)), "SampledWithReplacementDpEvent"),
    (de.DiscreteLaplaceDpEvent(0.0, 1), "DiscreteLaplaceDpEvent with noise_parameter 0"),
    (de.ComposedDpEvent([de.GaussianDpEvent(1.0), de.NonPrivateDpEvent()]), "NonPrivateDpEvent"),
    (de.GaussianDpEvent(0.0), "GaussianDpEvent with noise_multiplier 0"),
    (de.RandomizedResponseDpEvent(0.0, 2), "RandomizedResponseDpEvent with noise_parameter 0"),
    (de.ZCDpEvent(0.1, 0.5), "xi 0.5"),
    (de.PoissonSampledDpEvent(0.1, de.ZCDpEvent(0.1)), "PoissonSampledDpEvent: zCDP"),
    (de.PoissonSampledDpEvent(0.1, de.ComposedDpEvent([de.LaplaceDpEvent(1.0), de.GaussianDpEvent(1.0)])),
     "Poisson-sampled composition"),
])
def test_unsupported_events_are_refused_by_name(event, bad):
    with pytest.raises(UnsupportedEventError, match=bad) as info:
        from_dp_event(event)
    assert info.value.field.startswith("event")
    assert isinstance(info.value, gce.InvalidParameterError) and isinstance(info.value, gce.UnsupportedCombinationError)
    assert not GceAccountant().supports(event)
    with pytest.raises(pa.UnsupportedEventError, match=bad.split()[0].rstrip(":")):
        GceAccountant().compose(event)


def test_the_field_says_where_in_the_tree():
    tree = de.ComposedDpEvent([de.GaussianDpEvent(1.0), de.SelfComposedDpEvent(de.NonPrivateDpEvent(), 2)])
    with pytest.raises(UnsupportedEventError) as info:
        from_dp_event(tree)
    assert info.value.field == "event.events[1].event"
    with pytest.raises(gce.InvalidParameterError, match="event.count"):
        from_dp_event(de.SelfComposedDpEvent(de.GaussianDpEvent(1.0), -1))
    with pytest.raises(gce.InvalidParameterError, match="noise_multiplier"):
        from_dp_event(de.GaussianDpEvent(-1.0))
    with pytest.raises(gce.InvalidParameterError, match="must be a dp-accounting DpEvent"):
        from_dp_event(gce.PureDP(1.0))


#: (event, neighbouring relation of dp-accounting's reference, whether gce's guarantee is the event exactly)
KINDS = [
    (de.SelfComposedDpEvent(de.GaussianDpEvent(2.0), 5), None, True),
    (de.SelfComposedDpEvent(de.LaplaceDpEvent(2.0), 3), None, True),
    (de.SelfComposedDpEvent(EpsilonDeltaDpEvent(0.5, 1e-7), 4), None, True),
    (de.SelfComposedDpEvent(de.RandomizedResponseDpEvent(0.4, 2), 6), REPLACE_ONE, True),
    (de.SelfComposedDpEvent(de.RandomizedResponseDpEvent(0.4, 5), 6), REPLACE_ONE, False),
    (de.SelfComposedDpEvent(de.PoissonSampledDpEvent(0.05, de.GaussianDpEvent(1.0)), 50), None, True),
    (de.SelfComposedDpEvent(de.PoissonSampledDpEvent(0.2, de.LaplaceDpEvent(1.0)), 10), None, True),
    (de.ComposedDpEvent([de.GaussianDpEvent(3.0), de.LaplaceDpEvent(4.0),
                         de.SelfComposedDpEvent(de.PoissonSampledDpEvent(0.1, de.GaussianDpEvent(2.0)), 5)]),
     None, True),
]


@tiers.parametrize("event, relation, exact", KINDS, default=[1, 2, 3, 4, 6],
                   ids=["gaussian", "laplace", "epsilon_delta", "rr2", "rr5", "poisson_gaussian",
                        "poisson_laplace", "composed"])
def test_each_kind_matches_dp_accounting_within_the_bracket(event, relation, exact):
    """gce's upper never below dp-accounting's optimistic PLD (a lower bound on the exact curve); where
    gce's guarantee is the event itself, dp-accounting's pessimistic value lies in gce's bracket (up to
    the 1% asked for above)."""
    relation = relation or pa.NeighboringRelation.ADD_OR_REMOVE_ONE
    accountant = GceAccountant().compose(event)
    composition = gce.compose(from_dp_event(event))
    low_pld = optimistic(event, relation)
    for delta in (1e-6, 1e-3):
        low, high = accountant.get_epsilon_bracket(delta)
        assert high == accountant.get_epsilon(delta)
        assert low_pld.get_epsilon_for_delta(delta) <= high * (1 + 1e-9)
        ref = pessimistic_epsilon(event, delta, relation)
        assert composition.epsilon(delta) <= high * (1 + 1e-12)  # at least as tight as gce.compose
        if exact:
            assert low <= ref * (1 + 1e-9)
            assert high <= ref * (1 + RTOL)
            assert gce.effort.relative_width(low, high) <= 2 * RTOL
        # else k-ary randomized response, k > 2: the canonical pair dominates it (sound, looser), so only the
        # optimistic bound above holds of the event itself
    eps = 1.0
    low, high = accountant.get_delta_bracket(eps)
    assert low_pld.get_delta_for_epsilon(eps) <= high * (1 + 1e-9) + 1e-15
    assert high == accountant.get_delta(eps)


def test_zcdp_against_rdp():
    """A zCDP event: dp-accounting's RDP accountant composes it exactly in Renyi terms; gce's zCDP row (the
    same conversion, CKS20) is never looser, and its lower end is the Gaussian of the same rho."""
    event = de.SelfComposedDpEvent(de.ZCDpEvent(0.05), 10)
    accountant = GceAccountant().compose(event)
    for delta in (1e-6, 1e-3):
        low, high = accountant.get_epsilon_bracket(delta)
        assert high <= RdpAccountant().compose(event).get_epsilon(delta) * (1 + 1e-9)
        gaussian = gce.compose({gce.GaussianDP(1.0): 1}).epsilon(delta)  # mu = sqrt(2 * 0.5)
        assert low == pytest.approx(gaussian, rel=0.02) and low <= gaussian
        assert 0 < low < high


# ---------------------------------------------------------------------------
# Events where guarantees are taken


def test_invocations_and_the_ledger_take_events(tmp_path):
    step = de.PoissonSampledDpEvent(0.01, de.GaussianDpEvent(1.0))
    sampled = gce.Subsampled(0.01, gce.GaussianMechanism(1.0))
    assert gce.Invocation(3, step) == gce.Invocation(3, sampled)
    assert gce.Invocation(3, de.SelfComposedDpEvent(step, 100), repeat=2) == gce.Invocation(3, sampled, 200)
    group = gce.InvocationGroup(range(4), de.SelfComposedDpEvent(step, 10))
    assert (group.guarantee, group.repeat) == (sampled, 10)
    with pytest.raises(gce.InvalidParameterError, match="2 distinct mechanisms") as info:
        gce.Invocation(0, de.ComposedDpEvent([step, de.LaplaceDpEvent(1.0)]))
    assert info.value.field == "mechanism"
    with pytest.raises(gce.InvalidParameterError, match="no mechanism"):
        gce.Invocation(0, de.NoOpDpEvent())
    # three subsampled Gaussians at full-precision rates (a tree the random-event test drew): one short line
    # that names the first and counts the rest
    long = de.ComposedDpEvent([de.PoissonSampledDpEvent(0.5752184419802522, de.GaussianDpEvent(1.4163779856978014)),
                               de.PoissonSampledDpEvent(0.3828125, de.GaussianDpEvent(1.0)), de.GaussianDpEvent(1.0)])
    with pytest.raises(gce.InvalidParameterError, match=r"3 distinct mechanisms \(1 x Subsampled\(rate=0.57") as info:
        gce.Invocation(0, long)
    assert len(str(info.value)) <= 300 and "more)" in str(info.value), str(info.value)
    with pytest.raises(UnsupportedEventError, match="NonPrivateDpEvent") as info:
        gce.InvocationGroup(range(2), de.NonPrivateDpEvent())
    assert info.value.field == "mechanism.event"
    assert as_guarantee(gce.PureDP(1.0), 3) == (gce.PureDP(1.0), 3)

    scenario = gce.Scenario(databases=3, invocations=[gce.Invocation(i, gce.PureDP(0.1)) for i in range(3)],
                            constraints=gce.ConstraintSet(3, []), delta=1e-6)
    ledger = tmp_path / "ledger.db"
    by_event = gce.Accountant.create(ledger, scenario, budget_epsilon=2.1, budget_delta=1e-6, filter="basic")
    decision = by_event.spend([0], de.SelfComposedDpEvent(EpsilonDeltaDpEvent(0.5, 0.0), 2))
    assert decision.admitted
    refused = by_event.spend([0], de.SelfComposedDpEvent(EpsilonDeltaDpEvent(0.5, 0.0), 3))
    assert not refused.admitted  # 1.0 spent + 1.5 > 2.0: the event counted as 3 invocations
    with pytest.raises(gce.InvalidParameterError, match="distinct mechanisms"):
        by_event.spend([1], de.ComposedDpEvent([EpsilonDeltaDpEvent(0.5, 0.0), de.LaplaceDpEvent(1.0)]))


# ---------------------------------------------------------------------------
# GceAccountant


def test_accountant_interface():
    accountant = GceAccountant()
    assert accountant.get_epsilon(1e-6) == 0.0 and accountant.get_delta(0.0) == 0.0
    event = de.GaussianDpEvent(1.0)
    assert accountant.supports(event) and accountant.compose(event, 4) is accountant
    assert accountant.guarantees == {gce.GaussianMechanism(1.0): 4}
    assert accountant.ledger == de.SelfComposedDpEvent(event, 4)
    exact = gce.compose({gce.GaussianMechanism(1.0): 4}).epsilon(1e-6)  # 2-GDP, exact
    assert accountant.get_epsilon_bracket(1e-6) == (exact, exact)
    assert accountant.engine.startswith("compose")
    assert accountant.get_delta(exact) <= 1e-6 * (1 + 1e-9)
    with pytest.raises(gce.InvalidParameterError, match="neighboring_relation"):
        GceAccountant(pa.NeighboringRelation.REPLACE_SPECIAL)
    with pytest.raises(gce.InvalidParameterError, match="rtol"):
        GceAccountant(rtol=0.0)
    with pytest.raises(gce.InvalidParameterError, match="target_delta"):
        accountant.get_epsilon(0.0)
    with pytest.raises(pa.UnsupportedEventError, match="count"):
        accountant.compose(event, -1)
    assert accountant.guarantees == {gce.GaussianMechanism(1.0): 4}


def dp_sgd(steps: int, rate: float, sigma: float) -> de.DpEvent:
    return de.SelfComposedDpEvent(de.PoissonSampledDpEvent(rate, de.GaussianDpEvent(sigma)), steps)


SEQUENCES = [
    [dp_sgd(20, 0.05, 2.0)],
    [dp_sgd(60, 0.01, 1.2), dp_sgd(40, 0.02, 0.9)],
    [dp_sgd(1000, 0.01, 1.0)],
    [dp_sgd(500, 0.004, 0.8), dp_sgd(300, 0.01, 1.1), de.GaussianDpEvent(5.0)],
]


@tiers.parametrize("sequence", SEQUENCES, default=[0], ids=["20 steps", "two phases", "1000 steps",
                                                             "three phases and a release"])
def test_dp_sgd_sequences_against_pld_and_rdp(sequence):
    """gce <= RDP; dp-accounting's PLD (pessimistic) within gce's bracket, its optimistic PLD below gce's
    upper; the bracket at most rtol wide."""
    ours, ref_pld, ref_rdp = GceAccountant(), PLDAccountant(), RdpAccountant()
    for event in sequence:
        for accountant in (ours, ref_pld, ref_rdp):
            accountant.compose(event)
    assert ours.engine == "" and ours.guarantees
    low_pld = optimistic(de.ComposedDpEvent(sequence))
    for delta in (1e-5,):
        low, high = ours.get_epsilon_bracket(delta)
        assert ours.engine == "poisson subsampling"
        assert high <= ref_rdp.get_epsilon(delta)
        assert low <= ref_pld.get_epsilon(delta) <= high * (1 + RTOL)
        assert low_pld.get_epsilon_for_delta(delta) <= high
        assert gce.effort.relative_width(low, high) <= RTOL


def test_same_events_same_answer_and_the_time_limit_only_stops():
    """Two accountants fed the same events (in another order) answer the same numbers; a time limit too
    short for any refinement of a finer bracket (rtol 1e-4) keeps a certified one, says so, and overlaps."""
    a, b = GceAccountant(), GceAccountant()
    first, second = dp_sgd(10, 0.05, 2.0), dp_sgd(10, 0.02, 1.5)
    a.compose(first).compose(second)
    b.compose(second).compose(first)
    full = a.get_epsilon_bracket(1e-5)
    assert full == b.get_epsilon_bracket(1e-5) and not a.time_limit_reached
    capped = GceAccountant(rtol=1e-4, time_limit=1e-9).compose(first).compose(second)
    low, high = capped.get_epsilon_bracket(1e-5)
    assert capped.time_limit_reached and gce.effort.relative_width(low, high) > 1e-4
    assert max(low, full[0]) <= min(high, full[1])  # both certified: they bracket the same number
    with pytest.raises(gce.InvalidParameterError, match="time_limit"):
        GceAccountant(time_limit=0)

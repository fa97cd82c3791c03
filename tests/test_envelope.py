"""The per-slot envelopes' bound (gce/solvers/envelope.py) against brute force, and its pieces.

Brute force: random scenarios of 4 to 11 databases mixing (eps, delta) points, Laplace and Gaussian
mechanisms under ``at_most`` m with ``exclusive`` groups (unbounded pairs); every allowed set through
``satisfied``, the maximal ones composed by ``reference.loss_distribution`` (canonical pairs' atoms, Laplace
losses rounded down and up onto a 1e-3 lattice, the Gaussian part in closed form): a lower and an upper
bound on each set's epsilon that share nothing with ``gce``. The solve runs with the enumeration of allowed
pairs, the branch and bound over the memberships and the Renyi bound switched off, so that its certified
bound is the per-slot search's: never below the optimum's lower bound, within 2% of its upper bound.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import math
import random

import numpy as np
import pytest

import reference
import tiers
from gce.accounting.guarantees import ApproxDP, GaussianMechanism, LaplaceMechanism, PureDP
from gce.constraints import AtMost, ConstraintSet, Exclusive
from gce.model import Invocation, Scenario
from gce.solvers import envelope
from gce.solvers.weights import Exhaustive, Laminar
from gce.solvers.base import WeightProblem
from gce.solving import SLOT_THEOREM, solve

POINTS = [(0.1, 0.0), (0.3, 0.0), (0.05, 1e-7), (0.2, 1e-6), (0.5, 0.0)]
LAPLACE = [4.0, 10.0, 25.0]
GAUSS = [2.0, 5.0, 9.0]


def _guarantee(rng: random.Random):
    kind = rng.choice(["point", "point", "laplace", "gauss"])
    if kind == "point":
        eps, delta = rng.choice(POINTS)
        return PureDP(eps) if delta == 0.0 else ApproxDP(eps, delta)
    if kind == "laplace":
        return LaplaceMechanism(rng.choice(LAPLACE))
    return GaussianMechanism(rng.choice(GAUSS))


def random_scenario(seed: int) -> Scenario:
    rng = random.Random(seed)
    n = rng.randint(4, 11)
    pool = list(dict.fromkeys(_guarantee(rng) for _ in range(rng.randint(2, 5))))
    invocations = [Invocation(db, g, rng.randint(1, 3)) for db in range(n)
                   for g in rng.sample(pool, min(len(pool), rng.randint(1, 2)))]
    constraints = [AtMost(rng.randint(1, max(1, n - 2)))]
    order = list(range(n))
    rng.shuffle(order)
    start = 0
    while rng.random() < 0.5 and start + 2 <= n:
        size = rng.randint(2, 3)
        constraints.append(Exclusive(tuple(sorted(order[start:start + size]))))
        start += size
    return Scenario(n, tuple(invocations), ConstraintSet(n, tuple(constraints)), delta=rng.choice([1e-6, 1e-4]))


def _mechanism(g):
    if isinstance(g, LaplaceMechanism):
        return ("laplace", g.sensitivity / g.scale)
    if isinstance(g, GaussianMechanism):
        return ("gauss", g.sensitivity / g.sigma)
    return ("point", g.epsilon, getattr(g, "delta", 0.0))


@functools.lru_cache(maxsize=None)
def optimum(seed: int) -> tuple[float, float]:
    """(lower, upper) bounds on the exact worst-case epsilon: the largest over the maximal allowed sets of
    the reference's epsilon with Laplace losses rounded down, and rounded up."""
    scenario = random_scenario(seed)
    n = scenario.n
    sets = [frozenset(s) for k in range(n + 1) for s in itertools.combinations(range(n), k)
            if scenario.constraints.satisfied(frozenset(s))]
    maximal = [s for s in sets if not any(scenario.constraints.satisfied(s | {i}) for i in range(n) if i not in s)]
    lower = upper = 0.0
    for s in maximal:
        mechanisms = [_mechanism(inv.guarantee) for inv in scenario.invocations if inv.database in s
                      for _ in range(inv.repeat)]
        lower = max(lower, reference.mechanisms_epsilon(mechanisms, scenario.delta, rounding="down"))
        upper = max(upper, reference.mechanisms_epsilon(mechanisms, scenario.delta, rounding="up"))
    return lower, upper


@pytest.fixture
def slots_only(monkeypatch):
    """The solve's certified bound from the per-slot search alone (module doc)."""
    mixed = importlib.import_module("gce.solvers.mixed")
    monkeypatch.setattr(mixed, "ENUMERATION_BLOCKS_MAX", -1)
    monkeypatch.setattr(mixed, "NODES_MAX", 0)
    monkeypatch.setattr(importlib.import_module("gce.solving"), "_renyi_bound", lambda scenario, budget: None)


@tiers.parametrize("seed", range(60), default=range(1, 8))
def test_slot_bound_is_sound_and_tight_against_brute_force(seed, slots_only):
    scenario = random_scenario(seed)
    report = solve(scenario, time_limit=30.0)
    low, high = optimum(seed)
    assert report.epsilon >= low * (1 - 1e-9), (seed, report.epsilon, low, report.notes)
    assert report.epsilon <= high * 1.02 + 1e-9, (seed, report.epsilon, high, report.notes)
    b0, b1 = report.witness
    assert scenario.constraints.satisfied(b0) and scenario.constraints.satisfied(b1)
    if report.bracket is not None:
        assert report.bracket[0] <= high * (1 + 1e-9) and report.bracket[1] == report.epsilon
    if not report.exact and len(scenario.table.kinds) > 1 and math.isfinite(report.epsilon):
        assert report.theorem in (SLOT_THEOREM, "batch", "pld"), report.theorem


def test_the_slot_bound_answers_where_the_renyi_bound_was_loose(slots_only):
    # 3 of 30 databases, each an (eps, delta) point, a Gaussian or a Laplace mechanism with repeats: the
    # Renyi bound's conversion costs several per cent here; the slot search closes to rtol.
    rng = random.Random(7)
    pool = [PureDP(0.2), ApproxDP(0.1, 1e-8), GaussianMechanism(3.0), LaplaceMechanism(6.0), PureDP(0.05)]
    invocations = [Invocation(db, g, rng.randint(1, 4)) for db in range(30) for g in rng.sample(pool, 2)]
    scenario = Scenario(30, invocations, ConstraintSet(30, (AtMost(3),)), delta=1e-6)
    report = solve(scenario)
    assert report.theorem == SLOT_THEOREM
    low, high = report.bracket
    assert high / low - 1 <= 0.01
    assert not report.time_limit_reached


def _bundles(seed: int, h: float = 0.01):
    rng = random.Random(seed)
    pool = [PureDP(0.3), ApproxDP(0.1, 1e-5), GaussianMechanism(2.0), LaplaceMechanism(3.0)]
    return [envelope.bundle_laws(tuple((g, rng.randint(1, 3)) for g in rng.sample(pool, rng.randint(1, 2))), h)
            for _ in range(6)]


@pytest.mark.parametrize("seed", range(4))
def test_the_envelope_law_lies_above_every_profile(seed):
    h = 0.01
    bundles = [b[0] for b in _bundles(seed, h)]
    lo, hi = min(b.lo for b in bundles), max(b.hi for b in bundles)
    profiles = np.array([envelope.profile(b, lo, hi, h) for b in bundles])
    law = envelope.envelope_law(profiles.max(axis=0), lo, h)
    mine = envelope.profile(law, lo, hi, h)
    assert (mine >= profiles.max(axis=0)).all()
    # the chord through the points: equal there, up to the round-off of differences of profiles near 1 (its
    # largest shortfall is charged at +inf, raising the whole profile by a few 1e-15)
    assert mine == pytest.approx(profiles.max(axis=0), rel=1e-10, abs=1e-13)
    # P's total mass 1, up to the round-off of the profiles' differences (negative ones clipped: only ever more)
    assert (law.mass >= 0).all() and math.fsum(law.mass) + law.infinite == pytest.approx(1.0, abs=1e-9)
    # a valid pair: Q's mass of the finite atoms at most 1
    assert float(np.exp(-(np.arange(law.lo, law.hi + 1) * h)) @ law.mass) <= 1.0 + 1e-12


def test_a_profile_is_the_hockey_stick_divergence():
    # g(e^eps) = E_P[(1 - e^{eps - L})_+] + P(L = inf), directly from the atoms
    h = 0.01
    bundle = _bundles(1, h)[0][0]
    x = (bundle.lo + np.arange(bundle.mass.size)) * h
    g = envelope.profile(bundle, bundle.lo, bundle.hi, h)
    for j in (0, bundle.mass.size // 3, bundle.mass.size // 2, bundle.mass.size - 2):
        direct = bundle.infinite + float((bundle.mass * np.maximum(-np.expm1(x[j] - x), 0.0)).sum())
        assert g[j] == pytest.approx(direct, rel=1e-9, abs=1e-15)


def _direct_composition(laws, h):
    """The composition of ``laws`` by direct convolution (no transform): (lowest index, masses, mass at +inf)."""
    mass, lo, survive = np.ones(1), 0, 1.0
    for law in laws:
        mass, lo, survive = np.convolve(mass, law.mass), lo + law.lo, survive * (1.0 - law.infinite)
    return lo, mass, 1.0 - survive


@pytest.mark.parametrize("seed", [0, 2, 4])  # (each with Gaussian laws: a range far wider than the bulk)
def test_windowed_compositions_lie_above_the_direct_convolution(seed):
    """A node's composition on the root window's size (wrapped, the mass above charged by Chernoff), on a
    window forced far too small (composed on the whole range instead) and on the whole range: each profile
    at least the direct convolution's at every grid point of its window and equal to it up to round-off and
    the charged tail (WINDOW_TAIL)."""
    h = 0.01
    laws = [own[0] for own in _bundles(seed, h)] * 8  # 48 laws: a window far narrower than their range
    lo, hi = min(b.lo for b in laws), max(b.hi for b in laws)
    start, mass, infinite = _direct_composition(laws, h)
    exact = envelope.Bundle(start, mass, infinite)
    for forced in (None, 64):
        spectra = envelope._Spectra(lo, hi, len(laws), h)
        parts = [spectra.of(b) for b in laws]
        if forced is not None:
            spectra.size = forced
        first, pmf, inf, round_off = spectra._pmf(parts)
        if forced is None:
            assert spectra.size < spectra.full / 2  # the window is what makes nodes cheap
            assert first > start and spectra.whole == 0  # the window starts above the lowest loss
        else:
            assert spectra.whole == 1 and pmf.size == spectra.full  # the window does not fit: the whole range
        top = first + pmf.size - 1
        mine = envelope.profile(envelope.Bundle(first, pmf, inf), first, top, h)
        low, high = min(start, first), max(start + mass.size - 1, top)
        theirs = envelope.profile(exact, low, high, h)[first - low:top - low + 1]
        assert (mine >= theirs - round_off).all()
        assert np.abs(mine - theirs).max() <= round_off + 10 * envelope.WINDOW_TAIL + 1e-13


def test_the_chernoff_window_leaves_at_most_its_tail_outside():
    h = 0.01
    laws = [own[0] for own in _bundles(4, h)] * 3
    spectra = envelope._Spectra(min(b.lo for b in laws), max(b.hi for b in laws), len(laws), h)
    parts = [spectra.of(b) for b in laws]
    start, mass, _ = _direct_composition(laws, h)
    a, b = spectra._window(sum(p.log_mgf for p in parts), sum(p.lo for p in parts), sum(p.span for p in parts))
    assert start < a < b < start + mass.size - 1
    assert math.fsum(mass[:a - start]) <= envelope.WINDOW_TAIL
    assert math.fsum(mass[b - start + 1:]) <= envelope.WINDOW_TAIL
    # the charge above an index bounds the mass there (Chernoff), and is not far above it near the window's top
    above = math.fsum(mass[b - start + 1:])
    assert above <= spectra._upper_tail(sum(p.log_mgf for p in parts), b + 1) <= 2 * envelope.WINDOW_TAIL + 1e-300


def test_trimming_only_raises_the_profile():
    h = 0.01
    for bundles in (_bundles(2, h), _bundles(3, h)):
        for b in (own[0] for own in bundles):
            cut = envelope.trimmed(b, 1e-3)
            lo, hi = min(b.lo, cut.lo), max(b.hi, cut.hi)
            before, after = envelope.profile(b, lo, hi, h), envelope.profile(cut, lo, hi, h)
            assert (after >= before * (1 - 1e-12) - 1e-15).all()  # (the recursions' round-off near g = 1)
            assert (after - before).max() <= 2e-3 + 1e-12


@pytest.mark.parametrize("seed", range(40))
def test_the_laminar_solver_is_the_heaviest_allowed_set(seed):
    rng = random.Random(seed)
    n = rng.randint(3, 10)
    constraints = [AtMost(rng.randint(0, n))]
    order = list(range(n))
    rng.shuffle(order)
    start = 0
    while start + 2 <= n and rng.random() < 0.7:
        size = rng.randint(2, 3)
        group = tuple(sorted(order[start:start + size]))
        constraints.append(Exclusive(group) if rng.random() < 0.5 else AtMost(rng.randint(1, len(group)), group))
        start += size
    problem = WeightProblem(ConstraintSet(n, tuple(constraints)), np.array([rng.randint(0, 5) for _ in range(n)],
                                                                            dtype=float), "unbounded")
    assert Laminar().can_solve(problem)
    ours, theirs = Laminar().solve(problem), Exhaustive().solve(problem)
    assert ours.value == theirs.value and ours.exact
    assert problem.constraints.satisfied(ours.witness[1])


def test_crossing_groups_are_not_laminar():
    problem = WeightProblem(ConstraintSet(4, (AtMost(1, (0, 1, 2)), AtMost(1, (2, 3)))), np.ones(4), "unbounded")
    assert not Laminar().can_solve(problem)


def _searched(scenario, h: float = 0.005, classes: int = 3):
    bundles = envelope.database_bundles(scenario.table, scenario.n, h, 0.0)
    reference = 0.3
    scores = envelope.scores(bundles, reference, h)
    slot = envelope.slot_search(bundles, scores, scenario.constraints, h, scenario.delta, None, 1e-3)
    counted = envelope.class_search(bundles, scores, scenario.constraints, h, scenario.delta, None, reference,
                                    1e-3, classes=classes)
    return slot, counted


@tiers.parametrize("seed", range(60), default=range(1, 8))  # (the brute force of the slot test's seeds, cached)
def test_the_class_bound_is_sound_against_brute_force(seed):
    scenario = random_scenario(seed)
    low, high = optimum(seed)
    for classes in (2, 3):
        slot, counted = _searched(scenario, classes=classes)
        if counted is None:  # one class: the databases' curves form one chain
            continue
        assert counted.upper >= low * (1 - 1e-9), (seed, classes, counted, low)
        if counted.members:
            assert scenario.constraints.satisfied(counted.members)
            assert counted.lower <= counted.upper * (1 + 1e-12)
        both = envelope.combined(slot, counted, scenario.delta, None)
        assert both.upper == min(slot.upper, counted.upper)
        assert both.curve.epsilon(scenario.delta) <= both.upper * (1 + 1e-12)


def test_every_exclusive_group_lies_in_the_class_of_its_first_member():
    label = np.array([0, 1, 1, 0, 2])
    group = np.array([0, 1, 0, 3, 1])  # rows 0 and 2 one group, rows 1 and 4 another
    assert envelope._grouped(label, group).tolist() == [0, 1, 0, 0, 1]


def test_classes_close_what_one_envelope_per_slot_mixes():
    # Two families whose curves cross: compositions of pure guarantees (large delta at small epsilon, none
    # beyond their sum) and subsampled Gaussians (a long tail). One envelope per slot carries the tails into
    # every slot (root bound 12.7% above the worst set found); counted by class, each family's envelopes
    # are near its members: within 0.1% in 18 compositions, where the per-slot search with as many nodes is
    # still more than 4% above.
    from gce.accounting.guarantees import Subsampled
    invocations = [Invocation(db, PureDP(0.12 + 0.01 * (db % 5)), 4) for db in range(20)]
    invocations += [Invocation(20 + db, Subsampled(0.05 + 0.01 * (db % 4), GaussianMechanism(0.9)), 3 + db % 3)
                    for db in range(20)]
    scenario = Scenario(40, tuple(invocations), ConstraintSet(40, (AtMost(8),)), delta=1e-6)
    h = 0.004
    bundles = envelope.database_bundles(scenario.table, scenario.n, h, 0.0)
    scores = envelope.scores(bundles, 0.3, h)
    counted = envelope.class_search(bundles, scores, scenario.constraints, h, scenario.delta, None, 0.3, 1e-3)
    slot = envelope.slot_search(bundles, scores, scenario.constraints, h, scenario.delta, None, 1e-3,
                                nodes_max=counted.nodes)
    found = max(slot.lower, counted.lower)
    assert counted.complete and counted.upper <= found * 1.001, (slot, counted)
    assert slot.upper >= found * 1.04
    assert scenario.constraints.satisfied(counted.members)

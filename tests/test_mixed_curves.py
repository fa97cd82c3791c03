"""Soundness of the mixed-guarantee search with Gaussian and Laplace mechanisms.

Random small scenarios mix Gaussian mechanisms, GDP, Laplace mechanisms and (eps, delta) guarantees
(pure, randomized response, approximate) under every constraint kind and both neighbourhoods. The
reference shares nothing with ``gce``'s search or composition: it lists the allowed sets by brute force
(every subset through ``satisfied``), forms every allowed pair's differing invocations (unbounded
(empty, b); bounded b0 XOR b1 for every two allowed sets, ``reference.xor_reachable``), and composes
each distinct list by its exact privacy-loss distribution (``reference.loss_distribution``: canonical
atoms exact, the Gaussian part in closed form, the Laplace losses rounded *down* onto a lattice of step
H). Rounding down makes each list's epsilon a lower bound on the exact one, at most H per Laplace
invocation below it (tests/test_reference.py checks the bracket), so the optimum it gives is a certified
lower bound: ``gce``'s answer must never be below it.
"""

from __future__ import annotations

import functools
import math
import random
import time

import numpy as np
import pytest

import reference
import tiers
from gce.accounting.guarantees import (ApproxDP, GaussianDP, GaussianMechanism, LaplaceMechanism, PureDP,
                                       RandomizedResponse)
from gce.model import Invocation, Scenario
from gce.solving import solve
from test_mixed_search import CONSTRAINT_KINDS, random_constraints

#: Lattice step of the reference's Laplace losses.
H = 1e-3
POINTS = [(0.1, 0.0), (0.4, 0.0), (1.0, 0.0), (0.2, 1e-3), (0.5, 0.01), (0.8, 1e-4), (2.0, 1e-6)]
SCENARIOS = 600


def _point_guarantee(rng: random.Random):
    eps, delta = rng.choice(POINTS)
    if delta == 0.0:
        return rng.choice([PureDP(eps), RandomizedResponse(eps)])
    return ApproxDP(eps, delta)


def _curve_guarantee(rng: random.Random):
    r = rng.random()
    if r < 0.45:
        return LaplaceMechanism(rng.choice([0.5, 1.0, 2.0, 4.0]), sensitivity=rng.choice([1.0, 1.0, 2.0]))
    if r < 0.85:
        return GaussianMechanism(rng.choice([0.8, 1.5, 3.0]), sensitivity=rng.choice([1.0, 1.0, 2.0]))
    return GaussianDP(rng.choice([0.3, 1.0]))


def mechanism(g) -> tuple:
    """The reference's description of a guarantee (the mechanism it is, or its canonical pair)."""
    if isinstance(g, GaussianMechanism):
        return ("gauss", g.sensitivity / g.sigma)
    if isinstance(g, GaussianDP):
        return ("gauss", g.mu)
    if isinstance(g, LaplaceMechanism):
        return ("laplace", g.sensitivity / g.scale)
    return ("point", g.epsilon, getattr(g, "delta", 0.0))


def random_curves(seed: int) -> Scenario:
    """A small scenario mixing Gaussian or Laplace mechanisms with (eps, delta) guarantees."""
    rng = random.Random(seed)
    n = rng.randint(2, 7)
    pool = list({_curve_guarantee(rng) for _ in range(rng.randint(1, 3))}
                | {_point_guarantee(rng) for _ in range(rng.randint(1, 3))})
    if seed % 7 == 6:  # curves only, now and then
        pool = list({_curve_guarantee(rng) for _ in range(4)})
    budget = {"point": 7, "laplace": 3, "gauss": 12}  # the reference's cost: atoms x lattice x Gaussian terms
    invocations = []
    for db in range(n):
        for _ in range(rng.choice([0, 1, 1, 2])):
            g, repeat = rng.choice(pool), rng.choice([1, 1, 2])
            kind = mechanism(g)[0]
            if budget[kind] >= repeat:
                invocations.append(Invocation(db, g, repeat=repeat))
                budget[kind] -= repeat
    if len({inv.guarantee for inv in invocations}) < 2:  # keep it mixed
        invocations[:0] = [Invocation(0, pool[0]), Invocation(n - 1, pool[-1])]
    kind = CONSTRAINT_KINDS[seed % len(CONSTRAINT_KINDS)]
    return Scenario(n, tuple(invocations), random_constraints(rng, n, kind),
                    neighborhood=rng.choice(["unbounded", "bounded"]), delta=rng.choice([1e-3, 0.05, 0.1, 1e-5]))


def differing_mechanisms(scenario: Scenario) -> set[tuple]:
    """The differing invocations of every allowed pair (brute force), as sorted tuples of mechanisms."""
    n = scenario.n
    masks = reference.allowed_masks(n, scenario.constraints.satisfied)
    diffs = masks if scenario.neighborhood == "unbounded" else reference.xor_reachable(masks, n)
    return {tuple(sorted(mechanism(inv.guarantee) for inv in scenario.invocations if int(d) >> inv.database & 1
                         for _ in range(inv.repeat))) for d in diffs}


def optimum_below(lists: set[tuple], delta: float) -> tuple[float, tuple]:
    """A certified lower bound on the exact optimum (Laplace losses rounded down), and the list attaining it.
    A list is bisected only when its curve at the best epsilon so far is above the target."""
    best, arg = -1.0, ()
    for mechanisms in sorted(lists, key=len, reverse=True):
        if not mechanisms:
            value = 0.0
        else:
            dist = reference.loss_distribution(list(mechanisms), H, "down")
            if best >= 0 and (math.isinf(best) or reference.loss_delta(dist, best) <= delta * (1 + 1e-9) + 1e-15):
                continue
            value = reference.loss_epsilon(dist, delta)
        if value > best:
            best, arg = value, mechanisms
    return best, arg


@functools.lru_cache(maxsize=None)
def outcome(seed: int) -> dict:
    scenario = random_curves(seed)
    start = time.perf_counter()
    report = solve(scenario, time_limit=5.0)
    seconds = time.perf_counter() - start
    optimum, arg = optimum_below(differing_mechanisms(scenario), scenario.delta)
    return {"scenario": scenario, "report": report, "optimum": optimum, "arg": arg, "seconds": seconds,
            "error": reference.mechanisms_error(list(arg), H)}


def check(seed: int) -> float:
    """Sound against the certified lower bound; finite where it is; returns eps / optimum (lower bound)."""
    o = outcome(seed)
    report, optimum, scenario = o["report"], o["optimum"], o["scenario"]
    eps = report.epsilon
    assert eps >= optimum - 1e-9, (seed, eps, optimum, o["arg"])  # the reference is already a lower bound
    assert not (math.isinf(eps) and math.isfinite(optimum)), (seed, optimum, o["arg"])
    if report.exact:  # within the reference's bracket
        assert eps <= optimum + 2 * o["error"] + 1e-6 * optimum, (seed, eps, optimum)
    b0, b1 = report.witness
    assert scenario.constraints.satisfied(b0) and scenario.constraints.satisfied(b1)
    if scenario.neighborhood == "unbounded":
        assert not b0
    if math.isinf(optimum):
        return 1.0
    return eps / optimum if optimum > 0 else (1.0 if eps <= 1e-9 else math.inf)


@tiers.parametrize("seed", range(SCENARIOS), default=[117, 158])
def test_mixed_curves_are_never_below_the_brute_force_optimum(seed):
    check(seed)


@pytest.mark.slow
def test_mixed_curves_cover_every_constraint_kind_and_both_neighbourhoods():
    kinds = {(CONSTRAINT_KINDS[s % len(CONSTRAINT_KINDS)], random_curves(s).neighborhood) for s in range(SCENARIOS)}
    assert len(kinds) == 2 * len(CONSTRAINT_KINDS)
    with_laplace = sum(any(isinstance(inv.guarantee, LaplaceMechanism) for inv in random_curves(s).invocations)
                       for s in range(SCENARIOS))
    with_gauss = sum(any(isinstance(inv.guarantee, (GaussianMechanism, GaussianDP))
                         for inv in random_curves(s).invocations) for s in range(SCENARIOS))
    assert with_laplace >= SCENARIOS // 3 and with_gauss >= SCENARIOS // 3
    ratios = np.array([check(s) for s in range(SCENARIOS)])
    seconds = np.array([outcome(s)["seconds"] for s in range(SCENARIOS)])
    print(f"\nmixed curves: {SCENARIOS} scenarios, eps / optimum (lower bound) median {np.median(ratios):.4f} "
          f"p90 {np.quantile(ratios, 0.9):.4f} p99 {np.quantile(ratios, 0.99):.4f} max {ratios.max():.4f}; "
          f"solve seconds median {np.median(seconds):.3f} p90 {np.quantile(seconds, 0.9):.3f} max {seconds.max():.3f}")

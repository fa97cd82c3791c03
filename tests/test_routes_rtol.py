"""The user's rtol reaches the compositions of the coupling and subsampling routes (the exact route composes
nothing on a grid); the answers stay sound against brute force at a finer rtol and unchanged at the default."""

from __future__ import annotations

import random

import pytest

import reference
import gce.priors.coupling as coupling_module
import gce.priors.subsampling as subsampling_module
from gce import effort
from gce.accounting.guarantees import ApproxDP, PureDP
from gce.model import Invocation, Scenario
from gce.priors.hypotheses import Explicit, Point, Uniform
from gce.priors.routes import CouplingRoute, RouteContext, SubsamplingRoute

POOL = [(0.2, 0.0), (0.7, 0.0), (1.5, 0.0), (0.4, 1e-3), (1.0, 0.02)]


def _instance(seed: int, none_vs_any: bool):
    rng = random.Random(900 + seed)
    n = rng.randint(2, 4)
    invocations, flat = [], []
    for db in range(n):
        eps, delta = rng.choice(POOL)
        invocations.append(Invocation(db, PureDP(eps) if delta == 0 else ApproxDP(eps, delta)))
        flat.append((db, eps, delta))
    if none_vs_any:
        hypotheses = (Point(()), Uniform(1))
    else:
        sets = [frozenset(s) for s in ({0}, {1}, {0, 1}, set())]
        hypotheses = (Explicit((sets[0], sets[3]), (0.6, 0.4)), Explicit((sets[1], sets[2]), (0.5, 0.5)))
    return Scenario(n, tuple(invocations), hypotheses=hypotheses), flat


def _context(scenario: Scenario, rtol: float) -> RouteContext:
    return RouteContext(scenario, lambda: None, rtol=rtol)


@pytest.mark.parametrize("route, module, none_vs_any", [(CouplingRoute(), coupling_module, False),
                                                        (SubsamplingRoute(), subsampling_module, True)],
                         ids=["coupling", "subsampling"])
def test_rtol_reaches_every_composition_and_the_answer_stays_sound(monkeypatch, route, module, none_vs_any):
    seen = []
    compose = module.compose

    def spy(guarantees, rtol=effort.DEFAULT_RTOL):
        seen.append(rtol)
        return compose(guarantees, rtol)

    monkeypatch.setattr(module, "compose", spy)
    for seed in range(3):
        scenario, flat = _instance(seed, none_vs_any)
        fine = route.run(_context(scenario, 0.001))
        assert seen and set(seen) == {0.001}
        seen.clear()
        default = route.run(_context(scenario, effort.DEFAULT_RTOL))
        assert set(seen) == {effort.DEFAULT_RTOL}
        seen.clear()
        h0, h1 = (list(h.distribution(scenario.constraints)) for h in scenario.hypotheses)
        for eps in (0.3, 1.0):
            truth = reference.mixture_delta(h0, h1, flat, eps)
            for answer in (fine, default):
                value = float(answer.curve.delta(eps))
                assert truth <= value * (1 + 1e-9) + 1e-12
            # canonical pairs compose exactly whatever the accuracy asked: the same numbers
            assert float(fine.curve.delta(eps)) == float(default.curve.delta(eps))


def test_a_bad_rtol_names_the_field():
    scenario, _ = _instance(0, True)
    with pytest.raises(Exception, match="rtol"):
        subsampling_module.SubsamplingCurve(scenario.invocations, rtol=0.0)
    with pytest.raises(Exception, match="rtol"):
        coupling_module.CouplingCurve([({0}, 1.0)], [({1}, 1.0)], scenario.invocations, rtol=2.0)

"""One invocation counts once wherever it is said: tables, duplicates and repeats against the written-out form.

A scenario may say that a guarantee runs k times on a database in many shapes: k identical records, a
record with ``repeat = k``, overlapping or identical tables, an :class:`gce.InvocationGroup` listing the
database k times. Code that groups invocations (by table, by guarantee) and then treats a group's
databases as a set, or counts a repeat once per group instead of once per database, answers differently
for these shapes (the ledger's initial spends did, before they summed each database's repeats over all
tables). Here every shape is compared with the scenario written out one invocation per (database,
guarantee) with the total repeat, shuffled: the same epsilon, the same number of differing invocations and
the same baselines from :func:`gce.solve`; the same composition from :func:`gce.compose` and
:func:`gce.accounting.batch.batch_compose` for a list with repeated guarantees and for its counts.
"""

from __future__ import annotations

import math
import random

import pytest

import gce
import tiers
from gce.accounting.batch import batch_compose

POOL = (gce.PureDP(0.1), gce.PureDP(0.3), gce.ApproxDP(0.2, 1e-8), gce.LaplaceMechanism(scale=5.0),
        gce.GaussianMechanism(sigma=3.0), gce.ZCDP(0.01), gce.RandomizedResponse(0.4))


def shapes(rng: random.Random, n: int) -> tuple[list, dict[tuple[int, gce.Guarantee], int]]:
    """Random items (tables as records, groups with a database listed twice, 'all', a table said twice) and
    the total repeat of each (database, guarantee), counted here one listed database at a time."""
    pool = rng.sample(POOL, 2)
    items: list = []
    totals: dict[tuple[int, gce.Guarantee], int] = {}

    def count(databases, g, repeat):
        for d in databases:
            totals[(d, g)] = totals.get((d, g), 0) + repeat

    for _ in range(rng.randint(2, 5)):
        g, repeat = rng.choice(pool), rng.choice([1, 1, 2, 3])
        listed = [rng.randrange(n) for _ in range(rng.randint(1, 2 * n))]
        shape = rng.choice(["records", "group", "all", "again"])
        if shape == "again" and items:
            item = items[-1]
            items.append(item)
            if isinstance(item, gce.Invocation):
                count([item.database], item.guarantee, item.repeat)
            else:
                count(list(item.databases), item.guarantee, item.repeat)
        elif shape == "records":
            items += [gce.Invocation(d, g, repeat) for d in listed]
            count(listed, g, repeat)
        elif shape == "group":
            items.append(gce.InvocationGroup(listed, g, repeat))
            count(listed, g, repeat)
        else:
            items.append(gce.InvocationGroup(range(n), g, repeat))
            count(range(n), g, repeat)
    return items, totals


def test_shapes_count_every_listed_database():
    """The reference's count by hand: a group listing 0 twice, the same table again, 'all' with repeat 2."""
    g = gce.PureDP(0.1)
    group = gce.InvocationGroup([0, 0, 1], g)
    scenario = gce.Scenario(3, [group, group, gce.InvocationGroup(range(3), g, 2)], delta=1e-6)
    assert [scenario.invocations.count_on({d}) for d in range(3)] == [6, 4, 2]
    assert scenario.invocations.multiset_on({0, 2}) == ((g, 8),)


@tiers.parametrize("seed", range(120), default=[3, 17, 38, 45])
def test_solve_is_the_same_for_every_shape(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 5)
    items, totals = shapes(rng, n)
    written = [gce.Invocation(d, g, c) for (d, g), c in totals.items()]
    rng.shuffle(written)
    constraints = gce.ConstraintSet(n, [gce.AtMost(rng.randint(1, n))] if rng.random() < 0.7 else [])
    neighborhood = rng.choice(["unbounded", "bounded"])
    said = gce.solve(gce.Scenario(n, items, constraints, neighborhood, delta=1e-6), time_limit=5.0)
    out = gce.solve(gce.Scenario(n, written, constraints, neighborhood, delta=1e-6), time_limit=5.0)
    assert said.epsilon == pytest.approx(out.epsilon, rel=1e-9, abs=1e-12)
    assert said.differing_count == out.differing_count
    assert set(said.baselines) == set(out.baselines)
    for name, baseline in said.baselines.items():
        assert baseline.epsilon == pytest.approx(out.baselines[name].epsilon, rel=1e-9, abs=1e-12), name


def test_compositions_add_repeated_guarantees():
    a, b = gce.ApproxDP(0.2, 1e-8), gce.PureDP(0.3)
    listed = [a, b, a, a]
    counts = {a: 3, b: 1}
    assert gce.compose(listed).at_delta(1e-6)[0] == gce.compose(counts).at_delta(1e-6)[0]
    assert gce.compose([(a, 1), (b, 1), (a, 2)]).at_delta(1e-6)[0] == gce.compose(counts).at_delta(1e-6)[0]
    assert batch_compose(listed).epsilon(1e-6) == batch_compose(counts).epsilon(1e-6)
    # and three copies are not one: the composition grows (0.6 + 0.3 = 0.9 pure-part epsilon at most)
    assert batch_compose(listed).epsilon(1e-6) > batch_compose([a, b]).epsilon(1e-6)
    assert math.isclose(gce.compose({b: 3}).at_delta(0.0)[0], 0.9, rel_tol=1e-9)

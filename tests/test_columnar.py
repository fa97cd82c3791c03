"""The columnar invocations: groups of databases with one guarantee and repeat count.

* The aggregates computed from the groups (per-database weights, the multiset, count and positions of
  the invocations on a set of databases) equal a naive count over the expanded :class:`Invocation`
  records, on random groups (ranges counting up or down, index arrays with duplicates).
* The same scenario given as records, as groups and as a file's tables gives the same report, and
  that report is sound (and exact where it says so) against brute force over the allowed pairs.
* The classic baseline decided infinite from the counts agrees with composing every invocation.
* Scale: the hospitals scenario of 001 Sec. V-A Ex. 1 with 10^5 databases by default, 10^6 and 10^7
  databases and ``repeat = 10^9`` in the slow tier, each within a time and tracemalloc bound.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
import time
import tracemalloc
from collections import Counter

import numpy as np
import pytest
from hypothesis import strategies as st

import reference
import tiers
from gce import load_scenario, solve
from gce.accounting.curves import PrivacyCurve
from gce.accounting.guarantees import ApproxDP, GaussianMechanism, PureDP, RandomizedResponse, ZCDP
from gce.accounting.theorems import canonical_composition, compose
from gce.constraints import AtMost, Conflicts, ConstraintSet, Exclusive, Patterns, Together
from gce.errors import InvalidParameterError, InvalidScenarioError
from gce.files.scenario import scenario_from_dict
from gce.model import Invocation, InvocationGroup, Invocations, Scenario
from gce.solving import FLOOR_THEOREM, _classic_beyond_floor

POOL = (PureDP(0.1), PureDP(0.5), ApproxDP(0.3, 1e-4), ApproxDP(0.8, 1e-3), RandomizedResponse(0.4))


def records(groups) -> list[Invocation]:
    """The naive expansion: one record per listed database, group after group."""
    return [Invocation(int(d), g.guarantee, g.repeat) for g in groups for d in list(g.databases)]


# ---------------------------------------------------------------------------
# The aggregates against the expanded records


@st.composite
def group_lists(draw):
    n = draw(st.integers(1, 9))
    groups = []
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.booleans()):
            start, stop = draw(st.integers(0, n - 1)), draw(st.integers(-1, n))
            step = draw(st.sampled_from([1, 2, 3, -1, -2]))
            databases = range(start, stop, step)
            if len(databases) == 0:
                databases = range(start, start + 1)
        else:
            databases = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=12))
        groups.append(InvocationGroup(databases, draw(st.sampled_from(POOL)), draw(st.integers(1, 3))))
    members = draw(st.frozensets(st.integers(0, n - 1)))
    per_kind = draw(st.lists(st.integers(0, 7), min_size=len(POOL), max_size=len(POOL)))
    return n, groups, members, per_kind


@tiers.given(40, 400, group_lists())
def _aggregates_match_the_records(case):
    n, groups, members, per_kind = case
    table = Invocations(groups)
    flat = records(groups)
    assert list(table) == flat and len(table) == len(flat) and table == tuple(flat)
    assert [table[j] for j in range(-len(flat), len(flat))] == flat + flat
    assert table.total == sum(r.repeat for r in flat)
    kind_of = {g: k for k, g in enumerate(table.kinds)}
    values = np.array(per_kind[: len(table.kinds)], dtype=float)
    expected = np.zeros(n)
    for r in flat:  # integer values: the sums are exact whatever their order
        expected[r.database] += r.repeat * values[kind_of[r.guarantee]]
    assert np.array_equal(table.weights(n, values), expected)
    # Fractional values: each database's terms are added in the records' order, so the weights are the
    # same floats as a plain sum in that order, and as those of the records regrouped.
    fractions = values / 7.0 + 0.1
    in_order = np.zeros(n)
    for r in flat:
        in_order[r.database] += float(r.repeat) * fractions[kind_of[r.guarantee]]
    assert np.array_equal(table.weights(n, fractions), in_order)
    assert np.array_equal(Invocations.of(flat).weights(n, fractions), in_order)
    on = [j for j, r in enumerate(flat) if r.database in members]
    assert table.positions_on(members).tolist() == on
    assert table.count_on(members) == sum(flat[j].repeat for j in on)
    naive: Counter = Counter()
    for j in on:
        naive[flat[j].guarantee] += flat[j].repeat
    assert dict(table.multiset_on(members)) == dict(naive)
    assert dict(table.multiset(table.on(members))) == dict(naive)
    assert table.on(members).tolist() == [r.database in members for r in flat]
    assert dict(table.multiset()) == dict(Counter(g for r in flat for g in [r.guarantee] * r.repeat))
    assert table.database.tolist() == [r.database for r in flat]
    assert table.repeat.tolist() == [r.repeat for r in flat]
    assert [table.kinds[k] for k in table.kind] == [r.guarantee for r in flat]
    # Records converted back: the same sequence, consecutive equal (guarantee, repeat) in one group.
    again = Invocations.of(flat)
    assert list(again) == flat
    assert len(again.groups) == 1 + sum((a.guarantee, a.repeat) != (b.guarantee, b.repeat)
                                        for a, b in zip(flat, flat[1:]))


test_aggregates_match_the_records, test_aggregates_match_the_records_slow = _aggregates_match_the_records


def test_records_counting_up_become_a_range():
    # The README's way of building a scenario: one record per database, in order.
    table = Invocations.of([Invocation(i, PureDP(0.1)) for i in range(1000)])
    assert len(table.groups) == 1 and table.groups[0].databases == range(1000)
    table = Invocations.of([Invocation(i, PureDP(0.1)) for i in (0, 2, 1)])
    assert table.groups[0].databases.tolist() == [0, 2, 1]


def test_group_validation_names_the_field():
    with pytest.raises(InvalidParameterError, match=r"^databases\[1\]: must be a database index >= 0, got -3$"):
        InvocationGroup([0, -3], PureDP(0.1))
    with pytest.raises(InvalidParameterError, match=r"^databases\[0\]: must be a database index, got True$"):
        InvocationGroup([True], PureDP(0.1))
    with pytest.raises(InvalidParameterError, match=r"^databases: must list at least one database"):
        InvocationGroup(range(3, 3), PureDP(0.1))
    with pytest.raises(InvalidParameterError, match=r"^databases: must be an array of integer"):
        InvocationGroup(np.array([0.5]), PureDP(0.1))
    with pytest.raises(InvalidParameterError, match=r"^repeat: must be an integer >= 1, got 0$"):
        InvocationGroup(range(2), PureDP(0.1), repeat=0)
    with pytest.raises(InvalidParameterError, match=r"^mechanism: must be a guarantee"):
        InvocationGroup(range(2), 0.1)


def test_scenario_errors_name_the_item():
    # The position in the collection given, as for records (an unknown database, a wrong item).
    with pytest.raises(InvalidParameterError, match=r"^invocations\[1\]\.databases: unknown database 9 "):
        Scenario(5, [Invocation(0, PureDP(1.0)), InvocationGroup([1, 9], PureDP(0.1))])
    with pytest.raises(InvalidParameterError, match=r"^invocations\[2\]\.databases: unknown database 5 "):
        Scenario(5, [InvocationGroup(range(5), PureDP(0.1)), Invocation(4, PureDP(1.0)), Invocation(5, PureDP(1.0))])
    with pytest.raises(InvalidParameterError, match=r"^invocations\[1\]: must be an Invocation"):
        Scenario(5, [Invocation(0, PureDP(1.0)), "x"])
    with pytest.raises(InvalidParameterError, match=r"^invocations: .*2\^53"):
        Scenario(2, [InvocationGroup(range(2), PureDP(0.1), repeat=2**53)])


def test_groups_and_records_mix_and_compare():
    mixed = Scenario(4, [Invocation(3, PureDP(1.0)), InvocationGroup(range(3), PureDP(0.1), 2)], delta=0.0)
    assert list(mixed.invocations) == [Invocation(3, PureDP(1.0)), *(Invocation(i, PureDP(0.1), 2) for i in range(3))]
    same = Scenario(4, list(mixed.invocations), delta=0.0)
    assert same == mixed and hash(same) == hash(mixed)
    assert dataclasses.replace(mixed, invocations=mixed.invocations[:2]).invocations.total == 3


# ---------------------------------------------------------------------------
# Records, groups and the file: the same report, sound against brute force


def _constraints(rng: random.Random, n: int) -> ConstraintSet:
    group = rng.sample(range(n), rng.randint(2, n))
    kind = rng.choice(["at_most", "exclusive", "together", "conflicts", "patterns", "mixed"])
    return ConstraintSet(n, {
        "at_most": [AtMost(rng.randint(1, n - 1))],
        "exclusive": [Exclusive(tuple(group))],
        "together": [Together(tuple(group[:2]))],
        "conflicts": [Conflicts(tuple(itertools.combinations(group[:3], 2)))],
        "patterns": [Patterns(tuple({frozenset(rng.sample(range(n), rng.randint(1, n))) for _ in range(3)}))],
        "mixed": [AtMost(rng.randint(2, max(2, n - 1))), Together(tuple(group[:2]))],
    }[kind])


def _file_form(g: InvocationGroup, n: int) -> dict:
    point = {PureDP: lambda x: {"kind": "pure", "epsilon": x.epsilon},
             ApproxDP: lambda x: {"kind": "approx", "epsilon": x.epsilon, "delta": x.delta},
             RandomizedResponse: lambda x: {"kind": "randomized_response", "epsilon": x.epsilon}}
    listed = list(g.databases)
    databases = "all" if listed == list(range(n)) else listed[0] if len(listed) == 1 else listed
    return {"databases": databases, "repeat": g.repeat, "mechanism": point[type(g.guarantee)](g.guarantee)}


def random_groups(rng: random.Random, n: int) -> list[InvocationGroup]:
    kinds = rng.sample(POOL, rng.randint(1, 3))
    groups = []
    for _ in range(rng.randint(1, 3)):
        shape = rng.choice(["all", "one", "list", "range"])
        databases = {"all": range(n), "one": [rng.randrange(n)], "list": rng.choices(range(n), k=rng.randint(1, n + 1)),
                     "range": range(n - 1, -1, -rng.randint(1, 2))}[shape]
        groups.append(InvocationGroup(databases, rng.choice(kinds), rng.choice([1, 1, 2, 3])))
    return groups


def _composed(points) -> "PrivacyCurve":
    """The exact composition of canonical pairs (002 Thm. III.3 / enumeration), equal points counted."""
    return canonical_composition([(e, d, count) for (e, d), count in Counter(points).items()])


def _points(scenario: Scenario, b0, b1) -> list[tuple[float, float]]:
    diff = b0 ^ b1
    out = []
    for inv in scenario.invocations:
        if inv.database in diff:
            g = inv.guarantee
            out += [(g.epsilon, getattr(g, "delta", 0.0))] * inv.repeat
    return sorted(out)


@tiers.parametrize("seed", range(200), default=10)
def test_records_groups_and_file_give_one_sound_report(seed):
    rng = random.Random(seed)
    n = rng.randint(2, 6)
    groups = random_groups(rng, n)
    cs = _constraints(rng, n)
    neighborhood = rng.choice(["unbounded", "bounded"])
    target = {"delta": rng.choice([1e-3, 0.05])} if seed % 3 else {"epsilon": rng.choice([0.5, 2.0])}
    columnar = Scenario(n, groups, cs, neighborhood, **target)
    objects = Scenario(n, records(groups), cs, neighborhood, **target)
    from_file = dataclasses.replace(
        scenario_from_dict({"databases": n, "invocations": [_file_form(g, n) for g in groups]}),
        constraints=cs, neighborhood=neighborhood, **target)
    report = solve(columnar)
    assert solve(objects).to_dict() == report.to_dict() == solve(from_file).to_dict()
    assert list(columnar.invocations) == list(objects.invocations) == list(from_file.invocations)

    # Sound against brute force over every allowed pair, exact where it says so (tests/reference.py).
    sets = list(cs.allowed_sets())
    pairs = [(frozenset(), s) for s in sets] if neighborhood == "unbounded" else list(itertools.product(sets, sets))
    distinct = {tuple(_points(columnar, *p)) for p in pairs}
    if "delta" in target:
        delta = target["delta"]
        if math.isfinite(report.epsilon):
            assert max(reference.exact_delta(list(p), report.epsilon) if len(p) <= 6 else
                       float(_composed(p).delta(report.epsilon)) for p in distinct) <= delta * (1 + 1e-9) + 1e-15
        optimum = max(float(_composed(p).epsilon(delta)) for p in distinct)
        assert report.epsilon >= optimum * (1 - 1e-9)
        if report.exact:
            assert report.epsilon == pytest.approx(optimum, rel=1e-6, abs=1e-9)
    else:
        eps = target["epsilon"]
        worst = max(float(_composed(p).delta(eps)) for p in distinct)
        assert report.delta >= worst * (1 - 1e-9) - 1e-15
        if report.exact:
            assert report.delta == pytest.approx(worst, rel=1e-6, abs=1e-12)
    differing = report.witness[0] ^ report.witness[1]
    flat = list(columnar.invocations)
    assert list(report.differing) == [j for j, inv in enumerate(flat) if inv.database in differing]
    assert report.differing_count == sum(inv.repeat for inv in flat if inv.database in differing)


# ---------------------------------------------------------------------------
# The classic baseline decided from the counts


@tiers.parametrize("seed", range(300), default=30)
def test_classic_decided_infinite_agrees_with_composing(seed):
    rng = random.Random(seed)
    pool = [ApproxDP(0.05, 1e-10), ApproxDP(0.5, 1e-4), ApproxDP(1.0, 1e-2), PureDP(0.2), ZCDP(0.01),
            GaussianMechanism(2.0), RandomizedResponse(0.3)]
    ms = tuple((g, rng.choice([1, 3, 50, 10**4, 10**6])) for g in rng.sample(pool, rng.randint(1, 3)))
    delta = rng.choice([1e-9, 1e-6, 1e-3, 0.1])
    name = _classic_beyond_floor(ms, delta)
    # The floor by hand: 1 - prod (1 - delta_i)^{n_i} over the approximate guarantees (002, eqs. 9-10).
    floor = 1.0 - math.prod((1.0 - g.delta) ** count for g, count in ms if isinstance(g, ApproxDP))
    assert (name is not None) == (delta < floor * (1 - 1e-6)) or abs(delta / floor - 1) < 1e-6
    noise = any(isinstance(g, GaussianMechanism) for g, _ in ms)
    if name is not None and sum(c for _, c in ms) <= 10**4 and not noise:  # (their distributions take seconds)
        bound = compose(dict(ms)).at_delta(delta)
        assert math.isinf(bound.epsilon)
        assert name in (bound.theorem, FLOOR_THEOREM)


def test_classic_of_a_million_hospitals_by_hand():
    # 1 - (1 - 1e-10)^(10^6) = 1.0e-4 > 1e-6: infinite, Kairouz's exact theorem named (as composing says);
    # at delta 1e-3 the floor is below the target and the baseline is composed.
    ms = ((ApproxDP(0.05, 1e-10), 10**6),)
    assert _classic_beyond_floor(ms, 1e-6) == "kairouz-III.3" == compose(dict(ms)).at_delta(1e-6).theorem
    assert _classic_beyond_floor(ms, 1e-3) is None
    assert _classic_beyond_floor(((PureDP(0.05), 10**6),), 1e-9) is None


# ---------------------------------------------------------------------------
# Scale


HOSPITALS = """title = "Hospitals, scaled"
databases = {n}
delta = 1e-6

[[invocations]]
databases = {databases}
repeat = {repeat}
mechanism = {mechanism}

[[constraints]]
kind = "at_most"
m = {m}
"""


def _hospitals(tmp_path, n: int, repeat: int = 1, m: int = 365, databases: str = '"all"',
               mechanism: str = '{ kind = "approx", epsilon = 0.05, delta = 1e-10 }'):
    path = tmp_path / f"hospitals_{n}.toml"
    path.write_text(HOSPITALS.format(n=n, repeat=repeat, m=m, databases=databases, mechanism=mechanism))
    return path


def _measured(path):
    """(seconds, tracemalloc peak in bytes, scenario, report) of load_scenario + solve."""
    tracemalloc.start()
    try:
        start = time.perf_counter()
        scenario = load_scenario(path)
        report = solve(scenario)
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return seconds, peak, scenario, report


@pytest.mark.parametrize("n", [pytest.param(10**5), pytest.param(10**6, marks=tiers.SLOW),
                               pytest.param(10**7, marks=tiers.SLOW)])
def test_hospitals_at_scale(tmp_path, n):
    # 001 Sec. V-A Ex. 1 with n hospitals: the worst pair makes 365 queries differ, Kairouz's exact
    # composition of 365 (0.05, 1e-10) mechanisms (4.62025; README), the classic baseline infinite
    # (1 - (1 - 1e-10)^n > 1e-6). Measured at 10^6: 0.01 s and 11 MiB traced; 10^7: 0.07 s, 114 MiB.
    seconds, peak, scenario, report = _measured(_hospitals(tmp_path, n))
    assert len(scenario.invocations.groups) == 1 and scenario.invocations.groups[0].databases == range(n)
    assert report.epsilon == pytest.approx(float(canonical_composition([(0.05, 1e-10, 365)]).epsilon(1e-6)))
    assert report.exact and report.differing_count == 365 and report.witness == (frozenset(), frozenset(range(365)))
    assert math.isinf(report.baselines["classic"].epsilon) and report.baselines["classic"].theorem == "kairouz-III.3"
    limit = {10**5: (2.0, 16), 10**6: (10.0, 100), 10**7: (60.0, 600)}[n]  # generous: 2 shared cores
    assert seconds < limit[0] and peak < limit[1] * 2**20


@pytest.mark.parametrize("n", [pytest.param(10**3), pytest.param(10**4, marks=tiers.SLOW),
                               pytest.param(10**5, marks=tiers.SLOW)])  # 10^4: 0.5 s
def test_a_listed_file_is_read_at_once(tmp_path, n):
    # A file listing its databases: the list is checked and converted by numpy, not one object each.
    listed = "[" + ", ".join(map(str, range(n - 1, -1, -1))) + "]"
    seconds, _, scenario, report = _measured(_hospitals(tmp_path, n, databases=listed))
    assert len(scenario.invocations.groups) == 1 and scenario.invocations.groups[0].databases[0] == n - 1
    assert report.witness[1] == frozenset(range(365)) and report.differing == tuple(range(n - 365, n))
    assert seconds < 20.0  # tomllib parsing the 600 kB list under tracemalloc: the bulk of it


@pytest.mark.parametrize("mechanism, reference_eps", [
    # Kairouz's exact composition of 10^9 (1e-4, 0)-DP mechanisms at delta 1e-6 (the composition layer),
    # below advanced composition sqrt(2 k ln(1/delta)) eps + k eps (e^eps - 1) = 26.63 (DRV10, Thm. III.3).
    pytest.param('{ kind = "pure", epsilon = 1e-4 }', 26.63, marks=tiers.SLOW),
    # 10^9 Gaussians of sigma 1000: mu = sqrt(10^9) / 1000 = 31.62-GDP, exact (Dong, Roth, Su).
    pytest.param('{ kind = "gaussian", sigma = 1000.0 }', None),
])
def test_a_billion_repeats_on_one_database(tmp_path, mechanism, reference_eps):
    seconds, peak, scenario, report = _measured(_hospitals(tmp_path, 1, repeat=10**9, m=1, databases="0",
                                                           mechanism=mechanism))
    g = scenario.invocations.groups[0].guarantee
    assert report.exact and report.differing_count == 10**9
    assert report.epsilon == pytest.approx(compose({g: 10**9}).epsilon(1e-6), rel=1e-12)
    if reference_eps is not None:
        assert report.epsilon <= reference_eps
    else:
        from scipy.stats import norm
        mu = math.sqrt(1e9) / 1000.0
        delta = norm.cdf(-report.epsilon / mu + mu / 2) - math.exp(report.epsilon) * norm.cdf(-report.epsilon / mu - mu / 2)
        assert delta == pytest.approx(1e-6, rel=1e-6)
    # Kairouz's binomial window is O(sqrt(repeat)): 157-177 MiB at 10^9 measured; Gaussian: nothing per repeat.
    assert seconds < 30.0 and peak < 400 * 2**20


def test_reading_a_small_file_allocates_little(tmp_path):
    # read(64 MiB + 1) allocated its whole buffer up front whatever the file's size (traced 64 MiB).
    path = _hospitals(tmp_path, 10)
    load_scenario(path)
    tracemalloc.start()
    try:
        load_scenario(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**19


def test_file_lists_of_indices_errors_name_the_entry(tmp_path):
    table = lambda databases: {"databases": 5, "invocations": [
        {"databases": databases, "mechanism": {"kind": "pure", "epsilon": 1.0}}]}
    with pytest.raises(InvalidScenarioError, match=r"^invocations\[0\]\.databases\[2\]: unknown database 7 "):
        scenario_from_dict(table([0, 1, 7, 9]))
    with pytest.raises(InvalidScenarioError, match=r"^invocations\[0\]\.databases\[1\]: unknown database -1 "):
        scenario_from_dict(table([0, -1]))
    with pytest.raises(InvalidScenarioError, match=r"^invocations\[0\]\.databases\[1\]: unknown database true "):
        scenario_from_dict(table([0, True]))
    assert scenario_from_dict(table([4, 4, 0])).invocations.database.tolist() == [4, 4, 0]

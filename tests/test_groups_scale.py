"""Many invocation groups: the aggregates vectorised over the records, every stage under the cap.

A scenario of k single-database groups, each its own (epsilon, delta) guarantee, at most m members:
the worst pair holds the m weakest guarantees (every one differs alone), so the exact worst case is their
composition. The vectorised aggregates (beyond :data:`gce.model.LOOP_GROUPS_MAX` groups) are checked
against the loop over the groups and against multisets counted record by record; the solve against that
brute-force worst case.
"""

from __future__ import annotations

import time
from collections import Counter

import numpy as np
import pytest

import gce.model as model
import tiers
from gce import ApproxDP, AtMost, ConstraintSet, Invocation, Scenario, compose, effort, solve
from gce.accounting.guarantees import GaussianMechanism, LaplaceMechanism, PureDP
from gce.model import InvocationGroup, Invocations
from gce.solvers.mixed import renyi_term_table, renyi_terms

DELTA = 1e-6


def _groups_case(k: int, m: int) -> Scenario:
    """Database i runs ApproxDP(0.001 + 1e-5 i, 1e-12) once; at most m members."""
    invocations = [Invocation(i, ApproxDP(0.001 + 1e-5 * i, 1e-12)) for i in range(k)]
    return Scenario(k, invocations, ConstraintSet(k, (AtMost(m),)), delta=DELTA)


def _mixed_table(rng: np.random.Generator, n: int, groups: int) -> Invocations:
    """Ranges up and down (steps 1 and 2), index arrays with repeats of a database, several repeat counts."""
    kinds = [PureDP(0.1), ApproxDP(0.2, 1e-9), PureDP(0.3), LaplaceMechanism(2.0)]
    out = []
    for j in range(groups):
        kind = kinds[j % len(kinds)]
        if j % 4 == 0:
            a = int(rng.integers(0, n - 20))
            out.append(InvocationGroup(range(a, a + int(rng.integers(1, 20))), kind, int(rng.integers(1, 4))))
        elif j % 4 == 1:
            a = int(rng.integers(20, n))
            out.append(InvocationGroup(range(a, a - int(rng.integers(1, 20)), -2), kind, 2))
        else:
            out.append(InvocationGroup(rng.integers(0, n, size=int(rng.integers(1, 6))), kind, int(rng.integers(1, 3))))
    return Invocations(out)


def _brute_multiset(table: Invocations, members) -> Counter:
    """The multiset on ``members``, counted invocation record by invocation record."""
    chosen = set(int(i) for i in members)
    counts: Counter = Counter()
    for record in table:
        if record.database in chosen:
            counts[record.guarantee] += record.repeat
    return counts


def test_aggregates_equal_records_and_the_loop_over_groups(monkeypatch):
    rng = np.random.default_rng(7)
    n = 300
    table = _mixed_table(rng, n, 200)
    assert len(table.groups) > model.LOOP_GROUPS_MAX  # the vectorised path
    records = list(table)
    per_kind = rng.random(len(table.kinds)) * 1e3
    for _ in range(10):
        members = rng.choice(n, size=int(rng.integers(0, n)), replace=False)
        brute = _brute_multiset(table, members)
        chosen = set(members.tolist())
        positions = [j for j, r in enumerate(records) if r.database in chosen]
        vectorised = (table.multiset_on(members), table.count_on(members), table.positions_on(members).tolist())
        assert Counter(dict(vectorised[0])) == brute
        assert vectorised[1] == sum(brute.values())
        assert vectorised[2] == positions
        monkeypatch.setattr(model, "LOOP_GROUPS_MAX", 10**9)
        assert (table.multiset_on(members), table.count_on(members),
                table.positions_on(members).tolist()) == vectorised
        monkeypatch.setattr(model, "LOOP_GROUPS_MAX", 64)
    weights = np.zeros(n)
    for r in records:  # each database's terms in the order of the records
        weights[r.database] += r.repeat * per_kind[table.kinds.index(r.guarantee)]
    assert np.array_equal(table.weights(n, per_kind), weights)
    for k, g in enumerate(table.kinds):
        counts = np.zeros(n)
        for r in records:
            counts[r.database] += r.repeat if r.guarantee == g else 0
        assert np.array_equal(table.kind_counts(n, k), counts)
        for size in (0, 1, 5, n):
            assert table.top_counts(n, size)[k] == np.sort(counts)[::-1][:size].sum()
    rank = rng.permutation(len(table.kinds))
    for j in range(len(table.kinds)):  # the most one database runs of the guarantees ranked j or later
        per_database = np.zeros(n)
        for r in records:
            per_database[r.database] += r.repeat if rank[table.kinds.index(r.guarantee)] >= j else 0
        assert table.suffix_database_max(rank)[j] == per_database.max()


def test_renyi_term_table_is_renyi_terms_row_by_row():
    rng = np.random.default_rng(3)
    guarantees = [ApproxDP(float(e), float(d)) for e, d in
                  zip(np.exp(rng.uniform(-30, 8, 200)), rng.choice([0.0, 1e-12, 1e-5, 0.3], 200))]
    guarantees += [PureDP(0.5), PureDP(1e300), GaussianMechanism(2.0)]
    divergences, leaks = renyi_term_table(guarantees)
    for i, g in enumerate(guarantees):
        own, leak = renyi_terms(g)
        assert np.array_equal(divergences[i], own) and leaks[i] == leak


def test_groups_match_the_loop_path_and_the_brute_force_worst_case(monkeypatch):
    k, m = 150, 10
    scenario = _groups_case(k, m)
    report = solve(scenario, time_limit=60)
    monkeypatch.setattr(model, "LOOP_GROUPS_MAX", 10**9)
    assert solve(_groups_case(k, m), time_limit=60).to_dict() == report.to_dict()
    # The witness differs on databases whose multiset, counted record by record, is the report's.
    b0, b1 = report.witness
    brute = _brute_multiset(scenario.invocations, b0 ^ b1)
    assert report.differing_count == sum(brute.values()) == m
    # The exact worst case: the m weakest guarantees (the last m databases), each once.
    worst = {ApproxDP(0.001 + 1e-5 * i, 1e-12): 1 for i in range(k - m, k)}
    assert Counter(brute) == Counter(worst)
    exact = compose(worst).epsilon(DELTA)
    assert report.epsilon >= exact * (1 - 1e-9)  # sound
    assert report.epsilon <= exact * (1 + report.rtol)  # and within the accuracy asked
    assert not report.time_limit_reached


def test_groups_same_answer_on_a_slow_clock():
    scenario = _groups_case(150, 10)
    report = solve(scenario, time_limit=60)
    with effort.clock(effort.slowed(10.0)):
        slowed = solve(scenario, time_limit=60)
    assert slowed.to_dict() == report.to_dict()


def test_searches_that_do_not_fit_are_skipped_visibly_and_soundly():
    """At a limit below the estimate of one search per guarantee, each guarantee is bounded through the
    most databases a pair can make differ (one search): sound, and the report says the limit was reached.
    The limit, 0.01 s, is on a clock ten times fast (1 ms of this machine's time; the uncapped solve takes
    about 0.065 s on 2 shared cores under load, 65 times that), so that the cap binds on a machine several
    times faster too."""
    k, m = 150, 10
    with effort.clock(effort.slowed(10.0)):
        report = solve(_groups_case(k, m), time_limit=0.01)
    assert report.time_limit_reached
    assert any("one search per guarantee" in note for note in report.notes)
    exact = compose({ApproxDP(0.001 + 1e-5 * i, 1e-12): 1 for i in range(k - m, k)}).epsilon(DELTA)
    assert report.epsilon >= exact * (1 - 1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("k, limit", [(2000, 5.0), (20000, 10.0)])
def test_many_groups_keep_to_the_cap(k, limit):
    """k distinct guarantees, at most 50 (at 2,000 the optimum is about 0.576-0.581): the solve ends within
    1.1 x limit + 0.5 s, a factor 3 allowed for a loaded machine at most; sound against the exact worst
    multiset, and tight."""
    scenario = _groups_case(k, 50)
    start = time.perf_counter()
    report = solve(scenario, time_limit=limit)
    elapsed = time.perf_counter() - start
    assert elapsed <= 3 * (1.1 * limit + 0.5)
    exact = compose({ApproxDP(0.001 + 1e-5 * i, 1e-12): 1 for i in range(k - 50, k)}).epsilon(DELTA)
    assert exact * (1 - 1e-9) <= report.epsilon <= exact * (1 + report.rtol)
    assert report.differing_count == 50
    assert report.baselines["classic"].epsilon >= report.epsilon


@tiers.parametrize("chain", [True, False], default=1)
def test_counted_bounds_are_sound_against_brute_force(monkeypatch, chain):
    """The searches skipped (estimated beyond any limit), several invocations per database and a guarantee
    on many databases, in a dominance chain or not: the counted multiset still dominates every allowed pair
    (n = 8, every set listed), and the report says the limit was reached."""
    from itertools import combinations

    import gce.solving as solving

    n, m = 8, 2
    invocations = [Invocation(i, ApproxDP(0.1 * (1 + i % 4), 1e-9), 1 + i % 3) for i in range(n)]
    invocations += [Invocation(i, ApproxDP(0.05, 1e-9), 2) for i in range(0, n, 2)]
    invocations += [Invocation(i, PureDP(0.02) if chain else GaussianMechanism(5.0)) for i in range(n)]
    scenario = Scenario(n, invocations * 8, ConstraintSet(n, (AtMost(m),)), delta=DELTA)  # > 64 groups
    assert len(scenario.invocations.groups) > model.LOOP_GROUPS_MAX
    assert (solving._dominance_chain(scenario.table.kinds) is not None) == chain
    monkeypatch.setattr(solving, "SEARCH_SECONDS", (1e6, 0.0))
    report = solve(scenario, time_limit=1.0)
    assert report.time_limit_reached
    assert any("one search per guarantee" in note for note in report.notes)
    multisets = {frozenset(_brute_multiset(scenario.invocations, members).items())
                 for size in range(1, m + 1) for members in combinations(range(n), size)}
    worst = max(compose(dict(ms)).epsilon(DELTA) for ms in multisets)
    assert report.epsilon >= worst * (1 - 1e-9)
    assert report.epsilon <= worst * 1.5  # the counted bound is not vacuous here


def test_none_vs_any_marks_every_group():
    """The setting of 001 Thm. 3 needs every database queried: ranges counting up and down, steps, arrays."""
    from gce import Point, Uniform
    from gce.priors.routes import none_vs_any

    n = 50
    cases = [([InvocationGroup(range(n), PureDP(0.1))], True),
             ([InvocationGroup(range(n - 1, -1, -1), PureDP(0.1))], True),
             ([InvocationGroup(range(0, n, 2), PureDP(0.1)), InvocationGroup(range(n - 1, 0, -2), PureDP(0.2))], True),
             ([InvocationGroup(range(0, n, 2), PureDP(0.1))], False),
             ([InvocationGroup(np.arange(1, n), PureDP(0.1))], False),
             ([InvocationGroup(np.arange(1, n), PureDP(0.1)), Invocation(0, PureDP(0.3))], True)]
    for invocations, expected in cases:
        scenario = Scenario(n, invocations, hypotheses=(Point(()), Uniform(1)), epsilon=1.0)
        assert ({r.database for r in scenario.invocations} == set(range(n))) == expected  # brute force
        assert none_vs_any(scenario) == expected
    bounded = Scenario(n, [InvocationGroup(range(n), PureDP(0.1))], hypotheses=(Point(()), Uniform(2)), epsilon=1.0)
    assert not none_vs_any(bounded)


def test_without_renyi_terms_the_skipped_stages_still_answer_soundly(monkeypatch):
    """No Renyi bound (as for a guarantee without Renyi terms): the scalar score composes every guarantee one
    by one; where that and the searches per guarantee do not fit, the pair of most differing databases is
    the witness, the counted chain the bound, and the report says the limit was reached."""
    import gce.solving as solving

    monkeypatch.setattr(solving, "renyi_term_table", lambda kinds: None)
    monkeypatch.setattr(solving, "SEARCH_SECONDS", (1e6, 0.0))
    monkeypatch.setattr(solving, "COMPOSE_SECONDS_PER_GUARANTEE", 1e6)
    k, m = 150, 10
    report = solve(_groups_case(k, m), time_limit=5)
    assert report.time_limit_reached
    assert any("scalar score" in note for note in report.notes)
    assert report.witness is not None and report.differing_count == m
    exact = compose({ApproxDP(0.001 + 1e-5 * i, 1e-12): 1 for i in range(k - m, k)}).epsilon(DELTA)
    assert report.epsilon >= exact * (1 - 1e-9)
    assert report.epsilon <= exact * (1 + report.rtol)


def test_counted_chain_dominates_every_allowed_set_link_by_link():
    """The counted chain multiset dominates a pair's differing invocations iff, for every link j, it holds at
    least as many invocations at least as weak as g_j: checked on every allowed set, with databases that hold
    several guarantees of the chain (their counts add up on one database)."""
    from itertools import combinations

    import gce.solving as solving
    from gce.effort import Deadline

    n, m = 7, 2
    chain_kinds = [PureDP(0.01), PureDP(0.02), PureDP(0.05), PureDP(0.1)]
    invocations = [Invocation(i, chain_kinds[j], 1 + (i + j) % 3) for i in range(n) for j in range(4) if (i + j) % 2]
    scenario = Scenario(n, invocations, ConstraintSet(n, (AtMost(m),)), delta=DELTA)
    kinds = sorted(scenario.table.kinds, key=repr)
    chain = solving._dominance_chain(kinds)
    assert chain == chain_kinds
    counts = solving._dominating_counts(scenario, kinds, chain, solving._Budget(Deadline(10.0)), [], "test")
    for size in range(1, m + 1):
        for members in combinations(range(n), size):
            brute = _brute_multiset(scenario.invocations, members)
            for j in range(len(chain)):
                assert sum(brute[g] for g in chain[j:]) <= sum(counts[g] for g in chain[j:]), (members, j)

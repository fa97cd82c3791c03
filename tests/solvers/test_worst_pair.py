"""Every solver against exhaustive enumeration of all allowed pairs (n <= 14)."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

import tiers
from gce.constraints import AtMost, Conflicts, ConstraintSet, Exclusive, Patterns, Together
from gce.solvers import SOLVERS, MILP, PlainMILP, WeightProblem, worst_pair
from gce.solvers.weights import TopM, _disjoint_groups, _heaviest

#: Solvers outside the dispatcher's list, held to the same contract on part of the cases.
REFERENCE_SOLVERS = (PlainMILP(), MILP(strengthen=False))


def random_constraints(rng: random.Random, n: int) -> ConstraintSet:
    """A random intersection of one to three constraints of random kinds."""
    out = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(["at_most", "at_most_among", "exclusive", "together", "conflicts", "patterns"])
        group = rng.sample(range(n), rng.randint(2, min(5, n)))
        if kind == "at_most":
            out.append(AtMost(rng.randint(0, n // 2)))
        elif kind == "at_most_among":
            out.append(AtMost(rng.randint(0, len(group)), among=tuple(group)))
        elif kind == "exclusive":
            out.append(Exclusive(tuple(group)))
        elif kind == "together":
            out.append(Together(tuple(group[:3])))
        elif kind == "conflicts":
            pairs = [p for p in itertools.combinations(range(n), 2) if rng.random() < 0.2]
            if pairs:
                out.append(Conflicts(tuple(pairs)))
        else:
            sets = {frozenset(rng.sample(range(n), rng.randint(1, n))) for _ in range(rng.randint(1, 6))}
            out.append(Patterns(tuple(sets)))
    return ConstraintSet(n, tuple(out))


def brute_force(cs: ConstraintSet, weights: np.ndarray, neighborhood: str) -> float:
    allowed = [
        mask for mask in range(1 << cs.n)
        if cs.satisfied(i for i in range(cs.n) if mask >> i & 1)
    ]
    weight_of = np.array([sum(weights[i] for i in range(cs.n) if m >> i & 1) for m in range(1 << cs.n)])
    masks = np.array(allowed)
    if neighborhood == "unbounded":
        return float(weight_of[masks].max())
    return float(weight_of[masks[:, None] ^ masks[None, :]].max())


CASES = [(seed, n) for seed in range(60) for n in (4, 7, 10)] + [(1000 + s, 14) for s in range(10)]


@tiers.parametrize("seed,n", CASES, default=lambda seed, n: seed < 4 or seed == 1000)  # 14 databases: 0.1-0.2 s
@pytest.mark.parametrize("neighborhood", ["unbounded", "bounded"])
def test_every_accepting_solver_matches_enumeration(seed, n, neighborhood):
    rng = random.Random(seed)
    cs = random_constraints(rng, n)
    weights = np.array([rng.choice([0, 1, 1, 2, 3, 5]) for _ in range(n)], dtype=float)
    problem = WeightProblem(cs, weights, neighborhood)
    if n == 14 and neighborhood == "bounded" and sum(1 for _ in cs.allowed_sets()) > 3000:
        pytest.skip("too many allowed pairs to enumerate quickly")
    expected = brute_force(cs, weights, neighborhood)
    extra = REFERENCE_SOLVERS if seed % 4 == 0 else ()
    for solver in SOLVERS + extra:
        if n > 12 and solver.name == "exhaustive":
            continue
        if solver.can_solve(problem):
            result = solver.solve(problem, time_limit=10.0)
            assert problem.allowed_pair(*result.witness), solver.name
            assert result.value == pytest.approx(expected), solver.name
            assert result.exact and result.upper_bound == pytest.approx(expected), solver.name
    assert worst_pair(problem).value == pytest.approx(expected)


def test_hospitals_paper_values():
    # 001 Sec. V-A Example 1: at most 365 of 1,000 hospitals; unbounded 365, bounded 730.
    cs = ConstraintSet(1000, (AtMost(365),))
    assert worst_pair(WeightProblem(cs, np.ones(1000), "unbounded")).value == 365
    assert worst_pair(WeightProblem(cs, np.ones(1000), "bounded")).value == 730
    assert TopM().can_solve(WeightProblem(cs, np.ones(1000)))


def test_subsidiaries_paper_values():
    # 001 Example 2: exactly one employer among subsidiaries: the heaviest one (unbounded),
    # the two heaviest (bounded: max over i != j).
    cs = ConstraintSet(5, (Exclusive((0, 1, 2, 3, 4)),))
    w = np.array([3.0, 9.0, 4.0, 7.0, 1.0])
    assert worst_pair(WeightProblem(cs, w, "unbounded")).value == 9
    assert worst_pair(WeightProblem(cs, w, "bounded")).value == 16


@pytest.mark.slow  # a 0.5 s budget; test_conflict_graphs' budget_binds tests are its fast twins
def test_milp_reports_a_sound_bound_when_stopped_early():
    import networkx as nx

    g = nx.gnm_random_graph(300, 900, seed=3)
    cs = ConstraintSet(300, (Conflicts.from_graph(g),))
    problem = WeightProblem(cs, np.ones(300), "unbounded")
    result = MILP().solve(problem, time_limit=0.5)
    assert problem.allowed_pair(*result.witness)
    assert result.value <= result.upper_bound
    # Any independent set is an allowed membership set, so none may outweigh the certified bound.
    found = max(len(nx.maximal_independent_set(g, seed=s)) for s in range(50))
    assert found <= result.upper_bound
    assert result.value >= found * 0.8  # and the witness is a decent one


@tiers.parametrize("seed", range(400), default=40)
def test_heaviest_by_partition_is_the_stable_sort(seed):
    # TopM picks the k heaviest by a partition (O(n)); the reference is the former stable sort by
    # decreasing weight, ties to the smaller index. Few distinct weights make ties common.
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 60))
    values = rng.choice([0.0, 1.0, 2.0, 2.5, 7.0], size=size, p=[0.1, 0.4, 0.3, 0.1, 0.1]) \
        if seed % 3 else np.full(size, 3.0)
    for k in range(size + 2):
        expected = np.sort(np.argsort(-values, kind="stable")[:k])
        assert _heaviest(values, k).tolist() == expected.tolist()


@pytest.mark.parametrize("neighborhood", ["unbounded", "bounded"])
def test_top_m_over_every_database_builds_no_index_set(neighborhood):
    # at_most over all databases is one group kept as None (no set of n indices), equal to an explicit
    # group of all n databases, merged with it at the smaller m; the witness is the former stable sort's.
    n = 50
    rng = random.Random(7)
    weights = np.array([rng.choice([1.0, 2.0, 3.0]) for _ in range(n)])
    implicit = ConstraintSet(n, (AtMost(9),))
    explicit = ConstraintSet(n, (AtMost(12, among=tuple(range(n))), AtMost(9)))
    assert _disjoint_groups(implicit) == ((None, 9),)
    assert _disjoint_groups(explicit) == ((None, 9),)
    ranked = np.argsort(-weights, kind="stable")
    b1, b0 = frozenset(ranked[:9].tolist()), frozenset(ranked[9:18].tolist()) if neighborhood == "bounded" \
        else frozenset()
    for cs in (implicit, explicit):
        result = TopM().solve(WeightProblem(cs, weights, neighborhood), 1.0)
        assert result.witness == (b0, b1)
        assert result.value == brute_force_top(weights, 9 if neighborhood == "unbounded" else 18)
    # Overlapping groups (every database and a part): not TopM's (the MILP takes them).
    assert _disjoint_groups(ConstraintSet(n, (AtMost(9), Exclusive((0, 1))))) is None


def brute_force_top(weights: np.ndarray, k: int) -> float:
    return float(np.sort(weights)[::-1][:k].sum())

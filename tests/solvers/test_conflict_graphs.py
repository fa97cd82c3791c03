"""Conflict-graph structure: the disjoint-pair reduction, valid inequalities, local search,
and sound bounds when the time budget binds (docs/design.md, "The worst-case search" and "Performance targets")."""

from __future__ import annotations

import itertools
import random

import networkx as nx
import numpy as np
import pytest

import tiers
from gce import effort
from gce.constraints import AtMost, Conflicts, ConstraintSet, Exclusive, Together
from gce.solvers import MILP, PlainMILP, WeightProblem, formulation, worst_pair
from gce.solvers.heuristics import LocalSearch
from gce.solvers.milp import _solve_model, clique_rows, separate
from gce.solvers.packing import PackingStructure, odd_holes, violated_odd_cycles



def conflict_instance(rng: random.Random, n: int, *, with_at_most: bool = False) -> ConstraintSet:
    """Exclusive groups plus random cross conflicts (and sometimes a cardinality bound)."""
    order = rng.sample(range(n), n)
    constraints = []
    position = 0
    while position < n - 1:
        size = rng.randint(2, 4)
        group = order[position:position + size]
        if len(group) >= 2:
            constraints.append(Exclusive(tuple(group)))
        position += size
    edges = [e for e in itertools.combinations(range(n), 2) if rng.random() < 0.25]
    if edges:
        constraints.append(Conflicts(tuple(edges)))
    if with_at_most:
        constraints.append(AtMost(rng.randint(1, n // 2)))
    return ConstraintSet(n, tuple(constraints))


def allowed_masks(cs: ConstraintSet) -> list[int]:
    return [m for m in range(1 << cs.n) if cs.satisfied(i for i in range(cs.n) if m >> i & 1)]


def brute_force(cs: ConstraintSet, weights: np.ndarray, neighborhood: str) -> float:
    """max w(b0 XOR b1) over allowed pairs of the neighbourhood, by enumeration."""
    masks = np.array(allowed_masks(cs))
    weight_of = np.array([sum(weights[i] for i in range(cs.n) if m >> i & 1) for m in range(1 << cs.n)])
    if neighborhood == "unbounded":
        return float(weight_of[masks].max())
    return float(weight_of[masks[:, None] ^ masks[None, :]].max())


def best_disjoint(cs: ConstraintSet, weights: np.ndarray) -> float:
    """max w(b0) + w(b1) over allowed disjoint pairs, by enumeration."""
    masks = np.array(allowed_masks(cs))
    weight_of = np.array([sum(weights[i] for i in range(cs.n) if m >> i & 1) for m in range(1 << cs.n)])
    disjoint = (masks[:, None] & masks[None, :]) == 0
    totals = weight_of[masks][:, None] + weight_of[masks][None, :]
    return float(totals[disjoint].max())


def incidence(cs: ConstraintSet) -> np.ndarray:
    """One 0/1 row per allowed set."""
    masks = allowed_masks(cs)
    return np.array([[m >> i & 1 for i in range(cs.n)] for m in masks], dtype=float)


CASES = [(seed, n) for seed in range(16) for n in (5, 8, 11)]


@tiers.parametrize("seed,n", CASES, default=lambda seed, n: seed < 4)
def test_hereditary_bounded_worst_case_is_a_disjoint_pair(seed, n):
    # 001 Sec. V-A (docs/design.md, "The worst-case search"): with hereditary constraints (together included: allowed sets
    # are unions of components) removing b0 & b1 from both keeps them allowed.
    rng = random.Random(seed)
    cs = conflict_instance(rng, n, with_at_most=seed % 2 == 0)
    if seed % 3 == 0:
        cs = ConstraintSet(n, cs.constraints + (Together(tuple(rng.sample(range(n), 2))),))
    weights = np.array([rng.choice([0, 1, 2, 3, 5]) for _ in range(n)], dtype=float)
    problem = WeightProblem(cs, weights, "bounded")
    assert formulation(problem) == "disjoint"
    assert best_disjoint(cs, weights) == brute_force(cs, weights, "bounded")


@tiers.parametrize("seed,n", CASES, default=lambda seed, n: seed < 4)
@pytest.mark.parametrize("neighborhood", ["unbounded", "bounded"])
def test_strengthened_milp_matches_enumeration(seed, n, neighborhood):
    rng = random.Random(seed)
    cs = conflict_instance(rng, n, with_at_most=seed % 2 == 1)
    weights = np.array([rng.choice([0, 1, 1, 2, 3, 5]) for _ in range(n)], dtype=float)
    problem = WeightProblem(cs, weights, neighborhood)
    expected = brute_force(cs, weights, neighborhood)
    form = formulation(problem)
    assert form == ("single" if neighborhood == "unbounded" else "disjoint")

    # The whole solver, and each of its stages on its own (the early exits skip some).
    result = MILP().solve(problem, time_limit=10.0)
    assert problem.allowed_pair(*result.witness)
    assert result.exact and result.value == expected and result.detail.startswith(form)

    structure = PackingStructure.of(cs)
    assert structure.exact
    sides = 2 if form == "disjoint" else 1
    assert structure.partition_bound(weights, sides) >= expected

    rows, relaxation = separate(problem, form, structure, clique_rows(structure))
    assert relaxation >= expected - 1e-6
    answer = _solve_model(problem, form, rows, 10.0)
    assert problem.value(*answer.pair) == expected and answer.upper >= expected
    # Every added row holds on every allowed set: the cuts remove fractional points only.
    assert np.all(incidence(cs) @ rows.matrix.toarray().T <= rows.rhs + 1e-9)

    search = LocalSearch(structure, weights, sides, seed=seed)
    found = search.run(max_moves=500)
    assert problem.allowed_pair(*search.best_pair())
    assert found == problem.value(*search.best_pair()) <= expected


@tiers.parametrize("seed", range(20), default=6)
def test_packing_groups_are_implied_and_exact_for_packing_kinds(seed):
    rng = random.Random(seed)
    n = 9
    cs = conflict_instance(rng, n, with_at_most=seed % 2 == 0)
    if seed % 3 == 0:  # a kind the groups do not describe: implied, no longer exact
        cs = ConstraintSet(n, cs.constraints + (Together(tuple(rng.sample(range(n), 2))),))
    structure = PackingStructure.of(cs)
    assert structure.exact == (seed % 3 != 0)
    for mask in range(1 << n):
        members = [i for i in range(n) if mask >> i & 1]
        allowed, obeys = cs.satisfied(members), structure.obeys(members)
        assert obeys if allowed else (not structure.exact or not obeys)


@tiers.parametrize("seed", range(30), default=5)
def test_odd_cycle_rows_hold_on_independent_sets(seed):
    rng = np.random.default_rng(seed)
    n = 11
    graph = nx.gnm_random_graph(n, int(rng.integers(10, 25)), seed=seed)
    cs = ConstraintSet(n, (Conflicts.from_graph(graph),))
    sets = incidence(cs)
    for hole in odd_holes(graph):
        assert len(hole) == 5 and nx.is_isomorphic(graph.subgraph(hole), nx.cycle_graph(5))
        assert sets[:, list(hole)].sum(axis=1).max() <= 2
    x = rng.uniform(0.0, 0.5, size=n)  # satisfies every edge row
    for cycle in violated_odd_cycles(graph, x):
        assert len(cycle) % 2 == 1 and len(set(cycle)) == len(cycle) >= 3
        assert all(graph.has_edge(u, v) for u, v in zip(cycle, cycle[1:] + cycle[:1]))
        assert x[cycle].sum() > (len(cycle) - 1) / 2  # violated by x ...
        assert sets[:, cycle].sum(axis=1).max() <= (len(cycle) - 1) / 2  # ... and valid


def test_structured_conflicts_exact_and_fast_path():
    # The performance case of docs/design.md: 50 exclusive groups of 10 with 200 cross conflicts.
    rng = random.Random(7)
    n = 500
    groups = [tuple(range(10 * g, 10 * g + 10)) for g in range(50)]
    edges: set[tuple[int, int]] = set()
    while len(edges) < 200:
        u, v = sorted(rng.sample(range(n), 2))
        if u // 10 != v // 10:
            edges.add((u, v))
    cs = ConstraintSet(n, tuple(Exclusive(g) for g in groups) + (Conflicts(tuple(sorted(edges))),))
    ones = np.ones(n)
    assert worst_pair(WeightProblem(cs, ones, "unbounded")).value == 50
    result = worst_pair(WeightProblem(cs, ones, "bounded"))
    assert result.exact and result.value == 100 and result.method == "milp"
    repeats = np.array([rng.randint(1, 3) for _ in range(n)], dtype=float)
    for neighborhood in ("unbounded", "bounded"):
        problem = WeightProblem(cs, repeats, neighborhood)
        ours, plain = worst_pair(problem), PlainMILP().solve(problem, 20.0)
        assert ours.exact and plain.exact and ours.value == plain.value


@tiers.parametrize("time_limit", [0.02, 0.1, 0.3], default=1)
def test_budget_binds_unbounded_bound_is_sound(time_limit):
    graph = nx.gnm_random_graph(90, 270, seed=5)
    problem = WeightProblem(ConstraintSet(90, (Conflicts.from_graph(graph),)), np.ones(90), "unbounded")
    # Independent reference: a maximum independent set is a maximum clique of the complement.
    _, optimum = nx.max_weight_clique(nx.complement(graph), weight=None)
    with effort.within(effort.Deadline(time_limit)) as cap:
        result = worst_pair(problem)
    assert problem.allowed_pair(*result.witness)
    assert result.value <= optimum <= result.upper_bound
    # Not exact only where the cap stopped it, and then the cap says so (once, with the gap).
    assert result.exact or result.stopped
    assert cap.reached == result.stopped and len(cap.stops) == result.stopped
    if result.stopped:
        assert cap.stops[0].startswith("worst-case search on 90 databases (")
        assert f"witness {result.value:g}, certified bound {result.upper_bound:g}" in cap.stops[0]


@pytest.mark.parametrize("neighborhood", ["unbounded", "bounded"])
def test_the_milp_gives_the_same_answer_on_a_slower_machine(neighborhood):
    """Every step's work is counted (moves, nodes, rounds, cycles) and HiGHS is deterministic (one thread,
    seed 0): with time passing 10x faster the same witness and bound, and exact (the cap not reached)."""
    graph = nx.gnm_random_graph(45, 110, seed=2)  # HiGHS proves the bounded optimum (34) in about 0.7 s
    problem = WeightProblem(ConstraintSet(45, (Conflicts.from_graph(graph),)), np.ones(45), neighborhood)
    normal = MILP().solve(problem, 60.0)
    with effort.clock(effort.slowed(10.0)):
        slow = MILP().solve(problem, 60.0)
    assert normal == slow and normal.exact and not normal.stopped
    _, optimum = nx.max_weight_clique(nx.complement(graph), weight=None)
    if neighborhood == "unbounded":  # a maximum independent set
        assert normal.value == optimum
    else:  # two disjoint independent sets
        assert optimum < normal.value <= 2 * optimum


@pytest.mark.slow  # 1 s; test_hardening_solve's whole-solve budget is the bounded fast twin
def test_budget_binds_bounded_bound_is_sound():
    """The exact solve takes about 0.3 s (2 shared cores under load): the last check's 0.05 s runs on a clock
    twenty times fast (2.5 ms of this machine's time, about 120 times less), so that the budget binds on a
    machine several times faster too."""
    graph = nx.gnm_random_graph(40, 120, seed=3)
    problem = WeightProblem(ConstraintSet(40, (Conflicts.from_graph(graph),)), np.ones(40), "bounded")
    exact, plain = MILP().solve(problem, 30.0), PlainMILP().solve(problem, 30.0)
    assert exact.exact and plain.exact and exact.value == plain.value  # the reference, twice
    for time_limit in (0.02, 0.1, 0.3):
        result = MILP().solve(problem, time_limit)
        assert problem.allowed_pair(*result.witness)
        assert result.value <= exact.value <= result.upper_bound
    with effort.clock(effort.slowed(20.0)):
        assert not MILP().solve(problem, 0.05).exact  # the budget does bind here


@pytest.mark.slow  # 1.5 s each; the budget_binds tests above are its fast twins
@pytest.mark.parametrize("neighborhood", ["unbounded", "bounded"])
def test_large_random_graph_bound_above_every_witness(neighborhood):
    graph = nx.gnm_random_graph(500, 1500, seed=11)
    cs = ConstraintSet(500, (Conflicts.from_graph(graph),))
    problem = WeightProblem(cs, np.ones(500), neighborhood)
    result = MILP().solve(problem, time_limit=1.0)
    assert problem.allowed_pair(*result.witness) and not result.exact
    sides = 2 if neighborhood == "bounded" else 1
    other = LocalSearch(PackingStructure.of(cs), np.ones(500), sides, seed=99)
    other.run(max_moves=20_000)
    assert problem.allowed_pair(*other.best_pair())
    assert other.best_total <= result.upper_bound
    assert result.upper_bound < (500 if sides == 2 else 250)  # better than the trivial relaxation


def test_a_highs_model_estimated_beyond_the_time_left_is_not_built_and_the_stop_is_recorded(monkeypatch):
    """The model's construction and HiGHS' presolve ignore the time limit, so the cost of every HiGHS call
    is estimated from its columns before the model is built; a call that does not fit is a stop of the cap
    (here: 1 column a second, so 90 columns do not fit in 60 s), and the bounds stay certified."""
    import gce.solvers.milp as milp

    monkeypatch.setattr(milp, "HIGHS_COLUMNS_PER_SECOND", 1)
    graph = nx.gnm_random_graph(90, 270, seed=5)
    problem = WeightProblem(ConstraintSet(90, (Conflicts.from_graph(graph),)), np.ones(90), "unbounded")
    _, optimum = nx.max_weight_clique(nx.complement(graph), weight=None)
    with effort.within(effort.Deadline(60.0)) as cap:
        result = worst_pair(problem, None)
    assert result.stopped and not result.exact and result.value <= optimum <= result.upper_bound
    assert "cutting planes (round 1 of at most 12 not solved)" in cap.stops[0]
    assert "HiGHS not started (90 columns, " in cap.stops[0]


def _partition_bound_by_parts(structure: PackingStructure, weights: np.ndarray, sides: int) -> float:
    """The partition bound written out part by part (the definition in its docstring)."""
    free = np.ones(structure.n, dtype=bool)
    bound = 0.0
    groups = sorted(structure.groups, key=lambda g: g.capacity / len(g.members))
    for group in groups:
        part = group.members[free[group.members]]
        free[part] = False
        keep = min(part.size, sides * group.capacity)
        bound += float(np.sort(weights[part])[part.size - keep:].sum()) if keep else 0.0
    return bound + float(weights[free].sum())


@tiers.parametrize("seed", range(40), default=8)
def test_the_vectorised_partition_bound_is_the_bound_part_by_part(seed):
    rng = random.Random(seed)
    n = rng.randint(5, 60)
    cs = conflict_instance(rng, n, with_at_most=seed % 2 == 1)
    structure = PackingStructure.of(cs)
    weights = np.array([rng.choice([0.0, 0.5, 1.0, 2.0, 3.25, 7.0]) for _ in range(n)])
    for sides in (1, 2):
        assert structure.partition_bound(weights, sides) == pytest.approx(
            _partition_bound_by_parts(structure, weights, sides), rel=1e-12)


def test_a_conflict_structure_estimated_beyond_the_time_left_is_not_built(monkeypatch):
    """networkx's graph and cliques cannot be interrupted (100,000 conflicts: seconds), so their cost is
    estimated first; when it does not fit, the search answers with a greedy witness and the total weight as
    its bound (sound), and records the stop. Here: 1 conflict a second, 270 conflicts, 60 s left."""
    from collections import OrderedDict

    import gce.solvers.milp as milp
    import gce.solvers.packing as packing

    monkeypatch.setattr(packing, "PACKING_UNITS_PER_SECOND", 1)
    monkeypatch.setattr(milp, "_STRUCTURES", OrderedDict())  # nothing built before
    graph = nx.gnm_random_graph(90, 270, seed=5)
    problem = WeightProblem(ConstraintSet(90, (Conflicts.from_graph(graph),)), np.ones(90), "unbounded")
    _, optimum = nx.max_weight_clique(nx.complement(graph), weight=None)
    with effort.within(effort.Deadline(60.0)) as cap:
        result = worst_pair(problem, None)
    assert result.stopped and problem.allowed_pair(*result.witness)
    assert 0 < result.value <= optimum <= result.upper_bound == 90
    assert "conflict structure not built (about 2.7e+02 s; " in cap.stops[0]


@pytest.mark.parametrize("seed", range(3))
def test_the_partition_bound_of_parts_beyond_the_sorted_size_is_the_bound_part_by_part(seed):
    """Parts larger than packing._SORTED_PARTS take their heaviest by np.partition, the others by one sort:
    at_most m of 20,000 databases (one large part) with exclusive groups of 3 and a together block beside it."""
    from gce.solvers import packing

    rng = np.random.default_rng(seed)
    n = 5 * packing._SORTED_PARTS
    groups = [tuple(range(i, i + 3)) for i in range(0, 600, 3)]
    cs = ConstraintSet(n, (AtMost(int(rng.integers(2, 400))), *(Exclusive(g) for g in groups), Together((0, 1))))
    structure = PackingStructure.of(cs)
    assert max(g.members.size for g in structure.groups) > packing._SORTED_PARTS
    weights = rng.choice([0.0, 0.5, 1.0, 2.0, 3.25, 7.0], size=n) * rng.random(n) ** (seed % 2)
    for sides in (1, 2):
        assert structure.partition_bound(weights, sides) == pytest.approx(
            _partition_bound_by_parts(structure, weights, sides), rel=1e-12)


def test_the_partition_bound_of_a_large_part_of_capacity_zero_is_zero():
    """at_most 0 over more databases than packing._SORTED_PARTS: the part contributes nothing (np.partition
    would be asked for the weight past its end)."""
    from gce.solvers import packing

    n = 2 * packing._SORTED_PARTS
    structure = PackingStructure.of(ConstraintSet(n, (AtMost(0),)))
    weights = np.linspace(1.0, 2.0, n)
    assert structure.partition_bound(weights, 1) == structure.partition_bound(weights, 2) == 0.0
    assert _partition_bound_by_parts(structure, weights, 2) == 0.0

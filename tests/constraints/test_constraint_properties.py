"""Property tests on random small instances, against brute force over all 2^n sets.

The reference is the definition of each kind (001, Sec. V-A), written out here
independently of the package, and exhaustive enumeration of membership
vectors x in {0, 1}^n and of the auxiliary variables.
"""

from __future__ import annotations

from itertools import product

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import tiers
from gce.constraints import (
    AtMost,
    Conflicts,
    ConstraintSet,
    Exclusive,
    Patterns,
    Together,
)
from gce.files.constraints import constraint_from_dict, constraint_to_dict

MAX_N = 8
PROPERTY_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@st.composite
def constraint_sets(draw, max_n: int = MAX_N) -> ConstraintSet:
    """A random ConstraintSet: up to 4 hereditary constraints and up to 2 pattern lists."""
    n = draw(st.integers(1, max_n))
    index = st.integers(0, n - 1)
    group = st.lists(index, min_size=1, max_size=n, unique=True)
    kinds = [
        st.builds(AtMost, st.integers(0, n), st.none() | group),
        st.builds(Exclusive, group),
        st.builds(Together, group),
    ]
    if n >= 2:
        edge = st.lists(index, min_size=2, max_size=2, unique=True).map(tuple)
        edges = st.lists(edge, max_size=6, unique_by=lambda e: (min(e), max(e)))
        kinds.append(edges.map(Conflicts))
    patterns = st.lists(st.frozensets(index, min_size=1), min_size=1, max_size=4, unique=True).map(Patterns)
    constraints = draw(st.lists(st.one_of(kinds), max_size=4)) + draw(st.lists(patterns, max_size=2))
    return ConstraintSet(n, tuple(draw(st.permutations(constraints))))


def reference_allows(constraint, members: frozenset[int], n: int) -> bool:
    """The definition of each kind, independent of the package's code."""
    if isinstance(constraint, AtMost):
        among = range(n) if constraint.among is None else constraint.among
        return sum(1 for i in among if i in members) <= constraint.m
    if isinstance(constraint, Exclusive):
        return sum(1 for i in constraint.group if i in members) <= 1
    if isinstance(constraint, Together):
        inside = [i in members for i in constraint.group]
        return all(inside) or not any(inside)
    if isinstance(constraint, Conflicts):
        return not any(u in members and v in members for u, v in constraint.edges)
    if isinstance(constraint, Patterns):
        return not members or any(members == set(p) for p in constraint.allowed)
    raise AssertionError(f"no reference for {constraint!r}")


def all_sets(n: int) -> list[frozenset[int]]:
    return [frozenset(i for i in range(n) if mask >> i & 1) for mask in range(1 << n)]


def compiled_allows(cs: ConstraintSet) -> dict[frozenset[int], bool]:
    """For every x in {0,1}^n: does some binary aux assignment satisfy A @ [x, s] <= b?"""
    system = cs.compile()
    assert system.n == cs.n
    dense = system.dense()
    xs = np.array(list(product((0, 1), repeat=cs.n)), dtype=float)
    ss = np.array(list(product((0, 1), repeat=system.aux)), dtype=float).reshape(2**system.aux, system.aux)
    lhs = (xs @ dense[:, : cs.n].T)[:, None, :] + (ss @ dense[:, cs.n :].T)[None, :, :]
    feasible = np.all(lhs <= system.b + 1e-9, axis=2).any(axis=1)
    return {frozenset(np.flatnonzero(x).tolist()): bool(f) for x, f in zip(xs, feasible)}


@tiers.given(10, 60, constraint_sets(), settings=PROPERTY_SETTINGS)
def _satisfied_matches_the_definition(cs):
    for members in all_sets(cs.n):
        for constraint in cs.constraints:
            assert constraint.satisfied(members) == reference_allows(constraint, members, cs.n), (
                constraint,
                members,
            )
        expected = all(reference_allows(c, members, cs.n) for c in cs.constraints)
        assert cs.satisfied(members) == expected


test_satisfied_matches_the_definition, test_satisfied_matches_the_definition_slow = \
    _satisfied_matches_the_definition


@tiers.given(10, 60, constraint_sets(), settings=PROPERTY_SETTINGS)
def _compile_agrees_with_satisfied_on_every_set(cs):
    compiled = compiled_allows(cs)
    assert len(compiled) == 2**cs.n
    for members, feasible in compiled.items():
        assert feasible == cs.satisfied(members), members
    assert compiled[frozenset()], "the empty set is always allowed"


test_compile_agrees_with_satisfied_on_every_set, test_compile_agrees_with_satisfied_on_every_set_slow = \
    _compile_agrees_with_satisfied_on_every_set


@tiers.given(10, 60, constraint_sets(), settings=PROPERTY_SETTINGS)
def _allowed_sets_is_the_brute_force_family(cs):
    listed = list(cs.allowed_sets())
    assert len(listed) == len(set(listed))
    assert set(listed) == {b for b in all_sets(cs.n) if cs.satisfied(b)}


test_allowed_sets_is_the_brute_force_family, test_allowed_sets_is_the_brute_force_family_slow = \
    _allowed_sets_is_the_brute_force_family


@tiers.given(10, 60, constraint_sets(), settings=PROPERTY_SETTINGS)
def _has_nonempty_allowed_is_exact(cs):
    brute = any(b and cs.satisfied(b) for b in all_sets(cs.n))
    assert cs.has_nonempty_allowed() is brute


test_has_nonempty_allowed_is_exact, test_has_nonempty_allowed_is_exact_slow = _has_nonempty_allowed_is_exact


@tiers.given(10, 60, constraint_sets(), settings=PROPERTY_SETTINGS)
def _structural_views_are_implied_by_the_family(cs):
    family = [b for b in all_sets(cs.n) if cs.satisfied(b)]
    blocks = cs.components()
    assert sorted(i for block in blocks for i in block) == list(range(cs.n))
    for b in family:
        assert all(block <= b or block.isdisjoint(b) for block in blocks)
        assert all(len(b & bound.among) <= bound.m for bound in cs.at_most_bounds())
        assert not any(u in b and v in b for u, v in cs.conflict_graph().edges)


test_structural_views_are_implied_by_the_family, test_structural_views_are_implied_by_the_family_slow = \
    _structural_views_are_implied_by_the_family


@tiers.given(10, 60, constraint_sets(), settings=PROPERTY_SETTINGS)
def _is_unconstrained_is_sound(cs):
    if cs.is_unconstrained:
        assert all(cs.satisfied(b) for b in all_sets(cs.n))


test_is_unconstrained_is_sound, test_is_unconstrained_is_sound_slow = _is_unconstrained_is_sound


@tiers.given(8, 40, constraint_sets())
def _file_form_round_trips(cs):
    for position, constraint in enumerate(cs.constraints):
        table = constraint_to_dict(constraint)
        assert constraint_from_dict(table, position, cs.n) == constraint
        assert constraint_to_dict(constraint_from_dict(table, position)) == table


test_file_form_round_trips, test_file_form_round_trips_slow = _file_form_round_trips


def test_every_constraint_kind_is_drawn():
    """Every kind a scenario file can name is drawn by :func:`constraint_sets`, so the properties above
    cover it (a new kind without a strategy and a reference definition fails here)."""
    from hypothesis import Phase, find

    from gce.files.constraints import CONSTRAINT_KINDS

    for table_kind in CONSTRAINT_KINDS.values():
        found = find(constraint_sets(), lambda cs: any(type(c) is table_kind.record for c in cs.constraints),
                     settings=settings(max_examples=2000, database=None, phases=[Phase.generate]))
        assert any(type(c) is table_kind.record for c in found.constraints)
        for c in found.constraints:
            reference_allows(c, frozenset(), found.n)  # has a reference definition

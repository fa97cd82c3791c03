"""ConstraintSet: validation, hand-computed allowed families, structure, feasibility."""

from __future__ import annotations

import time
from itertools import combinations

import networkx as nx
import pytest

from gce.constraints import (
    MAX_ENUMERATED_COMPONENTS,
    AtMost,
    AtMostBound,
    Conflicts,
    ConstraintSet,
    Exclusive,
    Patterns,
    Together,
)
from gce.errors import (
    GCEError,
    InfeasibleConstraintsError,
    InvalidParameterError,
    UnsupportedCombinationError,
)

S = frozenset


def allowed(cs: ConstraintSet) -> set[frozenset[int]]:
    sets = list(cs.allowed_sets())
    assert len(sets) == len(set(sets)), "allowed_sets() repeated a set"
    assert sets[0] == S(), "the empty set comes first"
    return set(sets)


# --- hand-computed allowed families --------------------------------------------------------------


def test_at_most_two_of_four():
    # C(4,0) + C(4,1) + C(4,2) = 1 + 4 + 6 (001, Sec. V-A, Example 1 in miniature)
    family = allowed(ConstraintSet(4, (AtMost(2),)))
    assert len(family) == 11
    assert all(len(b) <= 2 for b in family)


def test_exclusive_group_of_three():
    # 001, Sec. V-A, Example 2: none or exactly one subsidiary.
    assert allowed(ConstraintSet(3, (Exclusive((0, 1, 2)),))) == {S(), S({0}), S({1}), S({2})}


def test_patterns_are_listed_plus_empty():
    # 001, Sec. V-A, Example 3: common columns 0-1, ad columns 2-3, premium columns 4-5.
    free, paid = S({0, 1, 2, 3}), S({0, 1, 4, 5})
    assert allowed(ConstraintSet(6, (Patterns((free, paid)),))) == {S(), free, paid}


def test_together_blocks():
    assert allowed(ConstraintSet(3, (Together((0, 1)),))) == {S(), S({0, 1}), S({2}), S({0, 1, 2})}


def test_conflict_path_gives_independent_sets():
    cs = ConstraintSet(3, (Conflicts.from_graph(nx.path_graph(3)),))
    assert allowed(cs) == {S(), S({0}), S({1}), S({2}), S({0, 2})}


def test_ambulances_at_most_three_parts():
    # 000, Ex. IV.5: each record in at most 3 of k = 5 parts: 1 + 5 + 10 + 10 subsets.
    assert len(allowed(ConstraintSet(5, (AtMost(3),)))) == 26


def test_mixed_constraints():
    # Components {0}, {1, 2}, {3}; 0 excludes 1 (hence the block {1, 2}).
    cs = ConstraintSet(4, (Exclusive((0, 1)), Together((1, 2))))
    assert allowed(cs) == {S(), S({0}), S({1, 2}), S({3}), S({0, 3}), S({1, 2, 3})}


def test_at_most_among_subset_with_together():
    cs = ConstraintSet(4, (AtMost(1, among=(0, 1)), Together((0, 2))))
    # Blocks {0, 2}, {1}, {3}; {0, 2} and {1} cannot both be present.
    assert allowed(cs) == {
        S(), S({0, 2}), S({1}), S({3}), S({0, 2, 3}), S({1, 3}),
    }


def test_patterns_intersect_with_other_constraints():
    cs = ConstraintSet(4, (Patterns(({0}, {0, 1}, {2, 3})), AtMost(1)))
    assert allowed(cs) == {S(), S({0})}
    two = ConstraintSet(4, (Patterns(({0}, {0, 1}, {2, 3})), Patterns(({0, 1}, {3}, {2, 3}))))
    assert allowed(two) == {S(), S({0, 1}), S({2, 3})}


def test_unconstrained_family_is_the_power_set():
    assert len(allowed(ConstraintSet(5))) == 32


def test_explicit_sets_is_the_shortest_pattern_list():
    assert ConstraintSet(3, (AtMost(1),)).explicit_sets() is None
    cs = ConstraintSet(3, (Patterns(({0}, {1}, {2})), AtMost(1), Patterns(({0}, {1, 2}))))
    assert cs.explicit_sets() == (S({0}), S({1, 2}))


def test_allowed_sets_with_patterns_needs_no_small_n():
    cs = ConstraintSet(1000, (Patterns(({5, 999}, {7})), Exclusive((5, 7))))
    assert allowed(cs) == {S(), S({5, 999}), S({7})}


def test_allowed_sets_refuses_too_many_blocks():
    n = MAX_ENUMERATED_COMPONENTS + 1
    with pytest.raises(UnsupportedCombinationError, match=f"got {n} \\(n = {n}\\)"):
        next(ConstraintSet(n, (AtMost(2),)).allowed_sets())
    # Tying two databases together brings the count of blocks down to the limit.
    tied = ConstraintSet(n, (Together((0, 1)), AtMost(2)))
    assert len(tied.components()) == MAX_ENUMERATED_COMPONENTS
    assert next(tied.allowed_sets()) == S()


# --- satisfied / violated ------------------------------------------------------------------------


def test_satisfied_and_violated():
    cs = ConstraintSet(5, (AtMost(2), Together((0, 1)), Conflicts(((1, 4),))))
    assert cs.satisfied([0, 1])
    assert cs.violated({0, 1}) == ()
    assert not cs.satisfied(range(3))
    assert cs.violated({0, 1, 4}) == (0, 2)
    assert cs.violated({0}) == (1,)


@pytest.mark.parametrize("members", [{5}, {-1}, {0, 1.5}, {True}])
def test_satisfied_rejects_bad_members(members):
    with pytest.raises(InvalidParameterError) as info:
        ConstraintSet(5).satisfied(members)
    assert info.value.field == "members"


# --- validation ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: ConstraintSet(0), "n: must be an integer >= 1, got 0"),
        (lambda: ConstraintSet(2.0), "n: must be an integer >= 1, got 2.0"),
        (lambda: ConstraintSet(3, "at_most"), "constraints: must be a constraint or a collection of constraints"),
        (lambda: ConstraintSet(3, (AtMost(1), 2)), "constraints[1]: must be a constraint"),
        (
            lambda: ConstraintSet(3, (AtMost(1), Exclusive((0, 1)), AtMost(1, among=(0, 3)))),
            "constraints[2] (at_most).among: database 3 is out of range [0, 3)",
        ),
        (
            lambda: ConstraintSet(3, [Conflicts(((0, 1), (2, 5)))]),
            "constraints[0] (conflicts).edges[1]: database 5 is out of range [0, 3)",
        ),
        (
            lambda: ConstraintSet(2, [Together((0, 1)), Patterns(({0}, {3}))]),
            "constraints[1] (patterns).allowed[1]: database 3 is out of range [0, 2)",
        ),
    ],
)
def test_validation_errors_name_constraint_and_field(build, message):
    with pytest.raises(InvalidParameterError) as info:
        build()
    assert str(info.value).startswith(message)


def test_constraints_become_a_tuple():
    cs = ConstraintSet(3, [AtMost(1)])
    assert cs.constraints == (AtMost(1),)
    assert cs == ConstraintSet(3, (AtMost(1),))


# --- is_unconstrained ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cs, expected",
    [
        (ConstraintSet(3), True),
        (ConstraintSet(3, (AtMost(3), Exclusive((1,)), Together((2,)), Conflicts(()))), True),
        (ConstraintSet(2, (Patterns(({0}, {1}, {0, 1})),)), True),
        (ConstraintSet(3, (AtMost(2),)), False),
        (ConstraintSet(3, (AtMost(3), Together((0, 1)))), False),
    ],
)
def test_is_unconstrained(cs, expected):
    assert cs.is_unconstrained is expected
    # Cross-check on the power set.
    assert (len(allowed(cs)) == 2**cs.n) is expected


# --- structure -----------------------------------------------------------------------------------


def test_components_merge_overlapping_groups():
    cs = ConstraintSet(7, (Together((0, 2)), Together((2, 5)), Together((3, 4)), AtMost(3)))
    assert cs.components() == (S({0, 2, 5}), S({1}), S({3, 4}), S({6}))


def test_components_without_together_are_singletons():
    assert ConstraintSet(3, (AtMost(1),)).components() == (S({0}), S({1}), S({2}))


def test_conflict_graph_from_exclusive_conflicts_and_at_most_one():
    cs = ConstraintSet(
        7,
        (
            Exclusive((0, 1, 2)),
            Conflicts(((2, 3), (4, 5))),
            AtMost(1, among=(5, 6)),
            AtMost(2, among=(0, 3, 6)),
            Together((3, 6)),
        ),
    )
    graph = cs.conflict_graph()
    assert set(graph.nodes) == set(range(7))
    expected = {(0, 1), (0, 2), (1, 2), (2, 3), (4, 5), (5, 6)}
    assert {tuple(sorted(e)) for e in graph.edges} == expected


def test_conflict_graph_edges_are_never_both_allowed():
    cs = ConstraintSet(6, (Exclusive((0, 1, 2)), Conflicts(((3, 4),)), AtMost(1, among=(4, 5))))
    family = allowed(cs)
    for u, v in cs.conflict_graph().edges:
        assert not any({u, v} <= b for b in family)


def test_at_most_bounds():
    cs = ConstraintSet(4, (AtMost(3), Exclusive((1, 2)), Together((0, 3)), AtMost(0, among=(2,))))
    assert cs.at_most_bounds() == (
        AtMostBound(S(range(4)), 3),
        AtMostBound(S({1, 2}), 1),
        AtMostBound(S({2}), 0),
    )


# --- compile on a hand-written example -----------------------------------------------------------


def test_compile_stacks_aux_blocks():
    cs = ConstraintSet(3, (Patterns(({0}, {1, 2})), AtMost(1), Patterns(({1, 2},))))
    system = cs.compile()
    assert (system.n, system.aux) == (3, 3)
    assert system.dense().shape == (7 + 1 + 7, 6)
    # {1, 2}: first pattern block selects pattern 1, the second block pattern 0;
    # but AtMost(1) forbids it.
    assert not system.holds([0, 1, 1], [0, 1, 1])
    loose = ConstraintSet(3, (Patterns(({0}, {1, 2})), Patterns(({1, 2},)))).compile()
    assert loose.holds([0, 1, 1], [0, 1, 1])
    assert not loose.holds([0, 1, 1], [1, 0, 1])
    assert loose.holds([0, 0, 0], [0, 0, 0])
    assert not loose.holds([1, 0, 0], [1, 0, 0])  # {0} is not in the second list


def test_compile_unconstrained_has_no_rows():
    system = ConstraintSet(4).compile()
    assert (system.rows, system.n, system.aux) == (0, 4, 0)
    assert system.holds([1, 1, 1, 1])


# --- feasibility ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cs, expected",
    [
        (ConstraintSet(2, (Together((0, 1)), Conflicts(((0, 1),)))), False),
        (ConstraintSet(3, (Together((0, 1)), Conflicts(((0, 1),)))), True),
        (ConstraintSet(3, (AtMost(0),)), False),
        (ConstraintSet(3, (AtMost(0, among=(0, 1)),)), True),
        (ConstraintSet(3, (Patterns(({0, 1},)), AtMost(1))), False),
        (ConstraintSet(3, (Patterns(({0, 1}, {2})), AtMost(1))), True),
        (ConstraintSet(3, (Together((0, 1, 2)), Exclusive((0, 2)))), False),
        (ConstraintSet(1), True),
    ],
)
def test_has_nonempty_allowed(cs, expected):
    assert cs.has_nonempty_allowed() is expected
    assert (len(allowed(cs)) > 1) is expected


def test_has_nonempty_allowed_is_fast_on_large_n():
    n = 10_000
    blocked = ConstraintSet(
        n, (Together(tuple(range(n // 2, n))), AtMost(0, among=tuple(range(n // 2))), AtMost(365))
    )
    start = time.perf_counter()
    assert not blocked.has_nonempty_allowed()
    assert ConstraintSet(n, (AtMost(365),)).has_nonempty_allowed()
    assert time.perf_counter() - start < 2.0


def test_require_nonempty_names_the_blocking_constraints():
    ConstraintSet(3, (AtMost(1),)).require_nonempty()  # fine: no error
    cs = ConstraintSet(3, (Together((0, 1)), Conflicts(((0, 1),)), AtMost(0, among=(2,))))
    with pytest.raises(InfeasibleConstraintsError) as info:
        cs.require_nonempty()
    message = str(info.value)
    assert "no non-empty membership set" in message
    assert "{0, 1} violates constraints[1] (conflicts(edges=((0, 1))))" in message
    assert "{2} violates constraints[2] (at_most(m=0, among=(2,)))" in message
    assert isinstance(info.value, GCEError)


def test_require_nonempty_counts_the_rest():
    cs = ConstraintSet(5, (AtMost(0),))
    with pytest.raises(InfeasibleConstraintsError, match="and 2 more candidate sets"):
        cs.require_nonempty()


def test_require_nonempty_with_patterns():
    cs = ConstraintSet(4, (Patterns(({0, 1}, {2, 3})), Exclusive((0, 1)), Together((2, 3)), AtMost(1)))
    with pytest.raises(InfeasibleConstraintsError) as info:
        cs.require_nonempty()
    assert "{0, 1} violates constraints[1] (exclusive" in str(info.value)
    assert "{2, 3} violates constraints[3] (at_most" in str(info.value)


def test_structure_of_subsidiaries_bounded_pairs():
    # 001, Sec. V-A, Example 2: bounded pairs differ on exactly two databases.
    cs = ConstraintSet(4, (Exclusive(tuple(range(4))),))
    family = allowed(cs)
    largest = max(len(b0 ^ b1) for b0, b1 in combinations(family, 2) if b0 and b1)
    assert largest == 2

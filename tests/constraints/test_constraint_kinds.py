"""Each constraint kind on hand-picked sets, its validation and its structure."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from gce.constraints import AtMost, AtMostBound, Conflicts, Exclusive, Patterns, Together
from gce.errors import InvalidParameterError

S = frozenset


# --- satisfied() on hand-picked sets -------------------------------------------------------------


@pytest.mark.parametrize(
    "constraint, members, expected",
    [
        # 001, Sec. V-A, Example 1 in miniature: at most 2 "hospitals".
        (AtMost(2), S(), True),
        (AtMost(2), S({0, 7}), True),
        (AtMost(2), S({0, 1, 7}), False),
        (AtMost(0), S(), True),
        (AtMost(0), S({3}), False),
        # Only databases in ``among`` count.
        (AtMost(1, among=(1, 2, 3)), S({0, 1, 4, 5}), True),
        (AtMost(1, among=(1, 2, 3)), S({1, 3}), False),
        # 001, Sec. V-A, Example 2: one subsidiary at most.
        (Exclusive((0, 1, 2)), S(), True),
        (Exclusive((0, 1, 2)), S({2, 3, 4}), True),
        (Exclusive((0, 1, 2)), S({0, 2}), False),
        (Together((1, 2, 3)), S(), True),
        (Together((1, 2, 3)), S({0}), True),
        (Together((1, 2, 3)), S({1, 2, 3, 5}), True),
        (Together((1, 2, 3)), S({1, 2}), False),
        (Together((1, 2, 3)), S({3}), False),
        (Conflicts(((0, 1), (1, 2))), S({0, 2}), True),
        (Conflicts(((0, 1), (1, 2))), S({1, 3}), True),
        (Conflicts(((0, 1), (1, 2))), S({0, 1}), False),
        (Conflicts(((0, 1), (1, 2))), S({0, 1, 2}), False),
        (Conflicts(()), S({0, 1, 2}), True),
        # 001, Sec. V-A, Example 3: common + ads, or common + premium.
        (Patterns(({0, 1, 2}, {0, 3})), S(), True),
        (Patterns(({0, 1, 2}, {0, 3})), S({0, 1, 2}), True),
        (Patterns(({0, 1, 2}, {0, 3})), S({3, 0}), True),
        (Patterns(({0, 1, 2}, {0, 3})), S({0, 1}), False),
        (Patterns(({0, 1, 2}, {0, 3})), S({0, 1, 2, 3}), False),
    ],
)
def test_satisfied_on_hand_picked_sets(constraint, members, expected):
    assert constraint.satisfied(members) is expected


def test_satisfied_accepts_plain_sets():
    assert AtMost(1, among=(0, 1)).satisfied({0, 2})
    assert not Together((0, 1)).satisfied({0})
    assert not Patterns(({0, 1},)).satisfied({0})
    assert Patterns(({0, 1},)).satisfied({1, 0})


# --- normalisation at construction ---------------------------------------------------------------


def test_indices_are_sorted_and_numpy_integers_accepted():
    assert Exclusive((3, np.int64(1), 2)).group == (1, 2, 3)
    assert Together([5, 0]).group == (0, 5)
    assert AtMost(np.int32(2), among=[4, 0]) == AtMost(2, among=(0, 4))
    assert type(AtMost(np.int32(2)).m) is int


def test_conflict_edges_are_normalised_in_order():
    assert Conflicts([[2, 1], (0, 3)]).edges == ((1, 2), (0, 3))


def test_patterns_are_frozensets_in_given_order():
    c = Patterns(([2, 0], {1}))
    assert c.allowed == (S({0, 2}), S({1}))


def test_records_are_frozen_and_hashable():
    c = AtMost(2)
    with pytest.raises(AttributeError):
        c.m = 3
    assert len({AtMost(2), AtMost(2), Exclusive((0, 1)), Exclusive((1, 0))}) == 2
    assert hash(Patterns(({0}, {1, 2}))) == hash(Patterns(({0}, {2, 1})))


# --- validation at construction: every error names the field -------------------------------------


@pytest.mark.parametrize(
    "build, field, fragment",
    [
        (lambda: AtMost(-1), "m", "must be an integer >= 0, got -1"),
        (lambda: AtMost(2.5), "m", "got 2.5"),
        (lambda: AtMost(2.0), "m", "got 2.0"),
        (lambda: AtMost(True), "m", "got True"),
        (lambda: AtMost("3"), "m", "got '3'"),
        (lambda: AtMost(1, among=()), "among", "at least one database"),
        (lambda: AtMost(1, among=(0, 2, 0)), "among", "lists database 0 more than once"),
        (lambda: AtMost(1, among=(-1,)), "among", "got -1"),
        (lambda: AtMost(1, among="north"), "among", "collection of database indices or names"),
        (lambda: Exclusive(()), "group", "at least one database"),
        (lambda: Exclusive((1, 1)), "group", "lists database 1 more than once"),
        (lambda: Exclusive((0, 1.0)), "group", "got 1.0"),
        (lambda: Exclusive(3), "group", "got 3"),
        (lambda: Together([]), "group", "at least one database"),
        (lambda: Together((2, -4)), "group", "got -4"),
        (lambda: Conflicts(((0, 1), (2, 2))), "edges[1]", "self-loop on database 2"),
        (lambda: Conflicts(((0, 1), (1, 0))), "edges[1]", "repeats edges[0] = (0, 1)"),
        (lambda: Conflicts(((0, 1, 2),)), "edges[0]", "pair of database indices"),
        (lambda: Conflicts(("01",)), "edges[0]", "pair of database indices"),
        (lambda: Conflicts(((0, -1),)), "edges[0]", "got -1"),
        (lambda: Conflicts(7), "edges", "collection of pairs"),
        (lambda: Patterns(()), "allowed", "at least one non-empty set"),
        (lambda: Patterns(({0}, set())), "allowed[1]", "at least one database"),
        (lambda: Patterns(({0, 1}, {1, 0})), "allowed[1]", "repeats allowed[0]"),
        (lambda: Patterns(([0, 0],)), "allowed[0]", "lists database 0 more than once"),
        (lambda: Patterns("ab"), "allowed", "collection of sets"),
    ],
)
def test_construction_errors_name_the_field(build, field, fragment):
    with pytest.raises(InvalidParameterError) as info:
        build()
    assert info.value.field == field
    assert fragment in str(info.value)
    assert str(info.value).startswith(f"{field}: ")


def test_error_can_be_prefixed_with_the_constraint_label():
    with pytest.raises(InvalidParameterError) as info:
        AtMost(-1)
    prefixed = info.value.within(f"constraints[2] ({AtMost.kind})")
    assert str(prefixed) == "constraints[2] (at_most).m: must be an integer >= 0, got -1"


@pytest.mark.parametrize(
    "constraint, field",
    [
        (AtMost(1, among=(0, 4)), "among"),
        (Exclusive((0, 4)), "group"),
        (Together((4,)), "group"),
        (Conflicts(((0, 1), (3, 4))), "edges[1]"),
        (Patterns(({0}, {1, 4})), "allowed[1]"),
    ],
)
def test_validate_rejects_indices_out_of_range(constraint, field):
    with pytest.raises(InvalidParameterError) as info:
        constraint.validate(4)
    assert info.value.field == field
    assert "database 4 is out of range [0, 4)" in str(info.value)
    constraint.validate(5)  # fits five databases


def test_at_most_all_databases_fits_any_n():
    AtMost(3).validate(1)


# --- describe() ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "constraint, text",
    [
        (AtMost(365), "at_most(m=365, among=all)"),
        (AtMost(1, among=(3, 1)), "at_most(m=1, among=(1, 3))"),
        (Exclusive((2,)), "exclusive(group=(2,))"),
        (Together((0, 1)), "together(group=(0, 1))"),
        (Conflicts(((0, 1),)), "conflicts(edges=((0, 1)))"),
        (Patterns(({1, 0}, {2})), "patterns(allowed=({0, 1}, {2}))"),
        (Exclusive(tuple(range(100))), "exclusive(group=(0, 1, 2, 3, 4, 5, 6, ..., 99; 100 databases))"),
    ],
)
def test_describe(constraint, text):
    assert constraint.describe() == text
    assert constraint.describe().startswith(constraint.kind + "(")


def test_describe_elides_long_edge_and_pattern_lists():
    edges = Conflicts.from_graph(nx.path_graph(10)).describe()
    assert edges.endswith("...; 9 edges))")
    patterns = Patterns(tuple({i} for i in range(5))).describe()
    assert patterns.endswith("...; 5 sets))")


# --- networkx -----------------------------------------------------------------------------------


def test_conflicts_from_graph_and_back():
    graph = nx.cycle_graph(4)
    c = Conflicts.from_graph(graph)
    assert set(c.edges) == {(0, 1), (1, 2), (2, 3), (0, 3)}
    assert nx.utils.edges_equal(c.graph().edges, graph.edges)


def test_conflicts_from_directed_and_multi_graphs_dedupes():
    directed = nx.DiGraph([(0, 1), (1, 0), (2, 1)])
    assert Conflicts.from_graph(directed).edges == ((0, 1), (1, 2))
    multi = nx.MultiGraph([(0, 1), (0, 1), (1, 2)])
    assert Conflicts.from_graph(multi).edges == ((0, 1), (1, 2))


def test_conflicts_from_graph_rejects_bad_nodes():
    with pytest.raises(InvalidParameterError, match="self-loop"):
        Conflicts.from_graph(nx.Graph([(1, 1)]))
    with pytest.raises(InvalidParameterError) as info:
        Conflicts.from_graph(nx.Graph([(0, 1), ("a", 2)]))
    assert info.value.field == "edges[1]"


def test_conflicts_from_edgeless_graph_is_vacuous():
    graph = nx.empty_graph(3)
    c = Conflicts.from_graph(graph)
    assert c.edges == ()
    assert c.is_vacuous(3)


# --- structural views ---------------------------------------------------------------------------


def test_is_vacuous():
    assert AtMost(3).is_vacuous(3) and not AtMost(2).is_vacuous(3)
    assert AtMost(2, among=(0, 1)).is_vacuous(10)
    assert Exclusive((4,)).is_vacuous(5) and not Exclusive((0, 4)).is_vacuous(5)
    assert Together((4,)).is_vacuous(5) and not Together((3, 4)).is_vacuous(5)
    every_set = Patterns(({0}, {1}, {0, 1}))
    assert every_set.is_vacuous(2) and not every_set.is_vacuous(3)


def test_at_most_bounds():
    assert AtMost(2).at_most_bounds(3) == (AtMostBound(S({0, 1, 2}), 2),)
    assert AtMost(0, among=(4,)).at_most_bounds(9) == (AtMostBound(S({4}), 0),)
    assert Exclusive((1, 3)).at_most_bounds(5) == (AtMostBound(S({1, 3}), 1),)
    assert Together((1, 3)).at_most_bounds(5) == ()
    assert Conflicts(((0, 1),)).at_most_bounds(5) == ()
    assert Patterns(({0},)).at_most_bounds(5) == ()


def test_conflict_edges():
    assert list(Exclusive((0, 2, 3)).conflict_edges(5)) == [(0, 2), (0, 3), (2, 3)]
    assert list(AtMost(1, among=(1, 4)).conflict_edges(5)) == [(1, 4)]
    assert list(AtMost(0).conflict_edges(3)) == [(0, 1), (0, 2), (1, 2)]
    assert list(AtMost(2).conflict_edges(5)) == []
    assert list(Conflicts(((3, 1),)).conflict_edges(5)) == [(1, 3)]
    assert list(Together((0, 1)).conflict_edges(5)) == []


def test_together_groups_and_explicit_sets():
    assert Together((2, 0)).together_groups() == (S({0, 2}),)
    assert Exclusive((2, 0)).together_groups() == ()
    assert Patterns(({1}, {0, 2})).explicit_sets() == (S({1}), S({0, 2}))
    assert AtMost(1).explicit_sets() is None


def test_hereditary_flags():
    assert all(k.hereditary for k in (AtMost, Exclusive, Together, Conflicts))
    assert not Patterns.hereditary

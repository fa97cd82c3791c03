"""The scenario-file form of constraints (docs/design.md, "Scenario files and the command line")."""

from __future__ import annotations

import tomllib

import pytest

from gce.constraints import AtMost, Conflicts, ConstraintSet, Exclusive, Patterns, Together
from gce.files.constraints import (
    CONSTRAINT_KINDS,
    constraint_from_dict,
    constraint_set_from_dicts,
    constraint_to_dict,
)
from gce.errors import InvalidParameterError, InvalidScenarioError

SCENARIO = """
databases = 6

[[constraints]]
kind = "at_most"
m = 3

[[constraints]]
kind = "at_most"
m = 1
among = [4, 5]

[[constraints]]
kind = "exclusive"
databases = [0, 1, 2]

[[constraints]]
kind = "together"
databases = [2, 3]

[[constraints]]
kind = "conflicts"
edges = [[0, 3], [5, 1]]

[[constraints]]
kind = "patterns"
allowed = [[0], [2, 3], [1, 5], [2, 3, 4]]

[[constraints]]
kind = "at_most"
m = 2
among = "all"
"""


def test_reads_a_scenario_file():
    data = tomllib.loads(SCENARIO)
    cs = constraint_set_from_dicts(data["databases"], data["constraints"])
    assert cs == ConstraintSet(
        6,
        (
            AtMost(3),
            AtMost(1, among=(4, 5)),
            Exclusive((0, 1, 2)),
            Together((2, 3)),
            Conflicts(((0, 3), (1, 5))),
            Patterns(({0}, {2, 3}, {1, 5}, {2, 3, 4})),
            AtMost(2),
        ),
    )
    # {1, 5} breaks the conflict edge; {2, 3, 4} is three databases, over the last bound.
    assert set(cs.allowed_sets()) == {frozenset(), frozenset({0}), frozenset({2, 3})}


@pytest.mark.parametrize(
    "table",
    [
        {"kind": "at_most", "m": 365},
        {"kind": "at_most", "m": 0, "among": [2, 7]},
        {"kind": "exclusive", "databases": [1, 4, 9]},
        {"kind": "together", "databases": [0, 3]},
        {"kind": "conflicts", "edges": [[0, 1], [2, 5]]},
        {"kind": "conflicts", "edges": []},
        {"kind": "patterns", "allowed": [[0, 1, 2], [0, 3]]},
    ],
)
def test_round_trip_from_file_form(table):
    constraint = constraint_from_dict(table, 0)
    assert constraint.kind == table["kind"]
    assert constraint_to_dict(constraint) == table
    assert constraint_from_dict(constraint_to_dict(constraint), 0) == constraint


@pytest.mark.parametrize(
    "constraint, table",
    [
        (AtMost(3, among=(5, 1)), {"kind": "at_most", "m": 3, "among": [1, 5]}),
        (AtMost(3), {"kind": "at_most", "m": 3}),
        (Together((4, 2)), {"kind": "together", "databases": [2, 4]}),
        (Patterns(({3, 1},)), {"kind": "patterns", "allowed": [[1, 3]]}),
        (Conflicts(((3, 1),)), {"kind": "conflicts", "edges": [[1, 3]]}),
    ],
)
def test_round_trip_from_records(constraint, table):
    assert constraint_to_dict(constraint) == table
    assert constraint_from_dict(table, 0) == constraint


def test_among_all_is_the_default():
    assert constraint_from_dict({"kind": "at_most", "m": 2, "among": "all"}, 0) == AtMost(2)


def test_every_kind_has_a_file_form():
    assert set(CONSTRAINT_KINDS) == {"at_most", "exclusive", "together", "conflicts", "patterns"}
    for kind, spec in CONSTRAINT_KINDS.items():
        assert spec.record.kind == kind


@pytest.mark.parametrize(
    "table, field, fragment",
    [
        ({"kind": "at_most", "m": -1}, "constraints[3].m", "must be an integer >= 0, got -1"),
        ({"kind": "at_most", "m": "3"}, "constraints[3].m", 'must be an integer, got "3"'),
        ({"kind": "at_most", "m": 1.5}, "constraints[3].m", "must be an integer, got 1.5"),
        ({"kind": "at_most", "m": True}, "constraints[3].m", "must be an integer, got true"),
        ({"kind": "at_most"}, "constraints[3].m", 'is missing (required for kind "at_most")'),
        ({"kind": "at_most", "m": 1, "among": "some"}, "constraints[3].among", 'must be "all" or a list'),
        ({"kind": "at_most", "m": 1, "among": [0, "a"]}, "constraints[3].among[1]", 'got "a"'),
        ({"kind": "at_most", "m": 1, "among": []}, "constraints[3].among", "at least one database"),
        ({"kind": "at_most", "m": 1, "databases": [0]}, "constraints[3].databases", 'is not a key of kind "at_most"'),
        ({"m": 1}, "constraints[3].kind", "is missing"),
        ({"kind": "at_least", "m": 1}, "constraints[3].kind", 'unknown kind "at_least"'),
        ({"kind": 3}, "constraints[3].kind", "unknown kind 3"),
        ({"kind": "exclusive"}, "constraints[3].databases", "is missing"),
        ({"kind": "exclusive", "databases": 3}, "constraints[3].databases", "must be a list of database indices"),
        ({"kind": "exclusive", "databases": [0, 0]}, "constraints[3].databases", "lists database 0 more than once"),
        ({"kind": "exclusive", "databases": [-2]}, "constraints[3].databases", "got -2"),
        ({"kind": "exclusive", "group": [0, 1]}, "constraints[3].group", 'is not a key of kind "exclusive"'),
        ({"kind": "together", "databases": []}, "constraints[3].databases", "at least one database"),
        ({"kind": "conflicts", "edges": [[0, 1], [2]]}, "constraints[3].edges[1]", "pair of database indices"),
        ({"kind": "conflicts", "edges": [[0, 0]]}, "constraints[3].edges[0]", "self-loop"),
        ({"kind": "conflicts", "edges": [[0, 1], [1, 0]]}, "constraints[3].edges[1]", "repeats edges[0]"),
        ({"kind": "conflicts", "edges": [[0, 1.0]]}, "constraints[3].edges[0][1]", "got 1.0"),
        ({"kind": "conflicts", "edges": "0-1"}, "constraints[3].edges", "must be a list of lists"),
        ({"kind": "patterns", "allowed": []}, "constraints[3].allowed", "at least one non-empty set"),
        ({"kind": "patterns", "allowed": [[0], []]}, "constraints[3].allowed[1]", "at least one database"),
        ({"kind": "patterns", "allowed": [0, 1]}, "constraints[3].allowed[0]", "must be a list"),
    ],
)
def test_errors_name_the_field_in_the_file(table, field, fragment):
    with pytest.raises(InvalidScenarioError) as info:
        constraint_from_dict(table, 3)
    assert info.value.field == field
    assert str(info.value).startswith(f"{field}: ")
    assert fragment in info.value.detail


def test_a_table_that_is_not_a_mapping():
    with pytest.raises(InvalidScenarioError) as info:
        constraint_from_dict(["at_most", 3], 1)
    assert info.value.field == "constraints[1]"


@pytest.mark.parametrize(
    "table, field",
    [
        ({"kind": "at_most", "m": 1, "among": [0, 6]}, "constraints[0].among"),
        ({"kind": "exclusive", "databases": [6]}, "constraints[0].databases"),
        ({"kind": "together", "databases": [0, 9]}, "constraints[0].databases"),
        ({"kind": "conflicts", "edges": [[0, 1], [0, 6]]}, "constraints[0].edges[1]"),
        ({"kind": "patterns", "allowed": [[0], [7]]}, "constraints[0].allowed[1]"),
    ],
)
def test_range_errors_use_file_keys_when_n_is_known(table, field):
    constraint_from_dict(table, 0)  # fine without n
    with pytest.raises(InvalidScenarioError) as info:
        constraint_from_dict(table, 0, n=6)
    assert info.value.field == field
    assert "out of range [0, 6)" in str(info.value)


def test_constraint_set_from_dicts_errors():
    with pytest.raises(InvalidScenarioError) as info:
        constraint_set_from_dicts(4, [{"kind": "at_most", "m": 1}, {"kind": "exclusive", "databases": [1, 4]}])
    assert str(info.value) == "constraints[1].databases: database 4 is out of range [0, 4)"
    with pytest.raises(InvalidScenarioError, match="^databases: must be an integer >= 1, got 0"):
        constraint_set_from_dicts(0, [])
    with pytest.raises(InvalidScenarioError, match="^constraints: must be a list of tables"):
        constraint_set_from_dicts(3, {"kind": "at_most", "m": 1})


def test_scenario_errors_are_parameter_errors():
    # Callers that catch InvalidParameterError (a ValueError) see file errors too.
    with pytest.raises(InvalidParameterError):
        constraint_from_dict({"kind": "at_most", "m": -1}, 0)
    with pytest.raises(ValueError):
        constraint_from_dict({"kind": "at_most", "m": -1}, 0)

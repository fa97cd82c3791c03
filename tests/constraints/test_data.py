"""Membership limits estimated from data (001, Sec. V-A, "General case": the store chain)."""

from __future__ import annotations

import csv
import random

import pytest

from gce.constraints import AtMost, ConstraintSet, MembershipEstimate, Patterns, estimate_membership
from gce.errors import InvalidParameterError
from gce.model import Databases

N_BRANCHES = 12


def store_chain(seed: int = 7, customers: int = 400, most: int = 6):
    """Random purchases: each customer buys from 1..most-1 branches, one customer from exactly ``most``,
    with repeated purchases (duplicate rows). Returns the rows and each customer's set of branches."""
    rng = random.Random(seed)
    memberships = {f"c{k:04d}": set(rng.sample(range(N_BRANCHES), rng.randint(1, most - 1)))
                   for k in range(customers)}
    memberships["c0137"] = set(rng.sample(range(N_BRANCHES), most))
    rows = [(who, branch) for who, branches in memberships.items() for branch in branches]
    rows += rng.sample(rows, 50)  # repeat purchases
    rng.shuffle(rows)
    return rows, memberships


def write_csv(path, rows, header=("customer", "branch")):
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        if header:
            writer.writerow(header)
        writer.writerows(rows)
    return path


def test_generated_table_gives_the_exact_maximum_and_patterns():
    rows, memberships = store_chain()
    est = estimate_membership(rows, N_BRANCHES, patterns=True)
    assert est.at_most == AtMost(6)
    assert est.individuals == len(memberships) and est.rows == len(rows) and est.n == N_BRANCHES
    assert set(est.patterns.allowed) == {frozenset(s) for s in memberships.values()}
    assert [len(p) for p in est.patterns.allowed] == sorted(len(p) for p in est.patterns.allowed)
    # Every observed customer satisfies the estimated constraints; the patterns are exactly those sets.
    constraints = est.constraint_set()
    assert all(constraints.satisfied(s) for s in memberships.values())
    assert not constraints.satisfied(frozenset(range(7)))


@pytest.mark.parametrize("seed", range(5))
def test_maximum_matches_a_direct_count(seed):
    rows, memberships = store_chain(seed=seed, most=2 + seed)
    assert estimate_membership(rows, N_BRANCHES).at_most.m == max(len(s) for s in memberships.values()) == 2 + seed


@pytest.mark.parametrize("header", [("customer", "branch"), None])
def test_csv_and_iterable_agree(tmp_path, header):
    rows, _ = store_chain()
    path = write_csv(tmp_path / "members.csv", rows, header)
    from_file = estimate_membership(path, N_BRANCHES, patterns=True)
    from_rows = estimate_membership(rows, N_BRANCHES, patterns=True, label=str(path))
    assert from_file == from_rows
    assert from_file.source == str(path)


def test_statement_says_it_was_estimated(tmp_path):
    rows, memberships = store_chain()
    path = write_csv(tmp_path / "members.csv", rows)
    est = estimate_membership(str(path), N_BRANCHES)
    assert est.patterns is None and est.constraints == (AtMost(6),)
    assert est.statement == (
        f"at_most 6 estimated from data: the largest number of databases one of {len(memberships)} individuals "
        f"appears in in {path}; a future individual may exceed it.")
    with_patterns = estimate_membership(str(path), N_BRANCHES, patterns=True, label="members.csv")
    assert "patterns estimated from data" in with_patterns.statement
    assert "an individual with another set is not covered" in with_patterns.statement
    d = with_patterns.to_dict()
    assert d["at_most"] == 6 and d["individuals"] == len(memberships) and d["statement"] == with_patterns.statement


def test_thousands_are_written_with_separators():
    rows = [(k, k % 3) for k in range(10_000)] + [(0, 1), (0, 2)]
    est = estimate_membership(rows, 3, label="members.csv")
    assert est.at_most.m == 3
    assert est.statement.startswith("at_most 3 estimated from data: the largest number of databases one of "
                                    "10,000 individuals appears in in members.csv")


# --- database ids ----------------------------------------------------------------------------------


def test_database_names_and_mappings(tmp_path):
    rows = [("ann", "north"), ("ann", "south"), ("bob", "east")]
    by_names = estimate_membership(rows, ["north", "south", "east"], patterns=True)
    by_databases = estimate_membership(rows, Databases(3, ("north", "south", "east")), patterns=True)
    by_mapping = estimate_membership(rows, {"north": 0, "south": 1, "east": 2}, patterns=True)
    assert by_names == by_databases == by_mapping
    assert set(by_names.patterns.allowed) == {frozenset({0, 1}), frozenset({2})}
    # CSV cells are matched against str(id) of a mapping's keys.
    path = write_csv(tmp_path / "m.csv", [("ann", 101), ("ann", 102), ("bob", 102)], header=None)
    est = estimate_membership(path, {101: 0, 102: 1}, patterns=True)
    assert est.at_most.m == 2 and est.n == 2


def test_named_databases_also_accept_indices_in_csv(tmp_path):
    path = write_csv(tmp_path / "m.csv", [("ann", "north"), ("ann", "2")], header=("who", "where"))
    est = estimate_membership(path, Databases(3, ("north", "south", "east")))
    assert est.at_most.m == 2 and est.rows == 2


# --- errors name the row ----------------------------------------------------------------------------


def test_unknown_database_names_the_csv_line(tmp_path):
    path = tmp_path / "members.csv"
    lines = ["customer,branch"] + [f"c{k},{k % 3}" for k in range(15)] + ["c99,7"] + ["c1,0"]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InvalidParameterError) as info:
        estimate_membership(path, 3, label="members.csv")
    assert info.value.field == "members.csv line 17"
    assert str(info.value) == ("members.csv line 17: field 2 (database): not a known database id "
                               "(known ids: '0', '1', '2')")  # the file's cell is never quoted


def test_malformed_rows_name_the_line(tmp_path):
    path = tmp_path / "members.csv"
    path.write_text("c1,0\n\nc2,1\nc3,1,extra\n")
    with pytest.raises(InvalidParameterError, match=r"members.csv line 4: expected 2 fields"):
        estimate_membership(path, 3, label="members.csv")
    path.write_text("c1,0\nc2\n")
    with pytest.raises(InvalidParameterError, match=r"line 2: expected 2 fields"):
        estimate_membership(path, 3)
    path.write_text("c1,0\n ,1\n")
    with pytest.raises(InvalidParameterError, match=r"line 2: field 1 \(individual\): the individual id is empty"):
        estimate_membership(path, 3)


def test_quoted_fields_and_line_numbers(tmp_path):
    path = tmp_path / "members.csv"
    path.write_text('id,db\n"Smith, Ann",0\n"multi\nline",1\n"x",9\n')
    with pytest.raises(InvalidParameterError, match=r"line 5: field 2 \(database\): not a known database id"):
        estimate_membership(path, 3)


def test_header_detection(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("c1,5\nc1,0\n")  # an unknown index in the first row is an error, not a header
    with pytest.raises(InvalidParameterError, match=r"line 1: field 2 \(database\): not a known"):
        estimate_membership(path, 3)
    path.write_text("c1,0\nc1,1\n")  # a known id in the first row: data
    assert estimate_membership(path, 3).rows == 2
    assert estimate_membership(path, 3, header=True).rows == 1
    path.write_text("customer,branch\nc1,0\n")
    with pytest.raises(InvalidParameterError, match=r"line 1: field 2 \(database\): not a known"):
        estimate_membership(path, 3, header=False)


def test_numpy_rows_are_pairs():
    import numpy as np

    rows, memberships = store_chain()
    ids = {who: k for k, who in enumerate(memberships)}
    table = np.array([(ids[who], branch) for who, branch in rows])
    assert estimate_membership(table, N_BRANCHES, patterns=True) == estimate_membership(
        [(ids[who], branch) for who, branch in rows], N_BRANCHES, patterns=True)


def test_iterable_errors_name_the_row():
    with pytest.raises(InvalidParameterError) as info:
        estimate_membership([("a", 0), ("b", 1), ("c", 5)], 3)
    assert info.value.field == "rows[2]"
    with pytest.raises(InvalidParameterError, match=r"sales\[1\]: must be a pair"):
        estimate_membership([("a", 0), ("b", 1, 2)], 3, label="sales")
    with pytest.raises(InvalidParameterError, match=r"rows\[0\]: must be a pair"):
        estimate_membership(["a0"], 3)


def test_empty_tables_and_bad_arguments(tmp_path):
    with pytest.raises(InvalidParameterError, match="rows: has no membership rows"):
        estimate_membership([], 3)
    path = tmp_path / "empty.csv"
    path.write_text("customer,branch\n\n")
    with pytest.raises(InvalidParameterError, match="has no membership rows"):
        estimate_membership(path, 3)
    with pytest.raises(InvalidParameterError, match="cannot be read"):
        estimate_membership(tmp_path / "missing.csv", 3)
    with pytest.raises(InvalidParameterError, match="databases"):
        estimate_membership([("a", 0)], 0)
    with pytest.raises(InvalidParameterError, match="databases"):
        estimate_membership([("a", "x")], ["x", "x"])
    with pytest.raises(InvalidParameterError, match="table"):
        estimate_membership(42, 3)


def test_the_record_is_validated():
    with pytest.raises(InvalidParameterError, match="at_most"):
        MembershipEstimate(AtMost(4), None, individuals=1, rows=1, n=3, source="x")
    with pytest.raises(InvalidParameterError, match="patterns"):
        MembershipEstimate(AtMost(2), Patterns(({0},)), individuals=1, rows=1, n=3, source="x")
    with pytest.raises(InvalidParameterError, match="individuals"):
        MembershipEstimate(AtMost(1), None, individuals=0, rows=0, n=3, source="x")


def test_estimated_constraints_feed_a_scenario():
    # The store chain end to end: the estimate bounds how many branch queries one customer can affect.
    from gce.accounting.guarantees import PureDP
    from gce.model import Invocation, Scenario
    from gce.solving import solve

    rows, _ = store_chain()
    est = estimate_membership(rows, N_BRANCHES)
    scenario = Scenario(N_BRANCHES, tuple(Invocation(b, PureDP(0.1)) for b in range(N_BRANCHES)),
                        est.constraint_set())
    assert solve(scenario, delta=0.0).epsilon == pytest.approx(0.6)
    assert isinstance(est.constraint_set(), ConstraintSet)


# --- reading files: the same rows as open(newline=""), in pieces; bad bytes named by line ----------


@pytest.mark.parametrize("piece", [1, 3, 7, 2**20])
@pytest.mark.parametrize("content", [
    b"c,db\nann,0\r\nbob,1\rcyd,2\n",
    b'id,db\n"Smith, Ann",0\n"multi\nline\r\nid",1\n"x",2',
    b"\xef\xbb\xbfwho,where\nann,0\n\n\nbob,1\n",
    "\u00fcnï,0\n\u65e5\u672c,1\n".encode(),
])
def test_csv_pieces_give_the_lines_open_gives(tmp_path, monkeypatch, piece, content):
    import gce.constraints.data as data

    monkeypatch.setattr(data, "_PIECE", piece)
    path = tmp_path / "m.csv"
    path.write_bytes(content)
    with open(path, newline="", encoding="utf-8-sig") as handle:
        expected = list(csv.reader(handle))
    with open(path, "rb") as handle:
        reader = csv.reader(data._text_lines(handle, "m.csv"))
        assert list(reader) == expected
    assert estimate_membership(path, 3, header=None).rows >= 2


@pytest.mark.parametrize("piece", [2, 2**20])
def test_a_line_that_is_not_utf8_is_named_not_shown(tmp_path, monkeypatch, piece):
    import gce.constraints.data as data

    monkeypatch.setattr(data, "_PIECE", piece)
    path = tmp_path / "m.csv"
    path.write_bytes(b"ann,0\r\nbob,1\rcyd,2\n\"multi\nline\",1\nsecret\xff\xfe,2\n")
    with pytest.raises(InvalidParameterError) as info:
        estimate_membership(path, 3)
    assert str(info.value) == f"{path} line 6: is not UTF-8 text (byte 7 of the line)"

"""Membership tables read by the DuckDB engine (gce.constraints.tables), against a plain Python recount."""

from __future__ import annotations

import csv
import random
import re
import sqlite3
from collections import Counter

import duckdb
import pytest

import tiers
from gce.constraints.tables import MembershipTable, membership_statistics
from gce.errors import InvalidParameterError, InvalidScenarioError
from gce.files.scenario import load_scenario


def random_rows(seed: int) -> tuple[list[tuple[str, str]], list[str]]:
    """Rows (customer, branch name) with duplicates; the branch names."""
    rng = random.Random(seed)
    names = [f"b{i}" for i in range(rng.randint(1, 8))]
    rows = []
    for person in range(rng.randint(1, 40)):
        for _ in range(rng.randint(1, 6)):
            rows.append((f"p{person}", rng.choice(names)))
    rows += rng.sample(rows, k=len(rows) // 4)  # duplicates
    rng.shuffle(rows)
    return rows, names


def recount(rows, names) -> tuple[dict[int, int], Counter]:
    """The histogram and the pattern counts, by hand."""
    members: dict[str, set[int]] = {}
    for person, branch in rows:
        members.setdefault(person, set()).add(names.index(branch))
    histogram = Counter(len(s) for s in members.values())
    return dict(sorted(histogram.items())), Counter(frozenset(s) for s in members.values())


def write_csv(path, rows, header=True):
    with open(path, "w", newline="") as handle:
        out = csv.writer(handle)
        if header:
            out.writerow(["customer", "branch"])
        out.writerows(rows)


def to_parquet(csv_path, parquet_path):
    con = duckdb.connect()
    con.execute(f"copy (select * from read_csv('{csv_path}', all_varchar = true)) to '{parquet_path}' "
                f"(format parquet)")
    con.close()


@tiers.parametrize("seed", range(40), default=2)
def test_statistics_equal_a_python_recount(tmp_path, seed):
    rows, names = random_rows(seed)
    histogram, patterns = recount(rows, names)
    write_csv(tmp_path / "m.csv", rows, header=seed % 2 == 0)
    to_parquet(tmp_path / "m.csv", tmp_path / "m.parquet") if seed % 2 == 0 else None
    tables = [MembershipTable((str(tmp_path / "m.csv"),))]
    if seed % 2 == 0:
        tables.append(MembershipTable((str(tmp_path / "m.parquet"),)))
    for table in tables:
        stats = membership_statistics(table, names, patterns=True)
        assert stats.histogram == histogram
        assert stats.rows == len(rows)
        assert dict(stats.patterns) == patterns
        estimate = stats.estimate()
        assert estimate.at_most.m == max(histogram)
        assert estimate.individuals == len({p for p, _ in rows})


def test_a_glob_of_parquet_files_and_the_database_queries(tmp_path):
    rows, names = random_rows(3)
    histogram, _ = recount(rows, names)
    half = len(rows) // 2
    for i, part in enumerate((rows[:half], rows[half:])):
        write_csv(tmp_path / f"p{i}.csv", part)
        to_parquet(tmp_path / f"p{i}.csv", tmp_path / f"p{i}.parquet")
    files = (str(tmp_path / "p0.parquet"), str(tmp_path / "p1.parquet"))
    assert membership_statistics(MembershipTable(files), names).histogram == histogram
    con = duckdb.connect(str(tmp_path / "crm.duckdb"))
    con.execute(f"create table purchases as select * from read_parquet({list(files)})")
    con.close()
    lite = sqlite3.connect(tmp_path / "crm.sqlite")
    lite.execute("create table purchases (customer, branch, amount)")
    lite.executemany("insert into purchases values (?, ?, 1)", rows)
    lite.commit()
    lite.close()
    for database in ("crm.duckdb", "crm.sqlite"):
        table = MembershipTable(database=str(tmp_path / database), query="select customer, branch from purchases")
        assert membership_statistics(table, names).histogram == histogram


def test_a_query_reads_nothing_but_its_database(tmp_path):
    con = duckdb.connect(str(tmp_path / "crm.duckdb"))
    con.execute("create table t as select 'ann' as c, 0 as b")
    con.close()
    (tmp_path / "secret.csv").write_text("ann,0\n")
    table = MembershipTable(database=str(tmp_path / "crm.duckdb"),
                            query=f"select * from read_csv('{tmp_path / 'secret.csv'}')")
    with pytest.raises(InvalidParameterError, match="file system operations are disabled"):
        membership_statistics(table, 1)


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_missing_and_unknown_values_name_the_file_and_the_value(tmp_path, kind):
    cases = {"no individual id (one with database 'b1')": [("ann", "b0"), ("", "b1")],
             "one has unknown database 'b9' (individual 'bob'": [("ann", "b0"), ("bob", "b9")],
             "one has no database id (individual 'bob'": [("ann", "b0"), ("bob", "")]}
    for message, rows in cases.items():
        write_csv(tmp_path / "m.csv", rows)
        path = tmp_path / "m.csv"
        if kind == "parquet":
            to_parquet(path, tmp_path / "m.parquet")  # empty strings stay strings: make them nulls
            con = duckdb.connect()
            con.execute(f"copy (select nullif(customer, '') as customer, nullif(branch, '') as branch from "
                        f"'{tmp_path / 'm.parquet'}') to '{tmp_path / 'n.parquet'}' (format parquet)")
            con.close()
            path = tmp_path / "n.parquet"
        with pytest.raises(InvalidParameterError, match=re.escape(message)) as caught:
            membership_statistics(MembershipTable((str(path),), label=path.name), ["b0", "b1"])
        assert caught.value.field == path.name


def test_too_many_patterns_is_a_clear_error(tmp_path):
    write_csv(tmp_path / "m.csv", [("a", "0"), ("b", "1"), ("c", "2")])
    with pytest.raises(InvalidParameterError, match="3 distinct membership sets, more than 2"):
        membership_statistics(MembershipTable((str(tmp_path / "m.csv"),)), 3, patterns=True, max_patterns=2)


def test_integer_database_columns_and_extra_columns(tmp_path):
    con = duckdb.connect()
    con.execute(f"copy (select 'p' || (i % 7) as who, (i % 5)::integer as branch, i as amount from range(100) t(i)) "
                f"to '{tmp_path / 'm.parquet'}' (format parquet)")
    con.close()
    table = MembershipTable((str(tmp_path / "m.parquet"),), label="m.parquet")
    with pytest.raises(InvalidParameterError, match="has 3 columns"):
        membership_statistics(table, 5)
    named = MembershipTable((str(tmp_path / "m.parquet"),), columns=("who", "branch"))
    stats = membership_statistics(named, 5)
    # person i % 7 meets branch i % 5 for i < 100: each of the 7 people sees all 5 branches (i and i + 7k)
    assert stats.histogram == {5: 7} and stats.rows == 100


# ---------------------------------------------------------------------------
# The scenario keys: source, database and query; paths confined to the scenario's folder

SCENARIO = """databases = ["b0", "b1", "b2"]
delta = 1e-6
[[invocations]]
databases = "all"
mechanism = {{ kind = "gaussian", sigma = 4.0 }}
[[constraints]]
kind = "from_data"
{keys}
"""


def scenario(folder, keys: str):
    path = folder / "s.toml"
    path.write_text(SCENARIO.format(keys=keys))
    return path


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A scenario folder ``inside`` (m.csv, m.parquet, m.json, link.parquet leading out) and files beside it."""
    tmp_path = tmp_path_factory.mktemp("store")
    inside = tmp_path / "inside"
    inside.mkdir()
    (inside / "m.json").write_text("{}")
    write_csv(inside / "m.csv", [("ann", "b0"), ("ann", "b2"), ("bob", "b1"), ("ann", "b2")])
    to_parquet(inside / "m.csv", inside / "m.parquet")
    to_parquet(inside / "m.csv", tmp_path / "outside.parquet")
    con = duckdb.connect(str(tmp_path / "out.duckdb"))
    con.execute("create table t as select 'ann' as c, 'b0' as b")
    con.close()
    (inside / "link.parquet").symlink_to(tmp_path / "outside.parquet")
    return inside


def test_source_and_database_keys_give_the_same_estimate_as_file(store):
    con = duckdb.connect(str(store / "crm.duckdb"))
    con.execute(f"create table purchases as select * from '{store / 'm.parquet'}'")
    con.close()
    notes = []
    for keys in ('file = "m.csv"', 'source = "m.csv"', 'source = "m.parquet"', 'source = "m*.parquet"',
                 'database = "crm.duckdb"\nquery = "select customer, branch from purchases"'):
        loaded = load_scenario(scenario(store, keys))
        assert loaded.constraints.constraints[0].m == 2
        notes.append(loaded.notes[0])
    assert notes[0].startswith("at_most 2 estimated from data: the largest number of databases one of 2 "
                               "individuals appears in in m.csv;")
    assert [n.replace("crm.duckdb", "m.csv").replace("m*.parquet", "m.csv").replace("m.parquet", "m.csv")
            for n in notes] == [notes[0]] * 5
    enforced = load_scenario(scenario(store, 'source = "m.parquet"\nenforced = true'))
    assert enforced.notes[0].startswith("at_most 2 enforced by truncation: m.parquet keeps at most 2 databases")


@tiers.parametrize("keys, field", default=[0, 1, 3], cases=[
    ('source = "../outside.parquet"', "constraints[0].source"),
    ('source = "../*.parquet"', "constraints[0].source"),
    ('source = "../inside/../*.parquet"', "constraints[0].source"),
    ('database = "../out.duckdb"\nquery = "select * from t"', "constraints[0].database"),
    ('source = "link.parquet"', "constraints[0].source"),
])
def test_paths_are_confined_to_the_scenario_folder(store, keys, field):
    with pytest.raises(InvalidScenarioError, match="is outside the scenario's folder") as caught:
        load_scenario(scenario(store, keys))
    assert caught.value.field == field
    load_scenario(scenario(store, keys), allow_outside_files=True)  # lifted when allowed


@tiers.parametrize("keys, field, message", default=[0, 1, 3, 5], cases=[
    ('file = "m.csv"\nsource = "m.csv"', "constraints[0].source", "give one of file, source and database"),
    ('database = "m.parquet"', "constraints[0].query", "must be a SELECT"),
    ('source = "m.csv"\nquery = "select 1"', "constraints[0].query", "is read with database"),
    ('source = "m.json"', "constraints[0].source", "neither CSV"),
    ('source = "none*.parquet"', "constraints[0].source", "matches no file"),
    ('source = "m.parquet"\nheader = true', "constraints[0].header", "CSV files only"),
    ('source = "m.parquet"\ncolumns = ["customer"]', "constraints[0].columns", "two column names"),
    ('source = "m.parquet"\nenforced = 1', "constraints[0].enforced", "true or false"),
    ('source = "m.parquet"\ncolumns = ["customer", "nope"]', "constraints[0].source", "nope"),
])
def test_bad_keys_name_the_field(store, keys, field, message):
    with pytest.raises(InvalidScenarioError, match=message) as caught:
        load_scenario(scenario(store, keys))
    assert caught.value.field == field

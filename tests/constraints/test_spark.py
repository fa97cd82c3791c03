"""Membership statistics computed by Spark (gce.constraints.spark) against DuckDB and a plain Python recount.

Spark runs in local mode (``local[2]``, one session for the whole run: starting its JVM takes 15 s or more),
so these cases are in the ``slow`` tier, which ``.ci/run`` runs with the ``spark`` extra installed. A missing
pyspark fails them, unless ``GCE_NO_SPARK=1`` says that Spark is knowingly absent. Their fast twins in the
default tier need no JVM: the SQL that Spark runs (``gce.constraints.tables.per_individual_sql``,
``rows_sql``, ``statistics_from_sql``) run by DuckDB on the same random tables, and the checks made before
Spark starts.
"""

from __future__ import annotations

import json
import os
import pathlib
import random
import re
import sys
from collections import Counter

import duckdb
import pytest

import tiers
from gce.constraints import spark as gce_spark
from gce.constraints.data import _Resolver
from gce.constraints.tables import (MembershipStatistics, MembershipTable, id_columns, membership_statistics,
                                    per_individual_sql, rows_sql, statistics_from_sql)
from gce.errors import InvalidParameterError
from gce.membership import membership_coverage

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent.parent / "examples"


# ---------------------------------------------------------------------------
# Random membership tables and their recount by hand


class Case:
    """A random table: rows (individual, database) with duplicates, how ids resolve, the database column's
    type, and the error one bad row makes (``bad``: None, "individual", "unknown" or "null")."""

    def __init__(self, seed: int, bad: str | None = None):
        rng = random.Random(seed)
        self.seed, self.bad = seed, bad
        n = rng.randint(1, 9)
        self.form = ("names", "indices", "digits", "mapping")[seed % 4]
        if self.form == "names":  # text ids matched after trimming, as DuckDB and Spark both do
            self.databases = [f"b{i}" for i in range(n)]
            ids = [[f"b{i}", f" b{i} "] for i in range(n)]
        elif self.form == "indices":  # an integer column, matched by value
            self.databases, ids = n, [[i] for i in range(n)]
        elif self.form == "digits":  # indices written as text
            self.databases, ids = n, [[str(i), f"{i} "] for i in range(n)]
        else:  # a mapping id -> index, some ids sharing an index
            self.databases = {f"shop-{i}": i % max(1, n - 1) for i in range(n)}
            ids = [[f"shop-{i}"] for i in range(n)]
        self.integer = self.form == "indices"
        rows = []
        for person in range(rng.randint(1, 50)):
            for _ in range(rng.randint(1, 5)):
                rows.append((f"p{person}", rng.choice(rng.choice(ids))))
        rows += rng.sample(rows, k=len(rows) // 4)  # duplicates
        bad_row = {None: None, "individual": (None, ids[0][0]), "unknown": ("zed", 99 if self.integer else "b99"),
                   "null": ("zed", None)}[bad]
        if bad_row is not None:
            rows += [bad_row, bad_row]
        rng.shuffle(rows)
        self.rows = rows

    def index(self, database) -> int:
        if self.form == "names":
            return self.databases.index(database.strip())
        if self.form == "mapping":
            return self.databases[database]
        return int(database)

    def recount(self) -> tuple[dict[int, int], Counter]:
        """The histogram and the counts of each membership set, by hand."""
        members: dict[str, set[int]] = {}
        for person, database in self.rows:
            members.setdefault(person, set()).add(self.index(database))
        histogram = Counter(len(s) for s in members.values())
        return dict(sorted(histogram.items())), Counter(frozenset(s) for s in members.values())

    @property
    def n(self) -> int:
        return _Resolver(self.databases, text=True).n

    @property
    def schema(self) -> str:
        return f"individual string, database {'bigint' if self.integer else 'string'}"

    def parquet(self, folder: pathlib.Path) -> pathlib.Path:
        """The rows as a Parquet file, written by DuckDB."""
        path = folder / f"m{self.seed}_{self.bad}.parquet"
        con = duckdb.connect()
        con.execute(f"create table t (individual varchar, database {'bigint' if self.integer else 'varchar'})")
        insert(con, "t", self.rows)
        con.execute(f"copy t to '{path}' (format parquet)")
        con.close()
        return path


def insert(con: duckdb.DuckDBPyConnection, table: str, rows: list[tuple]) -> None:
    """The rows into a DuckDB table, as SQL literals (binding parameters one by one is slow)."""
    def literal(value) -> str:
        return "null" if value is None else str(value) if isinstance(value, int) else \
            "'" + value.replace("'", "''") + "'"

    con.execute(f"insert into {table} values " + ", ".join("(" + ", ".join(map(literal, row)) + ")" for row in rows))


def shared_sql_on_duckdb(case: Case, patterns: bool, max_patterns: int = 10_000) -> MembershipStatistics:
    """What gce.constraints.spark runs, step for step, with DuckDB as the engine (no JVM)."""
    con = duckdb.connect()
    con.execute(f"create table raw (individual varchar, database {'bigint' if case.integer else 'varchar'}, "
                f"origin varchar)")
    insert(con, "raw", [(*row, "rows") for row in case.rows])
    resolve = _Resolver(case.databases, text=True)
    con.execute("create table ids (id varchar, num bigint, idx integer)")
    insert(con, "ids", list(zip(*id_columns(resolve))))
    con.execute(f"create view rows as {rows_sql('raw', 'ids', case.integer)}")
    con.execute(f"create table per as {per_individual_sql('rows', patterns)}")
    try:
        return statistics_from_sql(lambda q: con.execute(q).fetchall(), "rows", "per", name="rows",
                                   where=lambda origin: origin, resolve=resolve, patterns=patterns,
                                   max_patterns=max_patterns)
    finally:
        con.close()


def assert_recounted(stats: MembershipStatistics, case: Case) -> None:
    histogram, patterns = case.recount()
    assert stats.histogram == histogram
    assert stats.rows == len(case.rows)
    assert stats.n == case.n
    if stats.patterns is not None:
        assert dict(stats.patterns) == patterns
    assert stats.estimate().at_most.m == max(histogram)


BAD = {"individual": "2 row(s) have no individual id", "unknown": "2 row(s) have an unknown or missing database; "
       "one has unknown database", "null": "2 row(s) have an unknown or missing database; one has no database id"}


# ---------------------------------------------------------------------------
# The default tier: no JVM


@tiers.parametrize("seed", range(40), default=4)
def test_the_shared_sql_equals_a_python_recount(seed):
    """The SQL text Spark runs, run by DuckDB, on tables with duplicates, padded and integer ids."""
    case = Case(seed)
    assert_recounted(shared_sql_on_duckdb(case, patterns=True), case)
    assert shared_sql_on_duckdb(case, patterns=False).patterns is None


@pytest.mark.parametrize("bad", sorted(BAD))
def test_the_shared_sql_refuses_null_and_unknown_values(bad):
    case = Case(4, bad)  # names
    with pytest.raises(InvalidParameterError, match=re.escape(BAD[bad])) as caught:
        shared_sql_on_duckdb(case, patterns=True)
    assert caught.value.field == "rows"
    if bad == "unknown":
        assert "unknown database 'b99' (individual 'zed'; known ids: 'b0'" in str(caught.value)


def test_the_shared_sql_caps_the_patterns():
    case = Case(7)
    _, patterns = case.recount()
    assert len(patterns) > 2
    with pytest.raises(InvalidParameterError, match=f"has {len(patterns)} distinct membership sets, more than 2"):
        shared_sql_on_duckdb(case, patterns=True, max_patterns=2)
    assert len(shared_sql_on_duckdb(case, True, max_patterns=len(patterns)).patterns) == len(patterns)


def test_without_pyspark_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyspark", None)
    monkeypatch.setitem(sys.modules, "pyspark.sql", None)
    with pytest.raises(gce_spark.SparkUnavailableError, match=r"pip install 'gce\[spark\]'"):
        gce_spark.membership_statistics("sales", 3)
    assert issubclass(gce_spark.SparkUnavailableError, ImportError)


@pytest.mark.parametrize("options, field", [
    ({"patterns": 1}, "patterns"), ({"max_patterns": 0}, "max_patterns"), ({"columns": ("a",)}, "columns"),
    ({"columns": "ab"}, "columns"), ({"label": ""}, "label"), ({"format": "parquet; drop"}, "format"),
    ({"databases": []}, "databases"),
])
def test_options_are_checked_before_spark_starts(monkeypatch, options, field):
    monkeypatch.setitem(sys.modules, "pyspark", None)  # an option error wins over a missing pyspark
    databases = options.pop("databases", 3)
    with pytest.raises(InvalidParameterError) as caught:
        gce_spark.membership_statistics("sales", databases, **options)
    assert caught.value.field == field


def test_statistics_travel_as_json_and_are_checked():
    stats = shared_sql_on_duckdb(Case(2), patterns=True)
    again = MembershipStatistics.from_dict(json.loads(json.dumps(stats.to_dict())))
    assert again == stats and again.estimate() == stats.estimate()
    cases = {"histogram": ({2: 1}, 2, 1, "x"), "rows": ({2: 1}, 1, 3, "x"),
             "patterns": ({2: 1}, 2, 3, "x", ((frozenset({0}), 1),))}
    for field, arguments in cases.items():  # 2 databases of 1; 1 row for 2 pairs; a set of 1 counted as of 2
        with pytest.raises(InvalidParameterError) as caught:
            MembershipStatistics(*arguments)
        assert caught.value.field == field
    with pytest.raises(InvalidParameterError, match="individuals: is 7, but the histogram gives 1"):
        MembershipStatistics.from_dict({**stats.to_dict(), "histogram": [{"databases": 1, "individuals": 1}],
                                        "patterns": None, "individuals": 7})


def test_coverage_from_statistics_computed_elsewhere():
    """The store chain's statistics as a cluster would send them: the same table as from the file."""
    table = MembershipTable((str(EXAMPLES / "store_members.csv"),), label="store_members.csv")
    scenario = EXAMPLES / "store_chain.toml"
    local = membership_coverage(table, scenario=scenario)
    sent = MembershipStatistics.from_dict(json.loads(json.dumps(local.statistics.to_dict())))
    remote = membership_coverage(sent, scenario=scenario)
    assert str(remote) == str(local)
    assert [c.m for c in remote.candidates] == [3, 3, 4, 4]  # README: the store chain's coverage table
    with pytest.raises(InvalidParameterError, match="count 5 databases, the scenario 12"):
        membership_coverage(MembershipStatistics({1: 1}, 1, 5, "x"), scenario=scenario)


# ---------------------------------------------------------------------------
# The slow tier: Spark in local mode


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for the whole run (2 cores, 512 MiB, no UI, 2 shuffle partitions)."""
    if os.environ.get("GCE_NO_SPARK") == "1":
        pytest.skip("GCE_NO_SPARK=1: Spark is not installed here")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession  # no importorskip: CI installs the spark extra and must run these

    session = (SparkSession.builder.master("local[2]").appName("gce-tests")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2").config("spark.default.parallelism", "2")
               .config("spark.driver.memory", "512m").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(12))
def test_spark_equals_duckdb_and_a_python_recount(spark, tmp_path, seed):
    case = Case(seed)
    path = case.parquet(tmp_path)
    duck = membership_statistics(MembershipTable((str(path),), label="m.parquet"), case.databases, patterns=True)
    assert_recounted(duck, case)
    frame = spark.createDataFrame(case.rows, case.schema)
    assert gce_spark.membership_statistics(frame, case.databases, patterns=True, label="m.parquet") == duck
    from_path = gce_spark.membership_statistics(str(path), case.databases, patterns=seed % 2 == 0,
                                                label="m.parquet")
    assert from_path.histogram == duck.histogram and from_path.rows == duck.rows
    assert from_path.patterns == (duck.patterns if seed % 2 == 0 else None)


@pytest.mark.slow
@pytest.mark.parametrize("bad", sorted(BAD))
def test_spark_refuses_null_and_unknown_values_as_duckdb_does(spark, tmp_path, bad):
    case = Case(11, bad)
    path = case.parquet(tmp_path)
    with pytest.raises(InvalidParameterError, match=re.escape(BAD[bad])) as duck:
        membership_statistics(MembershipTable((str(path),), label="m.parquet"), case.databases)
    frame = spark.createDataFrame(case.rows, case.schema)
    with pytest.raises(InvalidParameterError) as caught:
        gce_spark.membership_statistics(frame, case.databases, label="m.parquet")
    assert str(caught.value) == str(duck.value)
    with pytest.raises(InvalidParameterError) as read:  # files Spark read: the error names the file too
        gce_spark.membership_statistics(str(path), case.databases, label="m.parquet")
    assert read.value.field == f"m.parquet (file:{path})" and read.value.detail == duck.value.detail


@pytest.mark.slow
def test_spark_reads_globs_csv_and_catalog_tables(spark, tmp_path):
    case = Case(6)
    half = len(case.rows) // 2
    for i, part in enumerate((case.rows[:half], case.rows[half:])):
        with open(tmp_path / f"part{i}.csv", "w") as handle:
            handle.write("customer,branch\n" + "".join(f"{p},{b}\n" for p, b in part))
    csv = gce_spark.membership_statistics(str(tmp_path / "part*.csv"), case.databases, patterns=True)
    assert_recounted(csv, case)
    duck = membership_statistics(MembershipTable((str(tmp_path / "part0.csv"), str(tmp_path / "part1.csv")),
                                                 label=str(tmp_path / "part*.csv")), case.databases, patterns=True)
    assert csv == duck
    frame = spark.createDataFrame([(p, b, 1.5) for p, b in case.rows], "who string, shop string, amount double")
    frame.createOrReplaceTempView("purchases")
    with pytest.raises(InvalidParameterError, match=r"purchases: has 3 columns \(who, shop, amount\); name the two"):
        gce_spark.membership_statistics("purchases", case.databases)
    named = gce_spark.membership_statistics("purchases", case.databases, columns=("who", "shop"), patterns=True)
    assert named.histogram == duck.histogram and named.patterns == duck.patterns and named.source == "purchases"
    with pytest.raises(InvalidParameterError, match="columns: purchases has no column 'branch'"):
        gce_spark.membership_statistics("purchases", case.databases, columns=("who", "branch"))
    with pytest.raises(InvalidParameterError, match=r"nowhere: cannot be read by Spark: \[TABLE_OR_VIEW_NOT_FOUND\]"):
        gce_spark.membership_statistics("nowhere", case.databases)
    frame.select("who", "shop").write.parquet(str(tmp_path / "parts"))  # a folder of part files, as Spark writes
    parts = gce_spark.membership_statistics(str(tmp_path / "parts"), case.databases, patterns=True, session=spark)
    assert parts.histogram == duck.histogram and parts.patterns == duck.patterns
    spark.catalog.dropTempView("purchases")
    for source, options, field in ((12, {}, "table"), (frame, {"format": "csv"}, "format"),
                                   ("purchases", {"session": "local"}, "session")):
        with pytest.raises(InvalidParameterError) as caught:
            gce_spark.membership_statistics(source, case.databases, **options)
        assert caught.value.field == field


@pytest.mark.slow
def test_spark_caps_the_patterns_and_the_result_feeds_gce(spark):
    case = Case(7)
    _, patterns = case.recount()
    frame = spark.createDataFrame(case.rows, case.schema)
    with pytest.raises(InvalidParameterError, match=f"DataFrame: has {len(patterns)} distinct membership sets, "
                                                    f"more than 2"):
        gce_spark.membership_statistics(frame, case.databases, patterns=True, max_patterns=2)
    stats = gce_spark.membership_statistics(frame, case.databases, patterns=True)
    assert stats.estimate().constraint_set().n == case.n
    assert set(stats.estimate().patterns.allowed) == set(patterns)
    assert [v for v in spark.catalog.listTables() if v.name.startswith("gce_")] == []  # its views are dropped

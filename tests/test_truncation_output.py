"""What a truncation writes: every column of the table under its own name, only the kept individuals' rows
of their kept databases; never over its input, never where the table's glob would read it back."""

from __future__ import annotations

import contextlib
import io
import sqlite3

import duckdb
import pytest

from gce.cli import main
from gce.constraints.tables import MembershipTable, membership_statistics, truncate_membership, truncation_key
from gce.errors import InvalidParameterError

SALES = [("ann", 0, 10.0), ("ann", 1, 20.0), ("ann", 1, 25.0), ("bob", 2, 5.0), ("bob", 0, 7.0), ("cid", 1, 3.0),
         ("dan", 2, 1.5), ("dan", 2, 2.5), ("dan", 1, 4.0), ("dan", 0, 8.0)]


def run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(args)
    return status, out.getvalue(), err.getvalue()


def kept_by_hand(rows, m: int, seed: int) -> list[tuple]:
    """The documented rule: each individual keeps the m databases with the smallest md5 keys, every row."""
    members: dict[str, set[int]] = {}
    for person, branch, *_ in rows:
        members.setdefault(person, set()).add(branch)
    chosen = {p: set(sorted(s, key=lambda b: (truncation_key(seed, p, b), b))[:m]) for p, s in members.items()}
    return sorted(row for row in rows if row[1] in chosen[row[0]])


def write_csv(path, rows, header="customer,branch,amount") -> None:
    path.write_text((header + "\n" if header else "") + "".join(",".join(map(str, r)) + "\n" for r in rows))


@pytest.mark.parametrize("m", [1, 2])
def test_csv_truncation_keeps_every_column_under_its_name(tmp_path, m):
    write_csv(tmp_path / "sales.csv", SALES)
    out = tmp_path / "kept.parquet"
    status, text, err = run(["membership", str(tmp_path / "sales.csv"), "--columns", "customer", "branch",
                             "--databases", "3", "--truncate", str(m), "--seed", "7", "--output", str(out)])
    assert status == 0, err
    names = [row[0] for row in duckdb.sql(f"describe select * from '{out}'").fetchall()]
    assert names == ["customer", "branch", "amount"]
    kept = sorted((c, int(b), float(a)) for c, b, a in duckdb.sql(f"select * from '{out}'").fetchall())
    expected = kept_by_hand(SALES, m, 7)
    assert kept == expected and 0 < len(expected) < len(SALES)
    assert text.startswith(f"wrote {out}: {len(expected)} of {len(SALES)} rows")
    # the output reads as the input did, with at most m databases per individual
    again = membership_statistics(MembershipTable((str(out),), columns=("customer", "branch")), 3)
    assert again.largest <= m and again.rows == len(expected)


def test_parquet_truncation_keeps_types_and_extra_columns(tmp_path):
    source = tmp_path / "sales.parquet"
    con = duckdb.connect()
    con.execute("create table t (customer varchar, branch integer, amount double)")
    con.executemany("insert into t values (?, ?, ?)", SALES)
    con.execute(f"copy t to '{source}' (format parquet)")
    con.close()
    out = str(tmp_path / "kept.parquet")
    done = truncate_membership(MembershipTable((str(source),), columns=("customer", "branch")), 3, 1, 11, out)
    described = duckdb.sql(f"describe select * from '{out}'").fetchall()
    assert [(r[0], r[1]) for r in described] == [("customer", "VARCHAR"), ("branch", "INTEGER"),
                                                  ("amount", "DOUBLE")]
    assert sorted(duckdb.sql(f"select * from '{out}'").fetchall()) == kept_by_hand(SALES, 1, 11)
    assert done.rows_kept == len(kept_by_hand(SALES, 1, 11))


def test_a_csv_without_header_is_written_without_one(tmp_path):
    pairs = [(p, b) for p, b, _ in SALES]
    write_csv(tmp_path / "m.csv", pairs, header=None)
    out = tmp_path / "kept.csv"
    truncate_membership(MembershipTable((str(tmp_path / "m.csv"),)), 3, 1, 3, str(out))
    lines = out.read_text().splitlines()
    assert sorted((p, int(b)) for p, b in (line.split(",") for line in lines)) == kept_by_hand(pairs, 1, 3)


def test_a_sqlite_query_keeps_its_column_names(tmp_path):
    path = tmp_path / "crm.sqlite"
    with sqlite3.connect(path) as lite:
        lite.execute("create table purchases (customer text, branch integer, amount real)")
        lite.executemany("insert into purchases values (?, ?, ?)", SALES)
    lite.close()
    out = str(tmp_path / "kept.parquet")
    table = MembershipTable(database=str(path), query="select customer, branch from purchases")
    truncate_membership(table, 3, 2, 5, out)
    assert [r[0] for r in duckdb.sql(f"describe select * from '{out}'").fetchall()] == ["customer", "branch"]
    kept = sorted((c, int(b)) for c, b in duckdb.sql(f"select * from '{out}'").fetchall())
    assert kept == kept_by_hand([(p, b) for p, b, _ in SALES], 2, 5)


def test_the_input_is_never_overwritten(tmp_path):
    write_csv(tmp_path / "sales.csv", SALES)
    before = (tmp_path / "sales.csv").read_bytes()
    with pytest.raises(InvalidParameterError, match="^output: .* is a file of the table being truncated"):
        truncate_membership(MembershipTable((str(tmp_path / "sales.csv"),), columns=("customer", "branch")), 3, 1,
                            7, str(tmp_path / "." / "sales.csv"))
    assert (tmp_path / "sales.csv").read_bytes() == before


@pytest.mark.parametrize("pattern, inside", [("sales/*.csv", "sales/kept.csv"),
                                             ("sales/**/*.csv", "sales/deeper/kept.csv"),
                                             ("sales/[ab]*.csv", "sales/b-kept.csv")])
def test_an_output_the_glob_would_read_back_is_refused(tmp_path, monkeypatch, pattern, inside):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sales").mkdir()
    write_csv(tmp_path / "sales" / "a.csv", SALES[:5])
    write_csv(tmp_path / "sales" / "b.csv", SALES[5:])
    common = ["membership", pattern, "--columns", "customer", "branch", "--databases", "3"]
    status, out, err = run(common + ["--truncate", "1", "--seed", "7", "--output", inside])
    assert status == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"gce: error: --output: '{inside}' would be matched by the table's glob '{pattern}'")
    assert not (tmp_path / inside).exists()
    # outside the glob's reach it is written, and the glob's statistic is the same before and after
    first = run(common + ["--json"])
    assert run(common + ["--truncate", "1", "--seed", "7", "--output", "kept.csv"])[0] == 0
    second = run(common + ["--json"])
    assert first[0] == second[0] == 0 and first[1] == second[1]
    assert '"rows": 10' in first[1]  # the ten rows of a.csv and b.csv, no more

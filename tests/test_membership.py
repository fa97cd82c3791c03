"""gce membership: the coverage table of candidate m, and truncation (gce.membership, gce.constraints.tables)."""

from __future__ import annotations

import contextlib
import io
import json
import pathlib
import random

import duckdb
import pytest

import tiers
from gce.cli import main
from gce.constraints.tables import MembershipTable, membership_statistics, truncate_membership, truncation_key
from gce.files.scenario import load_scenario

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(args)
    return status, out.getvalue(), err.getvalue()


def test_the_store_chain_coverage_table():
    status, out, err = run(["membership", str(EXAMPLES / "store_members.csv"), "--scenario",
                            str(EXAMPLES / "store_chain.toml")])
    assert status == 0, err
    lines = out.splitlines()
    # store_members.csv: 300 customers; 177 in one branch, 84 in two, 38 in three, 1 in four (recounted below)
    assert lines[2:7] == ["databases  individuals    share",
                          "        1          177   59.00%",
                          "        2           84   28.00%",
                          "        3           38   12.67%",
                          "        4            1    0.33%"]
    assert lines[8].split() == ["p90", "3", "99.67%", "99.78%", "1.92535"]
    assert lines[11].split() == ["max", "4", "100.00%", "100.00%", "2.25408"]
    # the maximum is the from_data estimate: the same epsilon as gce solve on the file (README)
    members: dict[str, set[str]] = {}
    for line in (EXAMPLES / "store_members.csv").read_text().splitlines()[1:]:
        person, branch = line.split(",")
        members.setdefault(person, set()).add(branch)
    assert sorted(len(s) for s in members.values()).count(3) == 38
    assert sum(min(len(s), 3) for s in members.values()) / sum(len(s) for s in members.values()) == \
        pytest.approx(0.9978, abs=5e-5)


def test_json_and_usage_errors():
    status, out, _ = run(["membership", str(EXAMPLES / "store_members.csv"), "--scenario",
                          str(EXAMPLES / "store_chain.toml"), "--json"])
    table = json.loads(out)
    assert status == 0 and table["individuals"] == 300 and table["candidates"][-1]["m"] == 4
    assert table["histogram"][0] == {"databases": 1, "individuals": 177}
    for args, message in ((["--databases", "3", "--plot", "x.png"], "--plot: needs --scenario"),
                          (["--databases", "3", "--truncate", "2"], "give all three"),
                          ([], "--scenario or --databases")):
        status, out, err = run(["membership", str(EXAMPLES / "store_members.csv"), *args])
        assert status == 2 and out == "" and message in err


def random_table(seed: int) -> list[tuple[str, int]]:
    rng = random.Random(seed)
    rows = [(f"p{rng.randrange(60)}", rng.randrange(9)) for _ in range(rng.randint(50, 400))]
    return rows + rng.sample(rows, k=len(rows) // 5)


@tiers.parametrize("seed, m, kind", [(s, 1 + s % 4, ("parquet", "csv")[s % 2]) for s in range(24)], default=2)
def test_truncation_keeps_at_most_m_by_the_documented_rule(tmp_path, seed, m, kind):
    rows = random_table(seed)
    (tmp_path / "m.csv").write_text("".join(f"{p},{b}\n" for p, b in rows))
    con = duckdb.connect()
    con.execute(f"copy (select * from read_csv('{tmp_path / 'm.csv'}', header = false, columns = "
                f"{{'customer': 'VARCHAR', 'branch': 'INTEGER'}})) to '{tmp_path / 'm.parquet'}' (format parquet)")
    con.close()
    table = MembershipTable((str(tmp_path / "m.parquet"),))
    out = str(tmp_path / f"kept.{kind}")
    done = truncate_membership(table, 9, m, seed, out)
    kept = duckdb.sql(f"select * from '{out}'").fetchall()
    members: dict[str, set[int]] = {}
    for person, branch in rows:
        members.setdefault(person, set()).add(branch)
    # the rule, by hand: each person keeps the min(c, m) branches with the smallest md5 keys, and all their rows
    chosen = {p: set(sorted(s, key=lambda b: (truncation_key(seed, p, b), b))[:m]) for p, s in members.items()}
    expected = sorted((p, b) for p, b in rows if b in chosen[p])
    assert sorted((p, int(b)) for p, b in kept) == expected
    assert done.rows_kept == len(expected) and done.rows == len(rows)
    again = membership_statistics(MembershipTable((out,)), 9)
    assert again.largest <= m
    assert again.memberships == sum(min(len(s), m) for s in members.values())  # the documented share
    assert again.memberships / membership_statistics(table, 9).memberships == \
        pytest.approx(membership_statistics(table, 9).kept(m))


def test_truncate_on_the_command_line_then_enforced(tmp_path):
    out = tmp_path / "kept.parquet"
    status, text, err = run(["membership", str(EXAMPLES / "store_members.csv"), "--scenario",
                             str(EXAMPLES / "store_chain.toml"), "--truncate", "2", "--seed", "1",
                             "--output", str(out)])
    assert status == 0, err
    assert text.startswith(f"wrote {out}: 423 of 463 rows (91.36%)")
    scenario = (EXAMPLES / "store_chain.toml").read_text().replace(
        'file = "store_members.csv"       # columns: customer, branch', 'source = "kept.parquet"\nenforced = true')
    (tmp_path / "s.toml").write_text(scenario)
    loaded = load_scenario(tmp_path / "s.toml")
    assert loaded.constraints.constraints[0].m == 2
    assert loaded.notes[0].startswith("at_most 2 enforced by truncation: kept.parquet keeps at most 2 databases "
                                      "for each of its 300 individuals")


@pytest.mark.slow
def test_the_coverage_plot(tmp_path):
    plot = tmp_path / "coverage.png"
    status, out, err = run(["membership", str(EXAMPLES / "store_members.csv"), "--scenario",
                            str(EXAMPLES / "store_chain.toml"), "--plot", str(plot)])
    assert status == 0, err
    assert out.endswith(f"plot written to {plot}\n") and plot.read_bytes()[:4] == b"\x89PNG"

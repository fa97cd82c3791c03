"""gce membership: the coverage table of candidate m, and truncation (gce.membership, gce.constraints.tables)."""

from __future__ import annotations

import contextlib
import io
import json
import pathlib
import random
import re

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


# ---------------------------------------------------------------------------
# Progress on long scans: DuckDB's own progress, polled while the engine runs, on the terminal's progress line


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def generated(path: pathlib.Path, rows: int) -> pathlib.Path:
    """``rows`` rows of (customer, branch): rows / 10 customers, 1000 branches, written by DuckDB."""
    con = duckdb.connect(config={"threads": 2})
    con.execute(f"copy (select 'c' || (hash(i) % {rows // 10}) as customer, (hash(i * 7 + 3) % 1000)::integer as "
                f"branch from range({rows}) t(i)) to '{path}' (format parquet)")
    con.close()
    return path


@pytest.fixture(scope="module")
def scanned(tmp_path_factory):
    return generated(tmp_path_factory.mktemp("scan") / "m.parquet", 200_000)


def test_a_scan_reports_duckdbs_progress(scanned, monkeypatch):
    """The engine's progress reaches the callback while it scans (it never did with DuckDB's tracking off:
    query_progress was -1 throughout)."""
    from gce.constraints import tables

    monkeypatch.setattr(tables, "_POLL", 0.001)  # a 0.2 s scan, polled about every millisecond
    calls = []
    stats = membership_statistics(MembershipTable((str(scanned),), label="m.parquet"), 1000,
                                  progress=lambda *args: calls.append(args))
    assert stats.rows == 200_000
    assert calls and {(total, message) for _, total, message in calls} == {(100, "reading m.parquet")}
    assert all(0 <= step <= 100 for step, _, _ in calls) and max(step for step, _, _ in calls) > 0


def test_the_command_draws_progress_on_a_terminal_only(scanned, monkeypatch):
    from gce.constraints import tables

    monkeypatch.setattr(tables, "_POLL", 0.001)
    for extra, drawn in (([], True), (["--quiet"], False), (["--json"], False)):
        out, err = io.StringIO(), Terminal()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            assert main(["membership", str(scanned), "--databases", "1000", *extra]) == 0
        text = err.getvalue()
        assert bool(text) == drawn, extra
        if drawn:  # one updating line: carriage returns, the line, erase to its end; a newline at the end
            assert text.startswith("\rmembership ") and text.endswith("\x1b[K\n") and text.count("\n") == 1
            for line in text[1:-1].split("\r"):
                assert re.fullmatch(rf"membership \d+/100 \(\d+%\) reading {re.escape(str(scanned))}\x1b\[K", line)
        assert out.getvalue().startswith(("memberships per individual", "{"))
    status, out, err = run(["membership", str(scanned), "--databases", "1000"])
    assert status == 0 and err == ""  # not a terminal: nothing


@pytest.mark.slow
def test_a_long_scan_shows_progress_on_a_real_terminal(tmp_path):
    """``gce membership`` on 5 x 10^6 rows in a fresh interpreter, stderr a pseudo-terminal: the progress line
    climbs while DuckDB scans, stdout stays the table."""
    import os
    import pty
    import subprocess
    import sys

    path = generated(tmp_path / "big.parquet", 5_000_000)
    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    child = subprocess.Popen([sys.executable, "-m", "gce", "membership", str(path), "--databases", "1000"],
                             stdout=subprocess.PIPE, stderr=slave, env=env, cwd=ROOT)
    os.close(slave)
    err = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        err += chunk
    out = child.communicate(timeout=300)[0].decode()
    os.close(master)
    assert child.returncode == 0
    assert out.startswith(f"memberships per individual in {path}: ") and "5,000,000 rows" in out
    steps = [int(s) for s in re.findall(rb"\rmembership (\d+)/100 \(\d+%\) reading ", err)]
    assert len(steps) >= 2 and max(steps) > 0, err[:500]


@pytest.mark.parametrize("epsilons, covered", [
    ((1.0, 2.0, 2.01, 2.02), (0.90, 0.9998, 0.9999, 1.0)),  # three distinct points almost on top of each other
    ((1.3, 1.74, 1.74, 1.74), (0.907, 1.0, 1.0, 1.0)),        # p99, p99.9 and max at one m: one label
])
def test_coverage_plot_labels_never_overlap(epsilons, covered):
    from gce.membership import Candidate, _annotate_apart
    from gce.plot import _pyplot_free_figure

    ms = (3, 4, 5, 6) if len(set(epsilons)) == 4 else (6, 10, 10, 10)
    points = [Candidate(label, m, c, c, e) for label, m, c, e in zip(("p90", "p99", "p99.9", "max"), ms, covered,
                                                                     epsilons)]
    figure = _pyplot_free_figure()
    ax = figure.add_subplot()
    ax.plot([100 * p.covered for p in points], [p.epsilon for p in points], marker="o")
    _annotate_apart(figure, ax, points)
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    boxes = [text.get_window_extent(renderer) for text in ax.texts]
    assert len(boxes) == len(set(ms))
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    if len(set(ms)) == 2:
        assert sorted(t.get_text() for t in ax.texts) == ["p90: m = 6", "p99, p99.9, max: m = 10"]


def test_the_coverage_plots_old_positional_dpi_still_works_and_warns(tmp_path):
    """``plot_coverage(coverage, path, 200)`` was the signature before ``ax`` took the third place: a number
    there is read as ``dpi`` (a DeprecationWarning naming the keyword), an Axes as ``ax``."""
    from gce.membership import membership_coverage, plot_coverage

    coverage = membership_coverage(str(EXAMPLES / "store_members.csv"), scenario=EXAMPLES / "store_chain.toml")
    old, new = tmp_path / "old.png", tmp_path / "new.png"
    with pytest.warns(DeprecationWarning, match=r"use plot_coverage\(coverage, path, dpi=dpi\)"):
        plot_coverage(coverage, old, 50)
    plot_coverage(coverage, new, dpi=50)
    assert old.read_bytes()[:4] == b"\x89PNG" and old.stat().st_size == new.stat().st_size
    ax = plot_coverage(coverage)
    assert plot_coverage(coverage, None, ax) is ax


def test_a_coverage_plot_that_cannot_be_written_is_named_by_its_flag(tmp_path, monkeypatch):
    """As gce curve's: ``--plot: cannot write ...`` (it said ``path:``, plot_coverage's parameter)."""
    from matplotlib.figure import Figure

    def full(self, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", full)
    plot = tmp_path / "coverage.png"
    status, out, err = run(["membership", str(EXAMPLES / "store_members.csv"), "--scenario",
                            str(EXAMPLES / "store_chain.toml"), "--plot", str(plot)])
    assert (status, out) == (2, "") and err == f"gce: error: --plot: cannot write '{plot}': No space left on device\n"

"""The ``gce`` command: the report, --json, and one-line errors with exit status 2."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from gce import load_scenario, solve
from gce.cli import main

ROOT = pathlib.Path(__file__).resolve().parent.parent
HOSPITALS = str(ROOT / "examples" / "hospitals.toml")

GOOD = """databases = 4
delta = 1e-6
[[invocations]]
databases = "all"
mechanism = { kind = "approx", epsilon = 0.1, delta = 1e-9 }
[[constraints]]
kind = "at_most"
m = 2
"""


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_json_equals_report_to_dict(capsys):
    status, out, err = run(capsys, "solve", HOSPITALS, "--json")
    assert status == 0 and err == ""
    data = json.loads(out)
    assert data == json.loads(json.dumps(solve(load_scenario(HOSPITALS)).to_dict()))
    for key in ("epsilon", "delta", "theorem", "exact", "witness", "baselines"):
        assert key in data
    assert data["exact"] is True and len(data["witness"]["h1"]) == 365 and data["witness"]["h0"] == []
    assert data["epsilon"] < data["baselines"]["classic"]["epsilon"]


def test_table_and_target_overrides(capsys, tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(GOOD)
    status, out, _ = run(capsys, "solve", str(path))
    assert status == 0 and "GCE (this scenario)" in out and "classic" in out and "exact: yes" in out
    status, out, _ = run(capsys, "solve", str(path), "--epsilon", "0.2", "--json")
    data = json.loads(out)
    # At epsilon 0.2 = 2 x 0.1 the two differing invocations only leave their deltas: 1 - (1 - 1e-9)^2.
    assert data["epsilon"] == 0.2 and data["delta"] == pytest.approx(2e-9, rel=1e-6)
    status, out, _ = run(capsys, "solve", str(path), "--delta", "1e-3", "--json")
    assert json.loads(out)["delta"] == 1e-3


BAD_FILES = {
    "wrong kind": (GOOD.replace('"approx"', '"fancy"'), "invocations[0].mechanism.kind"),
    "missing key": (GOOD.replace(", delta = 1e-9", ""), "invocations[0].mechanism.delta"),
    "negative m": (GOOD.replace("m = 2", "m = -2"), "constraints[0].m"),
    "unknown database": (GOOD.replace('"all"', "[0, 4]"), "invocations[0].databases[1]"),
    "unknown database in a constraint": (GOOD + '[[constraints]]\nkind = "exclusive"\ndatabases = [1, 9]\n',
                                         "constraints[1].databases"),
    "both targets": ("epsilon = 1.0\n" + GOOD, "delta"),
    "neither target": (GOOD.replace("delta = 1e-6\n", ""), "delta"),
    "not toml": (GOOD.replace("m = 2", "m = "), "file"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_files_exit_2_with_one_line_naming_the_field(capsys, tmp_path, name):
    text, field = BAD_FILES[name]
    path = tmp_path / "bad.toml"
    path.write_text(text)
    status, out, err = run(capsys, "solve", str(path))
    assert status == 2
    assert out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{path}: {field}: " in err


@pytest.mark.parametrize("argv, needle", [
    (["solve", HOSPITALS, "--delta", "1e-6", "--epsilon", "1"], "not allowed with"),
    (["solve", HOSPITALS, "--delta", "2"], "--delta: must lie in [0, 1)"),
    (["solve", HOSPITALS, "--delta", "tiny"], "--delta: invalid float value"),
    (["solve", HOSPITALS, "--time-limit", "0"], "--time-limit"),
    (["solve"], "FILE"),
    (["launch"], "invalid choice"),
])
def test_bad_command_lines_exit_2_with_one_line(capsys, argv, needle):
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == "" and err.count("\n") == 1 and needle in err


@pytest.mark.slow  # a fresh interpreter; test_readme runs `python -m gce solve` as one by default
def test_the_installed_command_runs_as_a_module():
    # `python -m gce` is the same entry point as the `gce` console script.
    done = subprocess.run([sys.executable, "-m", "gce", "solve", HOSPITALS, "--delta", "-1"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == "gce: error: --delta: must lie in [0, 1), got -1.0"


def test_calibrate_json_meets_the_target_and_beats_classic(capsys):
    status, out, err = run(capsys, "calibrate", HOSPITALS, "--target-epsilon", "1", "--target-delta", "1e-6",
                           "--json")
    assert status == 0 and err == ""
    data = json.loads(out)
    eps = data["per_invocation_epsilon"]
    assert data["epsilon"] <= 1.0 and data["delta"] == 1e-6
    assert data["classic"]["per_invocation_epsilon"] < eps
    # Re-check through the engine: eps meets the target, 1% more does not.
    from dataclasses import replace

    from gce.accounting.guarantees import ApproxDP
    scenario = load_scenario(HOSPITALS)
    at = lambda e: replace(scenario, invocations=tuple(replace(i, guarantee=ApproxDP(e, 1e-10))
                                                       for i in scenario.invocations))
    assert solve(at(eps)).epsilon <= 1.0 < solve(at(1.01 * eps)).epsilon


def test_calibrate_infeasible_target_is_one_line(capsys):
    status, out, err = run(capsys, "calibrate", HOSPITALS, "--target-epsilon", "1", "--target-delta", "1e-12")
    assert status == 2 and out == "" and err.count("\n") == 1 and "target_delta" in err


def test_curve_table(capsys):
    """The fast twin of the next test, without the plot (0.5 to 1 s of matplotlib; the README's `gce curve
    --plot` session draws one in the default run)."""
    check_curve_table(capsys)


@pytest.mark.slow
def test_curve_table_and_plot(capsys, tmp_path):
    png = tmp_path / "curve.png"
    check_curve_table(capsys, "--plot", str(png))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def check_curve_table(capsys, *plot):
    status, out, err = run(capsys, "curve", HOSPITALS, "--deltas", "1e-6", "1e-3", *plot, "--json")
    assert status == 0
    data = json.loads(out)
    rows = {row["delta"]: row for row in data["curve"]}
    assert rows[1e-6]["epsilon"] == pytest.approx(solve(load_scenario(HOSPITALS)).epsilon, rel=1e-9)
    assert rows[1e-3]["epsilon"] < rows[1e-6]["epsilon"] < rows[1e-6]["classic_epsilon"]
    status, out, _ = run(capsys, "curve", HOSPITALS, "--deltas", "1e-6")
    assert status == 0 and "epsilon (classic)" in out and "4.62025" in out


def test_curve_rejects_bad_deltas(capsys):
    status, out, err = run(capsys, "curve", HOSPITALS, "--deltas", "1e-6", "1.5")
    assert status == 2 and out == "" and "--deltas[1]" in err


# ---------------------------------------------------------------------------
# gce curve carries what solve carries: per-row brackets, the report's notes and status, --rtol, --strict

GAUSSIAN_PARTS = str(ROOT / "examples" / "gaussian_parts.toml")


def test_curve_rows_of_an_exact_answer_are_their_own_bracket(capsys):
    status, out, err = run(capsys, "curve", HOSPITALS, "--deltas", "1e-8", "1e-6", "--json", "--rtol", "0.05")
    assert status == 0 and err == ""
    data = json.loads(out)
    assert data["exact"] is True and data["status"] == "complete" and data["time_limit_reached"] is False
    assert data["rtol"] == 0.05  # --rtol reaches the solve, which reports it
    low, high = data["curve"]
    assert low["lower"] == low["upper"] == low["epsilon"] == "inf"  # 365 x 1e-10 > 1e-8
    assert high["lower"] == high["upper"] == high["epsilon"] == solve(load_scenario(HOSPITALS)).epsilon
    # the report's notes, not only the scenario's: why epsilon is infinite at the solve's target 1e-8
    assert any(note.startswith("no finite epsilon: delta >= 3.65e-08 > target 1e-08") for note in data["notes"])
    status, out, _ = run(capsys, "curve", HOSPITALS, "--deltas", "1e-6")
    lines = out.splitlines()
    assert lines[1] == f"{'delta':>10}  {'epsilon (GCE)':>14}  {'epsilon (classic)':>17}  bracket (GCE)"
    assert lines[2] == f"{1e-6:>10.3g}  {4.62025:>14.6g}  {8.31756:>17.6g}  exact"


def _stub_solve(monkeypatch, changes):
    """Make the command's solve return the real report with the fields ``changes(report)`` gives (a lower
    curve, the limit reached)."""
    import dataclasses

    import gce.solving

    real = gce.solving.solve

    def solve_then_change(*args, **kwargs):
        report = real(*args, **kwargs)
        return dataclasses.replace(report, **changes(report))

    monkeypatch.setattr(gce.solving, "solve", solve_then_change)


def test_curve_rows_bracket_with_the_reports_lower_curve(capsys, monkeypatch):
    """A non-exact report with a certified lower curve (here the batch composition's of the Gaussian parts'
    worst case, 2 x 0.5-GDP on a coarse grid): each row is [lower, upper], in the text and the JSON."""
    from gce.accounting.batch import batch_compose
    from gce.accounting.guarantees import GaussianDP
    from gce.accounting.theorems import compose

    coarse = batch_compose({GaussianDP(0.5): 2}, rtol=0.2)
    _stub_solve(monkeypatch, lambda report: dict(curve=coarse, lower_curve=coarse.lower, exact=False))
    status, out, _ = run(capsys, "curve", GAUSSIAN_PARTS, "--deltas", "1e-6", "1e-3", "--json")
    rows = json.loads(out)["curve"]
    exact = compose({GaussianDP(0.5): 2}).curve  # sqrt(2) x 0.5 = 0.7071-GDP: exact (Dong et al. Cor. 3.3)
    for row in rows:
        assert row["upper"] == row["epsilon"] == coarse.epsilon(row["delta"])
        assert row["lower"] == coarse.lower.epsilon(row["delta"])
        assert row["lower"] < exact.epsilon(row["delta"]) <= row["upper"]  # certified on both ends
    status, out, _ = run(capsys, "curve", GAUSSIAN_PARTS, "--deltas", "1e-6", "1e-3")
    cells = [line.split("  ")[-1] for line in out.splitlines()[2:4]]
    assert cells == [f"[{r['lower']:.6g}, {r['upper']:.6g}]" for r in rows]
    assert "theorem: gaussian-dp; exact: no" in out


ALLOCATION = str(ROOT / "examples" / "dp_sgd_allocation.toml")


def test_curve_rows_of_random_allocation_carry_certified_brackets_within_rtol(capsys):
    """The real thing: the example's random-allocation curve (sigma 1, 1 of 100), each row [lower, upper]
    within the default accuracy, and certified: it overlaps a much finer bracket of the same curve."""
    from gce.priors.allocation import allocation_curve

    status, out, _ = run(capsys, "curve", ALLOCATION, "--deltas", "1e-10", "1e-6", "1e-2", "--json",
                         "--time-limit", "60")
    data = json.loads(out)
    assert status == 0 and data["status"] == "complete" and not data["exact"]
    fine = allocation_curve(1.0, 100, delta=1e-10, rtol=1e-3)
    for row in data["curve"]:
        low, high = row["lower"], row["upper"]
        assert low <= row["epsilon"] == high and (high - low) / high <= 0.01
        reference = fine.epsilon_bracket(row["delta"])
        assert low <= reference[1] and reference[0] <= high  # two certified brackets of one number overlap


def test_curve_strict_exits_3_when_the_limit_was_reached(capsys):
    """A limit far too short for the allocation grids at delta 1e-10: the table is still printed (certified,
    coarser), its first line and the JSON say so, and --strict makes it exit status 3. The solve is given
    at least 0.05 s whatever the limit (gce.cli._LEAST_SOLVE) and takes 0.4 to 0.6 s uncapped (2 shared
    cores under load): on a clock ten times fast (5 ms of this machine's time, about 100 times less) the
    cap stops it on a machine several times faster too."""
    from gce import effort

    with effort.clock(effort.slowed(10.0)):
        status, out, _ = run(capsys, "curve", ALLOCATION, "--deltas", "1e-10", "--time-limit", "0.01", "--strict")
    lines = out.splitlines()
    assert status == 3 and lines[0].startswith("time limit reached: a certified but coarser table (1% asked")
    assert any(line.startswith("note: time limit reached: ") for line in lines)
    with effort.clock(effort.slowed(10.0)):
        status, out, _ = run(capsys, "curve", ALLOCATION, "--deltas", "1e-10", "--time-limit", "0.01", "--json")
    data = json.loads(out)
    assert status == 0 and data["status"] == "time limit reached" and data["time_limit_reached"] is True
    row, = data["curve"]
    assert row["lower"] <= 2.0762 and row["upper"] >= 2.0775  # holds the fine bracket [2.0762, 2.0775]


@pytest.mark.parametrize("form", [(), ("--json",)], ids=["text", "json"])
def test_curve_prints_the_same_table_twice_and_on_a_slow_clock(capsys, form):
    """Same question, same answer: the table is a function of the question, never of the clock."""
    from gce import effort

    argv = ["curve", GAUSSIAN_PARTS, "--time-limit", "120", *form]
    first = run(capsys, *argv)
    with effort.clock(effort.slowed(10.0)):
        second = run(capsys, *argv)
    third = run(capsys, *argv)
    assert first == second == third and first[0] == 0
    assert "time limit reached" not in first[1]


def test_curve_table_that_outruns_its_estimate_is_stopped_not_cut_short(capsys, monkeypatch):
    """A curve far slower than :data:`gce.cli.SECONDS_PER_DELTA` (here 30 s a delta): the table is stopped
    past the limit with one error naming --deltas, within the contract's allowance (1.1 x the limit +
    0.5 s), never printed with fewer rows."""
    import time

    import gce.cli
    from gce.accounting.curves import FunctionCurve

    def slow_epsilon(deltas):
        time.sleep(30.0)
        return np.zeros_like(deltas)

    slow = FunctionCurve(lambda eps: np.zeros_like(eps), epsilon_fn=slow_epsilon)
    _stub_solve(monkeypatch, lambda report: dict(curve=slow, lower_curve=slow))
    started = time.monotonic()
    status, out, err = run(capsys, "curve", HOSPITALS, "--deltas", "1e-6", "--time-limit", "0.5")
    took = time.monotonic() - started
    assert status == 2 and out == "" and err.count("\n") == 1
    assert err == (f"gce: error: {HOSPITALS}: --deltas: epsilon at 1 delta took longer than its estimate "
                   f"(0.006 s) and was stopped at the time limit of 0.5 s (--time-limit): ask fewer deltas or "
                   f"give more time\n")
    assert took < 3 * (1.1 * 0.5 + 0.5)  # stopped at about 0.5 + 0.05 + 0.1 + 0.25 s, not after 30 s
    assert gce.cli.SECONDS_PER_DELTA == 2e-3

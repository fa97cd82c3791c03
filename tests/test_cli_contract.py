"""The command line's output contract, in a fresh interpreter: standard output is gce's report alone.

``--json`` output is one JSON document (``json.loads`` of the whole of stdout), a text report starts
with its title line, and stderr is empty on success: nothing a library prints (HiGHS' banner, which
highspy writes on the C-level stdout when the first ``Highs()`` of a process is built; absl, DuckDB,
scipy) may come before, inside or after it. Every command runs as a subprocess
(``python -m gce ...``): in-process, pytest's capture would hide what C code writes to file
descriptor 1.

Each scenario is chosen to reach one route, and the report's ``theorem`` / ``solver`` fields (or, for
the ledger, an in-process count of the searches) prove that it does. Every interpreter costs about 1 s
of imports, so the default tier runs ten: every command in JSON once (the ledger's check and plain
status, whose paths spend and status --offline take too, in the slow tier), on the MILP, Renyi-bound,
random-allocation (with coupling), batch and exact-count routes and the ledger's search near its
budget; the ``slow`` twin adds the text forms, the coupling and exact-count solves, the 200-database
generator's other seeds and every example.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import pathlib
import random
import sqlite3
import subprocess
import sys

import pytest

import reference
from gce import load_scenario
from gce.accounting.guarantees import PureDP
from gce.ledger import Accountant
from gce.solvers import highs

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
#: Seconds a subprocess may take before the test fails (the interpreter and imports take about 1 s).
TIMEOUT = 120

# ---------------------------------------------------------------------------
# Scenarios


def rings_text(extra: str = "") -> str:
    """30 databases in six rings of five, neighbours in conflict: at most two of each ring (an odd cycle, so
    no clique cover proves it and the MILP asks HiGHS), 12 databases of pure 0.1 in the worst case."""
    edges = [[ring * 5 + i, ring * 5 + (i + 1) % 5] for ring in range(6) for i in range(5)]
    return "\n".join(['title = "Clinics on rings of five"', "databases = 30", "delta = 1e-6",
                      "[[invocations]]", 'databases = "all"', 'mechanism = { kind = "pure", epsilon = 0.1 }',
                      "[[constraints]]", 'kind = "conflicts"', f"edges = {edges}", extra]) + "\n"


#: The rings, and databases 0 and 5 together (both or neither): no longer a packing problem, so the
#: ledger's quick bracket does not apply and a search near the budget goes to the solvers.
RINGS_TOGETHER = rings_text('[[constraints]]\nkind = "together"\ndatabases = [0, 5]')

#: A noise mechanism beside a pure one: the differing multiset mixes kinds, composed by the batch engine.
BATCH = """title = "Noise and points"
databases = 8
delta = 1e-6
[[invocations]]
databases = "all"
mechanism = { kind = "gaussian", sigma = 4.0 }
[[invocations]]
databases = [0, 1, 2, 3]
repeat = 3
mechanism = { kind = "pure", epsilon = 0.05 }
[[constraints]]
kind = "at_most"
m = 3
"""

#: Gaussian noise (no exact composite route) and an explicit prior (no subsampling or allocation route).
COUPLING = """title = "Clinic 0 or clinics 1 and 2"
databases = 3
delta = 1e-6
[[invocations]]
databases = [0, 1]
mechanism = { kind = "gaussian", sigma = 3.0 }
[[invocations]]
databases = [2]
mechanism = { kind = "gaussian", sigma = 2.0 }
[hypotheses]
h0 = { kind = "point", members = [] }
h1 = { kind = "explicit", support = [[0], [1, 2]], weights = [0.5, 0.5] }
"""


def mixed_text(seed: int) -> str:
    """200 databases of six guarantee kinds, at most 8 per person and five exclusive groups: the mixed
    search's branch and bound, bounded by Renyi composition (it printed HiGHS' banner first)."""
    r = random.Random(seed)
    lines = ['title = "mixed"', "databases = 200", "delta = 1e-6"]
    pool = ['{ kind = "pure", epsilon = 0.1 }', '{ kind = "gaussian", sigma = 5.0 }',
            '{ kind = "laplace", scale = 20.0 }', '{ kind = "approx", epsilon = 0.2, delta = 1e-10 }',
            '{ kind = "gaussian", sigma = 12.0 }',
            '{ kind = "subsampled", rate = 0.05, mechanism = { kind = "gaussian", sigma = 3.0 } }']
    for i in range(200):
        for _ in range(r.choice([1, 2])):
            lines += ["[[invocations]]", f"databases = [{i}]", f"repeat = {r.choice([1, 2, 5])}",
                      f"mechanism = {r.choice(pool)}"]
    lines += ["[[constraints]]", 'kind = "at_most"', "m = 8"]
    for _ in range(5):
        lines += ["[[constraints]]", 'kind = "exclusive"', f"databases = {sorted(r.sample(range(200), 6))}"]
    return "\n".join(lines) + "\n"


def written(tmp_path: pathlib.Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# ---------------------------------------------------------------------------
# Running gce


def gce(*args: str, cwd: pathlib.Path = ROOT, status: int = 0) -> subprocess.CompletedProcess:
    """``python -m gce ARGS`` in a fresh interpreter; its exit status must be ``status``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    done = subprocess.run([sys.executable, "-m", "gce", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, stdin=subprocess.DEVNULL, timeout=TIMEOUT)
    assert done.returncode == status, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    return done


def one_json(done: subprocess.CompletedProcess):
    """stdout as one JSON document (nothing before or after it), and nothing on stderr."""
    assert done.stderr == "", done.stderr
    assert done.stdout.startswith(("{", "[")), done.stdout[:300]
    return json.loads(done.stdout)


def text_report(done: subprocess.CompletedProcess, first_line: str, limited: bool = False) -> list[str]:
    """stdout's lines, the first of which must be ``first_line``, and nothing on stderr; ``limited``: a first
    line saying that the time limit was reached may come before it (then it is dropped)."""
    assert done.stderr == "", done.stderr
    lines = done.stdout.splitlines()
    if limited and lines and lines[0].startswith("time limit reached: a certified but coarser answer ("):
        lines = lines[1:]
    assert lines and lines[0] == first_line, done.stdout[:300]
    return lines


@pytest.fixture
def highs_count(monkeypatch):
    """How many ``Highs`` objects gce built in this process since the fixture was made."""
    built = []
    original = highs.new_highs

    def counted():
        built.append(1)
        return original()

    monkeypatch.setattr(highs, "new_highs", counted)
    return built


# ---------------------------------------------------------------------------
# solve: one route a scenario


def test_solve_json_milp_route_asks_highs(tmp_path, highs_count):
    path = written(tmp_path, "rings.toml", rings_text())
    data = one_json(gce("solve", path, "--json"))
    assert data["solver"] == "milp" and data["exact"] is True and data["theorem"] == "kairouz-III.3"
    h1 = data["witness"]["h1"]
    assert data["witness"]["h0"] == [] and len(h1) == 12 and data["differing_count"] == 12
    assert all(len([d for d in h1 if d // 5 == ring]) == 2 for ring in range(6))  # two of each ring,
    assert not any((d + 1) % 5 == e % 5 and d // 5 == e // 5 for d in h1 for e in h1)  # never neighbours
    # 12 pure 0.1 composed exactly (002 Thm. III.3, by the formula): delta(epsilon) = 1e-6 at the answer
    assert reference.kairouz_iii3_by_formula(12, 0.1, 0.0, data["epsilon"]) == pytest.approx(1e-6, rel=1e-6)
    # the same scenario in this process builds a Highs: the subprocess met the banner and kept it off stdout
    from gce import solve

    assert solve(load_scenario(path)).solver == "milp" and len(highs_count) >= 1


def test_solve_json_renyi_bound_on_200_mixed_databases(tmp_path):
    data = one_json(gce("solve", written(tmp_path, "mixed.toml", mixed_text(3)), "--json", "--time-limit", "1"))
    assert data["theorem"].startswith("renyi") and data["solver"] == "milp" and data["exact"] is False
    assert data["delta"] == 1e-6 and math.isfinite(data["epsilon"])
    assert 0 < data["epsilon"] < data["baselines"]["classic"]["epsilon"]
    if data["bracket"] is not None:  # composed when the time limit leaves room for the lower curve
        assert 0 < data["bracket"]["lower"] <= data["bracket"]["upper"] == data["epsilon"]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [4, 5])
def test_solve_json_renyi_bound_on_200_mixed_databases_slow(tmp_path, seed):
    """The generator's other seeds at the default time limit (5 s each)."""
    done = gce("solve", written(tmp_path, "mixed.toml", mixed_text(seed)), "--json")
    data = one_json(done)
    assert data["title"] == "mixed" and data["solver"] == "milp" and data["exact"] is False
    assert 0 < data["epsilon"] < data["baselines"]["classic"]["epsilon"]
    text_report(gce("solve", written(tmp_path, "mixed.toml", mixed_text(seed)), "--time-limit", "1"), "mixed",
                limited=True)


@pytest.mark.slow
def test_solve_json_exact_count_route():
    data = one_json(gce("solve", str(EXAMPLES / "medical_practices.toml"), "--json"))
    assert data["theorem"] == "exact-count" and data["exact"] is True and data["solver"] == "composite"
    assert data["epsilon"] == pytest.approx(0.846248, abs=5e-7)  # README's console session
    assert data["epsilon"] < data["baselines"]["worst pair"]["epsilon"]


def test_solve_json_random_allocation_and_coupling_routes():
    data = one_json(gce("solve", str(EXAMPLES / "dp_sgd_allocation.toml"), "--json"))
    assert data["theorem"] == "random allocation" and data["exact"] is False
    assert 0.855 < data["bracket"]["lower"] <= data["epsilon"] < 0.861  # 0.8580 (README)
    # the coupling route answered too (a note), and the worst pair's composition ran
    assert any(note.startswith("coupling (joint convexity): epsilon") for note in data["notes"])
    assert data["epsilon"] < data["baselines"]["worst pair"]["epsilon"] < data["baselines"]["classic"]["epsilon"]


@pytest.mark.slow
def test_solve_json_coupling_route(tmp_path):
    data = one_json(gce("solve", written(tmp_path, "coupling.toml", COUPLING), "--json"))
    assert data["theorem"] == "coupling (joint convexity)" and data["solver"] == "composite"
    assert 0 < data["epsilon"] < data["baselines"]["worst pair"]["epsilon"]


# ---------------------------------------------------------------------------
# curve, calibrate, membership


#: The keys of ``gce curve --json``: the report's (as in ``solve --json``) and the table, one object a row.
CURVE_KEYS = {"title", "theorem", "exact", "status", "time_limit_reached", "rtol", "curve", "plot", "notes"}
CURVE_ROW_KEYS = {"delta", "epsilon", "lower", "upper", "classic_epsilon"}


def test_curve_json_batch_route(tmp_path):
    data = one_json(gce("curve", written(tmp_path, "batch.toml", BATCH), "--json", "--deltas", "1e-6", "1e-3",
                        "--rtol", "0.02"))
    assert set(data) == CURVE_KEYS and all(set(row) == CURVE_ROW_KEYS for row in data["curve"])
    assert data["theorem"] == "batch" and data["exact"] is False and data["title"] == "Noise and points"
    assert data["status"] == "complete" and data["time_limit_reached"] is False and data["rtol"] == 0.02
    (low, high) = data["curve"]
    assert [low["delta"], high["delta"]] == [1e-6, 1e-3]
    assert high["epsilon"] < low["epsilon"] < low["classic_epsilon"]
    assert high["epsilon"] < high["classic_epsilon"]
    for row in (low, high):  # the upper end is the epsilon; the lower end, when the route gives one, below it
        assert row["upper"] == row["epsilon"]
        assert row["lower"] is None or 0 < row["lower"] <= row["upper"]
    # the report's notes (the batch composition's bracket at the target 1e-6), not only the scenario's
    assert any(note.startswith("batch composition: epsilon in [") for note in data["notes"])


@pytest.mark.slow
def test_curve_strict_exits_3_when_the_time_limit_is_reached(tmp_path):
    """200 mixed databases in 0.2 s: neither the search nor the classic column's composition completes;
    the table is printed all the same (certified), and --strict exits with 3."""
    path = written(tmp_path, "mixed.toml", mixed_text(3))
    data = one_json(gce("curve", path, "--json", "--deltas", "1e-6", "1e-3", "--time-limit", "0.2", "--strict",
                        status=3))
    assert set(data) == CURVE_KEYS and data["status"] == "time limit reached" and data["time_limit_reached"]
    assert any(note.startswith("time limit reached: ") for note in data["notes"])
    for row in data["curve"]:
        assert math.isfinite(row["epsilon"]) and row["epsilon"] < row["classic_epsilon"]
    lines = text_report(gce("curve", path, "--deltas", "1e-6", "--time-limit", "0.2", "--strict", status=3),
                        "time limit reached: a certified but coarser table (1% asked; the brackets and the notes "
                        "say what was reached)")
    assert lines[1] == "mixed"


def test_calibrate_json_through_the_exact_count_route():
    data = one_json(gce("calibrate", str(EXAMPLES / "medical_practices.toml"), "--json",
                        "--target-epsilon", "1", "--target-delta", "1e-6"))
    assert data["parameter"] == "epsilon" and data["exact"] is True and data["theorem"] == "exact-count"
    # brute force (001 Sec. III-A): fewer than 3 of 8 practices against at least 3, each (eps, 1e-9)-DP
    sets = [frozenset(c) for k in range(9) for c in itertools.combinations(range(8), k)]
    h0 = [(b, 1 / 37) for b in sets if len(b) < 3]  # 1 + 8 + 28 sets
    h1 = [(b, 1 / 219) for b in sets if len(b) >= 3]
    assert len(h0) == 37 and len(h1) == 219

    def delta(eps: float) -> float:
        return reference.mixture_delta(h0, h1, [(i, eps, 1e-9) for i in range(8)], 1.0)

    eps = data["per_invocation_epsilon"]
    assert delta(eps) <= 1e-6 < delta(eps * (1 + 1e-3))  # meets the target, and is within 0.1% of the largest
    assert data["classic"]["per_invocation_epsilon"] < eps


@pytest.mark.slow
def test_calibrate_json_through_the_milp(tmp_path):
    data = one_json(gce("calibrate", written(tmp_path, "rings.toml", rings_text()), "--json",
                        "--target-epsilon", "1", "--target-delta", "1e-6"))
    assert data["parameter"] == "epsilon" and data["exact"] is True and data["theorem"] == "kairouz-III.3"
    # 12 of the 30 databases differ at worst: the per-invocation epsilon composed 12 times meets the target
    eps = data["per_invocation_epsilon"]
    assert data["epsilon"] <= 1.0 and reference.kairouz_iii3_by_formula(12, eps, 0.0, 1.0) <= 1e-6 * (1 + 1e-9)
    assert data["classic"]["per_invocation_epsilon"] < eps


def test_membership_json_through_duckdb():
    data = one_json(gce("membership", "examples/store_members.csv", "--scenario", "examples/store_chain.toml",
                        "--json"))
    assert data["individuals"] == 300 and data["histogram"][0] == {"databases": 1, "individuals": 177}
    assert data["candidates"][-1]["m"] == 4


# ---------------------------------------------------------------------------
# The ledger: created once in this process, then every action in its own subprocess

BUDGET = 1.65
#: 0.2 on databases 1 and 3 (one ring's two non-neighbours): the worst case rises from 12 x 0.1 = 1.2 to
#: 1.6 (1 and 3 at 0.3 each, two of 0.1 in the other five rings), within 1.65, but the incremental bound
#: 1.2 + 2 x 0.2 + ... straddles the budget until the solvers narrow it.
REQUEST = ("--databases", "1,3", "--mechanism", 'kind = "pure", epsilon = 0.2')


@pytest.fixture
def ledger(tmp_path) -> str:
    path = str(tmp_path / "ledger.sqlite")
    scenario = load_scenario(written(tmp_path, "rings.toml", RINGS_TOGETHER))
    Accountant.create(path, scenario, budget_epsilon=BUDGET, budget_delta=1e-6).close()
    return path


def test_the_ledger_request_is_decided_by_a_search_that_builds_highs(ledger, highs_count):
    with Accountant(ledger) as accountant:
        before = accountant.solves
        decision = accountant.check([1, 3], PureDP(0.2))
        assert decision.admitted and decision.lower[0] == pytest.approx(1.6, abs=1e-12)
        assert accountant.solves > before and len(highs_count) >= 1


def test_ledger_init_json(tmp_path):
    path = written(tmp_path, "rings.toml", RINGS_TOGETHER)
    data = one_json(gce("ledger", "init", path, "--budget-epsilon", str(BUDGET), "--budget-delta", "1e-6",
                        "--ledger", str(tmp_path / "l.sqlite"), "--json"))
    assert data["title"] == "Clinics on rings of five" and data["entries"] == 1 and data["databases"] == 30
    assert data["upper"] == pytest.approx([1.2, 0.0], abs=1e-12) and data["worst_set_size"] == 12


@pytest.mark.parametrize("action", [pytest.param("check", marks=pytest.mark.slow), "spend"])
def test_ledger_check_and_spend_json_near_the_budget(ledger, action):
    extra = ("--analyst", "ana") if action == "spend" else ()
    data = one_json(gce("ledger", action, *REQUEST, *extra, "--ledger", ledger, "--json"))
    assert data["admitted"] is True and data["sequence"] == (2 if action == "spend" else None)
    # the witness reaches 1.6 exactly; the certified bound is HiGHS' dual bound with its slack (1e-6 relative)
    assert data["lower"][0] == pytest.approx(1.6, abs=1e-12) and 1.6 <= data["upper"][0] <= 1.6 * (1 + 1e-5)
    assert data["remaining"][0] == pytest.approx(BUDGET - data["upper"][0], abs=1e-12)


def test_ledger_status_offline_json(ledger):
    data = one_json(gce("ledger", "status", "--offline", "--ledger", ledger, "--json"))
    assert data["entries"] == 1 and data["upper"][0] == pytest.approx(1.2, abs=1e-12)
    # offline: the admitted workload solved as one scenario (the MILP), 12 pure 0.1 composed exactly
    offline = data["offline"]
    assert reference.kairouz_iii3_by_formula(12, 0.1, 0.0, offline["epsilon"]) == pytest.approx(offline["delta"],
                                                                                                rel=1e-6)


def test_ledger_history_json(ledger):
    with Accountant(ledger) as accountant:
        accountant.spend([1, 3], PureDP(0.2), analyst="ana")
    data = one_json(gce("ledger", "history", "--ledger", ledger, "--json"))
    assert [e["sequence"] for e in data] == [1, 2] and data[1]["analyst"] == "ana" and data[1]["admitted"]


def test_ledger_verify_and_truncate_json_with_an_infinite_request(ledger):
    """verify and truncate print one JSON document, a refused request whose statistic is infinite included
    (written as "inf"), and a damaged ledger's verify too (exit 1)."""
    with Accountant(ledger) as accountant:
        assert not accountant.spend(1, PureDP(1e308), repeat=3).admitted
    data = one_json(gce("ledger", "verify", "--ledger", ledger, "--json"))
    assert data["intact"] is True and (data["entries"], data["admitted"]) == (2, 1) and len(data["head"]) == 64
    with sqlite3.connect(ledger) as raw:
        raw.execute("UPDATE gce_entries SET analyst = 'eve' WHERE seq = 2")
    damaged = one_json(gce("ledger", "verify", "--ledger", ledger, "--json", status=1))
    assert damaged["intact"] is False and (damaged["entry"], damaged["last_good"]) == (2, 1)
    kept = one_json(gce("ledger", "truncate", "--after", "1", "--ledger", ledger, "--json"))
    assert kept["intact"] is True and kept["entries"] == 1


# ---------------------------------------------------------------------------
# The text forms (slow: one more interpreter each)


@pytest.mark.slow
def test_text_forms_start_with_their_first_line(tmp_path):
    rings = written(tmp_path, "rings.toml", rings_text())
    lines = text_report(gce("solve", rings), "Clinics on rings of five")
    assert "solver milp" in lines[-2] and lines[-1] == "exact: yes"
    for example, title in (("medical_practices", "Medical practices: fewer than 3 of 8 vs at least 3"),
                           ("dp_sgd_allocation", "DP-SGD, one epoch of 100 balls-and-bins steps"),
                           ("hospitals", "Hospitals: nobody stays in more than 365 of 1,000 hospitals a year")):
        text_report(gce("solve", str(EXAMPLES / f"{example}.toml")), title)
    text_report(gce("solve", written(tmp_path, "coupling.toml", COUPLING)), "Clinic 0 or clinics 1 and 2")
    lines = text_report(gce("curve", written(tmp_path, "batch.toml", BATCH)), "Noise and points")
    assert lines[1].endswith("bracket (GCE)") and "theorem: batch; exact: no" in lines
    assert lines[lines.index("theorem: batch; exact: no") + 1].startswith("note: ")  # the report's notes
    text_report(gce("calibrate", rings, "--target-epsilon", "1", "--target-delta", "1e-6"),
                "Clinics on rings of five")
    text_report(gce("membership", "examples/store_members.csv", "--scenario", "examples/store_chain.toml"),
                "Store chain: membership limit estimated from the sales records")
    # the ledger: init prints where it created the ledger, then its status (the title first)
    together = written(tmp_path, "together.toml", RINGS_TOGETHER)
    ledger = str(tmp_path / "text.sqlite")
    lines = text_report(gce("ledger", "init", together, "--budget-epsilon", str(BUDGET), "--budget-delta", "1e-6",
                            "--ledger", ledger), f"created {ledger}")
    assert lines[1] == "Clinics on rings of five"
    text_report(gce("ledger", "check", *REQUEST, "--ledger", ledger),
                "admitted: fits the budget for every allowed membership set")
    text_report(gce("ledger", "spend", *REQUEST, "--ledger", ledger),
                "admitted (entry 2): fits the budget for every allowed membership set")
    text_report(gce("ledger", "status", "--offline", "--ledger", ledger), "Clinics on rings of five")
    header = f"{'entry':>6}  {'time (UTC)':26}  {'analyst':10}  {'answer':8}  {'databases':16}  mechanism"
    assert len(text_report(gce("ledger", "history", "--ledger", ledger), header)) == 3


@pytest.mark.slow
def test_ledger_status_json_without_offline(ledger):
    data = one_json(gce("ledger", "status", "--ledger", ledger, "--json"))
    assert data["entries"] == 1 and "offline" not in data


@pytest.mark.slow
@pytest.mark.parametrize("example", sorted(p.stem for p in EXAMPLES.glob("*.toml")))
def test_every_example_solves_to_one_json_document(example):
    data = one_json(gce("solve", str(EXAMPLES / f"{example}.toml"), "--json"))
    assert data["theorem"] and (data["epsilon"] == "inf" or math.isfinite(data["epsilon"]))


def test_help_spells_out_the_abbreviations_and_names_the_glossary(capsys):
    """--help ends with the abbreviations (every one also in docs/glossary.md); subcommands point there."""
    from gce.cli import GLOSSARY, main

    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert out.rstrip().endswith(GLOSSARY.splitlines()[-1])
    glossary = (ROOT / "docs" / "glossary.md").read_text()
    for term in ("HDP", "PLD", "RDP", "zCDP", "GDP", "MILP", "top-m", "kairouz-III.3", "witness", "bracket"):
        assert term in out and term in glossary, term
    for command in (["solve"], ["ledger"]):
        with pytest.raises(SystemExit):
            main([*command, "--help"])
        assert "abbreviations (HDP, PLD" in capsys.readouterr().out

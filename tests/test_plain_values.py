"""Issue 38, family 8: every answer is plain Python, whatever route produced it.

Engines compute in numpy; a ``numpy.bool_`` that reached ``Report.exact`` made ``gce solve --json`` end in
``TypeError: Object of type bool is not JSON serializable`` on 3 of 16 random mixed scenarios. The property:
for random scenarios of every route (mixed guarantees as :mod:`benchmarks.mixed_scenarios` draws them,
Poisson-subsampled Gaussians, the allocation and rates priors, an exact prior, a target epsilon), every field
of the report, of its curve rows, of a calibration (of a scenario and of training noise) and of every ledger
answer (check, spend, status, history, verify, offline) is a plain Python value all the way down (``bool``,
``int``, ``float``, ``str``, ``None``, and lists, tuples, sets and dicts of them: no numpy scalar, not even
``numpy.float64``, which ``json.dumps`` would let through); ``json.dumps(report.to_dict())`` works with NaN
refused; ``Report.from_dict`` gives back the same dictionary; and ``gce solve|curve|calibrate --json`` on
the same scenario written as a file prints JSON of the same values.

The default tier draws a few small scenarios per route (hypothesis, about 3 s in all); ``-m slow`` draws many
more, and the issue's own case: 16 random mixed scenarios of 1,000 databases through ``gce solve --json``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import pathlib
import sys

import hypothesis
import numpy as np
import pytest
from hypothesis import strategies as st

import gce
import tiers
from gce.cli import main
from gce.constraints import AtMost, ConstraintSet, Exclusive
from gce.files.constraints import constraint_to_dict
from gce.files.hypotheses import hypothesis_to_dict
from gce.files.tables import toml_value
from gce.ledger import Accountant
from gce.ledger.accountant import mechanism_to_dict
from gce.plot import bracketed_table, classic_curve
from gce.report import Report

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import mixed_scenarios  # noqa: E402

#: The types a field may hold: scalars exactly of these types (``type(x) is float``: a ``numpy.float64`` is a
#: float subclass and is refused), and containers of them.
SCALARS = (bool, int, float, str, type(None))
CONTAINERS = (list, tuple, dict, set, frozenset)
#: Fields that hold an engine object by design (a curve: the report's, or the calibration's report's).
ENGINE_FIELDS = {"curve", "lower_curve", "classic_curve"}
SEEDS = st.integers(0, 2**32 - 1)


def leaks(value: object, *, records: bool = False) -> list[str]:
    """Where ``value`` holds something other than plain Python: ``["$.exact: numpy.bool_", ...]``.

    With ``records``, dataclasses (a report's baselines, a calibration's report) are walked field by field,
    except :data:`ENGINE_FIELDS`; without, only JSON's shapes (what ``to_dict`` must return) are plain."""
    found, stack = [], [("$", value)]
    while stack:
        path, item = stack.pop()
        kind = type(item)
        if kind in SCALARS:
            continue
        if kind is dict:
            for key, child in item.items():
                if type(key) is not str:
                    found.append(f"{path} key {key}: {type(key).__module__}.{type(key).__name__}")
                stack.append((f"{path}.{key}", child))
        elif kind in CONTAINERS:
            stack.extend((f"{path}[{i}]", child) for i, child in enumerate(item))
        elif records and dataclasses.is_dataclass(item) and not isinstance(item, type):
            stack.extend((f"{path}.{f.name}", getattr(item, f.name)) for f in dataclasses.fields(item)
                         if f.name not in ENGINE_FIELDS)
        else:
            found.append(f"{path}: {kind.__module__}.{kind.__name__}")
    return found


def check_plain(record: object, data: dict) -> None:
    """``record``'s fields and its ``to_dict()`` (``data``) are plain, and ``data`` is strict JSON."""
    assert leaks(record, records=True) == [], type(record).__name__
    assert leaks(data) == []
    json.dumps(data, allow_nan=False)


def check_report(report: Report) -> dict:
    """A report: plain, JSON, ``from_dict`` round trip; its curve rows plain. Returns its JSON form."""
    data = report.to_dict()
    check_plain(report, data)
    again = Report.from_dict(json.loads(json.dumps(data)))
    assert again.to_dict() == data
    check_plain(again, again.to_dict())
    if report.curve is not None and report.delta > 0:
        rows = bracketed_table(report, None, [report.delta, 1e-3])
        assert [row.delta for row in rows] == [report.delta, 1e-3]
        for row in rows:
            assert leaks(row, records=True) == []
            assert type(row.epsilon) is float and type(row.exact) is bool
    return data


# ---------------------------------------------------------------------------
# Random scenarios, one builder a route


def mixed(rng: np.random.Generator) -> gce.Scenario:
    """A small scenario of :mod:`mixed_scenarios`' shape: pure, approximate, Gaussian, Laplace and
    subsampled guarantees, at_most m, sometimes exclusive groups."""
    shape = mixed_scenarios.Shape(int(rng.integers(2**31)), int(rng.integers(6, 20)), int(rng.integers(2, 6)),
                                  int(rng.integers(1, 5)), bool(rng.random() < 0.5),
                                  float(rng.choice([1e-6, 1e-5])))
    return mixed_scenarios.scenario(shape)


def poisson(rng: np.random.Generator) -> gce.Scenario:
    """Poisson-subsampled Gaussians over many steps beside plain ones (the solve's Poisson route)."""
    n = int(rng.integers(3, 8))
    q, sigma = float(rng.uniform(0.005, 0.1)), float(rng.uniform(0.8, 3.0))
    invocations = [gce.Invocation(d, gce.Subsampled(q, gce.GaussianMechanism(sigma)), int(rng.integers(10, 300)))
                   for d in range(n)]
    if rng.random() < 0.5:
        invocations.append(gce.Invocation(0, gce.GaussianMechanism(float(rng.uniform(5, 20)))))
    return gce.Scenario(n, invocations, ConstraintSet(n, [AtMost(int(rng.integers(1, n + 1)))]),
                        delta=float(rng.choice([1e-6, 1e-5])))


def allocation(rng: np.random.Generator) -> gce.Scenario:
    """In none against in exactly k of n (random allocation), Gaussian mechanisms."""
    n = int(rng.integers(5, 40))
    k = int(rng.integers(1, 3))  # two of n at a small sigma takes seconds: sigma >= 2 there
    sigma = float(rng.uniform(0.8, 3.0) if k == 1 else rng.uniform(2.0, 3.5))
    return gce.Scenario(n, [gce.Invocation(d, gce.GaussianMechanism(sigma)) for d in range(n)],
                        hypotheses=(gce.Point(()), gce.Uniform(k, k)), delta=float(rng.choice([1e-6, 1e-5])))


def rates(rng: np.random.Generator) -> gce.Scenario:
    """In none against each database at its own rate (Poisson subsampling), approximate or Gaussian."""
    n = int(rng.integers(2, 9))
    g = gce.ApproxDP(float(rng.uniform(0.1, 1.0)), 1e-8) if rng.random() < 0.5 else \
        gce.GaussianMechanism(float(rng.uniform(1.0, 4.0)))
    prior = gce.Rates(tuple(float(r) for r in rng.uniform(0.01, 0.3, size=n)))
    return gce.Scenario(n, [gce.Invocation(d, g) for d in range(n)], hypotheses=(gce.Point(()), prior),
                        epsilon=1.0) if rng.random() < 0.5 else \
        gce.Scenario(n, [gce.Invocation(d, g) for d in range(n)], hypotheses=(gce.Point(()), prior), delta=1e-6)


def exact_prior(rng: np.random.Generator) -> gce.Scenario:
    """Two uniform priors over a few databases, pure guarantees (the exact and coupling routes)."""
    n = int(rng.integers(2, 6))
    invocations = [gce.Invocation(d, gce.PureDP(float(rng.uniform(0.05, 1.0)))) for d in range(n)]
    return gce.Scenario(n, invocations, hypotheses=(gce.Uniform(0, 1), gce.Uniform(1, min(n, 2))), delta=1e-6)


def target_epsilon(rng: np.random.Generator) -> gce.Scenario:
    """A mixed scenario asked for delta at an epsilon."""
    s = mixed(rng)
    return gce.Scenario(s.n, s.invocations, s.constraints, epsilon=float(rng.uniform(0.5, 3.0)), title=s.title)


ROUTES = {"mixed": mixed, "poisson": poisson, "allocation": allocation, "rates": rates,
          "exact prior": exact_prior, "target epsilon": target_epsilon}


def solved(route: str, seed: int) -> tuple[gce.Scenario, Report]:
    scenario = ROUTES[route](np.random.default_rng(seed))
    return scenario, gce.solve(scenario, time_limit=20)


@tiers.given(1, 15, st.sampled_from(sorted(ROUTES)), SEEDS)
def _every_route_answers_in_plain_python(route, seed):
    _, report = solved(route, seed)
    check_report(report)


test_every_route_answers_in_plain_python, test_every_route_answers_in_plain_python_slow = \
    _every_route_answers_in_plain_python


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_each_route_once_in_plain_python(route):
    """Every route, at a fixed seed (the property above draws the routes at random)."""
    _, report = solved(route, 38)
    data = check_report(report)
    assert type(data["exact"]) is bool and type(data["differing_count"]) is int


def test_the_checker_finds_numpy_anywhere():
    """The property can fail: a numpy scalar at any depth is found, a float64 too, and named by its place."""
    assert leaks({"a": [1, (2.0, {"b": np.bool_(True)})]}) == [f"$.a[1][1].b: numpy.{type(np.bool_(1)).__name__}"]
    assert leaks([np.float64(0.5)]) == ["$[0]: numpy.float64"]
    assert leaks({np.int64(1): 2}) == ["$ key 1: numpy.int64"]
    assert leaks(np.zeros(2)) == ["$: numpy.ndarray"]
    assert leaks({"x": [True, None, "s", 1, 2.5]}) == []
    report = Report(0.5, 1e-6, "kairouz-III.3", True, None, (), None)
    object.__setattr__(report, "witness_epsilon", np.float64(0.5))  # behind the constructor's back
    assert leaks(report, records=True) == ["$.witness_epsilon: numpy.float64"]


def test_numpy_values_given_to_a_report_become_plain():
    """The constructor normalises what an engine hands it (the issue's numpy.bool_ among them)."""
    report = Report(np.float64(0.5), np.float64(1e-6), "t", np.bool_(False), (frozenset([np.int64(1)]), frozenset()),
                    (np.int64(0),), None, witness_epsilon=np.float32(0.25), differing_count=np.int64(3),
                    bracket=(np.float64(0.4), np.float64(0.5)), rtol=np.float64(0.01),
                    time_limit_reached=np.bool_(True),
                    baselines={"classic": gce.report.Baseline("classic", np.float64(1.0), np.float64(1e-6), "t")})
    check_report(report)
    assert report.to_dict()["witness"] == {"h0": [1], "h1": []}


# ---------------------------------------------------------------------------
# Calibrations


@tiers.given(1, 8, SEEDS, st.booleans())
def _a_calibration_is_plain(seed, sigma):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 12))
    g = gce.GaussianMechanism(float(rng.uniform(1.0, 5.0))) if sigma else gce.PureDP(float(rng.uniform(0.05, 0.5)))
    scenario = gce.Scenario(n, [gce.Invocation(d, g, int(rng.integers(1, 4))) for d in range(n)],
                            ConstraintSet(n, [AtMost(int(rng.integers(1, n + 1)))]))
    result = gce.calibrate(scenario, target_epsilon=float(rng.uniform(0.5, 3.0)), target_delta=1e-6, time_limit=20)
    check_plain(result, result.to_dict())
    check_report(result.report)
    assert result.parameter == ("sigma" if sigma else "epsilon")


test_a_calibration_is_plain, test_a_calibration_is_plain_slow = _a_calibration_is_plain


@tiers.parametrize("sampling", ["poisson", "shuffled"], default=1)
def test_a_noise_calibration_is_plain(sampling):
    result = gce.calibrate_noise(2.0, 1e-5, steps_per_epoch=10, epochs=2, sampling=sampling, rtol=0.05)
    data = result.to_dict()
    check_plain(result, data)
    assert type(data["sigma"]) is float and data["steps"] == 20 and data["sampling"] == sampling


# ---------------------------------------------------------------------------
# Ledger answers


FILTERS = ("basic", "renyi", "zcdp", "gdp")


def takes(filter: str, rng: np.random.Generator) -> list:
    """Random guarantees of the kinds ``filter`` takes (gce.ledger.filters)."""
    def u(low: float, high: float) -> float:
        return float(rng.uniform(low, high))

    kinds = {
        "pure": lambda: gce.PureDP(u(0.05, 0.5)), "approx": lambda: gce.ApproxDP(u(0.05, 0.5), 1e-7),
        "laplace": lambda: gce.LaplaceMechanism(u(2.0, 20.0)), "gaussian": lambda: gce.GaussianMechanism(u(2.0, 8.0)),
        "subsampled": lambda: gce.Subsampled(u(0.01, 0.5), gce.PureDP(u(0.1, 1.0))),
        "zcdp": lambda: gce.ZCDP(u(0.001, 0.05)), "gdp": lambda: gce.GaussianDP(u(0.05, 0.5)),
    }
    names = {"basic": ["pure", "approx", "laplace", "subsampled"],
             "renyi": ["pure", "gaussian", "laplace", "subsampled", "zcdp", "gdp"],
             "zcdp": ["pure", "gaussian", "laplace", "zcdp", "gdp"], "gdp": ["gaussian", "gdp"]}[filter]
    return [kinds[name]() for name in names]


@tiers.given(1, 12, SEEDS, st.sampled_from(FILTERS))
def _ledger_answers_are_plain(tmp_path_factory, seed, filter):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 10))
    pool = takes(filter, rng)
    scenario = gce.Scenario(n, [gce.Invocation(0, pool[0])], ConstraintSet(n, [AtMost(int(rng.integers(1, n + 1)))]))
    path = tmp_path_factory.mktemp("ledger") / "l.sqlite"
    with Accountant.create(path, scenario, budget_epsilon=float(rng.uniform(2.0, 10.0)), budget_delta=1e-5,
                           filter=filter) as ledger:
        for _ in range(int(rng.integers(2, 6))):
            databases = sorted({int(d) for d in rng.integers(0, n, size=int(rng.integers(1, n + 1)))})
            guarantee = pool[int(rng.integers(len(pool)))]
            repeat = int(rng.integers(1, 4))
            check = ledger.check(databases, guarantee, repeat=repeat)
            check_plain(check, check.to_dict())
            spend = ledger.spend(databases, guarantee, repeat=repeat)
            check_plain(spend, spend.to_dict())
            assert type(spend.sequence) is int and type(spend.admitted) is bool
        status = ledger.status()
        check_plain(status, status.to_dict())
        for entry in ledger.history():
            check_plain(entry, entry.to_dict())
        verified = ledger.verify()
        check_plain(verified, verified.to_dict())
        check_report(ledger.offline(time_limit=10))


test_ledger_answers_are_plain, test_ledger_answers_are_plain_slow = _ledger_answers_are_plain


# ---------------------------------------------------------------------------
# The command line: gce solve|curve|calibrate --json on the scenario written as a file


def scenario_file(scenario: gce.Scenario, folder: pathlib.Path) -> pathlib.Path:
    """``scenario`` as a scenario file (TOML), through the file readers' inverses."""
    def value(v: object) -> str:
        return toml_value(v, limit=10**9)

    lines = [f"title = {value(scenario.title)}", f"databases = {scenario.n}"]
    if scenario.delta is not None or scenario.epsilon is not None:
        lines.append(f"delta = {value(scenario.delta)}" if scenario.delta is not None else
                     f"epsilon = {value(scenario.epsilon)}")
    for group in scenario.invocations.groups:
        lines += ["[[invocations]]", f"databases = {value(list(group.databases))}",
                  f"mechanism = {value(mechanism_to_dict(group.guarantee))}", f"repeat = {group.repeat}"]
    if scenario.hypotheses is not None:
        h0, h1 = scenario.hypotheses
        lines += ["[hypotheses]", f"h0 = {value(hypothesis_to_dict(h0))}", f"h1 = {value(hypothesis_to_dict(h1))}"]
    else:
        for constraint in scenario.constraints.constraints:
            lines.append("[[constraints]]")
            lines += [f"{key} = {value(v)}" for key, v in constraint_to_dict(constraint).items()]
    path = folder / "scenario.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def cli_json(args: list[str], capsys) -> dict:
    """``gce ARGS --json`` in this process: exit 0, nothing on stderr, one JSON object of plain values."""
    status = main([*args, "--json"])
    out, err = capsys.readouterr()
    assert (status, err) == (0, ""), err
    data = json.loads(out)
    assert leaks(data) == []
    return data


@tiers.given(1, 10, st.sampled_from(sorted(ROUTES)), SEEDS, settings=hypothesis.settings(
    deadline=None, suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture]))
def _the_command_line_prints_the_same_plain_answer(tmp_path_factory, capsys, route, seed):
    scenario, report = solved(route, seed)
    file = str(scenario_file(scenario, tmp_path_factory.mktemp("cli")))
    data = cli_json(["solve", file, "--time-limit", "20"], capsys)
    expected = json.loads(json.dumps(report.to_dict()))
    assert {k: data[k] for k in ("epsilon", "delta", "theorem", "exact")} == \
        {k: expected[k] for k in ("epsilon", "delta", "theorem", "exact")}
    Report.from_dict(data)
    if scenario.delta is not None and seed % 2:  # half the draws: the table too
        table = cli_json(["curve", file, "--deltas", "1e-6", "1e-3", "--quiet", "--time-limit", "20"], capsys)
        assert [row["delta"] for row in table["curve"]] == [1e-6, 1e-3] and type(table["exact"]) is bool


test_the_command_line_prints_the_same_plain_answer, test_the_command_line_prints_the_same_plain_answer_slow = \
    _the_command_line_prints_the_same_plain_answer


def test_calibrate_and_curve_json_on_the_command_line_are_plain(tmp_path, capsys):
    scenario = gce.Scenario(4, [gce.Invocation(d, gce.PureDP(0.1), 2) for d in range(4)],
                            ConstraintSet(4, [AtMost(2)]))
    data = cli_json(["calibrate", str(scenario_file(scenario, tmp_path)), "--target-epsilon", "1",
                     "--target-delta", "1e-6"], capsys)
    assert data["parameter"] == "epsilon" and type(data["epsilon"]) is float
    table = cli_json(["curve", str(tmp_path / "scenario.toml"), "--deltas", "1e-6", "1e-3", "--quiet"], capsys)
    assert [row["delta"] for row in table["curve"]] == [1e-6, 1e-3] and type(table["exact"]) is bool
    training = cli_json(["calibrate", "--target-epsilon", "2", "--target-delta", "1e-5", "--steps-per-epoch", "10",
                         "--epochs", "2", "--sampling", "poisson", "--rtol", "0.05"], capsys)
    assert training["sampling"] == "poisson" and training["steps"] == 20


@pytest.mark.slow
def test_the_issues_sixteen_mixed_scenarios_of_1000_databases(tmp_path, capsys):
    """The issue's case: 16 random mixed scenarios of 1,000 databases (the benchmark's shape, a seed not used
    elsewhere) through ``gce solve --json``, and the same reports in Python."""
    for shape in mixed_scenarios.shapes(16 * 27, seed=38)[::27]:
        shape = dataclasses.replace(shape, databases=1000)
        scenario = mixed_scenarios.scenario(shape)
        report = gce.solve(scenario, time_limit=30)
        check_report(report)
        folder = tmp_path / str(shape.seed)
        folder.mkdir()
        data = cli_json(["solve", str(scenario_file(scenario, folder)), "--time-limit", "30"], capsys)
        assert type(data["exact"]) is bool and math.isfinite(data["epsilon"])

"""The report: JSON round trip, terminal table and HTML for notebooks."""

from __future__ import annotations

import json
import pathlib

import pytest

from gce import AtMost, ConstraintSet, Invocation, PureDP, Report, Scenario, load_scenario, solve
from gce.errors import InvalidParameterError

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def test_json_round_trip_keeps_every_field():
    for name in ("hospitals", "subsidiaries", "store_chain"):
        report = solve(load_scenario(EXAMPLES / f"{name}.toml"))
        data = json.loads(json.dumps(report.to_dict()))
        again = Report.from_dict(data)
        assert again.to_dict() == data
        assert again.epsilon == report.epsilon and again.witness == report.witness
        assert str(again) == str(report)


def test_infinite_epsilon_round_trips_as_the_string_inf(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('databases = 3\ndelta = 1e-9\n[[invocations]]\ndatabases = "all"\n'
                    'mechanism = {kind = "approx", epsilon = 0.1, delta = 1e-6}\n')
    data = solve(load_scenario(path)).to_dict()
    assert data["epsilon"] == "inf" and Report.from_dict(data).epsilon == float("inf")


def test_html_table_for_notebooks():
    report = solve(load_scenario(EXAMPLES / "store_chain.toml"))
    page = report._repr_html_()
    assert page.startswith("<strong>Store chain") and "<table>" in page and "<th>epsilon</th>" in page
    assert f"<td>{report.epsilon:.6g}</td>" in page and "estimated from data" in page


def test_the_worst_case_pair_is_named_where_the_scenario_names_its_databases():
    """Subsidiaries: exclusive membership, so the worst pair is one database, the one whose invocation
    has the largest epsilon: online (pure 1.0; north and south 0.1 each, east 0.2, west 0.5)."""
    report = solve(load_scenario(EXAMPLES / "subsidiaries.toml"))
    assert report.witness == (frozenset(), frozenset({4})) and report.witness_names == ((), ("online",))
    assert "worst-case pair: h0 = {}, h1 = {online} (1 differing invocation" in str(report)
    data = report.to_dict()
    assert data["witness"] == {"h0": [], "h1": [4]}  # the indices stay where they were
    assert data["witness_names"] == {"h0": [], "h1": ["online"]}
    assert abs(report.epsilon - 1.0) < 1e-9


def test_unnamed_databases_keep_their_indices(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('databases = 3\ndelta = 0.0\n[[invocations]]\ndatabases = 2\n'
                    'mechanism = {kind = "pure", epsilon = 0.3}\n[[invocations]]\ndatabases = [0, 1]\n'
                    'mechanism = {kind = "pure", epsilon = 0.1}\n'
                    '[[constraints]]\nkind = "exclusive"\ndatabases = "all"\n')
    report = solve(load_scenario(path))
    assert report.witness_names is None and report.to_dict()["witness_names"] is None
    assert "h1 = {2}" in str(report) and abs(report.epsilon - 0.3) < 1e-9


def test_database_names_reach_the_terminal_escaped(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('databases = ["a\\u001b[2J", "b"]\ndelta = 0.0\n[[invocations]]\ndatabases = "all"\n'
                    'mechanism = {kind = "pure", epsilon = 0.3}\n'
                    '[[constraints]]\nkind = "exclusive"\ndatabases = "all"\n')
    report = solve(load_scenario(path))
    text = str(report)
    assert "\x1b" not in text and ("{a\\x1b[2J}" in text or "{b}" in text)


def test_witness_epsilon_is_the_older_lower_bound_epsilon():
    report = solve(load_scenario(EXAMPLES / "hospitals.toml"))
    data = report.to_dict()
    with pytest.warns(DeprecationWarning, match=r"^Report.lower_bound_epsilon is deprecated; use "
                                                r"Report.witness_epsilon"):
        assert report.lower_bound_epsilon == report.witness_epsilon
    assert data["lower_bound_epsilon"] == data["witness_epsilon"] == report.witness_epsilon
    # exact: the pair's certified epsilon is the answer
    assert report.exact and abs(report.witness_epsilon - report.epsilon) <= 1e-9 * report.epsilon
    # JSON written before witness_epsilon and witness_names existed still reads, under the old key
    old = {k: v for k, v in data.items() if k not in ("witness_epsilon", "witness_names")}
    again = Report.from_dict(old)
    assert again.witness_epsilon == report.witness_epsilon and again.witness_names is None


def test_witness_names_must_match_the_witness():
    data = solve(load_scenario(EXAMPLES / "subsidiaries.toml")).to_dict()
    with pytest.raises(InvalidParameterError, match="witness_names"):
        Report.from_dict({**data, "witness_names": {"h0": [], "h1": ["online", "west"]}})
    with pytest.raises(InvalidParameterError, match="data.witness_names.h1"):
        Report.from_dict({**data, "witness_names": {"h0": [], "h1": [4]}})


def test_repr_is_one_short_line():
    report = solve(load_scenario(EXAMPLES / "subsidiaries.toml"))
    assert repr(report) == "Report(epsilon=1, delta=0, theorem='kairouz-III.3', exact=True)"
    loose = Report(epsilon=2.5, delta=1e-6, theorem="batch", exact=False, witness=None, differing=(), curve=None,
                   bracket=(2.25, 2.5))
    assert repr(loose) == "Report(epsilon=2.5, delta=1e-06, theorem='batch', exact=False, bracket=[2.25, 2.5])"


def test_scenario_repr_is_one_short_line():
    """Databases, invocation groups, constraint kinds, neighbourhood and target; not the dataclass dump."""
    subsidiaries = load_scenario(EXAMPLES / "subsidiaries.toml")
    assert repr(subsidiaries) == ("Scenario(5 named databases, 4 invocation groups (5 invocations), constraints: "
                                  "exclusive, unbounded, target epsilon at delta 0)")
    bare = Scenario(4, [Invocation(0, PureDP(0.1))], ConstraintSet(4, [AtMost(2), AtMost(3)]), epsilon=1.0)
    assert repr(bare) == ("Scenario(4 databases, 1 invocation group (1 invocation), constraints: 2 x at_most, "
                          "unbounded, target delta at epsilon 1)")


def test_numpy_scalars_from_an_engine_become_plain_values():
    """An engine's comparison of numpy floats gives a numpy.bool_ (``upper <= best * (1 + 1e-9)``), which
    json.dumps refuses ("Object of type bool is not JSON serializable", seen on gce solve --json): the report
    stores plain Python values whatever it was built from, and the command line's writer walks what is left."""
    import numpy as np

    from gce.report import Baseline, plain, to_json

    report = Report(epsilon=np.float64(1.5), delta=np.float64(1e-6), theorem="batch", exact=np.bool_(True),
                    witness=(frozenset(), frozenset(np.arange(3))), differing=tuple(np.arange(2)), curve=None,
                    baselines={"classic": Baseline("classic", np.float64(2.0), np.float64(1e-6), "kairouz-III.3")},
                    witness_epsilon=np.float64(1.5), differing_count=np.int64(2), rtol=np.float64(0.01),
                    bracket=(np.float64(1.4), np.float64(1.5)), time_limit_reached=np.bool_(False))
    assert report.exact is True and report.time_limit_reached is False
    assert type(report.epsilon) is float and type(report.differing_count) is int
    assert all(type(i) is int for i in report.witness[1]) and all(type(i) is int for i in report.differing)
    assert type(report.bracket[0]) is float and type(report.baselines["classic"].epsilon) is float
    text = json.dumps(report.to_dict())  # plain json, no default= needed
    assert Report.from_dict(json.loads(text)).to_dict() == report.to_dict()
    assert json.loads(to_json({"a": np.bool_(False), "b": [np.int64(3), np.float32(0.5)], "c": np.arange(2)})) == {
        "a": False, "b": [3, 0.5], "c": [0, 1]}
    assert plain({np.int64(1): frozenset({2, 1})}) == {1: [1, 2]}
    with pytest.raises(ValueError):
        to_json({"x": float("nan")})  # NaN is never written as JSON

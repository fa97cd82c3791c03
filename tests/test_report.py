"""The report: JSON round trip, terminal table and HTML for notebooks."""

from __future__ import annotations

import json
import pathlib

from gce import Report, load_scenario, solve

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

"""Scenario files: what loads, and every malformed field named by its path (the contract of docs/design.md)."""

from __future__ import annotations

import math

import pytest

from gce import load_scenario, solve
from gce.constraints import AtMost, Exclusive
from gce.errors import InvalidScenarioError
from gce.accounting.guarantees import ApproxDP, LaplaceMechanism, PureDP, Subsampled
from gce.files.scenario import MECHANISM_KINDS, mechanism_from_dict, scenario_from_dict

BASE = {
    "title": "t",
    "databases": 4,
    "delta": 1e-6,
    "invocations": [{"databases": "all", "mechanism": {"kind": "approx", "epsilon": 0.1, "delta": 1e-9}}],
    "constraints": [{"kind": "at_most", "m": 2}],
}


def with_(**changes):
    table = {k: v for k, v in BASE.items()}
    for key, value in changes.items():
        if value is None:
            table.pop(key, None)
        else:
            table[key] = value
    return table


def test_base_scenario_loads_with_its_fields():
    s = scenario_from_dict(BASE)
    assert s.n == 4 and s.title == "t" and s.delta == 1e-6 and s.epsilon is None
    assert [inv.database for inv in s.invocations] == [0, 1, 2, 3]
    assert {inv.guarantee for inv in s.invocations} == {ApproxDP(0.1, 1e-9)}
    assert s.constraints.constraints == (AtMost(2),)


def test_names_resolve_everywhere_and_repeat_is_kept():
    s = scenario_from_dict({
        "databases": ["a", "b", "c"], "epsilon": 1.0, "neighborhood": "bounded",
        "invocations": [{"databases": ["a", "c"], "repeat": 3, "mechanism": {"kind": "pure", "epsilon": 0.5}},
                        {"databases": "b", "mechanism": {"kind": "subsampled", "rate": 0.5,
                                                         "mechanism": {"kind": "laplace", "scale": 2}}}],
        "constraints": [{"kind": "exclusive", "databases": ["a", "b"]}]})
    assert [(i.database, i.repeat) for i in s.invocations] == [(0, 3), (2, 3), (1, 1)]
    assert s.invocations[2].guarantee == Subsampled(0.5, LaplaceMechanism(2.0))
    assert s.constraints.constraints == (Exclusive((0, 1)),)
    assert s.databases.label(2) == "c" and s.neighborhood == "bounded"


@pytest.mark.parametrize("kind", sorted(MECHANISM_KINDS))
def test_every_mechanism_kind_reads(kind):
    args = {"pure": {"epsilon": 1}, "approx": {"epsilon": 1, "delta": 1e-6}, "zcdp": {"rho": 0.1},
            "gdp": {"mu": 1}, "gaussian": {"sigma": 2, "sensitivity": 1}, "laplace": {"scale": 1},
            "randomized_response": {"epsilon": 1},
            "subsampled": {"rate": 0.1, "mechanism": {"kind": "gaussian", "sigma": 1}}}[kind]
    g = mechanism_from_dict({"kind": kind, **args}, "m")
    assert type(g) is MECHANISM_KINDS[kind].record


MALFORMED = [
    (with_(invocations=[{"databases": "all", "mechanism": {"kind": "exponential", "epsilon": 1}}]),
     "invocations[0].mechanism.kind"),
    (with_(invocations=[{"databases": "all", "mechanism": {"kind": "approx", "epsilon": 1}}]),
     "invocations[0].mechanism.delta"),
    (with_(invocations=[{"databases": "all", "mechanism": {"kind": "pure", "epsilon": "big"}}]),
     "invocations[0].mechanism.epsilon"),
    (with_(invocations=[{"databases": "all", "mechanism": {"kind": "pure", "epsilon": 1, "delta": 0}}]),
     "invocations[0].mechanism.delta"),
    (with_(invocations=[{"databases": "all", "mechanism": {"kind": "subsampled", "rate": 2,
                                                           "mechanism": {"kind": "pure", "epsilon": 1}}}]),
     "invocations[0].mechanism.rate"),
    (with_(invocations=[{"databases": "all", "mechanism": {"kind": "subsampled", "rate": 0.5,
                                                           "mechanism": {"kind": "pure"}}}]),
     "invocations[0].mechanism.mechanism.epsilon"),
    (with_(invocations=[{"databases": [0, 7], "mechanism": {"kind": "pure", "epsilon": 1}}]),
     "invocations[0].databases[1]"),
    (with_(invocations=[{"databases": "some", "mechanism": {"kind": "pure", "epsilon": 1}}]),
     "invocations[0].databases"),
    (with_(invocations=[{"mechanism": {"kind": "pure", "epsilon": 1}}]), "invocations[0].databases"),
    (with_(invocations=[{"databases": 0}]), "invocations[0].mechanism"),
    (with_(invocations=[{"databases": 0, "repeat": 0, "mechanism": {"kind": "pure", "epsilon": 1}}]),
     "invocations[0].repeat"),
    (with_(invocations=[{"databases": 0, "times": 2, "mechanism": {"kind": "pure", "epsilon": 1}}]),
     "invocations[0].times"),
    (with_(invocations=[]), "invocations"),
    (with_(invocations=None), "invocations"),
    (with_(constraints=[{"kind": "at_most", "m": -1}]), "constraints[0].m"),
    (with_(constraints=[{"kind": "at_most"}]), "constraints[0].m"),
    (with_(constraints=[{"kind": "at_least", "m": 1}]), "constraints[0].kind"),
    (with_(constraints=[{"kind": "exclusive", "databases": [0, 9]}]), "constraints[0].databases"),
    (with_(constraints=[{"kind": "together", "databases": [0, 1]}, {"kind": "exclusive", "databases": [0, 1]},
                        {"kind": "at_most", "m": 1, "among": [2, 3]}, {"kind": "conflicts", "edges": [[2, 3]]},
                        {"kind": "patterns", "allowed": [[0, 1]]}, {"kind": "at_most", "m": 0}]),
     "constraints"),
    (with_(delta=1e-6, epsilon=1.0), "delta"),
    (with_(delta=1.5), "delta"),
    (with_(delta="small"), "delta"),
    (with_(delta=None, epsilon=-1.0), "epsilon"),
    (with_(databases=0), "databases"),
    (with_(databases=None), "databases"),
    (with_(databases=["a", "a"]), "databases[1]"),
    (with_(neighborhood="replace"), "neighborhood"),
    (with_(title=3), "title"),
    (with_(budget=3), "budget"),
    (with_(hypotheses={"h0": {"kind": "point", "members": []}}), "hypotheses.h1"),
    (with_(hypotheses={"h0": {"kind": "point", "members": []}, "h1": {"kind": "uniform"}, "h2": {}}), "hypotheses.h2"),
    (with_(hypotheses={"h0": {"kind": "point", "members": []}, "h1": {"kind": "cloud"}}), "hypotheses.h1.kind"),
    (with_(hypotheses={"h0": {"kind": "point", "members": []},
                       "h1": {"kind": "explicit", "support": [[0], [1]], "weights": [0.5, 0.6]}}),
     "hypotheses.h1.weights"),
    (with_(hypotheses={"h0": {"kind": "point", "members": []},
                       "h1": {"kind": "explicit", "support": [[0, 1, 2]], "weights": [1.0]}}),
     "hypotheses.h1.support[0]"),
    (with_(hypotheses={"h0": {"kind": "point", "members": []}, "h1": {"kind": "uniform", "min_members": 3, "max_members": 2}}),
     "hypotheses.h1.min_members"),
]


@pytest.mark.parametrize("table, field", MALFORMED, ids=[f for _, f in MALFORMED])
def test_malformed_fields_are_named(table, field):
    with pytest.raises(InvalidScenarioError) as info:
        scenario_from_dict(table)
    assert info.value.field == field
    assert str(info.value).startswith(f"{field}: ")


def test_a_file_without_a_target_loads_and_solve_asks_for_one(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('databases = 2\n[[invocations]]\ndatabases = "all"\nmechanism = {kind = "pure", epsilon = 1}\n')
    scenario = load_scenario(path)
    assert scenario.delta is None and scenario.epsilon is None
    report = solve(scenario, epsilon=2.0)
    assert report.delta == 0.0 and report.exact


def test_unreadable_and_non_toml_files_name_the_file(tmp_path):
    with pytest.raises(InvalidScenarioError, match=r"^file: cannot read"):
        load_scenario(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("databases = [1,\n")
    with pytest.raises(InvalidScenarioError, match=r"^file: .*not valid TOML"):
        load_scenario(bad)


def test_loaded_file_solves_to_the_hand_value(tmp_path):
    # 4 databases, pure 0.5 twice on each, at most 2: the worst pair differs in 2 databases, 4 invocations.
    path = tmp_path / "s.toml"
    path.write_text('databases = 4\ndelta = 0\n[[invocations]]\ndatabases = "all"\nrepeat = 2\n'
                    'mechanism = {kind = "pure", epsilon = 0.5}\n[[constraints]]\nkind = "at_most"\nm = 2\n')
    report = solve(load_scenario(path))
    assert math.isclose(report.epsilon, 2.0, rel_tol=1e-9) and report.exact
    assert report.baselines["classic"].epsilon == pytest.approx(4.0)
    assert report.baselines["parallel"].epsilon == pytest.approx(2.0)
    assert PureDP(0.5) in {inv.guarantee for inv in load_scenario(path).invocations}


def test_hypotheses_table_reads_names():
    s = scenario_from_dict(with_(databases=["a", "b", "c", "d"], hypotheses={
        "h0": {"kind": "point", "members": ["b"]},
        "h1": {"kind": "explicit", "support": [["a"], ["c", "d"]], "weights": [0.25, 0.75]}}))
    h0, h1 = s.hypotheses
    assert h0.distribution(s.constraints).sets == (frozenset({1}),)
    assert [(sorted(b), w) for b, w in h1.distribution(s.constraints)] == [([0], 0.25), ([2, 3], 0.75)]


def test_from_data_constraints_read_the_table_and_name_their_errors(tmp_path):
    (tmp_path / "m.csv").write_text("person,db\nann,0\nann,2\nbob,1\ncyd,2\n")
    table = with_(constraints=[{"kind": "from_data", "file": "m.csv", "patterns": True}])
    s = scenario_from_dict(table, tmp_path)
    kinds = {c.kind: c for c in s.constraints.constraints}
    assert kinds["at_most"].m == 2
    assert set(kinds["patterns"].allowed) == {frozenset({0, 2}), frozenset({1}), frozenset({2})}
    assert any("estimated from data" in note for note in s.notes)
    for bad, field in [({"file": "none.csv"}, "constraints[0].file"), ({"file": 3}, "constraints[0].file"),
                       ({"file": "m.csv", "patterns": "yes"}, "constraints[0].patterns"),
                       ({"file": "m.csv", "limit": 2}, "constraints[0].limit")]:
        with pytest.raises(InvalidScenarioError) as info:
            scenario_from_dict(with_(constraints=[{"kind": "from_data", **bad}]), tmp_path)
        assert info.value.field == field
    (tmp_path / "bad.csv").write_text("ann,0\nbob,9\n")
    with pytest.raises(InvalidScenarioError, match=r"constraints\[0\]\.file: .*line 2"):
        scenario_from_dict(with_(constraints=[{"kind": "from_data", "file": "bad.csv"}]), tmp_path)

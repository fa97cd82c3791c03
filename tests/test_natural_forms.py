"""The Python forms people write (issue 37, part 3): what the scenario file accepts, the constructors accept.

Each test uses the natural form and checks it against the scenario file's reading of the same scenario
(:func:`gce.files.scenario.scenario_from_dict`), or against the value it must give.
"""

from __future__ import annotations

import re

import numpy as np

import pytest

import gce
from gce.files.scenario import scenario_from_dict

NAMES = ["north", "south", "east"]


def _file_form(**tables) -> gce.Scenario:
    return scenario_from_dict({"databases": NAMES, "delta": 0.0, **tables})


# ---------------------------------------------------------------------------
# Database names wherever the scenario file takes them


def test_databases_as_a_list_of_names():
    scenario = gce.Scenario(databases=NAMES, invocations=[gce.Invocation("north", gce.PureDP(0.1))])
    assert scenario.databases == gce.Databases(3, tuple(NAMES))
    assert scenario.n == 3 and scenario.databases.label(2) == "east"


def test_invocations_by_name_are_the_file_form():
    natural = gce.Scenario(
        databases=NAMES,
        invocations=[gce.Invocation("north", gce.PureDP(0.5)),
                     gce.InvocationGroup(["east", "south"], gce.PureDP(0.2), repeat=3),
                     gce.InvocationGroup("all", gce.PureDP(0.1))],
        constraints=[gce.AtMost(2)], delta=0.0)
    file = _file_form(
        invocations=[{"databases": "north", "mechanism": {"kind": "pure", "epsilon": 0.5}},
                     {"databases": ["east", "south"], "repeat": 3, "mechanism": {"kind": "pure", "epsilon": 0.2}},
                     {"databases": "all", "mechanism": {"kind": "pure", "epsilon": 0.1}}],
        constraints=[{"kind": "at_most", "m": 2}])
    assert natural == file
    assert [(i.database, i.repeat) for i in natural.invocations] == [(0, 1), (2, 3), (1, 3), (0, 1), (1, 1), (2, 1)]
    # south and east (0.6 + 0.1 each; north 0.5 + 0.1) differ at worst: 1.4 (pure at delta 0: the sum)
    assert gce.solve(natural).epsilon == pytest.approx(1.4, rel=1e-9)
    assert gce.solve(natural).witness_names == gce.solve(file).witness_names


def test_a_name_that_reads_as_a_number_is_a_name():
    scenario = gce.Scenario(databases=["10", "3", "7"], invocations=[gce.Invocation("3", gce.PureDP(0.1)),
                                                                     gce.Invocation(0, gce.PureDP(0.1))])
    assert [i.database for i in scenario.invocations] == [1, 0]


def test_constraints_by_name_and_all_are_the_file_form():
    invocations = [gce.InvocationGroup("all", gce.PureDP(0.1))]
    natural = gce.Scenario(databases=NAMES, invocations=invocations, delta=0.0, constraints=[
        gce.AtMost(2, among=["north", "east"]), gce.Exclusive("all"), gce.Together(["south", "east"]),
        gce.Conflicts([("north", "south")]), gce.Patterns([{"north"}, {"south", "east"}])])
    file = _file_form(
        invocations=[{"databases": "all", "mechanism": {"kind": "pure", "epsilon": 0.1}}],
        constraints=[{"kind": "at_most", "m": 2, "among": ["north", "east"]},
                     {"kind": "exclusive", "databases": "all"},
                     {"kind": "together", "databases": ["south", "east"]},
                     {"kind": "conflicts", "edges": [["north", "south"]]},
                     {"kind": "patterns", "allowed": [["north"], ["south", "east"]]}])
    assert natural.constraints == file.constraints
    assert natural.constraints.constraints[1] == gce.Exclusive((0, 1, 2))
    assert natural.constraints.constraints[3] == gce.Conflicts([(0, 1)])


def test_hypotheses_by_name():
    scenario = gce.Scenario(databases=NAMES, invocations=[gce.InvocationGroup("all", gce.PureDP(0.1))],
                            hypotheses=(gce.Point(()), gce.Explicit(({"north"}, {"south", "east"}), (0.5, 0.5))))
    h0, h1 = scenario.hypotheses
    assert h0 == gce.Point(()) and h1 == gce.Explicit(({0}, {1, 2}), (0.5, 0.5))


@pytest.mark.parametrize("build, field", [
    (lambda: gce.Scenario(NAMES, [gce.Invocation("west", gce.PureDP(1))]), "invocations[0].database"),
    (lambda: gce.Scenario(NAMES, [gce.Invocation(0, gce.PureDP(1)), gce.InvocationGroup(["east", "west"], gce.PureDP(1))]),
     "invocations[1].databases[1]"),
    (lambda: gce.Scenario(NAMES, [gce.Invocation(0, gce.PureDP(1))], constraints=[gce.AtMost(1), gce.Exclusive(["north", "west"])]),
     "constraints[1].group[1]"),
    (lambda: gce.Scenario(NAMES, [gce.Invocation(0, gce.PureDP(1))], constraints=gce.Conflicts([("west", "east")])),
     "constraints[0].edges[0][0]"),
    (lambda: gce.Scenario(NAMES, [gce.Invocation(0, gce.PureDP(1))], hypotheses=(gce.Point(()), gce.Point(["west"]))),
     "hypotheses.h1.members[0]"),
    (lambda: gce.Scenario(3, [gce.Invocation("west", gce.PureDP(1))]), "invocations[0].database"),
])
def test_an_unknown_name_names_the_field_and_the_name(build, field):
    with pytest.raises(gce.InvalidParameterError, match=rf"^{re.escape(field)}: unknown database 'west'"):
        build()


def test_names_without_a_scenario_say_where_they_are_resolved():
    with pytest.raises(gce.InvalidParameterError, match=r"constraints\[0\] \(exclusive\).group\[0\]: names database "
                                                        r"'north'.*resolved by a scenario"):
        gce.ConstraintSet(3, [gce.Exclusive(["north", "south"])])
    with pytest.raises(gce.InvalidParameterError, match=r"^databases\[1\]: repeats the name 'north'"):
        gce.Scenario(["north", "north"], [gce.Invocation(0, gce.PureDP(1))])


# ---------------------------------------------------------------------------
# A plain list of constraints, or a single constraint


def test_constraints_as_a_list_or_one_constraint():
    invocations = [gce.Invocation(i, gce.PureDP(0.05)) for i in range(10)]
    as_set = gce.Scenario(10, invocations, gce.ConstraintSet(10, [gce.AtMost(4)]), delta=0.0)
    for given in ([gce.AtMost(4)], (gce.AtMost(4),), gce.AtMost(4)):
        scenario = gce.Scenario(10, invocations, given, delta=0.0)
        assert scenario.constraints == as_set.constraints
        assert gce.solve(scenario).epsilon == gce.solve(as_set).epsilon == pytest.approx(0.2, rel=1e-9)
    assert gce.ConstraintSet(10, gce.AtMost(4)) == as_set.constraints


def test_exclusive_all_is_every_database():
    assert gce.ConstraintSet(4, gce.Exclusive("all")).constraints == (gce.Exclusive((0, 1, 2, 3)),)
    assert gce.ConstraintSet(4, gce.Together("all")).constraints == (gce.Together((0, 1, 2, 3)),)
    assert gce.AtMost(1, among="all") == gce.AtMost(1)
    # one employer among four subsidiaries (001, Sec. V-A, Example 2): one invocation of 0.3 differs
    scenario = gce.Scenario(4, [gce.InvocationGroup(range(4), gce.PureDP(0.3))], gce.Exclusive("all"), delta=0.0)
    assert gce.solve(scenario).epsilon == pytest.approx(0.3, rel=1e-9)


def test_constraints_of_the_wrong_kind_are_named():
    with pytest.raises(gce.InvalidParameterError, match=r"^constraints\[1\]: must be a constraint"):
        gce.Scenario(3, [gce.Invocation(0, gce.PureDP(1))], [gce.AtMost(1), "exclusive"])
    with pytest.raises(gce.InvalidParameterError, match=r"^constraints: must be over the scenario's 3 databases"):
        gce.Scenario(3, [gce.Invocation(0, gce.PureDP(1))], gce.ConstraintSet(5))


# ---------------------------------------------------------------------------
# compose of one guarantee; a budget without delta


def test_compose_of_one_guarantee_is_that_guarantee():
    one = gce.compose(gce.PureDP(0.1))
    assert one.at_delta(0.0).epsilon == pytest.approx(0.1, rel=1e-9)
    assert one.epsilon(1e-6) == gce.compose([gce.PureDP(0.1)]).epsilon(1e-6)
    gaussian = gce.compose(gce.GaussianMechanism(1.0))
    assert gaussian.epsilon(1e-5) == gce.compose({gce.GaussianMechanism(1.0): 1}).epsilon(1e-5)


@pytest.mark.parametrize("bad", [3, "pure", None, 0.1])
def test_compose_of_a_non_guarantee_names_the_argument(bad):
    with pytest.raises(gce.InvalidParameterError, match=r"^guarantees: must be a guarantee, a collection of "
                                                        r"guarantees or a mapping guarantee -> count, got "):
        gce.compose(bad)


def test_budget_delta_defaults_to_zero(tmp_path):
    scenario = gce.Scenario(3, [gce.Invocation(0, gce.PureDP(0.4))], gce.AtMost(2))
    with gce.Accountant.create(tmp_path / "ledger.sqlite", scenario, budget_epsilon=1) as ledger:
        assert (ledger.budget_epsilon, ledger.budget_delta) == (1.0, 0.0)
        first = ledger.spend([1, 2], gce.PureDP(0.3))  # the worst allowed set, {0, 1}: 0.4 + 0.3
        assert first.admitted and first.upper[0] == pytest.approx(0.7) and first.upper[1] == 0.0
        assert not ledger.spend([0], gce.PureDP(0.4)).admitted  # {0, 1}: 0.4 + 0.4 + 0.3 = 1.1 > 1


# ---------------------------------------------------------------------------
# Report.plot() and the notebook display


@pytest.fixture(scope="module")
def bracketed():
    """A report that is not exact (Gaussians beside approximate guarantees: the batch engine) and its scenario."""
    scenario = gce.Scenario(4, [gce.InvocationGroup(range(4), gce.GaussianMechanism(3.0)),
                                gce.InvocationGroup(range(4), gce.ApproxDP(0.1, 1e-8))], gce.AtMost(2), delta=1e-6)
    report = gce.solve(scenario)
    assert not report.exact and report.bracket is not None and report.lower_curve is not None
    return scenario, report


def test_report_plot_draws_the_curve_its_bracket_and_the_point(bracketed, tmp_path):
    pytest.importorskip("matplotlib")
    from gce.plot import BRACKET_LABEL, CLASSIC_LABEL, GCE_LABEL

    scenario, report = bracketed
    deltas = np.logspace(-7, -2, 12)
    ax = report.plot(tmp_path / "curve", classic=scenario, deltas=deltas)
    assert (tmp_path / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[:3] == [GCE_LABEL, CLASSIC_LABEL, BRACKET_LABEL] and labels[3].startswith("reported: epsilon 2.2")
    (line,) = [l for l in ax.get_lines() if l.get_label() == GCE_LABEL]
    assert np.array_equal(line.get_xdata(), deltas) and np.array_equal(line.get_ydata(), report.curve.epsilon(deltas))
    (band,) = [c for c in ax.collections if c.get_label() == BRACKET_LABEL]
    lows = np.minimum(report.lower_curve.epsilon(deltas), report.curve.epsilon(deltas))
    y = band.get_paths()[0].vertices[:, 1]
    assert np.all(np.isin(np.round(lows, 12), np.round(y, 12)))  # the band's lower edge is the lower curve
    assert np.all(lows <= report.curve.epsilon(deltas)) and np.any(lows < report.curve.epsilon(deltas))


def test_report_plot_on_given_axes(bracketed):
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    _, report = bracketed
    ax = Figure().add_subplot()
    assert report.plot(ax=ax) is ax and ax.get_xscale() == "log"


def test_a_bare_report_plot_draws_on_a_new_figure(bracketed):
    """``report.plot()`` with nothing else: a new figure with the curve, its bracket and the reported point."""
    pytest.importorskip("matplotlib")
    from gce.plot import BRACKET_LABEL, GCE_LABEL

    _, report = bracketed
    ax = report.plot()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[0] == GCE_LABEL and BRACKET_LABEL in labels and labels[-1].startswith("reported: epsilon")
    assert report.plot() is not ax  # each call its own figure


def test_report_plot_without_a_curve_names_the_report(bracketed):
    _, report = bracketed
    with pytest.raises(gce.InvalidParameterError, match="^report: must be a Report with its curve"):
        gce.Report.from_dict(report.to_dict()).plot()


def test_notebook_display_of_a_report_shows_the_curve_and_its_bracket(bracketed):
    pytest.importorskip("matplotlib")
    _, report = bracketed
    shown = report._repr_html_()
    low, high = report.bracket
    assert f"certified bracket: [{low:.6g}, {high:.6g}]" in shown
    assert shown.count("<svg") == 1 and "</svg>" in shown and "<table>" in shown
    saved = gce.Report.from_dict(report.to_dict())  # no curve: the table alone
    assert "<svg" not in saved._repr_html_() and "<table>" in saved._repr_html_()


def test_notebook_display_of_curves_and_scenarios():
    pytest.importorskip("matplotlib")
    composition = gce.compose({gce.PureDP(0.1): 30})
    shown = composition._repr_html_()
    assert "<svg" in shown and "kairouz-III.3" in shown
    for delta in (1e-10, 1e-6, 1e-2):  # the table's rows are the composition's own values
        assert f"<td>{delta:.3g}</td><td>{composition.epsilon(delta):.6g}</td>" in shown
    assert composition.epsilon(1e-2) < composition.epsilon(1e-6) < composition.epsilon(1e-10) < 3.0
    assert "<svg" in composition.curve._repr_html_()
    scenario = gce.Scenario(["north", "south", "east"], [gce.InvocationGroup("all", gce.PureDP(0.1), 3)],
                            gce.Exclusive(["north", "south"]), title="<Hospitals>", delta=1e-6)
    table = scenario._repr_html_()
    assert "&lt;Hospitals&gt;" in table and "north, south, east" in table and "exclusive(group=(0, 1))" in table
    assert "PureDP(epsilon=0.1) x 3 on all databases" in table and "epsilon at delta 1e-06" in table


# ---------------------------------------------------------------------------
# One API review: the same concept under the same name and signature; old names warn, naming the new


def test_membership_statistics_takes_a_path_as_spark_does(tmp_path):
    pytest.importorskip("duckdb")
    from gce.constraints.tables import MembershipTable, membership_statistics

    (tmp_path / "m.csv").write_text("customer,branch\nann,0\nann,2\nbob,1\nann,2\n")
    (tmp_path / "n.csv").write_text("customer,branch\ncid,0\ncid,1\ncid,2\n")
    by_table = membership_statistics(MembershipTable((str(tmp_path / "m.csv"),), label="m.csv"), 3)
    by_path = membership_statistics(tmp_path / "m.csv", 3, label="m.csv")
    assert by_path == by_table and by_path.histogram == {1: 1, 2: 1} and by_path.rows == 4
    both = membership_statistics(str(tmp_path / "*.csv"), 3, columns=("customer", "branch"), patterns=True)
    assert both.histogram == {1: 1, 2: 1, 3: 1} and both.source == str(tmp_path / "*.csv")
    with pytest.raises(gce.InvalidParameterError, match=r"^table: .*matches no file"):
        membership_statistics(str(tmp_path / "*.parquet"), 3)
    with pytest.raises(gce.InvalidParameterError, match=r"^label: is set on the MembershipTable given"):
        membership_statistics(by_table_source := MembershipTable((str(tmp_path / "m.csv"),)), 3, label="x")
    assert by_table_source.label == ""


def test_truncate_membership_takes_a_path_too(tmp_path):
    pytest.importorskip("duckdb")
    from gce.constraints.tables import membership_statistics, truncate_membership

    (tmp_path / "m.csv").write_text("customer,branch\nann,0\nann,2\nbob,1\nann,1\n")
    truncate_membership(tmp_path / "m.csv", 3, 1, 7, str(tmp_path / "kept.csv"))
    kept = membership_statistics(tmp_path / "kept.csv", 3)
    assert kept.histogram == {1: 2} and kept.rows == 2  # ann keeps one of her three databases, bob his one


def test_the_spark_and_duckdb_signatures_agree():
    import inspect

    from gce.constraints import spark, tables

    duck, spark_form = (inspect.signature(m.membership_statistics).parameters for m in (tables, spark))
    shared = ["table", "databases", "columns", "patterns", "max_patterns", "label"]
    assert [p for p in duck if p in shared] == [p for p in spark_form if p in shared] == shared
    for name in shared[2:]:
        assert duck[name].kind == spark_form[name].kind == inspect.Parameter.KEYWORD_ONLY
        assert duck[name].default == spark_form[name].default


def test_renamed_keywords_and_names_warn_naming_the_replacement():
    rows = [("ann", 0), ("ann", 2), ("bob", 1)]
    with pytest.warns(DeprecationWarning, match=r"^estimate_membership\(source=\.\.\.\) is deprecated; use "
                                                r"estimate_membership\(label=\.\.\.\)$"):
        old = gce.estimate_membership(rows, 3, source="sales")
    assert old == gce.estimate_membership(rows, 3, label="sales") and old.source == "sales" and old.at_most.m == 2
    with pytest.raises(gce.InvalidParameterError, match=r"^label: given twice"):
        gce.estimate_membership(rows, 3, source="a", label="b")
    with pytest.warns(DeprecationWarning, match=r"^gce.model.InvocationTable is deprecated; use gce.model.Invocations"):
        assert gce.model.InvocationTable is gce.model.Invocations
    report = gce.solve(gce.Scenario(3, [gce.InvocationGroup(range(3), gce.PureDP(0.5))], gce.AtMost(1), delta=0.0))
    with pytest.warns(DeprecationWarning, match=r"^Report.lower_bound_epsilon is deprecated; use Report.witness_epsilon"):
        assert report.lower_bound_epsilon == report.witness_epsilon == pytest.approx(0.5)


def test_plot_coverage_returns_its_axes_as_the_other_plots_do():
    import inspect

    from gce.membership import plot_coverage
    from gce.plot import plot_curves

    coverage, curves = (inspect.signature(f).parameters for f in (plot_coverage, plot_curves))
    assert list(coverage)[1:3] == list(curves)[1:3] == ["path", "ax"]
    assert coverage["path"].default is None and coverage["dpi"].kind == inspect.Parameter.KEYWORD_ONLY

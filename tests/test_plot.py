"""Curves side by side (gce.plot): the table, the PNG, the legend, the missing extra."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from gce.constraints import AtMost, ConstraintSet
from gce.errors import GCEError
from gce.accounting.guarantees import ApproxDP
from gce.model import Invocation, Scenario
import reference
from gce.accounting.batch import batch_compose
from gce.accounting.guarantees import PureDP
from gce.errors import InvalidParameterError
from gce.plot import (
    CLASSIC_LABEL,
    GCE_LABEL,
    PlotUnavailableError,
    bracketed_table,
    classic_curve,
    curve_table,
    plot_curves,
)
from gce.report import Report
from gce.solving import solve
from gce.accounting.theorems import compose

DELTAS = [1e-12, 1e-9, 1e-6, 1e-3, 1e-1]


@pytest.fixture(scope="module")
def hospitals():
    """001, Sec. V-A, Example 1 at 100 hospitals, at most 20 each."""
    scenario = Scenario(100, tuple(Invocation(i, ApproxDP(0.05, 1e-10)) for i in range(100)),
                        ConstraintSet(100, (AtMost(20),)), title="Hospitals: at most 20 of 100")
    return scenario, solve(scenario, delta=1e-6)


def test_curve_table_values_are_the_curves(hospitals):
    scenario, report = hospitals
    classic = classic_curve(scenario)
    rows = curve_table(report.curve, classic, DELTAS)
    assert [r[0] for r in rows] == DELTAS
    for delta, eps_gce, eps_classic in rows:
        assert eps_gce == report.curve.epsilon(delta)
        assert eps_classic == classic.epsilon(delta)
        assert eps_gce <= eps_classic
    # The classic curve is the classic baseline's, and the GCE curve gives the report's point.
    assert classic.epsilon(1e-6) == report.baselines["classic"].epsilon
    assert dict((d, e) for d, e, _ in rows)[1e-6] == report.epsilon
    # 20 differing invocations (002 Thm. III.3), 100 classically.
    assert rows[2][1] == compose({ApproxDP(0.05, 1e-10): 20}).epsilon(1e-6)
    assert rows[2][2] == compose({ApproxDP(0.05, 1e-10): 100}).epsilon(1e-6)


def test_curve_table_without_classic_and_below_the_floor():
    curve = compose({ApproxDP(0.1, 1e-5): 10}).curve
    rows = curve_table(curve, None, [1e-6, 1e-3])
    assert rows[0][1] == np.inf and rows[0][2] is None  # 10 x 1e-5 > 1e-6
    assert np.isfinite(rows[1][1])


@pytest.mark.parametrize("deltas", [[], [-1e-6], [1.0], [np.nan], [[1e-6]]])
def test_curve_table_rejects_bad_deltas(deltas):
    with pytest.raises(GCEError, match="deltas"):
        curve_table(compose({ApproxDP(0.1, 0.0): 1}).curve, None, deltas)


def test_bracketed_table_of_an_exact_report_is_exact_at_every_row(hospitals):
    scenario, report = hospitals
    assert report.exact and report.lower_curve is report.curve
    classic = classic_curve(scenario)
    rows = bracketed_table(report, classic, DELTAS)
    assert [(r.delta, r.epsilon, r.classic) for r in rows] == curve_table(report.curve, classic, DELTAS)
    assert all(r.exact and r.lower == r.epsilon for r in rows)
    assert rows[0].epsilon == np.inf  # 20 x 1e-10 > 1e-12: the bracket is [inf, inf], exactly
    assert rows[2].lower == report.epsilon  # 1e-6: the report's own point


#: Five canonical pairs (002 eqs. 9-10): brute force over the 4^5 outputs gives the exact curve.
POINTS = [(0.1, 1e-4), (0.7, 0.0), (1.3, 0.02), (0.25, 0.0), (0.05, 1e-7)]


def _points_report(lower: bool) -> Report:
    """A report on the batch composition of :data:`POINTS` on a coarse grid (rtol 0.3: a wide bracket)."""
    curve = batch_compose([PureDP(e) if d == 0 else ApproxDP(e, d) for e, d in POINTS], rtol=0.3)
    return Report(float(curve.epsilon(0.05)), 0.05, "batch", False, None, (), curve,
                  lower_curve=curve.lower if lower else None)


def test_bracketed_table_brackets_the_brute_force_epsilon():
    rows = bracketed_table(_points_report(lower=True), None, [0.03, 0.05, 0.1, 0.2])  # the floor: 0.0201
    for row in rows:
        assert not row.exact and row.classic is None
        assert row.lower < row.epsilon  # a real bracket on this coarse grid
        # exact delta at the upper end is at most delta (certified), at the lower end at least delta (the
        # exact epsilon is not below it): brute force over the product of the canonical pairs
        assert reference.exact_delta(POINTS, row.epsilon) <= row.delta
        assert reference.exact_delta(POINTS, row.lower) >= row.delta * (1 - 1e-9)
    # on a fine grid the bracket closes in: rtol is the accuracy asked for
    fine = batch_compose([PureDP(e) if d == 0 else ApproxDP(e, d) for e, d in POINTS], rtol=1e-3)
    report = Report(float(fine.epsilon(0.03)), 0.03, "batch", False, None, (), fine, lower_curve=fine.lower)
    row, = bracketed_table(report, None, [0.03])
    assert (row.epsilon - row.lower) < (rows[0].epsilon - rows[0].lower) and row.lower <= row.epsilon


def test_bracketed_table_without_a_lower_curve_has_no_lower_end():
    rows = bracketed_table(_points_report(lower=False), None, [0.01, 0.05])
    assert all(r.lower is None and not r.exact for r in rows)
    assert rows[0].epsilon == np.inf and np.isfinite(rows[1].epsilon)  # below the floor 0.0201, above it


def test_bracketed_table_needs_a_report_with_its_curve():
    saved = Report.from_dict(_points_report(lower=True).to_dict())  # reloaded: no curve
    for report in (saved, "report"):
        with pytest.raises(InvalidParameterError, match="^report: must be a Report with its curve"):
            bracketed_table(report, None, [0.05])


def test_plot_writes_a_png_with_both_curves(hospitals, tmp_path):
    import matplotlib.image

    scenario, report = hospitals
    path = tmp_path / "curves.png"
    ax = plot_curves(report, path, classic=scenario)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert GCE_LABEL in labels and CLASSIC_LABEL in labels
    assert ax.get_title() == "Hospitals: at most 20 of 100"
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "delta" and ax.get_ylabel() == "epsilon"
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    image = matplotlib.image.imread(path)
    assert image.ndim == 3 and image.shape[0] > 300 and image.shape[1] > 400
    # The drawn GCE line is the curve itself.
    (gce_line,) = [line for line in ax.get_lines() if line.get_label() == GCE_LABEL]
    x, y = gce_line.get_data()
    expected = report.curve.epsilon(np.asarray(x))
    drawn = np.isfinite(expected)  # below the delta floor (20 x 1e-10) epsilon is infinite: not drawn
    assert drawn.sum() > 50 and not drawn[0] and np.all(np.isnan(y[~drawn]))
    assert np.array_equal(y[drawn], expected[drawn])


def test_plot_on_given_axes_with_a_classic_curve(hospitals):
    from matplotlib.figure import Figure

    scenario, report = hospitals
    ax = Figure().add_subplot()
    assert plot_curves(report, ax=ax, classic=classic_curve(scenario), deltas=DELTAS) is ax
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[:2] == [GCE_LABEL, CLASSIC_LABEL]


def test_plot_without_classic_draws_only_the_gce_curve(hospitals):
    _, report = hospitals
    labels = [t.get_text() for t in plot_curves(report).get_legend().get_texts()]
    assert GCE_LABEL in labels and CLASSIC_LABEL not in labels


def test_missing_matplotlib_names_the_extra(hospitals, monkeypatch):
    _, report = hospitals
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    with pytest.raises(PlotUnavailableError, match=r"install the plot extra: pip install 'gce\[plot\]'") as info:
        plot_curves(report)
    assert isinstance(info.value, ImportError) and isinstance(info.value, GCEError)


def test_an_unwritable_plot_names_the_path(hospitals, tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    from gce.errors import InvalidParameterError

    def refuse(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Figure, "savefig", refuse)
    _, report = hospitals
    with pytest.raises(InvalidParameterError) as info:
        plot_curves(report, tmp_path / "curves.png")
    assert str(info.value) == f"path: cannot write {str(tmp_path / 'curves.png')!r}: Permission denied"
    with pytest.raises(InvalidParameterError, match=r"^path: unsupported image format '\.txt'"):
        plot_curves(report, tmp_path / "curves.txt")

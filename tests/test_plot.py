"""Curves side by side (gce.plot): the table, the PNG, the legend, the missing extra."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from gce.constraints import AtMost, ConstraintSet
from gce.errors import GCEError
from gce.accounting.guarantees import ApproxDP
from gce.model import Invocation, Scenario
from gce.plot import (
    CLASSIC_LABEL,
    GCE_LABEL,
    PlotUnavailableError,
    classic_curve,
    curve_table,
    plot_curves,
)
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

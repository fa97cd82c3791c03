"""Privacy curves side by side: the GCE answer against classic composition (docs/design.md, "The report").

A report's :attr:`~gce.report.Report.curve` is the whole certified curve of the
HDP guarantee (001, Def. 3); classic composition (001, Alg. 1: every invocation
composed) has one too. :func:`curve_table` tabulates both at chosen deltas,
:func:`bracketed_table` adds each row's certified bracket from the report's
:attr:`~gce.report.Report.lower_curve` (the rows of ``gce curve``), and
:func:`plot_curves` draws epsilon against delta on a log-scale delta axis.

matplotlib is optional (the ``plot`` extra) and imported only when drawing; it
draws on a bare :class:`matplotlib.figure.Figure` (the Agg canvas, no display,
no pyplot state), or on the Axes it is given.

What must never change: every value shown is the curve's own ``epsilon(delta)``
(a certified upper bound, rounded up), never an interpolation between points;
a row's lower end is the lower curve's own ``epsilon(delta)``, never above the
upper end (docs/design.md, "Brackets and exactness").

The drawing itself (:mod:`gce.accounting.figures`) sits below the model, so that a report, a curve and a
composition draw themselves (``report.plot()``) and show in a notebook; its names are re-exported here.

Where a plot goes is checked before anything is computed (:func:`plot_file`):
the folder must exist, the suffix must name a format matplotlib writes
(:data:`PLOT_FORMATS`), and a path without a suffix gets ``.png``, the file
actually written, which ``gce curve --plot`` prints.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .accounting.curves import PrivacyCurve
from .accounting.figures import (BRACKET_LABEL, CLASSIC_LABEL, DEFAULT_DELTAS, DRAWN_DELTAS, GCE_LABEL, HTML_DELTAS,
                                 INSTALL_HINT, PLOT_FORMATS, PlotUnavailableError, check_deltas, deltas_spanning,
                                 draw_bracketed, draw_curve, html_figure, lower_ends, new_figure, plot_file)
from .errors import InvalidParameterError
from .model import Scenario, invocation_multiset
from .report import Report, terminal_text
from .accounting.theorems import compose

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = [
    "PlotUnavailableError",
    "PLOT_FORMATS",
    "DEFAULT_DELTAS",
    "DRAWN_DELTAS",
    "HTML_DELTAS",
    "GCE_LABEL",
    "CLASSIC_LABEL",
    "BRACKET_LABEL",
    "INSTALL_HINT",
    "classic_curve",
    "CurveRow",
    "curve_table",
    "bracketed_table",
    "plot_curves",
    "plot_curve",
    "plot_file",
    "deltas_spanning",
    "html_figure",
]

#: The Figure every plot draws on by default (the Agg canvas, no pyplot state), under its former name here.
_pyplot_free_figure = new_figure


def classic_curve(scenario: Scenario) -> PrivacyCurve:
    """The curve of classic composition: every invocation of ``scenario`` composed.

    It is the curve behind the report's ``classic`` baseline (001, Alg. 1).
    """
    if not isinstance(scenario, Scenario):
        raise InvalidParameterError("scenario", f"must be a Scenario, got {type(scenario).__name__}")
    return compose(invocation_multiset(scenario.invocations)).curve


def curve_table(
    curve: PrivacyCurve, classic_curve: PrivacyCurve | None, deltas: ArrayLike
) -> list[tuple[float, float, float | None]]:
    """Rows ``(delta, epsilon_gce, epsilon_classic)`` at each delta (the text of ``gce curve``).

    Parameters
    ----------
    curve : PrivacyCurve
        The GCE curve (``report.curve``).
    classic_curve : PrivacyCurve or None
        The classic curve (:func:`classic_curve`); ``None`` leaves the column empty.
    deltas : array_like
        Deltas in [0, 1), in the order given.

    Returns
    -------
    list of tuple
        Epsilons are the curves' own ``epsilon(delta)``; ``inf`` where the
        per-invocation deltas alone exceed delta.

    Examples
    --------
    >>> from gce.accounting.guarantees import PureDP
    >>> rows = curve_table(compose({PureDP(0.5): 2}).curve, compose({PureDP(0.5): 4}).curve, [0.0, 1e-6])
    >>> [(d, round(e, 4), round(c, 4)) for d, e, c in rows]
    [(0.0, 1.0, 2.0), (1e-06, 1.0, 2.0)]
    """
    for name, value in (("curve", curve), ("classic_curve", classic_curve)):
        if not isinstance(value, PrivacyCurve) and not (name == "classic_curve" and value is None):
            raise InvalidParameterError(name, f"must be a PrivacyCurve (e.g. report.curve), got {type(value).__name__}")
    d = check_deltas(deltas)
    gce = np.asarray(curve.epsilon(d), dtype=float)
    classic = None if classic_curve is None else np.asarray(classic_curve.epsilon(d), dtype=float)
    return [(float(d[i]), float(gce[i]), None if classic is None else float(classic[i])) for i in range(d.size)]


@dataclass(frozen=True)
class CurveRow:
    """One row of ``gce curve``: at ``delta``, the certified bracket ``[lower, epsilon]`` around the exact
    worst-case epsilon, and classic composition's epsilon.

    Attributes
    ----------
    delta : float
    epsilon : float
        The GCE curve's ``epsilon(delta)``: the certified upper end (``inf`` below the delta floor).
    lower : float or None
        A certified lower bound on the exact worst-case epsilon at ``delta`` (equal to ``epsilon`` when
        ``exact``); None when the answer has no certified lower curve.
    classic : float or None
        Classic composition's epsilon at ``delta`` (001, Alg. 1); None when not asked for.
    exact : bool
        Whether ``epsilon`` is the exact worst case (the report's ``exact``: its curve is exact).
    """

    delta: float
    epsilon: float
    lower: float | None
    classic: float | None
    exact: bool


def bracketed_table(report: Report, classic_curve: PrivacyCurve | None, deltas: ArrayLike) -> list[CurveRow]:
    """The rows of ``gce curve``: :func:`curve_table` of ``report.curve``, each with its certified bracket.

    The lower end is ``report.lower_curve``'s own ``epsilon(delta)`` (a certified lower curve, e.g.
    :class:`gce.accounting.batch.LowerCurve`, whose inversion rounds down), capped at
    the upper end (both are certified: the exact value lies in ``[min(lower, upper), upper]``); when the
    report is exact its lower curve is its curve and every row is exact. Without a lower curve the lower
    end is None (docs/design.md, "Brackets and exactness").

    Examples
    --------
    >>> from gce.accounting.guarantees import PureDP
    >>> report = Report(1.0, 0.0, "kairouz-III.3", True, None, (), compose({PureDP(0.5): 2}).curve)
    >>> row, = bracketed_table(report, None, [1e-6])
    >>> (row.delta, round(row.epsilon, 4), row.exact, row.lower == row.epsilon, row.classic)
    (1e-06, 1.0, True, True, None)
    """
    if not isinstance(report, Report) or not isinstance(report.curve, PrivacyCurve):
        raise InvalidParameterError("report", "must be a Report with its curve (solve the scenario; a report "
                                              "reloaded with Report.from_dict has none)")
    d = check_deltas(deltas)
    rows = curve_table(report.curve, classic_curve, d)
    exact = bool(report.exact)
    # a certified lower curve (batch.LowerCurve, allocation's LowerBound) is not a guarantee: no PrivacyCurve
    lows = lower_ends(report.curve, report.lower_curve, exact, d, np.array([e for _, e, _ in rows]))
    return [CurveRow(delta, epsilon, low, classic, exact) for (delta, epsilon, classic), low in zip(rows, lows)]


def plot_curves(
    report: Report,
    path: str | os.PathLike[str] | None = None,
    ax: "Axes | None" = None,
    *,
    classic: PrivacyCurve | Scenario | None = None,
    deltas: ArrayLike | None = None,
    dpi: int = 150,
) -> "Axes":
    """Draw epsilon against delta for the GCE answer and classic composition.

    Parameters
    ----------
    report : Report
        Its ``curve`` is drawn, its ``(delta, epsilon)`` marked, its ``title``
        used as the title.
    path : path, optional
        Save the figure there (format from the suffix, e.g. ``.png``, ``.pdf``;
        none means ``.png`` appended: see :func:`plot_file`).
    ax : matplotlib Axes, optional
        Draw on it; by default on a new figure on the Agg canvas.
    classic : PrivacyCurve or Scenario, optional
        The classic curve, or the scenario to compose it from
        (:func:`classic_curve`); omitted, only the GCE curve is drawn (with its certified bracket, a
        band down to ``report.lower_curve``, when the answer is not exact and has one).
    deltas : array_like, optional
        The deltas drawn (0 has no place on the log axis and is left out);
        default :data:`DEFAULT_DELTAS` (1e-12 to 1e-1).
    dpi : int
        Resolution when saving a raster image.

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    PlotUnavailableError
        If matplotlib is not installed: "install the plot extra: pip install 'gce[plot]'".
    InvalidParameterError
        ``report`` is not a report with a curve (one reloaded by
        :meth:`Report.from_dict` has none); ``path`` is refused by
        :func:`plot_file` or cannot be written.

    References
    ----------
    001, Def. 3 (HDP), Alg. 1 (classic) and Alg. 2 (GCE); docs/design.md, "The report".
    """
    if not isinstance(report, Report) or not isinstance(report.curve, PrivacyCurve):
        raise InvalidParameterError("report", "must be a Report with its curve (solve the scenario; a report "
                                              "reloaded with Report.from_dict has none)")
    path = None if path is None else plot_file(path)  # checked before the classic curve is composed
    if isinstance(classic, Scenario):
        classic = classic_curve(classic)
    elif classic is not None and not isinstance(classic, PrivacyCurve):
        raise InvalidParameterError("classic", f"must be a PrivacyCurve or a Scenario, got {type(classic).__name__}")
    # a scenario's title: control characters escaped, never drawn or embedded in an SVG
    return draw_bracketed(report.curve, path, ax, lower_curve=report.lower_curve, exact=bool(report.exact),
                          classic=classic, point=(report.epsilon, report.delta), deltas=deltas,
                          title=terminal_text(report.title or "privacy curve"), dpi=dpi)


def plot_curve(
    curve: PrivacyCurve,
    path: str | os.PathLike[str] | None = None,
    ax: "Axes | None" = None,
    *,
    deltas: ArrayLike | None = None,
    label: str = "epsilon(delta)",
    title: str = "privacy curve",
    dpi: int = 150,
) -> "Axes":
    """Draw one privacy curve, epsilon against delta on a log-scale delta axis.

    What :meth:`gce.accounting.curves.PrivacyCurve.plot` and :meth:`gce.accounting.theorems.Composition.plot`
    draw; ``path``, ``ax``, ``deltas`` and ``dpi`` as in :func:`plot_curves`.

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    PlotUnavailableError
        If matplotlib is not installed.
    InvalidParameterError
        ``curve`` is not a curve, or ``path`` or ``deltas`` is refused.
    """
    if not isinstance(curve, PrivacyCurve):
        raise InvalidParameterError("curve", f"must be a PrivacyCurve, got {type(curve).__name__}")
    return draw_curve(curve, path, ax, deltas=deltas, label=label, title=title, dpi=dpi)

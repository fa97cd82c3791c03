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

Where a plot goes is checked before anything is computed (:func:`plot_file`):
the folder must exist, the suffix must name a format matplotlib writes
(:data:`PLOT_FORMATS`), and a path without a suffix gets ``.png``, the file
actually written, which ``gce curve --plot`` prints.
"""

from __future__ import annotations

import io
import os
import pathlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .accounting.curves import PrivacyCurve
from .errors import GCEError, InvalidParameterError
from .files.paths import check_path
from .model import Scenario, invocation_multiset
from .report import Report, terminal_text
from .accounting.theorems import compose
from .validation import shown

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = [
    "PlotUnavailableError",
    "PLOT_FORMATS",
    "DEFAULT_DELTAS",
    "GCE_LABEL",
    "CLASSIC_LABEL",
    "classic_curve",
    "CurveRow",
    "curve_table",
    "bracketed_table",
    "plot_curves",
    "plot_curve",
    "plot_file",
    "deltas_spanning",
    "BRACKET_LABEL",
    "html_figure",
]

#: The deltas drawn by default: 1e-12 to 1e-1, log-spaced.
DEFAULT_DELTAS = np.logspace(-12, -1, 111)
#: Legend labels.
GCE_LABEL = "GCE (this scenario)"
CLASSIC_LABEL = "classic (every invocation composed)"
BRACKET_LABEL = "certified bracket (the exact curve lies inside)"
#: What to tell a user without matplotlib.
INSTALL_HINT = "install the plot extra: pip install 'gce[plot]'"
#: The image formats a plot may be saved in (file suffixes; matplotlib and Pillow write them).
PLOT_FORMATS = ("png", "pdf", "svg", "svgz", "eps", "ps", "jpg", "jpeg", "tif", "tiff", "webp")


class PlotUnavailableError(GCEError, ImportError):
    """matplotlib is not installed (it is the optional ``plot`` extra)."""


def _pyplot_free_figure() -> Any:
    """A new matplotlib Figure on the Agg canvas, or :class:`PlotUnavailableError`."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise PlotUnavailableError(INSTALL_HINT) from None
    figure = Figure(figsize=(6.4, 4.4), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def classic_curve(scenario: Scenario) -> PrivacyCurve:
    """The curve of classic composition: every invocation of ``scenario`` composed.

    It is the curve behind the report's ``classic`` baseline (001, Alg. 1).
    """
    if not isinstance(scenario, Scenario):
        raise InvalidParameterError("scenario", f"must be a Scenario, got {type(scenario).__name__}")
    return compose(invocation_multiset(scenario.invocations)).curve


def plot_file(path: str | os.PathLike[str]) -> pathlib.Path:
    """The file a plot to ``path`` is written to, checked before anything is drawn.

    A path without a suffix gets ``.png``; the suffix (any case) must be one of
    :data:`PLOT_FORMATS`; the folder must exist, and the path must not be one; an existing file there must
    be a regular file (a named pipe, a device or a socket is refused: :func:`gce.files.paths.check_path`).

    Raises
    ------
    InvalidParameterError
        Named ``path``, saying what is wrong.

    Examples
    --------
    >>> str(plot_file("hospitals")), str(plot_file("hospitals.PDF"))
    ('hospitals.png', 'hospitals.PDF')
    >>> plot_file("hospitals.txt")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gce.errors.InvalidParameterError: path: unsupported image format '.txt' (use .png, .pdf, .svg, ... or .webp)
    """
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidParameterError("path", f"must be a str or os.PathLike, got {shown(path, 200)}")
    try:
        target = pathlib.Path(path)
    except TypeError:  # a PathLike of bytes
        raise InvalidParameterError("path", f"must be a str or os.PathLike of str, got {shown(path, 200)}") from None
    if not target.name or target.is_dir():
        raise InvalidParameterError("path", f"{shown(str(target), 200)} is a folder; give a file name, e.g. curve.png")
    check_path(target, "path", writing=True, shown=shown(str(target), 200))  # /dev/null is not /dev/null.png
    if not target.suffix:
        target = target.with_name(target.name + ".png")
    if target.suffix[1:].lower() not in PLOT_FORMATS:
        formats = ", ".join(f".{f}" for f in PLOT_FORMATS)
        raise InvalidParameterError("path", f"unsupported image format {shown(target.suffix)} (use "
                                            f"{formats.rpartition(', ')[0]} or {formats.rpartition(', ')[2]})")
    folder = target.parent
    if not folder.is_dir():
        named = shown(str(folder), 200)
        raise InvalidParameterError("path", f"{named} is not a folder" if folder.exists() else
                                    f"the folder {named} does not exist")
    check_path(target, "path", writing=True, shown=shown(str(target), 200))  # a named pipe would block the writer
    return target


def _deltas(deltas: ArrayLike | None) -> np.ndarray:
    try:
        d = DEFAULT_DELTAS if deltas is None else np.atleast_1d(np.asarray(deltas, dtype=float))
    except (TypeError, ValueError):
        raise InvalidParameterError("deltas", f"must be a non-empty list of values in [0, 1), got {shown(deltas)}") \
            from None
    if d.ndim != 1 or d.size == 0 or np.any(~np.isfinite(d)) or np.any(d < 0) or np.any(d >= 1):
        raise InvalidParameterError("deltas", f"must be a non-empty list of values in [0, 1), got {shown(deltas)}")
    return d


#: How many deltas a plot draws between the smallest and the largest asked (:func:`deltas_spanning`).
DRAWN_DELTAS = 111


def deltas_spanning(asked: ArrayLike, points: int = DRAWN_DELTAS) -> np.ndarray:
    """The deltas to draw for the deltas ``asked`` (``gce curve --deltas ... --plot``): ``points`` log-spaced
    from the smallest positive one to the largest, the asked ones among them; one delta alone is drawn a
    decade either side (at most 0.5). Deltas of 0 have no place on a log axis.

    Examples
    --------
    >>> d = deltas_spanning([1e-6, 1e-3, 0.0])
    >>> float(d[0]), float(d[-1]), d.size
    (1e-06, 0.001, 111)
    >>> float(deltas_spanning([1e-4])[0]), float(deltas_spanning([1e-4])[-1])
    (1e-05, 0.001)
    """
    d = _deltas(asked)
    d = d[d > 0]
    if d.size == 0:
        raise InvalidParameterError("deltas", "needs a positive delta to draw on a log axis")
    low, high = float(d.min()), float(d.max())
    if low == high:
        low, high = low / 10, min(high * 10, 0.5)
    grid = np.logspace(np.log10(low), np.log10(high), points)
    grid[0], grid[-1] = low, high  # exactly the ends (logspace rounds)
    return np.unique(np.concatenate([grid, d]))


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
    d = _deltas(deltas)
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
    d = _deltas(deltas)
    rows = curve_table(report.curve, classic_curve, d)
    exact, lower_curve = bool(report.exact), report.lower_curve
    if exact or lower_curve is report.curve:
        lows: list[float | None] = [e for _, e, _ in rows]
    elif lower_curve is not None:  # a certified lower curve (batch.LowerCurve, allocation's LowerBound): not a
        lower = np.atleast_1d(np.asarray(lower_curve.epsilon(d), dtype=float))  # guarantee, so no PrivacyCurve
        lows = [min(float(low), e) for low, (_, e, _) in zip(lower, rows)]
    else:
        lows = [None] * len(rows)
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
    target = None if path is None else plot_file(path)
    d = _deltas(deltas)
    d = d[d > 0]
    if d.size == 0:
        raise InvalidParameterError("deltas", "needs a positive delta to draw on a log axis")
    if isinstance(classic, Scenario):
        classic = classic_curve(classic)
    if ax is None:
        ax = _pyplot_free_figure().add_subplot()
    rows = bracketed_table(report, classic, d)
    upper = _finite(np.array([r.epsilon for r in rows]))
    ax.plot(d, upper, label=GCE_LABEL, color="C0", linewidth=2)
    if classic is not None:
        ax.plot(d, _finite(np.array([r.classic for r in rows])), label=CLASSIC_LABEL, color="C1", linestyle="--")
    if not report.exact and all(r.lower is not None for r in rows):  # the band between the certified curves
        ax.fill_between(d, _finite(np.array([r.lower for r in rows])), upper, color="C0", alpha=0.2, linewidth=0,
                        label=BRACKET_LABEL)
    if np.isfinite(report.epsilon) and 0 < report.delta < 1:
        ax.plot([report.delta], [report.epsilon], "o", color="C0",
                label=f"reported: epsilon {report.epsilon:.4g} at delta {report.delta:.3g}")
    _finish(ax, report.title or "privacy curve", target, dpi)
    return ax


def _finite(values: np.ndarray) -> np.ndarray:
    """Values to draw: ``inf`` (below the delta floor) and None left out (NaN)."""
    values = np.asarray(values, dtype=float)
    return np.where(np.isfinite(values), values, np.nan)


def _finish(ax: "Axes", title: str, target: pathlib.Path | None, dpi: int) -> None:
    """Axes, title, grid and legend; then the file, when asked (an error names ``path``)."""
    ax.set_xscale("log")
    ax.set_xlabel("delta")
    ax.set_ylabel("epsilon")
    ax.set_title(terminal_text(title))  # a scenario's title: control characters escaped, never drawn or embedded
    ax.grid(True, which="major", alpha=0.3)
    ax.legend()
    if target is not None:
        try:
            ax.figure.savefig(target, dpi=dpi)
        except OSError as error:
            raise InvalidParameterError("path", f"cannot write {shown(str(target), 200)}: "
                                                f"{error.strerror or error}") from None


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
    target = None if path is None else plot_file(path)
    d = _deltas(deltas)
    d = d[d > 0]
    if d.size == 0:
        raise InvalidParameterError("deltas", "needs a positive delta to draw on a log axis")
    if ax is None:
        ax = _pyplot_free_figure().add_subplot()
    ax.plot(d, _finite(curve.epsilon(d)), label=label, color="C0", linewidth=2)
    _finish(ax, title, target, dpi)
    return ax


#: The deltas of a notebook's figure (fewer than :data:`DEFAULT_DELTAS`: a display is drawn on every show).
HTML_DELTAS = np.logspace(-12, -1, 45)


def html_figure(draw: "Callable[[Axes], object]") -> str:
    """A figure as inline SVG for a notebook's HTML display (``_repr_html_``), or ``""`` when matplotlib
    is missing: a display never fails for want of the plot extra.

    ``draw(ax)`` draws on a new small figure (the Agg canvas: no pyplot state, nothing shown twice).
    """
    try:
        figure = _pyplot_free_figure()
    except PlotUnavailableError:
        return ""
    figure.set_size_inches(5.6, 3.6)
    draw(figure.add_subplot())
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg")
    text = buffer.getvalue()
    return text[text.find("<svg"):]  # the element alone (no XML declaration or DOCTYPE inside HTML)

"""Figures of privacy curves: epsilon against delta on a log-scale delta axis (matplotlib, imported on first use).

The drawing itself, below the model and the report, so that a curve (:meth:`PrivacyCurve.plot
<gce.accounting.curves.PrivacyCurve.plot>`), a composition and a report (:meth:`gce.report.Report.plot`) draw
themselves and show in a notebook without importing anything above them; :mod:`gce.plot` adds the tables
of ``gce curve`` and the checks of its public functions, and re-exports these names. A curve is anything
with ``epsilon(deltas)`` (this module imports no curve).

matplotlib is optional (the ``plot`` extra) and imported only when drawing; it draws on a bare
:class:`matplotlib.figure.Figure` (the Agg canvas, no display, no pyplot state), or on the Axes it is given.

What must never change: every value drawn is the curve's own ``epsilon(delta)`` (a certified upper bound,
rounded up), never an interpolation between points; a bracket's lower edge is the lower curve's own
``epsilon(delta)``, capped at the upper one (docs/design.md, "Brackets and exactness").
"""

from __future__ import annotations

import io
import os
import pathlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from ..errors import GCEError, InvalidParameterError
from ..files.paths import check_path
from ..validation import shown

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["PlotUnavailableError", "PLOT_FORMATS", "DEFAULT_DELTAS", "HTML_DELTAS", "DRAWN_DELTAS", "GCE_LABEL",
           "CLASSIC_LABEL", "BRACKET_LABEL", "INSTALL_HINT", "new_figure", "plot_file", "check_deltas",
           "deltas_spanning", "lower_ends", "draw_curve", "draw_bracketed", "html_figure"]

#: The deltas drawn by default: 1e-12 to 1e-1, log-spaced.
DEFAULT_DELTAS = np.logspace(-12, -1, 111)
#: The deltas of a notebook's figure (fewer than :data:`DEFAULT_DELTAS`: a display is drawn on every show).
HTML_DELTAS = np.logspace(-12, -1, 45)
#: How many deltas a plot draws between the smallest and the largest asked (:func:`deltas_spanning`).
DRAWN_DELTAS = 111
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


def new_figure() -> Any:
    """A new matplotlib Figure on the Agg canvas, or :class:`PlotUnavailableError`."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise PlotUnavailableError(INSTALL_HINT) from None
    figure = Figure(figsize=(6.4, 4.4), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


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


def check_deltas(deltas: ArrayLike | None) -> np.ndarray:
    """Deltas in [0, 1), as a 1-d array (None: :data:`DEFAULT_DELTAS`); an error names ``deltas``."""
    try:
        d = DEFAULT_DELTAS if deltas is None else np.atleast_1d(np.asarray(deltas, dtype=float))
    except (TypeError, ValueError):
        raise InvalidParameterError("deltas", f"must be a non-empty list of values in [0, 1), got {shown(deltas)}") \
            from None
    if d.ndim != 1 or d.size == 0 or np.any(~np.isfinite(d)) or np.any(d < 0) or np.any(d >= 1):
        raise InvalidParameterError("deltas", f"must be a non-empty list of values in [0, 1), got {shown(deltas)}")
    return d


def _positive(deltas: ArrayLike | None) -> np.ndarray:
    """The deltas a log axis can draw (0 left out), or an error naming ``deltas``."""
    d = check_deltas(deltas)
    d = d[d > 0]
    if d.size == 0:
        raise InvalidParameterError("deltas", "needs a positive delta to draw on a log axis")
    return d


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
    d = _positive(asked)
    low, high = float(d.min()), float(d.max())
    if low == high:
        low, high = low / 10, min(high * 10, 0.5)
    grid = np.logspace(np.log10(low), np.log10(high), points)
    grid[0], grid[-1] = low, high  # exactly the ends (logspace rounds)
    return np.unique(np.concatenate([grid, d]))


def lower_ends(curve: Any, lower_curve: Any, exact: bool, deltas: np.ndarray,
               upper: np.ndarray) -> list[float | None]:
    """The certified lower end at each delta: the upper end itself when ``exact`` (or the lower curve is the
    curve), the lower curve's own ``epsilon(delta)`` capped at ``upper`` (both are certified: the exact value
    lies in ``[min(lower, upper), upper]``), or None without a lower curve."""
    if exact or lower_curve is curve:
        return [float(e) for e in upper]
    if lower_curve is None:
        return [None] * len(upper)
    lower = np.atleast_1d(np.asarray(lower_curve.epsilon(deltas), dtype=float))
    return [min(float(low), float(e)) for low, e in zip(lower, upper)]


def _finite(values: ArrayLike) -> np.ndarray:
    """Values to draw: ``inf`` (below the delta floor) and None left out (NaN)."""
    values = np.asarray(values, dtype=float)
    return np.where(np.isfinite(values), values, np.nan)


def _finish(ax: "Axes", title: str, target: pathlib.Path | None, dpi: int) -> "Axes":
    """Axes, title, grid and legend; then the file, when asked (an error names ``path``)."""
    ax.set_xscale("log")
    ax.set_xlabel("delta")
    ax.set_ylabel("epsilon")
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend()
    if target is not None:
        try:
            ax.figure.savefig(target, dpi=dpi)
        except OSError as error:
            raise InvalidParameterError("path", f"cannot write {shown(str(target), 200)}: "
                                                f"{error.strerror or error}") from None
    return ax


def draw_curve(curve: Any, path: str | os.PathLike[str] | None = None, ax: "Axes | None" = None, *,
               deltas: ArrayLike | None = None, label: str = "epsilon(delta)", title: str = "privacy curve",
               dpi: int = 150) -> "Axes":
    """Draw one curve (anything with ``epsilon(deltas)``); see :func:`gce.plot.plot_curve`."""
    target = None if path is None else plot_file(path)
    d = _positive(deltas)
    if ax is None:
        ax = new_figure().add_subplot()
    ax.plot(d, _finite(curve.epsilon(d)), label=label, color="C0", linewidth=2)
    return _finish(ax, title, target, dpi)


def draw_bracketed(curve: Any, path: str | os.PathLike[str] | None = None, ax: "Axes | None" = None, *,
                   lower_curve: Any = None, exact: bool = False, classic: Any = None,
                   point: tuple[float, float] | None = None, deltas: ArrayLike | None = None,
                   title: str = "privacy curve", dpi: int = 150) -> "Axes":
    """Draw an answer's curve (:data:`GCE_LABEL`), classic composition's beside it (when given), the certified
    bracket down to ``lower_curve`` as a band (when not ``exact``) and the reported ``point`` (epsilon,
    delta); what :func:`gce.plot.plot_curves` and :meth:`gce.report.Report.plot` draw."""
    target = None if path is None else plot_file(path)
    d = _positive(deltas)
    if ax is None:
        ax = new_figure().add_subplot()
    upper = np.asarray(curve.epsilon(d), dtype=float)
    ax.plot(d, _finite(upper), label=GCE_LABEL, color="C0", linewidth=2)
    if classic is not None:
        ax.plot(d, _finite(classic.epsilon(d)), label=CLASSIC_LABEL, color="C1", linestyle="--")
    lows = lower_ends(curve, lower_curve, exact, d, upper)
    if not exact and all(low is not None for low in lows):  # the band between the certified curves
        ax.fill_between(d, _finite(np.array(lows, dtype=float)), _finite(upper), color="C0", alpha=0.2,
                        linewidth=0, label=BRACKET_LABEL)
    if point is not None and np.isfinite(point[0]) and 0 < point[1] < 1:
        ax.plot([point[1]], [point[0]], "o", color="C0",
                label=f"reported: epsilon {point[0]:.4g} at delta {point[1]:.3g}")
    return _finish(ax, title, target, dpi)


def html_figure(draw: Callable[["Axes"], object]) -> str:
    """A figure as inline SVG for a notebook's HTML display (``_repr_html_``), or ``""`` when matplotlib
    is missing: a display never fails for want of the plot extra.

    ``draw(ax)`` draws on a new small figure (the Agg canvas: no pyplot state, nothing shown twice).
    """
    try:
        figure = new_figure()
    except PlotUnavailableError:
        return ""
    figure.set_size_inches(5.6, 3.6)
    draw(figure.add_subplot())
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg")
    text = buffer.getvalue()
    return text[text.find("<svg"):]  # the element alone (no XML declaration or DOCTYPE inside HTML)

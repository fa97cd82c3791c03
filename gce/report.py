"""The report: the HDP guarantee, how it was found, and the classic answers beside it.

What must never change: ``epsilon`` and ``delta`` form a valid hypothesis-DP
guarantee (001, Def. 3) for the scenario; ``exact`` is true only when no valid
guarantee is tighter at that point; ``to_dict()`` is the JSON the command line
prints (docs/design.md, "Scenario files and the command line").

Text that comes from a scenario file (the title, database names, the notes
naming a data file) reaches terminals: :func:`terminal_text` escapes control
characters in it, and ``str(report)`` applies it to every field, so a file
cannot move the cursor, recolour or clear a terminal (hardening).
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from .effort import check_rtol, describe_width, relative_width
from .errors import InvalidParameterError
from .validation import is_integer, is_number, shown

if TYPE_CHECKING:  # pragma: no cover - the curves (and their scipy) load with the engines, not with a report
    import os

    from matplotlib.axes import Axes

    from .accounting.curves import PrivacyCurve

__all__ = ["Baseline", "Report", "json_number", "plain", "terminal_text", "to_json"]

#: Characters a terminal may act on instead of showing: C0 controls (tab and newline included), DEL, C1
#: controls, the Unicode line and paragraph separators and the bidirectional-text controls.
_CONTROLS = {code: f"\\x{code:02x}" for code in (*range(0x20), 0x7F, *range(0x80, 0xA0))}
_CONTROLS.update({code: f"\\u{code:04x}" for code in (0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A))})


def terminal_text(text: str) -> str:
    """``text`` safe to print on a terminal: every control character written as a visible escape.

    C0 controls (including tab and newline), DEL and C1 controls become
    ``\\xNN``; the Unicode line/paragraph separators and bidirectional-text
    controls become ``\\uNNNN``; every other character (accents, CJK, emoji) is
    kept.

    Examples
    --------
    >>> terminal_text("Hospitals \\x1b[2J\\x9b31m, Zürich\\n")
    'Hospitals \\\\x1b[2J\\\\x9b31m, Zürich\\\\x0a'
    """
    return str(text).translate(_CONTROLS)


def json_number(x: float | None) -> float | str | None:
    """JSON has no infinity: infinite epsilons are written as the string "inf"."""
    if x is None:
        return None
    return "inf" if math.isinf(x) else float(x)


def plain(value: Any) -> Any:
    """``value`` with every numpy scalar and array replaced by the plain Python value (``bool``, ``int``,
    ``float``, lists), mappings and sequences walked: what ``json.dumps`` and :meth:`Report.from_dict` read.

    Engines compute in numpy, so a flag or a count they hand back may be a ``numpy.bool_`` or
    ``numpy.int64``, which ``json.dumps`` refuses; reports, calibrations, curve rows and ledger answers pass
    through this function once, when they are built or written.

    Examples
    --------
    >>> plain({"exact": np.bool_(True), "h1": (np.int64(3), 4), "epsilon": np.float64(0.5)})
    {'exact': True, 'h1': [3, 4], 'epsilon': 0.5}
    >>> type(plain(np.float64(0.5))), type(plain(np.bool_(False)))
    (<class 'float'>, <class 'bool'>)
    """
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, (np.generic, np.ndarray)):
        return plain(value.tolist()) if isinstance(value, np.ndarray) else value.item()
    if isinstance(value, float):
        return float(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, Mapping):
        return {plain(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, (set, frozenset)):
        return sorted(plain(item) for item in value)
    return value


def to_json(data: Any) -> str:
    """The command line's one JSON writer: ``data`` made :func:`plain`, indented, NaN refused."""
    return json.dumps(plain(data), indent=2, allow_nan=False)


def _number(value: Any) -> Any:
    """A float field as a plain float (None kept)."""
    return None if value is None else float(value)


@dataclass(frozen=True)
class Baseline:
    """A comparison answer: ``classic`` (every invocation composed) or ``parallel``."""

    name: str
    epsilon: float
    delta: float
    theorem: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _number(self.epsilon))
        object.__setattr__(self, "delta", _number(self.delta))

    def to_dict(self) -> dict[str, Any]:
        return {"epsilon": json_number(self.epsilon), "delta": json_number(self.delta), "theorem": self.theorem}


@dataclass(frozen=True)
class Report:
    """The answer of :func:`gce.solve`.

    Attributes
    ----------
    epsilon, delta : float
        The HDP guarantee (epsilon is ``inf`` when no finite one exists at delta).
    theorem : str
        The composition theorem that gave it.
    exact : bool
        Whether the guarantee is the exact worst case.
    witness : (frozenset, frozenset) or None
        The worst-case pair of membership sets (h0, h1) found.
    witness_names : (tuple of str, tuple of str) or None
        The databases of ``witness`` by name (sorted by index), when the scenario names its databases;
        None otherwise. The text report shows these names; the JSON keeps the indices in ``witness``
        and adds the names as ``witness_names``.
    differing : tuple of int
        Indices of the invocations on databases where h0 and h1 differ.
    differing_count : int
        How many invocations those are, repeats counted.
    curve : PrivacyCurve
        The whole certified curve delta(epsilon) of the HDP guarantee (None
        for a report reloaded with :meth:`from_dict`).
    baselines : dict of str to Baseline
        ``classic`` and, for pure guarantees, ``parallel``.
    witness_epsilon : float or None
        The epsilon of the worst-case pair found (``witness``), composed by the tightest theorem that
        applies to that pair alone. The pair is allowed, so its *exact* epsilon is a lower bound on the
        scenario's worst case; this number is that pair's certified epsilon, an upper bound on the pair's
        exact epsilon, so it is a certified lower bound on the answer only when ``exact`` is true (then
        it equals ``epsilon``). The certified lower bound, when there is one, is ``bracket[0]``. None
        when the target is an epsilon (the report gives delta) or when no pair was found. Read under its
        older name ``lower_bound_epsilon`` too (attribute and JSON key).
    notes : tuple of str
        Plain statements: why epsilon is infinite, the solver's gap, ...
    bracket : (float, float) or None
        When the answer is not exact and its composition has a certified lower curve (the ``batch``
        theorem): (lower, upper) around the exact value of the reported quantity (epsilon at ``delta``,
        or delta at a given epsilon); ``upper`` is the reported value, ``lower`` a certified lower bound
        on the exact worst case (the worst pair found, composed with optimistic rounding). None otherwise.
    rtol : float or None
        The relative accuracy the solve was asked for (:data:`gce.effort.DEFAULT_RTOL` by default).
    time_limit_reached : bool
        Whether the time limit stopped a refinement or a search: the answer is then the last completed step
        of the same deterministic schedule (certified, looser than asked); the notes say what stopped, and
        :attr:`accuracy` what was reached. When false, the same question gives the same report on any
        machine.
    lower_curve : PrivacyCurve or None
        A certified lower bound on the exact worst-case curve at every epsilon (the curve itself when
        ``exact``; the worst pair's optimistic composition, or a route's lower curve, when there is one;
        else None): ``gce curve`` brackets each row with it. Not in the JSON.
    """

    epsilon: float
    delta: float
    theorem: str
    exact: bool
    witness: tuple[frozenset[int], frozenset[int]] | None
    differing: tuple[int, ...]
    curve: PrivacyCurve = field(repr=False, compare=False)
    baselines: dict[str, Baseline] = field(default_factory=dict)
    solver: str = ""
    witness_epsilon: float | None = None
    notes: tuple[str, ...] = ()
    title: str = ""
    differing_count: int = 0
    bracket: tuple[float, float] | None = None
    witness_names: tuple[tuple[str, ...], tuple[str, ...]] | None = None
    rtol: float | None = None
    time_limit_reached: bool = False
    lower_curve: PrivacyCurve | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        # plain Python values, whatever engine computed them (numpy's bool_ and int64 are not JSON)
        for name in ("epsilon", "delta", "witness_epsilon", "rtol"):
            object.__setattr__(self, name, _number(getattr(self, name)))
        object.__setattr__(self, "exact", bool(self.exact))
        object.__setattr__(self, "time_limit_reached", bool(self.time_limit_reached))
        object.__setattr__(self, "differing", tuple(int(i) for i in self.differing))
        object.__setattr__(self, "differing_count", int(self.differing_count))
        if self.witness is not None:
            object.__setattr__(self, "witness", tuple(frozenset(int(i) for i in members) for members in self.witness))
        if self.bracket is not None:
            object.__setattr__(self, "bracket", (float(self.bracket[0]), float(self.bracket[1])))
        object.__setattr__(self, "notes", tuple(self.notes))
        if self.witness_names is not None:
            if self.witness is None or len(self.witness_names) != 2 or any(
                    len(names) != len(members) for names, members in zip(self.witness_names, self.witness)):
                raise InvalidParameterError("witness_names", f"must name each database of the witness, got "
                                                             f"{_shown(self.witness_names)}")
            object.__setattr__(self, "witness_names", tuple(tuple(names) for names in self.witness_names))

    @property
    def accuracy(self) -> float | None:
        """The accuracy reached: the certified bracket's width, ``upper / lower - 1``
        (:func:`gce.effort.relative_width`; 0 when exact; None when the answer is not exact and has no
        certified bracket)."""
        if self.exact:
            return 0.0
        return None if self.bracket is None else relative_width(*self.bracket)

    def _limit_line(self) -> list[str]:
        """The first line when the time limit stopped a step: what accuracy was reached, against what asked."""
        if not self.time_limit_reached:
            return []
        reached = self.accuracy
        reached = "no certified lower bound" if reached is None else f"bracket {describe_width(reached)} wide"
        asked = "" if self.rtol is None else f", {100 * self.rtol:.3g}% asked"
        return [f"time limit reached: a certified but coarser answer ({reached}{asked})"]

    @property
    def lower_bound_epsilon(self) -> float | None:
        """Deprecated: the older name of :attr:`witness_epsilon` (warns; the JSON key ``lower_bound_epsilon``
        is kept as it was): the worst-case pair's certified epsilon, a lower bound on the answer only when
        ``exact``; the certified lower bound is ``bracket[0]``."""
        from .validation import warn_renamed

        warn_renamed("Report.lower_bound_epsilon", "Report.witness_epsilon (the certified lower bound is "
                                                   "Report.bracket[0])")
        return self.witness_epsilon

    def __repr__(self) -> str:
        """One line: the guarantee, its theorem, whether it is exact, and the bracket when there is one."""
        bracket = "" if self.bracket is None else f", bracket=[{self.bracket[0]:.6g}, {self.bracket[1]:.6g}]"
        return (f"Report(epsilon={self.epsilon:.6g}, delta={self.delta:.3g}, theorem={self.theorem!r}, "
                f"exact={self.exact}{bracket})")

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``gce solve --json``)."""
        return {
            "title": self.title,
            "epsilon": json_number(self.epsilon),
            "delta": json_number(self.delta),
            "theorem": self.theorem,
            "exact": self.exact,
            "witness": None if self.witness is None else {
                "h0": sorted(self.witness[0]), "h1": sorted(self.witness[1])},
            "differing_invocations": list(self.differing),
            "differing_count": self.differing_count,
            "solver": self.solver,
            "lower_bound_epsilon": json_number(self.witness_epsilon),
            "witness_epsilon": json_number(self.witness_epsilon),
            "bracket": None if self.bracket is None else {
                "lower": json_number(self.bracket[0]), "upper": json_number(self.bracket[1])},
            "baselines": {name: b.to_dict() for name, b in self.baselines.items()},
            "notes": list(self.notes),
            "witness_names": None if self.witness_names is None else {
                "h0": list(self.witness_names[0]), "h1": list(self.witness_names[1])},
            "status": "time limit reached" if self.time_limit_reached else "complete",
            "time_limit_reached": self.time_limit_reached,
            "rtol": self.rtol,
            "accuracy": json_number(self.accuracy),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Report":
        """The report of :meth:`to_dict`'s JSON, without the curve (``curve`` is None).

        ``Report.from_dict(r.to_dict()).to_dict() == r.to_dict()``, so saved
        results can be reloaded, compared and printed. Every field is checked
        (saved files get edited and truncated).

        Raises
        ------
        InvalidParameterError
            Naming the field, e.g. ``data.epsilon: must be a number >= 0 or
            "inf", got "x"``; ``data`` itself when it is not a mapping.

        Examples
        --------
        >>> Report.from_dict({"epsilon": "x"})
        Traceback (most recent call last):
        ...
        gce.errors.InvalidParameterError: data.epsilon: must be a number >= 0 or "inf", got "x"
        """
        if not isinstance(data, Mapping):
            raise InvalidParameterError("data", f"must be a mapping (the JSON of Report.to_dict()), got {_shown(data)}")
        field = _Fields(data, "data")
        epsilon, delta = field.required("epsilon", _epsilon), field.required("delta", _delta)
        theorem, exact = field.required("theorem", _text), field.required("exact", _flag)
        return cls(
            epsilon=epsilon, delta=delta, theorem=theorem, exact=exact,
            witness=field.optional("witness", _witness, None),
            differing=tuple(field.optional("differing_invocations", _indices, [])), curve=None,
            baselines=field.optional("baselines", _baselines, {}), solver=field.optional("solver", _text, ""),
            witness_epsilon=field.optional("witness_epsilon", _optional_epsilon,
                                           field.optional("lower_bound_epsilon", _optional_epsilon, None)),
            notes=tuple(field.optional("notes", _texts, [])), title=field.optional("title", _text, ""),
            differing_count=field.optional("differing_count", _count_of, 0),
            bracket=field.optional("bracket", _bracket, None),
            witness_names=field.optional("witness_names", _witness_names, None),
            rtol=field.optional("rtol", _optional_rtol, None),
            time_limit_reached=field.optional("time_limit_reached", _flag, False),
        )

    def _rows(self) -> list[tuple[str, str, str, str]]:
        """The table's rows, every text escaped for terminals (:func:`terminal_text`)."""
        rows = [("", "epsilon", "delta", "theorem")]
        rows.append(("GCE (this scenario)", f"{self.epsilon:.6g}", f"{self.delta:.3g}", terminal_text(self.theorem)))
        for name, b in self.baselines.items():
            rows.append((terminal_text(name), f"{b.epsilon:.6g}", f"{b.delta:.3g}", terminal_text(b.theorem)))
        return rows

    def _witness_line(self) -> list[str]:
        """The worst-case pair, when there is one (escaped for terminals)."""
        if self.witness is None:
            return []
        if self.witness_names is not None:
            h0, h1 = (list(map(terminal_text, names)) for names in self.witness_names)
        else:
            h0, h1 = (list(map(str, sorted(s))) for s in self.witness)
        return [f"worst-case pair: h0 = {_short(h0)}, h1 = {_short(h1)} "
                f"({_count(self.differing_count, 'differing invocation')}; solver {terminal_text(self.solver)})"]

    def _notes(self) -> list[str]:
        return [f"note: {terminal_text(n)}" for n in self.notes]

    def _bracket_line(self) -> list[str]:
        """The certified bracket of a number that is not exact, when there is one."""
        if self.exact or self.bracket is None:
            return []
        what = "epsilon" if self.bracket[1] == self.epsilon else "delta"
        return [f"certified bracket: [{self.bracket[0]:.6g}, {self.bracket[1]:.6g}] (the exact {what} lies inside)"]

    def _repr_html_(self) -> str:
        """The report in a notebook (Jupyter): the table, the facts, and the curve with its certified bracket
        (:meth:`plot`, as inline SVG; left out without matplotlib or without a curve)."""
        parts = [f"<strong>{html.escape(terminal_text(self.title))}</strong>"] if self.title else []
        parts.append(f"<table>{_html_rows(self._rows())}</table>")
        facts = [*self._limit_line(), f"exact: {'yes' if self.exact else 'no'}", *self._bracket_line(),
                 *self._witness_line(), *self._notes()]
        parts.append("<ul>" + "".join(f"<li>{html.escape(f)}</li>" for f in facts) + "</ul>")
        if self.curve is not None:
            from .accounting.figures import HTML_DELTAS, html_figure

            parts.append(html_figure(lambda ax: self.plot(ax=ax, deltas=HTML_DELTAS)))
        return "".join(parts)

    def plot(self, path: "str | os.PathLike[str] | None" = None, ax: "Axes | None" = None, *,
             classic: Any = None, deltas: Any = None, dpi: int = 150) -> "Axes":
        """Draw the report's curve, epsilon against delta, with its certified bracket and the reported point.

        What :func:`gce.plot.plot_curves` draws for this report (matplotlib, the ``plot`` extra, imported now).

        Parameters
        ----------
        path : path, optional
            Save the figure there (``.png``, ``.pdf``, ``.svg``, ...; none means ``.png`` appended).
        ax : matplotlib Axes, optional
            Draw on it; by default on a new figure (``ax.figure`` is the figure).
        classic : PrivacyCurve or Scenario, optional
            Classic composition's curve beside it, or the scenario to compose it from.
        deltas : array_like, optional
            The deltas drawn; default 1e-12 to 1e-1.
        dpi : int
            Resolution when saving a raster image.

        Returns
        -------
        matplotlib.axes.Axes

        Raises
        ------
        PlotUnavailableError
            matplotlib is not installed (``pip install 'gce[plot]'``).
        InvalidParameterError
            The report has no curve (reloaded by :meth:`from_dict`), or ``path`` or ``deltas`` is refused.

        Examples
        --------
        >>> import gce
        >>> scenario = gce.Scenario(10, [gce.Invocation(i, gce.ApproxDP(0.1, 1e-8)) for i in range(10)],
        ...                         gce.AtMost(3), delta=1e-6)
        >>> ax = gce.solve(scenario).plot(classic=scenario)  # doctest: +SKIP
        >>> ax.figure.savefig("curve.png")  # doctest: +SKIP
        """
        from .accounting.curves import PrivacyCurve
        from .accounting.figures import draw_bracketed, plot_file

        if self.curve is None:
            raise InvalidParameterError("report", "must be a Report with its curve (solve the scenario; a report "
                                                  "reloaded with Report.from_dict has none)")
        path = None if path is None else plot_file(path)  # checked before the classic curve is composed
        if classic is not None and not isinstance(classic, PrivacyCurve):
            invocations = getattr(classic, "invocations", None)  # a Scenario (the model sits above the report)
            if not hasattr(invocations, "multiset"):
                raise InvalidParameterError("classic", f"must be a PrivacyCurve or a Scenario, got "
                                                       f"{type(classic).__name__}")
            from .accounting.theorems import compose

            classic = compose(invocations.multiset()).curve  # classic composition: every invocation (001, Alg. 1)
        return draw_bracketed(self.curve, path, ax, lower_curve=self.lower_curve, exact=self.exact, classic=classic,
                              point=(self.epsilon, self.delta), deltas=deltas,
                              title=terminal_text(self.title or "privacy curve"), dpi=dpi)

    def __str__(self) -> str:
        """The report for a terminal; text from the scenario (title, notes) has its control characters escaped."""
        rows = self._rows()
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = self._limit_line() + ([terminal_text(self.title)] if self.title else [])
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        lines += [*self._witness_line(), f"exact: {'yes' if self.exact else 'no'}", *self._notes()]
        return "\n".join(lines)


# ---------------------------------------------------------------------------
# Reading a report's JSON back (Report.from_dict): every field checked, named data.<key>

T = TypeVar("T")


def _shown(value: object) -> str:
    """A value as JSON writes it, cut short, for messages (:func:`gce.validation.shown`)."""
    return shown(value, spelling="json")


class _Fields:
    """Reads keys of a table of a report's JSON through a checker; a missing required key or a bad value is
    named by its path under ``prefix`` (``data.epsilon``, ``data.baselines.classic.delta``)."""

    def __init__(self, table: Mapping[str, Any], prefix: str):
        self.table, self.prefix = table, prefix

    def required(self, key: str, check: Callable[[object, str], T]) -> T:
        if key not in self.table:
            raise InvalidParameterError(f"{self.prefix}.{key}", "is missing")
        return check(self.table[key], f"{self.prefix}.{key}")

    def optional(self, key: str, check: Callable[[object, str], T], default: T) -> T:
        return default if key not in self.table else check(self.table[key], f"{self.prefix}.{key}")


def _epsilon(value: object, name: str) -> float:
    """An epsilon: a number >= 0, or "inf" (:func:`json_number`)."""
    number = math.inf if value == "inf" else value
    if not is_number(number) or not number >= 0:
        raise InvalidParameterError(name, f'must be a number >= 0 or "inf", got {_shown(value)}')
    return float(number)


def _optional_epsilon(value: object, name: str) -> float | None:
    return None if value is None else _epsilon(value, name)


def _optional_rtol(value: object, name: str) -> float | None:
    return None if value is None else check_rtol(value, name)


def _bracket(value: object, name: str) -> tuple[float, float] | None:
    """null, or {"lower": x, "upper": y} with 0 <= x <= y (epsilons, or deltas: both numbers or "inf")."""
    if value is None:
        return None
    if not isinstance(value, Mapping) or set(value) != {"lower", "upper"}:
        raise InvalidParameterError(name, f'must be null or {{"lower": ..., "upper": ...}}, got {_shown(value)}')
    low, high = _epsilon(value["lower"], f"{name}.lower"), _epsilon(value["upper"], f"{name}.upper")
    if not low <= high:
        raise InvalidParameterError(name, f"lower must be at most upper, got {_shown(value)}")
    return low, high


def _delta(value: object, name: str) -> float:
    if not is_number(value) or not 0 <= value <= 1:
        raise InvalidParameterError(name, f"must be a number in [0, 1], got {_shown(value)}")
    return float(value)


def _text(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise InvalidParameterError(name, f"must be a string, got {_shown(value)}")
    return value


def _texts(value: object, name: str) -> list[str]:
    if not isinstance(value, (list, tuple)):
        raise InvalidParameterError(name, f"must be a list of strings, got {_shown(value)}")
    return [_text(item, f"{name}[{i}]") for i, item in enumerate(value)]


def _flag(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidParameterError(name, f"must be true or false, got {_shown(value)}")
    return value


def _count_of(value: object, name: str) -> int:
    if not is_integer(value) or value < 0:
        raise InvalidParameterError(name, f"must be an integer >= 0, got {_shown(value)}")
    return value


def _indices(value: object, name: str) -> list[int]:
    if not isinstance(value, (list, tuple)):
        raise InvalidParameterError(name, f"must be a list of integers >= 0, got {_shown(value)}")
    return [_count_of(item, f"{name}[{i}]") for i, item in enumerate(value)]


def _witness(value: object, name: str) -> tuple[frozenset[int], frozenset[int]] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or set(value) != {"h0", "h1"}:
        raise InvalidParameterError(name, f'must be null or {{"h0": [...], "h1": [...]}}, got {_shown(value)}')
    return frozenset(_indices(value["h0"], f"{name}.h0")), frozenset(_indices(value["h1"], f"{name}.h1"))


def _witness_names(value: object, name: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or set(value) != {"h0", "h1"}:
        raise InvalidParameterError(name, f'must be null or {{"h0": [...], "h1": [...]}}, got {_shown(value)}')
    return tuple(_texts(value["h0"], f"{name}.h0")), tuple(_texts(value["h1"], f"{name}.h1"))


def _baselines(value: object, name: str) -> dict[str, Baseline]:
    if not isinstance(value, Mapping):
        raise InvalidParameterError(name, f"must be a mapping of names to baselines, got {_shown(value)}")
    out = {}
    for key, entry in value.items():
        where = f"{name}.{_text(key, f'{name} key')}"
        if not isinstance(entry, Mapping):
            raise InvalidParameterError(where, f"must be a mapping with epsilon, delta and theorem, "
                                               f"got {_shown(entry)}")
        field = _Fields(entry, where)
        out[key] = Baseline(key, field.required("epsilon", _epsilon), field.required("delta", _delta),
                            field.required("theorem", _text))
    return out


def _html_rows(rows: list[tuple[str, ...]]) -> str:
    head, *body = rows
    out = ["<tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in head) + "</tr>"]
    out += ["<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in body]
    return "".join(out)


def _count(k: int, noun: str) -> str:
    return f"{k} {noun}" + ("" if k == 1 else "s")


def _short(members: list[str], shown: int = 8) -> str:
    if len(members) <= shown:
        return "{" + ", ".join(members) + "}"
    return "{" + ", ".join(members[:shown]) + f", ... ({len(members)} databases)" + "}"

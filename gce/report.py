"""The report: the HDP guarantee, how it was found, and the classic answers beside it.

What must never change: ``epsilon`` and ``delta`` form a valid hypothesis-DP
guarantee (001, Def. 3) for the scenario; ``exact`` is true only when no valid
guarantee is tighter at that point; ``to_dict()`` is the JSON the command line
prints (DESIGN.md, "Scenario files and the command line").
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any

from .curves import PrivacyCurve

__all__ = ["Baseline", "Report", "json_number"]


def json_number(x: float | None) -> float | str | None:
    """JSON has no infinity: infinite epsilons are written as the string "inf"."""
    if x is None:
        return None
    return "inf" if math.isinf(x) else float(x)


@dataclass(frozen=True)
class Baseline:
    """A comparison answer: ``classic`` (every invocation composed) or ``parallel``."""

    name: str
    epsilon: float
    delta: float
    theorem: str

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
    differing : tuple of int
        Indices of the invocations on databases where h0 and h1 differ.
    differing_count : int
        How many invocations those are, repeats counted.
    curve : PrivacyCurve
        The whole certified curve delta(epsilon) of the HDP guarantee (None
        for a report reloaded with :meth:`from_dict`).
    baselines : dict of str to Baseline
        ``classic`` and, for pure guarantees, ``parallel``.
    notes : tuple of str
        Plain statements: why epsilon is infinite, the solver's gap, ...
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
    lower_bound_epsilon: float | None = None
    notes: tuple[str, ...] = ()
    title: str = ""
    differing_count: int = 0

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
            "lower_bound_epsilon": json_number(self.lower_bound_epsilon),
            "baselines": {name: b.to_dict() for name, b in self.baselines.items()},
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Report":
        """The report of :meth:`to_dict`'s JSON, without the curve (``curve`` is None).

        ``Report.from_dict(r.to_dict()).to_dict() == r.to_dict()``, so saved
        results can be reloaded, compared and printed.
        """
        witness = data.get("witness")
        return cls(
            epsilon=_from_num(data["epsilon"]), delta=_from_num(data["delta"]), theorem=data["theorem"],
            exact=bool(data["exact"]),
            witness=None if witness is None else (frozenset(witness["h0"]), frozenset(witness["h1"])),
            differing=tuple(data.get("differing_invocations", ())), curve=None,
            baselines={name: Baseline(name, _from_num(b["epsilon"]), _from_num(b["delta"]), b["theorem"])
                       for name, b in data.get("baselines", {}).items()},
            solver=data.get("solver", ""), lower_bound_epsilon=_from_num(data.get("lower_bound_epsilon")),
            notes=tuple(data.get("notes", ())), title=data.get("title", ""),
            differing_count=int(data.get("differing_count", 0)),
        )

    def _rows(self) -> list[tuple[str, str, str, str]]:
        rows = [("", "epsilon", "delta", "theorem")]
        rows.append(("GCE (this scenario)", f"{self.epsilon:.6g}", f"{self.delta:.3g}", self.theorem))
        for name, b in self.baselines.items():
            rows.append((name, f"{b.epsilon:.6g}", f"{b.delta:.3g}", b.theorem))
        return rows

    def _repr_html_(self) -> str:
        """The report as an HTML table (Jupyter)."""
        parts = [f"<strong>{html.escape(self.title)}</strong>"] if self.title else []
        parts.append(f"<table>{_html_rows(self._rows())}</table>")
        facts = [f"exact: {'yes' if self.exact else 'no'}"]
        if self.witness is not None:
            h0, h1 = (sorted(s) for s in self.witness)
            facts.append(f"worst-case pair: h0 = {_short(h0)}, h1 = {_short(h1)} "
                         f"({_count(self.differing_count, 'differing invocation')}; solver {self.solver})")
        facts += [f"note: {n}" for n in self.notes]
        parts.append("<ul>" + "".join(f"<li>{html.escape(f)}</li>" for f in facts) + "</ul>")
        return "".join(parts)

    def __str__(self) -> str:
        rows = self._rows()
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = [self.title] if self.title else []
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        if self.witness is not None:
            h0, h1 = (sorted(s) for s in self.witness)
            lines.append(f"worst-case pair: h0 = {_short(h0)}, h1 = {_short(h1)} "
                         f"({_count(self.differing_count, 'differing invocation')}; solver {self.solver})")
        lines.append(f"exact: {'yes' if self.exact else 'no'}")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def _from_num(x: float | str | None) -> float | None:
    if x is None:
        return None
    return math.inf if x == "inf" else float(x)


def _html_rows(rows: list[tuple[str, ...]]) -> str:
    head, *body = rows
    out = ["<tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in head) + "</tr>"]
    out += ["<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in body]
    return "".join(out)


def _count(k: int, noun: str) -> str:
    return f"{k} {noun}" + ("" if k == 1 else "s")


def _short(members: list[int], shown: int = 8) -> str:
    if len(members) <= shown:
        return "{" + ", ".join(map(str, members)) + "}"
    return "{" + ", ".join(map(str, members[:shown])) + f", ... ({len(members)} databases)" + "}"

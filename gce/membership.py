"""Choosing m for ``at_most m`` from a membership table, and making it hold by truncation (001, Sec. V-A).

An estimated bound is an assumption about people not in the data. Deployed systems cap contributions
instead (PipelineDP's ``max_partitions_contributed``, Tumult's ``MaxGroupsPerID``, OpenDP's
``truncate_num_groups``): :func:`membership_coverage` shows, for candidate m (the 90th, 99th and 99.9th
percentiles of memberships per individual, and the maximum), the share of individuals covered (in at most
m databases), the share of memberships a truncation to m keeps, and the HDP epsilon of a scenario at that m;
:func:`gce.constraints.tables.truncate_membership` then writes the rows to keep, and the scenario's
``from_data`` constraint with ``enforced = true`` reports "at_most m enforced by truncation".

``gce membership TABLE`` is the command line of both.
"""

from __future__ import annotations

import math
import numbers
import os
from dataclasses import dataclass
from typing import Any

from .effort import Deadline
from .constraints.tables import MembershipStatistics, MembershipTable, membership_statistics
from .errors import InvalidParameterError
from .files.scenario import load_scenario_at_most
from .accounting.figures import new_figure, plot_file
from .report import json_number
from .solving import solve
from .solvers import DEFAULT_TIME_LIMIT
from .validation import shown, warn_renamed

__all__ = ["PERCENTILES", "Candidate", "Coverage", "membership_coverage", "plot_coverage"]

#: The percentiles of memberships per individual offered as candidate m, then the maximum.
PERCENTILES = (0.90, 0.99, 0.999)


@dataclass(frozen=True)
class Candidate:
    """One candidate bound m: what it covers and what it costs."""

    label: str
    m: int
    covered: float
    kept: float
    epsilon: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"candidate": self.label, "m": self.m, "individuals_covered": self.covered,
                "memberships_kept": self.kept, "epsilon": json_number(self.epsilon)}


@dataclass(frozen=True)
class Coverage:
    """The distribution of memberships per individual and the candidate bounds."""

    statistics: MembershipStatistics
    candidates: tuple[Candidate, ...]
    title: str = ""
    delta: float | None = None
    #: Whether the time limit stopped a refinement of some candidate's solve (its epsilon is then certified
    #: but coarser than asked; docs/design.md, "Same question, same answer").
    time_limit_reached: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "delta": self.delta, **self.statistics.to_dict(),
                "candidates": [c.to_dict() for c in self.candidates],
                "status": "time limit reached" if self.time_limit_reached else "complete",
                "time_limit_reached": self.time_limit_reached}

    def __str__(self) -> str:
        s = self.statistics
        lines = [self.title] if self.title else []
        if self.time_limit_reached:
            lines.insert(0, "time limit reached: some epsilons are certified but coarser than asked")
        lines.append(f"memberships per individual in {s.source}: {s.individuals:,} individuals, {s.rows:,} rows, "
                     f"{s.memberships:,} distinct (individual, database) pairs")
        lines.append(f"{'databases':>9}  {'individuals':>11}  {'share':>7}")
        for c, k in s.histogram.items():
            lines.append(f"{c:>9}  {k:>11,}  {k / s.individuals:>7.2%}")
        head = f"{'candidate':<9}  {'m':>4}  {'individuals covered':>19}  {'memberships kept':>16}"
        if any(c.epsilon is not None for c in self.candidates):
            head += f"  {'epsilon (HDP)':>13}"
        lines.append(head)
        for c in self.candidates:
            line = f"{c.label:<9}  {c.m:>4}  {c.covered:>19.2%}  {c.kept:>16.2%}"
            if c.epsilon is not None:
                line += f"  {c.epsilon:>13.6g}"
            lines.append(line)
        if self.delta is not None:
            lines.append(f"epsilon at delta = {self.delta:g}, the scenario with at_most m in place of from_data")
        return "\n".join(lines)


def _candidates(statistics: MembershipStatistics) -> list[tuple[str, int]]:
    found = [(f"p{100 * q:g}", statistics.percentile(q)) for q in PERCENTILES]
    found.append(("max", statistics.largest))
    return found


def membership_coverage(table: MembershipTable | MembershipStatistics, databases: Any = None, *,
                        scenario: str | os.PathLike[str] | None = None, time_limit: float | None = None,
                        progress: Any = None) -> Coverage:
    """The distribution of memberships per individual and, for candidate m, what it covers and costs.

    Parameters
    ----------
    table : MembershipTable, path, glob or MembershipStatistics
        A table DuckDB reads (:func:`gce.constraints.tables.membership_statistics`: a file, a glob, a
        list of files or a :class:`MembershipTable`), or statistics computed elsewhere (by Spark:
        :mod:`gce.constraints.spark`); these must count the scenario's databases.
    databases : int, Databases, names or mapping, optional
        How the table's database ids resolve; default the scenario's databases.
    scenario : path, optional
        A scenario file with a ``from_data`` constraint: for each candidate m it is solved with
        ``at_most m`` in its place (its table is not read), at its ``delta``.
    time_limit : float, optional
        A cap on the solves together (default :data:`gce.solvers.DEFAULT_TIME_LIMIT`): each is given what is
        left of it; :attr:`Coverage.time_limit_reached` says whether it stopped a refinement.

    Raises
    ------
    InvalidParameterError
        No way to resolve database ids; the table or the scenario is refused.

    References
    ----------
    001, Sec. V-A, "General case" (the store chain).
    """
    at_m = None
    if scenario is not None:
        at_m = load_scenario_at_most(scenario, 1)
        if databases is None:
            databases = at_m.databases
        if at_m.delta is None:
            raise InvalidParameterError("scenario", "needs delta = ... (epsilon is reported at the file's delta)")
    if isinstance(table, MembershipStatistics):
        statistics = table
        if at_m is not None and statistics.n != at_m.databases.n:
            raise InvalidParameterError("statistics", f"count {statistics.n} databases, the scenario "
                                                      f"{at_m.databases.n}")
    elif databases is None:
        raise InvalidParameterError("databases", "give the databases (a count or names) or a scenario file")
    else:
        statistics = membership_statistics(table, databases, progress=progress)
    candidates, epsilons = [], {}
    deadline = Deadline(DEFAULT_TIME_LIMIT if time_limit is None else time_limit)
    reached = False
    for label, m in _candidates(statistics):
        epsilon = None
        if scenario is not None:
            if m not in epsilons:
                report = solve(load_scenario_at_most(scenario, m), time_limit=max(deadline.left(), _LEAST_SOLVE))
                epsilons[m], reached = float(report.epsilon), reached or report.time_limit_reached
            epsilon = epsilons[m]
        candidates.append(Candidate(label, m, statistics.covered(m), statistics.kept(m), epsilon))
    return Coverage(statistics, tuple(candidates), at_m.title if at_m is not None else "",
                    at_m.delta if at_m is not None else None, reached)


#: Seconds a candidate's solve is given when the others took the time limit (its cheapest certified bound).
_LEAST_SOLVE = 0.05


def plot_coverage(coverage: Coverage, path: str | os.PathLike[str] | None = None, ax: Any = None, *,
                  dpi: int = 150) -> Any:
    """Draw the HDP epsilon against the share of individuals covered, one point per candidate m.

    ``path`` (save there), ``ax`` (draw on it; by default a new figure) and ``dpi`` as in
    :func:`gce.plot.plot_curves`; returns the matplotlib Axes. The third positional argument was ``dpi``
    before ``ax`` took its place: a number there is still read as ``dpi``, with a warning.
    """
    if isinstance(ax, numbers.Real) and not isinstance(ax, bool):  # plot_coverage(coverage, path, 200)
        warn_renamed("plot_coverage(coverage, path, dpi) with dpi third", "plot_coverage(coverage, path, dpi=dpi)")
        ax, dpi = None, int(ax)
    target = None if path is None else plot_file(path)
    points = [c for c in coverage.candidates if c.epsilon is not None and math.isfinite(c.epsilon)]
    if not points:
        raise InvalidParameterError("plot", "needs the epsilons of a scenario (--scenario FILE)")
    if ax is None:
        ax = new_figure().add_subplot()
    figure = ax.figure
    ax.plot([100 * c.covered for c in points], [c.epsilon for c in points], marker="o", color="C0")
    ax.set_xlabel("individuals covered (%)")
    ax.set_ylabel(f"epsilon (HDP) at delta = {coverage.delta:g}")
    ax.set_title(coverage.title or f"memberships in {coverage.statistics.source}")
    ax.grid(True, alpha=0.3)
    _annotate_apart(figure, ax, points)
    if target is not None:
        try:
            figure.savefig(target, dpi=dpi)
        except OSError as error:
            raise InvalidParameterError("path", f"cannot write {shown(str(target), 200)}: "
                                                f"{error.strerror or error}") from None
    return ax


#: Most steps an annotation is moved down to clear the ones already placed.
_ANNOTATION_STEPS = 40


def _annotate_apart(figure: Any, ax: Any, points: list[Candidate]) -> None:
    """One label per distinct point ("p99, p99.9, max: m = 10" where candidates share an m), placed from the
    highest point down, each moved down a line at a time until it overlaps no label placed before it (so
    labels never overprint, however close the points); labels in the right part
    of the plot are written to the left of their point, so they stay inside the axes."""
    by_m: dict[int, list[Candidate]] = {}
    for c in points:
        by_m.setdefault(c.m, []).append(c)
    figure.canvas.draw()  # the layout first: the labels are measured where they will be drawn
    renderer = figure.canvas.get_renderer()
    low, high = ax.get_xlim()
    placed: list[Any] = []
    for m, same in sorted(by_m.items(), key=lambda item: -item[1][0].epsilon):  # top first: labels stack down
        x, y = 100 * same[0].covered, same[0].epsilon
        right = x > low + 0.6 * (high - low)
        dx, dy = (-5, 5) if right else (5, 5)
        note = ax.annotate(f"{', '.join(c.label for c in same)}: m = {m:,}", (x, y), textcoords="offset points",
                           xytext=(dx, dy), fontsize=8, ha="right" if right else "left")
        for _ in range(_ANNOTATION_STEPS):
            box = note.get_window_extent(renderer)
            if not any(box.overlaps(other) for other in placed):
                break
            dy -= box.height * 72.0 / figure.dpi + 1.0
            note.set_position((dx, dy))
        placed.append(note.get_window_extent(renderer))

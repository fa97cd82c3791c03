"""The online accountant: may this query run, against a budget, given the membership constraints?

Queries arrive one at a time, each chosen after the answers to the earlier ones,
from several analysts and processes at once. :class:`Accountant` decides with a
privacy filter (:mod:`gce.ledger.filters`: only rules valid for adaptively
chosen parameters) whose statistic is the maximum over allowed membership sets
of the per-database sums (:mod:`gce.ledger.worst`), and records every request
and its answer in a ledger (:mod:`gce.ledger.store`) in the same transaction
as the check. The optimal offline composition of the recorded workload
(:meth:`Accountant.offline`) is shown beside, labelled: it is valid only for a
workload fixed in advance, never for admission.

Examples
--------
>>> import gce, os, tempfile
>>> scenario = gce.Scenario(4, [gce.Invocation(0, gce.PureDP(0.1))],
...                         gce.ConstraintSet(4, [gce.AtMost(2)]))
>>> path = os.path.join(tempfile.mkdtemp(), "ledger.sqlite")
>>> with gce.Accountant.create(path, scenario, budget_epsilon=1.0, budget_delta=0.0) as ledger:
...     first = ledger.spend("all", gce.PureDP(0.3), analyst="ana")    # sums 0.4, 0.3, 0.3, 0.3: worst 0.7
...     second = ledger.spend([1, 2], gce.PureDP(0.2), analyst="ana")  # 0.4, 0.5, 0.5, 0.3: worst 1.0, fits
...     third = ledger.spend(3, gce.PureDP(0.05), analyst="bo")        # 0.4, 0.5, 0.5, 0.35: still 1.0
>>> first.admitted, round(first.upper[0], 6), second.admitted, round(second.upper[0], 6)
(True, 0.7, True, 1.0)
>>> third.admitted, sorted(third.worst_set)
(True, [1, 2])
>>> with gce.Accountant(path) as ledger:
...     ledger.spend(1, gce.PureDP(0.01)).admitted
False
"""

from __future__ import annotations

import datetime
import functools
import json
import re
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..accounting import kinds
from ..accounting.guarantees import Guarantee
from ..constraints import ConstraintSet
from ..constraints.neighborhood import check_neighborhood
from ..errors import InvalidParameterError
from ..files.constraints import constraint_set_from_dicts, constraint_to_dict
from ..files.scenario import mechanism_from_dict
from ..model import Databases, Invocation, Scenario, _slice
from ..validation import is_integer
from .filters import Filter, check_budget, filter_named
from .store import LedgerError, Store, open_store
from .worst import Bracket, WorstCase, reach

__all__ = ["Accountant", "Decision", "Status", "Entry", "mechanism_to_dict", "DEFAULT_TIME_LIMIT"]

#: Seconds the worst-case solvers may search when a decision falls inside a bracket (then: refused unless
#: certified, a refusal that says so).
DEFAULT_TIME_LIMIT = 2.0
#: Admitted entries between two checkpoints of the per-database sums (opening replays at most this many).
CHECKPOINT_EVERY = 1000
#: Members of the worst-case set kept in each entry's recorded answer (with the set's size).
RECORDED_MEMBERS = 16
#: Gap (upper - lower, as a share of the budget) above which an admitted spend narrows a component's bracket
#: (cheap bounds when the constraints have them, else the solvers): the recorded worst case stays tight
#: while most spends update it in O(group size).
GAP_FRACTION = 0.01
#: The longest analyst label.
MAX_ANALYST = 200


def mechanism_to_dict(guarantee: Guarantee) -> dict[str, object]:
    """The scenario-file table of a guarantee (inverse of :func:`gce.files.scenario.mechanism_from_dict`),
    from its row in the kinds table."""
    row = kinds.kind_of(guarantee)
    table: dict[str, object] = {"kind": row.name}
    for key, attribute, _ in row.keys:
        value = getattr(guarantee, attribute)
        table[key] = mechanism_to_dict(value) if attribute == "mechanism" else float(value)
    return table


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="microseconds")


@dataclass(frozen=True)
class Decision:
    """The answer to "may this invocation run?".

    Attributes
    ----------
    admitted : bool
        Whether it fits the budget under the filter (and, for :meth:`Accountant.spend`, was recorded).
    reason : str
        Why, in one sentence.
    filter, theorem : str
        The filter and the theorem that makes it valid under adaptivity.
    components : tuple of str
        What is summed (``epsilon``, ``delta``; Renyi orders; ``rho``; ``mu^2``).
    lower, upper : tuple of float
        A certified bracket on each component's worst case over allowed membership sets, with the
        invocation added (``lower`` is reached by an allowed pair, ``upper`` is a certified bound).
    budgets, remaining : tuple of float
        Each component's budget, and what is left of it: after the invocation when admitted, before it
        (unchanged) when refused.
    worst_set : frozenset of int
        Where the worst-case pair differs for the binding component (the target's databases).
    sequence : int or None
        The entry's number in the ledger (:meth:`Accountant.spend`), None for :meth:`Accountant.check`.
    """

    admitted: bool
    reason: str
    filter: str
    theorem: str
    components: tuple[str, ...]
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    budgets: tuple[float, ...]
    remaining: tuple[float, ...]
    worst_set: frozenset[int]
    sequence: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"admitted": self.admitted, "reason": self.reason, "filter": self.filter, "theorem": self.theorem,
                "components": list(self.components), "lower": list(self.lower), "upper": list(self.upper),
                "budgets": list(self.budgets), "remaining": list(self.remaining),
                "worst_set": sorted(self.worst_set), "sequence": self.sequence}

    def __str__(self) -> str:
        verdict = "admitted" if self.admitted else "refused"
        where = f" (entry {self.sequence})" if self.sequence is not None else ""
        lines = [f"{verdict}{where}: {self.reason}", f"filter: {self.filter}: {self.theorem}"]
        lines.append(f"{'':12}  {'worst case':>24}  {'budget':>10}  {'remaining':>10}")
        for row in _rows(self.components, self.lower, self.upper, self.budgets, self.remaining):
            lines.append(row)
        lines.append(f"worst-case databases: {_set_text(self.worst_set)}")
        return "\n".join(lines)


def _number(x: float) -> str:
    return f"{x:.6g}"


def _rows(components, lower, upper, budgets, remaining) -> list[str]:
    rows = []
    for name, lo, hi, budget, left in zip(components, lower, upper, budgets, remaining):
        spent = _number(hi) if hi <= lo + 1e-12 * max(1.0, abs(hi)) else f"[{_number(lo)}, {_number(hi)}]"
        rows.append(f"{name:12}  {spent:>24}  {_number(budget):>10}  {_number(left):>10}")
    return rows


def _set_text(members: Iterable[int], total: int | None = None) -> str:
    listed = sorted(members)
    total = len(listed) if total is None else total
    if total == 0:
        return "{} (nothing spent)"
    shown = ", ".join(map(str, listed[:8]))
    more = ", ..." if total > min(len(listed), 8) else ""
    return f"{{{shown}{more}}} ({total} database{'s' if total != 1 else ''})"


@dataclass(frozen=True)
class Entry:
    """One recorded request: when, who, where, which guarantee, and the answer gce gave."""

    sequence: int
    time: str
    analyst: str
    databases: object
    mechanism: dict[str, object]
    repeat: int
    admitted: bool
    answer: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"sequence": self.sequence, "time": self.time, "analyst": self.analyst, "databases": self.databases,
                "mechanism": self.mechanism, "repeat": self.repeat, "admitted": self.admitted, "answer": self.answer}


@dataclass(frozen=True)
class Status:
    """The budget and what the worst-case individual has spent of it, after the latest entry."""

    title: str
    location: str
    databases: int
    filter: str
    theorem: str
    budget_epsilon: float
    budget_delta: float
    components: tuple[str, ...]
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    budgets: tuple[float, ...]
    entries: int
    admitted: int
    worst_set: tuple[int, ...]
    worst_size: int

    @property
    def remaining(self) -> tuple[float, ...]:
        return tuple(b - u for b, u in zip(self.budgets, self.upper))

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "ledger": self.location, "databases": self.databases, "filter": self.filter,
                "theorem": self.theorem, "budget": {"epsilon": self.budget_epsilon, "delta": self.budget_delta},
                "components": list(self.components), "lower": list(self.lower), "upper": list(self.upper),
                "budgets": list(self.budgets), "remaining": list(self.remaining), "entries": self.entries,
                "admitted": self.admitted, "refused": self.entries - self.admitted,
                "worst_set": list(self.worst_set), "worst_set_size": self.worst_size}

    def __str__(self) -> str:
        lines = [self.title] if self.title else []
        lines.append(f"ledger {self.location}: {self.databases:,} databases, budget epsilon {self.budget_epsilon:g}, "
                     f"delta {self.budget_delta:g}")
        lines.append(f"filter: {self.filter}: {self.theorem}")
        lines.append(f"{self.entries:,} requests: {self.admitted:,} admitted, {self.entries - self.admitted:,} refused")
        lines.append(f"{'':12}  {'worst case':>24}  {'budget':>10}  {'remaining':>10}")
        lines += _rows(self.components, self.lower, self.upper, self.budgets, self.remaining)
        lines.append(f"worst-case databases: {_set_text(self.worst_set, self.worst_size)}")
        return "\n".join(lines)


_ASCII_INDEX = re.compile(r"[0-9]+")


def _members(databases: object, names: Sequence[str] | None, n: int) -> tuple[NDArray[np.intp] | None, object]:
    """(sorted distinct indices or None for all, the form recorded) of a reference: "all", an index, a
    name, or a list of them. Errors name ``databases``."""
    def index(ref: object, where: str) -> int:
        if isinstance(ref, str) and names and ref in names:
            return names.index(ref)
        if isinstance(ref, str) and _ASCII_INDEX.fullmatch(ref.strip()):  # str.isdigit takes '²' and '٢'
            ref = int(ref.strip())
        if not is_integer(ref) or not 0 <= int(ref) < n:
            hint = " or their names" if names else ""
            raise InvalidParameterError(where, f"unknown database {ref!r} (databases are 0..{n - 1}{hint})")
        return int(ref)

    if isinstance(databases, str) and databases == "all":
        return None, "all"
    if isinstance(databases, str) or is_integer(databases):
        return np.array([index(databases, "databases")], dtype=np.intp), [index(databases, "databases")]
    if not isinstance(databases, Iterable) or isinstance(databases, bytes):
        raise InvalidParameterError("databases", f'must be "all", a database or a list of them, got {databases!r}')
    indices = [index(ref, f"databases[{i}]") for i, ref in enumerate(databases)]
    listed = sorted(set(indices))
    if len(listed) < len(indices):
        seen: set[int] = set()
        for i, j in enumerate(indices):
            if j in seen:
                raise InvalidParameterError(f"databases[{i}]", f"database {j} is listed twice (one invocation "
                                                               f"per listed database: give repeat for several)")
            seen.add(j)
    if not listed:
        raise InvalidParameterError("databases", "the list is empty")
    if len(listed) == n:
        return None, "all"
    return np.array(listed, dtype=np.intp), listed


def _check_analyst(analyst: object) -> str:
    if not isinstance(analyst, str) or len(analyst) > MAX_ANALYST:
        raise InvalidParameterError("analyst", f"must be a string of at most {MAX_ANALYST} characters, "
                                               f"got {analyst!r}")
    return analyst


def _check_repeat(repeat: object) -> int:
    if not is_integer(repeat) or not 1 <= int(repeat) <= 2**53:
        raise InvalidParameterError("repeat", f"must be an integer in 1..2**53, got {repeat!r}")
    return int(repeat)


def _charges(scenario: Scenario) -> list[tuple[Guarantee, int, list[int]]]:
    """The scenario's invocations as spends that charge every one of them: per guarantee, each database's
    total repeat count over all the invocation tables that run it there (duplicate and overlapping tables
    add up), then one spend per (guarantee, total) with the databases that receive exactly that total.

    A spend charges each listed database once (its list is a set), so grouping by table instead would
    charge a database that two tables list once (an under-count).
    """
    totals: dict[Guarantee, NDArray[np.int64]] = {}
    for group in scenario.invocations.groups:
        counts = totals.setdefault(group.guarantee, np.zeros(scenario.n, dtype=np.int64))
        databases = group.databases
        if isinstance(databases, range):
            counts[_slice(databases)] += group.repeat
        else:
            np.add.at(counts, np.asarray(databases, dtype=np.intp), group.repeat)  # a database listed twice: twice
    charges = []
    for guarantee, counts in totals.items():
        for total in np.unique(counts[counts > 0]).tolist():
            charges.append((guarantee, int(total), np.flatnonzero(counts == total).tolist()))
    return charges


class Accountant:
    """An online privacy accountant over a ledger: :meth:`check`, :meth:`spend`, :meth:`status`,
    :meth:`history`, and :meth:`offline` beside them.

    ``Accountant(location)`` opens an existing ledger (an SQLite file path, or a ``postgresql://`` URL with the
    ``gce[postgres]`` extra: :mod:`gce.ledger.postgres`); :meth:`create` makes one. One object may serve one
    thread at a time (a lock serialises its calls); processes and machines each open their own and share the
    ledger.

    Parameters
    ----------
    location : str or path
        The ledger: an SQLite file, or a PostgreSQL database URL (``postgresql://user@host:port/database``).
    time_limit : float
        Seconds the worst-case solvers may search when a decision is not settled by the cheap bounds.

    Raises
    ------
    LedgerError
        No ledger there, a foreign or damaged file, a newer schema.
    """

    def __init__(self, location: object, *, time_limit: float = DEFAULT_TIME_LIMIT, _store: Store | None = None):
        self.store = _store if _store is not None else open_store(location, create=False)
        self.location = self.store.label
        self.time_limit = time_limit
        self._lock = threading.Lock()
        try:
            meta = self.store.meta()
            self._read_meta(meta)
        except BaseException:
            self.store.close()
            raise
        self._tracker: WorstCase | None = None
        self._seq = 0
        self._admitted_total = 0  # admitted entries up to self._seq (each answer records it)
        self._reach_cache: dict[object, float] = {}
        #: (component, database) -> (weight, lower bound): a request of at least this weight on this database
        #: alone was certainly over budget, so every later one is (the per-database sums only grow).
        self._refused: dict[tuple[int, int], tuple[float, float]] = {}
        #: Brackets narrowed for a one-database request at the current sequence (a check, then its spend).
        self._memo: dict[tuple, Bracket] = {}
        self._memo_seq = -1
        self._checkpoint_seq = 0

    def _read_meta(self, meta: dict[str, str]) -> None:
        try:
            scenario = json.loads(meta["scenario"])
            self.filter: Filter = filter_named(meta["filter"])
            self.budget_epsilon = float(meta["budget_epsilon"])
            self.budget_delta = float(meta["budget_delta"])
            self.budgets = np.array(json.loads(meta["budgets"]), dtype=float)
            n = int(scenario["n"])
            names = scenario.get("names")
            self.databases = Databases(n, tuple(names) if names else None)
            self._constraint_tables = scenario["constraints"]
            if not isinstance(self._constraint_tables, list):
                raise ValueError("constraints")
            self.neighborhood: str = check_neighborhood(scenario["neighborhood"]) or scenario["neighborhood"]
            self.title: str = scenario.get("title", "")
            self.notes: tuple[str, ...] = tuple(scenario.get("notes", ()))
        except (KeyError, ValueError, TypeError, InvalidParameterError) as error:
            raise LedgerError(f"{self.location}: damaged meta data ({error})") from None
        if self.budgets.shape != (len(self.filter.components),):
            raise LedgerError(f"{self.location}: damaged meta data (budgets)")

    @functools.cached_property
    def constraints(self) -> ConstraintSet:
        """The membership constraints (read when first needed: ``status`` and ``history`` never need them)."""
        try:
            return constraint_set_from_dicts(self.databases.n, self._constraint_tables)
        except InvalidParameterError as error:
            raise LedgerError(f"{self.location}: damaged meta data ({error})") from None

    # -- creation ---------------------------------------------------------

    @classmethod
    def create(cls, location: object, scenario: Scenario, *, budget_epsilon: float, budget_delta: float,
               filter: str = "basic", analyst: str = "scenario", time_limit: float = DEFAULT_TIME_LIMIT
               ) -> "Accountant":
        """Create a ledger for ``scenario``'s databases, constraints and neighbourhood, with a budget.

        The scenario's invocations are the ledger's first spends (``analyst``); they must fit.

        Raises
        ------
        InvalidParameterError
            A budget or the filter is invalid (naming ``budget_epsilon``, ``budget_delta`` or ``filter``).
        UnsupportedCombinationError
            A scenario invocation has no statistic for the filter, or the scenario has priors.
        LedgerError
            Something is already there, or the scenario's invocations exceed the budget.
        """
        if not isinstance(scenario, Scenario):
            raise InvalidParameterError("scenario", f"must be a Scenario, got {scenario!r}")
        if scenario.hypotheses is not None:
            raise InvalidParameterError("hypotheses", "the ledger protects against every allowed pair of "
                                                      "membership sets (preset neighbourhoods only)")
        eps, delta = check_budget(budget_epsilon, budget_delta)
        chosen = filter_named(filter)
        budgets = chosen.budgets(eps, delta)
        for i, inv in enumerate(scenario.invocations):
            chosen.weights(inv.guarantee, f"invocations[{i}].mechanism")
        store = open_store(location, create=True)
        description = {"title": scenario.title, "n": scenario.n, "names": scenario.databases.names,
                       "neighborhood": scenario.neighborhood, "notes": list(scenario.notes),
                       "constraints": [constraint_to_dict(c) for c in scenario.constraints.constraints]}
        try:
            store.create({"scenario": json.dumps(description), "filter": chosen.name,
                          "budget_epsilon": repr(eps), "budget_delta": repr(delta),
                          "budgets": json.dumps(budgets.tolist()), "created": _now()})
            ledger = cls(location, time_limit=time_limit, _store=store)
        except BaseException:
            store.close()
            raise
        for guarantee, repeat, members in _charges(scenario):
            decision = ledger.spend(members, guarantee, analyst=analyst, repeat=repeat)
            if not decision.admitted:
                ledger.close()
                raise LedgerError(f"{ledger.location}: the scenario's invocations exceed the budget "
                                  f"({decision.reason}); the ledger holds those that fit")
        return ledger

    # -- the context manager ------------------------------------------------

    def __enter__(self) -> "Accountant":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.store.close()

    # -- state ------------------------------------------------------------

    @property
    def solves(self) -> int:
        """How many times a bracket was narrowed by a search (the rest were incremental updates)."""
        return 0 if self._tracker is None else self._tracker.solves

    def _load(self) -> WorstCase:
        """(Inside a transaction.) The per-database sums (latest checkpoint plus the admitted entries after it) and their brackets."""
        tracker = WorstCase(self.constraints, self.neighborhood, len(self.filter.components), self.time_limit)
        components, n = len(self.filter.components), self.databases.n
        last = self.store.rows("SELECT MAX(seq) FROM gce_entries")[0][0] or 0
        checkpoint = self.store.rows("SELECT seq, sums FROM gce_checkpoints WHERE seq <= ? ORDER BY seq DESC "
                                     "LIMIT 1", (last,))
        sums = np.zeros((components, n))
        start = 0
        if checkpoint:
            start, blob = checkpoint[0]
            sums = np.frombuffer(bytes(blob), dtype="<f8").reshape(components, n).copy()
        rows = self.store.rows("SELECT databases, weights FROM gce_entries WHERE seq > ? AND seq <= ? "
                               "AND admitted = 1 ORDER BY seq", (start, last))
        for databases, weights in rows:
            members = self._stored_members(databases)
            sums[:, slice(None) if members is None else members] += np.array(json.loads(weights))[:, None]
        tracker.load(sums)
        self._seq, self._checkpoint_seq = int(last), int(start)
        latest = self.store.rows("SELECT answer FROM gce_entries WHERE seq = ?", (last,)) if last else []
        self._admitted_total = int(json.loads(latest[0][0])["admitted_total"]) if latest else 0
        return tracker

    def _stored_members(self, databases: str) -> NDArray[np.intp] | None:
        value = json.loads(databases)
        return None if value == "all" else np.array(value, dtype=np.intp)

    def _catch_up(self) -> WorstCase:
        """Apply the entries other processes recorded since this one last looked (inside a transaction)."""
        if self._tracker is None:
            self._tracker = self._load()
            return self._tracker
        rows = self.store.rows("SELECT seq, databases, weights, reach, admitted, answer FROM gce_entries "
                               "WHERE seq > ? ORDER BY seq", (self._seq,))
        for seq, databases, weights, reach_bound, admitted, answer in rows:
            if admitted:
                recorded = json.loads(answer)
                self._tracker.apply(self._stored_members(databases), np.array(json.loads(weights)),
                                    float(reach_bound), upper_hint=recorded.get("state_upper"))
                self._admitted_total = int(recorded["admitted_total"])
            self._seq = int(seq)
        return self._tracker

    def _reach(self, members: NDArray[np.intp] | None, key: object) -> float:
        cache_key = json.dumps(key)
        if cache_key not in self._reach_cache:
            if len(self._reach_cache) > 4096:
                self._reach_cache.clear()
            self._reach_cache[cache_key] = reach(self.constraints, self.neighborhood, members, self.time_limit)
        return self._reach_cache[cache_key]

    # -- deciding ----------------------------------------------------------

    def _request(self, databases: object, guarantee: Guarantee, repeat: object):
        repeat = _check_repeat(repeat)
        if not kinds.is_guarantee(guarantee):
            raise InvalidParameterError("mechanism", f"must be a guarantee, got {guarantee!r}")
        members, recorded = _members(databases, self.databases.names, self.databases.n)
        weights = self.filter.weights(guarantee) * repeat
        return members, recorded, weights, repeat

    def _decide(self, tracker: WorstCase, members, weights, reach_bound
                ) -> tuple[bool, str, NDArray, NDArray, NDArray, list[tuple[int, Bracket]], int]:
        """Admission by the filter on certified bounds: the incremental bracket first, narrowed only for the
        components where it straddles the budget (cheap bounds, then the solvers)."""
        lower, upper = tracker.tentative(members, weights, reach_bound)
        budgets, rule = self.budgets, self.filter
        narrowed: dict[int, Bracket] = {}
        single = int(members[0]) if members is not None and members.size == 1 else None
        if single is not None:  # an earlier certain refusal on this database bounds this one from below
            for k in range(budgets.size):
                floor = self._refused.get((k, single))
                if floor is not None and weights[k] >= floor[0]:
                    lower[k] = max(lower[k], floor[1])
        memo_key = (self._seq, single if single is not None else id(members), weights.tobytes())
        if self._memo_seq != self._seq:
            self._memo.clear()
            self._memo_seq = self._seq
        for full in (False, True):
            if rule.admits(upper, budgets) or not rule.admits(lower, budgets):
                break
            straddling = [k for k in range(budgets.size) if lower[k] <= budgets[k] < upper[k]]
            straddling.sort(key=lambda k: (upper[k] - budgets[k]) / max(abs(budgets[k]), 1e-300))
            for k in straddling:
                if full and k in narrowed and narrowed[k].exact:
                    continue
                bracket = self._memo.get((memo_key, k, full)) if single is not None else None
                if bracket is None:
                    bracket = tracker.narrow(tracker.with_added(k, members, weights[k]), k, full)
                    if single is not None:
                        self._memo[(memo_key, k, full)] = bracket
                narrowed[k] = bracket
                lower[k], upper[k] = max(lower[k], bracket.lower), min(upper[k], bracket.upper)
                if single is not None and bracket.lower > budgets[k]:
                    # certain for every later request of at least this weight here: the sums only grow
                    old = self._refused.get((k, single))
                    if old is None or weights[k] < old[0]:
                        self._refused[(k, single)] = (float(weights[k]), float(bracket.lower))
                if rule.admits(upper, budgets) or not rule.admits(lower, budgets):
                    break
        admitted = rule.admits(upper, budgets)
        if admitted:  # keep the recorded bracket tight: narrow (cheaply) a component whose gap grew too wide
            for k in range(budgets.size):
                if budgets[k] > 0 and upper[k] - lower[k] > GAP_FRACTION * budgets[k] and k not in narrowed:
                    bracket = tracker.narrow(tracker.with_added(k, members, weights[k]), k, False)
                    narrowed[k] = bracket
                    lower[k], upper[k] = max(lower[k], bracket.lower), min(upper[k], bracket.upper)
        ratios = upper / np.where(budgets > 0, budgets, np.inf)
        binding = int(np.argmin(ratios) if rule.any_component else np.argmax(ratios))
        if admitted:
            reason = "fits the budget for every allowed membership set"
        elif not rule.admits(lower, budgets):
            reason = "the worst-case individual's budget would be exceeded"
        else:
            reason = (f"not certified within the budget in {self.time_limit:g} s of search (refused to be safe; "
                      f"a longer time limit may admit it)")
        return admitted, reason, lower, upper, budgets, list(narrowed.items()), binding

    def _decision(self, tracker: WorstCase, members, weights, reach_bound, sequence: int | None
                  ) -> tuple[Decision, list[tuple[int, Bracket]], NDArray, NDArray]:
        admitted, reason, lower, upper, budgets, narrowed, binding = self._decide(tracker, members, weights,
                                                                                 reach_bound)
        state_upper = upper if admitted else tracker.upper.copy()
        state_lower = lower if admitted else tracker.lower.copy()
        narrowed_binding = dict(narrowed).get(binding)
        mask = tracker.witness[binding] if narrowed_binding is None else narrowed_binding.witness
        decision = Decision(admitted, reason, self.filter.name, self.filter.theorem, self.filter.components,
                            tuple(map(float, lower)), tuple(map(float, upper)), tuple(map(float, budgets)),
                            tuple(float(b - u) for b, u in zip(budgets, state_upper)),
                            frozenset(np.flatnonzero(mask).tolist()), sequence)
        return decision, narrowed, state_lower, state_upper

    def check(self, databases: object, guarantee: Guarantee, *, repeat: int = 1) -> Decision:
        """Whether ``repeat`` invocations of ``guarantee`` on each of ``databases`` would be admitted now;
        nothing is recorded.

        Parameters
        ----------
        databases : "all", int, str or list
            The databases (indices or names) the mechanism runs on, one invocation each.
        guarantee : Guarantee
        repeat : int
        """
        members, key, weights, repeat = self._request(databases, guarantee, repeat)
        reach_bound = self._reach(members, key)
        with self._lock:
            if self._tracker is None:
                with self.store.transaction(write=False):
                    tracker = self._catch_up()
            else:  # one statement (the entries recorded since): its own snapshot, no transaction to open
                tracker = self._catch_up()
            decision, narrowed, _, _ = self._decision(tracker, members, weights, reach_bound, None)
            for k, bracket in narrowed:
                tracker.offer(k, bracket)
        return decision

    def spend(self, databases: object, guarantee: Guarantee, *, analyst: str = "", repeat: int = 1) -> Decision:
        """Check and record in one transaction: the invocation is admitted (and counts from now on) only if
        it still fits when the write lock is held. Refusals are recorded too, with their answer.

        Parameters
        ----------
        databases, guarantee, repeat
            As :meth:`check`.
        analyst : str
            Who asks (recorded).
        """
        analyst = _check_analyst(analyst)
        members, key, weights, repeat = self._request(databases, guarantee, repeat)
        mechanism = json.dumps(mechanism_to_dict(guarantee))
        reach_bound = self._reach(members, key)
        with self._lock:
            with self.store.transaction(write=True):
                tracker = self._catch_up()
                sequence = self._seq + 1
                decision, narrowed, state_lower, state_upper = self._decision(tracker, members, weights,
                                                                              reach_bound, sequence)
                admitted_total = self._admitted_total + decision.admitted
                answer = {"admitted": decision.admitted, "reason": decision.reason, "admitted_total": admitted_total,
                          "lower": list(decision.lower), "upper": list(decision.upper),
                          "remaining": list(decision.remaining), "state_lower": state_lower.tolist(),
                          "state_upper": state_upper.tolist(),
                          "worst_set": sorted(decision.worst_set)[:RECORDED_MEMBERS],
                          "worst_set_size": len(decision.worst_set)}
                self.store.run("INSERT INTO gce_entries (seq, at, analyst, databases, mechanism, repeat, admitted, "
                               "weights, reach, answer) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                               (sequence, _now(), analyst, json.dumps(key), mechanism, repeat,
                                int(decision.admitted), json.dumps(weights.tolist()), float(reach_bound),
                                json.dumps(answer)))
                checkpoint = decision.admitted and sequence - self._checkpoint_seq >= CHECKPOINT_EVERY
                if checkpoint:
                    sums = tracker.sums.copy()
                    sums[:, slice(None) if members is None else members] += weights[:, None]
                    self.store.run("INSERT INTO gce_checkpoints (seq, sums) VALUES (?, ?)",
                                   (sequence, sums.astype("<f8").tobytes()))
                    self.store.run("DELETE FROM gce_checkpoints WHERE seq < ?", (self._checkpoint_seq,))
            # committed: only now does this process's state move
            self._seq = sequence
            self._admitted_total = admitted_total
            if checkpoint:
                self._checkpoint_seq = sequence
            if decision.admitted:
                tracker.apply(members, weights, reach_bound, narrowed)
            else:
                for k, bracket in narrowed:
                    tracker.offer(k, bracket)
        return decision

    # -- reading -----------------------------------------------------------

    def status(self) -> Status:
        """The budget, what the worst-case individual has spent (the bracket recorded with the latest
        entry), and the counts (entries are numbered 1, 2, ...; each answer carries the admitted total):
        reads one or two rows, never solves."""
        with self.store.transaction(write=False):
            last = self.store.rows("SELECT seq, answer FROM gce_entries ORDER BY seq DESC LIMIT 1")
        components = len(self.filter.components)
        lower = upper = (0.0,) * components
        worst: tuple[int, ...] = ()
        size, entries, admitted = 0, 0, 0
        if last:
            answer = json.loads(last[0][1])
            entries, admitted = int(last[0][0]), int(answer["admitted_total"])
            lower, upper = tuple(answer["state_lower"]), tuple(answer["state_upper"])
            if answer["admitted"]:
                worst, size = tuple(answer["worst_set"]), int(answer["worst_set_size"])
            else:
                last_admitted = self.store.rows("SELECT answer FROM gce_entries WHERE admitted = 1 "
                                                "ORDER BY seq DESC LIMIT 1")
                if last_admitted:
                    kept = json.loads(last_admitted[0][0])
                    worst, size = tuple(kept["worst_set"]), int(kept["worst_set_size"])
        return Status(self.title, self.location, self.databases.n, self.filter.name, self.filter.theorem,
                      self.budget_epsilon, self.budget_delta, self.filter.components, lower, upper,
                      tuple(map(float, self.budgets)), entries, admitted, worst, size)

    def history(self, *, limit: int | None = None, analyst: str | None = None) -> list[Entry]:
        """The recorded requests, oldest first (the last ``limit`` of them; one analyst's only if given)."""
        if limit is not None and (not is_integer(limit) or limit < 1):
            raise InvalidParameterError("limit", f"must be an integer >= 1, got {limit!r}")
        where, params = ("WHERE analyst = ?", [analyst]) if analyst is not None else ("", [])
        tail = f" LIMIT {int(limit)}" if limit is not None else ""
        rows = self.store.rows(f"SELECT seq, at, analyst, databases, mechanism, repeat, admitted, answer FROM "
                               f"gce_entries {where} ORDER BY seq DESC{tail}", params)
        return [Entry(int(seq), at, who, json.loads(databases), json.loads(mechanism), int(repeat), bool(admitted),
                      json.loads(answer)) for seq, at, who, databases, mechanism, repeat, admitted, answer
                in reversed(rows)]

    def offline(self, *, delta: float | None = None, time_limit: float = 5.0):
        """The optimal composition of the admitted workload as if it had been fixed in advance
        (:func:`gce.solve`): shown beside the filter, never used for admission (a stopping rule on it is
        not valid under adaptivity, arXiv 2602.06756). ``delta`` defaults to the budget's delta."""
        from ..solving import solve

        rows = self.store.rows("SELECT databases, mechanism, repeat FROM gce_entries WHERE admitted = 1")
        counts: Counter[tuple[int, str]] = Counter()
        for databases, mechanism, repeat in rows:
            members = self._stored_members(databases)
            for i in (range(self.databases.n) if members is None else members.tolist()):
                counts[(i, mechanism)] += int(repeat)
        if not counts:
            raise LedgerError(f"{self.location}: nothing admitted yet, no workload to compose")
        guarantees = {m: mechanism_from_dict(json.loads(m), "mechanism") for _, m in counts}
        invocations = [Invocation(i, guarantees[m], c) for (i, m), c in sorted(counts.items())]
        scenario = Scenario(self.databases, invocations, self.constraints, self.neighborhood,
                            title=self.title)
        target = self.budget_delta if delta is None else delta
        return solve(scenario, delta=target if target > 0 else 0.0, time_limit=time_limit)

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
from ..bridges.dp_events import as_guarantee
from ..constraints import ConstraintSet
from ..constraints.neighborhood import check_neighborhood
from ..errors import GCEError, InvalidParameterError
from ..files.constraints import constraint_set_from_dicts, constraint_to_dict
from ..files.scenario import mechanism_from_dict
from ..model import Databases, Invocation, Scenario, _slice
from ..validation import is_integer, shown
from .filters import Filter, check_budget, filter_named
from .chain import (ENTRY_COLUMNS, RECOMPUTE_TOLERANCE, DamagedLedgerError, Record, checkpoint_hash,
                    encode_floats, entry_hash, meta_hash, parse_entry, parse_sums)
from .store import FORMAT, SCHEMA_VERSION, LedgerError, Store, open_store
from .worst import Bracket, WorstCase, reach

__all__ = ["Accountant", "Decision", "Status", "Entry", "Verification", "DamagedLedgerError", "mechanism_to_dict",
           "DEFAULT_TIME_LIMIT"]

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
                "components": list(self.components), "lower": encode_floats(self.lower),
                "upper": encode_floats(self.upper), "budgets": encode_floats(self.budgets),
                "remaining": encode_floats(self.remaining), "worst_set": sorted(self.worst_set),
                "sequence": self.sequence}

    def __str__(self) -> str:
        verdict = "admitted" if self.admitted else "refused"
        where = f" (entry {self.sequence})" if self.sequence is not None else ""
        after = "with it" if self.admitted else "(unchanged)"
        lines = [f"{verdict}{where}: {self.reason}", f"filter: {self.filter}: {self.theorem}"]
        lines += _table(self.filter, self.components, self.lower, self.upper, self.budgets, self.remaining,
                        "spent with it (worst case)", f"remaining {after}")
        lines.append(f"worst-case databases: {_set_text(self.worst_set, spent=max(self.upper, default=0.0) > 0)}")
        return "\n".join(lines)


def _number(x: float) -> str:
    return f"{x:.6g}"


def _table(filter_name: str, components, lower, upper, budgets, remaining, spent_label: str,
           remaining_label: str) -> list[str]:
    """The per-component table, every column named, each row with its state in words, and a legend saying
    what the numbers are and what a negative one means."""
    any_component = filter_named(filter_name).any_component
    kind = "order" if filter_name == "renyi" else "component"
    rows = [(kind, spent_label, "budget", remaining_label, "state")]
    never = []
    for name, lo, hi, budget, left in zip(components, lower, upper, budgets, remaining):
        spent = _number(hi) if hi <= lo + 1e-12 * max(1.0, abs(hi)) else f"[{_number(lo)}, {_number(hi)}]"
        if budget < 0:
            state = "never admits (budget < 0)"
            never.append(name)
        elif hi <= budget:
            state = "within budget"
        elif lo > budget:
            state = "beyond its budget"
        else:
            state = "not certified within its budget"
        rows.append((name, spent, _number(budget), _number(left), state))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = ["  ".join((cell.ljust(w) if i in (0, 4) else cell.rjust(w)) for i, (cell, w) in
                       enumerate(zip(row, widths))).rstrip() for row in rows]
    lines.append("spent: the worst-case individual's sum (the largest over the allowed membership pairs); "
                 "[lower, upper]: certified bounds on it; remaining: budget - upper")
    rule = "some" if any_component else "every"
    lines.append(f"the {filter_name} filter admits a request while {rule} {kind} stays within its budget with it")
    if never:
        shown = ", ".join(never)
        if filter_name == "renyi":
            lines.append(f"negative budgets: B(a) = epsilon - log(k / delta) / (a - 1) (k = {len(components)} "
                         f"orders) is below 0 at {shown}: those orders can never admit anything; only the "
                         f"others decide")
        else:
            lines.append(f"negative budgets at {shown}: those components can never admit anything")
    return lines


def _set_text(members: Iterable[int], total: int | None = None, *, spent: bool = False) -> str:
    listed = sorted(members)
    total = len(listed) if total is None else total
    if total == 0:
        return "{} (no database recorded)" if spent else "{} (nothing spent)"
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
                "components": list(self.components), "lower": encode_floats(self.lower),
                "upper": encode_floats(self.upper), "budgets": encode_floats(self.budgets),
                "remaining": encode_floats(self.remaining), "entries": self.entries,
                "admitted": self.admitted, "refused": self.entries - self.admitted,
                "worst_set": list(self.worst_set), "worst_set_size": self.worst_size}

    def __str__(self) -> str:
        lines = [self.title] if self.title else []
        lines.append(f"ledger {self.location}: {self.databases:,} databases, budget epsilon {self.budget_epsilon:g}, "
                     f"delta {self.budget_delta:g}")
        lines.append(f"filter: {self.filter}: {self.theorem}")
        plural = "s" if self.entries != 1 else ""
        lines.append(f"{self.entries:,} request{plural}: {self.admitted:,} admitted, "
                     f"{self.entries - self.admitted:,} refused")
        lines += _table(self.filter, self.components, self.lower, self.upper, self.budgets, self.remaining,
                        "spent (worst case)", "remaining")
        lines.append(f"worst-case databases: "
                     f"{_set_text(self.worst_set, self.worst_size, spent=max(self.upper, default=0.0) > 0)}")
        return "\n".join(lines)


_ASCII_INDEX = re.compile(r"[0-9]+")
#: The ``head`` meta row: the last entry's number and hash.
_HEAD = re.compile(r"[0-9]+ [0-9a-f]{64}")
#: The columns of an entry as read back and hashed (then the stored hash).
_COLUMNS = ", ".join((*ENTRY_COLUMNS, "hash"))
#: Entries read per query when the whole chain is walked.
_PAGE = 5000


def _times(statistic: NDArray[np.float64], repeat: int) -> NDArray[np.float64]:
    """``repeat`` invocations' statistic; beyond the largest float it is infinite (and then refused)."""
    with np.errstate(over="ignore"):  # inf is the intended value: such a request fits no budget
        return statistic * float(repeat)


def _add(sums: NDArray[np.float64], members: NDArray[np.intp] | None, weights: NDArray[np.float64]) -> None:
    """Add an admitted entry's weights to its databases' sums (distinct members: fancy-index ``+=`` is right)."""
    with np.errstate(over="ignore"):  # beyond the largest float a sum is +inf, as it should be (worst.py reads it)
        sums[:, slice(None) if members is None else members] += weights[:, None]


@dataclass(frozen=True)
class _Walk:
    """What walking the chain found: the sums after the last entry, and where the chain ends."""

    sums: NDArray[np.float64]
    last_seq: int
    head: str
    admitted: int
    checkpoint: int  # the latest checkpoint's entry (0: none)
    last: tuple[tuple, int] | None  # the last entry's row, and the admitted entries before it
    last_admitted: tuple[tuple, int] | None


@dataclass(frozen=True)
class Verification:
    """A ledger whose whole hash chain checks: its counts and the hashes at both ends of the chain."""

    location: str
    entries: int
    admitted: int
    checkpoints: int
    genesis: str
    head: str

    def to_dict(self) -> dict[str, Any]:
        return {"ledger": self.location, "intact": True, "entries": self.entries, "admitted": self.admitted,
                "refused": self.entries - self.admitted, "checkpoints": self.checkpoints, "genesis": self.genesis,
                "head": self.head}

    def __str__(self) -> str:
        return (f"ledger {self.location}: intact: {self.entries:,} entries ({self.admitted:,} admitted, "
                f"{self.entries - self.admitted:,} refused), {self.checkpoints} checkpoint"
                f"{'s' if self.checkpoints != 1 else ''}, every hash and value checks\n"
                f"head: entry {self.entries} {self.head}")


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
            raise InvalidParameterError(where, f"unknown database {shown(ref)} (databases are 0..{n - 1}{hint})")
        return int(ref)

    if isinstance(databases, str) and databases == "all":
        return None, "all"
    if isinstance(databases, str) or is_integer(databases):
        return np.array([index(databases, "databases")], dtype=np.intp), [index(databases, "databases")]
    if not isinstance(databases, Iterable) or isinstance(databases, bytes):
        raise InvalidParameterError("databases", f'must be "all", a database or a list of them, got {shown(databases)}')
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
                                               f"got {shown(analyst)}")
    return analyst


def _check_repeat(repeat: object) -> int:
    if not is_integer(repeat) or not 1 <= int(repeat) <= 2**53:
        raise InvalidParameterError("repeat", f"must be an integer in 1..2**53, got {shown(repeat)}")
    return int(repeat)


def _charges(scenario: Scenario) -> list[tuple[Guarantee, int, list[int] | str]]:
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
            members = np.flatnonzero(counts == total)
            charges.append((guarantee, int(total), "all" if members.size == scenario.n else members.tolist()))
    return charges


#: The largest integer SQLite and PostgreSQL store (a signed 64-bit one): a larger ``limit`` or ``after`` means
#: every entry, and is read as this.
_SQL_INTEGER_MAX = 2**63 - 1


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
        self._hash = self._genesis  # the hash of entry self._seq (the genesis hash before the first)
        self._admitted_total = 0  # admitted entries up to self._seq (each answer records it)
        self._reach_cache: dict[object, float] = {}
        #: (component, database) -> (weight, lower bound): a request of at least this weight on this database
        #: alone was certainly over budget, so every later one is (the per-database sums only grow).
        self._refused: dict[tuple[int, int], tuple[float, float]] = {}
        #: Brackets narrowed for a one-database request at the current sequence (a check, then its spend).
        self._memo: dict[tuple, Bracket] = {}
        self._memo_seq = -1
        self._checkpoint_seq = 0
        self._statistics: dict[tuple[str, int], tuple[float, ...]] = {}  # (mechanism, repeat) -> its weights

    def _read_meta(self, meta: dict[str, str]) -> None:
        self._genesis = meta.get("genesis", "")
        if meta_hash(meta) != self._genesis or not _HEAD.fullmatch(meta.get("head", "")):
            raise DamagedLedgerError(self.location, "its meta data (scenario, constraints, filter, budget) does not "
                                                    "match the hash that starts the chain", entry=None, last_good=0)
        try:
            scenario = json.loads(meta["scenario"])
            self.filter: Filter = filter_named(meta["filter"])
            self.budget_epsilon, self.budget_delta = check_budget(float(meta["budget_epsilon"]),
                                                                  float(meta["budget_delta"]))
            self.budgets = np.array(json.loads(meta["budgets"]), dtype=float)
            n = scenario["n"]
            if type(n) is not int or n < 1:
                raise ValueError(f"n = {shown(n)}")
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
        except RecursionError:  # (JSON nested beyond what its parser reads)
            raise LedgerError(f"{self.location}: damaged meta data (JSON nested too deeply to read)") from None
        if self.budgets.shape != (len(self.filter.components),) or np.isnan(self.budgets).any() or (
                self.budgets == np.inf).any():
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
    def create(cls, location: object, scenario: Scenario, *, budget_epsilon: float, budget_delta: float = 0.0,
               filter: str = "basic", analyst: str = "scenario", time_limit: float = DEFAULT_TIME_LIMIT
               ) -> "Accountant":
        """Create a ledger for ``scenario``'s databases, constraints and neighbourhood, with a budget.

        The scenario's invocations are the ledger's first spends (``analyst``); they must fit.
        ``budget_delta`` defaults to 0, a pure budget (the ``basic`` filter with pure guarantees); the
        ``renyi``, ``zcdp`` and ``gdp`` filters need a delta > 0 (at 0 their budgets admit nothing).

        Raises
        ------
        InvalidParameterError
            A budget or the filter is invalid (naming ``budget_epsilon``, ``budget_delta`` or ``filter``).
        UnsupportedCombinationError
            A scenario invocation has no statistic for the filter, or the scenario has priors.
        LedgerError
            Something is already there, or the scenario's invocations exceed the budget.

        Notes
        -----
        An SQLite ledger appears at ``location`` complete (its tables, meta data and the scenario's
        invocations, up to a refused one: a recorded answer) or not at all: it is written beside it under a
        hidden name and linked into place at the end, and an error or a ``KeyboardInterrupt`` before then
        removes it (:mod:`gce.ledger.store`). On PostgreSQL the tables and meta data are one transaction and
        the invocations are spent after it.
        """
        if not isinstance(scenario, Scenario):
            raise InvalidParameterError("scenario", f"must be a Scenario, got {shown(scenario)}")
        if scenario.hypotheses is not None:
            raise InvalidParameterError("hypotheses", "the ledger protects against every allowed pair of "
                                                      "membership sets (preset neighbourhoods only)")
        eps, delta = check_budget(budget_epsilon, budget_delta)
        chosen = filter_named(filter)
        budgets = chosen.budgets(eps, delta)
        position, checked = 0, set()
        for group in scenario.invocations.groups:  # each distinct guarantee once, named by its first record
            if group.guarantee not in checked:
                chosen.weights(group.guarantee, f"invocations[{position}].mechanism")
                checked.add(group.guarantee)
            position += len(group)
        store = open_store(location, create=True)
        description = {"title": scenario.title, "n": scenario.n, "names": scenario.databases.names,
                       "neighborhood": scenario.neighborhood, "notes": list(scenario.notes),
                       "constraints": [constraint_to_dict(c) for c in scenario.constraints.constraints]}
        meta = {"scenario": json.dumps(description), "filter": chosen.name, "budget_epsilon": repr(eps),
                "budget_delta": repr(delta), "budgets": json.dumps(budgets.tolist()), "created": _now()}
        genesis = meta_hash({"format": FORMAT, "schema_version": str(SCHEMA_VERSION), **meta})
        try:  # an SQLite file is made aside and appears whole, or not at all (gce.ledger.store)
            store.create({**meta, "genesis": genesis, "head": f"0 {genesis}"})
            ledger = cls(location, time_limit=time_limit, _store=store)
            refused = None
            for guarantee, repeat, members in _charges(scenario):
                decision = ledger.spend(members, guarantee, analyst=analyst, repeat=repeat)
                if not decision.admitted:  # an answer, recorded: the ledger is whole, with the refusal
                    refused = decision
                    break
            store.publish()
        except BaseException:
            store.discard()
            raise
        if refused is not None:
            ledger.close()
            raise LedgerError(f"{ledger.location}: the scenario's invocations exceed the budget "
                              f"({refused.reason}); the ledger holds those that fit")
        return ledger

    def __repr__(self) -> str:
        """One line: where the ledger is, its databases, filter and budget (read from memory, no query)."""
        named = " named" if self.databases.names else ""
        return (f"Accountant({self.location!r}, {self.databases.n:,}{named} databases, filter={self.filter.name!r}, "
                f"budget epsilon {self.budget_epsilon:g} delta {self.budget_delta:g})")

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

    def _expected_weights(self, mechanism: str, repeat: int) -> tuple[float, ...] | None:
        """The weights a recorded mechanism and repeat count must have (None: not a guarantee this filter takes)."""
        key = (mechanism, repeat)
        expected = self._statistics.get(key)
        if expected is None:
            try:
                statistic = self.filter.weights(mechanism_from_dict(json.loads(mechanism), "mechanism"))
            except (ValueError, TypeError, RecursionError, GCEError):
                return None
            if len(self._statistics) > 4096:
                self._statistics.clear()
            expected = self._statistics[key] = tuple(_times(statistic, repeat).tolist())
        return expected

    def _damaged(self, entry: int | None, what: str, last_good: int) -> DamagedLedgerError:
        return DamagedLedgerError(self.location, what, entry=entry, last_good=last_good)

    def _parse(self, row: tuple, admitted_before: int) -> Record:
        try:
            return parse_entry(row, n=self.databases.n, components=len(self.filter.components),
                               admitted_before=admitted_before, expected_weights=self._expected_weights)
        except RecursionError:  # (JSON nested beyond what its parser reads)
            raise self._damaged(row[0], "a field nests JSON too deeply to read", row[0] - 1) from None
        except ValueError as error:
            raise self._damaged(row[0], str(error), row[0] - 1) from None

    def _chained(self, row: tuple, previous: str, expected_seq: int) -> str:
        """The entry's hash, checked against the one stored and the entry before it."""
        seq = row[0]
        if seq != expected_seq:
            what = (f"entry {expected_seq} is missing (the next one is {seq})" if seq > expected_seq
                    else f"entry {seq} appears out of order")
            raise self._damaged(expected_seq, what, expected_seq - 1)
        try:
            recomputed = entry_hash(previous, row[:len(ENTRY_COLUMNS)])
        except (TypeError, ValueError):
            recomputed = None
        if recomputed is None or row[-1] != recomputed:
            raise self._damaged(seq, "its hash does not match its content and the entry before it (an entry edited, "
                                     "deleted, duplicated or reordered)", seq - 1)
        return recomputed

    def _walk(self, *, full: bool = False) -> _Walk:
        """(Inside a transaction.) The whole chain, from the genesis hash to the head: every entry's hash; the
        entries after the latest checkpoint (all of them if ``full``) validated and their admitted weights
        added to the checkpoint's sums; the checkpoints' hashes (and, if ``full``, their sums recomputed from
        the entries). Raises :class:`DamagedLedgerError` at the first thing that fails."""
        components, n = len(self.filter.components), self.databases.n
        head = self.store.rows("SELECT value FROM gce_meta WHERE key = 'head'")
        checkpoints = self.store.rows("SELECT seq, sums, hash FROM gce_checkpoints ORDER BY seq")
        for seq, _, _ in checkpoints:
            if type(seq) is not int or seq < 1:
                raise self._damaged(None, f"a checkpoint numbered {shown(seq)}", 0)
        latest = checkpoints[-1] if checkpoints else None
        start = 0 if full or latest is None else latest[0]
        sums = np.zeros((components, n))
        problems: list[str] = []  # the checkpoints' (reported after the entries, which are the record)
        if start:
            try:
                sums = parse_sums(latest[1], components, n)
            except ValueError as error:
                problems.append(f"the checkpoint after entry {start}: {error}")
        wanted = {c[0]: c for c in checkpoints}
        at_checkpoint: dict[int, str] = {}
        previous, seq, admitted, last, last_admitted = self._genesis, 0, 0, None, None
        while True:
            rows = self.store.rows(f"SELECT {_COLUMNS} FROM gce_entries WHERE seq > ? ORDER BY seq LIMIT {_PAGE}",
                                   (seq,))
            for row in rows:
                previous = self._chained(row, previous, seq + 1)
                seq = row[0]
                if seq > start:
                    record = self._parse(row, admitted)
                    if record.admitted:
                        _add(sums, record.members, record.weights)
                elif type(row[6]) is not int or row[6] not in (0, 1):
                    raise self._damaged(seq, f"admitted is {shown(row[6])}, not 0 or 1", seq - 1)
                admitted += row[6]
                last = (row, admitted - row[6])
                if row[6]:
                    last_admitted = (row, admitted - 1)
                if seq in wanted:
                    at_checkpoint[seq] = previous
                    if full:
                        problems += self._compare_checkpoint(wanted[seq], sums)
            if len(rows) < _PAGE:
                break
        if not head or head[0][0] != f"{seq} {previous}":
            told = head[0][0].split()[0] if head else "nothing"
            raise self._damaged(seq + 1 if head and told.isdigit() and int(told) > seq else None,
                                f"its head records entry {told} with another hash than the last entry, {seq} "
                                f"(entries deleted after it, or the head edited)", seq)
        for c_seq, blob, stored in checkpoints:
            if c_seq not in at_checkpoint or checkpoint_hash(at_checkpoint[c_seq], c_seq, bytes(blob)) != stored:
                problems.append(f"the checkpoint after entry {c_seq} does not match its hash")
        if problems:  # every entry checks: truncating after the last one rebuilds the checkpoint
            raise self._damaged(None, problems[0], seq)
        return _Walk(sums, seq, previous, admitted, start, last, last_admitted)

    @staticmethod
    def _compare_checkpoint(checkpoint: tuple, sums: NDArray[np.float64]) -> list[str]:
        """What is wrong with a checkpoint whose sums should be ``sums`` (recomputed from the entries)."""
        c_seq, blob, _ = checkpoint
        try:
            kept = parse_sums(blob, *sums.shape)
        except ValueError as error:
            return [f"the checkpoint after entry {c_seq}: {error}"]
        if not np.allclose(kept, sums, rtol=RECOMPUTE_TOLERANCE, atol=0.0):
            return [f"the checkpoint after entry {c_seq} disagrees with the entries before it"]
        return []

    def _load(self) -> WorstCase:
        """(Inside a transaction.) The per-database sums (latest checkpoint plus the admitted entries after it),
        the chain checked from its start, and their brackets."""
        walk = self._walk()
        tracker = WorstCase(self.constraints, self.neighborhood, len(self.filter.components), self.time_limit)
        tracker.load(walk.sums)
        self._seq, self._hash, self._checkpoint_seq = walk.last_seq, walk.head, walk.checkpoint
        self._admitted_total = walk.admitted
        return tracker

    def _catch_up(self) -> WorstCase:
        """Apply the entries other processes recorded since this one last looked (inside a transaction, or one
        statement: its own snapshot), each checked against the chain, and the head against the last."""
        if self._tracker is None:
            self._tracker = self._load()
            return self._tracker
        rows = self.store.rows(f"SELECT m.value, {_COLUMNS.replace('seq', 'e.seq', 1)} FROM gce_meta m LEFT JOIN "
                               f"gce_entries e ON e.seq > ? WHERE m.key = 'head' ORDER BY e.seq", (self._seq,))
        if not rows:
            raise self._damaged(None, "its head is missing", self._seq)
        head = rows[0][0]
        seq, previous, total = self._seq, self._hash, self._admitted_total
        records = []
        for row in rows:
            if row[1] is None:
                break
            previous = self._chained(row[1:], previous, seq + 1)
            record = self._parse(row[1:], total)
            seq, total = record.seq, total + record.admitted
            records.append(record)
        if head != f"{seq} {previous}":
            raise self._damaged(None, f"its head ({head.split()[0] if head else 'empty'}) does not match the last "
                                      f"entry, {seq} (entries deleted, or the head edited)", seq)
        for record in records:
            if record.admitted:
                self._tracker.apply(record.members, record.weights, record.reach,
                                    upper_hint=record.answer.get("state_upper"))
        self._seq, self._hash, self._admitted_total = seq, previous, total
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
        guarantee, repeat = as_guarantee(guarantee, repeat)  # a dp-accounting event of one mechanism
        repeat = _check_repeat(repeat)
        if not kinds.is_guarantee(guarantee):
            raise InvalidParameterError("mechanism", f"must be a guarantee, got {shown(guarantee)}")
        members, recorded = _members(databases, self.databases.names, self.databases.n)
        weights = _times(self.filter.weights(guarantee), repeat)
        return members, recorded, weights, repeat

    def _decide(self, tracker: WorstCase, members, weights, reach_bound
                ) -> tuple[bool, str, NDArray, NDArray, NDArray, list[tuple[int, Bracket]], int]:
        """Admission by the filter on certified bounds: the incremental bracket first, narrowed only for the
        components where it straddles the budget (cheap bounds, then the solvers)."""
        infinite = ~np.isfinite(weights)
        if infinite.any():  # refused outright (refusing is always safe): no sums may become infinite
            lower, upper = tracker.lower.copy(), tracker.upper.copy()
            lower[infinite] = upper[infinite] = np.inf
            return (False, "the request alone exceeds any budget (its statistic overflows to infinity)", lower,
                    upper, self.budgets, [], int(np.flatnonzero(infinite)[0]))
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
        if rule.any_component:  # the order closest to admitting, among those that can admit at all (budget > 0)
            with np.errstate(invalid="ignore"):  # inf / inf: an order that admits nothing, left out as inf
                ratios = np.where(budgets > 0, upper / np.where(budgets > 0, budgets, 1.0), np.inf)
            binding = int(np.argmin(ratios))
        else:  # the component furthest over (or closest to) its budget
            binding = int(np.argmax(upper / np.where(budgets > 0, budgets, np.inf)))
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
        guarantee : Guarantee or dp-accounting DpEvent
            An event of one mechanism run ``n`` times counts as ``repeat * n`` invocations of it
            (:func:`gce.bridges.dp_events.as_guarantee`); an event of several distinct mechanisms is refused.
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
        guarantee, repeat = as_guarantee(guarantee, repeat)
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
                          "lower": encode_floats(decision.lower), "upper": encode_floats(decision.upper),
                          "remaining": encode_floats(decision.remaining), "state_lower": state_lower.tolist(),
                          "state_upper": state_upper.tolist(),
                          "worst_set": sorted(decision.worst_set)[:RECORDED_MEMBERS],
                          "worst_set_size": len(decision.worst_set)}
                row = (sequence, _now(), analyst, json.dumps(key), mechanism, repeat, int(decision.admitted),
                       json.dumps(encode_floats(weights)), float(reach_bound), json.dumps(answer, allow_nan=False))
                entry = entry_hash(self._hash, row)
                self.store.run(f"INSERT INTO gce_entries ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                               (*row, entry))
                self.store.run("UPDATE gce_meta SET value = ? WHERE key = 'head'", (f"{sequence} {entry}",))
                checkpoint = decision.admitted and sequence - self._checkpoint_seq >= CHECKPOINT_EVERY
                if checkpoint:
                    sums = tracker.sums.copy()
                    _add(sums, members, weights)
                    blob = sums.astype("<f8").tobytes()
                    self.store.run("INSERT INTO gce_checkpoints (seq, sums, hash) VALUES (?, ?, ?)",
                                   (sequence, blob, checkpoint_hash(entry, sequence, blob)))
                    self.store.run("DELETE FROM gce_checkpoints WHERE seq < ?", (self._checkpoint_seq,))
            # committed: only now does this process's state move
            self._seq, self._hash = sequence, entry
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
        entry), and the counts (entries are numbered 1, 2, ...), after the whole chain is checked
        (:meth:`verify` without recomputing the sums before the latest checkpoint); never solves.

        Raises
        ------
        DamagedLedgerError
            An entry, a checkpoint or the meta data fails its hash or its validation (naming the first bad entry).
        """
        with self.store.transaction(write=False):
            walk = self._walk()
        components = len(self.filter.components)
        lower = upper = (0.0,) * components
        worst: tuple[int, ...] = ()
        size = 0
        if walk.last is not None:
            answer = self._parse(*walk.last).answer
            lower, upper = tuple(answer["state_lower"]), tuple(answer["state_upper"])
        if walk.last_admitted is not None:
            kept = self._parse(*walk.last_admitted).answer
            worst, size = tuple(kept["worst_set"]), int(kept["worst_set_size"])
        return Status(self.title, self.location, self.databases.n, self.filter.name, self.filter.theorem,
                      self.budget_epsilon, self.budget_delta, self.filter.components, lower, upper,
                      tuple(map(float, self.budgets)), walk.last_seq, walk.admitted, worst, size)

    def history(self, *, limit: int | None = None, analyst: str | None = None) -> list[Entry]:
        """The recorded requests, oldest first (the last ``limit`` of them; one analyst's only if given), after
        the chain is checked as by :meth:`status`."""
        if limit is not None and (not is_integer(limit) or limit < 1):
            raise InvalidParameterError("limit", f"must be an integer >= 1, got {shown(limit)}")
        where, params = ("WHERE analyst = ?", [analyst]) if analyst is not None else ("", [])
        tail = f" LIMIT {min(int(limit), _SQL_INTEGER_MAX)}" if limit is not None else ""  # (more: every entry)
        with self.store.transaction(write=False):
            self._walk()
            rows = self.store.rows(f"SELECT seq, at, analyst, databases, mechanism, repeat, admitted, answer FROM "
                                   f"gce_entries {where} ORDER BY seq DESC{tail}", params)
        return [Entry(int(seq), at, who, json.loads(databases), json.loads(mechanism), int(repeat), bool(admitted),
                      json.loads(answer)) for seq, at, who, databases, mechanism, repeat, admitted, answer
                in reversed(rows)]

    def verify(self) -> Verification:
        """Walk the whole hash chain: every entry's hash and content (as :meth:`status` does), and every
        checkpoint's sums recomputed from the entries before it.

        Returns
        -------
        Verification
            The counts and the head hash (keep it elsewhere to check later that this history is unchanged).

        Raises
        ------
        DamagedLedgerError
            Naming the first bad entry (or the checkpoint, or the meta data) and the last good entry.
        """
        with self.store.transaction(write=False):
            walk = self._walk(full=True)
            checkpoints = self.store.rows("SELECT COUNT(*) FROM gce_checkpoints")[0][0]
        return Verification(self.location, walk.last_seq, walk.admitted, int(checkpoints), self._genesis, walk.head)

    def truncate(self, after: int) -> Verification:
        """Keep entries 1..``after`` (which must check) and delete the rest, with every checkpoint (a fresh
        one is written at ``after``): the repair of a ledger damaged after entry ``after``.

        The spends recorded after ``after`` are forgotten: whatever ran since must be recorded again (spent
        anew), or the budget is under-counted.

        Raises
        ------
        InvalidParameterError
            ``after`` is not an entry number.
        DamagedLedgerError
            The entries up to ``after`` do not check.
        """
        if not is_integer(after) or int(after) < 0:
            raise InvalidParameterError("after", f"must be an entry number >= 0, got {shown(after)}")
        after = int(after)
        with self._lock:
            with self.store.transaction(write=True):
                components, n = len(self.filter.components), self.databases.n
                sums = np.zeros((components, n))
                previous, admitted = self._genesis, 0
                rows = self.store.rows(f"SELECT {_COLUMNS} FROM gce_entries WHERE seq <= ? ORDER BY seq",
                                       (min(after, _SQL_INTEGER_MAX),))  # (beyond the store's integers: past all)
                if len(rows) < after:
                    last = self.store.rows("SELECT MAX(seq) FROM gce_entries")[0][0] or 0
                    raise InvalidParameterError("after", f"the ledger has no entry {shown(after)} (its last is {last})")
                for i, row in enumerate(rows):
                    previous = self._chained(row, previous, i + 1)
                    record = self._parse(row, admitted)
                    admitted += record.admitted
                    if record.admitted:
                        _add(sums, record.members, record.weights)
                self.store.run("DELETE FROM gce_entries WHERE seq > ?", (after,))
                self.store.run("DELETE FROM gce_checkpoints")
                if after:
                    blob = sums.astype("<f8").tobytes()
                    self.store.run("INSERT INTO gce_checkpoints (seq, sums, hash) VALUES (?, ?, ?)",
                                   (after, blob, checkpoint_hash(previous, after, blob)))
                self.store.run("UPDATE gce_meta SET value = ? WHERE key = 'head'", (f"{after} {previous}",))
            self._tracker, self._seq, self._hash, self._admitted_total = None, 0, self._genesis, 0
            self._checkpoint_seq = 0
            self._memo.clear()
            self._refused.clear()
        return Verification(self.location, after, admitted, 1 if after else 0, self._genesis, previous)

    def offline(self, *, delta: float | None = None, time_limit: float = 5.0):
        """The optimal composition of the admitted workload as if it had been fixed in advance
        (:func:`gce.solve`): shown beside the filter, never used for admission (a stopping rule on it is
        not valid under adaptivity, arXiv 2602.06756). ``delta`` defaults to the budget's delta."""
        from ..solving import solve

        with self.store.transaction(write=False):
            self._walk()
            rows = self.store.rows("SELECT databases, mechanism, repeat FROM gce_entries WHERE admitted = 1")
        counts: Counter[tuple[int, str]] = Counter()
        for databases, mechanism, repeat in rows:
            value = json.loads(databases)  # checked by the walk: "all" or sorted indices in range
            members = None if value == "all" else np.array(value, dtype=np.intp)
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

"""Membership tables read by an embedded DuckDB engine (001, Sec. V-A: the store chain at scale).

:mod:`gce.constraints.data` reads a small CSV with Python's ``csv`` module. Curators keep membership logs
(patient x hospital visits, customer x branch purchases) of 10^8 rows and more in CSV or Parquet files and
in databases; this module hands such a table to DuckDB (embedded, in-process) and brings back only what
the estimate needs, computed by SQL in the engine:

- the rows read, the individuals, and the *histogram* of memberships: how many individuals appear in
  exactly c distinct databases, for each c (duplicated rows count once);
- when asked, the distinct membership sets observed (:data:`MAX_PATTERNS` at most, else a clear error);
- a *truncation*: the rows to keep so that nobody is in more than m databases (:func:`truncate_membership`).

A :class:`MembershipTable` says where the rows are: CSV or Parquet files (one file or the files a glob
matched; the caller resolves and confines paths, see :mod:`gce.files.scenario`), or a query against a
DuckDB or SQLite database file. Each row is (individual, database); the database id is resolved as in
:func:`gce.constraints.data.estimate_membership` (an index, a name or a mapped id). A missing individual,
a missing or unknown database is an error naming the file and the value.

What must never change: ``histogram[c]`` is exactly the number of individuals of the table with ``c``
distinct known databases, and the truncation keeps, for each individual, the ``min(c, m)`` distinct
databases ranked first by :func:`truncation_key` (the documented rule below) with every row of those.

The truncation rule (uniformly random with a seed, reproducible anywhere): an individual's distinct
databases are ordered by ``md5(f"{seed}:{individual}:{index}")`` (the hexadecimal digest, then the index)
and the first ``m`` are kept; ``individual`` is the id as DuckDB casts it to text.
"""

from __future__ import annotations

import contextlib
import csv
import glob
import hashlib
import math
import os
import shutil
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import resources
from ..errors import InvalidParameterError, ResourceLimitError
from ..files.paths import check_path
from ..interrupts import deferred
from ..validation import is_integer, is_number, shown
from .data import MAX_PATTERNS, DatabaseIds, MembershipEstimate, _Resolver
from .kinds import AtMost, Patterns

if TYPE_CHECKING:  # pragma: no cover
    import duckdb


def _duckdb():
    """The duckdb module, imported on first use (0.3 s): ``import gce`` does not pay for it."""
    import duckdb

    return duckdb


__all__ = ["MAX_PATTERNS", "ENGINE_THREADS", "MembershipTable", "MembershipStatistics",
           "membership_statistics", "truncate_membership", "truncation_key", "TABLE_FORMATS"]

#: DuckDB's worker threads; its memory limit is :func:`gce.resources.engine_memory` (it spills to a
#: temporary folder of its own beyond it, removed when the engine closes).
ENGINE_THREADS = 2
#: File suffixes and the format each is read as.
TABLE_FORMATS = {".csv": "csv", ".tsv": "csv", ".txt": "csv", ".csv.gz": "csv", ".parquet": "parquet",
                 ".pq": "parquet"}
#: Database file suffixes are not needed: DuckDB and SQLite files are told apart by their first bytes.
_SQLITE_MAGIC = b"SQLite format 3\x00"
#: Rows fetched at a time from SQLite (Python's sqlite3: DuckDB's sqlite extension is a download).
_SQLITE_BATCH = 100_000
#: How many characters of a value an error quotes.
_SHOWN = 60
#: Seconds between two progress polls of a running query.
_POLL = 0.25
#: Seconds between two looks at the clock (and at Ctrl-C) while the engine runs; the interrupt's latency.
_TICK = 0.05
#: Seconds the engine has to stop after it was interrupted, before the caller gives up waiting.
_STOP_GRACE = 5.0


def _shown(value: object) -> str:
    return shown(value, _SHOWN)


def _literal(text: str) -> str:
    """A SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def _identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def table_format(path: str) -> str | None:
    """``"csv"`` or ``"parquet"`` from a file name's suffix, or None."""
    lower = path.lower()
    for suffix, kind in sorted(TABLE_FORMATS.items(), key=lambda item: -len(item[0])):
        if lower.endswith(suffix):
            return kind
    return None


@dataclass(frozen=True)
class MembershipTable:
    """Where a membership table's rows are.

    Parameters
    ----------
    files : tuple of str
        CSV or Parquet files (one format, told by the suffix), already resolved; or empty with ``database``.
    database : str, optional
        A DuckDB or SQLite database file, read-only; ``query`` selects the rows.
    query : str, optional
        A SELECT returning (individual, database) first, run against ``database``.
    columns : (str, str), optional
        The individual and database columns by name (a header or Parquet names); default the first two.
    header : bool, optional
        CSV only: whether the first row is a header; None guesses as :func:`estimate_membership` does.
    label : str
        How errors and statements name the table (the path as written in the scenario).

    Examples
    --------
    >>> MembershipTable(("a.parquet",), label="a.parquet").format
    'parquet'
    >>> MembershipTable(("a.json",))
    Traceback (most recent call last):
    ...
    gce.errors.InvalidParameterError: source: 'a.json' is neither CSV (.csv, .tsv, .txt, .csv.gz) nor Parquet (.parquet, .pq)
    """

    files: tuple[str, ...] = ()
    database: str | None = None
    query: str | None = None
    columns: tuple[str, str] | None = None
    header: bool | None = None
    label: str = ""

    def __post_init__(self) -> None:
        if bool(self.files) == (self.database is not None):
            raise InvalidParameterError("source", "give files or a database (with a query), exactly one")
        if (self.database is None) != (self.query is None):
            raise InvalidParameterError("query", "a database needs a query, and a query a database")
        if self.query is not None and (not isinstance(self.query, str) or not self.query.strip()):
            raise InvalidParameterError("query", f"must be a SELECT returning (individual, database), "
                                                 f"got {shown(self.query)}")
        if self.columns is not None and (len(self.columns) != 2 or not all(isinstance(c, str) and c
                                                                            for c in self.columns)):
            raise InvalidParameterError("columns", f"must be two column names (individual, database), "
                                                   f"got {shown(self.columns)}")
        formats = {table_format(f) for f in self.files}
        if None in formats:
            bad = next(f for f in self.files if table_format(f) is None)
            raise InvalidParameterError("source", f"{shown(bad, 200)} is neither CSV (.csv, .tsv, .txt, .csv.gz) nor "
                                                  f"Parquet (.parquet, .pq)")
        if len(formats) > 1:
            raise InvalidParameterError("source", "mixes CSV and Parquet files; give one format")
        for f in self.files:
            if any(c in f for c in "*?["):  # DuckDB would expand it again
                raise InvalidParameterError("source", f"{shown(f, 200)}: file names with *, ? or [ are not read")
            check_path(f, "source")  # a named pipe would block the engine, a device never end
        if self.database is not None:
            check_path(self.database, "database")

    @classmethod
    def of(cls, table: "MembershipTable | str | os.PathLike[str] | Sequence[str | os.PathLike[str]]", *,
           columns: tuple[str, str] | None = None, header: bool | None = None, query: str | None = None,
           label: str | None = None) -> "MembershipTable":
        """The table a user names: a :class:`MembershipTable` as is, or a CSV or Parquet file, a glob of them
        (``"sales/part*.parquet"``, ``**`` spans folders), a list of files, or with ``query`` a DuckDB or
        SQLite database file; ``label`` defaults to what was given.

        Raises
        ------
        InvalidParameterError
            Naming ``table`` (a glob matching no file, a folder, a database that is no file) or the option.
        """
        if isinstance(table, MembershipTable):
            given = [name for name, value in (("columns", columns), ("header", header), ("query", query),
                                              ("label", label)) if value is not None]
            if given:
                raise InvalidParameterError(given[0], "is set on the MembershipTable given; give it there")
            return table
        if label is not None and (not isinstance(label, str) or not label):
            raise InvalidParameterError("label", f"must be a non-empty string, got {shown(label)}")
        columns = None if columns is None else tuple(columns) if not isinstance(columns, str) else columns
        if isinstance(table, (str, os.PathLike)):
            path = os.fspath(table)
            if not isinstance(path, str) or not path:
                raise InvalidParameterError("table", f"must be a path, a glob or a MembershipTable, got {shown(table)}")
            if query is not None:
                if not os.path.isfile(path):
                    raise InvalidParameterError("table", f"{shown(path, 200)} is not a database file")
                return cls(database=path, query=query, columns=columns, header=header, label=label or path)
            if any(c in path for c in "*?["):
                files = sorted(f for f in glob.glob(path, recursive=True) if os.path.isfile(f))
                if not files:
                    raise InvalidParameterError("table", f"{shown(path, 200)} matches no file")
            else:
                if not os.path.isfile(path):
                    what = "is not a file" if os.path.exists(path) else "does not exist"
                    raise InvalidParameterError("table", f"{shown(path, 200)} {what}")
                files = [path]
            return cls(tuple(files), columns=columns, header=header, label=label or path)
        if isinstance(table, (list, tuple)) and table and all(isinstance(f, (str, os.PathLike)) for f in table):
            files = [os.fspath(f) for f in table]
            return cls(tuple(files), columns=columns, header=header, label=label or ", ".join(files))
        raise InvalidParameterError("table", f"must be a path, a glob, a list of files or a MembershipTable, got "
                                             f"{shown(table)}")

    @property
    def format(self) -> str:
        """``"csv"``, ``"parquet"`` or ``"database"``."""
        return "database" if self.database is not None else table_format(self.files[0])

    @property
    def name(self) -> str:
        return self.label or (self.database if self.database is not None else ", ".join(self.files))


@dataclass(frozen=True)
class MembershipStatistics:
    """What the engine computed from a membership table.

    Attributes
    ----------
    histogram : dict of int to int
        ``{c: individuals in exactly c distinct databases}``, c ascending.
    rows : int
        Rows read (duplicates included).
    n : int
        Number of databases the ids were resolved against.
    source : str
        The table's label.
    patterns : tuple of (frozenset, int), optional
        Each distinct membership set and how many individuals have it (when asked).
    """

    histogram: dict[int, int]
    rows: int
    n: int
    source: str
    patterns: tuple[tuple[frozenset[int], int], ...] | None = None

    def __post_init__(self) -> None:
        if not is_integer(self.n) or self.n < 1:
            raise InvalidParameterError("databases", f"must be an integer >= 1, got {shown(self.n)}")
        if not isinstance(self.histogram, dict) or not self.histogram:
            raise InvalidParameterError("histogram", f"must be a non-empty mapping {{databases: individuals}}, "
                                                     f"got {_shown(self.histogram)}")
        for c, k in self.histogram.items():
            if not (is_integer(c) and 1 <= c <= self.n and is_integer(k) and k >= 1):
                raise InvalidParameterError("histogram", f"needs databases in 1..{self.n} and individuals >= 1, "
                                                         f"got {shown(c)}: {shown(k)}")
        object.__setattr__(self, "histogram", {int(c): int(self.histogram[c]) for c in sorted(self.histogram)})
        if not is_integer(self.rows) or self.rows < self.memberships:
            raise InvalidParameterError("rows", f"must be an integer >= the {self.memberships:,} distinct "
                                                f"(individual, database) pairs, got {shown(self.rows)}")
        if not isinstance(self.source, str):
            raise InvalidParameterError("source", f"must be a string, got {shown(self.source)}")
        if self.patterns is not None:
            self._check_patterns()

    def _check_patterns(self) -> None:
        sizes: dict[int, int] = {}
        for entry in self.patterns:
            pattern, k = entry if isinstance(entry, tuple) and len(entry) == 2 else (None, None)
            if not (isinstance(pattern, frozenset) and pattern and all(is_integer(i) and 0 <= i < self.n
                                                                       for i in pattern)
                    and is_integer(k) and k >= 1):
                raise InvalidParameterError("patterns", f"each must be (a non-empty set of indices in "
                                                        f"0..{self.n - 1}, individuals >= 1), got {_shown(entry)}")
            sizes[len(pattern)] = sizes.get(len(pattern), 0) + k
        if len({p for p, _ in self.patterns}) != len(self.patterns):
            raise InvalidParameterError("patterns", "lists a membership set twice")
        if sizes != self.histogram:
            raise InvalidParameterError("patterns", f"count {dict(sorted(sizes.items()))} individuals by set size, "
                                                    f"the histogram {self.histogram}")

    @classmethod
    def from_dict(cls, data: Any) -> "MembershipStatistics":
        """The statistics from their JSON form (:meth:`to_dict`): computed on one machine (a Spark cluster,
        :mod:`gce.constraints.spark`), used on another.

        >>> stats = MembershipStatistics({1: 2, 2: 1}, 5, 3, "logs", ((frozenset({2}), 2), (frozenset({0, 1}), 1)))
        >>> MembershipStatistics.from_dict(stats.to_dict()) == stats
        True
        """
        if not isinstance(data, dict):
            raise InvalidParameterError("statistics", f"must be a JSON object, got {_shown(data)}")
        for key in ("source", "rows", "databases", "histogram"):
            if key not in data:
                raise InvalidParameterError(key, "is missing from the statistics")
        try:
            histogram = {entry["databases"]: entry["individuals"] for entry in data["histogram"]}
            patterns = None if data.get("patterns") is None else tuple(
                (frozenset(entry["set"]), entry["individuals"]) for entry in data["patterns"])
        except (TypeError, KeyError):
            raise InvalidParameterError("histogram", "entries must be {databases, individuals} (patterns: "
                                                     "{set, individuals})") from None
        if len(histogram) != len(data["histogram"]):
            raise InvalidParameterError("histogram", "lists a number of databases twice")
        stats = cls(histogram, data["rows"], data["databases"], data["source"], patterns)
        for key in ("individuals", "memberships"):
            if key in data and data[key] != getattr(stats, key):
                raise InvalidParameterError(key, f"is {shown(data[key])}, but the histogram gives {getattr(stats, key)}")
        return stats

    @property
    def individuals(self) -> int:
        return sum(self.histogram.values())

    @property
    def memberships(self) -> int:
        """Distinct (individual, database) pairs."""
        return sum(c * k for c, k in self.histogram.items())

    @property
    def largest(self) -> int:
        return max(self.histogram)

    def covered(self, m: int) -> float:
        """The share of individuals in at most ``m`` databases."""
        return sum(k for c, k in self.histogram.items() if c <= m) / self.individuals

    def kept(self, m: int) -> float:
        """The share of memberships (distinct pairs) a truncation to ``m`` keeps: sum min(c, m) / sum c."""
        return sum(min(c, m) * k for c, k in self.histogram.items()) / self.memberships

    def percentile(self, q: float) -> int:
        """The smallest m covering at least a share ``q`` of the individuals (nearest rank)."""
        need, seen = q * self.individuals, 0
        for c, k in sorted(self.histogram.items()):
            seen += k
            if seen >= need - 1e-9:
                return c
        return self.largest  # pragma: no cover - q <= 1

    def estimate(self, *, enforced: bool = False) -> MembershipEstimate:
        """The :class:`MembershipEstimate` (at_most = the largest count; patterns when computed)."""
        observed = None
        if self.patterns is not None:
            sets = sorted((p for p, _ in self.patterns), key=lambda p: (len(p), sorted(p)))
            observed = Patterns(tuple(sets))
        return MembershipEstimate(AtMost(self.largest), observed, individuals=self.individuals, rows=self.rows,
                                  n=self.n, source=self.source, enforced=enforced)

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "rows": self.rows, "individuals": self.individuals,
                "memberships": self.memberships, "databases": self.n,
                "histogram": [{"databases": c, "individuals": k} for c, k in self.histogram.items()],
                "patterns": None if self.patterns is None else
                [{"set": sorted(p), "individuals": k} for p, k in self.patterns]}


# ---------------------------------------------------------------------------
# The engine


@contextlib.contextmanager
def _engine(table: MembershipTable) -> Iterator[duckdb.DuckDBPyConnection]:
    """An in-memory engine under the memory policy, for the section; a DuckDB database file is attached
    read-only and used.

    DuckDB holds at most :func:`gce.resources.engine_memory` and spills beyond it to a temporary folder of
    its own (never a ``.tmp`` folder in the working directory). Whatever ends the section, the engine is
    closed and the folder removed; on the command line a Ctrl-C that comes while they are being made waits
    until both exist (:func:`gce.interrupts.deferred`: between the two, the folder was left behind).
    """
    spill = con = None
    try:
        with deferred():
            spill = tempfile.mkdtemp(prefix="gce-duckdb-")
            config = {"threads": ENGINE_THREADS, "memory_limit": f"{resources.engine_memory() // 2**20}MiB",
                      "temp_directory": spill}
            con = _duckdb().connect(":memory:", config=config)
        # progress is tracked (for query_progress, polled by _Watch) but never printed by DuckDB itself
        con.execute("set enable_progress_bar = true")
        con.execute("set enable_progress_bar_print = false")
        if table.format == "database" and not _is_sqlite(table.database):
            try:
                con.execute(f"attach {_literal(table.database)} as source (read_only)")
                con.execute("use source")
            except _duckdb().Error as error:
                raise _engine_error(table, error) from None
        yield con
    finally:
        if con is not None:
            con.close()
        if spill is not None:
            shutil.rmtree(spill, ignore_errors=True)


def _engine_error(table: MembershipTable, error: Exception) -> InvalidParameterError | ResourceLimitError:
    """DuckDB's error as one line naming the table; running out of memory is a :class:`ResourceLimitError`."""
    first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if isinstance(error, _duckdb().OutOfMemoryException):
        return ResourceLimitError(table.name, f"the engine ran out of its memory limit of "
                                              f"{resources.format_size(resources.engine_memory())} (a quarter of "
                                              f"gce's, GCE_MEMORY_LIMIT or --memory-limit) while reading it: {first}")
    return InvalidParameterError(table.name, f"cannot be read: {first}")


def _guarded(con: duckdb.DuckDBPyConnection, table: MembershipTable, work: Callable[[], Any],
             time_limit: float | None) -> Any:
    """``work()`` (queries on ``con``) in a worker thread, interrupted at ``time_limit`` seconds or on Ctrl-C.

    DuckDB does not look at Python's signals while a query runs, so the calling thread waits here, in
    ticks of :data:`_TICK`, where both the clock and Ctrl-C reach it; either interrupts the engine
    (``connection.interrupt()``, again at every tick until ``work`` returns: it may start another query).
    Running out of time raises :class:`ResourceLimitError` naming the table; Ctrl-C (or any exception
    raised in the waiting thread) is re-raised once the engine has stopped.
    """
    outcome: dict[str, Any] = {}
    finished = threading.Event()

    def run() -> None:
        try:
            outcome["value"] = work()
        except BaseException as error:  # noqa: BLE001 - handed to the calling thread
            outcome["error"] = error
        finally:
            finished.set()

    deadline = math.inf if time_limit is None else time.monotonic() + time_limit
    worker = threading.Thread(target=run, name="gce-duckdb", daemon=True)
    out_of_time = False
    try:
        with deferred():  # a Ctrl-C inside start() would leave a running engine unstopped (closing it then fails)
            worker.start()
        while not finished.wait(_TICK):
            if time.monotonic() >= deadline:
                out_of_time = True
                break
    except BaseException:  # Ctrl-C, or an alarm (gce.resources.stop_at_deadline): stop the engine first
        _stop(con, finished)
        raise
    if out_of_time:
        _stop(con, finished)
        raise ResourceLimitError(table.name, f"reading it was stopped at the time limit of {time_limit:.3g} s "
                                             f"(--time-limit): the query or files are too large for it")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _stop(con: duckdb.DuckDBPyConnection, finished: threading.Event) -> None:
    """Interrupt the engine until its worker is done (at most :data:`_STOP_GRACE` seconds; a second Ctrl-C on
    the command line waits for it: :func:`gce.interrupts.deferred`)."""
    with deferred():
        give_up = time.monotonic() + _STOP_GRACE
        con.interrupt()
        while not finished.wait(_TICK) and time.monotonic() < give_up:
            con.interrupt()


def _time_limit(time_limit: float | None) -> float | None:
    """The engine's time budget: the one given, else the time left of :func:`gce.resources.limits`."""
    if time_limit is not None:
        if not (is_number(time_limit) and 0 < time_limit < math.inf):
            raise InvalidParameterError("time_limit", f"must be a finite number of seconds > 0, got {shown(time_limit)}")
        return float(time_limit)
    return resources.seconds_left()


class _Watch:
    """Polls a running query's progress (DuckDB's ``query_progress``) and reports it as a percentage."""

    def __init__(self, con: duckdb.DuckDBPyConnection, progress: Callable[..., None] | None, message: str):
        self.con, self.progress, self.message = con, progress, message
        self.done = threading.Event()
        self.thread = None if progress is None else threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.done.wait(_POLL):
            try:
                share = self.con.query_progress()
            except _duckdb().Error:  # pragma: no cover - the query ended meanwhile
                return
            if share is not None and share >= 0:
                self.progress(int(share), 100, self.message)

    def __enter__(self) -> "_Watch":
        if self.thread is not None:
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        if self.thread is not None:
            self.thread.join()


def _first_line(path: str) -> list[str] | None:
    """The first non-blank CSV row of a file (to tell a header), or None."""
    try:
        with open(path, newline="", encoding="utf-8-sig", errors="replace") as handle:
            for row in csv.reader(handle):
                cells = [cell.strip() for cell in row]
                if any(cells):
                    return cells
    except (OSError, csv.Error):
        return None
    return None


def _csv_header(table: MembershipTable, resolve: _Resolver) -> bool:
    if table.header is not None:
        return table.header
    if table.columns is not None:
        return True
    guesses = set()
    for path in table.files:
        cells = _first_line(path)
        if cells is None:
            continue
        if len(cells) != 2 or resolve(cells[1]) is not None:
            guesses.add(False)
        else:
            guesses.add(not cells[1].lstrip("+-").isdigit())
    if len(guesses) > 1:
        raise InvalidParameterError(table.name, "some files start with a header row and others do not; "
                                                "set header = true or false")
    return guesses.pop() if guesses else False


def _source_sql(con: duckdb.DuckDBPyConnection, table: MembershipTable, resolve: _Resolver, *,
                filename: bool = True) -> tuple[str, str]:
    """What the rows are read from (a table function or a subquery, every column under its own name) and
    the SQL of their origin; ``filename=False`` reads files without DuckDB's extra ``filename`` column (the
    columns as the user's table has them)."""
    if table.format == "database":
        if _is_sqlite(table.database):
            _sqlite_rows(con, table)
            return "sqlite_rows", _literal(table.name)
        return f"(select * from ({table.query}))", _literal(table.name)
    files = "[" + ", ".join(_literal(f) for f in table.files) + "]"
    extra = ", filename = true" if filename else ""
    origin = "filename" if filename else _literal(table.name)
    if table.format == "parquet":
        return f"read_parquet({files}{extra})", origin
    if table.columns is not None:
        return f"read_csv({files}, header = true, all_varchar = true{extra})", origin
    header = _csv_header(table, resolve)
    names = _header_names(table) if header else ("c0", "c1")
    columns = ", ".join(f"{_literal(name)}: 'VARCHAR'" for name in names)
    return (f"read_csv({files}, header = {str(header).lower()}, auto_detect = false, delim = ',', quote = '\"', "
            f"escape = '\"', columns = {{{columns}}}{extra})"), origin


def _header_names(table: MembershipTable) -> tuple[str, str]:
    """The two column names of a CSV table's header row (so a truncation writes them back), else c0, c1."""
    cells = _first_line(table.files[0])
    if cells is not None and len(cells) == 2 and all(cells) and cells[0] != cells[1] and "filename" not in cells:
        return cells[0], cells[1]
    return "c0", "c1"


def _key_columns(con: duckdb.DuckDBPyConnection, table: MembershipTable, source: str, origin: str) -> tuple[str, str]:
    """The SQL of the individual and the database of a row of ``source`` (trimmed, empty as null, for CSV)."""
    if table.columns is not None:
        first, second = (_identifier(c) for c in table.columns)
    else:
        names = [row[0] for row in con.execute(f"describe select * from {source}").fetchall()
                 if not (origin == "filename" and row[0] == "filename")]
        if len(names) < 2:
            raise InvalidParameterError(table.name, f"has {len(names)} column; two are needed (individual, "
                                                    f"database)")
        if len(names) != 2:
            raise InvalidParameterError(table.name, f"has {len(names)} columns ({', '.join(names[:5])}); name "
                                                    f"the two to read with columns = [individual, database]")
        first, second = (_identifier(c) for c in names)
    if table.format == "csv":
        first, second = f"nullif(trim({first}), '')", f"nullif(trim({second}), '')"
    return first, second


def _raw_sql(con: duckdb.DuckDBPyConnection, table: MembershipTable, resolve: _Resolver) -> str:
    """A SELECT of (individual, database, origin): the table's rows, origin the file (or database) read."""
    source, origin = _source_sql(con, table, resolve)
    first, second = _key_columns(con, table, source, origin)
    return f"select {first} as individual, {second} as database, {origin} as origin from {source}"


def _sqlite_rows(con: duckdb.DuckDBPyConnection, table: MembershipTable) -> None:
    """The query's rows from a SQLite file, streamed into the engine's table ``sqlite_rows`` (as text, each
    column under the name the query gives it)."""
    lite = sqlite3.connect(f"file:{table.database}?mode=ro", uri=True)
    try:
        cursor = lite.execute(f"select * from ({table.query})")
        if cursor.description is None or len(cursor.description) != 2:
            raise InvalidParameterError("query", "must return two columns (individual, database)")
        names = [str(column[0]) for column in cursor.description]
        if names[0] == names[1] or not all(names):
            names = ["individual", "database"]
        con.execute(f"create temp table sqlite_rows ({_identifier(names[0])} varchar, "
                    f"{_identifier(names[1])} varchar)")
        while batch := cursor.fetchmany(_SQLITE_BATCH):
            individual = np.array([None if r[0] is None else str(r[0]) for r in batch], dtype=object)
            database = np.array([None if r[1] is None else str(r[1]) for r in batch], dtype=object)
            _insert(con, individual, database)
    except sqlite3.Error as error:
        raise InvalidParameterError("query", f"failed on {table.name}: {error}") from None
    finally:
        lite.close()


def _insert(con: duckdb.DuckDBPyConnection, individual: np.ndarray, database: np.ndarray) -> None:
    frame = {"individual": individual, "database": database}  # noqa: F841 - read by DuckDB by its name
    con.execute("insert into sqlite_rows select individual, database from frame")


def id_columns(resolve: _Resolver) -> tuple[list[str], list[int | None], list[int]]:
    """The ids table's columns ``(id, num, idx)``: each database id as text, as an integer when it is one
    (else None), and its index; what DuckDB and Spark (:mod:`gce.constraints.spark`) join the rows to."""
    keys = [str(k) for k in resolve.by_id]
    nums = [int(k) if k.lstrip("-").isdigit() and str(int(k)) == k else None for k in keys]
    return keys, nums, [int(i) for i in resolve.by_id.values()]


def rows_sql(raw: str, ids: str, integer: bool) -> str:
    """``rows(individual, database, origin, idx)``: the relation ``raw`` with each row's database index from
    ``ids`` (null: unknown); an ``integer`` database column is matched by value, any other by its trimmed text.
    DuckDB and Spark SQL both run it."""
    on = f"{raw}.database = {ids}.num" if integer else f"trim(cast({raw}.database as string)) = {ids}.id"
    return (f"select {raw}.individual, {raw}.database, {raw}.origin, {ids}.idx "
            f"from {raw} left join {ids} on {on}")


def _ids(con: duckdb.DuckDBPyConnection, resolve: _Resolver) -> None:
    """The table ``ids(id, num, idx)`` (:func:`id_columns`)."""
    keys, nums, indices = id_columns(resolve)
    frame = {"id": np.array(keys, dtype=object),  # noqa: F841 - read by DuckDB by its name
             "num": np.array([-1 if v is None else v for v in nums], dtype=np.int64),
             "has": np.array([v is not None for v in nums]),
             "idx": np.array(indices, dtype=np.int64)}
    con.execute("create temp table ids as select id, case when has then num end as num, idx::integer as idx "
                "from frame")


def _rows_view(con: duckdb.DuckDBPyConnection, table: MembershipTable, databases: DatabaseIds, *,
               writes: bool = False) -> _Resolver:
    """The view ``rows(individual, database, origin, idx)``: every row with its database index (null: unknown).

    A query against a DuckDB file then runs on that database alone (no other file can be read or written),
    unless the caller ``writes`` a file (a truncation, asked for by the user, not by a scenario file).
    """
    resolve = _Resolver(databases, text=True)
    _ids(con, resolve)
    if table.format == "database" and not writes and not _is_sqlite(table.database):
        con.execute("set enable_external_access = false")
        con.execute("set lock_configuration = true")
    raw = _raw_sql(con, table, resolve)
    con.execute(f"create temp view raw as {raw}")
    kind = con.execute("select typeof(database) from raw limit 1").fetchall()
    integer = bool(kind) and kind[0][0] in ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT",
                                            "UINTEGER", "UBIGINT", "HUGEINT")
    con.execute(f"create temp view rows as {rows_sql('raw', 'ids', integer)}")
    return resolve


def _where(table: MembershipTable, origin: str) -> str:
    """The table's name, and the file of a row when the table has several."""
    return f"{table.name} ({origin})" if len(table.files) > 1 else table.name


def _check_rows(run: Callable[[str], list[tuple]], rows: str, where: Callable[[object], str],
                resolve: _Resolver, missing: int, unknown: int) -> None:
    """Raise the error for the first row of ``rows`` with no individual, or an unknown or missing database;
    ``run`` runs a query (DuckDB or Spark SQL), ``where`` names the table from a row's origin."""
    if missing:
        origin, database = run(f"select origin, database from {rows} where individual is null limit 1")[0]
        raise InvalidParameterError(where(origin), f"{missing:,} row(s) have no individual id (one with database "
                                    f"{_shown(database)})")
    if unknown:
        origin, individual, database = run(f"select origin, individual, database from {rows} where idx is null "
                                           f"limit 1")[0]
        what = "no database id" if database is None else f"unknown database {_shown(database)}"
        raise InvalidParameterError(where(origin), f"{unknown:,} row(s) have an unknown or missing database; one "
                                                   f"has {what} (individual {_shown(individual)}; known ids: "
                                                   f"{resolve.known()})")


# ---------------------------------------------------------------------------
# The statistics in SQL that DuckDB and Spark SQL both run (gce.constraints.spark is the other engine)


def per_individual_sql(rows: str, patterns: bool) -> str:
    """One row per individual of ``rows(individual, database, origin, idx)``.

    Columns: ``missing`` (the individual is null), ``n_rows`` (its rows, duplicates included), ``unknown``
    (its rows with no database index), ``c`` (its distinct known databases) and, when ``patterns``, ``pattern``
    (those databases' indices, ascending). Duplicated rows count once in ``c`` and ``pattern``.
    """
    pattern = ", array_sort(array_agg(idx) filter (where idx is not null)) as pattern" if patterns else ""
    return f"""
        with pairs as (select individual, idx, count(*) as n from {rows} group by individual, idx)
        select individual is null as missing, cast(sum(n) as bigint) as n_rows,
               cast(coalesce(sum(n) filter (where idx is null), 0) as bigint) as unknown,
               cast(count(idx) as bigint) as c{pattern}
        from pairs group by individual"""


def statistics_from_sql(run: Callable[[str], list[tuple]], rows: str, per: str, *, name: str,
                        where: Callable[[object], str], resolve: _Resolver, patterns: bool,
                        max_patterns: int) -> MembershipStatistics:
    """The statistics from the relation ``per`` (:func:`per_individual_sql` of ``rows``), by queries ``run``
    returns the rows of (DuckDB or Spark SQL): one pass for the counts and the histogram, the patterns
    (capped at ``max_patterns``) when asked; the errors of :func:`membership_statistics`."""
    summary = run(f"select missing, c, cast(count(*) as bigint), cast(sum(n_rows) as bigint), "
                  f"cast(sum(unknown) as bigint) from {per} group by missing, c")
    rows_read = sum(int(r[3]) for r in summary)
    missing = sum(int(r[3]) for r in summary if r[0])
    unknown = sum(int(r[4]) for r in summary)
    _check_rows(run, rows, where, resolve, missing, unknown)
    if rows_read == 0:
        raise InvalidParameterError(name, "has no membership rows: there is nothing to estimate from")
    histogram = {int(c): int(k) for _, c, k, _, _ in sorted(summary, key=lambda r: r[1])}
    observed = None
    if patterns:
        found = run(f"select pattern, cast(count(*) as bigint) from {per} group by pattern limit {max_patterns + 1}")
        if len(found) > max_patterns:
            count = run(f"select cast(count(distinct pattern) as bigint) from {per}")[0][0]
            raise InvalidParameterError(name, f"has {count:,} distinct membership sets, more than "
                                              f"{max_patterns:,}; patterns = true would list them all: use "
                                              f"at_most alone")
        observed = tuple(sorted(((frozenset(int(i) for i in p), int(k)) for p, k in found),
                                key=lambda x: (len(x[0]), sorted(x[0]))))
    return MembershipStatistics(histogram, rows_read, resolve.n, name, observed)


def membership_statistics(table: "MembershipTable | str | os.PathLike[str] | Sequence[str]", databases: DatabaseIds,
                          *, columns: tuple[str, str] | None = None, patterns: bool = False,
                          max_patterns: int = MAX_PATTERNS, header: bool | None = None, query: str | None = None,
                          label: str | None = None, progress: Callable[..., None] | None = None,
                          time_limit: float | None = None) -> MembershipStatistics:
    """The histogram of memberships per individual (and the distinct sets when asked), computed by DuckDB.

    The same statistics, errors and keywords (``columns``, ``patterns``, ``max_patterns``, ``label``) as
    :func:`gce.constraints.spark.membership_statistics`, which runs the same SQL on Spark.

    Parameters
    ----------
    table : MembershipTable, path, glob or list of paths
        The rows: CSV or Parquet files, a glob of them, or with ``query`` a DuckDB or SQLite database file
        (:meth:`MembershipTable.of`); or a :class:`MembershipTable`.
    databases : int, Databases, sequence of str or mapping
        How database ids resolve to indices, as in :func:`gce.constraints.data.estimate_membership`.
    columns : (str, str), optional
        The individual and database columns; default the table's first two.
    header : bool, optional
        CSV only: whether the first row is a header; default guessed.
    query : str, optional
        A SELECT returning (individual, database), run against the database file ``table``.
    label : str, optional
        How errors and statements name the table; default the path given.
    patterns : bool
        Also count the distinct membership sets (at most ``max_patterns``).
    progress : callable, optional
        Called as ``progress(percent, 100, message)`` while the engine scans.
    time_limit : float, optional
        Seconds the engine may take; default the time left of :func:`gce.resources.limits`, else none.
        Ctrl-C interrupts it promptly in any case.

    Raises
    ------
    InvalidParameterError
        Naming the table (and the file of a glob): unreadable, a row without an individual, an unknown or
        missing database (the value is quoted), no rows, or more than ``max_patterns`` distinct sets.
    ResourceLimitError
        Naming the table: the engine was stopped at the time limit, or ran out of its memory limit
        (:func:`gce.resources.engine_memory`).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "m.csv").write_text("customer,branch\\nann,0\\nann,2\\nbob,1\\nann,2\\n")
    >>> stats = membership_statistics(folder / "m.csv", 3, label="m.csv")
    >>> stats.histogram, stats.rows, stats.individuals
    ({1: 1, 2: 1}, 4, 2)
    """
    table = MembershipTable.of(table, columns=columns, header=header, query=query, label=label)
    if not isinstance(patterns, bool):
        raise InvalidParameterError("patterns", f"must be True or False, got {shown(patterns)}")
    if not is_integer(max_patterns) or max_patterns < 1:
        raise InvalidParameterError("max_patterns", f"must be an integer >= 1, got {shown(max_patterns)}")
    seconds = _time_limit(time_limit)
    with resources.own_clock(), _engine(table) as con:  # (closed inside: an alarm would replace the guard's error)

        def work() -> MembershipStatistics:
            resolve = _rows_view(con, table, databases)
            with _Watch(con, progress, f"reading {table.name}"):
                con.execute(f"create temp table per as {per_individual_sql('rows', patterns)}")
            return statistics_from_sql(lambda sql: con.execute(sql).fetchall(), "rows", "per", name=table.name,
                                       where=lambda origin: _where(table, origin), resolve=resolve,
                                       patterns=patterns, max_patterns=max_patterns)

        try:
            return _guarded(con, table, work, seconds)
        except _duckdb().Error as error:
            raise _engine_error(table, error) from None


def _is_sqlite(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC
    except OSError:
        return False


def truncation_key(seed: int, individual: object, index: int) -> str:
    """The documented truncation order: ``md5(f"{seed}:{individual}:{index}")``, hexadecimal (then the index).

    >>> truncation_key(7, "ann", 2)
    'a6deea5ae3a58411bd709d1dbb73a337'
    """
    return hashlib.md5(f"{seed}:{individual}:{index}".encode()).hexdigest()


@dataclass(frozen=True)
class Truncation:
    """What :func:`truncate_membership` wrote."""

    output: str
    m: int
    seed: int
    rows: int
    rows_kept: int
    memberships: int
    memberships_kept: int
    individuals: int

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def truncate_membership(table: "MembershipTable | str | os.PathLike[str] | Sequence[str]", databases: DatabaseIds,
                        m: int, seed: int, output: str, *,
                        progress: Callable[..., None] | None = None, time_limit: float | None = None) -> Truncation:
    """Write the rows to keep so that every individual is in at most ``m`` databases.

    Each individual keeps its ``min(c, m)`` distinct databases first in the order of :func:`truncation_key`
    (uniformly random for a random seed) and every row of those; the output (``.parquet`` or ``.csv``) has
    every column of the table under its own name (a CSV read with ``columns`` as text), so the mechanisms
    run on it as on the input; the rows of an individual's other databases are left out. ``output`` may
    not be one of the table's files. The share of memberships kept is exactly
    :meth:`MembershipStatistics.kept` at ``m``. ``time_limit`` bounds the engine as in
    :func:`membership_statistics` (a file stopped half-written is left as DuckDB left it: the output the
    user asked for, never another file).
    """
    table = MembershipTable.of(table)  # a path or a glob, as membership_statistics takes
    if not is_integer(m) or m < 1:
        raise InvalidParameterError("m", f"must be an integer >= 1, got {shown(m)}")
    if not is_integer(seed) or not 0 <= seed < 2**63:
        raise InvalidParameterError("seed", f"must be an integer in 0..2**63-1, got {shown(seed)}")
    kind = table_format(output)
    if kind is None:
        raise InvalidParameterError("output", f"{shown(output, 200)} must end in .parquet or .csv")
    inputs = [*table.files, *([table.database] if table.database is not None else [])]
    if any(os.path.realpath(output) == os.path.realpath(path) for path in inputs):
        raise InvalidParameterError("output", f"{shown(output, 200)} is a file of the table being truncated; write "
                                              f"the truncation elsewhere (the input is never overwritten)")
    check_path(output, "output", writing=True)  # a named pipe would block the engine, a device swallow the rows
    seconds = _time_limit(time_limit)
    with resources.own_clock(), _engine(table) as con:  # (closed inside, as in membership_statistics)

        def work() -> tuple:
            resolve = _rows_view(con, table, databases, writes=True)
            missing, unknown = con.execute("select count(*) filter (where individual is null), "
                                           "count(*) filter (where idx is null) from rows").fetchone()
            _check_rows(lambda sql: con.execute(sql).fetchall(), "rows", lambda origin: _where(table, origin), resolve,
                        missing, unknown)
            with _Watch(con, progress, f"truncating {table.name}"):
                con.execute(f"""
                    create temp table chosen as
                    select individual, idx from (select distinct individual, idx from rows)
                    qualify row_number() over (partition by individual order by
                        md5({int(seed)}::varchar || ':' || individual::varchar || ':' || idx::varchar), idx)
                        <= {int(m)}
                    """)
                # the (individual, database) values kept, then every row of the table with one of them, all its
                # columns as read: the mechanisms run on the output as they would on the input
                con.execute("create temp table kept_pairs as select distinct r.individual as gce_individual, "
                            "r.database as gce_database from rows r semi join chosen c on "
                            "r.individual = c.individual and r.idx = c.idx")
                sqlite = table.format == "database" and _is_sqlite(table.database)
                source = "sqlite_rows" if sqlite else _source_sql(con, table, resolve, filename=False)[0]
                first, second = _key_columns(con, table, source, "")
                # a CSV without a header row is written without one (the columns as read)
                headless = table.format == "csv" and table.columns is None and not _csv_header(table, resolve)
                options = ("(format parquet)" if kind == "parquet" else
                           f"(format csv, header {str(not headless).lower()})")
                con.execute(f"copy (select s.* from {source} s semi join kept_pairs k on {first} = k.gce_individual "
                            f"and {second} = k.gce_database) to {_literal(output)} {options}")
            counts = con.execute("select (select count(*) from rows), (select count(*) from chosen), "
                                 "(select count(*) from (select distinct individual, idx from rows)), "
                                 "(select count(distinct individual) from rows)").fetchone()
            reader = (f"read_parquet({_literal(output)})" if kind == "parquet" else
                      f"read_csv({_literal(output)}, header = {str(not headless).lower()}, all_varchar = true)")
            kept_rows = con.execute(f"select count(*) from {reader}").fetchone()[0]
            return counts, kept_rows

        try:
            counts, kept_rows = _guarded(con, table, work, seconds)
        except _duckdb().Error as error:
            raise _engine_error(table, error) from None
    rows, kept, pairs, individuals = counts
    return Truncation(output, int(m), int(seed), rows, kept_rows, pairs, kept, individuals)

"""Membership constraints estimated from data (001, Sec. V-A, "General case": the store chain).

When no public fact limits how many databases one person can be in, 001
suggests treating the *number* of databases a person appears in as
non-private and estimating the limit from the data: a store chain counts the
largest number of branches one customer bought from and uses it as the bound
m of an ``at_most`` constraint. The observed membership sets themselves can be
taken as the complete list of allowed sets (a ``patterns`` constraint), which
is tighter and makes a stronger assumption.

Either is an *assumption about people not in the data*, not a public fact:
a future individual may exceed the bound. :class:`MembershipEstimate` carries a
plain statement of it (:attr:`MembershipEstimate.statement`) for reports to
print beside the guarantee.

What must never change: ``at_most.m`` is exactly the largest number of distinct
databases any one individual of the table appears in, and ``patterns`` (when
requested) lists exactly the distinct non-empty membership sets observed.

Examples
--------
>>> rows = [("ann", 0), ("ann", 2), ("bob", 1), ("cyd", 2), ("ann", 2)]
>>> est = estimate_membership(rows, 3, patterns=True, label="sales")
>>> est.at_most, est.individuals
(AtMost(m=2, among=None), 3)
>>> sorted(sorted(p) for p in est.patterns.allowed)
[[0, 2], [1], [2]]
>>> print(est.statement)  # doctest: +NORMALIZE_WHITESPACE
at_most 2 estimated from data: the largest number of databases one of 3 individuals appears in in sales;
a future individual may exceed it. patterns estimated from data: the 3 membership sets observed in sales
are taken as the only allowed ones; an individual with another set is not covered.
"""

from __future__ import annotations

import codecs
import csv
import io
import os
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, Protocol, Union

from ..errors import InvalidParameterError
from ..files.paths import open_regular
from ..validation import is_integer, renamed_keywords, shown
from .base import Constraint, check_n
from .constraint_set import ConstraintSet
from .kinds import AtMost, Patterns

__all__ = ["MAX_TABLE_BYTES", "MAX_PATTERNS", "MembershipEstimate", "estimate_membership", "DatabaseIds", "NamedDatabases"]


class NamedDatabases(Protocol):
    """What is read of a :class:`gce.model.Databases` (a layer above the constraints)."""

    n: int
    names: tuple[str, ...] | None


#: How database ids in a table name database indices: a count n (ids are the
#: indices 0..n-1), a :class:`gce.model.Databases` (its names or indices), a
#: sequence of names (position = index) or an explicit mapping id -> index.
DatabaseIds = Union[int, NamedDatabases, Sequence[str], Mapping[Hashable, int]]

#: How many known database ids an "unknown database" error lists.
_SHOWN_IDS = 5
#: The largest membership table (CSV) read, in bytes (256 MiB); reading stops one byte past it.
MAX_TABLE_BYTES = 256 * 2**20
#: The most distinct membership sets ``patterns=True`` returns, whichever engine reads the table (this
#: module's csv reader or DuckDB, :mod:`gce.constraints.tables`); more is an error (use at_most alone).
MAX_PATTERNS = 10_000
#: Bytes decoded at a time when reading a membership table.
_PIECE = 2**20


@dataclass(frozen=True)
class MembershipEstimate:
    """Membership limits estimated from a membership table.

    Attributes
    ----------
    at_most : AtMost
        ``m`` = the largest number of distinct databases one individual appears in.
    patterns : Patterns or None
        The distinct non-empty membership sets observed (when requested),
        ordered by size, then by their sorted indices.
    individuals : int
        Distinct individuals in the table.
    rows : int
        Membership rows read (duplicates included, header and blank lines not).
    n : int
        Number of databases the ids were resolved against.
    source : str
        Where the table came from (a file path, or a label for an iterable).
    enforced : bool
        The bound holds by construction: the table was truncated to at most ``m`` databases per individual
        (``gce membership --truncate``), and the statement says so instead of "estimated".

    Raises
    ------
    InvalidParameterError
        If the fields are inconsistent (``m`` not in 1..n, no individuals, a
        pattern larger than ``m``).
    """

    at_most: AtMost
    patterns: Patterns | None
    individuals: int
    rows: int
    n: int
    source: str
    enforced: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.at_most, AtMost) or self.at_most.among is not None:
            raise InvalidParameterError("at_most", f"must be an AtMost over all databases, got {shown(self.at_most)}")
        if self.individuals < 1 or self.rows < self.individuals:
            raise InvalidParameterError("individuals", f"need 1 <= individuals <= rows, got {self.individuals}, "
                                                       f"{self.rows}")
        if not 1 <= self.at_most.m <= self.n:
            raise InvalidParameterError("at_most", f"m must lie in 1..{self.n}, got {self.at_most.m}")
        if self.patterns is not None:
            if not isinstance(self.patterns, Patterns):
                raise InvalidParameterError("patterns", f"must be a Patterns constraint, got {shown(self.patterns)}")
            largest = max(len(p) for p in self.patterns.allowed)
            if largest != self.at_most.m:
                raise InvalidParameterError("patterns", f"largest pattern has {largest} databases, "
                                                        f"but at_most is {self.at_most.m}")

    @property
    def constraints(self) -> tuple[Constraint, ...]:
        """The estimated constraints: ``(at_most,)`` or ``(at_most, patterns)``."""
        return (self.at_most,) if self.patterns is None else (self.at_most, self.patterns)

    def constraint_set(self) -> ConstraintSet:
        """The estimated constraints over the ``n`` databases."""
        return ConstraintSet(self.n, self.constraints)

    @property
    def statement(self) -> str:
        """A plain statement that the limits were estimated from data, for reports to print."""
        if self.enforced:
            text = (f"at_most {self.at_most.m} enforced by truncation: {self.source} keeps at most "
                    f"{self.at_most.m} databases for each of its {self.individuals:,} individuals (gce membership "
                    f"--truncate); the mechanisms must read only the rows kept.")
        else:
            text = (f"at_most {self.at_most.m} estimated from data: the largest number of databases one of "
                    f"{self.individuals:,} individuals appears in in {self.source}; a future individual may "
                    f"exceed it.")
        if self.patterns is not None:
            count = len(self.patterns.allowed)
            sets = "set" if count == 1 else "sets"
            text += (f" patterns estimated from data: the {count:,} membership {sets} observed in {self.source} "
                     f"are taken as the only allowed ones; an individual with another set is not covered.")
        return text

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the bound, the counts and the statement."""
        return {
            "at_most": self.at_most.m,
            "patterns": None if self.patterns is None else [sorted(p) for p in self.patterns.allowed],
            "individuals": self.individuals,
            "rows": self.rows,
            "databases": self.n,
            "source": self.source,
            "statement": self.statement,
            **({"enforced": True} if self.enforced else {}),
        }


# ---------------------------------------------------------------------------
# Resolving database ids


class _Resolver:
    """Maps a table's database ids to indices; ``text`` is set for CSV cells (strings)."""

    def __init__(self, databases: DatabaseIds, *, text: bool):
        self.by_id: dict[Hashable, int] = {}
        if hasattr(databases, "n") and hasattr(databases, "names"):  # gce.model.Databases (a layer above)
            self.n = check_n(databases.n, "databases.n")
            self._indices(text)
            for i, name in enumerate(databases.names or ()):
                self.by_id[name] = i
        elif isinstance(databases, Mapping):
            for key, index in databases.items():
                if not is_integer(index) or index < 0:
                    raise InvalidParameterError(f"databases[{shown(key)}]", f"must be an index >= 0, got {shown(index)}")
                self.by_id[str(key) if text else key] = index
            if not self.by_id:
                raise InvalidParameterError("databases", "the mapping of database ids to indices is empty")
            self.n = max(self.by_id.values()) + 1
        elif isinstance(databases, (str, bytes)):
            raise InvalidParameterError("databases", f"must be a count, names or a mapping, got {shown(databases)}")
        elif isinstance(databases, Sequence):
            names = list(databases)
            if not names or len(set(names)) != len(names):
                raise InvalidParameterError("databases", f"need distinct database names, got {shown(names)}")
            self.n = len(names)
            self.by_id = {(str(name) if text else name): i for i, name in enumerate(names)}
        else:
            self.n = check_n(databases, "databases")
            self._indices(text)

    def _indices(self, text: bool) -> None:
        for i in range(self.n):
            self.by_id[str(i) if text else i] = i

    def __call__(self, database: Hashable) -> int | None:
        try:
            return self.by_id.get(database)
        except TypeError:  # unhashable
            return None

    def known(self) -> str:
        ids = list(self.by_id)
        text = ", ".join(shown(i) for i in ids[:_SHOWN_IDS])
        return text + (f", ... ({len(ids)} ids)" if len(ids) > _SHOWN_IDS else "")


# ---------------------------------------------------------------------------
# Reading rows


def _open_table(path: str | os.PathLike[str], source: str) -> BinaryIO:
    """The CSV file opened for binary reading: a regular file of at most :data:`MAX_TABLE_BYTES`.

    Opened by :func:`gce.files.paths.open_regular`: without blocking (a FIFO is refused, not waited on),
    then checked through the open descriptor, so what is checked is what is read.
    """
    try:
        handle = open_regular(path, source, shown="")
    except InvalidParameterError:
        raise
    except OSError as error:
        raise InvalidParameterError(source, f"cannot be read: {error.strerror or error}") from None
    except ValueError:  # a NUL character
        raise InvalidParameterError(source, "cannot be read: a path has no NUL characters") from None
    if os.fstat(handle.fileno()).st_size > MAX_TABLE_BYTES:
        handle.close()
        raise InvalidParameterError(source, f"is larger than {MAX_TABLE_BYTES // 2**20} MiB, the limit for "
                                            f"membership tables")
    return handle


def _pieces(handle: BinaryIO, source: str) -> Iterator[bytes]:
    """The file's bytes in pieces of about :data:`_PIECE` that end at a line end (or the file's end), a
    leading UTF-8 BOM dropped; reading stops past :data:`MAX_TABLE_BYTES` (a file that grows while read)."""
    read, waiting, first = 0, [], True
    while block := handle.read(_PIECE):
        read += len(block)
        if read > MAX_TABLE_BYTES:
            raise InvalidParameterError(source, f"is larger than {MAX_TABLE_BYTES // 2**20} MiB, the limit for "
                                                f"membership tables")
        cut = block.rfind(b"\n") + 1  # a multi-byte UTF-8 character never contains a newline byte
        if not cut:
            waiting.append(block)  # a long line: joined once its end arrives
            continue
        piece = b"".join((*waiting, block[:cut]))
        waiting = [block[cut:]]
        yield piece.removeprefix(codecs.BOM_UTF8) if first else piece
        first = False
    rest = b"".join(waiting)
    if rest:
        yield rest.removeprefix(codecs.BOM_UTF8) if first else rest


def _not_utf8(pieces: Iterator[bytes], source: str) -> InvalidParameterError:
    """The error for the first line that is not UTF-8, found line by line (the slow path, taken only then)."""
    number = 0
    for piece in pieces:
        for line in piece.splitlines(keepends=True):  # \n, \r\n and \r end lines, as in the csv module
            number += 1
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as error:
                return InvalidParameterError(f"{source} line {number}", f"is not UTF-8 text (byte {error.start + 1} "
                                                                        f"of the line)")
    return InvalidParameterError(source, "is not UTF-8 text")  # pragma: no cover - the fast path found one


def _text_lines(handle: BinaryIO, source: str) -> Iterator[str]:
    """The file's lines as text, line ends kept, as ``open(newline="")`` gives them to the csv module.

    A line that is not UTF-8 is named by its number, never shown.
    """
    for piece in _pieces(handle, source):
        try:
            text = piece.decode("utf-8")
        except UnicodeDecodeError:
            handle.seek(0)
            raise _not_utf8(_pieces(handle, source), source) from None
        yield from io.StringIO(text, newline="")


def _csv_rows(path: str | os.PathLike[str], source: str, header: bool | None,
              resolve: _Resolver) -> Iterator[tuple[str, Hashable, str]]:
    """(where, individual, database) for each data row of a CSV file; errors name lines, never their text."""
    with _open_table(path, source) as handle:
        reader = csv.reader(_text_lines(handle, source))
        first = True
        try:
            for row in reader:
                where = f"{source} line {reader.line_num}"
                cells = [cell.strip() for cell in row]
                if not any(cells):
                    continue
                if first:
                    first = False
                    if _is_header(cells, header, resolve):
                        continue
                if len(cells) != 2:
                    raise InvalidParameterError(where, f"expected 2 fields (individual, database), got {len(cells)}")
                yield where, cells[0], cells[1]
        except csv.Error as error:
            raise InvalidParameterError(f"{source} line {reader.line_num}", f"malformed CSV: {error}") from None


def _is_header(cells: list[str], header: bool | None, resolve: _Resolver) -> bool:
    """Whether the first non-blank row is a header.

    ``header=None`` (auto): it is one when its database field is neither a
    known database id nor an integer (an unknown index is a data error, not a
    header); pass ``header=False`` to read every row as data.
    """
    if header is not None:
        return header
    if len(cells) != 2 or resolve(cells[1]) is not None:
        return False
    return not cells[1].lstrip("+-").isdigit()


def _iterable_rows(rows: Iterable[object], source: str) -> Iterator[tuple[str, Hashable, Hashable]]:
    for position, row in enumerate(rows):
        where = f"{source}[{position}]"
        pair = tuple(row) if isinstance(row, Iterable) and not isinstance(row, (str, bytes)) else ()
        if len(pair) != 2:
            raise InvalidParameterError(where, f"must be a pair (individual, database), got {shown(row)}")
        yield where, pair[0], pair[1]


# ---------------------------------------------------------------------------
# The estimate


@renamed_keywords(source="label")
def estimate_membership(
    table: str | os.PathLike[str] | Iterable[tuple[Hashable, Hashable]],
    databases: DatabaseIds,
    *,
    patterns: bool = False,
    header: bool | None = None,
    label: str | None = None,
    max_patterns: int = MAX_PATTERNS,
) -> MembershipEstimate:
    """Estimate membership limits from a table of (individual, database) rows.

    Parameters
    ----------
    table : path or iterable of pairs
        A CSV file (two columns: individual id, database id; an optional
        header row; blank lines skipped; read with the ``csv`` module) or any
        iterable of ``(individual, database)`` pairs. Repeated rows count once.
    databases : int, Databases, sequence of str or mapping
        How database ids resolve to indices: a count ``n`` (ids are the indices
        0..n-1, written as integers in a CSV), a :class:`gce.model.Databases`
        (its names, else its indices), a sequence of names (position = index)
        or a mapping id -> index (CSV cells are matched against ``str(id)``).
    patterns : bool
        Also return the observed membership sets as a :class:`Patterns`
        constraint (the complete list of allowed non-empty sets).
    header : bool, optional
        Whether a CSV's first non-blank row is a header. ``None`` (default)
        takes it for one when its database field is neither a known database
        id nor an integer; pass ``False`` to read every row as data. Ignored
        for iterables.
    label : str, optional
        How errors and the statement name the table; default the file path, or
        ``"rows"`` for an iterable (as ``label`` of :func:`gce.constraints.tables.membership_statistics`
        and of the Spark one; ``source=``, its former name, still works and warns).
    max_patterns : int
        With ``patterns``, the most distinct sets accepted (:data:`MAX_PATTERNS`, as for tables read by
        DuckDB); more is an error naming the table.

    Returns
    -------
    MembershipEstimate

    Raises
    ------
    InvalidParameterError
        Naming the row: ``"members.csv line 17: field 2 (database): not a
        known database id ..."`` (CSV; physical line numbers, header included;
        the file's content is never quoted) or ``"rows[16]: unknown database
        'B9' ..."`` (iterable); on a file that is unreadable, not a regular
        file, larger than :data:`MAX_TABLE_BYTES` or not UTF-8 (a leading BOM
        is skipped), on a table without rows, with more than ``max_patterns``
        distinct sets (``patterns``), or on an option of the wrong type.

    References
    ----------
    001, Sec. V-A, "General case" (the store chain: the maximal number of
    branches one customer bought from, estimated from the data).
    """
    _check_options(patterns, header, label)
    if not is_integer(max_patterns) or max_patterns < 1:
        raise InvalidParameterError("max_patterns", f"must be an integer >= 1, got {shown(max_patterns)}")
    if isinstance(table, (str, os.PathLike)):
        label = os.fspath(table) if label is None else label
        resolve = _Resolver(databases, text=True)
        rows: Iterable[tuple[str, Hashable, Hashable]] = _csv_rows(table, label, header, resolve)
    elif isinstance(table, Iterable):
        label = "rows" if label is None else label
        resolve = _Resolver(databases, text=False)
        rows = _iterable_rows(table, label)
    else:
        raise InvalidParameterError("table", f"must be a CSV path or an iterable of pairs, got {shown(table)}")
    members, count = _memberships(rows, resolve, quote=not isinstance(table, (str, os.PathLike)))
    if not members:
        raise InvalidParameterError(label, "has no membership rows: there is nothing to estimate from")

    m = max(len(s) for s in members.values())
    observed = None
    if patterns:
        distinct = {frozenset(s) for s in members.values()}
        if len(distinct) > max_patterns:
            raise InvalidParameterError(label, f"has {len(distinct):,} distinct membership sets, more than "
                                               f"{max_patterns:,}; patterns = true would list them all: use "
                                               f"at_most alone")
        observed = Patterns(tuple(sorted(distinct, key=lambda p: (len(p), sorted(p)))))
    return MembershipEstimate(AtMost(m), observed, individuals=len(members), rows=count, n=resolve.n,
                              source=label)


def _check_options(patterns: object, header: object, label: object) -> None:
    if not isinstance(patterns, bool):
        raise InvalidParameterError("patterns", f"must be True or False, got {shown(patterns)}")
    if header is not None and not isinstance(header, bool):
        raise InvalidParameterError("header", f"must be True, False or None, got {shown(header)}")
    if label is not None and not isinstance(label, str):
        raise InvalidParameterError("label", f"must be a str or None, got {shown(label)}")


def _memberships(rows: Iterable[tuple[str, Hashable, Hashable]], resolve: _Resolver,
                 quote: bool) -> tuple[dict[Hashable, set[int]], int]:
    """Each individual's set of database indices, and the rows read.

    ``quote``: errors may quote the offending value (rows given in Python);
    a file's content is never quoted, only its line and field.
    """
    members: dict[Hashable, set[int]] = {}
    count = 0
    for where, individual, database in rows:
        index = resolve(database)
        if index is None:
            what = f"unknown database {shown(database)}" if quote else "field 2 (database): not a known database id"
            raise InvalidParameterError(where, f"{what} (known ids: {resolve.known()})")
        try:
            if individual is None or individual == "":
                raise InvalidParameterError(where, "the individual id is empty" if quote else
                                            "field 1 (individual): the individual id is empty")
            members.setdefault(individual, set()).add(index)
        except TypeError:
            raise InvalidParameterError(where, f"the individual id {shown(individual)} is not hashable") from None
        count += 1
    return members, count

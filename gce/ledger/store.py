"""Where a ledger lives: an SQLite file (standard library, no server), or a PostgreSQL database.

The :class:`Store` interface keeps the SQL in one dialect with ``?`` placeholders and the
transaction in three calls, so that the server-backed store (PostgreSQL, for analysts on several
machines: :mod:`gce.ledger.postgres`) is one subclass. This module is the base and the server-backed
stores are plug-ins: :data:`BACKENDS` maps a URL scheme to the dotted path of its :class:`Store`
subclass and what to install for it, and :func:`open_store` imports that path on first use; this
module never imports a plug-in (which imports this one), so there is no import cycle.

Schema (version :data:`SCHEMA_VERSION`, the same on both stores; ``BYTEA`` for ``BLOB`` on PostgreSQL)::

    gce_meta(key TEXT PRIMARY KEY, value TEXT)        -- format = "gce-ledger", schema_version, scenario
                                                      -- (databases, constraints), filter, budget, created,
                                                      -- genesis and head (the hash chain's anchors)
    gce_entries(seq PRIMARY KEY, at, analyst, databases, mechanism, repeat, admitted, weights, reach, answer,
                hash)                                 -- every spend asked for, admitted or refused, with
                                                      -- the answer gce gave (JSON), chained by its hash
    gce_checkpoints(seq PRIMARY KEY, sums BLOB, hash) -- per-database sums after entry seq (float64)

The hashes make the ledger tamper-evident (:mod:`gce.ledger.chain`). Schema 1 (before the chain) is refused
with a message saying so.

A new SQLite ledger is made whole before it exists: its tables, meta rows and first entries are written to a
hidden file beside it (``.NAME.XXXXXXXX.creating``), which is then linked to its name in one step (a hard link,
which fails rather than replace a file that appeared meanwhile) and its temporary name removed
(:meth:`Store.publish`). An error or a Ctrl-C before that step removes the hidden file
(:meth:`Store.discard`): the ledger's path never holds a half-made ledger; only a process killed outright
can leave the hidden file behind. On PostgreSQL the tables and meta rows are one transaction.

On SQLite, writes happen in one transaction that holds the ledger's write lock from the
first read to the commit (SQLite ``BEGIN IMMEDIATE``), so a check and the record it leads to cannot
interleave with another process's. SQLite runs in write-ahead-log mode with
``synchronous = FULL``: a spend that returned is on disk, and a process killed
at any point leaves either the whole entry or none of it.

A file that is not an SQLite database, an SQLite database without gce's
tables, a ledger written by a newer gce, and a truncated file are told apart
with a one-line :class:`LedgerError` naming the file (the PostgreSQL store tells apart a missing
database, a database without gce's tables, a foreign ``gce_meta`` and a newer schema the same way).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import secrets
import sqlite3
import struct
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ..errors import GCEError, InvalidParameterError
from ..files.paths import open_regular
from ..interrupts import committing, deferred
from ..validation import shown

__all__ = ["LedgerError", "Store", "SQLiteStore", "Backend", "BACKENDS", "open_store", "FORMAT", "SCHEMA_VERSION"]

#: The value of ``format`` in ``gce_meta``: what tells a gce ledger from any other database.
FORMAT = "gce-ledger"
#: The schema this gce writes and reads (2: entries and checkpoints carry a hash chain).
SCHEMA_VERSION = 2
#: Seconds a writer waits for another's lock before giving up with an error.
LOCK_TIMEOUT = 60.0

_SQLITE_MAGIC = b"SQLite format 3\x00"


class LedgerError(GCEError):
    """A ledger cannot be created, opened or written (missing, foreign, damaged, locked)."""


def _tables(blob: str) -> tuple[str, ...]:
    return (
        "CREATE TABLE gce_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "CREATE TABLE gce_entries (seq BIGINT PRIMARY KEY, at TEXT NOT NULL, analyst TEXT NOT NULL, "
        "databases TEXT NOT NULL, mechanism TEXT NOT NULL, repeat BIGINT NOT NULL, admitted INTEGER NOT NULL, "
        "weights TEXT NOT NULL, reach DOUBLE PRECISION NOT NULL, answer TEXT NOT NULL, hash TEXT NOT NULL)",
        f"CREATE TABLE gce_checkpoints (seq BIGINT PRIMARY KEY, sums {blob} NOT NULL, hash TEXT NOT NULL)",
    )


class Store:
    """A connection to one ledger; subclasses speak one database's dialect."""

    label: str
    placeholder = "?"
    blob = "BLOB"

    def sql(self, text: str) -> str:
        return text if self.placeholder == "?" else text.replace("?", self.placeholder)

    def rows(self, text: str, params: Sequence[Any] = ()) -> list[tuple]:
        return self._run(lambda: self._cursor_rows(self.sql(text), params))

    def run(self, text: str, params: Sequence[Any] = ()) -> None:
        self._run(lambda: self._execute(self.sql(text), params))

    def _run(self, action):
        raise NotImplementedError

    def _cursor_rows(self, text: str, params: Sequence[Any]) -> list[tuple]:
        raise NotImplementedError

    def _execute(self, text: str, params: Sequence[Any]) -> None:
        raise NotImplementedError

    @contextlib.contextmanager
    def transaction(self, write: bool) -> Iterator[None]:
        """One transaction; ``write`` takes the ledger's write lock first. Rolled back on any exception.

        On the command line a Ctrl-C during the ``COMMIT`` waits for it (:func:`gce.interrupts.committing`):
        the interruption comes before the commit (rolled back) or after it, never unknown to the caller."""
        self._begin(write)
        try:
            yield
            with committing() if write else deferred():
                self._commit()
        except BaseException:  # a failed COMMIT too: the transaction must not stay open
            with contextlib.suppress(Exception):
                self._rollback()
            raise

    def _begin(self, write: bool) -> None:
        raise NotImplementedError

    def _commit(self) -> None:
        raise NotImplementedError

    def _rollback(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    # -- schema -----------------------------------------------------------

    def create(self, meta: dict[str, str]) -> None:
        """Create the tables and the meta rows (the store must be empty)."""
        with self.transaction(write=True):
            if self._has_meta():
                raise LedgerError(f"{self.label}: a ledger already exists here")
            for statement in _tables(self.blob):
                self.run(statement)
            for key, value in {"format": FORMAT, "schema_version": str(SCHEMA_VERSION), **meta}.items():
                self.run("INSERT INTO gce_meta (key, value) VALUES (?, ?)", (key, value))

    def _has_meta(self) -> bool:
        raise NotImplementedError

    #: Whether a store made with ``create=True`` appears at its location only at :meth:`publish` (and
    #: :meth:`discard` leaves nothing there): an SQLite file; a server's tables appear at :meth:`create`.
    atomic_create = False

    def publish(self) -> None:
        """A new ledger, complete (its tables, meta rows and first entries), put in its place; a no-op
        where :meth:`create` already did (a server's transaction)."""

    def discard(self) -> None:
        """A new ledger abandoned before :meth:`publish` (an error, a Ctrl-C): closed, and where the store
        makes it aside (:attr:`atomic_create`) nothing is left."""
        self.close()

    def meta(self) -> dict[str, str]:
        """The meta rows, checked: a gce ledger of a schema this gce reads."""
        if not self._has_meta():
            raise LedgerError(f"{self.label}: not a gce ledger (a database without gce's tables)")
        try:
            meta = dict(self.rows("SELECT key, value FROM gce_meta"))
        except LedgerError:
            raise
        if meta.get("format") != FORMAT:
            raise LedgerError(f"{self.label}: not a gce ledger (format {shown(meta.get('format'))})")
        version = meta.get("schema_version", "")
        if not (version.isascii() and version.isdigit()) or int(version) > SCHEMA_VERSION:
            raise LedgerError(f"{self.label}: written by a newer gce (ledger schema {version}, this gce reads "
                              f"schema {SCHEMA_VERSION})")
        if int(version) < SCHEMA_VERSION:
            raise LedgerError(f"{self.label}: written by an older gce (ledger schema {version}, without the hash "
                              f"chain that this gce checks); open it with that gce, or start a new ledger")
        return meta


class SQLiteStore(Store):
    """A ledger in an SQLite file (write-ahead log, ``synchronous = FULL``).

    With ``create``, the file is written aside (:attr:`aside`, a hidden name in the same folder) until
    :meth:`publish` links it to ``path`` (the module's docstring)."""

    atomic_create = True

    def __init__(self, path: str, *, create: bool):
        self.label = path
        self.path = path
        self.aside: str | None = None
        if create:
            if os.path.lexists(path):
                raise LedgerError(f"{path}: already exists (a ledger is never overwritten; remove it first)")
            folder, name = os.path.split(path)
            self.aside = os.path.join(folder, f".{name}.{secrets.token_hex(4)}.creating")
        else:
            self._check_file(path)
            self._check_schema_read_only(path)
        try:
            self._connect(self.aside or path, wal=create)
        except LedgerError:
            self.discard()
            raise

    def _connect(self, path: str, *, wal: bool) -> None:
        try:
            self.connection = sqlite3.connect(path, isolation_level=None, timeout=LOCK_TIMEOUT,
                                              check_same_thread=False)
            if wal:
                self.connection.execute("PRAGMA journal_mode = WAL")
            self.connection.execute("PRAGMA synchronous = FULL")
        except sqlite3.Error as error:
            raise self._damaged(error) from None

    def publish(self) -> None:
        """The file written aside, its log checkpointed into it, linked to the ledger's path in one step (a
        file that appeared there meanwhile is never replaced: :class:`LedgerError`), then reopened there."""
        if self.aside is None:
            return
        aside = self.aside
        self._run(lambda: self.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)"))
        self.close()  # the last connection: SQLite removes the (empty) log and its index
        with deferred():  # linked and its temporary name removed, or neither
            try:
                os.link(aside, self.path)
            except FileExistsError:
                self.discard()
                raise LedgerError(f"{self.path}: already exists (a ledger is never overwritten; it appeared "
                                  f"while this one was made)") from None
            except OSError:  # a file system without hard links: the name checked, then a rename
                if os.path.lexists(self.path):
                    self.discard()
                    raise LedgerError(f"{self.path}: already exists (a ledger is never overwritten; it appeared "
                                      f"while this one was made)") from None
                os.replace(aside, self.path)
            self.aside = None
            _remove(aside)
        _sync_folder(self.path)
        self._connect(self.path, wal=False)

    def discard(self) -> None:
        self.close()
        if self.aside is not None:
            for suffix in ("", "-wal", "-shm", "-journal"):
                _remove(self.aside + suffix)
            self.aside = None

    def _check_schema_read_only(self, path: str) -> None:
        """The meta rows checked (:meth:`Store.meta`) on a read-only connection, before anything may write:
        opening a file that is not a gce ledger leaves it byte for byte as it was."""
        try:
            self.connection = sqlite3.connect(f"file:{urllib.parse.quote(os.path.abspath(path))}?mode=ro",
                                              uri=True, isolation_level=None, timeout=LOCK_TIMEOUT)
        except sqlite3.Error as error:
            raise self._damaged(error) from None
        try:
            self.meta()
        finally:
            self.close()

    @staticmethod
    def _check_file(path: str) -> None:
        """Refuse what is not an SQLite file, or is shorter than its own header says (truncated); a folder,
        a device or a named pipe is refused before it is opened (:func:`gce.files.paths.open_regular`)."""
        try:
            with open_regular(path, path, shown="", error=lambda field, detail: LedgerError(f"{field}: {detail}")
                              ) as handle:
                size = os.fstat(handle.fileno()).st_size
                header = handle.read(100)
        except FileNotFoundError:
            raise LedgerError(f"{path}: no ledger here (create one with gce ledger init)") from None
        except OSError as error:
            raise LedgerError(f"{path}: cannot read: {error.strerror or error}") from None
        except ValueError:  # a NUL character
            raise LedgerError(f"{shown(path, 200)}: cannot read: a path has no NUL characters") from None
        if size == 0:
            raise LedgerError(f"{path}: is empty, not a gce ledger")
        if not header.startswith(_SQLITE_MAGIC):
            if _SQLITE_MAGIC.startswith(header[:len(_SQLITE_MAGIC)]):
                raise LedgerError(f"{path}: truncated ({size} bytes: not even the SQLite header)")
            raise LedgerError(f"{path}: not a gce ledger (not an SQLite database)")
        if len(header) < 100:
            raise LedgerError(f"{path}: truncated ({size} bytes: not even the SQLite header)")
        page_size = struct.unpack(">H", header[16:18])[0]
        page_size = 65536 if page_size == 1 else page_size
        pages, counter, valid_for = (struct.unpack(">I", header[i:i + 4])[0] for i in (28, 24, 92))
        wal = path + "-wal"
        wal_pending = os.path.exists(wal) and os.path.getsize(wal) > 0
        if counter == valid_for and not wal_pending and size < pages * page_size:
            raise LedgerError(f"{path}: truncated ({size} bytes; its header says {pages * page_size})")

    def _damaged(self, error: Exception) -> LedgerError:
        text = str(error)
        if "not a database" in text:
            return LedgerError(f"{self.label}: not a gce ledger (not an SQLite database)")
        if "locked" in text or "busy" in text:
            return LedgerError(f"{self.label}: locked by another process for more than {LOCK_TIMEOUT:g} s")
        return LedgerError(f"{self.label}: damaged ({text})")

    def _run(self, action):
        try:
            return action()
        except sqlite3.Error as error:
            raise self._damaged(error) from None

    def _cursor_rows(self, text: str, params: Sequence[Any]) -> list[tuple]:
        return self.connection.execute(text, tuple(params)).fetchall()

    def _execute(self, text: str, params: Sequence[Any]) -> None:
        self.connection.execute(text, tuple(params))

    def _begin(self, write: bool) -> None:
        self._run(lambda: self.connection.execute("BEGIN IMMEDIATE" if write else "BEGIN"))

    def _commit(self) -> None:
        self._run(lambda: self.connection.execute("COMMIT"))

    def _rollback(self) -> None:
        self.connection.execute("ROLLBACK")

    def _has_meta(self) -> bool:
        return bool(self.rows("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'gce_meta'"))

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error, AttributeError):
            self.connection.close()


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _sync_folder(path: str) -> None:
    """The folder holding ``path`` flushed to disk (its new name survives a power cut), where the system
    allows it."""
    try:
        handle = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)


@dataclass(frozen=True)
class Backend:
    """A ledger back-end opened by URL scheme: a :class:`Store` subclass, imported on first use.

    Parameters
    ----------
    store : str
        The dotted path of the class, ``package.module.Class``; its ``__init__`` takes the URL and
        ``create`` (keyword), as :class:`SQLiteStore` takes a path.
    install : str
        What to run when the module cannot be imported (an optional extra), for the error message.
    """

    store: str
    install: str

    def __post_init__(self) -> None:
        module, _, name = self.store.rpartition(".")
        if not module or not name.isidentifier():
            raise InvalidParameterError("store", f"must be a dotted path module.Class, got {shown(self.store)}")

    def load(self) -> type[Store]:
        """The class, its module imported now; a module that cannot be imported is a :class:`LedgerError`
        saying what to install."""
        module, _, name = self.store.rpartition(".")
        try:
            found = getattr(importlib.import_module(module), name)
        except ImportError as error:
            raise LedgerError(f"ledger: {self.store} cannot be imported ({error}): {self.install}") from None
        if not (isinstance(found, type) and issubclass(found, Store)):
            raise LedgerError(f"ledger: {self.store} is not a ledger store (a gce.ledger.store.Store subclass)")
        return found


_POSTGRES = Backend("gce.ledger.postgres.PostgresStore", "pip install 'gce[postgres]'")
#: Ledger back-ends by URL scheme (``scheme://...``); anything without a scheme is an SQLite file path.
#: The classes are named, not imported (fsspec's ``known_implementations``, SQLAlchemy's dialect loader).
BACKENDS: Mapping[str, Backend] = MappingProxyType({"postgresql": _POSTGRES, "postgres": _POSTGRES})

#: A URL's scheme (RFC 3986) and its ``://``.
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


def is_url(location: str) -> bool:
    """Whether ``location`` names a back-end in :data:`BACKENDS` by its URL scheme."""
    match = _SCHEME.match(location)
    return match is not None and match.group(1) in BACKENDS


def open_store(location: object, *, create: bool) -> Store:
    """The store at ``location``: a URL whose scheme is in :data:`BACKENDS` (``postgresql://``:
    :class:`gce.ledger.postgres.PostgresStore`, the ``gce[postgres]`` extra) or an SQLite file path.

    Raises
    ------
    LedgerError
        ``location`` is not a non-empty path or string, or is a URL of a scheme no back-end serves
        (rather than a file of that name), or the store refuses it (missing, foreign, locked, ...).
    """
    if isinstance(location, os.PathLike):
        location = os.fspath(location)
    if not isinstance(location, str) or not location:
        raise LedgerError(f"ledger: must be a file path or a postgresql:// URL, got {shown(location, 200)}")
    match = _SCHEME.match(location)
    if match is not None:
        backend = BACKENDS.get(match.group(1))
        if backend is None:
            known = ", ".join(f"{scheme}://" for scheme in sorted(BACKENDS))
            raise LedgerError(f"ledger: no ledger back-end for {match.group(1)}:// URLs (known: {known}; "
                              f"or an SQLite file path)")
        return backend.load()(location, create=create)
    return SQLiteStore(location, create=create)

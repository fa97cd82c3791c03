"""A ledger on a PostgreSQL server, for a curator whose analysts spend from several machines.

The optional extra ``gce[postgres]`` (psycopg 3) is needed; the ledger is named by a libpq URL,
``postgresql://user[:password]@host[:port]/database`` (query parameters such as ``sslmode`` or
``options=-csearch_path%3Dschema`` as libpq reads them). The schema, the format marker and the
schema version are :mod:`gce.ledger.store`'s, with ``BYTEA`` for the checkpoints; a database holds
one ledger (per schema on its search path). This module is a plug-in of :mod:`gce.ledger.store`: it
subclasses :class:`~gce.ledger.store.Store`, and the store's table of back-ends
(:data:`~gce.ledger.store.BACKENDS`) names it by dotted path for the ``postgresql://`` and
``postgres://`` schemes, so the base never imports it.

Concurrency: a writing transaction (check and record, create) runs at READ COMMITTED and takes a
transaction-scoped advisory lock on the ledger (``pg_advisory_xact_lock``) before its first read, so
writers on any number of machines are serialised exactly as SQLite's ``BEGIN IMMEDIATE`` serialises
processes: every statement after the lock sees every spend committed before it, the check and the
record it leads to cannot interleave with another writer's, and no retry is ever needed. Readers
(``check``, ``status``) take one consistent snapshot (REPEATABLE READ, READ ONLY) and never wait.
The lock is released when the transaction ends: a client killed mid-spend leaves its transaction
aborted by the server (no half entry, the lock free); ``idle_in_transaction_session_timeout`` frees
it from a client that hangs. Commits are durable (``synchronous_commit`` raised to ``on`` when a
server runs with it off).

``create`` makes the database when it does not exist and the role may (``CREATE DATABASE``), as the
SQLite store makes its file; opening a missing database, a database without gce's tables, a foreign
``gce_meta``, a newer schema or an unreachable server each give a one-line :class:`LedgerError` naming
the URL (its password masked).
"""

from __future__ import annotations

import contextlib
import re
import urllib.parse
from collections.abc import Sequence
from typing import Any

from .store import LOCK_TIMEOUT, LedgerError, Store

__all__ = ["PostgresStore", "masked_url"]

#: Seconds to wait for the server when connecting.
CONNECT_TIMEOUT = 10
#: Seconds a client may sit idle inside a transaction before the server ends it (freeing the ledger's lock from
#: a client that hangs). A spend holds its transaction while it decides, which may search for up to a few time
#: limits (``--time-limit``): this is well above them.
IDLE_IN_TRANSACTION_TIMEOUT = 600.0
#: The advisory lock of a ledger: a 64-bit hash of this text and the schema its tables live in.
_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('gce-ledger ' || coalesce(current_schema(), ''), 0))"
#: SQLSTATE codes told apart.
_LOCK_NOT_AVAILABLE = "55P03"
#: What a CREATE DATABASE racing another one for the same name meets: the name taken, or its catalog row.
_DATABASE_TAKEN = ("42P04", "23505")


def _psycopg():
    try:
        import psycopg
    except ImportError:
        raise LedgerError("ledger: a PostgreSQL ledger needs psycopg 3: pip install 'gce[postgres]'") from None
    return psycopg


def masked_url(url: str) -> str:
    """``url`` with its password (in the user part or a ``password=`` parameter) replaced by ``***``."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return url.split("@")[-1] if "@" in url else url
    netloc = parts.netloc
    if "@" in netloc:
        user, host = netloc.rsplit("@", 1)
        if ":" in user:
            netloc = f"{user.split(':', 1)[0]}:***@{host}"
    query = re.sub(r"(?i)(^|&)(password=)[^&]*", r"\1\2***", parts.query)
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


class PostgresStore(Store):
    """A ledger in a PostgreSQL database (psycopg 3, autocommit connection, explicit transactions)."""

    placeholder = "%s"
    blob = "BYTEA"

    def __init__(self, url: str, *, create: bool):
        self.psycopg = _psycopg()
        self.url = url
        self.label = masked_url(url)
        try:
            self.connection = self._connect(url)
        except self.psycopg.OperationalError as error:
            if not _missing_database(error):
                raise LedgerError(f"{self.label}: cannot connect ({_one_line(error)})") from None
            if not create:
                raise LedgerError(f"{self.label}: no ledger here (the database does not exist; create one with "
                                  f"gce ledger init)") from None
            self._create_database()
            try:
                self.connection = self._connect(url)
            except self.psycopg.Error as again:
                raise LedgerError(f"{self.label}: cannot connect ({_one_line(again)})") from None
        except self.psycopg.Error as error:
            raise LedgerError(f"{self.label}: cannot connect ({_one_line(error)})") from None
        try:
            self._execute(f"SET lock_timeout = {int(LOCK_TIMEOUT * 1000)}; SET idle_in_transaction_session_timeout = "
                          f"{int(IDLE_IN_TRANSACTION_TIMEOUT * 1000)}", ())
            if self._cursor_rows("SHOW synchronous_commit", ())[0][0] in ("off", "local"):
                self._execute("SET synchronous_commit = on", ())
        except self.psycopg.Error as error:
            self.close()
            raise self._damaged(error) from None

    def _connect(self, url: str):
        return self.psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT)

    def _create_database(self) -> None:
        """``CREATE DATABASE`` for ``create`` (from the server's maintenance database ``postgres``)."""
        from psycopg import conninfo, sql

        name = conninfo.conninfo_to_dict(self.url).get("dbname")
        if not name:
            raise LedgerError(f"{self.label}: no database named in the URL")
        try:
            with self.psycopg.connect(conninfo.make_conninfo(self.url, dbname="postgres"), autocommit=True,
                                      connect_timeout=CONNECT_TIMEOUT) as admin:
                admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(str(name))))
        except self.psycopg.Error as error:
            if getattr(error, "sqlstate", None) in _DATABASE_TAKEN:
                return  # created meanwhile by another process: the ledger check follows in `create`
            raise LedgerError(f"{self.label}: the database does not exist and cannot be created "
                              f"({_one_line(error)}); create it first (createdb)") from None

    def _damaged(self, error: Exception) -> LedgerError:
        state = getattr(error, "sqlstate", None)
        if state == _LOCK_NOT_AVAILABLE:
            return LedgerError(f"{self.label}: locked by another process for more than {LOCK_TIMEOUT:g} s")
        if isinstance(error, self.psycopg.OperationalError) and state is None:
            return LedgerError(f"{self.label}: connection lost ({_one_line(error)})")
        return LedgerError(f"{self.label}: {_one_line(error)}")

    def _run(self, action):
        try:
            return action()
        except self.psycopg.Error as error:
            raise self._damaged(error) from None

    #: Inside a transaction, the statements not sent yet (each with its parameters): the transaction's start
    #: (BEGIN, the lock) and its writes travel with the next read or with the COMMIT, in one round trip
    #: (libpq's pipeline mode), so a spend costs two round trips: begin, lock and read; write and commit.
    _pending: list[tuple[str, tuple | None]] | None = None
    #: Whether the open transaction's BEGIN has reached the server (a ROLLBACK is then owed).
    _started = False

    def _send(self, last: tuple[str, tuple | None], rows: bool) -> list[tuple]:
        """The pending statements, then ``last`` (its rows returned if ``rows``), in one round trip. An error
        in any of them is raised here (the statements after it are skipped by the server)."""
        statements = [*(self._pending or ()), last]
        self._pending = []
        self._started = True
        if len(statements) == 1:
            cursor = self.connection.execute(*statements[0])
        else:
            with self.connection.pipeline():
                for statement in statements:
                    cursor = self.connection.execute(*statement)
        return cursor.fetchall() if rows else []

    def _cursor_rows(self, text: str, params: Sequence[Any]) -> list[tuple]:
        if self._pending is not None:
            return self._send((text, tuple(params) or None), rows=True)
        return self.connection.execute(text, tuple(params) or None).fetchall()

    def _execute(self, text: str, params: Sequence[Any]) -> None:
        if self._pending is not None:
            self._pending.append((text, tuple(params) or None))
        else:
            self.connection.execute(text, tuple(params) or None)

    def _begin(self, write: bool) -> None:
        # A writer's first statement after BEGIN is the lock: every read after it sees every committed spend.
        self._started = False
        self._pending = ([("BEGIN ISOLATION LEVEL READ COMMITTED", None), (_LOCK, None)] if write
                         else [("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", None)])

    def _commit(self) -> None:
        try:
            self._run(lambda: self._send(("COMMIT", None), rows=False))
        finally:
            self._pending = None

    def _rollback(self) -> None:
        started, self._pending, self._started = self._started, None, False
        if started:
            self.connection.execute("ROLLBACK")

    def _has_meta(self) -> bool:
        return bool(self.rows("SELECT to_regclass('gce_meta') IS NOT NULL")[0][0])

    def meta(self) -> dict[str, str]:
        """The meta rows, checked (:meth:`Store.meta`), and gce's other tables present."""
        meta = super().meta()
        missing = [table for table in ("gce_entries", "gce_checkpoints")
                   if not self.rows(f"SELECT to_regclass('{table}') IS NOT NULL")[0][0]]
        if missing:
            raise LedgerError(f"{self.label}: damaged (table {', '.join(missing)} missing)")
        return meta

    def close(self) -> None:
        connection = getattr(self, "connection", None)
        if connection is not None:
            with contextlib.suppress(Exception):
                connection.close()


def _missing_database(error: BaseException) -> bool:
    return re.search(r'database ".*" does not exist', str(error)) is not None

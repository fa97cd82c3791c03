"""A ledger edited behind gce's back is found out, wherever the edit is, and admits nothing until repaired.

Each test records a ledger (its scenario's spend, then ten spends, a checkpoint every four entries), edits
its rows with the database's own client, as a person with a SQL shell would, and checks that ``status``,
``check``, ``spend`` and ``verify`` (in Python and on the command line) all name the damaged entry, that the
spend writes nothing, and that ``truncate`` to the last good entry gives an intact ledger again. The same
edits run on SQLite (default tier) and on a PostgreSQL server (slow tier: tests/test_ledger_postgres.py
starts it).
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import struct

import numpy as np
import pytest

import gce
from gce.cli import main
from gce.ledger import Accountant, DamagedLedgerError, LedgerError
from gce.ledger import accountant as accountant_module
from test_ledger_postgres import folder, postgres_server, server  # noqa: F401 (fixtures)

N = 5
SPENDS = 10
ENTRIES = SPENDS + 1
CHECKPOINT_EVERY = 4  # checkpoints after entries 4 and 8 (the one before the latest is kept)


class Raw:
    """The ledger's own database, reached without gce: SQL with ``?`` placeholders on either store."""

    def __init__(self, kind: str, location: str, server=None):
        self.kind, self.location, self.server = kind, location, server

    def __call__(self, statement: str, params: tuple = ()) -> list[tuple]:
        if self.kind == "sqlite":
            with sqlite3.connect(self.location) as connection:
                return connection.execute(statement, params).fetchall()
        with self.server.connect(self.location.rsplit("/", 1)[1]) as connection:
            cursor = connection.execute(statement.replace("?", "%s"), params or None)
            return cursor.fetchall() if cursor.description else []

    def entries(self) -> int:
        return self("SELECT COUNT(*) FROM gce_entries")[0][0]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.slow)])
def ledger(request, tmp_path, monkeypatch) -> Raw:
    """A recorded ledger: 1 scenario entry and 10 spends (admitted and refused), checkpoint after entry 8."""
    monkeypatch.setattr(accountant_module, "CHECKPOINT_EVERY", CHECKPOINT_EVERY)
    if request.param == "sqlite":
        raw = Raw("sqlite", str(tmp_path / "ledger.sqlite"))
    else:
        pg = request.getfixturevalue("server")
        raw = Raw("postgres", request.getfixturevalue("folder") / "ledger", pg)
    scenario = gce.Scenario(N, [gce.Invocation(0, gce.PureDP(0.1))], gce.ConstraintSet(N, [gce.AtMost(2)]))
    with Accountant.create(raw.location, scenario, budget_epsilon=1.0, budget_delta=1e-6) as book:
        for i in range(SPENDS):
            book.spend([i % N, (i + 2) % N], gce.ApproxDP(0.05 + 0.1 * (i % 3), 1e-9), analyst=f"a{i}")
        assert book.verify().entries == ENTRIES
    assert raw("SELECT seq FROM gce_checkpoints ORDER BY seq") == [(4,), (8,)]
    admitted = [a for (a,) in raw("SELECT admitted FROM gce_entries ORDER BY seq")]
    assert 0 in admitted and 1 in admitted  # both kinds of entry are there to edit
    return raw


def _blob(values) -> bytes:
    return np.asarray(values, dtype="<f8").tobytes()


#: Each edit: (what it does, SQL statements, the first bad entry (None: not an entry), a phrase of the error).
EDITS = {
    "negative index": (["UPDATE gce_entries SET databases = '[-1]' WHERE seq = 10"], 10, "hash does not match"),
    "index out of range": (["UPDATE gce_entries SET databases = '[0, 99]' WHERE seq = 3"], 3, "hash does not match"),
    "answer not JSON": (["UPDATE gce_entries SET answer = '{\"admitted\": tr' WHERE seq = 11"], 11,
                        "hash does not match"),
    "weights lowered": (["UPDATE gce_entries SET weights = '[0.0, 0.0]' WHERE seq = 2"], 2, "hash does not match"),
    "refusal made an admission": (["UPDATE gce_entries SET admitted = 1 - admitted WHERE seq = 5"], 5,
                                  "hash does not match"),
    "entry deleted": (["DELETE FROM gce_entries WHERE seq = 6"], 6, "entry 6 is missing"),
    "last entry deleted": (["DELETE FROM gce_entries WHERE seq = 11"], 11, "head records entry 11"),
    "entry duplicated": (["INSERT INTO gce_entries SELECT 12, at, analyst, databases, mechanism, repeat, admitted, "
                          "weights, reach, answer, hash FROM gce_entries WHERE seq = 9"], 12, "hash does not match"),
    "entries reordered": (["UPDATE gce_entries SET seq = 100 WHERE seq = 9", "UPDATE gce_entries SET seq = 9 WHERE "
                           "seq = 10", "UPDATE gce_entries SET seq = 10 WHERE seq = 100"], 9, "hash does not match"),
    "checkpoint zeros": (["UPDATE gce_checkpoints SET sums = ? WHERE seq = 8"], None, "checkpoint after entry 8"),
    "checkpoint NaNs": (["UPDATE gce_checkpoints SET sums = ? WHERE seq = 8"], None, "checkpoint after entry 8"),
    "checkpoint truncated": (["UPDATE gce_checkpoints SET sums = ? WHERE seq = 8"], None, "checkpoint after entry 8"),
    "older checkpoint zeros": (["UPDATE gce_checkpoints SET sums = ? WHERE seq = 4"], None, "checkpoint after entry 4"),
    "checkpoint moved": (["UPDATE gce_checkpoints SET seq = 10 WHERE seq = 8"], None, "checkpoint after entry 10"),
    "budget raised": (["UPDATE gce_meta SET value = '100.0' WHERE key = 'budget_epsilon'"], None, "meta data"),
    "constraint loosened": (["UPDATE gce_meta SET value = replace(value, '\"m\": 2', '\"m\": 5') "
                             "WHERE key = 'scenario'"], None, "meta data"),
}


def _edit(raw: Raw, name: str) -> None:
    statements, _, _ = EDITS[name]
    components = 2
    params = {"checkpoint zeros": (_blob(np.zeros((components, N))),),
              "older checkpoint zeros": (_blob(np.zeros((components, N))),),
              "checkpoint NaNs": (_blob(np.full((components, N), math.nan)),),
              "checkpoint truncated": (_blob(np.zeros((components, N)))[:-12],)}.get(name, ())
    for statement in statements:
        raw(statement, params if "?" in statement else ())


@pytest.mark.parametrize("name", list(EDITS))
def test_every_kind_of_edit_is_reported_and_nothing_is_admitted(ledger, name, capsys):
    _, entry, phrase = EDITS[name]
    _edit(ledger, name)
    before = ledger.entries()
    if name == "constraint loosened":
        assert "m" in ledger("SELECT value FROM gce_meta WHERE key = 'scenario'")[0][0]

    def damaged(action) -> DamagedLedgerError:
        with pytest.raises(DamagedLedgerError) as caught:
            with Accountant(ledger.location) as book:
                action(book)
        error = caught.value
        assert phrase in str(error) and error.entry == entry, str(error)
        assert "nothing is admitted until it is repaired" in str(error)
        return error

    damaged(lambda book: book.status())
    damaged(lambda book: book.check(1, gce.PureDP(0.01)))
    damaged(lambda book: book.spend(1, gce.PureDP(0.01)))
    damaged(lambda book: book.verify())
    damaged(lambda book: book.history())
    assert ledger.entries() == before  # the spend wrote nothing
    capsys.readouterr()
    for argv, code in ((["status"], 2), (["check", "--databases", "1", "--mechanism", 'kind = "pure", epsilon = 0.01'],
                                          2),
                       (["spend", "--databases", "1", "--mechanism", 'kind = "pure", epsilon = 0.01'], 2),
                       (["verify"], 1), (["verify", "--json"], 1)):
        assert main(["ledger", *argv, "--ledger", ledger.location]) == code
        out, err = capsys.readouterr()
        said = err if code == 2 else out
        assert phrase in said and said.count("\n") <= (1 if code == 2 else 12), said
        if argv == ["verify", "--json"]:
            report = json.loads(out)
            assert report["intact"] is False and report["entry"] == entry
    assert ledger.entries() == before


@pytest.mark.parametrize("name", ["negative index", "entry deleted", "entries reordered", "checkpoint NaNs",
                                  "last entry deleted"])
def test_truncating_to_the_last_good_entry_repairs_the_ledger(ledger, name):
    _edit(ledger, name)
    with pytest.raises(DamagedLedgerError) as caught:
        with Accountant(ledger.location) as book:
            book.verify()
    keep = caught.value.last_good
    assert keep == (EDITS[name][1] - 1 if EDITS[name][1] is not None else ENTRIES)
    with Accountant(ledger.location) as book:
        kept = book.truncate(keep)
        assert kept.entries == keep and book.verify().head == kept.head
        status = book.status()
        assert status.entries == keep
        decision = book.spend(1, gce.PureDP(0.01))
        assert decision.sequence == keep + 1
    with Accountant(ledger.location) as book:
        assert book.verify().entries == keep + 1


def test_truncate_refuses_damaged_entries_and_unknown_numbers(ledger):
    _edit(ledger, "weights lowered")
    with Accountant(ledger.location) as book:
        with pytest.raises(DamagedLedgerError, match="damaged at entry 2"):
            book.truncate(5)
        with pytest.raises(gce.InvalidParameterError, match="after: the ledger has no entry 40"):
            book.truncate(40)
    assert ledger.entries() == ENTRIES


def test_the_sums_a_spend_uses_are_the_entries_sums(ledger):
    """verify recomputes every checkpoint from the entries before it; status's worst case matches a replay."""
    rows = ledger("SELECT databases, weights, admitted FROM gce_entries ORDER BY seq")
    sums = np.zeros((2, N))
    for databases, weights, admitted in rows:
        members = json.loads(databases)
        if admitted:
            sums[:, slice(None) if members == "all" else members] += np.array(json.loads(weights))[:, None]
    worst = np.sort(sums[0])[-2:].sum()  # at most 2 databases: the two largest sums
    with Accountant(ledger.location) as book:
        assert book.verify().admitted == sum(a for _, _, a in rows)
        status = book.status()
    assert status.lower[0] <= worst + 1e-12 and status.upper[0] >= worst - 1e-12


def test_a_head_hash_kept_elsewhere_checks_the_history(ledger):
    """The chain's head is a function of every entry: the same history gives the same head, any other does not."""
    with Accountant(ledger.location) as book:
        head = book.verify().head
        genesis = book.verify().genesis
    rows = ledger("SELECT seq, at, analyst, databases, mechanism, repeat, admitted, weights, reach, answer, hash "
                  "FROM gce_entries ORDER BY seq")
    previous = genesis
    for row in rows:  # recomputed here from the documented rule, independently of gce.ledger.chain
        fields = [str(row[0]), row[1], row[2], row[3], row[4], str(row[5]), str(row[6]), row[7],
                  repr(float(row[8])), row[9]]
        content = "".join(f"{len(f)}:{f}" for f in fields).encode()
        previous = hashlib.sha256(b"gce-ledger-entry\x00" + previous.encode() + content).hexdigest()
        assert previous == row[10]
    assert previous == head
    blob, stored = ledger("SELECT sums, hash FROM gce_checkpoints WHERE seq = 8")[0]
    at_8 = rows[7][10]
    assert hashlib.sha256(b"gce-ledger-checkpoint\x00" + at_8.encode() + struct.pack(">q", 8)
                          + bytes(blob)).hexdigest() == stored


def test_a_foreign_sqlite_file_is_byte_identical_after_status(tmp_path, capsys):
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as raw:  # journal mode delete, the SQLite default
        raw.execute("CREATE TABLE people (name TEXT)")
        raw.execute("INSERT INTO people VALUES ('ana')")
    before = path.read_bytes()
    for argv in (["status"], ["verify"], ["history"], ["spend", "--databases", "1", "--mechanism",
                                                       'kind = "pure", epsilon = 0.1']):
        assert main(["ledger", *argv, "--ledger", str(path)]) == 2
        assert "not a gce ledger" in capsys.readouterr().err
    with pytest.raises(LedgerError, match="not a gce ledger"):
        Accountant(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.sqlite"]


def test_an_older_schema_is_refused_with_the_reason(tmp_path):
    path = tmp_path / "old.sqlite"
    scenario = gce.Scenario(3, [gce.Invocation(0, gce.PureDP(0.1))])
    Accountant.create(path, scenario, budget_epsilon=1.0, budget_delta=0.0).close()
    with sqlite3.connect(path) as raw:
        raw.execute("UPDATE gce_meta SET value = '1' WHERE key = 'schema_version'")
    with pytest.raises(LedgerError, match="older gce .ledger schema 1, without the hash chain"):
        Accountant(path)

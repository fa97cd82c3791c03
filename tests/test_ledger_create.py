"""Issue 38: a new SQLite ledger appears whole or not at all (:meth:`gce.ledger.Accountant.create`).

It is written under a hidden name beside its path and linked into place at the end; an error or a Ctrl-C
before then leaves nothing at the path and nothing hidden beside it, and a file that appears at the path
meanwhile is never replaced.
"""

from __future__ import annotations

import os
import signal
import threading

import pytest

import gce
import tiers
from gce.cli import EXIT_INTERRUPTED, main
from gce.ledger import Accountant, LedgerError
from gce.ledger.store import SQLiteStore


def scenario(n: int = 4) -> gce.Scenario:
    """Two distinct guarantees: creation spends twice after the tables (two commits to interrupt between)."""
    return gce.Scenario(n, [gce.Invocation(0, gce.PureDP(0.1)), gce.Invocation(1, gce.ApproxDP(0.2, 1e-9))],
                        gce.ConstraintSet(n, [gce.AtMost(2)]))


def listing(folder) -> list[str]:
    return sorted(os.listdir(folder))


def test_a_created_ledger_leaves_only_its_file(tmp_path):
    path = str(tmp_path / "l.sqlite")
    with Accountant.create(path, scenario(), budget_epsilon=5.0, budget_delta=1e-6) as ledger:
        assert [e.sequence for e in ledger.history()] == [1, 2]
        assert ledger.spend([2], gce.PureDP(0.1)).admitted  # the published file is the one written to
    assert listing(tmp_path) == ["l.sqlite"]  # no hidden file, no -wal or -shm left
    with Accountant(path) as ledger:
        assert ledger.verify().entries == 3
    with open(path, "rb") as handle:
        assert handle.read(20)[18:20] == b"\x02\x02"  # still in write-ahead-log mode (SQLite header bytes 18-19)


class Boom(Exception):
    pass


@tiers.parametrize("raised, moment", [(raised, moment) for raised in (KeyboardInterrupt, Boom)
                                       for moment in ("tables", "first spend", "second spend", "publish")],
                   default=lambda raised, moment: raised is KeyboardInterrupt or moment == "publish")
def test_an_error_or_interrupt_while_creating_leaves_nothing(tmp_path, monkeypatch, moment, raised):
    """Raised after the meta rows, after each of the scenario's spends, or just before the file is linked
    into place: the path is still free (a second create succeeds) and the folder is as it was."""
    path = str(tmp_path / "l.sqlite")
    (tmp_path / "other.txt").write_text("x")
    if moment == "publish":  # the last step before the file is in place
        def link(*args, **kwargs):
            raise raised()

        monkeypatch.setattr(os, "link", link)
    else:
        original = SQLiteStore._execute
        entries = []
        table = "gce_meta" if moment == "tables" else "gce_entries"
        count = {"tables": 1, "first spend": 1, "second spend": 2}[moment]

        def execute(self, text, params):
            original(self, text, params)
            if text.startswith(f"INSERT INTO {table}"):
                entries.append(text)
                if len(entries) == count:
                    raise raised()

        monkeypatch.setattr(SQLiteStore, "_execute", execute)
    with pytest.raises(raised):
        Accountant.create(path, scenario(), budget_epsilon=5.0, budget_delta=1e-6)
    assert listing(tmp_path) == ["other.txt"]
    monkeypatch.undo()
    Accountant.create(path, scenario(), budget_epsilon=5.0, budget_delta=1e-6).close()
    assert listing(tmp_path) == ["l.sqlite", "other.txt"]


def test_a_file_that_appears_meanwhile_is_never_replaced(tmp_path, monkeypatch):
    path = tmp_path / "l.sqlite"
    original = SQLiteStore.publish

    def publish(self):
        path.write_bytes(b"someone else's")
        original(self)

    monkeypatch.setattr(SQLiteStore, "publish", publish)
    with pytest.raises(LedgerError, match=r"l\.sqlite: already exists \(a ledger is never overwritten; it "
                                          r"appeared while this one was made\)"):
        Accountant.create(str(path), scenario(), budget_epsilon=5.0, budget_delta=1e-6)
    assert path.read_bytes() == b"someone else's"
    assert listing(tmp_path) == ["l.sqlite"]


def test_without_hard_links_the_file_is_renamed_into_place(tmp_path, monkeypatch):
    """A file system without hard links (EPERM): the path checked, then the hidden file renamed."""
    def link(*args, **kwargs):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", link)
    path = str(tmp_path / "l.sqlite")
    Accountant.create(path, scenario(), budget_epsilon=5.0, budget_delta=1e-6).close()
    assert listing(tmp_path) == ["l.sqlite"]
    monkeypatch.undo()
    with Accountant(path) as ledger:
        assert ledger.verify().entries == 2


def test_a_scenario_over_budget_still_leaves_a_whole_ledger_with_the_refusal(tmp_path):
    """Refusing the scenario's invocations is a recorded answer, not a failure to create: the ledger is
    published with the refusal (as before), and it verifies."""
    path = str(tmp_path / "l.sqlite")
    with pytest.raises(LedgerError, match="exceed the budget .*; the ledger holds those that fit"):
        Accountant.create(path, scenario(), budget_epsilon=0.15, budget_delta=1e-6)
    assert listing(tmp_path) == ["l.sqlite"]
    with Accountant(path) as ledger:
        verified = ledger.verify()
        assert (verified.entries, verified.admitted) == (2, 1)


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signal handlers")
def test_ctrl_c_during_gce_ledger_init_leaves_no_ledger_and_says_so(tmp_path, capsys, monkeypatch):
    """A SIGINT as the second invocation is written (the tables and the first entry committed aside):
    ``gce: interrupted; no ledger was created``, and nothing at the path or beside it."""
    file = tmp_path / "s.toml"
    file.write_text('databases = 4\n[[invocations]]\ndatabases = [0]\nmechanism = { kind = "pure", epsilon = 0.1 }'
                    '\n[[invocations]]\ndatabases = [1]\nmechanism = { kind = "approx", epsilon = 0.2, '
                    'delta = 1e-9 }\n[[constraints]]\nkind = "at_most"\nm = 2\n')
    original = SQLiteStore._execute
    entries = []

    def execute(self, text, params):
        original(self, text, params)
        if text.startswith("INSERT INTO gce_entries"):
            entries.append(text)
            if len(entries) == 2:
                os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(SQLiteStore, "_execute", execute)
    path = str(tmp_path / "l.sqlite")
    status = main(["ledger", "init", str(file), "--budget-epsilon", "5", "--budget-delta", "1e-6", "--ledger", path])
    err = capsys.readouterr().err
    assert len(entries) == 2
    assert (status, err) == (EXIT_INTERRUPTED, "gce: interrupted; no ledger was created\n")
    assert listing(tmp_path) == ["s.toml"]

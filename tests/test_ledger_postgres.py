"""The ledger on PostgreSQL (gce.ledger.postgres) against a real server these tests start and stop.

A session fixture runs ``initdb`` into a temporary folder and ``pg_ctl start`` on a free port (as an
unprivileged OS user ``gcepg``, created if missing, when the tests run as root: PostgreSQL refuses to
run as root), and stops the server at the end. The binaries are found on the PATH, under
``GCE_PG_BIN``, or in Debian's ``/usr/lib/postgresql/<version>/bin``.

The behaviour tests of ``tests/test_ledger.py`` run again with a PostgreSQL URL for the ledger (each
test gets fresh databases, which the store creates), then the store's own: racing processes on one
ledger (never over budget, every admitted spend recorded), SIGKILL of spenders (nothing committed
lost, no half entry, the lock freed), the lock itself, and the clear errors (missing, foreign and
damaged databases, unreachable server, no psycopg).

Tiers: the server tests are slow, except one smoke test (the server starts in about a second) that
the default run skips when PostgreSQL or psycopg is not installed. The slow tier never skips them
silently: a missing server or psycopg is a failure there unless ``GCE_NO_POSTGRES=1``.
"""

from __future__ import annotations

import contextlib
import getpass
import glob
import itertools
import json
import os
import queue
import random
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import numpy as np
import pytest

import gce
import test_ledger
import test_ledger_reliability as reliability
from gce.cli import main
from gce.ledger import Accountant, LedgerError
from gce.ledger.postgres import PostgresStore, masked_url

#: The OS user that runs the test server when the tests run as root.
SERVER_USER = "gcepg"
SLOW = pytest.mark.slow


# ---------------------------------------------------------------------------
# The server


class Unavailable(Exception):
    """PostgreSQL or psycopg is not installed here."""


def _version(folder: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", folder))


def pg_bin() -> str:
    """The folder holding ``initdb`` and ``pg_ctl``: ``GCE_PG_BIN``, the PATH, or Debian's newest."""
    candidates = [os.environ["GCE_PG_BIN"]] if os.environ.get("GCE_PG_BIN") else []
    if shutil.which("initdb"):
        candidates.append(os.path.dirname(shutil.which("initdb")))
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version, reverse=True)
    for folder in candidates:
        if all(os.access(os.path.join(folder, tool), os.X_OK) for tool in ("initdb", "pg_ctl")):
            return folder
    raise Unavailable("initdb and pg_ctl not found (PATH, GCE_PG_BIN, /usr/lib/postgresql/*/bin): "
                      "apt-get install postgresql, or GCE_NO_POSTGRES=1 to skip the PostgreSQL tests")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Server:
    """A PostgreSQL server in a temporary folder, reached on 127.0.0.1 by a superuser ``user``."""

    bin: str
    folder: str
    port: int
    user: str
    prefix: tuple[str, ...]

    def url(self, database: str) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def connect(self, database: str = "postgres"):
        import psycopg

        return psycopg.connect(self.url(database), autocommit=True)

    def run(self, *args: str) -> None:
        """Run a server tool, as the server's user."""
        command = [*args] if not self.prefix else [*self.prefix, *args] if self.prefix[0] == "runuser" else \
            [*self.prefix, shlex.join(args)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=180)
        if done.returncode:
            log = os.path.join(self.folder, "log")
            tail = open(log).read()[-2000:] if os.path.exists(log) else ""
            raise RuntimeError(f"{shlex.join(args)} failed ({done.returncode}): {done.stderr.strip()}\n{tail}")

    @classmethod
    def start(cls) -> "Server":
        folder = pg_bin()
        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise Unavailable("psycopg is not installed: pip install '.[postgres]', or GCE_NO_POSTGRES=1 to skip "
                              "the PostgreSQL tests") from None
        prefix: tuple[str, ...] = ()
        user = getpass.getuser()
        if os.geteuid() == 0:  # postgres refuses to run as root: an unprivileged user runs the server
            user = SERVER_USER
            if subprocess.run(["id", "-u", user], capture_output=True).returncode:
                subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", user],
                               check=True, capture_output=True)
            prefix = ("runuser", "-u", user, "--") if shutil.which("runuser") else ("su", "-s", "/bin/sh", user, "-c")
        home = tempfile.mkdtemp(prefix="gcepg-", dir="/tmp" if os.path.isdir("/tmp") else None)
        if os.geteuid() == 0:
            shutil.chown(home, user)
        server = cls(folder, home, _free_port(), user, prefix)
        data = os.path.join(home, "data")
        server.run(os.path.join(folder, "initdb"), "-D", data, "-U", user, "-A", "trust", "-E", "UTF8",
                   "--locale=C", "--no-sync")
        server.run(os.path.join(folder, "pg_ctl"), "-D", data, "-l", os.path.join(home, "log"), "-w", "-t", "60",
                   "-o", f"-k {home} -p {server.port} -c listen_addresses=127.0.0.1", "start")
        return server

    def stop(self) -> None:
        data = os.path.join(self.folder, "data")
        try:
            self.run(os.path.join(self.bin, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop")
        except Exception:
            with contextlib.suppress(OSError, ValueError), open(os.path.join(data, "postmaster.pid")) as pid:
                os.kill(int(pid.readline()), signal.SIGQUIT)  # stop it anyway (SIGQUIT: an immediate shutdown)
            raise
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server():
    """The test server, or why there is none (:class:`Unavailable`); started once, stopped at the end."""
    if os.environ.get("GCE_NO_POSTGRES") == "1":
        yield Unavailable("GCE_NO_POSTGRES=1")
        return
    try:
        server = Server.start()
    except Unavailable as missing:
        yield missing
        return
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def server(postgres_server, request) -> Server:
    """The server; without one: skipped when GCE_NO_POSTGRES=1 or in the default tier, a failure in the slow
    tier (CI installs PostgreSQL and psycopg: nothing is skipped silently there)."""
    if isinstance(postgres_server, Unavailable):
        if os.environ.get("GCE_NO_POSTGRES") == "1" or request.node.get_closest_marker("slow") is None:
            pytest.skip(str(postgres_server))
        pytest.fail(str(postgres_server))
    return postgres_server


_numbers = itertools.count()


class LedgerFolder:
    """A folder of ledgers on the server: ``folder / "l.sqlite"`` is the URL of a fresh database, so the
    SQLite tests that name their ledgers in ``tmp_path`` run unchanged (the store creates the database)."""

    def __init__(self, server: Server):
        self.server = server
        self.prefix = f"t{next(_numbers)}_{os.getpid()}"

    def __truediv__(self, name: str) -> str:
        return self.server.url(f"{self.prefix}_{re.sub(r'[^a-z0-9]', '_', name.lower())}")


@pytest.fixture
def folder(server) -> LedgerFolder:
    return LedgerFolder(server)


@pytest.fixture
def url(folder) -> str:
    return folder / "ledger"


def scenario(n: int, constraints=None) -> gce.Scenario:
    return test_ledger.scenario(n, constraints)


def _entries(server: Server, url: str) -> dict[int, int]:
    with server.connect(url.rsplit("/", 1)[1]) as raw:
        return dict(raw.execute("SELECT seq, admitted FROM gce_entries").fetchall())


# ---------------------------------------------------------------------------
# Default tier: a smoke test (skipped without PostgreSQL), and what needs no server


def test_smoke_create_spend_check_status_reopen(url, server):
    with Accountant.create(url, scenario(10, gce.ConstraintSet(10, (gce.AtMost(3),))), budget_epsilon=1.0,
                           budget_delta=0.0, analyst="init") as ledger:
        assert ledger.location == url
        days = 0
        while ledger.spend("all", gce.PureDP(0.05), analyst="daily").admitted:
            days += 1
        assert days == 6  # the worst patient (3 hospitals) pays 0.15 a day: 6 x 0.15 <= 1 < 7 x 0.15
        assert ledger.check(4, gce.PureDP(0.1)).admitted and not ledger.check(4, gce.PureDP(0.11)).admitted
    assert _entries(server, url) == {**{seq: 1 for seq in range(1, 8)}, 8: 0}
    with Accountant(url) as again:
        status = again.status()
        assert (status.entries, status.admitted, status.upper[0]) == (8, 7, pytest.approx(0.9))
        assert [e.analyst for e in again.history(limit=2)] == ["daily", "daily"]


def test_masked_url_hides_passwords():
    assert masked_url("postgresql://ana:s3cret@db.example:5432/ledger?sslmode=require") == \
        "postgresql://ana:***@db.example:5432/ledger?sslmode=require"
    assert masked_url("postgresql://ana@db/ledger?password=s3cret&sslmode=require") == \
        "postgresql://ana@db/ledger?password=***&sslmode=require"
    assert masked_url("postgres://db/ledger") == "postgres://db/ledger"


def test_without_psycopg_a_clear_error(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg raises ImportError
    with pytest.raises(LedgerError, match=r"needs psycopg 3: pip install 'gce\[postgres\]'"):
        Accountant("postgresql://ana@localhost/ledger")
    assert main(["ledger", "status", "--ledger", "postgresql://ana:pw@localhost/ledger"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "gce[postgres]" in err and "pw" not in err


# ---------------------------------------------------------------------------
# The SQLite behaviour tests, on PostgreSQL


@SLOW
def test_hospitals_by_hand(url, server):
    test_ledger.test_hospitals_by_hand_refused_when_the_worst_patient_would_exceed(url)


@SLOW
def test_bounded_pairs_and_names(url, server):
    test_ledger.test_bounded_pairs_and_names(url)


@SLOW
def test_offline_composition_beside(url, server):
    test_ledger.test_offline_composition_beside_is_labelled_and_not_used(url)


@SLOW
def test_create_refuses_bad_budgets_filters_and_existing_ledgers(url, server):
    test_ledger.test_create_refuses_bad_budgets_filters_and_existing_files(url)


@SLOW
def test_incremental_spends_do_not_solve(url, server):
    test_ledger.test_incremental_spends_do_not_solve(url)


@SLOW
@pytest.mark.parametrize("seed", range(12))
def test_filter_never_admits_beyond_the_budget_for_any_allowed_pair(seed, folder):
    test_ledger.test_filter_never_admits_beyond_the_budget_for_any_allowed_pair(seed, folder)


@SLOW
def test_cli_init_spend_check_status_history(folder, capsys):
    test_ledger.test_cli_init_spend_check_status_history(folder, capsys)


@SLOW
def test_checkpoints_and_reopening_give_the_same_sums(url, server, monkeypatch):
    monkeypatch.setattr("gce.ledger.accountant.CHECKPOINT_EVERY", 5)
    rng = random.Random(3)
    cs = gce.ConstraintSet(6, (gce.AtMost(2), gce.Conflicts(((0, 1), (2, 3)))))
    with Accountant.create(url, scenario(6, cs), budget_epsilon=50.0, budget_delta=1e-5) as ledger:
        for _ in range(23):
            ledger.spend(sorted(rng.sample(range(6), rng.randint(1, 3))), gce.ApproxDP(round(rng.random(), 2), 1e-7))
        ledger.check(0, gce.PureDP(0.0))
        expected = ledger._tracker.sums.copy()
        worst = test_ledger.brute_max(cs, "unbounded", expected[0])
    with server.connect(url.rsplit("/", 1)[1]) as raw:
        assert raw.execute("SELECT COUNT(*) FROM gce_checkpoints").fetchone()[0] in (1, 2)
        blob = raw.execute("SELECT sums FROM gce_checkpoints ORDER BY seq DESC LIMIT 1").fetchone()[0]
        assert isinstance(blob, bytes) and len(blob) == 2 * 6 * 8  # (components, databases) float64
    with Accountant(url) as reopened:
        decision = reopened.check(5, gce.PureDP(0.0))
        assert np.allclose(reopened._tracker.sums, expected)
        assert decision.lower[0] <= worst + 1e-9 <= decision.upper[0] + 2e-9


# ---------------------------------------------------------------------------
# Concurrency and crashes


def _brute_worst(server: Server, url: str) -> tuple[float, float, list[int]]:
    """The exact worst case over allowed sets of the admitted entries, read straight from the server."""
    with server.connect(url.rsplit("/", 1)[1]) as raw:
        rows = raw.execute("SELECT seq, databases, weights FROM gce_entries WHERE admitted = 1").fetchall()
    sums = np.zeros((2, 8))
    for _, databases, weights in rows:
        members = list(range(8)) if json.loads(databases) == "all" else json.loads(databases)
        sums[:, members] += np.array(json.loads(weights))[:, None]
    sets = [s for k in range(9) for s in itertools.combinations(range(8), k) if reliability.CONSTRAINTS.satisfied(s)]
    eps = max(sums[0, list(s)].sum() for s in sets)
    delta = max(sums[1, list(s)].sum() for s in sets)
    return eps, delta, sorted(seq for seq, _, _ in rows)


def _collect(out, workers, timeout: float) -> dict[int, list[int]]:
    """Every worker's (seed, admitted sequences), failing at once (not after the timeout) when one dies."""
    results: dict[int, list[int]] = {}
    deadline = time.monotonic() + timeout
    while len(results) < len(workers):
        try:
            seed, admitted = out.get(timeout=0.5)
            results[seed] = admitted
        except queue.Empty:
            failed = [w.exitcode for w in workers if w.exitcode not in (None, 0)]
            assert not failed, f"a spender failed (exit codes {failed})"
            assert time.monotonic() < deadline, "the spenders did not finish in time"
    for w in workers:
        w.join(timeout=60)
        assert w.exitcode == 0
    return results


@SLOW
@pytest.mark.parametrize("processes, spends", [(8, 400)])
def test_racing_spenders_never_overspend_and_every_admitted_spend_is_recorded(processes, spends, url, server):
    reliability._create(url)
    out = reliability._FORK.Queue()
    workers = [reliability._FORK.Process(target=reliability._spender, args=(url, seed, spends, out))
               for seed in range(processes)]
    for w in workers:
        w.start()
    results = _collect(out, workers, timeout=900)
    eps, delta, recorded = _brute_worst(server, url)
    assert eps <= reliability.BUDGET + 1e-9 and delta <= 1e-6
    reported = sorted(itertools.chain.from_iterable(results.values()))
    assert reported == recorded[1:]  # entry 1 is the scenario's own invocation
    assert sorted(_entries(server, url)) == list(range(1, 2 + processes * spends))
    assert reliability.BUDGET - 0.03 < eps  # used up to one spend's worth (0.01 on up to 3 databases)


@SLOW
@pytest.mark.parametrize("trial", range(30))
def test_kill_9_at_a_random_point_loses_nothing_committed(trial, url, server):
    reliability._create(url)
    committed = reliability.kill_a_spender(url, trial)
    assert committed
    _wait_for_the_killed_clients_backend(server, url)
    rows = _entries(server, url)
    for seq, admitted in committed:
        assert rows[seq] == int(admitted)  # nothing the spender saw committed is lost
    assert sorted(rows) == list(range(1, len(rows) + 1))  # no gap, no half entry
    assert len(rows) in (len(committed) + 1, len(committed) + 2)  # at most one commit not yet reported
    start = time.monotonic()
    with Accountant(url) as ledger:  # the ledger opens and goes on: the killed client's lock is gone
        assert ledger.spend(0, gce.ApproxDP(0.001, 1e-12)).sequence == len(rows) + 1
    assert time.monotonic() - start < 10


def _wait_for_the_killed_clients_backend(server: Server, url: str) -> None:
    """Waits until no other session is connected to the ledger's database. A client killed just after
    sending its COMMIT leaves the COMMIT in its server process's socket buffer: that process still commits it
    (or rolls back) before it notices the closed connection and exits. Read before then, the table lacks an
    entry that the next spend will see (CI once read 64 entries, then the spend was number 66)."""
    name = url.rsplit("/", 1)[1]
    deadline = time.monotonic() + 60
    with server.connect(name) as raw:
        while raw.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                          (name,)).fetchone()[0]:
            assert time.monotonic() < deadline, "the killed client's server process is still connected after 60 s"
            time.sleep(0.05)


def _half_spender(url: str, pipe) -> None:
    """Takes the write lock, writes half an entry (no answer yet), says so, and waits to be killed."""
    store = PostgresStore(url, create=False)
    with store.transaction(write=True):
        store.run("INSERT INTO gce_entries (seq, at, analyst, databases, mechanism, repeat, admitted, weights, "
                  "reach, answer) VALUES (?, 'now', 'half', '[0]', '{}', 1, 1, '[9.0, 0.0]', 1.0, '{}')", (2,))
        pipe.send("inside")
        time.sleep(120)


@SLOW
def test_a_client_killed_inside_its_transaction_leaves_no_half_entry_and_frees_the_lock(url, server):
    reliability._create(url)
    receive, send = reliability._FORK.Pipe(duplex=False)
    worker = reliability._FORK.Process(target=_half_spender, args=(url, send))
    worker.start()
    assert receive.poll(60) and receive.recv() == "inside"
    with Accountant(url) as ledger:
        assert ledger.check(0, gce.ApproxDP(0.01, 0.0)).admitted  # readers never wait for the writer
        os.kill(worker.pid, signal.SIGKILL)
        worker.join(timeout=30)
        decision = ledger.spend(0, gce.ApproxDP(0.01, 0.0), analyst="after")  # waits for the server to abort
        assert decision.admitted and decision.sequence == 2 and decision.upper[0] == pytest.approx(0.01)
    assert _entries(server, url) == {1: 1, 2: 1}
    with server.connect(url.rsplit("/", 1)[1]) as raw:
        assert raw.execute("SELECT analyst FROM gce_entries WHERE seq = 2").fetchone()[0] == "after"


@SLOW
def test_a_writer_waits_for_the_lock_and_times_out_clearly(url, server, monkeypatch):
    reliability._create(url)
    holder = PostgresStore(url, create=False)
    try:
        holder._begin(write=True)  # another machine in the middle of a spend: BEGIN and the lock travel
        holder.rows("SELECT 1")     # with the transaction's first read
        monkeypatch.setattr("gce.ledger.postgres.LOCK_TIMEOUT", 0.3)
        with Accountant(url) as ledger:
            assert ledger.check(1, gce.ApproxDP(0.5, 0.0)).admitted
            start = time.monotonic()
            with pytest.raises(LedgerError, match=r"locked by another process for more than 0.3 s"):
                ledger.spend(1, gce.ApproxDP(0.5, 0.0))
            assert 0.25 < time.monotonic() - start < 5
            holder._rollback()
            decision = ledger.spend(1, gce.ApproxDP(0.5, 0.0))  # the failed spend left nothing behind
            assert decision.admitted and decision.sequence == 2
    finally:
        holder.close()


# ---------------------------------------------------------------------------
# Foreign, damaged and missing databases


@SLOW
def test_foreign_damaged_and_missing_databases_give_clear_errors(folder, server, capsys):
    def database(name: str) -> tuple[str, str]:
        target = folder / name
        return target, target.rsplit("/", 1)[1]

    missing, _ = database("missing")
    with pytest.raises(LedgerError, match="no ledger here .the database does not exist"):
        Accountant(missing)
    other, name = database("other")
    with server.connect() as admin:
        admin.execute(f"CREATE DATABASE {name}")
    with server.connect(name) as raw:
        raw.execute("CREATE TABLE people (name TEXT)")
    with pytest.raises(LedgerError, match="not a gce ledger .a database without gce's tables"):
        Accountant(other)
    cases = {
        "format": ("UPDATE gce_meta SET value = 'other-tool' WHERE key = 'format'",
                   "not a gce ledger .format 'other-tool'"),
        "newer": ("UPDATE gce_meta SET value = '99' WHERE key = 'schema_version'", "newer gce .ledger schema 99"),
        "entries": ("DROP TABLE gce_entries", r"damaged \(table gce_entries missing\)"),
        "meta": ("DELETE FROM gce_meta WHERE key = 'scenario'", "its meta data .* does not match the hash"),
    }
    for key, (statement, message) in cases.items():
        target, name = database(key)
        reliability._create(target)
        with server.connect(name) as raw:
            raw.execute(statement)
        with pytest.raises(LedgerError, match=message):
            Accountant(target)
        assert main(["ledger", "status", "--ledger", target]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("gce: error: ") and re.search(message, err), err
    good, _ = database("good")
    reliability._create(good)
    with pytest.raises(LedgerError, match="a ledger already exists here"):
        reliability._create(good)
    with pytest.raises(LedgerError, match="a ledger already exists here"):
        Accountant.create(good, scenario(3), budget_epsilon=1.0, budget_delta=0.0)


@SLOW
def test_unreachable_server_and_unknown_role_give_one_line_errors(server, capsys):
    closed = _free_port()
    url = f"postgresql://ana:s3cret@127.0.0.1:{closed}/ledger"
    with pytest.raises(LedgerError, match=r"postgresql://ana:\*\*\*@127.0.0.1:\d+/ledger: cannot connect"):
        Accountant(url)
    assert main(["ledger", "status", "--ledger", url]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot connect" in err and "s3cret" not in err
    stranger = f"postgresql://nobody_here@127.0.0.1:{server.port}/postgres"
    with pytest.raises(LedgerError, match="cannot connect .*nobody_here"):
        Accountant(stranger)


def _creator(url: str, barrier, out) -> None:
    barrier.wait()
    try:
        reliability._create(url)
        out.put("created")
    except LedgerError as error:
        out.put(str(error))


@SLOW
def test_racing_inits_make_one_ledger_and_tell_the_others(url, server):
    # four machines run `gce ledger init` on the same new URL at once: the database is created once (a racing
    # CREATE DATABASE is not an error), the tables once (under the ledger's lock), the others are told
    barrier = reliability._FORK.Barrier(4)
    out = reliability._FORK.Queue()
    workers = [reliability._FORK.Process(target=_creator, args=(url, barrier, out)) for _ in range(4)]
    for w in workers:
        w.start()
    outcomes = [out.get(timeout=120) for _ in workers]
    for w in workers:
        w.join(timeout=60)
    assert outcomes.count("created") == 1, outcomes
    assert all(o.endswith("a ledger already exists here") for o in outcomes if o != "created"), outcomes
    assert _entries(server, url) == {1: 1}

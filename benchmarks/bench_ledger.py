"""Benchmark: the online accountant, against peers measured in the same run.

a. check + spend on 10,000 databases with ``at_most 365`` and 5,000 random conflict edges, one
   pure-DP query of epsilon 0.01-0.05 on a random database per call, until the budget refuses
   (the run crosses the budget, where decisions need the bracket narrowed). Target: < 5 ms per
   call after warm-up. Peers: the same accountant on a scenario without constraints (a filter
   that ignores them, the same storage), and dp-accounting's RDP accountant composing each query
   in memory and asking its epsilon (a fixed-budget ledger without filter, storage or constraints).
   Printed: median, mean, 99th percentile, the number of searches (narrowed brackets) and the
   per-call cost of one durable SQLite commit on this disk.
b. ``status`` with 10^5 recorded spends: 2,000 written through the API, copied to 10^5 rows in
   one transaction, chained, with a checkpoint 2,000 entries before the last (status walks the whole
   hash chain and validates every entry after the latest checkpoint: a spend writes one after at most
   1,000 admitted entries). Target: < 1 s for opening the ledger and ``status``. Peer: dp-accounting's ``get_epsilon`` after 10^5
   composed events.

Run: python benchmarks/bench_ledger.py   (about a minute; not collected by pytest)

``--postgres postgresql://user@host:port/db`` runs both cases on PostgreSQL ledgers instead (the
``gce[postgres]`` extra; databases ``db_bench_*`` are created on that server and dropped at the end, so the
role needs CREATEDB), and prints one durable PostgreSQL commit round trip as the storage's share.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import urllib.parse

import dp_accounting
import numpy as np

import gce
from gce.constraints import AtMost, Conflicts, ConstraintSet
from gce.ledger import Accountant
from gce.ledger.chain import ENTRY_COLUMNS, checkpoint_hash, entry_hash

N = 10_000
CALLS = 3_000
BUDGET = 15.0
#: The PostgreSQL server (a URL) when --postgres is given, else None (SQLite files in a temporary folder).
POSTGRES: str | None = None
_CREATED: list[str] = []


def _location(folder: str, name: str) -> str:
    """Where ledger ``name`` lives: an SQLite file in ``folder``, or a fresh database on the server."""
    if POSTGRES is None:
        return os.path.join(folder, f"{name}.sqlite")
    parts = urllib.parse.urlsplit(POSTGRES)
    database = f"{parts.path.strip('/') or 'gce'}_bench_{name}_{os.getpid()}"
    _CREATED.append(database)
    return urllib.parse.urlunsplit(parts._replace(path="/" + database))


def _server(database: str = "postgres"):
    import psycopg

    parts = urllib.parse.urlsplit(POSTGRES)
    return psycopg.connect(urllib.parse.urlunsplit(parts._replace(path="/" + database)), autocommit=True)


def _drop_created() -> None:
    if POSTGRES is None:
        return
    with _server() as admin:
        for database in _CREATED:
            with contextlib.suppress(Exception):
                admin.execute(f'DROP DATABASE IF EXISTS "{database}"')


def _scenario(constrained: bool) -> gce.Scenario:
    rng = np.random.default_rng(0)
    edges = set()
    while len(edges) < 5_000:
        u, v = map(int, rng.choice(N, 2, replace=False))
        edges.add((min(u, v), max(u, v)))
    constraints = ConstraintSet(N, (AtMost(365), Conflicts(tuple(sorted(edges))))) if constrained else None
    return gce.Scenario(N, [gce.Invocation(0, gce.PureDP(0.0))], constraints, title="bench")


def _queries(seed: int = 1) -> list[tuple[int, float]]:
    rng = np.random.default_rng(seed)
    return [(int(i), float(e)) for i, e in zip(rng.integers(N, size=CALLS), rng.uniform(0.01, 0.05, size=CALLS))]


def _run(path: str, constrained: bool) -> tuple[list[float], list[float], float, int, int, Accountant]:
    ledger = Accountant.create(path, _scenario(constrained), budget_epsilon=BUDGET,
                               budget_delta=0.0)
    start = time.perf_counter()
    ledger.check(0, gce.PureDP(0.0))  # warm-up: the brackets of the loaded sums
    warm = time.perf_counter() - start
    solves = ledger.solves
    times, checks, admitted = [], [], 0
    for i, eps in _queries():
        g = gce.PureDP(eps)
        t = time.perf_counter()
        ledger.check(i, g)
        middle = time.perf_counter()
        admitted += ledger.spend(i, g, analyst="bench").admitted
        times.append(time.perf_counter() - t)
        checks.append(middle - t)
    return times, checks, warm, ledger.solves - solves, admitted, ledger


def _commit_cost(folder: str) -> float:
    """One durable commit (WAL, synchronous = FULL; on PostgreSQL a round trip and synchronous_commit) of a
    small row: the storage's share of every spend."""
    if POSTGRES is not None:
        table = f"gce_bench_commit_{os.getpid()}"  # a logged table (a temporary one is not made durable)
        with _server() as raw:
            raw.execute(f"CREATE TABLE {table} (a TEXT)")
            try:
                start = time.perf_counter()
                for _ in range(200):
                    with raw.transaction():
                        raw.execute(f"INSERT INTO {table} VALUES (%s)", ("x" * 300,))
                return (time.perf_counter() - start) / 200
            finally:
                raw.execute(f"DROP TABLE {table}")
    raw = sqlite3.connect(os.path.join(folder, "commit.sqlite"), isolation_level=None)
    raw.execute("PRAGMA journal_mode = WAL")
    raw.execute("PRAGMA synchronous = FULL")
    raw.execute("CREATE TABLE t (a TEXT)")
    start = time.perf_counter()
    for _ in range(200):
        raw.execute("BEGIN IMMEDIATE")
        raw.execute("INSERT INTO t VALUES (?)", ("x" * 300,))
        raw.execute("COMMIT")
    raw.close()
    return (time.perf_counter() - start) / 200


def _dp_accounting_calls() -> list[float]:
    accountant = dp_accounting.rdp.RdpAccountant()
    times = []
    for _, eps in _queries():
        t = time.perf_counter()
        accountant.compose(dp_accounting.LaplaceDpEvent(1.0 / eps))
        accountant.get_epsilon(1e-6)
        times.append(time.perf_counter() - t)
    return times


def _summary(times: list[float]) -> str:
    ms = np.array(times) * 1e3
    return (f"median {np.median(ms):.2f} ms, mean {ms.mean():.2f} ms, p99 {np.percentile(ms, 99):.2f} ms, "
            f"max {ms.max():.1f} ms")


def case_a(folder: str) -> bool:
    print(f"a. check + spend, {N:,} databases, at_most 365 and 5,000 conflicts, {CALLS:,} queries")
    ours, checks, warm, solves, admitted, ledger = _run(_location(folder, "a"), True)
    status = ledger.status()
    ledger.close()
    print(f"   gce (constraints): {_summary(ours)}; warm-up {warm:.2f} s; {admitted:,} admitted, "
          f"{CALLS - admitted:,} refused; {solves} searches; worst case {status.upper[0]:.4g} of {status.budgets[0]:g}")
    plain, plain_checks, _, _, plain_admitted, plain_ledger = _run(_location(folder, "plain"), False)
    plain_ledger.close()
    print(f"   of which check (the decision: one read, no commit): {_summary(checks)}")
    print(f"   filter ignoring the constraints (same storage): {_summary(plain)}; {plain_admitted:,} admitted "
          f"(budget {BUDGET:g}: each spend counts for every individual)")
    peer = _dp_accounting_calls()
    commit = _commit_cost(folder)
    print(f"   of which check: {_summary(plain_checks)}")
    print(f"   dp-accounting RdpAccountant (compose + get_epsilon, memory only): {_summary(peer)}")
    store = "SQLite commit on this disk" if POSTGRES is None else "PostgreSQL commit (round trip) on this server"
    print(f"   one durable {store}: {commit * 1e3:.2f} ms")
    print(f"   ratio (mean, ours / no-constraint filter): {np.mean(ours) / np.mean(plain):.2f}; "
          f"ours / dp-accounting: {np.mean(ours) / np.mean(peer):.2f}")
    ok = float(np.mean(ours)) < 5e-3
    print(f"   target < 5 ms per call (mean) after warm-up: {'met' if ok else 'NOT met'} (each spend waits for one "
          f"durable commit)")
    return ok


def case_b(folder: str) -> bool:
    total = 100_000
    print(f"b. status with {total:,} recorded spends")
    path = _location(folder, "b")
    ledger = Accountant.create(path, _scenario(True), budget_epsilon=1e6, budget_delta=0.0)
    for i, eps in _queries(2)[:2000]:
        ledger.spend(i, gce.PureDP(eps), analyst="bench")
    ledger.close()
    # copies of the 2,000 entries, numbered on and chained (each answer counts the admitted entries so far)
    if POSTGRES is None:
        raw = sqlite3.connect(path, isolation_level=None)
        raw.execute("BEGIN IMMEDIATE")
        mark = "?"
    else:
        raw = _server(path.rsplit("/", 1)[1])
        raw.execute("BEGIN")
        mark = "%s"
    template = raw.execute(f"SELECT {', '.join(ENTRY_COLUMNS)}, hash FROM gce_entries ORDER BY seq").fetchall()
    have, previous = len(template), template[-1][-1]
    admitted = json.loads(template[-1][9])["admitted_total"]
    sums = np.zeros((len(json.loads(template[0][7])), 10_000))
    for row in template:
        if row[6]:
            where = json.loads(row[3])
            sums[:, slice(None) if where == "all" else where] += np.array(json.loads(row[7]))[:, None]
    checkpoint_at = total // 1000 * 1000 - 1000  # then up to 1,999 entries to validate after it: the most there are
    rows = []
    while have < total:
        seq, at, analyst, databases, mechanism, repeat, was_admitted, weights, reach, answer, _ = \
            template[have % len(template)]
        have += 1
        admitted += was_admitted
        said = json.loads(answer)
        said["admitted_total"] = admitted
        row = (have, at, analyst, databases, mechanism, repeat, was_admitted, weights, reach, json.dumps(said))
        previous = entry_hash(previous, row)
        rows.append((*row, previous))
        if was_admitted and have <= checkpoint_at:
            where = json.loads(databases)
            sums[:, slice(None) if where == "all" else where] += np.array(json.loads(weights))[:, None]
        if have == checkpoint_at:
            blob = sums.astype("<f8").tobytes()
            checkpoint = (have, blob, checkpoint_hash(previous, have, blob))
    insert = f"INSERT INTO gce_entries ({', '.join(ENTRY_COLUMNS)}, hash) VALUES ({', '.join([mark] * 11)})"
    (raw.executemany if POSTGRES is None else raw.cursor().executemany)(insert, rows)
    raw.execute(f"UPDATE gce_meta SET value = {mark} WHERE key = 'head'", (f"{have} {previous}",))
    raw.execute("DELETE FROM gce_checkpoints")
    raw.execute(f"INSERT INTO gce_checkpoints (seq, sums, hash) VALUES ({mark}, {mark}, {mark})", checkpoint)
    raw.execute("COMMIT")
    if POSTGRES is not None:
        raw.execute("ANALYZE gce_entries")
    raw.close()

    def status():
        with Accountant(path) as opened:
            return opened.status()

    times = []
    for _ in range(5):
        t = time.perf_counter()
        result = status()
        times.append(time.perf_counter() - t)
    accountant = dp_accounting.rdp.RdpAccountant()
    for _ in range(total):
        accountant.compose(dp_accounting.LaplaceDpEvent(50.0))
    t = time.perf_counter()
    accountant.get_epsilon(1e-6)
    peer = time.perf_counter() - t
    best = min(times)
    print(f"   gce open + status: {best * 1e3:.1f} ms (best of 5; median {statistics.median(times) * 1e3:.1f} ms), "
          f"{result.entries:,} entries")
    print(f"   dp-accounting get_epsilon after {total:,} events: {peer * 1e3:.1f} ms; ratio {best / peer:.2f}")
    ok = best < 1.0
    print(f"   target < 1 s: {'met' if ok else 'NOT met'}")
    return ok


def main(argv: list[str] | None = None) -> int:
    global POSTGRES
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", metavar="URL", help="run on PostgreSQL ledgers on this server")
    POSTGRES = parser.parse_args(argv).postgres
    print(f"ledgers: {'SQLite files' if POSTGRES is None else 'PostgreSQL databases on ' + POSTGRES}")
    try:
        with tempfile.TemporaryDirectory() as folder:
            results = [case_a(folder), case_b(folder)]
    finally:
        _drop_created()
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())

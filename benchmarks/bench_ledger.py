"""Benchmark: the online accountant (issue 14), against peers measured in the same run.

a. check + spend on 10,000 databases with ``at_most 365`` and 5,000 random conflict edges, one
   pure-DP query of epsilon 0.01-0.05 on a random database per call, until the budget refuses
   (the run crosses the budget, where decisions need the bracket narrowed). Target: < 5 ms per
   call after warm-up. Peers: the same accountant on a scenario without constraints (a filter
   that ignores them, the same storage), and dp-accounting's RDP accountant composing each query
   in memory and asking its epsilon (a fixed-budget ledger without filter, storage or constraints).
   Printed: median, mean, 99th percentile, the number of searches (narrowed brackets) and the
   per-call cost of one durable SQLite commit on this disk.
b. ``status`` with 10^5 recorded spends: 2,000 written through the API, copied to 10^5 rows in
   one transaction (status reads the latest entry's answer and two aggregates). Target: < 100 ms
   for opening the ledger and ``status``. Peer: dp-accounting's ``get_epsilon`` after 10^5
   composed events.

Run: python benchmarks/bench_ledger.py   (about a minute; not collected by pytest)
"""

from __future__ import annotations

import os
import sqlite3
import statistics
import sys
import tempfile
import time

import dp_accounting
import numpy as np

import gce
from gce.constraints import AtMost, Conflicts, ConstraintSet
from gce.ledger import Accountant

N = 10_000
CALLS = 3_000
BUDGET = 15.0


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
    """One durable commit (WAL, synchronous = FULL) of a small row: the disk's share of every spend."""
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
    ours, checks, warm, solves, admitted, ledger = _run(os.path.join(folder, "a.sqlite"), True)
    status = ledger.status()
    ledger.close()
    print(f"   gce (constraints): {_summary(ours)}; warm-up {warm:.2f} s; {admitted:,} admitted, "
          f"{CALLS - admitted:,} refused; {solves} searches; worst case {status.upper[0]:.4g} of {status.budgets[0]:g}")
    plain, plain_checks, _, _, plain_admitted, plain_ledger = _run(os.path.join(folder, "plain.sqlite"), False)
    plain_ledger.close()
    print(f"   of which check (the decision, a read transaction, no commit): {_summary(checks)}")
    print(f"   filter ignoring the constraints (same storage): {_summary(plain)}; {plain_admitted:,} admitted "
          f"(budget {BUDGET:g}: each spend counts for every individual)")
    peer = _dp_accounting_calls()
    commit = _commit_cost(folder)
    print(f"   of which check: {_summary(plain_checks)}")
    print(f"   dp-accounting RdpAccountant (compose + get_epsilon, memory only): {_summary(peer)}")
    print(f"   one durable SQLite commit on this disk: {commit * 1e3:.2f} ms")
    print(f"   ratio (mean, ours / no-constraint filter): {np.mean(ours) / np.mean(plain):.2f}; "
          f"ours / dp-accounting: {np.mean(ours) / np.mean(peer):.2f}")
    ok = float(np.mean(ours)) < 5e-3
    print(f"   target < 5 ms per call (mean) after warm-up: {'met' if ok else 'NOT met'} (each spend waits for one "
          f"durable commit)")
    return ok


def case_b(folder: str) -> bool:
    total = 100_000
    print(f"b. status with {total:,} recorded spends")
    path = os.path.join(folder, "b.sqlite")
    ledger = Accountant.create(path, _scenario(True), budget_epsilon=1e6, budget_delta=0.0)
    for i, eps in _queries(2)[:2000]:
        ledger.spend(i, gce.PureDP(eps), analyst="bench")
    ledger.close()
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("BEGIN IMMEDIATE")
    have = raw.execute("SELECT MAX(seq) FROM gce_entries").fetchone()[0]
    while have < total:
        step = min(have, total - have)
        raw.execute("INSERT INTO gce_entries SELECT seq + ?, at, analyst, databases, mechanism, repeat, admitted, "
                    "weights, reach, answer FROM gce_entries WHERE seq <= ?", (have, step))
        have += step
    raw.execute("COMMIT")
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
    ok = best < 0.1
    print(f"   target < 100 ms: {'met' if ok else 'NOT met'}")
    return ok


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        results = [case_a(folder), case_b(folder)]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())

"""The ledger under concurrency and crashes: processes racing on one ledger never overspend together and
lose no admitted spend; a spender killed with SIGKILL at a random point loses nothing it committed and
leaves no half entry. The full runs (8 processes x 1,000 spends, 100 kills) are in the slow tier; the
default tier keeps small twins on the same code paths."""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import random
import signal
import sqlite3
import time

import numpy as np

import gce
from gce.constraints import AtMost, Conflicts, ConstraintSet
from gce.ledger import Accountant

import tiers

CONSTRAINTS = ConstraintSet(8, (AtMost(3), Conflicts(((0, 1), (2, 3), (4, 5)))))
#: Per spend 0.01 on one to three databases: the budget admits a few hundred of the 8,000 spends.
BUDGET = 3.0
_FORK = multiprocessing.get_context("fork")


def _create(path: str) -> None:
    scenario = gce.Scenario(8, [gce.Invocation(0, gce.PureDP(0.0))], CONSTRAINTS)
    Accountant.create(path, scenario, budget_epsilon=BUDGET, budget_delta=1e-6).close()


def _spender(path: str, seed: int, spends: int, out) -> None:
    rng = random.Random(seed)
    admitted = []
    with Accountant(path) as ledger:
        for _ in range(spends):
            members = sorted(rng.sample(range(8), rng.randint(1, 3)))
            decision = ledger.spend(members, gce.ApproxDP(0.01, 1e-9), analyst=f"p{seed}")
            if decision.admitted:
                admitted.append(decision.sequence)
    out.put((seed, admitted))


def _brute_worst(path: str) -> tuple[float, float, list[int]]:
    """The exact worst case over allowed sets of the admitted entries, read straight from the file."""
    with sqlite3.connect(path) as raw:
        rows = raw.execute("SELECT seq, databases, weights FROM gce_entries WHERE admitted = 1").fetchall()
    sums = np.zeros((2, 8))
    for _, databases, weights in rows:
        members = list(range(8)) if json.loads(databases) == "all" else json.loads(databases)
        sums[:, members] += np.array(json.loads(weights))[:, None]
    sets = [s for k in range(9) for s in itertools.combinations(range(8), k) if CONSTRAINTS.satisfied(s)]
    eps = max(sums[0, list(s)].sum() for s in sets)
    delta = max(sums[1, list(s)].sum() for s in sets)
    return eps, delta, sorted(seq for seq, _, _ in rows)


@tiers.parametrize("processes, spends", [(2, 40), (8, 1000)], default=1)
def test_racing_spenders_never_overspend_and_every_admitted_spend_is_recorded(processes, spends, tmp_path):
    path = str(tmp_path / "race.sqlite")
    _create(path)
    out = _FORK.Queue()
    workers = [_FORK.Process(target=_spender, args=(path, seed, spends, out)) for seed in range(processes)]
    for w in workers:
        w.start()
    results = dict(out.get(timeout=1800) for _ in workers)
    for w in workers:
        w.join(timeout=60)
        assert w.exitcode == 0
    eps, delta, recorded = _brute_worst(path)
    assert eps <= BUDGET + 1e-9 and delta <= 1e-6
    reported = sorted(itertools.chain.from_iterable(results.values()))
    assert reported == recorded[1:]  # entry 1 is the scenario's own invocation
    with sqlite3.connect(path) as raw:
        assert raw.execute("SELECT COUNT(*) FROM gce_entries").fetchone()[0] == 1 + processes * spends
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    if processes * spends >= 1000:
        assert BUDGET - 0.03 < eps  # the budget was used up to one spend's worth (0.01 on up to 3 databases)


def _killed_spender(path: str, seed: int, pipe) -> None:
    rng = random.Random(seed)
    with Accountant(path) as ledger:
        while True:
            members = sorted(rng.sample(range(8), rng.randint(1, 3)))
            decision = ledger.spend(members, gce.ApproxDP(0.001, 1e-12), analyst=f"k{seed}")
            pipe.send((decision.sequence, decision.admitted))  # after the commit: this spend is on disk


def kill_a_spender(location: str, trial: int) -> list[tuple[int, bool]]:
    """Start a spender on the ledger at ``location`` (a file or a PostgreSQL URL), kill -9 it at a random
    point once its first spend is through, and return the (sequence, admitted) of every spend it saw
    committed."""
    rng = random.Random(trial)
    receive, send = _FORK.Pipe(duplex=False)
    worker = _FORK.Process(target=_killed_spender, args=(location, trial, send))
    worker.start()
    send.close()
    receive.poll(60)  # the first spend is through: the ledger is open and spending
    time.sleep(rng.uniform(0.0, 0.3))
    os.kill(worker.pid, signal.SIGKILL)
    worker.join(timeout=30)
    assert worker.exitcode == -signal.SIGKILL
    committed = []
    while receive.poll(0):
        try:
            committed.append(receive.recv())
        except EOFError:
            break
    return committed


@tiers.parametrize("trial", range(100), default=3)
def test_kill_9_at_a_random_point_loses_nothing_committed(trial, tmp_path):
    path = str(tmp_path / "kill.sqlite")
    _create(path)
    committed = kill_a_spender(path, trial)
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = dict(raw.execute("SELECT seq, admitted FROM gce_entries").fetchall())
    for seq, admitted in committed:
        assert rows[seq] == int(admitted)  # nothing the spender saw committed is lost
    assert sorted(rows) == list(range(1, len(rows) + 1))  # no gap, no half entry
    assert len(rows) in (len(committed) + 1, len(committed) + 2)  # at most one commit not yet reported
    with Accountant(path) as ledger:  # the ledger opens and goes on
        assert ledger.spend(0, gce.ApproxDP(0.001, 1e-12)).sequence == len(rows) + 1

"""Benchmark: what a DP-SGD training run costs, shuffled and Poisson, beside the peers, in one table.

Rows: Gaussian noise sigma, t steps an epoch, E epochs, target delta; rtol 1% (gce's default). Per row:
* **shuffled** (random allocation, one batch per example per epoch: Opacus' ``poisson_sampling=False``):
  gce's certified bracket (:func:`gce.priors.allocation.allocation_curve`), its width ``upper / lower - 1``
  and seconds; beside it the dominating PLD of dp-accounting's random-allocation code of pull request #414
  (``gaussian_allocation_pld`` at ``value_discretization_interval`` 1e-3: its default, 1e-4, takes minutes a
  point), run in the benchmark's own virtual environment (never a dependency of gce); the ratio of gce's
  upper end to the best peer's upper end.
* **Poisson** at rate ``q = 1 / t``, ``t E`` steps: gce's bracket (:func:`gce.priors.allocation.poisson_curve`,
  the Opacus bridge's ``"gce-poisson"``) and seconds, beside dp-accounting's PLD accountant (default
  discretisation, pessimistic) and Opacus' PRV accountant when Opacus is installed. Each of the three is
  timed as the best of ``--repeat`` runs (3; interleaved, the same question each time) where one run takes
  under a second: the rows of milliseconds are otherwise decided by a shared machine's noise.

The peer environment for #414 (once): take the pull request's ``python/dp_accounting`` from a snapshot of the
google/differential-privacy repository (``git --git-dir=<snapshot> archive refs/pull/414/head
python/dp_accounting | tar -x -C DIR``), then ``python3 -m venv DIR/venv && DIR/venv/bin/pip install
DIR/python/dp_accounting``, and pass ``--peer DIR/venv/bin/python`` (or set ``GCE_PEER_414``). Without it the
shuffled peer columns say "not installed".

Run: python benchmarks/bench_dp_sgd.py [--full] [--peer PYTHON] [--rows shuffled|poisson|both] [--repeat N]
(default: a selection of the grid; ``--full``: sigma 0.6, 1, 2, 3 x t 100, 1,000, 10,000 x E 1, 10, 100 x
delta 1e-5, 1e-8, 1e-12).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import subprocess
import sys
import time

#: The peer script run in #414's environment: epsilon at delta of the dominating PLD, and its seconds.
_PEER_414 = """
import json, sys, time
from dp_accounting.pld.random_allocation import api, definitions
sigma, t, epochs, delta, interval = json.loads(sys.argv[1])
start = time.perf_counter()
pld = api.gaussian_allocation_pld(
    definitions.PrivacyParams(sigma=sigma, num_steps=t, num_selected=1, num_epochs=epochs, delta=delta),
    definitions.AllocationSchemeConfig(value_discretization_interval=interval))
eps = pld.get_epsilon_for_delta(delta)
print(json.dumps([eps, time.perf_counter() - start]))
"""

SELECTION = [  # (sigma, t, epochs, delta): the cases and the corners of the grid
    (2.0, 1000, 5, 1e-8), (0.8, 1000, 10, 1e-8), (1.5, 500, 20, 1e-10), (1.0, 195, 50, 1e-5),
    (0.6, 100, 100, 1e-12), (1.0, 100, 1, 1e-8), (3.0, 10000, 1, 1e-5), (3.0, 1000, 100, 1e-12),
    (1.0, 1000, 10, 1e-12), (0.6, 10000, 10, 1e-8),
]


def full_grid() -> list[tuple[float, int, int, float]]:
    return list(itertools.product((0.6, 1.0, 2.0, 3.0), (100, 1000, 10000), (1, 10, 100), (1e-5, 1e-8, 1e-12)))


def gce_shuffled(sigma: float, t: int, epochs: int, delta: float) -> tuple[float, float, float, str]:
    from gce.priors.allocation import allocation_curve

    start = time.perf_counter()
    curve = allocation_curve(1.0 / sigma, t, epochs=epochs, delta=delta, rtol=0.01)
    low, high = curve.epsilon_bracket(delta)
    return low, high, time.perf_counter() - start, curve.description


def peer_414(python: str | None, sigma: float, t: int, epochs: int, delta: float, timeout: float
             ) -> tuple[float | None, float | None, str]:
    if not python:
        return None, None, "not installed"
    try:
        done = subprocess.run([python, "-c", _PEER_414, json.dumps([sigma, t, epochs, delta, 1e-3])],
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, timeout, f"over {timeout:g} s"
    if done.returncode != 0:
        return None, None, done.stderr.strip().splitlines()[-1][:60] if done.stderr.strip() else "failed"
    eps, seconds = json.loads(done.stdout.strip().splitlines()[-1])
    return float(eps), float(seconds), ""


def gce_poisson(sigma: float, t: int, epochs: int, delta: float) -> tuple[float, float, float]:
    from gce.priors.allocation import poisson_curve

    start = time.perf_counter()
    curve = poisson_curve([(1.0 / sigma, 1.0 / t, t * epochs)], rtol=0.01, delta=delta)
    low, high = curve.epsilon_bracket(delta)
    return low, high, time.perf_counter() - start


def pld_poisson(sigma: float, t: int, epochs: int, delta: float) -> tuple[float, float]:
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant

    start = time.perf_counter()
    accountant = pld_privacy_accountant.PLDAccountant()
    accountant.compose(dp_accounting.PoissonSampledDpEvent(1.0 / t, dp_accounting.GaussianDpEvent(sigma)),
                       t * epochs)
    return accountant.get_epsilon(delta), time.perf_counter() - start


def prv_poisson(sigma: float, t: int, epochs: int, delta: float) -> tuple[float | None, float | None]:
    try:
        from opacus.accountants import PRVAccountant
    except ImportError:
        return None, None
    start = time.perf_counter()
    accountant = PRVAccountant()
    accountant.history = [(sigma, 1.0 / t, t * epochs)]
    try:
        eps = accountant.get_epsilon(delta)
    except Exception:  # PRV's own limits (e.g. its error bound at tiny deltas): shown as a failure
        return None, time.perf_counter() - start
    return eps, time.perf_counter() - start


#: A Poisson row's tool is timed again (best of ``--repeat``) only where one run takes less than this.
_REPEAT_BELOW = 1.0


def poisson_row(sigma: float, t: int, epochs: int, delta: float, repeat: int) -> tuple:
    """gce's bracket and seconds, PLD's epsilon and seconds, PRV's epsilon and seconds: each tool's seconds the
    least of ``repeat`` interleaved runs where its first run took under :data:`_REPEAT_BELOW` seconds."""
    runs = [lambda: gce_poisson(sigma, t, epochs, delta), lambda: pld_poisson(sigma, t, epochs, delta),
            lambda: prv_poisson(sigma, t, epochs, delta)]
    first = [run() for run in runs]
    best = [result[-1] for result in first]
    for _ in range(repeat - 1):
        for i, run in enumerate(runs):
            if best[i] is not None and best[i] < _REPEAT_BELOW:
                best[i] = min(best[i], run()[-1])
    (low, high, _), (pld, _), (prv, _) = first
    return low, high, best[0], pld, best[1], prv, best[2]


def _number(x: float | None, fmt: str = ".5f") -> str:
    return "-" if x is None else "inf" if x == math.inf else format(x, fmt)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--peer", default=os.environ.get("GCE_PEER_414"))
    parser.add_argument("--rows", choices=("shuffled", "poisson", "both"), default="both")
    parser.add_argument("--peer-timeout", type=float, default=300.0)
    parser.add_argument("--repeat", type=int, default=3, help="Poisson rows: best of N runs where one is under 1 s")
    args = parser.parse_args()
    rows = full_grid() if args.full else SELECTION
    if args.rows in ("shuffled", "both"):
        print("shuffled (random allocation), rtol 1%; #414 at value_discretization_interval 1e-3")
        print(f"{'sigma':>5} {'t':>6} {'E':>4} {'delta':>6} | {'gce lower':>10} {'gce upper':>10} {'width':>7} "
              f"{'s':>6} | {'#414 upper':>10} {'s':>6} | upper/peer")
        for sigma, t, epochs, delta in rows:
            low, high, seconds, _ = gce_shuffled(sigma, t, epochs, delta)
            peer, peer_seconds, why = peer_414(args.peer, sigma, t, epochs, delta, args.peer_timeout)
            ratio = "-" if peer is None else f"{high / peer:.4f}"
            print(f"{sigma:5g} {t:6d} {epochs:4d} {delta:6.0e} | {_number(low):>10} {_number(high):>10} "
                  f"{(high / low - 1 if low > 0 else math.inf):7.2%} {seconds:6.1f} | "
                  f"{_number(peer) if peer is not None else why:>10} {_number(peer_seconds, '.1f'):>6} | {ratio}",
                  flush=True)
    if args.rows in ("poisson", "both"):
        print("\nPoisson at q = 1/t, t x E steps, rtol 1%; dp-accounting's PLD (default), Opacus' PRV; "
              f"seconds: best of {max(args.repeat, 1)} where one run is under {_REPEAT_BELOW:g} s")
        print(f"{'sigma':>5} {'t':>6} {'E':>4} {'delta':>6} | {'gce lower':>10} {'gce upper':>10} {'width':>7} "
              f"{'s':>6} | {'PLD':>10} {'s':>6} | {'PRV':>10} {'s':>6} | time gce/PLD")
        for sigma, t, epochs, delta in rows:
            low, high, seconds, pld, pld_seconds, prv, prv_seconds = poisson_row(sigma, t, epochs, delta,
                                                                                   max(args.repeat, 1))
            print(f"{sigma:5g} {t:6d} {epochs:4d} {delta:6.0e} | {_number(low):>10} {_number(high):>10} "
                  f"{(high / low - 1 if low > 0 else math.inf):7.2%} {seconds:6.1f} | {_number(pld):>10} "
                  f"{pld_seconds:6.1f} | {_number(prv):>10} {_number(prv_seconds, '.1f'):>6} | "
                  f"{seconds / pld_seconds:.2f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())

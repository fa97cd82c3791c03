"""Benchmark: what the accountants keep (issue 39, item 4), beside dp-accounting's PLDAccountant and Opacus' PRV.

Part 1, dp-accounting's interface. For each row (DP-SGD steps: ``PoissonSampledDpEvent(q, GaussianDpEvent(sigma))``
composed ``steps`` times), gce's ``GceAccountant`` and dp-accounting's ``PLDAccountant`` (its defaults) are timed
doing the same things in the same run, each on fresh accountants:

* ``eps``: compose, then the first ``get_epsilon(delta)`` (both timed: dp-accounting builds its distribution when
  an event is composed, gce when a question is asked);
* ``delta``: compose, then the first ``get_delta(eps)`` (``eps`` the value gce found), as the first query;
* ``eps>delta``: after ``get_epsilon(delta)``, the first ``get_delta(eps)`` (the composed law reused, or not);
* ``delta>eps``: after ``get_delta(eps)``, the first ``get_epsilon(delta)``;
* ``repeat``: ``get_epsilon(delta)`` asked again;
* ``+1``, ``+100``: ``compose(event, k)`` then ``get_epsilon(delta)`` (what a training loop does once an epoch).

Printed: gce's seconds, dp-accounting's, and gce / dp-accounting; then gce's own ratio ``delta / eps`` (the first
get_delta against the first get_epsilon, both as first query: issue 39 asks at most 1.5).

Part 2, Opacus. The accountants ``gce-poisson``, ``gce-shuffled`` and Opacus' ``prv`` after ``steps`` optimizer steps
(``step(noise_multiplier=sigma, sample_rate=q)``): the first ``get_epsilon(delta)``, again, after one more step and
after 100 more; seconds and the ratio to PRV.

Every time is one wall-clock run on a shared machine (both libraries imported and warmed up before); small
times (below 0.05 s) are the best of three.

Run: python benchmarks/bench_accountant_reuse.py [--quick]   (--quick: the first row of each part)
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Callable

import dp_accounting
from dp_accounting.pld import PLDAccountant

from gce.bridges.accountant import GceAccountant

#: (q, sigma, steps, delta)
ROWS = [
    (0.01, 1.0, 1000, 1e-5),    # the 1,000 steps
    (0.001, 0.8, 10000, 1e-5),
    (0.004, 1.5, 5000, 1e-8),
]
#: (q, sigma, steps, delta) of the Opacus part (the shuffled accountant: epochs of 1 / q batches)
OPACUS_ROWS = [
    (0.01, 1.0, 1000, 1e-5),
    (0.01, 1.0, 200, 1e-5),     # the 200-step run
    (0.001, 0.8, 10000, 1e-8),
]
QUICK = 0.05


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def fresh_timed(make: Callable[[], Callable[[], object]]) -> tuple[float, object]:
    """Seconds of ``make()()`` (a fresh set-up each run; only the call is timed), best of three when small."""
    seconds, value = timed(make())
    if seconds < QUICK:
        seconds = min([seconds] + [timed(make())[0] for _ in range(2)])
    return seconds, value


def accountant_row(cls: type, q: float, sigma: float, steps: int, delta: float, eps: float | None
                   ) -> dict[str, float]:
    event = dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma))

    def composed():
        accountant = cls()
        accountant.compose(event, steps)
        return accountant

    out: dict[str, float] = {}
    accountants: list = []

    def first_eps():
        def run():
            accountant = composed()
            accountants.append(accountant)
            return accountant.get_epsilon(delta)
        return run

    out["eps"], value = fresh_timed(first_eps)
    eps = float(value) if eps is None else eps
    out["value"] = float(value)

    def first_delta():
        return lambda: composed().get_delta(eps)

    out["delta"], _ = fresh_timed(first_delta)

    def eps_then_delta():
        accountant = composed()
        accountant.get_epsilon(delta)
        return lambda: accountant.get_delta(eps)

    out["eps>delta"], _ = fresh_timed(eps_then_delta)

    def delta_then_eps():
        accountant = composed()
        accountant.get_delta(eps)
        return lambda: accountant.get_epsilon(delta)

    out["delta>eps"], _ = fresh_timed(delta_then_eps)
    accountant = accountants[-1]
    out["repeat"], _ = fresh_timed(lambda: lambda: accountant.get_epsilon(delta))
    for more in (1, 100):
        out[f"+{more}"], _ = timed(lambda: (accountant.compose(event, more), accountant.get_epsilon(delta)))
    return out


def opacus_row(mechanism: str, q: float, sigma: float, steps: int, delta: float) -> dict[str, float]:
    from opacus.accountants import create_accountant

    accountant = create_accountant(mechanism=mechanism)
    for _ in range(steps):
        accountant.step(noise_multiplier=sigma, sample_rate=q)
    out: dict[str, float] = {}
    out["first"], value = timed(lambda: accountant.get_epsilon(delta))
    out["value"] = float(value)
    out["repeat"], _ = timed(lambda: accountant.get_epsilon(delta))
    for more in (1, 100):
        for _ in range(more):
            accountant.step(noise_multiplier=sigma, sample_rate=q)
        out[f"+{more}"], _ = timed(lambda: accountant.get_epsilon(delta))
    return out


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    warnings.filterwarnings("ignore")
    accountant_row(GceAccountant, 0.01, 1.0, 100, 1e-5, None)  # warm-up: imports, first builds
    accountant_row(PLDAccountant, 0.01, 1.0, 100, 1e-5, 1.0)
    columns = ["eps", "delta", "eps>delta", "delta>eps", "repeat", "+1", "+100"]
    print("Part 1: GceAccountant against dp-accounting's PLDAccountant (seconds; ratio gce / PLD)")
    print(f"{'q':>7} {'sigma':>5} {'steps':>6} {'delta':>6} {'eps (gce / PLD)':>17} | "
          + " | ".join(f"{c:>22}" for c in columns) + f" | {'delta / eps (gce)':>17}")
    for q, sigma, steps, delta in ROWS[:1] if quick else ROWS:
        ours = accountant_row(GceAccountant, q, sigma, steps, delta, None)
        theirs = accountant_row(PLDAccountant, q, sigma, steps, delta, ours["value"])
        cells = [f"{ours[c]:7.3f} {theirs[c]:7.3f} {ours[c] / theirs[c]:5.2f}x" for c in columns]
        print(f"{q:7.3g} {sigma:5.3g} {steps:6d} {delta:6.0e} {ours['value']:8.4f} {theirs['value']:8.4f} | "
              + " | ".join(cells) + f" | {ours['delta'] / ours['eps']:16.2f}x", flush=True)
    try:
        from gce.bridges.opacus import register
        register()
    except ImportError:
        print("Part 2 skipped: Opacus is not installed")
        return
    print()
    print("Part 2: Opacus accountants after `steps` optimizer steps (seconds; ratio to PRV)")
    parts = ["first", "repeat", "+1", "+100"]
    print(f"{'q':>7} {'sigma':>5} {'steps':>6} {'delta':>6} {'accountant':>12} {'epsilon':>8} | "
          + " | ".join(f"{c:>15}" for c in parts))
    for q, sigma, steps, delta in OPACUS_ROWS[:1] if quick else OPACUS_ROWS:
        prv = opacus_row("prv", q, sigma, steps, delta)
        for mechanism in ("prv", "gce-poisson", "gce-shuffled"):
            row = prv if mechanism == "prv" else opacus_row(mechanism, q, sigma, steps, delta)
            cells = [f"{row[c]:7.3f} {row[c] / prv[c]:6.2f}x" for c in parts]
            print(f"{q:7.3g} {sigma:5.3g} {steps:6d} {delta:6.0e} {mechanism:>12} {row['value']:8.4f} | "
                  + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

"""Benchmark: Opacus' noise calibration with gce's accountants against its PRV accountant (issue 39, item 2).

``opacus.accountants.utils.get_noise_multiplier(target_epsilon, target_delta, sample_rate, steps, accountant)``
(what ``PrivacyEngine.make_private_with_epsilon`` calls) bisects sigma, asking the accountant's ``get_epsilon``
at each. For each row of the grid (sample rate 1/100 and 1/1,000, 1,000 and 10,000 steps, delta 1e-5 and 1e-8,
target epsilon 1, and 4 on two rows), in one run:

* ``prv``: Opacus' PRV accountant (its defaults): sigma, seconds;
* ``gce-poisson``: gce's Poisson accountant (the same mechanism, certified): sigma, seconds, ratio to PRV;
* ``gce-shuffled``: gce's shuffled accountant (random allocation, the loader of ``poisson_sampling=False``; a
  different mechanism, so a different sigma): sigma, seconds, ratio to PRV;
* the epsilon a fresh accountant of the same mechanism reports at that sigma (gce's: the certified upper end at
  its ``rtol``), marked ``!`` should it exceed the target (Opacus' contract). gce's accountants decide the
  bisection's steps on brackets of :data:`gce.bridges.opacus.SEARCH_RTOL` where those decide, so the epsilon
  Opacus saw at the sigma returned lies within its tolerance of the target and the fresh one can lie a little
  further below (up to about 1.5%: a sigma up to about 1% larger than the finest bisection would return).

Every time is one wall-clock run on a shared machine, PRV first, after a warm-up of each accountant.

Run: python benchmarks/bench_opacus_calibration.py [--quick] [--no-shuffled]
     (--quick: the first three rows; --no-shuffled: PRV and gce-poisson only)
"""

from __future__ import annotations

import sys
import time
import warnings

#: (sample rate, steps, target epsilon, target delta)
ROWS = [
    (0.01, 1000, 1.0, 1e-5),
    (0.01, 1000, 1.0, 1e-8),
    (0.001, 1000, 1.0, 1e-5),
    (0.01, 10000, 1.0, 1e-5),
    (0.01, 10000, 4.0, 1e-8),
    (0.001, 10000, 1.0, 1e-5),
    (0.001, 10000, 1.0, 1e-8),
    (0.001, 10000, 4.0, 1e-8),
]


def calibrate(mechanism: str, rate: float, steps: int, epsilon: float, delta: float) -> tuple[float, float, float]:
    """(sigma, seconds, epsilon reported at sigma by a fresh accountant of the same mechanism)."""
    from opacus.accountants import create_accountant
    from opacus.accountants.utils import get_noise_multiplier

    start = time.perf_counter()
    sigma = get_noise_multiplier(target_epsilon=epsilon, target_delta=delta, sample_rate=rate, steps=steps,
                                 accountant=mechanism)
    seconds = time.perf_counter() - start
    accountant = create_accountant(mechanism=mechanism)
    accountant.history = [(sigma, rate, steps)]
    return float(sigma), seconds, float(accountant.get_epsilon(delta))


def main(argv: list[str]) -> None:
    from gce.bridges.opacus import register

    warnings.filterwarnings("ignore")
    register()
    mechanisms = ["prv", "gce-poisson"] + ([] if "--no-shuffled" in argv else ["gce-shuffled"])
    for mechanism in mechanisms:  # warm-up: imports, first builds
        calibrate(mechanism, 0.1, 10, 2.0, 1e-5)
    rows = ROWS[:3] if "--quick" in argv else ROWS
    print(f"{'rate':>6} {'steps':>6} {'eps':>4} {'delta':>6} | "
          + " | ".join(f"{m:>36}" for m in mechanisms))
    print(f"{'':>27} | " + " | ".join(f"{'sigma':>8} {'epsilon':>8} {'seconds':>8} {'/prv':>8}" for _ in mechanisms))
    totals = {m: 0.0 for m in mechanisms}
    for rate, steps, epsilon, delta in rows:
        cells, prv_seconds = [], None
        for mechanism in mechanisms:
            sigma, seconds, reported = calibrate(mechanism, rate, steps, epsilon, delta)
            totals[mechanism] += seconds
            prv_seconds = seconds if prv_seconds is None else prv_seconds
            ok = " !" if mechanism != "prv" and reported > epsilon else ""
            cells.append(f"{sigma:8.5f} {reported:8.4f}{ok:2} {seconds:8.2f} {seconds / prv_seconds:7.2f}x")
        print(f"{rate:6.3g} {steps:6d} {epsilon:4.3g} {delta:6.0e} | " + " | ".join(cells), flush=True)
    print("total seconds: " + ", ".join(f"{m} {s:.2f} ({s / totals['prv']:.2f}x)" for m, s in totals.items()))


if __name__ == "__main__":
    main(sys.argv[1:])

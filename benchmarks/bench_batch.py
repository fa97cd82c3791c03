"""Benchmark: batch composition on one grid (gce.accounting.batch) against dp-accounting.

(a) 1,000 distinct (eps_i, delta_i), eps uniform in [0.01, 0.2], delta uniform in [1e-12, 1e-10]
    (seed 0; the sum of the deltas stays below the target 1e-6): ours against dp-accounting composing
    the canonical PLDs one by one at its default interval 1e-4. Targets: 10x faster,
    epsilon at delta 1e-6 no larger (relative 1e-6).
(b) 100 distinct Poisson-subsampled Gaussians (rate in [0.001, 0.01], sigma in [0.8, 1.5], seed 0),
    1,000 steps each: ours against dp-accounting building the same PLDs and composing them directly
    (self_compose, then compose). Targets: no slower, epsilon no larger.

Times are wall clock, measured in the same run (ratios ours / theirs); the bracket (lower, upper) of
ours is printed beside, and its time separately (the lower curve is composed on first use).

(c) The cost of the accuracy: cases (a) and (b) at rtol 0.01 (the default) and 0.001, each to a bracket
    at most rtol wide at delta 1e-6 (the composition's grid for rtol, then its lower curve on grids
    halved while the bracket is wider, as a solve does: gce.solving._bracket), against the same
    dp-accounting run as (a) and (b). Reported, no target.

Run: python benchmarks/bench_batch.py [--quick]   (--quick: 200 and 20 instead of 1,000 and 100)
"""

from __future__ import annotations

import sys
import time

import numpy as np
from dp_accounting.pld import common, privacy_loss_distribution

from gce import ApproxDP, GaussianMechanism, Subsampled
from gce import effort
from gce.accounting import batch, pld
from gce.errors import NumericalLimitError

from timing import best_of

TARGET = 1e-6


def _points(n: int) -> list[tuple[float, float]]:
    rng = np.random.default_rng(0)
    return list(zip(rng.uniform(0.01, 0.2, n).tolist(), rng.uniform(1e-12, 1e-10, n).tolist()))


def _mechanisms(n: int) -> list[tuple[float, float]]:
    rng = np.random.default_rng(0)
    return list(zip(rng.uniform(0.001, 0.01, n).tolist(), rng.uniform(0.8, 1.5, n).tolist()))


def to_rtol(guarantees, rtol: float) -> tuple[batch.BatchCurve, float, float, float]:
    """The composition at ``rtol`` and its bracket at TARGET refined from below to ``rtol`` (the schedule of
    gce.solving._bracket: at most 6 halvings); (curve, lower, upper, grid width of the lower curve)."""
    curve = batch.BatchCurve(guarantees, rtol)
    low, high = curve.epsilon_bracket(TARGET)
    interval = curve.interval
    for _ in range(6):
        if effort.relative_width(low, high) <= rtol:
            break
        try:
            low = max(low, float(batch.lower_at(curve.plan.guarantees, interval / 2.0).epsilon(TARGET)))
        except NumericalLimitError:  # a grid beyond the work caps: the schedule ends there
            break
        interval /= 2.0
    return curve, low, high, interval


def part_c(n_points: int, n_mechanisms: int, t_theirs: tuple[float, float], steps: int = 1000) -> None:
    cases = (("(a)", lambda: [ApproxDP(e, d) for e, d in _points(n_points)], t_theirs[0]),
             ("(b)", lambda: {Subsampled(r, GaussianMechanism(s)): steps for r, s in _mechanisms(n_mechanisms)},
              t_theirs[1]))
    for name, guarantees, theirs in cases:
        for rtol in (0.01, 0.001):
            batch.clear_caches()
            start = time.perf_counter()
            curve, low, high, interval = to_rtol(guarantees(), rtol)
            seconds = time.perf_counter() - start
            print(f"(c) {name} rtol {rtol:g}: {seconds:8.3f} s, ratio to dp-accounting {seconds / theirs:.3f}; "
                  f"epsilon {high:.6f}, bracket {effort.relative_width(low, high):.3%} wide (grid {curve.interval:.3g}, "
                  f"lower curve on {interval:.3g})")


def part_a(n: int) -> tuple[bool, float]:
    points = _points(n)

    def theirs() -> float:
        total = None
        for eps, delta in points:
            one = privacy_loss_distribution.from_privacy_parameters(common.DifferentialPrivacyParameters(eps, delta))
            total = one if total is None else total.compose(one)
        return float(total.get_epsilon_for_delta(TARGET))

    def ours() -> batch.BatchCurve:
        batch.plan.cache_clear()
        return batch.batch_compose([ApproxDP(e, d) for e, d in points])

    t_ours, curve = best_of(lambda: ours(), repeat=3)
    e_ours = float(curve.epsilon(TARGET))
    t_bracket, (low, high) = best_of(lambda: ours().epsilon_bracket(TARGET), repeat=1)
    t_theirs, e_theirs = best_of(theirs, repeat=1)
    print(f"(a) {n} distinct (eps, delta): grid width {curve.interval:.3g}")
    print(f"    ours   {t_ours:8.3f} s  epsilon {e_ours:.6f}  bracket [{low:.6f}, {high:.6f}] "
          f"(width {effort.relative_width(low, high):.2%}; with the lower curve {t_bracket:.3f} s)")
    print(f"    theirs {t_theirs:8.3f} s  epsilon {e_theirs:.6f}")
    print(f"    time ratio ours/theirs {t_ours / t_theirs:.4f} (target <= 0.1), "
          f"epsilon ratio {e_ours / e_theirs:.8f} (target <= 1 + 1e-6)")
    return t_ours <= 0.1 * t_theirs and e_ours <= e_theirs * (1 + 1e-6), t_theirs


def part_b(n: int, steps: int = 1000) -> tuple[bool, float]:
    mechanisms = _mechanisms(n)

    def theirs() -> float:
        total = None
        for rate, sigma in mechanisms:
            one = privacy_loss_distribution.from_gaussian_mechanism(sigma, sampling_prob=rate).self_compose(steps)
            total = one if total is None else total.compose(one)
        return float(total.get_epsilon_for_delta(TARGET))

    def ours() -> batch.BatchCurve:
        batch.clear_caches()
        pld.clear_caches()
        return batch.batch_compose({Subsampled(rate, GaussianMechanism(sigma)): steps for rate, sigma in mechanisms})

    t_ours, curve = best_of(ours, repeat=1)
    e_ours = float(curve.epsilon(TARGET))
    t_theirs, e_theirs = best_of(theirs, repeat=1)
    print(f"(b) {n} subsampled Gaussians x {steps} steps: grid width {curve.interval:.3g}")
    print(f"    ours   {t_ours:8.3f} s  epsilon {e_ours:.6f}")
    print(f"    theirs {t_theirs:8.3f} s  epsilon {e_theirs:.6f}")
    print(f"    time ratio ours/theirs {t_ours / t_theirs:.4f} (target <= 1), "
          f"epsilon ratio {e_ours / e_theirs:.8f} (target <= 1 + 1e-6)")
    return t_ours <= t_theirs and e_ours <= e_theirs * (1 + 1e-6), t_theirs


def main() -> int:
    quick = "--quick" in sys.argv
    sizes = (200, 20) if quick else (1000, 100)
    ok, theirs_a = part_a(sizes[0])
    print()
    ok_b, theirs_b = part_b(sizes[1])
    print()
    part_c(*sizes, (theirs_a, theirs_b))
    ok &= ok_b
    print("\nall targets met" if ok else "\nTARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: ``gce.solve`` on scenarios of many distinct noise mechanisms.

(a) 100 distinct Poisson-subsampled Gaussians (rate in [0.001, 0.01], sigma in [0.8, 1.5], seed 0),
    one database each, repeat 1,000, no constraints, unbounded, delta 1e-6: ``gce.solve`` (bound,
    witness and classic baseline included) against dp-accounting building the same PLDs and composing
    them directly (self_compose, then compose). Targets: no slower, epsilon no larger (relative 1e-6).
(b) Mixed-kind scenarios of that size: 100 databases, each running a pure, an approximate, a Gaussian
    or a subsampled noise mechanism (repeats up to 1,000), at_most m, both neighbourhoods (bounded
    pairs take subsampled Laplace noise: a subsampled Gaussian has no (epsilon, delta) point). Target:
    every solve under 2 s (default time limit); the answer, the theorem, exactness and the bracket are
    printed beside.

Every solve starts from empty caches (dp-accounting's distributions are rebuilt), as a fresh process
would. Run: python benchmarks/bench_solve_mixed.py [--quick]   (--quick: 20 mechanisms in (a))
"""

from __future__ import annotations

import sys
import time

import numpy as np
from dp_accounting.pld import privacy_loss_distribution

from gce import (ApproxDP, GaussianMechanism, Invocation, LaplaceMechanism, PureDP, Scenario, Subsampled,
                 solve)
from gce.accounting import batch
from gce.constraints import AtMost, ConstraintSet

from timing import best_of

TARGET = 1e-6
#: The time limit of (a): room for the composition (about 30 s, dp-accounting's builds), not for the
#: bracket's lower curve (another 60 s of optimistic builds, a quarter of the time left at most).
TIME_LIMIT = 60.0


def clear_caches() -> None:
    batch.clear_caches()


def part_a(n: int, steps: int = 1000) -> bool:
    rng = np.random.default_rng(0)
    mechanisms = list(zip(rng.uniform(0.001, 0.01, n).tolist(), rng.uniform(0.8, 1.5, n).tolist()))
    scenario = Scenario(databases=n, invocations=[
        Invocation(i, Subsampled(rate, GaussianMechanism(sigma)), steps) for i, (rate, sigma) in enumerate(mechanisms)],
        delta=TARGET)

    def theirs() -> float:
        total = None
        for rate, sigma in mechanisms:
            one = privacy_loss_distribution.from_gaussian_mechanism(sigma, sampling_prob=rate).self_compose(steps)
            total = one if total is None else total.compose(one)
        return float(total.get_epsilon_for_delta(TARGET))

    def ours():
        clear_caches()
        return solve(scenario, time_limit=TIME_LIMIT)

    t_ours, report = best_of(ours, repeat=1)
    t_theirs, e_theirs = best_of(theirs, repeat=1)
    print(f"(a) solve: {n} subsampled Gaussians x {steps} steps, one database each, unbounded")
    print(f"    ours   {t_ours:8.3f} s  epsilon {report.epsilon:.6f} ({report.theorem}; exact {report.exact}; "
          f"bracket {getattr(report, 'bracket', None)})")
    print(f"    theirs {t_theirs:8.3f} s  epsilon {e_theirs:.6f}")
    print(f"    time ratio ours/theirs {t_ours / t_theirs:.4f} (target <= 1), "
          f"epsilon ratio {report.epsilon / e_theirs:.8f} (target <= 1 + 1e-6)")
    for note in report.notes:
        print(f"    note: {note}")
    return t_ours <= t_theirs and report.epsilon <= e_theirs * (1 + 1e-6)


def mixed(n: int, m: int, neighborhood: str, seed: int) -> Scenario:
    """n databases, a quarter each pure, approximate, Gaussian and subsampled noise; at_most m."""
    rng = np.random.default_rng(seed)
    invocations = []
    for i in range(n):
        kind = i % 4
        if kind == 0:
            g, repeat = PureDP(float(rng.uniform(0.01, 0.1))), int(rng.integers(1, 10))
        elif kind == 1:
            g, repeat = ApproxDP(float(rng.uniform(0.01, 0.1)), float(rng.uniform(1e-10, 1e-9))), int(rng.integers(1, 10))
        elif kind == 2:
            g, repeat = GaussianMechanism(float(rng.uniform(5.0, 20.0))), int(rng.integers(1, 100))
        else:
            rate, sigma = float(rng.uniform(0.001, 0.01)), float(rng.uniform(0.8, 1.5))
            inner = GaussianMechanism(sigma) if neighborhood == "unbounded" else LaplaceMechanism(sigma)
            g, repeat = Subsampled(rate, inner), 1000
        invocations.append(Invocation(i, g, repeat))
    return Scenario(databases=n, invocations=invocations, constraints=ConstraintSet(n, [AtMost(m)]),
                    neighborhood=neighborhood, delta=TARGET, title=f"{neighborhood}, at_most {m}, seed {seed}")


def part_b(n: int) -> bool:
    ok = True
    print(f"(b) mixed kinds, {n} databases (pure, approx, Gaussian, subsampled x 1,000), default time limit")
    for neighborhood in ("unbounded", "bounded"):
        for m in (5, 20, n):
            scenario = mixed(n, m, neighborhood, seed=m)
            clear_caches()
            start = time.perf_counter()
            report = solve(scenario)
            seconds = time.perf_counter() - start
            ok &= seconds < 2.0
            print(f"    {scenario.title:32s} {seconds:6.2f} s  epsilon {report.epsilon:.6g} ({report.theorem}; "
                  f"exact {report.exact}; bracket {getattr(report, 'bracket', None)}); classic {report.baselines['classic'].epsilon:.6g}")
            for note in report.notes:
                print(f"        note: {note}")
    return ok


def main() -> int:
    quick = "--quick" in sys.argv
    ok = part_a(20 if quick else 100)
    print()
    ok &= part_b(100)
    print("\nall targets met" if ok else "\nTARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

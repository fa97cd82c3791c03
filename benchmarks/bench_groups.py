"""Benchmark: many invocation groups, and none vs at least one of many databases, under the time limit.

(a) k single-database groups, database i running ApproxDP(0.001 + 1e-5 i, 1e-12), at most 50 members,
    unbounded, delta 1e-6: k = 2,000 at the default limit (5 s) and k = 20,000 at limit 10. The exact
    worst case is the 50 weakest guarantees composed. Peer: dp-accounting composing that multiset
    (``from_privacy_parameters`` per guarantee, composed), measured in the same run. Targets: ours within
    the limit (and within 1.1 x limit + 0.5 s in any case), epsilon within 1% of the peer's or below it.
(b) 10,000 databases, a Gaussian mechanism (sigma 50) on each, h0 = in none, h1 = uniform over the
    non-empty sets, delta at epsilon 2, at limits 5 and 10. Peer: dp-accounting composing the 10,000
    Gaussians (the classic experiment; ``from_gaussian_mechanism(...).self_compose``), the same run; and
    dp-accounting's Poisson-subsampled Gaussian at rate 1/2 composed 10,000 times (the same question up to
    the empty set's share 2^-10,000), whose delta must lie in our bracket. Targets: within 1.1 x limit +
    0.5 s; within the default rtol (1%) or the report says the limit was reached.

Each line prints the seconds, the limit, whether the limit was reached, the answer, the classic baseline
of the report and the ratios to the peer. Run: python benchmarks/bench_groups.py [--quick] (--quick: (a)
at 2,000 only, (b) at limit 5 only).
"""

from __future__ import annotations

import sys
import time

from dp_accounting.pld import privacy_loss_distribution

from gce import ApproxDP, AtMost, ConstraintSet, Invocation, Point, Scenario, Uniform, solve
from gce.accounting.guarantees import GaussianMechanism

DELTA = 1e-6
MEMBERS = 50
SIGMA, EPSILON = 50.0, 2.0


def _groups(k: int) -> Scenario:
    invocations = [Invocation(i, ApproxDP(0.001 + 1e-5 * i, 1e-12)) for i in range(k)]
    return Scenario(k, invocations, ConstraintSet(k, (AtMost(MEMBERS),)), delta=DELTA)


def _peer_groups(k: int) -> tuple[float, float]:
    """dp-accounting: the 50 weakest guarantees composed (the exact worst pair's multiset); seconds, epsilon."""
    start = time.perf_counter()
    total = None
    for i in range(k - MEMBERS, k):
        one = privacy_loss_distribution.from_privacy_parameters(
            privacy_loss_distribution.common.DifferentialPrivacyParameters(0.001 + 1e-5 * i, 1e-12))
        total = one if total is None else total.compose(one)
    return time.perf_counter() - start, float(total.get_epsilon_for_delta(DELTA))


def _peer_gaussians(n: int) -> tuple[float, float]:
    """dp-accounting: n Gaussians of sigma composed (the classic experiment); seconds, delta at EPSILON."""
    start = time.perf_counter()
    pld = privacy_loss_distribution.from_gaussian_mechanism(SIGMA).self_compose(n)
    return time.perf_counter() - start, float(pld.get_delta_for_epsilon(EPSILON))


def _peer_subsampled(n: int) -> tuple[float, float]:
    """dp-accounting: n Gaussians of sigma, each Poisson-subsampled at rate 1/2, composed; seconds, delta."""
    start = time.perf_counter()
    pld = privacy_loss_distribution.from_gaussian_mechanism(SIGMA, sampling_prob=0.5).self_compose(n)
    return time.perf_counter() - start, float(pld.get_delta_for_epsilon(EPSILON))


def _line(what: str, seconds: float, limit: float, report, value: float, peer_seconds: float, peer: float,
          name: str) -> bool:
    classic = report.baselines.get("classic")
    within = seconds <= 1.1 * limit + 0.5
    print(f"{what}: {seconds:7.2f} s at limit {limit:g} ({'within' if within else 'OVER'} 1.1 x limit + 0.5 s), "
          f"time limit reached: {report.time_limit_reached}")
    print(f"    {name} {value:.6g} ({report.theorem}; bracket {report.bracket}); classic baseline "
          f"{'-' if classic is None else f'{classic.epsilon:.6g} / {classic.delta:.3g} ({classic.theorem})'}")
    print(f"    peer (dp-accounting) {peer_seconds:.2f} s, {name} {peer:.6g}: time ratio ours/peer "
          f"{seconds / peer_seconds:.3f}, {name} ratio ours/peer {value / peer:.6f}")
    for note in report.notes:
        print(f"    note: {note[:200]}")
    return within


def part_a(k: int, limit: float) -> bool:
    scenario = _groups(k)
    start = time.perf_counter()
    report = solve(scenario, time_limit=limit)
    seconds = time.perf_counter() - start
    peer_seconds, peer = _peer_groups(k)
    return _line(f"(a) {k:,} single-database groups, at most {MEMBERS}", seconds, limit, report, report.epsilon,
                 peer_seconds, peer, "epsilon")


def part_b(n: int, limit: float) -> bool:
    scenario = Scenario(n, [Invocation(i, GaussianMechanism(SIGMA)) for i in range(n)],
                        hypotheses=(Point(()), Uniform(1)), epsilon=EPSILON)
    start = time.perf_counter()
    report = solve(scenario, time_limit=limit)
    seconds = time.perf_counter() - start
    peer_seconds, peer = _peer_gaussians(n)
    within = _line(f"(b) none vs at least one of {n:,} databases, Gaussian sigma {SIGMA:g}", seconds, limit,
                   report, report.delta, peer_seconds, peer, "delta")
    same_seconds, same = _peer_subsampled(n)
    low, high = report.bracket
    accurate = report.accuracy is not None and report.accuracy <= 0.01
    verdict = "within rtol" if accurate else "time limit reached" if report.time_limit_reached else "NOT within rtol"
    print(f"    peer (dp-accounting, Poisson at rate 1/2) {same_seconds:.2f} s, delta {same:.6g}: time ratio "
          f"ours/peer {seconds / same_seconds:.3f}, delta ratio ours/peer {report.delta / same:.6f}, "
          f"{'inside' if low <= same * 1.001 and same * 0.999 <= high else 'OUTSIDE'} our bracket; accuracy "
          f"{report.accuracy:.3%} ({verdict})")
    return within and (accurate or report.time_limit_reached)


def main() -> None:
    quick = "--quick" in sys.argv
    results = [part_a(2_000, 5.0)]
    if not quick:
        results.append(part_a(20_000, 10.0))
    results.append(part_b(10_000, 5.0))
    if not quick:
        results.append(part_b(10_000, 10.0))
    print("all within 1.1 x limit + 0.5 s" if all(results) else "SOME OVERRAN")


if __name__ == "__main__":
    main()

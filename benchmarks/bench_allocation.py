"""Benchmark: random allocation (gce.priors.allocation) against Poisson subsampling and PLD_accounting.

Cases (delta 1e-6, Gaussian noise sigma, t steps, each record in k of them, one epoch):
(a) sigma 1, t = 1,000, k = 1: target (issue 12) under 6 s with a bracket at most 0.5% wide.
(b) sigma 2, t = 100, k = 10: target under 60 s.
(c) sigma 1, t = 10 and 100, k = 1; sigma 3, t = 100, k = 10; sigma 1, t = 20, k = 2 (the issue's values).
Peers measured in the same run:
* dp-accounting's Poisson-subsampled Gaussian at rate k/t, composed t times (the reference point: the same
  expected batch size; its epsilon is printed, and its time);
* PLD_accounting (PyPI, the implementation of arXiv 2602.17284) where it is installed: the script says so
  when it is not (it is not a dependency of gce).

Run: python benchmarks/bench_allocation.py
"""

from __future__ import annotations

import importlib.util

from dp_accounting.pld import privacy_loss_distribution

from gce import GaussianMechanism, Invocation, Point, Scenario, Uniform, solve
from gce.priors.allocation import allocation_curve

from timing import best_of

DELTA = 1e-6


def poisson(sigma: float, t: int, k: int) -> float:
    one = privacy_loss_distribution.from_gaussian_mechanism(sigma, sampling_prob=k / t)
    return float(one.self_compose(t).get_epsilon_for_delta(DELTA))


def case(sigma: float, t: int, k: int, limit: float | None = None, width: float | None = None) -> bool:
    seconds, curve = best_of(lambda: allocation_curve(1.0 / sigma, t, k, delta=DELTA), repeat=1)
    low, high = curve.epsilon_bracket(DELTA)
    t_poisson, e_poisson = best_of(lambda: poisson(sigma, t, k), repeat=1)
    ok = (limit is None or seconds <= limit) and (width is None or (high - low) / high <= width)
    print(f"sigma {sigma:g}, t {t}, k {k}: epsilon in [{low:.5f}, {high:.5f}] "
          f"(width {(high - low) / high:.3%}) in {seconds:.2f} s"
          + (f" (target < {limit:g} s)" if limit else ""))
    print(f"    Poisson subsampling at rate k/t (dp-accounting): epsilon {e_poisson:.5f} in {t_poisson:.2f} s; "
          f"time ratio ours/theirs {seconds / t_poisson:.3f}")
    print(f"    {curve.description}")
    return ok


def through_solve() -> None:
    scenario = Scenario(100, tuple(Invocation(i, GaussianMechanism(1.0)) for i in range(100)),
                        hypotheses=(Point(()), Uniform(1, 1)), delta=DELTA)
    seconds, report = best_of(lambda: solve(scenario), repeat=1)
    print(f"solve(): 1 of 100, sigma 1: {report.theorem}, epsilon {report.epsilon:.5f}, bracket "
          f"{report.bracket}, worst pair {report.baselines['worst pair'].epsilon:.4f}, {seconds:.2f} s")


def pld_accounting() -> None:
    if importlib.util.find_spec("PLD_accounting") is None:
        print("PLD_accounting (PyPI) is not installed here: no peer measurement of arXiv 2602.17284's code "
              "(the issue quotes 62 s for t = 1,000, k = 1 on this machine class)")
        return
    import PLD_accounting  # noqa: F401  (present: report its version; its API differs between releases)
    print(f"PLD_accounting {getattr(PLD_accounting, '__version__', '?')} is installed; compare by hand")


if __name__ == "__main__":
    results = [case(1.0, 1000, 1, limit=6.0, width=0.005), case(2.0, 100, 10, limit=60.0)]
    for args in ((1.0, 10, 1), (1.0, 100, 1), (3.0, 100, 10), (1.0, 20, 2)):
        case(*args)
    through_solve()
    pld_accounting()
    print("targets met" if all(results) else "targets NOT met")

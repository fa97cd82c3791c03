"""Benchmark: exact "none vs at least one" prior (001 Sec. V-B) for k = 200 and k = 1,000 databases.

Each of k databases runs one ApproxDP(EPS, DELTA) mechanism; the adversary tests
h0 = "in none of them" against h1 = uniform over the non-empty sets (001 Sec.
III-A, Example 1). We print, measured in this run:

* our exact count-based curve (gce.priors.exact.exact_curve): time and epsilon at
  TARGET, plus the generic recursion (the same prior with sizes capped at k - 1,
  which has no closed form) to show what a non-geometric prior costs;
* 001 Cor. 7's (epsilon, delta) (simple composition of rate-1/2 subsampled
  mechanisms): its epsilon counts at TARGET only when its delta is <= TARGET;
* a peer, dp-accounting's privacy-loss distributions: the k mechanisms
  amplified by rate-1/2 Poisson subsampling (Balle et al. 2018, Thm. 8) and
  composed (pessimistic rounding). That is the subsampling route of 001 Sec.
  V-B; strictly it bounds h1 = uniform over *all* sets (the empty one
  included), whose exact value is printed next to it (Rates(1/2)).

Ratios are ours / theirs (< 1: ours is smaller, i.e. tighter; all are valid).
Per-invocation delta is 1e-10 by default: with 1e-8 the chance that one of the
~k/2 member databases reveals itself already exceeds 1e-6 at k = 1,000, so no
finite epsilon exists at delta = 1e-6 (printed as inf).

Run: python benchmarks/bench_composite.py [EPS DELTA]
"""

from __future__ import annotations

import math
import sys

from gce.priors.exact import exact_curve
from gce.constraints import ConstraintSet
from gce.accounting.guarantees import ApproxDP
from gce.priors.hypotheses import Point, Rates, Uniform
from gce.model import Invocation

from timing import best_of

EPS, DELTA, TARGET = 0.1, 1e-10, 1e-6



def _ratio(a: float, b: float) -> str:
    return f"{a / b:.4f}" if math.isfinite(a) and math.isfinite(b) else "n/a (no finite epsilon)"


def corollary_7(k: int, eps1: float, delta1: float) -> tuple[float, float]:
    """001 Cor. 7: eps = ln[((e^eps' + 1)^k - 1) / (2^k - 1)], delta = 2^(k-1) k delta' / (2^k - 1), in log space."""
    log_top = k * math.log1p(math.exp(eps1)) + math.log1p(-math.exp(-k * math.log1p(math.exp(eps1))))
    log_bottom = k * math.log(2.0) + math.log1p(-(2.0 ** -k))
    delta = k * delta1 / (2.0 * -math.expm1(-k * math.log(2.0)))
    return log_top - log_bottom, delta


def dp_accounting_subsampled(k: int, eps1: float, delta1: float, target: float) -> float:
    from dp_accounting.pld import common, privacy_loss_distribution

    eps_amp = math.log1p(0.5 * math.expm1(eps1))  # Balle et al. 2018, Thm. 8 at rate 1/2
    pld = privacy_loss_distribution.from_privacy_parameters(common.DifferentialPrivacyParameters(eps_amp, delta1 / 2))
    return float(pld.self_compose(k).get_epsilon_for_delta(target))


def main(eps1: float = EPS, delta1: float = DELTA, target: float = TARGET) -> None:
    dp_accounting_subsampled(2, eps1, delta1, target)  # import dp-accounting outside the timings
    print(f"k databases, one ApproxDP({eps1}, {delta1:g}) each; h0 = none, h1 = at least one; "
          f"epsilon at delta = {target:g}")
    for k in (200, 1000):
        cs = ConstraintSet(k)
        invocations = [Invocation(i, ApproxDP(eps1, delta1)) for i in range(k)]
        t_ours, curve = best_of(lambda: exact_curve(Point(()), Uniform(min_members=1), invocations, cs))
        ours = float(curve.epsilon(target))
        t_generic, generic = best_of(lambda: exact_curve(Point(()), Uniform(1, k - 1), invocations, cs), repeat=1)
        cor_eps, cor_delta = corollary_7(k, eps1, delta1)
        cor_at_target = cor_eps if cor_delta <= target else math.inf
        _, all_sets = best_of(lambda: exact_curve(Point(()), Rates((0.5,) * k), invocations, cs), repeat=1)
        t_peer, peer = best_of(lambda: dp_accounting_subsampled(k, eps1, delta1, target))
        print(f"\nk = {k}: {curve.method}, {curve.outcomes} outcome classes, delta floor {curve.delta_floor:.3g}")
        print(f"  ours (closed form)      {t_ours:8.3f} s   epsilon {ours:.6f}")
        print(f"  ours (generic recursion){t_generic:8.3f} s   epsilon {float(generic.epsilon(target)):.6f}"
              f"   (sizes 1..k-1)")
        print(f"  001 Cor. 7                          epsilon {cor_eps:.6f} at delta {cor_delta:.3g}"
              f" -> at {target:g}: {cor_at_target:.6f}   ours / Cor. 7 = {_ratio(ours, cor_at_target)}")
        print(f"  dp-accounting, rate 1/2 {t_peer:8.3f} s   epsilon {peer:.6f}   (uniform over all sets)")
        print(f"  ours, uniform over all sets          epsilon {float(all_sets.epsilon(target)):.6f}"
              f"   ours / dp-accounting = {_ratio(float(all_sets.epsilon(target)), peer)};"
              f" at-least-one / dp-accounting = {_ratio(ours, peer)}; time ratio {t_ours / t_peer:.3f}")


if __name__ == "__main__":
    args = [float(a) for a in sys.argv[1:3]]
    main(*args)

"""Benchmark: composite hypotheses by the coupling LP and by the subsampling route (gce.priors.coupling, gce.priors.subsampling).

Coupling: h0 and h1 each a distribution over 200 random membership sets of 30
databases (identical guarantees, mixed (eps, delta) guarantees, and mixed
Gaussian / zCDP / pure guarantees). Prints the time to build the curve (one
composition per distinct differing multiset), per delta(eps) evaluation (one
transport LP of 40,000 variables) and per epsilon(delta), and beside it the
peer every composite bound must beat: the worst pair over the supports (what
point-mass reasoning certifies without a coupling), as ratios ours / peer.
Target: one evaluation under 10 s.

Subsampling route: "in none" against "uniformly in at least one" of k
databases (001 Sec. V-B), against the worst pair (the classic composition of
all k databases) and, for context only, 001 Cor. 7's closed form (a
reproduction, not a guarantee). dp-accounting has no composite hypotheses, so
it appears only inside compose() where a pair needs it.

Run: python benchmarks/bench_coupling.py
"""

from __future__ import annotations

import math
import sys
import warnings

import numpy as np

from gce.priors.coupling import CouplingCurve
from gce.priors.subsampling import SubsamplingCurve
from gce.accounting.guarantees import ZCDP, ApproxDP, GaussianMechanism, PureDP
from gce.priors.hypotheses import Distribution
from gce.model import Invocation, invocation_multiset
from gce.priors.reproductions import corollary7
from gce.accounting.theorems import compose

from timing import best_of

DATABASES, SUPPORT, MEMBERSHIP = 30, 200, 0.3
EPS, DELTA = 1.0, 1e-5
TARGET_SECONDS = 10.0



def hypothesis(rng: np.random.Generator) -> Distribution:
    sets: dict[frozenset, None] = {}
    while len(sets) < SUPPORT:
        sets[frozenset(np.flatnonzero(rng.random(DATABASES) < MEMBERSHIP).tolist())] = None
    w = rng.random(SUPPORT)
    return Distribution(tuple(sets), tuple(w / w.sum()))


SCENARIOS = {
    "identical (0.1, 1e-7) x2": lambda d: Invocation(d, ApproxDP(0.1, 1e-7), repeat=2),
    "mixed (eps, delta)": lambda d: Invocation(
        d, [ApproxDP(0.1, 1e-7), PureDP(0.05), ApproxDP(0.3, 1e-8)][d % 3], repeat=1 + d % 3),
    "mixed Gaussian/zCDP/pure": lambda d: Invocation(
        d, [GaussianMechanism(4.0), ZCDP(0.01), PureDP(0.05)][d % 3], repeat=1 + d % 3),
}


MISSED: list[str] = []


def check(condition: bool, what: str) -> bool:
    if not condition:
        MISSED.append(what)
    return condition


def coupling_rows(rng: np.random.Generator) -> bool:
    ok = True
    print(f"coupling LP: supports of {SUPPORT} sets over {DATABASES} databases; delta at eps = {EPS}, "
          f"epsilon at delta = {DELTA:g}\n")
    print(f"{'guarantees':<26} {'compositions':>12} {'build s':>8} {'delta s':>8} {'eps s':>7} "
          f"{'delta':>10} {'worst pair':>10} {'ratio':>7} {'epsilon':>8} {'worst pair':>10} {'ratio':>7}")
    for name, make in SCENARIOS.items():
        h0, h1 = hypothesis(rng), hypothesis(rng)
        invocations = [make(d) for d in range(DATABASES)]
        t_build, curve = best_of(lambda: CouplingCurve(h0, h1, invocations), repeat=1)
        t_delta, d = best_of(lambda: float(curve.delta(EPS)), repeat=1)
        t_eps, e = best_of(lambda: float(curve.epsilon(DELTA)), repeat=1)
        d_peer, e_peer = curve.worst_pair_delta(EPS), curve.worst_pair_epsilon(DELTA)
        size = f"{curve.compositions}" + ("" if curve.coarsened is None else f" (x{curve.coarsened})")
        print(f"{name:<26} {size:>12} {t_build:>8.2f} {t_delta:>8.2f} {t_eps:>7.2f} {d:>10.3e} {d_peer:>10.3e} "
              f"{d / d_peer:>7.3f} {e:>8.4f} {e_peer:>10.4f} {e / e_peer:>7.3f}")
        ok &= check(t_delta < TARGET_SECONDS, f"coupling {name}: delta(eps) took {t_delta:.1f} s")
        ok &= check(t_eps < TARGET_SECONDS, f"coupling {name}: epsilon(delta) took {t_eps:.1f} s")
        ok &= check(d <= d_peer + 1e-12 and e <= e_peer, f"coupling {name}: worse than the worst pair")
    return ok


def route_rows() -> bool:
    ok = True
    print(f"\nsubsampling route: h0 = {{}}, h1 = uniform over the non-empty sets of k databases; "
          f"epsilon at delta = {DELTA:g}\n")
    print(f"{'k':>5} {'guarantees':<22} {'build s':>8} {'eps s':>7} {'epsilon':>8} {'worst pair':>10} "
          f"{'ratio':>7} {'Cor. 7 (not a guarantee)':>25}")
    cases = [(k, "(0.5, 1e-7) each", lambda d: Invocation(d, ApproxDP(0.5, 1e-7))) for k in (4, 20, 200)]
    cases += [(20, "mixed (eps, delta)", lambda d: Invocation(d, [ApproxDP(0.5, 1e-7), PureDP(0.2)][d % 2])),
              (20, "Gaussian sigma 2", lambda d: Invocation(d, GaussianMechanism(2.0)))]
    for k, name, make in cases:
        invocations = [make(d) for d in range(k)]
        t_build, curve = best_of(lambda: SubsamplingCurve(invocations), repeat=1)
        t_eps, e = best_of(lambda: float(curve.epsilon(DELTA)), repeat=1)
        e_peer = compose(invocation_multiset(invocations)).epsilon(DELTA)
        c7 = ""
        if name.endswith("each"):
            r = corollary7(k, 0.5, 1e-7)
            c7 = f"({r.epsilon:.3f}, {r.delta:.1e})"
        ratio = f"{e / e_peer:.3f}" if math.isfinite(e_peer) else "-"
        print(f"{k:>5} {name:<22} {t_build:>8.2f} {t_eps:>7.2f} {e:>8.4f} {e_peer:>10.4f} {ratio:>7} "
              f"{c7:>25}")
        ok &= check(t_eps < TARGET_SECONDS, f"route k = {k} {name}: epsilon(delta) took {t_eps:.1f} s")
        ok &= check(e <= e_peer * (1 + 1e-9), f"route k = {k} {name}: worse than the worst pair")
    return ok


def main() -> int:
    warnings.simplefilter("ignore", RuntimeWarning)  # dp-accounting overflows harmlessly at large eps
    ok = coupling_rows(np.random.default_rng(2024))
    ok &= route_rows()
    print("\nall targets met" if ok else "\nTARGET MISSED:\n  " + "\n  ".join(MISSED))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

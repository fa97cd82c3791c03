"""001, Sec. V-B: "in none of the k databases" vs "in at least one", k = 2..20.

Every database runs one (0.5, 1e-8)-DP query. The table gives epsilon at a total
delta of 1e-6 by four routes:

* 001 Cor. 7 as printed (a labelled reproduction, not a guarantee): its pair
  (epsilon, delta_7) has delta_7 <= 1e-6 for k <= 20, so its epsilon stands;
* the subsampling route of 001 Thm. 3 in the sound convexity form;
* the coupling bound (h0 is a point mass, so the coupling is forced: the
  average of the pairs' curves at the same epsilon);
* the exact value (count-based sum over canonical pairs).

The point-mass worst case (all k queries composed) is shown for scale. Cor. 7 is
never below the exact value (at its own delta it is tight: the loss there is
the maximum), but it is one point of the curve; at 1e-6 the exact epsilon is
smaller by the ratio in the last column.

Run: python examples/none_vs_any.py
"""

from gce import ApproxDP, ConstraintSet, Invocation, Point, Uniform, compose
from gce.priors.exact import exact_curve
from gce.priors.coupling import CouplingCurve
from gce.priors.subsampling import SubsamplingCurve
from gce.priors.reproductions import corollary7

EPSILON, DELTA = 0.5, 1e-8
TARGET = 1e-6
COUPLING_UP_TO = 12  # the uniform prior has 2^k - 1 sets; the LP lists them


def routes(k: int) -> dict[str, float]:
    """epsilon of each route at total delta TARGET for k databases."""
    invocations = [Invocation(i, ApproxDP(EPSILON, DELTA)) for i in range(k)]
    constraints = ConstraintSet(k)
    cor7 = corollary7(k, EPSILON, DELTA)
    assert cor7.delta <= TARGET
    out = {"cor7": cor7.epsilon,
           "subsampling": float(SubsamplingCurve(invocations).epsilon(TARGET)),
           "exact": float(exact_curve(Point(()), Uniform(1), invocations, constraints).epsilon(TARGET)),
           "worst pair": compose({ApproxDP(EPSILON, DELTA): k}).epsilon(TARGET)}
    if k <= COUPLING_UP_TO:
        h0, h1 = Point(()).distribution(constraints), Uniform(1).distribution(constraints)
        out["coupling"] = float(CouplingCurve(h0, h1, invocations).epsilon(TARGET))
    return out


def main() -> None:
    print(f"k queries of ({EPSILON}, {DELTA:g})-DP, none vs at least one: epsilon at delta {TARGET:g}\n")
    print(f"{'k':>3} {'Cor. 7':>8} {'subsampl.':>9} {'coupling':>9} {'exact':>8} {'worst pair':>10} "
          f"{'Cor. 7/exact':>12}")
    for k in range(2, 21):
        r = routes(k)
        coupling = f"{r['coupling']:9.4f}" if "coupling" in r else f"{'-':>9}"
        print(f"{k:>3} {r['cor7']:8.4f} {r['subsampling']:9.4f} {coupling} {r['exact']:8.4f} "
              f"{r['worst pair']:10.4f} {r['cor7'] / r['exact']:12.3f}")


if __name__ == "__main__":
    main()

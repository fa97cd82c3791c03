"""Compose 365 identical (0.05, 1e-10)-DP queries under every compatible theorem.

The classic composition experiment (001, Sec. II): a curator answers one query on
each of the 365 hospitals a patient may have visited this year. Each theorem of
002 gives a valid epsilon at total delta 1e-6; Thm. III.3 is the exact optimum.

Run: python examples/composition_basics.py
"""

from gce import ApproxDP, compose
from gce.accounting.theorems import THEOREMS, as_multiset

QUERIES = {ApproxDP(epsilon=0.05, delta=1e-10): 365}
TARGET_DELTA = 1e-6


def main() -> None:
    multiset = as_multiset(QUERIES)
    print(f"365 invocations of (0.05, 1e-10)-DP, epsilon at total delta {TARGET_DELTA:g}\n")
    print(f"{'theorem':<22}{'epsilon':>10}   source")
    for theorem in THEOREMS:
        if theorem.accepts(multiset):
            eps = theorem.curve(multiset).epsilon(TARGET_DELTA)
            print(f"{theorem.name:<22}{eps:>10.4f}   {theorem.source}")
    best = compose(QUERIES)
    eps, _, name = best.at_delta(TARGET_DELTA)
    print(f"\ntightest: {name}, epsilon = {eps:.4f} (exact: {best.exact})")


if __name__ == "__main__":
    main()

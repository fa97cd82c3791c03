"""Independent references for the tests: brute force over canonical pairs.

For (eps, delta)-DP guarantees the canonical pair of 002 (eqs. 9-10; outputs
{0, 1, 2, 3}) is a worst case (002 Thm. II.5), so the exact privacy curve of a
composition is the hockey-stick divergence between the two product
distributions, computed here by enumerating every output tuple. This code is
deliberately naive and shares nothing with ``gce``.
"""

from __future__ import annotations

import decimal
import itertools
import math
from decimal import Decimal

import numpy as np


def canonical_pair(eps: float, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """P0 and P1 of 002 eqs. (9) and (10)."""
    a = (1 - delta) * math.exp(eps) / (1 + math.exp(eps))
    b = (1 - delta) / (1 + math.exp(eps))
    return np.array([delta, a, b, 0.0]), np.array([0.0, b, a, delta])


def product(points: list[tuple[float, float]]) -> tuple[np.ndarray, np.ndarray]:
    """Joint distributions of independent canonical pairs, over all 4^k outputs."""
    p0, p1 = np.ones(1), np.ones(1)
    for eps, delta in points:
        q0, q1 = canonical_pair(eps, delta)
        p0 = np.outer(p0, q0).ravel()
        p1 = np.outer(p1, q1).ravel()
    return p0, p1


def hockey_stick(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    """sup_S P(S) - e^eps Q(S) = sum_x (p(x) - e^eps q(x))_+."""
    return float(np.maximum(p - math.exp(eps) * q, 0.0).sum())


def exact_delta(points: list[tuple[float, float]], eps: float) -> float:
    """Exact delta of the composition of (eps_i, delta_i)-DP mechanisms, both directions."""
    p0, p1 = product(points)
    return max(hockey_stick(p0, p1, eps), hockey_stick(p1, p0, eps))


def kairouz_iii3_by_formula(k: int, eps: float, delta: float, target: float) -> float:
    """002 Thm. III.3 written term by term, for a second derivation of the same value.

    Evaluated in 60-digit decimal arithmetic with exact binomials, so k = 1,000
    neither overflows nor cancels.
    """
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        e, t, d = Decimal(eps), Decimal(target), Decimal(delta)
        total = Decimal(0)
        for l in range(k + 1):
            term = ((k - l) * e).exp() - (t + l * e).exp()
            if term > 0:
                total += math.comb(k, l) * term
        keep = (1 - d) ** k
        return float(1 - keep + keep * total / (1 + e.exp()) ** k)


def exhaustive_outputs(k: int):
    """All output tuples of k canonical pairs (for readers who want to see them)."""
    return itertools.product(range(4), repeat=k)


def mixture(
    support: list[tuple[frozenset[int] | set[int], float]],
    invocations: list[tuple[int, float, float]],
) -> np.ndarray:
    """The output distribution of a composite hypothesis over canonical mechanisms.

    ``support`` lists (membership set b, weight); ``invocations`` lists
    (database, eps, delta). Invocation j outputs from P1 of its canonical pair
    when its database is in b, else from P0; the hypothesis is the mixture over
    b of those product distributions (001, Sec. III-A; DESIGN.md, "Soundness
    first": the same post-processing of the canonical pair for every b).
    """
    total = np.zeros(4 ** len(invocations))
    for members, weight in support:
        joint = np.ones(1)
        for database, eps, delta in invocations:
            q0, q1 = canonical_pair(eps, delta)
            joint = np.outer(joint, q1 if database in members else q0).ravel()
        total += weight * joint
    return total


def mixture_delta(h0, h1, invocations, eps: float) -> float:
    """Exact delta(eps) between two composite hypotheses, both directions."""
    p0, p1 = mixture(h0, invocations), mixture(h1, invocations)
    return max(hockey_stick(p0, p1, eps), hockey_stick(p1, p0, eps))

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
    b of those product distributions (001, Sec. III-A; docs/design.md, "The canonical pair makes brute force
    possible": the same post-processing of the canonical pair for every b).
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


# ---------------------------------------------------------------------------
# Curve mechanisms (Gaussian, Laplace) mixed with canonical (eps, delta) pairs: privacy-loss distributions
#
# A mechanism is ("point", eps, delta) (its canonical pair), ("gauss", mu) (Gaussian noise, sensitivity /
# sigma = mu) or ("laplace", a) (Laplace noise, sensitivity / scale = a). For every one of them the pair
# (P, Q) and the swapped pair (Q, P) have the same privacy-loss distribution (the canonical pair by
# relabelling outputs 0 <-> 3, 1 <-> 2; Gaussian and Laplace noise by x -> sensitivity - x), so the loss of
# a composition, L = sum of independent losses L_i under P, gives the exact curve in both directions:
#
#     delta(eps) = sup_S P(S) - e^eps Q(S) = E_P[(1 - e^{eps - L})_+]    (L = +inf where Q = 0)
#
# Under P the losses are:
# * canonical pair: +inf with mass delta, +eps with (1 - delta) e^eps / (1 + e^eps), -eps with the rest
#   (output 3 has P-mass 0). Exact atoms.
# * Gaussian: N(mu^2 / 2, mu^2); a sum of Gaussians is one Gaussian with mu^2 = sum mu_i^2.
# * Laplace, L(x) = (|x - s| - |x|) / b for P = Lap(0, b), Q = Lap(s, b), a = s / b: L = +a for x <= 0
#   (mass 1/2), L = -a for x >= s (mass e^{-a} / 2), and L = a - 2x / b in between, whose density is
#   e^{(l - a) / 2} / 4 on (-a, a) (CDF (e^{(l - a) / 2} - e^{-a}) / 2; total mass (1 - e^{-a}) / 2).
#
# The canonical atoms are composed exactly (every distinct sum), the Gaussian in closed form: for an atom
# v of the rest of the loss, E[(1 - e^{eps - v - G})_+] with G ~ N(s^2/2, s^2) is
# Phi((v - eps)/s + s/2) - e^{eps - v} Phi((v - eps)/s - s/2). The Laplace losses are the only part
# discretised: on the lattice h Z, each Laplace loss rounded down (``rounding="down"``) or up, cell masses
# from the exact CDF, and the lattices convolved. Since (1 - e^{eps - L})_+ is non-decreasing in L and the
# rounding moves each Laplace loss by less than h, the two roundings bracket the exact curve:
#
#     delta_down(eps) <= delta(eps) <= delta_up(eps),  delta_up(eps) <= delta(eps - k h),
#
# with k Laplace mechanisms, so the epsilons at a target delta satisfy
# eps_down <= eps <= eps_up <= eps_down + 2 k h (plus the bisection's tolerance, 1e-10, and float
# round-off of sums of a few thousand terms). Without Laplace mechanisms the curve is exact.


def _binomial_atoms(eps: float, delta: float, count: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Finite loss atoms and their masses of ``count`` canonical (eps, delta) pairs, and the mass at +inf."""
    p = math.exp(eps) / (1 + math.exp(eps)) if eps < 700 else 1.0
    keep = (1 - delta) ** count
    j = np.arange(count + 1)
    masses = np.array([keep * math.comb(count, i) * p ** i * (1 - p) ** (count - i) for i in j])
    return eps * (2 * j - count), masses, 1.0 - keep


def point_atoms(points: list[tuple[float, float]]) -> tuple[np.ndarray, np.ndarray, float]:
    """The exact loss distribution under P of composed canonical pairs: finite atoms, masses, mass at +inf."""
    groups: dict[tuple[float, float], int] = {}
    for point in points:
        groups[point] = groups.get(point, 0) + 1
    values, masses, finite = np.zeros(1), np.ones(1), 1.0
    for (eps, delta), count in groups.items():
        v, m, leak = _binomial_atoms(eps, delta, count)
        values = (values[:, None] + v[None, :]).ravel()
        masses = (masses[:, None] * m[None, :]).ravel()
        finite *= 1.0 - leak
    order = np.argsort(values, kind="stable")
    values, masses = values[order], masses[order]
    return values, masses, 1.0 - finite


def laplace_lattice(a: float, h: float, rounding: str) -> tuple[int, np.ndarray]:
    """(offset, masses): the loss of one Laplace mechanism (a = sensitivity / scale) rounded onto h Z."""
    step = math.floor if rounding == "down" else math.ceil
    lo, hi = math.floor(-a / h), math.ceil(a / h)
    masses = np.zeros(hi - lo + 1)
    edges = np.clip(np.arange(lo, hi + 1) * h, -a, a)
    cdf = 0.5 * (np.exp((edges - a) / 2) - math.exp(-a))
    cells = np.diff(cdf)  # mass of the continuous part in [lo + i, lo + i + 1] h
    if rounding == "down":
        masses[:-1] += cells
    else:
        masses[1:] += cells
    masses[step(a / h) - lo] += 0.5
    masses[step(-a / h) - lo] += 0.5 * math.exp(-a)
    return lo, masses


def loss_distribution(mechanisms: list[tuple], h: float = 1e-3, rounding: str = "down"):
    """(values, masses, mass at +inf, s): the loss of the non-Gaussian mechanisms, Laplace ones rounded onto
    h Z, and s = sqrt(sum mu^2) of the Gaussian ones (the Gaussian part is N(s^2/2, s^2), kept exact)."""
    points = [(m[1], m[2]) for m in mechanisms if m[0] == "point"]
    s = math.sqrt(sum(m[1] ** 2 for m in mechanisms if m[0] == "gauss"))
    values, masses, inf_mass = point_atoms(points)
    lo, lattice = 0, np.ones(1)
    for m in mechanisms:
        if m[0] == "laplace":
            off, part = laplace_lattice(m[1], h, rounding)
            lo, lattice = lo + off, np.convolve(lattice, part)
    keep = lattice > 0
    grid = (lo + np.arange(len(lattice)))[keep] * h
    values = (values[:, None] + grid[None, :]).ravel()
    masses = (masses[:, None] * lattice[keep][None, :]).ravel()
    return values, masses, inf_mass, s


def loss_delta(distribution, eps: float) -> float:
    """E_P[(1 - e^{eps - L})_+] of a :func:`loss_distribution`, the Gaussian part in closed form."""
    from scipy.special import log_ndtr, ndtr

    values, masses, inf_mass, s = distribution
    if s == 0.0:
        above = values > eps
        return float(inf_mass + (masses[above] * -np.expm1(eps - values[above])).sum())
    z = (values - eps) / s
    terms = ndtr(z + s / 2) - np.exp(eps - values + log_ndtr(z - s / 2))
    return float(inf_mass + (masses * np.maximum(terms, 0.0)).sum())


def loss_epsilon(distribution, delta: float, tolerance: float = 1e-10) -> float:
    """The smallest eps (within ``tolerance``, absolute) with :func:`loss_delta` <= ``delta``: inf when the mass at +inf
    alone exceeds ``delta``. The answer is an upper end of the bisection bracket."""
    if distribution[2] > delta * (1 + 1e-12):
        return math.inf
    if distribution[3] > 0.0 and distribution[2] >= delta * (1 - 1e-12):
        return math.inf  # a Gaussian adds to the mass at +inf at every eps: the floor equal to delta is never met
    above = lambda eps: loss_delta(distribution, eps) > delta * (1 + 1e-9) + 1e-15  # round-off at a floor
    if not above(0.0):
        return 0.0
    lo, hi = 0.0, 1.0
    while above(hi):
        lo, hi = hi, 2 * hi
        if hi > 1e4:
            return math.inf
    while hi - lo > tolerance:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if above(mid) else (lo, mid)
    return hi


def mechanisms_epsilon(mechanisms: list[tuple], delta: float, h: float = 1e-3, rounding: str = "down") -> float:
    """Epsilon at ``delta`` of composing ``mechanisms``: a lower bound on the exact one with ``rounding="down"``,
    an upper bound with ``"up"``; the two differ by at most 2 h (number of Laplace mechanisms)."""
    if not mechanisms:
        return 0.0
    return loss_epsilon(loss_distribution(mechanisms, h, rounding), delta)


def mechanisms_error(mechanisms: list[tuple], h: float = 1e-3) -> float:
    """The stated error of :func:`mechanisms_epsilon`: how far either rounding may be from the exact epsilon."""
    return sum(m[0] == "laplace" for m in mechanisms) * h + 1e-10


# ---------------------------------------------------------------------------
# Allowed sets and their symmetric differences for up to ~16 databases, by bitmasks


def allowed_masks(n: int, satisfied) -> np.ndarray:
    """Bitmasks (bit i: database i) of every subset of range(n) that ``satisfied(frozenset)`` accepts."""
    return np.array([mask for mask in range(1 << n)
                     if satisfied(frozenset(i for i in range(n) if mask >> i & 1))], dtype=np.int64)


def xor_reachable(masks: np.ndarray, n: int) -> np.ndarray:
    """Every b0 XOR b1 over two allowed sets, as bitmasks: the support of the XOR-convolution of the
    indicator with itself, by the Walsh-Hadamard transform (counts are integers below 2^33: exact)."""
    f = np.zeros(1 << n)
    f[masks] = 1.0
    for bit in range(n):  # in-place fast Walsh-Hadamard transform
        f = f.reshape(-1, 2, 1 << bit)
        f = np.concatenate([f[:, :1] + f[:, 1:], f[:, :1] - f[:, 1:]], axis=1).ravel()
    f = f * f
    for bit in range(n):
        f = f.reshape(-1, 2, 1 << bit)
        f = np.concatenate([f[:, :1] + f[:, 1:], f[:, :1] - f[:, 1:]], axis=1).ravel()
    return np.flatnonzero(np.rint(f / (1 << n)) > 0)

"""An independent reference for random allocation with Gaussian mechanisms: nested tanh-sinh quadrature.

No code is shared with gce: this module is the check. Every prior the tests need ("in none" against "in
exactly k of t", per-database rates, uniform over a few sizes, two epochs) gives a likelihood ratio under Q
that is *multi-affine* in the databases' ratios ``W_i = exp(mu Z_i - mu^2 / 2)`` (``Z_i`` iid N(0, 1) under
Q) with nonnegative coefficients::

    R(W) = sum_S c_S prod_{i in S} W_i,   delta_PQ(eps) = E_Q[(R - e^eps)_+],   delta_QP(eps) = E_Q[(1 - e^eps R)_+]

(for k of t, ``c_S = 1 / C(t, k)`` on the k-sets: ``R = e_k(W) / C(t, k)``). Since ``E W_i = 1``,
``E[R | W_1..W_j] = R(W_1..W_j, 1, ..., 1)``, and since the coefficients are nonnegative the least value of
``R`` given ``W_1..W_j`` is ``R(W_1..W_j, 0, ..., 0)``.

How it is integrated
--------------------
The last ``W_t`` enters affinely, ``R = a + b W_t``: its expectation is a lognormal call or put (Black and
Scholes, in closed form). The other coordinates are integrated one at a time, nested, in the probability
variable ``u = Phi(z)`` (no box: the Gaussian weight becomes the uniform one and the infinite ends become the
ends of ``(0, 1)``), each by the tanh-sinh rule (Takahasi and Mori, "Double exponential formulas for
numerical integration", Publ. RIMS 9, 1974), which keeps its exponential convergence with singular ends.

The split. The call ``E[(R - K)_+ | w_1..w_j]``, as a function of the coordinates integrated so far, is not
analytic where the infimum ``R(w_1..w_j, 0, ..., 0)`` of ``R`` over the rest crosses the strike ``K``: there
the strike meets the lower end of the law of the rest, whose density is flat there (a lognormal's density is
about ``exp(-(log x)^2 / (2 mu^2))`` at small ``x``: C-infinity, not analytic). A polynomial rule across that
surface converges slowly, and the more so the larger ``mu`` (this is why Gauss-Hermite and Gauss-Legendre
panels did: at t = 2, 1 of 2, panels of 32 Gauss-Legendre nodes moved by 3e-11 at mu = 1 and by 8e-8 at
mu = 2 from 5,120 to 10,240 nodes). That infimum is affine in ``w_j``, so the surface is one point ``w_j*``
per outer node, computed exactly, and the rule is split there. Above it ``R >= K`` surely (nonnegative
coefficients) and the conditional call is ``E[R | w_1..w_j] - K``, integrated in closed form (the put is
0); below it the kink is an end of the piece, which tanh-sinh handles.

The error estimate (:class:`Estimate`)
--------------------------------------
* *Resolution* (an estimate, not a proof): the rule with ``STEPS[0]`` and ``STEPS[1]`` steps a side (step
  ``S_MAX / steps``); the difference is taken as the error of the finer value. tanh-sinh roughly squares its
  error when the step is halved, so this is pessimistic once the coarse rule has converged (measured: the
  slowest case here, the call of 1 of 4 at mu = 1, eps = 2, moves by 3e-12 from 50 to 100 steps and by 2e-14
  from 60).
* *Trimmed ends* (a bound): each rule keeps ``|s| <= S_MAX``; the ends it drops are a fraction at most
  ``tau = 1 / (1 + exp(pi sinh S_MAX))`` of its piece at each end, so Q-probability at most ``2 tau`` in each
  coordinate given the earlier ones. The put's integrand ``e^eps (1/e^eps - R)_+`` is at most 1: that part
  of delta_QP is at most ``2 tau`` a coordinate. The call's integrand is at most ``R = dP/dQ``: that part of
  delta_PQ is at most the P-probability of the trimmed set. Under P (a mixture over S of product laws) each
  ``Z_j`` given the earlier ones is a mixture of N(0, 1) and N(mu_j, 1), and among sets of N(0, 1)-probability
  ``q`` the right tail has the largest N(mu, 1)-probability (Neyman-Pearson): ``Phibar(Phibar^-1(q) - mu)``,
  ``q = 2 tau``.
* *Round-off* (an allowance): ``ROUND_OFF`` times the sum of the magnitudes of the terms added.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import special

S_MAX = 3.5          # tanh-sinh keeps |s| <= S_MAX: the trimmed ends are tau ~ exp(-pi sinh 3.5) ~ 3e-23 of a piece
STEPS = (50, 70)     # the coarse and the fine rule: 2 * steps + 1 nodes a piece
ROUND_OFF = 1e-13    # allowance per unit of the sum of the magnitudes of the terms added
CHUNK = 1 << 22      # array elements evaluated at once (memory: a few hundred MB at most)


@dataclass(frozen=True)
class Estimate:
    """A reference value with its estimated error: the truth is taken to lie in ``value -+ error``."""

    value: float
    error: float
    resolution: float   # |fine - coarse|
    trimmed: float      # bound on the mass of the dropped tanh-sinh ends
    round_off: float    # allowance


def tanh_sinh(steps: int) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The tanh-sinh rule on (0, 1) with ``2 steps + 1`` nodes, ``|s| <= S_MAX``: (nodes, 1 - nodes, weights).

    Both distances to the ends are computed directly (no cancellation near 1).
    """
    s = np.linspace(-S_MAX, S_MAX, 2 * steps + 1)
    h = s[1] - s[0]
    v = np.pi / 2 * np.sinh(s)
    return 1 / (1 + np.exp(-2 * v)), 1 / (1 + np.exp(2 * v)), h * np.pi / 4 * np.cosh(s) / np.cosh(v) ** 2


def _trimmed_fraction() -> float:
    """Fraction of a piece beyond the last node, at each end: tau."""
    return 1 / (1 + math.exp(math.pi * math.sinh(S_MAX)))


def _z(u: NDArray[np.float64], uc: NDArray[np.float64]) -> NDArray[np.float64]:
    """Phi^-1(u) given u and 1 - u, each accurate: the smaller one is used."""
    z = special.ndtri(np.minimum(u, uc))
    return np.where(u < 0.5, z, -z)


def _lognormal_tail(strike: NDArray[np.float64], mu: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(E[(W - strike)_+], P(W > strike)) for W = exp(mu Z - mu^2/2) and strike > 0 (Black and Scholes)."""
    z = (np.log(strike) + mu * mu / 2) / mu
    return special.ndtr(mu - z) - strike * special.ndtr(-z), special.ndtr(-z)


class _Integral:
    """One expectation, call ``E[(R - K)_+]`` (``put=False``) or put ``E[(K - R)_+]``, at one resolution."""

    def __init__(self, mus: Sequence[float], strike: float, put: bool, steps: int):
        self.mus, self.strike, self.put = list(mus), strike, put
        self.nodes, self.nodes_c, self.weights = tanh_sinh(steps)
        self.total = 0.0
        self.magnitude = 0.0

    def _add(self, terms: Sequence[NDArray[np.float64]], omega: NDArray[np.float64]) -> None:
        self.total += float(np.dot(omega, sum(terms)))
        self.magnitude += float(np.dot(omega, sum(np.abs(t) for t in terms)))

    def descend(self, coef: NDArray[np.float64], omega: NDArray[np.float64], level: int) -> None:
        """Integrate out coordinate ``level`` for the outer nodes given by ``coef`` (shape ``(M, 2, ..., 2)``,
        one axis of 2 per coordinate left: the multi-affine R with the earlier W's substituted) and their
        weights ``omega`` (their probability under the rule)."""
        mu, strike = self.mus[level], self.strike
        if coef.ndim == 2:                                    # the last W: a lognormal call or put
            a, b = coef[:, 0], coef[:, 1]
            pos = b > 0
            ratio = np.where(pos, (strike - a) / np.where(pos, b, 1.0), np.where(a < strike, np.inf, -1.0))
            inside = ratio > 0                                # else a + b W >= strike surely
            z = (np.log(np.where(inside, ratio, 1.0)) + mu * mu / 2) / mu
            if self.put:                                      # (K - a) P(W < k) - b E[W; W < k], 0 if not inside
                terms = [np.where(inside, (strike - a) * special.ndtr(z), 0.0),
                         np.where(inside, -b * special.ndtr(z - mu), 0.0)]
            else:                                             # b E[W; W > k] - (K - a) P(W > k), or a + b - K
                terms = [np.where(inside, b * special.ndtr(mu - z), a + b - strike),
                         np.where(inside, -(strike - a) * special.ndtr(-z), 0.0)]
            self._add(terms, omega)
            return
        zeros = (0,) * (coef.ndim - 2)
        floor = coef[(slice(None), 0) + zeros]                # R(w_1..w_{j-1}, w_j, 0, ..., 0) = floor + slope w_j
        slope = coef[(slice(None), 1) + zeros]
        others = tuple(range(1, coef.ndim - 1))               # E[R | .., w_j] = alpha + beta w_j
        alpha, beta = coef[:, 0].sum(axis=others), coef[:, 1].sum(axis=others)
        above_all = floor >= strike                           # R >= K whatever w_j: call E[R] - K, put 0
        if not self.put and np.any(above_all):
            self._add([alpha[above_all] + beta[above_all] - strike], omega[above_all])
        keep = ~above_all
        coef, omega, floor, slope, alpha, beta = (x[keep] for x in (coef, omega, floor, slope, alpha, beta))
        if not len(omega):
            return
        rooted = slope > 0
        w_star = np.where(rooted, (strike - floor) / np.where(rooted, slope, 1.0), 1.0)
        z_star = np.where(rooted, (np.log(w_star) + mu * mu / 2) / mu, np.inf)
        u_star, u_star_c = special.ndtr(z_star), special.ndtr(-z_star)
        if not self.put and np.any(rooted):                  # w_j >= w*: R >= K surely, E[R | ..] - K in closed form
            r = rooted
            excess, above = _lognormal_tail(w_star[r], mu)
            self._add([beta[r] * excess, (alpha[r] + beta[r] * w_star[r] - strike) * above], omega[r])
        step = max(1, CHUNK // (len(self.weights) * coef[0].size))   # w_j < w*: the rule on (0, Phi(z*)), deeper
        for start in range(0, len(omega), step):
            part = slice(start, start + step)
            length = u_star[part, None]
            z = _z(length * self.nodes, u_star_c[part, None] + length * self.nodes_c)
            w = np.exp(mu * z - mu * mu / 2).reshape(z.shape + (1,) * len(zeros))
            c = coef[part]
            inner = c[:, None, 0] + w * c[:, None, 1]         # (outer, node, 2, ..., 2)
            self.descend(inner.reshape((-1,) + c.shape[2:]), (omega[part, None] * length * self.weights).ravel(),
                         level + 1)


def multiaffine_deltas(mus: float | Sequence[float], coefficients: NDArray[np.float64],
                       epsilon: float) -> tuple[Estimate, Estimate]:
    """(delta_PQ, delta_QP) at ``epsilon`` of the pair whose likelihood ratio under Q is the multi-affine
    ``R(W) = sum_S c_S prod_{i in S} W_i`` (``coefficients[s_1, ..., s_t] = c_S``, ``s_i = 1`` iff ``i in S``),
    ``W_i`` the ratio of a Gaussian of parameter ``mus[i]`` (module doc)."""
    coef = np.asarray(coefficients, dtype=float)
    t = coef.ndim
    if coef.shape != (2,) * t or t < 1:
        raise ValueError(f"coefficients: shape {coef.shape}, expected (2,) * t")
    if np.any(coef < 0) or not math.isclose(coef.sum(), 1.0, rel_tol=1e-12):
        raise ValueError(f"coefficients: must be nonnegative and sum to 1 (a likelihood ratio), got {coef.sum()}")
    mus = [float(mus)] * t if np.ndim(mus) == 0 else [float(m) for m in mus]
    if len(mus) != t or min(mus) <= 0:
        raise ValueError(f"mus: {mus}, expected {t} positive values")
    gamma = math.exp(epsilon)
    tau = _trimmed_fraction()
    tail = -float(special.ndtri(2 * tau))                  # the upper quantile of Q-probability 2 tau
    trimmed = {False: sum((float(special.ndtr(m - tail)) for m in mus[:-1]), 0.0), True: (t - 1) * 2 * tau}
    out = []
    for put, strike, scale in ((False, gamma, 1.0), (True, 1 / gamma, gamma)):
        values = []
        for steps in STEPS:
            integral = _Integral(mus, strike, put, steps)
            integral.descend(coef[None], np.ones(1), 0)
            values.append((scale * integral.total, scale * integral.magnitude))
        (coarse, _), (fine, magnitude) = values
        resolution, round_off = abs(fine - coarse), ROUND_OFF * magnitude
        out.append(Estimate(fine, resolution + trimmed[put] + round_off, resolution, trimmed[put], round_off))
    return out[0], out[1]


def k_of_t_coefficients(t: int, k: int) -> NDArray[np.float64]:
    """c_S = 1 / C(t, k) on the k-sets: "in none" against "in exactly k of t"."""
    coef = np.zeros((2,) * t)
    for members in itertools.combinations(range(t), k):
        coef[tuple(1 if i in members else 0 for i in range(t))] = 1 / math.comb(t, k)
    return coef


def k_of_t_deltas(mu: float, t: int, k: int, epsilon: float) -> tuple[Estimate, Estimate]:
    """(delta_PQ, delta_QP) of k of t Gaussians of parameter ``mu`` (module doc)."""
    return multiaffine_deltas(mu, k_of_t_coefficients(t, k), epsilon)


def pure_dp_k_of_t_delta(eps: float, t: int, k: int, at: float) -> float:
    """delta_PQ at ``at`` of k of t canonical pairs of pure eps-DP (each ``W`` is ``e^eps`` or ``e^-eps``, the
    former of Q-mass ``1 / (1 + e^eps)``), exactly: it depends only on how many of the t outputs are at
    ``e^eps`` (a binomial count ``m``), with ``e_k(W) = sum_i C(m, i) C(t - m, k - i) e^(eps (2 i - k))``."""
    b = 1.0 / (1.0 + math.exp(eps))
    return sum(math.comb(t, m) * b**m * (1.0 - b) ** (t - m)
               * max(sum(math.comb(m, i) * math.comb(t - m, k - i) * math.exp(eps * (2 * i - k))
                         for i in range(k + 1)) / math.comb(t, k) - math.exp(at), 0.0)
               for m in range(t + 1))

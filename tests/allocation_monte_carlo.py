"""An independent Monte Carlo of k of t Gaussians at many databases: importance sampling by a product tilt.

No code is shared with gce: this module is the check where the quadrature of ``allocation_reference`` cannot
go (t = 100). Under Q the databases' outputs ``Z_i`` are iid N(0, 1), ``W_i = exp(mu Z_i - mu^2 / 2)`` and the
k-of-t pair's ratio is ``L = e_k(W) / C(t, k)``, so ``delta_PQ(eps) = E_Q[(L - e^eps)_+]``.

The proposal. Where the test decides, ``L`` is far out in Q's tail, and ``log L`` is close to a sum of one
term per database (the saddle point of ``e_k``, which is what Cauchy's circle in gce bounds). So each ``Z_i``
is drawn, independently, from Q's law tilted by ``(1 + rho W_i)^theta``: the exponential tilt of that sum,
under which the decisive outputs are typical. The tilted density is sampled exactly as a histogram
(piecewise constant on cells of width :data:`CELL` over ``[LOW, HIGH]``, each cell's probability
proportional to its N(0, 1) mass times the tilt at its middle), and each draw carries the exact weight
``prod_i phi(z_i) / g(z_i)`` of Q against that histogram ``g``: the estimate is unbiased for
``E_Q[(L - e^eps)_+; every Z_i in [LOW, HIGH]]``, which falls short of ``delta_PQ`` by at most the
P-probability of some ``Z_i`` outside (``(L - c)_+ <= L = dP/dQ``), ``k Phibar(HIGH - mu) + t Phibar(HIGH)
+ t Phi(LOW) < 1e-30`` here.

The interval. The mean -+ 3.29 standard errors: 99.9% by the central limit theorem, an estimate (the
weighted integrand is unbounded; the tilt keeps its relative spread near 1 at the cases used, measured: 1.5%
relative half-width at 400,000 draws).

Measured (delta 1e-5, 400,000 draws): sigma 0.5, 10 of 100 (``theta = 2``, ``rho = e^-1 k / (t - k)``):
delta(23.15) = 1.028e-5, delta(23.2) = 9.81e-6, so epsilon 23.18 (99.9%: 23.16 to 23.20); sigma 1
(``theta = 3``, ``rho = k / (t - k)``): delta(5.8) = 1.073e-5, delta(5.83) = 9.79e-6, epsilon 5.823 (5.817
to 5.829). The earlier proposal of the tests, the members' outputs shifted, gave 23.11 (23.05 to 23.17) and
5.77 (5.70 to 5.83): heavier-tailed weights, the same truth within its wider intervals.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

LOW, HIGH = -12.0, 16.0   # the histogram's range of each Z_i
CELL = 1e-3               # its cells
CHUNK = 10_000            # draws evaluated at once


def log_elementary(log_w: np.ndarray, k: int) -> np.ndarray:
    """``log e_k(W)`` of each row of ``log W`` (draws by databases): the elementary symmetric polynomial by
    adding one database at a time, ``e_j += W_i e_{j-1}``, scaled by each row's largest ``W``."""
    top = log_w.max(axis=1, keepdims=True)
    w = np.exp(log_w - top)
    e = np.zeros((log_w.shape[0], k + 1))
    e[:, 0] = 1.0
    for i in range(log_w.shape[1]):  # all j at once from the old row
        e[:, 1:] += w[:, i:i + 1] * e[:, :-1]
    return np.log(e[:, k]) + k * top[:, 0]


def add_draws(log_l: np.ndarray, log_weight: np.ndarray, epsilons, sums: np.ndarray, squares: np.ndarray) -> None:
    """Adds a chunk of draws' importance-sampled terms ``(L - e^eps)_+ dQ/dproposal`` (``log L`` and ``log
    dQ/dproposal`` per draw) to each epsilon's running sum and sum of squares."""
    for j, eps in enumerate(epsilons):
        x = np.where(log_l > eps, np.exp(log_l + log_weight) - np.exp(eps + log_weight), 0.0)
        sums[j] += x.sum()
        squares[j] += (x * x).sum()


def delta_pq(mu: float, t: int, k: int, epsilons, n: int, theta: float, rho: float, seed: int
             ) -> list[tuple[float, float]]:
    """99.9% intervals of ``delta_PQ(eps)`` of k of t Gaussians of parameter ``mu``, one per epsilon, from
    ``n`` draws of the proposal tilted by ``(1 + rho W)^theta`` (module doc)."""
    rng = np.random.default_rng(seed)
    edges = np.arange(LOW, HIGH + CELL / 2, CELL)
    middle = 0.5 * (edges[1:] + edges[:-1])
    # N(0, 1) mass of each cell, from the nearer tail (no cancellation near 1)
    log_cell = np.log(np.where(middle < 0, np.diff(special.ndtr(edges)), -np.diff(special.ndtr(-edges))))
    log_p = log_cell + theta * np.logaddexp(0.0, math.log(rho) + mu * middle - mu * mu / 2)
    p = np.exp(log_p - log_p.max())
    p /= p.sum()
    cumulative = np.cumsum(p)
    log_density = np.log(p / CELL)  # the histogram g on each cell
    log_choose = math.lgamma(t + 1) - math.lgamma(k + 1) - math.lgamma(t - k + 1)
    epsilons = np.asarray(epsilons, dtype=float)
    sums = np.zeros(epsilons.size)
    squares = np.zeros(epsilons.size)
    drawn = 0
    while drawn < n:
        m = min(CHUNK, n - drawn)
        cell = np.minimum(np.searchsorted(cumulative, rng.random((m, t))), p.size - 1)
        z = edges[cell] + CELL * rng.random((m, t))
        log_weight = (-0.5 * z * z - 0.5 * math.log(2 * math.pi) - log_density[cell]).sum(axis=1)
        log_l = log_elementary(mu * z - mu * mu / 2, k) - log_choose
        add_draws(log_l, log_weight, epsilons, sums, squares)
        drawn += m
    mean = sums / n
    error = 3.29 * np.sqrt(np.maximum(squares / n - mean * mean, 0.0) / (n - 1))
    return [(float(a - b), float(a + b)) for a, b in zip(mean, error)]

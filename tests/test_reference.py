"""The references' own checks: the privacy-loss reference for Gaussian and Laplace mechanisms mixed with
canonical (eps, delta) pairs (``reference.loss_distribution``) against closed forms, the 4^k enumeration,
scipy quadrature and dp-accounting's two PLD roundings; and the bitmask listing of allowed pairs against a
pair-by-pair brute force. Nothing here imports ``gce``."""

from __future__ import annotations

import itertools
import math
import random

import pytest
from scipy import integrate
from scipy.optimize import brentq
from scipy.stats import norm

import reference
import tiers

H = 1e-3


def _gdp_delta(mu: float, eps: float) -> float:
    return float(norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2))


@pytest.mark.parametrize("a", [0.3, 1.0, 2.5])
def test_one_laplace_is_bracketed_around_its_closed_form(a):
    """One Laplace mechanism, a = sensitivity / scale: delta(eps) = 1 - e^{(eps - a)/2} for eps < a, 0 from
    a on (pure a-DP), so eps(delta) = a + 2 log(1 - delta) (integrated by hand from its loss density)."""
    for delta in (1e-6, 1e-3, 0.05, 0.3):
        exact = max(a + 2 * math.log1p(-delta), 0.0)
        low = reference.mechanisms_epsilon([("laplace", a)], delta, H, "down")
        high = reference.mechanisms_epsilon([("laplace", a)], delta, H, "up")
        assert low <= exact + 1e-10 and exact <= high + 1e-10
        assert high - low <= 2 * reference.mechanisms_error([("laplace", a)], H)
    down = reference.loss_distribution([("laplace", a)], H, "down")
    assert reference.loss_delta(down, a) == 0.0  # pure DP: nothing above a
    assert sum(down[1]) == pytest.approx(1.0, abs=1e-12)
    for eps in (0.0, a / 3, 0.9 * a):
        exact = 1 - math.exp((eps - a) / 2)
        assert reference.loss_delta(down, eps) <= exact + 1e-12
        assert reference.loss_delta(reference.loss_distribution([("laplace", a)], H, "up"), eps) >= exact - 1e-12


@pytest.mark.parametrize("mus", [(1.0,), (0.3, 0.4, 1.2), (2.0, 0.5)])
def test_gaussians_alone_are_the_gdp_curve(mus):
    """Gaussians alone compose to sqrt(sum mu^2)-GDP (DRS22 Cor. 3.3), delta(eps) by DRS22 Cor. 2.13."""
    mu = math.sqrt(sum(m * m for m in mus))
    mechanisms = [("gauss", m) for m in mus]
    dist = reference.loss_distribution(mechanisms)
    for eps in (0.0, 0.5, 2.0, 5.0):
        assert reference.loss_delta(dist, eps) == pytest.approx(_gdp_delta(mu, eps), rel=1e-9, abs=1e-15)
    for delta in (1e-6, 1e-3, 0.1):
        exact = brentq(lambda e: _gdp_delta(mu, e) - delta, 0.0, 50.0, xtol=1e-13)
        assert reference.mechanisms_epsilon(mechanisms, delta) == pytest.approx(exact, rel=1e-8, abs=1e-9)
        assert reference.mechanisms_error(mechanisms) < 1e-8


@tiers.parametrize("seed", range(40), default=4)
def test_canonical_atoms_equal_the_enumeration_of_every_output(seed):
    """The exact atoms of composed canonical pairs give exact_delta's hockey stick (4^k outputs listed)."""
    rng = random.Random(seed)
    points = [rng.choice([(0.1, 0.0), (0.5, 1e-3), (1.0, 0.0), (0.8, 0.05), (2.0, 1e-6)])
              for _ in range(rng.randint(1, 7))]
    dist = reference.loss_distribution([("point", e, d) for e, d in points])
    for eps in (0.0, 0.05, 0.4, 1.0, 3.0, 8.0):
        assert reference.loss_delta(dist, eps) == pytest.approx(reference.exact_delta(points, eps), rel=1e-10,
                                                                abs=1e-14)


def _quad_delta(points, mu: float, a: float, eps: float) -> float:
    """delta(eps) of canonical pairs, one Laplace (a) and one Gaussian (mu), by scipy quadrature over the
    Laplace loss's continuous part: written from the densities, sharing only the canonical pair's atoms."""
    def gauss_part(v):  # E[(1 - e^{eps - v - G})_+], G ~ N(mu^2/2, mu^2) (checked by quadrature below)
        return norm.sf((eps - v) / mu - mu / 2) - math.exp(eps - v) * norm.sf((eps - v) / mu + mu / 2)

    values, masses, inf_mass = reference.point_atoms(points)
    total = inf_mass
    for v, w in zip(values, masses):
        cont = integrate.quad(lambda l: 0.25 * math.exp((l - a) / 2) * gauss_part(v + l), -a, a,
                              epsabs=1e-12, epsrel=1e-10, limit=200)[0]
        total += w * (0.5 * gauss_part(v + a) + 0.5 * math.exp(-a) * gauss_part(v - a) + cont)
    return total


def test_the_gaussian_part_by_quadrature():
    """E[(1 - e^{t - G})_+] for G ~ N(mu^2/2, mu^2): the closed form of _quad_delta against quadrature."""
    for mu, t in ((0.7, 0.3), (1.5, -2.0), (0.2, 1.0)):
        f = lambda g: (1 - math.exp(t - g)) * norm.pdf(g, mu * mu / 2, mu)
        quad = integrate.quad(f, t, t + 40 * mu, epsabs=1e-14, epsrel=1e-12, limit=200)[0]
        closed = norm.sf(t / mu - mu / 2) - math.exp(t) * norm.sf(t / mu + mu / 2)
        assert closed == pytest.approx(quad, rel=1e-9, abs=1e-14)


@tiers.parametrize("points, mu, a", [([(0.5, 1e-3)], 0.7, 1.0), ([(0.2, 0.0), (1.0, 0.01)], 1.5, 0.4),
                                     ([(0.1, 0.0), (0.1, 0.0), (3.0, 1e-6)], 0.3, 2.0)], default=1)
def test_one_laplace_with_a_gaussian_and_pairs_is_bracketed_around_quadrature(points, mu, a):
    mechanisms = [("point", e, d) for e, d in points] + [("gauss", mu), ("laplace", a)]
    down = reference.loss_distribution(mechanisms, H, "down")
    up = reference.loss_distribution(mechanisms, H, "up")
    for eps in (0.3, 1.5, 3.0):
        exact = _quad_delta(points, mu, a, eps)
        assert reference.loss_delta(down, eps) <= exact + 1e-10
        assert exact <= reference.loss_delta(up, eps) + 1e-10
        assert reference.loss_delta(up, eps) - reference.loss_delta(down, eps) < 1e-3


@pytest.mark.slow
def test_several_laplaces_are_bracketed_by_dp_accounting():
    """Three Laplace mechanisms and a Gaussian: the reference's two roundings against dp-accounting's PLDs
    (pessimistic an upper bound, optimistic a lower bound): each of ours within the other's bracket."""
    from dp_accounting.pld import privacy_loss_distribution as module

    scales, sigma = (1.0, 2.0, 0.5), 1.5
    mechanisms = [("laplace", 1 / b) for b in scales] + [("gauss", 1 / sigma)]
    plds = {}
    for pessimistic in (True, False):
        pld = module.from_gaussian_mechanism(sigma, pessimistic_estimate=pessimistic, value_discretization_interval=1e-4)
        for b in scales:
            pld = pld.compose(module.from_laplace_mechanism(b, pessimistic_estimate=pessimistic,
                                                            value_discretization_interval=1e-4))
        plds[pessimistic] = pld
    down = reference.loss_distribution(mechanisms, H, "down")
    up = reference.loss_distribution(mechanisms, H, "up")
    for eps in (0.5, 2.0, 4.0):
        assert reference.loss_delta(down, eps) <= plds[True].get_delta_for_epsilon(eps) + 1e-9
        assert plds[False].get_delta_for_epsilon(eps) <= reference.loss_delta(up, eps) + 1e-9
    for delta in (1e-5, 1e-2):
        low = reference.mechanisms_epsilon(mechanisms, delta, H, "down")
        high = reference.mechanisms_epsilon(mechanisms, delta, H, "up")
        assert low <= plds[True].get_epsilon_for_delta(delta) + 1e-6
        assert plds[False].get_epsilon_for_delta(delta) <= high + 1e-6
        assert high - low <= 2 * reference.mechanisms_error(mechanisms, H)


@pytest.mark.parametrize("n, allowed", [
    (4, lambda s: len(s) <= 2),
    (5, lambda s: not {0, 1} <= s and len(s & {2, 3, 4}) in (0, 3)),
    (6, lambda s: s in ({0, 1}, {2}, {3, 4, 5}, {1, 5})),
])
def test_xor_reachable_lists_every_symmetric_difference(n, allowed):
    masks = reference.allowed_masks(n, allowed)
    expected = sorted({int(a) ^ int(b) for a, b in itertools.product(masks, repeat=2)})
    assert list(reference.xor_reachable(masks, n)) == expected
    assert all(allowed(frozenset(i for i in range(n) if m >> i & 1)) for m in masks)
    assert len(masks) == sum(allowed(frozenset(s)) for k in range(n + 1) for s in itertools.combinations(range(n), k))

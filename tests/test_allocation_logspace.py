"""The log-space (geometric grid) method of 1 of t random allocation (gce.priors.allocation, module doc
"Small noise"): its pairwise sums, its bounds against independent references, and the issue's widths.

References shared with no code of gce: the Gaussian closed form for t = 1 (the pair itself: delta(eps) =
Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2), both directions) and the quadrature of
tests/test_allocation.py for t = 2 and 3 (``reference_deltas``).
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from scipy import special

import tiers
from test_allocation import reference_deltas

from gce.priors import allocation as A
from gce.priors.allocation import GaussianRatio, LowerBound, allocation_curve

TAIL = 1e-10  # the clamp's tail with a delta target of 1e-6 (allocation_curve's)


def _gdp(mu: float, eps: float) -> float:
    return float(special.ndtr(-eps / mu + mu / 2) - math.exp(eps) * special.ndtr(-eps / mu - mu / 2))


def _log_bracket(mu: float, t: int, rho: float, which: str):
    """(lower delta, upper delta) functions of the log-space laws of one direction."""
    up, low, label = A._geometric_laws(GaussianRatio(mu), t, rho, TAIL, which)
    assert "geometric grid" in label
    upper = up.curve()
    lower = LowerBound([(low.curve(), low.slack, low.slack_other)])
    return (lambda e: float(lower.delta(e))), (lambda e: float(upper.delta(e)))


def _sandwich(mu, t, rho, truth, epsilons):
    """Each direction's log-space upper never below, lower never above, the reference (and the bracket is
    tight enough to mean something)."""
    truths = {eps: truth(eps) for eps in epsilons}
    for d, which in enumerate(A._WHICH):
        low, high = _log_bracket(mu, t, rho, which)
        for eps in epsilons:
            exact = truths[eps][d]
            hi, lo = high(eps), low(eps)
            assert hi >= exact * (1 - 1e-9) - 1e-13, (which, mu, t, eps, exact, hi)
            assert lo <= exact * (1 + 1e-9) + 1e-13, (which, mu, t, eps, exact, lo)
            assert hi - lo <= 0.02 * exact + 1e-9, (which, mu, t, eps, exact, lo, hi)


# ---------------------------------------------------------------------------
# One pairwise sum


def _random_law(rng, size, zero):
    q = rng.random(size) * (rng.random(size) < 0.6)
    q[rng.integers(size)] += 1.0
    q *= (1.0 - zero) / q.sum()
    return q


def _stop_loss(values, masses, strikes):
    return np.array([np.sum(masses * np.maximum(values - k, 0.0)) for k in strikes])


@pytest.mark.parametrize("same", [True, False])
def test_a_spread_sum_keeps_mass_and_mean_and_dominates_the_exact_sum(same):
    """A~ + B~ spread onto the grid: the same mass and mean as the exact sum (to round-off), and a larger
    E[(S - K)_+] at every strike K (a mean-preserving spread: the convex order)."""
    rng = np.random.default_rng(7)
    grid = A._GeometricGrid(g0=0.01, rho=1 / 8, size=90, top=60)
    values = grid.values
    za, zb = 0.1, 0.05
    qa = _random_law(rng, grid.size, za)
    qa[61:] = 0.0  # inputs below the top, as the grid's sizing guarantees
    qa *= (1.0 - za) / qa.sum()
    qb = qa.copy() if same else _random_law(rng, grid.size, zb)
    if same:
        zb = za
    else:
        qb[61:] = 0.0
        qb *= (1.0 - zb) / qb.sum()
    z, out = A._spread_sum(grid, (za, qa), (zb, qb), same)
    # the exact sum, by brute force over the pairs (the point 0 included)
    xa, xb = np.append(0.0, values), np.append(0.0, values)
    pa, pb = np.append(za, qa), np.append(zb, qb)
    sums = (xa[:, None] + xb[None, :]).ravel()
    masses = (pa[:, None] * pb[None, :]).ravel()
    assert z + out.sum() == pytest.approx(masses.sum(), rel=1e-14)
    assert float(np.sum(out * values)) == pytest.approx(float(np.sum(masses * sums)), rel=1e-13)
    assert np.all(out >= 0.0) and z == pytest.approx(za * zb, rel=1e-15)
    strikes = np.concatenate((values[::3], sums[:: max(sums.size // 200, 1)]))
    spread = _stop_loss(np.append(0.0, values), np.append(z, out), strikes)
    exact = _stop_loss(sums, masses, strikes)
    assert np.all(spread >= exact - 1e-13 * (1.0 + exact))
    assert np.any(spread > exact + 1e-6)  # it is a spread, not the sum itself


@pytest.mark.parametrize("same, low", [(True, 0.0), (False, 0.0), (True, 0.1), (False, 0.1)])
def test_a_contraction_sum_keeps_mass_and_first_moment_and_groups_nearby_sums(same, low):
    """The garbled sum: Q-mass and first moment are those of the exact sum (to round-off), and each cell's
    conditional mean lies near its cell (pairs grouped by the sum of their means). The low cell [0, g_0)
    joins the larger one's cell, a coarse rule for the lowest cells (harmless for its tiny mass, 1e-16 a
    term): the grouping is checked without it."""
    rng = np.random.default_rng(11)
    grid = A._GeometricGrid(g0=0.01, rho=1 / 8, size=90, top=60)
    values = grid.values

    def cells(low):
        q = _random_law(rng, grid.size, low)
        q[61:] = 0.0
        q *= (1.0 - low) / q.sum()
        means = values * (1.0 + grid.rho * rng.random(grid.size))  # inside each cell
        return (low, low * 0.004), q, q * means

    a = cells(low)
    b = a if same else cells(low / 2)
    (low_q, low_m), q, m = A._contract_sum(grid, a, b, same)
    (la, lma), qa, ma = a
    (lb, lmb), qb, mb = b
    mass_a, mass_b = la + qa.sum(), lb + qb.sum()
    mom_a, mom_b = lma + ma.sum(), lmb + mb.sum()
    assert low_q + q.sum() == pytest.approx(mass_a * mass_b, rel=1e-14)
    assert low_m + m.sum() == pytest.approx(mom_a * mass_b + mass_a * mom_b, rel=1e-14)
    assert low_q == pytest.approx(la * lb, abs=1e-300) and low_m == pytest.approx(lma * lb + la * lmb, abs=1e-300)
    if low == 0.0:
        filled = q > 0
        means = m[filled] / q[filled]
        cell = np.flatnonzero(filled)
        # in their cell, or a 64th of a cell above it (the bulk's pairs go to the larger one's cell)
        assert np.all(means >= values[cell] * (1 - 1e-12))
        assert np.all(means <= values[cell] * (1 + grid.rho) * (1 + grid.rho / 64) * (1 + 1e-12))


def test_binary_assembly_sums_t_copies():
    for t in (1, 2, 3, 7, 10, 100, 1000, 1023):
        calls = []

        def add(x, y, same):
            calls.append(same)
            return x + y

        assert A._binary(t, 1, add) == t
        assert len(calls) <= A._levels(t)


def test_offsets_split_each_sum_between_the_points_around_it():
    grid = A._GeometricGrid(g0=1.0, rho=1 / 16, size=10, top=5)
    c, f = grid.offsets(0.5)
    r = 1 + grid.rho
    x = r ** -np.arange(c.size)
    assert np.all((0 <= f) & (f <= 1))
    # g_c (1 - f) + g_{c+1} f = 1 + r^-d: the mean is kept
    assert np.allclose(r**c * (1 - f) + r ** (c + 1) * f, 1 + x, rtol=1e-13, atol=0)
    assert x[-1] > grid.rho / 2 >= r ** -c.size  # the bulk starts where 1 + r^-d stays in the first cell


# ---------------------------------------------------------------------------
# Bounds against the references


@pytest.mark.parametrize("mu", [2.0, 3.0, 4.0])
def test_one_of_one_is_bracketed_by_the_gaussian_closed_form(mu):
    _sandwich(mu, 1, 1 / 16, lambda e: (_gdp(mu, e), _gdp(mu, e)), (0.0, 1.0, 4.0, 8.0, 12.0))


@tiers.parametrize("mu", [2.0, 3.0], default=1)
def test_one_of_two_is_bracketed_by_quadrature(mu):
    _sandwich(mu, 2, 1 / 16, lambda e: reference_deltas(mu, 2, 1, e), (0.5, 3.0, 7.0))


@pytest.mark.slow
@pytest.mark.parametrize("mu, eps", [(2.0, 4.0), (3.0, 8.0)])
def test_one_of_three_is_bracketed_by_quadrature(mu, eps):
    """2-d quadrature at 1e-9: about a minute a case (one epsilon each)."""
    _sandwich(mu, 3, 1 / 16, lambda e: reference_deltas(mu, 3, 1, e), (eps,))


@tiers.parametrize("mu, t", [(1.0, 10), (1.5, 10), (1.0, 100), (1.5, 1000)], default=2)
def test_the_uniform_and_geometric_grids_brackets_overlap(mu, t):
    """Both methods bound the same curve: their brackets intersect, each direction, at several eps, and at
    the target delta's epsilon."""
    ratio = GaussianRatio(mu)
    for which in A._WHICH:
        up_lin, low_lin, _ = A._linear_laws(ratio, t, A.START_POINTS, TAIL, which)
        up_log, low_log, _ = A._geometric_laws(ratio, t, 1 / 32, TAIL, which)
        for eps in (0.0, 0.5, 1.5, 3.0):
            lows = [float(LowerBound([(w.curve(), w.slack, w.slack_other)]).delta(eps)) for w in (low_lin, low_log)]
            highs = [float(w.curve().delta(eps)) for w in (up_lin, up_log)]
            assert max(lows) <= min(highs) * (1 + 1e-9) + 1e-15, (which, eps, lows, highs)
        (lo1, lo2), (hi1, hi2) = A._bracket_at([up_lin, up_log], [low_lin, low_log], 1e-6, None)
        assert max(lo1, lo2) <= min(hi1, hi2), (which, lo1, lo2, hi1, hi2)


# ---------------------------------------------------------------------------
# The small-noise cases: half a percent


@tiers.parametrize("mu, t, low, high", [(2.0, 10, 8.690, 8.699), (4.0, 100, 21.74, 21.76),
                                        (3.0, 10, 15.85, 15.87), (2.0, 100, 6.390, 6.398),
                                        (2.0, 1000, 4.10, 4.11)], default=1)
def test_small_noise_brackets_are_within_half_a_percent(mu, t, low, high):
    """Before the geometric grid: [8.2126, 8.6950] (5.5%), [13.08, 21.77] (40%), [12.37, 15.86] (22%),
    [5.948, 6.396] (7%), [3.66, 4.13] (11%). The values here are the old brackets' intersection with the new
    ones (the old uppers were already close)."""
    start = time.perf_counter()
    curve = allocation_curve(mu, t)
    seconds = time.perf_counter() - start
    lo, hi = curve.epsilon_bracket(1e-6)
    assert (hi - lo) / hi <= 0.005, (lo, hi)
    assert low <= lo <= hi <= high, (lo, hi)
    assert "geometric grid" in curve.description
    assert seconds < 20.0  # about 0.1 to 0.5 s here; generous for slow machines


def test_the_new_method_leaves_large_noise_to_the_uniform_grid():
    """mu <= 1: the uniform grid meets the width at once and the geometric one is not computed (the issue's
    checked values are unchanged)."""
    curve = allocation_curve(1.0, 10)
    assert "geometric" not in curve.description
    low, high = curve.epsilon_bracket(1e-6)
    assert 2.6507 <= low <= high <= 2.6588


@pytest.mark.parametrize("mu, t", [(2.0, 1000), (3.0, 37)])
def test_the_round_off_allowance_covers_the_drift_of_the_total_masses(mu, t):
    """The garbled laws' totals are 1 in exact arithmetic (Q-mass, and P-mass = E_Q[S] / t = 1): after the
    ~2 log2 t pairwise sums they are off by less than the relative round-off allowance ``e``, which the
    lower law applies cell by cell (masses times 1 - e): so their total lies in [1 - 2e, 1]."""
    ratio = GaussianRatio(mu)
    for which in A._WHICH:
        _, low, _ = A._geometric_laws(ratio, t, 1 / 16, TAIL, which)
        e = low.relative
        assert 0.0 < e < 1e-9 and low.slack == 0.0
        drift = abs(math.fsum(low.mass) / (1.0 - e) - 1.0)
        assert drift <= e / 2, (which, drift, e)

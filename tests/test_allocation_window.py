"""1 of t at many steps (gce.priors.allocation.uniform_tilted: the window, the heavy split): against the
independent quadrature of tests/allocation_reference.py (the window and the split forced at small t), against
the plain uniform grid and the geometric grid (other certified methods: the brackets must meet), and the
training-scale rows of one epoch that were 3% to 11% wide."""

from __future__ import annotations

import numpy as np
import pytest

from gce.priors.allocation import GaussianRatio, allocation_curve
from gce.priors.allocation import uniform_tilted
from gce.priors.allocation.bracket import _brackets_at
from gce.priors.allocation.uniform_tilted import _tilted_laws, _window_grid


def _delta_bracket(laws, eps: float) -> tuple[float, float]:
    upper, lower, _ = laws
    low = float(lower.curve().delta(eps)) - lower.slack - lower.slack_other * float(np.exp(eps))
    return max(low, 0.0), float(upper.curve().delta(eps))


@pytest.mark.parametrize("mu, t, points, fft", [(0.5, 3, 2**13, False), (0.5, 3, 2**13, True),
                                                 pytest.param(1.0, 4, 2**13, False, marks=pytest.mark.slow)])
def test_the_window_and_the_heavy_split_hold_the_quadrature(monkeypatch, mu, t, points, fft):
    """The window (forced where it saves nothing) and the heavy split (forced at t = 3, its cut low enough
    that most outcomes hold a heavy term, the heavy cells on a coarser grid) hold the exact deltas of the
    quadrature in both directions, from 1e-2 down to about 1e-12, and stay close to them; ``fft``: the
    split's products by the transform wherever its error fits a budget of 1e-11 (forced: at training scale
    only the pieces of many heavy terms take it), the errors charged."""
    from allocation_reference import k_of_t_deltas

    if fft:
        monkeypatch.setattr(uniform_tilted, "_FFT_FROM", 0)
        monkeypatch.setattr(uniform_tilted, "_FFT_SHARE", 1e5)
        used = []
        strided = uniform_tilted._strided

        def counted(*args, **kwargs):
            product, eta = strided(*args, **kwargs)
            used.append(eta > 0.0)
            return product, eta

        monkeypatch.setattr(uniform_tilted, "_strided", counted)
    monkeypatch.setattr(uniform_tilted, "_WINDOW_SAVES", 10.0)
    monkeypatch.setattr(uniform_tilted, "_SPLIT_FROM", 2)
    monkeypatch.setattr(uniform_tilted, "_HEAVY", 0.3 * t)  # a term is heavy with Q-probability about 0.3
    _window_grid.cache_clear()
    ratio = GaussianRatio(mu)
    try:
        grid = _window_grid(ratio, t, points, 1e-16, "remove")
        assert grid.start > 0 or mu > 0.5  # the window is not from 0 (at mu 1 its bottom is within a cell of 0)
        cut = uniform_tilted._cut(uniform_tilted._spread(ratio, grid)[0], t)
        assert cut is not None and grid.points - cut > uniform_tilted._HEAVY_POINTS  # split, heavy cells coarse
        laws = {w: _tilted_laws(ratio, t, points, 1e-16, w) for w in ("remove", "add")}
    finally:
        _window_grid.cache_clear()
    checked = 0
    for eps in np.linspace(0.25, 5.0 * mu + 1.0, 8):
        pq, qp = k_of_t_deltas(mu, t, 1, float(eps))
        for which, exact in (("remove", pq), ("add", qp)):
            if not 1e-12 <= exact.value <= 1e-2:
                continue
            low, high = _delta_bracket(laws[which], float(eps))
            assert low <= exact.value + exact.error and exact.value - exact.error <= high, (which, eps, low, exact, high)
            if exact.value > (1e-8 if mu < 1.0 else 1e-5):  # at mu 1 the coarse cells of Q||P decide further out
                assert high <= 1.05 * exact.value and low >= 0.95 * exact.value, (which, eps, low, exact, high)
            checked += 1
    assert checked >= 6
    if fft:
        assert sum(used) >= 3 and not all(used), used  # both paths ran


@pytest.mark.parametrize("stride", [1, 5])
def test_the_split_products_by_the_transform_err_within_their_bound(stride):
    """uniform_tilted._strided: non-negative laws over 40 orders of magnitude; the transform's product
    (forced) is within its bound ``eta`` of the direct one in every entry, and within ``sqrt(size) eta`` in
    all; the bound is not vacuous (below 1e-10 of the largest entry); and without budget the direct sums."""
    rng = np.random.default_rng(7)
    x = np.arange(3000)
    sums = np.exp(-0.5 * ((x - 1500.0) / 130.0) ** 2) * rng.uniform(0.5, 1.5, x.size)
    sums /= sums.sum()
    factor = 1e-7 * np.exp(-np.arange(700) / 20.0) * rng.uniform(0.5, 1.5, 700)
    direct, none = uniform_tilted._strided(sums, factor, stride)
    assert none == 0.0
    product, eta = uniform_tilted._strided(sums, factor, stride, budget=1.0)
    assert eta > 0.0 and product.shape == direct.shape
    assert eta < 1e-10 * direct.max()
    error = np.abs(product - direct)
    assert error.max() <= eta and error.sum() <= np.sqrt(product.size) * eta
    assert error.max() > 0.0 or stride > 1  # the transform did round (else the bound was never tested)
    tiny, eta0 = uniform_tilted._strided(sums, factor, stride, budget=1e-40)  # the budget too small: direct
    assert eta0 == 0.0 and np.array_equal(tiny, direct)


def test_the_split_and_the_plain_window_meet_where_both_resolve():
    """Sigma 2, 1 of 1,000 at delta 1e-6: the tilted window with the heavy split and without it (t below the
    split's threshold) are two certified brackets of the same epsilon: they meet, each within 0.2%."""
    ratio = GaussianRatio(0.5)
    split = _tilted_laws(ratio, 1000, 1024, 1e-10, "remove")
    lo_s, hi_s = (v[0] for v in _brackets_at(split[0], split[1], [(1e-6, None)]))
    original = uniform_tilted._SPLIT_FROM
    try:
        uniform_tilted._SPLIT_FROM = 10**9
        plain = _tilted_laws(ratio, 1000, 1024, 1e-10, "remove")
    finally:
        uniform_tilted._SPLIT_FROM = original
    lo_p, hi_p = (v[0] for v in _brackets_at(plain[0], plain[1], [(1e-6, None)]))
    assert lo_s <= hi_p and lo_p <= hi_s, (lo_s, hi_s, lo_p, hi_p)
    assert hi_s / lo_s - 1 < 2e-3 and hi_p / lo_p - 1 < 2e-3


def test_one_epoch_of_ten_thousand_steps_is_within_one_percent_in_a_second():
    """Sigma 3, 1 of 10,000 at delta 1e-5 was [0.00791, 0.00878] (11% wide: the plain grid's window from 0
    did not fit and the geometric grid's cells are wide against the sum's spread): on the window, inside it
    and 0.1% wide."""
    low, high = allocation_curve(1.0 / 3.0, 10_000, delta=1e-5, rtol=0.01).epsilon_bracket(1e-5)
    assert 0.00791 <= low <= high <= 0.00878
    assert high / low - 1 <= 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("sigma, delta, old", [(1.0, 1e-8, (0.05999, 0.06164)), (2.0, 1e-10, (0.02724, 0.02837)),
                                               (3.0, 1e-12, None)])
def test_one_epoch_at_small_deltas_meets_the_geometric_grid(sigma, delta, old):
    """1 of 10,000 at small deltas: the bracket within 1% and inside the geometric grid's (another certified
    method: rho 1/64 computed here, and the wider brackets measured before the window at rho 1/256 and 1/512)."""
    from gce.priors.allocation.geometric_grid import _geometric_laws
    from gce.priors.allocation.epochs import epochs_tail

    low, high = allocation_curve(1.0 / sigma, 10_000, delta=delta, rtol=0.01).epsilon_bracket(delta)
    assert high / low - 1 <= 0.01
    if old is not None:
        assert old[0] <= low <= high <= old[1]
    ratio, tail = GaussianRatio(1.0 / sigma), epochs_tail(delta, 1)
    highs = []
    for which in ("remove", "add"):
        up, lw, _ = _geometric_laws(ratio, 10_000, 1.0 / 64.0, tail, which)
        (g_low,), (g_high,) = _brackets_at(up, lw, [(delta, None)])
        assert g_low <= high, (which, g_low, low, high)  # each direction's lower end is below the curve's upper
        highs.append(g_high)
    assert low <= max(highs), (low, highs)

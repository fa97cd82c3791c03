"""The batch engine's grids (gce/accounting/batch.py): Gaussian laws in closed form, merged Gaussian
mechanisms, laws split onto coarser grids, auxiliary compositions, and the log-MGF bounds that the
Renyi bound of mixed guarantees reads (gce/solvers/mixed.py).

References: the exact GDP curve (Dong, Roth, Su, Cor. 2.13 and 3.3), the loss distributions of
tests/reference.py (Gaussian in closed form, Laplace on a lattice, canonical atoms exact), the
closed-form Renyi divergences of the Laplace and Gaussian mechanisms (Mironov 2017, Table II), and
the P- and Q-masses of a law (a split must keep both).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from gce.accounting import batch
from gce.accounting.guarantees import ApproxDP, GaussianMechanism, LaplaceMechanism, PureDP, Subsampled
from gce.accounting.theorems import compose
from gce.solvers.mixed import RENYI_ORDERS, renyi_curve, renyi_terms

import reference
import tiers


def gdp_delta(mu: float, eps: float) -> float:
    """delta(eps) of mu-GDP (DRS22 Cor. 2.13)."""
    return float(stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2))


@tiers.parametrize("mu, h", [(0.5, 1e-4), (2.0, 7e-4), (6.0, 1e-2), (0.05, 1e-4), (0.05, 7e-4), (0.05, 1e-2),
                             (0.5, 7e-4), (0.5, 1e-2), (2.0, 1e-4), (2.0, 1e-2), (6.0, 1e-4), (6.0, 7e-4)], default=3)
def test_gaussian_law_brackets_the_exact_gdp_curve(mu, h):
    upper, lower = batch._gaussian_law(mu, h, True), batch._gaussian_law(mu, h, False)
    # Total mass: the upper law keeps all of it (the tail above at +inf), the lower one drops the tails.
    assert math.fsum(upper.mass) + upper.infinite == pytest.approx(1.0, abs=1e-12)
    assert math.fsum(lower.mass) <= 1.0 + 1e-12
    for eps in np.linspace(0.0, mu * mu / 2 + 4 * mu, 9):
        exact = gdp_delta(mu, float(eps))
        f = lambda law: math.fsum(law.mass * np.maximum(-np.expm1(eps - law.index * h), 0.0)) + law.infinite
        assert f(lower) <= exact + 1e-15 <= f(upper) + 2e-15, (mu, h, eps)
        assert f(upper) - f(lower) <= 2 * h + 1e-12  # each loss moves by h at most


def test_the_split_gaussian_law_is_the_raise_of_a_16_times_finer_grid(monkeypatch):
    """The upper law split from a 16 times finer grid: its excess over the exact GDP curve is that grid's
    raise (about 1/16 of the raised law's at h, first order) plus the split's O(h^2); never below the curve."""
    mu = 1.0
    eps = np.linspace(0.0, 3.0, 13)

    def excess(h):
        law = batch._gaussian_law(mu, h, True)
        f = [math.fsum(law.mass * np.maximum(-np.expm1(e - law.index * h), 0.0)) + law.infinite for e in eps]
        gaps = [a - gdp_delta(mu, float(e)) for a, e in zip(f, eps)]
        assert min(gaps) >= -1e-15
        return max(gaps)

    split = [excess(0.02), excess(0.01)]
    monkeypatch.setattr(batch, "GAUSSIAN_SPLIT", 1)
    batch._gaussian_law.cache_clear()  # (cached laws: raised ones must not outlive the test)
    try:
        raised = [excess(0.02), excess(0.01)]
    finally:
        batch._gaussian_law.cache_clear()
    assert raised[1] == pytest.approx(raised[0] / 2, rel=0.05)  # first order
    for s, r in zip(split, raised):
        assert r / 16 <= s <= r / 12  # (measured 2.0e-4 and 9.6e-5 against 3.1e-3 and 1.5e-3)


@pytest.mark.parametrize("mu", [0.3, 3.0])
def test_gaussian_law_log_mgf_bound_is_above_the_laws_own(mu):
    t = np.concatenate((np.linspace(-8, -0.1, 6), np.linspace(0.1, 8, 6)))
    for upper in (True, False):
        law = batch._gaussian_law(mu, 1e-3, upper)
        own = batch._Law.log_mgf(law, t, 1e-3)
        assert np.all(law.log_mgf(t, 1e-3) >= own - 1e-12)
        inside = np.abs(t) * mu <= 2.0  # and tight where the MGF's mass lies inside the window
        assert np.all((law.log_mgf(t, 1e-3) - own)[inside] <= 2 * np.abs(t[inside]) * 1e-3 + 1e-6)


def test_merged_gaussians_compose_to_the_gdp_curve():
    """Three Gaussian mechanisms (one repeated) and GDP-equivalent noise: one law of mu = sqrt(sum n mu_i^2),
    inside the bracket of the exact curve, beside a pure guarantee that stays a law of its own."""
    ms = ((GaussianMechanism(2.0), 5), (GaussianMechanism(1.0, 0.5), 3), (GaussianMechanism(3.0, 2.0), 1))
    merged = batch.merge_gaussians(ms + ((PureDP(0.0), 1),))
    mu = math.sqrt(5 * 0.25 + 3 * 0.25 + 4 / 9)
    assert merged[0] == (PureDP(0.0), 1)
    assert merged[1][1] == 1 and merged[1][0].sigma == pytest.approx(1 / mu, rel=1e-12)
    curve = batch.BatchCurve(ms + ((PureDP(1e-12), 1),))
    for eps in (0.0, 0.5, 1.0, 2.0, 4.0):
        low, high = curve.delta_bracket(eps)
        assert low <= gdp_delta(mu, eps) + 1e-12 <= high + 1e-12


def _q_mass(law: batch._Law, h: float) -> float:
    return math.fsum(law.mass * np.exp(-law.index * h))


@pytest.mark.parametrize("k", [2, 7, 16])
def test_a_split_keeps_p_and_q_mass_and_dominates(k):
    """Splitting onto a grid k times coarser keeps the P-mass and the Q-mass (so the split pair has the
    original as a post-processing) and never lowers delta at any epsilon."""
    h = 1e-4
    fine = batch._laws(Subsampled(0.01, LaplaceMechanism(0.8)), 1, h, True)
    for law in fine:
        coarse = batch._split_coarsen(law, k, h)
        assert math.fsum(coarse.mass) == pytest.approx(math.fsum(law.mass), rel=1e-12)
        assert _q_mass(coarse, k * h) == pytest.approx(_q_mass(law, h), rel=1e-9)
        for eps in np.linspace(0.0, 0.05, 11):
            d_fine = math.fsum(law.mass * np.maximum(-np.expm1(eps - law.index * h), 0.0))
            d_coarse = math.fsum(coarse.mass * np.maximum(-np.expm1(eps - coarse.index * k * h), 0.0))
            assert d_coarse >= d_fine - 1e-15


def _mixed(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    out = {}
    for _ in range(4):
        kind = int(rng.integers(3))
        g = (LaplaceMechanism(float(rng.uniform(1.0, 4.0))) if kind == 0 else
             ApproxDP(float(rng.uniform(0.05, 0.5)), float(rng.choice([0.0, 1e-6]))) if kind == 1 else
             GaussianMechanism(float(rng.uniform(1.0, 4.0))))
        out[g] = out.get(g, 0) + int(rng.integers(1, 4))
    return out


def _reference_mechanisms(ms: dict) -> list[tuple]:
    out = []
    for g, n in ms.items():
        if isinstance(g, LaplaceMechanism):
            out += [("laplace", g.sensitivity / g.scale)] * n
        elif isinstance(g, GaussianMechanism):
            out += [("gauss", g.sensitivity / g.sigma)] * n
        else:
            out += [("point", g.epsilon, g.delta)] * n
    return out


def test_auxiliary_compositions_of_a_narrower_total_are_sound_and_near_the_fine_ones():
    """The fast twin of the next test (0.3 s, not 1 to 2 s): seed 3's mix without the 25 more Laplace terms
    is already wide enough for a coarser auxiliary grid (asserted); the fine composition, the costly part,
    is narrower."""
    _auxiliary_composition_is_sound_and_near_the_fine_one(3, 0)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(24))
def test_auxiliary_compositions_are_sound_and_near_the_fine_ones(seed):
    _auxiliary_composition_is_sound_and_near_the_fine_one(seed, 25)


def _auxiliary_composition_is_sound_and_near_the_fine_one(seed: int, extra: int) -> None:
    """An auxiliary composition (a coarser grid where the total is wide) is never below the exact
    curve (tests/reference.py) and within the accuracy it is allowed of the default one."""
    ms = _mixed(seed)
    ms[LaplaceMechanism(1.5)] = ms.get(LaplaceMechanism(1.5), 0) + extra  # a wide total: a coarser grid
    fine = batch.BatchCurve(ms, interval=batch.aligned_interval(tuple(ms.items())))
    with batch.auxiliary():
        composition = compose(ms)
    curve = dict(composition.candidates)["batch"]
    assert curve.interval > fine.interval  # coarser: the case under test
    exact_below = reference.loss_distribution(_reference_mechanisms(ms), h=2e-3, rounding="down")
    for eps in (0.0, 1.0, 5.0, 10.0, 20.0):
        assert float(curve.delta(eps)) >= reference.loss_delta(exact_below, eps) - 1e-12
        assert float(curve.delta(eps)) >= float(fine.lower.delta(eps)) - 1e-12
    for d in (1e-3, 1e-6):
        assert float(curve.epsilon(d)) <= float(fine.epsilon(d)) * (1 + batch.COARSENING_SHARE * batch.DEFAULT_RTOL) + 1e-9


def test_laplace_renyi_terms_are_above_the_closed_form_and_close():
    """Mironov 2017, Table II: D_a(Lap(b)) = log(a / (2a - 1) e^{(a-1)/b} + (a - 1) / (2a - 1) e^{-a/b}) / (a - 1)."""
    b = 3.0
    a = RENYI_ORDERS
    closed = np.log(a / (2 * a - 1) * np.exp((a - 1) / b) + (a - 1) / (2 * a - 1) * np.exp(-a / b)) / (a - 1)
    terms, leak = renyi_terms(LaplaceMechanism(b))
    assert leak == 0.0
    assert np.all(terms >= closed - 1e-12)
    assert np.all(terms <= closed + 1e-5)  # split 4 times coarser from dp-accounting's pmf on its default interval


@tiers.parametrize("guarantee, count", [(LaplaceMechanism(2.0), 10), (Subsampled(0.02, GaussianMechanism(1.0)), 50),
                                         (Subsampled(0.05, LaplaceMechanism(1.0)), 100)], default=1)
def test_renyi_curve_of_noise_terms_is_above_the_composition(guarantee, count):
    """The Renyi bound of ``count`` copies (Chernoff on the upper laws) is never below the batch
    composition's certified lower curve, and not far above its upper one at delta 1e-6."""
    terms, leak = renyi_terms(guarantee)
    bound = renyi_curve(terms * count, leak * count)
    composed = batch.BatchCurve({guarantee: count, PureDP(1e-12): 1})
    for eps in (0.5, 1.0, 2.0, 4.0):
        assert float(bound.delta(eps)) >= float(composed.lower.delta(eps)) - 1e-15
    assert float(composed.epsilon(1e-6)) <= float(bound.epsilon(1e-6)) <= 1.5 * float(composed.epsilon(1e-6))

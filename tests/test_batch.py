"""Batch composition on one grid (gce/accounting/batch.py): the bracket (lower, upper) holds the
exact value, the upper curve is never below it, and the bracket narrows as the grid is refined.

References: brute force over canonical pairs (tests/reference.py, 002 eqs. 9-10) for small lists;
002 Thm. III.3 (gce's exact route, itself checked against reference.py in test_theorems.py) for
repeated guarantees; the exact GDP formula (Dong, Roth, Su, Cor. 2.13 and 3.3: Gaussian composition
is mu-GDP with mu = sqrt(sum mu_i^2)); dp-accounting's own optimistic and pessimistic PLDs for
Laplace and subsampled noise.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution

from gce.accounting import batch
from gce.accounting.curves import GaussianCurve, PrivacyCurve
from gce.accounting.guarantees import (
    ApproxDP,
    GaussianMechanism,
    LaplaceMechanism,
    PureDP,
    RandomizedResponse,
    Subsampled,
)
from gce.accounting.pld import PLDCurve, compose_pld
from gce.accounting.theorems import BATCH_MIN_POINTS, THEOREMS, compose

import reference
import tiers

EPSILONS = [0.0, 0.3, 1.0, 2.0, 3.5]
DELTAS = [0.3, 1e-2, 1e-4, 1e-6]


def _points(seed: int, size: int) -> list[tuple[float, float]]:
    rng = np.random.default_rng(seed)
    eps = rng.uniform(0.0, 1.5, size)
    delta = rng.choice([0.0, 0.0, 1e-7, 1e-4, 0.02], size)
    return [(float(e), float(d)) for e, d in zip(eps, delta)]


def _guarantees(points):
    return [PureDP(e) if d == 0 else ApproxDP(e, d) for e, d in points]


def _check_bracket(curve: batch.BatchCurve, exact_delta, exact_epsilon=None):
    for e in EPSILONS:
        low, high = curve.delta_bracket(e)
        exact = exact_delta(e)
        assert low <= exact * (1 + 1e-12) + 1e-15, (e, low, exact)
        assert high >= exact, (e, high, exact)
    if exact_epsilon is not None:
        for d in DELTAS:
            low, high = curve.epsilon_bracket(d)
            exact = exact_epsilon(d)
            assert low <= exact <= high or (low == exact == high == math.inf), (d, low, exact, high)


# ---------------------------------------------------------------------------
# Small lists: brute force lies inside the bracket


@tiers.parametrize("seed, size", [(s, 2 + s % 6) for s in range(24)], default=6)
def test_brute_force_lies_inside_the_bracket(seed, size):
    points = _points(seed, size)
    curve = batch.batch_compose(_guarantees(points))
    exact = compose(_guarantees(points))  # optimal enumeration / Thm. III.3: exact for canonical pairs
    assert exact.exact
    _check_bracket(curve, lambda e: reference.exact_delta(points, e), exact.epsilon)


@tiers.parametrize("seed", range(8, 20), default=2)
def test_twelve_guarantees_inside_the_bracket_of_optimal_enumeration(seed):
    points = _points(seed, 12)
    exact = compose(_guarantees(points))
    assert exact.exact and exact.candidates[0][0] in ("optimal-enumeration", "kairouz-III.3")
    _check_bracket(batch.batch_compose(_guarantees(points)), exact.delta, exact.epsilon)


def test_hand_value_two_pure_pairs():
    # Two canonical (1, 0) pairs: loss 2 w.p. e^2/(1+e)^2, 0 w.p. 2e/(1+e)^2; delta(0) by hand.
    e = math.e
    by_hand = e * e / (1 + e) ** 2 * (1 - math.exp(-2.0))
    low, high = batch.batch_compose({PureDP(1.0): 2}, interval=1e-4).delta_bracket(0.0)
    assert low <= by_hand <= high
    assert high - by_hand < 1e-8 and by_hand - low < 1e-4  # split pairs: O(h^2) above; rounded down: O(h)


def test_the_bracket_narrows_as_the_grid_is_refined():
    points = _points(3, 7)
    widths, uppers = [], []
    for rtol in (1e-1, 1e-2, 1e-3):
        curve = batch.batch_compose(_guarantees(points), rtol=rtol)
        low, high = curve.epsilon_bracket(1e-3)
        widths.append(high - low)
        uppers.append(high)
    assert widths[0] > widths[1] > widths[2] > 0
    assert widths[2] < 5e-3 * uppers[2]  # rtol 1e-3 asks for about that much (module doc: K h / 2 on average)
    exact = compose(_guarantees(points)).epsilon(1e-3)
    assert all(u >= exact for u in uppers) and uppers[2] - exact < 1e-6


def test_upper_never_below_brute_force_on_a_dense_grid_of_epsilons():
    points = [(0.1, 1e-4), (0.7, 0.0), (1.3, 0.02), (0.25, 0.0), (0.05, 1e-7)]
    curve = batch.batch_compose(_guarantees(points), rtol=0.3)  # a coarse grid
    eps = np.linspace(0.0, 3.0, 61)
    upper = curve.delta(eps)
    exact = np.array([reference.exact_delta(points, e) for e in eps])
    assert np.all(upper >= exact)
    assert np.all(curve.lower.delta(eps) <= exact + 1e-15)


@pytest.mark.parametrize("eps, delta", [(0.013, 0.0), (0.2, 1e-6), (1.3, 0.01)])
@pytest.mark.parametrize("count", [2, 7, 50])
def test_copies_of_a_point_meet_the_grid_once(eps, delta, count, monkeypatch):
    """``count`` copies of (eps, delta) are composed exactly (a binomial law, KOV15 Thm. 3.3) before they are
    split or rounded down: upper and lower around the exact curve (reference.exact_delta) on a coarse grid,
    and the bracket narrower than when each copy meets the grid (the engine before), by about ``count``."""
    grid = np.linspace(0.0, count * eps * 1.2, 41)
    if count <= 7:  # brute force over the copies' outcomes
        exact = np.array([reference.exact_delta([(eps, delta)] * count, e) for e in grid])
    else:  # the composed canonical pair's atoms, summed exactly
        p_hi, p_lo = (1 - delta) / (1 + math.exp(-eps)), (1 - delta) / (1 + math.exp(eps))
        exact = np.array([1 - (1 - delta) ** count + math.fsum(
            math.comb(count, j) * p_hi ** j * p_lo ** (count - j) * max(0.0, -math.expm1(e - (2 * j - count) * eps))
            for j in range(count + 1)) for e in grid])
    widths = []
    for per_copy in (False, True):
        monkeypatch.setattr(batch, "POINT_COPIES_EXACT", 1 if per_copy else 4096)
        batch.plan.cache_clear()
        g = PureDP(eps) if delta == 0.0 else ApproxDP(eps, delta)
        curve = batch.BatchCurve(((g, count),), interval=0.01)
        assert np.all(curve.delta(grid) >= exact * (1 - 1e-12) - 1e-15)
        assert np.all(curve.lower.delta(grid) <= exact * (1 + 1e-12) + 1e-15)
        d = max(float(exact[len(grid) // 3]), 1e-9)
        widths.append(float(curve.epsilon(d) - curve.lower.epsilon(d)))
    batch.plan.cache_clear()
    assert widths[0] <= 0.02 + 1e-12  # one split above and one rounding below: at most two grid widths
    assert widths[0] < widths[1] or widths[1] <= 0.02


# ---------------------------------------------------------------------------
# Noise mechanisms


@tiers.parametrize("sigmas", [{3.0: 2, 4.0: 1}, {1.0: 2, 2.0: 3, 3.0: 1, 1.5: 2}], default=1)
def test_gaussian_composition_is_within_the_bracket_of_gdp(sigmas):
    mu = math.sqrt(sum(n / s**2 for s, n in sigmas.items()))
    curve = batch.batch_compose({GaussianMechanism(s): n for s, n in sigmas.items()})
    exact = GaussianCurve(mu)
    _check_bracket(curve, lambda e: float(exact.delta(e)), lambda d: float(exact.epsilon(d)))
    low, high = curve.epsilon_bracket(1e-6)
    assert high - low < 0.05 * high


@tiers.parametrize("mechanisms", [
    pytest.param({LaplaceMechanism(1.0): 3, LaplaceMechanism(2.0): 2}, id="laplace"),
    pytest.param({Subsampled(0.2, LaplaceMechanism(2.0)): 10, Subsampled(0.1, LaplaceMechanism(3.0)): 5},
                 id="subsampled-laplace"),
    pytest.param({Subsampled(0.05, GaussianMechanism(1.0)): 20, Subsampled(0.1, LaplaceMechanism(2.0)): 10},
                 id="subsampled-gaussian"),
], default=[1])  # laplace: 0.4 to 0.8 s (dp-accounting's optimistic pmfs); subsampled-laplace takes the same path
def test_noise_mechanisms_between_dp_accounting_optimistic_and_pessimistic(mechanisms):
    curve = batch.batch_compose(mechanisms)
    module = privacy_loss_distribution
    optimistic = None
    for g, n in mechanisms.items():
        inner = g.mechanism if isinstance(g, Subsampled) else g
        rate = g.rate if isinstance(g, Subsampled) else 1.0
        build = module.from_gaussian_mechanism if isinstance(inner, GaussianMechanism) else module.from_laplace_mechanism
        scale = inner.sigma if isinstance(inner, GaussianMechanism) else inner.scale
        one = build(scale, pessimistic_estimate=False, sampling_prob=rate, use_connect_dots=False).self_compose(n)
        optimistic = one if optimistic is None else optimistic.compose(one)
    pessimistic = PLDCurve(compose_pld(tuple(mechanisms.items())))
    for e in (0.1, 0.5, 1.0, 2.0):
        ours = float(curve.delta(e))
        assert ours >= float(optimistic.get_delta_for_epsilon(e))
        assert ours <= float(pessimistic.delta(e)) * (1 + 1e-6) + 1e-12
        assert curve.lower.delta(e) <= ours
    for d in (1e-3, 1e-6):
        ours = float(curve.epsilon(d))
        assert ours >= float(optimistic.get_epsilon_for_delta(d))
        assert ours <= float(pessimistic.epsilon(d)) * (1 + 1e-6)


# ---------------------------------------------------------------------------
# Round trips and degenerate inputs


def test_epsilon_and_delta_round_trip():
    curve = batch.batch_compose(_guarantees([(e, min(d, 1e-7)) for e, d in _points(5, 9)]))
    for d in (0.2, 1e-2, 1e-4):
        eps = float(curve.epsilon(d))
        assert math.isfinite(eps)
        assert curve.delta(eps) <= d
        assert curve.delta(eps * (1 - 1e-6)) > d * (1 - 1e-6)
        low = float(curve.lower.epsilon(d))
        assert low <= eps and curve.lower.delta(low * (1 + 1e-6)) <= d  # rounded down: at most the exact
    assert np.all(np.diff(curve.delta(np.linspace(0, 5, 50))) <= 0)


@pytest.mark.parametrize("guarantees, check", [
    ({PureDP(0.0): 5, ApproxDP(0.0, 1e-3): 2}, lambda c: c.delta(0.0) == pytest.approx(1 - (1 - 1e-3) ** 2, rel=1e-6)),
    ({ApproxDP(0.5, 1 - 1e-12): 3, PureDP(0.2): 1}, lambda c: c.epsilon(0.5) == math.inf and c.delta(3.0) > 0.999),
    ({PureDP(700.0): 1, PureDP(0.1): 3}, lambda c: 700.29 < c.epsilon(1e-6) <= 700.3 * 1.01),  # exact 700.2999...
    ({PureDP(1e4): 2, ApproxDP(0.3, 1e-9): 2}, lambda c: 2e4 <= c.epsilon(1e-6) <= 2.0001e4 * 1.01),
    ({RandomizedResponse(0.0): 3, PureDP(0.0): 1}, lambda c: c.epsilon(1e-9) == 0.0 and c.delta(0.0) == pytest.approx(0, abs=1e-12)),
], ids=["eps-0", "delta-near-1", "eps-700", "eps-1e4", "identity"])
def test_degenerate_inputs_answer_without_nan(guarantees, check):
    curve = batch.batch_compose(guarantees)
    for e in (0.0, 1.0, 1e3, math.inf):
        value = curve.delta(e)
        assert 0.0 <= value <= 1.0 and not math.isnan(value)
    for d in (0.0, 1e-9, 0.5, 1.0):
        for value in (curve.epsilon(d), curve.lower.epsilon(d)):
            assert not math.isnan(value) and value >= 0
    assert check(curve)


@tiers.parametrize("count", [10**3, 10**4, 10**6], default=1)
def test_a_million_copies_of_one_guarantee(count):
    g = ApproxDP(0.01, 1e-12)
    curve = batch.batch_compose({g: count})
    exact = compose({g: count})  # 002 Thm. III.3, exact
    assert exact.exact
    low, high = curve.epsilon_bracket(1e-6)
    assert math.isfinite(high) and low <= exact.epsilon(1e-6) <= high <= exact.epsilon(1e-6) * 1.01
    assert np.all(curve.delta(np.linspace(0.0, 200.0, 41)) >= exact.curve.delta(np.linspace(0.0, 200.0, 41)))
    # At 10^6 copies the grid is as fine as GRID_LIMIT allows and the rounded-down lower curve is loose
    # (about 25% below); the upper one stays within 1%.


# ---------------------------------------------------------------------------
# The theorem row


def test_the_batch_row_takes_many_distinct_points_and_replaces_pld_there():
    row = {t.name: t for t in THEOREMS}
    many = tuple((PureDP(0.01 * i), 40) for i in range(1, 11))  # 41^10 outcomes: no enumeration
    few = tuple((PureDP(0.01 * i), 3) for i in range(1, 4))
    assert row["batch"].accepts(many) and not row["pld"].accepts(many)
    assert not row["batch"].accepts(few) and row["pld"].accepts(few)
    assert not row["batch"].accepts(((GaussianMechanism(2.0), 4),))  # one kind alone: the exact rows
    c = compose(dict(many))
    assert "batch" in dict(c.candidates)
    curve = dict(c.candidates)["batch"]
    assert isinstance(curve, PrivacyCurve) and isinstance(curve, batch.BatchCurve)
    low, high = curve.epsilon_bracket(1e-6)
    assert low <= c.epsilon(1e-6) <= high


def test_the_batch_row_is_never_above_pld_on_the_fewest_points():
    """The fast twin of the next test (0.4 s, not 0.8 to 1.9): BATCH_MIN_POINTS distinct points, the
    fewest the batch row takes alone."""
    batch_row_is_never_above_pld(BATCH_MIN_POINTS)


@pytest.mark.slow
def test_the_batch_row_is_never_above_pld_on_points():
    batch_row_is_never_above_pld(12)


def batch_row_is_never_above_pld(points: int) -> None:
    # The same list through both: pld by hand (the row declines it), batch through compose.
    ms = tuple((ApproxDP(0.02 * i, 1e-9), 20) for i in range(1, points + 1))
    ours = dict(compose(dict(ms)).candidates)["batch"]
    pld = PLDCurve(compose_pld(ms))
    for d in (1e-3, 1e-6):
        assert ours.epsilon(d) <= pld.epsilon(d)
    for e in (0.5, 1.0, 2.0):
        assert ours.delta(e) <= pld.delta(e)


# ---------------------------------------------------------------------------
# The split: every upper law keeps both measures' masses (the given pair is a post-processing of it)


def _masses(index, mass, h):
    """(P-mass, Q-mass) of a law on the grid ``{i h}``: an outcome of loss x has Q-mass e^-x times its P-mass."""
    index, mass = np.asarray(index, dtype=float), np.asarray(mass, dtype=float)
    return math.fsum(mass), math.fsum(mass * np.exp(-index * h))


@pytest.mark.parametrize("h", [1e-3, 0.01, 0.07])
def test_every_split_keeps_the_p_and_q_mass(h):
    """The three places that split an atom between two grid points (a canonical pair's law, a dense law
    coarsened, laws given as (loss, mass)) keep its P-mass and its Q-mass; rounding the atoms up instead
    would lose Q-mass (e^-h of it per atom, checked to be visible at this tolerance)."""
    rng = np.random.default_rng(7)
    for eps in (0.013, 0.5, 2.31):
        p_hi, p_lo = 0.9 / (1 + math.exp(-eps)), 0.9 / (1 + math.exp(eps))  # delta 0.1 at +inf, kept apart
        upper, _ = batch._point_laws(eps, 0.1, 1, h)
        p, q = _masses(upper.index, upper.mass, h)
        assert p == pytest.approx(0.9, rel=1e-14)
        assert q == pytest.approx(p_hi * math.exp(-eps) + p_lo * math.exp(eps), rel=1e-14)
    loss, mass = rng.uniform(-3.0, 3.0, 50), rng.uniform(0.0, 1.0, 50) / 50
    law = batch.loss_law(loss, mass, 1, h, upper=True)
    expected = (math.fsum(mass), math.fsum(mass * np.exp(-loss)))
    assert _masses(law.index, law.mass, h) == pytest.approx(expected, rel=1e-13)
    rounded_up = math.fsum(mass * np.exp(-np.ceil(loss / h) * h))
    assert rounded_up < expected[1] * (1 - 1e-4)
    fine = batch._Law(np.arange(-400, 401, 7, dtype=np.int64), rng.uniform(0.0, 1.0, 115) / 115, 1, 0.0)
    for k in (2, 5, 16):
        coarse = batch._split_coarsen(fine, k, h / k)
        assert _masses(coarse.index, coarse.mass, h) == pytest.approx(_masses(fine.index, fine.mass, h / k),
                                                                       rel=1e-13)

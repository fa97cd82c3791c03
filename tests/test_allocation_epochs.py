"""Epochs of random allocation at small deltas (gce.priors.allocation.epochs) and the tilted composition
(gce.priors.allocation.tilted): against brute force over canonical pairs, Kairouz et al.'s exact composition
(002, Thm. III.3) at deltas down to 1e-14, and the independent quadrature of tests/allocation_reference.py."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from gce.accounting import batch
from gce.priors.allocation import CanonicalRatio, GaussianRatio, allocation_curve
from gce.priors.allocation.bracket import _Law
from gce.priors.allocation.epochs import _trimmed, compose_epochs, epochs_tail
from gce.priors.allocation.tilted import compose_tilted, tilt

from reference import kairouz_iii3_by_formula, mixture_delta


def _pure_law(eps0: float, count: int, h: float, upper: bool) -> batch._Law:
    """``count`` copies of the canonical pair of pure eps0-DP: loss +eps0 (P-mass e^eps0 / (1 + e^eps0)) or -eps0."""
    p = math.exp(eps0) / (1.0 + math.exp(eps0))
    return batch.loss_law([eps0, -eps0], [p, 1.0 - p], count, h, upper=upper)


@pytest.mark.parametrize("count, eps0", [(200, 0.1), (1000, 0.05)])
def test_the_tilted_composition_brackets_the_exact_one_down_to_tiny_deltas(count, eps0):
    """count copies of pure eps0-DP on a grid holding +-eps0 exactly: the exact curve is 002 Thm. III.3
    (60-digit arithmetic). The tilted composition's upper and lower curves hold it between them at epsilons
    where delta is 1e-6 down to 1e-14, and within 0.1% of it; the plain composition's allowance (about 1e-13)
    is larger than the smallest deltas themselves."""
    h = eps0 / 50
    up, low = _pure_law(eps0, count, h, True), _pure_law(eps0, count, h, False)
    for eps in np.linspace(1.0, 0.75 * count * eps0 ** 2 + 6 * eps0 * math.sqrt(count), 6):
        exact = kairouz_iii3_by_formula(count, float(eps0), 0.0, float(eps))
        if not 1e-14 <= exact <= 1e-6:
            continue
        upper = compose_tilted([up], h, float(eps), upper=True).delta(eps)
        lower = compose_tilted([low], h, float(eps), upper=False).delta(eps)
        assert lower <= exact <= upper, (eps, lower, exact, upper)
        assert upper <= exact * 1.001 and lower >= exact * 0.999, (eps, lower, exact, upper)
    # the tilt is 0 when the target is below the mean, and increases with it
    mean = count * eps0 * math.tanh(eps0 / 2)
    assert tilt([up], h, 0.5 * mean) == 0.0 < tilt([up], h, 2 * mean) < tilt([up], h, 3 * mean)


def _allocation_support(t: int, epochs: int):
    """h1 of E fresh allocations of 1 of t: one database of each epoch's block of t, uniformly."""
    weight = 1.0 / t ** epochs
    return [(frozenset(e * t + i for e, i in enumerate(choice)), weight)
            for choice in itertools.product(range(t), repeat=epochs)]


@pytest.mark.parametrize("eps0, delta0, t, epochs", [
    (1.0, 0.0, 2, 3), pytest.param(0.5, 1e-4, 3, 2, marks=pytest.mark.slow),
    (0.5, 1e-12, 3, 2), (2.0, 0.0, 2, 4)])
def test_epochs_of_canonical_pairs_against_brute_force(eps0, delta0, t, epochs):
    """E epochs of 1 of t with every database an (eps0, delta0) canonical pair: the exact curve by brute force
    over all 4^(tE) outputs (tests/reference.mixture_delta), held by compose_epochs' bracket in both
    directions at epsilons from the bulk to deltas of 1e-9."""
    ratio = CanonicalRatio(eps0, delta0)
    target = 1e-9
    curve = compose_epochs({(ratio, t): epochs}, {(ratio, t): epochs}, 0.01, target, None, epochs_tail(target, epochs))
    invocations = [(db, eps0, delta0) for db in range(t * epochs)]
    h1 = _allocation_support(t, epochs)

    def exact(eps: float) -> float:
        return mixture_delta([(frozenset(), 1.0)], h1, invocations, eps)

    for eps in np.linspace(0.05, epochs * eps0, 7):
        low, high = curve.delta_bracket(float(eps))
        truth = exact(float(eps))
        assert low <= truth * (1 + 1e-9) + 1e-15 and truth <= high * (1 + 1e-9) + 1e-15, (eps, low, truth, high)
    # at the target: the exact epsilon (bisection on the brute force) inside a bracket within 1%
    low, high = curve.epsilon_bracket(target)
    lo, hi = 0.0, 2.0 * epochs * eps0 + 5.0
    if exact(hi) > target:  # P's mass outside Q's support (delta0 of each member) exceeds the target
        assert high == math.inf and low > epochs * eps0
        return
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if exact(mid) > target else (lo, mid)
    assert low <= hi and lo <= high and high <= 1.01 * low, (low, lo, hi, high)


@pytest.mark.parametrize("sigma, t, epochs, delta, truth", [
    (2.0, 1000, 5, 1e-8, (0.1774, 0.1783)),       # the unamplified bound was 6.54 (a peer: 0.209)
    pytest.param(1.5, 500, 20, 1e-10, (0.8751, 0.8789), marks=pytest.mark.slow),  # was 22.88
    (0.6, 100, 100, 1e-12, (35.61, 35.74)),       # was [35.40, 36.04]: the composition's own round-off
    (0.8, 1000, 10, 1e-8, (1.4544, 1.4617)),      # was 29.38
    # the lower laws of the tilted grid trimmed (epochs._trimmed): 2.7 s, was 11 to 18 s at [0.19544, 0.19736]
    pytest.param(1.0, 10000, 10, 1e-8, (0.19673, 0.19736), marks=pytest.mark.slow),
])
def test_shuffled_epochs_at_small_deltas_are_certified_within_one_percent(sigma, t, epochs, delta, truth):
    """Training-scale shuffled batches: the bracket within 1% where the upper end used to collapse to the
    Gaussians' own composition (the uniform grid's absolute round-off, about 1e-9 an epoch at t = 1,000,
    swamped the target); both ends inside the bracket measured with finer grids."""
    low, high = allocation_curve(1.0 / sigma, t, epochs=epochs, delta=delta, rtol=0.01).epsilon_bracket(delta)
    assert high / low - 1 <= 0.01
    assert truth[0] - 1e-3 <= low <= high <= truth[1] + 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("mu", [1.0, 2.0])
def test_two_epochs_of_one_of_two_at_small_deltas_against_the_quadrature(mu):
    """Two fresh allocations of 1 of 2 (dP/dQ = (W1 + W2)(W3 + W4) / 4, multi-affine): the tanh-sinh rule
    of tests/allocation_reference.py at epsilons where delta is about 1e-7 to 1e-11, inside gce's bracket."""
    from allocation_reference import multiaffine_deltas

    coefficients = np.zeros((2, 2, 2, 2))
    for first, second in itertools.product(((1, 0), (0, 1)), repeat=2):
        coefficients[first + second] = 0.25
    curve = allocation_curve(mu, 2, 1, epochs=2, delta=1e-11)
    for target in (1e-7, 1e-9, 1e-11):
        eps = float(curve.epsilon(target))
        pq, qp = multiaffine_deltas(mu, coefficients, eps)
        low, high = curve.delta_bracket(eps)
        assert high >= max(pq.value - pq.error, qp.value - qp.error) * (1 - 1e-9), (eps, pq, qp, high)
        assert low <= max(pq.value + pq.error, qp.value + qp.error) * (1 + 1e-9), (eps, pq, qp, low)


@pytest.mark.parametrize("mu, t", [pytest.param(1.0, 4, marks=pytest.mark.slow), (0.5, 3)])
def test_the_tilted_uniform_laws_hold_the_quadrature_down_to_tiny_deltas(mu, t):
    """One epoch of 1 of t: the tilted uniform grid's upper and lower laws (uniform_tilted) hold the exact
    deltas of the independent quadrature (tests/allocation_reference.py) in both directions at epsilons where
    delta is 1e-4 down to about 1e-13, where the plain uniform grid's allowance (mass at infinite loss) is
    above the delta itself; the upper end is the plain grid's own spread pair (the same masses but for the
    entries' allowances, 1e-3 of delta 1e-5 in all, where the plain one is accurate), within its cells' resolution of the truth (a factor 2 at these
    coarse cells: the clamp at a 1e-20 tail makes them wide)."""
    from allocation_reference import k_of_t_deltas

    from gce.priors.allocation.uniform_grid import _linear_laws
    from gce.priors.allocation.uniform_tilted import _tilted_laws

    ratio = GaussianRatio(mu)
    laws = {w: _tilted_laws(ratio, t, 2**14, 1e-20, w) for w in ("remove", "add")}
    plain = _linear_laws(ratio, t, 2**14, 1e-20, "remove")[0]
    checked = 0
    for eps in np.linspace(0.5, 6.0 * mu + 1.0, 9):
        pq, qp = k_of_t_deltas(mu, t, 1, float(eps))
        for which, exact in (("remove", pq), ("add", qp)):
            upper, lower, _ = laws[which]
            if not 1e-13 <= exact.value <= 1e-4:
                continue
            high = float(upper.curve().delta(eps))
            low = float(batch_lower(lower, eps))
            assert low <= exact.value + exact.error and exact.value - exact.error <= high, (which, eps, low, exact, high)
            if exact.value > 1e-7:  # further out the cells (wide: the clamp at a 1e-20 tail) decide, not round-off
                assert high <= 2.0 * exact.value + exact.error and low >= 0.5 * exact.value - exact.error
            if which == "remove" and exact.value > 1e-6:
                assert high == pytest.approx(float(plain.curve().delta(eps)), rel=1e-3, abs=plain.infinite)
            checked += 1
    assert checked >= 6
    # what the plain grid charges at infinite loss (its round-off), the tilted one no longer does
    assert laws["remove"][0].infinite < 1e-3 * plain.infinite


def batch_lower(law, eps: float) -> float:
    """A lower law's delta at eps (its allowances are in the masses: no slack to subtract)."""
    assert law.slack == 0.0 and law.slack_other == 0.0
    return float(law.curve().delta(eps))


@pytest.mark.slow
def test_a_step_that_overruns_on_a_loaded_machine_stops_within_the_contract():
    """Estimates may be wrong on a busy machine: with two busy loops beside it (started and stopped here), the
    epochs' refinement notices at its checkpoints that the cap has passed and keeps its last completed pass:
    within 1.1 x the limit + 0.5 s (measured 5.1 s at a 5 s cap), certified (its bracket holds the uncapped
    one's), and the deadline says what stopped."""
    import subprocess
    import time

    from gce import effort

    uncapped = allocation_curve(1.0 / 0.6, 1000, epochs=100, delta=1e-5, rtol=0.01).epsilon_bracket(1e-5)
    busy = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(2)]
    try:
        deadline = effort.Deadline(5.0)
        start = time.perf_counter()
        with effort.within(deadline):
            curve = allocation_curve(1.0 / 0.6, 1000, epochs=100, delta=1e-5, rtol=0.01)
        elapsed = time.perf_counter() - start
    finally:
        for process in busy:
            process.kill()
            process.wait()
    low, high = curve.epsilon_bracket(1e-5)
    assert elapsed <= 1.1 * 5.0 + 0.5, elapsed
    assert low <= uncapped[1] and uncapped[0] <= high
    if deadline.reached:
        assert "refinement stopped at the time limit" in curve.description or high / low - 1 > 0.01


def test_k_of_t_over_epochs_at_a_small_delta_composes_the_blocks_at_any_delta():
    """4 of 100 at sigma 1, 10 epochs, delta 1e-10: the decomposition's 40 blocks of 1 of 25 composed by
    compose_epochs above (the uniform blocks' absolute round-off gave an upper end of 59.5, the Gaussians'
    own composition), the garbled k-of-t pair below: measured [11.366, 11.919] (4.9%: the lower end is the
    loose one, the sum's garbling), in seconds; and never above one epoch's decomposition composed ten times
    by the plain Gaussian bound."""
    low, high = allocation_curve(1.0, 100, 4, epochs=10, delta=1e-10, rtol=0.01).epsilon_bracket(1e-10)
    assert 11.3 < low <= high < 12.0
    assert high / low - 1 < 0.06


def test_an_epsilon_target_where_the_tilt_is_zero_reads_a_bracket():
    """Two copies of 1 of 10 at mu 2, delta at eps 6: the composition is read untilted (tilt 0), whose
    allowance was a scalar and broke the curve's floor (IndexError); now a bracket within rtol, below the
    Gaussian of mu sqrt(2) (the copies' own composition, no amplification) and above one copy alone."""
    from scipy import stats

    ratio = GaussianRatio(2.0)
    low, high = compose_epochs({(ratio, 10): 2}, {(ratio, 10): 2}, 0.01, None, 6.0, 1e-12).delta_bracket(6.0)
    m = 2.0 * math.sqrt(2.0)
    gaussian = stats.norm.cdf(-6.0 / m + m / 2) - math.exp(6.0) * stats.norm.cdf(-6.0 / m - m / 2)
    one = allocation_curve(2.0, 10, epsilon=6.0).delta_bracket(6.0)[1]
    assert one < low <= high <= gaussian and (high - low) / high <= 0.01, (low, high, one, gaussian)


def test_a_lower_law_is_trimmed_within_its_budget_and_only_lowered():
    """The far outcomes of a garbled law (losses of -30 and +130 with next to no mass, as the tilted grid's
    edges give) are merged below and lowered above, each side moving at most half of e^floor of P-mass, so
    the composed lower delta only falls, and by at most that."""
    loss = np.array([-30.0, -25.0, -2.0, -0.5, 0.0, 0.3, 0.6, 40.0, 130.0])
    mass = np.array([1e-20, 1e-19, 0.1, 0.2, 0.3, 0.25, 0.15 - 3e-15, 1e-15, 2e-15])
    floor = math.log(1e-12)
    out = _trimmed(_Law(loss, mass, 0.0), floor)
    assert out.loss.max() == 0.6 and np.count_nonzero(out.loss == 0.6) == 3  # 40 and 130 lowered to 0.6
    merged = out.loss[out.loss < -2.0]  # -30 and -25 merged into one outcome, of loss log(sum P / sum Q)
    assert merged.size == 1 and math.isclose(merged[0], math.log(1.1e-19 / (1e-20 * math.exp(30) + 1e-19 * math.exp(25))))
    assert math.isclose(out.mass.sum(), mass.sum(), rel_tol=1e-12)
    for eps in (0.0, 0.1, 0.5):
        before = float(np.sum(mass * np.maximum(1.0 - np.exp(eps - loss), 0.0)))
        after = float(np.sum(out.mass * np.maximum(1.0 - np.exp(eps - out.loss), 0.0)))
        assert before - 3e-15 <= after <= before


@pytest.mark.parametrize("mu, t", [(1.0, 3), (0.5, 2)])
def test_one_epoch_at_delta_1e_15_is_certified_within_one_percent_against_the_quadrature(mu, t):
    """One epoch of 1 of t at delta 1e-15: the clamp was charged the default tail of 1e-14, all of the target, and
    the upper end was infinite ([3.41, 8.17] after 10 s at sigma 1, 1 of 100); at most 1% of delta now
    (epochs.epochs_tail), and the bracket holds the independent quadrature's epsilon."""
    from allocation_reference import k_of_t_deltas

    low, high = allocation_curve(mu, t, delta=1e-15).epsilon_bracket(1e-15)
    assert high / low - 1 <= 0.01
    at_high = max(d.value + d.error for d in k_of_t_deltas(mu, t, 1, high))
    at_low = max(d.value - d.error for d in k_of_t_deltas(mu, t, 1, low))
    assert at_high <= 1e-15 * (1 + 1e-6) and at_low >= 1e-15 * (1 - 1e-6), (low, at_low, high, at_high)

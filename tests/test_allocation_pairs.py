"""Two members of t (gce.priors.allocation.two_members): the spread recursion above and its garbling below,
against the nested tanh-sinh reference (Gaussians, t = 3 and 4), brute force (canonical pairs, whose ratio
takes three values), and the wiring into allocation_curve (the least upper curve, determinism).

With ``W_i`` each database's likelihood ratio under Q, 2 of t has ``dP/dQ = e_2(W) / C(t, 2)``; both
directions are ``E_Q`` of convex functions of it (two_members' module doc).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from allocation_reference import k_of_t_deltas

from gce.priors.allocation import CanonicalRatio, GaussianRatio, LaplaceRatio, allocation_curve
from gce.priors.allocation.random_allocation import _next_level
from gce.priors.allocation.two_members import PAIR_RATIOS, RATIOS, _members_lower, _pair_blocks, _pair_laws

EPS = (0.3, 1.0, 2.0)


def _deltas(laws, eps):
    (up_remove, up_add), (low_remove, low_add) = laws
    up = [float(law.curve().delta(eps)) for law in (up_remove, up_add)]
    low = [float(law.curve().delta(eps)) - law.slack - law.slack_other * math.exp(eps) for law in (low_remove, low_add)]
    return up, low


@pytest.mark.parametrize("mu, t", [(1.0, 3), pytest.param(1.0, 4, marks=pytest.mark.slow), (2.0, 3)])
def test_pair_laws_sandwich_the_quadrature(mu, t):
    laws = _pair_laws(GaussianRatio(mu), t, RATIOS[0], 1e-12, 2.0)
    for eps in EPS:
        up, low = _deltas(laws, eps)
        for d, ref in enumerate(k_of_t_deltas(mu, t, 2, eps)):
            assert low[d] <= ref.value + ref.error and up[d] >= ref.value - ref.error, (mu, t, eps, d, ref, low, up)
            # the coarsest grid of the schedule is already within about 10% (mu = 2: 15% below)
            assert up[d] <= 1.12 * ref.value and low[d] >= (0.85 if mu == 2.0 else 0.9) * ref.value, (eps, d)


@pytest.mark.parametrize("merge_most", [2**22, 8])
def test_the_map_of_moves_applies_every_chunk(monkeypatch, merge_most):
    # moves added state by state over several "steps", chunks merged as they come (two_members._Transitions),
    # or kept apart beyond MERGE_MOST moves: every application equals the dense matrix of all the moves added so
    # far, for one measure and for several
    from gce.priors.allocation import two_members
    from gce.priors.allocation.two_members import _Transitions
    monkeypatch.setattr(two_members, "MERGE_MOST", merge_most)
    rng = np.random.default_rng(3)
    size = 40
    maps = _Transitions(size, values=2)
    dense = np.zeros((2, size, size))
    order = rng.permutation(size)
    added = 0
    for batch in np.array_split(order, [1, 3, 4, 12, 13, 30]):  # uneven batches: merged and unmerged chunks
        for state in batch:
            count = int(rng.integers(1, 6))
            added += count
            targets = rng.integers(0, size, count)
            q, p = rng.random(count), rng.random(count)
            maps.add(np.full(count, state), targets, q, p)
            np.add.at(dense[0], (targets, np.full(count, state)), q)
            np.add.at(dense[1], (targets, np.full(count, state)), p)
        maps.ready()
        x = rng.random(size)
        y = rng.random((size, 3))
        for v in range(2):
            assert np.allclose(maps.apply(x, v), dense[v] @ x, rtol=1e-13, atol=0)
            assert np.allclose(maps.apply(y, v), dense[v] @ y, rtol=1e-13, atol=0)
    assert maps.moves == added
    assert (len(maps._chunks) > 3) == (merge_most == 8)  # (merged into a few, or kept apart)


def test_the_condition_of_cells_reads_their_tails():
    # cells 0.5, 0.25, 0.25 of a distribution: the middle one is the difference of 0.75 and 0.5 below (1.25 of
    # tails) or of 0.5 and 0.25 above (0.75): 0.75 / 0.25 = 3; the outer ones 1; the narrow cell of the
    # second case, the difference of two numbers near 0.5 (about 1 of tails), 1e6
    from gce.priors.allocation.two_members import _condition
    assert _condition(np.array([0.5, 0.25, 0.25])) == pytest.approx(3.0)
    assert _condition(np.array([[0.5, 0.5, 0.0], [0.5, 1e-6, 0.5 - 1e-6]])) == pytest.approx(1e6, rel=1e-5)
    assert _condition(np.zeros(3)) == 0.0


def test_the_garbled_pair_reads_small_deltas():
    # 2 of 3 at mu 1: at eps 8 delta_PQ is 1.1e-9. Each mass of the garbled pair is read within a relative
    # allowance (1e-12 here), not an absolute one: the absolute (1.5e-13 of mass) times e^8 would be 4e-10,
    # over a third of the delta; the relative one leaves the garbling's own 85% of it.
    from gce.priors.allocation.two_members import _noise
    laws = _pair_laws(GaussianRatio(1.0), 3, RATIOS[0], 1e-16, 7.0)
    for eps in (7.0, 8.0):
        up, low = _deltas(laws, eps)
        refs = k_of_t_deltas(1.0, 3, 2, eps)
        for d, ref in enumerate(refs):
            assert low[d] <= ref.value + ref.error and up[d] >= ref.value - ref.error, (eps, d, ref, low, up)
        assert low[0] >= 0.8 * refs[0].value and up[0] <= 1.2 * refs[0].value, (eps, low, up, refs)
    assert _noise(3, 10**5) * math.exp(8.0) > 0.3 * k_of_t_deltas(1.0, 3, 2, 8.0)[0].value


def _brute(epsilon: float, delta: float, t: int, eps: float, k: int = 2) -> tuple[float, float]:
    """(delta_PQ, delta_QP) of k of t with canonical (epsilon, delta) pairs, by enumerating the 3^t values of
    W on Q's support (0, e^-epsilon, e^epsilon), plus P's own mass 1 - (1 - delta)^k (a member at output 0)."""
    values, q_mass, _ = CanonicalRatio(epsilon, delta)._atoms()
    c = math.comb(t, k)
    pq, qp = 1.0 - (1.0 - delta) ** k, 0.0
    for pick in itertools.product(range(3), repeat=t):
        w = [values[i] for i in pick]
        q = math.prod(q_mass[i] for i in pick)
        ratio = sum(math.prod(x) for x in itertools.combinations(w, k)) / c
        pq += q * max(ratio - math.exp(eps), 0.0)
        qp += q * max(1.0 - math.exp(eps) * ratio, 0.0)
    return pq, qp


@pytest.mark.parametrize("epsilon, delta, t", [(1.0, 0.0, 3), (0.5, 1e-3, 4), (2.0, 1e-6, 5), (0.5, 1e-3, 5)])
def test_pair_laws_sandwich_brute_force_canonical(epsilon, delta, t):
    laws = _pair_laws(CanonicalRatio(epsilon, delta), t, 1.06, 1e-12, 2.0)
    for eps in (0.0, 0.2, 0.7, 1.5):
        up, low = _deltas(laws, eps)
        for d, ref in enumerate(_brute(epsilon, delta, t, eps)):
            assert low[d] <= ref * (1 + 1e-9) + 1e-13 and up[d] >= ref * (1 - 1e-9) - 1e-13, (eps, d, ref, low, up)


def test_two_members_start_coarser():
    """At two members the levels start at 1.05 and then follow RATIOS: from 1.05 with the pair 4.6% wide the next
    is 1.02 (0.05 sqrt(0.008 / 0.046) = 0.021), from 1.05 at 1.2% it is 1.03 (0.041), after the finest none."""
    assert PAIR_RATIOS == (1.05, *RATIOS)
    assert _next_level(0, 0.046, 0.01, PAIR_RATIOS) == 2
    assert _next_level(0, 0.012, 0.01, PAIR_RATIOS) == 1
    assert _next_level(len(PAIR_RATIOS) - 1, 0.05, 0.01, PAIR_RATIOS) == len(PAIR_RATIOS)


@pytest.mark.parametrize("at, width, rtol, expected", [
    (0, 0.046, 0.01, 3),   # 0.03 sqrt(0.008 / 0.046) = 0.0125: the ratio 1.01
    (0, 0.012, 0.01, 1),   # 0.0245: 1.02
    (1, 0.5, 0.01, 4),     # nothing predicted within: the finest
    (4, 0.05, 0.01, 5)])   # the finest done: no further level
def test_the_next_level_is_the_coarsest_predicted_within_rtol(at, width, rtol, expected):
    assert RATIOS == (1.03, 1.02, 1.014, 1.01, 1.007)
    assert _next_level(at, width, rtol) == expected


def test_pair_laws_keep_the_mean_and_are_deterministic():
    ratio = GaussianRatio(0.8)
    first = _pair_laws(ratio, 6, 1.06, 1e-12, 2.0)
    second = _pair_laws(ratio, 6, 1.06, 1e-12, 2.0)
    for a, b in zip(first[0] + first[1], second[0] + second[1]):
        assert np.array_equal(a.loss, b.loss) and np.array_equal(a.mass, b.mass) and a.infinite == b.infinite
    (up_remove, up_add), (low_remove, low_add) = first
    # the spreads keep E_Q[L] = 1 (up to the clamps' charges, at infinite loss) and Q's mass 1
    assert math.fsum(up_remove.mass) + up_remove.infinite == pytest.approx(1.0, abs=1e-9)
    assert math.fsum(up_add.mass) + up_add.infinite == pytest.approx(1.0, abs=1e-12)
    # below, each measure's masses are the computed ones over 1 + the relative round-off allowance (1e-11 here)
    for law in (low_remove, low_add):
        assert 1.0 - 1e-9 <= math.fsum(law.mass) < 1.0 and law.slack == law.slack_other == 0.0


@pytest.mark.parametrize("t, k, expected", [
    (8, 2, [(8, 2, 1)]), (16, 4, [(8, 2, 2)]), (100, 10, [(20, 2, 5)]), (9, 2, [(9, 2, 1)]),
    (10, 3, [(3, 1, 1), (7, 2, 1)]), (21, 4, [(10, 2, 1), (11, 2, 1)]), (11, 5, [(2, 1, 1), (4, 2, 1), (5, 2, 1)])])
def test_pair_blocks_partition_the_databases_and_the_members(t, k, expected):
    blocks = _pair_blocks(t, k)
    assert blocks == expected
    assert sum(size * count for size, _, count in blocks) == t
    assert sum(members * count for _, members, count in blocks) == k
    assert all(size >= members for size, members, _ in blocks)


@pytest.mark.parametrize("rtol", [0.08, pytest.param(0.05, marks=pytest.mark.slow)])
def test_two_of_four_bracket_holds_the_reference_and_is_deterministic(rtol):
    # 2 of 4 at mu 1, delta at eps 1: the reference (tanh-sinh) is inside the bracket, as wide as asked, and
    # the same numbers twice.
    ref = max(r.value for r in k_of_t_deltas(1.0, 4, 2, 1.0))
    curve = allocation_curve(1.0, 4, 2, epsilon=1.0, rtol=rtol)
    low, high = curve.delta_bracket(1.0)
    assert low <= ref <= high and (high - low) / high <= rtol, (low, ref, high)
    # at 8% the decomposition above and the sums of logarithms below meet already (0.1515, 0.1622: 7.1%);
    # at 5% the blocks of two are needed above
    assert ("blocks of two" in curve.description) == (rtol < 0.08)
    assert "log(1 + r W_i)" in curve.description
    if rtol < 0.08:  # the same numbers twice (the default tier: the laws' own determinism test above)
        assert allocation_curve(1.0, 4, 2, epsilon=1.0, rtol=rtol).delta_bracket(1.0) == (low, high)


def _lower_deltas(laws, eps):
    return [float(law.curve().delta(eps)) - law.slack - law.slack_other * math.exp(eps) for law in laws]


@pytest.mark.parametrize("epsilon, delta, t, k", [(1.0, 0.0, 5, 3), (0.5, 1e-3, 6, 4), (2.0, 1e-6, 5, 3)])
def test_members_garbling_is_below_brute_force_canonical(epsilon, delta, t, k):
    laws = _members_lower(CanonicalRatio(epsilon, delta), t, k, 1.06, 1e-12, 2.0)
    for eps in (0.0, 0.2, 0.7, 1.5):
        low = _lower_deltas(laws, eps)
        for d, ref in enumerate(_brute(epsilon, delta, t, eps, k)):
            assert low[d] <= ref * (1 + 1e-9) + 1e-13, (eps, d, ref, low)
            assert low[d] >= 0.8 * ref - 1e-3, (eps, d, ref, low)  # and reads most of it


@pytest.mark.slow
def test_members_garbling_is_below_the_quadrature():
    # 3 of 4 at mu 1: within 4% below the reference (measured 1.1% at eps 0.3, 4% at eps 2)
    laws = _members_lower(GaussianRatio(1.0), 4, 3, 1.06, 1e-12, 2.0)
    for eps in EPS:
        low = _lower_deltas(laws, eps)
        for d, ref in enumerate(k_of_t_deltas(1.0, 4, 3, eps)):
            assert 0.95 * ref.value <= low[d] <= ref.value + ref.error, (eps, d, ref, low)


def _count_cuts(monkeypatch) -> dict[str, int]:
    from gce.priors.allocation import two_members
    calls = {"above": 0, "below": 0}
    segment, garble = two_members._e_segment_moves, two_members._e_garble_moves

    def counted_segment(*args):
        calls["above"] += 1
        return segment(*args)

    def counted_garble(*args):
        calls["below"] += 1
        return garble(*args)

    monkeypatch.setattr(two_members, "_e_segment_moves", counted_segment)
    monkeypatch.setattr(two_members, "_e_garble_moves", counted_garble)
    return calls


def test_sigma_half_three_databases_with_the_cut_by_e_sandwich_the_quadrature(monkeypatch):
    # sigma 0.5 (mu 2), 2 of 3: W above 33 (the cut by E from there at the ratio 1.03) has Q-mass 0.3%; the
    # pair with and without the cut holds the tanh-sinh reference, and the cut's is no looser at eps 2
    calls = _count_cuts(monkeypatch)
    ratio = GaussianRatio(2.0)
    laws = _pair_laws(ratio, 3, RATIOS[0], 1e-12, 2.0)
    assert calls["above"] > 0 and calls["below"] > 0
    plain = _pair_laws(ratio, 3, RATIOS[0], 1e-12, 2.0, cut=False)
    for eps in EPS:
        up, low = _deltas(laws, eps)
        up_plain, low_plain = _deltas(plain, eps)
        for d, ref in enumerate(k_of_t_deltas(2.0, 3, 2, eps)):
            assert low[d] <= ref.value + ref.error and up[d] >= ref.value - ref.error, (eps, d, ref, low, up)
            assert low_plain[d] <= ref.value + ref.error and up_plain[d] >= ref.value - ref.error
        assert max(up) <= max(up_plain) * (1 + 1e-6) and max(low) >= max(low_plain) * (1 - 1e-6), (eps, up, up_plain)


@pytest.mark.parametrize("ratio, t", [(CanonicalRatio(3.0, 1e-6), 4), (CanonicalRatio(4.0, 0.0), 3)])
def test_the_cut_by_e_is_used_and_sandwiches_brute_force(monkeypatch, ratio, t):
    # far out (S above 17 at the ratio 1.06, W up to e^3 or e^4) the states move along the cells of w cut by
    # the grid of E, above and below: still a sandwich of the enumeration of the 3^t values of W
    calls = _count_cuts(monkeypatch)
    laws = _pair_laws(ratio, t, 1.06, 1e-12, 2.0)
    assert calls["above"] > 0 and calls["below"] > 0
    for eps in (0.0, 0.5, 1.5, 3.0):
        up, low = _deltas(laws, eps)
        for d, ref in enumerate(_brute(ratio.epsilon, ratio.delta, t, eps)):
            assert low[d] <= ref * (1 + 1e-9) + 1e-13 and up[d] >= ref * (1 - 1e-9) - 1e-13, (eps, d, ref, low, up)


def test_a_level_beyond_the_memory_limit_is_refused_from_its_estimate(monkeypatch):
    # the moves are held in memory (two_members._Transitions): a level whose estimated moves exceed the limit
    # is never started (its estimate infinite, beyond any work limit), and within it the estimate is finite
    from gce.priors.allocation import two_members
    ratio = GaussianRatio(1.0)
    assert math.isfinite(two_members._pair_seconds(ratio, 10, RATIOS[0], 1e-12, 2.0))
    monkeypatch.setattr(two_members, "MEMORY_LIMIT", 1e5)
    assert two_members._pair_seconds(ratio, 10, RATIOS[0], 1e-12, 2.0) == math.inf


def test_the_estimate_follows_the_noise():
    # a Gaussian's level is estimated at 0.74 sigma^0.28 (times a margin of 1.1) of the grids' work, within
    # [0.55, 1.05]: rising with the noise, the same for every other ratio (two_members._noise_factor)
    from gce.priors.allocation import two_members
    factors = [two_members._noise_factor(GaussianRatio(1.0 / sigma)) for sigma in (0.3, 0.5, 1.0, 2.0, 5.0)]
    assert factors[2] == pytest.approx(1.1 * 0.74) and factors[0] == pytest.approx(1.1 * 0.55)
    assert factors[-1] == pytest.approx(1.1 * 1.05) and all(a < b for a, b in zip(factors, factors[1:]))
    assert two_members._noise_factor(LaplaceRatio(1.0)) == 1.0
    base = two_members._pair_seconds(GaussianRatio(1.0), 10, RATIOS[0], 1e-12, 2.0) / factors[2]
    assert base > 0.0 and math.isfinite(base)

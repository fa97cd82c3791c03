"""001's closed forms as printed (gce.priors.reproductions): values by hand, and brute force showing which
are unsound (docs/design.md, "Unsound formulas")."""

from __future__ import annotations

import dataclasses
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import strategies as st

import reference
import tiers
from gce.errors import InvalidParameterError, UnsupportedCombinationError
from gce.accounting.guarantees import ApproxDP, GaussianMechanism, PureDP
from gce.priors.hypotheses import Distribution
from gce.model import Invocation
from gce.priors.reproductions import (
    averaging_formula,
    averaging_formula_for,
    corollary6_as_printed,
    corollary7,
    refine_tuples,
    simple_composition_example,
    theorem3_as_printed,
)

TOL = 1e-12


def uniform_nonempty(k):
    sets = [set(c) for r in range(1, k + 1) for c in itertools.combinations(range(k), r)]
    return [(s, 1.0 / len(sets)) for s in sets]


# ---------------------------------------------------------------------------
# The averaging formula (001 Sec. V-B): the two counterexamples of docs/design.md, "Unsound formulas"


def test_first_counterexample():
    invocations = [Invocation(0, ApproxDP(0.0, 0.1)), Invocation(1, PureDP(5.0))]
    h0, h1 = [(set(), 1.0)], [({0}, 0.5), ({1}, 0.5)]
    claimed = averaging_formula_for(h0, h1, invocations)
    # By hand: ln(0.5 e^0 + 0.5 e^5) = ln(74.7066) = 4.3136; delta = 0.5 * 0.1 + 0.5 * 0.
    assert claimed.epsilon == pytest.approx(math.log(74.70657955), abs=1e-8)
    assert claimed.epsilon == pytest.approx(4.3136, abs=1e-4)
    assert claimed.delta == pytest.approx(0.05, abs=1e-15)
    assert claimed.sound is False and "unsound" in claimed.label
    exact = reference.mixture_delta(h0, h1, [(0, 0.0, 0.1), (1, 5.0, 0.0)], claimed.epsilon)
    assert exact == pytest.approx(0.0743, abs=1e-4)
    assert exact > claimed.delta + 0.02


def test_second_counterexample():
    invocations = [Invocation(d, PureDP(5.0)) for d in range(3)]
    h0, h1 = [({0}, 0.5), ({1, 2}, 0.5)], [(set(), 0.5), ({1, 2}, 0.5)]
    claimed = averaging_formula_for(h0, h1, invocations)
    # Alg. 3 matches {0} with {} (pure 5) and {1, 2} with itself (nothing differs).
    assert claimed.epsilon == pytest.approx(math.log((1 + math.exp(5)) / 2), rel=1e-14)
    assert claimed.delta == 0.0
    exact = reference.mixture_delta(h0, h1, [(d, 5.0, 0.0) for d in range(3)], claimed.epsilon)
    assert exact == pytest.approx(0.2434, abs=1e-4)


def test_averaging_formula_by_hand():
    r = averaging_formula([(0.25, 1.0, 0.0), (0.75, 0.0, 0.2)])
    assert r.epsilon == pytest.approx(math.log(0.25 * math.e + 0.75), rel=1e-15)
    assert r.delta == pytest.approx(0.15, rel=1e-15)
    big = averaging_formula([(0.5, 800.0, 0.0), (0.5, 0.0, 0.0)])  # log space: no overflow
    assert big.epsilon == pytest.approx(800.0 - math.log(2.0), rel=1e-15)
    with pytest.raises(InvalidParameterError):
        averaging_formula([])
    with pytest.raises(UnsupportedCombinationError):
        averaging_formula_for([(set(), 1.0)], [({0}, 1.0)], [Invocation(0, GaussianMechanism(1.0))])


# ---------------------------------------------------------------------------
# Thm. 3 / Cor. 6: the heterogeneous counterexample


def test_cor6_counterexample():
    claimed = corollary6_as_printed([(6.0, 0.0), (0.0, 0.4)])
    # i = 1: (6, 0) + amplified (0, 0.4) = (0, 0.2); i = 2: (0, 0.4). Weights 2/3, 1/3.
    assert claimed.epsilon == pytest.approx(math.log(2 / 3 * math.exp(6) + 1 / 3), rel=1e-14)
    assert claimed.epsilon == pytest.approx(5.5958, abs=1e-4)
    assert claimed.delta == pytest.approx(2 / 3 * 0.2 + 1 / 3 * 0.4, rel=1e-14)
    assert claimed.delta == pytest.approx(0.2667, abs=1e-4)
    assert claimed.sound is False and claimed.label == "001 Cor. 6 (as printed; unsound)"
    exact = reference.mixture_delta([(set(), 1.0)], uniform_nonempty(2), [(0, 6.0, 0.0), (1, 0.0, 0.4)],
                                    claimed.epsilon)
    assert exact == pytest.approx(0.3102, abs=1e-4)
    assert exact > claimed.delta + 0.04


def test_theorem3_is_cor6_with_its_hats():
    mechanisms = [(1.0, 1e-3), (0.5, 0.0), (2.0, 1e-2)]
    amp = [(math.log1p((math.exp(e) - 1) / 2), d / 2) for e, d in mechanisms]
    hats = [(amp[1][0] + amp[2][0], amp[1][1] + amp[2][1]), amp[2], (0.0, 0.0)]
    points = [(e + he, d + hd) for (e, d), (he, hd) in zip(mechanisms, hats)]
    t3 = theorem3_as_printed(points)
    c6 = corollary6_as_printed(mechanisms)
    assert (t3.epsilon, t3.delta) == pytest.approx((c6.epsilon, c6.delta), rel=1e-14)
    assert t3.label == "001 Thm. 3 (as printed; unsound)"
    assert corollary6_as_printed(mechanisms, hats=hats).epsilon == pytest.approx(c6.epsilon, rel=1e-15)
    with pytest.raises(InvalidParameterError, match="hats"):
        corollary6_as_printed(mechanisms, hats=hats[:2])


# ---------------------------------------------------------------------------
# Eq. 3-4 and Cor. 7


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("eps,delta", [(0.1, 1e-5), (1.0, 0.0), (2.5, 0.01)])
def test_eq3_equals_eq4_equals_cor6_and_cor7(k, eps, delta):
    # Eq. 3: ln[sum_j C(k, j) e^{j eps} / (2^k - 1)]; delta: sum_j C(k, j) j delta / (2^k - 1).
    eq3 = math.log(sum(math.comb(k, j) * math.exp(j * eps) for j in range(1, k + 1)) / (2**k - 1))
    eq3_delta = sum(math.comb(k, j) * j * delta for j in range(1, k + 1)) / (2**k - 1)
    # Cor. 7's proof, Eq. 5: sum_i 2^{k-i} (1 + (k - i)/2) delta / (2^k - 1).
    eq5 = sum(2 ** (k - i) * (1 + (k - i) / 2) * delta for i in range(1, k + 1)) / (2**k - 1)
    eq4 = simple_composition_example(k, eps, delta)
    c7 = corollary7(k, eps, delta)
    c6 = corollary6_as_printed([(eps, delta)] * k)
    for r in (eq4, c7, c6):
        assert r.epsilon == pytest.approx(eq3, rel=1e-12)
        assert r.delta == pytest.approx(eq3_delta, rel=1e-12, abs=1e-300)
    assert eq5 == pytest.approx(eq3_delta, rel=1e-12, abs=1e-300)
    assert c7.sound is None and eq4.sound is None


def test_cor7_large_k_in_log_space():
    r = corollary7(2000, 1.0, 1e-9)
    assert r.epsilon == pytest.approx(2000 * math.log((1 + math.e) / 2), rel=1e-12)
    assert r.delta == pytest.approx(1000 * 1e-9, rel=1e-9)


@pytest.mark.parametrize("k", range(1, 7))
@pytest.mark.parametrize("eps,delta", [(0.2, 0.0), (1.0, 0.0), (0.5, 0.01), (2.0, 0.05), (0.0, 0.1)])
def test_cor7_holds_against_brute_force(k, eps, delta):
    claimed = corollary7(k, eps, delta)
    invocations = [(d, eps, delta) for d in range(k)]
    exact = reference.mixture_delta([(set(), 1.0)], uniform_nonempty(k), invocations, claimed.epsilon)
    assert exact <= claimed.delta + TOL


@pytest.mark.parametrize("k", [1, 3, 5])
def test_cor7_epsilon_is_the_largest_loss_for_pure_dp(k):
    claimed = corollary7(k, 1.0, 0.0)
    below = reference.mixture_delta([(set(), 1.0)], uniform_nonempty(k), [(d, 1.0, 0.0) for d in range(k)],
                                    claimed.epsilon * (1 - 1e-6))
    assert below > 0.0


def test_reproductions_are_frozen():
    r = corollary7(2, 1.0, 0.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.epsilon = 0.0


# ---------------------------------------------------------------------------
# Alg. 3 (RefineTuples)


@st.composite
def hypotheses_pairs(draw):
    subsets = [frozenset(c) for r in range(5) for c in itertools.combinations(range(4), r)]

    def one():
        sets = draw(st.lists(st.sampled_from(subsets), min_size=1, max_size=8, unique=True))
        w = np.array(draw(st.lists(st.floats(0.01, 1.0), min_size=len(sets), max_size=len(sets))))
        return Distribution(tuple(sets), tuple(w / w.sum()))

    return one(), one()


@tiers.given(25, 100, hypotheses_pairs())
def _refine_tuples_is_a_coupling(pair):
    h0, h1 = pair
    r = refine_tuples(h0, h1)
    assert len(r.pairs) <= len(h0) + len(h1) - 1
    assert all(w > 0 for _, _, w in r.pairs)
    for h, side in ((h0, 0), (h1, 1)):
        for members, weight in h:
            total = math.fsum(w for p in r.pairs for w in [p[2]] if p[side] == members)
            assert total == pytest.approx(weight / math.fsum(h.weights), abs=1e-12)
    # Matched tuples have equal weights by construction: U0 and U1 list the same weights.
    assert [w for _, w in r.u0] == [w for _, w in r.u1]


test_refine_tuples_is_a_coupling, test_refine_tuples_is_a_coupling_slow = _refine_tuples_is_a_coupling


def test_refine_tuples_uniform_prior_example():
    """001 Sec. V-B: U0 = {(0, 1/(2^k - 1))}^{2^k - 1}, U1 = the non-empty sets with 1/(2^k - 1)."""
    k = 3
    r = refine_tuples([(set(), 1.0)], uniform_nonempty(k))
    assert len(r.pairs) == 2**k - 1
    assert all(b0 == frozenset() and w == pytest.approx(1 / 7) for b0, _, w in r.pairs)
    assert sorted(map(sorted, (b1 for _, b1, _ in r.pairs))) == sorted(map(sorted, (s for s, _ in uniform_nonempty(k))))


def test_refine_tuples_is_exact():
    thirds = [({0}, 1 / 3), ({1}, 1 / 3), ({2}, 1 / 3)]
    r = refine_tuples(thirds, [(set(), 0.5), ({0, 1}, 0.5)])
    assert len(r.pairs) == 4  # |T0| + |T1| - 1
    weights = [Fraction(w).limit_denominator(1000) for _, _, w in r.pairs]
    assert weights == [Fraction(1, 3), Fraction(1, 6), Fraction(1, 6), Fraction(1, 3)]

"""Privacy curves: inversion, envelopes, vectorization, range."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gce.accounting.curves import CanonicalCurve, DiscreteLossCurve, EnvelopeCurve, FunctionCurve, GaussianCurve, ZCDPCurve


def test_discrete_loss_curve_by_hand():
    # P = (1/2, 1/4, 1/4), Q = (1/8, 1/4, 5/8): losses ln 4, 0, ln(2/5).
    c = DiscreteLossCurve([math.log(4), 0.0, math.log(0.4)], np.log([0.5, 0.25, 0.25]))
    assert c.delta(0.0) == pytest.approx(0.5 - 0.125)
    assert c.delta(math.log(2)) == pytest.approx(0.5 - 2 * 0.125)
    assert c.delta(math.log(4)) == pytest.approx(0.0, abs=1e-16)
    assert c.epsilon(0.25) == pytest.approx(math.log(2), rel=1e-11)
    assert c.epsilon(0.0) == pytest.approx(math.log(4), rel=1e-11)


def test_discrete_loss_curve_with_infinite_mass():
    c = DiscreteLossCurve([1.0], [math.log(0.9)], infinite_mass=0.1)
    assert c.delta(5.0) == pytest.approx(0.1)
    assert math.isinf(c.epsilon(0.05))
    assert c.epsilon(0.1) == pytest.approx(1.0, rel=1e-11)


@pytest.mark.parametrize(
    "curve",
    [
        DiscreteLossCurve([3.0, 1.0, 0.5, -0.5], np.log([0.1, 0.3, 0.4, 0.2]), infinite_mass=0.0),
        CanonicalCurve([(1.0, 1e-3), (2.0, 0.0)]),
        GaussianCurve(1.3),
        ZCDPCurve(0.3),
        FunctionCurve(lambda e: np.exp(-e)),
    ],
)
def test_inverse_is_consistent_and_monotone(curve):
    grid = np.linspace(0.0, 8.0, 200)
    d = curve.delta(grid)
    assert np.all(np.diff(d) <= 1e-15) and np.all((0 <= d) & (d <= 1))
    for target in [1e-9, 1e-4, 0.01, 0.2]:
        eps = curve.epsilon(target)
        if math.isfinite(eps):
            assert curve.delta(eps) <= target * (1 + 1e-9)
            if eps > 1e-9:
                assert curve.delta(eps * (1 - 1e-6)) > target * (1 - 1e-6)
    vector = curve.epsilon(np.array([1e-4, 0.01]))
    assert vector.shape == (2,) and vector[0] >= vector[1]


def test_canonical_curve_is_the_intersection_of_regions():
    both = CanonicalCurve([(1.0, 0.1), (3.0, 0.0)])
    assert both.delta(0.0) == pytest.approx(min(0.1 + 0.9 * (math.e - 1) / (math.e + 1),
                                                 (math.exp(3) - 1) / (math.exp(3) + 1)))
    assert both.delta(1.0) == pytest.approx(min(0.1, (math.exp(3) - math.e) / (math.exp(3) + 1)))
    assert both.delta(3.0) == 0.0


def test_envelope_is_the_pointwise_minimum():
    a, b = GaussianCurve(1.0), CanonicalCurve([(2.0, 0.0)])
    env = EnvelopeCurve([a, b])
    grid = np.linspace(0, 3, 31)
    assert np.allclose(env.delta(grid), np.minimum(a.delta(grid), b.delta(grid)))
    assert env.epsilon(1e-3) == min(a.epsilon(1e-3), b.epsilon(1e-3))


def test_extreme_values_stay_finite():
    assert GaussianCurve(0.01).delta(100.0) == 0.0
    assert GaussianCurve(50.0).epsilon(1e-300) < 2.0**20
    assert CanonicalCurve([(100.0, 0.0)]).delta(0.0) == pytest.approx(1.0)
    assert ZCDPCurve(1e-8).epsilon(1e-300) == pytest.approx(2 * math.sqrt(1e-8 * 300 * math.log(10)), rel=0.05)


def test_a_curve_without_a_lower_curve_says_where_the_bracket_is():
    """report.curve.epsilon_bracket on a curve that has no certified lower curve: an AttributeError that
    names Report.bracket and epsilon(delta) as an upper bound; hasattr stays False, other names as usual."""
    curve = CanonicalCurve([(1.0, 0.0)])
    with pytest.raises(AttributeError, match=r"'CanonicalCurve' object has no attribute 'epsilon_bracket': .*"
                                             r"Report\.bracket"):
        curve.epsilon_bracket(1e-6)
    assert not hasattr(curve, "lower") and not hasattr(curve, "bracket")
    with pytest.raises(AttributeError, match=r"^'CanonicalCurve' object has no attribute 'nothing'$"):
        curve.nothing
    assert curve.epsilon(0.0) == pytest.approx(1.0)  # the curve still answers what it can


"""The vectorised hockey-stick divergences of Gaussian noise (gce/accounting/dp_accounting.py,
``vectorised_gaussian``) give dp-accounting's own distributions: the pmfs built with and without them
are compared entry by entry (the reference is dp-accounting's unmodified scalar code)."""

from __future__ import annotations

import numpy as np
import pytest

import tiers
from gce.accounting import dp_accounting as adapter

pytestmark = pytest.mark.skipif(not adapter.fast_path(), reason="only on a tested dp-accounting version")

CASES = [  # (sigma, sensitivity, sampling_prob, pessimistic, connect_dots, interval)
    (1.0, 1.0, 0.005, True, True, 1e-3),
    (3.0, 1.0, 1.0, True, True, 1e-3),
    (0.7, 2.0, 0.3, True, True, 1e-3),
    (1.2, 1.0, 1e-4, True, True, 1e-4),
    (0.9, 1.0, 0.01, False, False, 1e-3),
    (0.8, 1.0, 0.01, True, True, 1e-4),
    (0.5, 1.0, 0.3, True, True, 1e-4),
    (20.0, 1.0, 1.0, True, True, 1e-4),
]


def _pmfs(sigma, sensitivity, rate, pessimistic, dots, interval):
    module = adapter.privacy_loss_distribution()
    return adapter.dense_pmfs(module.from_gaussian_mechanism(
        sigma, sensitivity=sensitivity, sampling_prob=rate, pessimistic_estimate=pessimistic,
        use_connect_dots=dots, value_discretization_interval=interval))


@tiers.parametrize("case", CASES, default=4)
def test_vectorised_gaussian_builds_are_dp_accountings_own(case):
    reference = _pmfs(*case)
    with adapter.vectorised_gaussian():
        ours = _pmfs(*case)
    assert len(ours) == len(reference) == 2  # "remove" and "add"
    for a, b in zip(ours, reference):
        assert a.lower == b.lower and a.probs.size == b.probs.size
        np.testing.assert_allclose(a.probs, b.probs, rtol=1e-12, atol=1e-300)
        assert a.infinity_mass == pytest.approx(b.infinity_mass, rel=1e-12, abs=1e-300)


def test_the_patch_is_undone_on_exit():
    from dp_accounting.pld.privacy_loss_mechanism import GaussianPrivacyLoss

    before = GaussianPrivacyLoss.get_delta_for_epsilon
    with adapter.vectorised_gaussian():
        assert GaussianPrivacyLoss.get_delta_for_epsilon is not before
    assert GaussianPrivacyLoss.get_delta_for_epsilon is before

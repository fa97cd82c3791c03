"""The dp-accounting adapter (gce/accounting/dp_accounting.py): the version gate, its warning,
and the fast path (private dense pmfs) against dp-accounting's public API at many points."""

from __future__ import annotations

import importlib.metadata
import pathlib
import re
import tomllib
import warnings

import numpy as np
import pytest

import tiers

from gce.accounting import dp_accounting as adapter
from gce.accounting import pld
from gce.accounting.guarantees import ApproxDP, GaussianMechanism, LaplaceMechanism, PureDP, Subsampled

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture
def untested(monkeypatch):
    """The adapter as it behaves on a dp-accounting version it was not tested with."""
    adapter.fast_path.cache_clear()
    monkeypatch.setattr(adapter, "installed_version", lambda: "0.0.1")
    yield
    adapter.fast_path.cache_clear()


def test_tested_versions_and_the_pin_agree():
    assert adapter.TESTED_VERSIONS == ("0.6.0",)
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert "dp-accounting>=0.4,<0.7" in dependencies
    for version in adapter.TESTED_VERSIONS:
        major, minor, _ = (int(x) for x in version.split("."))
        assert (0, 4) <= (major, minor) < (0, 7)


def test_installed_version_is_the_distribution_version():
    assert adapter.installed_version() == importlib.metadata.version("dp-accounting")


def test_a_tested_version_takes_the_fast_path_without_warning():
    if adapter.installed_version() not in adapter.TESTED_VERSIONS:
        pytest.skip("installed dp-accounting is not a tested version")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert adapter._check(adapter.installed_version()) is True
        assert adapter.fast_path() is True
    assert adapter.dense_pmfs(pld.guarantee_pld(PureDP(1.0))) is not None


def test_an_untested_version_warns_once_and_uses_the_public_api(untested):
    with pytest.warns(adapter.UntestedVersionWarning, match=r"dp-accounting 0\.0\.1 is not among .*0\.6\.0"):
        assert adapter.fast_path() is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # cached: no second warning
        assert adapter.fast_path() is False
        assert adapter.dense_pmfs(pld.guarantee_pld(PureDP(1.0))) is None
        curve = pld.PLDCurve(pld.guarantee_pld(PureDP(1.0)))
    assert curve._directions is None  # dp-accounting's own evaluation


def test_not_installed_counts_as_untested():
    with pytest.warns(adapter.UntestedVersionWarning, match="dp-accounting None"):
        assert adapter._check(None) is False


def test_dense_pmfs_returns_none_for_another_layout():
    class Other:
        pass

    assert adapter.dense_pmfs(Other()) is None


def test_every_dp_accounting_import_goes_through_the_adapter():
    pattern = re.compile(r"^\s*(import dp_accounting|from dp_accounting)", re.MULTILINE)
    users = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "gce").rglob("*.py")
                   if pattern.search(p.read_text(encoding="utf-8")))
    assert users == ["gce/accounting/dp_accounting.py"]


DISTRIBUTIONS = [
    [(PureDP(1.0), 1)],
    [(ApproxDP(0.3, 1e-6), 20)],
    [(GaussianMechanism(2.0), 1)],
    [(GaussianMechanism(1.0), 2), (PureDP(0.2), 3)],
    [(LaplaceMechanism(1.5), 4)],
    [(Subsampled(0.1, GaussianMechanism(1.0)), 3)],
    [(Subsampled(0.2, LaplaceMechanism(1.0)), 3)],
]


@tiers.parametrize("items", DISTRIBUTIONS, default=[0, 4, 6], ids=lambda items: repr(items[0][0]))
def test_fast_path_matches_the_public_api(items):  # the public API reads a Gaussian's or 20 compositions' pmf in 0.5 s and more: slow tier
    _compare(items, np.linspace(0.0, 6.0, 7), inversions=())


@pytest.mark.slow
@pytest.mark.parametrize("items", DISTRIBUTIONS, ids=lambda items: repr(items[0][0]))
def test_fast_path_matches_the_public_api_at_many_points(items):
    _compare(items, np.linspace(0.0, 6.0, 61), inversions=(1e-2, 1e-5))


def _compare(items, eps, inversions):
    """dp-accounting's public get_delta_for_epsilon (a Python loop) against the adapter's dense pmfs."""
    if not adapter.fast_path():
        pytest.skip("installed dp-accounting is not a tested version")
    distribution = pld.compose_pld(items)
    directions = pld._loss_curves(distribution)
    assert directions is not None and len(directions) in (1, 2)
    fast = np.max([c.delta(eps) for c in directions], axis=0)
    public = np.asarray(distribution.get_delta_for_epsilon(eps), dtype=float)
    assert np.all(public >= 0) and public[0] > 0
    np.testing.assert_allclose(fast, public, rtol=1e-9, atol=1e-15)
    # PLDCurve by the fast path and by the public API alone: the same curve
    with_fast = pld.PLDCurve(distribution)
    without = pld.PLDCurve(distribution)
    without._directions = None
    np.testing.assert_allclose(with_fast.delta(eps), without.delta(eps), rtol=1e-9, atol=1e-15)
    for target in inversions:
        assert with_fast.epsilon(target) == pytest.approx(float(without.epsilon(target)), rel=1e-6, abs=1e-9)

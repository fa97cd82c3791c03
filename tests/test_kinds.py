"""The kinds table (gce/accounting/kinds.py): complete rows, theorems whose accepts agrees with
their curve on every kind, and each row's values checked by hand.

References are closed forms worked out here from the records' definitions
(Laplace: epsilon = sensitivity / scale; Gaussian: mu = sensitivity / sigma;
BBG18 Thm. 8: ln(1 + q(e^eps - 1)), q delta; BS16 Prop. 1.4 and 1.6), not gce's
own computations.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import pathlib
import re
from typing import get_args

import numpy as np
import pytest

from gce.accounting import kinds
from gce.accounting.guarantees import (
    ZCDP,
    ApproxDP,
    GaussianDP,
    GaussianMechanism,
    Guarantee,
    LaplaceMechanism,
    PureDP,
    RandomizedResponse,
    Subsampled,
)
from gce.accounting.theorems import THEOREMS, as_multiset, compose
from gce.errors import NumericalLimitError, UnsupportedCombinationError
from gce.files.scenario import MECHANISM_KINDS

RECORDS = get_args(Guarantee)

#: A few guarantees of every kind, degenerate ones included (mu 0, sensitivity 0, a tiny Laplace epsilon).
SAMPLES: dict[type, list] = {
    PureDP: [PureDP(0.5), PureDP(0.0)],
    ApproxDP: [ApproxDP(0.3, 1e-6), ApproxDP(1.0, 0.0)],
    ZCDP: [ZCDP(0.05)],
    GaussianDP: [GaussianDP(0.8), GaussianDP(0.0)],
    GaussianMechanism: [GaussianMechanism(2.0, 1.0), GaussianMechanism(1.0, 0.0)],
    LaplaceMechanism: [LaplaceMechanism(2.0, 1.0), LaplaceMechanism(1.0, 1e-9)],
    RandomizedResponse: [RandomizedResponse(1.0)],
    Subsampled: [Subsampled(0.1, PureDP(1.0)), Subsampled(0.2, ApproxDP(0.5, 1e-7)),
                 Subsampled(0.05, GaussianMechanism(1.0)), Subsampled(0.1, LaplaceMechanism(1.0)),
                 Subsampled(0.5, Subsampled(0.5, RandomizedResponse(0.7))),
                 Subsampled(0.5, Subsampled(0.5, GaussianMechanism(1.0)))],
}
ALL_SAMPLES = [g for gs in SAMPLES.values() for g in gs]


class Unknown:
    """Not a guarantee."""


# ---------------------------------------------------------------------------
# The table is complete


def test_every_record_in_guarantee_has_a_row_and_samples():
    assert set(kinds.KINDS) == set(RECORDS)
    assert set(SAMPLES) == set(RECORDS)
    assert list(kinds.KINDS) == list(RECORDS)  # the table lists kinds in the union's order


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.__name__)
def test_every_row_has_every_entry(record):
    row = kinds.KINDS[record]
    assert row.record is record
    for f in dataclasses.fields(kinds.Kind):
        assert hasattr(row, f.name)
    for name in ("point", "gdp_mu", "zcdp_rho", "pld", "subsample"):
        assert callable(getattr(row, name)), name
    assert isinstance(row.canonical, bool) and isinstance(row.noise, bool)
    assert row.family in kinds.FAMILIES
    assert (row.parameter is None) == (row.with_parameter is None)
    fields = {f.name for f in dataclasses.fields(record)}
    assert {field for _, field, _ in row.keys} == fields  # every field has a file key
    required = {field for _, field, req in row.keys if req}
    assert required == {f.name for f in dataclasses.fields(record) if f.default is dataclasses.MISSING}
    for g in SAMPLES[record]:  # every entry answers for every sample, with the declared types
        assert kinds.kind_of(g) is row
        p = kinds.point(g)
        assert p is None or (len(p) == 2 and all(math.isfinite(x) and x >= 0 for x in p))
        for value in (kinds.gdp_mu(g), kinds.zcdp_rho(g)):
            assert value is None or (math.isfinite(value) and value >= 0)
        source = kinds.pld_source(g)
        assert source is None or source.kind in ("gaussian", "laplace", "point")
        assert isinstance(kinds.one_directional(g), bool)


def test_names_are_unique_and_are_the_file_kinds():
    names = [row.name for row in kinds.KINDS.values()]
    assert len(set(names)) == len(names)
    assert list(MECHANISM_KINDS) == names
    assert MECHANISM_KINDS["gaussian"].record is GaussianMechanism
    assert set(MECHANISM_KINDS["gaussian"].keys) == {"sigma", "sensitivity"}
    assert MECHANISM_KINDS["gaussian"].keys["sensitivity"][2] is False


@pytest.mark.parametrize("function", [kinds.kind_of, kinds.point, kinds.gdp_mu, kinds.zcdp_rho, kinds.is_canonical,
                                      kinds.pld_source, kinds.pld_noise, kinds.one_directional, kinds.sampling,
                                      kinds.family, kinds.as_point, kinds.calibrated_parameter],
                         ids=lambda f: f.__name__)
def test_an_unknown_kind_raises(function):
    with pytest.raises(UnsupportedCombinationError, match="not a guarantee kind"):
        function(Unknown())


def test_unknown_kind_raises_in_the_two_argument_functions_too():
    with pytest.raises(UnsupportedCombinationError):
        kinds.subsample(Unknown(), 0.5)
    with pytest.raises(UnsupportedCombinationError):
        kinds.with_parameter(Unknown(), 0.5)
    with pytest.raises(UnsupportedCombinationError):
        kinds.implies(Unknown(), PureDP(1.0))
    assert not kinds.is_guarantee(Unknown()) and not kinds.is_guarantee(None)
    assert all(kinds.is_guarantee(g) for g in ALL_SAMPLES)


def test_a_subclass_of_a_record_has_its_base_row():
    @dataclasses.dataclass(frozen=True)
    class MyPure(PureDP):
        pass

    assert kinds.kind_of(MyPure(0.5)) is kinds.KINDS[PureDP]
    assert kinds.point(MyPure(0.5)) == (0.5, 0.0)


# ---------------------------------------------------------------------------
# Every theorem: accepts agrees with curve


def _lists(pairs_of):
    for g in ALL_SAMPLES:
        yield ((g, 1),)
        yield ((g, 3),)
    for a, b in itertools.combinations(pairs_of, 2):
        yield as_multiset({a: 2, b: 1})


#: Every sample alone, and every two kinds together (the first sample of each; all pairs in the slow tier).
LISTS = list(_lists([gs[0] for gs in SAMPLES.values()]))
ALL_LISTS = list(_lists(ALL_SAMPLES))


@pytest.mark.parametrize("theorem", THEOREMS, ids=lambda t: t.name)
def test_accepts_agrees_with_curve_on_every_kind(theorem):
    _check_accepts_agrees_with_curve(theorem, _default_lists(theorem))


#: Theorems that build privacy-loss distributions (about 0.1 s a list): a few lists by default, all slow.
_COSTLY = {"pld", "batch"}


def _default_lists(theorem):
    """Every list of :data:`LISTS` for the cheap theorems; for the costly ones every sample alone, once,
    and the first three pairs the theorem accepts (every pair runs in the slow tier)."""
    if theorem.name not in _COSTLY:
        return LISTS
    pairs = [ms for ms in LISTS if len(ms) > 1 and theorem.accepts(ms)][:3]
    return [ms for ms in LISTS if len(ms) == 1 and ms[0][1] == 1] + pairs


@pytest.mark.slow
@pytest.mark.parametrize("theorem", THEOREMS, ids=lambda t: t.name)
def test_accepts_agrees_with_curve_on_every_pair_of_samples(theorem):
    _check_accepts_agrees_with_curve(theorem, ALL_LISTS)


def _check_accepts_agrees_with_curve(theorem, lists):
    accepted = 0
    for ms in lists:
        if theorem.accepts(ms):
            accepted += 1
            try:
                curve = theorem.curve(ms)
            except NumericalLimitError:  # dp-accounting out of range: compose() uses the others
                continue
            eps = np.array([0.0, 0.1, 1.0, 5.0])
            deltas = curve.delta(eps)
            assert np.all((deltas >= 0) & (deltas <= 1)), (ms, deltas)
            assert np.all(np.diff(deltas) <= 1e-12), (ms, deltas)  # non-increasing in epsilon
            e = float(curve.epsilon(0.5))
            assert e >= 0 and not math.isnan(e), (ms, e)
        else:
            with pytest.raises(UnsupportedCombinationError, match=theorem.name):
                theorem.curve(ms)
    assert accepted > 0  # every theorem accepts some list of the sample


def test_which_theorems_accept_each_kind_alone():
    accepting = {type(g).__name__ + repr(g): {t.name for t in THEOREMS if t.accepts(((g, 1),))} for g in ALL_SAMPLES}
    assert "zcdp" in accepting["ZCDP" + repr(ZCDP(0.05))]
    assert accepting["ZCDP" + repr(ZCDP(0.05))] == {"zcdp"}
    assert accepting["GaussianMechanism" + repr(GaussianMechanism(2.0, 1.0))] == {"gaussian-dp", "zcdp", "pld"}
    assert "kairouz-III.3" in accepting["PureDP" + repr(PureDP(0.5))]
    nested = Subsampled(0.5, Subsampled(0.5, GaussianMechanism(1.0)))
    assert accepting["Subsampled" + repr(nested)] == set()


def test_a_subsampled_noise_mechanism_subsampled_again_is_declined():
    """Behaviour change of the kinds table: this raised TypeError inside the PLD builder."""
    nested = Subsampled(0.5, Subsampled(0.5, GaussianMechanism(1.0)))
    c = compose([nested])
    assert c.candidates[0][0] == "vacuous (no theorem applies)"
    assert c.epsilon(1e-5) == math.inf and c.delta(3.0) == 1.0


# ---------------------------------------------------------------------------
# Values by hand


def test_points():
    assert kinds.point(LaplaceMechanism(scale=2.0, sensitivity=1.0)) == (0.5, 0.0)
    assert kinds.point(LaplaceMechanism(scale=4.0, sensitivity=3.0)) == (0.75, 0.0)
    assert kinds.point(PureDP(0.7)) == (0.7, 0.0)
    assert kinds.point(RandomizedResponse(1.2)) == (1.2, 0.0)
    assert kinds.point(ApproxDP(0.3, 1e-6)) == (0.3, 1e-6)
    assert kinds.point(GaussianMechanism(1.0)) is None
    assert kinds.point(GaussianDP(1.0)) is None and kinds.point(ZCDP(0.1)) is None
    assert kinds.point(Subsampled(0.1, GaussianMechanism(1.0))) is None


def test_subsampled_point_is_the_amplification_formula():
    q, eps, delta = 0.1, 1.0, 1e-5
    got = kinds.point(Subsampled(q, ApproxDP(eps, delta)))
    assert got[0] == pytest.approx(math.log(1 + q * (math.e - 1)), rel=1e-15)
    assert got[0] == pytest.approx(0.1585651, rel=1e-6)  # ln(1 + 0.1 * 1.718282) = ln(1.1718282), by hand
    assert got[1] == pytest.approx(q * delta, rel=1e-15)
    # twice: q' = 0.5 applied to the amplified point
    once = math.log(1 + 0.5 * math.expm1(0.7))
    twice = kinds.point(Subsampled(0.5, Subsampled(0.5, RandomizedResponse(0.7))))
    assert twice[0] == pytest.approx(math.log(1 + 0.5 * math.expm1(once)), rel=1e-15) and twice[1] == 0.0
    # rate 1: the inner point unchanged
    assert kinds.point(Subsampled(1.0, PureDP(2.0))) == (2.0, 0.0)


def test_gdp_mu_and_zcdp_rho():
    assert kinds.gdp_mu(GaussianMechanism(sigma=2.0, sensitivity=3.0)) == 1.5
    assert kinds.gdp_mu(GaussianDP(0.8)) == 0.8
    assert kinds.gdp_mu(PureDP(1.0)) is None and kinds.gdp_mu(Subsampled(0.1, GaussianMechanism(1.0))) is None
    assert kinds.zcdp_rho(ZCDP(0.3)) == 0.3
    assert kinds.zcdp_rho(GaussianMechanism(sigma=2.0, sensitivity=1.0)) == 0.125  # 1 / (2 * 4)
    assert kinds.zcdp_rho(GaussianDP(2.0)) == 2.0
    assert kinds.zcdp_rho(PureDP(1.0)) == 0.5 and kinds.zcdp_rho(RandomizedResponse(2.0)) == 2.0
    assert kinds.zcdp_rho(LaplaceMechanism(scale=2.0)) == 0.125  # eps 0.5
    assert kinds.zcdp_rho(ApproxDP(1.0, 1e-6)) is None
    assert kinds.zcdp_rho(Subsampled(0.1, PureDP(1.0))) is None


def test_canonical_kinds():
    canonical = {r.__name__ for r in RECORDS if all(kinds.is_canonical(g) for g in SAMPLES[r])}
    assert canonical == {"PureDP", "ApproxDP", "RandomizedResponse"}
    assert not any(kinds.is_canonical(g) for r in RECORDS if r.__name__ not in canonical for g in SAMPLES[r])


def test_pld_sources():
    assert kinds.pld_noise(GaussianDP(2.0)) == ("gaussian", 0.5, 1.0, 1.0)
    assert kinds.pld_noise(GaussianMechanism(3.0, 2.0)) == ("gaussian", 3.0, 2.0, 1.0)
    assert kinds.pld_noise(Subsampled(0.1, GaussianMechanism(2.0, 1.0))) == ("gaussian", 2.0, 1.0, 0.1)
    assert kinds.pld_noise(Subsampled(0.2, LaplaceMechanism(1.5))) == ("laplace", 1.5, 1.0, 0.2)
    assert kinds.pld_noise(LaplaceMechanism(1.0, 1e-9)) is None  # below TINY_LAPLACE: its canonical pair
    assert kinds.pld_source(LaplaceMechanism(1.0, 1e-9)) == ("point", (1e-9, 0.0))
    assert kinds.pld_source(GaussianDP(0.0)) == ("point", (0.0, 0.0))  # the identity
    assert kinds.pld_source(GaussianMechanism(1.0, 0.0)) == ("point", (0.0, 0.0))
    assert kinds.pld_source(Subsampled(0.3, GaussianMechanism(1.0, 0.0))) == ("point", (0.0, 0.0))
    assert kinds.pld_source(ApproxDP(0.3, 1e-6)) == ("point", (0.3, 1e-6))
    src = kinds.pld_source(Subsampled(0.1, PureDP(1.0)))
    assert src.kind == "point" and src.parameters[0] == pytest.approx(math.log1p(0.1 * math.expm1(1.0)))
    assert kinds.pld_source(ZCDP(0.1)) is None
    assert kinds.pld_source(Subsampled(0.5, Subsampled(0.5, GaussianMechanism(1.0)))) is None


def test_one_directional_and_sampling():
    assert kinds.one_directional(Subsampled(0.1, LaplaceMechanism(1.0)))
    assert kinds.one_directional(Subsampled(0.1, GaussianMechanism(1.0)))
    assert kinds.one_directional(Subsampled(1.0, GaussianMechanism(1.0, 0.0)))
    assert not kinds.one_directional(Subsampled(0.1, PureDP(1.0)))
    assert not kinds.one_directional(GaussianMechanism(1.0)) and not kinds.one_directional(LaplaceMechanism(1.0))
    assert not kinds.one_directional(Subsampled(0.5, Subsampled(0.5, GaussianMechanism(1.0))))
    inner = PureDP(1.0)
    assert kinds.sampling(Subsampled(0.25, inner)) == (0.25, inner)
    assert kinds.sampling(inner) == (1.0, inner)


def test_families_and_implication():
    assert kinds.family(PureDP(0.5)) == ("point", (0.5, 0.0))
    assert kinds.family(GaussianMechanism(2.0, 3.0)) == ("gaussian", (1.5,))
    assert kinds.family(ZCDP(0.2)) == ("zcdp", (0.2,))
    assert kinds.family(LaplaceMechanism(2.0)) == ("concrete", (0.5, 0.0))
    assert kinds.family(Subsampled(0.1, GaussianMechanism(1.0))) is None
    assert kinds.implies(PureDP(0.1), ApproxDP(0.2, 1e-6))
    assert not kinds.implies(ApproxDP(0.2, 1e-6), PureDP(0.1))
    assert kinds.implies(LaplaceMechanism(2.0), PureDP(0.5))  # a concrete guarantee implies its point
    assert not kinds.implies(PureDP(0.5), LaplaceMechanism(2.0))  # nothing implies a concrete one
    assert not kinds.implies(LaplaceMechanism(2.0), LaplaceMechanism(1.0))
    assert kinds.implies(GaussianDP(1.0), GaussianMechanism(sigma=0.5))  # mu 1 <= mu 2
    assert not kinds.implies(GaussianMechanism(sigma=0.5), GaussianDP(1.0))
    assert kinds.implies(ZCDP(0.1), ZCDP(0.2)) and not kinds.implies(ZCDP(0.1), PureDP(10.0))
    sub = Subsampled(0.5, LaplaceMechanism(2.0))  # (ln(1 + (e^0.5 - 1)/2), 0) = (0.2812, 0)
    assert kinds.dominance_chain([PureDP(0.5), sub]) == [sub, PureDP(0.5)]
    assert kinds.dominance_chain([PureDP(0.2), sub]) is None
    assert kinds.dominance_chain([PureDP(0.1), ApproxDP(0.5, 1e-6)]) == [PureDP(0.1), ApproxDP(0.5, 1e-6)]
    assert kinds.dominance_chain([GaussianMechanism(1.0), PureDP(1.0)]) is None


def test_subsampling_rules():
    assert kinds.subsample(PureDP(1.0), 0.1) == Subsampled(0.1, PureDP(1.0))
    assert kinds.subsample(Subsampled(0.5, LaplaceMechanism(1.0)), 0.2) == Subsampled(0.1, LaplaceMechanism(1.0))
    assert kinds.subsample(GaussianDP(2.0), 0.3) == Subsampled(0.3, GaussianMechanism(sigma=0.5))
    assert kinds.subsample(GaussianDP(0.0), 0.3) == Subsampled(0.3, PureDP(0.0))
    with pytest.raises(UnsupportedCombinationError, match=r"^database 3: zCDP \(ZCDP\(rho=0.1\)\) has no tight"):
        kinds.subsample(ZCDP(0.1), 0.5, where="database 3: ")
    got = kinds.as_point(Subsampled(0.1, ApproxDP(1.0, 1e-5)))
    assert type(got) is ApproxDP and got.epsilon == pytest.approx(math.log1p(0.1 * math.expm1(1.0)))
    assert got.delta == pytest.approx(1e-6)
    assert kinds.as_point(Subsampled(0.5, RandomizedResponse(0.0))) == PureDP(0.0)
    laplace = Subsampled(0.1, LaplaceMechanism(1.0))
    assert kinds.as_point(laplace) is laplace and kinds.as_point(PureDP(1.0)) == PureDP(1.0)


def test_calibrated_parameters():
    assert kinds.calibrated_parameter(PureDP(1.0)) == "epsilon"
    assert kinds.calibrated_parameter(ApproxDP(1.0, 1e-6)) == "epsilon"
    assert kinds.calibrated_parameter(GaussianMechanism(1.0, 2.0)) == "sigma"
    assert {r.__name__ for r in RECORDS if kinds.KINDS[r].parameter} == {"PureDP", "ApproxDP", "GaussianMechanism"}
    assert kinds.with_parameter(ApproxDP(1.0, 1e-6), 0.25) == ApproxDP(0.25, 1e-6)
    assert kinds.with_parameter(GaussianMechanism(1.0, 2.0), 3.0) == GaussianMechanism(3.0, 2.0)
    assert kinds.with_parameter(PureDP(1.0), 0.5) == PureDP(0.5)
    with pytest.raises(UnsupportedCombinationError, match="LaplaceMechanism has no calibrated parameter"):
        kinds.with_parameter(LaplaceMechanism(1.0), 0.5)


# ---------------------------------------------------------------------------
# Guarantee classes are tested for in the kinds table and the records only



def test_guarantee_classes_are_tested_for_only_in_kinds_and_guarantees():
    root = pathlib.Path(__file__).resolve().parent.parent / "gce"
    names = "|".join(r.__name__ for r in RECORDS) + "|_GUARANTEE_TYPES|_CANONICAL_KINDS"
    pattern = re.compile(rf"isinstance\([^)]*\b({names})\b")
    allowed = {"accounting/kinds.py", "accounting/guarantees.py"}
    offending = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel in allowed:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                offending.append(f"{rel}:{number}: {line.strip()}")
    assert offending == []

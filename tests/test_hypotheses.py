"""Hypothesis kinds: supports over the allowed sets, size laws, validation, the file form."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from gce.constraints import AtMost, Conflicts, ConstraintSet, Exclusive, Patterns, Together
from gce.errors import InfeasibleConstraintsError, InvalidParameterError, InvalidScenarioError, NumericalLimitError
from gce.files.hypotheses import hypothesis_from_dict, hypothesis_to_dict
from gce.priors.distributions import Distribution
from gce.priors.hypotheses import Explicit, Point, Rates, Uniform


def brute_allowed(cs: ConstraintSet) -> list[frozenset[int]]:
    """Every allowed set, by checking all 2^n subsets (independent of the search)."""
    return [
        frozenset(s)
        for size in range(cs.n + 1)
        for s in itertools.combinations(range(cs.n), size)
        if cs.satisfied(s)
    ]


CONSTRAINT_SETS = [
    ConstraintSet(4),
    ConstraintSet(4, (AtMost(2),)),
    ConstraintSet(5, (Exclusive((0, 1, 2)), Together((3, 4)))),
    ConstraintSet(5, (Conflicts(((0, 1), (1, 2), (3, 4))), AtMost(2, among=(0, 2, 3)))),
    ConstraintSet(4, (Patterns(({0, 1}, {2}, {1, 2, 3})), AtMost(2))),
]


# ---------------------------------------------------------------------------
# Supports


@pytest.mark.parametrize("cs", CONSTRAINT_SETS)
@pytest.mark.parametrize("low, high", [(0, None), (1, None), (2, 3), (1, 1)])
def test_uniform_is_uniform_over_allowed_sets_in_range(cs, low, high):
    expected = {s for s in brute_allowed(cs) if low <= len(s) <= (cs.n if high is None else high)}
    h = Uniform(min_members=low, max_members=high)
    if not expected:
        with pytest.raises(InfeasibleConstraintsError, match="min_members"):
            h.distribution(cs)
        return
    d = h.distribution(cs)
    assert set(d.sets) == expected and len(d.sets) == len(expected)
    assert all(w == pytest.approx(1 / len(expected), rel=1e-15) for w in d.weights)


@pytest.mark.parametrize("cs", CONSTRAINT_SETS)
def test_rates_is_the_product_law_conditioned_on_allowed(cs):
    rates = (0.2, 0.5, 1.0, 0.0, 0.7)[: cs.n]
    weight = {
        s: math.prod(q if i in s else 1 - q for i, q in enumerate(rates)) for s in brute_allowed(cs)
    }
    weight = {s: w for s, w in weight.items() if w > 0}
    h = Rates(rates)
    if not weight:
        with pytest.raises(InfeasibleConstraintsError, match="rates"):
            h.distribution(cs)
        return
    total = sum(weight.values())
    d = h.distribution(cs)
    assert dict(d) == pytest.approx({s: w / total for s, w in weight.items()}, rel=1e-12)


def test_rates_without_constraints_is_the_plain_product():
    d = Rates((0.25, 0.5)).distribution(ConstraintSet(2))
    assert dict(d) == pytest.approx(
        {frozenset(): 0.375, frozenset({0}): 0.125, frozenset({1}): 0.375, frozenset({0, 1}): 0.125}
    )


def test_point_and_explicit_keep_their_sets():
    cs = ConstraintSet(3, (AtMost(2),))
    assert Point((1, 2)).distribution(cs) == Distribution.point({1, 2})
    d = Explicit(({0}, {1, 2}, ()), (0.5, 0.25, 0.25)).distribution(cs)
    assert dict(d) == {frozenset({0}): 0.5, frozenset({1, 2}): 0.25, frozenset(): 0.25}


def test_support_limit_raises_numerical_limit():
    with pytest.raises(NumericalLimitError, match="min_members"):
        Uniform(min_members=1).distribution(ConstraintSet(30), limit=1000)
    with pytest.raises(NumericalLimitError, match="rates"):
        Rates((0.5,) * 30).distribution(ConstraintSet(30), limit=1000)
    # Constrained: the search stops at the limit instead of enumerating everything.
    with pytest.raises(NumericalLimitError):
        Uniform().distribution(ConstraintSet(40, (Conflicts(((0, 1),)),)), limit=500)
    # but a small support among many databases is fine: 41 sets of size <= 1.
    d = Uniform().distribution(ConstraintSet(40, (AtMost(1),)), limit=100)
    assert len(d) == 41 and d.sets[0] == frozenset()


# ---------------------------------------------------------------------------
# Size laws (exchangeability)


def test_size_weights_by_hand():
    cs = ConstraintSet(3)
    assert Point(()).size_weights(cs).tolist() == [1, 0, 0, 0]
    assert Point((0, 1, 2)).size_weights(cs).tolist() == [0, 0, 0, 1]
    assert Point((0,)).size_weights(cs) is None
    assert Uniform(min_members=1).size_weights(cs) == pytest.approx(np.array([0, 3, 3, 1]) / 7)
    assert Uniform(1, 2).size_weights(ConstraintSet(3, (AtMost(1),))) == pytest.approx([0, 1, 0, 0])
    assert Rates((0.2,) * 3).size_weights(cs) == pytest.approx([0.512, 0.384, 0.096, 0.008])
    assert Rates((0.2, 0.2, 0.3)).size_weights(cs) is None
    # conditioned on at most 1 member: binomial(3, 0.2) restricted to {0, 1}
    assert Rates((0.2,) * 3).size_weights(ConstraintSet(3, (AtMost(1),))) == pytest.approx(
        [0.512 / 0.896, 0.384 / 0.896, 0, 0])
    assert Rates((0.0,) * 3).size_weights(cs).tolist() == [1, 0, 0, 0]


def test_size_weights_need_sets_of_allowed_sizes():
    assert Uniform().size_weights(ConstraintSet(3, (AtMost(1, among=(0, 1)),))) is None
    assert Uniform().size_weights(ConstraintSet(3, (Exclusive((0, 1)),))) is None
    assert Uniform().size_weights(ConstraintSet(3, (Exclusive((0, 1, 2)),))) == pytest.approx([0.25, 0.75, 0, 0])
    assert Uniform().size_weights(ConstraintSet(3, (Together((0, 1)),))) is None
    # vacuous constraints do not matter
    assert Uniform().size_weights(ConstraintSet(2, (AtMost(5), Together((1,))))) == pytest.approx([0.25, 0.5, 0.25])


def test_explicit_size_weights_detect_exchangeable_tables():
    cs = ConstraintSet(2)
    uniform_nonempty = Explicit(({0}, {1}, {0, 1}), (1 / 3, 1 / 3, 1 / 3))
    assert uniform_nonempty.size_weights(cs) == pytest.approx([0, 2 / 3, 1 / 3])
    assert Explicit(({0}, {1}), (0.4, 0.6)).size_weights(cs) is None  # unequal within a size
    assert Explicit(({0}, {0, 1}), (0.5, 0.5)).size_weights(cs) is None  # not every set of size 1


@pytest.mark.parametrize("cs", [ConstraintSet(5), ConstraintSet(5, (AtMost(3),))])
@pytest.mark.parametrize(
    "h", [Point(()), Uniform(), Uniform(min_members=2), Uniform(1, 3), Rates((0.3,) * 5), Rates((1.0,) * 5)]
)
def test_size_weights_agree_with_the_support(cs, h):
    try:
        law = h.size_weights(cs)
    except InfeasibleConstraintsError:
        with pytest.raises(InfeasibleConstraintsError):
            h.distribution(cs)
        return
    expected = np.zeros(cs.n + 1)
    for s, w in h.distribution(cs):
        expected[len(s)] += w
    assert law == pytest.approx(expected, abs=1e-15)
    # and the weight of a set depends only on its size
    d = h.distribution(cs)
    for s, w in d:
        assert w == pytest.approx(law[len(s)] / math.comb(cs.n, len(s)), rel=1e-12)


def test_log_size_weights_do_not_underflow_at_a_thousand_databases():
    log_w = Uniform(min_members=1).log_size_weights(ConstraintSet(1100))
    assert np.isfinite(log_w[1:]).all() and log_w[0] == -np.inf
    assert log_w[1] == pytest.approx(math.log(1100) - 1100 * math.log(2), rel=1e-12)


# ---------------------------------------------------------------------------
# Validation: every error names the field


@pytest.mark.parametrize(
    "build, field",
    [
        (lambda: Explicit(({0}, {1}), (0.5, 0.6)), "weights"),
        (lambda: Explicit(({0}, {1}), (0.5,)), "weights"),
        (lambda: Explicit(({0}, {1}), (1.0, 0.0)), "weights[1]"),
        (lambda: Explicit(({0}, {0}), (0.5, 0.5)), "support[1]"),
        (lambda: Explicit(({0}, {-1}), (0.5, 0.5)), "support[1]"),
        (lambda: Explicit((), ()), "support"),
        (lambda: Uniform(min_members=3, max_members=2), "min_members"),
        (lambda: Uniform(min_members=-1), "min_members"),
        (lambda: Uniform(max_members=1.5), "max_members"),
        (lambda: Point((0, 0)), "members"),
        (lambda: Point("ab"), "members"),
        (lambda: Rates((0.5, 1.2)), "rates[1]"),
        (lambda: Rates(()), "rates"),
    ],
)
def test_invalid_records_name_the_field(build, field):
    with pytest.raises(InvalidParameterError) as info:
        build()
    assert info.value.field == field


def test_support_violating_a_constraint_names_the_set():
    cs = ConstraintSet(3, (Exclusive((0, 1)),))
    with pytest.raises(InvalidParameterError) as info:
        Explicit(({0}, {0, 1}), (0.5, 0.5)).distribution(cs)
    assert info.value.field == "support[1]" and "constraints[0] (exclusive" in str(info.value)
    with pytest.raises(InvalidParameterError) as info:
        Point((0, 1)).distribution(cs)
    assert info.value.field == "members"
    with pytest.raises(InvalidParameterError) as info:
        Point((3,)).distribution(cs)
    assert info.value.field == "members" and "out of range" in str(info.value)
    with pytest.raises(InvalidParameterError) as info:
        Rates((0.5, 0.5)).distribution(cs)
    assert info.value.field == "rates"


def test_empty_support_is_infeasible():
    with pytest.raises(InfeasibleConstraintsError, match="min_members"):
        Uniform(min_members=2).distribution(ConstraintSet(3, (AtMost(1),)))
    with pytest.raises(InfeasibleConstraintsError, match="rates"):
        Rates((1.0, 1.0)).distribution(ConstraintSet(2, (AtMost(1),)))


# ---------------------------------------------------------------------------
# The scenario-file form


@pytest.mark.parametrize(
    "table, expected",
    [
        ({"kind": "point", "members": []}, Point(())),
        ({"kind": "point", "members": [2, 0]}, Point((0, 2))),
        ({"kind": "uniform", "min_members": 1}, Uniform(min_members=1)),
        ({"kind": "uniform"}, Uniform()),
        ({"kind": "explicit", "support": [[0], [1, 2]], "weights": [0.5, 0.5]}, Explicit(({0}, {1, 2}), (0.5, 0.5))),
        ({"kind": "explicit", "support": [[]], "weights": [1]}, Explicit(((),), (1.0,))),
        ({"kind": "rates", "rates": [0.1, 0.2, 1]}, Rates((0.1, 0.2, 1.0))),
    ],
)
def test_parser_reads_every_kind_and_round_trips(table, expected):
    h = hypothesis_from_dict(table, "hypotheses.h1", 3)
    assert h == expected
    assert hypothesis_from_dict(hypothesis_to_dict(h), "hypotheses.h1", 3) == h


@pytest.mark.parametrize(
    "table, field",
    [
        ({"kind": "gaussian"}, "hypotheses.h1.kind"),
        ({"members": []}, "hypotheses.h1.kind"),
        ({"kind": 3}, "hypotheses.h1.kind"),
        ({"kind": "point"}, "hypotheses.h1.members"),
        ({"kind": "point", "members": [], "weights": [1]}, "hypotheses.h1.weights"),
        ({"kind": "point", "members": [5]}, "hypotheses.h1.members[0]"),
        ({"kind": "point", "members": [0, "a"]}, "hypotheses.h1.members[1]"),
        ({"kind": "point", "members": 0}, "hypotheses.h1.members"),
        ({"kind": "point", "members": [1, 1]}, "hypotheses.h1.members"),
        ({"kind": "uniform", "min_members": 2, "max_members": 1}, "hypotheses.h1.min_members"),
        ({"kind": "uniform", "min_members": "1"}, "hypotheses.h1.min_members"),
        ({"kind": "uniform", "max_members": True}, "hypotheses.h1.max_members"),
        ({"kind": "explicit", "support": [[0], [1]], "weights": [0.5, 0.6]}, "hypotheses.h1.weights"),
        ({"kind": "explicit", "support": [[0], [1]], "weights": [0.5, "x"]}, "hypotheses.h1.weights[1]"),
        ({"kind": "explicit", "support": [[0], [3]], "weights": [0.5, 0.5]}, "hypotheses.h1.support[1][0]"),
        ({"kind": "explicit", "support": [[0], [0]], "weights": [0.5, 0.5]}, "hypotheses.h1.support[1]"),
        ({"kind": "explicit", "support": [[0]]}, "hypotheses.h1.weights"),
        ({"kind": "rates", "rates": [0.5, 0.5]}, "hypotheses.h1.rates"),
        ({"kind": "rates", "rates": [0.5, 0.5, 2.0]}, "hypotheses.h1.rates[2]"),
    ],
)
def test_parser_errors_name_the_full_path(table, field):
    with pytest.raises(InvalidScenarioError) as info:
        hypothesis_from_dict(table, "hypotheses.h1", 3)
    assert info.value.field == field


def test_parser_rejects_a_non_table():
    with pytest.raises(InvalidScenarioError) as info:
        hypothesis_from_dict([1, 2], "hypotheses.h0", 3)
    assert info.value.field == "hypotheses.h0"

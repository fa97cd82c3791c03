"""LinearSystem and each kind's compiled inequalities, checked by hand."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from gce.constraints import AtMost, Conflicts, Exclusive, LinearSystem, Patterns, Together
from gce.errors import InvalidParameterError


def test_at_most_is_one_row():
    system = AtMost(2, among=(1, 3)).compile(4)
    np.testing.assert_array_equal(system.dense(), [[0, 1, 0, 1]])
    np.testing.assert_array_equal(system.b, [2])
    assert system.aux == 0
    np.testing.assert_array_equal(AtMost(1).compile(3).dense(), [[1, 1, 1]])


def test_exclusive_is_one_clique_row():
    system = Exclusive((0, 2)).compile(3)
    np.testing.assert_array_equal(system.dense(), [[1, 0, 1]])
    np.testing.assert_array_equal(system.b, [1])


def test_together_is_equalities_to_the_first_member():
    system = Together((0, 2, 3)).compile(4)
    np.testing.assert_array_equal(
        system.dense(), [[1, 0, -1, 0], [-1, 0, 1, 0], [1, 0, 0, -1], [-1, 0, 0, 1]]
    )
    np.testing.assert_array_equal(system.b, [0, 0, 0, 0])
    assert Together((1,)).compile(2).rows == 0


def test_conflicts_is_one_row_per_edge():
    system = Conflicts(((0, 1), (1, 2))).compile(3)
    np.testing.assert_array_equal(system.dense(), [[1, 1, 0], [0, 1, 1]])
    np.testing.assert_array_equal(system.b, [1, 1])


def test_patterns_use_one_selector_per_pattern():
    system = Patterns(({0, 1}, {1})).compile(2)
    assert (system.n, system.aux) == (2, 2)
    # x0 = s0, x1 = s0 + s1 (as pairs of inequalities), s0 + s1 <= 1.
    np.testing.assert_array_equal(
        system.dense(),
        [
            [1, 0, -1, 0],
            [-1, 0, 1, 0],
            [0, 1, -1, -1],
            [0, -1, 1, 1],
            [0, 0, 1, 1],
        ],
    )
    np.testing.assert_array_equal(system.b, [0, 0, 0, 0, 1])
    assert system.holds([1, 1], [1, 0])
    assert system.holds([0, 1], [0, 1])
    assert system.holds([0, 0], [0, 0])
    assert not system.holds([1, 0], [1, 0])
    assert not system.holds([0, 1], [1, 1])


def test_compile_validates_against_n():
    with pytest.raises(InvalidParameterError) as info:
        Exclusive((0, 3)).compile(3)
    assert info.value.field == "group"


def test_linear_system_validates_shapes():
    with pytest.raises(InvalidParameterError, match="A: must have n \\+ aux = 3 columns"):
        LinearSystem(n=2, aux=1, A=np.zeros((1, 2)), b=np.zeros(1))
    with pytest.raises(InvalidParameterError, match="b: must have 1 entries"):
        LinearSystem(n=2, aux=0, A=np.zeros((1, 2)), b=np.zeros(2))
    with pytest.raises(InvalidParameterError, match="aux: must be an integer >= 0"):
        LinearSystem(n=2, aux=-1, A=np.zeros((1, 1)), b=np.zeros(1))


def test_linear_system_is_sparse_and_read_only():
    system = AtMost(1).compile(3)
    assert sp.issparse(system.A)
    with pytest.raises(ValueError):
        system.b[0] = 5.0


def test_holds_checks_lengths():
    system = Patterns(({0},)).compile(2)
    with pytest.raises(InvalidParameterError, match="aux: must have 1 entries"):
        system.holds([1, 0])
    with pytest.raises(InvalidParameterError, match="x: must have 2 entries"):
        system.holds([1], [1])


def test_stack_offsets_aux_columns():
    first = Patterns(({0},)).compile(2)
    second = Patterns(({1}, {0, 1})).compile(2)
    stacked = LinearSystem.stack(2, [first, AtMost(1).compile(2), second])
    assert (stacked.n, stacked.aux, stacked.rows) == (2, 3, first.rows + 1 + second.rows)
    dense = stacked.dense()
    np.testing.assert_array_equal(dense[: first.rows, :3], first.dense())
    np.testing.assert_array_equal(dense[: first.rows, 3:], 0)
    np.testing.assert_array_equal(dense[-second.rows :, :2], second.dense()[:, :2])
    np.testing.assert_array_equal(dense[-second.rows :, 2], 0)
    np.testing.assert_array_equal(dense[-second.rows :, 3:], second.dense()[:, 2:])


def test_stack_requires_same_n():
    with pytest.raises(InvalidParameterError, match=r"systems\[1\].n: must be 2, got 3"):
        LinearSystem.stack(2, [AtMost(1).compile(2), AtMost(1).compile(3)])


def test_stack_of_nothing():
    system = LinearSystem.stack(3, [])
    assert (system.rows, system.n, system.aux) == (0, 3, 0)

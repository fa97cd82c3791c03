"""Hypotheses: distributions over membership sets (001, Sec. III-A and V-B).

In the generalized composition experiment the adversary's hypotheses h0 and h1
are distributions over the allowed membership sets (b-vectors). A point mass is
the classic case (001 Thm. 1); a composite hypothesis models a prior, e.g. "in
none of the databases" against "in at least one" (uniform over the non-empty
allowed sets).

What must never change: a :class:`Distribution` lists distinct membership sets
with positive weights summing to one; every set it lists is allowed by the
scenario's constraints when it is used in a scenario.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from .errors import InvalidParameterError

__all__ = ["Distribution"]

#: Tolerance on the total weight of a distribution.
WEIGHT_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Distribution:
    """A finite distribution over membership sets.

    Parameters
    ----------
    sets : tuple of frozenset of int
        Distinct membership sets (the databases holding the target's record).
    weights : tuple of float
        Their probabilities: positive, summing to 1 (within 1e-9).

    Examples
    --------
    >>> d = Distribution.of([({0}, 0.5), ({1}, 0.5)])
    >>> [sorted(s) for s, w in d]
    [[0], [1]]
    """

    sets: tuple[frozenset[int], ...]
    weights: tuple[float, ...]

    def __post_init__(self) -> None:
        sets = tuple(frozenset(s) for s in self.sets)
        weights = tuple(float(w) for w in self.weights)
        if not sets:
            raise InvalidParameterError("support", "needs at least one membership set")
        if len(weights) != len(sets):
            raise InvalidParameterError("weights", f"need one weight per set ({len(sets)}), got {len(weights)}")
        if len(set(sets)) != len(sets):
            raise InvalidParameterError("support", "lists a membership set more than once")
        for i, s in enumerate(sets):
            if any(isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < 0 for x in s):
                raise InvalidParameterError(f"support[{i}]", f"must hold database indices >= 0, got {sorted(s)!r}")
        for i, w in enumerate(weights):
            if not (w > 0.0 and math.isfinite(w)):
                raise InvalidParameterError(f"weights[{i}]", f"must be positive and finite, got {w!r}")
        total = math.fsum(weights)
        if abs(total - 1.0) > WEIGHT_TOLERANCE:
            raise InvalidParameterError("weights", f"must sum to 1, got {total!r}")
        object.__setattr__(self, "sets", sets)
        object.__setattr__(self, "weights", weights)

    @classmethod
    def of(cls, pairs: Iterable[tuple[Iterable[int], float]]) -> "Distribution":
        """Build from (members, weight) pairs."""
        pairs = list(pairs)
        return cls(tuple(frozenset(s) for s, _ in pairs), tuple(w for _, w in pairs))

    @classmethod
    def point(cls, members: Iterable[int]) -> "Distribution":
        """The point mass at one membership set."""
        return cls((frozenset(members),), (1.0,))

    def __iter__(self) -> Iterator[tuple[frozenset[int], float]]:
        return iter(zip(self.sets, self.weights))

    def __len__(self) -> int:
        return len(self.sets)

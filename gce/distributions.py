"""Distributions over membership sets: the finite table every prior method consumes (001, Sec. III-A).

A :class:`Distribution` is the (set, weight) table that a hypothesis becomes
once its support is listed (:meth:`gce.hypotheses.Hypothesis.distribution`);
the exact, coupling and reproduction methods read nothing else.

What must never change: a :class:`Distribution` lists distinct membership sets
with positive weights summing to one; every set it lists is allowed by the
scenario's constraints when it is used in a scenario.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from .errors import InvalidParameterError
from .validation import is_integer, is_number, shown

__all__ = ["Distribution", "WEIGHT_TOLERANCE"]

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
        for name in ("sets", "weights"):
            value = getattr(self, name)
            if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
                raise InvalidParameterError("support" if name == "sets" else name,
                                            f"must be a collection, got {shown(value)}")
        sets = tuple(s if type(s) is frozenset else frozenset(_indices(s, f"support[{i}]"))
                     for i, s in enumerate(self.sets))
        weights = []
        for i, w in enumerate(self.weights):
            if not is_number(w):
                raise InvalidParameterError(f"weights[{i}]", f"must be a number, got {shown(w)}")
            weights.append(float(w))
        weights = tuple(weights)
        if not sets:
            raise InvalidParameterError("support", "needs at least one membership set")
        if len(weights) != len(sets):
            raise InvalidParameterError("weights", f"need one weight per set ({len(sets)}), got {len(weights)}")
        if len(set(sets)) != len(sets):
            raise InvalidParameterError("support", "lists a membership set more than once")
        for i, s in enumerate(sets):
            if any(not is_integer(x) or x < 0 for x in s):
                raise InvalidParameterError(f"support[{i}]", f"must hold database indices >= 0, got {shown(sorted(s))}")
        for i, w in enumerate(weights):
            if not (w > 0.0 and math.isfinite(w)):
                raise InvalidParameterError(f"weights[{i}]", f"must be positive and finite, got {shown(w)}")
        total = math.fsum(weights)
        if abs(total - 1.0) > WEIGHT_TOLERANCE:
            raise InvalidParameterError("weights", f"must sum to 1, got {shown(total)}")
        object.__setattr__(self, "sets", sets)
        object.__setattr__(self, "weights", weights)

    @classmethod
    def of(cls, pairs: Iterable[tuple[Iterable[int], float]]) -> "Distribution":
        """Build from (members, weight) pairs."""
        if isinstance(pairs, (str, bytes)) or not isinstance(pairs, Iterable):
            raise InvalidParameterError("support", f"must be (members, weight) pairs, got {shown(pairs)}")
        pairs = list(pairs)
        for i, pair in enumerate(pairs):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise InvalidParameterError(f"support[{i}]", f"must be a (members, weight) pair, got {shown(pair)}")
        return cls(tuple(s for s, _ in pairs), tuple(w for _, w in pairs))

    @classmethod
    def point(cls, members: Iterable[int]) -> "Distribution":
        """The point mass at one membership set."""
        return cls((frozenset(members),), (1.0,))

    def __iter__(self) -> Iterator[tuple[frozenset[int], float]]:
        return iter(zip(self.sets, self.weights))

    def __len__(self) -> int:
        return len(self.sets)

    @property
    def support_size(self) -> int:
        """How many membership sets carry weight."""
        return len(self.sets)


def _indices(values: object, field: str) -> tuple[int, ...]:
    """A sorted, duplicate-free tuple of database indices; empty is allowed (the empty set)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise InvalidParameterError(field, f"must be a collection of database indices, got {shown(values)}")
    out: list[int] = []
    for value in values:
        if not is_integer(value) or value < 0:
            raise InvalidParameterError(field, f"must hold database indices >= 0, got {shown(value)}")
        out.append(int(value))
    if len(set(out)) != len(out):
        repeated = next(i for i in out if out.count(i) > 1)
        raise InvalidParameterError(field, f"lists database {repeated} more than once")
    return tuple(sorted(out))

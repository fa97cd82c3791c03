"""Hypotheses: distributions over membership sets (001, Sec. III-A and V-B).

In the generalized composition experiment the adversary's hypotheses h0 and h1
are distributions over the allowed membership sets (b-vectors). A point mass is
the classic case (001 Thm. 1); a composite hypothesis models a prior, e.g. "in
none of the databases" against "in at least one" (uniform over the non-empty
allowed sets; 001 Sec. III-A, Example 1) or "in fewer than k' databases" against
"in at least k'" (Example 2).

Here live the hypothesis kinds (:class:`Point`, :class:`Uniform`, :class:`Explicit`,
  :class:`Rates`), small frozen records validated at construction that *describe*
  a prior. :meth:`Hypothesis.distribution` turns one into a
  :class:`Distribution` over the sets a :class:`~gce.constraints.ConstraintSet`
  allows, and :meth:`Hypothesis.size_weights` gives its law of ``|b|`` when the
  prior is exchangeable (the count-based exact method of :mod:`gce.priors.exact`
  needs only that), and the enumeration of allowed sets they share. The
  finite table (:class:`~gce.distributions.Distribution`) is in
  :mod:`gce.distributions`; the file form of the kinds in
  :mod:`gce.files.hypotheses`. The records sit below the model (a :class:`~gce.model.Scenario`
  holds two): this module imports only ``constraints``, ``errors``, ``validation`` and
  ``distributions``, never the engines of :mod:`gce.priors` that read the records;
  ``gce.priors.hypotheses`` re-exports the records at their old address.

What must never change: a :class:`Distribution` lists distinct membership sets
with positive weights summing to one; every set it lists is allowed by the
scenario's constraints when it is used in a scenario. A hypothesis record's
meaning is its distribution over the *allowed* sets: ``Uniform`` is uniform over
the allowed sets in its size range, ``Rates`` is the product law conditioned on
the set being allowed; neither ever puts weight on a forbidden set.
"""


from __future__ import annotations

import abc
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from .constraints import AtMost, Constraint, ConstraintSet, Exclusive, Patterns
from .constraints.base import Resolver, format_indices, holds_names
from .errors import GCEError, InfeasibleConstraintsError, InvalidParameterError, InvalidScenarioError, NumericalLimitError
from .validation import is_integer, is_number, shown
from .distributions import Distribution, _indices

__all__ = [
    "Distribution",
    "Hypothesis",
    "Point",
    "Uniform",
    "Explicit",
    "Rates",
    "SupportCover",
    "SUPPORT_LIMIT",
    "check_distribution",
    "check_listed",
]

#: Default largest support :meth:`Hypothesis.distribution` enumerates.
SUPPORT_LIMIT = 2**16
#: Search nodes allowed per support set before the enumeration gives up.
_NODES_PER_SET = 64


# ---------------------------------------------------------------------------
# Shared helpers


def _check_allowed(members: frozenset[int], constraints: ConstraintSet, field: str) -> None:
    """Raise unless ``members`` is an allowed membership set of ``constraints``, naming ``field``."""
    for index in members:
        if index >= constraints.n:
            raise InvalidParameterError(field, f"database {index} is out of range [0, {constraints.n})")
    violated = constraints.violated(members)
    if violated:
        culprit = constraints.constraints[violated[0]]
        raise InvalidParameterError(
            field,
            f"{format_indices(members, as_set=True)} violates constraints[{violated[0]}] ({culprit.describe()})",
        )


def _size_cap(constraints: ConstraintSet) -> int | None:
    """The largest allowed size when the allowed sets are exactly the sets up to that size, else None.

    That is the case without constraints (cap ``n``) and when every constraint
    that restricts anything is a cardinality bound over *all* databases
    (``at_most`` with ``among`` all, or ``exclusive`` on every database).
    """
    n = constraints.n
    cap = n
    for constraint in constraints.constraints:
        if constraint.is_vacuous(n):
            continue
        if not isinstance(constraint, (AtMost, Exclusive)):
            return None
        for bound in constraint.at_most_bounds(n):
            if len(bound.among) != n:
                return None
            cap = min(cap, bound.m)
    return cap


def _log_comb(n: int, s: NDArray[np.float64]) -> NDArray[np.float64]:
    """log C(n, s), elementwise (002 Thm. III.3 is written with the same log-gamma binomials)."""
    from scipy import special  # here, not at the top: a scenario without priors never needs scipy

    return special.gammaln(n + 1.0) - special.gammaln(s + 1.0) - special.gammaln(n - s + 1.0)


def _normalised(log_weights: NDArray[np.float64]) -> NDArray[np.float64]:
    """Log weights shifted to sum to 1 (log-sum-exp)."""
    from scipy import special

    return log_weights - special.logsumexp(log_weights)


def _order(members: frozenset[int]) -> tuple[int, list[int]]:
    """Support order: by size, then lexicographically."""
    return len(members), sorted(members)


def _more_sets_than(n: int, low: int, high: int, limit: float) -> bool:
    """Whether more than ``limit`` subsets of ``range(n)`` have ``low <= size <= high``.

    Exact integers, stopping at the first partial sum over ``limit``; a size
    whose log-binomial alone exceeds ``log(limit)`` answers at once (no
    million-digit binomials).
    """
    log_limit = math.log(max(limit, 1))
    total = 0
    for s in range(low, min(high, n) + 1):
        if math.lgamma(n + 1) - math.lgamma(s + 1) - math.lgamma(n - s + 1) > log_limit + 1.0:
            return True
        total += math.comb(n, s)
        if total > limit:
            return True
    return False


def format_log_count(log_count: float) -> str:
    """A count given by its natural log, for messages: ``1.73e+13``, or ``about 10^301`` beyond floats.

    Examples
    --------
    >>> format_log_count(math.log(1.73e13)), format_log_count(10_000 * math.log(2))
    ('1.73e+13', 'about 10^3010')
    """
    if log_count < 700.0:
        return f"{math.exp(log_count):.3g}"
    return f"about 10^{int(log_count / math.log(10.0))}"


def _log_count_by_size(n: int, low: int, high: int) -> float:
    """Natural log of the number of subsets of ``range(n)`` with ``low <= size <= high``."""
    from scipy import special

    sizes = np.arange(low, min(high, n) + 1, dtype=float)
    return float(special.logsumexp(_log_comb(n, sizes))) if sizes.size else -math.inf


def _allowed_sets(
    constraints: ConstraintSet,
    field: str,
    limit: int,
    *,
    low: int = 0,
    high: int | None = None,
    within: frozenset[int] | None = None,
    required: frozenset[int] = frozenset(),
) -> Iterator[frozenset[int]]:
    """The allowed sets ``b`` with ``low <= |b| <= high`` and ``required <= b <= within``.

    When every constraint is hereditary (:attr:`~gce.constraints.Constraint.hereditary`)
    the sets are unions of components found by a depth-first search that stops
    at the first forbidden union: no superset of a forbidden union of components
    is allowed. Otherwise the constraint set's own enumeration is filtered.

    Raises
    ------
    NumericalLimitError
        Once more than ``limit`` sets qualify (or the search visits far more
        nodes than that), naming ``field``.
    """
    n = constraints.n
    high = n if high is None else min(high, n)
    within = frozenset(range(n)) if within is None else within

    def too_many() -> NumericalLimitError:
        """The error for a support over ``limit`` sets, naming ``field``."""
        return NumericalLimitError(
            f"{field}: the hypothesis' support has more than {limit} membership sets on n = {n} "
            "databases; raise the limit or use an exchangeable prior (count-based method)"
        )

    if constraints.explicit_sets() is not None or not all(c.hereditary for c in constraints.constraints):
        count = 0
        for members in constraints.allowed_sets():
            if low <= len(members) <= high and required <= members <= within:
                count += 1
                if count > limit:
                    raise too_many()
                yield members
        return

    blocks = constraints.components()
    usable = [block <= within for block in blocks]
    needed = [bool(block & required) for block in blocks]
    if any(need and not use for need, use in zip(needed, usable)):
        return
    # room[j]: most members blocks j.. can still add; must_after[j]: some block j.. is required.
    room = [0] * (len(blocks) + 1)
    must_after = [False] * (len(blocks) + 1)
    for j in range(len(blocks) - 1, -1, -1):
        room[j] = room[j + 1] + (len(blocks[j]) if usable[j] else 0)
        must_after[j] = must_after[j + 1] or needed[j]
    count = nodes = 0
    stack: list[tuple[int, frozenset[int]]] = [(0, frozenset())]
    while stack:
        j, members = stack.pop()
        nodes += 1
        if nodes > _NODES_PER_SET * limit:
            raise too_many()
        size = len(members)
        if size + room[j] < low:
            continue
        if j == len(blocks) or (size == high and not must_after[j]):
            if size >= low:
                count += 1
                if count > limit:
                    raise too_many()
                yield members
            continue
        block = blocks[j]
        if usable[j] and size + len(block) <= high:
            grown = members | block
            if constraints.satisfied(grown):
                stack.append((j + 1, grown))  # popped after the branch without the block
        if not needed[j]:
            stack.append((j + 1, members))


@dataclass(frozen=True)
class SupportCover:
    """A family of membership sets containing a prior's support, described by membership constraints.

    Every set ``b`` of the support has ``|b| <= most`` (when not None), lies
    within ``inside`` (when not None), and is one of ``listed`` (when not
    None). The worst pair of point masses over covers (001 Thm. 1 with joint
    convexity, restricted to the pairs the priors can couple) is a valid bound
    for the priors: every coupling of h0 and h1 puts its mass on pairs of
    their supports, hence on pairs of the covers.
    """

    most: int | None = None
    inside: frozenset[int] | None = None
    listed: tuple[frozenset[int], ...] | None = None

    @classmethod
    def of_sets(cls, sets: Iterable[frozenset[int]]) -> "SupportCover":
        """The cover of a listed support: the sets themselves, their largest size and their union."""
        sets = tuple(sets)
        return cls(max(map(len, sets)), frozenset().union(*sets), sets)

    def union(self, other: "SupportCover") -> "SupportCover":
        """A cover of both supports."""
        most = None if self.most is None or other.most is None else max(self.most, other.most)
        inside = None if self.inside is None or other.inside is None else self.inside | other.inside
        listed = None
        if self.listed is not None and other.listed is not None:
            listed = tuple(dict.fromkeys(self.listed + other.listed))
        return SupportCover(most, inside, listed)

    def constraints(self, n: int, list_limit: int | None = None) -> tuple[Constraint, ...]:
        """The cover as constraints on ``n`` databases (to intersect with the scenario's).

        ``at_most(most)``, ``at_most(0)`` on the databases outside ``inside``,
        and ``patterns`` of the non-empty listed sets when there are at most
        ``list_limit`` of them (the list is dropped beyond: a larger cover,
        still valid). Nothing for what restricts nothing.
        """
        out: list[Constraint] = []
        if self.most is not None and self.most < n:
            out.append(AtMost(self.most))
        if self.inside is not None and len(self.inside) < n:
            out.append(AtMost(0, among=tuple(sorted(frozenset(range(n)) - self.inside))))
        nonempty = [sorted(s) for s in self.listed or () if s]
        if nonempty and (list_limit is None or len(nonempty) <= list_limit):
            out.append(Patterns(tuple(nonempty)))
        return tuple(out)


# ---------------------------------------------------------------------------
# Hypothesis kinds


@dataclass(frozen=True)
class Hypothesis(abc.ABC):
    """A prior over membership sets: one side of the adversary's test (001, Def. 3).

    Subclasses are frozen records validated at construction. The constraints
    come in only when the prior is turned into numbers:

    * :meth:`distribution` enumerates the support over the *allowed* sets;
    * :meth:`size_weights` gives the law of ``|b|`` when the prior is
      exchangeable (its weight of a set depends only on the set's size) and
      the allowed sets are all sets of allowed sizes.
    """

    kind: ClassVar[str]
    #: Whether the record lists its support (point, explicit): checking it against the constraints
    #: costs no enumeration, so a :class:`~gce.model.Scenario` checks it when built (:func:`check_listed`).
    listed: ClassVar[bool] = False

    @abc.abstractmethod
    def describe(self) -> str:
        """A short human-readable form, e.g. ``uniform(min_members=1)``."""

    @property
    def unresolved(self) -> bool:
        """Whether the record names databases that a scenario has yet to resolve (point, explicit)."""
        return False

    def resolve(self, resolve: Resolver) -> "Hypothesis":
        """The record with its database names replaced by indices: ``resolve(reference, field)`` gives the
        index or raises naming ``field`` (:meth:`gce.model.Databases.index`); ``self`` when it names none."""
        return self

    @abc.abstractmethod
    def distribution(self, constraints: ConstraintSet, limit: int = SUPPORT_LIMIT) -> Distribution:
        """The hypothesis as a finite distribution over allowed membership sets.

        Parameters
        ----------
        constraints : ConstraintSet
            The scenario's constraints (and number of databases ``n``).
        limit : int
            Largest support enumerated.

        Returns
        -------
        Distribution

        Raises
        ------
        InvalidParameterError
            If a set the hypothesis names is out of range or forbidden; the
            field names it (``members``, ``support[i]``, ``rates``).
        InfeasibleConstraintsError
            If no allowed set carries weight; the message names the field.
        NumericalLimitError
            If the support has more than ``limit`` sets.
        """

    @abc.abstractmethod
    def log_size_weights(self, constraints: ConstraintSet) -> NDArray[np.float64] | None:
        """log P(``|b|`` = s) for s = 0..n when the prior is exchangeable, else None.

        Exchangeable means: the weight of a set depends only on its size, and
        the allowed sets are all sets of allowed sizes (no constraints, or only
        cardinality bounds over all databases). Entries are ``-inf`` where the
        probability is zero. Kept in log space: for n = 1,000 the weights of
        "uniform over the non-empty sets" reach 2^-1000.

        Raises
        ------
        InvalidParameterError, InfeasibleConstraintsError
            As :meth:`distribution`.
        """

    @abc.abstractmethod
    def support_cover(self) -> SupportCover:
        """A family of sets containing the support, described without enumerating it (:class:`SupportCover`)."""

    def size_weights(self, constraints: ConstraintSet) -> NDArray[np.float64] | None:
        """P(``|b|`` = s) for s = 0..n when the prior is exchangeable, else None.

        See :meth:`log_size_weights` (whose exponential this is; weights
        below 1e-308 underflow to 0 here, not there).

        Examples
        --------
        >>> Uniform(min_members=1).size_weights(ConstraintSet(2)).round(4).tolist()
        [0.0, 0.6667, 0.3333]
        >>> Point(()).size_weights(ConstraintSet(2)).tolist()
        [1.0, 0.0, 0.0]
        """
        log_weights = self.log_size_weights(constraints)
        return None if log_weights is None else np.exp(log_weights)


@dataclass(frozen=True)
class Point(Hypothesis):
    """The point mass at one membership set (001 Thm. 1: the classic hypotheses).

    Parameters
    ----------
    members : tuple of int
        The databases holding the record; empty means "in none of them".
        Stored sorted.

    Raises
    ------
    InvalidParameterError
        If ``members`` is not a duplicate-free collection of indices >= 0.

    Examples
    --------
    >>> Point((2, 0)).distribution(ConstraintSet(3)).sets
    (frozenset({0, 2}),)
    """

    kind = "point"
    listed = True

    members: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if holds_names(self.members):  # names, resolved by a scenario with named databases
            object.__setattr__(self, "members", _references(self.members, "members"))
            return
        object.__setattr__(self, "members", _indices(self.members, "members"))

    @property
    def unresolved(self) -> bool:
        return holds_names(self.members)

    def resolve(self, resolve: Resolver) -> "Point":
        """The point with names replaced by indices, e.g. ``Point(("north",))`` -> ``Point((0,))``."""
        if not self.unresolved:
            return self
        return Point(tuple(resolve(ref, f"members[{j}]") for j, ref in enumerate(self.members)))

    def describe(self) -> str:
        return f"{self.kind}(members={format_indices(self.members, as_set=True)})"

    def support_cover(self) -> SupportCover:
        return SupportCover.of_sets((frozenset(self.members),))

    def distribution(self, constraints: ConstraintSet, limit: int = SUPPORT_LIMIT) -> Distribution:
        members = frozenset(self.members)
        _check_allowed(members, constraints, "members")
        return Distribution.point(members)

    def log_size_weights(self, constraints: ConstraintSet) -> NDArray[np.float64] | None:
        members = frozenset(self.members)
        _check_allowed(members, constraints, "members")
        n = constraints.n
        if _size_cap(constraints) is None or len(members) not in (0, n):
            return None
        out = np.full(n + 1, -np.inf)
        out[len(members)] = 0.0
        return out


@dataclass(frozen=True)
class Uniform(Hypothesis):
    """Uniform over the allowed membership sets with ``min_members <= |b| <= max_members``.

    ``Uniform(min_members=1)`` is 001's uninformative "in at least one
    database" (Sec. III-A, Example 1; Sec. V-B); ``Uniform(max_members=k - 1)``
    against ``Uniform(min_members=k)`` is Example 2 ("fewer than k'" against
    "at least k'").

    Parameters
    ----------
    min_members : int
        Smallest size, >= 0 (default 0).
    max_members : int, optional
        Largest size (default: no bound beyond the constraints').

    Raises
    ------
    InvalidParameterError
        If a bound is not an integer >= 0, or ``min_members > max_members``
        (the field is ``min_members``).

    Examples
    --------
    >>> d = Uniform(min_members=1).distribution(ConstraintSet(2))
    >>> [sorted(s) for s in d.sets], d.weights
    ([[0], [1], [0, 1]], (0.3333333333333333, 0.3333333333333333, 0.3333333333333333))
    """

    kind = "uniform"

    min_members: int = 0
    max_members: int | None = None

    def __post_init__(self) -> None:
        for name in ("min_members", "max_members"):
            value = getattr(self, name)
            if value is None and name == "max_members":
                continue
            if not is_integer(value) or value < 0:
                raise InvalidParameterError(name, f"must be an integer >= 0, got {shown(value)}")
            object.__setattr__(self, name, int(value))
        if self.max_members is not None and self.min_members > self.max_members:
            raise InvalidParameterError(
                "min_members", f"must be <= max_members = {self.max_members}, got {self.min_members}"
            )

    def describe(self) -> str:
        bounds = [f"min_members={self.min_members}"]
        if self.max_members is not None:
            bounds.append(f"max_members={self.max_members}")
        return f"{self.kind}({', '.join(bounds)})"

    def support_cover(self) -> SupportCover:
        return SupportCover(most=self.max_members)

    def _high(self, n: int) -> int:
        """The largest size in the support on ``n`` databases."""
        return n if self.max_members is None else min(self.max_members, n)

    def _empty(self, constraints: ConstraintSet) -> InfeasibleConstraintsError:
        """The error for a prior that puts no weight on an allowed set, naming its field."""
        return InfeasibleConstraintsError(
            f"min_members: no allowed membership set has between {self.min_members} and "
            f"{self._high(constraints.n)} members on n = {constraints.n} databases ({self.describe()})"
        )

    def distribution(self, constraints: ConstraintSet, limit: int = SUPPORT_LIMIT) -> Distribution:
        n, high = constraints.n, self._high(constraints.n)
        cap = _size_cap(constraints)
        if cap is not None and _more_sets_than(n, self.min_members, min(high, cap), limit):
            count = format_log_count(_log_count_by_size(n, self.min_members, min(high, cap)))
            raise NumericalLimitError(
                f"min_members: {self.describe()} on n = {n} databases has {count} membership sets, more than "
                f"the limit {limit}; its size law is exchangeable, so use the count-based method"
            )
        sets = sorted(_allowed_sets(constraints, "min_members", limit, low=self.min_members, high=high), key=_order)
        if not sets:
            raise self._empty(constraints)
        return Distribution(tuple(sets), (1.0 / len(sets),) * len(sets))

    def log_size_weights(self, constraints: ConstraintSet) -> NDArray[np.float64] | None:
        cap = _size_cap(constraints)
        if cap is None:
            return None
        n = constraints.n
        sizes = np.arange(n + 1, dtype=float)
        inside = (sizes >= self.min_members) & (sizes <= min(self._high(n), cap))
        if not inside.any():
            raise self._empty(constraints)
        return _normalised(np.where(inside, _log_comb(n, sizes), -np.inf))


@dataclass(frozen=True)
class Explicit(Hypothesis):
    """An explicit table of membership sets and their probabilities.

    Parameters
    ----------
    support : tuple of frozenset of int
        Distinct membership sets.
    weights : tuple of float
        Their probabilities: positive, one per set, summing to 1 (within 1e-9).

    Raises
    ------
    InvalidParameterError
        Naming ``support``, ``support[i]``, ``weights`` or ``weights[i]``.

    Examples
    --------
    >>> h = Explicit(({0}, {1}), (0.5, 0.5))  # 001 Sec. V-B: p1 = 1/2 {0} + 1/2 {1}
    >>> h.distribution(ConstraintSet(2)).weights
    (0.5, 0.5)
    """

    kind = "explicit"
    listed = True

    support: tuple[frozenset[int], ...]
    weights: tuple[float, ...]

    def __post_init__(self) -> None:
        if isinstance(self.support, (str, bytes)) or not isinstance(self.support, Iterable):
            raise InvalidParameterError("support", f"must be a collection of membership sets, got {shown(self.support)}")
        if isinstance(self.weights, (str, bytes)) or not isinstance(self.weights, Iterable):
            raise InvalidParameterError("weights", f"must be a collection of numbers, got {shown(self.weights)}")
        if holds_names(self.support):  # names, resolved by a scenario with named databases; weights checked now
            support = tuple(frozenset(_references(s, f"support[{i}]")) for i, s in enumerate(self.support))
            weights = tuple(self.weights)
            Distribution(tuple(frozenset({i}) for i in range(len(support))), weights)
            object.__setattr__(self, "support", support)
            object.__setattr__(self, "weights", tuple(float(w) for w in weights))
            return
        support = tuple(frozenset(_indices(s, f"support[{i}]")) for i, s in enumerate(self.support))
        weights = []
        for i, w in enumerate(self.weights):
            if not is_number(w):
                raise InvalidParameterError(f"weights[{i}]", f"must be a number, got {shown(w)}")
            weights.append(float(w))
        first_seen: dict[frozenset[int], int] = {}
        for i, members in enumerate(support):
            if members in first_seen:
                raise InvalidParameterError(
                    f"support[{i}]",
                    f"repeats support[{first_seen[members]}] = {format_indices(members, as_set=True)}",
                )
            first_seen[members] = i
        table = Distribution(support, tuple(weights))  # validates the weights, naming weights / weights[i]
        object.__setattr__(self, "support", table.sets)
        object.__setattr__(self, "weights", table.weights)

    def support_cover(self) -> SupportCover:
        return SupportCover.of_sets(self.support)

    @property
    def unresolved(self) -> bool:
        return holds_names(self.support)

    def resolve(self, resolve: Resolver) -> "Explicit":
        """The table with names replaced by indices (the weights kept)."""
        if not self.unresolved:
            return self
        support = tuple(frozenset(resolve(ref, f"support[{i}][{j}]") for j, ref in enumerate(members))
                        for i, members in enumerate(self.support))
        return Explicit(support, self.weights)

    @classmethod
    def of(cls, distribution: Distribution) -> "Explicit":
        """The explicit hypothesis of a :class:`Distribution`."""
        return cls(distribution.sets, distribution.weights)

    def describe(self) -> str:
        shown = ", ".join(f"{format_indices(s, as_set=True)}: {w:.4g}" for s, w in zip(self.support[:3], self.weights))
        more = f", ...; {len(self.support)} sets" if len(self.support) > 3 else ""
        return f"{self.kind}({shown}{more})"

    def distribution(self, constraints: ConstraintSet, limit: int = SUPPORT_LIMIT) -> Distribution:
        if len(self.support) > limit:
            raise NumericalLimitError(f"support: {len(self.support)} membership sets, more than the limit {limit}")
        for i, members in enumerate(self.support):
            _check_allowed(members, constraints, f"support[{i}]")
        return Distribution(self.support, self.weights)

    def log_size_weights(self, constraints: ConstraintSet) -> NDArray[np.float64] | None:
        table = self.distribution(constraints, limit=len(self.support))
        n = constraints.n
        if _size_cap(constraints) is None:
            return None
        by_size: dict[int, list[float]] = {}
        for members, weight in table:
            by_size.setdefault(len(members), []).append(weight)
        out = np.full(n + 1, -np.inf)
        for size, weights in by_size.items():
            every_set = not _more_sets_than(n, size, size, len(weights)) and len(weights) == math.comb(n, size)
            if not every_set or max(weights) > min(weights) * (1.0 + _EQUAL_WEIGHTS):
                return None  # not every set of this size, or unequal weights: not exchangeable
            out[size] = math.log(math.fsum(weights))
        return _normalised(out)


#: Relative spread under which the weights of one size count as equal (exchangeability check).
_EQUAL_WEIGHTS = 1e-12


@dataclass(frozen=True)
class Rates(Hypothesis):
    """Each database holds the record independently with its own rate, given an allowed set.

    The weight of ``b`` is ``prod_{i in b} rates[i] * prod_{i not in b} (1 - rates[i])``,
    renormalised over the allowed sets (conditioning on the public
    constraints); without constraints it is the plain product law.

    Parameters
    ----------
    rates : tuple of float
        One probability in [0, 1] per database (the length must equal ``n``).

    Raises
    ------
    InvalidParameterError
        If ``rates`` is empty or a rate is not a number in [0, 1]
        (field ``rates[i]``).

    Examples
    --------
    >>> d = Rates((0.5, 0.0)).distribution(ConstraintSet(2))
    >>> [sorted(s) for s in d.sets], d.weights
    ([[], [0]], (0.5, 0.5))
    """

    kind = "rates"

    rates: tuple[float, ...]

    def __post_init__(self) -> None:
        if isinstance(self.rates, (str, bytes)) or not isinstance(self.rates, Iterable):
            raise InvalidParameterError("rates", f"must be a collection of probabilities, got {shown(self.rates)}")
        rates = []
        for i, q in enumerate(self.rates):
            if not is_number(q) or not 0.0 <= q <= 1.0:
                raise InvalidParameterError(f"rates[{i}]", f"must be a probability in [0, 1], got {shown(q)}")
            rates.append(float(q))
        if not rates:
            raise InvalidParameterError("rates", "needs one rate per database, got none")
        object.__setattr__(self, "rates", tuple(rates))

    def describe(self) -> str:
        if len(set(self.rates)) == 1:
            return f"{self.kind}({self.rates[0]:g} on each of {len(self.rates)} databases)"
        shown = ", ".join(f"{q:g}" for q in self.rates[:4])
        return f"{self.kind}(({shown}{', ...' if len(self.rates) > 4 else ''}))"

    def support_cover(self) -> SupportCover:
        zero = [i for i, q in enumerate(self.rates) if q == 0.0]
        return SupportCover(inside=frozenset(i for i, q in enumerate(self.rates) if q > 0.0) if zero else None)

    def _check_n(self, constraints: ConstraintSet) -> np.ndarray:
        """The rates as an array; InvalidParameterError unless there is one per database."""
        if len(self.rates) != constraints.n:
            raise InvalidParameterError(
                "rates", f"needs one rate per database (n = {constraints.n}), got {len(self.rates)}"
            )
        return np.array(self.rates)

    def _empty(self, constraints: ConstraintSet) -> InfeasibleConstraintsError:
        """The error for a prior that puts no weight on an allowed set, naming its field."""
        return InfeasibleConstraintsError(
            f"rates: no allowed membership set has positive probability under {self.describe()} "
            f"(databases with rate 1 must all hold the record, those with rate 0 none)"
        )

    def distribution(self, constraints: ConstraintSet, limit: int = SUPPORT_LIMIT) -> Distribution:
        q = self._check_n(constraints)
        within = frozenset(np.flatnonzero(q > 0.0).tolist())
        required = frozenset(np.flatnonzero(q == 1.0).tolist())
        free = int(np.count_nonzero((q > 0.0) & (q < 1.0)))
        if constraints.is_unconstrained and free > math.log2(max(limit, 1)):  # 2^free sets, never built
            raise NumericalLimitError(
                f"rates: the product law over {free} databases with rates in (0, 1) has 2^{free} membership "
                f"sets, more than the limit {limit}"
            )
        sets = sorted(_allowed_sets(constraints, "rates", limit, within=within, required=required), key=_order)
        if not sets:
            raise self._empty(constraints)
        member = np.zeros((len(sets), q.size), dtype=bool)
        for row, members in enumerate(sets):
            member[row, list(members)] = True
        with np.errstate(divide="ignore"):
            log_in = np.where(q > 0.0, np.log(q), 0.0)  # only used where q > 0 (members)
            log_out = np.where(q < 1.0, np.log1p(-q), 0.0)  # only used where q < 1 (non-members)
        log_weights = _normalised(np.where(member, log_in, log_out).sum(axis=1))
        weights = np.exp(log_weights)
        keep = weights > 0.0  # sets below 1e-308 of the total are dropped (they underflow)
        return Distribution(tuple(s for s, k in zip(sets, keep) if k), tuple(weights[keep].tolist()))

    def log_size_weights(self, constraints: ConstraintSet) -> NDArray[np.float64] | None:
        q = self._check_n(constraints)
        cap = _size_cap(constraints)
        if cap is None or np.any(q != q[0]):
            return None
        from scipy import special

        n, p = constraints.n, float(q[0])
        sizes = np.arange(n + 1, dtype=float)
        log_weights = _log_comb(n, sizes) + special.xlogy(sizes, p) + special.xlog1py(n - sizes, -p)
        log_weights = np.where(sizes <= cap, log_weights, -np.inf)
        if not np.isfinite(log_weights).any():
            raise self._empty(constraints)
        return _normalised(log_weights)


# ---------------------------------------------------------------------------
# Checks against a scenario's constraints


def _references(values: object, field: str) -> tuple[int | str, ...]:
    """A membership set given with names: indices >= 0 and non-empty names, none twice (may be empty)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise InvalidParameterError(field, f"must be a collection of database indices or names, got {shown(values)}")
    out: list[int | str] = []
    for value in values:
        if not (isinstance(value, str) and value) and not (is_integer(value) and value >= 0):
            raise InvalidParameterError(field, f"must hold database indices >= 0 or names, got {shown(value)}")
        if value in out:
            raise InvalidParameterError(field, f"lists database {shown(value)} more than once")
        out.append(value if isinstance(value, str) else int(value))
    return tuple(out)


def check_distribution(name: str, hypothesis: Hypothesis, constraints: ConstraintSet) -> None:
    """Raise, naming ``hypotheses.<name>``, when a prior's support is not allowed or empty.

    A support too large to list (NumericalLimitError) passes: the count-based
    and preset routes do not need it.
    """
    try:
        hypothesis.distribution(constraints)
    except NumericalLimitError:
        pass
    except InvalidParameterError as error:
        raise type(error)(f"hypotheses.{name}.{error.field}", error.detail) from None
    except GCEError as error:
        raise InvalidScenarioError(f"hypotheses.{name}", str(error)) from None


def check_listed(name: str, hypothesis: Hypothesis, constraints: ConstraintSet) -> None:
    """:func:`check_distribution` for a prior that lists its support (:attr:`Hypothesis.listed`), else nothing.

    Listed sets are checked one by one, without enumerating anything; priors
    whose support is generated (uniform, rates) are checked when solved
    (:func:`gce.solving.check_support`): enumerating them could cost as much
    as the solve itself.
    """
    if hypothesis.listed:
        check_distribution(name, hypothesis, constraints)

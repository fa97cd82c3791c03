"""Exact privacy curves between composite hypotheses (001, Def. 3 and Sec. V-B).

An adversary with a prior tests two distributions h0, h1 over membership sets
(001, Sec. III-A, Examples 1-2: "in none of the databases" against "in at least
one", "in fewer than k'" against "in at least k'"). Hypothesis DP (001, Def. 3)
asks for both

    E_{b ~ h0} Pr(V^b in S) <= e^eps E_{b ~ h1} Pr(V^b in S) + delta    (1)
    E_{b ~ h1} Pr(V^b in S) <= e^eps E_{b ~ h0} Pr(V^b in S) + delta    (2)

so the privacy curve of the pair is the larger of the two hockey-stick
divergences between the *mixtures* of view distributions.

When every invocation carries an (eps, delta) point guarantee, the canonical
pair of 002 (eqs. 9-10; outputs {0, 1, 2, 3}) is a worst case: every mechanism
with that guarantee is one post-processing of it, the same for every membership
set b, hence for every mixture over b (docs/design.md, "The canonical pair makes brute force possible"). So the
exact curve is the two-sided hockey-stick divergence between the two mixtures
of canonical products, which this module computes in two ways:

* **enumeration** (:func:`exact_enumeration_curve`): the invocations on one
  database are merged into one discrete pair over privacy-loss levels
  (:func:`database_pair`); the joint levels of the databases whose membership
  varies are enumerated and each support set's likelihood added up. Cost: joint
  levels x support size.
* **counting** (:func:`exact_count_curve`): for exchangeable priors (weight
  depends only on |b|; :meth:`~gce.hypotheses.Hypothesis.log_size_weights`)
  and every database running the same invocations, the likelihood of an output
  depends only on how many databases show each level. The symbols 0 and 3 of
  the canonical pair (the delta mass) reveal membership outright and are kept
  as levels of their own; the rest is a sum over elementary symmetric
  polynomials, filled by a recursion in log space. "None vs at least one" over
  k = 1,000 databases is a polynomial sum.

The paper's averaging formula eps(p0, p1) = ln sum_i w_i e^{eps_i} (001, Sec.
V-B) is NOT used anywhere: it is unsound (docs/design.md, "Unsound formulas" gives two counterexamples,
reproduced in the tests with the exact numbers computed here).

What must never change: a curve returned here covers both directions (1) and
(2); ``exact`` is True only when every guarantee is fully described by its
canonical pair (pure, approximate, randomized response); otherwise (Laplace,
subsampled) the curve is still a valid upper bound through the guarantee's
(eps, delta) point.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import special

from ..constraints import ConstraintSet
from ..accounting import kinds
from ..accounting.curves import DiscreteLossCurve, PrivacyCurve
from ..errors import InvalidParameterError, NumericalLimitError, UnsupportedCombinationError
from ..distributions import Distribution
from ..hypotheses import SUPPORT_LIMIT, Explicit, Hypothesis
from ..model import Invocation
from ..validation import shown

__all__ = [
    "CompositeCurve",
    "DatabasePair",
    "database_pair",
    "exact_curve",
    "exact_count_curve",
    "exact_enumeration_curve",
    "EXACT_METHODS",
    "check_points",
    "ExactMethod",
    "ENUMERATION_CELL_LIMIT",
    "COUNT_LIMIT",
    "RECURSION_LIMIT",
]

#: Largest number of cells enumerated: (joint output levels) x (support sets of both hypotheses).
#: (Not :data:`gce.accounting.theorems.ENUMERATION_LIMIT`, which counts the joint outcomes of one composition.)
ENUMERATION_CELL_LIMIT = 2**24
#: Largest number of output classes (count vectors) the count-based method keeps.
COUNT_LIMIT = 2**23
#: Largest number of cells the count-based recursion fills (about 3e8 cells take 4 s).
RECURSION_LIMIT = 2**29
#: Entries per block when support sets are summed up in enumeration (memory bound).
_BLOCK = 2**20
#: Deviation of log v(s) from a line, relative to max |log v|, under which a size law counts as
#: geometric for the closed form. Uniform and equal-rate laws deviate by round-off only (< 3e-16).
_GEOMETRIC_TOLERANCE = 1e-14

#: Probability mass the count-based method may leave out, charged at infinite privacy loss in both
#: directions (so the curve stays an upper bound, above the exact one by at most this much in delta):
#: outcomes where more databases show the "surely absent" symbol than a Chernoff bound allows.
COUNT_TAIL = 2.0**-1000
#: Largest joint level count (product of count + 1 over a database's guarantees) merged per database.
LEVEL_LIMIT = 2**22

#: An (epsilon, delta) point guarantee.
_EpsDelta = tuple[float, float]


# ---------------------------------------------------------------------------
# The curve


class CompositeCurve(PrivacyCurve):
    """The exact two-sided privacy curve between two composite hypotheses.

    delta(eps) = max(forward, backward), where ``forward`` is 001 Def. 3
    eq. (1), sup_S E_{h0} Pr(V in S) - e^eps E_{h1} Pr(V in S), and
    ``backward`` is eq. (2). Each direction is the privacy-loss distribution
    of a pair of discrete distributions (:class:`~gce.accounting.curves.DiscreteLossCurve`),
    so delta(eps) and its inverse are exact (the inverse rounded up by 1e-12).

    Attributes
    ----------
    forward, backward : DiscreteLossCurve
        The two directions.
    method : str
        ``"exact-count"`` or ``"exact-enumeration"``.
    exact : bool
        True when the curve is the optimum over all mechanisms with the stated
        guarantees (every guarantee pure, approximate or randomized response);
        False when a concrete mechanism (Laplace, subsampled) was replaced by
        its (eps, delta) point, which is valid but may be loose.
    outcomes : int
        How many output classes the curve was computed from.
    """

    def __init__(self, forward: DiscreteLossCurve, backward: DiscreteLossCurve, *, method: str,
                 exact: bool, outcomes: int):
        self.forward = forward
        self.backward = backward
        self.method = method
        self.exact = exact
        self.outcomes = outcomes
        self.delta_floor = max(forward.delta_floor, backward.delta_floor)

    def _delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.maximum(self.forward._delta(eps), self.backward._delta(eps))

    def _epsilon(self, d: NDArray[np.float64]) -> NDArray[np.float64]:
        # max of two non-increasing curves: the smallest eps below both is the larger inverse.
        return np.maximum(self.forward._epsilon(d), self.backward._epsilon(d))

    def __repr__(self) -> str:
        return f"CompositeCurve(method={self.method!r}, exact={self.exact}, outcomes={self.outcomes})"


def _direction(log_p: NDArray[np.float64], log_q: NDArray[np.float64], unlisted: float = 0.0) -> DiscreteLossCurve:
    """sup_S P(S) - e^eps Q(S) for discrete P, Q given by log masses on common outcomes.

    ``unlisted`` is P's mass on outcomes not listed that Q cannot produce
    (infinite privacy loss).
    """
    both = np.isfinite(log_p) & np.isfinite(log_q)
    only_p = np.isfinite(log_p) & ~np.isfinite(log_q)
    infinite = float(np.exp(special.logsumexp(log_p[only_p]))) if only_p.any() else 0.0
    return DiscreteLossCurve(log_p[both] - log_q[both], log_p[both], infinite_mass=infinite + unlisted)


def _two_sided(log_p0: NDArray[np.float64], log_p1: NDArray[np.float64], *, method: str, exact: bool,
               backward_unlisted: float = 0.0, forward_unlisted: float = 0.0) -> CompositeCurve:
    """The curve of two mixtures given on common outcome classes (001, Def. 3, eqs. 1 and 2).

    ``backward_unlisted`` is h1's mass on outcome classes left out because h0
    cannot produce them; ``forward_unlisted`` h0's mass on classes left out
    (charged at infinite loss: an upper bound on their contribution).
    """
    forward = _direction(log_p0, log_p1, forward_unlisted)
    backward = _direction(log_p1, log_p0, backward_unlisted)
    return CompositeCurve(forward, backward, method=method, exact=exact, outcomes=int(log_p0.size))


# ---------------------------------------------------------------------------
# One database: its invocations merged into privacy-loss levels


@dataclass(frozen=True, eq=False)
class DatabasePair:
    """The joint output law of the invocations on one database, merged by likelihood ratio.

    Level ``l`` has probability ``exp(log_a[l])`` when the database does not
    hold the target's record and ``exp(log_b[l])`` when it does (002, eqs. 9-10
    for one invocation). Outputs with the same ratio are merged (the ratio is a
    sufficient statistic for every mixture over membership sets), so there are
    finitely many *finite* levels (both masses positive) plus at most one
    ``a_only`` level (some invocation output symbol 0: the record is surely
    absent) and one ``b_only`` level (symbol 3: surely present).

    Attributes
    ----------
    log_a, log_b : ndarray
        Finite levels, ordered by increasing ratio ``log_b - log_a``.
    log_a_only : float
        log probability of the a-only level without the record (``-inf`` if none).
    log_b_only : float
        log probability of the b-only level with the record (``-inf`` if none).
    """

    log_a: NDArray[np.float64]
    log_b: NDArray[np.float64]
    log_a_only: float
    log_b_only: float

    @property
    def levels(self) -> int:
        """Number of output levels, the delta levels included."""
        return self.log_a.size + int(self.log_a_only > -math.inf) + int(self.log_b_only > -math.inf)

    def swapped(self) -> "DatabasePair":
        """The pair with the roles of "absent" and "present" exchanged (complement of b)."""
        order = np.argsort(self.log_a - self.log_b, kind="stable")
        return DatabasePair(self.log_b[order], self.log_a[order], self.log_b_only, self.log_a_only)

    def all_levels(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(log_a, log_b) over every level, the a-only and b-only levels last."""
        log_a, log_b = [self.log_a], [self.log_b]
        if self.log_a_only > -math.inf:
            log_a.append(np.array([self.log_a_only]))
            log_b.append(np.array([-np.inf]))
        if self.log_b_only > -math.inf:
            log_a.append(np.array([-np.inf]))
            log_b.append(np.array([self.log_b_only]))
        return np.concatenate(log_a), np.concatenate(log_b)


def _log1mexp(x: float) -> float:
    """log(1 - e^x) for x <= 0, accurately (-inf at x = 0)."""
    if x == 0.0:
        return -math.inf
    return math.log(-math.expm1(x)) if x > -0.693 else math.log1p(-math.exp(x))


def database_pair(points: Sequence[tuple[float, float, int]]) -> DatabasePair:
    """Merge ``count`` canonical (eps, delta) pairs per entry into one :class:`DatabasePair`.

    For ``c`` copies of the canonical pair of (eps, delta) (002, eqs. 9-10), with
    s = log(1 + e^eps): no output 0 or 3 with probability (1 - delta)^c, and then
    ``l`` outputs "1" among the c with probability
    C(c, l) e^{eps (c - l)} / (1 + e^eps)^c without the record and
    C(c, l) e^{eps l} / (1 + e^eps)^c with it (ratio e^{eps (2l - c)}; 002 Thm.
    III.3). Any output 0 means "absent" for sure, any 3 "present"; both at once
    cannot happen. Distinct entries multiply.

    Parameters
    ----------
    points : sequence of (epsilon, delta, count)

    Returns
    -------
    DatabasePair

    Examples
    --------
    >>> pair = database_pair([(math.log(3), 0.1, 1)])
    >>> np.exp(pair.log_a).round(4).tolist(), np.exp(pair.log_b).round(4).tolist()
    ([0.675, 0.225], [0.225, 0.675])
    >>> round(math.exp(pair.log_a_only), 4), round(math.exp(pair.log_b_only), 4)
    (0.1, 0.1)
    """
    joint = math.prod(count + 1 for _, _, count in points)
    if joint > LEVEL_LIMIT:
        raise NumericalLimitError(
            f"exact: one database's {sum(c for _, _, c in points):,} invocations have {_format_count(joint)} "
            f"joint output levels, more than the limit {LEVEL_LIMIT:,}")
    log_a = np.zeros(1)
    log_b = np.zeros(1)
    log_none = 0.0  # log P(no symbol 0 / 3), the same with and without the record
    for eps, delta, count in points:
        l = np.arange(count + 1, dtype=float)
        log_binom = special.gammaln(count + 1.0) - special.gammaln(l + 1.0) - special.gammaln(count - l + 1.0)
        log_norm = count * np.logaddexp(0.0, eps)
        group_a = log_binom + (count - l) * eps - log_norm
        group_b = log_binom + l * eps - log_norm
        log_a = (log_a[:, None] + group_a[None, :]).ravel()
        log_b = (log_b[:, None] + group_b[None, :]).ravel()
        log_none += count * math.log1p(-delta)
    log_a, log_b = _merge_levels(log_a, log_b)
    log_delta_level = _log1mexp(log_none)  # P(some symbol 0) without, = P(some 3) with the record
    return DatabasePair(log_a + log_none, log_b + log_none, log_delta_level, log_delta_level)


def _format_count(count: int) -> str:
    """An exact integer for messages: ``1.73e+13``, or ``about 10^3010`` beyond floats."""
    if count.bit_length() < 1000:
        return f"{count:.3g}"
    return f"about 10^{int(count.bit_length() * math.log10(2.0))}"


def _merge_levels(
    log_a: NDArray[np.float64], log_b: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Merge finite levels with exactly equal likelihood ratio; order by increasing ratio."""
    ratio, inverse = np.unique(log_b - log_a, return_inverse=True)
    merged_a = np.full(ratio.size, -np.inf)
    merged_b = np.full(ratio.size, -np.inf)
    np.logaddexp.at(merged_a, inverse, log_a)
    np.logaddexp.at(merged_b, inverse, log_b)
    return merged_a, merged_b


# ---------------------------------------------------------------------------
# Inputs


def _as_hypothesis(value: object, field: str) -> Hypothesis:
    """A Hypothesis, or a Distribution as an explicit one; else InvalidParameterError naming ``field``."""
    if isinstance(value, Hypothesis):
        return value
    if isinstance(value, Distribution):
        return Explicit.of(value)
    raise InvalidParameterError(field, f"must be a Hypothesis or a Distribution, got {shown(value)}")


def _invocation_points(invocations: Sequence[Invocation], n: int) -> tuple[dict[int, Counter[_EpsDelta]], bool]:
    """(eps, delta) multiset per database, and whether every guarantee is canonical (exact)."""
    per_database: dict[int, Counter[_EpsDelta]] = {}
    exact = True
    for i, invocation in enumerate(invocations):
        if not isinstance(invocation, Invocation):
            raise InvalidParameterError(f"invocations[{i}]", f"must be an Invocation, got {shown(invocation)}")
        if invocation.database >= n:
            raise InvalidParameterError(
                f"invocations[{i}].database", f"database {invocation.database} is out of range [0, {n})"
            )
        point = kinds.point(invocation.guarantee)
        if point is None:
            raise UnsupportedCombinationError(
                f"invocations[{i}].mechanism: the exact composite-hypothesis curve needs an (epsilon, delta) "
                f"point guarantee (pure, approx, randomized_response, laplace, subsampled); "
                f"{type(invocation.guarantee).__name__} has only a curve"
            )
        exact = exact and kinds.is_canonical(invocation.guarantee)  # 002 Thm. II.5
        per_database.setdefault(invocation.database, Counter())[point] += invocation.repeat
    return per_database, exact


def check_points(invocations: Sequence[Invocation], n: int) -> bool:
    """Whether the curve of :func:`exact_curve` would be exact (every guarantee canonical: pure, approx,
    randomized response); raise UnsupportedCombinationError, naming the invocation, when one has no
    (eps, delta) point, so that no exact method applies (002 Thm. II.5: the canonical pair is the worst case)."""
    return _invocation_points(invocations, n)[1]


def _pair_of(counter: Counter[_EpsDelta]) -> DatabasePair:
    """The merged canonical levels of one database's (eps, delta) points (:func:`database_pair`)."""
    return database_pair(sorted((eps, delta, count) for (eps, delta), count in counter.items()))


# ---------------------------------------------------------------------------
# Enumeration


def _mixture_log_likelihood(
    members: NDArray[np.bool_], log_weights: NDArray[np.float64], pairs: Sequence[tuple[NDArray, NDArray]]
) -> NDArray[np.float64]:
    """log sum_b w(b) prod_i (B_i(y_i) if i in b else A_i(y_i)) over the joint levels y.

    ``members`` is (support sets) x (databases); ``pairs`` the per-database
    (log_a, log_b) over all levels. Sets are processed in blocks so that the
    (sets x outcomes) table stays below :data:`_BLOCK` entries.
    """
    outcomes = math.prod(a.size for a, _ in pairs)
    block = max(1, _BLOCK // max(outcomes, 1))
    total = np.full(outcomes, -np.inf)
    for start in range(0, members.shape[0], block):
        rows = members[start:start + block]
        table = log_weights[start:start + block, None]
        for i, (log_a, log_b) in enumerate(pairs):
            factor = np.where(rows[:, i:i + 1], log_b[None, :], log_a[None, :])
            table = (table[:, :, None] + factor[:, None, :]).reshape(rows.shape[0], -1)
        peak = table.max(axis=0)
        safe = np.where(np.isfinite(peak), peak, 0.0)
        with np.errstate(divide="ignore"):
            block_sum = safe + np.log(np.exp(table - safe).sum(axis=0))
        total = np.logaddexp(total, np.where(np.isfinite(peak), block_sum, -np.inf))
    return total


def _restricted(distribution: Distribution, relevant: Sequence[int]) -> tuple[NDArray[np.bool_], NDArray[np.float64]]:
    """The support restricted to the relevant databases, equal restrictions merged."""
    position = {database: j for j, database in enumerate(relevant)}
    merged: dict[frozenset[int], list[float]] = {}
    for members, weight in distribution:
        merged.setdefault(frozenset(position[i] for i in members if i in position), []).append(weight)
    table = np.zeros((len(merged), len(relevant)), dtype=bool)
    for row, members in enumerate(merged):
        table[row, list(members)] = True
    log_weights = np.log([math.fsum(w) for w in merged.values()])
    return table, log_weights


def exact_enumeration_curve(
    h0: Hypothesis | Distribution,
    h1: Hypothesis | Distribution,
    invocations: Sequence[Invocation],
    constraints: ConstraintSet,
    *,
    limit: int = ENUMERATION_CELL_LIMIT,
    support_limit: int = SUPPORT_LIMIT,
) -> CompositeCurve:
    """Exact curve by enumerating the joint privacy-loss levels of the databases that matter.

    Only databases that run an invocation and whose membership differs between
    some support sets matter (the others' outputs have the same law under both
    hypotheses and factor out). Each keeps its merged levels
    (:func:`database_pair`); both mixtures are evaluated on the product of the
    levels and the two hockey-stick divergences taken (001, Def. 3).

    Parameters
    ----------
    h0, h1 : Hypothesis or Distribution
    invocations : sequence of Invocation
        Each with an (eps, delta) point guarantee (:func:`~gce.accounting.kinds.point`).
    constraints : ConstraintSet
        The allowed sets (and ``n``).
    limit : int
        Largest (joint levels) x (support sets of both hypotheses).
    support_limit : int
        Largest support of each hypothesis.

    Returns
    -------
    CompositeCurve
        ``method = "exact-enumeration"``.

    Raises
    ------
    UnsupportedCombinationError
        If an invocation has no (eps, delta) point (zCDP, GDP, Gaussian).
    NumericalLimitError
        If the enumeration exceeds ``limit`` or a support ``support_limit``.

    References
    ----------
    001, Def. 3 and Sec. V-B; 002, eqs. 9-10 and Thm. II.5 (the canonical pair
    dominates every (eps, delta)-DP mechanism).

    Examples
    --------
    The first counterexample of docs/design.md, "Unsound formulas" to 001's averaging formula: the formula
    claims (4.3136, 0.05), the exact delta there is 0.0743.

    >>> from gce.hypotheses import Point
    >>> from gce.accounting.guarantees import ApproxDP, PureDP
    >>> invocations = [Invocation(0, ApproxDP(0.0, 0.1)), Invocation(1, PureDP(5.0))]
    >>> h1 = Distribution.of([({0}, 0.5), ({1}, 0.5)])
    >>> curve = exact_enumeration_curve(Point(()), h1, invocations, ConstraintSet(2))
    >>> round(curve.delta(4.3136), 4)
    0.0743
    """
    n = constraints.n
    d0 = _as_hypothesis(h0, "h0").distribution(constraints, support_limit)
    d1 = _as_hypothesis(h1, "h1").distribution(constraints, support_limit)
    per_database, exact = _invocation_points(invocations, n)
    sets = d0.sets + d1.sets
    varying = frozenset().union(*sets) - frozenset.intersection(*sets)
    relevant = sorted(varying & per_database.keys())
    pairs = []
    outcomes = 1
    for i in relevant:  # refused as soon as the product of the level counts passes the limit
        pairs.append(_pair_of(per_database[i]).all_levels())
        outcomes *= pairs[-1][0].size
        if outcomes * (len(d0) + len(d1)) > limit:
            raise NumericalLimitError(
                f"exact enumeration: at least {_format_count(outcomes)} joint output levels on {len(relevant)} "
                f"databases times {len(d0) + len(d1)} support sets exceeds the limit {limit:.3g}"
            )
    members0, log_w0 = _restricted(d0, relevant)
    members1, log_w1 = _restricted(d1, relevant)
    log_p0 = _mixture_log_likelihood(members0, log_w0, pairs)
    log_p1 = _mixture_log_likelihood(members1, log_w1, pairs)
    return _two_sided(log_p0, log_p1, method="exact-enumeration", exact=exact)


# ---------------------------------------------------------------------------
# Counting: exchangeable priors, identical invocations on every database


def _log_comb(n: int, s: NDArray[np.float64]) -> NDArray[np.float64]:
    """log C(n, s), elementwise, by log-gamma (as 002 Thm. III.3 is evaluated in log space)."""
    return special.gammaln(n + 1.0) - special.gammaln(s + 1.0) - special.gammaln(n - s + 1.0)


def _shift(table: NDArray[np.float64], log_rho: float) -> NDArray[np.float64]:
    """One database more at a level of ratio rho: E(m + e_j; k) = E(m; k) + rho E(m; k + 1)."""
    return np.logaddexp(table[..., :-1], log_rho + table[..., 1:])


def _triangle(base: NDArray[np.float64], log_rho: float) -> NDArray[np.float64]:
    """table[h, m, k] = log E(prefix + m at this level; k) for m + k <= R, from base[h, k] = log E(prefix; k)."""
    hypotheses, size = base.shape
    table = np.full((hypotheses, size, size), -np.inf)
    current = base
    for m in range(size):
        table[:, m, : size - m] = current
        if m < size - 1:
            current = _shift(current, log_rho)
    return table


def _symmetric_sums(
    log_v: NDArray[np.float64], log_rho: NDArray[np.float64]
) -> Iterator[tuple[tuple[int, ...], NDArray[np.float64]]]:
    """Elementary-symmetric sums of the finite levels, for every count vector.

    For hypotheses with per-set weight v(s) (a set of size s), and m_j
    databases at finite level j (ratio rho_j = B_j / A_j),

        E(m; k) = sum_{t <= m} prod_j C(m_j, t_j) rho_j^{t_j} v(|t| + k),

    the likelihood ratio of the outcome against "nobody holds the record",
    with k further databases surely holding it (the b-only level). It obeys
    E(m + e_j; k) = E(m; k) + rho_j E(m; k + 1) from E(0; k) = v(k): one
    database more is either outside b or inside it. Yields, for every count
    vector of the levels but the last, ``(prefix, table)`` with
    ``table[h, m_last, k]`` valid where ``m_last + k <= n - sum(prefix)``.
    """
    levels = log_rho.size

    def walk(base: NDArray[np.float64], level: int, prefix: tuple[int, ...]):
        """Fill the recursion level by level; ``prefix`` holds the counts of the levels already fixed."""
        size = base.shape[-1]
        if level == levels - 1:
            yield prefix, _triangle(base, float(log_rho[level]))
        elif level == levels - 2:
            table = _triangle(base, float(log_rho[levels - 1]))
            for m in range(size):
                yield prefix + (m,), table
                if m < size - 1:
                    table = _shift(table, float(log_rho[level]))[:, :-1, :]
        else:
            current = base
            for m in range(size):
                yield from walk(current, level + 1, prefix + (m,))
                if m < size - 1:
                    current = _shift(current, float(log_rho[level]))

    yield from walk(log_v, 0, ())


def _geometric_law(log_v: NDArray[np.float64]) -> tuple[int, float, float] | None:
    """(lo, log C, log q) when v(s) = C q^s for lo <= s <= n (lo in {0, 1}) and 0 below, else None."""
    finite = np.flatnonzero(np.isfinite(log_v))
    n = log_v.size - 1
    if finite.size < 2 or finite[0] > 1 or finite[-1] != n or finite.size != n + 1 - finite[0]:
        return None
    lo = int(finite[0])
    values = log_v[lo:]
    log_q = (values[-1] - values[0]) / (n - lo)
    log_c = values[0] - lo * log_q
    fitted = log_c + log_q * np.arange(lo, n + 1)
    if np.max(np.abs(fitted - values)) > _GEOMETRIC_TOLERANCE * max(1.0, np.max(np.abs(values))):
        return None
    return lo, float(log_c), float(log_q)


def _count_classes(n: int, levels: int) -> int:
    """Count vectors of ``levels`` non-negative entries summing to n (0 when n < 0)."""
    return math.comb(n + levels - 1, levels - 1) if n >= 0 else 0


def _a_only_cutoff(n: int, log_p: float, tail: float | None = None) -> tuple[int, float]:
    """(K, bound): P(Bin(n, p) > K) <= bound <= ``tail``, with K as small as the Chernoff bound allows.

    The number of databases at the a-only level ("surely absent") is Bin(n, p)
    under the point mass at the empty set and stochastically smaller under any
    prior (databases holding the record never show it), so outcomes with more
    than K of them carry at most ``bound`` under both hypotheses. Chernoff:
    P(X >= a n) <= exp(-n KL(a || p)) for a > p. ``K = n`` (bound 0) when no
    cutoff below n is certified.
    """
    p = math.exp(log_p)
    log_tail = math.log(COUNT_TAIL if tail is None else tail)

    def log_bound(k: int) -> float:  # log of the bound on P(X >= k + 1)
        """Chernoff: log of the bound on P(Bin(n, p) >= k + 1)."""
        a = (k + 1) / n
        if a <= p:
            return 0.0
        if a >= 1.0:
            return n * log_p
        return -n * (a * (math.log(a) - log_p) + (1.0 - a) * (math.log1p(-a) - math.log1p(-p)))

    if n == 0 or log_bound(n - 1) > log_tail:
        return n, 0.0
    lo, hi = min(int(n * p), n - 1), n - 1  # log_bound(hi) <= log_tail
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if log_bound(mid) <= log_tail:
            hi = mid
        else:
            lo = mid
    k = lo if log_bound(lo) <= log_tail else hi
    return k, math.exp(log_bound(k))


@dataclass(frozen=True, eq=False)
class _CountProblem:
    """An exchangeable instance after normalisation: h0 and h1 size laws and one database pair."""

    n: int
    pair: DatabasePair
    log_w0: NDArray[np.float64]
    log_w1: NDArray[np.float64]

    @property
    def h0_is_empty_point(self) -> bool:
        """Whether h0 is the point mass at the empty set (001 Sec. V-B: "none")."""
        return _is_point(self.log_w0, 0)

    def log_v(self, log_w: NDArray[np.float64]) -> NDArray[np.float64]:
        """Per-set weight of a set of size s: w(s) / C(n, s)."""
        return log_w - _log_comb(self.n, np.arange(self.n + 1, dtype=float))


def _is_point(log_w: NDArray[np.float64], size: int) -> bool:
    """Whether a size law puts all its weight on one size."""
    return bool(log_w[size] == 0.0 and np.count_nonzero(np.isfinite(log_w)) == 1)


def _normalised_problem(n: int, pair: DatabasePair, log_w0: NDArray, log_w1: NDArray) -> _CountProblem:
    """Put a point mass at the empty set (if either side is one, or at the full set) in h0.

    The curve is symmetric in (h0, h1) (both directions are taken), and
    complementing every set exchanges the roles of the two sides of each
    database's pair (:meth:`DatabasePair.swapped`) and reverses the size laws.
    """
    def point_at(log_w: NDArray, s: int) -> bool:
        """Whether the size law ``log_w`` is the point mass at size ``s``."""
        return _is_point(log_w, s)

    for first, second in ((log_w0, log_w1), (log_w1, log_w0)):
        if point_at(first, 0):
            return _CountProblem(n, pair, first, second)
    for first, second in ((log_w0, log_w1), (log_w1, log_w0)):
        if point_at(first, n):
            return _CountProblem(n, pair.swapped(), first[::-1].copy(), second[::-1].copy())
    return _CountProblem(n, pair, log_w0, log_w1)


def exact_count_curve(
    h0: Hypothesis | Distribution,
    h1: Hypothesis | Distribution,
    invocations: Sequence[Invocation],
    constraints: ConstraintSet,
    *,
    limit: int = COUNT_LIMIT,
    recursion_limit: int = RECURSION_LIMIT,
) -> CompositeCurve:
    """Exact curve for exchangeable priors when every database runs the same invocations.

    With size laws w0, w1 (:meth:`~gce.hypotheses.Hypothesis.log_size_weights`)
    and one :class:`DatabasePair` shared by all n databases, an outcome is
    summarised by its count vector: m_a databases at the a-only level (surely
    absent), m_j at each finite level j, m_b at the b-only level (surely
    present). Its probability under a hypothesis is

        multinomial(n; m) * A_only^{m_a} * prod_j A_j^{m_j} * B_only^{m_b} * E(m; m_b)

    with E the elementary-symmetric sum of :func:`_symmetric_sums`; only E
    depends on the hypothesis. When h0 is the point mass at the empty set
    (001, Sec. V-B: "none" against "at least one"), outcomes with m_b > 0 are
    impossible under h0 and carry infinite privacy loss in direction (2):
    only their total mass under h1, 1 - sum_s w1(s) (1 - B_only)^s, is needed,
    and the outcome classes are the (m_a, m_1, .., m_J): for one invocation per
    database, about n^2 / 2. When h1's per-set weight is geometric in the size
    (uniform over all sets of size >= 0 or >= 1; equal rates) E has the closed
    form C (prod_j (1 + q rho_j)^{m_j} - [size 0 excluded]); otherwise E is
    filled by the recursion, about n^3 / 3 log-space additions.

    Databases that run no invocation are summed out of the priors first (the
    restriction of an exchangeable prior to the queried databases is
    exchangeable, with a hypergeometric size law).

    Parameters
    ----------
    h0, h1 : Hypothesis or Distribution
        Exchangeable priors (``log_size_weights`` not None).
    invocations : sequence of Invocation
        Every queried database must carry the same multiset of (eps, delta) points.
    constraints : ConstraintSet
        No constraints, or cardinality bounds over all databases.
    limit : int
        Largest number of outcome classes kept.
    recursion_limit : int
        Largest number of cells the recursion fills.

    Returns
    -------
    CompositeCurve
        ``method = "exact-count"``.

    Raises
    ------
    UnsupportedCombinationError
        If a prior is not exchangeable, the databases run different
        invocations, or an invocation has no (eps, delta) point.
    NumericalLimitError
        If the classes or the recursion exceed their limits.

    References
    ----------
    001, Sec. III-A (Examples 1-2), Sec. V-B (Thm. 3, Cor. 7: the same pair,
    bounded there and computed exactly here); 002, eqs. 9-10 and Thm. III.3.

    Examples
    --------
    "None" against "at least one" of 1,000 databases, each running one
    (0.1, 1e-10)-DP mechanism (001 Cor. 7 gives eps = 51.25 at delta = 5e-8):

    >>> from gce.hypotheses import Point, Uniform
    >>> from gce.accounting.guarantees import ApproxDP
    >>> invocations = [Invocation(i, ApproxDP(0.1, 1e-10)) for i in range(1000)]
    >>> curve = exact_count_curve(Point(()), Uniform(min_members=1), invocations, ConstraintSet(1000))
    >>> curve.method, round(curve.epsilon(1e-6), 4), round(curve.epsilon(5e-8), 2)
    ('exact-count', 8.3126, 12.58)
    """
    n = constraints.n
    hypotheses = (_as_hypothesis(h0, "h0"), _as_hypothesis(h1, "h1"))
    laws = [h.log_size_weights(constraints) for h in hypotheses]
    for name, h, law in zip(("h0", "h1"), hypotheses, laws):
        if law is None:
            raise UnsupportedCombinationError(
                f"{name}: the count-based method needs an exchangeable prior (weight depending only on the "
                f"set's size, allowed sets all sets of allowed sizes); {h.describe()} is not one here"
            )
    per_database, exact = _invocation_points(invocations, n)
    if not per_database:
        zero = DiscreteLossCurve([], [])
        return CompositeCurve(zero, zero, method="exact-count", exact=exact, outcomes=1)
    shared = next(iter(per_database.values()))
    if any(counter != shared for counter in per_database.values()):
        raise UnsupportedCombinationError(
            "invocations: the count-based method needs every database that is queried to run the same "
            "invocations"
        )
    r = len(per_database)  # databases never queried are summed out of the priors
    problem = _normalised_problem(r, _pair_of(shared), _marginal(laws[0], r), _marginal(laws[1], r))
    return _count_curve(problem, exact=exact, limit=limit, recursion_limit=recursion_limit)


def _marginal(log_w: NDArray[np.float64], r: int) -> NDArray[np.float64]:
    """The size law of b restricted to r of the n databases, for an exchangeable prior.

    Given |b| = s, |b & R| is hypergeometric: P(j | s) = C(r, j) C(n - r, s - j) / C(n, s).
    Unqueried databases produce no output, so the curve depends on the prior
    only through this marginal (which is again exchangeable).
    """
    n = log_w.size - 1
    if r == n:
        return log_w
    j = np.arange(r + 1, dtype=float)[:, None]
    s = np.arange(n + 1, dtype=float)[None, :]
    inside = (s - j >= 0) & (s - j <= n - r)
    with np.errstate(invalid="ignore"):
        log_p = _log_comb(r, j) + _log_comb(n - r, np.where(inside, s - j, 0.0)) - _log_comb(n, s)
    return special.logsumexp(np.where(inside & np.isfinite(log_w)[None, :], log_p + log_w[None, :], -np.inf), axis=1)


def _class_log_probability(n: int, counts: Sequence[NDArray], log_masses: Sequence[float]) -> NDArray[np.float64]:
    """log multinomial(n; counts) + sum_j counts_j log mass_j (0 * -inf read as 0)."""
    out = special.gammaln(n + 1.0) * np.ones_like(counts[0], dtype=float)
    for m, log_mass in zip(counts, log_masses):
        out = out - special.gammaln(m + 1.0)
        if log_mass == -math.inf:
            out = np.where(m > 0, -np.inf, out)
        else:
            out = out + m * log_mass
    return out


def _evaluate_batch(n: int, pair: DatabasePair, batch: list[tuple[list[NDArray], NDArray]],
                    log_p0_parts: list[NDArray], log_p1_parts: list[NDArray]) -> None:
    """Class probabilities of a batch of count vectors (a-only count first) under h0 = {empty set} and h1."""
    if not batch:
        return
    counts = [np.concatenate(column) for column in zip(*(c for c, _ in batch))]
    common = _class_log_probability(n, counts, [pair.log_a_only, *pair.log_a])
    log_p0_parts.append(common)
    log_p1_parts.append(common + np.concatenate([log_e1 for _, log_e1 in batch]))


def _count_curve(problem: _CountProblem, *, exact: bool, limit: int, recursion_limit: int) -> CompositeCurve:
    """The two-sided curve of a normalised count problem, by summing over outcome classes (count vectors).

    The likelihood of a class under each hypothesis is its multinomial weight
    times the elementary-symmetric sum E of :func:`exact_count_curve`; E comes
    from the closed form when h0 is the empty point and h1's size law is
    geometric (:func:`_geometric_tables`), else from the recursion
    (:func:`_symmetric_sums`). With h0 the empty point, classes where more
    databases show the a-only symbol than a Chernoff cutoff allows
    (:func:`_a_only_cutoff`) are left out and their mass, at most
    :data:`COUNT_TAIL`, is charged at infinite loss in both directions; classes
    with a b-only symbol are impossible under h0 and only their total mass
    under h1 is kept.

    Raises
    ------
    NumericalLimitError
        If the classes exceed ``limit`` or the recursion ``recursion_limit`` cells.

    References
    ----------
    001, Def. 3 and Sec. V-B; 002, eqs. 9-10 (the canonical pair whose symbols are counted).
    """
    n, pair = problem.n, problem.pair
    log_rho = pair.log_b - pair.log_a
    levels = log_rho.size
    has_a, has_b = pair.log_a_only > -math.inf, pair.log_b_only > -math.inf
    empty_point = problem.h0_is_empty_point
    keep_b_only = has_b and not empty_point
    cutoff, tail = _a_only_cutoff(n, pair.log_a_only) if has_a and empty_point else (n if has_a else 0, 0.0)
    classes = _count_classes(n, levels + int(has_a) + int(keep_b_only))
    if empty_point and has_a and cutoff < n:  # count vectors with at most ``cutoff`` databases at the a-only level
        classes -= _count_classes(n - cutoff - 1, levels + 1)
    if classes > limit:
        raise NumericalLimitError(
            f"exact count: {_format_count(classes)} outcome classes ({levels} finite levels per database, n = {n}) "
            f"exceed the limit {limit:.3g}"
        )
    log_v1 = problem.log_v(problem.log_w1)
    geometric = _geometric_law(log_v1) if empty_point else None
    if geometric is not None and not np.all(np.logaddexp(0.0, geometric[2] + log_rho) > 0.0):
        geometric = None  # log(1 + q rho) underflows: the closed form would lose classes; recurse instead
    if geometric is None:
        cells = 2 * _count_classes(n, levels + 2)
        if cells > recursion_limit:
            raise NumericalLimitError(
                f"exact count: the symmetric-sum recursion needs {_format_count(cells)} cells ({levels} finite "
                f"levels per "
                f"database, n = {n}), more than the limit {recursion_limit:.3g}"
            )
    log_p0_parts, log_p1_parts = [], []
    if empty_point:
        # h0 = {empty set}: E0(m; 0) = v0(0) = 1, outcomes with b-only levels are impossible under h0.
        # Classes with more than ``cutoff`` databases at the a-only level are left out (mass <= tail).
        if geometric is not None:
            tables = _geometric_tables(n, geometric, log_rho, cutoff)
        else:
            tables = ((prefix, max(n - sum(prefix) - cutoff, 0), table[0, max(n - sum(prefix) - cutoff, 0):, 0])
                      for prefix, table in _symmetric_sums(log_v1[None, :], log_rho))
        batch: list[tuple[list[NDArray], NDArray]] = []  # count vectors, evaluated _BLOCK classes at a time
        size = 0
        for prefix, first, log_e1 in tables:
            rest = n - sum(prefix)
            m_last = np.arange(first, rest + 1)
            batch.append(([rest - m_last] + [np.full(m_last.size, c) for c in prefix] + [m_last], log_e1))
            size += m_last.size
            if size >= _BLOCK:
                _evaluate_batch(n, pair, batch, log_p0_parts, log_p1_parts)
                batch, size = [], 0
        _evaluate_batch(n, pair, batch, log_p0_parts, log_p1_parts)
        backward_infinite = 0.0
        if has_b:  # P_{h1}(some database surely holds the record) = 1 - sum_s w1(s) (1 - B_only)^s
            sizes = np.arange(n + 1, dtype=float)
            log_none = special.logsumexp(problem.log_w1 + sizes * _log1mexp(pair.log_b_only))
            backward_infinite = -math.expm1(min(log_none, 0.0))
        return _two_sided(np.concatenate(log_p0_parts), np.concatenate(log_p1_parts), method="exact-count",
                          exact=exact, backward_unlisted=min(backward_infinite + tail, 1.0), forward_unlisted=tail)
    log_v = np.stack([problem.log_v(problem.log_w0), log_v1])
    for prefix, table in _symmetric_sums(log_v, log_rho):
        rest = n - sum(prefix)
        m_last, k = np.meshgrid(np.arange(rest + 1), np.arange(rest + 1), indexing="ij")
        m_a = rest - m_last - k
        valid = m_a >= 0
        if not has_a:
            valid &= m_a == 0
        if not has_b:
            valid &= k == 0
        counts = [m_a[valid]] + [np.full(valid.sum(), c) for c in prefix] + [m_last[valid], k[valid]]
        common = _class_log_probability(n, counts, [pair.log_a_only, *pair.log_a, pair.log_b_only])
        log_p0_parts.append(common + table[0][valid])
        log_p1_parts.append(common + table[1][valid])
    return _two_sided(np.concatenate(log_p0_parts), np.concatenate(log_p1_parts), method="exact-count",
                      exact=exact)


def _geometric_tables(
    n: int, law: tuple[int, float, float], log_rho: NDArray[np.float64], cutoff: int
) -> Iterator[tuple[tuple[int, ...], int, NDArray[np.float64]]]:
    """E1(m; 0) in closed form when v1(s) = C q^s for s >= lo (lo in {0, 1}), for every count vector.

    sum_{s >= lo} C q^s e_s(rho's) = C (prod_j (1 + q rho_j)^{m_j} - [lo = 1]):
    the generating function of the elementary symmetric polynomials, at q.
    Yields ``(prefix, first, log E1 over m_last = first..rest)`` like the
    recursion's k = 0 column, where ``first = max(rest - cutoff, 0)`` keeps at
    most ``cutoff`` databases at the a-only level.
    """
    lo, log_c, log_q = law
    log_factor = np.logaddexp(0.0, log_q + log_rho)  # log(1 + q rho_j)

    def walk(level: int, prefix: tuple[int, ...], log_s: float, rest: int):
        """Yield the tables of every count vector extending ``prefix`` with ``rest`` databases left."""
        if level == log_rho.size - 1:
            first = max(rest - cutoff, 0)
            total = log_s + np.arange(first, rest + 1) * log_factor[level]
            if lo == 1:
                with np.errstate(divide="ignore"):
                    total = total + np.log(-np.expm1(-total))  # log(e^S - 1), -inf at S = 0
            yield prefix, first, log_c + total
            return
        for m in range(rest + 1):
            yield from walk(level + 1, prefix + (m,), log_s + m * log_factor[level], rest - m)

    yield from walk(0, (), 0.0, n)


# ---------------------------------------------------------------------------
# The entry point


def exact_curve(
    h0: Hypothesis | Distribution,
    h1: Hypothesis | Distribution,
    invocations: Sequence[Invocation],
    constraints: ConstraintSet,
) -> CompositeCurve:
    """The exact privacy curve between two composite hypotheses (001, Def. 3).

    Chooses the count-based method (:func:`exact_count_curve`) when both priors
    are exchangeable and every database runs the same invocations, and
    enumeration (:func:`exact_enumeration_curve`) otherwise or when counting is
    over its limits: the first method of :data:`EXACT_METHODS` that does not
    decline. The method used is the curve's ``method``.

    Parameters
    ----------
    h0, h1 : Hypothesis or Distribution
        The adversary's two hypotheses over membership sets.
    invocations : sequence of Invocation
        Each with an (eps, delta) point guarantee.
    constraints : ConstraintSet
        The allowed membership sets and ``n``.

    Returns
    -------
    CompositeCurve
        delta(eps) and epsilon(delta), both directions of Def. 3.

    Raises
    ------
    UnsupportedCombinationError
        If an invocation has no (eps, delta) point (zCDP, GDP, Gaussian).
    NumericalLimitError
        If neither method fits its limits (the message gives both reasons).
    InvalidParameterError, InfeasibleConstraintsError
        From the hypotheses (a forbidden set, an empty support, ...).

    References
    ----------
    001, Def. 3, Sec. III-A, Sec. V-B; 002, eqs. 9-10; docs/design.md, "The canonical pair makes brute force possible".

    Examples
    --------
    The second counterexample of docs/design.md, "Unsound formulas": 001's averaging formula claims pure DP
    at eps = ln((e^5 + 1) / 2) = 4.3136; the exact delta there is 0.243.

    >>> from gce.accounting.guarantees import RandomizedResponse
    >>> h0 = Distribution.of([({0}, 0.5), ({1, 2}, 0.5)])
    >>> h1 = Distribution.of([(set(), 0.5), ({1, 2}, 0.5)])
    >>> invocations = [Invocation(i, RandomizedResponse(5.0)) for i in range(3)]
    >>> curve = exact_curve(h0, h1, invocations, ConstraintSet(3))
    >>> curve.method, round(curve.delta(4.3136), 3)
    ('exact-enumeration', 0.243)
    """
    _invocation_points(invocations, constraints.n)  # unsupported guarantees fail here, for both methods
    reasons = []
    for method in EXACT_METHODS:
        try:
            return method.curve(h0, h1, invocations, constraints)
        except method.declines as error:
            reasons.append(f"{method.label}: {error}")
    raise NumericalLimitError("; ".join(reasons))


@dataclass(frozen=True)
class ExactMethod:
    """One way to compute the exact curve, tried in the order of :data:`EXACT_METHODS`.

    Attributes
    ----------
    name : str
        The curve's ``method`` (the name a report shows).
    label : str
        How the method is named when it declines (the reasons :func:`exact_curve` joins).
    curve : callable
        ``curve(h0, h1, invocations, constraints) -> CompositeCurve``.
    declines : tuple of exception types
        The errors by which it says it does not apply (the next method is then tried);
        other errors propagate.
    """

    name: str
    label: str
    curve: Callable[..., CompositeCurve]
    declines: tuple[type[Exception], ...]


#: The exact methods, cheapest first: counting for exchangeable priors, enumeration of small supports.
EXACT_METHODS: tuple[ExactMethod, ...] = (
    ExactMethod("exact-count", "count-based", exact_count_curve, (UnsupportedCombinationError, NumericalLimitError)),
    ExactMethod("exact-enumeration", "enumeration", exact_enumeration_curve, (NumericalLimitError,)),
)

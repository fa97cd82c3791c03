"""Composite hypotheses through joint convexity: the coupling LP (001, Sec. V-B).

001 Sec. V-B ("Computing an HDP guarantee") refines the supports of two
composite hypotheses h0 and h1 into matched tuples (Alg. 3, App. A) -- a
*coupling* pi of h0 and h1 -- and then averages per-pair guarantees as
eps = ln sum_i w_i e^{eps_i}, delta = sum_i w_i delta_i. That average is
unsound (docs/design.md, "Unsound formulas"; it is reproduced, labelled, in
:mod:`gce.priors.reproductions`). What holds is the joint convexity of the
hockey-stick divergence H_{e^eps}(P || Q) = sup_S P(S) - e^eps Q(S):

    H(sum pi(b0, b1) P_b0 || sum pi(b0, b1) P_b1) <= sum pi(b0, b1) H(P_b0 || P_b1),

with every pair's divergence taken at the SAME eps. Here P_b is the view of
the experiment when the target's record is in the databases of b; the
invocations on databases where b0 and b1 agree do not help the adversary (001
Sec. V-B), so H(P_b0 || P_b1) <= delta_{b0,b1}(eps), the profile of the
composition of the invocations on the databases in b0 XOR b1
(:func:`gce.accounting.theorems.compose`). Hence, for every coupling pi of h0 and h1,

    delta(eps) <= sum_{(b0, b1)} pi(b0, b1) delta_{b0,b1}(eps),

in both directions, and the best coupling is a transport linear program
(:func:`coupling_delta`, :class:`CouplingCurve`).

The same inequality for one particular decomposition is the subsampling route
(:mod:`gce.priors.subsampling`); the grid and chord utilities both share are in
:mod:`gce.priors.grid`. The coupling returns upper bounds, never exact values
(except a coupling of two point masses, which is :func:`gce.accounting.theorems.compose`
itself).

References
----------
001: Hartmann, Bindschaedler, West, "On the Choice of Databases in Differential
Privacy Composition", Sec. V-B, Thm. 3, App. A (Alg. 3), App. C.
BBG18: Balle, Barthe, Gaboardi, "Privacy Amplification by Subsampling" (Thm. 8;
hockey-stick divergences are f-divergences, hence jointly convex, Sec. 3).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..accounting.curves import PrivacyCurve
from ..accounting.guarantees import Guarantee
from ..accounting.pld import one_directional
from .. import effort
from ..accounting.theorems import compose
from ..errors import InvalidParameterError
from ..validation import is_integer, shown
from ..model import Invocation, per_database_multisets
from ..distributions import Distribution
from .grid import (
    LOCAL_POINTS,
    TABLE_GRID,
    _check_epsilon,
    _check_invocations,
    _chord,
    _crossing,
    _first_below,
    _sorted_call,
    _split_curve,
)

__all__ = ["CoupledPair", "CouplingResult", "CouplingCurve", "coupling_delta"]

#: Default cap on distinct compositions: beyond it, counts are rounded up (sound, by monotonicity).
MAX_COMPOSITIONS = 512
#: Ratios of the ladders counts are rounded up to when the cap is exceeded, finest first.
_LADDERS = (1.1, 1.25, 1.5, 2.0, 3.0, 4.0, 8.0, 16.0)


# ---------------------------------------------------------------------------
# Shared helpers


def _as_distribution(h: Distribution | Iterable[tuple[Iterable[int], float]], name: str) -> Distribution:
    """A hypothesis given as a Distribution or as (members, weight) pairs, as a Distribution; errors name ``name``."""
    if isinstance(h, Distribution):
        return h
    try:
        return Distribution.of(h)
    except InvalidParameterError as err:
        raise err.within(name) from None


def _normalised(h: Distribution) -> NDArray[np.float64]:
    """The weights as an array summing to 1 (Distribution allows a 1e-9 slack)."""
    w = np.asarray(h.weights, dtype=float)
    return w / math.fsum(w)


def _round_up(counts: NDArray[np.int64], ratio: float) -> NDArray[np.int64]:
    """Each count rounded up to the ladder 0, 1, ceil(ratio^j), capped at its column's maximum.

    Every rounded count lies between the count and a count some pair has, so
    the rounded multiset contains the pair's: sound by monotonicity.
    """
    top = int(counts.max(initial=0))
    ladder = [0, 1]
    while ladder[-1] < top:
        ladder.append(max(ladder[-1] + 1, math.ceil(ladder[-1] * ratio)))
    ladder = np.asarray(ladder, dtype=np.int64)
    return np.minimum(ladder[np.searchsorted(ladder, counts, side="left")], counts.max(axis=0, initial=0))


# ---------------------------------------------------------------------------
# Pair profiles


class _PairProfiles:
    """Upper bounds delta_{b0,b1}(eps) for every pair (b0 in supp h0, b1 in supp h1).

    Databases with the same invocations are interchangeable, so a pair's
    differing multiset is fixed by how many databases of each such class lie in
    b0 \\ b1 and in b1 \\ b0. Those counts come from one matrix product per class;
    pairs with equal counts share one composition (with identical guarantees
    only |b0 XOR b1| times the repeats matters).

    More than ``max_compositions`` distinct count vectors are merged by rounding
    counts *up* on a ladder: adding invocations never lowers the true profile
    (the adversary may ignore outputs), so the composition of the larger
    multiset bounds the smaller one's profile.

    When both b0 \\ b1 and b1 \\ b0 hold asymmetric guarantees (subsampled Gaussian
    or Laplace, whose curves from dp-accounting cover the all-"remove" and
    all-"add" compositions but not a mixture of the two), the two blocks are
    composed separately and joined by basic composition (:func:`_split_curve`).
    """

    def __init__(self, h0: Distribution, h1: Distribution, invocations: tuple[Invocation, ...],
                 max_compositions: int | None = MAX_COMPOSITIONS, rtol: float = effort.DEFAULT_RTOL):
        self.h0, self.h1 = h0, h1
        self.rtol = float(rtol)
        self.w0, self.w1 = _normalised(h0), _normalised(h1)
        groups = per_database_multisets(invocations)
        databases = sorted(groups)
        classes: dict[frozenset, list[int]] = {}
        for d in databases:
            classes.setdefault(frozenset(groups[d]), []).append(d)
        self.signatures = list(classes)
        self.asymmetric = np.array([any(one_directional(g) for g, _ in sig) for sig in self.signatures], dtype=bool)
        column = {d: j for j, d in enumerate(databases)}
        m0, m1 = self._membership(h0, column), self._membership(h1, column)
        m, k = len(h0), len(h1)
        self.shape = (m, k)
        out0, out1 = [], []  # per class: (m, k) counts in b0 \ b1 and in b1 \ b0
        for members in classes.values():
            cols = [column[d] for d in members]
            a, b = m0[:, cols], m1[:, cols]
            both = (a @ b.T).toarray()  # sparse 0/1 rows: integer counts, exact
            out0.append(np.asarray(a.sum(axis=1)).reshape(-1, 1) - both)
            out1.append(np.asarray(b.sum(axis=1)).reshape(1, -1) - both)
        L = len(self.signatures)
        c0 = np.stack(out0, axis=-1).reshape(m * k, L).astype(np.int64) if L else np.zeros((m * k, 0), np.int64)
        c1 = np.stack(out1, axis=-1).reshape(m * k, L).astype(np.int64) if L else np.zeros((m * k, 0), np.int64)
        # Orientation only matters for asymmetric guarantees; otherwise key on the union.
        keys = np.concatenate([c0, c1], axis=1) if self.asymmetric.any() else c0 + c1
        unique, inverse = np.unique(keys, axis=0, return_inverse=True)
        self.coarsened = None
        for ratio in _LADDERS:
            if max_compositions is None or len(unique) <= max_compositions:
                break
            unique, inverse = np.unique(_round_up(keys, ratio), axis=0, return_inverse=True)
            self.coarsened = ratio
        self.index = inverse.reshape(m, k)
        if self.asymmetric.any():
            blocks = [(u[:L], u[L:]) for u in unique]
        else:
            blocks = [(u, np.zeros_like(u)) for u in unique]
        self.curves: list[PrivacyCurve] = []
        self.exact: list[bool] = []
        self.names: list[str] = []
        for block0, block1 in blocks:
            curve, exact, name = self._profile(block0, block1)
            self.curves.append(curve)
            self.exact.append(exact)
            self.names.append(name)
        self.floors = np.array([min(max(c.delta_floor, 0.0), 1.0) for c in self.curves])
        self._table: NDArray[np.float64] | None = None

    @staticmethod
    def _membership(h: Distribution, column: dict[int, int]):
        """0/1 matrix (sparse, CSC: sliced by columns): row i marks which of the columns' databases the i-th
        support set holds. Supports are small sets over many databases (uniform(1, 1) of 3,000: 3,000 entries,
        not 9 million)."""
        from scipy import sparse

        rows, cols = [], []
        for i, members in enumerate(h.sets):
            held = [column[d] for d in members if d in column]
            rows.extend([i] * len(held))
            cols.extend(held)
        data = np.ones(len(rows), dtype=np.int64)
        return sparse.csc_matrix((data, (rows, cols)), shape=(len(h), len(column)), dtype=np.int64)

    def _multiset(self, counts: NDArray[np.int64]) -> dict[Guarantee, int]:
        """The guarantees of ``counts[s]`` databases of each signature s, as one multiset."""
        total: Counter[Guarantee] = Counter()
        for sig, c in zip(self.signatures, counts):
            for g, n in sig:
                total[g] += int(c) * n
        return dict(+total)

    def _profile(self, out0: NDArray[np.int64], out1: NDArray[np.int64]) -> tuple[PrivacyCurve, bool, str]:
        """Curve, exactness and theorem name for a pair whose b0 \\ b1 and b1 \\ b0 have these signature counts.

        When both sides hold direction-dependent guarantees the two blocks are
        composed apart and joined by basic composition (:func:`~gce.priors.grid._split_curve`,
        002 Thm. III.1); otherwise the differing invocations are composed together."""
        if (out0 * self.asymmetric).any() and (out1 * self.asymmetric).any():
            a, b = compose(self._multiset(out0), self.rtol), compose(self._multiset(out1), self.rtol)
            return _split_curve(a.curve, b.curve), False, "split: " + a.candidates[0][0] + "+" + b.candidates[0][0]
        c = compose(self._multiset(out0 + out1), self.rtol)
        return c.curve, c.exact, "+".join(name for name, _ in c.candidates)

    def values(self, eps: NDArray[np.float64], which: NDArray[np.intp] | None = None) -> NDArray[np.float64]:
        """delta_u(eps) for the distinct profiles ``which`` (all when None): shape (len(which), len(eps)).

        One call per curve whatever the number of eps; NaN (a numerical failure
        inside a theorem) counts as delta = 1.
        """
        which = np.arange(len(self.curves)) if which is None else which
        out = np.empty((len(which), eps.size))
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            for row, u in enumerate(which):
                out[row] = _sorted_call(self.curves[u], eps)
        return np.clip(np.nan_to_num(out, nan=1.0), 0.0, 1.0)

    def table(self) -> NDArray[np.float64]:
        """Every profile at every point of TABLE_GRID (computed once)."""
        if self._table is None:
            self._table = self.values(TABLE_GRID)
        return self._table


# ---------------------------------------------------------------------------
# The transport problem


def _north_west(r0: NDArray[np.float64], r1: NDArray[np.float64]) -> NDArray[np.float64]:
    """The north-west-corner coupling of two non-negative vectors of (nearly) equal mass."""
    out = np.zeros((r0.size, r1.size))
    r0, r1 = r0.copy(), r1.copy()
    i = j = 0
    while i < r0.size and j < r1.size:
        mass = min(r0[i], r1[j])
        out[i, j] += mass
        r0[i] -= mass
        r1[j] -= mass
        if r0[i] <= r1[j]:
            i += 1
        else:
            j += 1
    return out


def _repair(pi: NDArray[np.float64], w0: NDArray[np.float64], w1: NDArray[np.float64]) -> NDArray[np.float64]:
    """A coupling of w0 and w1 near an approximate one: clip negatives, scale rows and
    columns down to their marginals, then fill the residuals north-west-corner."""
    pi = np.maximum(pi, 0.0)
    rows = pi.sum(axis=1)
    over = rows > w0
    pi[over] *= (w0[over] / rows[over])[:, None]
    cols = pi.sum(axis=0)
    over = cols > w1
    pi[:, over] *= w1[over] / cols[over]
    residual0 = np.maximum(w0 - pi.sum(axis=1), 0.0)
    residual1 = np.maximum(w1 - pi.sum(axis=0), 0.0)
    return pi + _north_west(residual0, residual1)


def _marginal_error(pi: NDArray[np.float64], w0: NDArray[np.float64], w1: NDArray[np.float64]) -> float:
    """l1 distance of pi's marginals from (w0, w1), rounded up.

    Some exact coupling lies within this l1 distance of pi, and every cost is
    at most 1, so adding it to sum pi * c keeps the bound valid whatever the
    floating-point sums lost.
    """
    err = math.fsum(np.abs(pi.sum(axis=1) - w0)) + math.fsum(np.abs(pi.sum(axis=0) - w1))
    return err * (1.0 + 1e-6) if err > 0 else 0.0


class _Transport:
    """min sum pi c over couplings pi of (w0, w1), solved by HiGHS through scipy's ``linprog``.

    scipy's ``linprog(method="highs")`` calls the same HiGHS solver as cvxpy
    with no problem compilation: with the constraint matrix built once, one
    200 x 200 solve takes about 0.1-0.2 s against 0.3-0.5 s through a cvxpy
    Parameter (and 35 s for cvxpy's first compile of the matrix-shaped form).
    """

    def __init__(self, w0: NDArray[np.float64], w1: NDArray[np.float64]):
        self.w0, self.w1 = w0, w1
        m, k = w0.size, w1.size
        self.trivial = m == 1 or k == 1
        if not self.trivial:
            import scipy.sparse as sp

            rows = sp.kron(sp.identity(m, format="csr"), np.ones((1, k)), format="csr")
            cols = sp.kron(np.ones((1, m)), sp.identity(k, format="csr"), format="csr")
            self.a_eq = sp.vstack([rows, cols], format="csr")
            self.b_eq = np.concatenate([w0, w1])

    def solve(self, cost: NDArray[np.float64]) -> tuple[NDArray[np.float64], float]:
        """A coupling (exact marginals up to round-off) and its certified bound sum pi c + allowance."""
        if self.trivial:
            pi = np.outer(self.w0, self.w1)  # the only coupling when one side is a point mass
        else:
            # HiGHS's optimality tolerances are absolute (1e-7): costs of 1e-12 would all look alike and
            # any coupling pass as optimal, so the LP sees them scaled to a maximum of 1.
            scale = float(cost.max())
            scaled = cost / scale if scale > 0.0 else cost
            from scipy.optimize import linprog  # here: scipy.optimize is slow to import (start-up)

            result = linprog(scaled.ravel(), A_eq=self.a_eq, b_eq=self.b_eq, bounds=(0, None), method="highs")
            if result.status == 0 and result.x is not None:
                pi = _repair(result.x.reshape(cost.shape), self.w0, self.w1)
            else:  # still a coupling, so still a valid (if looser) bound
                warnings.warn(f"transport LP failed ({result.message}); using the north-west-corner coupling",
                              RuntimeWarning, stacklevel=3)
                pi = _north_west(self.w0, self.w1)
        bound = math.fsum((pi * cost).ravel()) + _marginal_error(pi, self.w0, self.w1)
        return pi, min(bound, 1.0)


# ---------------------------------------------------------------------------
# Coupling: public API


@dataclass(frozen=True)
class CoupledPair:
    """One pair of the coupling: membership sets, the mass pi(b0, b1) and delta_{b0,b1}(eps)."""

    h0_members: frozenset[int]
    h1_members: frozenset[int]
    mass: float
    delta: float


@dataclass(frozen=True)
class CouplingResult:
    """A certified point of the coupling bound.

    Attributes
    ----------
    epsilon, delta : float
        The certified point: every mechanism with the stated guarantees is
        (epsilon, delta)-HDP for this pair of hypotheses (both directions).
    coupling : tuple of CoupledPair
        The coupling (its non-zero entries) with each pair's profile, at
        ``epsilon`` -- or, when ``bracket`` is set, at its upper end.
    allowance : float
        Added to the coupling's sum for floating-point error in its marginals.
    exact : bool
        True only for two point masses whose composition is exact.
    theorem : str
        "coupling" plus the composition theorems used for the pairs.
    bracket : ((eps_lo, delta_lo), (eps_hi, delta_hi)) or None
        Set by :meth:`CouplingCurve.at_delta`: delta at epsilon is the chord
        in e^eps between two certified LP bounds (every hockey-stick divergence
        is convex in e^eps); ``coupling`` certifies the upper end. None: delta
        is the sum of mass * pair delta + allowance at ``epsilon`` itself.
    """

    epsilon: float
    delta: float
    coupling: tuple[CoupledPair, ...]
    allowance: float
    exact: bool
    theorem: str
    bracket: tuple[tuple[float, float], tuple[float, float]] | None = None


class CouplingCurve(PrivacyCurve):
    """The privacy curve of two composite hypotheses by the best coupling (joint convexity).

    delta(eps) = min over couplings pi of sum pi(b0, b1) delta_{b0,b1}(eps): a
    transport LP at each eps (001 Sec. V-B's refinement, made sound; docs/design.md,
    "Unsound formulas"). Valid for every guarantee kind :func:`gce.accounting.theorems.compose`
    accepts, both directions, adaptive mechanisms included.

    Parameters
    ----------
    h0, h1 : Distribution or iterable of (members, weight)
        The two hypotheses: distributions over membership sets.
    invocations : iterable of Invocation
        What runs on which database.
    max_compositions : int or None
        Cap on distinct compositions (one per distinct differing multiset);
        beyond it counts are rounded up, which loosens but never invalidates
        the bound (:attr:`coarsened` then names the ladder ratio). None: no cap.
    rtol : float
        The relative accuracy every pair's composition is computed to (:func:`gce.accounting.theorems.compose`;
        :mod:`gce.effort`, default :data:`gce.effort.DEFAULT_RTOL`).

    Notes
    -----
    The LP's primal solution is repaired into an exact coupling (negatives
    clipped, rows and columns scaled down to their marginals, the residual
    filled north-west-corner), and the l1 error left in its marginals is added
    to the sum (every pair delta is at most 1), so solver round-off never makes
    a bound invalid; if the LP fails, the north-west-corner coupling is used.

    ``epsilon(delta)``: every profile is tabulated once on a geometric grid
    (one call per composition), so the LP bound at a grid point is certified;
    a binary search over the grid, then over a local grid of 129 points
    between the two grid points that bracket the answer, finds the last
    column above the target and the first at or below it. In between, the
    chord in e^eps of those two certified bounds is itself a valid bound,
    because every hockey-stick divergence is convex in e^eps (a supremum of
    affine functions of it); its crossing of the target is returned. It lies
    within one local cell (about 0.15% of eps) of the LP's own crossing, and
    is never below a certified point.

    Examples
    --------
    >>> from gce.accounting.guarantees import PureDP
    >>> from gce.model import Invocation
    >>> curve = CouplingCurve([({0}, 0.5), ({1}, 0.5)], [(set(), 0.5), ({0, 1}, 0.5)],
    ...                       [Invocation(0, PureDP(1.0)), Invocation(1, PureDP(1.0))])
    >>> round(float(curve.delta(0.5)), 4)
    0.2876
    """

    def __init__(
        self,
        h0: Distribution | Iterable[tuple[Iterable[int], float]],
        h1: Distribution | Iterable[tuple[Iterable[int], float]],
        invocations: Iterable[Invocation],
        max_compositions: int | None = MAX_COMPOSITIONS,
        rtol: float = effort.DEFAULT_RTOL,
    ):
        self.h0 = _as_distribution(h0, "h0")
        self.h1 = _as_distribution(h1, "h1")
        self.invocations = _check_invocations(invocations)
        if max_compositions is not None and (not is_integer(max_compositions) or max_compositions < 1):
            raise InvalidParameterError("max_compositions",
                                        f"must be an integer >= 1 or None, got {shown(max_compositions)}")
        self._profiles = _PairProfiles(self.h0, self.h1, self.invocations, max_compositions,
                                       effort.check_rtol(rtol))
        self._transport = _Transport(self._profiles.w0, self._profiles.w1)
        floors = self._profiles.floors[self._profiles.index]
        self.delta_floor = self._transport.solve(floors)[1]

    @property
    def compositions(self) -> int:
        """How many distinct compositions (differing multisets) the supports need."""
        return len(self._profiles.curves)

    @property
    def coarsened(self) -> float | None:
        """The ladder ratio counts were rounded up to, or None when every multiset is exact."""
        return self._profiles.coarsened

    def worst_pair_delta(self, epsilon: float) -> float:
        """max over b0 in supp h0, b1 in supp h1 of delta_{b0,b1}(epsilon): the bound without a
        coupling (also valid; the coupling's is never larger)."""
        return float(self._profiles.values(np.array([_check_epsilon(epsilon)])).max())

    def worst_pair_epsilon(self, delta: float) -> float:
        """max over the pairs of the supports of each pair's epsilon at ``delta``."""
        return max(float(c.epsilon(delta)) for c in self._profiles.curves)

    def _delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        values = self._profiles.values(eps)  # (compositions, len(eps)): one call per curve
        index = self._profiles.index
        return np.array([self._transport.solve(values[:, n][index])[1] for n in range(eps.size)])

    def _bisect_grid(self, table: NDArray[np.float64], lo: tuple[int, float],
                     hi: tuple[int, float, NDArray[np.float64]], target: float):
        """Binary search over tabulated eps (columns of ``table``: exact profile values) for the first
        column whose LP bound meets the target. ``hi`` = (column, bound <= target, coupling);
        ``lo`` = (column, bound > target). Returns the final (lo, hi) in the same form."""
        index = self._profiles.index
        while hi[0] - lo[0] > 1:
            mid = (lo[0] + hi[0]) // 2
            pi, bound = self._transport.solve(table[:, mid][index])
            if bound <= target:
                hi = (mid, bound, pi)
            else:
                lo = (mid, bound)
        return lo, hi

    def _certify(self, target: float):
        """Certified epsilon for a target delta, as (epsilon, delta, lo, hi).

        1. Every profile is tabulated on TABLE_GRID (exact values), so the LP
           bound at a grid point is exact; it is non-increasing in eps, and a
           binary search finds the first grid point where it meets the target
           (between the last point where even the best pair misses it and the
           first where even the worst pair meets it).
        2. The same between those two points, on a finer local table.
        3. Between the last two columns, the chord in e^eps of the two
           certified bounds (:func:`_chord`) meets the target: its crossing.

        ``lo`` = (eps, bound) and ``hi`` = (eps, bound, coupling, pair
        profiles there) are the certified ends (None when the answer is 0 or inf).
        """
        if target >= 1.0:
            return 0.0, 1.0, None, None
        if target < self.delta_floor:
            return math.inf, target, None, None
        index = self._profiles.index
        table = self._profiles.table()
        worst = _first_below(TABLE_GRID, table.max(axis=0), target)
        top = TABLE_GRID.size - 1 if worst is None else worst
        pi, bound = self._transport.solve(table[:, top][index])
        if bound > target:
            return math.inf, target, None, None
        hi = (top, bound, pi)
        missed = np.flatnonzero(table.min(axis=0) > target)  # no coupling meets the target there
        bottom = int(missed.max()) if missed.size else 0
        if top == bottom:  # both 0: the worst pair meets the target at eps = 0
            return 0.0, bound, None, (0.0, bound, pi, table[:, 0])
        pi0, bound0 = self._transport.solve(table[:, bottom][index])
        if bound0 <= target:  # only possible at column 0 (eps = 0)
            return 0.0, bound0, None, (0.0, bound0, pi0, table[:, 0])
        lo, hi = self._bisect_grid(table, (bottom, bound0), hi, target)
        local = np.linspace(TABLE_GRID[lo[0]], TABLE_GRID[hi[0]], LOCAL_POINTS)
        local_table = self._profiles.values(local)
        local_table[:, 0], local_table[:, -1] = table[:, lo[0]], table[:, hi[0]]  # the certified columns
        lo, hi = self._bisect_grid(local_table, (0, lo[1]), (LOCAL_POINTS - 1, hi[1], hi[2]), target)
        x_lo, x_hi = float(local[lo[0]]), float(local[hi[0]])
        eps = _crossing(x_lo, lo[1], x_hi, hi[1], target)
        return eps, _chord(x_lo, lo[1], x_hi, hi[1], eps), (x_lo, lo[1]), (x_hi, hi[1], hi[2], local_table[:, hi[0]])

    def _epsilon(self, d: NDArray[np.float64]) -> NDArray[np.float64]:
        """Certified epsilon at each delta (:meth:`_certify`)."""
        return np.array([self._certify(float(t))[0] for t in d])

    def _result(self, eps: float, pi: NDArray[np.float64], cost: NDArray[np.float64], bound: float) -> CouplingResult:
        """The :class:`CouplingResult` of coupling ``pi`` with per-pair costs ``cost`` and certified ``bound``."""
        p = self._profiles
        rows, cols = np.nonzero(pi > 0)
        pairs = tuple(
            CoupledPair(self.h0.sets[i], self.h1.sets[j], float(pi[i, j]), float(cost[i, j]))
            for i, j in zip(rows, cols)
        )
        used = sorted({p.names[u] for u in np.unique(p.index[rows, cols])})
        exact = p.shape == (1, 1) and p.exact[p.index[0, 0]]
        return CouplingResult(
            epsilon=eps, delta=bound, coupling=pairs, allowance=_marginal_error(pi, p.w0, p.w1),
            exact=bool(exact), theorem="coupling[" + ", ".join(used) + "]",
        )

    def _costs(self, eps: float) -> NDArray[np.float64]:
        """delta_{b0,b1}(eps) for every pair of the supports, shape (|supp h0|, |supp h1|)."""
        return self._profiles.values(np.array([eps]))[:, 0][self._profiles.index]

    def at_epsilon(self, epsilon: float) -> CouplingResult:
        """The best coupling's bound at ``epsilon``, with the coupling."""
        eps = _check_epsilon(epsilon)
        cost = self._costs(eps)
        pi, bound = self._transport.solve(cost)
        return self._result(eps, pi, cost, bound)

    def at_delta(self, delta: float) -> CouplingResult:
        """The smallest epsilon certified at ``delta``, with its certificate.

        ``epsilon`` is ``inf`` (and ``coupling`` empty) when no finite epsilon
        is found (e.g. ``delta`` below :attr:`delta_floor`).
        """
        if not (0.0 <= delta <= 1.0):
            raise InvalidParameterError("delta", f"must lie in [0, 1], got {shown(delta)}")
        eps, bound, lo, hi = self._certify(float(delta))
        if math.isinf(eps):
            return CouplingResult(math.inf, float(delta), (), 0.0, False, "coupling")
        if hi is None:
            return self.at_epsilon(eps)
        x_hi, bound_hi, pi, column = hi
        result = self._result(x_hi, pi, column[self._profiles.index], bound_hi)
        if lo is None:
            return result
        return dataclasses.replace(result, epsilon=eps, delta=bound, bracket=(lo, (x_hi, bound_hi)),
                                   theorem=result.theorem + " with convexity in e^eps")


def coupling_delta(
    h0: Distribution | Iterable[tuple[Iterable[int], float]],
    h1: Distribution | Iterable[tuple[Iterable[int], float]],
    invocations: Iterable[Invocation],
    epsilon: float,
) -> CouplingResult:
    """A sound delta at ``epsilon`` for two composite hypotheses, by the best coupling.

    Parameters
    ----------
    h0, h1 : Distribution or iterable of (members, weight)
        Distributions over membership sets (001 Sec. III-A).
    invocations : iterable of Invocation
        The mechanisms run and their databases.
    epsilon : float
        Where to evaluate (every pair's profile is taken at this same epsilon).

    Returns
    -------
    CouplingResult
        delta = min over couplings pi of sum pi(b0, b1) delta_{b0,b1}(epsilon),
        with the coupling and the per-pair deltas.

    References
    ----------
    001 Sec. V-B and App. A (refinement = a coupling); joint convexity of the
    hockey-stick divergence (BBG18); docs/design.md, "Unsound formulas".

    Examples
    --------
    >>> from gce.accounting.guarantees import PureDP
    >>> from gce.model import Invocation
    >>> r = coupling_delta([({0}, 0.5), ({1, 2}, 0.5)], [(set(), 0.5), ({1, 2}, 0.5)],
    ...                    [Invocation(d, PureDP(5.0)) for d in range(3)], 4.313568)
    >>> round(r.delta, 4)   # 001's averaging formula claims 0 here; the exact value is 0.2434
    0.2467
    >>> [(sorted(p.h0_members), sorted(p.h1_members), p.mass) for p in r.coupling]
    [([0], [], 0.5), ([1, 2], [1, 2], 0.5)]
    """
    return CouplingCurve(h0, h1, invocations).at_epsilon(epsilon)

"""The worst-case pair when guarantees differ: enumeration of the maximal differing multisets.

With one guarantee kind the composed curve of a pair depends only on how many
invocations differ, a maximum-weight problem (:mod:`gce.solvers.weights`).
With several kinds it depends on the multiset of differing invocations, which
is not a number. Composition is monotone in that multiset (a sub-multiset
composes to a curve below, 002 Thm. II.5: post-processing), so only the pairs
whose *profile* (invocations of each kind in b0 XOR b1) is maximal in the
componentwise order can be the worst, at every epsilon at once. When the
allowed sets can be listed, :func:`maximal_profiles` lists those profiles and
:func:`worst_profile` composes each one: the pointwise maximum of their curves
is the exact worst-case curve when each composition is exact (001 Thm. 1).

:class:`CompositionCache` keeps every composition of one solve, keyed by the
multiset, so that the bound, the witness and the baselines never compose the
same multiset twice.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..accounting import batch
from ..accounting import kinds as kind_table
from ..accounting.curves import ROUND_UP, FunctionCurve, PrivacyCurve
from ..accounting.guarantees import Guarantee
from ..accounting.theorems import Composition, as_multiset, compose
from ..constraints import ConstraintSet
from ..effort import DEFAULT_RTOL, Deadline, current, within
from ..errors import NumericalLimitError, UnsupportedCombinationError
from ..resources import check_memory
from .base import WeightProblem, membership_matrix
from .weights import worst_pair

__all__ = ["CompositionCache", "WorstOfCurve", "maximal_profiles", "worst_profile", "Profiles", "Worst",
           "branch_and_bound", "Searched", "renyi_terms", "renyi_curve", "renyi_bound", "RenyiSearch"]

#: Most blocks of databases (``together`` components) whose unions are listed: 2^16 sets checked (0.2 s).
ENUMERATION_BLOCKS_MAX = 16
#: Most pairs of allowed sets formed for bounded pairs.
PAIRS_MAX = 4_000_000
#: Most distinct profiles compared for maximality, and most maximal profiles composed.
DISTINCT_PROFILES_MAX = 5_000
MAXIMAL_PROFILES_MAX = 256


class CompositionCache:
    """:func:`~gce.accounting.theorems.compose`, once per multiset in a solve."""

    def __init__(self) -> None:
        self._memo: dict[frozenset, Composition] = {}

    def __call__(self, guarantees) -> Composition:
        ms = as_multiset(guarantees)
        key = frozenset(ms)
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = compose(dict(ms))
        return found

    def __len__(self) -> int:
        return len(self._memo)


class WorstOfCurve(PrivacyCurve):
    """The pointwise maximum of curves: valid for a pair when each curve bounds one of the cases it may be.

    epsilon(d) is the largest of the curves' epsilons (each curve is non-increasing).
    """

    def __init__(self, curves: Sequence[PrivacyCurve]):
        self.curves = tuple(curves)
        self.delta_floor = max(c.delta_floor for c in self.curves)

    def _delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.max([np.clip(c._delta(eps), 0.0, 1.0) for c in self.curves], axis=0)

    def _epsilon(self, d: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.max([c._epsilon(d) for c in self.curves], axis=0)


@dataclass(frozen=True)
class Profiles:
    """The maximal profiles of the allowed pairs: ``counts[r, k]`` invocations of kind k differ in ``pairs[r]``."""

    counts: NDArray[np.float64]
    pairs: tuple[tuple[frozenset[int], frozenset[int]], ...]
    allowed_sets: int


def _pareto_maximal(profiles: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Rows no other (distinct) row dominates componentwise."""
    m = len(profiles)
    keep = np.ones(m, dtype=bool)
    for start in range(0, m, 256):
        block = profiles[start:start + 256]
        ge = (profiles[None, :, :] >= block[:, None, :]).all(axis=2)  # ge[a, b]: row b >= row start + a
        ge[np.arange(len(block)), np.arange(start, start + len(block))] = False
        keep[start:start + len(block)] = ~ge.any(axis=1)
    return keep


def maximal_profiles(constraints: ConstraintSet, neighborhood: str, counts: NDArray[np.float64],
                     deadline: Deadline | None = None) -> Profiles | None:
    """Every maximal profile of the allowed pairs, with a pair attaining it, or None when too many to list.

    ``counts[i, k]`` is the number of invocations of kind k on database i. The
    allowed sets are listed (:meth:`ConstraintSet.allowed_sets`: the patterns,
    or every union of ``together`` blocks checked against the constraints);
    unbounded pairs are (empty, b), bounded ones (b, b') for every two sets.
    Distinct profiles are kept with one pair each, then the componentwise
    maximal ones (a dominated profile composes to a curve below a maximal one).
    None when the sets, pairs or profiles exceed the limits of this module
    (counts: the same answer on any machine), or when the cap ``deadline``
    (default :func:`gce.effort.current`) stops the listing, which it then records.
    """
    deadline = current() if deadline is None else deadline
    n = constraints.n
    if constraints.explicit_sets() is None and constraints.block_count() > ENUMERATION_BLOCKS_MAX:
        return None
    try:
        sets = list(constraints.allowed_sets())
    except UnsupportedCombinationError:
        return None
    if neighborhood == "bounded" and len(sets) ** 2 > PAIRS_MAX:
        return None
    member = membership_matrix(sets, n)  # sparse: a dense sets x databases matrix grows as their product
    check_memory("constraints", 3 * 8 * len(sets) * counts.shape[1], f"profiles: {len(sets):,} allowed sets x "
                                                                      f"{counts.shape[1]} kinds of guarantee")
    own = member @ counts  # own[j]: the invocations of each kind on the databases of set j
    found: dict[bytes, tuple[int, int]] = {}
    rows: list[NDArray[np.float64]] = []
    firsts = range(1) if neighborhood == "unbounded" else range(len(sets))
    for i in firsts:
        if deadline.expired():
            deadline.stop(f"listing the differing multisets of {len(sets):,} allowed sets (searched instead)")
            return None
        inside = np.zeros(n)
        inside[list(sets[i])] = 1.0
        profile = own[i] + own - 2.0 * (member @ (counts * inside[:, None]))  # counts on set i XOR set j
        unique, index = np.unique(profile, axis=0, return_index=True)
        for row, j in zip(unique, index):
            key = row.tobytes()
            if key not in found:
                found[key] = (i, int(j))
                rows.append(row)
        if len(rows) > DISTINCT_PROFILES_MAX:
            return None
    profiles = np.array(rows)
    keep = _pareto_maximal(profiles)
    if keep.sum() > MAXIMAL_PROFILES_MAX:
        return None
    pairs = [found[row.tobytes()] for row in profiles[keep]]
    return Profiles(profiles[keep], tuple((sets[i], sets[j]) for i, j in pairs), len(sets))


@dataclass(frozen=True)
class Worst:
    """The worst of the maximal profiles: its pair and composition, and the curve of all of them."""

    pair: tuple[frozenset[int], frozenset[int]]
    composition: Composition
    curve: PrivacyCurve
    exact: bool
    composed: int


def worst_profile(profiles: Profiles, kinds: Sequence[Guarantee], cache: CompositionCache,
                  value: Callable[[Composition], float], deadline: Deadline | None = None) -> Worst | None:
    """Compose every maximal profile; the worst by ``value`` (epsilon, or delta at the target) and the
    pointwise maximum of all their curves (the worst-case curve at every epsilon). None when the cap
    ``deadline`` (default :func:`gce.effort.current`) stops it first, which it then records."""
    deadline = current() if deadline is None else deadline
    best, best_value, curves, exact = None, -1.0, [], True
    for index, (row, pair) in enumerate(zip(profiles.counts, profiles.pairs)):
        if deadline.expired():
            deadline.stop(f"composing the maximal differing multisets ({index} of {len(profiles.pairs)} "
                          f"composed; searched instead)")
            return None
        composition = cache({g: int(round(c)) for g, c in zip(kinds, row) if c > 0})
        curves.append(composition.curve)
        exact = exact and composition.exact
        v = value(composition)
        if v > best_value:
            best, best_value = (pair, composition), v
    curve = curves[0] if len(curves) == 1 else WorstOfCurve(curves)
    return Worst(best[0], best[1], curve, exact, len(curves))


# ---------------------------------------------------------------------------
# Branch and bound over the membership variables, for pairs too many to list

#: Relative gap (in epsilon, or in delta for an epsilon target) at which the search stops by default: the
#: accuracy asked of a solve (:data:`gce.effort.DEFAULT_RTOL`; :func:`gce.solve` passes its ``rtol``).
SEARCH_TOLERANCE = DEFAULT_RTOL
#: Most nodes evaluated (each costs one search per guarantee kind and one composition).
NODES_MAX = 2_000


@dataclass(frozen=True)
class Searched:
    """The branch and bound's answer: the worst pair found (lower bound) and a certified upper bound."""

    pair: tuple[frozenset[int], frozenset[int]]
    lower: float
    lower_composition: Composition
    upper: float
    curve: PrivacyCurve
    complete: bool
    nodes: int
    #: Whether the time cap stopped the search (then ``complete`` may be False on this machine only).
    stopped: bool = False


@dataclass(frozen=True)
class _Node:
    bound: float
    composition: Composition
    inside: frozenset[int]
    outside: frozenset[int]
    witnesses: tuple[tuple[frozenset[int], frozenset[int]], ...]
    exact: bool


def branch_and_bound(constraints: ConstraintSet, neighborhood: str, counts: NDArray[np.float64],
                     kinds: Sequence[Guarantee], cache: CompositionCache, value: Callable[[Composition], float],
                     differing: Callable[[tuple[frozenset[int], frozenset[int]]], dict],
                     root: tuple[Composition, Sequence[tuple[frozenset[int], frozenset[int]]], bool],
                     tolerance: float = SEARCH_TOLERANCE, deadline: Deadline | None = None) -> Searched:
    """Best-first branch and bound on "database i differs" (i in b0 XOR b1), the worst pair and a bound.

    A node fixes databases inside the differing set (I) and outside it (O).
    Its bound is the composition of the multiset that holds, for every kind k,
    a certified upper bound on the k-invocations an allowed pair of the node
    can make differ: max of w_k(b0 XOR b1) with w_k zero on O (a relaxation)
    and a weight M > w_k(all) added on I (a pair missing a database of I
    loses M, so the certified bound minus M |I| bounds the pairs that hold I).
    Every pair of the node has a differing multiset inside that one, and
    composition is monotone: the node's curve bounds every pair of the node
    at every epsilon. The witnesses of those searches are allowed pairs,
    composed for the lower bound. Children split a free database on which
    the witnesses disagree. The search stops when the largest open bound is
    within ``tolerance`` of the best pair (relative), when no node is open,
    or after :data:`NODES_MAX` nodes: a deterministic schedule, the same
    answer on any machine. The cap ``deadline`` (default
    :func:`gce.effort.current`) only stops it early, and records that it did.
    The curve is the pointwise maximum of the curves of the nodes left (open,
    pruned or closed), which together cover every pair.

    ``root`` is the composition, witnesses and exactness the caller already
    has for the node with nothing fixed; ``differing(pair)`` is the pair's
    differing multiset.
    """
    deadline = current() if deadline is None else deadline
    n, k_count = counts.shape
    best: list = [None, -1.0, None]  # pair, value, composition
    cut: list[str] = []  # what the cap stopped

    def consider(pair) -> None:
        if best[0] is not None and deadline.expired():
            cut.append("witnesses not composed")
            return
        composition = cache(differing(pair))
        v = value(composition)
        if v > best[1]:
            best[:] = [pair, v, composition]

    def evaluate(inside: frozenset[int], outside: frozenset[int]) -> _Node | None:
        bounds, witnesses, exact = [], [], True
        for k in range(k_count):
            w = counts[:, k].copy()
            w[list(outside)] = 0.0
            big = float(w.sum()) + 1.0 if inside else 0.0
            w[list(inside)] += big
            with within(deadline):
                result = worst_pair(WeightProblem(constraints, w, neighborhood), None)
            upper = result.upper_bound - big * len(inside)
            if upper < -0.5:  # no allowed pair holds all of I
                return None
            bounds.append(max(int(np.floor(upper + 1e-6)), 0))
            witnesses.append(result.witness)
            exact = exact and result.exact
        composition = cache({g: c for g, c in zip(kinds, bounds) if c > 0})
        return _Node(value(composition), composition, inside, outside, tuple(witnesses), exact)

    for pair in root[1]:
        consider(pair)
    start = _Node(value(root[0]), root[0], frozenset(), frozenset(), tuple(root[1]), root[2])
    open_nodes, closed, nodes = [start], [], 1

    def gap_closed(bound: float) -> bool:
        low = best[1]
        if bound <= low:
            return True
        return np.isfinite(bound) and bound <= low * (1.0 + tolerance)

    while open_nodes and nodes < NODES_MAX:
        open_nodes.sort(key=lambda node: node.bound)
        if gap_closed(open_nodes[-1].bound):
            break
        if deadline.expired():
            cut.append("nodes left open")
            break
        node = open_nodes.pop()
        fixed = node.inside | node.outside
        diffs = [a ^ b for a, b in node.witnesses]
        free = [i for i in range(n) if i not in fixed and counts[i].sum() > 0]
        in_some = [i for i in free if any(i in d for d in diffs)]
        split = [i for i in in_some if not all(i in d for d in diffs)]
        if not free or (not split and node.exact):
            closed.append(node)  # every pair of the node is inside one witness's multiset: composed
            continue
        choice = split or in_some or free
        j = max(choice, key=lambda i: (counts[i].sum(), -i))
        children = []
        for child in ((node.inside | {j}, node.outside), (node.inside, node.outside | {j})):
            if deadline.expired():
                cut.append("nodes left open")
                break
            children.append(evaluate(*child))
            nodes += 1
        else:
            for evaluated in children:
                if evaluated is None:  # no allowed pair in it
                    continue
                for pair in evaluated.witnesses:
                    consider(pair)
                (closed if gap_closed(evaluated.bound) else open_nodes).append(evaluated)
            continue
        open_nodes.append(node)  # out of time before both children: the parent's bound covers its pairs
        break
    left = open_nodes + closed
    upper = max(node.bound for node in left) if left else best[1]
    upper = max(upper, best[1])
    curves = _maximal_curves([node.composition for node in left] + [best[2]])
    complete = not open_nodes or all(gap_closed(node.bound) for node in open_nodes)
    if cut:
        gap = upper / best[1] - 1.0 if best[1] > 0 else math.inf
        deadline.stop(f"branch and bound over the memberships after {nodes} nodes ({'; '.join(dict.fromkeys(cut))}; "
                      f"gap {gap:.2%}, asked {tolerance:.2%})")
    return Searched(best[0], best[1], best[2], upper, curves, complete, nodes, bool(cut))


def _maximal_curves(compositions: Sequence[Composition]) -> PrivacyCurve:
    """The pointwise maximum of the compositions' curves, those of sub-multisets left out (monotone)."""
    distinct = {frozenset(c.guarantees): c for c in compositions}
    items = list(distinct.items())
    keep = []
    for key, composition in items:
        mine = dict(key)
        dominated = any(other != key and all(n <= dict(other).get(g, 0) for g, n in mine.items())
                        for other, _ in items)
        if not dominated:
            keep.append(composition.curve)
    return keep[0] if len(keep) == 1 else WorstOfCurve(keep)


# ---------------------------------------------------------------------------
# A Renyi bound: additive over invocations, so a maximum-weight problem per order

#: Renyi orders alpha of the bound.
RENYI_ORDERS = np.array([1.1, 1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0, 48.0, 64.0, 128.0, 256.0])


def renyi_terms(guarantee: Guarantee, alphas: NDArray[np.float64] = RENYI_ORDERS) -> tuple[NDArray, float] | None:
    """(Renyi divergences at ``alphas``, leak) bounding one invocation; None when the kind has neither.

    A guarantee with an (epsilon, delta) point is bounded through its
    canonical pair (002 Thm. II.5: every such mechanism is a post-processing
    of it): with probability delta a leak, otherwise binary randomized
    response at epsilon, whose divergence of order alpha (both directions
    alike) is log(p^a q^(1-a) + q^a p^(1-a)) / (a - 1), p = e^eps / (1 + e^eps).
    The leak is -log(1 - delta). Without a point, rho-zCDP (Gaussian, GDP:
    rho = mu^2 / 2) gives alpha rho (BS16 Def. 1.1); other noise mechanisms
    (Laplace, subsampled Gaussian and Laplace) their upper privacy-loss law's
    moment-generating function (:func:`gce.accounting.batch.log_mgf_bounds`).
    """
    table = renyi_term_table((guarantee,), alphas)
    return None if table is None else (table[0][0], float(table[1][0]))


def renyi_term_table(guarantees: Sequence[Guarantee], alphas: NDArray[np.float64] = RENYI_ORDERS
                     ) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
    """:func:`renyi_terms` of every guarantee: (divergences[guarantee, order], leaks[guarantee]), or None
    when one has no Renyi bound. The randomized-response divergences of all (epsilon, delta) points are
    evaluated in one vectorised pass (:func:`_randomized_response_divergences`), elementwise the same
    floats as one guarantee at a time: the cost grows with the distinct guarantees in numpy, not in
    numpy calls per guarantee."""
    alphas = np.asarray(alphas, dtype=float)
    rows: list[list] = []  # per guarantee, its candidates; a point's divergences by their row in ``points``
    points: list[float] = []
    for guarantee in guarantees:
        candidates = _terms_but_point(guarantee, alphas)
        point = kind_table.point(guarantee)
        if point is not None and point[1] < 1.0:
            candidates.append((len(points), -float(np.log1p(-point[1]))))
            points.append(point[0])
        if not candidates:
            return None
        rows.append(candidates)
    divergences = _randomized_response_divergences(np.array(points, dtype=float), alphas) if points else None
    out = np.empty((len(rows), alphas.size))
    leaks = np.empty(len(rows))
    for i, candidates in enumerate(rows):
        candidates = [(divergences[c] if isinstance(c, int) else c, leak) for c, leak in candidates]
        leak = min(c[1] for c in candidates)
        chosen = [c[0] for c in candidates if c[1] == leak]
        out[i] = chosen[0] if len(chosen) == 1 else np.min(chosen, axis=0)
        leaks[i] = leak
    return out, leaks


def _terms_but_point(guarantee: Guarantee, alphas: NDArray[np.float64]) -> list:
    """The candidates of :func:`renyi_terms` other than the (epsilon, delta) point's: zCDP and a noise
    mechanism's upper privacy-loss law."""
    candidates = []  # (divergences, leak): each a valid bound; with equal leaks the elementwise minimum is too
    rho = kind_table.zcdp_rho(guarantee)
    if rho is not None:  # Gaussian, GDP: exact; pure DP (Laplace): rho = eps^2 / 2 (BS16 Prop. 1.4)
        candidates.append((alphas * rho, 0.0))
    source = kind_table.pld_source(guarantee)
    if source is not None and source.kind != "point" and not (rho is not None and kind_table.point(guarantee) is None):
        # A noise mechanism (Laplace, subsampled): through its upper privacy-loss law, whose losses are the
        # mechanism's rounded up. With t = alpha - 1, m = P(L = inf) and leak = -log(1 - m), the divergence
        # (log E[e^{tL}; L finite] + leak) / t makes renyi_curve's bound exactly Chernoff's bound on the
        # composition of the laws (batch.log_mgf_bounds); raising it to 0 only raises the bound.
        t = np.asarray(alphas, dtype=float) - 1.0
        try:
            log_mgf, infinite = batch.log_mgf_bounds(guarantee, t)
        except (NumericalLimitError, UnsupportedCombinationError):
            log_mgf, infinite = None, 1.0
        if infinite < 1.0:
            leak = -math.log1p(-infinite)
            candidates.append((np.maximum((log_mgf + leak) / t, 0.0), leak))
    return candidates


def _log_cosh(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """log cosh x for x >= 0 without cancellation near 0 (cosh x - 1 = 2 sinh^2(x / 2)) or overflow."""
    small = np.minimum(x, 1.0)
    large = np.maximum(x, 1.0)
    return np.where(x < 1.0, np.log1p(2.0 * np.sinh(small / 2.0) ** 2),
                    large - math.log(2.0) + np.log1p(np.exp(-2.0 * np.minimum(large, 400.0))))


def _randomized_response_divergence(eps: float, alphas: NDArray[np.float64]) -> NDArray[np.float64]:
    """:func:`_randomized_response_divergences` of one epsilon."""
    return _randomized_response_divergences(np.array([eps], dtype=float), alphas)[0]


def _randomized_response_divergences(eps: NDArray[np.float64], alphas: NDArray[np.float64]) -> NDArray[np.float64]:
    """Renyi divergences of binary randomized response at ``eps`` (both directions alike), at each order.

    With p = e^eps / (1 + e^eps) and q = 1 - p, D_a = log(p^a q^(1-a) + q^a p^(1-a)) / (a - 1)
    = (log cosh((a - 1/2) eps) - log cosh(eps / 2)) / (a - 1), evaluated so for eps < 1 (the two
    logarithms of the first form cancel there) and for eps >= 1 as
    eps + (log(1 + e^(-(2a - 1) eps)) - log(1 + e^(-eps))) / (a - 1), finite up to eps = 1.8e308 (the
    first form's exponents overflow beyond 1e308 / a). Within 2e-15 of 60-digit values from eps = 1e-300
    to 1e308; rounded up by :data:`~gce.accounting.curves.ROUND_UP` and clipped to [0, eps]
    (D_a <= D_inf = eps). One row per epsilon of ``eps``, one column per order.
    """
    eps = np.asarray(eps, dtype=float)
    out = np.empty((eps.size, alphas.size))
    small = eps < 1.0
    if small.any():
        e = eps[small][:, None]
        out[small] = (_log_cosh((alphas[None, :] - 0.5) * e) - _log_cosh(e / 2.0)) / (alphas[None, :] - 1.0)
    if not small.all():
        tail = np.minimum(eps[~small], 800.0)  # e^(-800) is already 0: the exponents below never overflow
        own = np.array([math.log1p(math.exp(-t)) for t in tail.tolist()])[:, None]
        out[~small] = eps[~small][:, None] + (np.log1p(np.exp(-(2.0 * alphas[None, :] - 1.0) * tail[:, None]))
                                              - own) / (alphas[None, :] - 1.0)
    return np.clip(out * (1.0 + ROUND_UP), 0.0, eps[:, None])


def renyi_curve(divergences: NDArray[np.float64], leak: float,
                alphas: NDArray[np.float64] = RENYI_ORDERS) -> PrivacyCurve:
    """The curve of a composition whose no-leak part has Renyi divergences at most ``divergences`` (one per
    order) and whose invocations all avoid their leak with probability at least exp(-``leak``).

    With S the probability of no leak, delta(eps) <= 1 - S + S delta_RDP(eps)
    (joint convexity: the leak and no-leak parts of every canonical pair have
    the same weights under both hypotheses; the leak part costs at most 1),
    and delta_RDP(eps) <= min over alpha of exp((alpha - 1)(R_alpha - eps)) /
    (alpha - 1) (1 - 1/alpha)^alpha (CKS20 Prop. 12; Asoodeh et al. 2021).
    Renyi divergences add up over adaptive composition (Mironov 2017, Prop. 1).
    """
    alphas = np.asarray(alphas, dtype=float)
    divergences = np.asarray(divergences, dtype=float)
    survive = float(np.exp(-leak))
    log_factor = alphas * np.log1p(-1.0 / alphas) - np.log(alphas - 1.0)

    def delta_fn(eps: NDArray[np.float64]) -> NDArray[np.float64]:
        eps = np.asarray(eps, dtype=float)
        log_d = ((alphas[None, :] - 1.0) * (divergences[None, :] - eps[:, None]) + log_factor[None, :]).min(axis=1)
        renyi = np.minimum(np.exp(np.minimum(log_d, 0.0)), 1.0)
        return np.where(np.isfinite(eps), 1.0 - survive * (1.0 - renyi), 1.0 - survive)

    def epsilon_fn(d: NDArray[np.float64]) -> NDArray[np.float64]:
        d = np.asarray(d, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            rest = 1.0 - (1.0 - d) / survive  # the delta the no-leak part may spend
            eps = (divergences[None, :] + np.log1p(-1.0 / alphas)[None, :]
                   - (np.log(rest)[:, None] + np.log(alphas)[None, :]) / (alphas[None, :] - 1.0)).min(axis=1)
        eps = np.maximum(eps, 0.0)
        return np.where(d >= 1.0, 0.0, np.where(rest > 0.0, eps, np.inf))

    return FunctionCurve(delta_fn, epsilon_fn=epsilon_fn, delta_floor=1.0 - survive)


@dataclass(frozen=True)
class RenyiSearch:
    """:func:`renyi_bound`'s answer: the certified curve, the worst pair of each order's search (allowed
    pairs, witnesses for the lower bound), and the per-database terms for ranking other pairs."""

    curve: PrivacyCurve
    witnesses: tuple[tuple[frozenset[int], frozenset[int]], ...]
    divergences: NDArray[np.float64]
    leaks: NDArray[np.float64]

    def estimate(self, pair: tuple[frozenset[int], frozenset[int]]) -> PrivacyCurve:
        """The Renyi curve of one pair (its differing databases' terms summed): a bound for that pair
        alone, used to rank witnesses before composing them."""
        differing = sorted(pair[0] ^ pair[1])
        with np.errstate(over="ignore"):  # a sum beyond the double range: +inf, a bound of delta 1 at that order
            return renyi_curve(self.divergences[:, differing].sum(axis=1), float(self.leaks[differing].sum()))


def renyi_bound(constraints: ConstraintSet, neighborhood: str, divergences: NDArray[np.float64],
                leaks: NDArray[np.float64]) -> RenyiSearch:
    """:func:`renyi_curve` of certified upper bounds, over the allowed pairs, on the sum of the per-database
    divergences at each order (``divergences[order, database]``) and on the sum of the leaks: each sum is a
    maximum-weight problem (:func:`~gce.solvers.weights.worst_pair`, capped by the running computation's
    deadline), and the curve increases in every one."""
    # A sum beyond the double range (divergences near 1e308 on one database) is +inf: that order's bound is
    # then +inf (it bounds delta by 1), not searched; the other orders still bound the curve.
    results = [worst_pair(WeightProblem(constraints, w, neighborhood), None) if np.isfinite(w).all() else None
               for w in divergences]
    uppers = np.array([math.inf if r is None else r.upper_bound for r in results])
    if not leaks.any():
        leak = 0.0
    elif np.isfinite(leaks).all():
        leak = worst_pair(WeightProblem(constraints, leaks, neighborhood), None).upper_bound
    else:
        leak = math.inf
    witnesses = tuple(dict.fromkeys(r.witness for r in results if r is not None))
    return RenyiSearch(renyi_curve(uppers, leak), witnesses, divergences, leaks)

"""Labelled reproductions of 001's closed forms for composite hypotheses -- for comparison only.

NOTHING IN THIS MODULE IS A GUARANTEE. The functions below reproduce formulas
of 001 (Sec. V-B, Thm. 3, Cor. 6, Cor. 7, Eq. 3-4, Alg. 3) exactly as printed,
so that reports and tests can show them next to sound bounds. ``gce`` never
returns one of these values as a guarantee; the sound replacements are in
:mod:`gce.priors.coupling` and :mod:`gce.priors.subsampling`.

Two of them are unsound (docs/design.md, "Unsound formulas"; exact values by brute
force over canonical pairs):

1. The averaging formula of 001 Sec. V-B ("Computing an HDP guarantee"):
   after refinement, eps = ln(sum_i w_i e^{eps_i}), delta = sum_i w_i delta_i.

   * databases {0, 1}; db 0 runs a (0, 0.1)-DP mechanism, db 1 a pure 5-DP one;
     h0 = {} , h1 = 1/2 {0} + 1/2 {1}. Claimed (4.3136, 0.05); the exact delta at
     eps 4.3136 is 0.0743.
   * databases {0, 1, 2}, pure 5-DP randomized response on each;
     h0 = 1/2 {0} + 1/2 {1, 2}, h1 = 1/2 {} + 1/2 {1, 2}. Claimed pure DP at
     eps 4.3136; the exact delta there is 0.243.

2. Thm. 3 / Cor. 6 apply the same averaging to the subsampling route, which
   is unsound for heterogeneous mechanisms: [(6, 0), (0, 0.4)] gives the
   claimed (5.5958, 0.2667) where the exact delta at 5.5958 is 0.3102.

Cor. 7 (all mechanisms (eps', delta')) and Eq. 3-4 (the same closed form,
reached through the averaging formula with simple composition) held in every
brute-force check (k <= 6 here, k <= 8 in an earlier check); for pure DP their epsilon
is the exact largest privacy loss. They are still shown only as reproductions.

Alg. 3 (RefineTuples, App. A) is a correct utility: it builds a coupling of
the two hypotheses (the north-west-corner rule when tuples are taken in
order); what is unsound is the averaging applied afterwards.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

from ..errors import InvalidParameterError, UnsupportedCombinationError
from ..validation import is_integer, shown
from ..accounting import kinds
from ..accounting.guarantees import amplified
from ..distributions import Distribution
from ..model import Invocation, invocation_multiset

__all__ = [
    "Reproduction",
    "RefinedTuples",
    "refine_tuples",
    "averaging_formula",
    "averaging_formula_for",
    "simple_composition_example",
    "theorem3_as_printed",
    "corollary6_as_printed",
    "corollary7",
]

_LN2 = math.log(2.0)


@dataclass(frozen=True)
class Reproduction:
    """A value of one of 001's closed forms, as printed. NOT a guarantee.

    Attributes
    ----------
    label : str
        Which formula and its status, e.g. "001 Cor. 6 (as printed; unsound)".
    epsilon, delta : float
        The pair the formula claims.
    sound : bool or None
        False: known to be unsound in general (the counterexamples of docs/design.md, "Unsound formulas").
        None: not known to be unsound (held in every brute-force check), not
        proven here either.
    """

    label: str
    epsilon: float
    delta: float
    sound: bool | None


@dataclass(frozen=True)
class RefinedTuples:
    """The output of 001 Alg. 3: matched tuples (b0, b1, w), i.e. a coupling of h0 and h1.

    ``pairs[i] = (b0, b1, w)`` stands for (b0, w) in U_0 matched with (b1, w) in U_1.
    """

    pairs: tuple[tuple[frozenset[int], frozenset[int], float], ...]
    label: str = "001 Alg. 3 (RefineTuples)"

    @property
    def u0(self) -> tuple[tuple[frozenset[int], float], ...]:
        """The refined h0: (b0, weight) per matched tuple."""
        return tuple((b0, w) for b0, _, w in self.pairs)

    @property
    def u1(self) -> tuple[tuple[frozenset[int], float], ...]:
        """The refined h1: (b1, weight) per matched tuple."""
        return tuple((b1, w) for _, b1, w in self.pairs)


def _tuples(t: Distribution | Iterable[tuple[Iterable[int], float]],
            name: str) -> list[tuple[frozenset[int], Fraction]]:
    """Exact weights, normalised to sum to exactly 1 (Distribution allows a 1e-9 slack)."""
    try:
        d = t if isinstance(t, Distribution) else Distribution.of(t)
    except InvalidParameterError as err:
        raise err.within(name) from None
    exact = [Fraction(w) for w in d.weights]
    total = sum(exact)
    return [(s, w / total) for s, w in zip(d.sets, exact)]


def refine_tuples(
    t0: Distribution | Iterable[tuple[Iterable[int], float]],
    t1: Distribution | Iterable[tuple[Iterable[int], float]],
) -> RefinedTuples:
    """001 Alg. 3 (RefineTuples, App. A): split tuples until they match with equal weights.

    Each step takes the first tuple of T0 and of T1, matches the smaller weight
    w, and puts the larger tuple back (first) with its weight reduced by w.
    Weights are exact fractions, so both sides run out together; a step where
    the weights are equal consumes both tuples (the printed algorithm would put
    back a tuple of weight 0, which matches nothing of substance: it is
    dropped). Every step consumes at least one tuple for good and the last
    step consumes two, so there are at most |T0| + |T1| - 1 pairs.

    Parameters
    ----------
    t0, t1 : Distribution or iterable of (members, weight)

    Returns
    -------
    RefinedTuples
        Matched (b0, b1, w); the w of the pairs with b0 sum to h0(b0), those
        with b1 to h1(b1): a coupling of the two hypotheses.

    Examples
    --------
    >>> r = refine_tuples([({0}, 0.5), ({1, 2}, 0.5)], [(set(), 0.25), ({1, 2}, 0.75)])
    >>> [(sorted(b0), sorted(b1), w) for b0, b1, w in r.pairs]
    [([0], [], 0.25), ([0], [1, 2], 0.25), ([1, 2], [1, 2], 0.5)]
    """
    left, right = _tuples(t0, "t0"), _tuples(t1, "t1")
    pairs: list[tuple[frozenset[int], frozenset[int], float]] = []
    i = j = 0
    w0, w1 = left[0][1], right[0][1]
    while i < len(left) and j < len(right):
        w = min(w0, w1)
        pairs.append((left[i][0], right[j][0], float(w)))
        w0, w1 = w0 - w, w1 - w
        if w0 == 0:
            i += 1
            w0 = left[i][1] if i < len(left) else Fraction(0)
        if w1 == 0:
            j += 1
            w1 = right[j][1] if j < len(right) else Fraction(0)
    return RefinedTuples(tuple(pairs))


def averaging_formula(pairs: Iterable[tuple[float, float, float]]) -> Reproduction:
    """001 Sec. V-B, "Computing an HDP guarantee", as printed: UNSOUND.

    eps = ln(sum_i w_i e^{eps_i}), delta = sum_i w_i delta_i over matched
    tuples (w_i, eps_i, delta_i). Counterexamples: see the module docstring.

    Parameters
    ----------
    pairs : iterable of (weight, epsilon, delta)

    Examples
    --------
    >>> r = averaging_formula([(0.5, 0.0, 0.1), (0.5, 5.0, 0.0)])
    >>> r.label, round(r.epsilon, 4), round(r.delta, 4)
    ('001 Sec. V-B averaging formula (as printed; unsound)', 4.3136, 0.05)
    """
    items = [(float(w), float(e), float(d)) for w, e, d in pairs]
    if not items:
        raise InvalidParameterError("pairs", "needs at least one (weight, epsilon, delta)")
    top = max(e for w, e, _ in items if w > 0)
    eps = top + math.log(math.fsum(w * math.exp(e - top) for w, e, _ in items))
    delta = math.fsum(w * d for w, _, d in items)
    return Reproduction("001 Sec. V-B averaging formula (as printed; unsound)", eps, delta, sound=False)


def averaging_formula_for(
    h0: Distribution | Iterable[tuple[Iterable[int], float]],
    h1: Distribution | Iterable[tuple[Iterable[int], float]],
    invocations: Iterable[Invocation],
) -> Reproduction:
    """The averaging formula after Alg. 3, each matched pair composed by simple composition
    (sum eps, sum delta) of the invocations on b0 XOR b1, as in 001's example: UNSOUND.

    Raises
    ------
    UnsupportedCombinationError
        When an invocation's guarantee has no single (epsilon, delta) point.
    """
    invocations = tuple(invocations)
    rows = []
    for b0, b1, w in refine_tuples(h0, h1).pairs:
        eps = delta = 0.0
        for g, n in invocation_multiset(invocations, b0 ^ b1):
            point = kinds.point(g)
            if point is None:
                raise UnsupportedCombinationError(
                    f"the averaging formula needs (epsilon, delta) points; {shown(g)} has none")
            eps += n * point[0]
            delta += n * point[1]
        rows.append((w, eps, delta))
    return averaging_formula(rows)


def _log_uniform_nonempty(k: int) -> float:
    """ln(2^k - 1)."""
    return k * _LN2 + math.log1p(-math.exp(-k * _LN2))


def _log1p_exp(x: float) -> float:
    """ln(1 + e^x) without overflow (x up to the largest float)."""
    return x + math.log1p(math.exp(-x)) if x > 0 else math.log1p(math.exp(x))


def _check_k(k: int) -> int:
    """``k`` if it is an integer >= 1, else InvalidParameterError naming ``k``."""
    if not is_integer(k) or k < 1:
        raise InvalidParameterError("k", f"must be an integer >= 1, got {shown(k)}")
    return k


def simple_composition_example(k: int, epsilon: float, delta: float) -> Reproduction:
    """001 Eq. 3-4 as printed: the averaging formula with simple composition for k identical
    (eps, delta) mechanisms, h0 = {} and h1 uniform over the non-empty sets.

    eps = ln[((1 + e^eps)^k - 1) / (2^k - 1)], delta = k 2^{k-1} delta / (2^k - 1).
    Reached through the unsound averaging formula, but the same closed form as
    Cor. 7, which held in every brute-force check.
    """
    k = _check_k(k)
    softplus = _log1p_exp(epsilon)  # ln(1 + e^eps), finite for every finite eps
    log_num = k * softplus + math.log1p(-math.exp(-k * softplus))
    eps = log_num - _log_uniform_nonempty(k)
    d = k * delta * math.exp((k - 1) * _LN2 - _log_uniform_nonempty(k))
    return Reproduction("001 Eq. 3-4 (averaging formula with simple composition, as printed; "
                        "same closed form as Cor. 7)", eps, d, sound=None)


def theorem3_as_printed(points: Sequence[tuple[float, float]]) -> Reproduction:
    """001 Thm. 3 as printed: UNSOUND for heterogeneous mechanisms.

    eps = ln[sum_i 2^{k-i} e^{eps^_i} / (2^k - 1)], delta = sum_i 2^{k-i} delta^_i / (2^k - 1),
    with (eps^_i, delta^_i) = CompGuarantee(M_i, S_1/2(M_{i+1}), ..., S_1/2(M_k)) given in
    ``points`` (i = 1..k). The sound form is :class:`gce.priors.subsampling.SubsamplingCurve`.
    """
    points = [(float(e), float(d)) for e, d in points]
    k = _check_k(len(points))
    log_w = [(k - i) * _LN2 - _log_uniform_nonempty(k) for i in range(1, k + 1)]
    top = max(lw + e for lw, (e, _) in zip(log_w, points))
    eps = top + math.log(math.fsum(math.exp(lw + e - top) for lw, (e, _) in zip(log_w, points)))
    delta = math.fsum(math.exp(lw) * d for lw, (_, d) in zip(log_w, points))
    return Reproduction("001 Thm. 3 (as printed; unsound)", eps, delta, sound=False)


def corollary6_as_printed(
    mechanisms: Sequence[tuple[float, float]],
    hats: Sequence[tuple[float, float]] | None = None,
) -> Reproduction:
    """001 Cor. 6 as printed: UNSOUND for heterogeneous mechanisms.

    eps = ln[sum_i 2^{k-i} e^{eps_i + eps^_i} / (2^k - 1)],
    delta = sum_i 2^{k-i} (delta_i + delta^_i) / (2^k - 1), with
    (eps^_i, delta^_i) = CompGuarantee(S_1/2(M_{i+1}), ..., S_1/2(M_k)): by default
    simple composition of the amplified points (ln(1 + (e^eps_j - 1)/2), delta_j / 2)
    (001's proof of Cor. 7 does the same), or as given in ``hats``.

    Examples
    --------
    >>> r = corollary6_as_printed([(6.0, 0.0), (0.0, 0.4)])
    >>> r.label, round(r.epsilon, 4), round(r.delta, 4)   # exact delta at 5.5958: 0.3102
    ('001 Cor. 6 (as printed; unsound)', 5.5958, 0.2667)
    """
    mechanisms = [(float(e), float(d)) for e, d in mechanisms]
    k = _check_k(len(mechanisms))
    if hats is None:
        amp = [amplified(e, d, 0.5) for e, d in mechanisms]
        hats = [(math.fsum(a[0] for a in amp[i + 1:]), math.fsum(a[1] for a in amp[i + 1:])) for i in range(k)]
    elif len(hats) != k:
        raise InvalidParameterError("hats", f"need one (epsilon, delta) per mechanism ({k}), got {len(hats)}")
    r = theorem3_as_printed([(e + he, d + hd) for (e, d), (he, hd) in zip(mechanisms, hats)])
    return Reproduction("001 Cor. 6 (as printed; unsound)", r.epsilon, r.delta, sound=False)


def corollary7(k: int, epsilon: float, delta: float) -> Reproduction:
    """001 Cor. 7 as printed: k mechanisms, all (eps', delta').

    eps = ln[((e^eps' + 1)^k - 1) / (2^k - 1)], delta = 2^{k-1} k delta' / (2^k - 1).
    Held in every brute-force check (k <= 6 in tests/test_reproductions.py,
    k <= 8 in an earlier check); not proven here, so still only a reproduction.

    Examples
    --------
    >>> r = corollary7(3, 1.0, 1e-6)
    >>> r.label, round(r.epsilon, 4), round(r.delta / 1e-6, 4)
    ('001 Cor. 7 (as printed; held in brute-force checks)', 1.9742, 1.7143)
    """
    r = simple_composition_example(k, epsilon, delta)
    return Reproduction("001 Cor. 7 (as printed; held in brute-force checks)", r.epsilon, r.delta, sound=None)

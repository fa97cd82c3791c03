"""uniform(min, max) priors without constraints: "in none" against the uniform law over sets of allowed sizes.

The uniform law over all subsets is Poisson subsampling at rate 1/2 (:func:`~.poisson.poisson_curve`);
:func:`uniform_curve` takes the empty set's share out exactly for "none vs at least one" and charges the
excluded sizes' mass otherwise; for at most :data:`SIZES_LIMIT` sizes, joint convexity over the sizes, each
an allocation (:func:`~.random_allocation.allocation_curve`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray
from scipy import fft as _fft
from scipy import special

from ...accounting.curves import PrivacyCurve
from ...errors import InvalidParameterError, NumericalLimitError
from .bracket import _TAIL_SHARE, _WHICH, DEFAULT_RTOL, TAIL, AllocationCurve, LowerBound, _check_count, _Law
from .decomposition import _LOWER_POINTS
from .poisson import poisson_curve
from .random_allocation import allocation_curve
from .ratios import GaussianRatio
from .uniform_grid import _cells, _direction_grid, _Grid, _noise, _power


class _Charged(PrivacyCurve):
    """``delta(eps) + e^(eps + log_b)`` (capped at 1): an upper curve moved up by a charge
    (:func:`uniform_curve`); in log space, as the charge ``2^-n`` underflows for large n."""

    def __init__(self, curve: PrivacyCurve, a: float, log_b: float):
        self._curve, self._a, self._log_b = curve, float(a), float(log_b)
        self.delta_floor = min(curve.delta_floor + self._a, 1.0)

    def _delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        charge = self._a + np.exp(np.minimum(eps + self._log_b, 700.0))
        return np.minimum(np.atleast_1d(self._curve.delta(eps)) + charge, 1.0)


def log_size_mass_outside(n: int, min_members: int, max_members: int | None) -> float:
    """``log(1 - p)``: the log of the Binomial(n, 1/2) mass of sizes outside ``[min_members, max_members]``
    (``-inf`` when every size is allowed), rounded up; in log space, as ``2^-n`` underflows for large n."""
    high = n if max_members is None else min(max_members, n)
    sizes = np.arange(n + 1)
    log_pmf = special.gammaln(n + 1) - special.gammaln(sizes + 1) - special.gammaln(n - sizes + 1) - n * math.log(2)
    outside = (sizes < min_members) | (sizes > high)
    if not outside.any():
        return -math.inf
    return float(special.logsumexp(log_pmf[outside])) + 1e-9


def uniform_curve(mus: Sequence[float], min_members: int, max_members: int | None = None,
                  rtol: float = DEFAULT_RTOL, delta: float | None = 1e-6,
                  epsilon: float | None = None) -> AllocationCurve:
    """The curve of "in none" against uniform over the sets of ``min_members`` to ``max_members`` of the
    ``n = len(mus)`` databases (001's "in at least one" for ``min_members = 1``), database ``i`` running a
    Gaussian of ``mus[i]``: an upper curve with its certified lower curve.

    The uniform law over all subsets is Poisson subsampling at rate 1/2, ``P_1/2 = p P_U + (1 - p) P_R``
    with ``P_U`` the prior's output law, ``p`` the Binomial(n, 1/2) mass of the allowed sizes and ``P_R``
    the rest. Hence, for every event A, ``P_U(A) <= P_1/2(A) / p <= P_1/2(A) + (1 - p) / p`` and
    ``P_U(A) >= P_1/2(A) - (1 - p)``, so both directions obey

        delta_1/2(eps) - (1 - p) - e^eps (1 - p) / p  <=  delta_U(eps)  <=  delta_1/2(eps) + e^eps (1 - p) / p,

    with ``delta_1/2`` the curve of :func:`poisson_curve` at rate 1/2 (its own bracket carried through).
    For "none vs at least one" (and uniform(0..n)) the empty set's share is taken out exactly
    (:class:`_WithoutEmpty`). Other priors of at most :data:`SIZES_LIMIT` sizes: joint convexity over the
    sizes (:func:`_sizes_curve`); more sizes: the charge above (refused when ``1 - p >= 1/2``).
    """
    mus = [float(GaussianRatio(m).mu) for m in mus]
    n = len(mus)
    if n == 0:
        raise InvalidParameterError("mus", "needs one mu per database, got none")
    min_members = _check_count(min_members, "min_members", low=0)
    if max_members is not None:
        max_members = _check_count(max_members, "max_members", low=min_members)
    log_outside = log_size_mass_outside(n, min_members, max_members)
    outside = math.exp(log_outside)
    high = n if max_members is None else min(max_members, n)
    without_empty = min_members <= 1 and high >= n
    if not without_empty and high - min_members + 1 <= SIZES_LIMIT:
        return _sizes_curve(mus, min_members, high, rtol, delta, epsilon)
    if outside >= 0.5:
        raise NumericalLimitError(f"uniform({min_members}, {max_members}) holds only {1.0 - outside:.3g} of "
                                  f"the subsets of {n} databases (the rate-1/2 bound would charge more than "
                                  f"1) over more than {SIZES_LIMIT} sizes (joint convexity over the sizes)")
    values, counts = np.unique(np.array(mus), return_counts=True)
    half = poisson_curve([(float(m), 0.5, int(c)) for m, c in zip(values, counts)], rtol=rtol, delta=delta,
                         epsilon=epsilon)
    log_b = log_outside - math.log1p(-outside)  # log((1 - p) / p)
    if without_empty and not hasattr(half._upper[0], "direction"):
        # No grid fitted in the time limit (closed forms, both directions alike): the upper curve moved by the
        # empty set's share as in :class:`_WithoutEmpty`, with the same curve for both directions, delta 0 below.
        curve = half._upper[0]
        floor = max(curve.delta_floor / (1.0 - outside), curve.delta_floor * (1.0 + 1.0 / (1.0 - outside)))
        upper = _WithoutEmpty(curve.delta, curve.delta, outside, floor)
        return AllocationCurve([upper], half.lower, f"uniform({min_members}..{n}) of {n} as Poisson subsampling "
                                                     f"at rate 1/2 less the empty set's share; {half.description}")
    if without_empty:
        composed = half._upper[0]  # the batch engine's LawCurve: directions P||Q (0) and Q||P (1)
        remove, add = composed.direction(0), composed.direction(1)
        floor = max(remove.delta_floor / (1.0 - outside), add.delta_floor * (1.0 + 1.0 / (1.0 - outside)))
        upper = _WithoutEmpty(remove.delta, add.delta, outside, floor)
        below = composed.lower
        lower = LowerBound([(_WithoutEmpty(lambda e: below.direction_delta(0, e),
                                           lambda e: below.direction_delta(1, e), outside, upper=False),
                              0.0, 0.0)])
        how = f"less the empty set's share e^{log_outside:.6g} (exactly)"
    else:
        upper = _Charged(half, 0.0, log_b)
        how = f"conditioned on the size (charge e^(eps {log_b:+.4g}))"
        lower = LowerBound([(half.lower, outside, math.exp(log_b))])
    shown = max_members if max_members is not None else n
    return AllocationCurve([upper], lower, f"uniform({min_members}..{shown}) of {n} as Poisson subsampling at "
                                           f"rate 1/2 {how}; {half.description}")


class _WithoutEmpty(PrivacyCurve):
    """The rate-1/2 curve with the empty set's share ``c`` taken out exactly (:func:`uniform_curve` with only
    the empty set excluded, whose output law is Q itself): ``P_U = (P_1/2 - c Q) / (1 - c)``, so for every A

        P_U(A) - e^eps Q(A) = (P_1/2(A) - e^eps' Q(A)) / (1 - c),            e^eps' = c + (1 - c) e^eps,
        Q(A) - e^eps P_U(A) = (1 + e^eps c / (1 - c)) (Q(A) - e^eps'' P_1/2(A)),  e^eps'' = e^eps / (1 - c + c e^eps),

    so delta_U(eps) is the larger of ``delta_1/2,PQ(eps') / (1 - c)`` and
    ``(1 + e^eps c / (1 - c)) delta_1/2,QP(eps'')`` (eps', eps'' in [0, eps] for eps >= 0), each direction's
    upper curve bounding its own term (the same identities turn each direction's lower curve into a lower
    curve of P_U's).

    ``remove`` and ``add``: each direction's delta as a function of eps (upper, or lower)."""

    def __init__(self, remove, add, c: float, floor: float = 0.0, upper: bool = True):
        self._remove, self._add, self._c, self._upper = remove, add, float(c), bool(upper)
        self.delta_floor = min(float(floor), 1.0)

    def _delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        eps = np.atleast_1d(np.asarray(eps, dtype=float))
        c = self._c
        log_c = math.log(c) if c > 0 else -np.inf
        e = eps
        # log(c + (1 - c) e^eps), in log space (c may underflow to 0; eps may exceed e^eps's range).
        first = np.maximum(np.logaddexp(log_c, math.log1p(-c) + e), 0.0)
        pq = np.atleast_1d(self._remove(first)) / (1.0 - c)
        # Q||P: the true delta does not increase with eps, so the term at min(eps, log(1/c)) bounds it too
        # (there the factor 1 + e^eps c / (1 - c) is at most 1 + 1 / (1 - c)); not for a lower curve.
        qp = np.full_like(e, np.inf)
        for x in (e, np.minimum(e, -log_c)) if self._upper else (e,):
            second = np.maximum(x - np.logaddexp(math.log1p(-c), log_c + x), 0.0)
            factor = 1.0 + np.exp(np.minimum(x + log_c, 700.0)) / (1.0 - c)
            qp = np.minimum(qp, factor * np.atleast_1d(self._add(second)))
        return np.minimum(np.maximum(pq, qp), 1.0)


#: Most sizes of a uniform(min, max) prior bounded by joint convexity over its sizes (:func:`_sizes_curve`).
SIZES_LIMIT = 8


class _Mixed(PrivacyCurve):
    """``sum_s w_s delta_s(eps)``: joint convexity over a mixture's components (:func:`_sizes_curve`)."""

    def __init__(self, curves: Sequence[PrivacyCurve], weights: Sequence[float]):
        self._curves, self._weights = tuple(curves), tuple(float(w) for w in weights)
        self.delta_floor = min(sum(w * c.delta_floor for c, w in zip(self._curves, self._weights)), 1.0)

    def _delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        total = sum(w * np.atleast_1d(c.delta(eps)) for c, w in zip(self._curves, self._weights))
        return np.minimum(total * (1.0 + 1e-12), 1.0)


def _mixture_lower_laws(ratio: GaussianRatio, n: int, weights: dict[int, float], grid: _Grid) -> tuple[_Law, _Law]:
    """The mixture prior's pair garbled by the cells of each ``W_i`` summed (as :func:`_lower_laws`, module
    doc): under P the law of ``S_J`` is ``sum_s w_s`` (s tilted terms, ``n - s`` plain), a post-processing of
    the true pair, so its divergence is a lower bound."""
    q_cells, p_cells = _cells(ratio, grid)
    size = grid.size
    f_q = _fft.rfft(q_cells, size)
    f_p = _fft.rfft(p_cells, size)
    q = _fft.irfft(_power([(f_q, n)]), size)
    p = sum(w * _fft.irfft(_power([(f_p, s), (f_q, n - s)]), size) for s, w in weights.items() if w > 0)
    noise = _noise(size, n, (q_cells, p_cells))
    q, p = np.maximum(q, 0.0), np.maximum(p, 0.0)
    keep_pq, keep_qp = p > 0, q > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        loss = np.log(p) - np.log(q)
    return (_Law(loss[keep_pq], p[keep_pq], 0.0, noise, noise), _Law(-loss[keep_qp], q[keep_qp], 0.0, noise, noise))


def _sizes_curve(mus: Sequence[float], low: int, high: int, rtol: float, delta: float | None,
                 epsilon: float | None) -> AllocationCurve:
    """uniform(low..high) of n = len(mus) databases by joint convexity over its sizes: the prior is the
    mixture ``sum_s w_s U_s`` (w_s proportional to C(n, s), U_s uniform over the s-sets), and hockey-stick
    divergences are jointly convex, so in both directions ``delta <= sum_s w_s delta_s`` with ``delta_s`` the
    s-of-n allocation's upper curve at the largest mu (0 for s = 0: the same law as "in none"). Below: the
    mixture garbled by the summed cells at the smallest mu (:func:`_mixture_lower_laws`)."""
    n = len(mus)
    sizes = np.arange(low, high + 1)
    log_w = special.gammaln(n + 1) - special.gammaln(sizes + 1) - special.gammaln(n - sizes + 1)
    weights = np.exp(log_w - special.logsumexp(log_w))
    top, bottom = max(mus), min(mus)
    curves = []
    from ...accounting.curves import GaussianCurve
    for s in sizes.tolist():
        curves.append(GaussianCurve(0.0) if s == 0 or top == 0.0
                      else allocation_curve(top, n, s, rtol=rtol, delta=delta, epsilon=epsilon))
    upper = _Mixed(curves, weights)
    ratio = GaussianRatio(bottom)
    parts = []
    if bottom > 0.0:
        tail = TAIL if delta is None else max(TAIL, _TAIL_SHARE * delta)
        for d, which in enumerate(_WHICH):
            grid = _direction_grid(ratio, n, _LOWER_POINTS, tail, which)
            law = _mixture_lower_laws(ratio, n, dict(zip(sizes.tolist(), weights.tolist())), grid)[d]
            parts.append((law.curve(), law.slack, law.slack_other))
    lower = LowerBound(parts or [(GaussianCurve(0.0), 0.0, 0.0)])
    return AllocationCurve([upper], lower, f"uniform({low}..{high}) of {n}: joint convexity over its "
                                           f"{len(sizes)} sizes (allocations at mu {top:g}); below: the "
                                           f"mixture garbled by sum_i W_i at mu {bottom:g}")

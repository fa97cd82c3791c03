"""One database's likelihood ratio ``W = dP_i / dQ_i`` under Q: the only thing the methods read.

Other mechanisms
----------------
Nothing in the methods (package doc) is particular to the Gaussian: the spread, the garbling and the decomposition need only the
law of one database's ratio ``W`` under Q (its cell masses ``Q(cell)``, ``E_Q[W; cell]`` and its tail
``E_Q[(W - B)_+]``). :class:`LaplaceRatio` is the Laplace pair's (two atoms, ``e^-eps`` and ``e^eps``, and
a continuous part between, bounded: its clamp is exact), :class:`CanonicalRatio` the canonical pair of an
(eps, delta) guarantee's (002 eqs. 9-10: the atoms ``0``, ``e^-eps``, ``e^eps`` and P's own mass ``delta``),
:class:`SubsampledRatio` any of them on a Poisson subsample (``1 - r + r W``). Databases with different
parameters of one family: the largest dominates (a pair of smaller parameter is a garbling of it:
Blackwell's theorem for binary experiments, the curves being ordered), so it bounds the allocation above and
the smallest below; for (eps, delta) the order is partial (larger eps and larger delta).

P-mass outside Q's support (``singular``: a canonical pair's ``delta``, W = +inf) is in no cell: above it is
part of the clamp's leftover (``excess``), charged at infinite loss; below, "some member showed it" is an
outcome of the garbling of its own (P-mass ``1 - (1 - singular)^k``, Q-mass 0), kept through the
compositions. Q-mass outside P's support (W = 0) is an ordinary value of W (the spread keeps it at 0, where
the direction Q||P charges ``Q(S = 0)`` at infinite loss). With canonical pairs the decomposition's blocks
are computed exactly (``S`` over the multinomial counts of the three atoms: :func:`~.decomposition._canonical_block_laws`).

References
----------
Blackwell, "Equivalent comparisons of experiments", Ann. Math. Stat. 1953 (garblings and dominance).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import special

from ...errors import InvalidParameterError, NumericalLimitError
from ...validation import is_number, shown


def _phi_between(lo: NDArray[np.float64], hi: NDArray[np.float64]) -> NDArray[np.float64]:
    """Phi(hi) - Phi(lo) for lo <= hi, accurate in both tails (upper tail by survival functions)."""
    return np.where(lo > 0, special.ndtr(-lo) - special.ndtr(-hi), special.ndtr(hi) - special.ndtr(lo))


def _phi_cells(z: NDArray[np.float64]) -> NDArray[np.float64]:
    """``_phi_between(z[:-1], z[1:])`` with each edge's two tails evaluated once (the same numbers)."""
    below, above = special.ndtr(z), special.ndtr(-z)
    return np.where(z[:-1] > 0, above[:-1] - above[1:], below[1:] - below[:-1])


@dataclass(frozen=True)
class GaussianRatio:
    """The likelihood ratio ``W = dP/dQ`` of the Gaussian pair ``P = N(mu, 1)``, ``Q = N(0, 1)``, under Q:
    ``W = exp(mu Z - mu^2 / 2)``, lognormal with mean 1 (``mu = 0``: ``W = 1``).

    Every Gaussian mechanism of L2 sensitivity ``c`` and noise ``sigma`` is a post-processing of this pair with
    ``mu = c / sigma``, the same map with and without the target (Dong, Roth and Su 2022).
    """

    mu: float

    def __post_init__(self) -> None:
        if not is_number(self.mu) or not 0.0 <= self.mu < 40.0:
            raise InvalidParameterError("mu", f"must be a number in [0, 40), got {shown(self.mu)}")
        object.__setattr__(self, "mu", float(self.mu))

    @property
    def label(self) -> str:
        return f"mu {self.mu:g}"

    @property
    def trivial(self) -> bool:
        return self.mu == 0.0

    @property
    def singular(self) -> float:
        """P-mass outside Q's support: none."""
        return 0.0

    def _z(self, w: NDArray[np.float64]) -> NDArray[np.float64]:
        with np.errstate(divide="ignore"):
            return (np.log(w) + 0.5 * self.mu**2) / self.mu

    def cells(self, edges: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(Q(W in [e_j, e_{j+1})), P(W in [e_j, e_{j+1}))) for ascending edges (the last may be inf);
        P(cell) = E_Q[W; cell]."""
        edges = np.asarray(edges, dtype=float)
        if self.mu == 0.0:  # W = 1
            q = ((edges[:-1] <= 1.0) & (1.0 < edges[1:])).astype(float)
            return q, q.copy()
        z = self._z(edges)
        return _phi_cells(z), _phi_cells(z - self.mu)

    def excess(self, b: float) -> float:
        """E_Q[(W - b)_+] = P(W >= b) - b Q(W >= b): the P-mass left over by clamping W at b."""
        if self.mu == 0.0:
            return max(1.0 - b, 0.0)
        z = float(self._z(np.array([b]))[0])
        return max(float(special.ndtr(self.mu - z)) - b * float(special.ndtr(-z)), 0.0)

    def clamp(self, tail: float) -> float:
        """The smallest b (to 1%) with ``excess(b) <= tail``."""
        if self.mu == 0.0:
            return 1.0
        lo, hi = 0.0, 1.0
        while self.excess(math.exp(hi)) > tail:
            lo, hi = hi, 2.0 * hi
            if hi > 700:
                raise NumericalLimitError(f"mu = {self.mu:g}: the likelihood ratio's tail reaches beyond e^700")
        while hi - lo > 0.01:
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if self.excess(math.exp(mid)) > tail else (lo, mid)
        return math.exp(hi)

    def variance(self) -> float:
        """Var_Q(W) = e^{mu^2} - 1."""
        return math.expm1(min(self.mu**2, 700.0))


@dataclass(frozen=True)
class LaplaceRatio:
    """The likelihood ratio ``W = dP/dQ`` of the Laplace pair ``P = Lap(s, b)``, ``Q = Lap(0, b)`` under Q,
    with ``epsilon = s / b``: ``W = exp((|x| - |x - s|) / b)``, an atom ``e^-eps`` of Q-mass 1/2 (x <= 0), an
    atom ``e^eps`` of Q-mass ``e^-eps / 2`` (x >= s) and ``exp((2x - s) / b)`` in between.

    Every Laplace mechanism of L1 sensitivity ``s`` and scale ``b`` is a post-processing of this pair (its
    output is x itself); a pair of smaller epsilon is a garbling of it (its curve lies below in both
    directions: Blackwell's theorem for binary experiments).
    """

    epsilon: float

    def __post_init__(self) -> None:
        if not is_number(self.epsilon) or not 0.0 <= self.epsilon < 700.0:
            raise InvalidParameterError("epsilon", f"must be a number in [0, 700), got {shown(self.epsilon)}")
        object.__setattr__(self, "epsilon", float(self.epsilon))

    @property
    def label(self) -> str:
        return f"Laplace epsilon {self.epsilon:g}"

    @property
    def trivial(self) -> bool:
        return self.epsilon == 0.0

    @property
    def singular(self) -> float:
        """P-mass outside Q's support: none."""
        return 0.0

    def cells(self, edges: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(Q(W in [e_j, e_{j+1})), P(W in [e_j, e_{j+1}))) for ascending edges (the last may be inf)."""
        edges = np.asarray(edges, dtype=float)
        e = self.epsilon
        lo_edge, hi_edge = edges[:-1], edges[1:]
        if e == 0.0:
            q = ((lo_edge <= 1.0) & (1.0 < hi_edge)).astype(float)
            return q, q.copy()
        low, high = math.exp(-e), math.exp(e)
        # the open middle, in u = x / b in (0, e): W = exp(2u - e); clip each cell's u-range to it
        with np.errstate(divide="ignore"):
            u = np.clip((np.log(np.maximum(edges, 0.0)) + e) / 2.0, 0.0, e)
        u0, u1 = u[:-1], u[1:]
        q = 0.5 * (np.exp(-u0) - np.exp(-u1))                 # Q density e^{-u} / 2 on (0, e)
        p = 0.5 * (np.exp(u1 - e) - np.exp(u0 - e))           # P density e^{-(e - u)} / 2 on (0, e)
        at_low = (lo_edge <= low) & (low < hi_edge)
        at_high = (lo_edge <= high) & (high < hi_edge)
        q = q + 0.5 * at_low + 0.5 * math.exp(-e) * at_high
        p = p + 0.5 * math.exp(-e) * at_low + 0.5 * at_high
        return q, p

    def excess(self, b: float) -> float:
        """E_Q[(W - b)_+] (0 once b >= e^eps), by the cells above b."""
        if b >= math.exp(self.epsilon):
            return 0.0
        q, p = self.cells(np.array([b, np.inf]))
        return max(float(p[0] - b * q[0]), 0.0)

    def clamp(self, tail: float) -> float:
        """W <= e^eps: the clamp is exact."""
        return math.exp(self.epsilon)

    def variance(self) -> float:
        """Var_Q(W) = e^{-2eps} / 2 + e^eps / 2 + (e^eps - e^{-2eps}) / 6 - 1."""
        e = self.epsilon
        return max(0.5 * math.exp(-2 * e) + 0.5 * math.exp(e) + (math.exp(e) - math.exp(-2 * e)) / 6 - 1, 0.0)


@dataclass(frozen=True)
class CanonicalRatio:
    """The likelihood ratio ``W = dP/dQ`` of the canonical pair of an ``(epsilon, delta)`` guarantee under Q
    (002, eqs. 9-10; Kairouz, Oh and Viswanath 2015, Thm. 2.4; docs/design.md, "The canonical pair makes brute
    force possible").

    With ``a = (1 - delta) e^eps / (1 + e^eps)`` and ``b = (1 - delta) / (1 + e^eps)`` the pair on the outputs
    {0, 1, 2, 3} is ``P = (delta, a, b, 0)`` (with the target) and ``Q = (0, b, a, delta)`` (without), so under
    Q the ratio takes the values ``e^eps`` (Q-mass b), ``e^-eps`` (Q-mass a) and ``0`` (Q-mass delta, output 3:
    Q's only), and P has the mass ``delta`` where Q has none (output 0, ``W = +inf``): :attr:`singular`. Pure
    DP is ``delta = 0`` (randomized response).

    Every (epsilon, delta)-DP mechanism is a post-processing of this pair, the same map with and without the
    target (002 Thm. II.5), so the allocation of canonical pairs is the worst case of (epsilon, delta)-DP
    mechanisms, and the pair of ``(e2, d2)`` with ``e2 <= e1`` and ``d2 <= d1`` is a garbling of the pair of
    ``(e1, d1)`` (its curve ``d + (1 - d)(e^e - e^eps')_+ / (1 + e^e)`` lies below in both directions:
    Blackwell's theorem for binary experiments). Two pairs with the larger epsilon on one and the larger delta
    on the other are not ordered.

    P-mass outside Q's support (module doc): :meth:`cells` gives the absolutely continuous part only
    (``P(cell) = E_Q[W; cell]``, the values of W on Q's support), :meth:`excess` counts ``delta`` in the mass
    left over by any clamp (so the spread pair above charges it at infinite loss), and the garbled pair below
    keeps the event "a member showed output 0" as an outcome of its own (its P-mass ``1 - (1 - delta)^k``, Q-mass
    0: :func:`~.uniform_grid._lower_laws`). Q's only output (``W = 0``) is a value of W like the others: it stays at 0 in the
    spread and in the first cell of the garbling.

    Examples
    --------
    1 of 10 databases, each (1, 1e-6)-DP: exact-count (:func:`gce.priors.exact.exact_count_curve`) gives
    delta 0.0181118702 at epsilon 0.5.

    >>> from gce.priors.allocation import allocation_curve
    >>> low, high = allocation_curve(CanonicalRatio(1.0, 1e-6), 10, epsilon=0.5).delta_bracket(0.5)
    >>> 0.01811186 < low <= 0.0181118702 <= high < 0.01811188
    True
    """

    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        if not is_number(self.epsilon) or not 0.0 <= self.epsilon < 700.0:
            raise InvalidParameterError("epsilon", f"must be a number in [0, 700), got {shown(self.epsilon)}")
        if not is_number(self.delta) or not 0.0 <= self.delta < 1.0:
            raise InvalidParameterError("delta", f"must be a number in [0, 1), got {shown(self.delta)}")
        object.__setattr__(self, "epsilon", float(self.epsilon))
        object.__setattr__(self, "delta", float(self.delta))

    @property
    def label(self) -> str:
        if self.delta == 0.0:
            return f"pure epsilon {self.epsilon:g}"
        return f"approx epsilon {self.epsilon:g}, delta {self.delta:g}"

    @property
    def trivial(self) -> bool:
        return self.epsilon == 0.0 and self.delta == 0.0

    @property
    def singular(self) -> float:
        """P-mass outside Q's support (output 0, ``W = +inf``): ``delta``."""
        return self.delta

    def _atoms(self) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """(values of W on Q's support, their Q-masses, their P-masses): ``0``, ``e^-eps``, ``e^eps``."""
        e, keep = self.epsilon, 1.0 - self.delta
        high, low = float(special.expit(e)), float(special.expit(-e))  # e^eps / (1 + e^eps), 1 / (1 + e^eps)
        values = np.array([0.0, math.exp(-e), math.exp(e)])
        return values, np.array([self.delta, keep * high, keep * low]), np.array([0.0, keep * low, keep * high])

    def cells(self, edges: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(Q(W in [e_j, e_{j+1})), P(W in [e_j, e_{j+1}))) for ascending edges (the last may be inf), P's part
        on Q's support only (``E_Q[W; cell]``; the mass :attr:`singular` is in no cell)."""
        edges = np.asarray(edges, dtype=float)
        values, q_mass, p_mass = self._atoms()
        inside = (edges[:-1, None] <= values[None, :]) & (values[None, :] < edges[1:, None])
        return inside @ q_mass, inside @ p_mass

    def excess(self, b: float) -> float:
        """The P-mass left over by clamping W at b, ``P(W >= b) - b Q(W >= b) = E_Q[(W - b)_+] + delta``: the
        singular mass is never clamped away."""
        values, q_mass, _ = self._atoms()
        return float(np.sum(q_mass * np.maximum(values - b, 0.0))) + self.delta

    def clamp(self, tail: float) -> float:
        """W <= e^eps on Q's support: the clamp is exact (what is left, ``delta``, is P's own mass)."""
        return math.exp(self.epsilon)

    def variance(self) -> float:
        """Var_Q(W) = (1 - delta) (e^{2 eps} + e^{-eps}) / (1 + e^eps) - (1 - delta)^2."""
        e, keep = self.epsilon, 1.0 - self.delta
        second = math.exp(min(2.0 * e - float(np.logaddexp(0.0, e)), 700.0)) + math.exp(-e) * float(special.expit(-e))
        return max(keep * second - keep * keep, 0.0)


@dataclass(frozen=True)
class SubsampledRatio:
    """The ratio of a mechanism run on a Poisson subsample at ``rate``: the pair ``((1 - r) Q + r P, Q)``,
    whose likelihood ratio is ``1 - r + r W`` (``inner`` the mechanism's ratio W)."""

    inner: object
    rate: float

    def __post_init__(self) -> None:
        if not isinstance(self.inner, (GaussianRatio, LaplaceRatio, CanonicalRatio)):
            raise InvalidParameterError("inner", f"must be a Gaussian, Laplace or canonical ratio, got "
                                                 f"{shown(self.inner)}")
        if not is_number(self.rate) or not 0.0 < self.rate <= 1.0:
            raise InvalidParameterError("rate", f"must be a probability in (0, 1], got {shown(self.rate)}")
        object.__setattr__(self, "rate", float(self.rate))

    @property
    def label(self) -> str:
        return f"{self.inner.label} subsampled at {self.rate:g}"

    @property
    def trivial(self) -> bool:
        return self.inner.trivial

    @property
    def singular(self) -> float:
        """P-mass outside Q's support: ``rate`` times the mechanism's."""
        return self.rate * self.inner.singular

    def _inner_edges(self, edges: NDArray[np.float64]) -> NDArray[np.float64]:
        r = self.rate
        with np.errstate(invalid="ignore"):
            return np.maximum((np.asarray(edges, dtype=float) - (1.0 - r)) / r, 0.0)

    def cells(self, edges: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        q, p = self.inner.cells(self._inner_edges(edges))
        return q, (1.0 - self.rate) * q + self.rate * p

    def excess(self, b: float) -> float:
        r = self.rate
        return r * self.inner.excess(max((b - (1.0 - r)) / r, 0.0))

    def clamp(self, tail: float) -> float:
        r = self.rate
        return 1.0 - r + r * self.inner.clamp(tail / r)

    def variance(self) -> float:
        return self.rate**2 * self.inner.variance()


_RATIOS = (GaussianRatio, LaplaceRatio, CanonicalRatio, SubsampledRatio)

"""Binomial probabilities in log space, accurate for any count, and windows that hold their mass.

The exact composition of ``n`` identical (eps, delta) guarantees (002 Thm. III.3)
is a sum over a Binomial(n, p) count with p = 1 / (1 + e^eps). Two things go
wrong with the obvious code when n is large:

* ``gammaln(n + 1) - gammaln(l + 1) - gammaln(n - l + 1)`` subtracts numbers of
  size n log n, so at n = 10^9 the log-probabilities carry an absolute error of
  about 10^-6 (a relative error of 10^-6 in every mass), and at 10^12 of 10^-3;
* the full range l = 0..n costs O(n) memory, although all but O(sqrt(n)) of the
  terms are below the smallest double.

:func:`log_pmf` uses Loader's saddle-point expansion (Loader 2000, "Fast and
accurate computation of binomial probabilities"; the algorithm of R's
``dbinom``), whose absolute error in the log-probability is a few units of
double round-off whatever n is. :func:`window` returns the counts whose mass is
not negligible and a certified upper bound on the mass outside them, which the
caller adds to the infinite-loss mass (the pessimistic direction, as
dp-accounting does with truncated tails in ``pld/pld_pmf.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import special

__all__ = ["log_pmf", "Window", "window", "log_softplus_pair", "FULL_RANGE", "LOG_NEGLIGIBLE"]

#: Counts up to this n are kept whole (no window search): the cost is a few microseconds.
FULL_RANGE = 100_000
#: A count whose log-probability is below this is outside the window (e^-750 < 5e-324).
LOG_NEGLIGIBLE = -750.0

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
# Coefficients of the Stirling series log n! - log(sqrt(2 pi n) (n/e)^n) = 1/(12n) - 1/(360n^3) + ...
_S0, _S1, _S2, _S3, _S4 = 1 / 12, 1 / 360, 1 / 1260, 1 / 1680, 1 / 1188
#: Below this n, the Stirling error comes from log-gamma (absolute error ~1e-14 there).
_STIRLING_SERIES_FROM = 16.0
#: Terms of bd0's series; |v| < 1/19 there, so 12 terms reach below 1e-30 relative.
_BD0_TERMS = 12


def _stirling_error(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """log x! - log(sqrt(2 pi x) (x/e)^x), for x >= 1 (Loader 2000, Sec. 2)."""
    out = np.empty_like(x)
    small = x < _STIRLING_SERIES_FROM
    xs = x[small]
    out[small] = special.gammaln(xs + 1.0) - (xs + 0.5) * np.log(xs) + xs - _LOG_SQRT_2PI
    xl = x[~small]
    x2 = xl * xl
    out[~small] = (_S0 - (_S1 - (_S2 - (_S3 - _S4 / x2) / x2) / x2) / x2) / xl
    return out


def _bd0(x: NDArray[np.float64], mean: NDArray[np.float64]) -> NDArray[np.float64]:
    """x log(x / mean) + mean - x without cancellation (Loader 2000, Sec. 3)."""
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        out = x * np.log(x / mean) + mean - x
    close = np.abs(x - mean) < 0.1 * (x + mean)
    if np.any(close):
        xc, mc = x[close], mean[close]
        v = (xc - mc) / (xc + mc)
        s = (xc - mc) * v
        term = 2.0 * xc * v
        v2 = v * v
        for j in range(1, _BD0_TERMS + 1):
            term = term * v2
            s = s + term / (2 * j + 1)
        out[close] = s
    return out


def log_softplus_pair(epsilon: float) -> tuple[float, float]:
    """(log p, log q) with p = 1 / (1 + e^eps) and q = e^eps / (1 + e^eps), for any eps >= 0."""
    log_q = -math.log1p(math.exp(-epsilon))  # exp(-eps) underflows harmlessly to 0
    return -epsilon + log_q, log_q


def log_pmf(l: NDArray[np.float64], n: int, log_p: float, log_q: float) -> NDArray[np.float64]:
    """log P(X = l) for X ~ Binomial(n, p), given log p and log q = log(1 - p).

    Loader's expansion: log C(n, l) p^l q^(n - l) = stirlerr(n) - stirlerr(l) -
    stirlerr(n - l) - bd0(l, np) - bd0(n - l, nq) - log(2 pi l (n - l) / n) / 2,
    with the endpoints l = 0 and l = n as n log q and n log p. Every term is
    small or computed without cancellation, so the absolute error is a few
    ulps of the result for every n (tested against mpmath at n = 10^12).
    ``log_p`` may be far below the double range (eps of 1e308): masses then
    underflow to -inf, never to NaN.
    """
    l = np.asarray(l, dtype=float)
    nf = float(n)
    out = np.full(l.shape, -np.inf)
    out[l == 0] = nf * log_q
    out[l == nf] = nf * log_p
    inner = (l > 0) & (l < nf)
    if np.any(inner):
        x = l[inner]
        p, q = math.exp(log_p), math.exp(log_q)
        if p == 0.0:  # eps beyond ~745: l * log p is the whole story, and it is -inf in doubles
            with np.errstate(over="ignore"):
                out[inner] = special.gammaln(nf + 1) - special.gammaln(x + 1) - special.gammaln(nf - x + 1) \
                    + x * log_p + (nf - x) * log_q
        else:
            stir = _stirling_error(np.array([nf]))[0] - _stirling_error(x) - _stirling_error(nf - x)
            dev = _bd0(x, np.full_like(x, nf * p)) + _bd0(nf - x, np.full_like(x, nf * q))
            out[inner] = stir - dev - 0.5 * (np.log(x) + np.log1p(-x / nf)) - _LOG_SQRT_2PI
    return out


@dataclass(frozen=True)
class Window:
    """Counts ``lo..hi`` of a Binomial(n, p) and a bound on the mass outside them.

    Attributes
    ----------
    lo, hi : int
        The kept counts (inclusive).
    log_outside : float
        log of an upper bound on P(X < lo) + P(X > hi) (``-inf`` when none is left out).
    """

    lo: int
    hi: int
    log_outside: float

    @property
    def size(self) -> int:
        return self.hi - self.lo + 1

    def counts(self) -> NDArray[np.float64]:
        return np.arange(self.lo, self.hi + 1, dtype=float)


def _log_tail_bound(edge: int, n: int, log_p: float, log_q: float, step: int) -> float:
    """log of a bound on the mass of the counts beyond ``edge`` (exclusive), ``step`` = -1 or +1.

    The binomial pmf is log-concave, so beyond an edge on the far side of the
    mode the ratio of successive masses only shrinks: the tail is at most
    pmf(next) / (1 - r) with r the ratio between the next two counts.
    """
    first = edge + step
    if first < 0 or first > n:
        return -math.inf
    log_first = float(log_pmf(np.array([first], dtype=float), n, log_p, log_q)[0])
    second = first + step
    if second < 0 or second > n:
        return log_first
    if step < 0:  # pmf(l - 1) / pmf(l) = l q / ((n - l + 1) p)
        log_r = math.log(first) - math.log(n - first + 1) + log_q - log_p
    else:  # pmf(l + 1) / pmf(l) = (n - l) p / ((l + 1) q)
        log_r = math.log(n - first) - math.log(first + 1) + log_p - log_q
    if log_r >= 0.0:  # not yet past the mode: no geometric bound, keep everything (caller widens)
        return math.inf
    return log_first - math.log(-math.expm1(log_r))


def window(n: int, log_p: float, log_q: float) -> Window:
    """The counts of Binomial(n, p) that carry mass above e^LOG_NEGLIGIBLE, and the rest bounded.

    For n up to :data:`FULL_RANGE` the whole range is kept. Beyond, the window
    starts at the mode +- 40 standard deviations and widens until both edges
    are negligible and past the mode (where the tail bound holds); its size is
    O(sqrt(n p q)) + O(1), so a billion invocations cost a few megabytes.
    """
    if n <= FULL_RANGE:
        return Window(0, n, -math.inf)
    p = math.exp(log_p)
    mode = min(max(int(math.floor((n + 1) * p)), 0), n)
    spread = 40.0 * math.sqrt(n * p * math.exp(log_q)) + 40.0
    lo, hi = max(mode - int(spread), 0), min(mode + int(spread), n)
    for _ in range(64):
        edges = log_pmf(np.array([lo, hi], dtype=float), n, log_p, log_q)
        left = -math.inf if lo == 0 else _log_tail_bound(lo, n, log_p, log_q, -1)
        right = -math.inf if hi == n else _log_tail_bound(hi, n, log_p, log_q, +1)
        ok_lo = lo == 0 or (edges[0] < LOG_NEGLIGIBLE and left < LOG_NEGLIGIBLE + 10)
        ok_hi = hi == n or (edges[1] < LOG_NEGLIGIBLE and right < LOG_NEGLIGIBLE + 10)
        if ok_lo and ok_hi:
            return Window(lo, hi, float(np.logaddexp(left, right)))
        width = hi - lo + 1
        if not ok_lo:
            lo = max(lo - width, 0)
        if not ok_hi:
            hi = min(hi + width, n)
    return Window(0, n, -math.inf)  # pragma: no cover - 64 doublings cover any int64 n

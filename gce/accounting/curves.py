"""Privacy curves: delta as a function of epsilon, and back.

A privacy curve (privacy profile) of a pair of output distributions (P, Q) is
the hockey-stick divergence

    delta(eps) = sup_S P(S) - e^eps Q(S) = E_P[(1 - e^{eps - L})_+],

with L = log(dP/dQ) the privacy loss (002, Sec. II; Balle et al. 2018). A
guarantee "(eps, delta(eps)) for every eps >= 0" is the whole curve; one number
is one point on it. Every curve in ``gce`` is an *upper bound* on the profile
of every pair it covers, in both directions (P, Q) and (Q, P), so:

* ``delta(eps)`` never under-reports, and
* ``epsilon(delta)`` returns the smallest eps the curve certifies, rounded up
  (it is ``inf`` when the curve never reaches ``delta``).

The pointwise minimum of valid curves is valid (:class:`EnvelopeCurve`); this
is how the engine combines composition theorems.

What must never change: ``delta`` is non-increasing in ``epsilon``, values lie
in [0, 1], and both directions of the hockey-stick divergence are covered.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from ..errors import InvalidParameterError
from ..validation import as_float, shown

__all__ = [
    "PrivacyCurve",
    "DiscreteLossCurve",
    "CanonicalCurve",
    "GaussianCurve",
    "FunctionCurve",
    "EnvelopeCurve",
    "ZCDPCurve",
    "canonical_delta",
    "gaussian_delta",
    "at_or_above",
    "FLOOR_RTOL",
]

#: Epsilons beyond this are reported as infinite by the generic inversion.
EPSILON_CAP = 2.0**20
#: Relative width at which the generic bisection stops (the answer is its upper end).
BISECTION_RTOL = 1e-12
#: Iteration cap of the bisection; 200 halvings exhaust double precision.
BISECTION_MAXITER = 200
#: Relative amount by which closed-form inversions are rounded up, against round-off.
ROUND_UP = 1e-12


#: Relative distance (eight double ulps) within which a target delta counts as *at* a computed floor.
#: A floor is a sum of products of the inputs and carries that much round-off in either direction;
#: a target that equals the floor in exact arithmetic (001's explicit priors: 0.3 + 0.3 + 0.4 of 0.1)
#: must get the finite answer at the floor, not infinity with ``exact`` claimed.
FLOOR_RTOL = 8 * np.finfo(float).eps


def at_or_above(delta: ArrayLike, floor: float) -> NDArray[np.bool_]:
    """Whether each target ``delta`` reaches ``floor``, allowing the floor's own round-off (:data:`FLOOR_RTOL`)."""
    return np.asarray(delta, dtype=float) >= floor * (1.0 - FLOOR_RTOL)


def _as_epsilons(epsilon: ArrayLike) -> tuple[NDArray[np.float64], bool]:
    eps = np.asarray(epsilon, dtype=float)
    if np.any(np.isnan(eps)) or np.any(eps < 0):
        raise InvalidParameterError("epsilon", f"must be >= 0 and not NaN, got {shown(epsilon)}")
    return np.atleast_1d(eps), eps.ndim == 0


def _as_deltas(delta: ArrayLike) -> tuple[NDArray[np.float64], bool]:
    d = np.asarray(delta, dtype=float)
    if np.any(np.isnan(d)) or np.any(d < 0) or np.any(d > 1):
        raise InvalidParameterError("delta", f"must lie in [0, 1], got {shown(delta)}")
    return np.atleast_1d(d), d.ndim == 0


#: The deltas a curve's notebook display tabulates.
HTML_TABLE_DELTAS = (1e-10, 1e-8, 1e-6, 1e-4, 1e-2)


def _html_deltas() -> NDArray[np.float64]:
    from .figures import HTML_DELTAS

    return HTML_DELTAS


def curve_html(title: str, rows: Sequence[tuple[float, float, str]], draw: Callable) -> str:
    """A curve's notebook display: ``title``, a table of (delta, epsilon, theorem) rows (the theorem column
    only when some row names one) and the figure ``draw(ax)`` draws (:func:`gce.plot.html_figure`)."""
    import html

    from .figures import html_figure

    named = any(theorem for _, _, theorem in rows)
    head = "<tr><th>delta</th><th>epsilon</th>" + ("<th>theorem</th>" if named else "") + "</tr>"
    body = "".join(f"<tr><td>{d:.3g}</td><td>{e:.6g}</td>" + (f"<td>{html.escape(t)}</td>" if named else "") + "</tr>"
                   for d, e, t in rows)
    return f"<strong>{html.escape(title)}</strong><table>{head}{body}</table>{html_figure(draw)}"


def _shape(values: NDArray[np.float64], scalar: bool) -> float | NDArray[np.float64]:
    return float(values[0]) if scalar else values


class PrivacyCurve(abc.ABC):
    """An upper bound delta(eps) on a privacy profile, for eps >= 0.

    Subclasses implement :meth:`_delta` on a 1-d array; everything else
    (validation, scalar/array handling, inversion) is shared.
    """

    #: lim_{eps -> inf} delta(eps): the probability of an infinite privacy loss.
    delta_floor: float = 0.0

    @abc.abstractmethod
    def _delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        """delta at each eps of a 1-d array of non-negative values."""

    def delta(self, epsilon: ArrayLike) -> float | NDArray[np.float64]:
        """The delta this curve certifies at ``epsilon`` (scalar or array)."""
        eps, scalar = _as_epsilons(epsilon)
        return _shape(np.clip(self._delta(eps), 0.0, 1.0), scalar)

    def epsilon(self, delta: ArrayLike) -> float | NDArray[np.float64]:
        """The smallest epsilon at which this curve's delta is at most ``delta``.

        Returns ``inf`` where no finite epsilon reaches ``delta`` (for example
        when ``delta`` is below :attr:`delta_floor`).
        """
        d, scalar = _as_deltas(delta)
        return _shape(self._epsilon(d), scalar)

    def _epsilon(self, d: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.array([self._bisect(float(t)) for t in d])

    def plot(self, path=None, ax=None, *, deltas: ArrayLike | None = None, label: str = "epsilon(delta)",
             title: str | None = None, dpi: int = 150):
        """Draw the curve, epsilon against delta (:func:`gce.plot.plot_curve`: matplotlib, the ``plot`` extra).

        ``path`` (save there), ``ax`` (draw on it), ``deltas`` and ``dpi`` as in :meth:`gce.report.Report.plot`;
        ``title`` defaults to the curve's class name. Returns the matplotlib Axes.
        """
        from .figures import draw_curve

        return draw_curve(self, path, ax, deltas=deltas, label=label, title=title or type(self).__name__, dpi=dpi)

    def _repr_html_(self) -> str:
        """The curve in a notebook: epsilon at a few deltas and the curve drawn (inline SVG, when matplotlib
        is installed)."""
        return curve_html(type(self).__name__, [(float(d), float(self.epsilon(d)), "") for d in HTML_TABLE_DELTAS],
                          lambda ax: self.plot(ax=ax, deltas=_html_deltas()))

    def _bisect(self, target: float) -> float:
        """Smallest eps with delta(eps) <= target, rounded up; generic and safe."""
        if target >= 1.0 or self._delta(np.zeros(1))[0] <= target:
            return 0.0
        if not at_or_above(target, self.delta_floor):
            return math.inf
        lo, hi = 0.0, 1.0
        while self._delta(np.array([hi]))[0] > target:
            lo, hi = hi, 2.0 * hi
            if hi > EPSILON_CAP:
                return math.inf
        for _ in range(BISECTION_MAXITER):
            if hi - lo <= BISECTION_RTOL * hi:
                break
            mid = 0.5 * (lo + hi)
            if self._delta(np.array([mid]))[0] > target:
                lo = mid
            else:
                hi = mid
        return hi

    def __call__(self, epsilon: ArrayLike) -> float | NDArray[np.float64]:
        return self.delta(epsilon)

    def __getattr__(self, name: str) -> object:
        """Only for names a curve lacks: a bracket asked of a curve without a certified lower curve gets an
        AttributeError that says where the bracket is, instead of Python's bare one."""
        hint = _NO_BRACKET.get(name)
        if hint is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}: {hint}")


#: Why a curve without a certified lower curve has no bracket, and where to find one.
_NO_BRACKET = dict.fromkeys(("epsilon_bracket", "bracket", "lower"), (
    "this curve has no certified lower curve, so it brackets nothing; its epsilon(delta) and delta(epsilon) "
    "are certified upper bounds. Curves that have one (the batch and allocation compositions) answer "
    "epsilon_bracket(delta) and .lower; a solve's bracket at its target, when it has one, is Report.bracket "
    "(None when the answer is exact or no lower curve exists)"))


# ---------------------------------------------------------------------------
# Closed forms


def canonical_delta(eps_target: NDArray[np.float64], epsilon: float, delta: float) -> NDArray[np.float64]:
    """Profile of the canonical (epsilon, delta) pair (002, eqs. 9-10) at ``eps_target``.

    delta(e) = delta + (1 - delta) (e^epsilon - e^e)_+ / (1 + e^epsilon), written
    so that epsilon up to several hundred neither overflows nor cancels.
    """
    gap = np.maximum(epsilon - eps_target, 0.0)
    finite = -np.expm1(-gap) / (1.0 + math.exp(-epsilon))
    return delta + (1.0 - delta) * finite


def gaussian_delta(eps: NDArray[np.float64], mu: float) -> NDArray[np.float64]:
    """Exact profile of mu-GDP: Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2).

    Dong, Roth and Su (2022), Cor. 2.13; evaluated in log space with
    ``scipy.special.log_ndtr`` so that eps up to hundreds stays finite.
    """
    if mu == 0.0:
        return np.zeros_like(eps)
    if math.isinf(mu):
        return np.ones_like(eps)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # mu near 1e308: terms of +-inf
        log_a = special.log_ndtr(-eps / mu + mu / 2.0)
        log_b = special.log_ndtr(-eps / mu - mu / 2.0)
        out = np.exp(log_a) * -np.expm1(eps + log_b - log_a)
    return np.where(np.isfinite(out), np.maximum(out, 0.0), 0.0)


# ---------------------------------------------------------------------------
# Curves


class DiscreteLossCurve(PrivacyCurve):
    """Exact profile of a pair whose privacy loss takes finitely many values.

    Parameters
    ----------
    loss : array
        The finite privacy-loss values L = log(P(x) / Q(x)).
    log_p : array
        log P of the outcomes carrying each loss (masses under P, not normalised:
        together with ``infinite_mass`` they sum to at most 1).
    infinite_mass : float
        P(L = +inf): outcomes that P can produce and Q cannot.

    Notes
    -----
    delta(eps) = P(L = inf) + sum_{L_i > eps} P_i (1 - e^{eps - L_i}). With the
    outcomes sorted by decreasing loss the sums are cumulative sums (taken in log
    space with ``np.logaddexp.accumulate``), so one evaluation costs a binary
    search and the inverse is exact: on each piece delta(eps) = a - b e^eps (the
    deltas at the breakpoints are computed at the first inversion and kept: a
    bracket inverts the same curve many times). The curve describes the direction (P, Q); it bounds both directions when the
    pair is symmetric, as the canonical pairs and their products are.
    """

    def __init__(self, loss: ArrayLike, log_p: ArrayLike, infinite_mass: float = 0.0):
        loss = np.asarray(loss, dtype=float).ravel()
        log_p = np.asarray(log_p, dtype=float).ravel()
        if loss.shape != log_p.shape:
            raise InvalidParameterError("log_p", f"needs one entry per loss value, got {log_p.size} for {loss.size}")
        if np.any(np.isnan(loss)) or np.any(np.isnan(log_p)) or np.any(log_p == np.inf):
            raise InvalidParameterError("loss", "loss values and log-masses must not be NaN (or log-masses +inf)")
        overflowed = loss == np.inf  # a loss beyond the double range: counted as infinite (pessimistic)
        if np.any(overflowed):
            infinite_mass = infinite_mass + float(np.exp(special.logsumexp(log_p[overflowed])))
        keep = (loss > 0.0) & ~overflowed & (log_p > -np.inf)  # L <= 0 never contributes for eps >= 0
        order = np.argsort(-loss[keep], kind="stable")
        self._loss = loss[keep][order]
        log_p = log_p[keep][order]
        self._log_a = np.logaddexp.accumulate(log_p) if log_p.size else log_p
        with np.errstate(over="ignore"):  # log P - L below -1.8e308: -inf, the term e^(log P - L) = 0 it is
            self._log_b = np.logaddexp.accumulate(log_p - self._loss) if log_p.size else log_p
        self.delta_floor = float(min(max(infinite_mass, 0.0), 1.0))
        self._kept()

    def _kept(self) -> None:
        """What every reading uses, from ``_loss``, ``_log_a``, ``_log_b`` and ``delta_floor`` (set by the
        constructor): the losses negated (ascending, for the binary search), delta at eps = 0, and the deltas
        at the breakpoints (computed at the first inversion)."""
        self._descending = -self._loss
        self._breaks: NDArray[np.float64] | None = None
        self._at_zero = float(self._delta(np.zeros(1))[0])

    @property
    def max_loss(self) -> float:
        """The largest finite privacy loss (0 when there is none above 0)."""
        return float(self._loss[0]) if self._loss.size else 0.0

    def _finite_part(self, eps: NDArray[np.float64], active: NDArray[np.intp]) -> NDArray[np.float64]:
        out = np.zeros_like(eps)
        some = active > 0
        j = active[some] - 1
        log_a, log_b = self._log_a[j], self._log_b[j]
        out[some] = np.exp(log_a) * -np.expm1(np.minimum(eps[some] + log_b - log_a, 0.0))
        return out

    def _delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        active = np.searchsorted(self._descending, -eps, side="left")  # number of L_i > eps
        return self.delta_floor + self._finite_part(eps, active)

    def _epsilon(self, d: NDArray[np.float64]) -> NDArray[np.float64]:
        out = np.zeros_like(d)
        at_floor = at_or_above(d, self.delta_floor)
        target = np.where(at_floor, np.maximum(d - self.delta_floor, 0.0), -1.0)
        out[~at_floor] = math.inf
        todo = (target >= 0) & (d < self._at_zero)
        if not np.any(todo) or not self._loss.size:
            return out
        if self._breaks is None:  # delta at each breakpoint L_i (ascending in i because L is descending)
            self._breaks = self._finite_part(self._loss, np.arange(self._loss.size))
        t = target[todo]
        i = np.searchsorted(self._breaks, t, side="right")  # L_i with delta(L_i) <= t come first
        # The answer lies in [L_i, L_{i-1}]: terms 0..i-1 are active there.
        log_a = self._log_a[i - 1]
        log_b = self._log_b[i - 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            eps = log_a + np.log1p(-np.minimum(t / np.exp(log_a), 1.0)) - log_b
        lower = np.where(i < self._loss.size, self._loss[np.minimum(i, self._loss.size - 1)], 0.0)
        eps = np.clip(np.nan_to_num(eps, nan=0.0, neginf=0.0), lower, self._loss[i - 1])
        out[todo] = np.maximum(eps * (1.0 + ROUND_UP), 0.0)
        return out


class CanonicalCurve(PrivacyCurve):
    """The curve implied by one or more (epsilon, delta) points.

    A pair satisfying (epsilon_j, delta_j)-DP is dominated by the canonical pair
    of (epsilon_j, delta_j) (002, Thm. II.5 with eqs. 9-10), so its profile is at
    most the canonical profile; satisfying several points, at most their minimum
    (the intersection of privacy regions, 002 Sec. III-A).
    """

    def __init__(self, points: Sequence[tuple[float, float]]):
        if not points:
            raise InvalidParameterError("points", "needs at least one (epsilon, delta) point")
        self.points = tuple((float(e), float(d)) for e, d in points)
        for e, d in self.points:
            if not (e >= 0 and 0 <= d <= 1):
                raise InvalidParameterError("points", f"(epsilon, delta) = ({e}, {d}) is not a DP guarantee")
        self.delta_floor = min(d for e, d in self.points if math.isfinite(e)) if any(
            math.isfinite(e) for e, _ in self.points) else 1.0

    def _delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        out = np.ones_like(eps)
        for e, d in self.points:
            if math.isfinite(e):
                out = np.minimum(out, canonical_delta(eps, e, d))
        return out

    def _epsilon(self, d: NDArray[np.float64]) -> NDArray[np.float64]:
        out = np.full_like(d, math.inf)
        for e, dj in self.points:
            if not math.isfinite(e):
                continue
            # Invert dj + (1 - dj)(1 - e^{x - e}) / (1 + e^{-e}) = t on [0, e].
            with np.errstate(divide="ignore", invalid="ignore"):
                frac = (d - dj) / (1.0 - dj) * (1.0 + math.exp(-e)) if dj < 1 else np.full_like(d, np.inf)
                x = e + np.log1p(-np.minimum(frac, 1.0))
            x = np.where(d >= dj, np.clip(np.nan_to_num(x, nan=0.0, neginf=0.0), 0.0, e), math.inf)
            out = np.minimum(out, x * (1.0 + ROUND_UP))
        return np.where(d >= 1.0, 0.0, out)


def _curve_parameter(name: str, value: float) -> tuple[float, float]:
    """A closed-form curve's parameter (mu, rho), checked >= 0, and the delta floor it implies:
    1 when it is infinite (no bound at all), else 0."""
    if not value >= 0:
        raise InvalidParameterError(name, f"must be >= 0, got {shown(value)}")
    value = as_float(value)
    return value, 1.0 if math.isinf(value) else 0.0


#: From this mu on, :class:`GaussianCurve` uses the Gaussian tail bound (the exact form cancels).
GDP_TAIL_MU = 1000.0
_U = float(np.finfo(float).eps)


class GaussianCurve(PrivacyCurve):
    """Exact profile of mu-Gaussian differential privacy (a Gaussian mechanism with
    sensitivity / sigma = mu). Dong, Roth and Su (2022), Cor. 2.13; 000 Sec. VI."""

    def __init__(self, mu: float):
        # mu = inf (sigma of 1e-308, or a sum of squares that overflows): the output reveals the input.
        self.mu, self.delta_floor = _curve_parameter("mu", mu)

    def _delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        if math.isinf(self.mu):
            return np.ones_like(eps)
        if self.mu >= GDP_TAIL_MU:
            return self._tail_delta(eps)
        return gaussian_delta(eps, self.mu)

    def _tail_delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        """Phi(mu / 2 - eps / mu) >= delta(eps) (the subtracted term dropped), its argument rounded up: at
        large mu the exact form subtracts numbers near mu^2 / 2 (round-off of mu^2 u in the exponent)."""
        with np.errstate(over="ignore"):  # mu^2 / 2 beyond the double range: inf, delta 1
            argument = (0.5 * self.mu) * (1.0 + 4.0 * _U) - (eps / self.mu) * (1.0 - 4.0 * _U)
        return special.ndtr(argument)

    def _epsilon(self, d: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.array([self._invert(float(t)) for t in d])

    def _invert(self, target: float) -> float:
        if target >= self._delta(np.zeros(1))[0]:
            return 0.0
        if target <= 0.0 or not at_or_above(target, self.delta_floor):
            return math.inf
        mu = self.mu
        if mu >= GDP_TAIL_MU:
            # delta(eps) <= Phi(mu / 2 - eps / mu) = target at eps = mu^2 / 2 + mu z, z = -Phi^-1(target):
            # within 2e-6 relative of the exact epsilon from mu = 1000 on (an absolute excess of about 1)
            # (solved for the rounded-up argument of _tail_delta, and rounded up again: its delta <= target)
            z = -float(special.ndtri(target))
            with np.errstate(over="ignore"):  # beyond the double range: inf
                return float(mu * ((0.5 * mu * (1.0 + 4.0 * _U) + z) / (1.0 - 4.0 * _U)) * (1.0 + 4.0 * _U))
        # log delta is concave-ish and decreasing; solve log delta(eps) = log target.
        f = lambda e: math.log(max(gaussian_delta(np.array([e]), mu)[0], 1e-320)) - math.log(target)
        hi = max(1.0, mu * mu / 2.0 + mu * math.sqrt(2.0 * max(-math.log(target), 1.0)) + 1.0)
        while f(hi) > 0:
            hi *= 2.0
            if hi > EPSILON_CAP:
                return math.inf
        from scipy import optimize  # here: scipy.optimize is slow to import (start-up)

        root = optimize.brentq(f, 0.0, hi, xtol=1e-14, rtol=4 * np.finfo(float).eps)
        root *= 1.0 + ROUND_UP
        return root if f(root) <= 0 else self._bisect(target)


class FunctionCurve(PrivacyCurve):
    """A curve from a vectorized function ``delta_fn(eps_array) -> delta_array``.

    ``epsilon_fn`` (optional) inverts it; without one, :meth:`epsilon` bisects.
    The caller vouches that ``delta_fn`` is a valid, non-increasing bound.
    """

    def __init__(
        self,
        delta_fn: Callable[[NDArray[np.float64]], NDArray[np.float64]],
        *,
        epsilon_fn: Callable[[NDArray[np.float64]], NDArray[np.float64]] | None = None,
        delta_floor: float = 0.0,
    ):
        self._delta_fn = delta_fn
        self._epsilon_fn = epsilon_fn
        self.delta_floor = float(delta_floor)

    def _delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(self._delta_fn(eps), dtype=float)

    def _epsilon(self, d: NDArray[np.float64]) -> NDArray[np.float64]:
        if self._epsilon_fn is None:
            return super()._epsilon(d)
        return np.asarray(self._epsilon_fn(d), dtype=float)


class EnvelopeCurve(PrivacyCurve):
    """The pointwise minimum of valid curves (each is a valid bound, so the minimum is)."""

    def __init__(self, curves: Sequence[PrivacyCurve]):
        if not curves:
            raise InvalidParameterError("curves", "needs at least one curve")
        self.curves = tuple(curves)
        self.delta_floor = min(c.delta_floor for c in self.curves)

    def _delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.min([np.clip(c._delta(eps), 0.0, 1.0) for c in self.curves], axis=0)

    def _epsilon(self, d: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.min([c._epsilon(d) for c in self.curves], axis=0)


#: Renyi orders searched by the zCDP conversion: alpha = 1 + 10^t on this grid, then refined.
_ALPHA_GRID = 1.0 + np.logspace(-8, 8, 321)
_GOLDEN_STEPS = 60


class ZCDPCurve(PrivacyCurve):
    """The (epsilon, delta) curve implied by rho-zCDP.

    delta(eps) = min_{alpha > 1} exp((alpha - 1)(rho alpha - eps)) (1 - 1/alpha)^(alpha - 1) / alpha
    (Canonne, Kamath and Steinke 2020, Prop. 12; Asoodeh et al. 2021), the
    inverse of (docs/design.md, "Composition theorems", zcdp) eps(delta) = min_alpha rho alpha + log(1 - 1/alpha)
    - (log delta + log alpha) / (alpha - 1). Every alpha gives a valid bound, so
    the grid search with golden-section refinement can only lose tightness,
    never soundness.
    """

    def __init__(self, rho: float):
        # rho = inf (a sum that overflows): no bound at all; huge finite rho: the minimisation below
        # overflows to +inf terms, which only loosen it.
        self.rho, self.delta_floor = _curve_parameter("rho", rho)

    def _log_delta(self, alpha: NDArray[np.float64], eps: NDArray[np.float64]) -> NDArray[np.float64]:
        am1 = alpha - 1.0
        return am1 * (self.rho * alpha - eps) + am1 * np.log1p(-1.0 / alpha) - np.log(alpha)

    def _log_eps(self, alpha: NDArray[np.float64], log_delta: NDArray[np.float64]) -> NDArray[np.float64]:
        return self.rho * alpha + np.log1p(-1.0 / alpha) - (log_delta + np.log(alpha)) / (alpha - 1.0)

    @staticmethod
    def _minimize(f: Callable[[NDArray[np.float64]], NDArray[np.float64]], n: int) -> NDArray[np.float64]:
        """min over alpha of f(alpha) (shape (k, n)) per column: grid, then golden refinement in log(alpha - 1)."""
        with np.errstate(over="ignore", invalid="ignore"):  # huge rho: terms of +inf only loosen the min
            return ZCDPCurve._golden(f, n)

    @staticmethod
    def _golden(f: Callable[[NDArray[np.float64]], NDArray[np.float64]], n: int) -> NDArray[np.float64]:
        t = np.log(_ALPHA_GRID - 1.0)
        values = f(_ALPHA_GRID[:, None] * np.ones((1, n)))
        best = np.nanargmin(values, axis=0)
        lo = t[np.maximum(best - 1, 0)]
        hi = t[np.minimum(best + 1, t.size - 1)]
        result = values[best, np.arange(n)]
        g = (math.sqrt(5.0) - 1.0) / 2.0
        for _ in range(_GOLDEN_STEPS):
            a = hi - g * (hi - lo)
            b = lo + g * (hi - lo)
            fa = f((1.0 + np.exp(a))[None, :])[0]
            fb = f((1.0 + np.exp(b))[None, :])[0]
            result = np.fmin(result, np.fmin(fa, fb))
            left = fa < fb
            hi = np.where(left, b, hi)
            lo = np.where(left, lo, a)
        return result

    def _delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        if self.rho == 0.0:
            return np.zeros_like(eps)
        if math.isinf(self.rho):
            return np.ones_like(eps)
        log_delta = self._minimize(lambda a: self._log_delta(a, eps[None, :]), eps.size)
        return np.exp(np.minimum(log_delta, 0.0))

    def _epsilon(self, d: NDArray[np.float64]) -> NDArray[np.float64]:
        if self.rho == 0.0:
            return np.zeros_like(d)
        if math.isinf(self.rho):
            return np.where(d >= 1.0, 0.0, math.inf)
        out = np.full_like(d, math.inf)
        positive = d > 0
        log_d = np.log(d[positive])
        eps = self._minimize(lambda a: self._log_eps(a, log_d[None, :]), log_d.size)
        out[positive] = np.maximum(eps, 0.0) * (1.0 + ROUND_UP)
        return np.where(d >= 1.0, 0.0, out)

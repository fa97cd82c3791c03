"""Composition theorems: each turns a multiset of guarantees into a privacy curve.

Every theorem here is a valid upper bound on the privacy curve of the adaptive
composition of *any* mechanisms with the given guarantees (001, Def. 4 calls
such a theorem "compatible" with the sequence). Since each curve is valid, the
pointwise minimum over compatible theorems is valid too, and
:func:`compose` returns exactly that, naming the theorem that wins where the
caller evaluates it.

A theorem declares which lists it accepts (:meth:`Theorem.accepts`) and
whether its curve is the exact optimum for them (:meth:`Theorem.is_exact`);
the selector stops at the first exact one (nothing can be tighter).

Lists are taken as multisets ``((guarantee, count), ...)``, so a million
identical invocations cost one entry.

References
----------
002: Kairouz, Oh, Viswanath, "The Composition Theorem for Differential Privacy".
DRV10: Dwork, Rothblum, Vadhan, "Boosting and Differential Privacy" (002 eq. 4).
MV16: Murtagh, Vadhan, "The Complexity of Computing the Optimal Composition of
Differential Privacy" (optimal heterogeneous composition is the composition of
the canonical pairs).
BS16: Bun, Steinke, "Concentrated Differential Privacy" (zCDP, Prop. 1.4, Lemma 2.3).
DRS22: Dong, Roth, Su, "Gaussian Differential Privacy" (Cor. 2.13, Cor. 3.3).
"""

from __future__ import annotations

import abc
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from . import batch as _batch
from . import binomial, kinds
from . import pld as _pld
from .curves import (
    CanonicalCurve,
    DiscreteLossCurve,
    EnvelopeCurve,
    FunctionCurve,
    GaussianCurve,
    PrivacyCurve,
    ZCDPCurve,
)
from .. import effort
from ..errors import InvalidParameterError, NumericalLimitError, UnsupportedCombinationError
from ..validation import is_integer, shown
from .guarantees import Guarantee

__all__ = [
    "Multiset",
    "as_multiset",
    "Theorem",
    "THEOREMS",
    "Bound",
    "Composition",
    "compose",
    "composition_seconds",
    "compose_within",
    "canonical_composition",
    "ENUMERATION_LIMIT",
    "EXACT_COUNT_LIMIT",
]

Multiset = tuple[tuple[Guarantee, int], ...]

#: Largest number of joint outcomes (product of (count + 1) over distinct guarantees)
#: that exact enumeration of canonical pairs handles before dp-accounting takes over.
ENUMERATION_LIMIT = 2_000_000


def as_multiset(guarantees: Guarantee | Iterable[Guarantee] | Mapping[Guarantee, int] | Multiset) -> Multiset:
    """Normalise guarantees to a multiset ``((guarantee, count), ...)``.

    Accepts one guarantee, a list of guarantees, a mapping guarantee -> count, or a multiset.

    Counts must be integers in 0..2**1000 (the theorems count in doubles, and sum and scale counts: a
    larger one would overflow them); entries with count 0 are dropped.

    Raises
    ------
    InvalidParameterError
        Naming ``guarantees`` (neither a guarantee nor a collection of them) or ``guarantees[i]``.
    """
    counts: Counter[Guarantee] = Counter()
    if kinds.is_guarantee(guarantees):
        pairs: Iterable = ((guarantees, 1),)
    elif isinstance(guarantees, Mapping):
        pairs = guarantees.items()
    elif isinstance(guarantees, (str, bytes)) or not isinstance(guarantees, Iterable):
        raise InvalidParameterError("guarantees", f"must be a guarantee, a collection of guarantees or a mapping "
                                                  f"guarantee -> count, got {shown(guarantees)}")
    else:
        pairs = (item if isinstance(item, tuple) and len(item) == 2 else (item, 1) for item in guarantees)
    for i, (guarantee, count) in enumerate(pairs):
        if not kinds.is_guarantee(guarantee):
            raise InvalidParameterError(f"guarantees[{i}]", f"is not a guarantee: {shown(guarantee)}")
        if not is_integer(count) or not 0 <= count <= _MAX_COUNT:
            raise InvalidParameterError(f"guarantees[{i}].count", f"must be an integer in 0..2**1000 (a double "
                                                                  f"holds it), got {shown(count)}")
        counts[guarantee] += int(count)
        if counts[guarantee] > _MAX_COUNT:
            raise InvalidParameterError(f"guarantees[{i}].count", f"the guarantee counts more than 2**1000 in all "
                                                                  f"(a double holds no more)")
    return tuple((g, n) for g, n in counts.items() if n > 0)


#: The largest count a guarantee may have: the theorems count in doubles (``2**1023`` already overflows their sums).
_MAX_COUNT = 2**1000


def _points(ms: Multiset) -> list[tuple[float, float, int]] | None:
    """(epsilon, delta, count) per entry, or None if some entry has no single point."""
    return _per_entry(ms, kinds.point)


def _per_entry(ms: Multiset, value) -> list | None:
    """(*value(g), count) per entry (value(g) a tuple or a number), or None if some entry has none."""
    out = []
    for g, n in ms:
        v = value(g)
        if v is None:
            return None
        out.append((*v, n) if isinstance(v, tuple) else (v, n))
    return out


def _log_survival(points: list[tuple[float, float, int]]) -> float:
    """log prod_i (1 - delta_i)^n_i: the probability that no delta-event happens."""
    return float(sum(n * math.log1p(-d) for _, d, n in points))


# ---------------------------------------------------------------------------
# Exact composition of canonical pairs


def _group(epsilon: float, count: int) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
    """Loss values, log-masses under P0 and log of the mass left out, for ``count`` canonical pairs.

    Conditioned on no delta-event, the number ``l`` of "-eps" outcomes is
    Binomial(count, 1/(1+e^eps)) under P0 and the privacy loss is (count - 2l) eps
    (002 Thm. III.3). Only the counts of :func:`gce.accounting.binomial.window` are kept;
    the bound on the rest is returned for the caller to send to infinite loss.
    """
    log_p, log_q = binomial.log_softplus_pair(epsilon)
    win = binomial.window(count, log_p, log_q)
    l = win.counts()
    balance = float(count) - 2.0 * l
    with np.errstate(over="ignore", invalid="ignore"):  # beyond 1.8e308: +-inf, handled by the caller
        loss = balance * epsilon
    loss[balance == 0.0] = 0.0  # as many "-eps" outcomes as "+eps": no loss, at eps = inf too (not 0 inf = nan)
    return loss, binomial.log_pmf(l, count, log_p, log_q), win.log_outside


def canonical_composition(points: list[tuple[float, float, int]]) -> DiscreteLossCurve:
    """Exact privacy curve of the product of canonical pairs (002 eqs. 9-10).

    For ``n`` copies of the canonical (eps, delta) pair, conditioned on no
    delta-event, the number ``l`` of "-eps" outcomes is Binomial(n, 1/(1+e^eps))
    under P0 and the privacy loss is (n - 2l) eps: this is 002 Thm. III.3,
    delta(eps') = 1 - (1-delta)^n + (1-delta)^n sum_l C(n,l) (e^{(n-l)eps} -
    e^{eps'} e^{l eps})_+ / (1+e^eps)^n. Distinct guarantees multiply: the loss
    distribution is the convolution over groups (MV16: the optimal heterogeneous
    composition is that of the canonical pairs).

    Numerics: probabilities are kept in log space with Loader's binomial
    (:mod:`gce.accounting.binomial`), accurate for any n; counts whose mass is below the
    smallest double are left out and their certified total goes to infinite
    loss, so n = 10^9 costs O(sqrt(n)) memory. A loss beyond the double range
    (per-invocation epsilons near 1e308) is +inf, which only raises the curve:
    the answer is then infinite, never 0 or NaN.
    """
    loss = np.zeros(1)
    log_p = np.zeros(1)
    log_outside = -math.inf
    for eps, delta, n in points:
        if eps == 0.0:
            continue  # loss identically 0 on the no-delta-event part
        group_loss, group_log_p, group_outside = _group(eps, n)
        log_outside = float(np.logaddexp(log_outside, group_outside))
        # Sums beyond the double range: losses of +-inf (inf + (-inf), an overflowed outcome, is sent to +inf
        # below) and log-masses of -inf (a mass e^(-1.8e308) is 0 in any case).
        with np.errstate(over="ignore", invalid="ignore"):
            loss = (loss[:, None] + group_loss[None, :]).ravel()
            log_p = (log_p[:, None] + group_log_p[None, :]).ravel()
    loss[np.isnan(loss)] = math.inf
    log_survival = _log_survival(points)
    infinite = -math.expm1(log_survival) + math.exp(log_survival + log_outside)
    return DiscreteLossCurve(loss, log_p + log_survival, infinite_mass=infinite)


def _enumeration_size(points: list[tuple[float, float, int]]) -> int:
    size = 1
    for eps, _, n in points:
        if eps > 0:
            size *= n + 1
            if size > ENUMERATION_LIMIT:
                break
    return size


# ---------------------------------------------------------------------------
# Theorems


class Theorem(abc.ABC):
    """A composition theorem: which lists it accepts, and the curve it gives them.

    The theorems here derive both from one traversal of the list
    (:class:`_OneTraversal`), so that what is accepted is what is computed.
    """

    #: Short identifier used in reports and JSON.
    name: str = ""
    #: Where the theorem comes from (paper and section).
    source: str = ""

    @abc.abstractmethod
    def accepts(self, ms: Multiset) -> bool:
        """Whether the theorem applies to every guarantee of ``ms``."""

    @abc.abstractmethod
    def curve(self, ms: Multiset) -> PrivacyCurve:
        """A valid upper bound on the composition's privacy curve (``accepts(ms)`` must hold)."""

    def is_exact(self, ms: Multiset) -> bool:
        """Whether :meth:`curve` is the exact optimum for the class ``ms`` describes."""
        return False

    def at_accuracy(self, rtol: float) -> "Theorem":
        """The theorem computing at the relative accuracy ``rtol`` (:mod:`gce.effort`): itself, unless its
        curve is computed on a grid (the rows of privacy-loss distributions)."""
        return self

    def __repr__(self) -> str:
        return f"<theorem {self.name}>"


class _OneTraversal(Theorem):
    """A theorem whose :meth:`accepts` and :meth:`curve` read the same :meth:`_inputs`
    (dp-accounting's ``_maybe_compose(event, do_compose)``): a list is accepted exactly
    when its inputs exist, and :meth:`curve` declines any other with
    UnsupportedCombinationError instead of computing from a partial traversal."""

    @abc.abstractmethod
    def _inputs(self, ms: Multiset):
        """What :meth:`_curve` needs of ``ms``, or None when the theorem does not apply."""

    @abc.abstractmethod
    def _curve(self, inputs) -> PrivacyCurve:
        """The curve of accepted inputs."""

    def accepts(self, ms: Multiset) -> bool:
        return self._inputs(ms) is not None

    def curve(self, ms: Multiset) -> PrivacyCurve:
        """A valid upper bound on the composition's privacy curve.

        Raises
        ------
        UnsupportedCombinationError
            The theorem does not accept ``ms``.
        """
        inputs = self._inputs(ms)
        if inputs is None:
            raise UnsupportedCombinationError(f"theorem {self.name} does not apply to {_describe(ms)}")
        return self._curve(inputs)


def _describe(ms: Multiset) -> str:
    text = ", ".join(f"{n} x {shown(g, 100)}" for g, n in ms[:3])
    return f"[{text}{', ...' if len(ms) > 3 else ''}]"


class SimpleComposition(_OneTraversal):
    """(sum eps_i, sum delta_i) (002 Thm. III.1; Dwork et al. 2006), read as the
    canonical curve of that single point (002 Thm. II.5)."""

    name = "simple"
    source = "002 Thm. III.1"

    def _inputs(self, ms: Multiset):
        return _points(ms)

    def _curve(self, pts) -> PrivacyCurve:
        return CanonicalCurve([(sum(e * n for e, _, n in pts), min(sum(d * n for _, d, n in pts), 1.0))])


class AdvancedComposition(_OneTraversal):
    """Advanced composition (DRV10 Thm. III.3, 002 eq. 4), heterogeneous form:
    (sum eps_i (e^eps_i - 1) + sqrt(2 log(1/d~) sum eps_i^2), sum delta_i + d~)
    for every d~ in (0, 1]; never worse than simple composition."""

    name = "advanced"
    source = "002 Thm. III.2 (Dwork, Rothblum, Vadhan 2010)"

    def _inputs(self, ms: Multiset):
        return _points(ms)

    def _curve(self, pts) -> PrivacyCurve:
        s1 = sum(n * e * _expm1(e) for e, _, n in pts)
        s2 = sum(n * e * e for e, _, n in pts)
        base = min(sum(n * d for _, d, n in pts), 1.0)

        def delta_fn(eps: NDArray[np.float64]) -> NDArray[np.float64]:
            x = np.maximum(eps - s1, 0.0)
            with np.errstate(divide="ignore", over="ignore"):  # tiny s2: the slack tends to 0
                slack = np.exp(-x * x / (2.0 * s2)) if s2 > 0 else np.zeros_like(eps)
            return np.where(eps > s1, base + slack, 1.0)

        return EnvelopeCurve([FunctionCurve(delta_fn, delta_floor=base), SimpleComposition()._curve(pts)])


def _expm1(x: float) -> float:
    """e^x - 1, infinite where it overflows (an infinite statistic makes a closed form vacuous, never wrong)."""
    return math.expm1(x) if x < 709.0 else math.inf


def _kairouz_slack(eps: NDArray[np.float64], s1: float, s2: float) -> NDArray[np.float64]:
    """Smallest d~ for which 002 eq. (8)'s second or third term is <= eps."""
    x = np.maximum(eps - s1, 0.0)
    with np.errstate(over="ignore"):  # tiny s2: y = inf, both slacks 0, as the limit says
        y = x * x / (2.0 * s2) if s2 > 0 else np.full_like(eps, np.inf)
    third = np.exp(-y)  # eps = s1 + sqrt(2 s2 log(1/d~))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # eps = s1 + sqrt(2 s2 log(e + sqrt(s2)/d~))  <=>  d~ = sqrt(s2) / (e^y - e)
        second = np.where(y > 1.0, math.sqrt(s2) * np.exp(-y) / (-np.expm1(1.0 - y)), 1.0)
    slack = np.fmin(np.fmin(third, second), 1.0)
    return np.where(eps > s1, slack, 1.0)


class KairouzClosedForm(_OneTraversal):
    """002 Thm. III.4 (identical guarantees) and Thm. III.5 (heterogeneous), eq. (7)/(8):
    (eps~, 1 - (1 - d~) prod (1 - delta_l)) with eps~ the minimum of sum eps_l,
    sum eps_l tanh(eps_l / 2) + sqrt(2 sum eps_l^2 log(e + sqrt(sum eps_l^2) / d~)), and
    sum eps_l tanh(eps_l / 2) + sqrt(2 sum eps_l^2 log(1 / d~)). The first term is
    read as the canonical curve of its point (002 Thm. II.5)."""

    def __init__(self, homogeneous: bool):
        self.homogeneous = homogeneous
        self.name = "kairouz-III.4" if homogeneous else "kairouz-III.5"
        self.source = "002 Thm. III.4, eq. (7)" if homogeneous else "002 Thm. III.5, eq. (8)"

    def _inputs(self, ms: Multiset):
        pts = _points(ms)
        return pts if pts is not None and (len({(e, d) for e, d, _ in pts}) <= 1) == self.homogeneous else None

    def _curve(self, pts) -> PrivacyCurve:
        s1 = sum(n * e * math.tanh(e / 2.0) for e, _, n in pts)  # (e^x - 1) x / (e^x + 1) = x tanh(x/2)
        s2 = sum(n * e * e for e, _, n in pts)
        survival = math.exp(_log_survival(pts))

        def delta_fn(eps: NDArray[np.float64]) -> NDArray[np.float64]:
            return 1.0 - (1.0 - _kairouz_slack(eps, s1, s2)) * survival

        first = CanonicalCurve([(sum(n * e for e, _, n in pts), 1.0 - survival)])
        return EnvelopeCurve([FunctionCurve(delta_fn, delta_floor=1.0 - survival), first])


#: Largest count the exact identical-guarantee route takes: beyond it the double rounding of
#: p = 1 / (1 + e^eps) alone moves log-masses by more than 1e-11 (gce.accounting.binomial), and closed forms answer.
EXACT_COUNT_LIMIT = 10**9
#: Largest binomial window (counts kept) of the exact route: about 100 MB of working arrays.
EXACT_WINDOW_LIMIT = 2**21


def _exact_window_fits(epsilon: float, count: int) -> bool:
    """Whether Thm. III.3 for ``count`` copies of epsilon stays within the limits above."""
    if count <= binomial.FULL_RANGE or epsilon == 0.0:
        return True
    return count <= EXACT_COUNT_LIMIT and \
        binomial.window(count, *binomial.log_softplus_pair(epsilon)).size <= EXACT_WINDOW_LIMIT


class KairouzExact(_OneTraversal):
    """Exact optimal composition of identical (eps, delta) guarantees, 002 Thm. III.3,
    for counts up to :data:`EXACT_COUNT_LIMIT` (windowed: O(sqrt(count)) memory)."""

    name = "kairouz-III.3"
    source = "002 Thm. III.3"

    def _inputs(self, ms: Multiset):
        pts = _points(ms)
        fits = pts is not None and len({(e, d) for e, d, _ in pts}) <= 1 and (
            not pts or _exact_window_fits(pts[0][0], sum(n for *_, n in pts)))
        return pts if fits else None

    def _curve(self, pts) -> PrivacyCurve:
        return canonical_composition([(pts[0][0], pts[0][1], sum(n for *_, n in pts))] if pts else [])

    def is_exact(self, ms: Multiset) -> bool:
        return all(kinds.is_canonical(g) for g, _ in ms)


class OptimalHeterogeneous(_OneTraversal):
    """Optimal composition of heterogeneous (eps_i, delta_i) guarantees by exact
    enumeration of the product of canonical pairs (MV16; 002 Sec. IV's argument),
    feasible while the joint outcome count stays under ``ENUMERATION_LIMIT``."""

    name = "optimal-enumeration"
    source = "002 Sec. IV; Murtagh and Vadhan 2016"

    def _inputs(self, ms: Multiset):
        pts = _points(ms)
        fits = (
            pts is not None
            and len({(e, d) for e, d, _ in pts}) > 1
            and _enumeration_size(pts) <= ENUMERATION_LIMIT
        )
        return pts if fits else None

    def _curve(self, pts) -> PrivacyCurve:
        merged: Counter[tuple[float, float]] = Counter()
        for e, d, n in pts:
            merged[(e, d)] += n
        return canonical_composition([(e, d, n) for (e, d), n in merged.items()])

    def is_exact(self, ms: Multiset) -> bool:
        return all(kinds.is_canonical(g) for g, _ in ms)


class GaussianDPComposition(_OneTraversal):
    """mu = sqrt(sum mu_i^2) with the exact GDP curve (DRS22 Cor. 3.3 and 2.13;
    000 Sec. VI): exact for Gaussian mechanisms."""

    name = "gaussian-dp"
    source = "Dong, Roth, Su 2022, Cor. 3.3; 000 Sec. VI"

    def _inputs(self, ms: Multiset):
        return _per_entry(ms, kinds.gdp_mu)

    def _curve(self, mus) -> PrivacyCurve:
        return GaussianCurve(math.sqrt(sum(n * mu * mu for mu, n in mus)))  # inf if it overflows

    def is_exact(self, ms: Multiset) -> bool:
        return True


class ZCDPComposition(_OneTraversal):
    """rho = sum rho_i (BS16 Lemma 2.3), converted with the conversion of
    Canonne, Kamath and Steinke 2020 (Prop. 12). Pure eps-DP enters as eps^2/2."""

    name = "zcdp"
    source = "Bun and Steinke 2016, Lemma 2.3; Canonne, Kamath, Steinke 2020, Prop. 12"

    def _inputs(self, ms: Multiset):
        return _per_entry(ms, kinds.zcdp_rho)

    def _curve(self, rhos) -> PrivacyCurve:
        return ZCDPCurve(sum(n * rho for rho, n in rhos))


class PLDComposition(_OneTraversal):
    """Numerical composition of privacy-loss distributions (dp-accounting), with
    pessimistic rounding: a certified upper bound, within discretisation error of
    the optimum (Koskela et al. 2020; Doroshenko et al. 2022)."""

    name = "pld"
    source = "dp-accounting privacy-loss distributions (pessimistic)"

    def __init__(self, rtol: float = _batch.DEFAULT_RTOL) -> None:
        #: The accuracy of the batch row this row defers to (its own grid is dp-accounting's interval).
        self.rtol = float(rtol)

    def at_accuracy(self, rtol: float) -> "PLDComposition":
        return self if rtol == self.rtol else PLDComposition(rtol)

    def _inputs(self, ms: Multiset):
        if BatchComposition(self.rtol).accepts(ms):
            # Many distinct points, or a mix with noise mechanisms: the batch row composes the same
            # per-invocation distributions (dp-accounting's pessimistic pmfs at the same interval for the
            # noise, split pairs at most as high as pld's rounded-up ones for the points) in one
            # transform, and carries a certified bracket; composing both would double the cost.
            return None
        return self.fallback_inputs(ms)

    def fallback_inputs(self, ms: Multiset):
        """The inputs regardless of the batch row: :func:`compose` asks when batch fails on a list."""
        return ms if _pld.within_grid(ms) else None

    def _curve(self, ms) -> PrivacyCurve:
        return _pld.PLDCurve(_pld.compose_pld(ms), infinite_mass=_pld.infinite_mass(ms))


#: Fewest distinct (epsilon, delta) points for which the batch engine takes a list of points alone
#: (fewer: exact enumeration or the PLD route's group-by-group composition is cheap and pinned by tests).
BATCH_MIN_POINTS = 8


class BatchComposition(_OneTraversal):
    """Batch composition of privacy-loss distributions on one grid (:mod:`gce.accounting.batch`):
    every part transformed once, one inverse transform; split canonical pairs and dp-accounting's
    pessimistic pmfs above (the curve), rounded-down laws below (``curve.lower``), Chernoff-certified
    windows. Takes heterogeneous lists: at least :data:`BATCH_MIN_POINTS` distinct (epsilon, delta)
    points, or two distinct guarantees of which one is a noise mechanism. On a list of points alone it
    replaces ``pld``: its grid is dp-accounting's interval or a whole fraction of it
    (:func:`~gce.accounting.batch.aligned_interval`), where its split pairs are never above pld's
    rounded-up ones."""

    name = "batch"
    source = "batch PLD composition on one grid (Koskela et al. 2020; Doroshenko et al. 2022)"

    def __init__(self, rtol: float = _batch.DEFAULT_RTOL) -> None:
        #: The requested relative width of the bracket, which sets the grid (:func:`~gce.accounting.batch.plan`).
        self.rtol = float(rtol)

    def at_accuracy(self, rtol: float) -> "BatchComposition":
        return self if rtol == self.rtol else BatchComposition(rtol)

    def _inputs(self, ms: Multiset):
        sources = [kinds.pld_source(g) for g, _ in ms]
        if len(ms) < 2 or any(s is None for s in sources):
            return None
        noise = any(s.kind != "point" for s in sources)
        if not noise and len({s.parameters for s in sources}) < BATCH_MIN_POINTS:
            return None
        interval = _batch.aligned_interval(ms, self.rtol)
        coarsen = _batch.auxiliary_compositions()
        try:
            _batch.plan(ms, self.rtol, interval, coarsen)
        except (NumericalLimitError, UnsupportedCombinationError):
            return None
        return ms, interval, coarsen

    def _curve(self, inputs) -> PrivacyCurve:
        ms, interval, coarsen = inputs
        return _batch.BatchCurve(ms, self.rtol, interval, coarsen)


#: Every theorem, exact ones first (the selector stops at an exact one).
THEOREMS: tuple[Theorem, ...] = (
    KairouzExact(),
    OptimalHeterogeneous(),
    GaussianDPComposition(),
    SimpleComposition(),
    AdvancedComposition(),
    KairouzClosedForm(homogeneous=True),
    KairouzClosedForm(homogeneous=False),
    ZCDPComposition(),
    PLDComposition(),
    BatchComposition(),
)


# ---------------------------------------------------------------------------
# The selector


class Bound(NamedTuple):
    """One point of a composition's curve, (epsilon, delta), and the theorem that gives it."""

    epsilon: float
    delta: float
    theorem: str


@dataclass(frozen=True)
class Composition:
    """The composition of a multiset of guarantees under every compatible theorem.

    Attributes
    ----------
    guarantees : Multiset
        What was composed.
    candidates : tuple of (name, curve)
        Each compatible theorem's curve (only the exact one when one exists).
    exact : bool
        Whether the curve is the exact optimum for the stated guarantees.
    """

    guarantees: Multiset
    candidates: tuple[tuple[str, PrivacyCurve], ...]
    exact: bool
    curve: PrivacyCurve = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        curves = [c for _, c in self.candidates]
        object.__setattr__(self, "curve", curves[0] if len(curves) == 1 else EnvelopeCurve(curves))

    def epsilon(self, delta: float) -> float:
        """The tightest epsilon at ``delta`` (as :meth:`PrivacyCurve.epsilon`); :meth:`at_delta` names the theorem."""
        return self.at_delta(delta).epsilon

    def delta(self, epsilon: float) -> float:
        """The tightest delta at ``epsilon`` (as :meth:`PrivacyCurve.delta`); :meth:`at_epsilon` names the theorem."""
        return self.at_epsilon(epsilon).delta

    def at_delta(self, delta: float) -> Bound:
        """The tightest epsilon at ``delta`` and the theorem that gives it."""
        eps, name = min(((float(c.epsilon(delta)), name) for name, c in self.candidates), key=lambda v: v[0])
        return Bound(eps, float(delta), name)

    def at_epsilon(self, epsilon: float) -> Bound:
        """The tightest delta at ``epsilon`` and the theorem that gives it."""
        d, name = min(((float(c.delta(epsilon)), name) for name, c in self.candidates), key=lambda v: v[0])
        return Bound(float(epsilon), d, name)

    def plot(self, path=None, ax=None, *, deltas=None, dpi: int = 150):
        """Draw the composed curve, epsilon against delta (:meth:`PrivacyCurve.plot`, the theorems named in
        the title); returns the matplotlib Axes."""
        names = ", ".join(name for name, _ in self.candidates[:3]) + (", ..." if len(self.candidates) > 3 else "")
        return self.curve.plot(path, ax, deltas=deltas, label="composed" + (" (exact)" if self.exact else ""),
                               title=f"composition: {names}", dpi=dpi)

    def _repr_html_(self) -> str:
        """The composition in a notebook: epsilon and the winning theorem at a few deltas, and the curve."""
        from .curves import HTML_TABLE_DELTAS, _html_deltas, curve_html

        rows = [(b.delta, b.epsilon, b.theorem) for b in map(self.at_delta, HTML_TABLE_DELTAS)]
        title = f"Composition of {sum(n for _, n in self.guarantees):,} invocations ({'exact' if self.exact else 'an upper bound'})"
        return curve_html(title, rows, lambda ax: self.plot(ax=ax, deltas=_html_deltas()))


def _split(ms: Multiset) -> tuple[Multiset, Multiset] | None:
    """Two non-empty groups that theorems may take apart, or None.

    First the entries dp-accounting can take and the rest (zCDP); when that
    does not split the list (a composition too large for a PLD grid), the
    entries with an (epsilon, delta) point and the rest.
    """
    for belongs in (_pld.supports, lambda g: kinds.point(g) is not None):
        left = tuple((g, n) for g, n in ms if belongs(g))
        right = tuple((g, n) for g, n in ms if not belongs(g))
        if left and right:
            return left, right
    return None


def _vacuous() -> PrivacyCurve:
    """delta = 1 at every epsilon: always valid, the answer when no theorem bounds a list."""
    return FunctionCurve(lambda eps: np.ones_like(eps), delta_floor=1.0)


#: Points of the split between two groups' epsilons in the mixed fallback.
_SPLIT_POINTS = 257


def _sum_of_curves(a: PrivacyCurve, b: PrivacyCurve) -> PrivacyCurve:
    """delta(eps) <= min_{s in [0, eps]} delta_a(s) + delta_b(eps - s): simple composition
    (002 Thm. III.1) of the two groups at every split; any split is valid."""

    def delta_fn(eps: NDArray[np.float64]) -> NDArray[np.float64]:
        share = np.linspace(0.0, 1.0, _SPLIT_POINTS)
        finite = np.where(np.isfinite(eps), eps, 0.0)  # eps = inf: both groups at their floors
        s = finite[:, None] * share[None, :]
        da = a.delta(s.ravel()).reshape(s.shape)
        db = b.delta((finite[:, None] - s).ravel().clip(min=0.0)).reshape(s.shape)
        out = np.minimum((da + db).min(axis=1), 1.0)
        return np.where(np.isfinite(eps), out, min(a.delta_floor + b.delta_floor, 1.0))

    return FunctionCurve(delta_fn, delta_floor=min(a.delta_floor + b.delta_floor, 1.0))


def _pld_fallback(ms: Multiset) -> list[tuple[str, PrivacyCurve]]:
    """The ``pld`` row's curve of a list it declined for the batch row, when the batch composition failed."""
    row = next(t for t in THEOREMS if isinstance(t, PLDComposition))
    inputs = row.fallback_inputs(ms)
    if inputs is None:
        return []
    try:
        return [(row.name, row._curve(inputs))]
    except NumericalLimitError:
        return []


def compose(guarantees: Guarantee | Iterable[Guarantee] | Mapping[Guarantee, int],
            rtol: float = _batch.DEFAULT_RTOL) -> Composition:
    """Compose guarantees with every compatible theorem; the tightest wins.

    Parameters
    ----------
    guarantees : Guarantee, iterable of Guarantee, or mapping Guarantee -> count
        The per-invocation guarantees of the composed mechanisms (one guarantee: itself, once).
    rtol : float
        The relative accuracy asked for (:mod:`gce.effort`): it alone sets the grids of the rows that
        compose privacy-loss distributions (:meth:`Theorem.at_accuracy`), so the same list gives the
        same curve on any machine.

    Returns
    -------
    Composition
        Its ``curve`` is the pointwise minimum over compatible theorems;
        ``epsilon(delta)`` / ``delta(epsilon)`` are its values and
        ``at_delta`` / ``at_epsilon`` also name the winner. When an exact
        theorem applies, it is the only candidate.

    Examples
    --------
    >>> from gce.accounting.guarantees import ApproxDP
    >>> c = compose({ApproxDP(0.1, 1e-6): 30})
    >>> best = c.at_delta(1e-4)
    >>> best.theorem, c.exact, round(best.epsilon, 3)
    ('kairouz-III.3', True, 1.867)
    """
    ms = as_multiset(guarantees)
    rtol = float(rtol)
    if not ms:
        return Composition(ms, (("none", DiscreteLossCurve([], [], 0.0)),), exact=True)
    accepted = []
    for theorem in (t.at_accuracy(rtol) for t in THEOREMS):  # an exact theorem ends the search early
        if theorem.accepts(ms):
            if theorem.is_exact(ms):
                return Composition(ms, ((theorem.name, theorem.curve(ms)),), exact=True)
            accepted.append(theorem)
    candidates = []
    for theorem in accepted:
        try:
            candidates.append((theorem.name, theorem.curve(ms)))
        except NumericalLimitError:  # dp-accounting out of its range: the other theorems still bound it
            if isinstance(theorem, BatchComposition):  # the pld row declined in its favour: its turn now
                candidates += _pld_fallback(ms)
            continue
    if candidates:
        return Composition(ms, tuple(candidates), exact=False)
    groups = _split(ms)
    if groups is None:  # e.g. subsampled Gaussians with sigma near 0 beside Gaussians: nothing bounds them
        return Composition(ms, (("vacuous (no theorem applies)", _vacuous()),), exact=False)
    a, b = compose(dict(groups[0]), rtol), compose(dict(groups[1]), rtol)
    return Composition(ms, (("split: " + "+".join(n for n, _ in a.candidates[:1] + b.candidates[:1]),
                             _sum_of_curves(a.curve, b.curve)),), exact=False)


# ---------------------------------------------------------------------------
# Composition within a time budget

#: The rows that build privacy-loss distributions (dp-accounting's builders, transforms): what a time
#: budget can make too expensive. Every other row is a closed form or exact and cheap.
COSTLY_ROWS = frozenset({"pld", "batch"})
#: Coarsest grid a composition short of time falls back to (pessimistic pmfs stay sound at any width).
COARSEST_FALLBACK = 0.05


#: Seconds the batch engine's transforms take per law of noise mechanisms (:func:`gce.accounting.batch.transform_seconds`).
TRANSFORM_SECONDS = _batch.TRANSFORM_SECONDS


def composition_seconds(guarantees, interval: float | None = None, rtol: float = _batch.DEFAULT_RTOL) -> float:
    """An estimate of the seconds :func:`compose` takes at the accuracy ``rtol`` (or on the grid of width
    ``interval``): dp-accounting's builds of the noise mechanisms' distributions not built yet
    (:func:`gce.accounting.pld.build_seconds`), which dominate, and the transforms over the grid; 0
    when an exact row answers (closed forms and enumeration, cheap) or no noise mechanism is left to
    build. Read only to decide whether a composition fits the time left, never how it is made."""
    ms = as_multiset(guarantees)
    # Gaussian mechanisms are one law together (batch.merge_gaussians); a pmf built on a finer interval
    # is split onto a coarser one, not built again (batch.build_seconds).
    try:
        merged = _batch.merge_gaussians(tuple(ms))
    except NumericalLimitError:  # beyond the batch grid: compose() answers from the closed forms, at once
        return 0.0
    points_grid = interval  # a list of points alone: its grid for rtol unless one is given
    if interval is None:  # the grid compose() takes at this accuracy (an auxiliary one's when auxiliary)
        interval = _batch.noise_interval(merged, rtol, _batch.auxiliary_compositions())
        if len(ms) > 1 and not any(kinds.pld_noise(g) is not None for g, _ in merged):
            points_grid = _points_grid(merged, rtol)
    cost = sum(_batch.build_seconds(g, interval) for g, _ in merged)
    if len(ms) > 1:  # every law is transformed over the whole grid, whose size goes as 1 / interval
        cost += _batch.transform_seconds(merged, points_grid or interval)
    if cost == 0.0:
        return 0.0
    for theorem in THEOREMS:
        if theorem.name not in COSTLY_ROWS and theorem.accepts(ms) and theorem.is_exact(ms):
            return 0.0
    return cost


def _points_grid(ms: Multiset, rtol: float) -> float:
    """The batch grid of a list of points at ``rtol`` (:func:`~gce.accounting.batch.aligned_interval`), or
    dp-accounting's interval where the list has no batch grid (moments beyond the floats, zCDP)."""
    if any(kinds.pld_source(g) is None for g, _ in ms):  # (zCDP: no batch composition to estimate)
        return _pld.DISCRETIZATION
    try:
        return _batch.aligned_interval(ms, rtol)
    except (ArithmeticError, ValueError):
        return _pld.DISCRETIZATION


def compose_within(guarantees, rtol: float = _batch.DEFAULT_RTOL,
                   deadline: effort.Deadline | None = None) -> tuple[Composition, str | None]:
    """:func:`compose` at the accuracy ``rtol``, or, only when its estimated cost
    (:func:`composition_seconds`) does not fit in the time left on ``deadline`` (the running
    computation's, :func:`gce.effort.current`, by default), a cheaper sound composition; the cap
    then stopped a step and ``deadline.stop`` records it (the report says ``time limit reached``).

    The cheaper one keeps every closed-form row and composes the privacy-loss distributions on a
    coarser grid (:class:`~gce.accounting.batch.BatchCurve` with dp-accounting's pessimistic pmfs at
    that width: sound at any width, looser as it grows): the finest of the grid for ``rtol`` times 2,
    4, 8, ... (at most :data:`COARSEST_FALLBACK`) whose builds not made yet fit in the time left, so
    that the compositions of one solve share their coarse distributions. Returns the composition and,
    when it fell back, what the cap stopped (the phrase given to ``deadline.stop``).
    """
    ms = as_multiset(guarantees)
    deadline = effort.current() if deadline is None else deadline
    cost = composition_seconds(ms, rtol=rtol)
    if cost == 0.0 or deadline.fits(cost):  # (closed forms and exact rows cost nothing, even past the cap)
        return compose(dict(ms), rtol), None
    left = max(deadline.left(), 0.0)
    try:
        merged = _batch.merge_gaussians(tuple(ms))
        base = _batch.noise_interval(merged, rtol, _batch.auxiliary_compositions()) \
            if any(kinds.pld_noise(g) is not None for g, _ in merged) else _points_grid(merged, rtol)
    except (NumericalLimitError, UnsupportedCombinationError):
        base = _pld.DISCRETIZATION
    interval = base
    while interval < COARSEST_FALLBACK:
        interval = min(2.0 * interval, COARSEST_FALLBACK)
        if composition_seconds(ms, interval) <= left:
            break
    candidates = []
    for theorem in THEOREMS:
        if theorem.name not in COSTLY_ROWS and theorem.accepts(ms):
            candidates.append((theorem.name, theorem.curve(ms)))
    try:
        candidates.append(("batch", _batch.BatchCurve(ms, rtol, interval)))
        how = f"on a grid of width {interval:g}"
    except (NumericalLimitError, UnsupportedCombinationError):
        how = "by closed forms only"
    if not candidates:
        groups = _split(ms)
        if groups is None:
            candidates.append(("vacuous (no theorem applies)", _vacuous()))
        else:  # as compose() does: each group bounded within the time left, then simple composition
            a, b = (compose_within(dict(group), rtol, deadline)[0] for group in groups)
            candidates.append(("split: " + "+".join(n for n, _ in a.candidates[:1] + b.candidates[:1]),
                               _sum_of_curves(a.curve, b.curve)))
    stopped = (f"composition of {_describe(ms)} {how} (the grid for rtol {rtol:g}, of width {base:g}, would "
               f"take about {cost:.2g} s; {left:.2g} s left)")
    deadline.stop(stopped)
    return Composition(ms, tuple(candidates), exact=False), stopped

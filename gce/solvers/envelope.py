"""A certified bound on the worst case over allowed pairs by composing privacy-loss distributions: one
dominating pair per slot.

The worst-case curve over allowed pairs is ``max over allowed (b0, b1)`` of the composition of the
invocations on ``b0 XOR b1`` (001 Thm. 1). Each database's invocations compose to one pair (its *bundle*,
dominated by the product of the upper laws of :mod:`gce.accounting.batch`). The bound below replaces the
maximum over sets of databases by a composition of a few pairs, each dominating every database that can
fill one *slot* of a differing set, so that it is close to the worst set whenever the databases' curves
nearly form a chain, without the Renyi conversion (CKS20 Prop. 12) and its few per cent.

The argument
------------
*Envelopes.* The privacy profile of a pair in one direction, ``g(u) = E_P[(1 - u e^{-L})_+]`` with
``u = e^eps`` (L the privacy loss, ``P(L = inf)`` included), is convex and non-increasing in ``u`` with
``g(0) = 1`` (P's total mass); every such function on ``u >= 0`` is the profile of a pair, and ``g`` for all
``eps`` in R fixes the pair's tradeoff function (Dong, Roth and Su 2022, Prop. 2.12; the convex conjugate).
The pointwise maximum of the profiles of a family of pairs is again convex, non-increasing and 1 at 0: the
profile of a pair that dominates every member in the Blackwell order (its tradeoff function is the convex
minorant of the members' minimum). Linear interpolation in ``u`` between the values at the grid's points
``u_j = e^{j h}`` lies above it (a chord of a convex function): a pair whose loss law sits on the grid
(connect-the-dots, Doroshenko et al. 2022), also dominating. Its masses follow from the values at the grid
points: with ``R_j = sum_{l >= j} p_l e^{(j - l) h}``, ``g(u_j) - g(u_{j+1}) = (1 - e^{-h}) R_{j+1}`` and
``p_j = R_j - e^{-h} R_{j+1}`` (:func:`envelope_law`).

*Slots.* Order the databases ``d_1, ..., d_n`` (any order; a score puts the likeliest worst first) and let
``E_j`` dominate every database of ``d_j, ..., d_n`` (the envelope of that suffix: ``E_1 >= E_2 >= ...``).
Let ``N_j`` bound the number of databases among ``d_1..d_j`` that an allowed pair makes differ (under
``at_most m`` with ``exclusive`` groups and unbounded pairs: the number of distinct groups among them, at
most ``m``). For an allowed pair whose differing databases are ``d_{b_1}, ..., d_{b_r}``
(``b_1 < ... < b_r``), at most ``N_j`` of them lie among the first ``j``, so
``b_i >= p_i = min {j : N_j >= i}`` and ``d_{b_i}`` is dominated by ``E_{p_i}``.
Composition is monotone under domination (a post-processing of each part; 002 Thm. II.5), so the pair's
curve lies below the composition of ``E_{p_1}, ..., E_{p_r}``, and below that of all ``N_n`` slots (more
parts only raise it). One composition bounds every allowed pair, each direction on its own (the envelope of
the "remove" profiles bounds the "remove" direction; likewise "add"; the curve is the larger).

*Counts of classes.* Where curves cross (a composition of pure guarantees: a large delta at small epsilon
and none beyond its sum; a subsampled one: a long tail), one envelope per slot over all databases carries
every tail into every slot. Split the databases into classes (any split is sound; :func:`_classes` puts
databases whose curves nearly form chains together) and apply the slots' argument within each class: an
allowed pair with ``n_c`` differing databases in class ``c`` is dominated by the composition over classes of
each class's first ``n_c`` slot envelopes. The maximum over the count vectors an allowed pair can have
(:func:`class_search`: a best-first search over the classes in turn, the classes not yet counted sharing the
slots left under their union's envelopes) bounds every allowed pair; a count vector whose bound does not
close splits its largest class in two (each half's envelopes lie below the class's at the same rank: fewer
databases in each suffix), down to classes of identical databases, where the bound is the set's own
composition.

*Numbers.* The bundles are the batch engine's upper laws (split atoms, pessimistic noise pmfs) convolved
exactly on the grid; the envelopes' masses come out of differences of profiles, whose floating-point error
is charged: any point where the rebuilt profile falls below the envelope's moves that much mass from the
lowest atoms to +inf (raising the profile everywhere above them). Tails of at most ``cut`` are trimmed
(:func:`trimmed`: losses only rise). A node's composition is a product of transforms on the size of the
root composition's window (:class:`_Spectra`: Chernoff's bound places it; what wraps around only rises and
the mass above it is charged at +inf), with the batch engine's allowances for the transforms' round-off;
its profile at the grid points is exact for the grid law and linear in ``e^eps`` between them
(:meth:`_Spectra.value`).

References
----------
001: the generalized composition experiment, Thm. 1. 002: Kairouz, Oh, Viswanath, Thm. II.5.
Dong, Roth, Su, "Gaussian differential privacy", J. R. Stat. Soc. B 2022.
Doroshenko, Ghazi, Kamath, Kumar, Manurangsi 2022, "Connect the dots: tighter discrete approximations of
privacy loss distributions".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from ..accounting import batch
from ..accounting.curves import DiscreteLossCurve, PrivacyCurve
from ..accounting.guarantees import Guarantee
from ..constraints import AtMost, ConstraintSet, Exclusive
from ..effort import DEFAULT_RTOL, Deadline, current
from ..errors import NumericalLimitError

__all__ = ["Bundle", "bundle_laws", "profile", "trimmed", "envelope_law", "SlotSearch", "slot_search", "accepts",
           "slot_count", "database_bundles", "scores", "bundles_seconds", "node_seconds", "search_seconds",
           "class_search", "class_seconds", "combined", "window_points"]

#: Most grid points of one envelope (a bundle's loss range over the grid width).
ENVELOPE_POINTS_MAX = 2**20


@dataclass(frozen=True)
class Bundle:
    """One direction of a database's composed upper law on the grid ``{i h}``: masses ``mass[i]`` at
    losses ``(lo + i) h`` under P, and ``infinite`` at +inf."""

    lo: int
    mass: NDArray[np.float64]
    infinite: float

    @property
    def hi(self) -> int:
        return self.lo + self.mass.size - 1


def _product(a: Bundle, b: Bundle, cut: float) -> Bundle:
    """The law of the sum of independent losses with laws ``a`` and ``b`` (finite parts convolved, the
    masses at +inf combined), :func:`trimmed` by ``cut``."""
    if a.mass.size == 0 or b.mass.size == 0:
        return Bundle(0, np.zeros(0), 1.0 - (1.0 - a.infinite) * (1.0 - b.infinite))
    if min(a.mass.size, b.mass.size) <= 64:
        mass = np.convolve(a.mass, b.mass)
    else:
        from scipy import signal  # here: scipy.signal (and scipy.stats with it) is slow to import (start-up)

        mass = np.maximum(signal.fftconvolve(a.mass, b.mass), 0.0)
    infinite = 1.0 - (1.0 - a.infinite) * (1.0 - b.infinite)
    return trimmed(Bundle(a.lo + b.lo, mass, infinite), cut)


def _power(law, cut: float) -> Bundle:
    """``law.count`` copies of one batch law composed, by repeated squaring (each product trimmed by ``cut``)."""
    if law.mass.size == 0:
        return Bundle(0, np.zeros(0), 1.0 - (1.0 - law.infinite) ** law.count)
    lo = int(law.index.min())
    if int(law.index.max()) - lo + 1 > ENVELOPE_POINTS_MAX:  # (before allocating it)
        raise NumericalLimitError(f"a database's composed loss law beyond {ENVELOPE_POINTS_MAX:,} grid points")
    one = np.zeros(int(law.index.max()) - lo + 1)
    np.add.at(one, law.index - lo, law.mass)
    base, out, n = Bundle(lo, one, float(law.infinite)), None, int(law.count)
    while n:
        if n & 1:
            out = base if out is None else _product(out, base, cut)
        n >>= 1
        if n:
            base = _product(base, base, cut)
        if out is not None and out.mass.size > ENVELOPE_POINTS_MAX or base.mass.size > ENVELOPE_POINTS_MAX:
            raise NumericalLimitError(f"a database's composed loss law beyond {ENVELOPE_POINTS_MAX:,} grid points")
    return out


#: Products in one database's composition that the trimming's share is divided among (:func:`bundle_laws`).
_PRODUCTS_MAX = 128


def bundle_laws(ms: Sequence[tuple[Guarantee, int]], h: float, cut: float = 0.0) -> tuple[Bundle, ...]:
    """The upper law of the composition of ``ms`` (one database's invocations) per direction, on the grid
    of width ``h``: the batch engine's laws (:func:`gce.accounting.batch.plan`) convolved (repeats by
    repeated squaring), every product :func:`trimmed` by ``cut / 128`` and the whole by ``cut / 2`` (losses
    only rise: sound whatever ``cut``; it decides how far above the untrimmed law the profile may be)."""
    plan = batch.plan(tuple(ms), interval=h)
    out = []
    share = cut / _PRODUCTS_MAX
    for laws in plan.upper:
        total = Bundle(0, np.ones(1), 0.0)
        for law in laws:
            total = _product(total, _power(law, share), share)
        # whatever the convolutions lost (round-off) is charged at +inf
        total = Bundle(total.lo, total.mass, min(max(total.infinite, 1.0 - math.fsum(total.mass)), 1.0))
        out.append(trimmed(total, cut / 2.0))
    return tuple(out)


def _profile_values(mass: NDArray[np.float64], infinite: float, h: float) -> NDArray[np.float64]:
    """``g(e^{j h})`` at every index of ``mass`` (its own range): ``R_j = sum_{l >= j} p_l q^{l - j}``, ``q = e^-h``
    (a backward recursion), then ``g_j = infinite + (1 - q) sum_{l > j} R_l``, without cancellation."""
    from scipy import signal

    q = math.exp(-h)
    r = signal.lfilter([1.0], [1.0, -q], mass[::-1])[::-1]
    tail = np.concatenate((np.cumsum(r[::-1])[::-1][1:], [0.0]))
    return infinite + (1.0 - q) * tail


def trimmed(bundle: Bundle, cut: float) -> Bundle:
    """The bundle with at most ``cut`` of its highest finite mass moved to +inf and at most ``cut`` of its
    lowest raised onto the lowest atom kept: losses only rise, so the profile only rises (a dominating
    pair: :func:`profile` is a pair's profile for any law of P-mass 1), and a composition of ``r`` such
    parts has delta at most ``2 r cut`` above the untrimmed one's (a coupling: a total changes only when a
    moved part does)."""
    mass = bundle.mass
    if cut <= 0.0 or mass.size < 3:
        return bundle
    top = int(np.searchsorted(np.cumsum(mass[::-1]), cut, side="right"))  # the highest ``top`` atoms go
    bottom = int(np.searchsorted(np.cumsum(mass), cut, side="right"))  # the lowest ``bottom`` are raised
    top = min(top, mass.size - 1)
    bottom = min(bottom, mass.size - 1 - top)
    if top == 0 and bottom == 0:
        return bundle
    moved = float(mass[mass.size - top:].sum()) if top else 0.0
    kept = mass[bottom:mass.size - top].copy()
    kept[0] += float(mass[:bottom].sum())
    return Bundle(bundle.lo + bottom, kept, min(bundle.infinite + moved, 1.0))


def profile(bundle: Bundle, lo: int, hi: int, h: float) -> NDArray[np.float64]:
    """The bundle's profile ``g(e^{j h})`` (delta at epsilon ``j h``) for ``j = lo..hi`` (``lo <= bundle.lo``,
    ``hi >= bundle.hi``): below its lowest atom the line through (0, 1), above its highest the mass at +inf."""
    own = _profile_values(bundle.mass, bundle.infinite, h)
    out = np.empty(hi - lo + 1)
    out[bundle.lo - lo:bundle.hi - lo + 1] = own
    out[bundle.hi - lo + 1:] = bundle.infinite
    if bundle.lo > lo:
        x = np.arange(lo, bundle.lo) * h
        # Q's mass of the finite atoms: g(u) = 1 - u Q below the lowest atom
        q_mass = float(np.exp(-(np.arange(bundle.lo, bundle.hi + 1) * h)) @ bundle.mass)
        out[:bundle.lo - lo] = np.clip(1.0 - np.exp(x) * q_mass, 0.0, 1.0)
    return out


def envelope_law(values: NDArray[np.float64], lo: int, h: float) -> Bundle:
    """The loss law on the grid whose profile at ``e^{j h}``, ``j = lo..lo + len(values) - 1``, is at least
    ``values`` (the pointwise maximum of profiles; module doc), the highest value its mass at +inf."""
    q = np.exp(-h)
    g = np.maximum.accumulate(values[::-1])[::-1]  # non-increasing (a maximum of non-increasing profiles)
    infinite = float(g[-1])
    r_next = np.maximum(-np.diff(g), 0.0) / (1.0 - q)  # R_{j+1} for j = lo..hi-1
    r = np.concatenate(([0.0], r_next))  # R_j for j = lo+1..hi at positions 1.., R_lo unknown
    mass = np.empty_like(g)
    mass[1:] = r[1:] - q * np.concatenate((r[2:], [0.0]))
    mass = np.maximum(mass, 0.0)
    mass[0] = 0.0
    mass[0] = max(1.0 - infinite - math.fsum(mass), 0.0)
    law = Bundle(lo, mass, infinite)
    rebuilt = profile(law, lo, lo + g.size - 1, h)
    deficit = float(np.max(g - rebuilt))
    if deficit > 0.0:  # round-off: that much mass from the lowest atoms to +inf raises the profile by it
        take = deficit * (1.0 + 1e-12) + 1e-300
        cum = np.cumsum(mass)
        j = int(np.searchsorted(cum, take))
        moved = mass.copy()
        moved[:j] = 0.0
        if j < moved.size:
            moved[j] = cum[j] - take
        law = Bundle(lo, np.maximum(moved, 0.0), min(infinite + take, 1.0))
    return law


class _SlotCurve(PrivacyCurve):
    """The upper curve of a :class:`~gce.accounting.batch.LawCurve` alone (no lower curve: the slots' pairs
    are not allowed pairs)."""

    def __init__(self, curve: batch.LawCurve):
        self._curve = curve
        self.delta_floor = curve.delta_floor

    def _delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        return self._curve._delta(eps)

    def _epsilon(self, d: NDArray[np.float64]) -> NDArray[np.float64]:
        return self._curve._epsilon(d)


# ---------------------------------------------------------------------------
# Branch and bound along the order: the slots' bound at every node


class _Groups:
    """``at_most`` bounds over all databases with ``exclusive`` groups (and nothing else), unbounded pairs:
    allowed sets are those with at most ``m`` members and at most one of each group."""

    def __init__(self, constraints: ConstraintSet):
        self.m = constraints.n
        #: Each database's group: its own index, or the least member of the exclusive group holding it.
        self.group = np.arange(constraints.n)
        grouped = np.zeros(constraints.n, dtype=bool)
        for c in constraints.constraints:
            if isinstance(c, AtMost) and c.among is None:
                self.m = min(self.m, int(c.m))
            elif isinstance(c, Exclusive):
                members = np.array(sorted(c.group), dtype=np.intp)
                if grouped[members].any():
                    raise TypeError("a database in two exclusive groups")
                grouped[members] = True
                self.group[members] = members[0]
            else:
                raise TypeError(type(c).__name__)

    @staticmethod
    def accepts(constraints: ConstraintSet, neighborhood: str) -> bool:
        try:
            _Groups(constraints)
        except TypeError:
            return False
        return neighborhood == "unbounded"


#: Tilts ``t`` at which every part keeps its log-MGF ``log E[e^{t L}; L finite]`` (both signs): the Chernoff
#: bounds that place a composition's window and certify the mass above it (:class:`_Spectra`).
TILTS = np.concatenate((-(2.0 ** np.arange(7.0, -4.5, -0.5)), 2.0 ** np.arange(-4.0, 7.5, 0.5)))
#: Mass of a composition that may lie beyond each end of its window (Chernoff's bound): the mass above is
#: charged at +inf, the mass below wraps onto the window's top (counted twice: sound).
WINDOW_TAIL = 1e-15
#: The transforms' size: this many times the root composition's window (nodes with a wider one are composed
#: on the whole range instead).
WINDOW_MARGIN = 2.0


class _Part:
    """One factor of a composition: a law (or a product of laws, :meth:`_Spectra.merged`) with its lowest
    index, the length of its support, its mass at +inf, its L2 norm (round-off), its log-MGF at
    :data:`TILTS` and its transform (computed at the spectra's size when first needed)."""

    __slots__ = ("lo", "span", "infinite", "norm", "log_mgf", "laws", "children", "_transform")

    def __init__(self, lo: int, span: int, infinite: float, norm: float, log_mgf: NDArray[np.float64],
                 laws: tuple[Bundle, ...], children: tuple["_Part", ...] = ()):
        self.lo, self.span, self.infinite, self.norm = lo, span, infinite, norm
        self.log_mgf, self.laws, self.children, self._transform = log_mgf, laws, children, None


def _log_mgf(bundle: Bundle, h: float) -> NDArray[np.float64]:
    """``log E[e^{t L}; L finite]`` of a law at every tilt of :data:`TILTS` (-inf without finite mass)."""
    positive = bundle.mass > 0
    return batch.log_mgf_of((bundle.lo + np.flatnonzero(positive)) * h, bundle.mass[positive], TILTS)


class _Spectra:
    """Transforms of laws on a grid of width ``h``: a node's composition is a product of cached transforms and
    one inverse transform.

    *Windows.* A composition of ``r`` laws spans ``r`` times their range, but its mass lies in a window far
    narrower (a sum of independent losses concentrates). The transforms have the size of the root
    composition's window (:data:`WINDOW_MARGIN` times it; at most the whole range of ``laws`` laws): the
    product's inverse is then the composition wrapped around that size. A node's window ``[a, a + size)``
    starts where Chernoff's bound (the parts' log-MGFs summed: the MGF of a sum of independent losses is
    the product) puts at most :data:`WINDOW_TAIL` below it and ends where it puts at most that above it; the
    wrapped composition read on the window holds every atom of the window (plus wrapped ones: each grid
    value of the profile only rises) and the mass above the window, bounded by Chernoff, is charged at
    +inf, so the profile read is at least the composition's at every point of the window (the mass below
    it adds nothing there). A node whose window does not fit is composed on the whole range."""

    def __init__(self, lo: int, hi: int, laws: int, h: float):
        from scipy import fft
        self._fft = fft
        self.h = h
        self.full = fft.next_fast_len(laws * (hi - lo + 1), real=True)
        if self.full > batch.GRID_LIMIT:
            raise NumericalLimitError(f"a composition of {laws} envelopes over {self.full:,} grid points")
        self.size: int | None = None  # decided by the first composition (the root's)
        self.whole = 0  # compositions made on the whole range (their window did not fit)

    def of(self, bundle: Bundle) -> _Part:
        """One law as a part."""
        return _Part(bundle.lo, bundle.mass.size - 1, bundle.infinite, float(np.linalg.norm(bundle.mass)),
                     _log_mgf(bundle, self.h), (bundle,))

    def merged(self, parts) -> _Part:
        """One part standing for the product of ``parts`` (the sums of the lowest indices, spans, norms and
        log-MGFs, the product of the survivals and, when needed, of the transforms): a product shared by
        several compositions."""
        log_survival = sum(math.log1p(-p.infinite) if p.infinite < 1.0 else -math.inf for p in parts)
        return _Part(sum(p.lo for p in parts), sum(p.span for p in parts), -math.expm1(log_survival),
                     sum(p.norm for p in parts), sum(p.log_mgf for p in parts),
                     tuple(b for p in parts for b in p.laws), tuple(parts))

    def _transform(self, part: _Part) -> NDArray[np.complex128]:
        if part._transform is None:
            if part.children:
                acc = self._transform(part.children[0]).copy()
                for child in part.children[1:]:
                    acc *= self._transform(child)
            else:  # a law longer than the size is folded onto it first (the same transform's samples)
                mass = part.laws[0].mass
                if mass.size > self.size:
                    mass = np.bincount(np.arange(mass.size) % self.size, weights=mass, minlength=self.size)
                acc = self._fft.rfft(mass, n=self.size)
            part._transform = acc
        return part._transform

    def _window(self, log_mgf: NDArray[np.float64], start: int, span: int) -> tuple[int, int]:
        """(a, b): the lowest and highest grid index outside of which Chernoff's bound leaves at most
        :data:`WINDOW_TAIL` of a composition with these summed log-MGFs, within its support."""
        tail = math.log(WINDOW_TAIL)
        up, down = TILTS > 0, TILTS < 0
        with np.errstate(invalid="ignore"):
            top = np.nanmin((log_mgf[up] - tail) / TILTS[up]) if np.isfinite(log_mgf[up]).all() else math.inf
            bottom = np.nanmax((tail - log_mgf[down]) / -TILTS[down])
        b = start + span if not math.isfinite(top) else min(start + span, math.ceil(top / self.h))
        a = start if not math.isfinite(bottom) else max(start, math.floor(bottom / self.h))
        return a, max(a, b)

    def _upper_tail(self, log_mgf: NDArray[np.float64], index: int) -> float:
        """Chernoff's bound on the mass at or above grid index ``index`` (twice it: floating point)."""
        up = TILTS > 0
        exponent = float(np.min(log_mgf[up] - TILTS[up] * index * self.h))
        return min(2.0 * math.exp(exponent), 1.0) if exponent < 0 else 1.0

    def _pmf(self, parts) -> tuple[int, NDArray[np.float64], float, float]:
        """(lowest index, pmf, mass at +inf, round-off allowance) of one direction's product."""
        start = sum(p.lo for p in parts)
        span = sum(p.span for p in parts)
        log_mgf = sum(p.log_mgf for p in parts)
        if self.size is None:  # the first composition (the root's) sizes the transforms
            a, b = self._window(log_mgf, start, span)
            self.size = min(self.full, self._fft.next_fast_len(int(WINDOW_MARGIN * (b - a + 1)) + 1, real=True))
        log_survival = sum(math.log1p(-p.infinite) if p.infinite < 1.0 else -math.inf for p in parts)
        infinite = -math.expm1(log_survival)
        norms = sum(p.norm for p in parts)
        if span + 1 <= self.size:  # the whole support fits: nothing wraps
            size, first, charge = self.size, start, 0.0
            acc = self._transform(parts[0]).copy()
            for p in parts[1:]:
                acc *= self._transform(p)
        else:
            a, b = self._window(log_mgf, start, span)
            if b - a + 1 <= self.size:
                size, first = self.size, a
                charge = self._upper_tail(log_mgf, a + size) if a + size <= start + span else 0.0
                acc = self._transform(parts[0]).copy()
                for p in parts[1:]:
                    acc *= self._transform(p)
            else:  # on the whole range, from the laws
                self.whole += 1
                size, first, charge = self.full, start, 0.0
                acc = None
                for law in (b for p in parts for b in p.laws):
                    t = self._fft.rfft(law.mass, n=size)
                    acc = t if acc is None else acc * t
        wrapped = np.maximum(self._fft.irfft(acc, n=size), 0.0)
        pmf = np.roll(wrapped, -((first - start) % size)) if first != start else wrapped
        round_off = 8.0 * np.finfo(float).eps * max(math.log2(size), 1.0) * norms \
            + batch.ABSOLUTE_ROUND_OFF * math.sqrt(size)
        return first, pmf, min(infinite + charge, 1.0), round_off

    def value(self, parts_by_direction, delta: float | None, epsilon: float | None) -> float:
        """Epsilon at ``delta`` (or delta at ``epsilon``) of the product's upper curve, the larger direction,
        with the allowances of :meth:`curve`: the profile at the grid points is exact for the grid law and
        linear in ``e^eps`` between them."""
        out = 0.0
        for parts in parts_by_direction:
            start, pmf, infinite, round_off = self._pmf(parts)
            g = _profile_values(pmf, infinite, self.h)
            x = (start + np.arange(pmf.size)) * self.h
            if epsilon is not None:
                j = int(np.searchsorted(x, epsilon, side="right")) - 1
                if j < 0:
                    raw = 1.0
                elif j >= g.size - 1:
                    raw = infinite
                else:
                    u0, u1, u = math.exp(x[j] - epsilon), math.exp(x[j + 1] - epsilon), 1.0
                    raw = g[j] + (g[j + 1] - g[j]) * (u - u0) / (u1 - u0)
                out = max(out, min(raw * (1.0 + batch.ROUND_OFF) + round_off, 1.0))
                continue
            need = (delta - round_off) / (1.0 + batch.ROUND_OFF)
            if need <= infinite:
                return math.inf
            above = np.flatnonzero(g > need)  # g is non-increasing
            if not above.size:  # below the lowest atom g is the line from (u = 0, 1) to (e^{x_0}, g_0)
                if g[0] < 1.0:
                    out = max(out, x[0] + math.log((1.0 - need) / (1.0 - g[0])))
                continue
            j = int(above[-1])
            if j >= g.size - 1:
                return math.inf
            # g linear in u = e^eps between x_j and x_{j+1}: solve g = need
            w = (g[j] - need) / (g[j] - g[j + 1])
            eps = x[j] + math.log1p(w * math.expm1(self.h))
            out = max(out, eps)
        return out

    def curve(self, parts_by_direction) -> PrivacyCurve:
        """The upper curve of each direction's product (the larger of the directions), with the batch
        engine's allowances for the transforms' round-off (:mod:`gce.accounting.batch`, "Soundness")."""
        composed = []
        for parts in parts_by_direction:
            start, pmf, infinite, round_off = self._pmf(parts)
            positive = pmf > 0
            losses = (start + np.flatnonzero(positive)) * self.h
            with np.errstate(divide="ignore"):
                curve = DiscreteLossCurve(losses, np.log(pmf[positive]), infinite_mass=infinite)
            composed.append(batch._Composed(curve, 0.0, 0.0, pmf.size, round_off))
        # a LawCurve over these parts (its evaluation and allowances), built without composing laws again
        law_curve = batch.LawCurve.__new__(batch.LawCurve)
        law_curve.guarantees, law_curve.interval = (), self.h
        law_curve._lower_laws, law_curve._parts, law_curve._lower = (), tuple(composed), None
        law_curve._slack = max(p.tail_above + p.round_off for p in composed)
        law_curve._floor = max(p.curve.delta_floor for p in composed)
        law_curve.delta_floor = min(law_curve._safe(np.array([law_curve._floor]))[0], 1.0)
        return _SlotCurve(law_curve)


#: Most distinct bundles compared pairwise for dominance (:func:`_undominated`).
DOMINANCE_KINDS_MAX = 400


def _undominated(order: NDArray[np.intp], bundles, groups: "_Groups", lo: int, hi: int, h: float,
                 directions: int) -> NDArray[np.intp]:
    """``order`` without the databases that no worst set needs.

    Database B *dominates* A when B's profile lies above A's at every grid point in every direction
    (then B's law dominates A's: the profiles are exact for grid laws and linear in ``e^eps`` between
    points), or when both have the same bundle. Give every database the key (sum of its profile values,
    minus its index). If A has at least ``m`` dominators of larger key that may replace it (no exclusive
    group, or A's own group), every allowed set holding A misses one of them, and swapping it in gives an
    allowed set whose composition is at least as large, with a larger sum of keys. Repeating ends at a set
    without such an A and a composition at least as large: the search may leave them out."""
    kinds: dict[int, tuple] = {}
    for i in order:
        kinds.setdefault(id(bundles[i]), bundles[i])
    if len(kinds) > DOMINANCE_KINDS_MAX:
        return order
    keys = list(kinds)
    values = np.stack([np.concatenate([profile(kinds[k][min(d, len(kinds[k]) - 1)], lo, hi, h)
                                       for d in range(directions)]) for k in keys])
    count = len(keys)
    sample = np.linspace(0, values.shape[1] - 1, min(64, values.shape[1])).astype(np.intp)
    above = np.zeros((count, count), dtype=bool)  # above[b, a]: kind b dominates kind a
    for a in range(count):
        # (within 1e-12 of it: the profiles' own round-off, far inside the compositions' allowance ROUND_OFF)
        floor = values[a] * (1.0 - 1e-12)
        maybe = np.flatnonzero((values[:, sample] >= floor[sample]).all(axis=1))
        maybe = maybe[maybe != a]
        if maybe.size:
            above[maybe[(values[maybe] >= floor).all(axis=1)], a] = True
    kind_of = {k: t for t, k in enumerate(keys)}
    kind = np.array([kind_of[id(bundles[i])] for i in order])
    total = values.sum(axis=1)[kind]
    label = groups.group[order]
    alone = np.bincount(groups.group, minlength=groups.group.size)[label] == 1
    keep = np.ones(order.size, dtype=bool)
    for pos in range(order.size):
        a = kind[pos]
        dominating = above[kind, a] | (kind == a)
        larger = (total > total[pos]) | ((total == total[pos]) & (order < order[pos]))
        may_replace = alone | (label == label[pos])
        mask = dominating & larger & may_replace
        mask[pos] = False
        if int(mask.sum()) >= groups.m:
            keep[pos] = False
    return order[keep]


class _Pinned(PrivacyCurve):
    """A valid curve and one certified point of the same pair: delta(eps) <= delta_t for eps >= eps_t
    (the curve is non-increasing), the curve elsewhere."""

    def __init__(self, curve: PrivacyCurve, upper: float, delta: float | None, epsilon: float | None):
        self._curve = curve
        self._eps, self._d = (upper, delta) if epsilon is None else (epsilon, upper)
        self.delta_floor = curve.delta_floor

    def _delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        base = np.atleast_1d(self._curve.delta(eps))
        return np.where(np.asarray(eps) >= self._eps, np.minimum(base, self._d), base)

    def _epsilon(self, d: NDArray[np.float64]) -> NDArray[np.float64]:
        base = np.atleast_1d(self._curve.epsilon(d))
        return np.where(np.asarray(d) >= self._d, np.minimum(base, self._eps), base)


@dataclass(frozen=True)
class SlotSearch:
    """:func:`slot_search`'s answer: the worst set found (an allowed unbounded pair ``(empty, set)``), a
    certified upper bound at the target and the curve of the nodes left (each a bound on its pairs)."""

    members: frozenset[int]
    lower: float
    upper: float
    curve: PrivacyCurve
    nodes: int
    complete: bool
    stopped: bool


def _prepared(bundles: Sequence[tuple[Bundle, ...]], scores: NDArray[np.float64], constraints: ConstraintSet,
              h: float) -> tuple["_Groups", NDArray[np.intp], int, int, int] | None:
    """(groups, order, directions, lo, hi) of a search: the databases with invocations by score (highest
    first; :func:`_undominated`), the number of directions and the grid range of their bundles. None when
    the constraints are of another kind, nothing can differ, or the range is beyond
    :data:`ENVELOPE_POINTS_MAX`."""
    if not _Groups.accepts(constraints, "unbounded"):
        return None
    groups = _Groups(constraints)
    active = np.array([i for i in range(len(bundles)) if bundles[i]], dtype=np.intp)
    if not active.size or groups.m == 0:
        return None
    order = active[np.lexsort((active, -scores[active]))]
    directions = max(len(bundles[i]) for i in order)
    lo = min(b.lo for i in order for b in bundles[i])
    hi = max(b.hi for i in order for b in bundles[i])
    if hi - lo + 1 > ENVELOPE_POINTS_MAX:
        return None
    return groups, _undominated(order, bundles, groups, lo, hi, h, directions), directions, lo, hi


#: Most nodes of :func:`slot_search` (each one composition).
SLOT_NODES_MAX = 400
#: Most leading positions whose suffix envelopes are kept (more are built on demand).
KEPT_POSITIONS = 96


def slot_search(bundles: Sequence[tuple[Bundle, ...]], scores: NDArray[np.float64], constraints: ConstraintSet,
                h: float, delta: float | None, epsilon: float | None, tolerance: float = DEFAULT_RTOL,
                deadline: Deadline | None = None, nodes_max: int = SLOT_NODES_MAX) -> SlotSearch | None:
    """Best-first branch and bound over "database ``order[k]`` is in the set", deciding the databases in the
    order of ``scores`` (highest first), for unbounded pairs under ``at_most`` and ``exclusive`` constraints
    (:class:`_Groups`). A node decides the first ``k`` databases (members ``I``); its bound composes ``I``'s
    bundles with one envelope per slot left (module doc: the suffix from ``k``, whose envelope dominates
    every database an allowed completion may add, and ``min(m - |I|, groups)`` slots at the positions where
    the candidates' groups first appear). Every allowed set containing ``I`` and avoiding the databases
    decided out is below it. A node's greedy completion (the next allowed databases in order) is a witness.
    Stops when the largest open bound is within ``tolerance`` of the best witness (relative), after
    ``nodes_max`` nodes (:data:`SLOT_NODES_MAX` by default), or when the cap stops it (recorded). The value is epsilon at ``delta``, or delta
    at ``epsilon``. None when the constraints are of another kind."""
    value_of = lambda members, positions: spectra.value(parts(members, positions), delta, epsilon)
    deadline = current() if deadline is None else deadline
    prepared = _prepared(bundles, scores, constraints, h)
    if prepared is None:
        return None
    groups, order, directions, lo, hi = prepared
    spectra = _Spectra(lo, hi, groups.m, h)
    own = {}  # database -> spectra per direction

    def own_spectra(i: int):
        if i not in own:
            b = bundles[i]
            own[i] = [spectra.of(b[min(d, len(b) - 1)]) for d in range(directions)]
        return own[i]

    kept: dict[int, list] = {}  # position k -> envelope spectra per direction of order[k:]

    def build(positions: set[int]) -> None:
        need = sorted(p for p in positions if p not in kept)
        if not need:
            return
        first = need[0]
        target = sorted(set(need) | {p for p in range(first, min(first + KEPT_POSITIONS, order.size))})
        for d in range(directions):
            running = np.zeros(hi - lo + 1)
            pending = sorted(target, reverse=True)
            for rank in range(order.size - 1, first - 1, -1):
                b = bundles[order[rank]]
                np.maximum(running, profile(b[min(d, len(b) - 1)], lo, hi, h), out=running)
                while pending and pending[0] == rank:
                    kept.setdefault(rank, [None] * directions)[d] = spectra.of(envelope_law(running.copy(), lo, h))
                    pending.pop(0)

    # Databases with the same invocations (one bundle object) and no exclusive group are interchangeable: a
    # set holding a later one but not an earlier one has the multiset of the set with the two swapped. So
    # once one is decided out, the later ones of its kind are out too (no multiset is lost).
    label_counts = np.bincount(groups.group, minlength=constraints.n)
    kind = np.array([id(bundles[i]) if label_counts[groups.group[i]] == 1 else -1 - i for i in order], dtype=np.int64)

    def slots(k: int, members: frozenset[int], banned: frozenset = frozenset()) -> list[int]:
        """Positions (ranks in the order) of the slots left after deciding order[:k] with ``members``."""
        left = groups.m - len(members)
        taken = {int(groups.group[i]) for i in members}
        out = []
        for rank in range(k, order.size):
            if len(out) >= left:
                break
            g = int(groups.group[order[rank]])
            if g in taken or int(kind[rank]) in banned:
                continue
            taken.add(g)
            out.append(rank)
        return out

    def parts(members: frozenset[int], positions: list[int]):
        build(set(positions))
        return [[own_spectra(i)[d] for i in sorted(members)] + [kept[p][d] for p in positions]
                for d in range(directions)]

    def completion(k: int, members: frozenset[int], banned: frozenset = frozenset()) -> frozenset[int]:
        return members | {int(order[p]) for p in slots(k, members, banned)}

    best = [frozenset(), -1.0]
    witnessed: set[frozenset[int]] = set()

    def witness(members: frozenset[int]) -> None:
        if members in witnessed or not members:
            return
        witnessed.add(members)
        v = value_of(members, [])
        if v > best[1]:
            best[:] = [members, v]

    def node(k: int, members: frozenset[int], banned: frozenset):
        positions = slots(k, members, banned)
        if not positions:  # a leaf: nothing more can join
            return (value_of(members, []) if members else 0.0, k, members, True, banned)
        # the next database to decide: the first slot's (those before it cannot join)
        return (value_of(members, positions), positions[0], members, False, banned)

    frontier: list = []  # nodes closed or left: (bound, k, members, leaf, banned)
    open_nodes = [node(0, frozenset(), frozenset())]
    witness(completion(0, frozenset()))
    evaluated, stopped = 1, False

    def closed(bound: float) -> bool:
        return bound <= best[1] or (math.isfinite(bound) and bound <= best[1] * (1.0 + tolerance))

    while open_nodes:
        open_nodes.sort(key=lambda x: x[0])
        if closed(open_nodes[-1][0]) or evaluated >= nodes_max:
            break
        if deadline.expired():
            deadline.stop(f"the per-slot branch and bound after {evaluated} nodes")
            stopped = True
            break
        bound, k, members, leaf, banned = top = open_nodes.pop()
        if leaf:
            frontier.append(top)
            continue
        d = int(order[k])  # free to join (the node's first slot)
        inside = members | {d}
        out = banned | {int(kind[k])} if kind[k] >= 0 else banned
        children = [node(k + 1, inside, banned), node(k + 1, members, out)]
        witness(completion(k + 1, inside, banned))
        witness(completion(k + 1, members, out))
        evaluated += len(children)
        for child in children:
            (frontier if child[3] or closed(child[0]) else open_nodes).append(child)
    left = open_nodes + frontier
    upper = max([x[0] for x in left] + [best[1]])
    # The root's composition bounds every pair at every epsilon; at the target the search's bound holds.
    curve = _Pinned(spectra.curve(parts(frozenset(), slots(0, frozenset()))), upper, delta, epsilon)
    complete = not open_nodes or all(closed(x[0]) for x in open_nodes)
    return SlotSearch(best[0], best[1], upper, curve, evaluated, complete, stopped)


#: Classes of :func:`class_search`.
CLASSES = 3
#: Most floats of profiles :func:`class_search` keeps (one per distinct bundle and direction): 64 MB.
PROFILES_KEPT = 2**23
#: Databases (the first in the order) whose profiles place the classes (:func:`_classes`).
CLASS_SAMPLE = 256


def _features(order: NDArray[np.intp], bundles, lo: int, hi: int, h: float, directions: int,
              reference: float) -> NDArray[np.float64]:
    """Each database's (in ``order``) logarithms of its profiles at ``reference`` times 0.25 to 6 (floored at
    1e-14), both directions: what :func:`_classes` clusters."""
    points = np.unique(np.clip(np.round(reference * np.linspace(0.25, 6.0, 24) / h).astype(np.intp) - lo,
                               0, hi - lo))
    memo: dict[int, NDArray[np.float64]] = {}

    def feature(i: int) -> NDArray[np.float64]:
        key = id(bundles[i])
        if key not in memo:
            b = bundles[i]
            memo[key] = np.concatenate([np.log(np.maximum(profile(b[min(d, len(b) - 1)], lo, hi, h)[points], 1e-14))
                                        for d in range(directions)])
        return memo[key]

    return np.stack([feature(int(i)) for i in order])


def _classes(features: NDArray[np.float64], count: int) -> NDArray[np.intp]:
    """A class for every row of ``features``: k-means (a fixed seed: the same classes on every machine) over
    the first :data:`CLASS_SAMPLE` rows, the others joining the nearest centre. Any classes are sound
    (:func:`class_search`); these put databases whose curves nearly form a chain together."""
    from scipy.cluster.vq import kmeans2
    sample = features[:CLASS_SAMPLE]
    distinct = np.unique(sample, axis=0)
    if distinct.shape[0] <= count:
        centres = distinct
    else:
        centres, _ = kmeans2(sample, count, minit="++", seed=np.random.default_rng(0))
    return np.argmin(((features[:, None, :] - centres[None]) ** 2).sum(axis=2), axis=1)


def _grouped(label: NDArray[np.intp], group: NDArray[np.intp]) -> NDArray[np.intp]:
    """``label`` with every exclusive group in the class of its first member (``group``: each row's group, rows
    in order): classes that are unions of groups, so that the counts per class respect the groups."""
    _, first = np.unique(group, return_index=True)
    leader = dict(zip(group[first].tolist(), label[first].tolist()))
    return np.array([leader[g] for g in group.tolist()], dtype=label.dtype)


def class_search(bundles: Sequence[tuple[Bundle, ...]], scores: NDArray[np.float64], constraints: ConstraintSet,
                 h: float, delta: float | None, epsilon: float | None, reference: float,
                 tolerance: float = DEFAULT_RTOL, deadline: Deadline | None = None, nodes_max: int = SLOT_NODES_MAX,
                 classes: int = CLASSES, known: float = -1.0) -> SlotSearch | None:
    """A branch and bound over how many databases of each *class* an allowed set holds (the same constraints
    as :func:`slot_search`, the same answer).

    The databases are split into classes whose curves nearly form chains (:func:`_classes`; any split is
    sound). Within class ``c`` (in the order of ``scores``), an allowed set's ``i``-th member lies at or
    after the slot position ``p_i`` of the class alone (module doc, "Slots"), so an allowed set with ``n_c``
    members in each class is dominated by the composition over classes of the class's first ``n_c`` suffix
    envelopes; the sets whose counts of the first classes are fixed are dominated by those classes' envelopes
    composed with the slots of the union of the other classes (the module doc's bound on that union, with
    the slots left). Every exclusive group lies in one class (:func:`_grouped`; a class's slots count its
    groups), so the counts respect the groups. So the maximum
    over count vectors, found by a best-first search over the classes in turn, bounds every allowed pair:
    within one class the envelopes are close to the members, where one envelope per slot of all databases
    mixes curves that cross (a pure guarantee's large delta at small epsilon, a subsampled one's tail). A
    leaf's witness takes its count from each class in order (a group once), then completes the set; ``known``
    is a value some allowed pair reaches (the search stops within ``tolerance`` of the larger). The value is
    epsilon at ``delta``, or delta at ``epsilon``; ``reference`` the epsilon of one database's share (the
    classes' scale). None when the constraints are of another kind or the databases form one class."""
    deadline = current() if deadline is None else deadline
    prepared = _prepared(bundles, scores, constraints, h) if classes >= 2 else None
    if prepared is None:
        return None
    groups, order, directions, lo, hi = prepared
    features = _features(order, bundles, lo, hi, h, directions, reference)
    label = _grouped(_classes(features, classes), groups.group[order])
    present = [c for c in range(int(label.max()) + 1) if (label == c).any()]
    if len(present) < 2:
        return None
    # the class holding the first database first: its counts are decided at the root
    present.sort(key=lambda c: int(np.flatnonzero(label == c)[0]))
    members = [order[label == c] for c in present]
    spectra = _Spectra(lo, hi, groups.m, h)

    def slot_positions(databases: NDArray[np.intp]) -> list[int]:
        """The slots' positions in ``databases`` (in order): where each next group first appears (module doc)."""
        positions, taken = [], set()
        for rank, i in enumerate(databases):
            g = int(groups.group[i])
            if g not in taken:
                taken.add(g)
                positions.append(rank)
                if len(positions) == groups.m:
                    break
        return positions

    def envelopes(databases: NDArray[np.intp], need: int | None = None, start: int = 0) -> list[list]:
        """Slot envelopes ``start`` to ``need`` (all when None) of ``databases`` (in order), each per
        direction (module doc, "Slots")."""
        positions = slot_positions(databases)[:need]
        out = [[None] * directions for _ in positions[start:]]
        for d in range(directions):
            running = np.zeros(hi - lo + 1)
            pending = len(positions) - 1
            for rank in range(databases.size - 1, -1, -1):
                if pending < start:
                    break
                np.maximum(running, profiles(int(databases[rank]), d), out=running)
                while pending >= start and positions[pending] == rank:
                    out[pending - start][d] = spectra.of(envelope_law(running.copy(), lo, h))
                    pending -= 1
        return out

    # Profiles and transforms per distinct bundle, kept while they take at most PROFILES_KEPT floats
    kept_profiles: dict[tuple[int, int], NDArray[np.float64]] = {}
    keep = len({id(bundles[i]) for i in order}) * directions * (hi - lo + 1) <= PROFILES_KEPT

    def profiles(i: int, d: int) -> NDArray[np.float64]:
        b = bundles[i]
        key = (id(b), d)
        found = kept_profiles.get(key)
        if found is None:
            found = profile(b[min(d, len(b) - 1)], lo, hi, h)
            if keep:
                kept_profiles[key] = found
        return found

    transforms: dict[int, list] = {}

    def own_transforms(i: int) -> list:
        key = id(bundles[i])
        if key not in transforms:
            transforms[key] = _own(bundles[i], spectra, directions)
        return transforms[key]

    position = np.empty(len(bundles), dtype=np.intp)
    position[order] = np.arange(order.size)
    member_of = {(c,): members[c] for c in range(len(present))}  # a class's key -> its databases, in order
    envelopes_of: dict[tuple, list] = {}

    slots_of: dict[tuple, int] = {}

    def cap(key: tuple) -> int:
        """How many databases of class ``key`` an allowed pair can hold (its slots)."""
        if key not in slots_of:
            slots_of[key] = len(slot_positions(member_of[key]))
        return slots_of[key]

    def own(key: tuple, need: int) -> list:
        """The class's first ``need`` slot envelopes (built when first needed; more rebuild them)."""
        found = envelopes_of.setdefault(key, [])
        if len(found) < min(need, cap(key)):  # the next ones (at least twice as many: few passes)
            found += envelopes(member_of[key], max(need, 2 * len(found)), len(found))
        return found

    rest = [envelopes(order[np.isin(label, present[c:])]) for c in range(len(present))]
    evaluated = [0]

    def value(parts: list[list]) -> float:
        evaluated[0] += 1
        return spectra.value([[p[d] for p in parts] for d in range(directions)], delta, epsilon) if parts else 0.0

    def bound(counts: tuple[int, ...]) -> float:
        """Sets with ``counts`` of the first classes (the union of the others on the slots left)."""
        parts = [e for c, n in enumerate(counts) for e in own((c,), groups.m)[:n]]
        left = groups.m - sum(counts)
        if len(counts) < len(present) and left > 0:
            parts += rest[len(counts)][:left]
        return value(parts)

    def witness(spec: tuple) -> frozenset[int]:
        chosen, taken = [], set()
        for key, n in sorted(spec, key=lambda kn: position[member_of[kn[0]][0]]):
            got = 0
            for i in member_of[key]:
                if got == n:
                    break
                g = int(groups.group[i])
                if g not in taken:
                    taken.add(g)
                    chosen.append(int(i))
                    got += 1
        for i in order:  # complete: a larger allowed set only raises the composition
            if len(chosen) >= groups.m:
                break
            g = int(groups.group[i])
            if g not in taken:
                taken.add(g)
                chosen.append(int(i))
        return frozenset(chosen)

    def split(key: tuple) -> tuple[tuple, tuple] | None:
        """The class ``key`` in two (:func:`_classes` on its members, groups whole: by their first members
        when k-means keeps them together; a single group's members apart, the leaf's count of at most one
        being what the group allows), None when it does not split."""
        if key + (0,) in member_of:
            return key + (0,), key + (1,)
        databases = member_of[key]
        if databases.size < 2:
            return None
        plain = _classes(features[position[databases]], 2)
        group = groups.group[databases]
        halves = _grouped(plain, group)
        if not halves.any() or halves.all():
            leaders, first = np.unique(group, return_index=True)
            if leaders.size > 1:  # the groups' first members split in two, each group whole with its own
                by_leader = dict(zip(leaders.tolist(), _classes(features[position[databases[first]]], 2).tolist()))
                halves = np.array([by_leader[g] for g in group.tolist()], dtype=plain.dtype)
            else:  # one group: its halves (the leaf's count, at most 1, is what the group allows)
                halves = plain
        if not halves.any() or halves.all():
            return None
        member_of[key + (0,)], member_of[key + (1,)] = databases[halves == 0], databases[halves == 1]
        return key + (0,), key + (1,)

    def prefixes(key: tuple, n: int, d: int) -> list:
        """The merged parts of the first 0..n envelopes of class ``key`` in direction ``d`` (None for none)."""
        out, envelopes_ = [None], own(key, n)
        for j in range(n):
            part = envelopes_[j][d]
            out.append(part if out[-1] is None else spectra.merged([out[-1], part]))
        return out

    def refined(spec: tuple) -> list | None:
        """A leaf's sets by how its largest splittable class's count divides between the class's halves:
        each half's envelopes lie below the class's at the same rank (fewer databases in each suffix).
        The other classes' product is formed once, each half's by prefixes."""
        for key, n in sorted(spec, key=lambda kn: -kn[1]):
            halves = split(key) if n > 0 else None
            if halves is None:
                continue
            first, second = halves
            others = tuple(kn for kn in spec if kn[0] != key)
            cap_first, cap_second = cap(first), cap(second)
            ks = range(max(0, n - cap_second), min(n, cap_first) + 1)
            base, ones, twos = [], [], []
            for d in range(directions):
                parts = [e[d] for k_, m_ in others for e in own(k_, m_)[:m_]]
                base.append(spectra.merged(parts) if parts else None)
                ones.append(prefixes(first, max(ks), d))
                twos.append(prefixes(second, n - min(ks), d))
            out = []
            for k in ks:
                child = others + ((first, k), (second, n - k))
                by_direction = [[p for p in (base[d], ones[d][k], twos[d][n - k]) if p is not None]
                                for d in range(directions)]
                evaluated[0] += 1
                out.append((spectra.value(by_direction, delta, epsilon) if by_direction[0] else 0.0, child, True))
            return out
        return None

    best: list = [frozenset(), known]
    seen: set[frozenset[int]] = set()

    def closed(b: float) -> bool:
        return b <= best[1] or (math.isfinite(b) and b <= best[1] * (1.0 + tolerance))

    def children(counts: tuple[int, ...]) -> list:
        c = len(counts)
        left = groups.m - sum(counts)
        if c == len(present) - 1:  # the last class takes what is left (more only raises the composition)
            leaf = counts + (min(left, cap((c,))),)
            return [(bound(leaf), tuple(((k,), n) for k, n in enumerate(leaf)), True)]
        return [(bound(counts + (n,)), counts + (n,), False) for n in range(min(left, cap((c,))) + 1)]

    root = ()
    open_nodes = [(bound(root), root, False)]
    frontier, stopped = [], False
    while open_nodes:
        open_nodes.sort(key=lambda x: x[0])
        if closed(open_nodes[-1][0]) or evaluated[0] >= nodes_max:
            break
        if deadline.expired():
            deadline.stop(f"the branch and bound over classes after {evaluated[0]} compositions")
            stopped = True
            break
        top = open_nodes.pop()
        if top[2]:  # a leaf: its witness, then its classes split
            s = witness(top[1])
            if s not in seen:
                seen.add(s)
                v = value([own_transforms(i) for i in sorted(s)])
                if v > best[1]:
                    best[:] = [s, v]
            if closed(top[0]):
                frontier.append(top)
                continue
            finer = refined(top[1])
            if finer is None:  # no class splits: the largest bound left is final
                frontier.append(top)
                break
            for child in finer:
                (frontier if closed(child[0]) else open_nodes).append(child)
            continue
        for child in children(top[1]):
            (frontier if closed(child[0]) else open_nodes).append(child)
    left = open_nodes + frontier
    if not left:
        return None
    upper = max([x[0] for x in left] + [best[1]])
    complete = all(closed(x[0]) for x in left)
    # The root's one envelope per slot bounds every pair at every epsilon; at the target the search's bound.
    curve = _Pinned(spectra.curve([[e[d] for e in rest[0]] for d in range(directions)]), upper, delta, epsilon)
    return SlotSearch(best[0], best[1], upper, curve, evaluated[0], complete, stopped)


def combined(search: SlotSearch, counted: SlotSearch | None, delta: float | None, epsilon: float | None) -> SlotSearch:
    """Two searches' answers (:func:`slot_search`, :func:`class_search`) as one: both bounds hold, so the
    lesser; the better witness; the first one's root curve pinned at the lesser bound."""
    if counted is None:
        return search
    members, lower = (counted.members, counted.lower) if counted.members and counted.lower > search.lower \
        else (search.members, search.lower)
    nodes, stopped = search.nodes + counted.nodes, search.stopped or counted.stopped
    if counted.upper >= search.upper:
        return replace(search, members=members, lower=lower, nodes=nodes, stopped=stopped)
    curve = search.curve._curve if isinstance(search.curve, _Pinned) else search.curve
    return SlotSearch(members, lower, counted.upper, _Pinned(curve, counted.upper, delta, epsilon), nodes,
                      counted.complete, stopped)


def _own(bundle: tuple[Bundle, ...], spectra: "_Spectra", directions: int) -> list:
    """A database's own transforms per direction."""
    return [spectra.of(bundle[min(d, len(bundle) - 1)]) for d in range(directions)]


# ---------------------------------------------------------------------------
# What a solve needs: the databases' bundles, their scores, the cost of a search


def accepts(constraints: ConstraintSet) -> bool:
    """Whether :func:`slot_search` takes these constraints (``at_most`` over all databases and disjoint
    ``exclusive`` groups, nothing else; unbounded pairs)."""
    return _Groups.accepts(constraints, "unbounded")


def slot_count(constraints: ConstraintSet) -> int:
    """The most databases an allowed set of :func:`slot_search`'s constraints holds (``m``, or n)."""
    return _Groups(constraints).m if accepts(constraints) else constraints.n


def database_bundles(table, n: int, h: float, cut: float) -> list[tuple[Bundle, ...]]:
    """Every database's composed upper law per direction (:func:`bundle_laws`, :func:`trimmed` by
    ``cut``), databases with the same invocations sharing one; () for a database without invocations.
    ``table``: the scenario's :class:`~gce.model.Invocations`."""
    cache: dict[tuple, tuple[Bundle, ...]] = {}
    out = []
    for i in range(n):
        ms = tuple(table.multiset_on(frozenset((i,))))
        if ms not in cache:
            cache[ms] = bundle_laws(ms, h, cut) if ms else ()
        out.append(cache[ms])
    return out


def scores(bundles: Sequence[tuple[Bundle, ...]], reference: float, h: float) -> NDArray[np.float64]:
    """Each database's delta at epsilon ``reference`` (the larger direction; -1 without invocations): the
    order of :func:`slot_search` (any order is sound; this one puts the likeliest worst first)."""
    j = int(round(reference / h))
    out = np.full(len(bundles), -1.0)
    memo: dict[int, float] = {}
    for i, own in enumerate(bundles):
        if not own:
            continue
        key = id(own)
        if key not in memo:
            memo[key] = max(float(profile(b, min(b.lo, j), max(b.hi, j), h)[j - min(b.lo, j)]) for b in own)
        out[i] = memo[key]
    return out


#: Nodes a search is expected to take, for its estimate (:func:`search_seconds`).
EXPECTED_NODES = 100


def bundles_seconds(n: int, kinds: int, h: float) -> float:
    """An estimate of the seconds :func:`database_bundles` takes: a fraction of a millisecond per database
    and, per distinct guarantee, its laws on the grid (a few milliseconds; more on fine grids)."""
    return 2e-4 * n + kinds * (5e-3 + 1e-6 / h)


def _extent(bundles: Sequence[tuple[Bundle, ...]]) -> tuple[int, int, int]:
    """(databases with invocations, directions, grid points of the bundles' common range)."""
    present = [own for own in bundles if own]
    if not present:
        return 0, 0, 0
    points = max(b.hi for own in present for b in own) - min(b.lo for own in present for b in own) + 1
    return len(present), max(len(own) for own in present), points


def window_points(bundles: Sequence[tuple[Bundle, ...]], slots: int, h: float) -> int:
    """An estimate of the transforms' size of a search (:class:`_Spectra`): Chernoff's window of the sum, at
    every tilt, of the ``slots`` largest log-MGFs among the databases (each its larger direction),
    :data:`WINDOW_MARGIN` times, at most ``slots`` times the bundles' range."""
    from scipy import fft
    present, directions, points = _extent(bundles)
    if not present:
        return 0
    distinct = {id(own): np.max([_log_mgf(b, h) for b in own], axis=0) for own in bundles if own}
    each = np.array([distinct[id(own)] for own in bundles if own])
    tail = math.log(WINDOW_TAIL)
    up, down = TILTS > 0, TILTS < 0
    total = np.sort(each, axis=0)[-slots:].sum(axis=0)
    width = (np.min((total[up] - tail) / TILTS[up]) - np.max((tail - total[down]) / -TILTS[down])) / h
    whole = slots * points
    if not math.isfinite(width):
        return whole
    return min(whole, fft.next_fast_len(int(WINDOW_MARGIN * max(width, 1.0)) + 1, real=True))


def node_seconds(bundles: Sequence[tuple[Bundle, ...]], slots: int, size: int | None = None) -> float:
    """An estimate of the seconds of one node of :func:`slot_search` (:func:`search_seconds`): ``slots``
    transforms multiplied and one inverted on the transforms' ``size`` (:func:`window_points`; by default
    ``slots`` times the bundles' range)."""
    _, directions, points = _extent(bundles)
    size = slots * points if size is None else size
    return directions * (slots * size * 2e-9 + size * 4e-8)


def class_seconds(bundles: Sequence[tuple[Bundle, ...]], slots: int, nodes: int, classes: int = CLASSES,
                  size: int | None = None) -> float:
    """An estimate of the seconds of one :func:`class_search` of at most ``nodes`` compositions: those, and
    the envelopes of every class and of the unions of the classes after it (``2 classes`` passes over the
    databases, like :func:`search_seconds`'s)."""
    present, directions, points = _extent(bundles)
    return nodes * node_seconds(bundles, slots, size) + 2 * classes * directions * (present + slots) * points * 2e-8


def search_seconds(bundles: Sequence[tuple[Bundle, ...]], slots: int, size: int | None = None) -> float:
    """An estimate of the seconds of one :func:`slot_search` on these bundles: :data:`EXPECTED_NODES`
    compositions of ``slots`` transforms in each direction on ``slots`` times the bundles' range (measured on
    2 shared cores, doubled: 2e-9 s per point and transform multiplied, 4e-8 s per point of the inverse
    transform and the profile), and the envelopes (a profile per database and kept position)."""
    present, directions, points = _extent(bundles)
    return EXPECTED_NODES * node_seconds(bundles, slots, size) + directions * (present + KEPT_POSITIONS) * points * 2e-8

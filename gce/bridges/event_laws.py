"""Events no guarantee record holds: their privacy-loss laws on the batch engine's grid (docs/design.md,
"From dp-accounting").

:func:`gce.bridges.dp_events.from_dp_event` reads most dp-accounting events as guarantee records. Three
have a pair that no record describes; :class:`~gce.bridges.accountant.GceAccountant` reads them as the
records below and composes them with everything else (:func:`law_bracket`):

* :class:`DiscreteLaplaceLoss`: ``DiscreteLaplaceDpEvent(noise_parameter a, sensitivity s)`` for s >= 2
  (s = 1 is ``PureDP(a)`` exactly, below).
* :class:`ReplaceOneSampledGaussian`: ``SampledWithoutReplacementDpEvent`` of Gaussian mechanisms under
  ``NeighboringRelation.REPLACE_ONE``.
* :class:`RandomAllocation`: ``RandomAllocationDpEvent`` of Gaussian mechanisms, whose curve is
  :func:`gce.priors.allocation.allocation_curve`'s (composed in ``GceAccountant``, not here).

Discrete Laplace
----------------
The output is ``f(x) + Z``, ``P(Z = z) = tanh(a / 2) e^{-a |z|}`` on the integers. For neighbours with
``f(x') = f(x) + s`` (the worst case; the pair is the same in both directions, ``z -> s - z``) the loss at
``Z = z`` is ``a (|z - s| - |z|)``: ``a s`` for ``z <= 0`` (mass ``1 / (1 + e^-a)``), ``-a s`` for ``z >= s``
(mass ``e^{-a s} / (1 + e^-a)``) and ``a (s - 2 z)`` with mass ``tanh(a / 2) e^{-a z}`` for ``0 < z < s``: the
law of dp-accounting's ``DiscreteLaplacePrivacyLoss``, exactly. For s = 1 only the two outer atoms remain,
``+-a`` with masses ``e^a / (1 + e^a)`` and ``1 / (1 + e^a)``: the canonical pair of (a, 0) (002 Thm. II.5,
eqs. 9-10), so ``PureDP(a)`` is the event itself and gce's exact compositions of canonical pairs apply.
For s >= 2 the law is a mixture of canonical pairs of ``a (s - 2 z)`` (the atoms at ``+-a (s - 2 z)`` have
the ratio ``e^{a (s - 2 z)}``), looser as ``PureDP(a s)``: it is kept as it is. Its atoms lie on the lattice
``a s - 2 a j``, so up to :data:`EXACT_SUPPORT` lattice points' worth of copies are composed exactly (a
convolution power of positive masses, no cancellation) before the total meets the grid once, as the batch
engine composes copies of one canonical pair (:func:`gce.accounting.batch.loss_law`: split above, rounded
down below).

Sampling without replacement, replace-one
-----------------------------------------
dp-accounting's ``SampledWithoutReplacementDpEvent(n, m, event)`` runs ``event`` on ``m`` of ``n`` records
drawn without replacement, for neighbours that *replace* one record (n is public), the relation its RDP
accountant reads it under (Wang, Balle, Kasiviswanathan 2019, Thm. 27). With ``gamma = m / n`` and the
inner Gaussian of ``mu = 1 / noise_multiplier`` (several Gaussians on one sample: ``sqrt(sum mu_i^2)``,
DRS22 Cor. 3.3), let ``P = N(mu, 1)``, ``Q = N(0, 1)``, ``R = (1 - gamma) Q + gamma P`` and
``H_alpha(A || B) = sup_E A(E) - alpha B(E)``.

*Every step is dominated by the symmetrisation of (R, Q).* Couple the samples of neighbours ``D, D'``
(record ``i`` replaced) through the same indices: when ``i`` is not drawn the outputs agree; a sample
without ``i``, ``J + j``, is paired with ``J + i``, so the outputs are ``M0 = M(J + j)``, ``M1 = M(J + i)``,
``M1' = M(J + i')``, pairwise replace-neighbours, mixed as ``(1 - gamma) M0 + gamma M1`` against
``(1 - gamma) M0 + gamma M1'`` and averaged over ``(J, j)`` (joint convexity of ``H_alpha``). Advanced joint
convexity (Balle, Barthe, Gaboardi 2018, Thm. 2) gives, for ``alpha' = 1 + gamma (alpha - 1) >= 1`` and
``beta = alpha' / alpha``, ``H_alpha'(mixture || mixture') = gamma H_alpha(M1 || (1 - beta) M0 + beta M1') <=
gamma H_alpha(P || Q) = H_alpha'(R || Q)`` (the last by the same identity for ``R`` and ``Q``): for every
ordered pair, at every ``alpha' >= 1``, the step is below ``(R, Q)`` (BBG18's theorem for sampling without
replacement under substitution, ``delta' = gamma delta`` at ``e^eps' = 1 + gamma (e^eps - 1)``, is this
bound read at one point). For ``alpha < 1``, ``H_alpha(A || B) = 1 - alpha + alpha H_{1/alpha}(B || A)`` and
the relation is symmetric, so the reversed pair's bound applies. A *symmetric* pair ``(P*, Q*)`` whose
``H_alpha`` equals ``H_alpha(R || Q)`` for ``alpha >= 1`` therefore dominates every step at every ``alpha >=
0``: a dominating pair, and dominating pairs compose (Zhu, Dong, Wang 2022, "Optimal accounting of
differential privacy via characteristic function", the composition of dominating pairs). It is the
``C_gamma`` of Dong, Roth, Su (DRS22, Sec. 4, the subsampling theorem: ``min{f_p, f_p^-1}**``), whose loss
law under ``P*`` is that of ``(R, Q)`` on positive losses, each atom at ``l > 0`` mirrored to ``-l`` with
mass ``e^-l`` times its own, and an atom at 0 of the rest, ``(1 - gamma) erf(mu / (2 sqrt 2))`` (>= 0). It is
tight for one step: the dataset whose other records all equal the replacing one runs ``(R, Q)`` itself, so
dp-accounting's Poisson PLD at rate ``gamma`` (both directions) is a lower bound on the event.

On the grid of width ``h`` the loss ``L(x) = log(1 - gamma + gamma e^{mu x - mu^2 / 2})`` is increasing; the
cell ``[i h, (i + 1) h]`` of positive loss is ``x`` in ``[x_i, x_i+1]``, whose R- and Q-masses ``p, q`` are
differences of normal distribution functions computed in log space. One atom at ``log(p / q)`` per cell,
*split* onto the cell's ends (both masses kept: the batch engine's split, which depends on ``p, q`` only, so
it is the split of the cell's continuum, a dominating pair of it) gives the upper law, rounded down the
lower one; R-mass beyond ``mu + 10.3`` standard deviations (below ``1e-24``) is charged at +inf above and
dropped below, and its mirror (Q-mass) is put at loss 0 above.

References
----------
002: Kairouz, Oh, Viswanath, "The Composition Theorem for Differential Privacy" (Thm. II.5, eqs. 9-10).
BBG18: Balle, Barthe, Gaboardi, "Privacy Amplification by Subsampling: Tight Analyses via Couplings and
Divergences" (Thm. 2, advanced joint convexity; sampling without replacement under substitution).
DRS22: Dong, Roth, Su, "Gaussian Differential Privacy" (Cor. 3.3; Sec. 4, subsampling).
ZDW22: Zhu, Dong, Wang, "Optimal Accounting of Differential Privacy via Characteristic Function" (dominating
pairs and their composition).
WBK19: Wang, Balle, Kasiviswanathan, "Subsampled Renyi Differential Privacy and Analytical Moments
Accountant" (Thm. 27: dp-accounting's RDP bound for the same event).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .. import effort
from ..accounting import kinds
from ..errors import InvalidParameterError, NumericalLimitError
from ..validation import shown

# scipy and the batch engine are imported where the laws are built: reading events (gce.model takes them)
# loads neither (tests/test_startup.py).

__all__ = ["DiscreteLaplaceLoss", "ReplaceOneSampledGaussian", "RandomAllocation", "RECORDS", "law_bracket",
           "discrete_laplace_laws", "sampled_gaussian_atoms", "gaussian_atoms", "EXACT_SUPPORT", "HALVINGS"]

#: Most lattice points of a discrete Laplace composition formed exactly before it meets the grid.
EXACT_SUPPORT = 4096
#: Standard deviations above ``mu`` beyond which a sampled Gaussian's R-mass (< 1e-24) is charged at +inf.
TAIL_SD = 10.3
#: Halvings of the grid tried while the bracket is wider than ``rtol`` (compositions of canonical pairs and
#: these laws only; with noise mechanisms the grid is dp-accounting's, as the batch engine's).
HALVINGS = 2
#: The finest grid the accuracy may ask for: below it a sampled Gaussian's law (and a long composition of it)
#: would not fit the batch engine's grid; a split moves a loss by O(h^2) on average, so the upper end stays
#: tight there, only the rounded-down lower end widens.
MIN_INTERVAL = 1e-5
#: Most cells of one sampled Gaussian's law (the batch engine's ``GRID_LIMIT``: a larger one would not fit its
#: grid either).
CELL_LIMIT = 2**22


@dataclass(frozen=True)
class DiscreteLaplaceLoss:
    """The discrete Laplace mechanism of ``parameter`` a on an integer query of ``sensitivity`` s >= 2
    (module doc, "Discrete Laplace"): exactly the pair of ``DiscreteLaplaceDpEvent(a, s)``."""

    parameter: float
    sensitivity: int

    def atoms(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(z, mass)``: the loss is ``a (s - 2 z)`` with that P-mass, z = 0..s."""
        a, s = self.parameter, self.sensitivity
        z = np.arange(s + 1, dtype=float)
        edge = 1.0 / (1.0 + math.exp(-a))
        mass = math.tanh(a / 2.0) * np.exp(-a * z)
        mass[0], mass[-1] = edge, edge * math.exp(-a * s)
        return z, mass

    def laws(self, count: int, h: float, upper: bool) -> list:
        return discrete_laplace_laws(self, count, h, upper)

    def copies_on_grid(self, count: int) -> int:
        """How many times ``count`` copies meet the grid (each split or rounding moves a loss by < h)."""
        per = max(1, EXACT_SUPPORT // self.sensitivity)
        return -(-count // per)


@dataclass(frozen=True)
class ReplaceOneSampledGaussian:
    """A Gaussian mechanism of ``mu`` (sensitivity over noise) on ``m`` of ``n`` records drawn without
    replacement, ``rate = m / n``, for replace-one neighbours (module doc): its dominating pair is the
    symmetrisation of ``((1 - rate) N(0, 1) + rate N(mu, 1), N(0, 1))``."""

    mu: float
    rate: float

    def laws(self, count: int, h: float, upper: bool) -> list:
        from ..accounting import batch

        loss, mass, infinite = sampled_gaussian_atoms(self.mu, self.rate, h, upper)
        return [batch.loss_law(loss, mass, count, h, upper=upper, infinite=infinite)]

    def copies_on_grid(self, count: int) -> int:
        return int(count)


@dataclass(frozen=True)
class RandomAllocation:
    """Each record in ``selected`` of ``steps`` Gaussian mechanisms of ``mu``, chosen uniformly
    (``RandomAllocationDpEvent``); its curve is :func:`gce.priors.allocation.allocation_curve`'s."""

    mu: float
    steps: int
    selected: int


#: The records of events with no guarantee record, and those of them composed here as laws.
RECORDS = (DiscreteLaplaceLoss, ReplaceOneSampledGaussian, RandomAllocation)
_LAWS = (DiscreteLaplaceLoss, ReplaceOneSampledGaussian)


def _power(mass: NDArray[np.float64], copies: int) -> NDArray[np.float64]:
    """The ``copies``-fold convolution of a pmf of positive masses, by squaring (direct convolutions of
    positive terms: relative round-off, nothing cancels)."""
    out = np.ones(1)
    base = mass
    while copies:
        if copies & 1:
            out = np.convolve(out, base)
        copies >>= 1
        if copies:
            base = np.convolve(base, base)
    return out


def discrete_laplace_laws(record: DiscreteLaplaceLoss, count: int, h: float, upper: bool) -> list:
    """``count`` copies of the discrete Laplace pair on the grid of width ``h``: blocks of copies composed
    exactly (at most :data:`EXACT_SUPPORT` lattice points each), then split (upper) or rounded down (lower)
    once per block (module doc)."""
    from ..accounting import batch

    a, s = record.parameter, record.sensitivity
    z, mass = record.atoms()
    per = max(1, min(count, EXACT_SUPPORT // s))
    blocks, rest = divmod(count, per)

    def block(copies: int):
        total = _power(mass, copies)
        loss = a * (s * copies - 2.0 * np.arange(total.size))
        return loss, total

    laws = []
    for copies, times in ((per, blocks), (rest, 1)):
        if copies and times:
            loss, total = block(copies)
            laws.append(batch.loss_law(loss, total, times, h, upper=upper))
    return laws


def _mass_between(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
    """``Phi(b) - Phi(a)`` for ``a <= b``, in log space on either side of 0 (no cancellation in the tails)."""
    from scipy import special

    out = np.empty(np.broadcast(a, b).shape)
    right = a >= 0.0
    left = b <= 0.0
    middle = ~(right | left)
    with np.errstate(divide="ignore", invalid="ignore"):
        la, lb = special.log_ndtr(-a[right]), special.log_ndtr(-b[right])
        out[right] = np.exp(la) * -np.expm1(lb - la)
        la, lb = special.log_ndtr(a[left]), special.log_ndtr(b[left])
        out[left] = np.exp(lb) * -np.expm1(la - lb)
    out[middle] = special.ndtr(b[middle]) - special.ndtr(a[middle])
    return np.where(np.isfinite(out), np.maximum(out, 0.0), 0.0)


def sampled_gaussian_atoms(mu: float, rate: float, h: float, upper: bool
                           ) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
    """``(loss, P*-mass, mass at +inf)`` of the symmetrised pair of sampling ``rate`` of a Gaussian of
    ``mu`` (module doc): one atom per grid cell of positive loss at ``log(p / q)`` (its cell's R- and
    Q-masses), its mirror, and the atom at 0; for ``upper`` the R-tail at +inf and the Q-tail at 0, else
    both dropped.

    Raises
    ------
    NumericalLimitError
        The positive losses span more than :data:`CELL_LIMIT` cells of width ``h``.
    """
    from scipy import special

    gamma = float(rate)
    x_top = mu + TAIL_SD
    # L(x) = log(1 - gamma + gamma e^{mu x - mu^2 / 2}), without overflow
    top = float(np.logaddexp(math.log1p(-gamma), math.log(gamma) + mu * x_top - 0.5 * mu * mu))
    cells = math.ceil(top / h)
    if cells > CELL_LIMIT:
        raise NumericalLimitError(f"sampling without replacement of a Gaussian of mu {mu:g}: {cells} grid cells "
                                  f"of width {h:g} (at most {CELL_LIMIT})")
    levels = np.arange(cells + 1, dtype=float) * h
    # x(l): the inverse of L, log(e^l - 1 + gamma) = l + log(1 - (1 - gamma) e^-l)
    x = mu / 2.0 + (levels + np.log1p(-(1.0 - gamma) * np.exp(-levels)) - math.log(gamma)) / mu
    x[0] = mu / 2.0
    lo, hi = x[:-1], x[1:]
    q = _mass_between(lo, hi)
    p = (1.0 - gamma) * q + gamma * _mass_between(lo - mu, hi - mu)
    keep = p > 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        loss = np.log(p) - np.log(q)  # +inf where q underflows (a far tail): charged at +inf above
    cell = np.arange(cells, dtype=float) * h
    loss = np.where(np.isfinite(loss), np.clip(loss, cell, cell + h), loss)
    loss, p, q = loss[keep], p[keep], q[keep]
    finite = np.isfinite(loss)
    tail_r = (1.0 - gamma) * special.ndtr(-x[-1]) + gamma * special.ndtr(mu - x[-1])
    tail_q = special.ndtr(-x[-1])
    zero = (1.0 - gamma) * math.erf(mu / (2.0 * math.sqrt(2.0)))
    infinite = float(p[~finite].sum())
    if upper:
        zero += tail_q
        infinite += tail_r
    losses = np.concatenate((loss[finite], -loss[finite], [0.0]))
    masses = np.concatenate((p[finite], q[finite], [zero]))
    return losses, masses, infinite if upper else 0.0


def gaussian_atoms(mu: float, h: float, upper: bool) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
    """``(loss, P-mass, mass at +inf)`` of a mu-GDP pair on the grid of width ``h``, the cells' way of the
    sampled Gaussian (:func:`sampled_gaussian_atoms`): one atom per cell at ``log(p / q)`` (the loss is
    ``N(mu^2 / 2, mu^2)`` under P, ``N(-mu^2 / 2, mu^2)`` under Q), to be split (upper: second order in ``h``,
    where the batch engine's closed-form law on dp-accounting's own interval is raised, first order) or
    rounded down; beyond :data:`gce.accounting.batch.GAUSSIAN_TAIL` the mass above is charged at +inf and the
    mass below put on the lowest cell (upper), or both dropped (lower)."""
    from scipy import special

    from ..accounting import batch

    mean, sd = 0.5 * mu * mu, mu
    reach = float(-special.ndtri(batch.GAUSSIAN_TAIL))
    lo, hi = math.floor((mean - reach * sd) / h), math.ceil((mean + reach * sd) / h)
    if hi - lo > CELL_LIMIT:
        raise NumericalLimitError(f"a Gaussian loss of mu = {mu:g} spans more than {CELL_LIMIT} cells of width {h:g}")
    edges = np.arange(lo, hi + 1, dtype=float) * h
    p = _mass_between((edges[:-1] - mean) / sd, (edges[1:] - mean) / sd)
    q = _mass_between((edges[:-1] + mean) / sd, (edges[1:] + mean) / sd)
    keep = p > 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        loss = np.log(p[keep]) - np.log(q[keep])
    cell = edges[:-1][keep]
    loss = np.where(np.isfinite(loss), np.clip(loss, cell, cell + h), loss)
    mass = p[keep]
    if not upper:
        return loss, mass, 0.0
    below = float(special.ndtr((edges[0] - mean) / sd))
    if below > 0.0 and mass.size:
        mass = mass.copy()
        mass[0] += below  # raised onto the lowest cell
    return loss, mass, float(special.ndtr(-(edges[-1] - mean) / sd))


def _records_moments(records: Sequence[tuple[object, int]]) -> tuple[float, float, int]:
    """Mean and variance of the total loss of the law records (their upper laws on a fine grid for the
    sampled Gaussians), and how many times they meet the grid."""
    mean = var = 0.0
    meets = 0
    for record, count in records:
        if isinstance(record, DiscreteLaplaceLoss):
            z, mass = record.atoms()
            loss = record.parameter * (record.sensitivity - 2.0 * z)
        else:
            loss, mass, _ = sampled_gaussian_atoms(record.mu, record.rate, 1e-3, False)
        m = float((mass * loss).sum() / mass.sum())
        mean += count * m
        var += count * float((mass * (loss - m) ** 2).sum() / mass.sum())
        meets += record.copies_on_grid(count)
    return mean, var, meets


def _first_interval(guarantees: tuple[tuple[object, int], ...], records: Sequence[tuple[object, int]],
                    rtol: float) -> float:
    """The grid width for a relative bracket ``rtol``: ``2 rtol scale / K`` (the batch engine's rule:
    :func:`gce.accounting.batch.aligned_interval`), K the laws that meet the grid and the scale the total's
    mean plus three standard deviations, the canonical pairs' moments in closed form."""
    from ..accounting import batch

    mean, var, meets = _records_moments(records)
    for g, n in guarantees:
        eps = kinds.pld_source(g).parameters[0]
        if eps > 0:
            m = eps * math.tanh(eps / 2.0)
            mean += n * m
            var += n * max(eps * eps - m * m, 0.0)
            meets += batch.point_splits(g, n)
    scale = max(mean + 3.0 * math.sqrt(var), 1e-3)
    h = float(min(max(2.0 * rtol * scale / max(meets, 1), MIN_INTERVAL), batch.COARSEST))
    steps = {float(r.parameter) for r, _ in records if isinstance(r, DiscreteLaplaceLoss)}
    steps |= {float(kinds.pld_source(g).parameters[0]) for g, _ in guarantees if kinds.pld_source(g).parameters[0] > 0}
    if len(steps) == 1 and not any(isinstance(r, ReplaceOneSampledGaussian) for r, _ in records):
        # every atom on one lattice (discrete Laplace: a s c - 2 a j; canonical pairs: +-eps): a grid that
        # holds it composes them exactly (no split, no rounding)
        step = steps.pop()
        h = step / math.ceil(step / h * (1.0 - 1e-12))
    return h


def law_bracket(entries: Sequence[tuple[object, int]], rtol: float, what: str, target: float
                ) -> tuple[float, float, str]:
    """``(lower, upper, engine)`` of the composition of guarantees and law records (:data:`RECORDS` but
    :class:`RandomAllocation`) at ``target``: epsilon at a delta (``what`` ``"epsilon"``) or delta at an
    epsilon. One grid for all, each law's upper and lower versions composed by the batch engine
    (:func:`gce.accounting.batch.compose_laws`); the guarantees' laws are the batch engine's own
    (:func:`gce.accounting.batch.plan`). With noise mechanisms the grid is theirs; with canonical pairs and
    these laws only it follows ``rtol`` and is halved up to :data:`HALVINGS` times while the bracket is wider.

    Raises
    ------
    InvalidParameterError
        An entry with no privacy-loss distribution (zCDP) or a random allocation.
    NumericalLimitError
        The laws do not fit the batch engine's grid.
    """
    from ..accounting import batch

    guarantees = tuple((g, int(n)) for g, n in entries if kinds.is_guarantee(g))
    records = [(r, int(n)) for r, n in entries if isinstance(r, _LAWS)]
    if len(guarantees) + len(records) != len(entries):
        raise InvalidParameterError("event", "a random allocation is composed by GceAccountant, not as a law")
    for g, _ in guarantees:
        if kinds.pld_source(g) is None:
            raise InvalidParameterError("event", f"{shown(g)} has no privacy-loss distribution to compose with "
                                                  f"the events read as laws")
    # Gaussian mechanisms (not sampled) together: one Gaussian of the cells' way (gaussian_atoms)
    mu = math.sqrt(sum(n * kinds.gdp_mu(g) ** 2 for g, n in guarantees if batch.closed_form(g)))
    guarantees = tuple((g, n) for g, n in guarantees if not batch.closed_form(g))
    dense = any(kinds.pld_source(g).kind != "point" for g, _ in guarantees) or mu > 0.0
    if dense:
        intervals = [batch.plan(guarantees, rtol).interval if guarantees else batch.noise_interval((), rtol)]
    else:
        first = _first_interval(guarantees, records, rtol)
        intervals = [first / 2**i for i in range(HALVINGS + 1)]
    best_low, best_high, used = 0.0, math.inf, None
    for number, h in enumerate(intervals):
        if number and (effort.relative_width(best_low, best_high) <= rtol or effort.current().expired()):
            if effort.current().expired() and effort.relative_width(best_low, best_high) > rtol:
                effort.current().stop("the laws' grid halvings")
            break
        try:
            plan = batch.plan(guarantees, rtol, interval=h) if guarantees else None
            ups = [law for r, n in records for law in r.laws(n, h, True)]
            lows = [law for r, n in records for law in r.laws(n, h, False)]
            if mu > 0.0:
                for side, upward in ((ups, True), (lows, False)):
                    loss, mass, infinite = gaussian_atoms(mu, h, upward)
                    side.append(batch.loss_law(loss, mass, 1, h, upper=upward, infinite=infinite))
            upper = [tuple(d) + tuple(ups) for d in (plan.upper if plan else ((),))]
            lower = [tuple(d) + tuple(lows) for d in (plan.lower() if plan else ((),))]
            curve = batch.compose_laws(upper, lower, h)
            low, high = curve.epsilon_bracket(target) if what == "epsilon" else curve.delta_bracket(target)
        except NumericalLimitError:
            if number == 0:
                raise
            break
        if high < best_high:
            best_high, used = high, h
        best_low = max(best_low, low)
    names = sorted({type(r).__name__ for r, _ in records})
    return min(best_low, best_high), best_high, f"laws on one grid ({', '.join(names)}; width {used:.3g})"

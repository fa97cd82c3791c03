"""Per-database rates (Poisson subsampling): "in none" against each database independently at its rate.

"In none" against a rates prior (each database independently at its rate ``r_i``, no constraints) is the
composition of the databases' subsampled pairs ``((1 - r_i) Q_i + r_i P_i, Q_i)``: Poisson subsampling
(001 Sec. V-B). :func:`poisson_curve` rounds each pair to a dominating one (the spread of ``W`` on a grid
uniform in ``log W``) and garbles it by its cells below, and composes them on the batch engine, both
directions.

References
----------
Balle, Barthe, Gaboardi, "Privacy amplification by subsampling: tight analyses via couplings and
divergences", NeurIPS 2018.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from ...accounting import batch
from ...errors import InvalidParameterError, NumericalLimitError
from ...validation import is_number
from .bracket import (_STOPPED, _TAIL_SHARE, DEFAULT_RTOL, TAIL, AllocationCurve, LowerBound, _at, _check_count,
                      _DirectionLower, _Law, _may_refine, _width)
from .decomposition import _loss_interval
from .ratios import GaussianRatio
from .uniform_grid import GRID_LIMIT


#: Cells of one subsampled database's ratio, uniform in log W (:func:`poisson_curve`; refined by doubling).
_POISSON_POINTS = 2**12
#: The first loss grid of :func:`poisson_curve`, in multiples of its estimate (halved while needed).
_POISSON_COARSE = 8.0


def _log_grid(ratio: GaussianRatio, points: int, tail: float) -> NDArray[np.float64]:
    """Grid points ``0 = g_0 < g_1 < ... < g_m = B`` of one database's ratio W, uniform in ``log W`` from
    ``z = -12`` up to the clamp ``B`` (a privacy-loss grid: the loss ``log(1 - r + r W)`` moves little
    within a cell)."""
    clamp = ratio.clamp(tail)
    z_top = float(ratio._z(np.array([clamp]))[0])
    z = np.linspace(min(-12.0, z_top - 1.0), z_top, points)
    inner = np.exp(ratio.mu * z - 0.5 * ratio.mu**2)
    inner[-1] = clamp
    return np.concatenate(([0.0], inner))


def _poisson_laws(ratio: GaussianRatio, rate: float, points: int, tail: float) -> tuple[tuple[_Law, _Law],
                                                                                        tuple[_Law, _Law]]:
    """((upper remove, upper add), (lower remove, lower add)) of one database subsampled at ``rate``: the pair
    ``((1 - r) Q_i + r P_i, Q_i)``, whose likelihood ratio is ``V = 1 - r + r W``.

    Upper: the mean-preserving spread of ``min(W, B)`` onto the grid (each cell's mass to its two endpoints,
    keeping its mean; W >= B clamped at B, the P-mass ``r E[(W - B)_+]`` left outside Q's support), so
    ``E[V~ | V] = V``: a dominating pair (:mod:`.uniform_grid`, "Certified rounding"). Lower: the garbling by the cell
    of W (a post-processing), whose masses are ``Q_i(cell)`` and ``(1 - r) Q_i(cell) + r P_i(cell)``.
    """
    grid = _log_grid(ratio, points, tail)
    q, p = ratio.cells(np.append(grid, np.inf))  # cells [g_j, g_{j+1}), the last [B, inf)
    width = np.diff(grid)
    law = np.zeros(grid.size)
    law[:-1] += (grid[1:] * q[:-1] - p[:-1]) / width   # kept at the cell's left end
    law[1:] += (p[:-1] - grid[:-1] * q[:-1]) / width   # moved to its right end
    law[-1] += q[-1]
    law = np.maximum(law, 0.0)
    value = 1.0 - rate + rate * grid
    with np.errstate(divide="ignore"):
        loss = np.log(value)
    excess = rate * ratio.excess(float(grid[-1]))
    upper = (_Law(loss, law * value, excess), _Law(-loss, law, 0.0))
    mixed = (1.0 - rate) * q + rate * p
    with np.errstate(divide="ignore", invalid="ignore"):
        cell_loss = np.log(mixed) - np.log(q)
    keep_pq, keep_qp = mixed > 0, q > 0
    lower = (_Law(cell_loss[keep_pq], mixed[keep_pq], 0.0), _Law(-cell_loss[keep_qp], q[keep_qp], 0.0))
    return upper, lower


class _SplitLower:
    """A certified lower curve of the garbled pairs' composition from their *split* composition (the split
    of :func:`gce.accounting.batch.loss_law`, upper form: O(h^2) a copy, where rounding down costs h).

    Write ``Y = e^-S`` for the composed loss S of the garbled pairs (a post-processing of the true pairs, so
    their delta is at most the true one) and ``Y' = Y M`` for the split composition's. Each copy's split moves
    its loss by ``-X_i`` with ``X_i`` in an interval of length ``h`` and ``E[e^X_i | S] = 1`` (it keeps both
    measures' masses), so ``E[X_i | S] >= -h^2 / 8`` (Hoeffding's lemma) and, given S, ``log M = sum X_i``
    is below ``-s = -(N h^2 / 8 + t)`` with probability at most ``eta = exp(-2 t^2 / (N h^2))``
    (Hoeffding's inequality, N copies). On ``log M >= -s``, ``Y <= Y' e^s``, so

        delta(eps) = E[(1 - e^eps Y)_+] >= E[(1 - e^(eps + s) Y')_+] - eta = delta'(eps + s) - eta,

    with ``delta'`` bounded below by the split composition's :class:`~gce.accounting.batch.LowerCurve`
    (its wrapped tails and round-off subtracted). Every ``eta`` gives a lower curve: the largest over
    ``eta = 10^-j/4`` is kept. The shift ``s`` grows as ``h sqrt(N)``, against ``N h`` for rounding down.
    """

    _ETAS = 10.0 ** (-np.arange(4, 1201) / 4.0)

    def __init__(self, split, copies: int, interval: float):
        self._split = split
        h = float(interval)
        t = h * np.sqrt(copies * -np.log(self._ETAS) / 2.0)
        self._shifts = copies * h * h / 8.0 + t

    def _best(self, split_delta, epsilon) -> NDArray[np.float64]:
        eps = np.atleast_1d(np.asarray(epsilon, dtype=float))
        out = np.zeros(eps.size)
        for i, e in enumerate(eps):
            out[i] = max(float(np.max(np.atleast_1d(split_delta(e + self._shifts)) - self._ETAS)), 0.0)
        return out

    def delta(self, epsilon):
        out = self._best(self._split.delta, epsilon)
        return float(out[0]) if np.ndim(epsilon) == 0 else out

    def direction_delta(self, which: int, epsilon) -> NDArray[np.float64]:
        return self._best(lambda e: self._split.direction_delta(which, e), epsilon)


class _SplitLowerCurve(batch.LawCurve):
    """The batch engine's composition of given laws (:func:`gce.accounting.batch.compose_laws`) whose lower
    curve is :class:`_SplitLower` (the garbled pairs split, composed on the same grid)."""

    def __init__(self, upper, lower, interval: float, copies: int):
        super().__init__(upper, (), interval)
        self._split_laws = tuple(tuple(laws) for laws in lower)
        self._copies = int(copies)

    @property
    def lower(self) -> _SplitLower:
        if self._lower is None:
            split = batch.LowerCurve([batch._compose(laws, self.interval) for laws in self._split_laws])
            self._lower = _SplitLower(split, self._copies, self.interval)
        return self._lower


def _compose_poisson(blocks, interval: float) -> _SplitLowerCurve:
    """The databases' upper laws split onto the loss grid and composed (upper curve), and their garbled laws
    split and composed too (lower curve, :class:`_SplitLower`)."""
    ups = [[batch.loss_law(up[d].loss, up[d].mass, count, interval, upper=True, infinite=up[d].infinite)
            for (up, _), count in blocks] for d in range(2)]
    lows = [[batch.loss_law(low[d].loss, low[d].mass, count, interval, upper=True, infinite=0.0)
             for (_, low), count in blocks] for d in range(2)]
    return _SplitLowerCurve(ups, lows, interval, sum(count for _, count in blocks))


#: Estimated seconds per unit of FFT work (window points x log2 points) of one composition of
#: :func:`poisson_curve` (four a step: two directions, upper and lower, each with its curve): 2.5e-8
#: measured on a 2-core machine (2.2 million points, 4.6 s a step), with a margin. Only decides whether a step fits.
_STEP_SECONDS = 3e-8
#: Window (points) of the first loss grid of :func:`poisson_curve`: a fraction of a second a step.
_FIRST_WINDOW = 2**17
#: Smallest P-mass beyond one database's clamp that :func:`poisson_curve` refines to.
_TAIL_FLOOR = 1e-100


def _window_span(blocks, interval: float) -> float:
    """The width (in loss) of the composition's window, the larger direction (the batch engine's Chernoff
    window of the upper laws on a grid of ``interval``): it hardly depends on the grid."""
    span = 0.0
    for d in range(2):
        laws = [batch.loss_law(up[d].loss, up[d].mass, count, interval, upper=True, infinite=up[d].infinite)
                for (up, _), count in blocks]
        lo, hi, _, _ = batch._window(laws, interval)
        span = max(span, (hi - lo + 1) * interval)
    return span


def _cell_loss(clean, points: int, tail: float) -> float:
    """The widest loss step between neighbouring cells of the databases' laws on ``points`` cells (the
    cells are uniform in ``log W``, so this is about ``rate mu`` times their width in z)."""
    widest = 0.0
    for ratio, rate, _ in clean:
        grid = _log_grid(ratio, points, tail)[1:]
        widest = max(widest, float(np.max(np.diff(np.log1p(rate * (grid - 1.0))))))
    return widest


def _poisson_seconds(span: float, kinds: int, points: int, interval: float) -> float:
    """Estimated seconds of one step of :func:`poisson_curve` (from its grids' sizes, never measured): the
    databases' laws on ``points`` cells and four compositions on the window of ``span / interval`` points."""
    size = span / interval + 1.0
    return kinds * 1e-6 * points + 4.0 * _STEP_SECONDS * size * max(math.log2(size), 1.0)


def _check_rate(value: object, name: str) -> float:
    if not is_number(value) or not 0.0 <= value <= 1.0:
        raise InvalidParameterError(name, f"must be a probability in [0, 1], got {value!r}")
    return float(value)


def poisson_curve(parts: Sequence[tuple[float, float, int]], rtol: float = DEFAULT_RTOL,
                  delta: float | None = 1e-6, epsilon: float | None = None, tail: float = TAIL) -> AllocationCurve:
    """The curve of "in none" against "in each database independently at its rate" (the per-database-rate
    prior: Poisson subsampling of the target's record, database by database), each database running a
    Gaussian of its ``mu``: an upper curve with its certified lower curve.

    Without constraints the rates prior is a product law, so ``P = prod_i ((1 - r_i) Q_i + r_i P_i)``
    against ``Q = prod_i Q_i``: the composition of the databases' subsampled Gaussian pairs (001 Sec. V-B;
    Balle, Barthe and Gaboardi 2018). Each pair is rounded to a dominating one above and garbled below
    (:func:`_poisson_laws`), and the pairs are composed by the batch engine
    (:func:`gce.accounting.batch.compose_laws`), both directions. The grids are refined while the bracket at
    the target is wider than ``rtol`` (a schedule that depends on the question only; the time limit of the
    running computation only stops it: :func:`~.bracket._may_refine`).

    Parameters
    ----------
    parts : sequence of (mu, rate, count)
        ``count`` databases running a mu-GDP mechanism each (several on one database: one Gaussian of
        ``sqrt(sum mu_i^2)``), each holding the target with probability ``rate``.
    rtol, delta, epsilon, tail
        As in :func:`allocation_curve`.

    Examples
    --------
    >>> low, high = poisson_curve([(1.0, 0.1, 10)]).epsilon_bracket(1e-6)
    >>> 3.44 < low <= 3.4659 <= high < 3.47  # dp-accounting: 3.46598
    True
    """
    if isinstance(parts, (str, bytes)) or not isinstance(parts, Sequence) or not parts:
        raise InvalidParameterError("parts", f"must be a non-empty list of (mu, rate, count), got {parts!r}")
    clean = []
    for i, part in enumerate(parts):
        if not isinstance(part, Sequence) or len(part) != 3:
            raise InvalidParameterError(f"parts[{i}]", f"must be (mu, rate, count), got {part!r}")
        mu, rate, count = part
        ratio = GaussianRatio(mu)
        rate = _check_rate(rate, f"parts[{i}].rate")
        count = _check_count(count, f"parts[{i}].count")
        if rate > 0.0 and ratio.mu > 0.0:
            clean.append((ratio, rate, count))
    if not is_number(rtol) or not 0.0 < rtol < 1.0:
        raise InvalidParameterError("rtol", f"must be a number in (0, 1), got {rtol!r}")
    if epsilon is None and delta is None:
        delta = 1e-6
    if epsilon is None and delta > 0:
        tail = max(tail, _TAIL_SHARE * delta / max(sum(c for _, _, c in clean), 1))
    if not clean:  # nobody can hold the target, or no database's output depends on it
        from ...accounting.curves import GaussianCurve
        curve = GaussianCurve(0.0)
        return AllocationCurve([curve], LowerBound([(curve, 0.0, 0.0)]), "no database depends on the target")
    copies = sum(count for _, _, count in clean)
    points = _POISSON_POINTS
    blocks = [(_poisson_laws(ratio, rate, points, tail), count) for ratio, rate, count in clean]
    # Coarse to fine: the first loss grid spans the composition's window in _FIRST_WINDOW points (or is the
    # estimate itself when that is coarser); it is quartered (halved within twice rtol) while the bracket is
    # too wide, the cells doubled with it while a cell spans more loss; first the clamp is raised while its
    # charge is a share of the bracket. A schedule that depends on the question only; the time limit stops
    # it before a step whose estimated cost does not fit, the first one included (closed forms then).
    target = _loss_interval([(up, count) for (up, _), count in blocks], rtol, delta, epsilon)
    span = _window_span(blocks, min(target * _POISSON_COARSE, 0.05))
    interval = min(max(span / _FIRST_WINDOW, target), 0.05)
    if not _may_refine(_poisson_seconds(span, len(clean), points, interval), "Poisson subsampling (first grid)",
                       delta, epsilon, math.inf):
        return _closed_forms(clean, "the time limit leaves no room for the first grid")
    done = None
    stopped = False
    while True:
        try:
            composed = _compose_poisson(blocks, interval)
            lower = LowerBound([(_DirectionLower(composed.lower), 0.0, 0.0)])
            low, high = _at(composed, lower, delta, epsilon)
        except NumericalLimitError:
            # The composed window exceeds the batch engine's grid: keep the last (coarser) grid.
            if done is not None:
                break
            if interval >= 0.05:
                raise
            interval *= 2.0
            continue
        width = _width(low, high)
        done = (composed, lower, points, interval)
        if width <= rtol:
            break
        # What limits the bracket: the clamp (the P-mass beyond it, charged at infinite loss in the upper
        # curve), else the loss grid (the shift of the lower curve, :class:`_SplitLower`, and the split of
        # both), halved with the cells doubled while a cell spans more loss than a grid step.
        charge = max(math.fsum(count * up[d].infinite for (up, _), count in blocks) for d in range(2))
        if charge > (high - low) / 4 and tail > _TAIL_FLOOR:
            finer = (points, interval, max(tail * 1e-4, _TAIL_FLOOR))
        elif interval / 2 >= batch.FINEST:
            # The bracket narrows about as the loss grid (the lower curve's shift): a quarter of it when
            # the width is more than twice rtol, else a half.
            step = 4.0 if width > 2.0 * rtol else 2.0
            finer_interval = max(interval / step, batch.FINEST)
            more = points
            while more < GRID_LIMIT // 8 and _cell_loss(clean, more, tail) > finer_interval:
                more *= 2
            finer = (more, finer_interval, tail)
        else:
            break
        if not _may_refine(_poisson_seconds(span, len(clean), finer[0], finer[1]),
                           "Poisson subsampling refinement", delta, epsilon, width):
            stopped = True
            break
        if finer[0] != points or finer[2] != tail:
            blocks = [(_poisson_laws(ratio, rate, finer[0], finer[2]), count) for ratio, rate, count in clean]
        points, interval, tail = finer
    composed, lower, points, interval = done
    shown = ", ".join(f"{count} x (mu {ratio.mu:g} at rate {rate:g})" for ratio, rate, count in clean[:4])
    more = ", ..." if len(clean) > 4 else ""
    return AllocationCurve([composed], lower, f"Poisson subsampling, {copies} database(s): {shown}{more}; "
                                              f"{points:,} cells each, loss grid {interval:.3g}"
                                              f"{_STOPPED if stopped else ''}")


def _closed_forms(clean, why: str) -> AllocationCurve:
    """Bounds in closed form, for when no grid fits: above, every database a member (joint convexity: the
    rates prior is a mixture of sets, each a composition of at most all the databases' Gaussians, GDP
    ``sqrt(sum mu_i^2)``, both directions); below, nothing (delta 0)."""
    from ...accounting.curves import GaussianCurve
    mu = math.sqrt(sum(count * ratio.mu**2 for ratio, _, count in clean))
    return AllocationCurve([GaussianCurve(mu)], LowerBound([(GaussianCurve(0.0), 0.0, 0.0)]),
                           f"Poisson subsampling, {why}: above, every database a member (GDP mu {mu:g}); "
                           f"below, delta 0{_STOPPED}")

"""1 of t on a geometric grid: the law of ``S = sum_i W_i`` by pairwise sums, for small noise.

Small noise: the geometric grid (k = 1)
---------------------------------------
For a large ``mu`` the law of ``W`` spans many orders of magnitude (``mu = 4``: the clamp ``B ~ e^34``, the
bulk ``~ e^-8``) and no uniform grid of :data:`~.uniform_grid.GRID_LIMIT` cells resolves both. The second method puts the
law of ``S`` on a geometric grid ``g_j = g_0 r^j`` (``r = 1 + rho``, relative cell width ``rho``, from a
point ``g_0`` below which one term has Q-mass :data:`_LOG_LOW_MASS` up to past ``t B``) and builds ``S`` by
pairwise sums of independent partial sums: doubling ``S_2m = S_m + S_m'`` and binary assembly for the bits
of ``t`` (about ``2 log2 t`` sums, :func:`_binary`).

*Upper: a spread after every sum.* One term: the mean-preserving spread of ``min(W, B)`` onto ``{0} u {g_j}``
(the mass below ``g_0`` onto 0 and ``g_0``). After each pairwise sum, the atom ``g_i + g_j`` is split
between the two grid points around it keeping its mean (:func:`_spread_sum`). If ``A~`` is a mean-preserving
spread of ``A`` and ``B~`` of ``B`` (independent), ``A~ + B~`` is one of ``A + B`` (``E[A~ + B~ | A, B] = A
+ B``), and spreading it again keeps that: ``E[S~ | S] = S`` at the end, so Jensen's inequality gives
``E h(S~) >= E h(S)`` for both directions' convex ``h``, exactly as for the uniform grid (the spread pair
dominates; the clamp is charged, or exact for Q||P with ``B <= t``, as there; 0 + x = x needs no split).
Geometric points make this cheap: ``g_i + g_j = g_max(i,j) (1 + r^-d)``, ``d = |i - j|``, so the target
point and the split depend on ``d`` only: one vector operation per offset, and from the offset where
``r^-d <= rho / 2`` on the sum stays in the larger one's cell and the share moved up is ``g_j / (g_{i+1} -
g_i)``: all those pairs at once by prefix sums of the smaller's masses and first moments (exactly).

*Lower: a garbling after every sum.* One term: its cells (``[0, g_0)``, ``[g_j, g_{j+1})``, ``[B, inf)``),
each kept as (Q-mass, first moment ``E_Q[W; cell]``). After each pairwise sum, every pair of cells goes to one
cell chosen from the two (the cell holding the sum of their conditional means; pairs far apart, to the
larger one's), with Q-mass ``q_i q_j`` and first moment ``M_i q_j + q_i M_j`` (:func:`_contract_sum`): all
the atoms of a cell merged into one at their Q-weighted conditional mean, a mean-preserving contraction.
The cell of a partial sum is a function of the cells of its terms, hence of the output: the final cell is a
statistic ``T`` of the output, a garbling, and its pair's divergence is a lower bound (data processing). Its
laws are exact: Q-masses by products, and for k = 1 ``P(T = c) = E_Q[S / t; T = c] = M_c / t`` (tilting, as
on the uniform grid), the tracked first moment (``E_Q[S_2m; T = c]`` is a sum of ``M_i q_j + q_i M_j`` over the pairs sent
to ``c``, by independence). The rule choosing the cell only decides how fine the garbling is, never whether
it is valid.

Floating point
--------------
The geometric grid's sums are direct, with non-negative terms only in the garbling and one subtraction of
at most half in the spread's bulk, so their round-off is bounded cell by cell: ``(n - 1) u`` relative for n
non-negative terms (Higham, Sec. 4.2), n the offsets a cell receives, added in blocks of :data:`_LOG_BLOCK`,
the prefix sums in long double (:func:`_log_sum_round_off`). A partial sum's error reaches the final law
once per copy of it, so the law's relative error is at most ``t`` times one sum's plus one term's; one term's
cell masses are differences of distribution functions in the nearer tail, whose error is taken to be ``u``
times the smaller tail mass (an estimate, as :data:`ROUND_OFF`'s on the uniform grid). One term's spread
moves the share ``(E[W | cell] - g_j) / (g_{j+1} - g_j)`` of a cell up, so its round-off moves a mean,
never a mass; the grid's positions (exp of a sum) and the split of every sum move means by their relative
error too.

The errors are *relative, cell by cell*, so they are applied to the cells and not charged as mass at
infinite loss (which would cost the whole allowance at every delta and make deltas below about 1e-10 out
of reach). Above, with a relative mass error ``e`` and conditional means within ``e`` (``E[S~ | S]`` in
``S [1 - e, 1 + e]``): the pair with P-masses scaled up by ``1 / (1 - e)^2`` and Q-masses down by ``(1 - e)
/ (1 + e)`` dominates the spread pair cell by cell in P||Q (and the converse scaling in Q||P), and the
spread pair of means off by ``e`` is dominated by ``1 / (1 - e)`` times the exact spread (Jensen's
inequality on ``S' = E[S~ | S]``, then ``S <= S' / (1 - e)``); as a law, the masses scaled and the losses
moved up (:func:`_log_upper_laws`). Below, with ``p = p~ (1 +- e)`` and ``q = q~ (1 +- e)`` cell by cell,
``sum (p - e^eps q)_+ >= (1 - e) sum (p~ - e^(eps + c) q~)_+``, ``c = log((1 + e) / (1 - e))``: the masses
scaled by ``1 - e`` and the losses moved down by ``c`` (:func:`_log_lower_laws`). Both bounds hold cell by
cell, so they survive composition (a larger P-mass and a smaller Q-mass in every cell can only raise the
composed divergence). Every ``e`` is multiplied by :data:`ROUND_OFF`.

The errors are of second order in ``rho`` in both directions (:mod:`.one_of_t` chooses between the grids).

References
----------
Blackwell, "Equivalent comparisons of experiments", Ann. Math. Stat. 1953 (garblings and dominance).
Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., SIAM 2002 (Sec. 4.2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ... import effort
from ...errors import NumericalLimitError
from .bracket import _LOG_SECONDS, ROUND_OFF, _Law


#: Relative cell width of the first geometric grid (each refinement halves it).
LOG_START_RHO = 1.0 / 16.0
#: Q-mass of one database's ratio below the geometric grid's first point ``g_0`` (spread onto 0 and g_0).
_LOG_LOW_MASS = 1e-16
#: Largest (points x offsets) of one pairwise sum on the geometric grid: beyond it the refinement stops.
LOG_WORK_LIMIT = 2**26
#: Offsets accumulated in a scratch array before they are added to a pairwise sum's output (this bounds the
#: round-off of the accumulation by ``(block + offsets / block) u`` instead of ``offsets u``).
_LOG_BLOCK = 32
#: Smallest positive grid point (log): below it the grid would underflow.
_LOG_FLOOR = -690.0

_U = float(np.finfo(float).eps)
_U_LONG = float(np.finfo(np.longdouble).eps)


@dataclass(frozen=True)
class _GeometricGrid:
    """Points ``g_j = g_0 r^j``, ``r = 1 + rho``, ``j < size`` (and the point 0 below them); ``B = g_top`` is
    the clamp of one database's ratio, and ``size`` reaches past ``t B`` (no sum of t clamped terms leaves it).

    With ``x = r^-d`` (d = |i - j|), ``g_i + g_j = g_max(i,j) (1 + x)`` lies in ``[g_{m + c_d}, g_{m + c_d + 1})``
    with ``c_d = floor(log_r(1 + x))``, a fraction ``f_d = (1 + x - r^c_d) / (r^c_d rho)`` of the way up:
    both depend on d only. From ``d0`` on (``x <= rho / 2``) ``c_d = 0``: those pairs are merged in bulk."""

    g0: float
    rho: float
    size: int
    top: int

    @property
    def log_r(self) -> float:
        return math.log1p(self.rho)

    @property
    def log_values(self) -> NDArray[np.float64]:
        return math.log(self.g0) + np.arange(self.size) * self.log_r

    @property
    def values(self) -> NDArray[np.float64]:
        return np.exp(self.log_values)

    def offsets(self, bulk_ratio: float) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """(c_d, f_d) for ``d < d_b``, ``d_b`` the first offset with ``r^-d <= rho * bulk_ratio`` (so that
        ``c_d = 0`` from there on when ``bulk_ratio <= 1``)."""
        lr = self.log_r
        count = max(int(math.ceil(math.log(1.0 / (self.rho * bulk_ratio)) / lr)), 1)
        x = np.exp(-np.arange(count) * lr)
        c = np.floor(np.log1p(x) / lr).astype(np.int64)
        # f in [0, 1]: correct c where rounding put 1 + x on the wrong side of a grid point
        for _ in range(2):
            f = (x - np.expm1(c * lr)) / (np.exp(c * lr) * self.rho)
            c = c - (f < 0) + (f >= 1)
        f = (x - np.expm1(c * lr)) / (np.exp(c * lr) * self.rho)
        return c, np.clip(f, 0.0, 1.0)


def _geometric_grid(ratio, t: int, rho: float, tail: float, which: str) -> _GeometricGrid:
    """The geometric grid of one direction: the clamp as :func:`_direction_grid` (``remove``: where the tail
    budget ends; ``add``: at most t), the first point where one term's Q-mass below is :data:`_LOG_LOW_MASS`."""
    clamp = ratio.clamp(tail)
    if which == "add":
        clamp = min(clamp, float(t))
    top_log = math.log(clamp)
    # the first point: bisection in log W on Q(W < x) <= _LOG_LOW_MASS (x at most the clamp / e)
    lo, hi = max(top_log - 64.0, _LOG_FLOOR), top_log - 1.0
    while lo > _LOG_FLOOR and float(ratio.cells(np.array([0.0, math.exp(lo)]))[0][0]) > _LOG_LOW_MASS:
        lo = max(top_log - 2.0 * (top_log - lo), _LOG_FLOOR)
    if float(ratio.cells(np.array([0.0, math.exp(hi)]))[0][0]) <= _LOG_LOW_MASS:
        lo = hi
    while hi - lo > 0.05:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if float(ratio.cells(np.array([0.0, math.exp(mid)]))[0][0]) <= _LOG_LOW_MASS else (lo, mid)
    log_r = math.log1p(rho)
    if top_log + math.log(t) + 1.0 > 700.0:
        raise NumericalLimitError(f"random allocation: sums of t = {t} clamped ratios reach beyond e^700")
    top = int(math.ceil((top_log - lo) / log_r))
    g0 = math.exp(top_log - top * log_r)
    # t clamped terms sum to at most t B, and each spread may move an atom up by one point
    size = top + int(math.ceil(math.log(t) / log_r)) + _levels(t) + 3
    return _GeometricGrid(g0, rho, size, top)


def _log_work(grid: _GeometricGrid) -> float:
    """Points times offsets of one pairwise sum (the lower's, the larger)."""
    return grid.size * grid.offsets(1.0 / 64.0)[0].size


def _blocked_add(out: NDArray[np.float64], pieces) -> None:
    """``out[start:stop] += value`` for each (start, value), accumulated in blocks of :data:`_LOG_BLOCK`."""
    scratch = np.zeros_like(out)
    for n, (start, value) in enumerate(pieces, 1):
        scratch[start:start + value.size] += value
        if n % _LOG_BLOCK == 0:
            out += scratch
            scratch[:] = 0.0
    out += scratch


def _prefix(x: NDArray[np.float64], first: float, shift: int) -> NDArray[np.float64]:
    """``first + sum_{j <= i - shift} x_j`` for each i (``first`` alone where ``i < shift``), summed in long
    double."""
    cum = (np.cumsum(x, dtype=np.longdouble) + first).astype(float)
    out = np.full(x.size, float(first))
    if shift < x.size:
        out[shift:] = cum[: x.size - shift]
    return out


def _spread_sum(grid: _GeometricGrid, a: tuple[float, NDArray[np.float64]], b: tuple[float, NDArray[np.float64]],
                same: bool = False) -> tuple[float, NDArray[np.float64]]:
    """The law of ``A + B`` (independent; each a mass at 0 and masses at the points) spread back onto the
    grid: each sum ``g_i + g_j`` split between the two points around it keeping its mean (module doc). Exact
    in real arithmetic: total mass and mean are kept."""
    (za, qa), (zb, qb) = a, b
    m = grid.size
    c, f = grid.offsets(0.5)
    d0 = min(c.size, m)  # no pair of points is m or more apart (a short grid: large noise, a fine rho)
    out = np.zeros(m + int(c[0]) + 2)

    def pieces():
        for d in range(d0):
            w = qa[d:] * qb[: m - d]
            if d and same:
                w = 2.0 * w
            elif d:
                w = w + qb[d:] * qa[: m - d]
            cd = int(c[d])
            yield d + cd, (1.0 - f[d]) * w
            yield d + cd + 1, f[d] * w

    _blocked_add(out, pieces())
    # Bulk, d >= d0: g_i + g_j stays in [g_i, g_{i+1}); the share f = g_j / (g_{i+1} - g_i) moves up. The
    # mass at 0 joins every point (exactly: no share moves).
    values = grid.values
    width = values * grid.rho
    mass_b, mass_a = _prefix(qb, zb, d0), _prefix(qa, za, d0)
    moment_b, moment_a = _prefix(qb * values, 0.0, d0), _prefix(qa * values, 0.0, d0)
    up = (qa * moment_b + qb * moment_a) / width
    out[:m] += qa * mass_b + qb * mass_a - up
    out[1: m + 1] += up
    if np.any(out[m:] > 0):
        raise NumericalLimitError("random allocation: a sum left the geometric grid (internal sizing)")
    return za * zb, out[:m]


def _contract_sum(grid: _GeometricGrid, a, b, same: bool = False):
    """The garbling of ``A + B`` (each a law of cells: the low cell ``[0, g_0)`` as (Q-mass, first moment),
    then arrays of Q-masses and first moments of the cells ``[g_j, g_{j+1})``): a pair of cells goes to the
    cell that holds the sum of their conditional means (pairs ``d1`` or more cells apart, to the larger's
    cell; beyond the grid, to the last cell), its Q-mass the product and its first moment
    ``M_i q_j + q_i M_j`` (module doc). Any such rule is a function of the output: a garbling."""
    (la, ma_low), qa, ma_ = a
    (lb, mb_low), qb, mb_ = b
    m = grid.size
    c, _ = grid.offsets(1.0 / 64.0)
    d1 = min(c.size, m)  # no pair of cells is m or more apart (a short grid: large noise, a fine rho)
    ext = int(c[0]) + 3
    edges = np.exp(math.log(grid.g0) + np.arange(m + ext + 1) * grid.log_r)
    values = grid.values
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_a = np.where(qa > 0, ma_ / np.where(qa > 0, qa, 1.0), values)
        mean_b = np.where(qb > 0, mb_ / np.where(qb > 0, qb, 1.0), values)
    out_q = np.zeros(m + ext)
    out_m = np.zeros(m + ext)
    orders = ((qa, ma_, mean_a, qb, mb_, mean_b),) if same else \
        ((qa, ma_, mean_a, qb, mb_, mean_b), (qb, mb_, mean_b, qa, ma_, mean_a))

    def pieces(moments: bool):
        for d in range(d1):
            cd = int(c[d])
            for xq, xm, xmean, yq, ym, ymean in orders:
                if moments:
                    w = xm[d:] * yq[: m - d] + xq[d:] * ym[: m - d]
                else:
                    w = xq[d:] * yq[: m - d]
                if same and d:
                    w = 2.0 * w
                high = xmean[d:] + ymean[: m - d] >= edges[d + cd + 1: m + cd + 1]
                part = np.where(high, w, 0.0)
                yield d + cd, w - part
                yield d + cd + 1, part
                if d == 0:
                    break

    _blocked_add(out_q, pieces(False))
    _blocked_add(out_m, pieces(True))
    mass_a, mass_b = _prefix(qa, la, d1), _prefix(qb, lb, d1)
    moment_a, moment_b = _prefix(ma_, ma_low, d1), _prefix(mb_, mb_low, d1)
    out_q[:m] += qa * mass_b + qb * mass_a
    out_m[:m] += ma_ * mass_b + qa * moment_b + mb_ * mass_a + qb * moment_a
    out_q[m - 1] += out_q[m:].sum()
    out_m[m - 1] += out_m[m:].sum()
    return (la * lb, ma_low * lb + la * mb_low), out_q[:m], out_m[:m]


def _binary(t: int, one, add):
    """``one + ... + one`` (t independent copies) by doubling and binary assembly: about ``2 log2 t`` sums;
    ``add(x, y, same)`` sums two laws (``same``: x and y are the same law)."""
    result, power, n = None, one, t
    while True:
        effort.checkpoint()  # a sum is short: a step that overran on a loaded machine stops here
        if n & 1:
            result = power if result is None else add(result, power, False)
        n >>= 1
        if not n:
            return result
        power = add(power, power, True)


def _tails(q: NDArray[np.float64]) -> NDArray[np.float64]:
    """Per cell, the smaller of the Q-masses at or below it and at or above it: cell masses computed as
    differences of distribution functions in the nearer tail (as :meth:`GaussianRatio.cells` does) carry an
    absolute round-off of about u times that (an estimate, like :data:`ROUND_OFF`'s)."""
    return np.minimum(np.cumsum(q), np.cumsum(q[::-1])[::-1])


def _log_sum_round_off(grid: _GeometricGrid, offsets: int) -> float:
    """Relative round-off of each cell of one pairwise sum on the geometric grid (module doc, "Floating
    point"): non-negative products (a few u each) added up ``offsets`` per cell in blocks of
    :data:`_LOG_BLOCK` (Higham, "Accuracy and Stability of Numerical Algorithms", Sec. 4.2: at most
    ``(n - 1) u`` relative for n non-negative terms), the bulk's prefix sums in long double."""
    return (_LOG_BLOCK + offsets / _LOG_BLOCK + 16.0) * _U + grid.size * _U_LONG


def _levels(t: int) -> int:
    return 2 * max(t.bit_length(), 1)


def _log_upper_laws(ratio, t: int, grid: _GeometricGrid, which: str) -> _Law:
    """The dominating pair of 1 of t on the geometric grid (module doc, "Small noise"): one term's
    ``min(W, B)`` spread onto 0 and the points, then ``S`` by pairwise sums each spread back; its law in the
    direction ``which`` (remove: P-masses ``q s / t`` at loss ``log(s / t)``, the clamp's excess at infinite
    loss; add: Q-masses at ``-log(s / t)``, the mass at 0 at infinite loss), with the round-off allowance
    applied cell by cell (module doc, "Floating point": masses scaled, losses moved up)."""
    top = grid.top
    values = grid.values
    edges = np.concatenate(([0.0], values[: top + 1], [np.inf]))
    q, p = ratio.cells(edges)  # [0, g_0), [g_j, g_{j+1}) for j < top, [B, inf)
    # One term's spread, cell by cell: the share lam = (E[W | cell] - g_j) / (g_{j+1} - g_j) of the cell's
    # Q-mass moves up (a share in [0, 1]: its round-off moves the cell's mean, never its mass).
    lower_edges = np.concatenate(([0.0], values[:top]))
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where(q[:-1] > 0, (p[:-1] / np.where(q[:-1] > 0, q[:-1], 1.0) - lower_edges)
                       / (values[: top + 1] - lower_edges), 0.0)
    lam = np.clip(lam, 0.0, 1.0)
    law = np.zeros(grid.size)
    zero = float(q[0] * (1.0 - lam[0]))
    law[: top + 1] += q[:-1] * lam
    law[:top] += q[1:top + 1] * (1.0 - lam[1:])
    law[top] += q[-1]  # W >= B: clamped at B
    one = (zero, law)
    zero, mass = _binary(t, one, lambda x, y, same: _spread_sum(grid, x, y, same))
    error = ROUND_OFF * _log_upper_relative(grid, t, q, p)
    # With each cell's computed mass within a relative ``error`` of the exact spread's, and every
    # conditional mean within as much (module doc, "Floating point"): the remove direction's P-masses
    # scaled by 1 / (1 - e)^2 and its losses moved up by log((1 + e) / (1 - e)^2), the add direction's
    # Q-masses by 1 / (1 - e) and its losses by log((1 + e)^2 / (1 - e)), dominate the spread pair cell by
    # cell (a larger P-mass and a smaller Q-mass in P||Q; the converse in Q||P).
    log_s = grid.log_values - math.log(t)
    rounding = 4.0 * _U * (np.abs(log_s) + 1.0)  # log(s / t), rounded outwards
    if which == "remove":
        shift = math.log1p(error) - 2.0 * math.log1p(-error)
        factor = 1.0 / (1.0 - error) ** 2
        p_law = np.exp(np.log(np.maximum(mass, 1e-320)) + log_s) * (mass > 0) * factor
        return _Law(log_s + rounding + shift, p_law, min(ratio.excess(float(values[top])) * factor, 1.0))
    shift = 2.0 * math.log1p(error) - math.log1p(-error)
    factor = 1.0 / (1.0 - error)
    return _Law(-log_s + rounding + shift, mass * factor, min(zero * factor, 1.0))


def _log_upper_relative(grid: _GeometricGrid, t: int, q: NDArray[np.float64], p: NDArray[np.float64]) -> float:
    """Relative round-off of every cell's mass and every conditional mean of the spread law of ``S``
    (module doc, "Floating point"), before :data:`ROUND_OFF`: a partial sum's relative error reaches the
    final law once per copy of it (t times one sum's and one term's); each sum's bulk subtracts at most half
    of what it adds (three times the relative error); one term's cell masses ``q`` and ``p`` (differences of
    distribution functions in the nearer tail: u times the smaller tail) give its masses and its cells'
    conditional means ``p / q``; the grid's positions (exp of a sum) move each mean by their relative error
    at every level; the P-masses ``q s / t`` are one exp of a sum of logs."""
    per_sum = _log_sum_round_off(grid, 4 * grid.offsets(0.5)[0].size + 4)
    with np.errstate(divide="ignore", invalid="ignore"):
        term_q = float(np.max(np.where(q > 0, _tails(q) / q, 0.0)))
        term_p = float(np.max(np.where(p > 0, _tails(p) / p, 0.0)))
    term = _U * (2.0 * term_q + term_p + 8.0)
    positions = 4.0 * _U * (abs(math.log(grid.g0)) + grid.size * grid.log_r + 2.0) * _levels(t)
    masses = 4.0 * _U * (750.0 + abs(math.log(grid.g0)) + grid.size * grid.log_r + math.log(t))
    return t * (3.0 * per_sum + term) + positions + masses


def _log_lower_laws(ratio, t: int, grid: _GeometricGrid, which: str) -> _Law:
    """The garbled pair of 1 of t on the geometric grid (module doc, "Small noise"): one term's cells, then
    ``S`` by pairwise sums each garbled (:func:`_contract_sum`); the final cells' Q-masses ``q`` and first
    moments ``M = E_Q[S; cell]``, so ``P(cell) = M / t`` (k = 1); its law in the direction ``which``, with the
    round-off to subtract."""
    top = grid.top
    edges = np.concatenate(([0.0], grid.values[: top + 1], [np.inf]))
    q, p = ratio.cells(edges)
    cells_q = np.zeros(grid.size)
    cells_m = np.zeros(grid.size)
    cells_q[: top + 1] = q[1:]
    cells_m[: top + 1] = p[1:]
    one = ((float(q[0]), float(p[0])), cells_q, cells_m)
    (low_q, low_m), cells_q, cells_m = _binary(t, one, lambda x, y, same: _contract_sum(grid, x, y, same))
    mass = np.append(cells_q, low_q)
    moment = np.append(cells_m, low_m)
    keep = (mass > 0) & (moment > 0)
    mass, moment = mass[keep], moment[keep]
    loss = np.log(moment) - np.log(mass) - math.log(t)
    # Relative round-off of every cell (all terms non-negative, no subtraction): a partial sum's relative error
    # reaches the final cells once per copy of it, so t times one sum's and one term's (module doc, "Floating
    # point"). With p = p~ (1 +- e) and q = q~ (1 +- e) cell by cell, sum (p - e^eps q)_+ is at least
    # (1 - e) sum (p~ - e^(eps + c) q~)_+, c = log((1 + e) / (1 - e)): the masses scaled by 1 - e and the
    # losses moved down by c (and by the rounding of the computed loss) give a lower curve at every eps.
    with np.errstate(divide="ignore", invalid="ignore"):
        term = _U * (2.0 * float(np.max(np.where(q > 0, _tails(q) / q, 0.0)))
                     + float(np.max(np.where(p > 0, _tails(p) / p, 0.0))) + 4.0)
    relative = ROUND_OFF * t * (_log_sum_round_off(grid, 4 * grid.offsets(1.0 / 64.0)[0].size + 4) + term)
    shift = math.log1p(relative) - math.log1p(-relative) + 4.0 * _U * (np.abs(loss) + math.log(t) + 2.0)
    if which == "remove":
        return _Law(loss - shift, moment / t * (1.0 - relative), 0.0, relative=relative)
    return _Law(-loss - shift, mass * (1.0 - relative), 0.0, relative=relative)


def _geometric_laws(ratio, t: int, rho: float, tail: float, which: str) -> tuple[_Law, _Law, str]:
    """One direction's (upper, lower) laws of 1 of t on the geometric grid of relative width ``rho``."""
    grid = _geometric_grid(ratio, t, rho, tail, which)
    if _log_work(grid) > LOG_WORK_LIMIT:
        raise NumericalLimitError(f"random allocation: a geometric grid of {grid.size:,} points at rho {rho:g} "
                                  f"exceeds the work limit")
    label = f"geometric grid rho 1/{round(1.0 / rho):,} ({grid.size:,} points)"
    return _log_upper_laws(ratio, t, grid, which), _log_lower_laws(ratio, t, grid, which), label


def _log_seconds(ratio, t: int, rho: float, tail: float, which: str) -> float:
    """Estimated seconds of :func:`_geometric_laws` (from the grid's work, never measured: bracket module
    doc); 0 when the grid exceeds the limits (the step then declines at once)."""
    try:
        grid = _geometric_grid(ratio, t, rho, tail, which)
    except NumericalLimitError:
        return 0.0
    work = _log_work(grid)
    if work > LOG_WORK_LIMIT:
        return 0.0
    per_work, per_sum = _LOG_SECONDS
    return _levels(t) * (per_sum + per_work * work)

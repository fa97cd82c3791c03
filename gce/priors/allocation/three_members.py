"""Three members of t: the recursion of ``(e_1, e_2, e_3)``, spread above and garbled below.

The pair, written under Q
-------------------------
With ``W_i = dP_i / dQ_i`` (independent under Q, package doc), "in exactly 3 of t, uniformly" against "in
none" has ``dP/dQ = L = e_3(W_1..W_t) / C(t, 3)``; both directions are expectations under Q of convex
functions of ``L`` (:mod:`.two_members`, "The pair, written under Q"). Processing the databases one at a time,
the state ``X_i = (S_i, E_i, F_i) = (e_1, e_2, e_3)(W_1..W_i)`` moves by

    S_{i+1} = S_i + W_{i+1},     E_{i+1} = E_i + W_{i+1} S_i,     F_{i+1} = F_i + W_{i+1} E_i,

an affine map of the state for a fixed ``W_{i+1}``, and ``L = F_t / C(t, 3)``.

Upper: mean-preserving spreads of the state (the convex order)
---------------------------------------------------------------
The argument of :mod:`.two_members` holds word for word in three coordinates: for a convex ``phi``,
``V_t = phi(F / C)`` is convex in the state, and ``V_i(x) = E_W[V_{i+1}(A_W x + b_W)]`` is an average of
convex functions of affine maps of ``x``, so convex (on the whole of R^3). A mean-preserving spread of the
state at any step can therefore only raise ``E V``; by induction the spread process's ``L~`` has
``E phi(L~) >= E phi(L)`` for every convex ``phi`` at once and ``E L~ = E L``: the law of ``L~`` under Q is a
dominating pair of the allocation, both directions at every eps. The spreads used at every step, on grids
``g`` of S, ``e`` of E and ``f`` of F (all starting at 0; any grids are sound, these are placed for accuracy:
:func:`_grids`):

* *Along the segment.* From a grid state ``(S, E, F)`` the true next state ``(S + w, E + w S, F + w E)`` is
  affine in ``w``: for ``w`` in the cell ``[g_a - S, g_{a+1} - S)`` it lies on the segment between the true
  states at ``w = g_a - S`` and ``w = g_{a+1} - S``, and is sent to the two ends with the weights that keep
  its mean: the cell masses of one database's ratio only, as in :mod:`.two_members`
  (:func:`~.two_members._spread_weights`, the clamp's atom included).
* *Along E at fixed (S, F)*, then *along F at fixed (S, E)*: each end's ``E`` to its two neighbours on ``e``,
  then each point's ``F`` to its two neighbours on ``f`` (means kept): at most eight grid states a cell.

* *At F = 0, and far out: the cells cut where F meets its grid.* From a state at ``F = 0`` the left end of
  the first cell of S keeps ``(S, E, 0)`` while the true next state's ``E`` grows: step after step Q-mass
  stayed at ``L = 0`` (measured 1.6e-5 at 3 of 8, sigma 1, enough to leave the add direction unbounded at
  delta 1e-5). Any points may cut the cells of ``w``, since the ends need only be true states on the segment
  and each coordinate is then spread at fixed others (``V_{i+1}`` is convex on the whole of R^3): so the
  states at ``F = 0`` cut at the points of S *and* where ``F + w E`` meets a point of ``f`` (at ``E = 0``, where
  ``w S`` meets a point of ``e``), and, far out (the next cell of S wider than :data:`_CUT_FROM`), the states
  whose cell of S seen in F (``(g_{j+1} - S) E``) is wider than their cell of F and whose mass matters
  (:data:`_CUT_SHARE`) at the points of ``f`` alone (:func:`_cut_moves`). Far out, the cut by F removes the lumps
  of ``F`` (from ``S`` at a cell's ends, ``F`` went to ``F`` or to ``F + spacing x E``): 3 of 10 at sigma 1, the
  grid ratio 1.03, went from 5.202 to 5.104 above (the truth near 5.04), its time from 12 s to 19 s.

*Charges* (P-mass at infinite loss, which only raises both directions: :mod:`.two_members`, "Clamps,
charged"). The final ``e_3`` from a state ``(S, E, F)`` after step ``i`` is ``F + E S' + S E' + F'`` with
``(S', E', F')`` those of the ``r = t - i - 1`` databases left (means ``r``, ``C(r, 2)``, ``C(r, 3)`` under Q).
So lowering ``F`` by ``y`` lowers every future ``L`` by ``y / C``, ``E`` by ``y``: by ``y S' / C``, ``S`` by
``y``: by ``y E' / C`` (and the later increments of ``E`` with it, all nonnegative), charged
``y / C``, ``y r / C`` and ``y C(r, 2) / C`` per unit of Q-mass. Above the last point of ``f`` (of ``e``),
``F`` (``E``) is lowered to it; beyond the last point of ``g`` the end is lowered to it as in
:mod:`.two_members`; each ``W`` is clamped at ``B`` (its excess ``x`` charged: P-mass ``1 - (1 - x)^3``).

Lower: a garbling by the same recursion
---------------------------------------
The statistic ``T_{i+1} = (a, m, n)``: ``a`` the point of ``g`` nearest to ``S(T_i) + W_{i+1}``, ``m`` the
point of ``e`` nearest to ``E(T_i) + (g_a - S(T_i)) S(T_i)``, ``n`` the point of ``f`` nearest to
``F(T_i) + (g_a - S(T_i)) E(T_i)``, is a deterministic function of the outputs; its laws are computed
exactly, under Q with the cell masses ``Q(cell)`` and under P by carrying four measures (0 to 3 members among
the databases processed, the members' cells at ``E_Q[W; cell]``) and dividing the last by ``C(t, 3)``. The
final statistic is ``n`` alone (a further garbling). The pair of its laws is a garbling of the allocation:
its divergences are lower bounds (data processing). P-mass outside Q's support is the outcome "a member
showed it" (P-mass ``1 - (1 - delta)^3``, Q-mass 0).

Negligible moves
----------------
A move of the recursion (a state's mass sent to one point of the grid) whose Q-mass plus P-mass (the mass
times ``E[L | its end]``, ``(F + E r + S C(r, 2) + C(r, 3)) / C`` at the true end, ``r`` the databases after
it, each later ``W`` of mean 1; before any lowering: at least the spread process's) is below ``drop / (t
n_S^2)`` is not made. *Above*, both masses are charged at infinite loss (the add and the remove direction): a
mass contributes at most its P-mass to ``E_Q[(L - c)_+]`` and at most its Q-mass to ``E_Q[(1 - e^eps L)_+]``,
and the moves that are made keep their spreads. *Below*, the measures lose what the move carried: every final
outcome's masses ``p``, ``q`` become ``p' <= p``, ``q' <= q``, and ``(p' - g q')_+ <= (p - g q)_+ + g (q -
q')``, so the lost masses (a unit of measure ``m`` after step ``i`` ends as at most ``C(r, 3 - m)`` units of
the last) are added to the allowance subtracted. (The blocks of two apply each state's moves as one map
instead, cheap enough to make every move: :mod:`.two_members`, "One map, every step".)

Floating point
--------------
Every mass is a sum of nonnegative terms (``np.bincount`` in a fixed order: the same numbers on every run);
the round-off is covered by the allowance of :mod:`.two_members` (:func:`~.two_members._noise`).

Cost and memory
---------------
The states are kept sparse (the occupied points of the 3-d grid only) and each step accumulates on the flat
grid (``n_S n_E n_F`` points, dense: :data:`MEMORY_LIMIT` refuses a grid beyond it, estimated before the
level). A step's work is its moves: the occupied states times the points of S reachable from each, estimated
from the grids' sizes (:func:`_three_work`: at each point of S the points of E in its range, as in
:func:`~.two_members._pair_seconds`, times the points of F below ``S^3 / 6``), never from a clock; its unit
(:data:`_UNIT_SECONDS`) is measured.

References
----------
Feldman, Shenfeld, "Privacy amplification by random allocation", arXiv 2502.08202.
Blackwell, "Equivalent comparisons of experiments", Ann. Math. Stat. 1953 (garblings and dominance).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from .bracket import _Law
from .two_members import _block_laws, _cells_from, _e_ratio, _grids, _l_grid, _locate, _noise, _Rows

#: Most bytes of the flat accumulation of one step (four measures below): a level beyond is refused.
MEMORY_LIMIT = 3.0e9
#: States whose next cell of S is wider than this are moved along the cells of w cut where F meets its grid
#: (:func:`_cut_moves`; W has mean 1 under Q).
_CUT_FROM = 1.0
#: ... and only those whose Q-mass plus P-mass is at least this share of ``drop / t`` (the others, negligible,
#: are moved along S: any choice is sound; measured at 3 of 10, sigma 1: 66 s without this floor, 19 s with
#: it, the upper end moved by 0.0001).
_CUT_SHARE = 1e-2
#: Terms summed by one ``np.bincount`` (a few hundred MB at once).
_CHUNK = 1 << 23


class _Flat:
    """Masses of ``measures`` measures added at flat indices of a grid of ``size`` points (dense sums, one
    ``np.bincount`` per :data:`_CHUNK` terms in a fixed order), read back sparse (the occupied points)."""

    def __init__(self, size: int, measures: int):
        self.size, self.measures = size, measures
        self.sum = np.zeros((measures, size))
        self.keys: list[NDArray[np.int64]] = []
        self.mass: list[NDArray[np.float64]] = []
        self.count = 0

    def add(self, keys: NDArray[np.int64], mass: NDArray[np.float64]) -> None:
        self.keys.append(keys)
        self.mass.append(mass.reshape(self.measures, keys.size))
        self.count += keys.size
        if self.count >= _CHUNK:
            self._flush()

    def _flush(self) -> None:
        if self.keys:
            keys, mass = np.concatenate(self.keys), np.concatenate(self.mass, axis=1)
            for m in range(self.measures):
                self.sum[m] += np.bincount(keys, mass[m], minlength=self.size)
        self.keys, self.mass, self.count = [], [], 0

    def total(self) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        self._flush()
        occupied = np.flatnonzero(self.sum.any(axis=0))
        return occupied, self.sum[:, occupied]


def _grids3(ratio, t: int, level: float, tail: float, high: float, e_high: float | None = None):
    """(grid of S, grid of E, grid of F, clamp B) of a level: S and E as for two members
    (:func:`~.two_members._grids`), F placed for ``L = F / C(t, 3)`` as E is for ``E / C(t, 2)``."""
    s, e, b = _grids(ratio, t, level, tail, high, e_high)
    f = _l_grid(float(math.comb(t, 3)), _e_ratio(level, high if e_high is None else e_high), high)
    return s, e, f, b


def _rows(keys: NDArray[np.int64], plane: int):
    """The runs of equal S index in sorted flat keys: (S index, start, stop) each."""
    js = keys // plane
    starts = np.concatenate(([0], np.flatnonzero(np.diff(js)) + 1))
    stops = np.append(starts[1:], keys.size)
    return zip(js[starts].tolist(), starts.tolist(), stops.tolist())


def _upper_three(ratio, t: int, s: NDArray[np.float64], e: NDArray[np.float64], f: NDArray[np.float64], b: float,
                 drop: float = 0.0, cut: bool = True) -> tuple[_Law, _Law]:
    """The spread process's law of L under Q (module doc): (remove, add) laws of the dominating pair."""
    c = float(math.comb(t, 3))
    n_s, n_e, n_f = s.size, e.size, f.size
    plane = n_e * n_f
    floor = drop / (t * n_s * n_s)
    cut_floor = drop * _CUT_SHARE / t
    keys, mass = np.zeros(1, dtype=np.int64), np.ones(1)
    charge = charge_q = 0.0
    moves = _Rows(ratio, s, b)
    for step in range(t):
        rest = t - step - 1
        r2, r3 = math.comb(rest, 2), math.comb(rest, 3)
        acc = _Flat(n_s * plane, 1)
        for j, lo, hi in _rows(keys, plane):
            here = float(s[j])
            within = keys[lo:hi] % plane
            ev, fv, m = e[within // n_f], f[within % n_f], mass[lo:hi]
            # states at F = 0, and all far out: cells cut where F (or E) meets its grid (:func:`_cut_moves`)
            far = cut and j + 1 < n_s and s[j + 1] - here > _CUT_FROM
            at_zero = within % n_f == 0
            if here > 0.0 and np.any(at_zero):
                charge += _cut_moves(ratio, s, e, f, b, j, ev[at_zero], fv[at_zero], m[at_zero], rest, c, acc, True)
                ev, fv, m, within = ev[~at_zero], fv[~at_zero], m[~at_zero], within[~at_zero]
                if not m.size:
                    continue
            if far:  # the states whose cell of S seen in F is wider than their cell of F (module doc)
                jf = within % n_f
                along_f = (jf < n_f - 1) & ((s[j + 1] - here) * ev > f[np.minimum(jf + 1, n_f - 1)] - fv)
                if cut_floor > 0.0:  # and whose mass matters (:data:`_CUT_SHARE`)
                    along_f &= m * (1.0 + (fv + ev * rest + here * r2 + r3) / c) >= cut_floor
                if np.any(along_f):
                    charge += _cut_moves(ratio, s, e, f, b, j, ev[along_f], fv[along_f], m[along_f], rest, c, acc,
                                         False)
                    ev, fv, m = ev[~along_f], fv[~along_f], m[~along_f]
                    if not m.size:
                        continue
            weights, shifts, rows, overflow = moves.spread(j)
            charge += float(m.sum()) * overflow * r2 / c  # beyond the last point of S: S lowered
            xe = ev[None, :] + (shifts * here)[:, None]
            xf = fv[None, :] + shifts[:, None] * ev[None, :]
            mv = weights[:, None] * m[None, :]
            if floor > 0.0:  # a move's Q-mass and its P-mass (module doc, "Negligible moves")
                pm = mv * (xf + xe * rest + (here + shifts)[:, None] * r2 + r3) / c
                small = mv + pm < floor
                if np.any(small):
                    charge += float(pm[small].sum())
                    charge_q += float(mv[small].sum())
                ti, ci = np.nonzero(~small)
                xe, xf, mv = xe[ti, ci], xf[ti, ci], mv[ti, ci]
                dest = j + rows[ti]
            else:
                dest = np.repeat(j + rows, m.size)
                xe, xf, mv = xe.ravel(), xf.ravel(), mv.ravel()
            over = xe > e[-1]
            if np.any(over):
                charge += float(np.sum(mv[over] * (xe[over] - e[-1]))) * rest / c
                xe = np.minimum(xe, e[-1])
            over = xf > f[-1]
            if np.any(over):
                charge += float(np.sum(mv[over] * (xf[over] - f[-1]))) / c
                xf = np.minimum(xf, f[-1])
            ie, jf = _locate(e, xe), _locate(f, xf)
            fe = np.clip((xe - e[ie]) / (e[ie + 1] - e[ie]), 0.0, 1.0)
            ff = np.clip((xf - f[jf]) / (f[jf + 1] - f[jf]), 0.0, 1.0)
            base = (dest * n_e + ie) * n_f + jf
            low_e, high_e = mv * (1.0 - fe), mv * fe
            acc.add(np.concatenate((base, base + 1, base + n_f, base + n_f + 1)),
                    np.concatenate((low_e * (1.0 - ff), low_e * ff, high_e * (1.0 - ff), high_e * ff)))
        keys, sums = acc.total()
        mass = sums[0]
    q = np.bincount(keys % n_f, mass, minlength=n_f)
    noise = _noise(t, keys.size)
    return _block_laws(f / c, q, 3, ratio.excess(b), charge, charge_q, noise)


def _cut_moves(ratio, s: NDArray[np.float64], e: NDArray[np.float64], f: NDArray[np.float64], b: float, j: int,
               ev: NDArray[np.float64], fv: NDArray[np.float64], m: NDArray[np.float64], rest: int, c: float,
               acc: _Flat, by_s: bool) -> float:
    """One step from the states ``(s[j], ev, fv)`` with masses ``m`` (module doc, "At F = 0, and far out"): the
    cells of ``w`` cut where ``F + w E`` (at E = 0: ``w S``) meets its grid, and with ``by_s`` at the offsets of
    S too, each cell's mass sent to the true states at its ends (mean kept), then each coordinate to its two
    grid neighbours (:func:`_spread3`); returns the charge."""
    # where F + w E (at E = 0: w S) meets its grid, below b (ascending in each row)
    scale = np.where(ev > 0.0, ev, float(s[j]))
    grid = np.where((ev > 0.0)[:, None], f[None, 1:] - fv[:, None], e[None, 1:])
    top = int(np.max(np.sum(grid < b * scale[:, None], axis=1))) + 1
    cross = np.clip(grid[:, :top] / scale[:, None], 0.0, b)
    here = float(s[j])
    u = np.concatenate((np.zeros((m.size, 1)), cross, np.full((m.size, 1), b)), axis=1)
    if by_s:  # and at the points of S (at F = 0, where E, small, has to grow with S)
        off = s[j + 1:] - here
        off = np.broadcast_to(off[off < b], (m.size, int(np.sum(off < b))))
        u = np.sort(np.concatenate((u, off), axis=1), axis=1)
    q, p = _cells_from(ratio, np.concatenate((u, np.full((m.size, 1), np.inf)), axis=1), np.zeros(m.size, dtype=np.int64))
    lo_u, hi_u = u[:, :-1], u[:, 1:]
    inner = hi_u > lo_u
    gap = np.where(inner, hi_u - lo_u, 1.0)
    right = np.where(inner, np.clip((p[:, :-1] - lo_u * q[:, :-1]) / gap, 0.0, q[:, :-1]), 0.0)
    weights = np.zeros(u.shape)
    weights[:, :-1] += q[:, :-1] - right
    weights[:, 1:] += right
    weights[:, -1] += q[:, -1]  # the clamp's atom at w = b
    mv = weights * m[:, None]
    keep = mv > 0.0
    w, mv = u[keep], mv[keep]
    e_here = np.broadcast_to(ev[:, None], u.shape)[keep]
    f_here = np.broadcast_to(fv[:, None], u.shape)[keep]
    return _spread3(s, e, f, here + w, e_here + w * here, f_here + w * e_here, mv, rest, c, acc)


def _spread3(s, e, f, xs, xe, xf, mv, rest: int, c: float, acc: _Flat) -> float:
    """The states ``(xs, xe, xf)`` with masses ``mv`` spread onto the grids, S, then E, then F, each at fixed
    other coordinates (means kept); beyond a grid's last point lowered to it and charged (module doc)."""
    n_e, n_f = e.size, f.size
    charge = 0.0
    for grid, x, per in ((s, xs, math.comb(rest, 2)), (e, xe, rest), (f, xf, 1)):
        over = x > grid[-1]
        if np.any(over):
            charge += float(np.sum(mv[over] * (x[over] - grid[-1]))) * per / c
            x[over] = grid[-1]
    i_s, i_e, i_f = _locate(s, xs), _locate(e, xe), _locate(f, xf)
    fs = np.clip((xs - s[i_s]) / (s[i_s + 1] - s[i_s]), 0.0, 1.0)
    fe = np.clip((xe - e[i_e]) / (e[i_e + 1] - e[i_e]), 0.0, 1.0)
    ff = np.clip((xf - f[i_f]) / (f[i_f + 1] - f[i_f]), 0.0, 1.0)
    base = (i_s * n_e + i_e) * n_f + i_f
    keys, masses = [], []
    for ds, ws in ((0, 1.0 - fs), (1, fs)):
        for de, we in ((0, 1.0 - fe), (1, fe)):
            for df, wf in ((0, 1.0 - ff), (1, ff)):
                keys.append(base + (ds * n_e + de) * n_f + df)
                masses.append(mv * ws * we * wf)
    acc.add(np.concatenate(keys), np.concatenate(masses))
    return charge


def _lower_three(ratio, t: int, s: NDArray[np.float64], e: NDArray[np.float64], f: NDArray[np.float64], b: float,
                 drop: float = 0.0) -> tuple[_Law, _Law]:
    """The garbled pair (module doc): its (remove, add) laws, with the round-off and the dropped moves'
    masses to subtract."""
    c = float(math.comb(t, 3))
    n_s, n_e, n_f = s.size, e.size, f.size
    plane = n_e * n_f
    floor = drop / (t * n_s * n_s)
    dropped_q = dropped_p = 0.0
    keys, mass = np.zeros(1, dtype=np.int64), np.array([[1.0], [0.0], [0.0], [0.0]])
    moves = _Rows(ratio, s, b)
    for step in range(t):
        rest = t - step - 1
        reach = np.array([math.comb(rest, 3 - m) for m in range(4)], dtype=float) / c
        acc = _Flat(n_s * plane, 4)
        for j, lo, hi in _rows(keys, plane):
            here = float(s[j])
            within = keys[lo:hi] % plane
            ev, fv, rows = e[within // n_f], f[within % n_f], mass[:, lo:hi]
            k, shifts, q, p = moves.nearest(j)  # to the points j..j+k (nearest)
            q, p = np.maximum(q, 0.0), np.maximum(p, 0.0)
            if floor > 0.0:
                moved = q[:, None] * rows.sum(axis=0)[None, :] + p[:, None] * rows[:-1].sum(axis=0)[None, :]
                small = moved < floor
                if np.any(small):
                    lost = q @ (small @ rows.T)
                    lost[1:] += p @ (small @ rows[:-1].T)
                    dropped_q += float(lost[0])
                    dropped_p += float(lost @ reach)
                ti, ci = np.nonzero(~small)
            else:
                ti, ci = (a.ravel() for a in np.indices((k + 1, rows.shape[1])))
            xe = np.minimum(ev[ci] + shifts[ti] * here, e[-1])
            xf = np.minimum(fv[ci] + shifts[ti] * ev[ci], f[-1])
            ie, jf = _locate(e, xe), _locate(f, xf)
            ie = ie + ((xe - e[ie]) > (e[ie + 1] - xe)).astype(np.int64)  # the nearest points
            jf = jf + ((xf - f[jf]) > (f[jf + 1] - xf)).astype(np.int64)
            where = ((j + ti) * n_e + ie) * n_f + jf
            qi, pi = q[ti], p[ti]
            new = qi[None, :] * rows[:, ci]
            new[1:] += pi[None, :] * rows[:-1, ci]
            acc.add(where, new)
        keys, mass = acc.total()
    q_law = np.bincount(keys % n_f, mass[0], minlength=n_f)
    p_law = np.bincount(keys % n_f, mass[3], minlength=n_f) / c
    noise = _noise(t, keys.size) + max(dropped_q, dropped_p)
    only_p = -math.expm1(3.0 * math.log1p(-ratio.singular)) if ratio.singular > 0 else 0.0
    both = (p_law > 0) & (q_law > 0)
    with np.errstate(divide="ignore"):
        loss = np.log(p_law[both]) - np.log(q_law[both])
    remove = _Law(loss, p_law[both], only_p + float(p_law[(p_law > 0) & (q_law == 0)].sum()), noise, noise)
    add = _Law(-loss, q_law[both], float(q_law[(q_law > 0) & (p_law == 0)].sum()), noise, noise)
    return remove, add


def _three_laws(ratio, t: int, level: float, tail: float, high: float, drop: float = 0.0,
                e_high: float | None = None) -> tuple[tuple[_Law, _Law], tuple[_Law, _Law]]:
    """((upper remove, upper add), (lower remove, lower add)) of 3 of ``t`` at grid ratio ``level``
    (:func:`_grids3`), moves below ``drop / (t n_S^2)`` dropped and charged."""
    s, e, f, b = _grids3(ratio, t, level, tail, high, e_high)
    if _three_bytes(s, e, f) > MEMORY_LIMIT:
        raise MemoryError(f"three members of {t}: a grid of {s.size * e.size * f.size} points")
    return _upper_three(ratio, t, s, e, f, b, drop), _lower_three(ratio, t, s, e, f, b, drop)


def _three_bytes(s, e, f) -> float:
    """Bytes of one step's flat accumulation below (four measures), the largest of the level."""
    return 4.0 * 8.0 * s.size * e.size * f.size


def _three_work(ratio, t: int, level: float, tail: float, high: float, e_high: float | None = None) -> float:
    """The grids' measure of one step's moves (:func:`_three_seconds`): at each point of S, the points of S
    reachable (up to ``S + B``) times the points of E in ``[(S^2 - S min(S, B)) / 2, S^2 / 2]`` (as
    :func:`~.two_members._pair_seconds`) times the points of F in ``[0, S^3 / 6]`` (``e_3 <= e_1^3 / 6``)."""
    s, e, f, b = _grids3(ratio, t, level, tail, high, e_high)
    reach = np.searchsorted(s, s + b, side="right") - np.arange(s.size)
    n_e = (np.minimum(np.searchsorted(e, 0.5 * s * s, side="right") + 1, e.size)
           - np.searchsorted(e, 0.5 * s * (s - np.minimum(s, b)), side="left"))
    n_f = np.minimum(np.searchsorted(f, s ** 3 / 6.0, side="right") + 1, f.size)
    return float(np.sum(reach * n_e * n_f.astype(float)))


#: Estimated seconds per unit of :func:`_three_work` and step, upper and lower together: measured 1.2e-8 to
#: 3.5e-8 on a loaded 2-core machine (3 of 5, 6 and 10 at sigma 1, the grid ratios 1.03 and 1.02), and up to
#: 8.4e-8 at 3 of 6, sigma 0.5 and 2 (the cut by F far out is not in the work: its states are a share of
#: the grid's, larger at small noise), with a margin. Only decides whether a level fits (and whether it is
#: within the route's work limit).
_UNIT_SECONDS = 8e-8
#: Estimated seconds a point of S and a step (the loops over the occupied rows, upper and lower).
_ROW_SECONDS = 4e-4


def _three_seconds(ratio, t: int, level: float, tail: float, high: float, e_high: float | None = None) -> float:
    """Estimated seconds of :func:`_three_laws` at ``level`` (from the grids' sizes, never measured); infinite
    when its flat accumulation would exceed :data:`MEMORY_LIMIT` (the level is then refused)."""
    s, e, f, _ = _grids3(ratio, t, level, tail, high, e_high)
    if _three_bytes(s, e, f) > MEMORY_LIMIT:
        return math.inf
    return t * (_UNIT_SECONDS * _three_work(ratio, t, level, tail, high, e_high) + _ROW_SECONDS * s.size)

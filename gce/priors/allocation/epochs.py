"""Epochs of 1 of t: independent allocations composed, with a bracket that holds at any delta.

DP-SGD on shuffled batches runs one allocation of 1 of ``t`` an epoch, reshuffled each epoch: ``E`` independent
allocations, whose pair is the product of the epochs' pairs. Each epoch's pair is bounded per direction by
the laws of :mod:`.one_of_t` (a dominating law above, a garbled one below, on the uniform or the geometric
grid), and the epochs are composed on the batch engine's loss grid (:func:`gce.accounting.batch.compose_laws`):
the composition of dominating pairs dominates the composition, that of garbled pairs is a garbling of it
(post-processing of a product is the product of post-processings; module doc of :mod:`.decomposition`,
"Repeats"). Several ``(mu, t)`` (an Opacus history whose noise or batch count changes) are composed the same
way, each with its own count.

Allowances relative to the target
---------------------------------
The uniform grid's round-off allowance is absolute: about ``t`` times the FFT's error, some ``1e-9`` at
``t = 1000``, charged at infinite loss per epoch. Composed over ``E`` epochs it is ``E`` times that, which
swamps a target of ``1e-8`` (5 epochs of 1,000 steps at sigma 2 fell back to the unamplified bound, 6.54,
where the truth is 0.178). The geometric grid's errors are relative, cell by cell (:mod:`.geometric_grid`,
"Floating point"), so they cost a share of the answer at every delta. So each epoch's clamp is charged at
most ``1e-4 * delta / E`` (the tail), and the laws are chosen and refined by what they give *after*
composition: for each ``(mu, t)`` and direction, both grids are computed, the epochs composed with each, and
the one whose composed bracket is narrower is refined (points doubled, ``rho`` halved), the method predicted
to reach the width first by :func:`~.one_of_t._time_to` (from its observed convergence and its estimated
cost, never a measured time) among those whose composed bracket is not inside another's (:func:`_dominates`),
as many refinements at once as its observed convergence predicts short of the width (:meth:`_Candidates.jump`),
until the composed bracket at the target is within ``rtol``. A law whose
allowance swamps the target simply composes to a wide bracket and is not chosen. The lower laws' far outcomes
(the tilted grid's edges, losses of ``-30`` or ``+130`` with next to no mass) are trimmed within the budget of
:func:`_floor` (:func:`_trimmed`: merged below, lowered above), or their composition would not fit any grid and
the direction's lower end would fall to the geometric grid's (1 of 10,000 over 10 epochs at 1e-8: 2.7 s, was
11 to 18 s refining that grid to its limit).

The loss grid of the composition is fixed from the question (:func:`~.decomposition._loss_interval` at an
eighth of the width, so that its own rounding, ``h`` per copy below and ``O(h^2)`` above, takes a small share
of ``rtol``; for large compositions coarsened towards a quarter of ``rtol`` times the answer's own Chernoff
estimate, :func:`_coarsened`), halved when the laws are at their finest and the bracket is still too wide. A
composition of laws already composed on the grid is not done again (:class:`_Memo`): sigma 0.6, 10,000 x 100
epochs at 1e-5 composes 9 times, was 23.

References
----------
Feldman, Shenfeld, "Privacy amplification by random allocation", arXiv 2502.08202.
Chua, Ghazi, Kamath, Kumar, Manurangsi, Sinha, Zhang, "Balls-and-bins sampling for DP-SGD", AISTATS 2025.
"""

from __future__ import annotations

import math
from dataclasses import replace
from collections.abc import Mapping

import numpy as np

from ...accounting import batch
from ...errors import NumericalLimitError
from ...accounting.curves import GaussianCurve, PrivacyCurve
from ... import effort
from .bracket import (_STOPPED, _TAIL_SHARE, _WHICH, TAIL, AllocationCurve, LowerBound, _at, _fft_seconds, _Law,
                      _may_refine, _target_text, _width)
from .decomposition import _loss_interval, _merged_below, _NoRoom
from .one_of_t import _GROWTH, _METHODS, _time_to
from .uniform_tilted import _tilted_laws, _tilted_seconds
from .tilted import compose_tilted, saddle_epsilon

#: The loss grid's share of the requested width (:func:`_loss_interval`'s is a quarter: here an eighth, since
#: the laws' own rounding takes the rest).
_LOSS_SHARE = 0.5
#: A method whose composed width shrank by less than this factor in its last refinement is not refined again
#: (round-off or the clamp dominate it).
_STALLED = 0.95
#: Where the tilted composition's allowance exceeds this share of its value, the plain one is read beside it.
_PLAIN_SHARE = 1e-3
#: Halvings of the loss grid after the laws are at their finest (each doubles the composition's size), besides
#: those that undo :func:`_coarsened`'s doublings.
_LOSS_HALVINGS = 3
#: The loss grid's rounding as a share of ``rtol`` times the answer (:func:`_coarsened`).
_ANSWER_SHARE = 0.25
#: Compositions whose (untilted) window holds fewer grid points than this keep :func:`_loss_interval`'s grid
#: (:func:`_coarsened`; 600,000 for sigma 0.6, 10,000 x 100 epochs at 1e-5, tilted compositions of 2 million).
_LARGE = 2**19
#: Most refinements of one method taken at once (:meth:`_Candidates.jump`).
_JUMP = 3
#: Most doublings of :func:`_loss_interval`'s grid by :func:`_coarsened`.
_COARSEN = 2

#: The first laws start when this share of their estimates fits: the estimates (every method's law, both
#: directions; each with a margin for a loaded machine) summed were 4 to 8 times the time taken (median 0.17,
#: 36 runs of k of t's blocks, t 5 to 1,000, 2 cores, 2026-12), and a pass that overruns stops at a checkpoint.
_FIRST_SHARE = 0.5

Key = tuple  # (ratio, t)

#: The methods of one epoch's laws: the geometric grid of :mod:`.one_of_t` and the uniform grid tilted
#: (:mod:`.uniform_tilted`: the plain uniform grid's spread pair and garbling, its round-off relative to each
#: entry instead of charged at infinite loss), refined by halving rho, resp. doubling the points.
_EPOCH_METHODS = {"log": _METHODS["log"], "tilted": (_tilted_laws, _METHODS["linear"][1], lambda points: 2 * points,
                                                     _tilted_seconds)}
_EPOCH_GROWTH = {"log": _GROWTH["log"], "tilted": _GROWTH["linear"]}


def epochs_tail(delta: float | None, epochs: int, tail: float = TAIL) -> float:
    """The clamp's P-mass charged per epoch: with a delta target, ``max(tail, 1e-4 * delta)`` for one epoch
    (:func:`~.random_allocation.allocation_curve`), but never above :data:`_TAIL_MOST` of the target (below
    delta 1e-12 the default ``tail`` of 1e-14 would be most of it: at 1e-15 all of it, and the upper end was
    infinite), and at most ``1e-4 * delta / epochs`` for several, so that the epochs' charges together cost at
    most that share of the target.

    >>> epochs_tail(1e-12, 100), epochs_tail(1e-12, 1), epochs_tail(1e-15, 1)
    (1e-18, 1e-14, 1e-17)
    """
    if delta is None or not delta > 0:
        return tail
    wide = min(max(tail, _TAIL_SHARE * delta), _TAIL_MOST * delta)
    return wide if epochs == 1 else min(wide, _TAIL_SHARE * delta / epochs)


#: The largest share of a target delta that one epoch's clamp may be charged (:func:`epochs_tail`).
_TAIL_MOST = 1e-2


class _Candidates:
    """One ``(ratio, t)``'s laws per direction and method: the latest of each method, its parameter, the
    history of (composed width, estimated seconds) with the refinements between its entries, and the methods
    past their limits."""

    def __init__(self, ratio, t: int, tail: float):
        self.ratio, self.t, self.tail = ratio, t, tail
        self.params = {w: {m: _EPOCH_METHODS[m][1] for m in _EPOCH_METHODS} for w in _WHICH}
        self.laws: dict[str, dict[str, tuple[_Law, _Law, str]]] = {w: {} for w in _WHICH}
        self.history = {w: {m: [] for m in _EPOCH_METHODS} for w in _WHICH}
        self.steps = {w: {m: [] for m in _EPOCH_METHODS} for w in _WHICH}  # refinements before each entry
        self.since = {w: {m: 0 for m in _EPOCH_METHODS} for w in _WHICH}  # refinements since the last entry
        self.spent = {w: set() for w in _WHICH}

    def seconds(self, which: str, method: str) -> float:
        return _EPOCH_METHODS[method][3](self.ratio, self.t, self.params[which][method], self.tail, which)

    def compute(self, which: str, method: str) -> None:
        try:
            self.laws[which][method] = _EPOCH_METHODS[method][0](self.ratio, self.t, self.params[which][method],
                                                           self.tail, which)
        except NumericalLimitError:  # beyond the method's limit: its last laws stay the candidates
            self.spent[which].add(method)

    def refine(self, which: str, method: str, times: int = 1) -> None:
        for _ in range(times):
            self.params[which][method] = _EPOCH_METHODS[method][2](self.params[which][method])
        self.since[which][method] += times

    def record(self, which: str, method: str, width: float) -> None:
        """A composed width of the method's latest laws (its estimated seconds beside it)."""
        self.history[which][method].append((width, self.seconds(which, method)))
        self.steps[which][method].append(self.since[which][method])
        self.since[which][method] = 0

    def factor(self, which: str, method: str) -> float | None:
        """The width's observed factor per refinement over the last two entries (None before a refinement
        between two finite widths)."""
        seen, steps = self.history[which][method], self.steps[which][method]
        if len(seen) < 2 or steps[-1] < 1 or not (seen[-2][0] > 0 and math.isfinite(seen[-2][0])) or \
                not math.isfinite(seen[-1][0]):
            return None
        return (seen[-1][0] / seen[-2][0]) ** (1.0 / steps[-1])

    def per_step(self, which: str, method: str) -> list[tuple[float, float]]:
        """The history as :func:`~.one_of_t._time_to` reads it: the last entry's predecessor as if one
        refinement before it."""
        seen, factor = self.history[which][method], self.factor(which, method)
        if factor is None or factor <= 0 or self.steps[which][method][-1] == 1:
            return seen
        return seen[:-2] + [(seen[-1][0] / factor, seen[-2][1]), seen[-1]]

    def jump(self, which: str, method: str, target: float) -> int:
        """Refinements to take at once (:data:`_JUMP` at most): those the observed factor predicts before
        the width reaches ``target``, rounded down (so never past the refinement that the prediction says
        reaches it), else one."""
        factor = self.factor(which, method)
        if factor is None or not 0 < factor < _STALLED:
            return 1
        need = math.log(self.history[which][method][-1][0] / target) / -math.log(max(factor, 0.05))
        return int(min(max(math.floor(need), 1), _JUMP))


class _Memo:
    """The compositions of one :func:`_refine`, per direction and side, keyed by the loss grid and the laws
    composed (by identity; the laws are held, so that no identity is reused): a composition of laws already
    composed (the winner of a pass's trials, read again as the pass's curve; a direction whose laws did not
    change since the last pass) is taken as it is, whatever its tilt's centre (the tilt decides accuracy, never
    validity: :mod:`.tilted`). Only the entries used in the last pass are kept (:meth:`prune`)."""

    def __init__(self) -> None:
        self.entries: dict[tuple, tuple] = {}
        self.used: set[tuple] = set()

    def get(self, key: tuple, build):
        if key not in self.entries:
            self.entries[key] = build()
        self.used.add(key)
        return self.entries[key][0]

    def prune(self) -> None:
        self.entries = {key: value for key, value in self.entries.items() if key in self.used}
        self.used = set()


def _compose(choice: Mapping[Key, dict[str, tuple[_Law, _Law]]], above: Mapping[Key, int],
             below: Mapping[Key, int], interval: float, delta: float | None, epsilon: float | None,
             centre: float | None, which: str, plain: bool = False, memo: _Memo | None = None):
    """Direction ``which`` of the epochs composed with the chosen laws, tilted towards the target epsilon, or
    ``centre`` (an estimate of the epsilon at the target delta; the saddle point's bound when None)
    (:mod:`.tilted`): (its upper curve, its :class:`LowerBound` parts). A lower composition that does not fit
    certifies nothing (0); an upper one raises :class:`NumericalLimitError`. With ``plain``, the untilted
    composition of the upper laws beside the tilted one where that one is loose (:class:`_WithPlain`). With
    ``memo``, laws already composed on this loss grid are not composed again (:class:`_Memo`)."""
    memo = _Memo() if memo is None else memo
    copies = sum(below.values())
    floor = _floor(delta, max(sum(above.values()), copies))
    held_up = tuple(choice[key][which][0] for key in above)
    key_up = ("upper", which, interval, tuple(id(law) for law in held_up), tuple(above.values()))
    target = [epsilon if epsilon is not None else centre]

    def ups_of():
        return [batch.loss_law(np.maximum(choice[key][which][0].loss, floor), choice[key][which][0].mass, count,
                               interval, upper=True, infinite=choice[key][which][0].infinite)
                for key, count in above.items()]

    def build_upper():
        ups = ups_of()
        if target[0] is None:
            target[0] = saddle_epsilon(ups, interval, delta)
        tilted = compose_tilted(ups, interval, target[0], upper=True)
        # the plain composition beside it, built only where the tilted one's allowance is a noticeable share
        # of its value (far below the tilt's centre): each is valid, so either at each eps is
        return (tilted, _WithPlain(tilted, lambda: batch.compose_laws([ups], [ups], interval).direction(0))), held_up

    upper, with_plain = memo.get(key_up, build_upper)
    parts = [(GaussianCurve(0.0), 0.0, 0.0)]  # nothing certified below without laws (or room for them)
    slack = max((choice[key][which][1].slack for key in below), default=0.0)
    other = max((choice[key][which][1].slack_other for key in below), default=0.0)
    factor = copies * (1.0 + max(slack, other)) ** max(copies - 1, 0)
    if below:
        held_low = tuple(choice[key][which][1] for key in below)
        key_low = ("lower", which, interval, tuple(id(law) for law in held_low), tuple(below.values()), floor)

        def build_lower():
            if target[0] is None:
                target[0] = saddle_epsilon(ups_of(), interval, delta)
            merged = {key: _trimmed(choice[key][which][1], floor) for key in below}
            lows = [batch.loss_law(merged[key].loss, merged[key].mass, count, interval, upper=False,
                                   infinite=merged[key].infinite) for key, count in below.items()]
            try:
                return compose_tilted(lows, interval, target[0], upper=False), held_low
            except NumericalLimitError:
                return None, held_low

        lower = memo.get(key_low, build_lower)
        if lower is not None:
            parts.append((lower, slack * factor, other * factor))
    return (with_plain if plain else upper), parts


class _WithPlain(PrivacyCurve):
    """An upper curve tilted towards the target (:class:`~.tilted.TiltedCurve`) and, where its allowance is
    more than :data:`_PLAIN_SHARE` of its value, the least of it and the plain (untilted) composition of the
    same laws, built on first need (each is a valid upper curve, so the least of any of them at each eps is)."""

    def __init__(self, tilted, build):
        self._tilted, self._build, self._plain = tilted, build, None
        self.delta_floor = tilted.delta_floor
        self.size = tilted.size

    def _delta(self, eps):
        out = np.atleast_1d(self._tilted.delta(eps)).astype(float)
        need = self._tilted._allowance(eps) > _PLAIN_SHARE * out
        if np.any(need):
            if self._plain is None:
                try:
                    self._plain = self._build()
                except NumericalLimitError:  # the plain window is the wider: the tilted curve alone
                    self._plain = False
            if self._plain is not False:
                out[need] = np.minimum(out[need], np.atleast_1d(self._plain.delta(eps[need])))
        return out


def _floor(delta: float | None, copies: int) -> float:
    """The loss below which one epoch's outcomes are raised to it (above) or merged into one (below): their
    P-mass is at most ``e^floor`` an epoch (``P = Q e^L``), ``1e-6`` of the target over all the epochs, so
    moving them moves the composed delta by at most that much (raising a loss only raises delta; merging is
    a post-processing); they would widen the composition's window (losses of ``-40`` an epoch)."""
    return max(math.log(1e-6 * (delta if delta is not None and delta > 0 else 1e-12) / max(copies, 1)), -700.0)


def _trimmed(law: _Law, floor: float) -> _Law:
    """A garbled law with its far outcomes trimmed so that they do not widen the composition's window beyond
    any grid (the tilted uniform grid's lower laws have entries whose allowance is most of them, with losses
    of ``-30`` or ``+130`` and next to no mass), each side within half of :func:`_floor`'s budget ``e^floor``
    of first-measure mass an epoch, read from the law's own masses (never a larger share of the target than
    :func:`_floor`'s argument grants):

    - below, the outcomes under the least loss whose outcomes below it hold more than half the budget are
      merged into one (:func:`_merged_below`, a post-processing at any floor; at least at ``floor``);
    - above, the losses over the least loss whose outcomes above it hold at most half the budget are lowered
      to it, their masses kept. A composition's lower delta ``sum_s P(s) (1 - e^(eps - s))_+`` (the batch
      engine's lower laws are rounded down the same way) only falls when a loss falls, so the lower curve stays
      certified; the composed delta moves by at most the P-mass moved, ``copies`` times half the budget.
    """
    budget = 0.5 * math.exp(floor)
    order = np.argsort(law.loss, kind="stable")
    loss, mass = law.loss[order], law.mass[order]
    up_to = np.cumsum(mass)  # the mass at or below each loss, in increasing order of loss
    kept = np.flatnonzero(up_to > budget)
    low = max(floor + math.log(0.5), float(loss[kept[0]])) if kept.size else floor + math.log(0.5)
    above = np.cumsum(mass[::-1])[::-1]  # the mass at or above each loss
    heavy = np.flatnonzero(above - mass > budget)  # losses with more than the budget strictly above them
    if heavy.size and heavy[-1] + 1 < loss.size:
        ceiling = float(loss[heavy[-1] + 1])
        if ceiling > low:
            law = replace(law, loss=np.minimum(law.loss, ceiling))
    return _merged_below(law, low)


def _direction_bracket(upper, parts, delta, epsilon) -> tuple[float, float]:
    """(lower, upper) of one direction of a composition at the target."""
    return _at(upper, LowerBound(parts), delta, epsilon)


def compose_epochs(above: Mapping[Key, int], below: Mapping[Key, int], rtol: float, delta: float | None,
                   epsilon: float | None, tail: float) -> AllocationCurve:
    """Epochs of 1-of-t allocations composed (module doc): ``above`` the counts of the ``(ratio, t)`` whose
    dominating pairs are composed for the upper curve, ``below`` those whose garbled pairs are composed for the
    lower one (the same mapping for a plain run of epochs; an Opacus history bounds a mixed epoch by its least
    noise above and its most below). Refined until the bracket at the target is within ``rtol``, or the time
    limit stops it (:func:`~.bracket._may_refine`; the description then says so). ``tail`` is the clamp's
    charge per epoch (:func:`epochs_tail`).

    Raises
    ------
    NumericalLimitError
        When no grid fits even the first step for some ``(ratio, t)``.
    _NoRoom
        When the time limit leaves no room for the first laws (the caller answers in closed form).
    """
    keys = list(dict.fromkeys([*above, *below]))
    state = {key: _Candidates(key[0], key[1], tail) for key in keys}
    first = _FIRST_SHARE * sum(state[key].seconds(which, method) for key in keys for which in _WHICH
                               for method in _EPOCH_METHODS)
    if not _may_refine(first, "allocation epochs (first laws)", delta, epsilon, math.inf):
        raise _NoRoom("the time limit leaves no room for the first laws")
    done: list = []  # the last completed pass: [curve]
    try:
        with effort.interruptible():  # a step that overruns its estimate (a loaded machine) stops at a checkpoint
            _refine(state, keys, above, below, rtol, delta, epsilon, done)
    except effort.Overdue:
        if not done:
            raise _NoRoom("the time limit passed during the first laws") from None
        effort.current().stop(f"allocation refinement (epochs) at {_target_text(delta, epsilon)}: a step overran "
                              f"its estimate")
        curve = done[0]
        if _STOPPED not in curve.description:
            curve.description += _STOPPED
    return done[0]


def _refine(state, keys, above, below, rtol: float, delta: float | None, epsilon: float | None, done: list) -> None:
    """The schedule of :func:`compose_epochs` (module doc); each completed pass's curve is left in ``done``."""
    for key in keys:
        for which in _WHICH:
            for method in _EPOCH_METHODS:
                state[key].compute(which, method)
            if not state[key].laws[which]:
                raise NumericalLimitError(f"random allocation: neither grid fits 1 of {key[1]} ({key[0].label})")
    interval = _loss_interval([((_best(state[key], "remove")[0], _best(state[key], "add")[0]), count)
                               for key, count in above.items()] or
                              [((_best(state[key], "remove")[0], _best(state[key], "add")[0]), 1) for key in keys],
                              _LOSS_SHARE * rtol, delta, epsilon)
    interval, halvings = _coarsened(interval, state, above, rtol, delta, epsilon)
    fresh = {(key, which, method) for key in keys for which in _WHICH for method in _EPOCH_METHODS}
    results: dict[tuple, tuple[float, float]] = {}  # (key, which, method): its composed bracket
    choice = {key: {w: _best(state[key], w) for w in _WHICH} for key in keys}
    centre = None
    memo = _Memo()
    while True:
        # per direction, per key, the method whose laws give the narrowest composed bracket (the others as
        # chosen); only the laws computed since the last pass are composed again
        for which in _WHICH:
            for key in keys:
                for method, laws in state[key].laws[which].items():
                    if (key, which, method) not in fresh:
                        continue
                    effort.checkpoint()
                    trial = {k: dict(v) for k, v in choice.items()}
                    trial[key][which] = laws[:2]
                    try:
                        bracket = _direction_bracket(*_compose(trial, above, below, interval, delta, epsilon,
                                                               centre, which, memo=memo), delta, epsilon)
                    except NumericalLimitError:  # its composition does not fit: not a candidate
                        bracket = (0.0, math.inf)
                    results[(key, which, method)] = bracket
                    state[key].record(which, method, _width(*bracket))
                mine = {m: results[(key, which, m)] for m in state[key].laws[which]}
                up_method = min(mine, key=lambda m: mine[m][1])
                low_method = max(mine, key=lambda m: mine[m][0])
                choice[key][which] = (state[key].laws[which][up_method][0], state[key].laws[which][low_method][1])
        fresh = set()
        effort.checkpoint()
        composed, parts = zip(*(_compose(choice, above, below, interval, delta, epsilon, centre, w, plain=True,
                                         memo=memo) for w in _WHICH))
        memo.prune()
        brackets = [_direction_bracket(composed[d], parts[d], delta, epsilon) for d in range(2)]
        low, high = max(b[0] for b in brackets), max(b[1] for b in brackets)
        centre = high if math.isfinite(high) else centre
        width = _width(low, high)
        labels = "; ".join(f"{key[0].label}, 1 of {key[1]}: " + ", ".join(
            f"{w} {_label(state[key], w, choice[key][w])}" for w in _WHICH) for key in keys)
        text = f"{sum(above.values())} epoch(s) of 1 of t composed ({labels}; loss grid {interval:.3g})"
        done[:] = [AllocationCurve(composed, LowerBound([part for direction in parts for part in direction]), text,
                                   directions=(composed[0], composed[1]))]
        if width <= rtol:
            return
        pending = []  # (key, which, method): the directions that decide and are too wide
        for d, which in enumerate(_WHICH):
            if not (brackets[d][1] > low and _width(*brackets[d]) > rtol / 2):
                continue
            for key in keys:
                for m in state[key].laws[which]:  # a method whose composed width stopped shrinking is done
                    seen = state[key].history[which][m]
                    if len(seen) >= 2 and seen[-1][0] > _STALLED * seen[-2][0]:
                        state[key].spent[which].add(m)
                usable = [m for m in state[key].laws[which] if m not in state[key].spent[which]]
                usable = [m for m in usable if not any(_dominates(results[(key, which, other)],
                                                                  results[(key, which, m)]) for other in usable)]
                if usable:
                    method = min(usable, key=lambda m: _time_to(state[key].per_step(which, m), rtol / 2,
                                                                 _EPOCH_GROWTH[m]))
                    pending.append((key, which, method))
        if not pending:
            if halvings >= _LOSS_HALVINGS:
                return
            if not _may_refine(_compose_seconds(composed) * 2, "allocation epochs (loss grid)", delta, epsilon, width):
                done[0].description += _STOPPED
                return
            interval, halvings = interval / 2, halvings + 1
            fresh = {(key, which, method) for key in keys for which in _WHICH for method in state[key].laws[which]}
            continue
        estimate = 0.0
        for key, which, method in pending:
            state[key].refine(which, method, state[key].jump(which, method, rtol / 2))
            estimate += state[key].seconds(which, method)
        if not _may_refine(estimate + _compose_seconds(composed), "allocation refinement (epochs)", delta, epsilon,
                           width):
            done[0].description += _STOPPED
            return
        for key, which, method in pending:
            state[key].compute(which, method)
            fresh.add((key, which, method))


def _coarsened(interval: float, state: Mapping[Key, _Candidates], above: Mapping[Key, int],
               rtol: float, delta: float | None, epsilon: float | None) -> tuple[float, int]:
    """The loss grid from the answer's own scale: (interval, -doublings). The lower composition's rounding
    lowers its epsilon by about ``copies * h / 2`` (each copy's loss rounded down by up to ``h``; measured 0.3 to
    0.4 of ``copies * h``), so ``h = share * rtol * epsilon / copies`` (:data:`_ANSWER_SHARE`) costs that share
    of the width; :func:`_loss_interval`'s scale (the epochs' epsilon as ``sqrt(copies)`` times one epoch's)
    sits far from the answer at some settings (a grid 8 times finer than needed for sigma 0.6, 10,000 x 100
    epochs at 1e-5; 8 times coarser for sigma 3, 10,000 x 100 epochs at 1e-12). The answer's epsilon at the
    target delta is Chernoff's bound (:func:`~.tilted.saddle_epsilon`, at least the truth) of the first upper
    laws, the least over the methods (a loose method's is far above: 2.7 for 0.21) and the most over the
    directions; the grid is only ever coarsened, by at most :data:`_COARSEN` doublings (undone by halvings where
    the bracket asks, as the module doc says), and only where the composition is large (:data:`_LARGE` points
    or more in the least of the methods' windows, :func:`~gce.accounting.batch._window`: there its cost decides
    the time; below it the finer grid's tighter ends cost little). A function of the question only."""
    copies = sum(above.values())
    if copies == 0 or epsilon is not None or delta is None or not delta > 0:
        return interval, 0
    floor = _floor(delta, copies)
    scale, size = 0.0, 0
    for which in _WHICH:
        least, smallest = math.inf, math.inf
        for method in _EPOCH_METHODS:
            if any(method not in state[key].laws[which] for key in above):
                continue
            laws = [(state[key].laws[which][method][0], count) for key, count in above.items()]
            ups = [batch.loss_law(np.maximum(law.loss, floor), law.mass, count, interval, upper=True,
                                  infinite=law.infinite) for law, count in laws]
            least = min(least, saddle_epsilon(ups, interval, delta))
            lo, hi = batch._window(ups, interval)[:2]
            smallest = min(smallest, hi - lo + 1)
        scale, size = max(scale, least), max(size, smallest)
    if size < _LARGE or not math.isfinite(scale):
        return interval, 0
    wanted = _ANSWER_SHARE * rtol * scale / copies
    doublings = 0
    while doublings < _COARSEN and 2.0 * interval <= min(wanted, 0.05):
        interval, doublings = 2.0 * interval, doublings + 1
    return interval, -doublings


def _dominates(one: tuple[float, float], other: tuple[float, float]) -> bool:
    """Whether the composed bracket ``one`` is inside ``other`` and narrower: ``other``'s method is then not
    refined while ``one``'s may be (both are predicted to converge alike before they are observed, and the
    cost estimates of the tilted uniform grid's heavy split run low: 7.6 s where 0.67 s was estimated for
    P||Q of 1 of 10,000 at sigma 0.6 on 8,192 cells)."""
    return one[0] >= other[0] and one[1] <= other[1] and one != other


def _best(candidates: _Candidates, which: str) -> tuple[_Law, _Law]:
    """A first choice: the geometric grid's laws where they were computed, else the tilted uniform grid's."""
    laws = candidates.laws[which]
    return (laws.get("log") or laws["tilted"])[:2]


def _label(candidates: _Candidates, which: str, chosen: tuple[_Law, _Law]) -> str:
    names = {id(laws[0]): laws[2] for laws in candidates.laws[which].values()}
    lows = {id(laws[1]): laws[2] for laws in candidates.laws[which].values()}
    up, low = names.get(id(chosen[0]), "?"), lows.get(id(chosen[1]), "?")
    return up if up == low else f"upper {up}, lower {low}"


def _compose_seconds(composed) -> float:
    """Estimated seconds of one composition like ``composed`` (its grids' sizes: both directions, above and
    below, and the trials of each law)."""
    return 8.0 * sum(_fft_seconds(curve.size) for curve in composed)

"""``GceAccountant``: dp-accounting's ``PrivacyAccountant`` interface on gce's engines (docs/design.md,
"From dp-accounting").

Code that accounts with dp-accounting switches by one line::

    accountant = GceAccountant()          # was: dp_accounting.pld.PLDAccountant()
    accountant.compose(event, count)
    accountant.get_epsilon(target_delta)  # a certified upper bound

Each composed event is read by :func:`gce.bridges.dp_events.read_dp_event` into guarantees (and the
records of :mod:`gce.bridges.event_laws` for events no guarantee holds), accumulated as one multiset; an
answer composes the whole multiset at the accuracy ``rtol`` (:mod:`gce.effort`), so the same events give
the same numbers on any machine:

* subsampled Gaussian mechanisms (DP-SGD: ``PoissonSampledDpEvent`` of ``GaussianDpEvent``), alone or with
  unsampled Gaussians: the Poisson-subsampling engine
  (:func:`gce.priors.allocation.poisson_curve`: dominating pairs above, garblings below, grids refined
  until the bracket at the target is ``rtol`` wide, docs/design.md "Random allocation");
* a random allocation (``RandomAllocationDpEvent``; epochs of one ``(noise_multiplier, num_selected,
  num_steps)``): :func:`gce.priors.allocation.allocation_curve`'s bracket itself; epochs at several
  ``(noise_multiplier, num_steps)`` of one selected step each: composed as the Opacus bridge's shuffled
  epochs (:func:`gce.bridges.opacus.epochs_curve`). Nothing else composes with a random allocation here
  (refused when composed, naming it);
* a discrete Laplace mechanism of sensitivity >= 2 or sampling without replacement, with anything that has a
  privacy-loss distribution: every law on one grid (:func:`gce.bridges.event_laws.law_bracket`);
* anything else: :func:`gce.compose` (the tightest compatible theorem; ``batch`` rows carry their own
  certified lower curve; exact rows are their own lower end); where no row has a lower curve, the
  batch engine's rounded-down laws (:func:`gce.accounting.batch.lower_at`) on dp-accounting's grid and
  two halvings of it, zCDP entries replaced by the Gaussian mechanism of the same rho (a rho-zCDP
  mechanism: BS16 Prop. 1.6, so the exact worst case is at least its).

``get_epsilon`` / ``get_delta`` return the certified upper end; ``get_epsilon_bracket`` /
``get_delta_bracket`` return ``(lower, upper)`` around the exact value for the guarantees read (for
k-ary randomized response with k > 2 the guarantee is looser than the event: dp_events' module doc).
Answers kept
------------
Each answer is kept for the multiset held, and so is the curve it was read on (the :data:`KEPT` most
recent; the Poisson-subsampling engine's and the allocation engine's: each certified at every target, its
upper curve a valid bound everywhere and its lower one too, only refined for its own target). The same
question again is answered as before; another target is read on the kept curves first and answered there
when the bracket read is within ``rtol`` (the narrowest), else composed. The privacy curve is steep
(``-d log delta / d epsilon`` about 5 to 15 in DP-SGD's range), so a delta bracket ``rtol`` wide asks a grid
finer than an epsilon bracket ``rtol`` wide: a curve refined for ``get_delta`` answers ``get_epsilon`` at
that delta (and nearby) without composing, while ``get_delta`` after ``get_epsilon`` reads the kept curve
when it is narrow enough there (1,000 steps at q 0.01: the Poisson engine's ends both err to second order
in its lattice, poisson's module doc, "Levelled") and composes otherwise (10,000 steps at q 0.001: a bracket
about 6% wide read, composed on a lattice about 3.5 times finer). Measured (``benchmarks/
bench_accountant_reuse.py``), the first ``get_delta`` against the first ``get_epsilon``: 1.1, 4.4 and 2.5
times on its three rows (13, 8 and 22 times before the lower laws were levelled). Composing an event drops what was kept: a
Poisson history of 10,000 steps is composed afresh in tens of milliseconds (faster than dp-accounting's
``PLDAccountant`` composes one more step onto its distribution), so only the Opacus shuffled accountant keeps
what a longer history still needs (:mod:`gce.bridges.opacus`, "Answers kept").

``ADD_OR_REMOVE_ONE`` (the default: gce's guarantees are stated for add/remove of the record) and
``REPLACE_ONE`` (for ``SampledWithoutReplacementDpEvent``, read there only; Poisson sampling and random
allocation are refused there) are accepted; for sampling without replacement the bracket is around the
symmetrised dominating pair read (event_laws' module doc), which dp-accounting's RDP bound is above.

References
----------
BS16: Bun, Steinke, "Concentrated Differential Privacy" (Prop. 1.6).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from .. import effort
from ..accounting import batch, kinds
from ..accounting import dp_accounting as _dpa
from ..accounting.guarantees import GaussianDP, Guarantee
from ..accounting.pld import DISCRETIZATION
from ..accounting.theorems import compose_within
from ..errors import InvalidParameterError, NumericalLimitError, UnsupportedCombinationError
from ..validation import MAX_COUNT, as_float, is_integer, shown
from ..accounting.curves import GaussianCurve
from ..priors.allocation import MU_LIMIT, AllocationCurve, LowerBound, allocation_curve
from ..priors.allocation.bracket import _Least
from ..priors.allocation.epochs import compose_epochs, epochs_tail
from ..priors.allocation.ratios import GaussianRatio
from .dp_events import UnsupportedEventError, check_combination, is_dp_event, read_dp_event
from .event_laws import RECORDS, RandomAllocation, law_bracket
from .opacus import MAX_EPOCH, _closed_forms, _engine, _EngineFailed, epochs_curve, poisson_history

__all__ = ["GceAccountant", "EventRefusedError", "LOWER_HALVINGS", "KEPT"]

_pa = _dpa.privacy_accountant()

#: Curves kept for the multiset held (the most recent; module doc, "Answers kept").
KEPT = 8
#: Halvings of dp-accounting's grid tried for the lower end when no composition row has a lower curve.
LOWER_HALVINGS = 2


class EventRefusedError(UnsupportedEventError, _pa.UnsupportedEventError):
    """:meth:`GceAccountant.compose`'s refusal of an event: dp-accounting's ``UnsupportedEventError`` (what
    every ``PrivacyAccountant`` raises) and gce's :class:`~gce.bridges.dp_events.UnsupportedEventError` (an
    ``InvalidParameterError``), whose ``field`` names the place in the tree (``event.events[3].noise_multiplier``)
    or ``count``; its message names the place and a shortened value, never the whole event."""


def _gaussian_parts(ms: tuple[tuple[Guarantee, int], ...]) -> list[tuple[float, float, int]] | None:
    """``[(mu, rate, count)]`` when every entry is a Gaussian mechanism (or GDP), Poisson-subsampled or
    not, and at least one is subsampled: the Poisson-subsampling engine's input; None otherwise."""
    parts, sampled = [], False
    for guarantee, count in ms:
        rate, inner = kinds.sampling(guarantee)
        family = kinds.family(inner)
        if family is None or family[0] != "gaussian":  # (a Subsampled inner has no gaussian family either)
            return None
        sampled |= rate < 1.0
        parts.append((float(kinds.gdp_mu(inner)), rate, int(count)))
    return parts if sampled else None


def _as_lower_input(ms: tuple[tuple[Guarantee, int], ...]) -> tuple[tuple[Guarantee, int], ...]:
    """The multiset with each ``ZCDP(rho)`` as ``GaussianDP(sqrt(2 rho))``, a rho-zCDP mechanism (BS16
    Prop. 1.6): the exact worst case of the stated guarantees is at least that of this multiset."""
    return tuple((GaussianDP(math.sqrt(2.0 * kinds.zcdp_rho(g))) if _is_zcdp(g) else g, n) for g, n in ms)


def _is_zcdp(guarantee: Guarantee) -> bool:
    family = kinds.family(guarantee)
    return family is not None and family[0] == "zcdp"


class GceAccountant(_pa.PrivacyAccountant):
    """A dp-accounting ``PrivacyAccountant`` whose answers are gce's certified brackets (module doc).

    Parameters
    ----------
    neighboring_relation : dp_accounting.NeighboringRelation
        ``ADD_OR_REMOVE_ONE`` (the default) or ``REPLACE_ONE`` (module doc); any other is refused.
    rtol : float
        The accuracy asked of each bracket (:data:`gce.effort.DEFAULT_RTOL` by default).
    time_limit : float or None
        Seconds one answer may take (None: no cap). The cap only stops refinements; an answer it
        stopped is still certified, wider, and :attr:`time_limit_reached` says so.

    Attributes
    ----------
    engine : str
        What gave the last answer (``"poisson subsampling"`` or ``"compose: <theorem>"``).
    time_limit_reached : bool
        Whether the cap stopped any step of the last answer.
    """

    def __init__(self, neighboring_relation: Any = None, rtol: float = effort.DEFAULT_RTOL,
                 time_limit: float | None = None) -> None:
        relation = _pa.NeighboringRelation
        if neighboring_relation is None:
            neighboring_relation = relation.ADD_OR_REMOVE_ONE
        if neighboring_relation not in (relation.ADD_OR_REMOVE_ONE, relation.REPLACE_ONE):
            raise InvalidParameterError("neighboring_relation", f"gce reads events for add/remove of a record "
                                                                f"(ADD_OR_REMOVE_ONE) or its replacement "
                                                                f"(REPLACE_ONE), got {shown(neighboring_relation)}")
        super().__init__(neighboring_relation)
        self.rtol = effort.check_rtol(rtol)
        if time_limit is not None and (not isinstance(time_limit, (int, float)) or isinstance(time_limit, bool)
                                       or not time_limit > 0):
            raise InvalidParameterError("time_limit", f"must be a number of seconds > 0 or None, got "
                                                      f"{shown(time_limit)}")
        self.time_limit = None if time_limit is None else float(time_limit)
        self._counts: Counter[Guarantee] = Counter()
        self._answers: dict[tuple[str, float], tuple[float, float, str, bool]] = {}
        #: The curves the answers so far composed for the multiset held, with their engine's name (module
        #: doc, "Answers kept"); emptied when an event is composed.
        self._kept: list[tuple[Any, str]] = []
        self.engine = ""
        self.time_limit_reached = False

    # -- dp-accounting's interface

    def compose(self, event: Any, count: int = 1) -> "GceAccountant":
        """Account for ``event`` run ``count`` times (dp-accounting's ``compose``); returns the accountant.

        Raises
        ------
        EventRefusedError
            The event (or ``count``) is one gce does not read: dp-accounting's ``UnsupportedEventError`` and
            gce's, ``field`` naming the place in the tree, the message a few hundred characters at most.
        TypeError
            ``event`` is no ``DpEvent``.
        """
        if not is_dp_event(event):
            raise TypeError(f"`event` must be `DpEvent`. Found {type(event).__name__}.")
        try:
            ms = self._read(event, count)
        except InvalidParameterError as error:
            raise EventRefusedError(error.field, error.detail) from None
        if count:
            try:  # dp-accounting's ledger of what was composed (``ledger``)
                self._ledger.compose(event, int(count))
            except (ValueError, TypeError) as error:  # its own refusals: a self-composition of count 0 under
                if ms:                                  # the top (nothing runs), or a count that is no int
                    raise EventRefusedError("event", f"dp-accounting's ledger of events refuses it "
                                                     f"({shown(str(error), 100)[1:-1]})") from None
        self._add(ms, int(count))
        return self

    def _read(self, event: Any, count: int) -> dict[Guarantee, int]:
        """The multiset of ``event``, checked against what is held (:func:`.dp_events.check_combination`) and
        against :data:`gce.validation.MAX_COUNT` runs in all."""
        if not is_integer(count) or not 0 <= count <= MAX_COUNT:
            raise InvalidParameterError("count", f"must be an integer in 0..2**53, got {shown(count)}")
        ms = read_dp_event(event, self.neighboring_relation.name)
        check_combination(self._counts, ms)
        if any(self._counts[g] + n * int(count) > MAX_COUNT for g, n in ms.items()):
            raise InvalidParameterError("count", f"the accountant would hold a mechanism run more than 2**53 times "
                                                 f"in all (count {int(count):,})")
        return ms

    def _add(self, ms: dict[Guarantee, int], count: int) -> None:
        if count:
            for guarantee, n in ms.items():
                self._counts[guarantee] += n * count
            self._answers.clear()
            self._kept.clear()

    def _maybe_compose(self, event: Any, count: int, do_compose: bool) -> Any:
        try:
            ms = self._read(event, count)
        except InvalidParameterError as error:
            return self.CompositionErrorDetails(invalid_event=event, error_message=str(error))
        if do_compose:
            self._add(ms, int(count))
        return None

    def get_epsilon(self, target_delta: float) -> float:
        """The certified upper bound on epsilon at ``target_delta`` for everything composed so far."""
        return self.get_epsilon_bracket(target_delta)[1]

    def get_delta(self, target_epsilon: float) -> float:
        """The certified upper bound on delta at ``target_epsilon`` for everything composed so far."""
        return self.get_delta_bracket(target_epsilon)[1]

    # -- gce's brackets

    @property
    def guarantees(self) -> dict[Guarantee, int]:
        """The multiset composed so far (what :func:`gce.compose` would take, unless it holds records of
        :mod:`gce.bridges.event_laws`: events that no guarantee holds)."""
        return dict(self._counts)

    def get_epsilon_bracket(self, target_delta: float) -> tuple[float, float]:
        """``(lower, upper)``: the exact epsilon at ``target_delta`` of the guarantees composed lies between."""
        if not isinstance(target_delta, (int, float)) or isinstance(target_delta, bool) \
                or not 0.0 < target_delta < 1.0:
            raise InvalidParameterError("target_delta", f"must be a number in (0, 1), got {shown(target_delta)}")
        return self._answer("epsilon", float(target_delta))

    def get_delta_bracket(self, target_epsilon: float) -> tuple[float, float]:
        """``(lower, upper)``: the exact delta at ``target_epsilon`` of the guarantees composed lies between."""
        if not isinstance(target_epsilon, (int, float)) or isinstance(target_epsilon, bool) \
                or not 0.0 <= as_float(target_epsilon) < math.inf:
            raise InvalidParameterError("target_epsilon", f"must be a finite number >= 0, got {shown(target_epsilon)}")
        return self._answer("delta", float(target_epsilon))

    def _answer(self, what: str, target: float) -> tuple[float, float]:
        key = (what, target)
        if key not in self._answers:
            kept = self._reuse(what, target)
            if kept is not None:
                self._answers[key] = (*kept, False)
            else:
                deadline = effort.Deadline(self.time_limit)
                try:
                    with effort.within(deadline):
                        low, high, engine, curve = _engine(lambda: self._compute(what, target, deadline),
                                                           refusals=False)
                except _EngineFailed as failure:  # an extreme value no engine here reaches
                    raise NumericalLimitError(f"the events composed are beyond what gce's engines compute at "
                                              f"{'delta' if what == 'epsilon' else 'epsilon'} {target:g} "
                                              f"({failure.why})") from None
                self._answers[key] = (low, high, engine, deadline.reached)
                if curve is not None and not deadline.reached:
                    self._kept = [*self._kept[1 - KEPT:], (curve, engine)]
        low, high, self.engine, self.time_limit_reached = self._answers[key]
        return low, high

    def _reuse(self, what: str, target: float) -> tuple[float, float, str] | None:
        """The narrowest bracket at ``target`` read on a kept curve of the multiset held, when it is within
        ``rtol`` (module doc, "Answers kept"); None when no kept curve is that narrow there."""
        best, narrowest = None, math.inf
        for curve, engine in self._kept:
            try:
                low, high = _engine(lambda: curve.epsilon_bracket(target) if what == "epsilon"
                                    else curve.delta_bracket(target))
            except _EngineFailed:
                continue
            width = effort.relative_width(low, high)
            if width <= self.rtol and width < narrowest:
                best, narrowest = (float(low), float(high), engine), width
        return best

    def _compute(self, what: str, target: float, deadline: effort.Deadline) -> tuple[float, float, str, Any]:
        ms = tuple(sorted(self._counts.items(), key=lambda item: repr(item[0])))  # one order: one answer
        if not ms:
            return 0.0, 0.0, "nothing composed", None
        if any(isinstance(g, RECORDS) for g, _ in ms):  # events no guarantee holds (event_laws)
            return _records_bracket(ms, self.rtol, what, target)  # (its curve, when it has one)
        delta, epsilon = (target, None) if what == "epsilon" else (None, target)
        parts = _gaussian_parts(ms)
        if parts is not None:
            try:  # (extreme rates and noises: opacus.poisson_history)
                curve = poisson_history(parts, self.rtol, delta, epsilon, closed=False)
            except _EngineFailed:  # beyond its grids: compose
                curve = None
            if curve is not None:
                low, high = curve.epsilon_bracket(target) if what == "epsilon" else curve.delta_bracket(target)
                return low, high, "poisson subsampling", curve
        composition, _ = compose_within(dict(ms), self.rtol, deadline)
        bound = composition.at_delta(target) if what == "epsilon" else composition.at_epsilon(target)
        high = bound.epsilon if what == "epsilon" else bound.delta
        engine = f"compose: {bound.theorem}"
        if composition.exact:
            return high, high, engine, None
        lower = self._lower(composition, ms, what, target, high)
        return min(lower, high), high, engine, None

    def _lower(self, composition: Any, ms: tuple[tuple[Guarantee, int], ...], what: str, target: float,
               high: float) -> float:
        """A certified lower end: a composition row's own lower curve, else the batch engine's rounded-down
        laws on dp-accounting's grid, halved while the bracket is wider than ``rtol`` (module doc)."""
        def read(curve: Any) -> float:
            return float(curve.epsilon(target)) if what == "epsilon" else float(curve.delta(target))

        best = 0.0
        for _, curve in composition.candidates:
            if callable(getattr(curve, "lower_seconds", None)):
                best = max(best, read(curve.lower))
        stand_in = _as_lower_input(ms)
        if stand_in != ms:  # zCDP as Gaussians: their composition, when exact, is all the lower end can say
            composed = compose_within(dict(stand_in), self.rtol)[0]
            if composed.exact:
                return max(best, read(composed.curve))
        interval = DISCRETIZATION
        for _ in range(LOWER_HALVINGS + 1):
            if effort.relative_width(best, high) <= self.rtol:
                break
            try:
                best = max(best, read(batch.lower_at(stand_in, interval)))
            except (NumericalLimitError, UnsupportedCombinationError):
                break
            interval /= 2.0
        return best


def _records_bracket(ms: tuple[tuple[Any, int], ...], rtol: float, what: str, target: float
                     ) -> tuple[float, float, str, Any]:
    """The bracket of a multiset holding events that no guarantee record holds (:mod:`.event_laws`): random
    allocations by the allocation engine, everything else as privacy-loss laws on one grid
    (:func:`.event_laws.law_bracket`), and the curve of a random allocation (None for the laws).
    :func:`.dp_events.check_combination` let only these mixtures in."""
    allocations = {(g.mu, g.steps, g.selected): n for g, n in ms if isinstance(g, RandomAllocation)}
    if not allocations:
        return (*law_bracket(ms, rtol, what, target), None)
    delta, epsilon = (target, None) if what == "epsilon" else (None, target)
    if len(allocations) == 1:  # epochs of one allocation: allocation_curve's own bracket
        (mu, t, k), epochs = next(iter(allocations.items()))
        try:
            if t > MAX_EPOCH:
                raise _EngineFailed(f"{t:,} steps, more than {MAX_EPOCH:,}")
            curve = _engine(lambda: allocation_curve(mu, t, k, epochs=epochs, rtol=rtol, delta=delta,
                                                     epsilon=epsilon))
        except _EngineFailed as failure:  # the closed forms: the k Gaussians above, every batch's sum below
            curve = _closed_forms(mu * math.sqrt(k * epochs), mu * k * math.sqrt(epochs / t),
                                  f"beyond the allocation engine's grids ({failure.why})")
    else:  # epochs of 1 of t at several (mu, t): composed as the shuffled Opacus history's epochs
        above = {(mu, t): n for (mu, t, _), n in allocations.items()}
        if delta is not None:
            curve = epochs_curve(above, above, rtol, delta)
        else:
            curve = _epochs_at_epsilon(above, rtol, epsilon)
    low, high = curve.epsilon_bracket(target) if what == "epsilon" else curve.delta_bracket(target)
    return low, high, f"random allocation: {curve.description}", curve


def _epochs_at_epsilon(above: dict[tuple[float, int], int], rtol: float, epsilon: float) -> Any:
    """:func:`.opacus.epochs_curve` refined at a delta target, for an epsilon target: the epochs' dominating
    pairs composed above and their garbled pairs below (:func:`gce.priors.allocation.epochs.compose_epochs`),
    never above the steps' Gaussians composed nor below the sum of every batch's output."""
    high_mu = math.sqrt(sum(n * mu**2 for (mu, _), n in above.items()))
    low_mu = math.sqrt(sum(n * mu**2 / t for (mu, t), n in above.items()))
    closed = AllocationCurve([GaussianCurve(high_mu)], LowerBound([(GaussianCurve(low_mu), 0.0, 0.0)]),
                             f"{sum(above.values())} epochs: closed forms (GDP mu {high_mu:g} above, {low_mu:g} below)")
    if any(mu >= MU_LIMIT or t > MAX_EPOCH for mu, t in above):
        return closed
    pairs = {(GaussianRatio(mu), t): n for (mu, t), n in above.items()}
    try:
        curve = _engine(lambda: compose_epochs(pairs, pairs, rtol, None, epsilon,
                                               epochs_tail(None, sum(above.values()))))
    except _EngineFailed:
        return closed
    return AllocationCurve([_Least([curve, GaussianCurve(high_mu)])],
                           LowerBound([(curve.lower, 0.0, 0.0), (GaussianCurve(low_mu), 0.0, 0.0)]),
                           f"{sum(above.values())} epochs at {len(above)} (mu, t): {curve.description}")

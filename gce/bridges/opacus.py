"""Opacus accountants for shuffled and Poisson batches (docs/design.md, "Random allocation").

Opacus accounts every DP-SGD step as a Poisson-subsampled Gaussian, even when the data loader shuffles
the data into fixed batches (its ``poisson_sampling=False``). A shuffled epoch puts each example in exactly
one of its ``t`` batches: the *random allocation* of one of ``t`` steps (Feldman and Shenfeld,
arXiv 2502.08202; Chua et al., AISTATS 2025), whose curve gce computes as a certified bracket
(:func:`gce.priors.allocation.allocation_curve`). Two accountants keep Opacus' history
``[(noise_multiplier, sample_rate, steps), ...]`` and answer from it:

* :class:`AllocationAccountant` (mechanism ``"gce-shuffled"``): shuffled batches. A step of sample rate
  ``q`` belongs to an epoch of ``t = round(1 / q)`` batches (Opacus sets ``q = 1 / len(data_loader)``), each
  step a Gaussian of ``mu = 1 / noise_multiplier`` (clipping norm over noise standard deviation); epochs are
  fresh allocations, composed.
* :class:`PoissonAccountant` (mechanism ``"gce-poisson"``): Poisson batches, the composition of the
  subsampled Gaussians (:func:`gce.priors.allocation.poisson_curve`, Balle, Barthe and Gaboardi 2018).

What is certified is the random allocation itself (Chua et al.'s balls and bins: each example's batch
uniform over the epoch's ``t`` and independent of the other examples'). A loader that shuffles and cuts
batches of a fixed size is accounted this way in the literature; it is that sampler only when every batch
has the same size (a smaller last batch makes its position less likely), which this module does not prove.

Which accountant for which loader
---------------------------------
The accountant must match the data loader, and Opacus does not tell the accountant which loader it has.
``make_private(..., poisson_sampling=True)``, Opacus' default, replaces the loader by a Poisson-sampled
``DPDataLoader``: only ``"gce-poisson"`` accounts it (one epoch of 10 batches at sigma 1 is 3.47 at delta
1e-6 as Poisson; the shuffled accountant would say 2.65, a number that is not a guarantee for that loader).
``poisson_sampling=False`` keeps the user's loader: when it shuffles (a ``RandomSampler``, as
``DataLoader(..., shuffle=True)`` makes) ``"gce-shuffled"`` accounts it; a loader that does not shuffle
(a ``SequentialSampler``) is amplified by neither. When ``make_private`` attaches the accountant's hook,
:meth:`_HistoryAccountant.get_optimizer_hook_fn` reads the loader ``make_private`` prepared
(:func:`loader_sampling`) and refuses a pairing whose number would not be a guarantee: the shuffled
accountant with a Poisson or an unshuffled loader, the Poisson accountant with an unshuffled one. The
Poisson accountant with a shuffled loader is what Opacus itself does by default; it is not a proven
guarantee for shuffled batches (Chua et al., ICML 2024), so gce warns and points to ``"gce-shuffled"``.

``get_epsilon(delta)`` is the certified upper end of the bracket (a valid guarantee);
``get_epsilon_bracket(delta)`` gives both ends. The accountants need neither Opacus nor torch;
:func:`register` makes them available to ``PrivacyEngine(accountant="gce-shuffled")`` (it imports Opacus).

Epochs of the shuffled history
------------------------------
Steps are laid, in order, into epochs of ``t`` consecutive steps; a change of sample rate starts a new epoch
(a new data loader). An epoch whose steps have different noise multipliers is bounded above by the same
epoch with every step at its *smallest* noise (adding independent noise to a batch's sum is a
post-processing that does not depend on where the example is) and below by every step at its *largest*
noise (the same argument the other way). An epoch cut short (training stopped mid-epoch, or the rate
changed) is a post-processing of the full epoch (its remaining batches forgotten): above, it counts as a
full epoch; below, it is left out (the steps that came before it are a post-processing of everything
released). When every epoch is at one ``(mu, t)``, both ends are :func:`allocation_curve`'s; otherwise the
epochs' dominating pairs are composed above and their garbled pairs below, as
:mod:`gce.priors.allocation.decomposition` composes epochs.

Answers kept
------------
An accountant keeps the curves it computed (the :data:`_KEPT` most recently read). The same history at the
same delta is answered again by the same curve; a curve of the same history refined for another delta
answers when its bracket there is within ``rtol`` (each curve is certified at every delta: its upper curve is
a valid bound everywhere and its lower one too; it is only refined for its own). The shuffled accountant also
keeps the epochs it composed per ``(mu, t, epochs)``: a step inside an open epoch changes neither end (above,
the cut-short epoch counts as a full one; below, it is left out), so during training a new composition is
made once an epoch, when a step opens it (the upper end), and the epoch it then completes is the one composed
before (the lower end). What is kept is what a computation from scratch would give, number for number.

Calibration
-----------
Opacus' ``get_noise_multiplier`` (which ``make_private_with_epsilon`` calls) bisects the noise multiplier in
``[0, 20]``, setting the history to ``[(sigma, sample_rate, steps)]`` and asking ``get_epsilon`` at each sigma
whether epsilon is below the target, and whether by more than its tolerance. Called from there (read on the
call stack, as :func:`loader_sampling` reads ``make_private``), the accountants answer with a valid epsilon
still, but spend only what decides each step (:meth:`_HistoryAccountant._searching`): epsilon is
non-increasing in sigma, so a bracket evaluated at one sigma bounds every larger one above and every smaller
one below; a sigma they do not decide (the first query, sigma 20, far above the root where the allocation
engine is slowest, among them) is decided from a sigma next to the root where possible, predicted from the
brackets so far (in closed form, central limit, before any), so that one evaluation decides many of the
bisection's later steps; each evaluation is made at :data:`SEARCH_RTOL` (the bisection reads only the
upper end, so a bracket on either side of the target decides its step), and one that straddles the target is
refined to ``rtol`` by the Poisson accountant (milliseconds) and answered with its upper end by the shuffled
one (a valid epsilon above the target; the allocation engine's refinement takes seconds at 10 epochs of 1 of
1,000). Opacus' contract holds: the sigma returned has a certified epsilon below the target and within the
tolerance of it; the shuffled accountant's can be a step of the bisection larger than with every bracket at
``rtol`` (0.6% larger at most where measured), its epsilon as a fresh accountant reports it then a little
further below the target.

Extreme steps
-------------
Every valid step is answered, never an engine's overflow: a sample rate or a ``mu = 1 / noise_multiplier``
below the Poisson engine's floors (:data:`RATE_FLOOR`, :data:`MU_FLOOR`: 1e-12) is accounted at the floor above
and left out below; a noise multiplier below ``1 / MU_LIMIT`` (beyond every grid) adds ``-log(1 - rate)`` per
step to the other steps' delta above (:func:`poisson_history`) and is left out below; an epoch of more than
:data:`MAX_EPOCH` steps (a sample rate below 1e-9, 5e-324 included), or an engine that fails at an extreme,
is bounded by the closed forms (the steps' Gaussians composed without their sampling above, the sum of every
batch's output below). Each is a certified bracket, wider where the description says so.

References
----------
Feldman, Shenfeld, "Privacy amplification by random allocation", arXiv 2502.08202.
Chua, Ghazi, Kamath, Kumar, Manurangsi, Sinha, Zhang, "Balls-and-bins sampling for DP-SGD", AISTATS 2025.
Balle, Barthe, Gaboardi, "Privacy amplification by subsampling", NeurIPS 2018.
"""

from __future__ import annotations

import math
import sys
import warnings

import numpy as np
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from copy import deepcopy
from typing import Any

from .. import effort
from ..accounting.curves import FunctionCurve, GaussianCurve
from ..errors import GCEError, InvalidParameterError
from ..priors.allocation import MU_LIMIT, AllocationCurve, LowerBound, allocation_curve, poisson_curve
from ..priors.allocation.bracket import _Least
from ..priors.allocation.decomposition import _NoRoom
from ..priors.allocation.poisson import MU_FLOOR, RATE_FLOOR
from ..priors.allocation.epochs import compose_epochs, epochs_tail
from ..priors.allocation.ratios import GaussianRatio
from ..validation import is_integer, is_number, shown

__all__ = ["AllocationAccountant", "PoissonAccountant", "register", "loader_sampling", "poisson_history", "MECHANISMS",
           "RATE_FLOOR", "MU_FLOOR", "MAX_EPOCH", "MAX_STEPS", "SEARCH_RTOL"]

#: One step's record in Opacus' history: (noise multiplier, sample rate, steps).
Entry = tuple[float, float, int]


#: The most steps a history may hold (as a scenario's ``repeat``: exact as a double, which the engines count in).
MAX_STEPS = 2**53
# RATE_FLOOR, MU_FLOOR (imported from the engine, which keeps them): below these a step's sample rate, or its
# ``mu = 1 / noise_multiplier``, is beyond the Poisson engine's grids (its answer there is 0 to every digit
# shown); the engine accounts the step at the floor above and leaves it out below
# (:func:`gce.priors.allocation.poisson._at_floors`).
#: Curves an accountant keeps (the most recently read; module doc, "Answers kept").
_KEPT = 32
#: The accuracy of the evaluations inside Opacus' ``get_noise_multiplier`` (:meth:`_HistoryAccountant._decided`).
SEARCH_RTOL = 0.05
#: Inside ``get_noise_multiplier``: a sigma not decided by the brackets evaluated is decided from at most this
#: many sigmas nearby first, each where epsilon is predicted a margin (the tolerance, at least this share of the
#: target) beyond the bisection's thresholds; a sigma within :data:`_NEARBY` (relative) of those is evaluated
#: itself (:meth:`_HistoryAccountant._substitute`).
_SUBSTITUTES, _MARGIN, _NEARBY = 3, 0.01, 0.01
#: The largest epoch of the shuffled accountant the allocation engine is given (``t = round(1 / sample_rate)``
#: steps); a larger one (a sample rate below 1e-9) is bounded by the closed forms (module doc).
MAX_EPOCH = 10**9


def _check_entry(noise_multiplier: object, sample_rate: object, steps: object = 1) -> Entry:
    if not is_number(noise_multiplier) or not 0.0 <= noise_multiplier < math.inf:
        raise InvalidParameterError("noise_multiplier", f"must be a finite number >= 0, got {shown(noise_multiplier)}")
    if not is_number(sample_rate) or not 0.0 < sample_rate <= 1.0:
        raise InvalidParameterError("sample_rate", f"must be a probability in (0, 1], got {shown(sample_rate)}")
    if not is_integer(steps) or not 1 <= steps <= MAX_STEPS:
        raise InvalidParameterError("steps", f"must be an integer in 1..2**53, got {shown(steps)}")
    return float(noise_multiplier), float(sample_rate), int(steps)


class _EngineFailed(Exception):
    """An engine could not answer (its grids do not reach the input); ``why`` says what it said."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def _engine(compute: Callable[[], Any], *, refusals: bool = True) -> Any:
    """``compute()``, an engine's answer; its failure at an extreme input (arithmetic that overflows, divides by
    zero or warns, and with ``refusals`` a refusal of its own) as :class:`_EngineFailed`, for the caller's
    closed forms or fallback. The accountants check their own inputs first, so no refusal here is about the
    user's values; without ``refusals`` gce's errors pass as they are."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            return compute()
        except GCEError as error:
            if not refusals:
                raise
            raise _EngineFailed(f"{type(error).__name__}: {shown(str(error), 100)[1:-1]}") from None
        except (ArithmeticError, ValueError, RuntimeWarning, _NoRoom) as error:
            raise _EngineFailed(f"{type(error).__name__}: {shown(str(error), 100)[1:-1]}") from None


def _closed_forms(high_mu: float, low_mu: float, what: str) -> AllocationCurve:
    """Above, the steps' Gaussians composed without their sampling (GDP ``high_mu``: sampling only helps);
    below, GDP ``low_mu``: the bounds that need no grid."""
    return AllocationCurve([GaussianCurve(high_mu)], LowerBound([(GaussianCurve(low_mu), 0.0, 0.0)]),
                           f"{what}: closed forms (GDP mu {high_mu:g} above, {low_mu:g} below)")


def _gdp_total(parts: Sequence[tuple[float, float, int]]) -> float:
    """``sqrt(sum count mu^2)`` without overflow (inf when the noise of some step reveals the example)."""
    top = max((mu for mu, _, _ in parts), default=0.0)
    if top == 0.0 or math.isinf(top):
        return top
    with np.errstate(over="ignore"):
        return float(top * math.sqrt(sum(n * (mu / top) ** 2 for mu, _, n in parts)))


def _mu(noise_multiplier: float) -> float:
    """The Gaussian of one step: clipping norm C, noise N(0, (sigma C)^2) on the sum, so mu = 1 / sigma."""
    return math.inf if noise_multiplier == 0.0 else 1.0 / noise_multiplier


class _HistoryAccountant:
    """Opacus' ``IAccountant`` interface over a history of ``(noise_multiplier, sample_rate, steps)``,
    without importing Opacus (:func:`register` makes Opacus subclasses of the two accountants)."""

    #: "shuffled" or "poisson" (set by the subclasses).
    mode = ""
    #: Whether an evaluation inside Opacus' ``get_noise_multiplier`` whose bracket straddles the target is
    #: refined to ``rtol`` (:meth:`_decided`): the Poisson engine's refinement takes milliseconds, the
    #: allocation engine's seconds at 10 epochs of 1 of 1,000 (set by the subclasses).
    search_refines = False

    def __init__(self, rtol: float = effort.DEFAULT_RTOL, time_limit: float | None = None) -> None:
        self.rtol = effort.check_rtol(rtol)
        if time_limit is not None and (not is_number(time_limit) or not time_limit > 0):
            raise InvalidParameterError("time_limit", f"must be a number of seconds > 0 or None, got "
                                                      f"{shown(time_limit)}")
        self.time_limit = None if time_limit is None else float(time_limit)
        self.history: list[Entry] = []
        #: Whether the time limit stopped the last computation (its bracket is then wider than rtol).
        self.time_limit_reached = False
        #: The curves computed, most recent last: ``(entries, delta, rtol) -> (curve, time limit reached)``.
        self._cache: OrderedDict[tuple[Any, ...], tuple[AllocationCurve, bool]] = OrderedDict()
        #: The shuffled accountant's epochs of one ``(mu, t)``: ``(mu, t, epochs, delta, rtol) -> curve``.
        self._epochs: OrderedDict[tuple[Any, ...], AllocationCurve] = OrderedDict()
        #: Inside Opacus' ``get_noise_multiplier``: per ``(sample_rate, steps, delta)``, the brackets
        #: ``(noise_multiplier, lower, upper)`` evaluated so far (:meth:`_searching`).
        self._points: dict[tuple[float, int, float], list[tuple[float, float, float]]] = {}
        #: The brackets read, per curve and delta (the curve held with it, so that its id stays its own).
        self._brackets: OrderedDict[tuple[int, float], tuple[AllocationCurve, tuple[float, float]]] = OrderedDict()

    @classmethod
    def mechanism(cls) -> str:
        return f"gce-{cls.mode}"

    def step(self, *, noise_multiplier: float, sample_rate: float) -> None:
        """One optimizer step (Opacus' hook calls it); equal consecutive steps share one history entry."""
        sigma, rate, _ = _check_entry(noise_multiplier, sample_rate)
        if self.history and self.history[-1][:2] == (sigma, rate):
            self.history[-1] = (sigma, rate, self.history[-1][2] + 1)
        else:
            self.history.append((sigma, rate, 1))

    def __len__(self) -> int:
        return sum(steps for _, _, steps in self.history)

    def curve(self, delta: float) -> AllocationCurve:
        """The curve of the history so far (upper, with its certified ``lower``), refined for ``delta``.

        Kept per history (module doc, "Answers kept"): the same question again is answered by the same curve,
        and a curve of the same history refined for another delta answers when its bracket at ``delta`` is
        within ``rtol``."""
        if not is_number(delta) or not 0.0 < delta < 1.0:
            raise InvalidParameterError("delta", f"must be a number in (0, 1), got {shown(delta)}")
        entries = tuple(_check_entry(*entry) for entry in self.history)
        return self._curve_at(entries, float(delta), self.rtol)

    def _curve_at(self, entries: tuple[Entry, ...], delta: float, rtol: float) -> AllocationCurve:
        key = (entries, delta, rtol)
        if key in self._cache:
            self._cache.move_to_end(key)
        else:
            kept = self._kept_for(entries, delta, rtol)
            if kept is None:
                deadline = effort.Deadline(self.time_limit)
                with effort.within(deadline):
                    kept = (self._curve(entries, delta, rtol), deadline.reached)
            self._cache[key] = kept
            while len(self._cache) > _KEPT:
                self._cache.popitem(last=False)
        curve, self.time_limit_reached = self._cache[key]
        return curve

    def _kept_for(self, entries: tuple[Entry, ...], delta: float, rtol: float) -> tuple[AllocationCurve, bool] | None:
        """The kept curve of ``entries`` (refined for another delta or accuracy) whose bracket at ``delta`` is the
        narrowest, when it is within ``rtol``: each is certified at every delta (its upper curve a valid bound
        everywhere, its lower one too), only refined for its own."""
        best, narrowest = None, math.inf
        for (history, _, _), (curve, _) in self._cache.items():
            if history != entries:
                continue
            try:
                width = effort.relative_width(*_engine(lambda: curve.epsilon_bracket(delta)))
            except _EngineFailed:
                continue
            if width <= rtol and width < narrowest:
                best, narrowest = (curve, False), width
        return best

    def get_epsilon_bracket(self, delta: float) -> tuple[float, float]:
        """(lower, upper): the exact epsilon of the history at ``delta`` lies between them."""
        curve = self.curve(delta)
        key = (id(curve), float(delta))  # (the curve is kept while its bracket is: ids are not reused meanwhile)
        if key not in self._brackets:
            self._brackets[key] = (curve, curve.epsilon_bracket(delta))
            while len(self._brackets) > 4 * _KEPT:
                self._brackets.popitem(last=False)
        return self._brackets[key][1]

    def get_epsilon(self, delta: float, *args: Any, **kwargs: Any) -> float:
        """The certified upper end of :meth:`get_epsilon_bracket`: a valid epsilon at ``delta``.

        Called by Opacus' ``get_noise_multiplier`` (``make_private_with_epsilon``), it answers its bisection
        as :meth:`_searching` says: a valid epsilon still, at the cost of the evaluations that decide."""
        search = _calibration_target(sys._getframe(1))
        if search is not None and len(self.history) == 1:
            return self._searching(delta, *search)
        return self.get_epsilon_bracket(delta)[1]

    def _searching(self, delta: float, target: float, tolerance: float) -> float:
        """A valid epsilon for the one-entry history ``[(sigma, rate, steps)]`` that Opacus'
        ``get_noise_multiplier`` sets while it bisects sigma towards ``target`` (module doc, "Calibration").

        Its bisection reads two things of each answer: whether it is below the target, and whether it is
        more than ``tolerance`` below. Epsilon is non-increasing in sigma (more noise is a post-processing), so
        the brackets already evaluated at this rate, steps and delta bound the exact value (:meth:`_bounded`).
        A sigma they do not decide is first decided from a sigma nearby, where it is predicted to decide the
        most of the bisection's later steps (:meth:`_substitute`: just above the root when sigma lies above it,
        just below when below; Opacus starts at sigma 20, where the allocation engine is slowest); only a sigma
        next to the root is evaluated itself (:meth:`_decided`), and its upper end is the answer."""
        sigma, rate, steps = _check_entry(*self.history[0])
        if not is_number(delta) or not 0.0 < delta < 1.0:
            raise InvalidParameterError("delta", f"must be a number in (0, 1), got {shown(delta)}")
        question = (rate, steps, float(delta), target, tolerance)
        points = self._points.setdefault((rate, steps, float(delta)), [])
        for _ in range(_SUBSTITUTES + 1):
            answer = self._bounded(sigma, question, points)
            if answer is not None:  # (time_limit_reached: as the last evaluation left it)
                return answer
            if not self._substitute(sigma, question, points):
                break
        low, high = self._decided(sigma, question)
        points.append((sigma, low, high))
        return high

    def _bounded(self, sigma: float, question: tuple[float, int, float, float, float],
                 points: list[tuple[float, float, float]]) -> float | None:
        """The answer at ``sigma`` the brackets evaluated already decide, or None: the least upper end at a
        sigma at most this one when it is more than the tolerance below the target (a valid epsilon: the
        exact value is at most it), or the closed form above (every step's Gaussian composed without sampling)
        when a sigma at least this one has a lower end above the target (a valid epsilon above the target)."""
        rate, steps, delta, target, tolerance = question
        bound = min((high for s, _, high in points if s <= sigma), default=math.inf)
        if bound < target - tolerance:
            return bound
        if max((low for s, low, _ in points if s >= sigma), default=0.0) > target:
            closed = float(GaussianCurve(self._closed_mu(((sigma, rate, steps),))).epsilon(delta))
            if closed > target:  # (the exact value, above the target, is at most this)
                return closed
        return None

    def _substitute(self, sigma: float, question: tuple[float, int, float, float, float],
                    points: list[tuple[float, float, float]]) -> bool:
        """Evaluate a sigma near ``sigma`` that would decide it and more (:meth:`_searching`): below it, where
        epsilon is predicted a margin under the tolerance (:data:`_MARGIN`), when ``sigma`` is predicted above
        that; above it, where epsilon is predicted a margin over the target, when ``sigma`` is predicted below
        that (:meth:`_predicted`; the margin widened by the half-width of the nearest bracket, so that the end
        that decides lies beyond the threshold). Whether one was evaluated (its bracket
        joins ``points``); none when ``sigma`` lies within :data:`_NEARBY` of the sigma predicted (moved a
        step of twice that away from a sigma evaluated already next to it, on the side aimed at)."""
        rate, steps, delta, target, tolerance = question
        margin = max(tolerance, _MARGIN * target)
        # the bracket's half-width, read on the evaluation nearest sigma: the midpoint aimed at puts the end
        # that decides beyond the threshold
        spread = math.sqrt(min(((high / low, abs(math.log(s / sigma))) for s, low, high in points
                                if 0.0 < low <= high < math.inf), key=lambda item: item[1], default=(1.0, 0.0))[0])
        for aim, below in (((target - tolerance - margin) / spread, True), ((target + margin) * spread, False)):
            if aim <= 0.0:
                continue
            trial = self._predicted(aim, question, points)
            if trial is None or not math.isfinite(trial) or trial <= 0.0:
                continue
            # next to a sigma evaluated already (which did not decide): a step further on the side aimed at
            step = (1.0 + 2.0 * _NEARBY) if below else 1.0 / (1.0 + 2.0 * _NEARBY)
            trial = max([trial] + [s * step for s, _, _ in points if abs(math.log(trial / s)) < math.log1p(_NEARBY)],
                        key=lambda x: x if below else -x)
            if (trial < sigma / (1.0 + _NEARBY)) if below else (trial > sigma * (1.0 + _NEARBY)):
                low, high = self._decided(trial, question)
                points.append((trial, low, high))
                return True
        return False

    def _predicted(self, epsilon: float, question: tuple[float, int, float, float, float],
                   points: list[tuple[float, float, float]]) -> float | None:
        """The sigma at which epsilon is predicted to be ``epsilon``: ``log epsilon`` linear in ``log sigma``
        between the nearest evaluated sigmas either side (the brackets' geometric midpoints), else from the
        nearest one along the central-limit slope, else the central-limit sigma itself
        (:func:`gce.training.clt_sigma`). Only where to evaluate depends on it, never an answer."""
        from ..training import clt_sigma

        rate, steps, delta, _, _ = question
        mids = [(s, math.sqrt(low * high)) for s, low, high in points if 0.0 < low <= high < math.inf]
        above = [(s, m) for s, m in mids if m > epsilon]  # sigmas too small for epsilon
        below = [(s, m) for s, m in mids if m <= epsilon]
        if above and below:
            (s1, m1), (s2, m2) = max(above), min(below)
            if s2 > s1 and m1 > m2:
                return s1 * math.exp(math.log(m1 / epsilon) * math.log(s2 / s1) / math.log(m1 / m2))
        try:
            estimate, _, slope = clt_sigma([(1.0, rate, steps)], epsilon, delta)
        except (GCEError, ArithmeticError, ValueError):
            return None
        if not mids:
            return estimate
        s, m = min(mids, key=lambda item: abs(math.log(item[1] / epsilon)))
        return s * (m / epsilon) ** (1.0 / slope)

    def _decided(self, sigma: float, question: tuple[float, int, float, float, float]) -> tuple[float, float]:
        """The bracket at ``sigma`` at :data:`SEARCH_RTOL` (or ``rtol`` when coarser), and where it straddles the
        target and :attr:`search_refines`, at ``rtol``. The bisection reads only the upper end, so a bracket
        either side of the target decides its step (whether more than the tolerance below is read on the
        upper end, a valid epsilon at any accuracy); one that straddles the target answers its upper end, a
        valid epsilon above the target, read as "sigma too small": the sigma returned is then at most a step of
        the bisection larger than with every bracket at ``rtol``."""
        rate, steps, delta, target, _ = question
        entries = ((sigma, rate, steps),)
        for rtol in dict.fromkeys((max(SEARCH_RTOL, self.rtol),) + ((self.rtol,) if self.search_refines else ())):
            low, high = self._curve_at(entries, delta, rtol).epsilon_bracket(delta)
            if high < target or low > target:
                break
        return low, high

    def _closed_mu(self, entries: Sequence[Entry]) -> float:
        """GDP mu of every step's Gaussian composed without sampling (an upper bound in closed form)."""
        raise NotImplementedError

    def get_optimizer_hook_fn(self, sample_rate: float) -> Callable[[Any], None]:
        """Opacus' hook: one step per optimizer step, at ``sample_rate`` times the accumulated iterations.

        Called by Opacus' ``make_private``, it first checks that the loader ``make_private`` prepared is one
        this accountant accounts (module doc, "Which accountant for which loader"; :func:`loader_sampling`).

        Raises
        ------
        InvalidParameterError
            Naming ``poisson_sampling`` (or ``data_loader``) when the loader is one whose batches this
            accountant's number would not be a guarantee for.
        """
        self._check_loader(loader_sampling(sys._getframe(1)))

        def hook_fn(optim: Any) -> None:
            self.step(noise_multiplier=optim.noise_multiplier,
                      sample_rate=sample_rate * optim.accumulated_iterations)
        return hook_fn

    def state_dict(self, destination: Any = None) -> Any:
        destination = OrderedDict() if destination is None else destination
        destination["history"] = deepcopy(self.history)
        destination["mechanism"] = self.mechanism()
        return destination

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        if not state_dict or "history" not in state_dict or "mechanism" not in state_dict:
            raise InvalidParameterError("state_dict", "must hold 'history' and 'mechanism'")
        if state_dict["mechanism"] != self.mechanism():
            raise InvalidParameterError("state_dict", f"holds mechanism {shown(state_dict['mechanism'])}, "
                                                      f"not {shown(self.mechanism())}")
        self.history = [_check_entry(*entry) for entry in state_dict["history"]]

    def _curve(self, entries: Sequence[Entry], delta: float, rtol: float) -> AllocationCurve:
        raise NotImplementedError

    def _check_loader(self, sampling: str | None) -> None:
        """Refuse (or warn about) a loader of ``sampling`` (:func:`loader_sampling`) this accountant does not
        account; None (the hook not attached by ``make_private``) is not checked."""
        if sampling == "sequential":
            raise InvalidParameterError(
                "data_loader", f"does not shuffle (a SequentialSampler): its batches are fixed, so no sampling "
                               f"amplifies them and accountant {shown(self.mechanism())} would under-count; pass "
                               f"poisson_sampling=True with accountant 'gce-poisson', or a loader with "
                               f"shuffle=True with accountant 'gce-shuffled'")


class PoissonAccountant(_HistoryAccountant):
    """Poisson batches: each step a Gaussian of ``mu = 1 / noise_multiplier`` on a Poisson subsample of rate
    ``sample_rate``, the steps composed (:func:`gce.priors.allocation.poisson_curve`)."""

    mode = "poisson"
    search_refines = True

    def _check_loader(self, sampling: str | None) -> None:
        super()._check_loader(sampling)
        if sampling == "shuffled":
            warnings.warn("accountant 'gce-poisson' with a shuffled loader (poisson_sampling=False): Poisson "
                          "accounting is not a proven guarantee for shuffled batches; accountant "
                          "'gce-shuffled' certifies them (random allocation)", UserWarning, stacklevel=3)

    def _curve(self, entries: Sequence[Entry], delta: float, rtol: float) -> AllocationCurve:
        merged = _merged(entries)
        if not merged:
            return _revealing(None)
        if any(sigma == 0.0 for sigma, _ in merged):
            return _revealing("a step without noise")
        return poisson_history([(_mu(sigma), rate, steps) for (sigma, rate), steps in merged.items()], rtol, delta)

    def _closed_mu(self, entries: Sequence[Entry]) -> float:
        return _gdp_total([(_mu(sigma), rate, steps) for (sigma, rate), steps in _merged(entries).items()])


def _merged(entries: Sequence[Entry]) -> dict[tuple[float, float], int]:
    """The Poisson history's steps counted by ``(noise_multiplier, sample_rate)`` (composition commutes: equal
    steps anywhere are one part)."""
    merged: dict[tuple[float, float], int] = {}
    for sigma, rate, steps in entries:
        merged[(sigma, rate)] = merged.get((sigma, rate), 0) + steps
    return merged


def poisson_history(parts: Sequence[tuple[float, float, int]], rtol: float, delta: float | None,
                    epsilon: float | None = None, *, closed: bool = True) -> AllocationCurve:
    """The curve of Poisson-sampled Gaussian steps ``[(mu, rate, count)]``, at every valid input.

    The engine's (:func:`gce.priors.allocation.poisson_curve`), steps below :data:`RATE_FLOOR` or
    :data:`MU_FLOOR` at the floor above and left out below. Steps whose noise multiplier is below
    ``1 / MU_LIMIT`` (mu beyond the engine's grids) are bounded without a grid: with ``c = -sum count
    log(1 - rate)`` over them (at least the probability ``p`` that any of them samples the example), the
    history's delta at every eps is at most the other steps' plus ``c``: where none samples it (probability
    ``1 - p``) they are the other steps' outputs, so one direction gains at most ``p``, and the other is the
    other steps' curve at ``eps + log(1 - p)``, whose slope in eps is at most 1 (a hockey-stick divergence
    ``sup_S A(S) - e^eps B(S)`` falls at rate ``e^eps B(S*) <= A(S*) <= 1``); below, they are left out. Where
    the engine itself fails at an extreme, the closed forms: the Gaussians composed without their sampling
    above (sampling only helps), nothing below (``closed`` False: :class:`_EngineFailed`, for the caller's own
    fallback). The target is epsilon at ``delta``, or delta at ``epsilon``."""
    high_mu = _gdp_total(parts)
    beyond = [(mu, rate, n) for mu, rate, n in parts if mu >= MU_LIMIT]
    within = [(mu, rate, n) for mu, rate, n in parts if mu < MU_LIMIT]
    try:
        if not within:
            curve = AllocationCurve([GaussianCurve(0.0)], LowerBound([(GaussianCurve(0.0), 0.0, 0.0)]),
                                    "no step within the grids")
        else:  # (steps below the floors: the engine's own rule, at the floor above and left out below)
            curve = _engine(lambda: poisson_curve(within, rtol=rtol, delta=delta, epsilon=epsilon))
    except _EngineFailed as failure:
        if not closed:
            raise
        return _closed_forms(high_mu, 0.0, f"the Poisson engine did not answer ({failure.why})")
    if not beyond:
        return curve
    shift = math.fsum(-n * math.log1p(-rate) if rate < 1.0 else math.inf for _, rate, n in beyond)
    rest = curve
    shifted = FunctionCurve(
        lambda eps: np.minimum(np.atleast_1d(rest.delta(eps)) + shift, 1.0),
        epsilon_fn=lambda d: np.array([float(rest.epsilon(t - shift)) if t > shift else math.inf for t in d]),
        delta_floor=min(1.0, rest.delta_floor + shift))
    return AllocationCurve([_Least([GaussianCurve(high_mu), shifted])], rest.lower,
                           f"{sum(n for _, _, n in beyond)} steps of noise_multiplier below 1/{MU_LIMIT:g} (beyond the "
                           f"grids): the other steps' curve plus {shift:.3g} in delta above, left out below; "
                           f"the other steps: {rest.description}")


class AllocationAccountant(_HistoryAccountant):
    """Shuffled batches: each epoch of ``t = round(1 / sample_rate)`` steps puts every example in exactly one
    batch (random allocation, one of t), epochs composed (module doc, "Epochs of the shuffled history")."""

    mode = "shuffled"

    def _check_loader(self, sampling: str | None) -> None:
        super()._check_loader(sampling)
        if sampling == "poisson":
            raise InvalidParameterError(
                "poisson_sampling", "is True (Opacus' default), so the loader samples Poisson batches, which "
                                    "accountant 'gce-shuffled' does not account (it would under-count); pass "
                                    "poisson_sampling=False to make_private to keep a shuffled loader, or use "
                                    "accountant 'gce-poisson'")

    def _curve(self, entries: Sequence[Entry], delta: float, rtol: float) -> AllocationCurve:
        above, below = epochs_of(entries)
        if any(mu == math.inf for mu, _ in above):
            return _revealing("a step without noise")
        if not above:
            return _revealing(None)
        if len(above) == 1 and set(below) <= set(above) and next(iter(above))[1] <= MAX_EPOCH:
            (mu, t), count = next(iter(above.items()))  # one (mu, t): allocation_curve's own bracket
            try:
                upper = self._allocation(mu, t, count, delta, rtol)
                if below.get((mu, t), 0) == count:
                    return upper
                lower = (LowerBound([(GaussianCurve(0.0), 0.0, 0.0)]) if not below else
                         self._allocation(mu, t, below[(mu, t)], delta, rtol).lower)
            except _EngineFailed as failure:
                return _epochs_closed_forms(above, below, f"the allocation engine did not answer ({failure.why})")
            return AllocationCurve(upper._upper, lower, f"{upper.description}; below: the complete epochs only")
        return epochs_curve(above, below, rtol, delta)

    def _allocation(self, mu: float, t: int, epochs: int, delta: float, rtol: float) -> AllocationCurve:
        """``allocation_curve(mu, t, epochs=epochs)`` at ``delta`` and ``rtol``, kept (module doc, "Answers
        kept"): a step inside an open epoch changes neither end (the cut-short epoch counts as a full one above
        and is left out below), and the epoch it completes was already composed above. A curve the time limit
        stopped is not kept (its stops are said on the running computation's deadline)."""
        key = (mu, t, epochs, delta, rtol)
        if key in self._epochs:
            self._epochs.move_to_end(key)
            return self._epochs[key]
        running = effort.current()
        view = running.collecting()
        with effort.within(view):
            curve = _engine(lambda: allocation_curve(mu, t, epochs=epochs, rtol=rtol, delta=delta))
        for stop in view.stops:
            running.stop(stop)
        if not view.reached:
            self._epochs[key] = curve
            while len(self._epochs) > _KEPT:
                self._epochs.popitem(last=False)
        return curve

    def _closed_mu(self, entries: Sequence[Entry]) -> float:
        return _epochs_mus(*epochs_of(entries))[0]


#: The batch samplers of Opacus' Poisson-sampled ``DPDataLoader`` (``opacus.utils.uniform_sampler``).
_POISSON_SAMPLERS = frozenset({"UniformWithReplacementSampler", "DistributedUniformWithReplacementSampler"})


def loader_sampling(frame: Any, depth: int = 4) -> str | None:
    """How the loader of the Opacus ``make_private`` call on the stack at or above ``frame`` (at most
    ``depth`` frames up) draws its batches: ``"poisson"`` (a ``DPDataLoader`` or its samplers),
    ``"sequential"`` (a ``SequentialSampler``: no shuffling), ``"shuffled"`` (any other sampler, e.g. the
    ``RandomSampler`` of ``shuffle=True``), or None when no such call is found (a hook attached by hand).

    ``make_private`` replaces its local ``data_loader`` by the prepared one before it attaches the hook, so
    the loader read is the one training will use, whether ``poisson_sampling`` made it or the user passed a
    ``DPDataLoader`` of their own."""
    for _ in range(depth):
        if frame is None:
            return None
        if frame.f_code.co_name == "make_private" and str(frame.f_globals.get("__name__", "")).startswith("opacus"):
            loader = frame.f_locals.get("data_loader")
            if loader is None:
                return None
            batch_sampler = getattr(loader, "batch_sampler", None)
            if type(loader).__name__ == "DPDataLoader" or type(batch_sampler).__name__ in _POISSON_SAMPLERS:
                return "poisson"
            sampler = getattr(batch_sampler, "sampler", getattr(loader, "sampler", None))
            return "sequential" if type(sampler).__name__ == "SequentialSampler" else "shuffled"
        frame = frame.f_back
    return None


def _calibration_target(frame: Any, depth: int = 2) -> tuple[float, float] | None:
    """``(target_epsilon, epsilon_tolerance)`` of the Opacus ``get_noise_multiplier`` call at or above ``frame``
    (at most ``depth`` frames up), or None when there is none (or its values are not a target: then every query
    is answered as any other)."""
    for _ in range(depth):
        if frame is None:
            return None
        if frame.f_code.co_name == "get_noise_multiplier" and \
                str(frame.f_globals.get("__name__", "")).startswith("opacus"):
            target, tolerance = frame.f_locals.get("target_epsilon"), frame.f_locals.get("epsilon_tolerance")
            if is_number(target) and is_number(tolerance) and 0.0 < tolerance < target < math.inf:
                return float(target), float(tolerance)
            return None
        frame = frame.f_back
    return None


def epochs_of(entries: Sequence[Entry]) -> tuple[dict[tuple[float, int], int], dict[tuple[float, int], int]]:
    """The epochs of a shuffled history, as counts of ``(mu, t)``: ``above`` (every epoch, a cut-short one as
    a full one, each at its smallest noise) and ``below`` (the complete epochs, each at its largest noise);
    module doc, "Epochs of the shuffled history".

    >>> epochs_of([(1.0, 0.25, 9)])
    ({(1.0, 4): 3}, {(1.0, 4): 2})
    >>> epochs_of([(2.0, 0.25, 2), (1.0, 0.25, 4)])  # the first epoch has both noises
    ({(1.0, 4): 2}, {(0.5, 4): 1})
    """
    above: dict[tuple[float, int], int] = {}
    below: dict[tuple[float, int], int] = {}
    t, filled, low, high = 0, 0, math.inf, 0.0  # the open epoch: size, steps in it, its mus' range

    def close(complete: bool) -> None:
        nonlocal filled, low, high
        if filled:
            above[(high, t)] = above.get((high, t), 0) + 1
            if complete:
                below[(low, t)] = below.get((low, t), 0) + 1
        filled, low, high = 0, math.inf, 0.0

    for sigma, rate, steps in entries:
        size = max(round(min(1.0 / rate, 2.0**62)), 1)  # (a rate of 5e-324: 1 / rate overflows)
        if size != t:
            close(False)
            t = size
        mu = _mu(sigma)
        while steps:
            take = min(steps, t - filled)
            if take == t:  # whole epochs at once
                whole = steps // t
                above[(mu, t)] = above.get((mu, t), 0) + whole
                below[(mu, t)] = below.get((mu, t), 0) + whole
                steps -= whole * t
                continue
            filled, steps = filled + take, steps - take
            low, high = min(low, mu), max(high, mu)
            if filled == t:
                close(True)
    close(False)
    return above, below


def epochs_curve(above: Mapping[tuple[float, int], int], below: Mapping[tuple[float, int], int], rtol: float,
                 delta: float) -> AllocationCurve:
    """Epochs of random allocation (1 of t each) at several ``(mu, t)``, composed: above, the epochs'
    dominating pairs (``above``), below, their garbled pairs (``below``), tilted towards the target and refined
    until the bracket at ``delta`` is within ``rtol`` (or the time limit stops it), as
    :func:`gce.priors.allocation.epochs.compose_epochs` composes the epochs of one ``(mu, t)``. Never above
    the composition of the Gaussians themselves, nor below the sum of every batch's output (closed forms, as
    :func:`allocation_curve` for mu beyond its grids, and the answer when no grid fits)."""
    high_mu, low_mu = _epochs_mus(above, below)
    closed = _epochs_closed_forms(above, below, f"{sum(above.values())} epochs")
    if any(mu >= MU_LIMIT or t > MAX_EPOCH for mu, t in above):
        return closed
    ratios = {key: GaussianRatio(key[0]) for key in {*above, *below}}
    try:
        curve = _engine(lambda: compose_epochs({(ratios[key], key[1]): count for key, count in above.items()},
                                               {(ratios[key], key[1]): count for key, count in below.items()}, rtol,
                                               delta, None, epochs_tail(delta, sum(above.values()))))
    except _EngineFailed:
        return closed
    return AllocationCurve([_Least([curve, GaussianCurve(high_mu)])],
                           LowerBound([(curve.lower, 0.0, 0.0), (GaussianCurve(low_mu), 0.0, 0.0)]),
                           f"{sum(above.values())} epochs at {len(above)} (mu, t): {curve.description}")


def _epochs_closed_forms(above: Mapping[tuple[float, int], int], below: Mapping[tuple[float, int], int], what: str
                         ) -> AllocationCurve:
    """Epochs of 1 of t without a grid: above, the steps' Gaussians composed (each epoch is at most its one
    Gaussian); below, the sum of every batch's output."""
    high_mu, low_mu = _epochs_mus(above, below)
    return AllocationCurve([GaussianCurve(high_mu)], LowerBound([(GaussianCurve(low_mu), 0.0, 0.0)]),
                           f"{what}: the steps' Gaussians composed (GDP mu {high_mu:g}) above; the sum of every "
                           f"batch's output (GDP mu {low_mu:g}) below")


def _epochs_mus(above: Mapping[tuple[float, int], int], below: Mapping[tuple[float, int], int]
                ) -> tuple[float, float]:
    """GDP mu of the closed forms: every epoch's one Gaussian composed (above), every batch's sum (below)."""
    return (_gdp_total([(mu, 0.0, count) for (mu, _), count in above.items()]),
            _gdp_total([(mu / math.sqrt(t), 0.0, count) for (mu, t), count in below.items()]))


def _revealing(why: str | None) -> AllocationCurve:
    """No step (``why`` None): epsilon 0; a step without noise: the output reveals the example (inf)."""
    curve = GaussianCurve(0.0 if why is None else math.inf)
    return AllocationCurve([curve], LowerBound([(curve, 0.0, 0.0)]), why or "no step")


#: The Opacus mechanism names :func:`register` adds, and the accountant each builds.
MECHANISMS = {AllocationAccountant.mechanism(): AllocationAccountant,
              PoissonAccountant.mechanism(): PoissonAccountant}


def register(force: bool = False) -> dict[str, type]:
    """Register the accountants with Opacus (``opacus.accountants.registry.register_accountant``) under
    :data:`MECHANISMS`' names, so that ``PrivacyEngine(accountant="gce-shuffled")`` uses them; returns the
    registered classes (each an ``IAccountant`` subclass). Calling it again is harmless; ``force`` replaces
    another accountant registered under the same name."""
    from opacus.accountants import IAccountant
    from opacus.accountants.registry import _ACCOUNTANTS, register_accountant

    classes = {}
    for name, base in MECHANISMS.items():
        current = _ACCOUNTANTS.get(name)
        if current is not None and getattr(current, "_gce_base", None) is base:
            classes[name] = current
            continue
        cls = type(base.__name__, (base, IAccountant), {"_gce_base": base, "__module__": __name__,
                                                          "__doc__": base.__doc__})
        register_accountant(name, cls, force=force)
        classes[name] = cls
    return classes

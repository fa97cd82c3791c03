"""dp-accounting's ``DpEvent`` trees as gce guarantees (docs/design.md, "From dp-accounting").

dp-accounting (Google's ``dp_accounting`` package) describes what a private computation ran as a tree of
events; :func:`from_dp_event` turns one into the multiset ``{guarantee: count}`` that :func:`gce.compose`
takes, reading each leaf as the guarantee record of the same mechanism
(:mod:`gce.accounting.guarantees`, all stated for add/remove of the target's record):

=================================================  ==============================================================
event                                              guarantee
=================================================  ==============================================================
``GaussianDpEvent(noise_multiplier)``              ``GaussianMechanism(sigma=noise_multiplier, sensitivity=1)``
``LaplaceDpEvent(noise_multiplier)``               ``LaplaceMechanism(scale=noise_multiplier, sensitivity=1)``
``EpsilonDeltaDpEvent(epsilon, delta)``            ``ApproxDP(epsilon, delta)`` (``PureDP`` when delta is 0)
``RandomizedResponseDpEvent(p, k)``                ``RandomizedResponse(log(1 + k (1 - p) / p))`` (below)
``ZCDpEvent(rho, xi=0)``                           ``ZCDP(rho)`` (xi > 0 refused: no record holds it)
``PoissonSampledDpEvent(q, event)``                ``Subsampled(q, ...)`` (BBG18; a rate of 0: nothing)
``DiscreteLaplaceDpEvent(a, sensitivity=1)``       ``PureDP(a)``: its pair is the canonical pair of (a, 0) exactly
``DiscreteLaplaceDpEvent(a, s)``, s >= 2           its own law (``GceAccountant`` only, below)
``SampledWithoutReplacementDpEvent(n, m, event)``  under ``REPLACE_ONE`` only (``GceAccountant``, below)
``RandomAllocationDpEvent(event, k, t)``           ``GceAccountant`` only (below); k = t: the k Gaussians
``SelfComposedDpEvent(event, count)``              the event's multiset, every count times ``count``
``ComposedDpEvent(events)``                        the sum of the events' multisets
``NoOpDpEvent()``                                  nothing (the empty multiset)
=================================================  ==============================================================

Every other event (``NonPrivateDpEvent``, sampling with replacement, tree aggregation, ...) is refused with
:class:`UnsupportedEventError` naming its class and where it sits in the tree, never read approximately.
Events are matched by class name, so an event class that the installed dp-accounting does not have
(``EpsilonDeltaDpEvent`` is in its repository, not in release 0.6.0; ``RandomAllocationDpEvent(event,
num_selected, num_steps)`` is in its pull request #414) is read when it appears, and nothing here imports
dp-accounting.

*Trees as given.* The tree is read without recursion (:func:`gce.validation.fold_tree`): an event nested more
than :data:`gce.validation.MAX_NESTING` (100) levels deep, or one inside itself (a ``ComposedDpEvent`` whose
``events`` list was given itself), is refused naming its place, its middle elided (``event.event.event<85 levels>.event.event: nested deeper
than 100``); the same event object at several places is read once; a mechanism run more than
2**53 times in all (counts multiplied down the tree) is refused. A guarantee record's refusal is given in the
event's words at its place (``event.events[3].noise_multiplier: must be finite, got inf``, not ``sigma``), and
every message shows values shortened (:func:`gce.validation.shown`), never the tree whole.

*Events no guarantee record holds.* Three events have a pair that no record describes; :func:`read_dp_event`
(what :class:`~gce.bridges.accountant.GceAccountant` reads) returns the records of :mod:`.event_laws` for
them, and :func:`from_dp_event` refuses them naming the event: the discrete Laplace mechanism of sensitivity
s >= 2 (a mixture of canonical pairs, composed as its exact law), sampling ``m`` of ``n`` records without
replacement (read under dp-accounting's ``REPLACE_ONE`` only, as its RDP accountant reads it: the
symmetrised subsampled pair, a dominating pair by advanced joint convexity, BBG18 Thm. 2; refused under
``ADD_OR_REMOVE_ONE`` naming the relation) and random allocation (:func:`gce.priors.allocation.allocation_curve`).
Under ``REPLACE_ONE`` the noise events (Gaussian, Laplace, discrete Laplace, ``EpsilonDelta``, zCDP,
randomized response) are the same pairs, their sensitivity read under that relation as dp-accounting reads
it; Poisson sampling and random allocation, whose guarantees are for add/remove, are refused there.

*Randomized response.* dp-accounting's k-ary randomized response keeps the input bucket with
probability ``1 - p`` and otherwise answers a uniform bucket; its likelihood ratio between two inputs is at
most ``e^eps = 1 + k (1 - p) / p``, so it is eps-DP for replacing the record's bucket, and for replacing it
by dp-accounting's special record (a uniform answer: ``REPLACE_SPECIAL``, its add/remove reading), whose
ratios ``k (1 - p) + p`` and ``1 / p`` are no larger. gce's ``RandomizedResponse(eps)`` is the canonical
pair of (eps, 0) (002 Thm. II.5), which every eps-DP mechanism is a post-processing of: for k = 2 it is
the mechanism itself (exact), for k > 2 a valid, looser bound (the k-ary pair is the binary one with
probability ``1 - p + 2 p / k`` and uninformative otherwise).

*Poisson sampling of a composition.* A ``PoissonSampledDpEvent`` whose inner event composes several
Gaussian mechanisms (``sensitivity / sigma = mu_i``) runs them all on the same sample: together they are
one Gaussian of ``mu = sqrt(sum mu_i^2)`` (DRS22 Cor. 3.3), so the event is ``Subsampled(q,
GaussianMechanism(1 / mu))``, as dp-accounting's RDP accountant reads it. A sampled composition of other
mechanisms has no record here and is refused.

References
----------
002: Kairouz, Oh, Viswanath, "The Composition Theorem for Differential Privacy" (Thm. II.5).
BBG18: Balle, Barthe, Gaboardi, "Privacy Amplification by Subsampling" (Thm. 8, Poisson; Thm. 2, advanced
joint convexity).
DRS22: Dong, Roth, Su, "Gaussian Differential Privacy" (Cor. 3.3).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Generator, Mapping
from types import GeneratorType
from dataclasses import dataclass

from ..accounting import kinds
from ..accounting.guarantees import (
    ZCDP,
    ApproxDP,
    GaussianMechanism,
    Guarantee,
    LaplaceMechanism,
    PureDP,
    RandomizedResponse,
)
from ..errors import InvalidParameterError, UnsupportedCombinationError
from ..validation import MAX_COUNT, MAX_NESTING, fold_tree, is_integer, is_number, shown
from .event_laws import RECORDS, DiscreteLaplaceLoss, RandomAllocation, ReplaceOneSampledGaussian

__all__ = ["UnsupportedEventError", "SUPPORTED_EVENTS", "RELATIONS", "is_dp_event", "from_dp_event", "read_dp_event",
           "check_combination", "as_guarantee"]

#: A multiset of guarantees, and (:func:`read_dp_event`) of the records of :mod:`.event_laws`.
Multiset = dict[Guarantee, int]
#: What the reader of an event with events inside is (:data:`_READERS`).
_Reading = Generator[list[tuple[object, str]], list[Multiset], Multiset]

#: dp-accounting's ``NeighboringRelation`` names the events are read under (:func:`read_dp_event`).
ADD_OR_REMOVE_ONE, REPLACE_ONE = "ADD_OR_REMOVE_ONE", "REPLACE_ONE"
RELATIONS = (ADD_OR_REMOVE_ONE, REPLACE_ONE)


@dataclass(frozen=True)
class _Context:
    """How a tree is read: under which neighbouring relation, and whether the records of events that no
    guarantee holds (:data:`.event_laws.RECORDS`) may be returned (``GceAccountant``) or are refused
    (:func:`from_dp_event`, whose multiset is for :func:`gce.compose`)."""

    relation: str
    records: bool


_GUARANTEES = _Context(ADD_OR_REMOVE_ONE, records=False)


class UnsupportedEventError(InvalidParameterError, UnsupportedCombinationError):
    """An event gce has no guarantee for; ``field`` says where it sits in the tree (``event``,
    ``event.events[2]``, ...) and the message names its class. Caught as either parent."""


def is_dp_event(value: object) -> bool:
    """Whether ``value`` is a dp-accounting ``DpEvent`` (a class named ``DpEvent`` among its bases; no
    import of dp-accounting needed)."""
    return any(cls.__name__ == "DpEvent" for cls in type(value).__mro__[1:])


def _name(event: object) -> str:
    return type(event).__name__


def _number(event: object, attribute: str, field: str, low: float, high: float = math.inf) -> float:
    value = getattr(event, attribute, None)
    bounds = f"[{low:g}, {high:g}]" if math.isfinite(high) else f">= {low:g}"
    try:
        number = float(value) if is_number(value) else math.nan
    except OverflowError:  # an integer beyond a double's range (10**400)
        bounds = "a double can hold"
        number = math.nan
    if not low <= number <= high:
        raise InvalidParameterError(f"{field}.{attribute}", f"{_name(event)}.{attribute} must be a number "
                                                            f"{bounds}, got {shown(value)}")
    return number


def _non_private(event: object, field: str, why: str) -> UnsupportedEventError:
    return UnsupportedEventError(field, f"{_name(event)} {why}: it is not differentially private, so no "
                                        "guarantee holds")


def _gaussian(event: object, field: str, ctx: _Context) -> Multiset:
    sigma = _number(event, "noise_multiplier", field, 0.0)
    if sigma == 0.0:
        raise _non_private(event, field, "with noise_multiplier 0 adds no noise")
    return {GaussianMechanism(sigma=sigma, sensitivity=1.0): 1}


def _laplace(event: object, field: str, ctx: _Context) -> Multiset:
    scale = _number(event, "noise_multiplier", field, 0.0)
    if scale == 0.0:
        raise _non_private(event, field, "with noise_multiplier 0 adds no noise")
    return {LaplaceMechanism(scale=scale, sensitivity=1.0): 1}


def _epsilon_delta(event: object, field: str, ctx: _Context) -> Multiset:
    epsilon = _number(event, "epsilon", field, 0.0)
    delta = _number(event, "delta", field, 0.0, 1.0)
    if delta >= 1.0:
        raise _non_private(event, field, "with delta 1 bounds nothing")
    return {PureDP(epsilon) if delta == 0.0 else ApproxDP(epsilon, delta): 1}


def rr_epsilon(noise_parameter: float, num_buckets: int) -> float:
    """The epsilon of dp-accounting's k-ary randomized response with noise parameter p (module doc):
    ``log(1 + k (1 - p) / p)``, computed without cancellation."""
    return math.log1p(num_buckets * (1.0 - noise_parameter) / noise_parameter)


def _randomized_response(event: object, field: str, ctx: _Context) -> Multiset:
    p = _number(event, "noise_parameter", field, 0.0, 1.0)
    k = getattr(event, "num_buckets", None)
    if not is_integer(k) or k < 1:
        raise InvalidParameterError(f"{field}.num_buckets", f"{_name(event)}.num_buckets must be an integer "
                                                            f">= 1, got {shown(k)}")
    if k == 1 or p == 1.0:  # the answer does not depend on the input
        return {}
    if p == 0.0:
        raise _non_private(event, field, "with noise_parameter 0 answers the input itself")
    return {RandomizedResponse(rr_epsilon(p, int(k))): 1}


def _zcdp(event: object, field: str, ctx: _Context) -> Multiset:
    rho = _number(event, "rho", field, 0.0)
    xi = _number(event, "xi", field, 0.0) if hasattr(event, "xi") else 0.0
    if xi != 0.0:
        raise UnsupportedEventError(field, f"{_name(event)} with xi {xi:g} > 0 (approximate zCDP) has no "
                                           "guarantee record in gce; only xi = 0 (ZCDP(rho)) is read")
    return {ZCDP(rho): 1}


def _one_gaussian(inner: Multiset) -> Guarantee | None:
    """The one Gaussian mechanism that a composition of Gaussian mechanisms on the same input is (DRS22
    Cor. 3.3: mu = sqrt(sum mu_i^2)), or None when some entry is not a Gaussian mechanism or GDP."""
    mus = []
    for guarantee, count in inner.items():
        family = kinds.family(guarantee)
        if family is None or family[0] != "gaussian":
            return None
        mus.append((float(kinds.gdp_mu(guarantee)), count))
    top = max((mu for mu, _ in mus), default=0.0)
    if top == 0.0:
        return PureDP(0.0)
    # sigma = 1 / sqrt(sum n mu^2), scaled by the largest mu (no overflow of mu^2; counts are at most 2**53)
    return GaussianMechanism(sigma=1.0 / top / math.sqrt(sum(n * (mu / top) ** 2 for mu, n in mus)))


def _poisson(event: object, field: str, ctx: _Context) -> _Reading:
    rate = _number(event, "sampling_probability", field, 0.0, 1.0)
    if ctx.relation != ADD_OR_REMOVE_ONE:
        raise _wrong_relation(event, field, ctx, ADD_OR_REMOVE_ONE, "Poisson sampling's guarantees "
                                                                    "(Subsampled) are for add/remove of a record")
    inner, = yield [(getattr(event, "event", None), ".event")]
    if rate == 0.0 or not inner:
        return {}
    if any(isinstance(g, RECORDS) for g in inner):
        raise UnsupportedEventError(field, f"{_name(event)} of {_describe(inner)}: no amplification by Poisson "
                                           "sampling is read for it")
    if len(inner) == 1 and next(iter(inner.values())) == 1:
        single = next(iter(inner))
    else:
        single = _one_gaussian(inner)
        if single is None:
            raise UnsupportedEventError(field, f"{_name(event)} of a composition of {_describe(inner)}: a "
                                               "Poisson-sampled composition is read only when it is made of "
                                               "Gaussian mechanisms (one Gaussian together)")
    try:
        return {kinds.subsample(single, rate): 1}
    except UnsupportedCombinationError as error:
        raise UnsupportedEventError(field, f"{_name(event)}: {error}") from None


def _self_composed(event: object, field: str, ctx: _Context) -> _Reading:
    count = getattr(event, "count", None)
    if not is_integer(count) or not 0 <= count <= MAX_COUNT:
        raise InvalidParameterError(f"{field}.count", f"{_name(event)}.count must be an integer in 0..2**53, "
                                                      f"got {shown(count)}")
    inner, = yield [(getattr(event, "event", None), ".event")]
    return _counted(event, field, {g: n * int(count) for g, n in inner.items() if count})


def _composed(event: object, field: str, ctx: _Context) -> _Reading:
    events = getattr(event, "events", None)
    if not isinstance(events, (list, tuple)):
        raise InvalidParameterError(f"{field}.events", f"{_name(event)}.events must be a list of events, "
                                                       f"got {shown(events)}")
    total: Counter[Guarantee] = Counter()
    for inner in (yield [(sub, f".events[{i}]") for i, sub in enumerate(events)]):
        total.update(inner)
    return _counted(event, field, dict(total))


def _counted(event: object, field: str, ms: Multiset) -> Multiset:
    """``ms``, refused naming the event when some mechanism runs more than 2**53 times in all (a count must
    be exact as a double, as a scenario's ``repeat``: :data:`gce.validation.MAX_COUNT`)."""
    if any(n > MAX_COUNT for n in ms.values()):
        raise InvalidParameterError(field, f"{_name(event)} runs a mechanism more than 2**53 times in all "
                                           "(its counts multiplied down the tree)")
    return ms


def _count(event: object, attribute: str, field: str, low: int) -> int:
    value = getattr(event, attribute, None)
    if not is_integer(value) or value < low:
        raise InvalidParameterError(f"{field}.{attribute}", f"{_name(event)}.{attribute} must be an integer "
                                                            f">= {low}, got {shown(value)}")
    return int(value)


def _wrong_relation(event: object, field: str, ctx: _Context, needed: str, why: str) -> UnsupportedEventError:
    return UnsupportedEventError(field, f"{_name(event)} is read under NeighboringRelation.{needed} only ({why}); "
                                        f"it was given under NeighboringRelation.{ctx.relation}")


def _no_record(event: object, field: str, what: str) -> UnsupportedEventError:
    return UnsupportedEventError(field, f"{_name(event)} {what}: no guarantee record holds it, so gce.compose "
                                        "cannot take it; gce.GceAccountant reads and composes it")


def _discrete_laplace(event: object, field: str, ctx: _Context) -> Multiset:
    """``DiscreteLaplaceDpEvent(noise_parameter a, sensitivity s)``: ``PureDP(a)`` for s = 1 (its pair is the
    canonical pair of (a, 0) exactly), its own law for s >= 2 (:class:`.event_laws.DiscreteLaplaceLoss`)."""
    a = _number(event, "noise_parameter", field, 0.0)
    s = _count(event, "sensitivity", field, 0)
    if s == 0:
        return {}
    if a == 0.0:  # e^{-a |z|} does not normalise
        raise UnsupportedEventError(field, f"{_name(event)} with noise_parameter 0 is no distribution "
                                           "(dp-accounting counts it as not private)")
    if math.isinf(a):
        raise _non_private(event, field, "with noise_parameter inf adds no noise")
    if s == 1:
        return {PureDP(a): 1}
    if not ctx.records:
        raise _no_record(event, field, f"with sensitivity {s} (a mixture of canonical pairs, looser as "
                                       f"PureDP({a * s:g}))")
    return {DiscreteLaplaceLoss(a, s): 1}


def _gaussian_mu(event: object, field: str, inner: Multiset, what: str) -> float:
    """mu of the one Gaussian that the inner event is (several on one sample: DRS22 Cor. 3.3), or a refusal
    naming the outer event."""
    single = _one_gaussian(inner) if not any(isinstance(g, RECORDS) for g in inner) else None
    if single is None:
        raise UnsupportedEventError(field, f"{_name(event)} of {_describe(inner)}: {what} is read of Gaussian "
                                           "mechanisms only (GaussianDpEvent, or a composition of them on the "
                                           "same sample), as dp-accounting reads it")
    return float(kinds.gdp_mu(single) or 0.0)  # (PureDP(0): no Gaussian has sensitivity)


def _without_replacement(event: object, field: str, ctx: _Context) -> _Reading:
    """``SampledWithoutReplacementDpEvent(source_dataset_size n, sample_size m, event)`` of Gaussian
    mechanisms, under REPLACE_ONE: the symmetrised subsampled pair (:class:`.event_laws.ReplaceOneSampledGaussian`);
    the inner event itself when m = n."""
    n = _count(event, "source_dataset_size", field, 1)
    m = _count(event, "sample_size", field, 0)
    if m > n:
        raise InvalidParameterError(f"{field}.sample_size", f"{_name(event)}.sample_size must be at most "
                                                            f"source_dataset_size = {n}, got {m}")
    if ctx.relation != REPLACE_ONE:
        raise _wrong_relation(event, field, ctx, REPLACE_ONE, "a sample of fixed size amplifies the replacement "
                                                              "of a record, as dp-accounting's RDP accountant "
                                                              "reads it; use GceAccountant(REPLACE_ONE)")
    inner, = yield [(getattr(event, "event", None), ".event")]
    if m == 0 or not inner:
        return {}
    mu = _gaussian_mu(event, field, inner, "sampling without replacement")
    if mu == 0.0:
        return {}
    if m == n:
        return {GaussianMechanism(sigma=1.0 / mu): 1}
    if not ctx.records:
        raise _no_record(event, field, "(sampling without replacement)")
    return {ReplaceOneSampledGaussian(mu, m / n): 1}


def _random_allocation(event: object, field: str, ctx: _Context) -> _Reading:
    """``RandomAllocationDpEvent(event, num_selected k, num_steps t)`` of Gaussian mechanisms (dp-accounting's
    pull request #414): :class:`.event_laws.RandomAllocation`, one epoch; k = t is the k Gaussians composed."""
    k = _count(event, "num_selected", field, 0)
    t = _count(event, "num_steps", field, 1)
    if k > t:
        raise InvalidParameterError(f"{field}.num_selected", f"{_name(event)}.num_selected must be at most "
                                                             f"num_steps = {t}, got {k}")
    if ctx.relation != ADD_OR_REMOVE_ONE:
        raise _wrong_relation(event, field, ctx, ADD_OR_REMOVE_ONE, "random allocation's curve is for add/remove "
                                                                    "of a record")
    inner, = yield [(getattr(event, "event", None), ".event")]
    if k == 0 or not inner:
        return {}
    mu = _gaussian_mu(event, field, inner, "random allocation")
    if mu == 0.0:
        return {}
    if k == t:  # every step: the k Gaussians themselves
        return _counted(event, field, {GaussianMechanism(sigma=1.0 / mu): k})
    if not ctx.records:
        raise _no_record(event, field, "(random allocation)")
    return {RandomAllocation(mu, t, k): 1}


#: The events read, by class name, and how: a reader of an event with events inside is a generator that checks
#: the event's own fields, yields its events (with what each adds to the place) and receives their multisets
#: (:func:`gce.validation.fold_tree`).
_READERS: dict[str, Callable[[object, str, "_Context"], "Multiset | _Reading"]] = {
    "NoOpDpEvent": lambda event, field, ctx: {},
    "GaussianDpEvent": _gaussian,
    "LaplaceDpEvent": _laplace,
    "EpsilonDeltaDpEvent": _epsilon_delta,
    "RandomizedResponseDpEvent": _randomized_response,
    "ZCDpEvent": _zcdp,
    "PoissonSampledDpEvent": _poisson,
    "SelfComposedDpEvent": _self_composed,
    "ComposedDpEvent": _composed,
    "DiscreteLaplaceDpEvent": _discrete_laplace,
    "SampledWithoutReplacementDpEvent": _without_replacement,
    "RandomAllocationDpEvent": _random_allocation,
}
#: The names of the event classes :func:`from_dp_event` reads.
SUPPORTED_EVENTS = tuple(_READERS)


#: What each event's fields are called in the guarantee records it is read as (``GaussianDpEvent``'s
#: ``noise_multiplier`` is ``GaussianMechanism``'s ``sigma``): a record's refusal is given in the event's names,
#: at the event's place (``event.events[3].noise_multiplier: must be finite, got inf``).
_EVENT_NAMES: dict[str, dict[str, str]] = {
    "GaussianDpEvent": {"sigma": "noise_multiplier", "mu": "noise_multiplier"},
    "LaplaceDpEvent": {"scale": "noise_multiplier"},
    "RandomizedResponseDpEvent": {"epsilon": "noise_parameter"},
    "DiscreteLaplaceDpEvent": {"epsilon": "noise_parameter", "parameter": "noise_parameter"},
    "PoissonSampledDpEvent": {"rate": "sampling_probability", "mechanism": "event", "sigma": "event",
                              "epsilon": "event", "delta": "event", "scale": "event"},
    "SelfComposedDpEvent": {"sigma": "event"},
    "SampledWithoutReplacementDpEvent": {"sigma": "event", "mu": "event", "rate": "sample_size"},
    "RandomAllocationDpEvent": {"sigma": "event", "mu": "event"},
}


def _in_event_terms(error: InvalidParameterError, event: object, field: str) -> InvalidParameterError:
    """A refusal raised while reading ``event`` at ``field``: as it is when it already names a place under
    ``field``; a guarantee record's (``sigma: must be finite``) renamed to the event's field, at its place."""
    if error.field == field or error.field.startswith((f"{field}.", f"{field}[")):
        return error
    head, dot, rest = error.field.partition(".")
    name = _EVENT_NAMES.get(_name(event), {}).get(head, head)
    return type(error)(name + dot + rest, error.detail).within(field)


def _translating(reading: _Reading, event: object, field: str) -> _Reading:
    """An event's reading with events inside, its refusals in the event's terms (:func:`_in_event_terms`)."""
    try:
        return (yield from reading)
    except InvalidParameterError as error:
        raise _in_event_terms(error, event, field) from None


def _read(event: object, field: str, ctx: _Context) -> Multiset:
    """The multiset of the tree under ``event`` (at ``field``): every node read once by
    :func:`gce.validation.fold_tree`, without recursion, at most :data:`gce.validation.MAX_NESTING` levels
    deep, a tree that contains itself refused."""
    def read(node: object, where: str) -> "Multiset | _Reading":
        if not is_dp_event(node):
            raise InvalidParameterError(where, f"must be a dp-accounting DpEvent, got {shown(node)}")
        reader = _READERS.get(_name(node))
        if reader is None:
            raise UnsupportedEventError(where, f"{_name(node)} is not an event gce reads (it reads "
                                               f"{', '.join(SUPPORTED_EVENTS)}): {shown(node)}")
        try:
            outcome = reader(node, where, ctx)
        except InvalidParameterError as error:
            raise _in_event_terms(error, node, where) from None
        return _translating(outcome, node, where) if type(outcome) is GeneratorType else outcome

    return fold_tree(event, field, read, limit=MAX_NESTING,
                     too_deep=f"nested deeper than {MAX_NESTING} (gce.validation.MAX_NESTING)")


DESCRIBED_CHARACTERS = 160
"""What :func:`_describe` spends on the entries it shows (the first is always shown, cut by :func:`shown`)."""


def _describe(ms: Multiset, most: int = 3) -> str:
    """At most the first ``most`` entries of a multiset for a message (``n x guarantee``), as many as fit in
    :data:`DESCRIBED_CHARACTERS`, and how many more: a message that names several long guarantees (subsampled
    Gaussians with full-precision rates) stays one short line."""
    parts: list[str] = []
    for g, n in itertools.islice(ms.items(), most):
        part = f"{n} x {shown(g, 80)}"
        if parts and sum(len(p) + 2 for p in parts) + len(part) > DESCRIBED_CHARACTERS:
            break
        parts.append(part)
    if len(ms) > len(parts):
        parts.append(f"... ({len(ms) - len(parts)} more)")
    return ", ".join(parts)


def from_dp_event(event: object) -> dict[Guarantee, int]:
    """The guarantees of a dp-accounting ``DpEvent`` tree, as the multiset ``{guarantee: count}`` that
    :func:`gce.compose` takes (module doc: which event is which guarantee).

    Raises
    ------
    UnsupportedEventError
        An event with no guarantee here (its class and place in the tree in the message and ``field``).
    InvalidParameterError
        ``event`` is no ``DpEvent``, or a parameter is out of range (``field`` names it).

    Examples
    --------
    >>> from dp_accounting import dp_event
    >>> step = dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.1))
    >>> from_dp_event(dp_event.SelfComposedDpEvent(step, 1000))
    {Subsampled(rate=0.01, mechanism=GaussianMechanism(sigma=1.1, sensitivity=1.0)): 1000}
    """
    return {g: n for g, n in _read(event, "event", _GUARANTEES).items() if n > 0}


def read_dp_event(event: object, neighboring_relation: str = ADD_OR_REMOVE_ONE) -> Multiset:
    """The multiset of an event tree read under ``neighboring_relation`` (a name of :data:`RELATIONS`), with
    the records of events that no guarantee holds (:data:`.event_laws.RECORDS`): what
    :class:`~gce.bridges.accountant.GceAccountant` composes. Under ``REPLACE_ONE`` sampling without
    replacement is read and Poisson sampling and random allocation are refused; under ``ADD_OR_REMOVE_ONE``
    the other way round; every other event means the same pair under both.

    Raises
    ------
    UnsupportedEventError, InvalidParameterError
        As :func:`from_dp_event`.
    """
    if neighboring_relation not in RELATIONS:
        raise InvalidParameterError("neighboring_relation", f"must be one of {', '.join(RELATIONS)}, got "
                                                            f"{shown(neighboring_relation)}")
    ctx = _Context(neighboring_relation, records=True)
    return {g: n for g, n in _read(event, "event", ctx).items() if n > 0}


def _event_of(entry: object) -> str:
    names = {DiscreteLaplaceLoss: "DiscreteLaplaceDpEvent", RandomAllocation: "RandomAllocationDpEvent",
             ReplaceOneSampledGaussian: "SampledWithoutReplacementDpEvent"}
    return names.get(type(entry), shown(entry, 100))


def check_combination(held: Mapping[object, int], new: Mapping[object, int]) -> None:
    """Refuse composing ``new`` (a :func:`read_dp_event` multiset) with ``held`` where gce has no sound
    composition: a random allocation composes only with random allocations, and those with different
    parameters only when each selects one step (epochs of 1 of t, :func:`gce.priors.allocation.epochs`);
    the laws of :mod:`.event_laws` compose with every guarantee that has a privacy-loss distribution, not
    with zCDP.

    Raises
    ------
    UnsupportedEventError
        ``field`` ``event``; the message names the events.
    """
    entries = [g for g, n in {**held, **new}.items() if n > 0]
    allocations = {g for g in entries if isinstance(g, RandomAllocation)}
    others = [g for g in entries if not isinstance(g, RandomAllocation)]
    if allocations and others:
        raise UnsupportedEventError("event", "RandomAllocationDpEvent composes only with other random "
                                             f"allocations here, not with {_describe({g: 1 for g in others[:3]})}"
                                             f"{' ...' if len(others) > 3 else ''} (its curve is the allocation "
                                             "engine's, which has no other mechanisms)")
    first, more = sorted(allocations, key=repr)[:3], len(allocations) > 3
    if len(allocations) > 1 and any(g.selected > 1 for g in allocations):
        raise UnsupportedEventError("event", "RandomAllocationDpEvent with different noise_multiplier or "
                                             "num_steps composes only when every one has num_selected 1 "
                                             f"(got {', '.join(shown(g, 100) for g in first)}{' ...' if more else ''})")
    laws = sorted({_event_of(g) for g in entries if isinstance(g, RECORDS) and not isinstance(g, RandomAllocation)})
    bare = [g for g in entries if kinds.is_guarantee(g) and kinds.pld_source(g) is None]
    if laws and bare:
        raise UnsupportedEventError("event", f"{' and '.join(laws)} (composed as privacy-loss laws) cannot be "
                                             f"composed with ZCDpEvent ({_describe({g: 1 for g in bare})}): "
                                             "zCDP has no privacy-loss distribution")


def as_guarantee(value: object, repeat: int = 1, field: str = "mechanism") -> tuple[object, int]:
    """``(guarantee, repeat)`` for a record that takes one guarantee and a repeat count
    (:class:`gce.Invocation`, :class:`gce.InvocationGroup`, ``Accountant.spend``): a guarantee passes
    unchanged; a ``DpEvent`` of one mechanism, run ``n`` times, becomes that mechanism and ``repeat * n``.
    An event of several distinct mechanisms is refused (a record holds one guarantee: split it into one
    record per entry of :func:`from_dp_event`), and so is an event of none (``NoOpDpEvent``: nothing runs).
    Anything else passes unchanged, for the caller's own check."""
    if not is_dp_event(value):
        return value, repeat
    try:
        ms = from_dp_event(value)
    except InvalidParameterError as error:
        raise error.within(field) from None
    if len(ms) != 1:
        what = "no mechanism" if not ms else f"{len(ms)} distinct mechanisms ({_describe(ms)})"
        raise InvalidParameterError(field, f"{_name(value)} describes {what}; a record holds one guarantee: "
                                           "give one record per entry of gce.from_dp_event(event)")
    (guarantee, count), = ms.items()
    return guarantee, repeat * count if is_integer(repeat) else repeat

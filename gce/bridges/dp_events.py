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
``SelfComposedDpEvent(event, count)``              the event's multiset, every count times ``count``
``ComposedDpEvent(events)``                        the sum of the events' multisets
``NoOpDpEvent()``                                  nothing (the empty multiset)
=================================================  ==============================================================

Every other event (``NonPrivateDpEvent``, sampling with or without replacement, tree aggregation, ...) is
refused with :class:`UnsupportedEventError` naming its class and where it sits in the tree, never read
approximately. Events are matched by class name, so an event class that the installed dp-accounting does
not have (``EpsilonDeltaDpEvent`` is in its repository, not in release 0.6.0) is read when it appears, and
nothing here imports dp-accounting.

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
BBG18: Balle, Barthe, Gaboardi, "Privacy Amplification by Subsampling" (Thm. 8).
DRS22: Dong, Roth, Su, "Gaussian Differential Privacy" (Cor. 3.3).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

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
from ..validation import is_integer, is_number

__all__ = ["UnsupportedEventError", "SUPPORTED_EVENTS", "is_dp_event", "from_dp_event", "as_guarantee"]

Multiset = dict[Guarantee, int]


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
    if not is_number(value) or not low <= value <= high or math.isnan(value):
        bounds = f"[{low:g}, {high:g}]" if math.isfinite(high) else f">= {low:g}"
        raise InvalidParameterError(f"{field}.{attribute}", f"{_name(event)}.{attribute} must be a number "
                                                            f"{bounds}, got {value!r}")
    return float(value)


def _non_private(event: object, field: str, why: str) -> UnsupportedEventError:
    return UnsupportedEventError(field, f"{_name(event)} {why}: it is not differentially private, so no "
                                        "guarantee holds")


def _gaussian(event: object, field: str) -> Multiset:
    sigma = _number(event, "noise_multiplier", field, 0.0)
    if sigma == 0.0:
        raise _non_private(event, field, "with noise_multiplier 0 adds no noise")
    return {GaussianMechanism(sigma=sigma, sensitivity=1.0): 1}


def _laplace(event: object, field: str) -> Multiset:
    scale = _number(event, "noise_multiplier", field, 0.0)
    if scale == 0.0:
        raise _non_private(event, field, "with noise_multiplier 0 adds no noise")
    return {LaplaceMechanism(scale=scale, sensitivity=1.0): 1}


def _epsilon_delta(event: object, field: str) -> Multiset:
    epsilon = _number(event, "epsilon", field, 0.0)
    delta = _number(event, "delta", field, 0.0, 1.0)
    if delta >= 1.0:
        raise _non_private(event, field, "with delta 1 bounds nothing")
    return {PureDP(epsilon) if delta == 0.0 else ApproxDP(epsilon, delta): 1}


def rr_epsilon(noise_parameter: float, num_buckets: int) -> float:
    """The epsilon of dp-accounting's k-ary randomized response with noise parameter p (module doc):
    ``log(1 + k (1 - p) / p)``, computed without cancellation."""
    return math.log1p(num_buckets * (1.0 - noise_parameter) / noise_parameter)


def _randomized_response(event: object, field: str) -> Multiset:
    p = _number(event, "noise_parameter", field, 0.0, 1.0)
    k = getattr(event, "num_buckets", None)
    if not is_integer(k) or k < 1:
        raise InvalidParameterError(f"{field}.num_buckets", f"{_name(event)}.num_buckets must be an integer "
                                                            f">= 1, got {k!r}")
    if k == 1 or p == 1.0:  # the answer does not depend on the input
        return {}
    if p == 0.0:
        raise _non_private(event, field, "with noise_parameter 0 answers the input itself")
    return {RandomizedResponse(rr_epsilon(p, int(k))): 1}


def _zcdp(event: object, field: str) -> Multiset:
    rho = _number(event, "rho", field, 0.0)
    xi = _number(event, "xi", field, 0.0) if hasattr(event, "xi") else 0.0
    if xi != 0.0:
        raise UnsupportedEventError(field, f"{_name(event)} with xi {xi:g} > 0 (approximate zCDP) has no "
                                           "guarantee record in gce; only xi = 0 (ZCDP(rho)) is read")
    return {ZCDP(rho): 1}


def _one_gaussian(inner: Multiset) -> Guarantee | None:
    """The one Gaussian mechanism that a composition of Gaussian mechanisms on the same input is (DRS22
    Cor. 3.3: mu = sqrt(sum mu_i^2)), or None when some entry is not a Gaussian mechanism or GDP."""
    total = 0.0
    for guarantee, count in inner.items():
        family = kinds.family(guarantee)
        if family is None or family[0] != "gaussian":
            return None
        total += count * kinds.gdp_mu(guarantee) ** 2
    return GaussianMechanism(sigma=1.0 / math.sqrt(total)) if total > 0.0 else PureDP(0.0)


def _poisson(event: object, field: str) -> Multiset:
    rate = _number(event, "sampling_probability", field, 0.0, 1.0)
    inner = _read(getattr(event, "event", None), f"{field}.event")
    if rate == 0.0 or not inner:
        return {}
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


def _self_composed(event: object, field: str) -> Multiset:
    count = getattr(event, "count", None)
    if not is_integer(count) or count < 0:
        raise InvalidParameterError(f"{field}.count", f"{_name(event)}.count must be an integer >= 0, "
                                                      f"got {count!r}")
    inner = _read(getattr(event, "event", None), f"{field}.event")
    return {g: n * int(count) for g, n in inner.items() if count}


def _composed(event: object, field: str) -> Multiset:
    events = getattr(event, "events", None)
    if events is None or isinstance(events, (str, bytes)):
        raise InvalidParameterError(f"{field}.events", f"{_name(event)}.events must be a list of events, "
                                                       f"got {events!r}")
    total: Counter[Guarantee] = Counter()
    for i, sub in enumerate(events):
        total.update(_read(sub, f"{field}.events[{i}]"))
    return dict(total)


#: The events read, by class name, and how.
_READERS: dict[str, Callable[[object, str], Multiset]] = {
    "NoOpDpEvent": lambda event, field: {},
    "GaussianDpEvent": _gaussian,
    "LaplaceDpEvent": _laplace,
    "EpsilonDeltaDpEvent": _epsilon_delta,
    "RandomizedResponseDpEvent": _randomized_response,
    "ZCDpEvent": _zcdp,
    "PoissonSampledDpEvent": _poisson,
    "SelfComposedDpEvent": _self_composed,
    "ComposedDpEvent": _composed,
}
#: The names of the event classes :func:`from_dp_event` reads.
SUPPORTED_EVENTS = tuple(_READERS)


def _read(event: object, field: str) -> Multiset:
    if not is_dp_event(event):
        raise InvalidParameterError(field, f"must be a dp-accounting DpEvent, got {event!r}")
    reader = _READERS.get(_name(event))
    if reader is None:
        raise UnsupportedEventError(field, f"{_name(event)} is not an event gce reads (it reads "
                                           f"{', '.join(SUPPORTED_EVENTS)}): {event!r}")
    return reader(event, field)


def _describe(ms: Multiset) -> str:
    return ", ".join(f"{n} x {g!r}" for g, n in ms.items())


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
    return {g: n for g, n in _read(event, "event").items() if n > 0}


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

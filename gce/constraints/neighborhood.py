"""The preset neighbourhoods: which pairs of allowed membership sets the adversary tests (001, Sec. III).

``unbounded`` (add/remove): pairs (empty set, b); ``bounded`` (replace): pairs
(b, b'), both allowed. A scenario or a weight problem stores the plain string;
:class:`Neighborhood` names the values (as dp-accounting's ``NeighboringRelation``)
and :func:`check_neighborhood` is the one check of a given value.
"""

from __future__ import annotations

from enum import StrEnum

from ..errors import InvalidParameterError
from ..validation import shown

__all__ = ["Neighborhood", "NEIGHBORHOODS", "check_neighborhood"]


class Neighborhood(StrEnum):
    """A preset neighbourhood; equal to (and formatted as) its string value."""

    UNBOUNDED = "unbounded"
    BOUNDED = "bounded"


#: The neighbourhood names, in the order error messages list them.
NEIGHBORHOODS: tuple[str, ...] = tuple(n.value for n in Neighborhood)


def check_neighborhood(value: object, field: str = "neighborhood") -> str:
    """Return ``value`` unless it is not one of :data:`NEIGHBORHOODS`; raise InvalidParameterError naming ``field``.

    Examples
    --------
    >>> check_neighborhood("bounded")
    'bounded'
    >>> check_neighborhood("replace")
    Traceback (most recent call last):
    ...
    gce.errors.InvalidParameterError: neighborhood: must be one of ('unbounded', 'bounded'), got 'replace'
    """
    if not isinstance(value, str) or value not in NEIGHBORHOODS:
        raise InvalidParameterError(field, f"must be one of {NEIGHBORHOODS}, got {shown(value)}")
    return value

"""The error hierarchy of ``gce``.

Every error the package raises on purpose derives from :class:`GCEError`, so a
caller can catch them all at once; each subclass is a kind of problem the user
can act on (compare networkx's ``networkx/exception.py``).

Messages name the offending field or parameter and its value, e.g.
``invocations[2].mechanism.epsilon: must be >= 0, got -1.0``.
"""

from __future__ import annotations

__all__ = [
    "GCEError",
    "InvalidParameterError",
    "InvalidScenarioError",
    "InfeasibleConstraintsError",
    "UnsupportedCombinationError",
    "NumericalLimitError",
    "ResourceLimitError",
]


class GCEError(Exception):
    """Base class of every error raised on purpose by ``gce``."""


class InvalidParameterError(GCEError, ValueError):
    """A parameter is out of its domain (a negative epsilon, a delta of 1, NaN, ...).

    Parameters
    ----------
    field : str
        The name of the offending parameter, e.g. ``"epsilon"`` or
        ``"mechanism.rate"``; enclosing code may prefix it with its own path.
    message : str
        What is wrong with the value, including the value itself.
    """

    def __init__(self, field: str, message: str):
        self.field = field
        self.detail = message
        super().__init__(f"{field}: {message}")

    def within(self, prefix: str) -> "InvalidParameterError":
        """The same error with ``prefix.`` in front of its field name."""
        return type(self)(f"{prefix}.{self.field}" if prefix else self.field, self.detail)


class InvalidScenarioError(InvalidParameterError):
    """A scenario (file or Python object) is malformed; ``field`` names where."""


class InfeasibleConstraintsError(GCEError):
    """Membership constraints contradict each other or a hypothesis' support."""


class UnsupportedCombinationError(GCEError):
    """The requested combination of guarantees, constraints and hypotheses has no method."""


class NumericalLimitError(GCEError, ArithmeticError):
    """Floating-point error would dominate the answer, so none is given."""


class ResourceLimitError(GCEError):
    """What the input asks for would not fit in the memory or the time allowed, so nothing is built.

    Raised before the allocation (or the engine's query) by :mod:`gce.resources`, with the estimate
    and the limit, so the machine is never exhausted to find out.

    Parameters
    ----------
    field : str
        The input that asks for it, e.g. ``"constraints[0].allowed"``; enclosing code may prefix it.
    message : str
        What would be built, its estimate and the limit.
    """

    def __init__(self, field: str, message: str):
        self.field = field
        self.detail = message
        super().__init__(f"{field}: {message}" if field else message)

    def within(self, prefix: str) -> "ResourceLimitError":
        """The same error with ``prefix.`` in front of its field name."""
        return type(self)(f"{prefix}.{self.field}" if prefix and self.field else prefix or self.field,
                          self.detail)

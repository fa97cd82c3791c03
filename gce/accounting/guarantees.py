"""Per-invocation privacy guarantees: small frozen records, validated at construction.

Each record *describes* what is known about one mechanism invocation; it has no
behaviour beyond validation. Composition theorems (:mod:`gce.accounting.theorems`) interpret
them. All guarantees are stated for add/remove-one neighbours, the relation the
generalized composition experiment uses per database (001, Sec. III, Alg. 2):
the target's record is in a database or it is not.

What must never change about the meaning of a field:

* ``epsilon``, ``delta``: the mechanism satisfies (epsilon, delta)-DP, i.e. its
  privacy profile is at most delta at epsilon, in both directions.
* ``rho``: rho-zCDP (Bun and Steinke 2016): Renyi divergence of order alpha at
  most rho * alpha for every alpha > 1.
* ``mu``: mu-Gaussian DP (Dong, Roth and Su 2022): trade-off function at least
  that of N(0, 1) vs N(mu, 1).
* ``sigma``, ``scale`` with ``sensitivity``: the concrete Gaussian / Laplace
  noise-adding mechanism on a query of that L2 / L1 sensitivity.
* ``rate``: Poisson subsampling, each record kept independently with that
  probability before the inner mechanism runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from typing import Union

from ..errors import InvalidParameterError
from ..validation import MAX_TABLE_NESTING, as_float, is_number, shown

__all__ = [
    "PureDP",
    "ApproxDP",
    "ZCDP",
    "GaussianDP",
    "GaussianMechanism",
    "LaplaceMechanism",
    "RandomizedResponse",
    "Subsampled",
    "Guarantee",
]


def _finite_at_least(name: str, value: float, low: float, *, strict: bool = False) -> float:
    if not is_number(value):
        raise InvalidParameterError(name, f"must be a number, got {shown(value)}")
    number = as_float(value)
    if math.isnan(number) or math.isinf(number):
        raise InvalidParameterError(name, f"must be finite, got {shown(value)}")
    if number < low or (strict and number == low):
        relation = ">" if strict else ">="
        raise InvalidParameterError(name, f"must be {relation} {low:g}, got {shown(value)}")
    return number


def _delta(value: float) -> float:
    value = _finite_at_least("delta", value, 0.0)
    if value >= 1.0:
        raise InvalidParameterError("delta", f"must lie in [0, 1), got {shown(value)}")
    return value


@dataclass(frozen=True)
class PureDP:
    """epsilon-DP (Dwork et al. 2006)."""

    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _finite_at_least("epsilon", self.epsilon, 0.0))


@dataclass(frozen=True)
class ApproxDP:
    """(epsilon, delta)-DP; dominated by the canonical pair of 002, eqs. 9-10."""

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _finite_at_least("epsilon", self.epsilon, 0.0))
        object.__setattr__(self, "delta", _delta(self.delta))


@dataclass(frozen=True)
class ZCDP:
    """rho-zero-concentrated DP (Bun and Steinke 2016)."""

    rho: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", _finite_at_least("rho", self.rho, 0.0))


@dataclass(frozen=True)
class GaussianDP:
    """mu-Gaussian DP (Dong, Roth and Su 2022; 000 Sec. VI)."""

    mu: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "mu", _finite_at_least("mu", self.mu, 0.0))


@dataclass(frozen=True)
class GaussianMechanism:
    """Gaussian noise of standard deviation ``sigma`` on a query of L2 ``sensitivity``;
    exactly (sensitivity / sigma)-GDP."""

    sigma: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", _finite_at_least("sigma", self.sigma, 0.0, strict=True))
        object.__setattr__(self, "sensitivity", _finite_at_least("sensitivity", self.sensitivity, 0.0))


@dataclass(frozen=True)
class LaplaceMechanism:
    """Laplace noise of ``scale`` b on a query of L1 ``sensitivity``; (sensitivity / b)-DP."""

    scale: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", _finite_at_least("scale", self.scale, 0.0, strict=True))
        object.__setattr__(self, "sensitivity", _finite_at_least("sensitivity", self.sensitivity, 0.0))


@dataclass(frozen=True)
class RandomizedResponse:
    """Binary randomized response with parameter epsilon: it reports the true bit
    with probability e^eps / (1 + e^eps). Its pair is the canonical pair of
    (epsilon, 0) (002, eqs. 9-10 with delta = 0)."""

    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _finite_at_least("epsilon", self.epsilon, 0.0))


@dataclass(frozen=True)
class Subsampled:
    """``mechanism`` run on a Poisson subsample: each record kept with probability ``rate``."""

    rate: float
    mechanism: "Guarantee"

    def __post_init__(self) -> None:
        rate = _finite_at_least("rate", self.rate, 0.0, strict=True)
        if rate > 1.0:
            raise InvalidParameterError("rate", f"must lie in (0, 1], got {shown(rate)}")
        object.__setattr__(self, "rate", rate)
        if not isinstance(self.mechanism, _GUARANTEE_TYPES):
            raise InvalidParameterError("mechanism", f"must be a guarantee, got {shown(self.mechanism)}")
        inner, depth = self.mechanism, 1
        while isinstance(inner, Subsampled):  # (records compare, hash and print recursively)
            inner, depth = inner.mechanism, depth + 1
            if depth > MAX_TABLE_NESTING:
                raise InvalidParameterError("mechanism", f"subsampled mechanisms nested deeper than "
                                                         f"{MAX_TABLE_NESTING} (gce.validation.MAX_TABLE_NESTING)")
        if isinstance(self.mechanism, (ZCDP, GaussianDP)):
            raise InvalidParameterError(
                "mechanism",
                f"subsampling a bare {type(self.mechanism).__name__} guarantee has no tight amplification "
                "theorem here; describe the mechanism (gaussian, laplace, randomized_response) or its "
                "(epsilon, delta) guarantee instead",
            )


Guarantee = Union[
    PureDP, ApproxDP, ZCDP, GaussianDP, GaussianMechanism, LaplaceMechanism, RandomizedResponse, Subsampled
]
_GUARANTEE_TYPES = (
    PureDP, ApproxDP, ZCDP, GaussianDP, GaussianMechanism, LaplaceMechanism, RandomizedResponse, Subsampled,
)


#: Below this epsilon, e^epsilon - 1 is a finite double (it overflows just above 709.78).
_EXPM1_SAFE = 700.0


def amplified(epsilon: float, delta: float, rate: float) -> tuple[float, float]:
    """Amplification by Poisson subsampling of an (epsilon, delta)-DP mechanism.

    Returns (ln(1 + q(e^epsilon - 1)), q delta) (Balle, Barthe and Gaboardi 2018,
    Thm. 8; 001 Sec. V-B cites it as [29, Thm. 8]).
    """
    if rate == 1.0:
        return epsilon, delta
    if epsilon < _EXPM1_SAFE:
        return math.log1p(rate * math.expm1(epsilon)), rate * delta
    # log(q e^eps + 1 - q) without forming e^eps, which overflows beyond eps ~ 709.
    return float(np.logaddexp(math.log(rate) + epsilon, math.log1p(-rate))), rate * delta


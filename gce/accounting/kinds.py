"""Guarantee kinds: one row per record class, holding all that gce knows of that kind.

A guarantee record (:mod:`gce.accounting.guarantees`) only describes; what a kind
*means* to the theorems, the PLD builder, the solvers, calibration and the
scenario files is its row in :data:`KINDS`, and the functions below read it.
Each question is answered by one traversal of the rows, so "is it supported"
and "compute it" cannot drift apart (dp-accounting's
``_maybe_compose(event, do_compose)`` is the model): a function returns None
(or False) where a kind has no value, and :func:`kind_of` raises
:class:`~gce.errors.UnsupportedCombinationError` for an object that is not a
guarantee, instead of falling through quietly.

This is the only module besides the records' own that tests a guarantee's
class. A new kind is a record in ``guarantees.py``, a row here and a line in
``Guarantee``; ``tests/test_kinds.py`` checks that every row is complete and that
every theorem's ``accepts`` agrees with its ``curve`` on every kind.

References
----------
002: Kairouz, Oh, Viswanath, "The Composition Theorem for Differential Privacy" (Thm. II.5).
BBG18: Balle, Barthe, Gaboardi, "Privacy Amplification by Subsampling" (Thm. 8).
BS16: Bun, Steinke, "Concentrated Differential Privacy" (Prop. 1.4, Prop. 1.6).
DRS22: Dong, Roth, Su, "Gaussian Differential Privacy".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..errors import UnsupportedCombinationError
from ..validation import shown
from .guarantees import (
    ZCDP,
    ApproxDP,
    GaussianDP,
    GaussianMechanism,
    Guarantee,
    LaplaceMechanism,
    PureDP,
    RandomizedResponse,
    Subsampled,
    amplified,
)

__all__ = [
    "Kind",
    "KINDS",
    "PLDSource",
    "FAMILIES",
    "TINY_LAPLACE",
    "kind_of",
    "is_guarantee",
    "point",
    "gdp_mu",
    "zcdp_rho",
    "is_canonical",
    "pld_source",
    "pld_noise",
    "one_directional",
    "sampling",
    "family",
    "implies",
    "dominance_chain",
    "subsample",
    "as_point",
    "calibrated_parameter",
    "with_parameter",
]

Point = tuple[float, float]

#: A Laplace mechanism with a smaller epsilon is bounded by its canonical (epsilon, 0) pair
#: (valid: it is epsilon-DP, 002 Thm. II.5); dp-accounting's own construction stalls there.
TINY_LAPLACE = 1e-6

#: The implication families (:func:`family`).
FAMILIES = ("point", "gaussian", "zcdp", "concrete")


class PLDSource(NamedTuple):
    """How dp-accounting builds a guarantee's privacy-loss distribution.

    ``kind`` ``"gaussian"`` or ``"laplace"``: from the mechanism itself,
    ``parameters`` = (sigma or scale, sensitivity, Poisson rate); ``"point"``:
    the canonical pair (002 eqs. 9-10) of ``parameters`` = (epsilon, delta),
    the identity when both are 0.
    """

    kind: str
    parameters: tuple[float, ...]


@dataclass(frozen=True)
class Kind:
    """Everything gce knows of one guarantee kind (one row of :data:`KINDS`).

    Attributes
    ----------
    record : type
        The record class (:mod:`gce.accounting.guarantees`).
    name : str
        Its ``kind`` in scenario files.
    keys : tuple of (file key, record field, required)
        Its keys in scenario files; a field ``mechanism`` holds a nested guarantee.
    point : callable
        g -> the single (epsilon, delta) it implies without choosing a delta, or None.
    gdp_mu : callable
        g -> mu with which it is mu-GDP exactly, or None.
    zcdp_rho : callable
        g -> rho with which it is rho-zCDP without a delta, or None.
    canonical : bool
        Whether its class is exactly that of the canonical pair of its point (002 Thm. II.5).
    pld : callable
        g -> :class:`PLDSource`, or None when dp-accounting has no distribution for it.
    noise : bool
        Whether it is a noise-adding mechanism whose PLD dp-accounting builds itself,
        so that subsampled its two directions differ (:func:`one_directional`).
    family : str
        Its implication family (:data:`FAMILIES`, :func:`family`).
    subsample : callable
        (g, rate) -> the guarantee of g run on a Poisson subsample at ``rate``;
        raises UnsupportedCombinationError where no amplification theorem applies.
    parameter : str or None
        The parameter :func:`gce.calibrate` searches (``"epsilon"``, ``"sigma"``), if any.
    with_parameter : callable or None
        (g, value) -> g with that parameter set to ``value`` (None iff ``parameter`` is).
    """

    record: type
    name: str
    keys: tuple[tuple[str, str, bool], ...]
    point: Callable[[Any], Point | None]
    gdp_mu: Callable[[Any], float | None]
    zcdp_rho: Callable[[Any], float | None]
    canonical: bool
    pld: Callable[[Any], PLDSource | None]
    noise: bool
    family: str
    subsample: Callable[[Any, float], Guarantee]
    parameter: str | None = None
    with_parameter: Callable[[Any, float], Guarantee] | None = None


def _none(g: Any) -> None:
    return None


def _pure_rho(g: Any) -> float:
    eps = point(g)[0]
    return eps * eps / 2.0  # pure eps-DP implies eps^2/2-zCDP (BS16 Prop. 1.4)


def _gaussian_rho(g: Any) -> float:
    mu = gdp_mu(g)
    return mu * mu / 2.0  # Gaussian mechanism: Delta^2 / (2 sigma^2) (BS16 Prop. 1.6)


#: The PLD of a mechanism whose output does not depend on the record (mu or sensitivity 0).
_IDENTITY = PLDSource("point", (0.0, 0.0))


def _point_pld(g: Any) -> PLDSource:
    return PLDSource("point", point(g))


def _gdp_pld(g: GaussianDP) -> PLDSource:
    return PLDSource("gaussian", (1.0 / g.mu, 1.0, 1.0)) if g.mu > 0 else _IDENTITY


def _gaussian_pld(g: GaussianMechanism) -> PLDSource:
    return PLDSource("gaussian", (g.sigma, g.sensitivity, 1.0)) if g.sensitivity > 0 else _IDENTITY


def _laplace_pld(g: LaplaceMechanism) -> PLDSource:
    if g.sensitivity / g.scale >= TINY_LAPLACE:
        return PLDSource("laplace", (g.scale, g.sensitivity, 1.0))
    return PLDSource("point", point(g))


def _subsampled_point(g: Subsampled) -> Point | None:
    inner = point(g.mechanism)
    return None if inner is None else amplified(*inner, g.rate)


def _subsampled_pld(g: Subsampled) -> PLDSource | None:
    """Poisson subsampling: dp-accounting's ``sampling_prob`` for noise, amplification
    (BBG18 Thm. 8) of the inner point otherwise. A subsampled noise mechanism
    subsampled again has neither here: declined."""
    inner = pld_source(g.mechanism)
    if inner is None:
        return None
    if inner.kind == "point":
        return PLDSource("point", amplified(*inner.parameters, g.rate) if g.rate < 1.0 else inner.parameters)
    if isinstance(g.mechanism, Subsampled):
        return None
    scale, sensitivity, _ = inner.parameters
    return PLDSource(inner.kind, (scale, sensitivity, g.rate))


def _wrap(g: Guarantee, rate: float) -> Guarantee:
    return Subsampled(rate, g)


def _subsample_gdp(g: GaussianDP, rate: float) -> Guarantee:
    # The Gaussian mechanism with sigma = 1/mu: its pair dominates every mu-GDP pair.
    return Subsampled(rate, GaussianMechanism(sigma=1.0 / g.mu) if g.mu > 0 else PureDP(0.0))


def _subsample_again(g: Subsampled, rate: float) -> Guarantee:
    return Subsampled(g.rate * rate, g.mechanism)  # two independent Poisson coins: one at the product


def _no_amplification(g: Guarantee, rate: float) -> Guarantee:
    raise UnsupportedCombinationError(
        f"zCDP ({shown(g)}) has no tight amplification by subsampling here; describe the mechanism "
        "(gaussian, laplace, randomized_response) or its (epsilon, delta) guarantee instead")


def _noise_keys(noise: str) -> tuple[tuple[str, str, bool], ...]:
    return (noise, noise, True), ("sensitivity", "sensitivity", False)


#: One row per guarantee kind, keyed by record class, in the order of ``Guarantee``.
KINDS: Mapping[type, Kind] = {
    row.record: row
    for row in (
        Kind(PureDP, "pure", (("epsilon", "epsilon", True),),
             point=lambda g: (g.epsilon, 0.0), gdp_mu=_none, zcdp_rho=_pure_rho, canonical=True,
             pld=_point_pld, noise=False, family="point", subsample=_wrap,
             parameter="epsilon", with_parameter=lambda g, p: PureDP(p)),
        Kind(ApproxDP, "approx", (("epsilon", "epsilon", True), ("delta", "delta", True)),
             point=lambda g: (g.epsilon, g.delta), gdp_mu=_none, zcdp_rho=_none, canonical=True,
             pld=_point_pld, noise=False, family="point", subsample=_wrap,
             parameter="epsilon", with_parameter=lambda g, p: ApproxDP(p, g.delta)),
        Kind(ZCDP, "zcdp", (("rho", "rho", True),),
             point=_none, gdp_mu=_none, zcdp_rho=lambda g: g.rho, canonical=False,
             pld=_none, noise=False, family="zcdp", subsample=_no_amplification),
        Kind(GaussianDP, "gdp", (("mu", "mu", True),),
             point=_none, gdp_mu=lambda g: g.mu, zcdp_rho=_gaussian_rho, canonical=False,
             pld=_gdp_pld, noise=True, family="gaussian", subsample=_subsample_gdp),
        Kind(GaussianMechanism, "gaussian", _noise_keys("sigma"),
             point=_none, gdp_mu=lambda g: g.sensitivity / g.sigma, zcdp_rho=_gaussian_rho, canonical=False,
             pld=_gaussian_pld, noise=True, family="gaussian", subsample=_wrap,
             parameter="sigma", with_parameter=lambda g, p: GaussianMechanism(p, g.sensitivity)),
        Kind(LaplaceMechanism, "laplace", _noise_keys("scale"),
             point=lambda g: (g.sensitivity / g.scale, 0.0), gdp_mu=_none, zcdp_rho=_pure_rho, canonical=False,
             pld=_laplace_pld, noise=True, family="concrete", subsample=_wrap),
        Kind(RandomizedResponse, "randomized_response", (("epsilon", "epsilon", True),),
             point=lambda g: (g.epsilon, 0.0), gdp_mu=_none, zcdp_rho=_pure_rho, canonical=True,
             pld=_point_pld, noise=False, family="point", subsample=_wrap),
        Kind(Subsampled, "subsampled", (("rate", "rate", True), ("mechanism", "mechanism", True)),
             point=_subsampled_point, gdp_mu=_none, zcdp_rho=_none, canonical=False,
             pld=_subsampled_pld, noise=False, family="concrete", subsample=_subsample_again),
    )
}


# ---------------------------------------------------------------------------
# The row of a guarantee


def kind_of(guarantee: object) -> Kind:
    """The row of ``guarantee``'s kind (a subclass of a record has its base's row).

    Raises
    ------
    UnsupportedCombinationError
        ``guarantee`` is no guarantee kind gce knows.

    Examples
    --------
    >>> kind_of(PureDP(1.0)).name
    'pure'
    """
    for cls in type(guarantee).__mro__:
        row = KINDS.get(cls)
        if row is not None:
            return row
    raise UnsupportedCombinationError(
        f"{shown(guarantee)} is not a guarantee kind gce knows (one of {', '.join(c.__name__ for c in KINDS)})")


def is_guarantee(value: object) -> bool:
    """Whether ``value`` is a guarantee record of a kind in :data:`KINDS`."""
    return any(cls in KINDS for cls in type(value).__mro__)


def point(guarantee: Guarantee) -> Point | None:
    """The single (epsilon, delta) point a guarantee implies without choosing a delta.

    Pure, approximate, randomized-response and Laplace guarantees have one;
    subsampled ones inherit it amplified, (ln(1 + q(e^eps - 1)), q delta)
    (BBG18 Thm. 8). zCDP, GDP and Gaussian mechanisms have only a curve
    (their epsilon depends on delta): None.

    Examples
    --------
    >>> point(LaplaceMechanism(scale=2.0, sensitivity=1.0))
    (0.5, 0.0)
    """
    return kind_of(guarantee).point(guarantee)


def gdp_mu(guarantee: Guarantee) -> float | None:
    """mu with which ``guarantee`` is mu-GDP (DRS22): GDP itself and the Gaussian mechanism
    (sensitivity / sigma); None for other kinds.

    Examples
    --------
    >>> gdp_mu(GaussianMechanism(sigma=2.0, sensitivity=3.0))
    1.5
    """
    return kind_of(guarantee).gdp_mu(guarantee)


def zcdp_rho(guarantee: Guarantee) -> float | None:
    """rho with which ``guarantee`` is rho-zCDP without a delta: zCDP itself, mu^2 / 2 for GDP
    and Gaussian noise (BS16 Prop. 1.6), eps^2 / 2 for pure-DP kinds (BS16 Prop. 1.4); else None."""
    return kind_of(guarantee).zcdp_rho(guarantee)


def is_canonical(guarantee: Guarantee) -> bool:
    """Whether the class ``guarantee`` describes is exactly that of the canonical pair of its
    point (002 Thm. II.5): pure, approximate and randomized-response guarantees."""
    return kind_of(guarantee).canonical


def pld_source(guarantee: Guarantee) -> PLDSource | None:
    """How dp-accounting builds ``guarantee``'s privacy-loss distribution (:class:`PLDSource`);
    None when it has none here (zCDP; a subsampled noise mechanism subsampled again)."""
    return kind_of(guarantee).pld(guarantee)


def pld_noise(guarantee: Guarantee) -> tuple[str, float, float, float] | None:
    """(kind, noise, sensitivity, rate) when dp-accounting builds the PLD from the mechanism itself
    (``"gaussian"``: sigma; ``"laplace"``: scale), None when from a canonical pair or not at all."""
    source = pld_source(guarantee)
    return None if source is None or source.kind == "point" else (source.kind, *source.parameters)


def sampling(guarantee: Guarantee) -> tuple[float, Guarantee]:
    """(rate, mechanism) of a Poisson-subsampled guarantee; (1.0, guarantee) for any other."""
    if isinstance(guarantee, Subsampled):
        return guarantee.rate, guarantee.mechanism
    kind_of(guarantee)
    return 1.0, guarantee


def one_directional(guarantee: Guarantee) -> bool:
    """Whether a composition may bound this guarantee with a curve that differs between directions.

    Poisson-subsampled noise mechanisms (Gaussian, Laplace, GDP) go through
    dp-accounting's privacy-loss distributions with separate "remove" and
    "add" directions, and a composition of them covers all-remove or all-add
    runs, not a run that adds the record to some databases and removes it from
    others (a bounded pair). Every other kind is bounded by a symmetric pair
    (canonical, Gaussian) or a symmetric divergence bound (zCDP).
    """
    return kind_of(guarantee).record is Subsampled and kind_of(guarantee.mechanism).noise


# ---------------------------------------------------------------------------
# Implication order


def family(guarantee: Guarantee) -> tuple[str, tuple[float, ...]] | None:
    """Family and parameters under which guarantees are ordered by implication.

    ``point``: pure, approximate and randomized-response guarantees, for which
    the canonical pair of their (eps, delta) is the worst case (002 Thm. II.5),
    so (e1, d1) implies (e2, d2) when e1 <= e2 and d1 <= d2. ``gaussian`` (by mu:
    N(0,1) vs N(mu,1) is a post-processing of N(0,1) vs N(mu',1) for mu <= mu')
    and ``zcdp`` (by rho). Other guarantees with an (eps, delta) point (Laplace,
    subsampled) imply every ``point`` guarantee above their point, but nothing
    implies them: family ``concrete``. None for a guarantee in no family
    (a subsampled Gaussian).
    """
    name = kind_of(guarantee).family
    if name == "gaussian":
        return name, (gdp_mu(guarantee),)
    if name == "zcdp":
        return name, (zcdp_rho(guarantee),)
    p = point(guarantee)
    return None if p is None else (name, p)


def implies(a: Guarantee, b: Guarantee) -> bool:
    """Whether every mechanism satisfying ``a`` satisfies ``b`` (by the rules of :func:`family`)."""
    if a == b:
        return True
    fa, fb = family(a), family(b)
    if fa is None or fb is None:
        return False
    same = fa[0] == fb[0] and fa[0] != "concrete"
    if same or (fa[0] == "concrete" and fb[0] == "point"):
        return all(x <= y for x, y in zip(fa[1], fb[1]))
    return False


def dominance_chain(guarantees: Sequence[Guarantee]) -> list[Guarantee] | None:
    """The guarantees sorted from strongest to weakest, if each implies the next
    (every mechanism satisfying one satisfies all later ones); else None."""
    families = [family(g) for g in guarantees]
    if any(f is None for f in families):
        return None
    # Within equal parameters a concrete guarantee implies the point one, not the reverse: concrete first.
    order = sorted(range(len(guarantees)), key=lambda i: (families[i][1], families[i][0] != "concrete"))
    chain = [guarantees[i] for i in order]
    return chain if all(implies(a, b) for a, b in zip(chain, chain[1:])) else None


# ---------------------------------------------------------------------------
# Subsampling and calibration


def subsample(guarantee: Guarantee, rate: float, where: str = "") -> Guarantee:
    """The guarantee of ``guarantee`` run on a Poisson subsample at ``rate``.

    A subsampled guarantee at rate r becomes rate r * rate; mu-GDP becomes the
    Gaussian mechanism with sigma = 1/mu (whose pair dominates every mu-GDP
    pair); every other kind is wrapped in :class:`Subsampled`.

    Raises
    ------
    UnsupportedCombinationError
        zCDP: no tight amplification theorem here (the message starts with ``where``).
    """
    try:
        return kind_of(guarantee).subsample(guarantee, rate)
    except UnsupportedCombinationError as error:
        raise UnsupportedCombinationError(f"{where}{error}") from None


def as_point(guarantee: Guarantee) -> Guarantee:
    """A subsampled canonical guarantee (pure, approximate, randomized response) as the
    PureDP / ApproxDP of its amplified point (BBG18 Thm. 8), the only thing any composition
    theorem here uses of it; any other guarantee unchanged.

    Examples
    --------
    >>> as_point(Subsampled(0.5, PureDP(0.0)))
    PureDP(epsilon=0.0)
    """
    rate, inner = sampling(guarantee)
    if inner is guarantee or not is_canonical(inner):
        return guarantee
    eps, delta = point(guarantee)
    return PureDP(eps) if delta == 0.0 else ApproxDP(eps, delta)


def calibrated_parameter(guarantee: Guarantee) -> str | None:
    """The parameter :func:`gce.calibrate` searches for this kind (``"epsilon"`` for pure and
    approximate DP, ``"sigma"`` for the Gaussian mechanism), or None."""
    return kind_of(guarantee).parameter


def with_parameter(guarantee: Guarantee, value: float) -> Guarantee:
    """``guarantee`` with its calibrated parameter set to ``value``.

    Raises
    ------
    UnsupportedCombinationError
        The kind has no calibrated parameter.
    """
    row = kind_of(guarantee)
    if row.with_parameter is None:
        raise UnsupportedCombinationError(f"{row.record.__name__} has no calibrated parameter")
    return row.with_parameter(guarantee, value)


def _check_table() -> None:
    """Import-time check that the table is complete: one row per class of ``Guarantee``."""
    from typing import get_args

    missing = set(get_args(Guarantee)) - set(KINDS)
    if missing:  # pragma: no cover - a new record without a row
        names = sorted(c.__name__ for c in missing)
        raise RuntimeError(f"guarantee kinds without a row in gce.accounting.kinds: {names}")


_check_table()

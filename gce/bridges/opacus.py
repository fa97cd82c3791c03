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
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from copy import deepcopy
from typing import Any

from .. import effort
from ..accounting.curves import GaussianCurve
from ..errors import InvalidParameterError, NumericalLimitError
from ..priors.allocation import MU_LIMIT, AllocationCurve, LowerBound, allocation_curve, poisson_curve
from ..priors.allocation.bracket import _Least
from ..priors.allocation.decomposition import _NoRoom
from ..priors.allocation.epochs import compose_epochs, epochs_tail
from ..priors.allocation.ratios import GaussianRatio
from ..validation import is_integer, is_number

__all__ = ["AllocationAccountant", "PoissonAccountant", "register", "loader_sampling", "MECHANISMS"]

#: One step's record in Opacus' history: (noise multiplier, sample rate, steps).
Entry = tuple[float, float, int]


def _check_entry(noise_multiplier: object, sample_rate: object, steps: object = 1) -> Entry:
    if not is_number(noise_multiplier) or not 0.0 <= noise_multiplier < math.inf:
        raise InvalidParameterError("noise_multiplier", f"must be a finite number >= 0, got {noise_multiplier!r}")
    if not is_number(sample_rate) or not 0.0 < sample_rate <= 1.0:
        raise InvalidParameterError("sample_rate", f"must be a probability in (0, 1], got {sample_rate!r}")
    if not is_integer(steps) or steps < 1:
        raise InvalidParameterError("steps", f"must be an integer >= 1, got {steps!r}")
    return float(noise_multiplier), float(sample_rate), int(steps)


def _mu(noise_multiplier: float) -> float:
    """The Gaussian of one step: clipping norm C, noise N(0, (sigma C)^2) on the sum, so mu = 1 / sigma."""
    return math.inf if noise_multiplier == 0.0 else 1.0 / noise_multiplier


class _HistoryAccountant:
    """Opacus' ``IAccountant`` interface over a history of ``(noise_multiplier, sample_rate, steps)``,
    without importing Opacus (:func:`register` makes Opacus subclasses of the two accountants)."""

    #: "shuffled" or "poisson" (set by the subclasses).
    mode = ""

    def __init__(self, rtol: float = effort.DEFAULT_RTOL, time_limit: float | None = None) -> None:
        self.rtol = effort.check_rtol(rtol)
        if time_limit is not None and (not is_number(time_limit) or not time_limit > 0):
            raise InvalidParameterError("time_limit", f"must be a number of seconds > 0 or None, got {time_limit!r}")
        self.time_limit = None if time_limit is None else float(time_limit)
        self.history: list[Entry] = []
        #: Whether the time limit stopped the last computation (its bracket is then wider than rtol).
        self.time_limit_reached = False
        self._cache: dict[tuple[Any, ...], tuple[AllocationCurve, bool]] = {}

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
        """The curve of the history so far (upper, with its certified ``lower``), refined for ``delta``."""
        if not is_number(delta) or not 0.0 < delta < 1.0:
            raise InvalidParameterError("delta", f"must be a number in (0, 1), got {delta!r}")
        entries = tuple(_check_entry(*entry) for entry in self.history)
        key = (entries, float(delta), self.rtol)
        if key not in self._cache:
            deadline = effort.Deadline(self.time_limit)
            with effort.within(deadline):
                self._cache[key] = (self._curve(entries, float(delta)), deadline.reached)
        curve, self.time_limit_reached = self._cache[key]
        return curve

    def get_epsilon_bracket(self, delta: float) -> tuple[float, float]:
        """(lower, upper): the exact epsilon of the history at ``delta`` lies between them."""
        return self.curve(delta).epsilon_bracket(delta)

    def get_epsilon(self, delta: float, *args: Any, **kwargs: Any) -> float:
        """The certified upper end of :meth:`get_epsilon_bracket`: a valid epsilon at ``delta``."""
        return self.get_epsilon_bracket(delta)[1]

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
            raise InvalidParameterError("state_dict", f"holds mechanism {state_dict['mechanism']!r}, "
                                                      f"not {self.mechanism()!r}")
        self.history = [_check_entry(*entry) for entry in state_dict["history"]]

    def _curve(self, entries: Sequence[Entry], delta: float) -> AllocationCurve:
        raise NotImplementedError

    def _check_loader(self, sampling: str | None) -> None:
        """Refuse (or warn about) a loader of ``sampling`` (:func:`loader_sampling`) this accountant does not
        account; None (the hook not attached by ``make_private``) is not checked."""
        if sampling == "sequential":
            raise InvalidParameterError(
                "data_loader", f"does not shuffle (a SequentialSampler): its batches are fixed, so no sampling "
                               f"amplifies them and accountant {self.mechanism()!r} would under-count; pass "
                               f"poisson_sampling=True with accountant 'gce-poisson', or a loader with "
                               f"shuffle=True with accountant 'gce-shuffled'")


class PoissonAccountant(_HistoryAccountant):
    """Poisson batches: each step a Gaussian of ``mu = 1 / noise_multiplier`` on a Poisson subsample of rate
    ``sample_rate``, the steps composed (:func:`gce.priors.allocation.poisson_curve`)."""

    mode = "poisson"

    def _check_loader(self, sampling: str | None) -> None:
        super()._check_loader(sampling)
        if sampling == "shuffled":
            warnings.warn("accountant 'gce-poisson' with a shuffled loader (poisson_sampling=False): Poisson "
                          "accounting is not a proven guarantee for shuffled batches; accountant "
                          "'gce-shuffled' certifies them (random allocation)", UserWarning, stacklevel=3)

    def _curve(self, entries: Sequence[Entry], delta: float) -> AllocationCurve:
        merged: dict[tuple[float, float], int] = {}
        for sigma, rate, steps in entries:  # composition commutes: equal steps anywhere are one part
            merged[(sigma, rate)] = merged.get((sigma, rate), 0) + steps
        if not merged:
            return _revealing(None)
        if any(sigma == 0.0 for sigma, _ in merged):
            return _revealing("a step without noise")
        return poisson_curve([(_mu(sigma), rate, steps) for (sigma, rate), steps in merged.items()],
                             rtol=self.rtol, delta=delta)


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

    def _curve(self, entries: Sequence[Entry], delta: float) -> AllocationCurve:
        above, below = epochs_of(entries)
        if any(mu == math.inf for mu, _ in above):
            return _revealing("a step without noise")
        if not above:
            return _revealing(None)
        if len(above) == 1 and set(below) <= set(above):  # one (mu, t): allocation_curve's own bracket
            (mu, t), count = next(iter(above.items()))
            upper = allocation_curve(mu, t, epochs=count, rtol=self.rtol, delta=delta)
            if below.get((mu, t), 0) == count:
                return upper
            lower = (LowerBound([(GaussianCurve(0.0), 0.0, 0.0)]) if not below else
                     allocation_curve(mu, t, epochs=below[(mu, t)], rtol=self.rtol, delta=delta).lower)
            return AllocationCurve(upper._upper, lower, f"{upper.description}; below: the complete epochs only")
        return epochs_curve(above, below, self.rtol, delta)


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
        size = max(round(1.0 / rate), 1)
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
    high_mu = math.sqrt(sum(count * mu**2 for (mu, _), count in above.items()))
    low_mu = math.sqrt(sum(count * mu**2 / t for (mu, t), count in below.items()))
    closed = AllocationCurve([GaussianCurve(high_mu)], LowerBound([(GaussianCurve(low_mu), 0.0, 0.0)]),
                             f"{sum(above.values())} epochs: the steps' Gaussians composed (GDP mu {high_mu:g}) "
                             f"above; the sum of every batch's output (GDP mu {low_mu:g}) below")
    if any(mu >= MU_LIMIT for mu, _ in above):
        return closed
    ratios = {key: GaussianRatio(key[0]) for key in {*above, *below}}
    try:
        curve = compose_epochs({(ratios[key], key[1]): count for key, count in above.items()},
                               {(ratios[key], key[1]): count for key, count in below.items()}, rtol, delta, None,
                               epochs_tail(delta, sum(above.values())))
    except (NumericalLimitError, _NoRoom):
        return closed
    return AllocationCurve([_Least([curve, GaussianCurve(high_mu)])],
                           LowerBound([(curve.lower, 0.0, 0.0), (GaussianCurve(low_mu), 0.0, 0.0)]),
                           f"{sum(above.values())} epochs at {len(above)} (mu, t): {curve.description}")


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

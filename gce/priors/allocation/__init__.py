"""Random allocation with curve mechanisms: the privacy curve of "in none" against "in exactly k of t".

An adversary prior that puts the target in exactly ``k`` of ``t`` databases, uniformly, against "in none"
(``h0 = point([])``, ``h1 = uniform(min_members=k, max_members=k)``) is what the DP-SGD literature calls
*random allocation* or balls-and-bins batching (Feldman and Shenfeld, arXiv 2502.08202; Chua et al.,
AISTATS 2025; "Efficient privacy loss accounting for subsampling and random allocation", arXiv 2602.17284).
This package computes its curve, both directions, as a certified bracket, for Gaussian, Laplace, (eps, delta)
and subsampled mechanisms, and the curves of the per-database-rate and uniform(min, max) priors (Poisson
subsampling).

The pair, written under Q (k = 1)
---------------------------------
Database ``i`` runs a mechanism whose output law is ``P_i`` with the target and ``Q_i`` without; write
``W_i = dP_i / dQ_i`` (its *likelihood ratio*; for a Gaussian of ``mu = sensitivity / sigma``,
``W = exp(mu Z - mu^2 / 2)`` with ``Z ~ N(0, 1)`` under ``Q_i``, a lognormal of mean 1). The two priors give
``Q = prod_i Q_i`` and ``P = (1/t) sum_i P_i x prod_{j != i} Q_j``, so ``dP/dQ = S / t`` with
``S = sum_i W_i``, the ``W_i`` independent under Q. Both directions of the hockey-stick divergence are then
expectations *under Q* of convex functions of ``S`` (with ``gamma = e^eps``)::

    delta_PQ(eps) = c + E_Q[(S/t - gamma)_+],      delta_QP(eps) = E_Q[(1 - gamma S/t)_+],

``c`` the mass of P outside Q's support (0 for Gaussians). The law of ``S`` is the convolution of the
``W_i``'s laws: one grid, one FFT, powers for equal databases; at small noise (k = 1), pairwise sums on a
geometric grid instead (:mod:`.geometric_grid`).

Modules
-------
One module a method, each with the argument that proves it in its docstring; this face only re-exports.

* :mod:`.ratios`: one database's likelihood ratio under Q (Gaussian, Laplace, canonical (eps, delta),
  subsampled), the only thing the methods read.
* :mod:`.bracket`: one direction's law, the upper curve with its certified lower curve, the bracket's width,
  and where the time limit may stop a refinement (accuracy decides the work: :func:`~.bracket._may_refine`).
* :mod:`.uniform_grid`: 1 of t on a uniform grid by one FFT (a spread above, a garbling below, the cyclic
  FFT's wrap).
* :mod:`.geometric_grid`: 1 of t on a geometric grid by pairwise sums (small noise).
* :mod:`.one_of_t`: 1 of t, one epoch: both grids, refined by whichever is predicted to be faster (from
  the grids' sizes, never from measured times).
* :mod:`.uniform_tilted`: the uniform grid's transforms tilted (a ladder of tilts, each entry read where its
  round-off is least): its errors relative to each entry, so that many epochs compose at small deltas.
* :mod:`.tilted`: compositions on the batch engine's loss grid tilted towards the target epsilon.
* :mod:`.epochs`: epochs of 1 of t (several ``(mu, t)`` too), each epoch's laws chosen and refined by the
  bracket they give once composed, at any delta.
* :mod:`.decomposition`: k of t (Feldman and Shenfeld's decomposition above, a garbling below), and epochs of
  it.
* :mod:`.two_members`: 2 of t by the recursion of ``e_2`` (spreads of the state above, a garbling below),
  blocks of two members for k > 2, and the k-of-t garbling by the same statistic.
* :mod:`.random_allocation`: :func:`allocation_curve`, the entry point.
* :mod:`.poisson`: per-database rates (:func:`poisson_curve`).
* :mod:`.uniform_prior`: uniform(min, max) (:func:`uniform_curve`).

References
----------
Feldman, Shenfeld, "Privacy amplification by random allocation", arXiv 2502.08202.
"Efficient privacy loss accounting for subsampling and random allocation", arXiv 2602.17284.
Chua, Ghazi, Kamath, Kumar, Manurangsi, Sinha, Zhang, "Balls-and-bins sampling for DP-SGD", AISTATS 2025.
Blackwell, "Equivalent comparisons of experiments", Ann. Math. Stat. 1953 (garblings and dominance).
"""

from .bracket import DEFAULT_RTOL, ROUND_OFF, TAIL, AllocationCurve, LowerBound
from .geometric_grid import LOG_START_RHO, LOG_WORK_LIMIT
from .poisson import gaussian_parts, poisson_curve
from .random_allocation import MU_LIMIT, allocation_curve
from .ratios import CanonicalRatio, GaussianRatio, LaplaceRatio, SubsampledRatio
from .uniform_grid import GRID_LIMIT, START_POINTS
from .uniform_prior import SIZES_LIMIT, log_size_mass_outside, uniform_curve

# Private helpers the tests reach through this face (kept importable from here, as before the split).
from .bracket import _WHICH, _bracket_at, _Law  # noqa: E402
from .decomposition import _composed, _merged_below  # noqa: E402
from .geometric_grid import _binary, _contract_sum, _geometric_laws, _GeometricGrid, _levels, _spread_sum  # noqa: E402
from .one_of_t import _single  # noqa: E402
from .uniform_grid import _linear_laws  # noqa: E402
from .uniform_prior import _WithoutEmpty  # noqa: E402

__all__ = ["GaussianRatio", "LaplaceRatio", "CanonicalRatio", "SubsampledRatio", "allocation_curve", "poisson_curve",
           "gaussian_parts", "uniform_curve", "log_size_mass_outside",
           "AllocationCurve", "LowerBound", "DEFAULT_RTOL", "TAIL",
           "GRID_LIMIT"]

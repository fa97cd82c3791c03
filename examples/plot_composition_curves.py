"""
Composition curves: the privacy region of k-fold composition
=============================================================

Kairouz, Oh and Viswanath, *The Composition Theorem for Differential Privacy* (002), read differential
privacy as a hypothesis test: a mechanism is (epsilon, delta)-DP exactly when every test of "the person is
in the data" against "is not" has its false-alarm and missed-detection probabilities in the *privacy region*
``R(epsilon, delta) = {(P_MD, P_FA): P_FA + e^epsilon P_MD >= 1 - delta and e^epsilon P_FA + P_MD >= 1 - delta}``
(002, eq. 2). The region of a composition is the intersection of the regions of its points on the privacy
curve ``delta(epsilon)``; a smaller region is a stronger guarantee.

This example redraws the paper's Figures 2 and 3 from ``gce``'s theorem curves, then the epsilon that
each theorem gives as the number of composed queries grows. Every curve is the theorem's own
``delta(epsilon)`` (``gce.THEOREMS``); the region is drawn below the line ``P_FA + P_MD = 1``, as in the
paper.
"""

import matplotlib.pyplot as plt
import numpy as np

import gce
from gce.accounting.theorems import as_multiset

THEOREM = {theorem.name: theorem for theorem in gce.THEOREMS}
MISSED = np.linspace(0.0, 1.0, 401)


def region_boundary(curve, epsilons):
    """The least false-alarm probability the privacy region allows at each missed-detection probability:
    the envelope of the lines ``P_FA = 1 - delta(eps) - e^eps P_MD`` and their mirror images (002, eq. 2)."""
    deltas = np.asarray(curve.delta(epsilons), dtype=float)
    slack = 1.0 - deltas[:, None]
    scale = np.exp(epsilons)[:, None]
    lines = np.maximum(slack - scale * MISSED[None, :], (slack - MISSED[None, :]) / scale)
    return np.clip(lines.max(axis=0), 0.0, None)


def composed(theorem, guarantee, k):
    """The privacy curve of ``k`` invocations of ``guarantee`` by the named theorem of ``gce.THEOREMS``."""
    return THEOREM[theorem].curve(as_multiset({guarantee: k}))


def epsilon_grid(top, breakpoints=()):
    """A grid of epsilons from 0 to ``top`` with the curve's breakpoints added (the exact region's corners)."""
    return np.unique(np.concatenate([np.linspace(0.0, top, 1500), np.asarray(breakpoints, dtype=float)]))


# %%
# Figure 2 of 002: k-fold composition
# -----------------------------------
# The exact region of ``k`` (0.4, delta)-DP mechanisms composed (002, Thm. III.3) for k = 1 to 5: the
# intersection of the regions of ``((k - 2i) 0.4, delta_i)``, i = 0 .. k/2. Left pure DP (delta = 0), right
# delta = 0.1. Each k shrinks the region: more composed queries, a weaker guarantee.

fig, axes = plt.subplots(1, 2, figsize=(9, 4.5), sharey=True)
for ax, delta in zip(axes, (0.0, 0.1)):
    for k in range(1, 6):
        curve = composed("kairouz-III.3", gce.ApproxDP(0.4, delta), k)
        corners = [(k - 2 * i) * 0.4 for i in range(k // 2 + 1)]
        boundary = region_boundary(curve, epsilon_grid(0.4 * k * 1.1, corners))
        ax.plot(MISSED, boundary, label=f"k = {k}")
    ax.plot(MISSED, 1 - MISSED, color="gray", linewidth=0.8)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal")
    ax.set_xlabel("P_MD (missed detection)")
    ax.set_title(f"(0.4, {delta:g})-DP, k-fold")
axes[0].set_ylabel("P_FA (false alarm)")
axes[1].legend()
fig.suptitle("The privacy region shrinks with every composed query (002, Fig. 2)")
fig.tight_layout()

# %%
# Figure 3 of 002: three theorems, one composition
# ------------------------------------------------
# 30 mechanisms of (0.1, 0.001)-DP composed: simple composition (002 Thm. III.1: (k epsilon, k delta)),
# the advanced composition of Dwork, Rothblum and Vadhan (002 Thm. III.2) and the exact composition (002
# Thm. III.3). The exact region is the smallest: every valid theorem's region contains it.

guarantee = gce.ApproxDP(0.1, 0.001)
fig, ax = plt.subplots(figsize=(5.5, 5.5))
for name, label in [("simple", "Thm. III.1 (simple)"), ("advanced", "Thm. III.2 (advanced, DRV10)"),
                    ("kairouz-III.3", "Thm. III.3 (exact)")]:
    curve = composed(name, guarantee, 30)
    corners = [(30 - 2 * i) * 0.1 for i in range(16)]
    ax.plot(MISSED, region_boundary(curve, epsilon_grid(3.3, corners)), label=label)
    print(f"{label}: delta at epsilon 1 = {float(curve.delta(1.0)):.4f}")
ax.plot(MISSED, 1 - MISSED, color="gray", linewidth=0.8)
ax.set_xlim(0, 1)
ax.set_ylim(0, 1)
ax.set_aspect("equal")
ax.set_xlabel("P_MD (missed detection)")
ax.set_ylabel("P_FA (false alarm)")
ax.set_title("30-fold (0.1, 0.001)-DP (002, Fig. 3)")
ax.legend()
fig.tight_layout()

# %%
# Epsilon as the queries add up
# -----------------------------
# The hospitals' query, (0.05, 1e-10)-DP, composed k times: epsilon at total delta 1e-6 by each theorem
# that accepts it. Simple composition grows as ``k``; advanced composition and the closed form of 002
# Thm. III.4 as ``sqrt(k)`` at large k; the exact composition is the least. ``gce.compose`` evaluates every
# compatible theorem and reports the least (here always Thm. III.3).

guarantee = gce.ApproxDP(0.05, 1e-10)
counts = np.unique(np.logspace(0, 3, 16).round().astype(int))
fig, ax = plt.subplots(figsize=(7, 4.5))
for name, label in [("simple", "simple (III.1)"), ("advanced", "advanced (III.2)"),
                    ("kairouz-III.4", "closed form (III.4)"), ("kairouz-III.3", "exact (III.3)")]:
    epsilons = [float(composed(name, guarantee, int(k)).epsilon(1e-6)) for k in counts]
    ax.plot(counts, epsilons, "o-", markersize=3, label=label)
best = gce.compose({guarantee: 365}).at_delta(1e-6)
print(f"365 queries: epsilon {best.epsilon:.4f} by {best.theorem}")
ax.plot([365], [best.epsilon], "k*", markersize=10, label=f"365 queries: {best.epsilon:.2f} ({best.theorem})")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("queries composed (k)")
ax.set_ylabel("epsilon at delta 1e-6")
ax.set_title("k-fold (0.05, 1e-10)-DP")
ax.legend()
fig.tight_layout()
plt.show()

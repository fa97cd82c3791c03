"""
Ambulances and disjoint parts: composition for general neighbourhoods
======================================================================

Worked examples of Guerra-Balboa, Miranda-Pascual, Parra-Arnau and Strufe, *Composition in Differential
Privacy for General Granularity Notions* (000):

* **Example IV.5, ambulances.** Ten hospitals each publish a 0.5-DP count of the ambulances available to
  them, and every ambulance serves at most three hospitals: one record is in at most 3 of the 10 databases,
  so the guarantee is 3 x 0.5 = 1.5, not the 10 x 0.5 = 5.0 of sequential composition. McSherry's parallel
  composition (disjoint databases) does not apply as such: the databases overlap.
* **Example VI.25, Gaussian DP over disjoint parts.** A database split into parts, a 0.5-GDP statistic on
  each; replacing a record (bounded DP) changes at most two parts, so the parts compose to sqrt(2) x 0.5-GDP,
  not 2 x 0.5.

The scenario files are ``examples/ambulances.toml`` and ``examples/gaussian_parts.toml``.
"""

from dataclasses import replace
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import gce
from gce.plot import plot_curves

try:
    here = Path(__file__).parent
except NameError:  # sphinx-gallery runs the script in this folder, without __file__
    here = Path.cwd()
ambulances = gce.load_scenario(here / "ambulances.toml")
report = gce.solve(ambulances)
print(f"at most 3 of 10: epsilon {report.epsilon:.4g} (sequential {report.baselines['classic'].epsilon:.4g})")

# %%
# How many hospitals may one ambulance serve?
# -------------------------------------------
# The same ten 0.5-DP counts with the limit ``m`` on the hospitals one ambulance serves, from 1 (disjoint
# databases: parallel composition) to 10 (no limit: sequential composition). The answer is ``m x 0.5``, each
# point exact.

limits = range(1, 11)
epsilons = []
for m in limits:
    limited = replace(ambulances, constraints=gce.ConstraintSet(ambulances.n, [gce.AtMost(m)]))
    epsilons.append(gce.solve(limited).epsilon)
print("m x 0.5:", [round(e, 4) for e in epsilons])

fig, ax = plt.subplots(figsize=(7, 4.5))
ax.plot(list(limits), epsilons, "o-", label="GCE: at most m hospitals per ambulance")
ax.axhline(5.0, color="C3", linestyle=":", label="sequential composition: 10 x 0.5")
ax.axhline(0.5, color="C2", linestyle="--", label="parallel composition (disjoint databases)")
ax.plot([3], [report.epsilon], "k*", markersize=12, label="000 Ex. IV.5: m = 3, epsilon 1.5")
ax.set_xticks(list(limits))
ax.set_xlabel("most hospitals one ambulance serves (m)")
ax.set_ylabel("epsilon (pure DP)")
ax.set_title("Ten hospitals, a 0.5-DP count each")
ax.legend(loc="upper left")
fig.tight_layout()

# %%
# Gaussian DP over disjoint parts
# -------------------------------
# Six parts, a 0.5-GDP statistic on each, bounded DP: the worst case changes two parts, and two 0.5-GDP
# mechanisms compose to ``sqrt(2) x 0.5``-GDP (Dong, Roth and Su). Its curve is drawn against classic
# composition of all six parts (``sqrt(6) x 0.5``); adding the mus of the two parts (1.0-GDP) would have
# claimed more than the truth.

parts = gce.load_scenario(here / "gaussian_parts.toml")
parts_report = gce.solve(parts)
print(f"two parts of 0.5-GDP: epsilon {parts_report.epsilon:.4f} at delta 1e-6 "
      f"(classic {parts_report.baselines['classic'].epsilon:.4f})")
fig, ax = plt.subplots(figsize=(7, 4.5))
deltas = np.logspace(-10, -1, 60)
plot_curves(parts_report, ax=ax, classic=parts, deltas=deltas)
summed = gce.compose({gce.GaussianDP(1.0): 1})
ax.plot(deltas, summed.curve.epsilon(deltas), color="C2", linestyle="-.", label="mus added: 1.0-GDP")
ax.legend()
fig.tight_layout()
plt.show()

"""
Hospitals: nobody stays in more than 365 of them
=================================================

The first worked example of Hartmann, Bindschaedler and West, *On the Choice of Databases in Differential
Privacy Composition* (001, Sec. V-A, Example 1): 1,000 hospitals each answer one (0.05, 1e-10)-DP query on
their patients of the year, and nobody stays in more than 365 hospitals a year. Classic composition charges
a patient for all 1,000 queries; under the generalized composition experiment only the hospitals a patient
can be in count, so the worst-case patient is in 365 of them and 365 queries are composed (by the exact
composition theorem of Kairouz, Oh and Viswanath, 002 Thm. III.3).

The scenario file is ``examples/hospitals.toml``; ``gce solve examples/hospitals.toml`` prints the same
answer.
"""

from dataclasses import replace
from pathlib import Path

import matplotlib.pyplot as plt

import gce
from gce.plot import plot_curves

try:
    here = Path(__file__).parent
except NameError:  # sphinx-gallery runs the script in this folder, without __file__
    here = Path.cwd()
scenario = gce.load_scenario(here / "hospitals.toml")
report = gce.solve(scenario)
print(f"at most 365: epsilon {report.epsilon:.4f} at delta {report.delta:g} from {report.differing_count} "
      f"composed queries; classic {report.baselines['classic'].epsilon:.4f} from 1,000")

# %%
# The limit decides the price
# ---------------------------
# The same 1,000 queries, with the public limit on the number of hospitals one patient can be in varying
# from 1 to 1,000: the GCE answer is the composition of ``m`` queries, and classic composition ignores the
# limit. Bounded DP (a patient replaced by another, ``neighborhood = "bounded"``) pays for up to ``2 m``
# hospitals.

limits = [1, 10, 25, 50, 100, 200, 365, 500, 730, 1000]
n = scenario.n


def epsilon_at(m: int, neighborhood: str = "unbounded") -> float:
    """Epsilon at delta 1e-6 of the hospitals scenario with at most ``m`` hospitals per patient."""
    limited = replace(scenario, constraints=gce.ConstraintSet(n, [gce.AtMost(m)]), neighborhood=neighborhood)
    return gce.solve(limited).epsilon


unbounded = [epsilon_at(m) for m in limits]
bounded = [epsilon_at(m, "bounded") for m in limits]
classic = report.baselines["classic"].epsilon
for m, u, b in zip(limits, unbounded, bounded):
    print(f"m = {m:>4}: unbounded {u:.4f}, bounded {b:.4f}")

fig, ax = plt.subplots(figsize=(7, 4.5))
ax.plot(limits, unbounded, "o-", label="GCE, unbounded (m queries composed)")
ax.plot(limits, bounded, "s--", label="GCE, bounded (up to 2m)")
ax.axhline(classic, color="C3", linestyle=":", label=f"classic: all {n} queries ({classic:.2f})")
ax.axvline(365, color="gray", linewidth=0.8)
ax.text(390, 0.1, "m = 365", color="gray")
ax.set_xscale("log")
ax.set_xlabel("most hospitals one patient can be in (m)")
ax.set_ylabel("epsilon at delta 1e-6")
ax.set_title("1,000 hospitals, one (0.05, 1e-10)-DP query each")
ax.legend(loc="upper left")
fig.tight_layout()

# %%
# The whole privacy curve
# -----------------------
# Every report carries its curve, epsilon against delta: :func:`gce.plot.plot_curves` draws it beside the
# classic composition of every invocation. The dot is the reported (epsilon, delta).

fig, ax = plt.subplots(figsize=(7, 4.5))
plot_curves(report, ax=ax, classic=scenario, deltas=[10 ** (-x / 4) for x in range(4, 36)])
fig.tight_layout()
plt.show()

"""
Subsidiaries and feature columns: who can be where
===================================================

Two membership examples of Hartmann, Bindschaedler and West, *On the Choice of Databases in Differential
Privacy Composition* (001, Sec. V-A):

* **Example 2, subsidiaries.** A company has five subsidiaries, one employee database each, queried once with
  pure DP at 0.1, 0.1, 0.2, 0.5 and 1.0. Everybody works for at most one of them (an ``exclusive``
  constraint). Adding or removing a person (unbounded DP) touches one database: the largest epsilon, 1.0.
  Replacing one person by another (bounded DP) touches two: the two largest, 1.0 + 0.5 = 1.5. Classic
  composition charges the sum, 1.9.
* **Example 3, free and paid columns.** The columns of a usage table are the databases: two common feature
  columns, four ads columns (free users only) and three premium columns (paid users only), each with a
  0.1-DP mean. A user's non-null cells are common + ads or common + premium (a ``patterns`` constraint): 6
  columns at most (0.6) when a user is added, 7 when a free user is replaced by a paid one (0.7), against the
  0.9 of all 9 columns.

The scenario files are ``examples/subsidiaries.toml`` and ``examples/columns.toml``.
"""

from dataclasses import replace
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import gce

try:
    here = Path(__file__).parent
except NameError:  # sphinx-gallery runs the script in this folder, without __file__
    here = Path.cwd()
answers = {}
for name in ("subsidiaries", "columns"):
    scenario = gce.load_scenario(here / f"{name}.toml")
    for neighborhood in ("unbounded", "bounded"):
        report = gce.solve(replace(scenario, neighborhood=neighborhood))
        h0, h1 = ([scenario.databases.label(i) for i in sorted(s)] for s in report.witness)
        answers[name, neighborhood] = report.epsilon
        print(f"{name}, {neighborhood}: epsilon {report.epsilon:.4g} (classic "
              f"{report.baselines['classic'].epsilon:.4g}); worst pair {h0} vs {h1}")
    answers[name, "classic"] = report.baselines["classic"].epsilon

# %%
# The worst case against classic composition
# ------------------------------------------
# Each bar is a pure epsilon: the worst-case pair under the membership constraint, for both neighbourhoods,
# beside classic composition, which charges every invocation.

labels = ["unbounded", "bounded", "classic"]
x = np.arange(len(labels))
fig, ax = plt.subplots(figsize=(7, 4.5))
for offset, (name, title) in zip((-0.2, 0.2), [("subsidiaries", "subsidiaries (001 Ex. 2)"),
                                               ("columns", "free and paid columns (001 Ex. 3)")]):
    values = [answers[name, label] for label in labels]
    bars = ax.bar(x + offset, values, width=0.4, label=title)
    ax.bar_label(bars, fmt="%.2g")
ax.set_xticks(x, ["GCE, unbounded", "GCE, bounded", "classic (every invocation)"])
ax.set_ylabel("epsilon (pure DP)")
ax.set_title("One employer, one kind of user: what a person can be in")
ax.legend(loc="upper left")
fig.tight_layout()
plt.show()

"""001, Sec. V-A, "General case": the store chain, with the limit estimated from data.

The largest number of branches one customer of store_members.csv bought from
(4) becomes an at_most constraint; four Gaussian statistics (sigma 8) per branch
then compose over 4 x 4 = 16 invocations, not 48. The report says plainly
that the bound is an estimate: a future customer may exceed it.

Run: python examples/store_chain.py
"""

from pathlib import Path

from gce import load_scenario, solve

report = solve(load_scenario(Path(__file__).with_name("store_chain.toml")))
print(report)

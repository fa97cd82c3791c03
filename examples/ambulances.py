"""000, Example IV.5: ambulances in at most three hospital databases.

A record is in at most 3 of the k = 10 databases, so 3 eps = 1.5 instead of
the k eps = 5.0 of sequential composition.

Run: python examples/ambulances.py
"""

from pathlib import Path

from gce import load_scenario, solve

report = solve(load_scenario(Path(__file__).with_name("ambulances.toml")))
print(report)

"""001, Sec. V-A, Example 1: 1,000 hospitals, nobody in more than 365 of them.

Unbounded: the worst case composes 365 of the (0.05, 1e-10) queries; bounded
(the patient is in some hospitals, which?): 730. Both by Kairouz et al.'s exact
Thm. III.3 (002), against the 1,000 of classic composition.

Run: python examples/hospitals.py
"""

from dataclasses import replace
from pathlib import Path

from gce import load_scenario, solve

scenario = load_scenario(Path(__file__).with_name("hospitals.toml"))
for neighborhood in ("unbounded", "bounded"):
    report = solve(replace(scenario, neighborhood=neighborhood))
    print(f"{neighborhood:>9}: epsilon {report.epsilon:.4f} from {report.differing_count} differing queries "
          f"(classic {report.baselines['classic'].epsilon:.4f}; exact: {report.exact})")

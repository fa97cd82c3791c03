"""001, Sec. III-A, Example 2: "fewer than k' practices" vs "at least k'".

The hypotheses U({b : |b| < 3}) and U({b : |b| >= 3}) over 8 practices are
exchangeable, so the exact curve is a count-based sum over canonical pairs
(gce.priors.exact). The point-mass worst case (a pair of sets differing in all 8
practices) is what an adversary who could name the sets would get.

Run: python examples/medical_practices.py
"""

from pathlib import Path

from gce import load_scenario, solve

print(solve(load_scenario(Path(__file__).with_name("medical_practices.toml"))))

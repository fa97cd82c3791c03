"""Same question, same answer (docs/design.md): the accuracy asked for decides every number; the clock
only caps, and reaching the cap is said.

Each question is asked twice: once on the real clock and once on a clock that runs ten times faster
(:func:`gce.effort.slowed`: as far as any deadline can tell, a machine ten times slower). While the limit
is not reached the two reports are identical, field for field and in their JSON; with a limit that is
reached, the report says so and its numbers are still certified.
"""

from __future__ import annotations

import json
import pathlib

import pytest

from gce import effort, load_scenario, solve
from gce.cli import main

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
#: A cap that no example comes near, even on a clock ten times fast and a loaded machine.
GENEROUS = 120.0


def _twice(question):
    """``question()`` on the real clock and on one ten times fast."""
    first = question()
    with effort.clock(effort.slowed(10.0)):
        second = question()
    return first, second


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.stem)
def test_every_example_gives_the_same_report_on_a_slow_clock(path):
    scenario = load_scenario(path)
    first, second = _twice(lambda: solve(scenario, time_limit=GENEROUS))
    assert not first.time_limit_reached and not second.time_limit_reached
    assert first.to_dict() == second.to_dict()
    assert first.to_dict()["status"] == "complete"
    # the default accuracy is met: the bracket (when there is one) is at most 1% wide
    assert first.rtol == effort.DEFAULT_RTOL and first.accuracy is not None
    assert first.accuracy <= effort.DEFAULT_RTOL


def test_the_command_line_prints_the_same_json_twice(capsys):
    path = str(EXAMPLES / "dp_sgd_allocation.toml")

    def printed():
        assert main(["solve", path, "--json", "--time-limit", str(GENEROUS)]) == 0
        return capsys.readouterr().out

    first, second = _twice(printed)
    assert first == second
    assert json.loads(first)["status"] == "complete"


def test_rtol_is_the_accuracy_asked_and_reported():
    scenario = load_scenario(EXAMPLES / "dp_sgd_allocation.toml")
    coarse, fine = solve(scenario, rtol=0.05), solve(scenario, rtol=0.001)
    assert coarse.rtol == 0.05 and fine.rtol == 0.001
    for report in (coarse, fine):
        assert report.bracket is not None and report.accuracy <= report.rtol
        assert report.bracket[0] <= report.epsilon == report.bracket[1]
    # both brackets are certified, so they overlap; the finer one lies inside the coarser's reach
    assert fine.bracket[0] <= coarse.bracket[1] and coarse.bracket[0] <= fine.bracket[1]

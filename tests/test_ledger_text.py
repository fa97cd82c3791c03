"""What the ledger prints: every number of ``status`` and of a decision under a named column, each row's
state in words, and what a negative Renyi budget means; the Accountant's one-line repr."""

from __future__ import annotations

import math

import pytest

import gce
from gce.cli import main
from gce.ledger import Accountant
from gce.ledger.filters import RENYI_FILTER_ORDERS


def _scenario() -> gce.Scenario:
    """Three named databases, nobody in two of them; one pure 0.5 invocation on "b"."""
    return gce.Scenario(gce.Databases(3, ("a", "b", "c")), [gce.Invocation(1, gce.PureDP(0.5))],
                        gce.ConstraintSet(3, [gce.Exclusive([0, 1, 2])]))


def _row(text: str, name: str) -> list[str]:
    """The cells of the row of ``name`` (a bracket "[lo, hi]" kept as one cell)."""
    line = next(line for line in text.splitlines() if line.startswith(name + " "))
    return line.replace(", ", ",").split()


def test_renyi_status_says_which_orders_can_never_admit(tmp_path):
    """B(a) = 3 - log(10 / 1e-6) / (a - 1) (log 10^7 = 16.118): negative exactly when a - 1 < 5.373, i.e. at
    orders 1.5, 2, 3, 4 and 6 (B(6) = -0.2236, B(8) = +0.6974, by hand)."""
    negative = [a for a in RENYI_FILTER_ORDERS if 3.0 - math.log(10 / 1e-6) / (a - 1.0) < 0]
    assert negative == [1.5, 2.0, 3.0, 4.0, 6.0]
    with Accountant.create(tmp_path / "l.sqlite", _scenario(), budget_epsilon=3.0, budget_delta=1e-6,
                           filter="renyi") as ledger:
        text = str(ledger.status())
    lines = text.splitlines()
    assert any(line.split() == ["order", "spent", "(worst", "case)", "budget", "remaining", "state"]
               for line in lines)
    for a in RENYI_FILTER_ORDERS:
        row = _row(text, f"renyi({a:g})")
        budget = 3.0 - math.log(10 / 1e-6) / (a - 1.0)
        assert float(row[2]) == pytest.approx(budget, rel=1e-5)
        state = " ".join(row[4:])
        assert state == ("never admits (budget < 0)" if a in negative else "within budget"), a
    assert ("negative budgets: B(a) = epsilon - log(k / delta) / (a - 1) (k = 10 orders) is below 0 at renyi(1.5), "
            "renyi(2), renyi(3), renyi(4), renyi(6): those orders can never admit anything") in text
    assert "the renyi filter admits a request while some order stays within its budget" in text


def test_a_refused_decision_names_the_component_beyond_its_budget(tmp_path):
    """Basic filter, budget epsilon 1: the scenario spent 0.5 on b; 0.6 more there makes 1.1 > 1 (refused,
    remaining unchanged 0.5); 0.4 on c keeps the worst case at 0.5 (exclusive: nobody is in b and c)."""
    with Accountant.create(tmp_path / "l.sqlite", _scenario(), budget_epsilon=1.0, budget_delta=0.0) as ledger:
        refused = ledger.check("b", gce.PureDP(0.6))
        admitted = ledger.check("c", gce.PureDP(0.4))
    assert not refused.admitted and admitted.admitted
    text = str(refused)
    assert _row(text, "epsilon") == ["epsilon", "1.1", "1", "0.5", "beyond", "its", "budget"]
    assert _row(text, "delta") == ["delta", "0", "0", "0", "within", "budget"]
    assert "remaining (unchanged)" in text and "never admits" not in text
    assert _row(str(admitted), "epsilon") == ["epsilon", "0.5", "1", "0.5", "within", "budget"]
    assert "worst-case databases: {1} (1 database)" in str(admitted)


def test_status_on_the_command_line_labels_its_numbers(tmp_path, capsys):
    scenario = tmp_path / "s.toml"
    scenario.write_text('databases = ["a", "b"]\n[[invocations]]\ndatabases = "a"\n'
                        'mechanism = {kind = "pure", epsilon = 0.25}\n')
    ledger = str(tmp_path / "l.sqlite")
    assert main(["ledger", "init", str(scenario), "--budget-epsilon", "1", "--budget-delta", "0",
                 "--ledger", ledger]) == 0
    capsys.readouterr()
    assert main(["ledger", "status", "--ledger", ledger]) == 0
    out = capsys.readouterr().out
    assert _row(out, "epsilon") == ["epsilon", "0.25", "1", "0.75", "within", "budget"]
    assert "component  spent (worst case)  budget  remaining  state" in out


def test_accountant_repr_is_one_line(tmp_path):
    path = tmp_path / "l.sqlite"
    with Accountant.create(path, _scenario(), budget_epsilon=3.0, budget_delta=1e-6, filter="renyi") as ledger:
        assert repr(ledger) == (f"Accountant({str(path)!r}, 3 named databases, filter='renyi', "
                                f"budget epsilon 3 delta 1e-06)")

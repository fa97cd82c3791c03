"""Command-line papercuts (issue 37, part 4): every option has help, ``gce curve --plot`` draws the deltas asked,
and the ledger's synopsis pairs each filter with spends it admits."""

from __future__ import annotations

import argparse
import pathlib

import numpy as np
import pytest

import gce.plot
from gce.cli import _parser, main

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def _actions(parser: argparse.ArgumentParser, path: tuple[str, ...] = ("gce",)):
    """Every (command path, action) of the parser and of its subcommands, depth first."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield path, name, helps.get(name)
                yield from _actions(sub, path + (name,))
        else:
            yield path, action.option_strings[0] if action.option_strings else action.dest, action.help


def test_every_option_and_subcommand_has_help():
    found = list(_actions(_parser()))
    missing = [f"{' '.join(path)} {name}" for path, name, text in found if not text or text == argparse.SUPPRESS]
    assert missing == []
    names = {(" ".join(path), name) for path, name, _ in found}
    for flag in (("gce calibrate", "--target-epsilon"), ("gce calibrate", "--target-delta"),
                 ("gce ledger init", "--budget-epsilon"), ("gce ledger init", "--budget-delta"),
                 ("gce ledger", "spend"), ("gce curve", "--plot")):
        assert flag in names  # the walk reaches the nested subcommands
    assert len(found) > 80


@pytest.mark.parametrize("argv, words", [
    (["calibrate", "--help"], ["--target-epsilon E  the total epsilon to meet", "--target-delta D    the total delta"]),
    (["ledger", "init", "--help"], ["--budget-epsilon E  the total epsilon every individual may spend",
                                    "--budget-delta D    the total delta, in [0, 1) (default 0"]),
])
def test_help_texts_of_the_targets_and_budgets(argv, words, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 0
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps to the terminal's width
    for text in words:
        assert " ".join(text.split()) in out


def test_curve_plot_draws_the_deltas_asked(tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib")
    drawn = []
    plot_curves = gce.plot.plot_curves
    monkeypatch.setattr(gce.plot, "plot_curves", lambda *a, **k: drawn.append(plot_curves(*a, **k)) or drawn[-1])
    out = tmp_path / "curve.png"
    asked = ["1e-6", "1e-4", "1e-3"]
    assert main(["curve", str(EXAMPLES / "hospitals.toml"), "--deltas", *asked, "--plot", str(out), "--quiet"]) == 0
    assert f"plot written to {out}" in capsys.readouterr().out
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (ax,) = drawn
    (line,) = [l for l in ax.get_lines() if l.get_label() == gce.plot.GCE_LABEL]
    x = np.asarray(line.get_xdata())
    assert x.min() == 1e-6 and x.max() == 1e-3 and 1e-4 in x  # not the default 1e-12 ... 1e-1
    assert x.size == gce.plot.DRAWN_DELTAS + 1 and np.all(np.diff(x) > 0)


def test_deltas_spanning_one_delta_and_zero():
    d = gce.plot.deltas_spanning([0.0, 1e-5])
    assert d[0] == pytest.approx(1e-6) and d[-1] == pytest.approx(1e-4) and 1e-5 in d and 0.0 not in d
    with pytest.raises(gce.InvalidParameterError, match="^deltas: needs a positive delta"):
        gce.plot.deltas_spanning([0.0])


PURE = """title = "pure"
databases = 4
[[invocations]]
databases = "all"
mechanism = { kind = "pure", epsilon = 0.1 }
[[constraints]]
kind = "at_most"
m = 2
"""


def test_the_ledger_synopsis(tmp_path, capsys):
    """The basic filter with pure spends (a budget without --budget-delta), the gdp filter with a delta and
    GDP spends; the basic filter refuses a GDP spend, naming the mechanism and the filters that take it."""
    scenario = tmp_path / "pure.toml"
    scenario.write_text(PURE)
    basic, gdp = str(tmp_path / "basic.sqlite"), str(tmp_path / "gdp.sqlite")
    assert main(["ledger", "init", str(scenario), "--budget-epsilon", "3", "--ledger", basic]) == 0
    assert "delta 0" in capsys.readouterr().out
    assert main(["ledger", "check", "--databases", "1,3", "--mechanism", 'kind = "pure", epsilon = 0.01',
                 "--ledger", basic]) == 0
    assert main(["ledger", "spend", "--databases", "all", "--mechanism", 'kind = "pure", epsilon = 0.1',
                 "--analyst", "ana", "--ledger", basic]) == 0
    assert capsys.readouterr().out.count("admitted") == 2
    # the README's pairing: the default basic filter and a GDP spend
    assert main(["ledger", "spend", "--databases", "all", "--mechanism", 'kind = "gdp", mu = 0.1',
                 "--analyst", "ana", "--ledger", basic]) == 2
    assert capsys.readouterr().err.startswith("gce: error: mechanism: the basic filter needs an (epsilon, delta) "
                                              "point")
    scenario.write_text(PURE.replace('{ kind = "pure", epsilon = 0.1 }', '{ kind = "gdp", mu = 0.1 }'))
    assert main(["ledger", "init", str(scenario), "--budget-epsilon", "3", "--budget-delta", "1e-6",
                 "--filter", "gdp", "--ledger", gdp]) == 0
    assert main(["ledger", "spend", "--databases", "all", "--mechanism", 'kind = "gdp", mu = 0.1',
                 "--analyst", "ana", "--ledger", gdp]) == 0
    assert "admitted (entry 2)" in capsys.readouterr().out


def test_curve_plot_of_delta_zero_alone_names_the_flag(tmp_path, capsys):
    out = tmp_path / "curve.png"
    assert main(["curve", str(EXAMPLES / "hospitals.toml"), "--deltas", "0", "--plot", str(out), "--quiet"]) == 2
    assert capsys.readouterr().err == ("gce: error: --plot: needs a positive delta among --deltas (delta 0 has no "
                                       "place on a log axis)\n")
    assert not out.exists()

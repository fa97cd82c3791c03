"""Start-up: ``import gce`` and the command line load no heavy module they do not use.

``gce/__init__.py`` imports its public names on first use (a module ``__getattr__``, SPEC 1), and the
modules import scipy.signal, scipy.optimize, networkx, HiGHS, DuckDB, dp-accounting and matplotlib inside
the functions that use them. Each check runs in a fresh interpreter, where ``sys.modules`` shows what an
import really loaded (in this process the other tests have loaded everything). Wall times are not asserted
here: ``benchmarks/bench_startup.py`` measures them against ``import numpy``.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

import gce
import gce.solvers

#: Modules none of the checked imports and commands may load.
HEAVY = ("scipy.signal", "scipy.stats", "scipy.optimize", "networkx", "highspy", "duckdb", "dp_accounting",
         "matplotlib")
#: Seconds a fresh interpreter may take.
TIMEOUT = 120

#: Runs in a fresh interpreter: what ``import gce`` loaded and what ``dir(gce)`` lists before any name is
#: used; with RESOLVE, then every public name resolved (``getattr`` and ``from gce import``), and what that loaded.
IMPORT_GCE = """
import json, sys
import gce
loaded = [m for m in HEAVY if m in sys.modules]
listed = dir(gce)
missing = []
if RESOLVE:
    for name in gce.__all__:
        try:
            getattr(gce, name)
            exec(f"from gce import {name}", {})
        except Exception as error:
            missing.append(f"{name}: {error!r}")
print(json.dumps({"loaded": loaded, "listed": listed, "all": gce.__all__, "missing": missing,
                  "after": [m for m in HEAVY if m in sys.modules]}))
"""

#: Runs the command line as ``python -m gce`` does, then writes the HEAVY modules it loaded to a file
#: (an atexit hook: the command exits through SystemExit).
RUN_CLI = """
import atexit, json, runpy, sys
out = sys.argv[1]
atexit.register(lambda: open(out, "w").write(json.dumps([m for m in HEAVY if m in sys.modules])))
sys.argv = ["gce"] + sys.argv[2:]
runpy.run_module("gce", run_name="__main__", alter_sys=True)
"""


def _python(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", f"HEAVY = {HEAVY!r}\n{code}", *args], capture_output=True,
                          text=True, timeout=TIMEOUT, env=dict(os.environ))


def _cli_loaded(tmp_path: pathlib.Path, *args: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    out = tmp_path / "loaded.json"
    done = _python(RUN_CLI, str(out), *args)
    assert out.exists(), done.stderr
    return done, json.loads(out.read_text())


def _import_gce(resolve: bool) -> dict:
    done = _python(f"RESOLVE = {resolve}\n{IMPORT_GCE}")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_import_gce_loads_no_heavy_module():
    found = _import_gce(resolve=False)
    assert found["loaded"] == []
    assert set(found["all"]) <= set(found["listed"])  # dir() lists every public name before its first use


@pytest.mark.slow
def test_every_public_name_resolves_in_a_fresh_interpreter():
    """Each name on first use, in ``__all__``'s order, where nothing was imported before (the in-process twin
    below runs after other tests have imported most modules)."""
    found = _import_gce(resolve=True)
    assert found["loaded"] == []
    assert found["missing"] == []
    # the check can see a heavy module: GceAccountant (among the names) subclasses dp-accounting's accountant
    assert "dp_accounting" in found["after"]


def test_every_public_name_resolves_in_process():
    for name in gce.__all__:
        assert getattr(gce, name) is not None, name
        namespace: dict[str, object] = {}
        exec(f"from gce import {name}", namespace)
        assert namespace[name] is getattr(gce, name)
    assert set(gce.__all__) <= set(dir(gce))
    assert gce.__version__
    assert gce.solving.solve is gce.solve  # submodules stay reachable as attributes
    for name in gce.solvers.__all__:
        assert getattr(gce.solvers, name) is not None, name
    assert set(gce.solvers.__all__) <= set(dir(gce.solvers))
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        gce.not_a_name  # noqa: B018
    with pytest.raises(ImportError):
        exec("from gce import not_a_name", {})


def test_gce_version_loads_no_heavy_module(tmp_path):
    done, loaded = _cli_loaded(tmp_path, "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"gce {gce.__version__}"
    assert loaded == []


def _ledger(tmp_path: pathlib.Path) -> tuple[str, int]:
    """A ledger over 50 databases, at most 5 per person, with one spend; its path and entry count."""
    path = tmp_path / "ledger.sqlite"
    scenario = gce.Scenario(50, [gce.Invocation(0, gce.PureDP(0.01))], gce.ConstraintSet(50, [gce.AtMost(5)]))
    with gce.Accountant.create(str(path), scenario, budget_epsilon=1.0, budget_delta=0.0) as ledger:
        ledger.spend([0, 1], gce.PureDP(0.01))
        return str(path), ledger.status().entries


def test_ledger_status_loads_no_heavy_module(tmp_path):
    path, entries = _ledger(tmp_path)
    done, loaded = _cli_loaded(tmp_path, "ledger", "status", "--ledger", path, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["entries"] == entries
    assert loaded == []


@pytest.mark.slow
def test_ledger_spend_loads_no_heavy_module(tmp_path):
    """A spend whose bracket needs no search (at_most over every database: the top-m bound is exact)."""
    path, _ = _ledger(tmp_path)
    done, loaded = _cli_loaded(tmp_path, "ledger", "spend", "--ledger", path, "--databases", "2,3",
                               "--mechanism", 'kind = "pure", epsilon = 0.01', "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["admitted"] is True
    assert loaded == []

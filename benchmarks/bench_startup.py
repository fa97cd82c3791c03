"""Benchmark: start-up, against ``python -c "import numpy"`` measured in the same run.

Each command runs in a fresh interpreter (a subprocess), in turns (numpy, ``import gce``, ``gce --version``,
``gce ledger status``, then numpy again, ...), so that a load from other processes falls on all of them
alike; the time of each is the shortest of ``--repeat`` runs (default 10), and the ratios are to numpy's.

a. ``python -c "import gce"``. Target: within 3x of ``import numpy``.
b. ``gce --version``. Target: within 2.5x.
c. ``gce ledger status --ledger L``, L an SQLite ledger over 1,000 databases with ``at_most 365`` and 200
   recorded spends (opened, its hash chain walked and checked, its status printed). Target: within 2.5x.
d. ``python -c "from gce import Scenario, solve"``: what a script pays on first use of the solver (the names
   are imported when first used, so ``import gce`` alone costs almost nothing). Reported, no target.

The interpreters read compiled bytecode, as an installed package does: ``PYTHONDONTWRITEBYTECODE`` is
dropped and ``PYTHONPYCACHEPREFIX`` points to a temporary folder (the source tree is not written), and
each command runs once before the timed runs. ``--as-is`` keeps the environment as it is instead.
The heavy modules a command imported (scipy.signal, scipy.stats, scipy.optimize, networkx, highspy, duckdb,
dp_accounting, matplotlib) are listed beside its time: none is the goal.

Run: python benchmarks/bench_startup.py [--repeat N] [--as-is]   (10 to 40 s; not collected by pytest)
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import gce

#: The heavy optional or slow-to-import modules none of the commands needs.
HEAVY = ("scipy.signal", "scipy.stats", "scipy.optimize", "networkx", "highspy", "duckdb", "dp_accounting",
         "matplotlib")
#: Ratio to ``import numpy`` each command should stay within.
TARGETS = {"import gce": 3.0, "gce --version": 2.5, "gce ledger status": 2.5}
#: Prints, after the command has run, which of HEAVY it imported (the console script's ``main_exit`` exits,
#: so the list comes from an atexit hook installed before it runs).
_PROBE = ("import atexit, sys; atexit.register(lambda: print('HEAVY:' + ','.join(m for m in {heavy!r} "
          "if m in sys.modules), file=sys.stderr)); ")


def _ledger(folder: str) -> str:
    """An SQLite ledger over 1,000 databases (at most 365 per person) with 200 recorded spends."""
    path = os.path.join(folder, "ledger.sqlite")
    scenario = gce.Scenario(1000, [gce.Invocation(0, gce.PureDP(0.01))], gce.ConstraintSet(1000, [gce.AtMost(365)]))
    with gce.Accountant.create(path, scenario, budget_epsilon=10.0, budget_delta=0.0) as ledger:
        for i in range(200):
            ledger.spend([i % 1000, (7 * i + 3) % 1000], gce.PureDP(0.01), analyst="bench")
    return path


def _gce_command() -> list[str]:
    """The console script installed beside this interpreter (``python -m gce`` when there is none)."""
    script = shutil.which("gce", path=os.path.dirname(sys.executable))
    return [script] if script else [sys.executable, "-m", "gce"]


def _commands(ledger: str) -> dict[str, list[str]]:
    gce_command = _gce_command()
    return {
        "import numpy": [sys.executable, "-c", "import numpy"],
        "import gce": [sys.executable, "-c", "import gce"],
        "gce --version": gce_command + ["--version"],
        "gce ledger status": gce_command + ["ledger", "status", "--ledger", ledger],
        "from gce import solve": [sys.executable, "-c", "from gce import Scenario, solve"],
    }


def _probed(command: list[str]) -> list[str]:
    """``command`` run by this interpreter with the HEAVY probe installed first."""
    probe = _PROBE.format(heavy=HEAVY)
    if command[:2] == [sys.executable, "-c"]:
        return [sys.executable, "-c", probe + command[2]]
    if command[:2] == [sys.executable, "-m"]:
        return [sys.executable, "-c", probe + "import runpy, sys; sys.argv = ['gce'] + sys.argv[1:]; "
                                              "runpy.run_module('gce', run_name='__main__')"] + command[3:]
    return [sys.executable, "-c", probe + "import sys; sys.argv[0] = 'gce'; from gce.cli import main_exit; "
                                          "main_exit()"] + command[1:]


def _run(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def _heavy(command: list[str], env: dict[str, str]) -> list[str]:
    done = subprocess.run(_probed(command), env=env, check=True, capture_output=True, text=True)
    lines = [line for line in done.stderr.splitlines() if line.startswith("HEAVY:")]
    return [m for m in lines[-1][len("HEAVY:"):].split(",") if m] if lines else ["?"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10, help="timed runs of each command (the shortest counts)")
    parser.add_argument("--as-is", action="store_true", help="keep the environment (bytecode settings included)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        env = dict(os.environ)
        if not args.as_is:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = os.path.join(folder, "pycache")
        commands = _commands(_ledger(folder))
        for command in commands.values():  # warm-up: bytecode written, files in the page cache
            _run(command, env)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.repeat):
            for name, command in commands.items():
                times[name].append(_run(command, env))
        heavy = {name: _heavy(command, env) for name, command in commands.items() if name != "import numpy"}
    best = {name: min(values) for name, values in times.items()}
    base = best["import numpy"]
    setting = "environment as is" if args.as_is else "bytecode cached"
    print(f"start-up, best of {args.repeat} runs each, in turns ({setting})")
    print(f"   {'import numpy':22} {base * 1e3:7.1f} ms")
    ok = True
    for name, target in TARGETS.items():
        ratio = best[name] / base
        met = ratio <= target
        ok &= met
        print(f"   {name:22} {best[name] * 1e3:7.1f} ms   ratio {ratio:5.2f} (target <= {target:g}x: "
              f"{'met' if met else 'NOT met'})   heavy modules imported: {', '.join(heavy[name]) or 'none'}")
    name = "from gce import solve"
    print(f"   {name:22} {best[name] * 1e3:7.1f} ms   ratio {best[name] / base:5.2f} (no target)   heavy modules "
          f"imported: {', '.join(heavy[name]) or 'none'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

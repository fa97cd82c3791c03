"""HiGHS' banner never reaches the standard streams, and nothing else written meanwhile is lost.

highspy prints "Running HiGHS ..." on the C-level stdout when the first ``Highs()`` of a process is
built, before ``output_flag`` can be set; :func:`gce.solvers.highs.new_highs` builds it with file
descriptors 1 and 2 on temporary files (:func:`gce.solvers.highs._banner_dropped`) and passes on what
is not the banner. The first construction of a process is only seen in a fresh interpreter;
``tests/test_cli_contract.py`` checks the same through every command.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import threading

from gce.solvers import highs

BANNER = (b"Running HiGHS 1.16.0 (git hash: f3f113d): Copyright (c) 2026 under MIT licence terms\n"
          b"Includes third-party software components, see THIRD_PARTY_NOTICES.md for full details\n")


def fresh(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_the_first_highs_of_a_process_prints_nothing_and_bare_highspy_prints_its_banner():
    ours = fresh("import os\nos.write(1, b'before\\n')\nfrom gce.solvers.highs import new_highs\n"
                 "h = new_highs()\nprint('after')\nprint(h.getOptionValue('output_flag')[1])")
    assert (ours.returncode, ours.stdout, ours.stderr) == (0, "before\nafter\nFalse\n", "")
    # the reference: without new_highs the banner is there (if highspy stops printing it, this says so)
    bare = fresh("import highspy\nh = highspy.Highs()\nprint('after')")
    assert bare.returncode == 0 and bare.stdout.startswith("Running HiGHS ") and bare.stdout.endswith("\nafter\n")


def test_only_the_banner_lines_are_dropped():
    kept = b"Running HiGHS is what the log says\nours: Running HiGHS \n\nlast line without newline"
    assert highs._without_banner(BANNER + kept[:35] + b"Using BLAS: openblas \n" + kept[35:]) == kept
    assert highs._without_banner(b"") == b""


def test_what_is_written_during_a_construction_is_passed_on_in_order(capfd):
    libc = ctypes.CDLL(None)
    os.write(1, b"before\n")
    with highs._banner_dropped():
        os.write(1, BANNER)
        os.write(1, b"fd 1 inside\n")
        os.write(2, b"fd 2 inside\n")
        libc.printf(b"C stdout inside\n")  # buffered by the C library: flushed before the descriptor returns
    os.write(1, b"after\n")
    out, err = capfd.readouterr()
    assert out == "before\nfd 1 inside\nC stdout inside\nafter\n"
    assert err == "fd 2 inside\n"


def test_constructions_in_many_threads_lose_no_other_output(capfd):
    made: list[object] = []
    errors: list[BaseException] = []

    def build() -> None:
        try:
            for _ in range(10):
                made.append(highs.new_highs())
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=build) for _ in range(4)]
    for thread in threads:
        thread.start()
    for i in range(300):  # written while the constructions move the descriptors back and forth
        os.write(1, b"line %d\n" % i)
    for thread in threads:
        thread.join()
    out, err = capfd.readouterr()
    assert not errors and len(made) == 40
    assert all(h.getOptionValue("output_flag")[1] is False for h in made)
    # every line once (a line written while another thread's construction had the descriptor comes out when
    # that construction ends, so lines of different threads may interleave differently)
    assert sorted(out.splitlines()) == sorted(f"line {i}" for i in range(300)) and err == ""

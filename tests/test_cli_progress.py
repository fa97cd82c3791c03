"""The progress line of ``gce solve`` and ``gce curve`` (gce.progress.Elapsed): the stage and the seconds on
a terminal once a run lasts :data:`~gce.progress.ELAPSED_AFTER` seconds; never a byte on standard output,
nothing when standard error is not a terminal, with ``--quiet`` or ``--json``.

A real terminal is a pseudo-terminal (``pty.openpty``) given to a fresh interpreter as its standard error;
standard output stays a pipe and must be what a run without a terminal prints."""

from __future__ import annotations

import io
import os
import pathlib
import re
import subprocess
import sys
import time

import pytest

import gce.progress
from gce.cli import main
from gce.errors import InvalidParameterError
from gce.progress import Elapsed

pty = pytest.importorskip("pty")

ROOT = pathlib.Path(__file__).resolve().parent.parent
HOSPITALS = str(ROOT / "examples" / "hospitals.toml")
GAUSSIAN_PARTS = str(ROOT / "examples" / "gaussian_parts.toml")


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_elapsed_draws_stage_and_seconds_on_a_terminal_and_ends_its_line():
    stream = FakeTerminal()
    with Elapsed("curve", stream=stream, after=0.0, every=0.01) as elapsed:
        elapsed.stage("solving at delta 1e-10")
        deadline = time.monotonic() + 60
        while "solving" not in stream.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
    text = stream.getvalue()
    assert re.search(r"\rcurve: solving at delta 1e-10 \(\d+ s\)\x1b\[K", text)
    assert text.endswith("\n") and text.count("\n") == 1  # one line, ended on exit
    # every draw is a carriage return, the line (the stage may not be set yet) and erase to end of line
    draws = text[:-1].split("\r")
    assert draws[0] == "" and all(re.fullmatch(r"curve:( solving at delta 1e-10)? \(\d+ s\)\x1b\[K", d)
                                  for d in draws[1:])


def test_elapsed_is_silent_off_a_terminal_when_quiet_and_before_its_time():
    for stream, quiet, after in ((io.StringIO(), False, 0.0), (FakeTerminal(), True, 0.0),
                                 (FakeTerminal(), False, 3600.0)):
        with Elapsed("solve", stream=stream, quiet=quiet, after=after, every=0.01) as elapsed:
            elapsed.stage("solving")
            time.sleep(0.05)
        assert stream.getvalue() == ""


def test_elapsed_escapes_control_characters_and_checks_its_times():
    elapsed = Elapsed("solve\x1b[2J")
    elapsed.stage("reading \x07")
    assert elapsed.line(2.6) == "solve\\x1b[2J: reading \\x07 (3 s)"
    with pytest.raises(InvalidParameterError, match="^after: must be a finite number of seconds >= 0"):
        Elapsed("solve", after=-1.0)
    with pytest.raises(InvalidParameterError, match="^every: must be a finite number"):
        Elapsed("solve", every=float("nan"))


@pytest.mark.parametrize("argv", [["solve", HOSPITALS], ["curve", GAUSSIAN_PARTS]], ids=["solve", "curve"])
def test_the_commands_draw_on_a_terminal_and_print_the_same(capsys, monkeypatch, argv):
    """In process, with the line due at once: it goes to the terminal (stderr), stdout is unchanged."""
    assert main(argv) == 0
    plain = capsys.readouterr()
    assert plain.err == ""
    monkeypatch.setattr(gce.progress, "ELAPSED_AFTER", 0.0)
    monkeypatch.setattr(gce.progress, "ELAPSED_EVERY", 0.001)
    for flags, drawn in (((), True), (("--quiet",), False), (("--json",), False)):
        terminal = FakeTerminal()
        monkeypatch.setattr(sys, "stderr", terminal)
        assert main([*argv, *flags]) == 0
        out = capsys.readouterr().out
        if flags != ("--json",):
            assert out == plain.out
        text = terminal.getvalue()
        if drawn:  # the thread runs within CPython's switch interval (5 ms), the commands take longer
            assert re.match(rf"\r{argv[0]}: ", text) and text.endswith("\x1b[K\n")
        else:
            assert text == ""


def _on_a_pty(argv: list[str]) -> tuple[str, bytes]:
    """(stdout, what reached the terminal) of ``python -m gce ARGV`` with a pseudo-terminal as stderr."""
    master, slave = pty.openpty()
    try:
        done = subprocess.Popen([sys.executable, "-m", "gce", *argv], stdout=subprocess.PIPE, stderr=slave,
                                stdin=subprocess.DEVNULL, cwd=ROOT, text=True)
        os.close(slave)
        slave = -1
        out, _ = done.communicate(timeout=300)
        assert done.returncode == 0
        drawn = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the terminal's other end is closed and everything was read
                break
            if not chunk:
                break
            drawn += chunk
        return out, drawn
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)


def test_a_short_run_on_a_terminal_prints_what_a_pipe_gets():
    argv = ["curve", HOSPITALS, "--deltas", "1e-6", "1e-3"]
    piped = subprocess.run([sys.executable, "-m", "gce", *argv], capture_output=True, text=True, cwd=ROOT,
                           timeout=300)
    out, drawn = _on_a_pty(argv)
    assert out == piped.stdout and piped.stderr == ""
    assert drawn == b""  # well under 2 s once gce is imported: no line


@pytest.mark.slow
def test_a_long_run_on_a_terminal_shows_its_stage_and_keeps_stdout_clean(tmp_path):
    """200 mixed databases with a 3 s limit: the line appears on the terminal, never on stdout."""
    from test_cli_contract import mixed_text

    path = tmp_path / "mixed.toml"
    path.write_text(mixed_text(3))
    out, drawn = _on_a_pty(["curve", str(path), "--deltas", "1e-6", "--time-limit", "3"])
    assert re.search(rb"\rcurve: solving at delta 1e-06 \(\d+ s\)\x1b\[K", drawn) and drawn.endswith(b"\r\n")
    assert "\r" not in out and "\x1b" not in out
    assert "mixed" in out.splitlines()[:2] and "bracket (GCE)" in out  # the title (after the limit's line)

"""The one-line progress reporter (gce.progress): silent off a terminal, one line on it."""

from __future__ import annotations

import io
import sys

import pytest

from gce.errors import InvalidParameterError
from gce.progress import Progress


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_silent_on_a_non_tty_stream():
    stream = io.StringIO()
    with Progress(stream=stream, label="search", min_interval=0) as progress:
        for step in range(1, 6):
            progress(step, 5, "working")
    assert stream.getvalue() == ""
    assert not progress.active


def test_writes_one_updating_line_on_a_tty():
    stream = FakeTerminal()
    with Progress(stream=stream, label="calibrate", min_interval=0) as progress:
        assert progress.active
        progress(1, 4, "epsilon 0.5")
        progress(2)
    text = stream.getvalue()
    assert text == "\rcalibrate 1/4 (25%) epsilon 0.5\x1b[K\rcalibrate step 2\x1b[K\n"
    assert text.count("\n") == 1  # one line, ended on exit


def test_quiet_suppresses():
    stream = FakeTerminal()
    with Progress(stream=stream, quiet=True, min_interval=0) as progress:
        progress(1, 2, "x")
    assert stream.getvalue() == "" and not progress.active


def test_nothing_drawn_means_no_newline():
    stream = FakeTerminal()
    with Progress(stream=stream):
        pass
    assert stream.getvalue() == ""


def test_redraws_are_throttled_but_the_last_step_is_drawn():
    stream = FakeTerminal()
    with Progress(stream=stream, min_interval=3600) as progress:
        for step in range(1, 101):
            progress(step, 100)
    text = stream.getvalue()
    assert text.count("\r") == 2  # the first draw and the final step
    assert "100/100 (100%)" in text


def test_defaults_to_stderr_at_call_time(monkeypatch):
    fake = FakeTerminal()
    progress = Progress(min_interval=0)
    monkeypatch.setattr(sys, "stderr", fake)
    progress(3, message="hello")
    progress.close()
    assert fake.getvalue() == "\rstep 3 hello\x1b[K\n"


def test_closed_streams_are_not_terminals():
    stream = FakeTerminal()
    stream.close()
    assert not Progress(stream=io.StringIO()).active
    closed = io.StringIO()
    closed.close()
    Progress(stream=closed)(1)  # no error: a closed stream is not a terminal


def test_plain_callables_are_progress_callbacks():
    calls = []
    callback = lambda step, total=None, message="": calls.append((step, total, message))
    callback(1, None, "x")
    assert calls == [(1, None, "x")]


@pytest.mark.parametrize("interval", [-1, float("nan"), "1"])
def test_invalid_interval_names_the_field(interval):
    with pytest.raises(InvalidParameterError, match="min_interval"):
        Progress(min_interval=interval)

"""The fenced blocks of a Markdown page (the README and the site's pages under ``docs/``), for the tests that
run them: ```` ```python ```` blocks are one doctest session a page, ```` ```console ```` blocks a ``gce``
command and the output it prints (``test_readme.py``, ``test_docs.py``)."""

from __future__ import annotations

import contextlib
import doctest
import io
import pathlib
import re
import subprocess
import sys

from gce.cli import main

ROOT = pathlib.Path(__file__).resolve().parent.parent


def python_blocks(text: str) -> list[str]:
    """The ```` ```python ```` blocks of ``text``, in order."""
    return re.findall(r"```python\n(.*?)```", text, re.S)


def run_python_session(text: str, name: str) -> doctest.TestResults:
    """Run the page's ```` ```python ```` blocks as one doctest session (a later block sees the names of the
    earlier ones), from the repository's root; the failures are printed by doctest."""
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    namespace: dict = {}
    for i, block in enumerate(python_blocks(text)):
        test = parser.get_doctest(block, namespace, f"{name}[{i}]", name, 0)
        runner.run(test, clear_globs=False)
        namespace = test.globs
    return runner.summarize(verbose=False)


def console_blocks(text: str) -> list[tuple[str, str]]:
    """Every ```` ```console ```` block: (the command after ``$ ``, the output shown below it)."""
    blocks = []
    for block in re.findall(r"```console\n(.*?)```", text, re.S):
        command, _, shown = block.partition("\n")
        assert command.startswith("$ gce "), command
        blocks.append((command[2:], shown))
    return blocks


def in_process(args: list[str]) -> str:
    """What ``gce ARGS`` prints, from :func:`gce.cli.main` in this interpreter."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        main(args)
    return out.getvalue()


def as_process(args: list[str]) -> str:
    """What ``gce ARGS`` prints, from a fresh interpreter (about 1 s each)."""
    done = subprocess.run([sys.executable, "-m", "gce", *args], capture_output=True, text=True, cwd=ROOT)
    return done.stdout + done.stderr


def check_console_block(command: str, shown: str, run) -> None:
    """``command`` (``gce ...``) prints ``shown``; a ``--plot`` file it writes is a PNG, removed after."""
    args = command.split()[1:]
    assert run(args) == shown, command
    for i, arg in enumerate(args[:-1]):
        if arg == "--plot":
            written = ROOT / args[i + 1]
            assert written.read_bytes()[:4] == b"\x89PNG"
            written.unlink()

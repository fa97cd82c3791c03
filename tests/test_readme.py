"""The README is tested: its Python session runs as a doctest, its example output is real."""

from __future__ import annotations

import contextlib
import doctest
import io
import pathlib
import re
import subprocess
import sys

import tiers
from gce.cli import main

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_readme_python_sessions():
    blocks = re.findall(r"```python\n(.*?)```", README, re.S)
    assert len(blocks) >= 2
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    namespace: dict = {}
    for i, block in enumerate(blocks):  # one session: later blocks see the names of earlier ones
        test = parser.get_doctest(block, namespace, f"README[{i}]", "README.md", 0)
        runner.run(test, clear_globs=False)
        namespace = test.globs
    assert runner.failures == 0 and runner.tries >= 12


def test_readme_quickstart_commands_and_output():
    commands = re.findall(r"```sh\n(.*?)\n```", README, re.S)
    assert len(commands) == 2
    assert commands[1].endswith("python -m pytest")
    ci = (ROOT / ".ci" / "run").read_text()
    assert commands[1] in ci, ".ci/run must call the README's test command"
    program = re.search(r"\.venv/bin/gce (solve \S+)$", commands[0]).group(1).split()
    shown = re.search(r"The first command prints:\n\n```\n(.*?)```", README, re.S).group(1)
    out = subprocess.run([sys.executable, "-m", "gce", *program], capture_output=True, text=True, cwd=ROOT,
                         check=True)
    assert out.stdout == shown


def console_blocks():
    """Every ```console block: (command after '$ ', the output shown below it)."""
    for block in re.findall(r"```console\n(.*?)```", README, re.S):
        command, _, shown = block.partition("\n")
        assert command.startswith("$ gce ")
        yield command[2:], shown


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


@tiers.parametrize("run", [in_process, as_process], default=[0], ids=["in_process", "as_process"])
def test_every_console_block_prints_what_the_readme_shows(tmp_path, monkeypatch, run):
    monkeypatch.chdir(ROOT)
    blocks = list(console_blocks())
    assert len(blocks) >= 4
    for command, shown in blocks:
        args = command.split()[1:]
        assert run(args) == shown, command
        for i, arg in enumerate(args[:-1]):
            if arg == "--plot":
                written = ROOT / args[i + 1]
                assert written.read_bytes()[:4] == b"\x89PNG"
                written.unlink()

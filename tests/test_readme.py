"""The README is tested: its Python session runs as a doctest, its Quickstart commands print what it shows,
and it stays a front page. The task pages the README used to hold live in the user guide (``docs/guide/``),
whose sessions and commands ``test_docs.py`` runs the same way."""

from __future__ import annotations

import re
import subprocess
import sys

from doc_blocks import ROOT, python_blocks, run_python_session

README = (ROOT / "README.md").read_text()


def section(title: str) -> str:
    """The README's ``## title`` section, up to the next ``## ``."""
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_readme_python_session():
    assert len(python_blocks(README)) >= 1
    failed, tried = run_python_session(README, "README.md")
    assert failed == 0 and tried >= 7, (failed, tried)


def test_readme_quickstart_commands_and_output():
    commands = re.findall(r"```sh\n(.*?)\n```", section("Quickstart"), re.S)
    assert len(commands) == 2
    assert commands[1].endswith("python -m pytest")
    ci = (ROOT / ".ci" / "run").read_text()
    assert commands[1] in ci, ".ci/run must call the README's test command"
    program = re.search(r"\.venv/bin/gce (solve \S+)$", commands[0]).group(1).split()
    shown = re.search(r"The first command prints:\n\n```\n(.*?)```", README, re.S).group(1)
    out = subprocess.run([sys.executable, "-m", "gce", *program], capture_output=True, text=True, cwd=ROOT,
                         check=True)
    assert out.stdout == shown


def test_readme_is_a_front_page():
    lines = README.splitlines()
    assert len(lines) <= 210, len(lines)
    first_block = next(i for i, line in enumerate(lines) if line.startswith("```"))
    assert first_block < 40
    install = re.findall(r"```sh\n(.*?)\n```", section("Install"), re.S)
    assert len(install) == 1 and install[0].startswith("pip install ") and "\n" not in install[0]
    assert "Paper 001" not in README and "paper 001" not in README
    for heading in ("Install", "Quickstart", "In Python", "Features", "Documentation", "Citing"):
        assert f"\n## {heading}\n" in README, heading
    assert "@article{kairouz2017composition" in README

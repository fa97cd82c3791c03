"""The documentation site (``docs/``) is tested: the user guide's Python sessions run as doctests and its
``gce`` commands print what the pages show; the API reference lists every public name; the performance page
names every benchmark. The site itself is built by ``.ci/run`` (Sphinx, warnings as errors)."""

from __future__ import annotations

import ast
import re

import pytest

import gce
import tiers
from doc_blocks import ROOT, as_process, check_console_block, console_blocks, in_process, run_python_session

DOCS = ROOT / "docs"
GUIDE = sorted((DOCS / "guide").glob("*.md"))
WITH_PYTHON = [page for page in GUIDE if "```python\n" in page.read_text()]
WITH_CONSOLE = [page for page in GUIDE if "```console\n" in page.read_text()]


def test_the_guide_has_its_task_pages():
    names = {page.stem for page in GUIDE}
    assert {"scenarios", "constraints-from-data", "priors", "ledger", "calibration", "curves", "python",
            "dp-accounting", "opacus"} <= names
    index = (DOCS / "guide" / "index.md").read_text()
    assert all(f"\n{name}\n" in index for name in names - {"index"}), "a guide page missing from its toctree"
    assert len(WITH_PYTHON) >= 7 and len(WITH_CONSOLE) >= 5


@pytest.mark.parametrize("page", WITH_PYTHON, ids=lambda page: page.stem)
def test_guide_python_sessions(page, monkeypatch):
    monkeypatch.chdir(ROOT)  # the sessions read examples/ as a user in a clone would
    failed, tried = run_python_session(page.read_text(), f"docs/guide/{page.name}")
    assert failed == 0 and tried >= 3, (failed, tried)


@tiers.parametrize("run", [in_process, as_process], default=[0], ids=["in_process", "as_process"])
@pytest.mark.parametrize("page", WITH_CONSOLE, ids=lambda page: page.stem)
def test_guide_console_blocks_print_what_the_page_shows(page, run, monkeypatch):
    monkeypatch.chdir(ROOT)
    blocks = console_blocks(page.read_text())
    assert blocks
    for command, shown in blocks:
        check_console_block(command, shown, run)


def test_the_api_reference_lists_every_public_name():
    listed = set(re.findall(r"^   (\w+)$", (DOCS / "api.rst").read_text(), re.M))
    assert set(gce.__all__) <= listed, sorted(set(gce.__all__) - listed)


def test_the_performance_page_names_every_benchmark_with_its_figures():
    page = (DOCS / "performance.md").read_text()
    figures = page.split("## Figures by benchmark", 1)[1].split("\n## ", 1)[0]
    for script in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        assert f"benchmarks/{script.name}" in page, script.name
        assert ast.get_docstring(ast.parse(script.read_text())), f"{script.name}: the page shows its docstring"
    assert figures.count("- `benchmarks/bench_") >= 15


def test_relative_links_of_the_pages_point_to_files_that_exist():
    for page in [ROOT / "README.md", *DOCS.glob("*.md"), *GUIDE]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" in target or target.startswith("mailto:"):
                continue
            path = (page.parent / target)
            assert path.exists() or path.with_suffix(".md").exists() or path.with_suffix(".rst").exists() \
                or "auto_examples/" in target, \
                f"{page.name}: {target}"

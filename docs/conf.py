"""Sphinx configuration of gce's documentation site.

Build it from the repository's root (the ``docs`` extra installs what it needs)::

    pip install ".[docs]"
    python -m sphinx -W --keep-going -b html docs docs/_build/html

Pages are Markdown (MyST) or reStructuredText; the API reference is generated from the numpydoc
docstrings of ``gce``'s public names (``api.rst``, autosummary); the gallery runs ``examples/plot_*.py``
(sphinx-gallery) and renders their figures at build time.
"""

from __future__ import annotations

import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # document the source tree beside this folder, not an older installed copy
os.environ.setdefault("MPLBACKEND", "agg")

import gce  # noqa: E402

project = "gce"
author = "the gce authors"
copyright = "the gce authors, Apache License 2.0"
version = release = gce.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
highlight_language = "text"  # a fence without a language is shown as it is
templates_path = ["_templates"]
# README.md describes this folder to someone browsing the repository; _build and the generated pages are outputs.
exclude_patterns = ["_build", "README.md", "generated/benchmarks.md", "auto_examples/*.ipynb", "auto_examples/*.py", "auto_examples/*.zip"]

# MyST: anchors for headings down to level 4 (design.md is linked as design.md#unsound-formulas).
myst_heading_anchors = 4
myst_enable_extensions = ["dollarmath", "deflist"]
# glossary.md keeps one level of heading per term (### under the page title), as it reads on GitHub.
suppress_warnings = ["myst.header"]

# The API reference: one page per public name of gce, from its numpydoc docstring.
autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "none"  # the numpydoc Parameters sections state the types
autodoc_member_order = "bysource"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# The gallery: every examples/plot_*.py is run at build time and its figures rendered; the other scripts in
# examples/ (each checked by tests/test_examples.py) are left out.
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"(^|[/\\])(?!plot_)[^/\\]*\.py$",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "min_reported_time": 1,
}

html_theme = "pydata_sphinx_theme"
html_title = f"gce {version}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_static_path: list[str] = []
html_show_sourcelink = False


def write_benchmark_list(app: object) -> None:
    """``generated/benchmarks.md``, included by performance.md: each ``benchmarks/bench_*.py`` with the first
    paragraph of its module docstring (read with :mod:`ast`, nothing imported) and the command that runs it."""
    import ast

    parts = []
    for script in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        doc = ast.get_docstring(ast.parse(script.read_text())) or ""
        summary = " ".join(doc.split("\n\n", 1)[0].split()).removeprefix("Benchmark: ")
        parts.append(f"`benchmarks/{script.name}`\n: {summary} Run: `python benchmarks/{script.name}`.\n")
    target = pathlib.Path(__file__).resolve().parent / "generated" / "benchmarks.md"
    target.parent.mkdir(exist_ok=True)
    text = "\n".join(parts)
    if not target.exists() or target.read_text() != text:  # unchanged: no rebuild of the page
        target.write_text(text)


def setup(app: object) -> None:
    app.connect("builder-inited", write_benchmark_list)

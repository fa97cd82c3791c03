"""Hypothesis strategies and helpers for tests/test_fuzz.py (hardening).

* :func:`toml_dumps`: a tiny TOML writer (``tomllib`` only reads) that writes
  ``inf``, ``-inf``, ``nan``, integers of any size, strings, arrays, inline
  tables, ``[table]`` and ``[[array of tables]]`` sections.
* :func:`scenario_files`: a scenario document (a dict, every field of every
  kind, see docs/design.md, "Scenario files and the command line") plus the data files it refers to; a
  valid, tiny document is drawn first and then 0..3 mutations replace a value
  by an extreme number or a wrong type, delete a key, or add an unknown one.
  Shrinking removes mutations first, so failures shrink towards valid files.
* :func:`lower_bound_delta`: an independent reference for soundness, sharing
  nothing with ``gce``: every guarantee kind has a concrete mechanism that
  satisfies it (the canonical pair of 002 for (eps, delta), randomized response,
  Laplace and Gaussian noise, their Poisson-subsampled mixtures), and the
  hockey-stick divergence between the output laws of such mechanisms, after
  binning continuous outputs and marginalising some invocations out (both are
  post-processing), is a lower bound on the true worst case. A reported
  (epsilon, delta) whose delta is below it is not a valid guarantee.
"""

from __future__ import annotations

import itertools
import math
import re
import warnings
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st
from scipy import special, stats

# ---------------------------------------------------------------------------
# The TOML writer

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _string(key)


def _string(text: str) -> str:
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def toml_value(value: object) -> str:
    """One TOML value, written inline."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        text = repr(value)
        return text if any(c in text for c in ".en") else text + ".0"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no TOML form for {value!r}")


def _is_table_array(value: object) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def toml_dumps(doc: dict, sections: bool = True) -> str:
    """A TOML document for ``doc``: scalars first, then ``[table]`` and ``[[array]]`` sections.

    With ``sections=False`` everything is written inline (``key = [{...}, ...]``),
    the other legal spelling of the same document.
    """
    lines, tail = [], []
    for key, value in doc.items():
        if sections and isinstance(value, dict):
            tail.append(f"\n[{_key(key)}]")
            tail.extend(f"{_key(k)} = {toml_value(v)}" for k, v in value.items())
        elif sections and _is_table_array(value):
            for table in value:
                tail.append(f"\n[[{_key(key)}]]")
                tail.extend(f"{_key(k)} = {toml_value(v)}" for k, v in table.items())
        else:
            lines.append(f"{_key(key)} = {toml_value(value)}")
    return "\n".join(lines + tail) + "\n"


# ---------------------------------------------------------------------------
# Extreme values

INF, NAN = math.inf, math.nan
#: Numbers from the extremes (the issue's list, and their neighbours).
EXTREME_NUMBERS = [0, 0.0, -0.0, 5e-324, 1e-308, 1e-300, 1e-16, 1.0, 1, 1e308, INF, -INF, NAN, -1, -1.0, -1e-300,
                   0.999999999999, 1.0000000001, 2**63 - 1, -(2**63), 2**64, 10**30, 10**9, 10**12, 1.5]
#: Values of the wrong type for any field.
WRONG_TYPES = ["", "x", "all", "1.0", True, False, [], [1], [[0]], [0.5], ["a"], {}, {"kind": "pure"}]
KIND_NAMES = ["pure", "approx", "zcdp", "gdp", "gaussian", "laplace", "randomized_response", "subsampled",
              "at_most", "exclusive", "together", "conflicts", "patterns", "from_data", "point", "uniform",
              "explicit", "rates", "PURE", "fancy"]
extremes = st.sampled_from(EXTREME_NUMBERS)
anything_bad = st.sampled_from(EXTREME_NUMBERS + WRONG_TYPES)
float_flags = st.sampled_from(["0", "-0", "5e-324", "1e-308", "1e-300", "1e-6", "0.5", "1", "10", "1e308", "1e999",
                               "inf", "-inf", "nan", "-1", "100000000000000000000000000000", "0x10", "abc", ""])

NAMES = ["a", "b", "c", "d", "e", "f", "g", "h"]
ODD_NAMES = ["all", "", "0", "with space", "ünï", 'q"uote', "a"]

# ---------------------------------------------------------------------------
# Valid, tiny documents


@st.composite
def mechanisms(draw, depth: int = 0) -> dict:
    kind = draw(st.sampled_from(["pure", "approx", "zcdp", "gdp", "gaussian", "laplace", "randomized_response",
                                 "subsampled"] if depth < 2 else ["pure", "approx", "laplace", "randomized_response"]))
    eps = st.sampled_from([0.1, 0.5, 1.0, 0.0, 2.0, 0.05])
    if kind in ("pure", "randomized_response"):
        return {"kind": kind, "epsilon": draw(eps)}
    if kind == "approx":
        return {"kind": kind, "epsilon": draw(eps), "delta": draw(st.sampled_from([1e-6, 1e-3, 0.0, 0.05, 1e-10]))}
    if kind == "zcdp":
        return {"kind": kind, "rho": draw(st.sampled_from([0.1, 0.01, 0.5, 0.0, 2]))}
    if kind == "gdp":
        return {"kind": kind, "mu": draw(st.sampled_from([0.5, 1.0, 0.1, 0.0, 3]))}
    if kind in ("gaussian", "laplace"):
        key = "sigma" if kind == "gaussian" else "scale"
        table = {"kind": kind, key: draw(st.sampled_from([1.0, 2.0, 0.5, 5, 10.0]))}
        if draw(st.booleans()):
            table["sensitivity"] = draw(st.sampled_from([1.0, 0.5, 2, 0.0]))
        return table
    inner = draw(mechanisms(depth + 1))
    return {"kind": "subsampled", "rate": draw(st.sampled_from([0.5, 0.1, 1.0, 0.01])), "mechanism": inner}


def _ref(draw, n: int, names: list[str] | None):
    index = draw(st.integers(0, n - 1))
    return names[index] if names and draw(st.booleans()) else index


def _subset(draw, n: int, names, min_size: int = 0, max_size: int | None = None) -> list:
    size = draw(st.integers(min_size, n if max_size is None else min(max_size, n)))
    chosen = draw(st.permutations(range(n)))[:size]
    return [names[i] if names and draw(st.booleans()) else i for i in sorted(chosen)]


@st.composite
def constraints(draw, n: int, names) -> dict:
    kind = draw(st.sampled_from(["at_most", "exclusive", "together", "conflicts", "patterns", "from_data"]))
    if kind == "at_most":
        table = {"kind": kind, "m": draw(st.integers(1, n))}
        among = draw(st.integers(0, 2))
        if among == 1:
            table["among"] = "all"
        elif among == 2:
            table["among"] = _subset(draw, n, names, 1)
        return table
    if kind in ("exclusive", "together"):
        group = "all" if draw(st.integers(0, 3)) == 3 else _subset(draw, n, names, 1)
        return {"kind": kind, "databases": group}
    if kind == "conflicts":
        pairs = list(itertools.combinations(range(n), 2)) or [(0, 0)]
        edges = draw(st.lists(st.sampled_from(pairs), max_size=3, unique=True))
        return {"kind": kind, "edges": [[names[u] if names else u, names[v] if names else v] for u, v in edges]}
    if kind == "patterns":
        sets = draw(st.lists(st.frozensets(st.integers(0, n - 1), min_size=1), min_size=1, max_size=3, unique=True))
        return {"kind": kind, "allowed": [[names[i] if names else i for i in sorted(s)] for s in sets]}
    table = {"kind": "from_data", "file": "members.csv"}
    if draw(st.booleans()):
        table["patterns"] = draw(st.booleans())
    if draw(st.integers(0, 3)) == 3:
        table["header"] = draw(st.booleans())
    return table


@st.composite
def membership_csv(draw, n: int, names) -> str:
    """A membership table (individual, database), sometimes with a header row."""
    rows = draw(st.lists(st.tuples(st.sampled_from(["ann", "bob", "cyd", "dan"]), st.integers(0, n - 1)),
                         min_size=1, max_size=8))
    head = "individual,database\n" if draw(st.booleans()) else ""
    return head + "".join(f"{who},{names[db] if names else db}\n" for who, db in rows)


WEIGHT_SPLITS = [[1.0], [0.5, 0.5], [0.25, 0.75], [0.2, 0.3, 0.5]]


@st.composite
def hypothesis_tables(draw, n: int, names) -> dict:
    kind = draw(st.sampled_from(["point", "uniform", "explicit", "rates"]))
    if kind == "point":
        return {"kind": kind, "members": _subset(draw, n, None, 0, 3)}
    if kind == "uniform":
        table = {"kind": kind}
        if draw(st.booleans()):
            table["min_members"] = draw(st.integers(0, n))
        if draw(st.booleans()):
            table["max_members"] = draw(st.integers(table.get("min_members", 0), n))
        return table
    if kind == "explicit":
        weights = draw(st.sampled_from(WEIGHT_SPLITS))
        sets = draw(st.lists(st.frozensets(st.integers(0, n - 1), max_size=3), min_size=len(weights),
                             max_size=len(weights), unique=True))
        if len(sets) < len(weights):
            weights = [1.0]
            sets = sets[:1] or [frozenset()]
        return {"kind": kind, "support": [sorted(s) for s in sets], "weights": weights}
    return {"kind": kind, "rates": [draw(st.sampled_from([0.5, 0.1, 0.0, 1.0, 0.9])) for _ in range(n)]}


@st.composite
def valid_documents(draw, max_n: int = 5) -> tuple[dict, dict[str, str]]:
    """A tiny scenario document that is well-formed (the solver may still refuse it)."""
    n = draw(st.integers(1, max_n))
    named = draw(st.integers(0, 3)) == 3
    names = NAMES[:n] if named else None
    if named and draw(st.integers(0, 7)) == 7:  # odd names: "all", "", digits, unicode
        names = list(dict.fromkeys(draw(st.permutations(ODD_NAMES + NAMES))))[:n]
    doc: dict = {}
    if draw(st.booleans()):
        doc["title"] = draw(st.sampled_from(["t", "", "Hospitals: ünïcode\ttab", "x" * 300]))
    doc["databases"] = list(names) if names else n
    if draw(st.booleans()):
        doc["neighborhood"] = draw(st.sampled_from(["unbounded", "bounded"]))
    target = draw(st.integers(0, 5))
    if target <= 3:
        doc["delta"] = draw(st.sampled_from([1e-6, 0.0, 1e-3, 0.05, 1e-10, 0.5]))
    elif target == 4:
        doc["epsilon"] = draw(st.sampled_from([0.5, 0.0, 1.0, 3.0, 0.05]))
    invocations = []
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.integers(0, 3))
        refs = "all" if how == 0 else _ref(draw, n, names) if how == 1 else _subset(draw, n, names, 1, 3)
        table = {"databases": refs, "mechanism": draw(mechanisms())}
        if draw(st.booleans()):
            table["repeat"] = draw(st.integers(1, 2))
        invocations.append(table)
    doc["invocations"] = invocations
    files: dict[str, str] = {}
    if draw(st.booleans()):
        doc["constraints"] = draw(st.lists(constraints(n, names), min_size=1, max_size=2))
        if any(c["kind"] == "from_data" for c in doc["constraints"]):
            files["members.csv"] = draw(membership_csv(n, names))
    if draw(st.integers(0, 3)) == 3:
        doc["hypotheses"] = {"h0": draw(hypothesis_tables(n, names)), "h1": draw(hypothesis_tables(n, names))}
    return doc, files


# ---------------------------------------------------------------------------
# Mutations: extreme values, wrong types, missing and unknown keys


def _paths(value: object, prefix: tuple = ()) -> list[tuple]:
    out = []
    if isinstance(value, dict):
        for k, v in value.items():
            out.append(prefix + (k,))
            out.extend(_paths(v, prefix + (k,)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.append(prefix + (i,))
            out.extend(_paths(v, prefix + (i,)))
    return out


def _containers(value: object, prefix: tuple = ()) -> list[tuple]:
    out = [prefix] if isinstance(value, dict) else []
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(_containers(v, prefix + (k,)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(_containers(v, prefix + (i,)))
    return out


def _get(doc: object, path: tuple) -> object:
    for step in path:
        doc = doc[step]
    return doc


#: Whole-field replacements worth trying at specific keys (size extremes, target extremes).
SPECIAL = {
    "databases": [10**9, 0, -1, 2**63 - 1, 10**30, 1.0, [], ["a", "a"], [1, 2], "all"],
    "repeat": [10**12, 0, -1, 2**63 - 1, 10**30, 1.0, True],
    "m": [0, 10**9, -2, 2**63, 1.5],
    "kind": KIND_NAMES,
    "delta": [5e-324, 1e-308, 1.0, 0.999999999999, 1e308, NAN, INF, -0.0],
    "epsilon": [5e-324, 1e-308, 1e308, NAN, INF, 700.0, 1e4],
    "members": [[0, 0], [-1], [10**30]],
    "weights": [[NAN], [INF, -INF], [0.5, 0.5000000001], [1e308, -1e308 + 1], [5e-324, 1.0]],
    "rates": [[NAN], [5e-324], [1e-308, 1.0], [1.0000001]],
    "min_members": [10**30, -1, 2**63 - 1],
    "max_members": [0, 10**30, -1],
    "edges": [[[0, 0]], [[0, 1, 2]], [[0]], [[10**30, 0]]],
    "allowed": [[[]], [[0], [0]], [[10**9]]],
    "file": ["missing.csv", "bad.csv", "/dev/null", "", "."],
}


@st.composite
def mutate(draw, doc: dict, files: dict[str, str]) -> tuple[dict, dict[str, str]]:
    import copy

    doc = copy.deepcopy(doc)
    files = dict(files)
    for _ in range(draw(st.integers(0, 3))):
        action = draw(st.integers(0, 9))
        if action <= 5:  # replace a value
            paths = _paths(doc)
            if not paths:
                continue
            path = paths[draw(st.integers(0, len(paths) - 1))]
            parent = _get(doc, path[:-1])
            key = path[-1]
            pool = SPECIAL.get(key, []) if isinstance(key, str) else []
            use_special = pool and draw(st.booleans())
            # a copy: the pools' lists and tables are shared between examples (mutated in place later, one
            # could end up inside itself: a cycle, RecursionError in toml_value)
            parent[key] = copy.deepcopy(draw(st.sampled_from(pool)) if use_special else draw(anything_bad))
        elif action <= 7:  # delete a key or a list item
            paths = _paths(doc)
            if not paths:
                continue
            path = paths[draw(st.integers(0, len(paths) - 1))]
            del _get(doc, path[:-1])[path[-1]]
        elif action == 8:  # add an unknown key somewhere
            tables = _containers(doc)
            where = _get(doc, tables[draw(st.integers(0, len(tables) - 1))])
            where[draw(st.sampled_from(["bogus", "Delta", "kind2", "mechanisms", "sensitivity", "seed"]))] = 1
        else:  # data files: missing, malformed, unknown databases
            files["bad.csv"] = draw(st.sampled_from(["", "\n\n", "a,b,c\n", "ann,99\n", "ann\n", "x,y\n1,\n",
                                                     "\x00\x01", "ann,-1\n", "ann,1e308\n"]))
            if "members.csv" in files and draw(st.booleans()):
                files["members.csv"] = files["bad.csv"]
    return doc, files


@st.composite
def scenario_files(draw, max_n: int = 5) -> tuple[dict, dict[str, str], bool]:
    """(document, data files, sections?): a valid tiny document, then 0..3 mutations."""
    doc, files = draw(valid_documents(max_n))
    doc, files = draw(mutate(doc, files))
    return doc, files, draw(st.booleans())


@st.composite
def scenario_texts(draw, max_n: int = 5) -> tuple[str, dict[str, str]]:
    """The TOML text of :func:`scenario_files`, sometimes broken as TOML."""
    doc, files, sections = draw(scenario_files(max_n))
    text = toml_dumps(doc, sections)
    if draw(st.integers(0, 15)) == 15:
        text = draw(st.sampled_from([text[: len(text) // 2], text + "\ndatabases = 2\n", text + "=\n",
                                     "\ufeff" + text, text.replace("=", ":"), ""]))
    return text, files


def write_scenario(folder, text: str, files: dict[str, str], binary: bool = False):
    """Write the scenario file and its data files into ``folder``; return the scenario path."""
    import pathlib

    folder = pathlib.Path(folder)
    for name, content in files.items():
        (folder / name).write_text(content, encoding="utf-8")
    path = folder / "scenario.toml"
    if binary:
        path.write_bytes(b"\xff\xfe" + text.encode("utf-16-le"))
    else:
        path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------------------
# The independent reference: concrete mechanisms that satisfy each guarantee

#: Largest product of output alphabet sizes enumerated per pair.
OUTCOME_BUDGET = 4096


@dataclass(frozen=True)
class Instance:
    """A mechanism's output laws on a finite alphabet, as log-probabilities (underflow-proof):
    ``without`` / ``with_`` the target's record."""

    without: np.ndarray
    with_: np.ndarray

    @property
    def size(self) -> int:
        return len(self.without)


def _log(x) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(np.asarray(x, dtype=float))


def _canonical(eps: float, delta: float) -> Instance:
    """002 eqs. (9)-(10): the worst (eps, delta)-DP pair."""
    la, lb = math.log1p(-delta) + special.log_expit(eps), math.log1p(-delta) + special.log_expit(-eps)
    ld = _log(delta)
    return Instance(np.array([ld, la, lb, -np.inf]), np.array([-np.inf, lb, la, ld]))


class _Laplace:
    """Laplace noise with log tails that do not underflow (scipy's logcdf is log(cdf))."""

    def __init__(self, scale: float):
        self.scale = scale

    def logcdf(self, x):
        z = np.asarray(x, dtype=float) / self.scale
        with np.errstate(over="ignore"):
            return np.where(z < 0, math.log(0.5) + z, np.log1p(-0.5 * np.exp(-np.abs(z))))

    def logsf(self, x):
        return self.logcdf(-np.asarray(x, dtype=float))


def _log_interval(dist, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """log P(low < X <= high), from the lower tail left of the median and the upper tail right of it."""
    with np.errstate(divide="ignore", invalid="ignore"):
        left = dist.logcdf(high) + np.log1p(-np.exp(dist.logcdf(low) - dist.logcdf(high)))
        right = dist.logsf(low) + np.log1p(-np.exp(dist.logsf(high) - dist.logsf(low)))
    out = np.where(high <= 0, left, right)
    return np.where(np.isnan(out) | (high <= low), -np.inf, out)


def _binned(dist, shift: float, edges: np.ndarray) -> Instance:
    """Noise law ``dist`` vs the same shifted by ``shift``, binned at ``edges`` (post-processing)."""
    cuts = np.concatenate([[-np.inf], np.unique(edges), [np.inf]])
    return Instance(_log_interval(dist, cuts[:-1], cuts[1:]), _log_interval(dist, cuts[:-1] - shift, cuts[1:] - shift))


#: The constant output: a post-processing of every mechanism (contributes nothing to a lower bound), used
#: where a noise pair's cell masses are not representable in floating point.
_UNDERFLOW = Instance(np.array([0.0]), np.array([0.0]))


def instance(guarantee, bins: int = 8) -> Instance | None:
    """A concrete mechanism satisfying ``guarantee`` (by class name: independent of gce's code)."""
    kind = type(guarantee).__name__
    if kind == "PureDP" or kind == "RandomizedResponse":
        return _canonical(guarantee.epsilon, 0.0)
    if kind == "ApproxDP":
        return _canonical(guarantee.epsilon, guarantee.delta)
    if kind in ("LaplaceMechanism", "GaussianMechanism", "GaussianDP", "ZCDP"):
        if kind == "LaplaceMechanism":
            dist, shift = _Laplace(guarantee.scale), guarantee.sensitivity
            edges = np.linspace(0.0, shift, max(bins - 1, 2)) if shift > 0 else np.array([0.0])
        else:
            if kind == "GaussianMechanism":
                sigma, shift = guarantee.sigma, guarantee.sensitivity
            elif kind == "GaussianDP":
                sigma, shift = 1.0, guarantee.mu
            else:  # rho-zCDP: Gaussian noise with sensitivity / sigma = sqrt(2 rho) is exactly rho-zCDP
                sigma, shift = 1.0, math.sqrt(2.0) * math.sqrt(guarantee.rho)
            dist = stats.norm(scale=sigma)
            edges = shift / 2.0 + sigma * np.linspace(-3.0, 3.0, max(bins - 1, 1))
        if not math.isfinite(shift) or shift > 1e300 or not np.all(np.isfinite(edges)):
            return _UNDERFLOW
        binned = _binned(dist, shift, edges)
        if not (np.all(np.isfinite(binned.without)) and np.all(np.isfinite(binned.with_))):
            # Every cell of a full-support noise has positive mass under both laws; one that underflowed
            # to 0 would make the instance more distinguishable than any mechanism with the guarantee
            # (a zCDP or Gaussian pair is never distinguishable outright), a false alarm at huge epsilon.
            return _UNDERFLOW
        return binned
    if kind == "Subsampled":
        inner = instance(guarantee.mechanism, bins)
        if inner is None:
            return None
        q = guarantee.rate
        with np.errstate(divide="ignore"):
            mixed = np.logaddexp(math.log(q) + inner.with_, np.log1p(-q) + inner.without)
        return Instance(inner.without, mixed)
    return None


def _hockey(lp: np.ndarray, lq: np.ndarray, eps: float) -> float:
    """sum_x (p(x) - e^eps q(x))_+ from log-probabilities."""
    live = lp > -np.inf
    lp, lq = lp[live], lq[live]
    with np.errstate(over="ignore", invalid="ignore"):
        gap = -np.expm1(np.minimum(eps + lq - lp, 0.0))  # 1 - e^(eps) q / p, clipped at 0
    return float(np.sum(np.exp(lp) * gap))


def _law(members: frozenset, runs: list[tuple[int, Instance]]) -> np.ndarray:
    joint = np.zeros(1)
    for database, inst in runs:
        joint = np.add.outer(joint, inst.with_ if database in members else inst.without).ravel()
    return joint


def _mixture(prior: list[tuple[frozenset, float]], runs) -> np.ndarray:
    return special.logsumexp([math.log(w) + _law(s, runs) for s, w in prior], axis=0)


# Membership semantics of the constraint records, written from their docstrings (independent of gce).

def allowed(members: frozenset, constraints) -> bool:
    for c in constraints:
        kind = type(c).__name__
        if kind == "AtMost":
            if len(members if c.among is None else members & set(c.among)) > c.m:
                return False
        elif kind == "Exclusive":
            if len(members & set(c.group)) > 1:
                return False
        elif kind == "Together":
            if len(members & set(c.group)) not in (0, len(set(c.group))):
                return False
        elif kind == "Conflicts":
            if any(u in members and v in members for u, v in c.edges):
                return False
        elif kind == "Patterns":
            if members and members not in {frozenset(a) for a in c.allowed}:
                return False
        else:
            raise AssertionError(f"reference does not know constraint {c!r}")
    return True


def allowed_sets(n: int, constraints) -> list[frozenset]:
    return [frozenset(s) for size in range(n + 1) for s in itertools.combinations(range(n), size)
            if allowed(frozenset(s), constraints)]


def prior(h, n: int, sets: list[frozenset]) -> list[tuple[frozenset, float]]:
    """The distribution a hypothesis record describes over the allowed sets (module docstring of gce.hypotheses)."""
    kind = type(h).__name__
    if kind == "Point":
        return [(frozenset(h.members), 1.0)]
    if kind == "Explicit":
        return list(zip(map(frozenset, h.support), h.weights))
    if kind == "Uniform":
        high = n if h.max_members is None else h.max_members
        chosen = [s for s in sets if h.min_members <= len(s) <= high]
        return [(s, 1.0 / len(chosen)) for s in chosen]
    if kind == "Rates":
        w = [math.prod(q if i in s else 1.0 - q for i, q in enumerate(h.rates)) for s in sets]
        total = math.fsum(w)
        return [(s, x / total) for s, x in zip(sets, w) if x > 0] if total > 0 else []
    raise AssertionError(f"reference does not know hypothesis {h!r}")


@dataclass
class Reference:
    """Lower bounds on the true delta(eps) of a (tiny) scenario; ``complete`` when nothing was cut."""

    pairs: list[tuple[list[tuple[frozenset, float]], list[tuple[frozenset, float]], list[tuple[int, Instance]]]]
    complete: bool

    def delta(self, eps: float) -> float:
        best = 0.0
        for h0, h1, runs in self.pairs:
            p0, p1 = _mixture(h0, runs), _mixture(h1, runs)
            best = max(best, _hockey(p0, p1, eps), _hockey(p1, p0, eps))
        return best


CANONICAL = ("PureDP", "ApproxDP", "RandomizedResponse")


def reference_for(scenario, max_pairs: int = 40, max_n: int = 6) -> Reference | None:
    """The reference of a loaded scenario, or None when it is too large to enumerate."""
    n = scenario.databases.n
    if n > max_n:
        return None
    constraints = tuple(scenario.constraints.constraints) if scenario.constraints is not None else ()
    sets = allowed_sets(n, constraints)
    runs_all: list[tuple[int, Instance]] = []
    complete = all(type(inv.guarantee).__name__ in CANONICAL for inv in scenario.invocations)
    for inv in scenario.invocations:
        inst = instance(inv.guarantee)
        if inst is None:
            return None
        runs_all.extend([(inv.database, inst)] * min(inv.repeat, 64))
        complete = complete and inv.repeat <= 64

    def fit(runs):
        """Keep a prefix of the runs whose joint alphabet fits the budget (dropping runs is post-processing)."""
        nonlocal complete
        kept, size = [], 1
        for run in runs:
            if size * run[1].size > OUTCOME_BUDGET:
                complete = False
                continue
            kept.append(run)
            size *= run[1].size
        return kept

    pairs = []
    if scenario.hypotheses is not None:
        h0, h1 = (prior(h, n, sets) for h in scenario.hypotheses)
        if not h0 or not h1:
            return None
        touched = set().union(*(s for s, _ in h0 + h1))
        pairs.append((h0, h1, fit([r for r in runs_all if r[0] in touched])))
    else:
        if scenario.neighborhood == "unbounded":
            candidates = [(frozenset(), s) for s in sets if s]
        else:
            candidates = list(itertools.combinations(sets, 2))  # both directions are computed: unordered pairs
        candidates.sort(key=lambda pr: -len(pr[0] ^ pr[1]))
        if len(candidates) > max_pairs:
            complete = False
            candidates = candidates[:max_pairs]
        for b0, b1 in candidates:
            diff = b0 ^ b1
            pairs.append(([(b0, 1.0)], [(b1, 1.0)], fit([r for r in runs_all if r[0] in diff])))
    return Reference(pairs, complete)


def composition_lower_bound(counts: list[tuple[object, int]], eps: float) -> float | None:
    """A lower bound on delta(eps) of composing ``count`` copies of each guarantee (both directions)."""
    with warnings.catch_warnings():  # the reference's own round-off is not under test
        warnings.simplefilter("ignore")
        return _composition_lower_bound(counts, eps)


def _composition_lower_bound(counts, eps):
    runs = []
    for guarantee, count in counts:
        inst = instance(guarantee)
        if inst is None:
            return None
        runs.extend([(0, inst)] * count)
    kept, size = [], 1
    for run in runs:
        if size * run[1].size <= OUTCOME_BUDGET:
            kept.append(run)
            size *= run[1].size
    return Reference([([(frozenset(), 1.0)], [(frozenset({0}), 1.0)], kept)], False).delta(eps)

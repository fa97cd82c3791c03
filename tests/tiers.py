"""The two test tiers (see tests/README.md): a fast default run and the ``slow`` marker.

A long check is never dropped from the default run: it keeps a fast twin there, on the same
code path with asserted values, and runs in full under ``pytest -m slow`` (which ``.ci/run`` runs).

* :func:`parametrize`: ``pytest.mark.parametrize`` whose representative cases run by default and
  whose other cases are marked ``slow``; every case keeps its test id and runs in exactly one tier.
* :func:`given`: a hypothesis property as two tests, a default one with few examples and a
  ``slow`` one with many::

      @tiers.given(5, 60, st.integers())
      def _positive(x): ...
      test_positive, test_positive_slow = _positive
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import hypothesis
import pytest

SLOW = pytest.mark.slow
ParameterSet = type(pytest.param())


def parametrize(argnames: str, cases: Iterable, default: int | Callable[..., bool] | Iterable[int], **kwargs):
    """``pytest.mark.parametrize(argnames, cases)``, the cases not in ``default`` marked ``slow``.

    ``default`` names the cases of the default run: the first ``default`` ones (an int), the
    cases it holds true for (a predicate called with the case's arguments), or the cases at
    these indices.
    """
    names = [name.strip() for name in argnames.split(",") if name.strip()] if isinstance(argnames, str) \
        else list(argnames)
    cases = list(cases)

    def values(case) -> tuple:
        if isinstance(case, ParameterSet):
            return tuple(case.values)
        return tuple(case) if len(names) > 1 else (case,)

    if isinstance(default, int):
        keep = set(range(default))
    elif callable(default):
        keep = {i for i, case in enumerate(cases) if default(*values(case))}
    else:
        keep = set(default)
    if not keep or min(keep) < 0 or max(keep) >= len(cases) or len(keep) == len(cases):
        raise ValueError(f"default cases {sorted(keep)}: not a proper part of {len(cases)} cases")
    out = []
    for i, case in enumerate(cases):
        if i in keep:
            out.append(case)
        else:
            own = isinstance(case, ParameterSet)
            out.append(pytest.param(*values(case), id=case.id if own else None,
                                    marks=(*case.marks, SLOW) if own else SLOW))
    return pytest.mark.parametrize(argnames, out, **kwargs)


def given(default_examples: int, slow_examples: int, *strategies, settings: hypothesis.settings | None = None,
          **kw_strategies):
    """A default test drawing ``default_examples`` and a ``slow`` twin drawing ``slow_examples``.

    ``settings`` are the property's other settings (deadline, health checks), shared by both.
    Returns the pair ``(fast, slow)``, to be bound to two ``test_*`` names.
    """
    base = settings if settings is not None else hypothesis.settings(deadline=None)

    def wrap(body):
        fast = hypothesis.settings(base, max_examples=default_examples)(
            hypothesis.given(*strategies, **kw_strategies)(body))
        slow = SLOW(hypothesis.settings(base, max_examples=slow_examples)(
            hypothesis.given(*strategies, **kw_strategies)(body)))
        return fast, slow

    return wrap

"""Renamed public names: the old name keeps working and warns, naming its replacement.

No public name is removed without this step: a renamed function, attribute or keyword stays available under
its old name, which emits a :class:`DeprecationWarning` that says what to write instead (the habit of NumPy
and SciPy, whose deprecations name the replacement and last at least two releases).

Examples
--------
>>> import warnings
>>> @renamed_keywords(source="label")
... def read(table, *, label=None):
...     return table, label
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     read("members.csv", source="sales")
('members.csv', 'sales')
>>> str(caught[0].message)
'read(source=...) is deprecated; use read(label=...)'
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from .errors import InvalidParameterError

__all__ = ["renamed_keywords", "warn_renamed"]

F = TypeVar("F", bound=Callable[..., Any])


def warn_renamed(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` is deprecated and ``new`` replaces it (a :class:`DeprecationWarning`)."""
    warnings.warn(f"{old} is deprecated; use {new}", DeprecationWarning, stacklevel=stacklevel)


def renamed_keywords(**renamed: str) -> Callable[[F], F]:
    """A decorator: each keyword ``old=new`` still accepted under its old name, with a warning naming the new.

    Giving both names is an :class:`~gce.errors.InvalidParameterError` naming the new one. The wrapped
    function keeps its signature (``inspect.signature`` and the documentation show the new names only).
    """

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for old, new in renamed.items():
                if old in kwargs:
                    if new in kwargs:
                        raise InvalidParameterError(new, f"given twice: as {new}= and as its deprecated name {old}=")
                    warn_renamed(f"{function.__name__}({old}=...)", f"{function.__name__}({new}=...)")
                    kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate

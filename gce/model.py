"""Databases and invocations: what the curator runs, where (001, Sec. III, Alg. 2).

In the generalized composition experiment a curator runs mechanisms M_1..M_k,
each on one of the databases 0..n-1; the target individual's record is in the
databases of a membership set b (001 writes it as a b-vector). These records
describe the runs; they have no behaviour beyond validation and simple
aggregation.

What must never change: an invocation's ``guarantee`` holds for add/remove of the
target's record *in its own database*; ``repeat`` counts identical invocations on
that database (a database may be queried many times).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .errors import InvalidParameterError
from .guarantees import _GUARANTEE_TYPES, Guarantee
from .theorems import Multiset

__all__ = ["Databases", "Invocation", "invocation_multiset", "per_database_counts"]


@dataclass(frozen=True)
class Databases:
    """The databases 0..n-1, optionally named.

    Parameters
    ----------
    n : int
        How many databases.
    names : tuple of str, optional
        One distinct name per database, for reports.
    """

    n: int
    names: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 1:
            raise InvalidParameterError("databases", f"must be an integer >= 1, got {self.n!r}")
        if self.names is not None:
            names = tuple(self.names)
            if len(names) != self.n or len(set(names)) != self.n:
                raise InvalidParameterError("databases.names", f"need {self.n} distinct names, got {names!r}")
            object.__setattr__(self, "names", names)

    def label(self, index: int) -> str:
        """The name of a database, or its index."""
        return self.names[index] if self.names else str(index)

    def index(self, ref: int | str, field: str) -> int:
        """Resolve a database reference (index or name); ``field`` names it in errors."""
        if isinstance(ref, str) and self.names and ref in self.names:
            return self.names.index(ref)
        if isinstance(ref, bool) or not isinstance(ref, int) or not 0 <= ref < self.n:
            raise InvalidParameterError(field, f"unknown database {ref!r} (databases are 0..{self.n - 1})")
        return ref


@dataclass(frozen=True)
class Invocation:
    """``repeat`` runs of a mechanism with ``guarantee`` on database ``database``."""

    database: int
    guarantee: Guarantee
    repeat: int = 1

    def __post_init__(self) -> None:
        if isinstance(self.database, bool) or not isinstance(self.database, int) or self.database < 0:
            raise InvalidParameterError("database", f"must be a database index >= 0, got {self.database!r}")
        if not isinstance(self.guarantee, _GUARANTEE_TYPES):
            raise InvalidParameterError("mechanism", f"must be a guarantee, got {self.guarantee!r}")
        if isinstance(self.repeat, bool) or not isinstance(self.repeat, int) or self.repeat < 1:
            raise InvalidParameterError("repeat", f"must be an integer >= 1, got {self.repeat!r}")


def invocation_multiset(invocations: Iterable[Invocation], members: Iterable[int] | None = None) -> Multiset:
    """The guarantees of the invocations on ``members`` (all when None), as a multiset."""
    chosen = None if members is None else set(members)
    counts: Counter[Guarantee] = Counter()
    for inv in invocations:
        if chosen is None or inv.database in chosen:
            counts[inv.guarantee] += inv.repeat
    return tuple(counts.items())


def per_database_counts(invocations: Sequence[Invocation], n: int) -> list[Counter]:
    """For each database, its multiset of guarantees (guarantee -> count)."""
    out: list[Counter] = [Counter() for _ in range(n)]
    for inv in invocations:
        out[inv.database][inv.guarantee] += inv.repeat
    return out

"""Linear inequalities over binary variables: what every constraint compiles to.

A :class:`LinearSystem` is the one form in which the solvers consume membership
constraints (001, Sec. V-A: the allowed b-vectors B~ are a subset of
{0, 1}^n). What must never change about its meaning:

* The first ``n`` columns of ``A`` are the membership variables: ``x[i] = 1``
  means database ``i`` holds the target individual's record (the b-vector of
  001, Sec. V-A).
* The remaining ``aux`` columns are auxiliary variables introduced by the
  compilation (for example one selector per allowed pattern).
* Every variable, membership or auxiliary, is binary.
* A membership set ``x`` is allowed if and only if some binary assignment ``s``
  of the auxiliary variables gives ``A @ [x, s] <= b`` componentwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InvalidParameterError
from ..validation import is_integer, shown

if TYPE_CHECKING:  # pragma: no cover - scipy.sparse is imported where a system is built (start-up)
    import scipy.sparse as sp

__all__ = ["LinearSystem", "FEASIBILITY_TOLERANCE"]

#: Slack allowed when checking ``A @ z <= b`` in floating point. Coefficients
#: and right-hand sides are small integers, so any violation is at least 1.
FEASIBILITY_TOLERANCE = 1e-9


@dataclass(frozen=True, eq=False)
class LinearSystem:
    """The inequalities ``A @ [x, s] <= b`` over binary ``x`` (n) and ``s`` (aux).

    Parameters
    ----------
    n : int
        Number of membership variables: the first ``n`` columns of ``A``.
    aux : int
        Number of auxiliary binary variables: the last ``aux`` columns.
    A : scipy.sparse.csr_array
        Coefficients, shape ``(rows, n + aux)``; stored sparse because a
        conflict graph gives one row per edge. Any array-like is converted.
    b : numpy.ndarray
        Right-hand sides, shape ``(rows,)``; read-only.

    Raises
    ------
    InvalidParameterError
        If the shapes disagree or ``n``/``aux`` are negative.

    Examples
    --------
    >>> import numpy as np
    >>> s = LinearSystem(n=2, aux=0, A=np.array([[1.0, 1.0]]), b=np.array([1.0]))
    >>> s.holds([1, 0]), s.holds([1, 1])
    (True, False)
    """

    n: int
    aux: int
    A: sp.csr_array
    b: np.ndarray

    def __post_init__(self) -> None:
        for name in ("n", "aux"):
            value = getattr(self, name)
            if not is_integer(value) or value < 0:
                raise InvalidParameterError(name, f"must be an integer >= 0, got {shown(value)}")
            object.__setattr__(self, name, int(value))
        import scipy.sparse as sp

        A = sp.csr_array(self.A, dtype=np.float64)
        b = np.array(self.b, dtype=np.float64).reshape(-1)
        if A.shape[1] != self.n + self.aux:
            raise InvalidParameterError(
                "A", f"must have n + aux = {self.n + self.aux} columns, got shape {A.shape}"
            )
        if A.shape[0] != b.shape[0]:
            raise InvalidParameterError("b", f"must have {A.shape[0]} entries (rows of A), got {b.shape[0]}")
        b.setflags(write=False)
        object.__setattr__(self, "A", A)
        object.__setattr__(self, "b", b)

    @classmethod
    def from_rows(
        cls, n: int, aux: int, rows: Iterable[tuple[Sequence[int], Sequence[float], float]]
    ) -> "LinearSystem":
        """Build from sparse rows ``(columns, coefficients, right-hand side)``.

        Parameters
        ----------
        n, aux : int
            As in the class.
        rows : iterable of (columns, coefficients, rhs)
            One inequality ``sum_j coefficients[j] * z[columns[j]] <= rhs`` each.

        Returns
        -------
        LinearSystem
        """
        import scipy.sparse as sp

        data: list[float] = []
        indices: list[int] = []
        indptr = [0]
        rhs: list[float] = []
        for columns, coefficients, bound in rows:
            indices.extend(columns)
            data.extend(coefficients)
            indptr.append(len(indices))
            rhs.append(bound)
        A = sp.csr_array(
            (np.asarray(data, dtype=np.float64), np.asarray(indices, dtype=np.int64), np.asarray(indptr)),
            shape=(len(rhs), n + aux),
        )
        return cls(n=n, aux=aux, A=A, b=np.asarray(rhs, dtype=np.float64))

    @classmethod
    def stack(cls, n: int, systems: Sequence["LinearSystem"]) -> "LinearSystem":
        """All inequalities of ``systems`` at once (their intersection).

        Each system keeps the shared membership columns ``0..n-1``; its
        auxiliary columns get a block of their own, in the order given.

        Parameters
        ----------
        n : int
            Number of membership variables; every system must have the same.
        systems : sequence of LinearSystem

        Returns
        -------
        LinearSystem
            With ``aux`` the sum of the systems' ``aux``.
        """
        import scipy.sparse as sp

        total_aux = sum(s.aux for s in systems)
        blocks = []
        offset = n
        for position, system in enumerate(systems):
            if system.n != n:
                raise InvalidParameterError(f"systems[{position}].n", f"must be {n}, got {system.n}")
            coo = system.A.tocoo()
            columns = coo.col.copy()
            columns[columns >= n] += offset - n
            blocks.append(sp.coo_array((coo.data, (coo.row, columns)), shape=(coo.shape[0], n + total_aux)))
            offset += system.aux
        if not blocks:
            return cls(n=n, aux=0, A=sp.csr_array((0, n)), b=np.zeros(0))
        A = sp.vstack(blocks, format="csr")
        return cls(n=n, aux=total_aux, A=A, b=np.concatenate([s.b for s in systems]))

    @property
    def rows(self) -> int:
        """Number of inequalities."""
        return int(self.A.shape[0])

    def holds(self, x: Sequence[float], aux: Sequence[float] | None = None) -> bool:
        """Whether ``A @ [x, aux] <= b`` for the given values of the variables.

        Parameters
        ----------
        x : sequence of 0/1, length n
            Membership variables.
        aux : sequence of 0/1, length ``self.aux``, optional
            Auxiliary variables; required when ``self.aux > 0``.

        Returns
        -------
        bool
        """
        x = np.asarray(x, dtype=np.float64).reshape(-1)
        s = np.zeros(0) if aux is None else np.asarray(aux, dtype=np.float64).reshape(-1)
        if x.shape[0] != self.n:
            raise InvalidParameterError("x", f"must have {self.n} entries, got {x.shape[0]}")
        if s.shape[0] != self.aux:
            raise InvalidParameterError("aux", f"must have {self.aux} entries, got {s.shape[0]}")
        return bool(np.all(self.A @ np.concatenate([x, s]) <= self.b + FEASIBILITY_TOLERANCE))

    def dense(self) -> np.ndarray:
        """``A`` as a dense array (for small systems and tests)."""
        return self.A.toarray()

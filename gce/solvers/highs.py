"""HiGHS called directly: a 0/1 program within a time limit, stopped promptly by Ctrl-C.

The worst-case MILPs (:mod:`gce.solvers.milp`) and their linear relaxations go
to HiGHS through ``highspy`` instead of cvxpy for two reasons:

* **Interruptible.** cvxpy calls ``Highs.run()``, which blocks the main thread
  until HiGHS returns: a KeyboardInterrupt (SIGINT) waits for the time limit.
  Here HiGHS runs in a worker thread (``Highs.startSolve``) while the main
  thread waits in short slices; on KeyboardInterrupt it cancels the solve
  (``Highs.cancelSolve``, checked by HiGHS' simplex, IPM and MIP interrupt
  callbacks), waits at most :data:`CANCEL_WAIT` seconds for HiGHS to stop, and
  re-raises.
* **Cheap to build.** The model is passed as one sparse row-wise matrix
  (``HighsLp``), without cvxpy's canonicalization; time limits then bound the
  whole call closely.

What must never change: :attr:`Answer.bound` is a valid upper bound on the
program's optimum (HiGHS' MIP dual bound, or the optimum of a relaxation
solved to optimality), ``inf`` when HiGHS gives none.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from ..errors import GCEError

__all__ = ["Program", "Answer", "solve_program", "CANCEL_WAIT"]

#: Seconds to wait for HiGHS to stop after a KeyboardInterrupt before re-raising anyway.
CANCEL_WAIT = 2.0
#: Seconds between two looks at the worker thread (the latency of Ctrl-C).
_POLL = 0.05


@dataclass(frozen=True, eq=False)
class Program:
    """maximize ``cost @ v`` subject to ``matrix @ v <= upper`` and ``0 <= v <= 1``.

    ``binary`` marks the integer (0/1) columns; the others are continuous in [0, 1].
    """

    cost: NDArray[np.float64]
    matrix: sp.csr_array
    upper: NDArray[np.float64]
    binary: NDArray[np.bool_]


@dataclass(frozen=True)
class Answer:
    """What HiGHS returned: a solution (None without one) and a valid upper bound (``inf`` without one)."""

    values: NDArray[np.float64] | None
    bound: float
    status: str


def _model(program: Program, relax: bool):
    import highspy

    matrix = sp.csr_array(program.matrix, dtype=np.float64)
    columns = program.cost.size
    lp = highspy.HighsLp()
    lp.num_col_ = columns
    lp.num_row_ = int(matrix.shape[0])
    lp.col_cost_ = np.asarray(program.cost, dtype=np.float64)
    lp.col_lower_ = np.zeros(columns)
    lp.col_upper_ = np.ones(columns)
    lp.row_lower_ = np.full(matrix.shape[0], -highspy.kHighsInf)
    lp.row_upper_ = np.asarray(program.upper, dtype=np.float64)
    lp.sense_ = highspy.ObjSense.kMaximize
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.num_col_ = columns
    lp.a_matrix_.num_row_ = int(matrix.shape[0])
    lp.a_matrix_.start_ = matrix.indptr.astype(np.int32)
    lp.a_matrix_.index_ = matrix.indices.astype(np.int32)
    lp.a_matrix_.value_ = matrix.data
    if not relax and program.binary.any():
        lp.integrality_ = [highspy.HighsVarType.kInteger if b else highspy.HighsVarType.kContinuous
                           for b in program.binary]
    return lp


def _run(h) -> None:
    """Run HiGHS in its worker thread; on KeyboardInterrupt cancel it, wait briefly, re-raise."""
    if not hasattr(h, "startSolve"):  # pragma: no cover - highspy before 1.8: not interruptible
        h.run()
        return
    h.HandleUserInterrupt = True
    h.startSolve()
    try:
        while not h.wait(_POLL)[0]:
            pass
    except KeyboardInterrupt:
        h.cancelSolve()
        stop = time.monotonic() + CANCEL_WAIT
        while time.monotonic() < stop and not h.wait(_POLL)[0]:
            pass
        raise


def solve_program(program: Program, time_limit: float, *, relax: bool = False) -> Answer:
    """Solve a 0/1 program (or its linear relaxation, ``relax=True``) within ``time_limit`` seconds.

    Parameters
    ----------
    program : Program
    time_limit : float
        Seconds HiGHS may spend (its ``time_limit`` option); at least 1 ms.
    relax : bool
        Solve the linear relaxation (interior point with crossover, which beats
        simplex on these degenerate relaxations).

    Returns
    -------
    Answer
        ``bound``: HiGHS' MIP dual bound, or the relaxation's optimum when
        solved to optimality; ``inf`` otherwise.

    Raises
    ------
    KeyboardInterrupt
        Passed on after HiGHS was asked to stop.
    GCEError
        If HiGHS rejects the model (a bug).
    """
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("time_limit", max(float(time_limit), 1e-3))
    if relax:
        h.setOptionValue("solver", "ipm")
    else:
        h.setOptionValue("mip_rel_gap", 0.0)
    if h.passModel(_model(program, relax)) == highspy.HighsStatus.kError:  # pragma: no cover - defensive
        raise GCEError("HiGHS rejected the worst-case model")
    _run(h)
    status = h.getModelStatus()
    info = h.getInfo()
    solution = h.getSolution()
    has_solution = bool(solution.value_valid) and int(info.primal_solution_status) >= 2  # feasible
    values = np.asarray(solution.col_value, dtype=np.float64) if has_solution else None
    if relax:
        bound = float(info.objective_function_value) if status == highspy.HighsModelStatus.kOptimal else math.inf
    else:
        dual = float(info.mip_dual_bound)
        bound = dual if math.isfinite(dual) else math.inf
    return Answer(values, bound, h.modelStatusToString(status))

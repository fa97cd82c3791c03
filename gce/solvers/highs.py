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
* **Deterministic.** HiGHS runs on one thread with random seed 0
  (:data:`DETERMINISTIC_OPTIONS`), so the same program gives the same answer on
  any machine and load; its work is bounded by counts (``mip_max_nodes``), and
  its ``time_limit`` is only the cap of the solve (docs/design.md, "Same question,
  same answer"): :attr:`Answer.stopped` says when that cap stopped it.

HiGHS prints a banner ("Running HiGHS ...", "Includes third-party software
components ...") from inside ``highspy.Highs()`` (the constructor installs its
callbacks while ``output_flag`` is still on, the first time in a process), on
the C-level standard output, before any option can be set. gce's standard
output is its report (``--json``: one JSON document), so every construction
(:func:`new_highs`) runs with file descriptors 1 and 2 moved to temporary
files under a lock; afterwards the banner's lines are dropped and anything
else written meanwhile (another thread's output) is written back to where it
was going.

What must never change: :attr:`Answer.bound` is a valid upper bound on the
program's optimum (HiGHS' MIP dual bound, or the optimum of a relaxation
solved to optimality), ``inf`` when HiGHS gives none; and nothing HiGHS prints
reaches the process's standard output or error.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import math
import os
import re
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ..errors import GCEError

if TYPE_CHECKING:  # pragma: no cover - scipy.sparse is imported where used (start-up)
    import scipy.sparse as sp

__all__ = ["Program", "Answer", "solve_program", "new_highs", "CANCEL_WAIT", "DETERMINISTIC_OPTIONS"]

#: Seconds to wait for HiGHS to stop after a KeyboardInterrupt before re-raising anyway.
CANCEL_WAIT = 2.0
#: Seconds between two looks at the worker thread (the latency of Ctrl-C).
_POLL = 0.05
#: How the lines of HiGHS' banner begin (:func:`new_highs` drops them): the version and copyright line, the
#: third-party notice and, when HiGHS found one, the BLAS in use.
BANNER_LINE = re.compile(rb"Running HiGHS \d+\.\d+\.\d+|Includes third-party software components, see |Using BLAS: ")
#: HiGHS options that would otherwise vary between machines or runs: one thread (the parallel simplex and
#: the MIP's concurrent tasks split work by timing), no parallel LP, a fixed seed for its random choices.
DETERMINISTIC_OPTIONS: dict[str, object] = {"threads": 1, "parallel": "off", "random_seed": 0}
#: One construction at a time moves file descriptors 1 and 2 (they belong to the whole process).
_STREAMS_LOCK = threading.Lock()


@functools.cache
def _c_fflush():
    """The C library's ``fflush``, or None where the C library cannot be reached by name (Windows)."""
    try:
        return ctypes.CDLL(None).fflush
    except (OSError, AttributeError, TypeError):  # pragma: no cover - not on POSIX
        return None


def _c_flush() -> None:
    """Flush the C library's output buffers (``fflush(NULL)``): HiGHS writes through them."""
    fflush = _c_fflush()
    if fflush is not None:
        fflush(None)


def _python_flush() -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(AttributeError, OSError, ValueError):  # None, closed or not a file
            stream.flush()


def _without_banner(text: bytes) -> bytes:
    """``text`` without the lines of HiGHS' banner."""
    return b"".join(line for line in text.splitlines(keepends=True) if not BANNER_LINE.match(line))


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


@contextlib.contextmanager
def _banner_dropped() -> Iterator[None]:
    """File descriptors 1 and 2 on temporary files for the block; then HiGHS' banner lines are dropped
    and the rest of what was written is passed on to the real descriptors (nothing else is lost).

    Python's and C's buffers are flushed on both sides of the block, so no output
    written before it is captured late or after it escapes. Another thread's
    writes during the block come out when it ends (nothing is lost; lines of
    different threads may interleave differently). A descriptor that is closed
    is left alone.
    """
    with _STREAMS_LOCK:
        _python_flush()
        _c_flush()
        moved: list[tuple[int, int, IO[bytes]]] = []
        try:
            for fd in (1, 2):
                try:
                    saved = os.dup(fd)
                except OSError:  # closed: nothing can reach it
                    continue
                try:
                    capture: IO[bytes] = tempfile.TemporaryFile()
                except OSError:  # no temporary folder: the block's output is dropped rather than the solve
                    capture = open(os.devnull, "w+b")
                moved.append((fd, saved, capture))
                os.dup2(capture.fileno(), fd)
            yield
        finally:
            _python_flush()
            _c_flush()
            for fd, saved, capture in reversed(moved):
                os.dup2(saved, fd)
                os.close(saved)
                capture.seek(0)
                rest = _without_banner(capture.read())
                capture.close()
                with contextlib.suppress(OSError):  # the reader went away: as if written
                    _write_all(fd, rest)


def new_highs():
    """A ``highspy.Highs`` with its output off, its banner printed nowhere.

    Every ``Highs`` of gce is made here (:func:`_banner_dropped`: file
    descriptors 1 and 2 moved for the construction, under a lock, so it is
    safe from any thread).

    Returns
    -------
    highspy.Highs
        With ``output_flag`` false.
    """
    import highspy

    with _banner_dropped():
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
    return h


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
    #: Branch-and-bound nodes HiGHS explored (0 for a relaxation).
    nodes: int = 0
    #: Whether the time cap stopped HiGHS (the answer then depends on the machine's speed).
    stopped: bool = False


def _model(program: Program, relax: bool):
    import highspy
    import scipy.sparse as sp

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


def solve_program(program: Program, time_limit: float, *, relax: bool = False,
                  max_nodes: int | None = None) -> Answer:
    """Solve a 0/1 program (or its linear relaxation, ``relax=True``) within ``time_limit`` seconds.

    Parameters
    ----------
    program : Program
    time_limit : float
        The cap: seconds HiGHS may spend (its ``time_limit`` option); at least 1 ms.
    relax : bool
        Solve the linear relaxation (interior point with crossover, which beats
        simplex on these degenerate relaxations).
    max_nodes : int, optional
        Most branch-and-bound nodes (HiGHS' ``mip_max_nodes``): a deterministic
        bound on the work; without it, to optimality (``mip_rel_gap`` 0).

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

    h = new_highs()
    for option, setting in DETERMINISTIC_OPTIONS.items():
        h.setOptionValue(option, setting)
    h.setOptionValue("time_limit", max(float(time_limit), 1e-3))
    if relax:
        h.setOptionValue("solver", "ipm")
    else:
        h.setOptionValue("mip_rel_gap", 0.0)
        if max_nodes is not None:
            h.setOptionValue("mip_max_nodes", int(max_nodes))
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
    stopped = status == highspy.HighsModelStatus.kTimeLimit
    nodes = 0 if relax else int(getattr(info, "mip_node_count", 0))
    return Answer(values, bound, h.modelStatusToString(status), nodes, stopped)

"""The general worst-case solver: a mixed-integer program (HiGHS, called directly), strengthened.

The problem (:mod:`gce.solvers.base`) is: maximize ``w(b0 XOR b1)`` over
allowed pairs. Three exact formulations, picked by :func:`formulation`:

* ``single`` (unbounded pairs ``(empty, b)``): maximize ``w.x`` over allowed
  ``x``, the b-vector of 001, Sec. V-A.
* ``disjoint`` (bounded pairs, every constraint *hereditary*): maximize
  ``w.x + w.y`` over allowed ``x, y`` with ``x + y <= 1``. Exact because for
  allowed ``b0, b1`` the sets ``b0 - b1`` and ``b1 - b0`` are allowed too
  (each is a union of ``together`` components inside an allowed set, which a
  hereditary constraint keeps allowed; ``at_most``, ``exclusive`` and
  ``conflicts`` are downward closed outright) and have the same symmetric
  difference. So the bounded worst case is the heaviest *disjoint* allowed
  pair: for exclusive groups, the two heaviest members of each group, as in
  001 Ex. 2 (``max_{i != j}``) and 000 Cor. IV.13. No XOR variables, whose
  relaxation ``z = 1`` at ``x = y = 1/2`` is worthless; here each side keeps
  the strength of its own rows.
* ``xor`` (bounded pairs with ``patterns``, which are not hereditary): two
  copies and ``z <= x + y``, ``z <= 2 - x - y``, maximize ``w.z``.

Each copy carries the compiled constraints (the exact description,
:meth:`ConstraintSet.compile`) plus valid inequalities of the conflict graph
(:mod:`gce.solvers.packing`): one row per maximal clique (``x(K) <= 1``
instead of one row per edge: on ``g`` exclusive databases the edge rows allow
``g/2``), and odd-cycle inequalities ``x(C) <= (|C| - 1) / 2`` that the linear
relaxation violates (:func:`separate`). Valid inequalities cut off fractional
points only, never an allowed set.

:class:`MILP` escalates: a local search for the witness
(:mod:`gce.solvers.heuristics`) against a clique-partition bound, cutting
planes on the linear relaxation with the clique rows, then HiGHS on the
strengthened model. The certified upper bound is the smallest of HiGHS' MIP
dual bound, the relaxation's optimum and the combinatorial bound, so it stays
valid when the time cap stops a step (docs/design.md, "The worst-case search"
and "Performance targets": a certified bound, the gap reported).

Every step's work is decided by the problem: moves of the local search
(:func:`~gce.solvers.heuristics.local_search_moves`), rounds of cutting planes
(:data:`SEPARATION_ROUNDS`, :data:`SEPARATION_MIN_GAIN`), cycles separated
(counts), HiGHS to optimality on one thread with a fixed seed. The same
problem gives the same answer on any machine and load (docs/design.md,
"Same question, same answer"). The clock only caps: the running computation's
:class:`~gce.effort.Deadline` (:func:`gce.effort.current`) stops a step, which
keeps its certified bounds, and the stop is recorded on the deadline (the
report then says ``time limit reached``).
:class:`PlainMILP` is the formulation used before (compiled rows only, the
XOR model for every bounded problem): the reference the benchmarks compare
against.
"""

from __future__ import annotations

import functools
import math
from collections import OrderedDict
from dataclasses import dataclass, replace

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ..constraints import ConstraintSet, LinearSystem
from .base import Solver, WeightProblem, WeightResult, round_bound
from .. import effort, resources
from ..effort import Deadline
from .heuristics import LocalSearch, greedy_pair, local_search_moves
from .highs import Program, solve_program
from .packing import PackingStructure, odd_holes, violated_odd_cycles

if TYPE_CHECKING:  # pragma: no cover - scipy.sparse is imported where used (start-up)
    import scipy.sparse as sp

__all__ = ["formulation", "separate", "MILP", "PlainMILP"]

#: Model columns (databases x copies) HiGHS is handed per second of the time left: the cost estimate of a
#: HiGHS call, checked before it starts, since the model's construction and HiGHS' presolve ignore the time
#: limit (10^7 columns: 11 s to build, 53 s in presolve at a 0.3 s limit). A cap only: a model that does
#: not fit is not built, and the stop is recorded.
HIGHS_COLUMNS_PER_SECOND = 500_000
#: Bytes one column of the model takes, built and inside HiGHS (its rows' share included), for the memory policy.
HIGHS_BYTES_PER_COLUMN = 600
#: Most moves of the local search before the cutting planes (about 0.05 s); the rest come after them.
FIRST_MOVES = 2_000
#: Most linear relaxations solved in the cutting-plane rounds.
SEPARATION_ROUNDS = 12
#: Relative drop of the relaxation's bound below which the rounds stop.
SEPARATION_MIN_GAIN = 1e-3
#: Violation above which a row counts as violated by a fractional point.
CUT_TOLERANCE = 1e-6
#: Fewest seconds worth a HiGHS call (building and presolving the model takes a few milliseconds): with
#: less left, the call is not made (a stop of the cap).
MIN_HIGHS_SECONDS = 0.02
#: Slack added to HiGHS' bounds before they are rounded, relative to the total weight:
#: its optimality tolerances (1e-7 on each primal and dual residual) move the objective
#: by at most about that much.
BOUND_SLACK = 1e-6

_EMPTY: frozenset[int] = frozenset()

Pair = tuple[frozenset[int], frozenset[int]]


def formulation(problem: WeightProblem) -> str:
    """Which exact model :class:`MILP` builds: ``single``, ``disjoint`` or ``xor``.

    ``disjoint`` needs every non-vacuous constraint to be hereditary (see the
    module docstring): then ``max w(b0 XOR b1)`` over allowed pairs equals
    ``max w(b0) + w(b1)`` over allowed *disjoint* pairs.

    Examples
    --------
    >>> import numpy as np
    >>> from gce.constraints import ConstraintSet, Exclusive, Patterns
    >>> cs = ConstraintSet(3, (Exclusive((0, 1, 2)),))
    >>> formulation(WeightProblem(cs, np.ones(3), "bounded"))
    'disjoint'
    >>> formulation(WeightProblem(ConstraintSet(3, (Patterns(({0, 1},)),)), np.ones(3), "bounded"))
    'xor'
    """
    if problem.neighborhood == "unbounded":
        return "single"
    constraints = problem.constraints
    if all(c.hereditary or c.is_vacuous(constraints.n) for c in constraints.constraints):
        return "disjoint"
    return "xor"


@dataclass(frozen=True, eq=False)
class Rows:
    """Valid inequalities ``matrix @ x <= rhs`` over the membership variables of each copy."""

    matrix: sp.csr_array
    rhs: NDArray[np.float64]

    @classmethod
    def of(cls, n: int, rows: list[tuple[NDArray[np.int64], float]]) -> "Rows":
        """0/1 rows, one per ``(members, rhs)``."""
        import scipy.sparse as sp

        if not rows:
            return cls(sp.csr_array((0, n)), np.zeros(0))
        indptr = np.cumsum([0] + [len(m) for m, _ in rows])
        indices = np.concatenate([np.asarray(m, dtype=np.int64) for m, _ in rows])
        matrix = sp.csr_array((np.ones(indices.size), indices, indptr), shape=(len(rows), n))
        return cls(matrix, np.array([b for _, b in rows], dtype=float))

    def __len__(self) -> int:
        return int(self.matrix.shape[0])

    def __add__(self, other: "Rows") -> "Rows":
        import scipy.sparse as sp

        return Rows(sp.vstack([self.matrix, other.matrix], format="csr"), np.concatenate([self.rhs, other.rhs]))

    def take(self, mask: NDArray[np.bool_]) -> "Rows":
        """The rows where ``mask`` is set."""
        return Rows(self.matrix[np.flatnonzero(mask)], self.rhs[mask])

    def violated(self, values: NDArray[np.float64]) -> NDArray[np.bool_]:
        """Rows that a (fractional) point violates by more than :data:`CUT_TOLERANCE`."""
        return self.matrix @ values > self.rhs + CUT_TOLERANCE


def clique_rows(structure: PackingStructure) -> Rows:
    """``x(K) <= 1`` for the capacity-1 groups of three or more members (pairs are compiled already)."""
    return Rows.of(structure.n, [(g.members, 1.0) for g in structure.groups
                                 if g.capacity == 1 and g.members.size >= 3])


@dataclass(frozen=True)
class _Answer:
    """What HiGHS returned: each copy's membership values (None without a solution) and a bound."""

    values: tuple[NDArray[np.float64], ...] | None
    upper: float
    #: Whether the time cap stopped HiGHS.
    stopped: bool = False

    @property
    def pair(self) -> Pair | None:
        """The copies as a pair (integral solutions only)."""
        if self.values is None:
            return None
        sets = [frozenset(int(i) for i in np.flatnonzero(v > 0.5)) for v in self.values]
        return (_EMPTY, sets[0]) if len(sets) == 1 else (sets[0], sets[1])


#: The packing structures built lately, by constraint set (every search of a solve shares one).
_STRUCTURES: OrderedDict[ConstraintSet, PackingStructure] = OrderedDict()
#: How many of them are kept.
STRUCTURES_KEPT = 8


def _packing(constraints: ConstraintSet, deadline: Deadline | None = None) -> PackingStructure | None:
    """The packing structure of a constraint set, built once per solve (every search of a solve shares it).

    Building it cannot be interrupted, so its cost is estimated first
    (:meth:`~gce.solvers.packing.PackingStructure.estimate_seconds`); None, a stop of the cap
    ``deadline``, when that does not fit in the time left.
    """
    found = _STRUCTURES.get(constraints)
    if found is not None:
        _STRUCTURES.move_to_end(constraints)
        return found
    if deadline is not None:
        seconds = PackingStructure.estimate_seconds(constraints)
        if not deadline.fits(seconds):
            deadline.stop(f"conflict structure not built (about {seconds:.2g} s; {max(deadline.left(), 0.0):.2g} s "
                          f"left)")
            return None
    found = _STRUCTURES[constraints] = PackingStructure.of(constraints)
    if len(_STRUCTURES) > STRUCTURES_KEPT:
        _STRUCTURES.popitem(last=False)
    return found


@functools.lru_cache(maxsize=8)
def _compiled(constraints: ConstraintSet) -> LinearSystem:
    """The compiled constraints, once per constraint set."""
    return constraints.compile()


def program(problem: WeightProblem, form: str, rows: Rows | None) -> tuple[Program, int]:
    """The model of ``form`` as one 0/1 program; returns it and the column count of one copy.

    Columns: copy ``x`` (b1; membership then auxiliary variables), then for
    ``disjoint`` and ``xor`` a copy ``y`` (b0), then for ``xor`` the continuous
    ``z``. Rows: each copy's compiled constraints and ``rows``; ``x + y <= 1``
    (``disjoint``) or ``z <= x + y``, ``z <= 2 - x - y`` (``xor``).
    """
    import scipy.sparse as sp

    n, system, w = problem.n, _compiled(problem.constraints), problem.weights
    width = system.n + system.aux
    copies = 1 if form == "single" else 2
    columns = copies * width + (n if form == "xor" else 0)
    blocks: list[sp.csr_array] = []
    upper: list[NDArray[np.float64]] = []

    def place(matrix: sp.csr_array, offset: int) -> sp.csr_array:
        coo = sp.coo_array(matrix)
        return sp.csr_array((coo.data, (coo.row, coo.col + offset)), shape=(coo.shape[0], columns))

    for c in range(copies):
        if system.rows:
            blocks.append(place(system.A, c * width))
            upper.append(system.b)
        if rows is not None and len(rows):
            blocks.append(place(rows.matrix, c * width))
            upper.append(rows.rhs)
    eye = sp.eye_array(n, format="csr")
    if form == "disjoint":
        blocks.append(place(sp.hstack([eye, sp.csr_array((n, width - n)), eye], format="csr"), 0))
        upper.append(np.ones(n))
    elif form == "xor":
        pad = sp.csr_array((n, width - n))
        blocks.append(place(sp.hstack([-eye, pad, -eye, pad, eye], format="csr"), 0))
        blocks.append(place(sp.hstack([eye, pad, eye, pad, eye], format="csr"), 0))
        upper += [np.zeros(n), np.full(n, 2.0)]
    cost = np.zeros(columns)
    if form == "xor":
        cost[2 * width:] = w
    else:
        for c in range(copies):
            cost[c * width:c * width + n] = w
    binary = np.zeros(columns, dtype=bool)
    binary[:copies * width] = True
    matrix = sp.vstack(blocks, format="csr") if blocks else sp.csr_array((0, columns))
    return Program(cost, matrix, np.concatenate(upper) if upper else np.zeros(0), binary), width


def _solve_model(problem: WeightProblem, form: str, rows: Rows | None, time_limit: float,
                 integral: bool = True) -> _Answer:
    """Solve the model of ``form`` (:func:`program`) with HiGHS to optimality, capped at ``time_limit``
    seconds (:func:`gce.solvers.highs.solve_program`: deterministic, interruptible by Ctrl-C).

    ``integral=False`` solves the linear relaxation instead. The bound is
    HiGHS' MIP dual bound or the relaxation's optimum, plus a relative slack for
    solver tolerances; ``inf`` when HiGHS gives none.
    """
    model, width = program(problem, form, rows)
    answer = solve_program(model, time_limit, relax=not integral)
    values = None
    if answer.values is not None:
        n = problem.n
        copies = (answer.values[:n],) if form == "single" else (answer.values[width:width + n], answer.values[:n])
        values = tuple(np.asarray(v, dtype=float) for v in copies)  # (b0, b1) for two copies
    slack = BOUND_SLACK * max(1.0, float(np.sum(problem.weights)))
    return _Answer(values, answer.bound + slack if math.isfinite(answer.bound) else math.inf, answer.stopped)


def separate(problem: WeightProblem, form: str, structure: PackingStructure, rows: Rows,
             deadline: Deadline | None = None) -> tuple[Rows, float]:
    """Cutting planes: odd-cycle rows that linear-relaxation optima violate, in rounds.

    Solve the relaxation with ``rows``; add the induced 5-cycles
    (:func:`~gce.solvers.packing.odd_holes`) and the odd cycles
    (:func:`~gce.solvers.packing.violated_odd_cycles`) that a copy of its
    optimum violates; repeat while rows are added and the relaxation's bound
    drops by at least :data:`SEPARATION_MIN_GAIN` (relative), at most
    :data:`SEPARATION_ROUNDS` times (none when the model does not fit the memory
    limit; each round's model is estimated before it is built, as HiGHS' are).
    ``deadline`` (default :func:`gce.effort.current`) only caps the rounds; a
    stop is recorded on it. On a sparse random
    conflict graph the first relaxation sits at ``x = 1/2`` and the rounds
    take its bound from about n/2 toward the odd-cycle bound; inside exclusive
    groups the clique rows already make it tight, few rows are added, and the
    MILP stays small.

    Returns
    -------
    rows : Rows
        ``rows`` plus the odd-cycle rows added.
    bound : float
        The smallest relaxation optimum seen (a valid upper bound), ``inf`` if none.
    """
    deadline = effort.current() if deadline is None else deadline
    found = odd_holes(structure.graph, deadline=deadline)
    holes = Rows.of(structure.n, [(np.array(h), 2.0) for h in found])
    chosen = np.zeros(len(holes), dtype=bool)
    seen = {frozenset(h) for h in found}
    cycles: list[tuple[NDArray[np.int64], float]] = []
    bound = math.inf
    for round_ in range(SEPARATION_ROUNDS if _model_fits_memory(problem, form) else 0):
        remaining = deadline.left()
        if remaining < MIN_HIGHS_SECONDS or not _model_fits_time(problem, form, remaining):
            deadline.stop(f"cutting planes (round {round_ + 1} of at most {SEPARATION_ROUNDS} not solved)")
            break
        current = rows + holes.take(chosen) + Rows.of(structure.n, cycles)
        relaxed = _solve_model(problem, form, current, remaining, integral=False)
        if relaxed.stopped:
            deadline.stop(f"cutting planes (round {round_ + 1}: the linear relaxation)")
        if relaxed.values is None or relaxed.upper > bound * (1.0 - SEPARATION_MIN_GAIN):
            bound = min(bound, relaxed.upper)
            break
        bound = relaxed.upper
        added = 0
        for values in relaxed.values:
            fresh = holes.violated(values) & ~chosen
            chosen |= fresh
            added += int(fresh.sum())
            for cycle in violated_odd_cycles(structure.graph, values, deadline=deadline):
                if frozenset(cycle) not in seen:
                    seen.add(frozenset(cycle))
                    cycles.append((np.array(cycle), (len(cycle) - 1) / 2))
                    added += 1
        if not added:
            break
    return rows + holes.take(chosen) + Rows.of(structure.n, cycles), bound


def _columns(problem: WeightProblem, form: str) -> int:
    """Columns of HiGHS' model of ``form``, about: one per database and copy (and XOR variable)."""
    return problem.n * {"single": 1, "disjoint": 2}.get(form, 3)


def _model_fits_memory(problem: WeightProblem, form: str) -> bool:
    """Whether HiGHS' model of ``form`` fits the memory limit (:data:`HIGHS_BYTES_PER_COLUMN`): a
    deterministic limit; when it does not fit, the solve keeps its witness and its other certified bounds."""
    return _columns(problem, form) * HIGHS_BYTES_PER_COLUMN <= resources.memory_limit()


def _model_fits_time(problem: WeightProblem, form: str, time_limit: float) -> bool:
    """Whether HiGHS' model of ``form`` can be built and handed over within ``time_limit``, estimated from
    its columns (:data:`HIGHS_COLUMNS_PER_SECOND`) before it is built. Building it is not interruptible and
    HiGHS' presolve does not look at its clock: 10^7 databases took 11 s to build and 53 s in HiGHS at a
    0.3 s limit."""
    return _columns(problem, form) <= HIGHS_COLUMNS_PER_SECOND * time_limit


class _Run:
    """One solve in progress: the candidate pairs and the named upper bounds so far."""

    def __init__(self, problem: WeightProblem, form: str, method: str, deadline: Deadline):
        self.problem, self.form, self.method = problem, form, method
        #: The cap, collecting what it stopped: the search then records a single stop on the solve's
        #: deadline, with its witness and bound, instead of one line per stage.
        self.deadline = deadline.collecting()
        #: The solve's deadline itself, where the search's one stop is recorded.
        self.cap = deadline
        self.candidates: list[Pair] = []
        self.bounds: dict[str, float] = {"total": float(problem.weights.sum())}

    def offer(self, pair: Pair | None) -> None:
        if pair is not None:
            self.candidates.append(pair)

    def bound(self, source: str, value: float) -> None:
        self.bounds[source] = min(self.bounds.get(source, math.inf), value)

    def result(self) -> WeightResult:
        """The heaviest allowed candidate and the smallest bound (never below the witness).

        Every candidate is re-checked against the constraints (STYLE: "check
        every optimizer output"); ``detail`` reads ``"<formulation>; <source> bound"``.
        """
        problem = self.problem
        allowed = [pair for pair in self.candidates if problem.allowed_pair(*pair)]
        witness = max(allowed, key=lambda pair: problem.value(*pair), default=(_EMPTY, _EMPTY))
        value = problem.value(*witness)
        source = min(self.bounds, key=self.bounds.__getitem__)
        upper = max(round_bound(problem, self.bounds[source]), value)
        return WeightResult(witness, value, upper, self.method, f"{self.form}; {source} bound",
                            stopped=self.deadline.reached)

    def milp(self, rows: Rows | None) -> WeightResult:
        """HiGHS on the model, to optimality: its solution joins the candidates, its dual bound the bounds.
        Not made when the model does not fit the memory limit (deterministic), or, a stop of the cap, when
        less than :data:`MIN_HIGHS_SECONDS` are left or the model would not be built in the time left
        (:func:`_model_fits_time`)."""
        problem, form, deadline = self.problem, self.form, self.deadline
        if not _model_fits_memory(problem, form):
            return self.result()
        left = deadline.left()
        if left < MIN_HIGHS_SECONDS or not _model_fits_time(problem, form, left):
            deadline.stop(f"HiGHS not started ({_columns(problem, form):,} columns, {max(left, 0.0):.2g} s left)")
            return self.result()
        answer = _solve_model(problem, form, rows, left)
        if answer.stopped:
            deadline.stop("HiGHS stopped")
        self.offer(answer.pair)
        self.bound("highs", answer.upper)
        return self.result()

    def finish(self) -> WeightResult:
        """The result, and one stop on the real deadline when the cap stopped a stage of this search."""
        result = self.result()
        if self.deadline.reached:
            gap = result.gap / result.upper_bound if result.upper_bound > 0 else 0.0
            stages = "; ".join(self.deadline.stops)
            self.cap.stop(f"worst-case search on {self.problem.n:,} databases ({stages}): witness "
                          f"{result.value:g}, certified bound {result.upper_bound:g} (gap {gap:.1%})")
        return result


class MILP(Solver):
    """The general case: local search for the witness, a strengthened MILP for the bound.

    Accepts every problem. Exact unless the time cap stops a step before a
    bound meets the witness (or the model does not fit the memory limit);
    then the result carries the best witness found and the smallest
    certified bound, ``exact`` is False, and the cap records the stop.

    Steps, each skipped once the witness is proved optimal, each of a work
    decided by the problem (the same answer on any machine):

    1. a greedy pair, and a local search of at most :data:`FIRST_MOVES` moves
       (packing constraints only) against the clique-partition bound;
    2. cutting-plane rounds on the linear relaxation with the clique rows
       (:func:`separate`), whose optimum is a bound too;
    3. the rest of the local search's moves
       (:func:`~gce.solvers.heuristics.local_search_moves`), against that bound;
    4. HiGHS on the strengthened model, to optimality;
    5. when HiGHS could not run (memory), the local search again from the best pair.

    The order matters only when the cap stops a step: the cheap bounds come
    first, so that an early stop still has them.

    (A first HiGHS run on the clique rows alone, before the cutting planes, cost
    more than it saved once it was bounded by nodes rather than seconds: on 90
    databases with 270 random conflicts 2 s against 0.4 s, and on 500 with 1,500
    a bound of 232 against 215 after 5 s.)

    Parameters
    ----------
    strengthen : bool
        Add the clique and odd-cycle rows and run the cutting planes (default).
        Without them, one MILP on the compiled rows (steps 1, 3, 4, 5).

    References
    ----------
    001, Thm. 1 and Sec. V-A (worst case over allowed point masses); Padberg
    1973 (odd-cycle inequalities); Andrade, Resende and Werneck 2012 (ILS).
    """

    name = "milp"
    always_exact = False

    def __init__(self, strengthen: bool = True):
        self.strengthen = strengthen

    def can_solve(self, problem: WeightProblem) -> bool:
        return True

    def solve(self, problem: WeightProblem, time_limit: float | None = None) -> WeightResult:
        form = formulation(problem)
        run = _Run(problem, form, self.name, effort.current() if time_limit is None else Deadline(time_limit))
        if run.deadline.expired():  # no time at all: the combinatorial bounds, no witness (the empty pair)
            structure = _STRUCTURES.get(problem.constraints)
            if structure is not None and form != "xor":
                run.bound("clique-partition", structure.partition_bound(problem.weights, 2 if form == "disjoint" else 1))
            run.cap.stop("worst-case searches after the time limit (combinatorial bounds only)")
            return replace(run.result(), stopped=True)
        structure = _packing(problem.constraints, run.deadline)
        if structure is None:  # its build would not end in the time left: a greedy witness, the total as bound
            run.offer(greedy_pair(problem, run.deadline))
            return run.finish()
        if form != "xor":
            run.bound("clique-partition", structure.partition_bound(problem.weights, 2 if form == "disjoint" else 1))
        search = self._search(problem, structure, form)
        moves = local_search_moves(problem.n)
        first = min(moves, FIRST_MOVES)
        if search is None:
            run.offer(greedy_pair(problem, run.deadline))
        else:
            self._improve(run, search, first)
        result = run.result()
        if not result.exact and not self.strengthen:
            self._improve(run, search, moves - first)
            result = run.milp(None)
        elif not result.exact:
            rows, relaxation = separate(problem, form, structure, clique_rows(structure), run.deadline)
            run.bound("lp", relaxation)
            result = self._improve(run, search, moves - first)
            if not result.exact:
                result = run.milp(rows)
        if not result.exact and search is not None and not run.deadline.reached:
            b0, b1 = result.witness
            search.seed_with((b1, b0) if form == "disjoint" else (b1,))
            search.run(moves, target=result.upper_bound, deadline=run.deadline)
            if search.stopped:
                run.deadline.stop("second local search")
            run.offer(search.best_pair())
        return run.finish()

    @staticmethod
    def _improve(run: _Run, search: LocalSearch | None, moves: int) -> WeightResult:
        """``moves`` more moves of the local search (none once the cap has passed), up to the smallest bound
        so far; its best pair (at least its greedy start) joins the candidates."""
        if search is None:
            return run.result()
        if moves > 0:
            if run.deadline.expired():
                run.deadline.stop("local search")
            else:
                search.run(moves, target=min(run.bounds.values()), deadline=run.deadline)
                if search.stopped:
                    run.deadline.stop("local search")
        run.offer(search.best_pair())
        return run.result()

    @staticmethod
    def _search(problem: WeightProblem, structure: PackingStructure, form: str) -> LocalSearch | None:
        """A local search when the packing groups describe the constraints exactly
        (``single`` or ``disjoint`` models; the XOR model has no packing form)."""
        if form == "xor" or not structure.exact or problem.constraints.is_unconstrained:
            return None
        return LocalSearch(structure, problem.weights, sides=2 if form == "disjoint" else 1)


class PlainMILP(Solver):
    """The formulation used before: compiled rows only (one per conflict edge and per
    exclusive group), the XOR model for every bounded problem, a greedy witness.

    Kept as the reference the benchmarks and tests compare against; not in the
    dispatcher's list.
    """

    name = "plain-milp"
    always_exact = False

    def can_solve(self, problem: WeightProblem) -> bool:
        return True

    def solve(self, problem: WeightProblem, time_limit: float | None = None) -> WeightResult:
        run = _Run(problem, "single" if problem.neighborhood == "unbounded" else "xor", self.name,
                   effort.current() if time_limit is None else Deadline(time_limit))
        run.offer(greedy_pair(problem, run.deadline))
        run.milp(None)
        return run.finish()

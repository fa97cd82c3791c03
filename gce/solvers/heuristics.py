"""Primal heuristics: allowed pairs found quickly, the witnesses (lower bounds) of the solvers.

* :func:`greedy_pair`: add whole ``together`` blocks, heaviest first, while the
  set stays allowed (any constraints; the fallback).
* :class:`LocalSearch`: for packing structures (:mod:`gce.solvers.packing`), a
  greedy start and an iterated local search in the style of Andrade, Resende
  and Werneck's ILS for maximum independent set: force a random outside
  database in, evict the members that block it, refill greedily around the
  evicted ones, keep the move unless the weight drops. With two *sides* it
  searches disjoint pairs (b0, b1), the bounded worst case of hereditary
  constraints (see :func:`gce.solvers.milp.formulation`).

A heuristic gives a lower bound only; the solvers pair it with a certified
upper bound and re-check every witness against the constraints.

Both do a deterministic amount of work (blocks scanned, moves made, a fixed
seed): the same problem gives the same pair on any machine. A
:class:`~gce.effort.Deadline` only caps them; when it stops one, the
heuristic keeps what it found (an allowed pair, a witness still) and says so
(``stopped``), and the solver records the stop on the deadline.
"""

from __future__ import annotations

import math
import random

import numpy as np
from numpy.typing import NDArray

from ..effort import Deadline
from .base import WeightProblem
from .packing import PackingStructure

__all__ = ["greedy_pair", "LocalSearch", "GREEDY_BLOCKS", "local_search_moves"]

_EMPTY: frozenset[int] = frozenset()

#: Probability of keeping a move that lowers the weight (diversification).
ACCEPT_WORSE = 0.01
#: Moves without a new best after which the search restarts from the best.
RESTART_AFTER = 4000
#: Members of a large group scanned when refilling around an evicted member.
REFILL_SCAN = 64
#: Moves (or greedy blocks) between two looks at the clock.
CLOCK_EVERY = 64
#: Most blocks the greedy witness scans, heaviest first (one ``satisfied`` check each: 10^7 blocks take
#: minutes); the set found by then is allowed, so still a witness.
GREEDY_BLOCKS = 200_000
#: Most work of the greedy witness, in members visited: each check costs about :data:`CHECK_COST` plus the
#: members of the set checked (about 0.05 microseconds each: 14 microseconds a check of 50 members, 250 of
#: 5,000), so about a second.
GREEDY_WORK = 20_000_000
CHECK_COST = 300
#: Most moves of one local-search run: about 25 microseconds a move, so about a second on a quiet machine.
MAX_MOVES = 50_000


def local_search_moves(n: int) -> int:
    """The move budget of one local-search run on ``n`` databases, from the size alone (deterministic):
    ``n^2 / 10``, at most :data:`MAX_MOVES`. Quadratic because small problems need few moves (HiGHS proves
    them optimal in milliseconds, and a branch and bound solves hundreds of them) while on large ones the
    witness comes from the search: 25,000 moves at 500 databases, the cap from 708 on.

    >>> local_search_moves(14), local_search_moves(500), local_search_moves(10**6)
    (19, 25000, 50000)
    """
    return int(min(n * n // 10, MAX_MOVES))


def _greedy_set(problem: WeightProblem, banned: frozenset[int], deadline: Deadline | None,
                blocks: int = GREEDY_BLOCKS) -> tuple[frozenset[int], bool]:
    """Whole ``together`` blocks outside ``banned``, heaviest first (ties: smallest member first), while the
    set stays allowed; the blocks are taken from arrays, one at a time, at most ``blocks`` of them and
    :data:`GREEDY_WORK` members visited. The
    ``deadline`` only caps the scan: it stops with the set found so far (allowed, so still a witness), and
    the second value says that it did."""
    constraints = problem.constraints
    labels = constraints.block_labels()
    banned_members = np.fromiter(banned, dtype=np.int64) if banned else None
    if labels is None:  # every database its own block
        weight = np.asarray(problem.weights, dtype=float)
        usable = np.ones(problem.n, dtype=bool)
        if banned_members is not None:
            usable[banned_members] = False
        order = _heaviest(weight, usable, blocks)
        members, first, last = order, np.arange(order.size), np.arange(1, order.size + 1)
    else:
        label, count = labels
        weight = np.bincount(label, weights=problem.weights, minlength=count)
        usable = np.ones(count, dtype=bool)
        if banned_members is not None:
            usable[label[banned_members]] = False
        order = _heaviest(weight, usable, blocks)
        # the members of the blocks in order only (one pass over the labels; a sort of all of them took
        # most of this scan at 10 million databases)
        wanted = np.zeros(count, dtype=bool)
        wanted[order] = True
        members = np.flatnonzero(wanted[label])
        members = members[np.argsort(label[members], kind="stable")]
        by_block = label[members]
        first, last = np.searchsorted(by_block, order, "left"), np.searchsorted(by_block, order, "right")
    chosen, work = _EMPTY, 0
    for start in range(0, order.size, CLOCK_EVERY):
        if start and deadline is not None and deadline.expired():
            return chosen, True
        for i in range(start, min(start + CLOCK_EVERY, order.size)):
            block = frozenset(members[first[i]:last[i]].tolist())
            work += CHECK_COST + len(chosen) + len(block)
            if work > GREEDY_WORK:
                return chosen, False
            if constraints._allows(chosen | block):  # in range by construction: no re-validation
                chosen = chosen | block
    return chosen, False


def _heaviest(weight: NDArray[np.float64], usable: NDArray[np.bool_], blocks: int) -> NDArray[np.int64]:
    """The usable blocks, heaviest first (ties: smallest first), at most ``blocks`` of them: the first
    ``blocks`` of ``argsort(-weight, kind="stable")`` that are usable, without sorting every block (those
    below the ``blocks``-th heaviest weight are left out first, by ``np.partition``)."""
    everyone = bool(usable.all())
    size = usable.size if everyone else int(np.count_nonzero(usable))
    if blocks <= 0 or size == 0:
        return np.zeros(0, dtype=np.int64)
    if size <= blocks:
        candidates = np.arange(size) if everyone else np.flatnonzero(usable)
    else:
        cut = np.partition(weight if everyone else weight[usable], size - blocks)[size - blocks]
        above, level = weight > cut, weight == cut  # all above are among the first; then the smallest at the cut
        if not everyone:
            above &= usable
            level &= usable
        above[np.flatnonzero(level)[:blocks - int(np.count_nonzero(above))]] = True
        candidates = np.flatnonzero(above)
    return candidates[np.argsort(-weight[candidates], kind="stable")][:blocks]


def greedy_pair(problem: WeightProblem, deadline: Deadline | None = None, *,
                blocks: int = GREEDY_BLOCKS) -> tuple[frozenset[int], frozenset[int]]:
    """A quick allowed pair: a greedy b1, then (bounded) a greedy b0 on the other databases, each scanning
    at most ``blocks`` blocks and capped by ``deadline`` (then :attr:`Deadline.stop` records it)."""
    b1, stopped = _greedy_set(problem, _EMPTY, deadline, blocks)
    if problem.neighborhood == "bounded" and not stopped:
        b0, stopped = _greedy_set(problem, b1, deadline, blocks)
        pair = (b0, b1) if problem.allowed_pair(b0, b1) else (_EMPTY, b1)
    else:
        pair = (_EMPTY, b1)
    if stopped:
        deadline.stop(f"greedy witness on {problem.n:,} databases (stopped after {len(pair[0]) + len(pair[1]):,} "
                      f"members)")
    return pair


class LocalSearch:
    """Iterated local search over ``sides`` disjoint sets obeying a packing structure.

    The state colours each database with a side (0 .. sides-1) or leaves it
    out; per side and group it keeps the members inside, so a database fits a
    side when every group of it has room there. Moves are logged so that a
    rejected move is undone exactly.

    Parameters
    ----------
    structure : PackingStructure
        Its groups are the only constraints the search knows; the caller
        re-checks the result when ``structure.exact`` is False.
    weights : array of float
        Non-negative, one per database.
    sides : {1, 2}
        One set (unbounded) or a disjoint pair (bounded, hereditary constraints).
    seed : int
        For the random choices; the search is deterministic given the seed and
        the number of moves.

    Examples
    --------
    >>> import networkx as nx
    >>> from gce.constraints import Conflicts, ConstraintSet
    >>> cs = ConstraintSet(6, (Conflicts.from_graph(nx.cycle_graph(6)),))
    >>> search = LocalSearch(PackingStructure.of(cs), np.ones(6), sides=2)
    >>> search.run(max_moves=200)
    6.0
    >>> search.stopped
    False
    >>> sorted(sorted(s) for s in search.best_sets())
    [[0, 2, 4], [1, 3, 5]]
    """

    def __init__(self, structure: PackingStructure, weights: NDArray[np.float64], sides: int, seed: int = 0):
        self.n, self.sides = structure.n, sides
        self.w = [float(x) for x in weights]
        self.rng = random.Random(seed)
        self.members = [g.members.tolist() for g in structure.groups]
        self.capacity = [g.capacity for g in structure.groups]
        self.groups_of: list[list[int]] = [[] for _ in range(self.n)]
        for j, members in enumerate(self.members):
            for i in members:
                self.groups_of[i].append(j)
        forbidden = {i for j, m in enumerate(self.members) if self.capacity[j] == 0 for i in m}
        self.candidates = [i for i in range(self.n) if self.w[i] > 0 and i not in forbidden]
        self.side = [-1] * self.n
        self.inside: list[list[set[int]]] = [[set() for _ in self.members] for _ in range(sides)]
        self.total = 0.0
        self.log: list[tuple[int, int]] = []  # (database, side it was added to (>= 0) or removed from (~side))
        #: Whether the last :meth:`run` was stopped by its deadline before its moves were made.
        self.stopped = False
        self._greedy()
        self.best_total, self.best_side = self.total, list(self.side)

    # --- state -------------------------------------------------------------------------------------
    def _fits(self, i: int, k: int) -> bool:
        inside, capacity = self.inside[k], self.capacity
        return all(len(inside[j]) < capacity[j] for j in self.groups_of[i])

    def _add(self, i: int, k: int) -> None:
        self.side[i] = k
        for j in self.groups_of[i]:
            self.inside[k][j].add(i)
        self.total += self.w[i]
        self.log.append((i, k))

    def _remove(self, i: int) -> None:
        k = self.side[i]
        self.side[i] = -1
        for j in self.groups_of[i]:
            self.inside[k][j].discard(i)
        self.total -= self.w[i]
        self.log.append((i, ~k))

    def _undo(self, mark: int) -> None:
        while len(self.log) > mark:
            i, k = self.log.pop()
            if k >= 0:
                self._remove(i)
            else:
                self._add(i, ~k)
            self.log.pop()  # the inverse operation just logged

    def _greedy(self) -> None:
        """Heaviest weight per blocked database first (GWMIN), each into the first side it fits."""
        blocked = [sum(len(self.members[j]) - 1 for j in self.groups_of[i] if self.capacity[j] == 1)
                   for i in range(self.n)]
        order = sorted(self.candidates, key=lambda i: (-self.w[i] / (1 + blocked[i]), self.rng.random()))
        for i in order:
            for k in range(self.sides):
                if self._fits(i, k):
                    self._add(i, k)
                    break
        self.log.clear()

    def _refill(self, around: list[int]) -> None:
        """Add outside databases sharing a group with ``around``, heaviest first, wherever they fit."""
        seen: set[int] = set()
        for i in around:
            for j in self.groups_of[i]:
                members = self.members[j]
                if len(members) > REFILL_SCAN:
                    members = self.rng.sample(members, REFILL_SCAN)
                seen.update(members)
        pool = sorted((u for u in seen if self.side[u] < 0 and self.w[u] > 0),
                      key=lambda u: (-self.w[u], self.rng.random()))
        for u in pool:
            for k in self._side_order():
                if self._fits(u, k):
                    self._add(u, k)
                    break

    def _side_order(self) -> range | list[int]:
        if self.sides == 1:
            return range(1)
        return [0, 1] if self.rng.random() < 0.5 else [1, 0]

    def _force(self, i: int, k: int) -> list[int]:
        """Put ``i`` on side ``k``, evicting the lightest blocking member of each full group."""
        evicted = []
        for j in self.groups_of[i]:
            inside = self.inside[k][j]
            while len(inside) >= self.capacity[j]:
                u = min(inside, key=lambda u: (self.w[u], u))
                self._remove(u)
                evicted.append(u)
        self._add(i, k)
        return evicted

    # --- search ------------------------------------------------------------------------------------
    def run(self, max_moves: int, target: float = math.inf, deadline: Deadline | None = None) -> float:
        """Improve the state for ``max_moves`` moves or until a total of ``target`` (a known upper bound);
        returns the best total weight found so far. The result depends on the moves alone;
        ``deadline`` only caps them (:attr:`stopped` then says so)."""
        self.stopped = False
        if not self.candidates:
            return self.best_total
        moves, since_best = 0, 0
        while moves < max_moves and self.best_total < target - 1e-9:
            if moves % CLOCK_EVERY == 0 and deadline is not None and deadline.expired():
                self.stopped = True
                break
            moves += 1
            since_best += 1
            i = self.rng.choice(self.candidates)
            if self.side[i] >= 0:
                continue
            mark, before = len(self.log), self.total
            evicted = self._force(i, self.rng.randrange(self.sides))
            self._refill(evicted)
            if self.total > self.best_total + 1e-12:
                self.best_total, self.best_side, since_best = self.total, list(self.side), 0
            elif self.total < before - 1e-12 and self.rng.random() >= ACCEPT_WORSE:
                self._undo(mark)
            self.log.clear()
            if since_best >= RESTART_AFTER:
                self._restore_best()
                since_best = 0
        return self.best_total

    def _restore_best(self) -> None:
        for i in range(self.n):
            if self.side[i] >= 0:
                self._remove(i)
        for i, k in enumerate(self.best_side):
            if k >= 0:
                self._add(i, k)
        self.log.clear()

    def seed_with(self, sets: tuple[frozenset[int], ...]) -> None:
        """Continue from given disjoint sets (one per side) if they beat the current best."""
        if sum(self.w[i] for s in sets for i in s) <= self.best_total:
            return
        self.best_side = [-1] * self.n
        for k, members in enumerate(sets[: self.sides]):
            for i in members:
                self.best_side[i] = k
        self.best_total = sum(self.w[i] for i in range(self.n) if self.best_side[i] >= 0)
        self._restore_best()

    def best_sets(self) -> tuple[frozenset[int], ...]:
        """The best sets found, one per side, heaviest first."""
        sets = [frozenset(i for i in range(self.n) if self.best_side[i] == k) for k in range(self.sides)]
        return tuple(sorted(sets, key=lambda s: -sum(self.w[i] for i in s)))

    def best_pair(self) -> tuple[frozenset[int], frozenset[int]]:
        """The best as a pair (b0, b1): (empty, b) with one side, else the lighter set first."""
        sets = self.best_sets()
        return (_EMPTY, sets[0]) if self.sides == 1 else (sets[1], sets[0])

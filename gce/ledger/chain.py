"""The ledger's entries as a hash chain: every value read back is checked, and an edit anywhere is found.

Each entry and each checkpoint carries a SHA-256 hash of its content and of the previous entry's hash,
with a distinct prefix per kind of record (as RFC 6962 separates leaf and node hashes, so that no record
of one kind can pass for another)::

    genesis  = H("gce-ledger-meta\\0"       || the meta rows, sorted, but genesis and head)
    h_s      = H("gce-ledger-entry\\0"      || h_{s-1} || entry s as stored)          h_0 = genesis

where the hashes are written in lower-case hexadecimal wherever one is hashed or stored, "entry s as stored"
is its columns (:data:`ENTRY_COLUMNS`) as netstrings (:func:`_canonical`), and ``s`` in c_s is 8 bytes,
big-endian.
    c_s      = H("gce-ledger-checkpoint\\0" || h_s || s || the per-database sums after entry s)

The meta rows keep ``genesis`` and ``head`` (``"s h_s"``, the last entry), both written in the transaction
that writes the entry, so that an edited budget or scenario, an edited, deleted, duplicated or reordered
entry, a deleted last entry and an edited checkpoint are all told apart from an intact ledger, wherever they
are. What must never change: a record's hash is computed from the values exactly as stored (text columns as
text, numbers by their shortest round-trip repr), so that any gce, any store and any platform recomputes it.

The chain makes a ledger tamper-evident, not tamper-proof: whoever may write the ledger can also recompute
every hash. ``gce ledger verify`` prints the head hash; a curator who keeps it elsewhere (a log, a ticket)
can later check that the history up to it is the one recorded.

Every row read back is also validated before it is used (:func:`parse_entry`): well-formed JSON, database
indices in range, finite non-negative statistics of the right length, weights that agree with the recorded
mechanism, counts that agree with the rows before. A failure is a :class:`DamagedLedgerError` naming the
first bad entry.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .store import LedgerError
from ..validation import shown

__all__ = ["DamagedLedgerError", "Record", "meta_hash", "entry_hash", "checkpoint_hash", "parse_entry",
           "parse_sums", "encode_floats", "ENTRY_COLUMNS", "REPAIR"]

_META = b"gce-ledger-meta\x00"
_ENTRY = b"gce-ledger-entry\x00"
_CHECKPOINT = b"gce-ledger-checkpoint\x00"
#: Meta rows outside the genesis hash: the chain's own anchors.
ANCHORS = ("genesis", "head")
#: The columns of ``gce_entries`` that a hash covers, in order (then ``hash`` itself).
ENTRY_COLUMNS = ("seq", "at", "analyst", "databases", "mechanism", "repeat", "admitted", "weights", "reach",
                 "answer")
#: What to do about a damaged ledger (the README's section says more).
REPAIR = ("nothing is admitted until it is repaired: restore a copy, or keep the entries before the first bad "
          "one (gce ledger truncate --after N), and record again what was run since")
#: Relative tolerance of the checks that recompute a float (weights from the mechanism, checkpoint sums).
RECOMPUTE_TOLERANCE = 1e-9


class DamagedLedgerError(LedgerError):
    """A ledger whose recorded content fails its hash chain or its validation.

    Attributes
    ----------
    entry : int or None
        The first bad entry's number (None when the meta data or a checkpoint is what is damaged).
    last_good : int
        The last entry before it whose chain and content check (0: none).
    """

    def __init__(self, label: str, what: str, *, entry: int | None, last_good: int):
        self.entry = entry
        self.last_good = last_good
        where = f"damaged at entry {entry}" if entry is not None else "damaged"
        tail = f" (entries 1..{last_good} check)" if last_good > 0 else ""
        super().__init__(f"{label}: {where}: {what}{tail}; {REPAIR}")


def _digest(prefix: bytes, *parts: bytes) -> str:
    h = hashlib.sha256(prefix)
    for part in parts:
        h.update(part)
    return h.hexdigest()


def meta_hash(meta: Mapping[str, str]) -> str:
    """The genesis hash: the meta rows (the chain's anchors left out), sorted by key."""
    rows = sorted((k, v) for k, v in meta.items() if k not in ANCHORS)
    return _digest(_META, json.dumps(rows, ensure_ascii=True).encode())


def _canonical(row: tuple) -> bytes:
    """The entry's columns as netstrings (``length:text``, the length in characters), UTF-8: integers in
    decimal, ``reach`` by its shortest round-trip repr, the text columns as stored. (One f-string: opening a
    ledger hashes every entry.)"""
    seq, at, analyst, databases, mechanism, repeat, admitted, weights, reach, answer = row
    if type(seq) is not int or type(repeat) is not int or type(admitted) is not int:
        raise TypeError("seq, repeat and admitted must be integers")
    q, r, d, x = str(seq), str(repeat), str(admitted), repr(float(reach))
    return (f"{len(q)}:{q}{len(at)}:{at}{len(analyst)}:{analyst}{len(databases)}:{databases}"
            f"{len(mechanism)}:{mechanism}{len(r)}:{r}{len(d)}:{d}{len(weights)}:{weights}{len(x)}:{x}"
            f"{len(answer)}:{answer}").encode()


def entry_hash(previous: str, row: tuple) -> str:
    """h_s of an entry's stored columns (:data:`ENTRY_COLUMNS`), chained to ``previous`` (h_{s-1})."""
    return hashlib.sha256(_ENTRY + previous.encode() + _canonical(row)).hexdigest()


def checkpoint_hash(at_entry: str, seq: int, sums: bytes) -> str:
    """c_s of the per-database sums after entry ``seq``, bound to that entry's hash."""
    return _digest(_CHECKPOINT, at_entry.encode(), int(seq).to_bytes(8, "big"), bytes(sums))


def encode_floats(values) -> list[float | str]:
    """Floats for a JSON column: infinities as the strings "inf" and "-inf" (JSON has none)."""
    return [float(v) if math.isfinite(v) else ("inf" if v > 0 else "-inf") for v in map(float, values)]


def _decode_floats(values: object, size: int | None, what: str, *, infinite: bool = False,
                   negative: bool = False) -> list[float]:
    """A JSON list of ``size`` finite numbers (``infinite``: "inf" and "-inf" too; ``negative``: below 0 too)."""
    if type(values) is not list or (size is not None and len(values) != size):
        raise ValueError(f"{what} is not a list of {size} numbers")
    out = []
    for v in values:
        if type(v) is float or type(v) is int:
            if not math.isfinite(v) or (v < 0 and not negative):
                raise ValueError(f"{what} holds {shown(v)}, not a finite number{'' if negative else ' >= 0'}")
            out.append(float(v))
        elif infinite and (v == "inf" or (negative and v == "-inf")):
            out.append(math.inf if v == "inf" else -math.inf)
        else:
            raise ValueError(f"{what} holds {shown(v)}, not a number")
    return out


def _agree(recorded: list[float], expected: tuple[float, ...]) -> bool:
    return len(recorded) == len(expected) and all(
        r == e or (math.isfinite(e) and math.isclose(r, e, rel_tol=RECOMPUTE_TOLERANCE, abs_tol=0.0))
        for r, e in zip(recorded, expected))


@dataclass(frozen=True)
class Record:
    """One entry, read back and validated."""

    seq: int
    admitted: bool
    members: NDArray[np.intp] | None  # None: every database
    weights: NDArray[np.float64]
    reach: float
    answer: dict[str, Any]
    hash: str


def parse_entry(row: tuple, *, n: int, components: int, admitted_before: int,
                expected_weights: Callable[[str, int], tuple[float, ...] | None]) -> Record:
    """Validate an entry's stored columns (:data:`ENTRY_COLUMNS` then the hash); ValueError says what is wrong.

    ``admitted_before`` is the number of admitted entries before it (its answer must count itself on top);
    ``expected_weights(mechanism, repeat)`` recomputes the weights from the recorded mechanism (None when the
    mechanism is not a valid guarantee for this ledger's filter). Pure Python on purpose: a few numbers per
    entry, and opening a ledger validates up to a checkpoint's worth of entries.
    """
    seq, at, analyst, databases, mechanism, repeat, admitted, weights, reach, answer, stored = row
    if not isinstance(at, str) or not isinstance(analyst, str):
        raise ValueError("time or analyst is not text")
    if type(admitted) is not int or admitted not in (0, 1):
        raise ValueError(f"admitted is {shown(admitted)}, not 0 or 1")
    if type(repeat) is not int or not 1 <= repeat <= 2**53:
        raise ValueError(f"repeat is {shown(repeat)}, not an integer in 1..2**53")
    try:
        where = json.loads(databases)
        recorded = json.loads(weights)
        said = json.loads(answer)
    except (TypeError, ValueError):
        raise ValueError("databases, weights or answer is not JSON") from None
    if where == "all":
        members = None
    else:
        if (type(where) is not list or not where or not all(type(i) is int and 0 <= i < n for i in where)
                or any(a >= b for a, b in zip(where, where[1:]))):
            raise ValueError(f"databases is not \"all\" or a sorted list of distinct indices in 0..{n - 1}")
        members = np.array(where, dtype=np.intp)
    w = _decode_floats(recorded, components, "weights", infinite=not admitted)
    if type(reach) not in (int, float) or not math.isfinite(reach) or reach < 0:
        raise ValueError(f"reach is {shown(reach)}, not a finite number >= 0")
    expected = expected_weights(mechanism, repeat)
    if expected is None:
        raise ValueError("mechanism is not a valid guarantee for this ledger's filter")
    if not _agree(w, expected):
        raise ValueError(f"weights {recorded} disagree with the mechanism {mechanism} x {repeat}")
    if not isinstance(said, dict):
        raise ValueError("answer is not a JSON object")
    try:
        total = said["admitted_total"]
        if said["admitted"] is not bool(admitted):
            raise ValueError("the answer's verdict disagrees with the admitted column")
        if not isinstance(total, int) or total != admitted_before + admitted:
            raise ValueError(f"the answer counts {shown(total)} admitted entries, the entries count "
                             f"{admitted_before + admitted}")
        for key in ("state_lower", "state_upper"):
            _decode_floats(said[key], components, key)
        for key in ("lower", "upper"):
            _decode_floats(said[key], components, key, infinite=True)
        _decode_floats(said["remaining"], components, "remaining", infinite=True, negative=True)
        worst, size = said["worst_set"], said["worst_set_size"]
        if (type(worst) is not list or not all(type(i) is int and 0 <= i < n for i in worst)
                or type(size) is not int or not len(worst) <= size <= n):
            raise ValueError("the answer's worst-case set is not a list of database indices")
        if not isinstance(said["reason"], str):
            raise ValueError("the answer's reason is not text")
    except KeyError as missing:
        raise ValueError(f"the answer has no {missing}") from None
    return Record(int(seq), bool(admitted), members, np.array(w), float(reach), said, stored)


def parse_sums(blob: object, components: int, n: int) -> NDArray[np.float64]:
    """A checkpoint's per-database sums: ``components x n`` float64 values >= 0, +inf allowed (a sum beyond the
    largest float: only ever on databases no allowed pair reaches); ValueError if not."""
    if not isinstance(blob, (bytes, bytearray, memoryview)) or len(blob) != components * n * 8:
        raise ValueError(f"its sums are not {components} x {n} float64 values")
    sums = np.frombuffer(bytes(blob), dtype="<f8").reshape(components, n).copy()
    if np.isnan(sums).any() or np.any(sums < 0):
        raise ValueError("its sums are not numbers >= 0")
    return sums

"""What counts as an integer and a number in gce's inputs, how a message shows a value, and how a tree of
input is walked: one definition for every reader.

Records (guarantees, constraints, reports read back from JSON) and file readers all refuse
``True`` where a count or a parameter is expected: Python's ``bool`` is a subclass of ``int``,
so ``isinstance(True, int)`` alone would let ``epsilon = true`` through a TOML file as 1.
Each reader keeps its own message (the field it names and the range it states); these
predicates are the one place that decides the type.

A renamed public name keeps working under its old name and warns, naming its replacement
(:func:`warn_renamed`, :func:`renamed_keywords` for a keyword): no public name is removed without it.

A message that echoes an input shows it through :func:`shown` (Python's, JSON's or TOML's spelling, cut
short: a value of a million elements, or a tree that contains itself, costs as much as its first few
elements), and a tree of input is read by one walk, :func:`fold_tree` (dp-accounting's events), or its lean
twin for plain data, :func:`walk_data` (a scenario file's tables, a ``--mechanism`` fragment): without
recursion, depth-limited (:data:`MAX_NESTING`, :data:`MAX_TABLE_NESTING`) and cycle-checked, a subtree met
twice read once, their errors naming the place (``event.events[3].noise_multiplier``).

Examples
--------
>>> is_integer(3), is_integer(True), is_integer(3.0)
(True, False, False)
>>> is_number(0.5), is_number(2), is_number(False), is_number("1")
(True, True, False, False)
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import numbers
import functools
import re
import warnings
from collections.abc import Callable, Generator, Iterable, Mapping
from types import GeneratorType
from typing import Any

__all__ = ["is_integer", "is_number", "shown", "fold_tree", "walk_data", "SHOWN_CHARACTERS", "MAX_NESTING",
           "MAX_TABLE_NESTING", "MAX_COUNT", "renamed_keywords", "warn_renamed"]


def is_integer(value: object) -> bool:
    """Whether ``value`` is an integer (Python or numpy), booleans excluded."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_number(value: object) -> bool:
    """Whether ``value`` is a real number (integer or float, Python or numpy), booleans excluded."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def as_float(value: object) -> float:
    """``float(value)`` for a real number, an integer beyond a double's range as infinity of its sign (``10**400``
    raises OverflowError in ``float``): the callers' own checks then refuse it as infinite, naming their field.

    >>> as_float(10**400), as_float(-10**400), as_float(3)
    (inf, -inf, 3.0)
    """
    try:
        return float(value)  # type: ignore[arg-type]
    except OverflowError:
        return math.inf if value > 0 else -math.inf  # type: ignore[operator]


# ---------------------------------------------------------------------------
# Values in messages: one way to shorten them

#: About how many characters of a value a message shows: containers stop adding items past it, strings are
#: cut at it, and the whole is cut at twice it (ending in ``...``).
SHOWN_CHARACTERS = 60
#: Containers and records nested deeper than this are shown as ``[...]``, ``{...}``, ``Name(...)``.
SHOWN_DEPTH = 3
#: Integers with more bits than this are described by their size, not written out (Python refuses to write
#: one of more than 4,300 digits at all).
SHOWN_BITS = 128
#: The spellings :func:`shown` writes a value in: Python's ``repr``, JSON (a report's fields), TOML (a scenario
#: file's values).
SPELLINGS = ("python", "json", "toml")

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_TOML_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def shown(value: object, limit: int = SHOWN_CHARACTERS, *, spelling: str = "python") -> str:
    """``value`` for an error message: written as Python (``repr``), JSON or TOML writes it, cut short.

    The one place messages shorten what they echo: a value of a million elements costs as much as its first
    few (containers stop adding items once ``limit`` characters are used, strings are cut at ``limit``, the
    whole at ``2 * limit``, each cut ending in ``...``); containers and records (dataclasses, attrs classes such
    as dp-accounting's events) nested deeper than :data:`SHOWN_DEPTH` are elided, so a tree that contains
    itself, or one 10,000 levels deep, is shown without recursion; integers wider than :data:`SHOWN_BITS` bits
    are described by their size; control characters are escaped in every spelling, so nothing an input holds
    reaches a terminal as an escape sequence. Anything else is its own ``repr``, cut (or ``<type>`` if that
    fails). Short values are written exactly as ``repr`` (``json.dumps``, TOML) writes them.

    Parameters
    ----------
    value : object
        What to show.
    limit : int
        About how many characters to show (:data:`SHOWN_CHARACTERS`).
    spelling : str
        ``"python"`` (the default: ``True``, ``None``, ``'x'``), ``"json"`` (``true``, ``null``, ``"x"``,
        ``Infinity``) or ``"toml"`` (``true``, ``"x"``, ``inf``; :func:`gce.files.tables.toml_value`).

    Examples
    --------
    >>> shown("abc"), shown([1.5, None, True]), shown({"a": (1,)})
    ("'abc'", '[1.5, None, True]', "{'a': (1,)}")
    >>> shown(list(range(10**6)))
    '[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, ...]'
    >>> shown("x" * 10**6, 10)
    "'xxxxxxxxxx'..."
    >>> shown(2**1000), shown(float("inf"), spelling="json"), shown(None, spelling="json")
    ('<an integer of 1001 bits>', 'Infinity', 'null')
    >>> nested = []
    >>> nested.append(nested)
    >>> shown(nested)
    '[[[[...]]]]'
    """
    if spelling not in SPELLINGS:
        raise ValueError(f"spelling: must be one of {', '.join(SPELLINGS)}, got {spelling!r}")
    text = _render(value, limit, 0, spelling)
    return text if len(text) <= 2 * limit else text[:2 * limit] + "..."


def _render(value: object, budget: int, depth: int, spelling: str) -> str:
    """``value`` in ``spelling``, stopping early once longer than ``budget`` characters."""
    if value is None and spelling != "toml":
        return "null" if spelling == "json" else "None"
    if isinstance(value, bool):
        return ("True" if value else "False") if spelling == "python" else ("true" if value else "false")
    if type(value) is int or (isinstance(value, int) and spelling != "python"):
        value = int(value)
        return f"<an integer of {value.bit_length()} bits>" if value.bit_length() > SHOWN_BITS else str(value)
    if type(value) is float or (isinstance(value, float) and spelling != "python"):
        value = float(value)
        if math.isfinite(value):
            return repr(value)
        if spelling == "json":
            return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, str):
        return _string(value, budget, spelling)
    if spelling == "toml" and isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if spelling == "python":
        fields = _record_fields(value)
        if fields is not None:
            return _record(value, fields, budget, depth)
    if isinstance(value, (list, tuple)) or (spelling != "toml" and isinstance(value, (set, frozenset))):
        return _sequence(value, budget, depth, spelling)
    if isinstance(value, Mapping):
        return _table(value, budget, depth, spelling)
    if spelling == "json":
        return f"<{type(value).__name__}>"
    try:
        text = repr(value)
    except Exception:  # (a RecursionError too: a record of its own kind whose repr has no end)
        return f"<{type(value).__name__}>"
    if spelling == "python":
        return text[:budget] + "..." if len(text) > budget else text
    return _toml_string(text, budget)[1:-1]


def _string(text: str, budget: int, spelling: str) -> str:
    """A string literal of ``spelling``; one cut short ends in ``...`` after its closing quote."""
    cut = len(text) > budget
    head = text[:budget] if cut else text
    if spelling == "toml":
        return _toml_string(text, budget)
    if spelling == "json":
        import json

        return json.dumps(head, ensure_ascii=True) + ("..." if cut else "")
    return repr(head) + ("..." if cut else "")


def _toml_escaped(char: str) -> str:
    """One character of a TOML basic string: escapes for quotes, backslash and every control character."""
    if char in _TOML_ESCAPES:
        return _TOML_ESCAPES[char]
    code = ord(char)
    if code < 0x20 or 0x7F <= code <= 0x9F or 0x2028 <= code <= 0x2029 or 0x202A <= code <= 0x202E \
            or 0x2066 <= code <= 0x2069:
        return f"\\u{code:04X}"
    return char


def _toml_string(text: str, budget: int) -> str:
    """A TOML basic string; one cut short ends in ``"...`` (after its closing quote)."""
    out, used = ['"'], 2
    for char in text:
        piece = _toml_escaped(char)
        used += len(piece)
        if used > budget:
            return "".join(out) + '"...'
        out.append(piece)
    return "".join(out) + '"'


def _items(parts: list[str], items: Iterable[object], budget: int, used: int, show: Callable[[object, int], str]
           ) -> None:
    for item in items:
        if used > budget:
            parts.append("...")
            break
        parts.append(show(item, budget - used))
        used += len(parts[-1]) + 2


def _sequence(items: Any, budget: int, depth: int, spelling: str) -> str:
    kind = type(items)
    if spelling != "python" or isinstance(items, list):
        opening, closing = "[", "]"
    elif isinstance(items, tuple):
        opening, closing = "(", ",)" if len(items) == 1 else ")"
    elif not items:
        return f"{'set' if isinstance(items, set) else 'frozenset'}()"
    else:
        opening, closing = ("{", "}") if isinstance(items, set) else ("frozenset({", "})")
    if spelling == "python" and kind not in (list, tuple, set, frozenset):
        opening = f"{kind.__name__}({opening}"
        closing += ")"
    if depth >= SHOWN_DEPTH and items:
        return f"{opening}...{closing.lstrip(',')}"
    parts: list[str] = []
    _items(parts, items, budget, len(opening) + len(closing),
           lambda item, left: _render(item, left, depth + 1, spelling))
    return opening + ", ".join(parts) + closing


def _key(key: object, spelling: str) -> str:
    if spelling == "toml":
        text = key if isinstance(key, str) else str(key)
        return text if _BARE_KEY.fullmatch(text) else _toml_string(text, SHOWN_CHARACTERS)
    if spelling == "json":
        return _string(key if isinstance(key, str) else str(key), SHOWN_CHARACTERS, "json")
    return _render(key, SHOWN_CHARACTERS, SHOWN_DEPTH, "python")


def _table(table: Mapping[Any, object], budget: int, depth: int, spelling: str) -> str:
    opening, between, closing = ("{ ", " = ", " }") if spelling == "toml" else ("{", ": ", "}")
    if not table:
        return "{}"
    if depth >= SHOWN_DEPTH:
        return "{...}"
    parts: list[str] = []
    _items(parts, table.items(), budget, len(opening) + len(closing),
           lambda item, left: f"{_key(item[0], spelling)}{between}{_render(item[1], left, depth + 1, spelling)}")
    return opening + ", ".join(parts) + closing


def _record_fields(value: object) -> tuple[str, ...] | None:
    """The fields a dataclass or an attrs class writes in its generated ``repr``; None for anything else
    (a class with a ``repr`` of its own is shown by it)."""
    cls = type(value)
    method = getattr(getattr(cls, "__repr__", None), "__code__", None)
    filename = getattr(method, "co_filename", "")
    attributes = getattr(cls, "__attrs_attrs__", None)
    if attributes is not None and filename.startswith("<attrs generated"):
        return tuple(a.name for a in attributes if a.repr)
    if dataclasses.is_dataclass(cls) and filename.endswith("dataclasses.py"):
        return tuple(f.name for f in dataclasses.fields(cls) if f.repr)
    if isinstance(value, tuple) and isinstance(getattr(cls, "_fields", None), tuple):  # a named tuple
        return cls._fields
    return None


def _record(value: object, fields: tuple[str, ...], budget: int, depth: int) -> str:
    name = type(value).__qualname__
    if depth >= SHOWN_DEPTH and fields:
        return f"{name}(...)"
    parts: list[str] = []
    _items(parts, fields, budget, len(name) + 2,
           lambda field, left: f"{field}={_render(getattr(value, field, None), left, depth + 1, 'python')}")
    return f"{name}(" + ", ".join(parts) + ")"


# ---------------------------------------------------------------------------
# Recursive inputs: one walk, without recursion

#: How deeply a tree of Python objects given to gce may nest: dp-accounting's events (a ``ComposedDpEvent``
#: of ``SelfComposedDpEvent`` of ``PoissonSampledDpEvent`` of ``GaussianDpEvent`` nests 3 deep). Deeper, the
#: tree is refused naming the place (``event.events[0].event...: nested deeper than 100``): gce's own walk
#: needs no limit (:func:`fold_tree` does not recurse), but every other reader of such a tree recurses, and
#: dp-accounting's own do so steeply: two ``ComposedDpEvent`` trees 256 levels deep cannot even be compared
#: (``==``, which its accountants' ledger does) without a ``RecursionError``; 100 leaves room for the caller's
#: own stack.
MAX_NESTING = 100
#: The most times a tree of events may run one mechanism, counts multiplied down the tree (as a scenario's
#: ``repeat``: every integer up to 2**53 is exact as a double, which the engines count in).
MAX_COUNT = 2**53
#: How deeply tables and arrays may nest in a scenario file and a ``--mechanism`` fragment, and so
#: mechanisms within mechanisms (``Subsampled(rate, Subsampled(...))``): the deepest real scenario nests
#: about 6 levels (:data:`gce.files.scenario.MAX_DEPTH`).
MAX_TABLE_NESTING = 32
#: A place in a tree longer than this is shown with its middle elided: ``event.events[0].event<240 levels>
#: .event.events[3]`` (the whole path of a node 100 levels down is some 800 characters).
PATH_CHARACTERS = 160
_PATH_HEAD = 60
_PATH_TAIL = 80


class _Frame:
    """A node whose children are being read: its reader (suspended), children, their values so far."""

    __slots__ = ("node", "key", "reader", "children", "index", "values", "height", "depth")

    def __init__(self, node: object, reader: Generator[Any, Any, Any], children: list[tuple[object, str]],
                 depth: int) -> None:
        self.node, self.key, self.reader, self.children, self.depth = node, id(node), reader, children, depth
        self.index, self.values, self.height = 0, [], 1


class _Places:
    """The place of each node on the walk's current path, as a field name: the root's, then each child's
    suffix (``.event``, ``.events[3]``, ``[0]``), the middle elided once longer than :data:`PATH_CHARACTERS`."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.suffixes: list[str] = []
        self.lengths = [len(root)]  # the whole path's length with the first i suffixes
        self.places = [root]  # the place at each depth of the current path

    def enter(self, depth: int, suffix: str) -> str:
        """The place of a child at ``depth`` (>= 1) with ``suffix`` below the node at ``depth - 1``."""
        if len(self.suffixes) >= depth:
            del self.suffixes[depth - 1:], self.lengths[depth:], self.places[depth:]
        if depth == 1 and not self.root and suffix[:1] == ".":
            suffix = suffix[1:]
        self.suffixes.append(suffix)
        length = self.lengths[-1] + len(suffix)
        self.lengths.append(length)
        place = self.places[-1] + suffix if length <= PATH_CHARACTERS else self._elided(depth)
        self.places.append(place)
        return place

    def _elided(self, depth: int) -> str:
        head = 0
        while head < depth and self.lengths[head + 1] <= _PATH_HEAD:
            head += 1
        first, size = depth, 0
        while first > head + 1 and size + len(self.suffixes[first - 1]) <= _PATH_TAIL:
            first -= 1
            size += len(self.suffixes[first])
        return f"{self.root}{''.join(self.suffixes[:head])}<{first - head} levels>{''.join(self.suffixes[first:])}"


def fold_tree(root: object, field: str, read: Callable[[object, str], Any], *, limit: int = MAX_NESTING,
              error: Callable[[str, str], Exception] | None = None, too_deep: str | None = None) -> Any:
    """The value of a tree of Python objects, read node by node without recursion.

    ``read(node, field)`` gives a node's value; a node with children gives instead a generator that checks the
    node's own fields, yields once the list of its children as ``(child, suffix)`` pairs (``suffix`` is what the
    child adds to the place: ``".event"``, ``".events[3]"``, ``"[0]"``), receives their values (a list in the
    same order) and returns the node's value. Everything it raises names ``field``, the node's place (the root's
    ``field`` and the suffixes below it, its middle elided past :data:`PATH_CHARACTERS`).

    The walk is depth-limited and cycle-checked: a node with children more than ``limit`` levels down is
    refused (``too_deep``, default ``nested deeper than <limit>``), and so is a node inside itself. A subtree
    met twice (the same object at two places: ``ComposedDpEvent([e, e])``) is read once, so a tree of 60
    levels of ``[e, e]`` costs 60 reads, not 2**60.

    Raises
    ------
    InvalidParameterError
        (or ``error(field, message)``): too deep, or a node inside itself; whatever ``read`` raises.

    Examples
    --------
    >>> def total(node, field):  # a number, or a list of numbers and lists
    ...     if not isinstance(node, list):
    ...         return node
    ...     values = yield [(item, f"[{i}]") for i, item in enumerate(node)]
    ...     return sum(values)
    >>> deep = 1
    >>> for _ in range(100_000):
    ...     deep = [deep, 1]
    >>> fold_tree(deep, "x", total, limit=10**6)
    100001
    >>> fold_tree(deep, "x", total)
    Traceback (most recent call last):
    ...
    gce.errors.InvalidParameterError: x[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]<55 levels>[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]: nested deeper than 100
    >>> loop = [1]
    >>> loop.append(loop)
    >>> fold_tree(loop, "x", total)
    Traceback (most recent call last):
    ...
    gce.errors.InvalidParameterError: x[1]: contains itself (it is x again): nested deeper than 100
    """
    from .errors import InvalidParameterError

    make = error or InvalidParameterError
    deep = too_deep or f"nested deeper than {limit}"
    done: dict[int, tuple[Any, int, object]] = {}  # id -> (value, height, node): nodes with children only
    on_path: dict[int, str] = {}  # id -> place, for the nodes with children being read
    places = _Places(field)
    stack: list[_Frame] = []
    node, depth, where = root, 0, field
    while True:
        # read ``node`` (at ``depth``, its place ``where``): its value now, or its frame pushed
        key = id(node)
        known = done.get(key)
        pending = False
        if known is not None:
            value, height = known[0], known[1]
            if depth + height > limit:
                raise make(where, deep)
        elif key in on_path:
            raise make(where, f"contains itself (it is {on_path[key] or 'the top level'} again): {deep}")
        else:
            value, height = read(node, where), 0
            if type(value) is GeneratorType:
                try:
                    children = next(value)
                except StopIteration as stop:
                    value = stop.value
                else:
                    if depth >= limit:
                        value.close()
                        raise make(where, deep)
                    frame = _Frame(node, value, list(children), depth)
                    if frame.children:
                        on_path[key] = where
                        stack.append(frame)
                        pending = True
                    else:
                        value, height = _finished(frame), 1
                        done[key] = (value, height, node)
        # a value known: to its parent, and up while the parents are complete
        while not pending:
            if not stack:
                return value
            frame = stack[-1]
            frame.values.append(value)
            if height + 1 > frame.height:
                frame.height = height + 1
            if frame.index < len(frame.children):
                break
            stack.pop()
            del on_path[frame.key]
            value, height = _finished(frame), frame.height
            done[frame.key] = (value, height, frame.node)
        frame = stack[-1]
        node, suffix = frame.children[frame.index]
        frame.index += 1
        depth = frame.depth + 1
        where = places.enter(depth, suffix)


def walk_data(root: object, field: str, problem: Callable[[object], str | None], *, limit: int,
              error: Callable[[str, str], Exception] | None = None, too_deep: str | None = None,
              key_suffix: Callable[[object], str] = lambda key: f".{key}") -> None:
    """Check every value of a tree of plain data (mappings, lists and tuples: a parsed file), without
    recursion: :func:`fold_tree`'s lean twin, for trees of millions of values that compute nothing.

    ``problem(value)`` says what is wrong with a value that is not a container (None: nothing); strings,
    floats, booleans and integers of 64 bits are not even looked at. Containers nested more than ``limit``
    levels deep are refused (``too_deep``), and so is a container inside itself; a container met at several
    places is walked again only where it sits deeper than before (at most ``limit`` times). Places are
    rebuilt only for an error: the root's ``field``, ``[i]`` for an item, ``key_suffix(key)`` for a key.

    Raises
    ------
    InvalidParameterError
        (or ``error(place, message)``).

    Examples
    --------
    >>> walk_data({"a": [1, [2, None]]}, "", lambda v: None if v is not None else "must not be None", limit=8)
    Traceback (most recent call last):
    ...
    gce.errors.InvalidParameterError: a[1][1]: must not be None
    """
    from .errors import InvalidParameterError

    make = error or InvalidParameterError
    deep = too_deep or f"nested deeper than {limit}"
    low, high = -(2**63), 2**63 - 1
    parents: list[tuple[int, object, bool]] = []  # each container's (parent record, key, in a mapping)
    on_path: dict[int, int] = {}  # id -> its record in parents
    passed: dict[int, int] = {}  # id -> the deepest depth its subtree passed at
    exit_mark = object()
    stack: list[tuple[object, int, int, object, bool]] = [(root, 0, -1, None, False)]

    def place(parent: int, key: object, mapped: bool) -> str:
        suffixes = []
        while parent >= 0:
            suffixes.append(key_suffix(key) if mapped else f"[{key}]")
            parent, key, mapped = parents[parent]
        places = _Places(field)
        where = field
        for depth, suffix in enumerate(reversed(suffixes), 1):
            where = places.enter(depth, suffix)
        return where

    while stack:
        value, depth, parent, key, mapped = stack.pop()
        if value is exit_mark:  # (depth: the container's; parent: its record; key: its id)
            del on_path[key]
            if passed.get(key, -1) < depth:
                passed[key] = depth
            continue
        kind = type(value)
        is_map = kind is dict or (kind is not list and kind is not tuple and isinstance(value, Mapping))
        if is_map or kind is list or kind is tuple or isinstance(value, (list, tuple)):
            ident = id(value)
            if ident in on_path:
                ancestor = parents[on_path[ident]]
                raise make(place(parent, key, mapped), f"contains itself (it is "
                                                       f"{place(*ancestor) or 'the top level'} again): {deep}")
            if passed.get(ident, -1) >= depth:
                continue
            if depth >= limit:
                raise make(place(parent, key, mapped), deep)
            children = [(k, item) for k, item in (value.items() if is_map else enumerate(value))
                        if not (type(item) is str or type(item) is float or type(item) is bool
                                or (type(item) is int and low <= item <= high))]
            if not children:  # (nothing inside to look at: no record, nothing can lead back to it)
                continue
            record = len(parents)
            parents.append((parent, key, mapped))
            on_path[ident] = record
            stack.append((exit_mark, depth, record, ident, False))
            for k, item in children:
                stack.append((item, depth + 1, record, k, is_map))
        else:
            message = problem(value)
            if message is not None:
                raise make(place(parent, key, mapped), message)


def _finished(frame: _Frame) -> Any:
    """The value of a node whose children are all read: its reader resumed with their values."""
    try:
        frame.reader.send(frame.values)
    except StopIteration as stop:
        return stop.value
    raise RuntimeError("fold_tree: a reader yields its children once")




# ---------------------------------------------------------------------------
# Renamed public names: the old name keeps working and warns, naming its replacement


def warn_renamed(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` is deprecated and ``new`` replaces it (a :class:`DeprecationWarning`).

    No public name is removed without this step (the habit of NumPy and SciPy, whose deprecations name the
    replacement and last at least two releases).
    """
    warnings.warn(f"{old} is deprecated; use {new}", DeprecationWarning, stacklevel=stacklevel)


def renamed_keywords(**renamed: str) -> Callable:
    """A decorator: each keyword ``old=new`` still accepted under its old name, with a warning naming the new.

    Giving both names is an :class:`~gce.errors.InvalidParameterError` naming the new one. The wrapped
    function keeps its signature (``inspect.signature`` and the documentation show the new names only).

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

    def decorate(function: Callable) -> Callable:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for old, new in renamed.items():
                if old in kwargs:
                    if new in kwargs:
                        from .errors import InvalidParameterError

                        raise InvalidParameterError(new, f"given twice: as {new}= and as its deprecated name {old}=")
                    warn_renamed(f"{function.__name__}({old}=...)", f"{function.__name__}({new}=...)")
                    kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        return wrapper

    return decorate

"""Author patterns run on untrusted text at a bounded cost: one place for every capability
that matches a declared regular expression against what a user says (relation spec
``patterns``, lore ``patterns``; appraisal patterns the same way).

A backtracking pattern such as ``(a+)+$`` takes exponential time on a message that almost
matches, and the standard library's ``re`` cannot be interrupted: one message would stop the
process. So patterns run on the ``regex`` package (the same syntax as ``re``, and more),
whose every call takes a ``timeout``:

- :class:`Budget` is the time one message's patterns have together (:data:`BUDGET_MS`),
  counted in the CPU time of the thread that searches — what a backtracking pattern
  burns — so a busy machine that keeps the process waiting does not make a message's
  patterns take nothing (nor does a garbage collection meanwhile: its time is given
  back); each search gets at most :data:`PATTERN_MS` of what is left (of its own
  searching: one that timed out while it waited for another thread is tried again). A
  pattern that runs out took nothing from that message — never an exception — is skipped for the rest of it,
  and is logged once (a WARNING naming its owner and the pattern); the message's other
  patterns run on in what is left.
- :func:`pattern_problem` is the check ``buddy validate`` makes: the pattern compiles
  with the engine that runs it, and it has none of the nestings that surely backtrack
  without bound — an unbounded repeat directly inside another (``(a+)+``, ``(a*)*``,
  ``(\\S+\\s*)+``) or a repeated choice between alternatives that match the same text
  (``(a|a)*``, ``(.|x)+``). Only what is certain is refused; the timeout bounds the rest.

A pattern may name a word list of its file (``words:``) as ``{{name}}``:
:func:`expanded` puts the list in as an alternation of its words, escaped, longest first —
a long vocabulary stays a reviewable YAML list instead of a regular expression nobody reads.

``regex`` is imported on first use, so a buddy without patterns never pays for it.
"""

from __future__ import annotations

import gc
import importlib
import logging
import re
import threading
import time
import warnings
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import regex

__all__ = [
    "BUDGET_MS",
    "PATTERN_MS",
    "WORD_LIST_PATTERN",
    "Budget",
    "compiled",
    "either",
    "expanded",
    "joinable",
    "joined",
    "pattern_problem",
    "placeholders",
]

#: The time all the patterns of one message (one lore scan) take together, at most.
BUDGET_MS = 20.0
#: The time one pattern may take on one text, at most (within what is left of the budget).
PATTERN_MS = 5.0
#: Patterns already warned about, kept at most (then forgotten, and warned about again).
_WARNED_MAX = 4096

#: A word list's name, as its file's ``words:`` declares it and a pattern writes ``{{name}}``.
WORD_LIST_PATTERN = r"^[a-z][a-z0-9_]{0,31}$"
_PLACEHOLDER = re.compile(r"\{\{([a-z][a-z0-9_]{0,31})\}\}")
_NAMED = re.compile(r"\(\?P<[A-Za-z_][A-Za-z0-9_]*>")
# What a pattern cannot be joined with others by: a reference to a group (by number it
# would point at another pattern's group once joined; by name, at a group made plain), a
# conditional on a group, or a flag set for the whole expression (verbose mode would read
# the other patterns' spaces and ``#`` anew).
_UNJOINABLE = re.compile(r"\\(?:[1-9]|g)|\(\?P=|\(\?\(|\(\?[a-zA-Z]+\)|\(\?<[A-Za-z_]")

log = logging.getLogger("buddy.capabilities.memory.patterns")
_warned: set[tuple[str, str, str]] = set()
#: Patterns a budget has searched with, compiled: looked up before the clock is read, so
#: a pattern met before costs a message one clock reading, not three.
_ready: dict[tuple[str, bool], regex.Pattern[str]] = {}
_READY_MAX = 1024


def _engine() -> Any:
    import regex

    return regex


@lru_cache(maxsize=1024)
def compiled(pattern: str, ignore_case: bool = False) -> regex.Pattern[str]:
    """``pattern`` compiled by the engine that runs it (``regex``, ``re``'s syntax).

    Raises:
        regex.error: It is not a regular expression.
    """
    engine = _engine()
    result: regex.Pattern[str] = engine.compile(pattern, engine.IGNORECASE if ignore_case else 0)
    return result


def joinable(pattern: str) -> bool:
    """Whether ``pattern`` can be joined with others (:func:`either`): it refers to no
    group, has no conditional and sets no flag for the whole expression."""
    return _UNJOINABLE.search(pattern) is None


def joined(patterns: Sequence[str]) -> tuple[str | None, tuple[bool, ...]]:
    """The :func:`joinable` ones of ``patterns`` in one regular expression (:func:`either`)
    and, for each of ``patterns``, whether it is in it (none is when the expression is
    ``None``)."""
    inside = tuple(joinable(p) for p in patterns)
    parts = [
        f"(?:{_NAMED.sub('(?:', p)})" for p, well in zip(patterns, inside, strict=True) if well
    ]
    if len(parts) < 2:
        return None, (False,) * len(patterns)
    return "|".join(parts), inside


def either(patterns: Sequence[str]) -> str | None:
    """The :func:`joinable` ones of ``patterns`` in one regular expression, found in a
    text wherever one of them is: searched first, it spares a text none of them is in a
    search for each (its named groups are plain groups: it only says whether). ``None``
    when fewer than two are joinable."""
    return joined(patterns)[0]


def placeholders(pattern: str) -> list[str]:
    """The word lists ``pattern`` names (``{{name}}``), in order."""
    return _PLACEHOLDER.findall(pattern)


def expanded(pattern: str, words: Mapping[str, Sequence[str]]) -> str:
    """``pattern`` with each ``{{name}}`` replaced by ``(?:word|word…)``: the list's words
    escaped, longest first (so a longer word wins over its own prefix).

    Raises:
        KeyError: ``pattern`` names a list ``words`` does not have.
    """

    def alternation(found: re.Match[str]) -> str:
        listed = sorted(set(words[found.group(1)]), key=lambda w: (-len(w), w))
        return "(?:" + "|".join(re.escape(w) for w in listed) + ")"

    return _PLACEHOLDER.sub(alternation, pattern)


def _warn(owner: str, pattern: str, why: str) -> None:
    key = (owner, pattern, why)
    if key in _warned:
        return
    if len(_warned) >= _WARNED_MAX:
        _warned.clear()
    _warned.add(key)
    log.warning("%s: the pattern %r took nothing from a message: %s", owner, pattern, why)


class _Collections:
    """The CPU time the garbage collector has taken in this process so far (``total``): a
    collection that runs while a message's patterns are searched is the process's, not the
    patterns' — a large heap's can take tens of milliseconds, which would spend the budget
    and make the message's patterns take nothing, by chance."""

    __slots__ = ("began", "total")

    def __init__(self) -> None:
        self.began: dict[int, float] = {}  # thread → when its collection under way began
        self.total = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self.began[threading.get_ident()] = time.thread_time()
        elif (began := self.began.pop(threading.get_ident(), None)) is not None:
            self.total += time.thread_time() - began


_collections = _Collections()
gc.callbacks.append(_collections)


class Budget:
    """The time one message's patterns have together; :meth:`search` spends it. The
    garbage collector's time while they run is not theirs, and is given back.

    Args:
        ms: The budget (:data:`BUDGET_MS`).
    """

    __slots__ = ("_collected", "_deadline", "_stopped")

    def __init__(self, ms: float = BUDGET_MS) -> None:
        self._deadline = time.thread_time() + ms / 1000
        self._collected = _collections.total
        self._stopped: set[tuple[str, bool]] = set()

    def stopped(self, pattern: str, ignore_case: bool = False) -> bool:
        """Whether ``pattern`` ran out of time in this budget (or was no expression): its
        ``None`` from :meth:`search` says nothing about the text."""
        return (pattern, ignore_case) in self._stopped

    def may_find(self, joined: str | None, text: str, *, owner: str) -> bool:
        """Whether one of the patterns ``joined`` joins (:func:`either`) may be found in
        ``text``: ``joined`` is, or ran out of time (then each is to be searched), or is
        ``None`` (none were joined)."""
        if joined is None or self.search(joined, text, owner=owner) is not None:
            return True
        return self.stopped(joined)

    def search(
        self, pattern: str, text: str, *, owner: str, ignore_case: bool = False
    ) -> regex.Match[str] | None:
        """``pattern``'s first match in ``text``, or ``None``: no match, or it ran out of
        time (then it is skipped for the rest of this budget, and logged once).

        Args:
            owner: What declared the pattern, for the log (``relation nickname``,
                ``lore book/entry``).
        """
        key = (pattern, ignore_case)
        if key in self._stopped:
            return None
        try:
            found = _ready.get(key)
            if found is None:
                # Compiled once per process (the first message that meets it): not this
                # message's time, so the budget is given it back.
                started = time.thread_time()
                found = compiled(pattern, ignore_case)
                self._deadline += time.thread_time() - started
                if len(_ready) >= _READY_MAX:
                    _ready.clear()
                _ready[key] = found
            now = time.thread_time()
            left = self._deadline - (now - (_collections.total - self._collected))
            if left <= 0:
                self._stopped.add((pattern, ignore_case))
                _warn(owner, pattern, f"the message's {BUDGET_MS:g} ms for patterns was spent")
                return None
            return _search(found, text, min(left, PATTERN_MS / 1000), now)
        except TimeoutError:
            self._stopped.add((pattern, ignore_case))
            _warn(
                owner,
                pattern,
                f"stopped after {PATTERN_MS:g} ms (it backtracks; rewrite it, docs/companion.md)",
            )
        except _engine().error as exc:  # compiled before this engine checked it
            self._stopped.add((pattern, ignore_case))
            _warn(owner, pattern, f"not a regular expression: {exc}")
        return None


#: How many times a search that timed out while it mostly waited is tried again.
_ATTEMPTS = 3


def _search(
    found: regex.Pattern[str], text: str, limit: float, began: float
) -> regex.Match[str] | None:
    """``found.search`` within ``limit`` seconds of this thread's own searching, from
    ``began`` (the thread's CPU time, read just before): the engine's timeout also runs
    while the thread waits for the interpreter (another thread holds it), so a search that
    timed out having searched for less than half of ``limit`` is tried again, a few times,
    before it counts as one that backtracks.

    Raises:
        TimeoutError: It searched for ``limit`` (or could not get to, :data:`_ATTEMPTS` times).
    """
    for _ in range(_ATTEMPTS - 1):
        try:
            return found.search(text, timeout=limit)
        except TimeoutError:
            if time.thread_time() - began >= limit / 2:
                raise
        began = time.thread_time()
    return found.search(text, timeout=limit)


# ------------------------------------------------------------------ the validate check

_NESTED = (
    "this pattern can backtrack without bound: a repeat (`+`, `*`, `{n,}`) directly inside "
    "another, so a long message that almost matches is tried in exponentially many ways; "
    "rewrite it with one repeat (`(a+)+` → `a+`, `(\\S+\\s*)+` → `\\S+(?:\\s+\\S+)*`), or "
    "make the inner one possessive (`a++`) or atomic (`(?>a+)`)"
)
_OVERLAP = (
    "this pattern can backtrack without bound: a repeated choice whose alternatives match "
    "the same text (`(a|a)*`, `(.|x)+`), so a long message that almost matches is tried in "
    "exponentially many ways; rewrite it so no two alternatives match the same characters "
    "(`(a|a)*` → `a*`, `(.|x)+` → `.+`)"
)


def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot be a pattern, or ``None``: it does not compile, or it nests
    repeats so that it surely backtracks without bound (the message has the rewrite)."""
    try:
        compiled(pattern)
    except _engine().error as exc:
        return f"not a regular expression: {exc}"
    parser: Any = importlib.import_module("re._parser")
    # A name given to two groups (「(?P<item>…)和(?P<item>…)」, which `regex` allows) is
    # checked as two unnamed groups: the same nesting, the same backtracking.
    for text in (pattern, _NAMED.sub("(", pattern)):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = parser.parse(text)
        except Exception:
            continue
        return _unbounded_problem(tree.data, parser.MAXREPEAT)
    return None  # syntax only `regex` has: the timeout alone bounds it


def _op(item: tuple[Any, Any]) -> str:
    return str(item[0])


def _flat(items: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """``items`` with every group replaced by what it holds (a sequence is one sequence)."""
    out: list[tuple[Any, Any]] = []
    for item in items:
        if _op(item) == "SUBPATTERN":
            out.extend(_flat(item[1][3].data))
        else:
            out.append(item)
    return out


def _empty(item: tuple[Any, Any]) -> bool:
    """Whether ``item`` matches the empty string whatever is around it."""
    op, av = item
    if str(op) in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        return bool(av[0] == 0) or all(_empty(i) for i in _flat(av[2].data))
    if str(op) == "BRANCH":
        return any(all(_empty(i) for i in _flat(alt.data)) for alt in av[1])
    if str(op) == "ATOMIC_GROUP":
        return all(_empty(i) for i in _flat(av.data))
    return False  # a character, or a zero-width test that may fail (`\b`, lookaround)


_CHARACTERS = frozenset({"LITERAL", "NOT_LITERAL", "ANY", "IN"})


def _consumes(value: Any) -> bool:
    """Whether ``value`` (items, or one item) holds a character to match."""
    shape = _shape(value)
    stack = [shape]
    while stack:
        top = stack.pop()
        if isinstance(top, tuple):
            stack.extend(top)
        elif top in _CHARACTERS:
            return True
    return False


def _shape(value: Any) -> Any:
    if hasattr(value, "data"):
        return ("sub", _shape(value.data))
    if isinstance(value, tuple | list):
        return tuple(_shape(v) for v in value)
    return str(value)


def _one_character(items: list[tuple[Any, Any]]) -> str | None:
    """``any`` (`.`), ``some`` (a character other than a line break, surely), or ``None``."""
    if len(items) != 1:
        return None
    op, av = items[0]
    if str(op) == "ANY":
        return "any"
    if str(op) == "LITERAL" and av != ord("\n"):
        return "some"
    if str(op) == "IN" and not any(str(o) == "NEGATE" for o, _ in av):
        lone_newline = len(av) == 1 and str(av[0][0]) == "LITERAL" and av[0][1] == ord("\n")
        return None if lone_newline else "some"
    return None


def _ambiguous(body: list[tuple[Any, Any]], unbounded: int) -> str | None:
    """Why the body of an unbounded repeat surely matches one text in many ways."""
    if not _consumes(body):
        return None  # repeats nothing (the engine stops an empty iteration)
    for index, (op, av) in enumerate(body):
        repeat = str(op) in ("MAX_REPEAT", "MIN_REPEAT") and av[1] == unbounded
        repeat = repeat and _consumes(av[2].data)
        if repeat and all(_empty(i) for j, i in enumerate(body) if j != index):
            return _NESTED  # (a+)+: "aa" is one iteration or two
        if str(op) == "BRANCH":
            alternatives = [_flat(alt.data) for alt in av[1]]
            if len(body) == 1 and any(
                _ambiguous(alt, unbounded) == _NESTED for alt in alternatives if alt
            ):
                return _NESTED  # (a+|b)+
            shapes = [_shape(alt) for alt in alternatives]
            if len(set(shapes)) < len(shapes):
                return _OVERLAP  # (a|a)*: the parser keeps `a` and two empty alternatives
            kinds = [_one_character(alt) for alt in alternatives]
            if "any" in kinds and sum(k is not None for k in kinds) > 1:
                return _OVERLAP  # (.|x)+
    return None


def _unbounded_problem(items: list[tuple[Any, Any]], unbounded: int) -> str | None:
    for op, av in items:
        name = str(op)
        if name in ("MAX_REPEAT", "MIN_REPEAT"):
            if av[1] == unbounded:
                problem = _ambiguous(_flat(av[2].data), unbounded)
                if problem is not None:
                    return problem
            inner = [av[2]]
        elif name == "POSSESSIVE_REPEAT":
            inner = [av[2]]
        elif name == "SUBPATTERN":
            inner = [av[3]]
        elif name == "BRANCH":
            inner = list(av[1])
        elif name == "ATOMIC_GROUP":
            inner = [av]
        elif name in ("ASSERT", "ASSERT_NOT"):
            inner = [av[1]]
        elif name == "GROUPREF_EXISTS":
            inner = [p for p in av[1:] if p is not None]
        else:
            continue
        for sub in inner:
            problem = _unbounded_problem(sub.data, unbounded)
            if problem is not None:
                return problem
    return None

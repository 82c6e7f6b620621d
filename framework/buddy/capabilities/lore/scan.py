"""Which lore entries go into a turn's prompt — SillyTavern's activation
(``checkWorldInfo``), in lore's words. A book written by hand, every new field at its
default, selects what it always did.

Pure: the runtime keeps a :class:`LoreState` per conversation and calls :func:`scan` once
per turn; ``buddy render``, the playground's context inspector and tests call it the
same way. Standard library only, but for the patterns' engine.

One scan is a loop of **steps**. Step 0 reads the recent messages; each later step (a
rescan, at most the book's ``recursion`` of them) reads them and the content of the
entries that went in so far (but those with ``prevent_recursion``). In a step an enabled
entry not yet in is a **candidate** when

- it is not held out: ``delay`` not reached, cooling down (unless a sticky span holds
  it), ``delay_until_recursion`` above the step's level (always in step 0),
  ``exclude_recursion`` in a rescan, or its book's ``recursion`` below the step;
- and it is ``always``, or its sticky span runs, or its keys are found
  (:mod:`~buddy.capabilities.lore.keys`: each text on its own, the last ``scan``
  messages of its book's kind — the user's, or both sides' with ``scan_replies`` —,
  each as ``Name: text`` with ``scan_names``: the buddy's title, or ``{{user}}``).

The candidates (sticky first, then by ``priority``, higher first, then ``order``, then
their place in the lore) then
go through, in turn: the **inclusion groups** (a group with a sticky member keeps only
those; one whose member went in at an earlier step takes none; group scoring keeps the
members matching most keys; then the highest ``order`` among ``group_override`` members
wins, or a draw weighted by ``group_weight``); the **probability** (an entry that fails is
not tried again in this scan; a sticky one does not roll); and the **budgets**: the
lore's characters (``budget``, separators counted) and the book's ``token_budget``
(:func:`~buddy.capabilities.lore.keys.estimate_tokens`) — an entry that does not fit is
left out, the next ones may still fit, and no rescan follows. Every draw comes from the
event's id, so the same event draws the same. What went in starts its timed effects
(:mod:`~buddy.capabilities.lore.state`), and is put in ``order`` (lower first; of equal
orders, as the lore lists them).

With ``macros``, a book's keys, patterns and contents have ``{{char}}``, ``{{user}}``
and the card macros replaced first (in patterns the names are escaped).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from buddy.capabilities.lore.compiled import Lore, LoreEntry, Role
from buddy.capabilities.lore.keys import Keys, Matcher, Text, estimate_tokens, keys_of, text
from buddy.capabilities.lore.limits import SCAN_TEXT_CHARS
from buddy.capabilities.lore.state import (
    BUDDY,
    USER,
    LoreState,
    Said,
    Timed,
    set_effects,
    timed,
)
from buddy.capabilities.memory.patterns import Budget

__all__ = ["DEFAULT_USER", "LEFT_OUT", "SEPARATOR", "LoreState", "Scanned", "scan"]

#: Why an entry that triggered did not go in (:attr:`Scanned.left_out`).
LEFT_OUT = ("cooldown", "delay", "group", "probability", "budget", "token_budget")

#: What joins two entries of one position in the prompt (counted against the budget).
SEPARATOR = "\n\n"
#: ``{{user}}`` when the event names nobody.
DEFAULT_USER = "用户"


@dataclass(frozen=True, slots=True)
class Scanned:
    """One turn's lore.

    Attributes:
        entries: What goes into the prompt, in order, contents with macros replaced.
        left_out: ``(entry, reason)`` of each entry that triggered but did not go in:
            ``cooldown``, ``delay``, ``group`` (another member won), ``probability``,
            ``budget`` (the characters), ``token_budget`` (its book's).
        state: The state for the next turn.
        chars: The characters the entries take, separators included.
    """

    entries: tuple[LoreEntry, ...]
    left_out: tuple[tuple[LoreEntry, str], ...]
    state: LoreState
    chars: int

    def at(self, position: str) -> tuple[LoreEntry, ...]:
        """The entries at ``position`` (``before_persona``, ``after_persona``, ``depth``)."""
        return tuple(e for e in self.entries if e.position == position)

    def depths(self) -> tuple[tuple[int, Role, str], ...]:
        """``(depth, role, text)`` of the depth entries: those of the same depth and role
        joined by a line break, as SillyTavern joins them, in the entries' order."""
        joined: dict[tuple[int, Role], list[str]] = {}
        for entry in self.at("depth"):
            joined.setdefault((entry.depth, entry.role), []).append(entry.content)
        return tuple((d, r, "\n".join(texts)) for (d, r), texts in joined.items())


def scan(
    lore: Lore,
    recent: Sequence[str | Said],
    state: LoreState,
    budget: int,
    *,
    event: str = "",
    user: str = DEFAULT_USER,
    conversation: str = "",
) -> Scanned:
    """This turn's entries for the ``recent`` messages (oldest first; a bare text is the
    user's) within ``budget`` characters; ``event`` (its id) seeds the draws, ``user`` is
    ``{{user}}``, ``conversation`` (its id) seeds ``{{pick}}``. ``state.messages`` already
    counts the message being answered."""
    return _Scan(lore, recent, state, (event, user, conversation)).run(budget)


def _fraction(*parts: str) -> float:
    """A number in [0, 1) drawn from ``parts``: the same parts, the same number."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class _Scan:
    """One scan's working state (see the module's docstring)."""

    def __init__(
        self,
        lore: Lore,
        recent: Sequence[str | Said],
        state: LoreState,
        turn: tuple[str, str, str],
    ) -> None:
        self.lore = lore
        self.event, self.user, self.conversation = turn
        self.books = {e.book: lore.book(e.book) for e in lore.entries}
        self.turn = state.turn + 1
        self.messages = state.messages
        self.clocks = {
            name: self.turn if book.counting == "turns" else state.messages
            for name, book in self.books.items()
        }
        self.units = {name: book.counting for name, book in self.books.items()}
        entries = {e.id: e for e in lore.entries if e.enabled}
        # Books by file name, each one's entries as its file lists them (SillyTavern's uids).
        self.place = {e.id: at for at, e in enumerate(lore.entries)}
        self.enabled = sorted(entries.values(), key=lambda e: self.place[e.id])
        self.timed: Timed = timed(entries, state, self.clocks, self.units)
        said = [(USER, s) if isinstance(s, str) else s for s in recent]
        # The texts a book scans, by its (scan_replies, scan_names).
        self.pools = {
            (replies, named): [
                text(self._said(who, s[:SCAN_TEXT_CHARS], named))
                for who, s in said
                if replies or who == USER
            ]
            for replies in (False, True)
            for named in (False, True)
        }
        self.matcher = Matcher(Budget())  # the patterns' time (the budget is characters)
        self._keys: dict[str, Keys] = {}
        self.went_in: list[LoreEntry] = []
        self.left: dict[str, tuple[LoreEntry, str]] = {}
        self.failed: set[str] = set()
        self.recursed: list[Text] = []
        self.chars = 0
        self.tokens: dict[str, int] = {}
        self.overflowed = False

    # ------------------------------------------------------------ the loop

    def run(self, budget: int) -> Scanned:
        levels = sorted({e.delay_until_recursion for e in self.enabled if e.delay_until_recursion})
        level = levels.pop(0) if levels else 0
        steps = max((b.recursion for b in self.books.values()), default=0)
        step = 0
        while True:
            new = self._step(step, level, budget)
            if step >= steps or self.overflowed:
                break
            if not any(not e.prevent_recursion for e in new):
                if not levels:
                    break
                level = levels.pop(0)  # nothing new: the next delayed level's rescan
            step += 1
        sticky, cooldown = self.timed.effects
        set_effects(self.went_in, (sticky, cooldown), self.clocks, self.units)
        went = {e.id for e in self.went_in}
        return Scanned(
            entries=tuple(sorted(self.went_in, key=lambda e: (e.order, self.place[e.id]))),
            left_out=tuple(v for k, v in self.left.items() if k not in went),
            state=LoreState(self.turn, self.messages, sticky, cooldown),
            chars=self.chars,
        )

    def _step(self, step: int, level: int, budget: int) -> list[LoreEntry]:
        """One step: its candidates through the groups, the probability and the budgets;
        what went in (its content then read by the next step)."""
        found = sorted(
            self._candidates(step, level),
            key=lambda e: (e.id not in self.timed.sticky, -e.priority, e.order, self.place[e.id]),
        )
        new = []
        for entry in self._grouped(found, step):
            if not self._drawn(entry):
                continue
            placed = self._fitted(entry, budget)
            if placed is not None:
                new.append(placed)
        self.went_in.extend(new)
        self.recursed.extend(
            text(self._content(e, rescan=True)) for e in new if not e.prevent_recursion
        )
        return new

    # ------------------------------------------------------------ candidates

    def _candidates(self, step: int, level: int) -> list[LoreEntry]:
        inside = {e.id for e in self.went_in} | self.failed
        found = []
        for entry in self.enabled:
            if entry.id in inside:
                continue
            held = self._held(entry, step, level)
            if held in ("cooldown", "delay"):
                if step == 0 and self._matches(entry):  # said, for the inspector
                    self.left[entry.id] = (entry, held)
            elif held == "in" or (held is None and self._matches(entry)):
                found.append(entry)
        return found

    def _held(self, entry: LoreEntry, step: int, level: int) -> str | None:
        """``skip``, ``cooldown`` or ``delay`` (held out), ``in`` (no keys needed), or
        ``None``: its keys decide (``checkWorldInfo``'s checks, in its order)."""
        sticky = entry.id in self.timed.sticky
        if step > self.books[entry.book].recursion:
            return "skip"
        if entry.id in self.timed.delayed:
            return "delay"
        if entry.id in self.timed.cooling and not sticky:
            return "cooldown"
        waits = entry.delay_until_recursion and (step == 0 or entry.delay_until_recursion > level)
        if not sticky and (waits or (step > 0 and entry.exclude_recursion)):
            return "skip"
        if entry.always or sticky:
            return "in"
        return None if entry.keys or entry.patterns else "skip"

    def _said(self, who: str, said: str, named: bool) -> str:
        """A message as scanned: ``Name: text`` when ``named`` and the speaker has a name
        (SillyTavern's ``world_info_include_names``)."""
        name = self.lore.char if who == BUDDY else self.user
        return f"{name}: {said}" if named and name else said

    def _texts(self, entry: LoreEntry) -> list[Text]:
        """What ``entry`` scans: its last ``scan`` messages, and the rescan's contents."""
        book = self.books[entry.book]
        pool = self.pools[book.scan_replies, book.scan_names]
        return [*pool[-entry.scan :], *self.recursed]

    def _matches(self, entry: LoreEntry) -> bool:
        return self.matcher.triggered(self._keys_of(entry), self._texts(entry))

    def _keys_of(self, entry: LoreEntry) -> Keys:
        keys = self._keys.get(entry.id)
        if keys is None:
            expand = self._expander(entry)
            keys = self._keys[entry.id] = keys_of(entry, expand)
        return keys

    # ------------------------------------------------------------ groups

    def _grouped(self, found: list[LoreEntry], step: int) -> list[LoreEntry]:
        """``found`` but the losers of its inclusion groups (``filterByInclusionGroups``)."""
        groups: dict[str, list[LoreEntry]] = {}
        for entry in found:
            for name in entry.group:
                groups.setdefault(name, []).append(entry)
        out: set[str] = set()
        held = set()
        for name, members in groups.items():  # a sticky member keeps its place
            if any(m.id in self.timed.sticky for m in members):
                held.add(name)
                out |= {m.id for m in members if m.id not in self.timed.sticky}
        for name, members in groups.items():
            if name not in held:
                out |= self._scored_out([m for m in members if m.id not in out])
        for name, members in groups.items():
            live = [m for m in members if m.id not in out]
            if name in held or not live:
                continue
            if any(name in e.group for e in self.went_in):  # won at an earlier step
                out |= {m.id for m in live}
            elif len(live) > 1:
                winner = self._winner(name, live, step)
                out |= {m.id for m in live if m is not winner}
        for entry in found:
            if entry.id in out:
                self.left[entry.id] = (entry, "group")
        return [e for e in found if e.id not in out]

    def _scored_out(self, members: list[LoreEntry]) -> set[str]:
        """The scored members matching fewer keys than the best (``filterGroupsByScoring``)."""
        if not any(m.group_scoring for m in members):
            return set()
        scores = {m.id: self.matcher.score(self._keys_of(m), self._texts(m)) for m in members}
        best = max(scores.values())
        return {m.id for m in members if m.group_scoring and scores[m.id] < best}

    def _winner(self, name: str, members: list[LoreEntry], step: int) -> LoreEntry:
        """The highest ``order`` among overriding members (the first of equals), else a
        draw by ``group_weight`` from the event's id."""
        overriding = [m for m in members if m.group_override]
        if overriding:
            return max(overriding, key=lambda m: m.order)
        roll = _fraction(self.event, "group", name, str(step)) * sum(
            m.group_weight for m in members
        )
        reached = 0
        for member in members:
            reached += member.group_weight
            if roll < reached:
                return member
        return members[-1]

    # ------------------------------------------------------------ chance and budget

    def _drawn(self, entry: LoreEntry) -> bool:
        """Whether ``entry`` passes its probability (never tried again when it fails)."""
        if entry.probability >= 100 or entry.id in self.timed.sticky:
            return True
        if _fraction(self.event, entry.id) * 100 < entry.probability:
            return True
        self.failed.add(entry.id)
        self.left[entry.id] = (entry, "probability")
        return False

    def _fitted(self, entry: LoreEntry, budget: int) -> LoreEntry | None:
        """``entry`` (its content's macros replaced) when it fits both budgets."""
        content = self._content(entry)
        placed = entry if content == entry.content else replace(entry, content=content)
        cost = len(placed.content) + (len(SEPARATOR) if self.chars and placed.content else 0)
        tokens = estimate_tokens(placed.content)
        limit = self.books[entry.book].token_budget
        used = self.tokens.get(entry.book, 0)
        if self.chars + cost > budget:
            why = "budget"
        elif limit is not None and used + tokens > limit:
            why = "token_budget"
        else:
            self.chars += cost
            self.tokens[entry.book] = used + tokens
            return placed
        self.left[entry.id] = (entry, why)
        self.overflowed = True
        return None

    # ------------------------------------------------------------ macros

    def _expander(self, entry: LoreEntry) -> Callable[[str, bool], str] | None:
        """How ``entry``'s book replaces macros in a key (``False``) or a pattern
        (``True``); ``None``: it does not."""
        if not self.books[entry.book].macros:
            return None
        return lambda said, pattern: self._expanded(said, pattern=pattern)

    def _content(self, entry: LoreEntry, *, rescan: bool = False) -> str:
        """``entry``'s content as the prompt (or, ``rescan``, a rescan) reads it."""
        if not self.books[entry.book].macros:
            return entry.content
        return self._expanded(entry.content, hidden=rescan)

    def _expanded(self, said: str, *, pattern: bool = False, hidden: bool = False) -> str:
        from buddy.capabilities.lore.macros import expand

        char, user = (
            (re.escape(self.lore.char), re.escape(self.user))
            if pattern
            else (
                self.lore.char,
                self.user,
            )
        )  # in a pattern a name is text to find
        return expand(
            said,
            char=char,
            user=user,
            seed=self.event,
            stable=self.conversation or None,
            keep_hidden=hidden,
        )

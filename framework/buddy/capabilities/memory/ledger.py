"""The facts automatic memory keeps, and each relation's policy applied to a new one.

A fact is stored as one entry of the conversation's platform memory, under a reserved key
``auto:<relation>:<digest of its key slots>`` (the buddy's memory tools cannot write
``auto:`` keys), its text the JSON of an :class:`Entry`. :func:`apply` takes the ledger
(key → entry) and a fact and answers the new ledger and what happened:

- **validity**: a fact past its time to live is gone (:func:`expire`); a kept one is
  renewed each time it is said again.
- **admission** ``auto``: kept at once. ``assisted``: *proposed* first — with
  ``confirmation: explicit`` until the user answers a card (:func:`confirm`); with
  ``implicit`` until it is said again in a later message. At most ``asks`` proposals
  wait at once; one more is refused.
- **effect** ``set``: the value; a different one is a conflict — ``last_write_wins``
  replaces it, ``keep_first`` keeps the old, ``dispute`` keeps both and marks the fact
  disputed. ``delta``: the value adds up, once per message (a redelivered message or a
  re-run turn applies nothing twice); below zero is refused unless ``allow_negative``,
  and under ``conservation: repayment`` a repayment larger than what is owed is a
  dispute, not a clamp.
- **share**: :func:`evict` keeps the ledger within ``share.entries`` and ``share.bytes``:
  expired facts first, then the least recently said, lower risk tiers before higher.

**Parties.** A party slot holds ``user`` (the one person of a private chat) or ``buddy``
as extracted; in a group the engine stores the speaking member's id (``m_…``) for
``user`` (:func:`as_member`), so each member's facts are keyed apart and
:func:`member_of` says whose a fact is. A private chat's facts keep ``user``.

Pure functions; standard library only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from buddy.capabilities.memory.compiled import AutoMemory, RelationSpec
from buddy.capabilities.memory.extract import Fact
from buddy.capabilities.memory.limits import AUTO_KEY_PREFIX, RISK_TIERS
from buddy.capabilities.memory.slots import PARTIES, as_member, member_of

__all__ = [
    "MESSAGES_KEPT",
    "PARTIES",
    "Entry",
    "Ledger",
    "Outcome",
    "apply",
    "as_member",
    "confirm",
    "decode",
    "encode",
    "evict",
    "expire",
    "fact_key",
    "member_of",
]

#: The message ids an entry remembers, so a redelivered message applies nothing twice.
MESSAGES_KEPT = 16


@dataclass(frozen=True, slots=True)
class Entry:
    """One fact as stored.

    Attributes:
        relation: Its relation.
        slots: Its slots as last said (for a ``delta``, ``value`` holds the running total).
        value: The kept value (``None`` while only proposed).
        status: ``kept``, ``proposed`` (awaiting confirmation) or ``disputed``.
        proposed: The value awaiting confirmation (a ``delta``'s amount), or ``None``.
        claims: For ``disputed``: the other values said, in order.
        repaid: Under ``conservation: repayment``, the repayments so far.
        updated: When it was last said (platform seconds); ``expires``: when it lapses.
        messages: The last message ids applied to it.
        confirmed: The message that confirmed its last proposal — the answer to the
            card, or the proposal said again — or ``""``. The message the proposal was
            said in is the one before it in ``messages``: the playground shows both.
    """

    relation: str
    slots: Mapping[str, Any]
    value: Any
    status: str
    updated: float
    expires: float | None = None
    proposed: Any = None
    claims: tuple[Any, ...] = ()
    repaid: float = 0.0
    messages: tuple[str, ...] = field(default=())
    confirmed: str = ""


Ledger = Mapping[str, Entry]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one fact did: ``kept``, ``updated``, ``unchanged``, ``proposed``,
    ``confirmed``, ``disputed``, ``duplicate`` or ``refused`` (with its ``reason``)."""

    kind: str
    key: str
    reason: str = ""


def fact_key(spec: RelationSpec, slots: Mapping[str, Any]) -> str:
    """The memory key of the fact these slots name (within the platform's key rules)."""
    named = json.dumps([slots.get(n) for n in spec.key], ensure_ascii=False, sort_keys=True)
    digest = hashlib.sha256(f"{spec.name}\0{named}".encode()).hexdigest()[:16]
    return f"{AUTO_KEY_PREFIX}{spec.name}:{digest}"


_FIELDS = tuple(f.name for f in fields(Entry))


def encode(entry: Entry) -> str:
    """The entry as the memory text stored for it."""
    # What `asdict` gives, without its deep copy (it was most of the layer's own time in a
    # turn): the fields in order, the slots as a dict; JSON writes tuples as lists.
    data = {name: getattr(entry, name) for name in _FIELDS}
    data["slots"] = dict(entry.slots)
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def decode(text: str) -> Entry | None:
    """The entry a memory text holds, or ``None`` when it is not one (then it is left
    alone: the layer never overwrites what it did not write)."""
    try:
        data = json.loads(text)
        data["claims"] = tuple(data.get("claims", ()))
        data["messages"] = tuple(data.get("messages", ()))
        return Entry(**data)
    except (ValueError, TypeError, AttributeError):
        return None


def expire(ledger: Ledger, now: float) -> dict[str, Entry]:
    """The ledger without the facts past their time to live."""
    return {k: e for k, e in ledger.items() if e.expires is None or e.expires > now}


def _expiry(spec: RelationSpec, now: float) -> float | None:
    return None if spec.validity_seconds is None else now + spec.validity_seconds


def _seen(entry: Entry, message: str) -> tuple[str, ...]:
    return (*entry.messages, message)[-MESSAGES_KEPT:]


def _add(spec: RelationSpec, total: Any, amount: Any, repaid: float) -> tuple[Any, float, str]:
    """``(new total, new repaid, problem)`` of adding a ``delta``."""
    after = (total or 0) + amount
    if amount < 0 and spec.conservation == "repayment" and -amount > (total or 0):
        return total, repaid, "a repayment larger than what is owed"
    if after < 0 and not spec.allow_negative:
        return total, repaid, "it would go below zero"
    return after, repaid + (-amount if amount < 0 else 0), ""


def apply(
    memory: AutoMemory, ledger: Ledger, fact: Fact, *, now: float, message: str
) -> tuple[dict[str, Entry], Outcome]:
    """The ledger after ``fact``, said in ``message`` at ``now``, under its relation's
    policy (the fact is valid for its relation: :mod:`buddy.capabilities.memory.extract`)."""
    spec = memory.relation(fact.relation)
    assert spec is not None, fact.relation
    book = expire(ledger, now)
    key = fact_key(spec, fact.slots)
    amount = fact.slots[spec.value]
    old = book.get(key)
    if old is not None and message in old.messages:
        return book, Outcome("duplicate", key, "this message was applied already")
    if spec.admission == "assisted":
        if old is not None and old.proposed is not None:  # a proposal awaits
            if spec.confirmation == "explicit":  # only the card confirms it
                return book, Outcome("unchanged", key, "awaits the user's confirmation")
            if old.proposed == amount:  # said again: implicitly confirmed
                return confirm(memory, book, key, True, now=now, message=message)
            book[key] = replace(old, proposed=amount, updated=now, messages=_seen(old, message))
            return book, Outcome("proposed", key, "the proposal is replaced")
        waiting = sum(1 for e in book.values() if e.proposed is not None)
        if waiting >= memory.asks:
            return book, Outcome("refused", key, f"{waiting} facts await confirmation already")
        base = old or Entry(
            relation=fact.relation,
            slots=dict(fact.slots),
            value=None,
            status="proposed",
            updated=now,
        )
        book[key] = replace(
            base,
            proposed=amount,
            updated=now,
            expires=_expiry(spec, now),
            messages=_seen(base, message),
        )
        return book, Outcome("proposed", key)
    return _keep(spec, book, key, fact, amount, now, message)


def _keep(
    spec: RelationSpec,
    book: dict[str, Entry],
    key: str,
    fact: Fact,
    amount: Any,
    now: float,
    message: str,
) -> tuple[dict[str, Entry], Outcome]:
    old = book.get(key)
    expires = _expiry(spec, now)
    if old is None or old.value is None:
        value, repaid, problem = (
            _add(spec, None, amount, 0.0) if spec.effect == "delta" else (amount, 0.0, "")
        )
        if problem:
            return book, Outcome("refused", key, problem)
        book[key] = Entry(
            relation=fact.relation,
            slots=dict(fact.slots),
            value=value,
            status="kept",
            updated=now,
            expires=expires,
            repaid=repaid,
            messages=_seen(old, message) if old else (message,),
        )
        return book, Outcome("kept", key)
    if spec.effect == "delta":
        value, repaid, problem = _add(spec, old.value, amount, old.repaid)
        if problem and spec.conservation == "repayment" and amount < 0:
            disputed = replace(
                old,
                status="disputed",
                claims=(*old.claims, amount),
                updated=now,
                messages=_seen(old, message),
            )
            book[key] = disputed
            return book, Outcome("disputed", key, problem)
        if problem:
            return book, Outcome("refused", key, problem)
        book[key] = replace(
            old,
            value=value,
            repaid=repaid,
            updated=now,
            expires=expires,
            messages=_seen(old, message),
            slots={**old.slots, **fact.slots, spec.value: value},
        )
        return book, Outcome("updated", key)
    if old.value == amount:
        book[key] = replace(old, updated=now, expires=expires, messages=_seen(old, message))
        return book, Outcome("unchanged", key)
    if spec.conflict == "keep_first":
        return book, Outcome("unchanged", key, "the first value is kept")
    if spec.conflict == "dispute":
        book[key] = replace(
            old,
            status="disputed",
            claims=(*old.claims, amount),
            updated=now,
            messages=_seen(old, message),
        )
        return book, Outcome("disputed", key)
    book[key] = replace(
        old,
        value=amount,
        slots=dict(fact.slots),
        status="kept",
        claims=(),
        updated=now,
        expires=expires,
        messages=_seen(old, message),
    )
    return book, Outcome("updated", key)


def confirm(
    memory: AutoMemory, ledger: Ledger, key: str, yes: bool, *, now: float, message: str = ""
) -> tuple[dict[str, Entry], Outcome]:
    """The user's answer to a proposed fact: kept (the value set, the delta added), or
    dropped (a fact that had a kept value keeps it)."""
    book = dict(ledger)
    entry = book.get(key)
    if entry is None or entry.proposed is None:
        return book, Outcome("refused", key, "nothing awaits confirmation under this key")
    spec = memory.relation(entry.relation)
    assert spec is not None, entry.relation
    if not yes:
        if entry.value is None:
            del book[key]
        else:
            book[key] = replace(entry, proposed=None, status="kept")
        return book, Outcome("refused", key, "the user said no")
    fact = Fact(entry.relation, {**entry.slots, spec.value: entry.proposed}, "asserted", "card")
    book[key] = replace(entry, proposed=None)
    message = message or f"card@{now}"
    book, outcome = _keep(spec, book, key, fact, entry.proposed, now, message)
    if outcome.kind in ("kept", "updated", "unchanged"):
        book[key] = replace(book[key], confirmed=message)
        return book, Outcome("confirmed", key, outcome.reason)
    if entry.value is None:  # confirmed but not keepable: no placeholder stays behind
        book.pop(key, None)
    return book, outcome


def evict(memory: AutoMemory, ledger: Ledger, now: float) -> tuple[dict[str, Entry], list[str]]:
    """The ledger within the layer's share of the conversation's memory, and the keys
    evicted: expired facts, then the least recently said, lower risk tiers first."""
    kept = expire(ledger, now)
    gone = [k for k in ledger if k not in kept]

    def risk(entry: Entry) -> int:
        spec = memory.relation(entry.relation)
        return RISK_TIERS.index(spec.risk) if spec is not None else 0

    order = sorted(kept, key=lambda k: (risk(kept[k]), kept[k].updated, k))
    size = sum(len(encode(e).encode("utf-8")) for e in kept.values())
    while order and (len(kept) > memory.share_entries or size > memory.share_bytes):
        key = order.pop(0)
        size -= len(encode(kept.pop(key)).encode("utf-8"))
        gone.append(key)
    return kept, gone

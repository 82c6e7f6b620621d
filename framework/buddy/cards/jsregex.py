"""SillyTavern's regular-expression keys (``/source/flags``, JavaScript syntax) as Python
patterns, and back.

SillyTavern decides per key, whatever the entry's ``use_regex`` says: a key shaped
``/…/flags`` whose flags are among ``gimsuy`` and whose source has no unescaped ``/`` is
a JavaScript regular expression; any other key is plain text (world-info.js
``parseRegexFromString``). :func:`split_key` is that test; :func:`to_python` converts the
source:

- flags: ``i``, ``m``, ``s`` become inline flags; ``g`` and ``y`` mean nothing for a test
  and are dropped; ``u`` only makes the syntax stricter (``\\u{…}`` escapes). A regular
  expression is case-sensitive unless it says ``i``, whatever the entry says, so a
  pattern without ``i`` is wrapped in ``(?-i:…)``;
- ``(?<name>…)`` → ``(?P<name>…)``, ``\\k<name>`` → ``(?P=name)``, ``$`` (without ``m``)
  → ``\\Z``, ``[^]`` → ``[\\s\\S]``, ``[]`` → ``(?!)``, ``\\cX`` and ``\\u{…}`` → their
  character, an escaped letter JavaScript reads as itself (``\\A``) → that letter, and a
  ``[``, ``&``, ``~`` or ``|`` in a class is escaped (Python would read a nested set);
- ``\\d``, ``\\w``, ``\\s``, ``\\b`` pass through: in Python they also match non-ASCII
  digits and letters (a documented difference).

Anything else JavaScript would refuse, or that has no Python spelling (``\\p{…}``,
possessive quantifiers, a pattern that compiles but surely backtracks without bound), is
a :class:`NotConvertible` with the reason. Standard library only, but for the check that
the result compiles with the engine lore patterns run on.
"""

from __future__ import annotations

import re

__all__ = ["NotConvertible", "split_key", "to_js", "to_python"]

# world-info.js parseRegexFromString: /^\/([\w\W]+?)\/([gimsuy]*)$/, then no unescaped "/".
_SHAPE = re.compile(r"/(.+?)/([gimsuy]*)", re.S)
_UNESCAPED_SLASH = re.compile(r"(?:^|[^\\])/")
_QUANTIFIER = re.compile(r"\{\d+(?:,\d*)?\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SIMPLE_ESCAPES = set("dDwWsSbBfnrtv")


class NotConvertible(ValueError):
    """A JavaScript regular expression with no Python equivalent here; the message says
    why."""


def split_key(key: str) -> tuple[str, str] | None:
    """``(source, flags)`` when SillyTavern reads ``key`` as a regular expression, else
    ``None`` (plain text)."""
    found = _SHAPE.fullmatch(key)
    if found is None or _UNESCAPED_SLASH.search(found.group(1)):
        return None
    return found.group(1), found.group(2)


def to_python(source: str, flags: str) -> str:
    """The Python pattern of the JavaScript regular expression ``/source/flags``.

    Raises:
        NotConvertible: JavaScript would refuse it, or it has no Python spelling here.
    """
    if len(set(flags)) != len(flags):
        raise NotConvertible(f"the flag {_repeated(flags)!r} is given twice")
    body = _Converter(source, unicode="u" in flags, multiline="m" in flags).run()
    on = "".join(f for f in "ims" if f in flags)
    pattern = f"(?{on})" + body if "i" in flags else f"(?{on}-i:{body})"
    from buddy.capabilities.memory.patterns import pattern_problem

    problem = pattern_problem(pattern)
    if problem is not None:
        raise NotConvertible(problem)
    return pattern


def _repeated(flags: str) -> str:
    return next(f for f in flags if flags.count(f) > 1)


class _Converter:
    def __init__(self, source: str, *, unicode: bool, multiline: bool) -> None:
        self.src = source
        self.pos = 0
        self.unicode = unicode
        self.multiline = multiline
        self.out: list[str] = []

    def run(self) -> str:
        while self.pos < len(self.src):
            ch = self.src[self.pos]
            if ch == "\\":
                self.out.append(self._escape(in_class=False))
            elif ch == "[":
                self._klass()
            elif ch == "(":
                self._group()
            elif ch == "$":
                self.out.append("$" if self.multiline else r"\Z")
                self.pos += 1
            elif ch == "{":
                found = _QUANTIFIER.match(self.src, self.pos)
                token = found.group(0) if found else r"\{"
                self.out.append(token)
                self.pos += len(found.group(0)) if found else 1
                self._no_possessive()
            elif ch in "*+?":
                self.out.append(ch)
                self.pos += 1
                self._no_possessive()
            else:
                self.out.append(ch)
                self.pos += 1
        return "".join(self.out)

    def _no_possessive(self) -> None:
        if self.src.startswith("?", self.pos):  # lazy: JavaScript has it too
            self.out.append("?")
            self.pos += 1
        elif self.src.startswith("+", self.pos):
            raise NotConvertible("a quantifier followed by `+` (JavaScript: nothing to repeat)")

    def _group(self) -> None:
        rest = self.src[self.pos :]
        for opening in ("(?:", "(?=", "(?!", "(?<=", "(?<!"):
            if rest.startswith(opening):
                self.out.append(opening)
                self.pos += len(opening)
                return
        if rest.startswith("(?<"):
            end = rest.find(">")
            name = rest[3:end] if end > 0 else ""
            if not _NAME.fullmatch(name):
                raise NotConvertible(f"the group name {name!r} is not a Python name")
            self.out.append(f"(?P<{name}>")
            self.pos += end + 1
            return
        if rest.startswith("(?"):
            raise NotConvertible(f"`{rest[:3]}` is not JavaScript syntax")
        self.out.append("(")
        self.pos += 1

    def _klass(self) -> None:
        rest = self.src[self.pos :]
        if rest.startswith("[^]"):
            self.out.append(r"[\s\S]")
            self.pos += 3
            return
        if rest.startswith("[]"):
            self.out.append("(?!)")
            self.pos += 2
            return
        self.out.append("[")
        self.pos += 1
        if self.src.startswith("^", self.pos):
            self.out.append("^")
            self.pos += 1
        previous = ""
        while self.pos < len(self.src):
            ch = self.src[self.pos]
            if ch == "]":
                self.out.append("]")
                self.pos += 1
                return
            if ch == "\\":
                self.out.append(self._escape(in_class=True))
                previous = ""
                continue
            if ch in "[&~|" or (ch == "-" and previous == "-"):
                self.out.append("\\" + ch)
            else:
                self.out.append(ch)
            previous = ch
            self.pos += 1
        raise NotConvertible("a `[` class is not closed")

    def _escape(self, *, in_class: bool) -> str:
        self.pos += 1
        if self.pos >= len(self.src):
            raise NotConvertible("`\\` at the end of the pattern")
        ch = self.src[self.pos]
        self.pos += 1
        if ch in _SIMPLE_ESCAPES:
            return "\\" + ch
        if ch == "0" and not self.src[self.pos : self.pos + 1].isdigit():
            return r"\x00"
        if ch.isdigit():
            if in_class or ch == "0":
                raise NotConvertible(f"the octal escape `\\{ch}` (legacy JavaScript)")
            digits = ch
            while self.src[self.pos : self.pos + 1].isdigit():
                digits += self.src[self.pos]
                self.pos += 1
            return "\\" + digits
        if ch == "c":
            letter = self.src[self.pos : self.pos + 1]
            if letter.isascii() and letter.isalpha():
                self.pos += 1
                return f"\\x{ord(letter) % 32:02x}"
            return r"\\c"
        if ch == "x":
            return self._hex(2, "x")
        if ch == "u":
            return self._unicode()
        if ch == "k" and not in_class and self.src.startswith("<", self.pos):
            end = self.src.find(">", self.pos)
            name = self.src[self.pos + 1 : end] if end > 0 else ""
            if not _NAME.fullmatch(name):
                raise NotConvertible(f"the back reference name {name!r} is not a Python name")
            self.pos = end + 1
            return f"(?P={name})"
        if ch in "pP" and self.unicode:
            raise NotConvertible(f"`\\{ch}{{…}}` (Unicode properties) has no Python spelling")
        if ch.isascii() and ch.isalpha():
            if self.unicode:
                raise NotConvertible(f"`\\{ch}` is not an escape (the `u` flag refuses it)")
            return ch  # JavaScript reads an unknown escaped letter as the letter
        return "\\" + ch

    def _hex(self, count: int, letter: str) -> str:
        digits = self.src[self.pos : self.pos + count]
        if len(digits) == count and all(c in "0123456789abcdefABCDEF" for c in digits):
            self.pos += count
            return f"\\{letter}{digits}"
        if self.unicode:
            raise NotConvertible(f"`\\{letter}` without {count} hex digits")
        return letter

    def _unicode(self) -> str:
        if self.unicode and self.src.startswith("{", self.pos):
            end = self.src.find("}", self.pos)
            digits = self.src[self.pos + 1 : end] if end > 0 else ""
            if not digits or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise NotConvertible("`\\u{…}` without hex digits")
            code = int(digits, 16)
            if code > 0x10FFFF:
                raise NotConvertible(f"`\\u{{{digits}}}` is beyond Unicode")
            self.pos = end + 1
            return f"\\U{code:08x}"
        return self._hex(4, "u")


def to_js(pattern: str, *, ignore_case: bool) -> str:
    """A Python pattern as a SillyTavern key ``/source/flags`` (for patterns written in
    the buddy; an imported one goes back as it was).

    Python's syntax is mostly JavaScript's: ``(?P<name>`` and ``(?P=name)`` are respelled,
    ``/`` escaped, leading inline flags become flags, and ``ignore_case`` (the entry's
    keys ignore case here) adds ``i``.
    """
    flags = "i" if ignore_case else ""
    scoped = re.fullmatch(r"\(\?([ims]*)(-i)?:(.*)\)", pattern, re.S)
    leading = re.match(r"\(\?([ims]+)\)", pattern)
    if scoped is not None and _balanced(scoped.group(3)):
        on, body = scoped.group(1), scoped.group(3)
        flags = on if scoped.group(2) else "".join(sorted(set(on + flags)))
    elif leading is not None:
        body = pattern[leading.end() :]
        flags = "".join(sorted(set(leading.group(1) + flags)))
    else:
        body = pattern
    body = re.sub(r"\(\?P<", "(?<", body)
    body = re.sub(r"\(\?P=(\w+)\)", r"\\k<\1>", body)
    body = re.sub(r"(?<!\\)((?:\\\\)*)\\Z", r"\1$", body)
    body = re.sub(r"(?<!\\)((?:\\\\)*)/", r"\1\\/", body)
    return f"/{body}/{''.join(f for f in 'ims' if f in flags)}"


def _balanced(body: str) -> bool:
    """Whether ``body``'s parentheses close within it (so ``(?-i:a)|(b)`` is not read as
    one scoped group)."""
    depth, escaped, in_class = 0, False, False
    for ch in body:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0

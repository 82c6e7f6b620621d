"""SillyTavern's regular-expression keys (JavaScript) as Python patterns, and back."""

from __future__ import annotations

import pytest

from buddy.capabilities.memory.patterns import compiled
from buddy.cards.jsregex import NotConvertible, split_key, to_js, to_python


# world-info.js parseRegexFromString: /^\/([\w\W]+?)\/([gimsuy]*)$/ and no unescaped "/" in
# the source; anything else is plain text, whatever `use_regex` says.
@pytest.mark.parametrize(
    ("key", "split"),
    [
        ("/dragon/", ("dragon", "")),
        ("/dragon/gi", ("dragon", "gi")),
        (r"/a\/b/i", (r"a\/b", "i")),
        ("/x/gg", ("x", "gg")),  # the shape fits; RegExp refuses it (below)
        ("*hugs*", None),
        ("C++", None),
        ("Dr. Who", None),
        ("/a/b/", None),  # an unescaped "/" inside
        ("/dragon/d", None),  # `d` is not among gimsuy
        ("//", None),  # an empty source
        ("/dragon", None),
        ("dragon/", None),
    ],
)
def test_which_keys_are_regular_expressions(key: str, split: tuple[str, str] | None) -> None:
    assert split_key(key) == split


@pytest.mark.parametrize(
    ("source", "flags", "python"),
    [
        ("dragon", "", "(?-i:dragon)"),  # JavaScript: case-sensitive unless `i`
        ("dragon", "i", "(?i)dragon"),
        ("dragon", "gy", "(?-i:dragon)"),  # g and y mean nothing for a test
        ("a.b", "s", "(?s-i:a.b)"),
        ("^a$", "m", "(?m-i:^a$)"),
        ("end$", "", r"(?-i:end\Z)"),  # JavaScript's $ is the very end without `m`
        ("(?<year>\\d{4})-\\k<year>", "", r"(?-i:(?P<year>\d{4})-(?P=year))"),
        ("(?:a|b)(?=c)(?!d)(?<=e)(?<!f)", "i", "(?i)(?:a|b)(?=c)(?!d)(?<=e)(?<!f)"),
        ("[^]", "", r"(?-i:[\s\S])"),
        ("a[]", "", "(?-i:a(?!))"),
        ("[[a]", "", r"(?-i:[\[a])"),  # JavaScript: a `[` in a class is just a `[`
        ("[a&&b||c~~d]", "", r"(?-i:[a\&\&b\|\|c\~\~d])"),
        ("[+--]", "", r"(?-i:[+-\-])"),
        ("\\A\\e", "", "(?-i:Ae)"),  # an escaped letter that means nothing is the letter
        ("\\cJ", "", r"(?-i:\x0a)"),
        ("\\u00e9\\x41", "", r"(?-i:\u00e9\x41)"),
        ("\\u{1F600}", "u", r"(?-i:\U0001f600)"),
        ("a{2,3}b{,2}", "", r"(?-i:a{2,3}b\{,2})"),  # `{,2}` is text in JavaScript
        ("\\d+\\s\\w\\b", "", r"(?-i:\d+\s\w\b)"),
        ("\\/path", "", r"(?-i:\/path)"),
        ("a\\0", "", r"(?-i:a\x00)"),
        ("(a)\\1", "", r"(?-i:(a)\1)"),
        ("a+?b*?", "", "(?-i:a+?b*?)"),
    ],
)
def test_conversion(source: str, flags: str, python: str) -> None:
    assert to_python(source, flags) == python


@pytest.mark.parametrize(
    ("source", "flags", "why"),
    [
        ("x", "gg", "the flag 'g' is given twice"),
        ("\\p{L}", "u", "Unicode properties"),
        ("\\q", "u", "the `u` flag refuses it"),
        ("a++", "", "nothing to repeat"),
        ("(?P<n>a)", "", "is not JavaScript syntax"),
        ("(?i)a", "", "is not JavaScript syntax"),
        ("[abc", "", "not closed"),
        ("(a", "", "not a regular expression"),
        ("(a+)+$", "", "backtrack"),  # compiles, but lore refuses it (pattern_problem)
        ("a\\", "", "at the end"),
        ("(?<1x>a)", "", "not a Python name"),
        ("\\01", "", "octal"),
    ],
)
def test_what_does_not_convert(source: str, flags: str, why: str) -> None:
    with pytest.raises(NotConvertible, match=r".*") as caught:
        to_python(source, flags)
    assert why in str(caught.value)


@pytest.mark.parametrize(
    ("key", "text", "found"),
    [
        ("/Dragon/", "a dragon", False),  # case-sensitive even where lore ignores case
        ("/Dragon/i", "a DRAGON", True),
        ("/end$/", "the end\n", False),
        ("/end$/m", "the end\nmore", True),
        ("/C\\+\\+/", "I write C++", True),
        ("/a.b/", "a\nb", False),
        ("/a.b/s", "a\nb", True),
    ],
)
def test_converted_patterns_match_as_in_javascript(key: str, text: str, found: bool) -> None:
    split = split_key(key)
    assert split is not None
    # Lore searches with ignore_case when the entry's keys ignore case (the default).
    assert bool(compiled(to_python(*split), True).search(text)) is found


@pytest.mark.parametrize(
    ("pattern", "ignore_case", "key"),
    [
        ("(?-i:dragon)", True, "/dragon/"),
        ("(?i)dragon", False, "/dragon/i"),
        ("(?s-i:a.b)", True, "/a.b/s"),
        ("dragon", True, "/dragon/i"),  # written in the book: its entry ignores case
        ("dragon", False, "/dragon/"),
        (r"(?P<y>\d)(?P=y)a/b\Z", False, r"/(?<y>\d)\k<y>a\/b$/"),
        ("(?-i:a)|(b)", False, "/(?-i:a)|(b)/"),  # not one scoped group
    ],
)
def test_back_to_javascript(pattern: str, ignore_case: bool, key: str) -> None:
    assert to_js(pattern, ignore_case=ignore_case) == key
    split = split_key(key)
    assert split is not None

"""Plain YAML only: 1.2 scalars, duplicate keys, tags, alias bombs, size limit."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml

from buddy.errors import Issue
from buddy.manifest.yamlio import (
    MAX_ALIAS_EXPANSION,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    Document,
    Loc,
    format_path,
    load_document,
)
from buddy.manifest.yamlproblems import explain


def _load(tmp_path: Path, text: str) -> Document | Issue:
    path = tmp_path / "x.yaml"
    path.write_text(text, encoding="utf-8")
    return load_document(path, "x.yaml")


def _data(tmp_path: Path, text: str) -> object:
    doc = _load(tmp_path, text)
    assert isinstance(doc, Document), doc
    return doc.data


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("on", "on"),
        ("yes", "yes"),
        ("no", "no"),
        ("off", "off"),
        ("y", "y"),
        ("true", True),
        ("False", False),
        ("22:30", "22:30"),
        ("010", 10),
        ("0x1f", 31),
        ("0o17", 15),
        ("1.5", 1.5),
        ("1e3", 1000.0),
        ("~", None),
        ("null", None),
        ("", None),
        ('"22:30"', "22:30"),
        ("'123'", "123"),
        ("1_000", "1_000"),
        ("!!bool TRUE", True),
        ("!!null ~", None),
        ("!!str yes", "yes"),
    ],
)
def test_scalars_resolve_like_yaml_1_2(tmp_path: Path, text: str, value: object) -> None:
    assert _data(tmp_path, f"a: {text}\n") == {"a": value}


def test_timestamps_keep_their_offset(tmp_path: Path) -> None:
    data = _data(tmp_path, "at: 2026-12-07T20:00:00+08:00\n")
    assert data == {"at": datetime(2026, 12, 7, 20, tzinfo=timezone(timedelta(hours=8)))}


def test_locations_are_one_based_for_values_and_keys(tmp_path: Path) -> None:
    doc = _load(tmp_path, "a:\n  b: [1, two]\n  c: |\n    line one\n    line two\n")
    assert isinstance(doc, Document)
    assert (doc.values[("a", "b", 1)].line, doc.values[("a", "b", 1)].column) == (2, 10)
    assert (doc.keys[("a", "c")].line, doc.keys[("a", "c")].column) == (3, 3)
    assert (doc.blocks[("a", "c")].line, doc.blocks[("a", "c")].column) == (4, 5)


@pytest.mark.parametrize(
    ("text", "code", "line", "column"),
    [
        ("a: 1\nb: 2\na: 3\n", "yaml-duplicate-key", 3, 1),
        ("a:\n  x: 1\n  x: 2\n", "yaml-duplicate-key", 3, 3),
        ("a: !!python/object/apply:os.system [ls]\n", "yaml-tag", 1, 4),
        ("a: !custom x\n", "yaml-tag", 1, 4),
        ("a: !!binary aGVsbG8=\n", "yaml-tag", 1, 4),
        ("a: !!set {x}\n", "yaml-tag", 1, 4),
        ("- 1\n- 2\n", "yaml-not-mapping", 1, 1),
        ("just text\n", "yaml-not-mapping", 1, 1),
        ("", "yaml-not-mapping", 1, 1),
        ("a: [1, 2\n", "yaml-syntax", 2, 1),
        ("a: 1\n---\nb: 2\n", "yaml-syntax", 2, 1),
        ("a: &x [*x]\n", "yaml-alias-limit", 1, 8),
        ("a: 2026-13-45T00:00:00Z\n", "yaml-syntax", 1, 4),
        ("a: !!bool yes\n", "yaml-syntax", 1, 4),
        ("a: !!null x\n", "yaml-syntax", 1, 4),
        ("a: *tag\n", "yaml-syntax", 1, 4),
    ],
)
def test_refused(tmp_path: Path, text: str, code: str, line: int, column: int) -> None:
    issue = _load(tmp_path, text)
    assert isinstance(issue, Issue), issue
    assert (issue.code, issue.line, issue.column) == (code, line, column), issue


SYNTAX = {
    "colon-in-value": (
        "name: case\ntitle: a: b\n",
        (2, 9),
        "YAML: the value of `title` contains `: `, which YAML reads as the start of a mapping",
        'quote the value: `title: "a: b"`',
    ),
    "key-under-a-value": (
        "name: x\n  model: test\n",
        (2, 8),
        "YAML: `model` is indented under `name` (line 1), which already has a value on its line",
        "indent `model` like the keys beside it; to nest it, leave `name:` with no value on its"
        " line",
    ),
    "key-off-its-mapping": (
        "persona:\n    prompt: x\n  vars: {}\n",
        (3, 3),
        "YAML: this line is indented to column 3, but the keys above it start in column 5"
        " (line 2) or column 1 (line 1)",
        "keys of one mapping start in the same column: indent it like the key it belongs beside",
    ),
    "key-without-colon": (
        "name: x\nmodel\npersona: {}\n",
        (3, 1),
        "YAML: the text on line 2 reads as a key, but no `:` follows it",
        "write `key: value`; a line that continues a value belongs inside it (quote the value,"
        " or write it as a `|` block)",
    ),
    "not-an-item": (
        "tools:\n  - a\n  b: 1\n",
        (3, 3),
        "YAML: this line is inside a list (it starts on line 2) but is not a `- ` item",
        "start it with `- `, indent it under the item it belongs to, or indent it less to end"
        " the list",
    ),
    "text-after-a-quote": (
        "a: 'it's'\n",
        (1, 8),
        "YAML: unexpected text after the value on this line",
        "a value that goes on after a closing quote must be quoted whole; inside single quotes"
        " a quote is written twice ('it''s')",
    ),
    "tab": (
        "name: x\n\tmodel: test\n",
        (2, 1),
        "YAML: a tab in the indentation",
        "YAML indents with spaces only: replace the tab with spaces",
    ),
    "unclosed-bracket": (
        "a: [1, 2\n",
        (2, 1),
        "YAML: the `[` opened on line 1 is not closed where YAML expected `,` or `]`",
        "close it with `]`, separate its items with `,`, and quote an item that contains `:`,"
        " `,` or a bracket",
    ),
    "unclosed-quote": (
        'a: "abc\nb: 2\n',
        (3, 1),
        "YAML: the quoted value opened on line 1 is never closed",
        "add the closing quote (inside single quotes a quote is written twice: 'it''s')",
    ),
    "reserved-character": (
        "a: @x\n",
        (1, 4),
        "YAML: a plain value cannot start with `@`",
        'quote the value: "@x"',
    ),
    "undefined-alias": (
        "a: *x\n",
        (1, 4),
        "YAML: `*x` refers to an anchor `&x` that is not defined before it",
        "`*` starts an alias: quote the value if the `*` is meant as text",
    ),
    "second-document": (
        "a: 1\n---\nb: 2\n",
        (2, 1),
        "YAML: a second document starts here",
        "the file holds a single document: remove the `---` line, or what follows it",
    ),
    "undefined-alias-named-like-a-tab": (
        "a: *table\n",
        (1, 4),
        "YAML: `*table` refers to an anchor `&table` that is not defined before it",
        "`*` starts an alias: quote the value if the `*` is meant as text",
    ),
    "duplicate-anchor": (
        "a: &x 1\nb: &x 2\n",
        (2, 4),
        "YAML: the anchor `&x` is defined twice: first on line 1, column 4, and again here",
        "give each anchor its own name (and each `*x` the name of the one it means), or"
        " remove one `&x`",
    ),
    "colon-at-line-start": (
        "name: x\n: oops\n",
        (2, 1),
        "YAML: this line starts with `:`, but no key comes before it",
        "write the key before the `:` (`key: oops`); if `: oops` is text, quote the value it"
        " belongs to",
    ),
    "colon-at-line-start-nested": (
        "a:\n  b: 1\n  :\n",
        (3, 3),
        "YAML: this line starts with `:`, but no key comes before it",
        "write the key before the `:` (`key: value`)",
    ),
    "tab-indenting-a-key": (
        "character:\n\tcalm: 1\n",
        (2, 1),
        "YAML: a tab in the indentation",
        "YAML indents with spaces only: replace the tab with spaces",
    ),
    "tab-after-spaces": (
        "a:\n   \tb: 1\n",
        (2, 4),
        "YAML: a tab in the indentation",
        "YAML indents with spaces only: replace the tab with spaces",
    ),
    "list-item-on-the-line-of-its-key": (
        "name: x\ntools: - a\n",
        (2, 8),
        "YAML: a list item (`- `) cannot start on the line of its key `tools`",
        "put each `- ` item on its own line below `tools:`, indented; if the `-` is text,"
        ' quote the value: `tools: "- a"`',
    ),
    "tab-after-a-dash": (
        "tools:\n  -\tx\n",
        (2, 4),
        "YAML: a tab (`\\t`) after `-`, where YAML needs a space",
        "replace the tab with a space: `- x`",
    ),
}


@pytest.mark.parametrize(("text", "where", "message", "hint"), SYNTAX.values(), ids=list(SYNTAX))
def test_syntax_errors_say_the_likely_mistake(
    tmp_path: Path, text: str, where: tuple[int, int], message: str, hint: str
) -> None:
    issue = _load(tmp_path, text)
    assert isinstance(issue, Issue), issue
    assert (issue.code, (issue.line, issue.column), issue.message, issue.hint) == (
        "yaml-syntax",
        where,
        message,
        hint,
    )
    # PyYAML's own parser words its errors differently (`expected <block end>, but found
    # …`, `mapping values are not allowed here`): said the same.
    with pytest.raises(yaml.MarkedYAMLError) as caught:
        yaml.compose(text, Loader=yaml.SafeLoader)
    assert explain(caught.value, text) == (message, hint)


@pytest.mark.parametrize(
    "text", ["character:\tcalm\n", "character:\t{calm: 1}\n", "persona:\n  character:\tcalm\n"]
)
def test_a_tab_after_a_colon_is_said_as_a_tab(tmp_path: Path, text: str) -> None:
    """libyaml reads a tab after `key:` as a space; PyYAML's own parser and older libyaml
    refuse it. Said as the tab it is (never printed raw), with the fix: not "quote it"."""
    if yaml.__with_libyaml__:
        assert _data(tmp_path, text) == yaml.load(text, Loader=yaml.CSafeLoader)
    with pytest.raises(yaml.MarkedYAMLError) as caught:
        yaml.compose(text, Loader=yaml.SafeLoader)
    mark = caught.value.problem_mark
    libyaml_words = yaml.scanner.ScannerError(
        "while scanning for the next token",
        mark,
        "found character that cannot start any token",
        mark,
    )
    for exc in (caught.value, libyaml_words):
        message, hint = explain(exc, text)
        assert message == "YAML: a tab (`\\t`) after `character:`, where YAML needs a space"
        assert hint.startswith("replace the tab with a space: `character: ")


@pytest.mark.parametrize(
    "text",
    [
        "a: @x\ty\n",
        "a:\n\t\n  b: 1\n",
        "a: x\n\ty\n",
        "a: |\n  x\n\ty\n",
        "- \t{x: 1}\n",
        "? a\n:\tb\n",
        "a:\t\t\n\tb: 1\n",
        "a: 1\t\nb: 2\n",
        'a: "x"\t# c\n',
    ],
)
def test_no_message_prints_a_raw_tab(tmp_path: Path, text: str) -> None:
    loaders: list[type[yaml.SafeLoader] | type[yaml.CSafeLoader]] = [yaml.SafeLoader]
    if yaml.__with_libyaml__:
        loaders.append(yaml.CSafeLoader)
    for loader in loaders:
        try:
            yaml.compose(text, Loader=loader)
        except yaml.MarkedYAMLError as exc:
            message, hint = explain(exc, text)
            assert "\t" not in message + hint, (message, hint)
            assert "cannot start with `\\t`" not in message, message  # a tab is no value
            mark = exc.problem_mark
            assert mark is not None
            if text.splitlines()[mark.line][: mark.column].strip():  # not in the indentation
                assert "indentation" not in message, message
    issue = _load(tmp_path, text)
    if isinstance(issue, Issue):
        assert "\t" not in issue.message + issue.hint, issue


KEY_ANCHORS = {
    "anchored-key-used-as-value": "name: x\n&t title: y1\ndescription: *t\n",
    "anchored-nested-key": "a:\n  &k b: 1\nc: *k\n",
    "alias-as-key": "a: &k b\n*k : 1\n",
    "alias-as-nested-key": "a: &k b\nc:\n  *k : 1\n",
    "alias-as-key-in-a-list-item": "a: &k b\nl:\n  - *k : 1\n",
    "flow-mapping": "{&k a: 1, b: *k}\n",
    "explicit-key": "? &k a\n: *k\n",
    "key-as-its-own-value": "&k a: *k\n",
    "integer-key": "&n 1: x\nv: *n\n",
}


@pytest.mark.parametrize("text", KEY_ANCHORS.values(), ids=list(KEY_ANCHORS))
def test_anchors_and_aliases_on_keys_read_as_safe_load(tmp_path: Path, text: str) -> None:
    assert _data(tmp_path, text) == yaml.safe_load(text)


def test_an_alias_key_is_a_key_as_written_located_at_the_alias(tmp_path: Path) -> None:
    """A key reads as its text whatever it resolves to (`true:` is the key "true"), through
    an alias too; the anchored node read as a value keeps its type."""
    doc = _load(tmp_path, "&b true: x\nv: *b\nw: &c 1.5\n*c : y\n")
    assert isinstance(doc, Document)
    assert doc.data == {"true": "x", "v": True, "w": 1.5, "1.5": "y"}
    assert doc.keys[("1.5",)] == Loc(doc.file, 4, 1)


@pytest.mark.parametrize(
    ("text", "code", "where", "message"),
    [
        ("a: &m {x: 1}\n*m : 1\n", "yaml-syntax", (2, 1), "`*m` refers to a mapping"),
        ("a: &s [1]\nb:\n  *s : 1\n", "yaml-syntax", (3, 3), "`*s` refers to a list"),
        ("a: &m {*m : 1}\n", "yaml-alias-limit", (1, 8), "an alias refers to itself"),
        ("a: &k b\nc: {b: 1, *k : 2}\n", "yaml-duplicate-key", (2, 11), "duplicate key 'b'"),
    ],
)
def test_alias_keys_refused_located(
    tmp_path: Path, text: str, code: str, where: tuple[int, int], message: str
) -> None:
    issue = _load(tmp_path, text)
    assert isinstance(issue, Issue), issue
    assert (issue.code, (issue.line, issue.column)) == (code, where), issue
    assert message in issue.message, issue


def test_alias_bomb_is_refused_at_the_first_alias(tmp_path: Path) -> None:
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, 10):
        refs = ", ".join([f"*l{level - 1}"] * 9)
        lines.append(f"l{level}: &l{level} [{refs}]")
    issue = _load(tmp_path, "\n".join(lines) + "\n")
    assert isinstance(issue, Issue)
    assert issue.code == "yaml-alias-limit"
    assert str(MAX_ALIAS_EXPANSION) in issue.message


def test_small_aliases_are_fine(tmp_path: Path) -> None:
    data = _data(tmp_path, "base: &b {x: 1}\nuse: *b\n")
    assert data == {"base": {"x": 1}, "use": {"x": 1}}


def test_an_alias_is_a_copy_located_at_the_alias(tmp_path: Path) -> None:
    doc = _load(tmp_path, "base: &b {x: [1]}\nuse: *b\n")
    assert isinstance(doc, Document)
    assert doc.data["use"] == doc.data["base"] and doc.data["use"] is not doc.data["base"]
    assert doc.data["use"]["x"] is not doc.data["base"]["x"]
    assert doc.values[("use",)] == Loc(doc.file, 2, 6)
    assert ("use", "x") not in doc.values and ("base", "x") in doc.values


@pytest.mark.parametrize(("uses", "ok"), [(100, True), (101, False)])
def test_alias_expansion_limit_both_sides(tmp_path: Path, uses: int, ok: bool) -> None:
    """An alias counts the nodes it expands to: 100 uses of a 100-node list are exactly
    the limit; the 101st use is refused where it is written."""
    assert MAX_ALIAS_EXPANSION == 100 * 100
    items = ", ".join(["x"] * 99)
    text = f"a: &a [{items}]\nuse:\n" + "  - *a\n" * uses
    loaded = _load(tmp_path, text)
    if ok:
        assert isinstance(loaded, Document) and len(loaded.data["use"]) == uses
    else:
        assert isinstance(loaded, Issue) and loaded.code == "yaml-alias-limit"
        assert (loaded.line, loaded.column) == (3 + 100, 5)


@pytest.mark.parametrize(("brackets", "ok"), [(62, True), (63, False)])
def test_depth_limit_through_an_alias_both_sides(tmp_path: Path, brackets: int, ok: bool) -> None:
    """The nesting limit counts what an alias expands to, located at the alias."""
    assert MAX_DEPTH == 64
    text = "a: &a 1\nuse: " + "[" * brackets + "*a" + "]" * brackets + "\n"
    loaded = _load(tmp_path, text)
    if ok:
        assert isinstance(loaded, Document)
    else:
        assert isinstance(loaded, Issue) and loaded.code == "yaml-depth-limit"
        assert (loaded.line, loaded.column) == (2, 6 + brackets)


@pytest.mark.parametrize(
    ("text", "code", "message"),
    [
        ("a: &a [1, *a]\n", "yaml-alias-limit", "an alias refers to itself"),
        ("a: *nowhere\n", "yaml-syntax", "nowhere"),
        ("a: &x 1\nb: &x 2\n", "yaml-syntax", "x"),
        ("a: 1\n---\nb: 2\n", "yaml-syntax", "document"),
    ],
)
def test_what_the_composer_refuses(tmp_path: Path, text: str, code: str, message: str) -> None:
    loaded = _load(tmp_path, text)
    assert isinstance(loaded, Issue) and loaded.code == code
    assert message in loaded.message + loaded.hint


def test_file_size_limit_both_sides(tmp_path: Path) -> None:
    head = "a: "
    fits = head + "x" * (MAX_FILE_BYTES - len(head) - 1) + "\n"
    assert len(fits.encode()) == MAX_FILE_BYTES
    assert isinstance(_load(tmp_path, fits), Document)
    over = head + "x" * (MAX_FILE_BYTES - len(head)) + "\n"
    issue = _load(tmp_path, over)
    assert isinstance(issue, Issue)
    assert issue.code == "file-too-large"
    assert "1 MiB" in issue.message


def test_missing_file_and_bad_encoding(tmp_path: Path) -> None:
    missing = load_document(tmp_path / "nope.yaml")
    assert isinstance(missing, Issue)
    assert missing.code == "file-not-found"
    path = tmp_path / "latin.yaml"
    path.write_bytes(b"a: 1\nb: caf\xe9\n")
    bad = load_document(path)
    assert isinstance(bad, Issue)
    assert (bad.code, bad.line) == ("yaml-syntax", 2)


def test_format_path() -> None:
    assert format_path(("tools", 2, "parameters")) == "tools[2].parameters"
    assert format_path(()) == ""


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The file names ``parse_document`` is called for, from now on."""
    from buddy.manifest import yamlio

    calls: list[str] = []
    real = yamlio.parse_document

    def counting(text: str, file: str, *, allow_list: bool = False) -> Document:
        calls.append(file)
        return real(text, file, allow_list=allow_list)

    monkeypatch.setattr(yamlio, "parse_document", counting)
    return calls


def test_a_file_read_again_is_parsed_once_and_never_shared(
    tmp_path: Path, parsed: list[str]
) -> None:
    """A shared trait file read by every buddy is parsed once per text; each reader gets
    its own data, and an edited file is parsed again."""
    path = tmp_path / "calm.yaml"
    path.write_text("habits: [喝茶]\n", encoding="utf-8")
    first, second = load_document(path), load_document(path)
    assert isinstance(first, Document) and isinstance(second, Document)
    assert len(parsed) == 1 and first.data == second.data == {"habits": ["喝茶"]}
    first.data["habits"].append("散步")
    first.values.clear()
    third = load_document(path)
    assert isinstance(third, Document) and third.data == {"habits": ["喝茶"]}
    assert ("habits",) in third.values and len(parsed) == 1
    path.write_text("habits: [跑步]\n", encoding="utf-8")
    fourth = load_document(path)
    assert isinstance(fourth, Document) and fourth.data == {"habits": ["跑步"]}
    assert len(parsed) == 2


@pytest.mark.parametrize(("extra", "parses"), [(0, 1), (1, 2)])
def test_only_files_up_to_64_kib_are_kept_parsed(
    tmp_path: Path, parsed: list[str], extra: int, parses: int
) -> None:
    """The parse cache keeps texts up to ``_PARSED_TEXT_MAX`` characters, so it stays small."""
    from buddy.manifest import yamlio

    assert yamlio._PARSED_TEXT_MAX == 64 * 1024
    head = "note: "
    path = tmp_path / "big.yaml"
    path.write_text(head + "x" * (64 * 1024 - len(head) - 1 + extra) + "\n", encoding="utf-8")
    assert len(path.read_text(encoding="utf-8")) == 64 * 1024 + extra
    for _ in range(2):
        assert isinstance(load_document(path), Document)
    assert len(parsed) == parses

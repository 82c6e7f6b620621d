"""Property-based fuzzing of the manifest loader.

The property, for every input hypothesis builds: loading either returns a blueprint or
raises :class:`~buddy.errors.ManifestError` whose every issue is located — a file, and a
1-based line and column inside it (or ``0:0`` for a whole-file problem) — within
:data:`LOAD_SECONDS`. Nothing else escapes: no PyYAML, pydantic or Jinja2 error, no
``KeyError``/``TypeError``/``ValueError``/``OSError``/``RecursionError``.

The inputs: arbitrary YAML documents (dumped from random data, and raw YAML-ish text),
mutations of the example manifests (``manifests/aunt-tu``, ``manifests/cardio``, copied
with their plugins; the shared personas are buddy's own), arbitrary bytes, random persona templates,
random ``extends`` chains, and random trait files, widget ``schema.json`` files and
``data-access.json``. Loads call the compiler's ``load`` (what :func:`buddy.load` runs on
a cold start), so every example is really parsed, validated and compiled. The inputs the
fuzzing found crashing the loader are kept, minimized, in :data:`FOUND`.

Runs are deterministic (``derandomize=True``, no example database) and bounded, so the
suite is the same on every machine. For a longer local hunt, ``BUDDY_FUZZ_SCALE=20``
multiplies the number of examples and draws new random ones on every run.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import string
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from buddy.compile.compiler import load
from buddy.errors import ManifestError
from buddy.manifest import schema
from buddy.manifest.yamlio import MAX_DEPTH, MAX_FILE_BYTES
from tests.conftest import REPO

# "Never hang": one load of a small file takes milliseconds; the bound is generous so a
# slow CI machine passes, and a runaway loop or a walk of the whole disk still fails. It
# bounds the load's CPU time, which other processes sharing the machine (the suite's other
# workers) do not stretch as they stretch the time on the clock.
LOAD_SECONDS = 2.0
# A load still running after this long on the clock is interrupted (where SIGALRM exists),
# so a hang, busy or waiting, fails the test instead of stalling the suite.
HANG_SECONDS = 10.0
_SCALE = int(os.environ.get("BUDDY_FUZZ_SCALE", "1"))
# Whole-file problems are located at the file only (`0:0`, see tests/corpus/README.md).
_WHOLE_FILE_CODES = {"file-not-found", "widget-schema"}
EXAMPLES = ("aunt-tu", "cardio")


def _fuzz(examples: int) -> Callable[[Any], Any]:
    """Deterministic, bounded hypothesis settings for one property."""
    return settings(
        max_examples=examples * _SCALE,
        deadline=None,  # each load's time is asserted instead, with a wider bound
        derandomize=_SCALE == 1,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# ---------------------------------------------------------------- the property


class Hang(BaseException):
    """A load ran past :data:`HANG_SECONDS` (not an ``Exception``: no handler may absorb it)."""


@contextlib.contextmanager
def _interrupt_after(seconds: float) -> Iterator[None]:
    if not hasattr(signal, "setitimer"):  # pragma: no cover - Windows: timed afterwards only
        yield
        return

    def stop(signum: int, frame: FrameType | None) -> None:
        raise Hang(f"still loading after {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _inside(file: str, line: int, column: int) -> bool:
    """Whether ``line:column`` is a place in ``file``: on one of its lines, or just after."""
    text = Path(file).read_bytes().decode("utf-8-sig", errors="replace")
    # YAML breaks lines at \r\n, \r, \n, NEL, LS and PS (all among str.splitlines'); the
    # json module counts \n only. Either reading of the file will do.
    for lines in (text.splitlines(), text.split("\n")):
        if line <= len(lines) + 1:
            here = lines[line - 1] if line <= len(lines) else ""
            # A blank line inside a block scalar is located at the block's indentation.
            if not here.strip() or column <= len(here) + 1:
                return True
    return False


def _assert_located(error: ManifestError) -> None:
    """Every issue names a file and a place in it (or is a whole-file problem)."""
    assert error.issues, "a ManifestError without issues"
    for issue in error.issues:
        assert issue.file, issue
        assert issue.code, issue
        assert issue.message, issue
        if issue.line == 0:
            assert issue.column == 0, issue
            assert issue.code in _WHOLE_FILE_CODES, issue
            continue
        assert issue.line >= 1, issue
        assert issue.column >= 1, issue
        assert Path(issue.file).is_file(), issue
        assert _inside(issue.file, issue.line, issue.column), (issue, Path(issue.file).read_bytes())


def assert_loads_or_located(path: Path) -> None:
    """Loading ``path`` succeeds or raises a located ``ManifestError``, in time."""
    start = time.process_time()
    try:
        with _interrupt_after(HANG_SECONDS):
            load(path)
    except ManifestError as exc:
        _assert_located(exc)
    except (Exception, Hang) as exc:  # the property: nothing else escapes
        content = path.read_bytes()[:2000]
        raise AssertionError(f"{exc!r} escaped loading {path}, holding {content!r}") from exc
    elapsed = time.process_time() - start
    assert elapsed < LOAD_SECONDS, f"loading {path} took {elapsed:.2f} s of CPU time"


# ---------------------------------------------------------------- a project on disk


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project holding copies of the example buddies and their plugins (the shared
    persona templates are the ones buddy ships).

    Shared by every example of a test: each test writes its input under a file name of
    its own and never changes the copied files.
    """
    root = tmp_path_factory.mktemp("fuzz")
    (root / "pyproject.toml").write_text("")
    ignore = shutil.ignore_patterns("__pycache__", "*.flag")
    for name in EXAMPLES:
        shutil.copytree(REPO / "manifests" / name, root / "manifests" / name, ignore=ignore)
    shutil.copytree(REPO / "plugins", root / "plugins", ignore=ignore)
    for name in EXAMPLES:
        load(root / "manifests" / name)  # the starting points are valid
    return root


def _write(path: Path, content: str | bytes) -> Path:
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


# Manifest text to build inputs from (`_TOOL % (handler, parameters)` is one custom tool).
_MINIMAL = "name: fuzz\nmodel: test\npersona: {prompt: hi}\n"
_TOOL = "tools:\n  - {name: t, description: d, handler: %s, parameters: %s}\n"


# ---------------------------------------------------------------- strategies

_MODELS = [v for v in vars(schema).values() if isinstance(v, type) and issubclass(v, BaseModel)]
# Every field name of the schema, so random mappings often hit real keys.
FIELD_NAMES = sorted({name for model in _MODELS for name in model.model_fields})
TOP_LEVEL_KEYS = sorted(schema.manifest_model().model_fields)

# Scalars that YAML 1.1 and 1.2 read differently, near-valid values, and hostile text.
WEIRD_STRINGS = [
    *["", " ", "~", "null", "on", "off", "yes", "no", "y", "True", "FALSE"],
    *["22:30", "1:2:3", "0x1F", "0o17", "017", "1e3", ".inf", "-.inf", ".nan", "1_000"],
    *["2026-01-05", "2026-13-45", "2026-12-07T20:00:00+08:00", "2026-02-30T25:61:61"],
    *["*a", "&a", "!!binary", "!!python/object/apply:os.system", "<<", "- ", "? ", "|"],
    *["---", "...", "%YAML 1.2", "# c", "\t", "\n", "\r\n", "\x00", "\ufeff", "\u2028"],
    *["{{ buddy.name }}", "{{ nope }}", "{% if x %}", "{{", "{%", "{# c", "é", "中文", "😀"],
    *["test", "moonshot:kimi-k3", "ollama:qwen3", "openai-compatible:x", "nope:model"],
    *["plugins.aunt_tu:plan_menu", "plugins.cardio:guard", "os:system", "plugins.x:y"],
    *["memory.write", "memory.delete", "memory.list", "schedule", "data.updated"],
    *["workout.completed", "health.sleep", "Asia/Shanghai", "UTC", "proactive", "manual"],
    *["aunt-tu.md.j2", "companion.md.j2", "traits/gentle.yaml", "resources", "widgets"],
    *["buddy.yaml", "../cardio/buddy.yaml", "fuzz"],
]


def _long(text: str) -> str:
    return text * 3000


long_strings = st.sampled_from(["a", "中", "{{ x }}", "- "]).map(_long)

scalars: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),
    st.text(max_size=20),
    st.sampled_from(WEIRD_STRINGS),
    long_strings,
    st.dates(),
    st.datetimes(),
)
keys: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(FIELD_NAMES),
    st.text(max_size=12),
    st.sampled_from(WEIRD_STRINGS[:40]),
    st.integers(),
    st.booleans(),
    st.none(),
)
values: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=5),
    max_leaves=25,
)
# Documents that get past the schema's required keys, so the compiler's stages run too.
near_valid: st.SearchStrategy[dict[str, Any]] = st.fixed_dictionaries(
    {
        "name": st.just("fuzz") | st.sampled_from(WEIRD_STRINGS),
        "model": st.just("test") | values,
        "persona": st.fixed_dictionaries(
            {"prompt": st.just("hi {{ buddy.name }}") | st.sampled_from(WEIRD_STRINGS)}
        )
        | st.fixed_dictionaries({"template": st.sampled_from(WEIRD_STRINGS)})
        | values,
    },
    optional={key: values for key in TOP_LEVEL_KEYS if key not in ("name", "model", "persona")},
)
documents: st.SearchStrategy[Any] = st.one_of(
    near_valid,
    st.dictionaries(st.sampled_from(TOP_LEVEL_KEYS) | keys, values, max_size=8),
    values,
)


@st.composite
def dumped(draw: st.DrawFn, document: st.SearchStrategy[Any] = documents) -> str:
    """A document as PyYAML writes it, in block, flow or mixed style."""
    return yaml.safe_dump(
        draw(document),
        allow_unicode=draw(st.booleans()),
        default_flow_style=draw(st.sampled_from([False, True, None])),
        sort_keys=False,
        width=draw(st.sampled_from([80, 10**6])),
    )


YAML_ALPHABET = ":-[]{}&*!|>'\"#%@`,?~\\\n\t " + string.ascii_letters[:8] + "019é中\x00\x85\ufeff"
FRAGMENTS = [
    *["name: fuzz\n", "model: test\n", "persona:\n", "  prompt: hi\n", "  template: x\n"],
    *["tools:\n", "  - ", "- ", ": ", "? ", "&a ", "*a", "<<: *a\n", "!!str ", "!!map "],
    *["!!python/name:os.system ", "!custom ", "!<tag:yaml.org,2002:str> ", "{", "}", "["],
    *["]", ", ", "'", '"', "|\n", ">-\n", "|2+\n", "# c\n", "%YAML 1.1\n", "%TAG ! x:\n"],
    *["---\n", "...\n", "\t", "\n", "  ", "    ", "\\x", "\\u12", "22:30", "0x", "\r"],
]
raw_yaml: st.SearchStrategy[str] = st.lists(
    st.sampled_from(FRAGMENTS) | st.text(alphabet=YAML_ALPHABET, max_size=8), max_size=40
).map("".join)


# ---------------------------------------------------------------- 1. arbitrary YAML


@_fuzz(150)
@given(text=dumped())
def test_any_yaml_document_loads_or_is_located(examples: Path, text: str) -> None:
    """Random plain data dumped as YAML: a blueprint or located issues, nothing else."""
    assert_loads_or_located(_write(examples / "manifests" / "aunt-tu" / "any.yaml", text))


@_fuzz(300)
@given(text=raw_yaml)
def test_yaml_ish_text_loads_or_is_located(examples: Path, text: str) -> None:
    """Raw text over YAML's syntax characters: a blueprint or located issues."""
    assert_loads_or_located(_write(examples / "manifests" / "aunt-tu" / "raw.yaml", text))


# ---------------------------------------------------------------- 2. mutated examples

DataPath = tuple[str | int, ...]


def _paths(data: Any, here: DataPath = ()) -> list[DataPath]:
    """Every path into ``data`` (the root excluded), depth first."""
    out: list[DataPath] = []
    items = (
        data.items()
        if isinstance(data, dict)
        else enumerate(data)
        if isinstance(data, list)
        else ()
    )
    for key, value in items:
        out.append((*here, key))
        out.extend(_paths(value, (*here, key)))
    return out


def _get(data: Any, path: DataPath) -> Any:
    for part in path:
        data = data[part]
    return data


def _mutate_data(draw: st.DrawFn, data: Any) -> Any:
    """One structural change: delete, replace, retype, add a key, or swap list and mapping."""
    paths = _paths(data)
    path = draw(st.sampled_from(paths))
    parent, last = _get(data, path[:-1]), path[-1]
    value = parent[last]
    op = draw(
        st.sampled_from(["delete", "replace", "unknown-key", "swap", "huge", "empty", "null"])
    )
    if op == "delete":
        del parent[last]
    elif op == "replace":
        parent[last] = draw(values)
    elif op == "unknown-key":
        target = value if isinstance(value, dict) else parent
        if isinstance(target, dict):
            target[draw(keys)] = draw(values)
        else:
            target.append(draw(values))
    elif op == "swap":
        if isinstance(value, list):
            parent[last] = {str(i): item for i, item in enumerate(value)}
        elif isinstance(value, dict):
            parent[last] = draw(st.sampled_from([list(value), list(value.values())]))
        else:
            parent[last] = [value]
    elif op == "huge":
        parent[last] = draw(st.sampled_from(["x", "中", "{{ x }}", "- "])) * draw(
            st.sampled_from([1000, 100_000])
        )
    elif op == "empty":
        parent[last] = draw(st.sampled_from(["", [], {}]))
    else:
        parent[last] = None
    return data


def _mutate_text(draw: st.DrawFn, text: str) -> str:
    """One change to the text: lines duplicated, dropped, swapped or re-indented, chars in."""
    lines = text.splitlines(keepends=True)
    index = draw(st.integers(0, len(lines) - 1))
    op = draw(st.sampled_from(["duplicate", "drop", "swap", "indent", "insert", "truncate"]))
    if op == "duplicate":  # usually a duplicate key
        lines.insert(index, lines[index])
    elif op == "drop":
        del lines[index]
    elif op == "swap":
        other = draw(st.integers(0, len(lines) - 1))
        lines[index], lines[other] = lines[other], lines[index]
    elif op == "indent":
        stripped = lines[index].lstrip(" ")
        lines[index] = draw(st.sampled_from(["", " ", "  ", "\t", "      "])) + stripped
    elif op == "insert":
        at = draw(st.integers(0, len(text)))
        return text[:at] + draw(st.sampled_from(FRAGMENTS) | st.text(max_size=3)) + text[at:]
    else:
        return text[: draw(st.integers(0, len(text)))]
    return "".join(lines)


def _mutate_bytes(draw: st.DrawFn, raw: bytes) -> bytes:
    """A random byte in, or the file cut inside a multi-byte character."""
    at = draw(st.integers(0, len(raw)))
    if draw(st.booleans()):
        return raw[:at] + bytes([draw(st.integers(0, 255))]) + raw[at:]
    return raw[:at]


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, bytes]:
    """An example manifest after one to three mutations, at data, text or byte level."""
    name = draw(st.sampled_from(EXAMPLES))
    text = (REPO / "manifests" / name / "buddy.yaml").read_text(encoding="utf-8")
    for _ in range(draw(st.integers(1, 3))):
        level = draw(st.sampled_from(["data", "text", "text"]))
        if level == "data":
            data = _safe_load(text)
            if isinstance(data, dict) and data:
                text = yaml.safe_dump(_mutate_data(draw, data), allow_unicode=True, sort_keys=False)
                continue
        text = _mutate_text(draw, text) if text else text
    raw = text.encode("utf-8")
    if draw(st.integers(0, 4)) == 0:
        raw = _mutate_bytes(draw, raw)
    return name, raw


def _safe_load(text: str) -> Any:
    """The data of ``text`` as PyYAML reads it, or ``None`` when it is not YAML any more."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return None


@_fuzz(200)
@given(case=mutated())
def test_mutated_examples_load_or_are_located(examples: Path, case: tuple[str, bytes]) -> None:
    """The example manifests, mutated: a blueprint or located issues, nothing else."""
    name, raw = case
    assert_loads_or_located(_write(examples / "manifests" / name / "mutated.yaml", raw))


# ---------------------------------------------------------------- 3. bytes

PREFIXES = [b"", b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\x00", b"name: fuzz\n", b"\xc3"]


@_fuzz(200)
@given(prefix=st.sampled_from(PREFIXES), body=st.binary(max_size=300))
def test_any_bytes_load_or_are_located(examples: Path, prefix: bytes, body: bytes) -> None:
    """Arbitrary bytes (invalid UTF-8, BOMs, NUL): a located issue, nothing else."""
    path = _write(examples / "manifests" / "aunt-tu" / "bytes.yaml", prefix + body)
    assert_loads_or_located(path)


@pytest.mark.parametrize("size", [MAX_FILE_BYTES, MAX_FILE_BYTES + 1])
def test_size_limit_both_sides(examples: Path, size: int) -> None:
    """At the 1 MiB limit the manifest loads; one byte over, it is located at 1:1."""
    head = (REPO / "manifests" / "aunt-tu" / "buddy.yaml").read_bytes() + b"# "
    raw = head + b"x" * (size - len(head) - 1) + b"\n"
    path = _write(examples / "manifests" / "aunt-tu" / "big.yaml", raw)
    assert len(raw) == size
    assert_loads_or_located(path)
    if size > MAX_FILE_BYTES:
        with pytest.raises(ManifestError) as caught:
            load(path)
        assert [(i.code, i.line, i.column) for i in caught.value.issues] == [
            ("file-too-large", 1, 1)
        ]
    else:
        load(path)


def _nested_parameters(depth: int) -> str:
    """A manifest whose tool's parameter schema makes the document ``depth`` levels deep."""
    schema = "{type: string}"  # levels: mapping, tools, tool, parameters, properties, a: 6
    for _ in range(depth - 7):
        schema = f"{{type: array, items: {schema}}}"
    parameters = f"{{type: object, properties: {{a: {schema}}}}}"
    return _MINIMAL + _TOOL % ("plugins.aunt_tu:plan_menu", parameters)


@pytest.mark.parametrize("depth", [MAX_DEPTH, MAX_DEPTH + 1])
def test_nesting_limit_both_sides(examples: Path, depth: int) -> None:
    """At the nesting limit a manifest compiles; one level deeper is a located issue."""
    path = _write(examples / "manifests" / "aunt-tu" / "deep.yaml", _nested_parameters(depth))
    assert_loads_or_located(path)
    if depth > MAX_DEPTH:
        with pytest.raises(ManifestError) as caught:
            load(path)
        assert [i.code for i in caught.value.issues] == ["yaml-depth-limit"]
    else:
        assert load(path).tools[0].parameters["properties"]["a"]["type"] == "array"


# ---------------------------------------------------------------- 4. persona templates

JINJA_FRAGMENTS = [
    *["{{", "}}", "{%", "%}", "{#", "#}", "{%-", "-%}", " ", "\n", "x", "1", "'s'", "(", ")"],
    *["if", "elif", "else", "endif", "for", "in", "endfor", "block", "endblock", "set", "="],
    *["extends", "include", "import", "from", "macro", "endmacro", "call", "endcall", "raw"],
    *["endraw", "with", "endwith", "filter", "endfilter", "super()", "caller()", "loop"],
    *["buddy.name", "traits", "now", "conversation.kind", "specialty", "nope", "|", "upper"],
    *["'companion.md.j2'", "'aunt-tu.md.j2'", "'fuzz.md.j2'", "'nope.j2'", "range(3)"],
    *["__class__", "__subclasses__()", "[0]", ".", "~", "+", "*", "/", "//", "0", "none"],
]
templates: st.SearchStrategy[str] = st.lists(
    st.sampled_from(JINJA_FRAGMENTS) | st.text(max_size=4), max_size=40
).map("".join)


@_fuzz(150)
@given(template=templates)
@example(template="{% extends 'fuzz.md.j2' %}")  # extends itself
@example(template="{% include 'nope.j2' %}")
@example(template="{{ ''.__class__.__mro__ }}")
def test_random_persona_template_loads_or_is_located(examples: Path, template: str) -> None:
    """A valid manifest naming a random template: a blueprint or located issues."""
    folder = examples / "manifests" / "aunt-tu"
    manifest = (folder / "buddy.yaml").read_text(encoding="utf-8")
    _write(folder / "fuzz.md.j2", template)
    path = _write(
        folder / "template.yaml",
        manifest.replace("template: aunt-tu.md.j2", "template: fuzz.md.j2"),
    )
    assert_loads_or_located(path)


@_fuzz(200)
@given(prompt=templates)
def test_random_inline_prompt_loads_or_is_located(examples: Path, prompt: str) -> None:
    """An inline ``persona.prompt`` with random template text: a blueprint or located issues."""
    document = {"name": "fuzz", "model": "test", "persona": {"prompt": prompt}}
    text = yaml.safe_dump(document, allow_unicode=True, default_style="|")
    assert_loads_or_located(_write(examples / "manifests" / "aunt-tu" / "prompt.yaml", text))


# ---------------------------------------------------------------- 5. extends

extends_targets = st.one_of(
    st.sampled_from(["base.yaml", "chain.yaml", "../cardio/buddy.yaml", "buddy.yaml", ".", "/"]),
    st.text(max_size=12),
)


@_fuzz(100)
@given(target=extends_targets, base=dumped() | raw_yaml, back=st.booleans())
def test_random_extends_loads_or_is_located(
    examples: Path, target: str, base: str, back: bool
) -> None:
    """``extends`` to a random path, a random base, or back to itself (a cycle)."""
    folder = examples / "manifests" / "aunt-tu"
    _write(folder / "base.yaml", base)
    # `chain.yaml` extends back to the child when `back`: a two-manifest cycle.
    _write(folder / "chain.yaml", "extends: extends.yaml\n" if back else base)
    text = yaml.safe_dump({"extends": target, "name": "fuzz"}, allow_unicode=True)
    assert_loads_or_located(_write(folder / "extends.yaml", text))


# ---------------------------------------------------------------- 6. files a manifest names

json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
json_keys = st.sampled_from(["title", "description", "modules", "record", "type", "properties"])
json_values: st.SearchStrategy[Any] = st.recursive(
    json_scalars | st.sampled_from(["object", "string", "health.sleep", "x"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(json_keys | st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
# The named files hold YAML or strict JSON; give each kind text of both sorts.
file_texts = st.one_of(json_values.map(json.dumps), dumped(values), raw_yaml, st.text(max_size=60))
NAMED = {
    "trait": ("fuzz-trait.yaml", "persona: {prompt: '{{ traits }}', traits: fuzz-trait.yaml}\n"),
    "widget": ("fuzz-widgets/w/schema.json", "persona: {prompt: hi}\nwidgets: fuzz-widgets\n"),
    "data": ("data-access.json", "persona: {prompt: hi}\n"),
}


@_fuzz(200)
@given(kind=st.sampled_from(sorted(NAMED)), content=file_texts)
@example(kind="widget", content='{"title": "t", "modules": {"m": {"record": {"type": 1}}}}')
@example(kind="data", content='{"requirements": [{"id": "health.sleep"}]}')
def test_random_named_files_load_or_are_located(examples: Path, kind: str, content: str) -> None:
    """A trait file, widget ``schema.json`` or ``data-access.json`` with random content."""
    folder = examples / "manifests" / f"named-{kind}"
    name, manifest = NAMED[kind]
    (folder / name).parent.mkdir(parents=True, exist_ok=True)
    _write(folder / name, content)
    assert_loads_or_located(_write(folder / "buddy.yaml", "name: fuzz\nmodel: test\n" + manifest))


# ---------------------------------------------------------------- 7. what the fuzzing found

# Inputs the fuzzing found escaping the loader as other exceptions, minimized; each must
# now be the located issue given here (code, line, column).
FOUND: dict[str, tuple[str, str, int, int]] = {
    # yaml.reader.ReaderError
    "nul-character": ("a: b\x00\n", "yaml-syntax", 1, 5),
    "control-character-after-cr": ("a: b\r\x07", "yaml-syntax", 2, 1),
    # AttributeError from PyYAML's timestamp constructor
    "timestamp-tag-on-text": ("a: !!timestamp soon\n", "yaml-syntax", 1, 4),
    # RecursionError
    "deep-flow-nesting": ("a: " + "[" * 500 + "]" * 500 + "\n", "yaml-depth-limit", 1, 67),
    "deep-block-nesting": (
        "a:\n" + "".join(" " * i + "-\n" for i in range(1, 500)),
        "yaml-depth-limit",
        65,
        65,
    ),
    "deep-through-aliases": (
        "a: &a " + "[" * 60 + "]" * 60 + "\nb: &b [[[[[[*a]]]]]]\nc: [[[[[[*b]]]]]]\n",
        "yaml-depth-limit",
        2,
        13,  # `*a` inside `b`, which then nests 67 levels deep
    ),
    # ValueError: embedded null byte
    "nul-in-extends": ('extends: "a\\0b"\n' + _MINIMAL, "extends-missing", 1, 10),
    "nul-in-resources": (_MINIMAL + 'resources: "a\\0b"\n', "dir-not-found", 4, 12),
    # OSError: File name too long
    "long-extends": ("extends: " + "a" * 300 + "\n" + _MINIMAL, "extends-missing", 1, 10),
    "long-widgets": (_MINIMAL + "widgets: " + "a" * 300 + "\n", "dir-not-found", 4, 10),
    "long-trait": (
        "name: fuzz\nmodel: test\npersona: {prompt: hi, traits: " + "a" * 300 + "}\n",
        "trait-not-found",
        3,
        31,
    ),
    "long-handler-module": (
        _MINIMAL + _TOOL % ("plugins." + "a" * 300 + ":f", "{type: object}"),
        "handler-module-missing",
        5,
        40,
    ),
    # TypeError from json.dumps(sort_keys=True) on a number key next to a string key
    "number-key-in-parameters": (
        _MINIMAL
        + _TOOL % ("plugins.aunt_tu:plan_menu", "{type: object, properties: {1: {}, a: {}}}"),
        "tool-schema",
        5,
        79,
    ),
    # A template line past the end of the file: `\n` escapes are not file lines, and blank
    # lines opening a block scalar are
    "blank-lines-opening-a-block-prompt": (
        "name: fuzz\nmodel: test\npersona:\n  prompt: |\n\n\n    {{ nope }}\n",
        "template-undefined",
        7,
        8,  # the name, inside `{{ }}`
    ),
    "escaped-newlines-in-prompt": (
        'name: fuzz\nmodel: test\npersona:\n  prompt: "{{\\n\\n\\e"\n',
        "template-syntax",
        4,
        11,
    ),
}


@pytest.mark.parametrize(("text", "code", "line", "column"), list(FOUND.values()), ids=list(FOUND))
def test_found_by_fuzzing(examples: Path, text: str, code: str, line: int, column: int) -> None:
    """Each input the fuzzing found is now a located issue, at the right place."""
    path = _write(examples / "manifests" / "aunt-tu" / "found.yaml", text)
    assert_loads_or_located(path)
    with pytest.raises(ManifestError) as caught:
        load(path)
    assert (code, line, column) in [(i.code, i.line, i.column) for i in caught.value.issues], (
        caught.value
    )

"""The loader reads only the project's own, bounded, regular, strict files.

Every attack here is a file a buddy names or holds: an ``extends`` out of the project, a
symlinked manifest, widget folder, ``schema.json`` or ``data-access.json``; a JSON file
nested 100,000 levels deep; a 3 GiB or FIFO resource; NaN in a JSON file. Each must be a
located :class:`~buddy.errors.Issue` — never a traceback, a hang or a file read from
outside the project. "Not read" is proved with an audit hook that records every file
opened while the loader runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import buddy
from buddy.capabilities.resources.conversation import Resources
from buddy.capabilities.resources.limits import MAX_RESOURCE_BYTES, MAX_RESOURCES_BYTES
from buddy.compile.compiler import check
from buddy.errors import Issue, ManifestError
from buddy.manifest.yamlio import MAX_DEPTH
from tests.conftest import MINIMAL, Write

# A load of these small projects takes milliseconds; a FIFO read would block forever.
HANG_SECONDS = 10.0
WIDGET = {"title": "菜单", "modules": {"dishes": {"record": {"type": "object"}}}}
RECORDS = {"type": "object", "properties": {"n": {"type": "number", "maximum": 10}}}

_RECORDING: list[list[str]] = []  # the paths opened, while `_recording` runs


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and _RECORDING and isinstance(args[0], str | bytes | Path):
        _RECORDING[-1].append(os.fsdecode(args[0]))


sys.addaudithook(_audit)  # hooks cannot be removed; it records only inside `_recording`


@contextlib.contextmanager
def _recording() -> Iterator[list[str]]:
    _RECORDING.append([])
    try:
        yield _RECORDING[-1]
    finally:
        _RECORDING.pop()


class Hang(BaseException):
    """The loader ran past :data:`HANG_SECONDS` (not an ``Exception``: nothing absorbs it)."""


@contextlib.contextmanager
def _no_hang() -> Iterator[None]:
    def stop(signum: int, frame: FrameType | None) -> None:
        raise Hang(f"still loading after {HANG_SECONDS} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, HANG_SECONDS)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _check(path: Path) -> tuple[Any, list[Issue], list[str]]:
    """Validate and compile ``path`` with a hang guard, recording every file opened."""
    with _no_hang(), _recording() as opened:
        blueprint, issues = check(path)
    return blueprint, issues, opened


def _codes(issues: list[Issue]) -> list[tuple[str, str, int, int]]:
    return [(Path(i.file).name, i.code, i.line, i.column) for i in issues]


@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder beside the project, holding what an attacker would pull in."""
    folder = tmp_path_factory.mktemp("outside")
    (folder / "base.yaml").write_text("name: stolen\nmodel: test\npersona: {prompt: SECRET}\n")
    (folder / "schema.json").write_text(json.dumps(WIDGET))
    (folder / "data-access.json").write_text('{"requirements": []}')
    (folder / "secret.md").write_text("SECRET")
    (folder / "menu").mkdir()
    (folder / "menu" / "schema.json").write_text(json.dumps(WIDGET))
    return folder


def _never_read(opened: list[str], outside: Path) -> None:
    leaked = [p for p in opened if p == "/etc/passwd" or Path(p).is_relative_to(outside)]
    assert not leaked, f"read before it was refused: {leaked}"


# ------------------------------------------------------------------ 15. inside the project


@pytest.mark.parametrize(
    "target",
    ["../{outside}/base.yaml", "{outside_abs}/base.yaml", "/etc/passwd", "../../../../etc/passwd"],
)
def test_extends_out_of_the_project_is_refused_before_it_is_read(
    write: Write, project: Path, outside: Path, target: str
) -> None:
    """`extends` climbing out, or absolute, is `file-outside-project` at the value."""
    rel = os.path.relpath(outside, project)
    named = target.format(outside=rel.removeprefix("../"), outside_abs=outside)
    path = write({"buddy.yaml": f"extends: {named}\n" + MINIMAL})
    blueprint, issues, opened = _check(path)
    assert blueprint is None
    assert _codes(issues) == [("buddy.yaml", "file-outside-project", 1, 10)]
    assert "outside the project" in issues[0].message
    _never_read(opened, outside)


def test_extends_of_a_symlink_leading_out_is_refused(
    write: Write, project: Path, outside: Path
) -> None:
    """A base inside the project that is a symlink to a file outside counts as outside."""
    path = write({"buddy.yaml": "extends: base.yaml\n" + MINIMAL})
    (project / "base.yaml").symlink_to(outside / "base.yaml")
    _, issues, opened = _check(path)
    assert _codes(issues) == [("buddy.yaml", "file-outside-project", 1, 10)]
    _never_read(opened, outside)


def test_a_base_extending_out_of_the_project_is_refused_where_it_is_written(
    write: Write, project: Path, outside: Path
) -> None:
    """The rule holds along the whole chain, and points into the base that wrote it."""
    path = write(
        {
            "buddy.yaml": "extends: shared/base.yaml\n" + MINIMAL,
            "shared/base.yaml": "extends: /etc/passwd\n",
        }
    )
    _, issues, opened = _check(path)
    assert _codes(issues) == [("base.yaml", "file-outside-project", 1, 10)]
    _never_read(opened, outside)


def test_extends_and_a_shared_persona_library_inside_the_project_still_work(
    write: Write, project: Path
) -> None:
    """A base and `manifests/personas` elsewhere under the root are the project's own."""
    path = write(
        {
            "manifests/tea/buddy.yaml": "extends: ../base/buddy.yaml\nname: tea\n",
            "manifests/base/buddy.yaml": (
                "name: base\nmodel: test\npersona:\n  template: friend.md.j2\n"
                "  traits: traits/warm.yaml\n"
            ),
            "manifests/personas/friend.md.j2": "我是{{ buddy.name }}，{{ traits.tone }}。",
            "manifests/personas/traits/warm.yaml": "tone: 温和\n",
        }
    )
    blueprint, issues, _ = _check(path)
    assert issues == []
    assert blueprint is not None and blueprint.persona.render() == "我是tea，温和。"


def test_a_manifest_that_is_a_symlink_out_of_the_project_is_refused_unread(
    project: Path, outside: Path
) -> None:
    """`buddy.yaml` itself symlinked to a file elsewhere: refused at the link, 0:0."""
    (project / "buddy.yaml").symlink_to(outside / "base.yaml")
    _, issues, opened = _check(project)
    assert _codes(issues) == [("buddy.yaml", "file-outside-project", 0, 0)]
    _never_read(opened, outside)


def test_a_manifest_symlinked_to_another_file_of_the_project_loads(
    write: Write, project: Path
) -> None:
    write({"real/buddy.yaml": MINIMAL})
    (project / "buddy.yaml").symlink_to(project / "real" / "buddy.yaml")
    blueprint, issues, _ = _check(project)
    assert issues == [] and blueprint is not None


@pytest.mark.parametrize(
    ("link", "to", "expected"),
    [
        ("widgets/menu", "menu", ("menu", "dir-outside-project", 0, 0)),
        ("widgets/menu/schema.json", "schema.json", ("schema.json", "file-outside-project", 0, 0)),
        (
            "data-access.json",
            "data-access.json",
            ("data-access.json", "file-outside-project", 0, 0),
        ),
        ("data-access.json", "missing.json", ("data-access.json", "file-outside-project", 0, 0)),
    ],
    ids=["widget-folder", "widget-schema", "data-access", "dangling-data-access"],
)
def test_symlinked_widgets_and_data_declarations_are_refused_unread(
    write: Write,
    project: Path,
    outside: Path,
    link: str,
    to: str,
    expected: tuple[str, str, int, int],
) -> None:
    """What would be uploaded to the platform cannot come from outside the project."""
    write({"buddy.yaml": MINIMAL})
    (project / link).parent.mkdir(parents=True, exist_ok=True)
    (project / link).symlink_to(outside / to)
    blueprint, issues, opened = _check(project)
    assert blueprint is None
    assert _codes(issues) == [expected]
    _never_read(opened, outside)


def test_widgets_and_data_symlinked_inside_the_project_still_work(
    write: Write, project: Path
) -> None:
    write(
        {
            "buddy.yaml": MINIMAL,
            "shared/menu/schema.json": json.dumps(WIDGET),
            "shared/data.json": '{"requirements": [{"id": "health.sleep", "purpose": "作息"}]}',
        }
    )
    (project / "widgets").mkdir()
    (project / "widgets" / "menu").symlink_to(project / "shared" / "menu")
    (project / "data-access.json").symlink_to(project / "shared" / "data.json")
    blueprint, issues, _ = _check(project)
    assert issues == [] and blueprint is not None
    assert [w.type for w in blueprint.sections["widgets"]] == ["menu"]
    assert [r.id for r in blueprint.sections["data"].requirements] == ["health.sleep"]


# ------------------------------------------------------------------ 16. JSON nesting


def _depth(value: Any) -> int:
    """Levels as the loader counts them: in ``{"a": ["x"]}`` ``"x"`` is level 3."""
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 1


def _widget_of_depth(depth: int) -> dict[str, Any]:
    inner: dict[str, Any] = {"type": "string"}
    # title/modules/dishes/record/properties/a: the record's field `a` is level 6.
    while _depth({"modules": {"d": {"record": {"properties": {"a": inner}}}}}) < depth:
        inner = {"type": "array", "items": inner}
    record = {"type": "object", "properties": {"a": inner}}
    widget = {"title": "深", "modules": {"dishes": {"record": record}}}
    assert _depth(widget) == depth
    return widget


@pytest.mark.parametrize("kind", ["widgets/menu/schema.json", "data-access.json"])
def test_a_json_file_100000_levels_deep_is_a_located_issue(
    write: Write, project: Path, kind: str
) -> None:
    """Not a RecursionError: the 65th level is `json-depth-limit`, at its bracket."""
    path = write({"buddy.yaml": MINIMAL, kind: "[" * 100_000 + "]" * 100_000})
    _, issues, _ = _check(path)
    assert _codes(issues) == [(Path(kind).name, "json-depth-limit", 1, MAX_DEPTH + 1)]
    assert f"more than {MAX_DEPTH} levels" in issues[0].message


@pytest.mark.parametrize("depth", [MAX_DEPTH, MAX_DEPTH + 1])
def test_widget_schema_nesting_limit_both_sides(write: Write, project: Path, depth: int) -> None:
    """At the YAML nesting limit a widget schema compiles; one level deeper it is refused."""
    text = json.dumps(_widget_of_depth(depth), indent=1)
    path = write({"buddy.yaml": MINIMAL, "widgets/menu/schema.json": text})
    blueprint, issues, _ = _check(path)
    if depth > MAX_DEPTH:
        assert [i.code for i in issues] == ["json-depth-limit"]
        # At the value 65 levels down: the innermost `{"type": "string"}`.
        line = text.splitlines()[issues[0].line - 1]
        assert line[issues[0].column - 1 :].startswith('"type": "string"'), line
    else:
        assert issues == [] and blueprint is not None


@pytest.mark.parametrize("depth", [MAX_DEPTH, MAX_DEPTH + 1])
def test_data_access_nesting_limit_both_sides(write: Write, project: Path, depth: int) -> None:
    """At the limit the declaration's own rules apply (`unknown-key`); deeper is refused first."""
    deep: Any = "x"
    while _depth({"requirements": [{"extra": deep}]}) < depth:
        deep = [deep]
    text = json.dumps({"requirements": [{"id": "health.sleep", "purpose": "p", "extra": deep}]})
    path = write({"buddy.yaml": MINIMAL, "data-access.json": text})
    _, issues, _ = _check(path)
    expected = "json-depth-limit" if depth > MAX_DEPTH else "unknown-key"
    assert [i.code for i in issues] == [expected]


# ------------------------------------------------------------------ 17. regular, bounded files


def _sparse(path: Path, size: int) -> Path:
    """A file of ``size`` zero bytes that takes no disk space (never write gigabytes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as stream:
        stream.truncate(size)
    return path


def test_a_3_gib_resource_is_refused_without_reading_it(write: Write, project: Path) -> None:
    path = write({"buddy.yaml": MINIMAL})
    _sparse(project / "resources" / "huge.md", 3 * 1024**3)
    _, issues, _ = _check(path)
    assert _codes(issues) == [("huge.md", "file-too-large", 1, 1)]
    assert str(MAX_RESOURCE_BYTES) in issues[0].message


@pytest.mark.parametrize("size", [MAX_RESOURCE_BYTES, MAX_RESOURCE_BYTES + 1])
def test_resource_size_limit_both_sides(write: Write, project: Path, size: int) -> None:
    path = write({"buddy.yaml": MINIMAL})
    _sparse(project / "resources" / "big.md", size)
    blueprint, issues, _ = _check(path)
    if size > MAX_RESOURCE_BYTES:
        assert _codes(issues) == [("big.md", "file-too-large", 1, 1)]
    else:
        assert issues == [] and blueprint is not None
        assert [r.size for r in blueprint.sections["resources"]] == [size]


@pytest.mark.parametrize("extra", [0, 1])
def test_total_resource_limit_both_sides(write: Write, project: Path, extra: int) -> None:
    """Exactly the total limit in full-size files loads; one byte more is refused."""
    path = write({"buddy.yaml": MINIMAL})
    count = MAX_RESOURCES_BYTES // MAX_RESOURCE_BYTES
    for index in range(count):
        _sparse(project / "resources" / f"{index:02}.md", MAX_RESOURCE_BYTES)
    if extra:
        _sparse(project / "resources" / "zz.md", extra)
    blueprint, issues, _ = _check(path)
    if extra:
        assert _codes(issues) == [("zz.md", "resources-too-large", 0, 0)]
        assert str(MAX_RESOURCES_BYTES) in issues[0].message
    else:
        assert issues == [] and blueprint is not None
        assert sum(r.size for r in blueprint.sections["resources"]) == MAX_RESOURCES_BYTES


@pytest.mark.parametrize(
    "name", ["resources/pipe.md", "buddy.yaml", "data-access.json", "widgets/menu/schema.json"]
)
def test_a_fifo_is_refused_not_waited_on(write: Write, project: Path, name: str) -> None:
    """A named pipe would block the reader forever: it is `file-not-regular`, at once."""
    if name != "buddy.yaml":
        write({"buddy.yaml": MINIMAL})
    (project / name).parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(project / name)
    blueprint, issues, _ = _check(project)
    assert blueprint is None
    assert _codes(issues) == [(Path(name).name, "file-not-regular", 0, 0)]
    assert "FIFO" in issues[0].message


@pytest.mark.parametrize(
    ("manifest", "fifo", "code"),
    [
        ("extends: base.yaml\n" + MINIMAL, "base.yaml", "extends-missing"),
        (
            MINIMAL.replace("persona:\n", "persona:\n  traits: t.yaml\n"),
            "t.yaml",
            "file-not-regular",
        ),
        (
            "name: case\nmodel: test\npersona:\n  template: p.md.j2\n",
            "p.md.j2",
            "file-not-regular",
        ),
    ],
    ids=["extends", "trait", "template"],
)
def test_fifos_named_like_other_files_are_not_opened(
    write: Write, project: Path, manifest: str, fifo: str, code: str
) -> None:
    """A FIFO as an extended manifest, trait file or template is not a file to read."""
    path = write({"buddy.yaml": manifest})
    os.mkfifo(project / fifo)
    _, issues, _ = _check(path)
    assert [i.code for i in issues] == [code]


def test_a_resource_that_is_not_utf8_is_located(write: Write, project: Path) -> None:
    """A running buddy serves resources as text: bad bytes are found at validate time."""
    path = write({"buddy.yaml": MINIMAL, "resources/a.md": "ok\n"})
    (project / "resources" / "a.md").write_bytes(b"ok\n\xff\n")
    _, issues, _ = _check(path)
    assert _codes(issues) == [("a.md", "resource-encoding", 2, 1)]


@pytest.mark.parametrize("change", ["fifo", "too-large", "not-utf8"])
def test_the_runtime_reads_resources_under_the_same_rules(
    write: Write, project: Path, change: str
) -> None:
    """A resource changed after the compile is refused when the buddy starts, not hung on."""
    path = write({"buddy.yaml": MINIMAL, "resources/a.md": "A", "resources/b.md": "B"})
    blueprint = buddy.load(path, cache=False)
    assert Resources.load(blueprint.sections["resources"]).read("b.md") == "B"
    target = project / "resources" / "b.md"
    target.unlink()
    if change == "fifo":
        os.mkfifo(target)
    elif change == "too-large":
        _sparse(target, MAX_RESOURCE_BYTES + 1)
    else:
        target.write_bytes(b"\xff")
    code = {"fifo": "file-not-regular", "too-large": "file-too-large"}.get(
        change, "resource-encoding"
    )
    with _no_hang(), pytest.raises(ManifestError) as refused:
        Resources.load(blueprint.sections["resources"])
    assert [(Path(i.file).name, i.code) for i in refused.value.issues] == [("b.md", code)]


# ------------------------------------------------------------------ 18. strict JSON


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"])
def test_json_constants_beyond_the_standard_are_refused_where_written(
    write: Write, project: Path, constant: str
) -> None:
    """`"maximum": NaN` would validate and then print as invalid JSON from `buddy render`."""
    schema = (
        '{\n  "title": "菜单",\n  "modules": {"dishes": {"record": {"type": "object",\n'
        f'    "properties": {{"n": {{"type": "number", "maximum": {constant}}}}}}}}}}}\n}}\n'
    )
    path = write({"buddy.yaml": MINIMAL, "widgets/menu/schema.json": schema})
    _, issues, _ = _check(path)
    column = 4 + len('"properties": {"n": {"type": "number", "maximum": ') + 1
    assert _codes(issues) == [("schema.json", "widget-json", 4, column)]
    assert constant in issues[0].message


def test_nan_in_data_access_json_is_refused(write: Write, project: Path) -> None:
    path = write({"buddy.yaml": MINIMAL, "data-access.json": '{"requirements": NaN}'})
    _, issues, _ = _check(path)
    assert _codes(issues) == [("data-access.json", "data-json", 1, 18)]


@pytest.mark.parametrize(("number", "ok"), [("1e308", True), ("1e309", False)])
def test_the_largest_finite_number_is_accepted_and_the_next_power_is_not(
    write: Write, project: Path, number: str, ok: bool
) -> None:
    record = json.dumps(RECORDS).replace("10", number)
    schema = json.dumps(WIDGET).replace('{"type": "object"}', record)
    path = write({"buddy.yaml": MINIMAL, "widgets/menu/schema.json": schema})
    blueprint, issues, _ = _check(path)
    assert (
        (issues == [] and blueprint is not None)
        if ok
        else [i.code for i in issues] == ["widget-json"]
    )


def test_an_integer_too_long_to_convert_is_located(write: Write, project: Path) -> None:
    """Not the ValueError Python raises past 4300 digits."""
    schema = json.dumps(WIDGET).replace('"object"}', '"object", "maximum": ' + "9" * 5000 + "}")
    path = write({"buddy.yaml": MINIMAL, "widgets/menu/schema.json": schema})
    _, issues, _ = _check(path)
    assert [(i.code, i.line) for i in issues] == [("widget-json", 1)]
    assert issues[0].column > 1

"""The compiled-buddy cache behind ``buddy.load``: used only while nothing it depends on
has changed, never stale, never in the way."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import buddy
from buddy.compile import cache, compiler
from buddy.errors import ManifestError
from buddy.models.testing import OfflineModel
from buddy.runtime.agent import Agent
from tests.conftest import Write

FILES = {
    "buddy.yaml": """\
        name: cached
        model: test
        persona:
          template: companion.md.j2
          traits: traits/calm.yaml
          vars: {city: 杭州}
        tools:
          - resource_read
          - name: lookup
            description: Look a word up.
            handler: plugins.tools:lookup
            parameters:
              type: object
              properties: {word: {type: string}}
              required: [word]
        """,
    "personas/companion.md.j2": "我是 {{ buddy.name }}，住在{{ city }}，{{ traits.tone }}。\n",
    "personas/traits/calm.yaml": "tone: 说话慢慢的\n",
    "plugins/__init__.py": "",
    "plugins/tools.py": "def lookup(conversation, params):\n    return params['word']\n",
    "resources/notes.md": "notes\n",
}


class Compiles:
    """Counts real compiles (the cache answering means no compile)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = compiler.load

        def counted(*args: object, **kwargs: object) -> object:
            self.count += 1
            return real(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(compiler, "load", counted)


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> Compiles:
    monkeypatch.delenv("BUDDY_NO_CACHE", raising=False)
    return Compiles(monkeypatch)


@pytest.fixture
def manifest(write: Write) -> Path:
    return write(FILES)


def _edit_keeping_size_and_time(path: Path, old: str, new: str) -> None:
    """Change a file's content without changing its size or modification time."""
    assert len(old.encode()) == len(new.encode())
    info = path.stat()
    path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


def test_a_second_load_is_answered_from_the_cache(manifest: Path, compiles: Compiles) -> None:
    """The second load compiles nothing and gives an equivalent, working blueprint."""
    first = buddy.load(manifest)
    second = buddy.load(manifest.parent)
    assert compiles.count == 1
    assert cache.cache_file(manifest, None, None).is_file()
    assert second.tools == first.tools
    assert second.sections["resources"] == first.sections["resources"]
    assert second.files == first.files
    assert second.persona.files == first.persona.files
    assert second.persona.render(kind="group") == first.persona.render(kind="group")


@pytest.mark.anyio
async def test_a_cached_blueprint_runs_a_turn(manifest: Path, compiles: Compiles) -> None:
    """A blueprint read back from the cache runs its plugin tool and renders its persona."""
    buddy.load(manifest)
    agent = Agent(buddy.load(manifest), OfflineModel())
    outcome = await agent.run('/call lookup {"word": "茶"}')
    assert compiles.count == 1
    assert outcome.error is None
    assert "茶" in json.dumps(outcome.steps, ensure_ascii=False), outcome.steps


@pytest.mark.parametrize(
    ("name", "old", "new"),
    [
        ("buddy.yaml", "Look a word up.", "Find a word up."),
        ("personas/companion.md.j2", "住在", "生在"),
        ("personas/traits/calm.yaml", "慢慢", "轻轻"),
        ("plugins/tools.py", "params):", "values):"),
        ("resources/notes.md", "notes", "NOTES"),
    ],
)
def test_a_changed_dependency_is_compiled_again(
    manifest: Path, compiles: Compiles, name: str, old: str, new: str
) -> None:
    """Any edit of a file the buddy depends on recompiles, even with the same size and time."""
    buddy.load(manifest)
    _edit_keeping_size_and_time(manifest.parent / name, old, new)
    buddy.load(manifest)
    assert compiles.count == 2


ORIGINAL = {
    "orig/buddy.yaml": "name: orig\ntitle: Original\nmodel: test\npersona:\n  template: p.md.j2\n",
    "orig/p.md.j2": "我是{{ buddy.title }}。\n",
}


def _original(folder: Path) -> Path:
    """``buddy init orig``: a buddy folder that is its own project (no marker above it)."""
    for name, text in ORIGINAL.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder / "orig"


def _copy_with_title(folder: Path, title: str) -> Path:
    """``cp -r orig copy`` (its ``__pycache__`` too), then a new title in the copy."""
    copy = folder / "copy"
    shutil.copytree(folder / "orig", copy)
    assert list((copy / "__pycache__").glob("buddy.*.blueprint"))  # the original's cache
    manifest = copy / "buddy.yaml"
    manifest.write_text(
        manifest.read_text(encoding="utf-8").replace("Original", title), encoding="utf-8"
    )
    return copy


def test_a_copied_folder_loads_the_copy_not_the_original(
    tmp_path: Path, compiles: Compiles
) -> None:
    """A cache copied along with its folder was taken from another folder's files: the
    copy compiles its own manifest, and the original keeps its own cache."""
    original = buddy.load(_original(tmp_path))
    copy = _copy_with_title(tmp_path, "Copycat")
    blueprint = buddy.load(copy)
    assert (blueprint.title, blueprint.manifest.resolve()) == ("Copycat", copy / "buddy.yaml")
    assert blueprint.persona.render() == "我是Copycat。\n"
    assert set(blueprint.files).isdisjoint(original.files)
    assert compiles.count == 2
    assert buddy.load(copy).title == "Copycat"  # now from the copy's own cache
    assert buddy.load(tmp_path / "orig").title == "Original"
    assert compiles.count == 2


def test_a_chat_in_a_copied_folder_greets_as_the_copy(
    tmp_path: Path,
    compiles: Compiles,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`buddy chat copy` after `buddy chat orig` and `cp -r orig copy` is the copy's buddy."""
    from buddy.cli.main import main

    _original(tmp_path)
    for folder in ("orig", "copy"):
        if folder == "copy":
            _copy_with_title(tmp_path, "Copycat")
        monkeypatch.setattr(sys, "stdin", io.StringIO("/quit\n"))
        assert main(["chat", str(tmp_path / folder), "--model", "offline"]) == 0
    out = capsys.readouterr().out
    assert "和 Original 聊天" in out and "和 Copycat 聊天" in out, out


def test_a_new_file_that_shadows_a_template_is_seen(
    manifest: Path, write: Write, compiles: Compiles
) -> None:
    """A template added earlier on the search path takes over at once (a name-only change)."""
    assert "杭州" in buddy.load(manifest).persona.render()
    write({"companion.md.j2": "我换了一个开场白。\n"})  # the buddy's own folder comes first
    assert buddy.load(manifest).persona.render() == "我换了一个开场白。\n"
    assert compiles.count == 2


def test_a_new_resource_is_indexed(manifest: Path, write: Write, compiles: Compiles) -> None:
    """A resource file added after the cache was written appears in the index."""
    assert [r.path for r in buddy.load(manifest).sections["resources"]] == ["notes.md"]
    write({"resources/more.md": "more\n"})
    assert [r.path for r in buddy.load(manifest).sections["resources"]] == ["more.md", "notes.md"]
    assert compiles.count == 2


def test_a_manifest_broken_after_caching_is_reported(manifest: Path, compiles: Compiles) -> None:
    """A cache never hides a problem: the broken manifest raises its located error."""
    buddy.load(manifest)
    manifest.write_text(manifest.read_text(encoding="utf-8").replace("model: test", "model: 7"))
    with pytest.raises(ManifestError) as caught:
        buddy.load(manifest)
    assert caught.value.issues[0].line == 2
    assert compiles.count == 2


@pytest.mark.parametrize("swap", ["fifo", "large"])
def test_a_resource_swapped_after_caching_is_compiled_and_refused_not_read(
    manifest: Path, compiles: Compiles, swap: str
) -> None:
    """A resource replaced by a FIFO (or by a file over the limit) after the cache was
    written: the fingerprint does not open it (it used to hang, or read it whole)."""
    buddy.load(manifest)
    resource = manifest.parent / "resources" / "notes.md"
    resource.unlink()
    if swap == "fifo":
        os.mkfifo(resource)
    else:
        with resource.open("wb") as stream:
            stream.truncate(cache.MAX_FILE_BYTES + 1)  # sparse: nothing is written
    with pytest.raises(ManifestError) as caught:
        buddy.load(manifest)
    assert caught.value.issues[0].code == (
        "file-not-regular" if swap == "fifo" else "file-too-large"
    )
    assert compiles.count == 2


def test_an_invalid_manifest_is_never_cached(write: Write, compiles: Compiles) -> None:
    """Nothing is written for a buddy with problems."""
    manifest = write({"buddy.yaml": "name: broken\n"})
    for _ in range(2):
        with pytest.raises(ManifestError):
            buddy.load(manifest)
    assert compiles.count == 2
    assert not (manifest.parent / "__pycache__").exists()


def test_profiles_and_models_have_their_own_entries(manifest: Path, compiles: Compiles) -> None:
    """A model override is not answered with the compile of another choice."""
    assert buddy.load(manifest).model.provider == "test"
    assert buddy.load(manifest, model="offline").model.provider == "offline"
    assert buddy.load(manifest).model.provider == "test"
    assert buddy.load(manifest, model="offline").model.provider == "offline"
    assert compiles.count == 2


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_the_cache_can_be_switched_off(
    manifest: Path, compiles: Compiles, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """``cache=False`` and ``BUDDY_NO_CACHE=1`` compile every time and write nothing."""
    if how == "environment":
        monkeypatch.setenv("BUDDY_NO_CACHE", "1")
    for _ in range(2):
        buddy.load(manifest, cache=how != "argument")
    assert compiles.count == 2
    assert not (manifest.parent / "__pycache__").exists()


@pytest.mark.parametrize("content", [b"", b"not a pickle", b"\x80\x05K\x01."])
def test_a_damaged_cache_is_replaced(manifest: Path, compiles: Compiles, content: bytes) -> None:
    """A truncated or foreign cache file is ignored and rewritten."""
    buddy.load(manifest)
    target = cache.cache_file(manifest, None, None)
    target.write_bytes(content)
    buddy.load(manifest)
    buddy.load(manifest)
    assert compiles.count == 2
    assert target.read_bytes() != content


def test_an_unwritable_folder_still_loads(
    manifest: Path, compiles: Compiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only checkout compiles every time instead of failing."""
    (manifest.parent / "__pycache__").write_text("a file where the cache folder would go")
    buddy.load(manifest)
    buddy.load(manifest)
    assert compiles.count == 2


@pytest.mark.parametrize(("limit", "cached"), [(100, True), (5, False)])
def test_a_project_too_large_to_fingerprint_always_compiles(
    manifest: Path, compiles: Compiles, monkeypatch: pytest.MonkeyPatch, limit: int, cached: bool
) -> None:
    """Over ``MAX_FILES`` names under the root, walking could cost more than compiling."""
    monkeypatch.setattr(cache, "MAX_FILES", limit)
    buddy.load(manifest)
    buddy.load(manifest)
    assert compiles.count == (1 if cached else 2)


COMPANION = {
    "buddy.yaml": "name: c\nmodel: test\npersona:\n  prompt: hi\n"
    "memory:\n  auto: true\n  relations: [nickname]\ncharacter: traits/t.yaml\n",
    "traits/t.yaml": "name: t\nanger_sensitivity: 1.2\n",
}


@pytest.mark.parametrize("files", ["plain", "companion"])
def test_a_cached_start_imports_no_loader_or_network_stack(write: Write, files: str) -> None:
    """``buddy.load`` from the cache plus ``buddy.Agent`` import neither the loader's
    dependencies nor an HTTP client: that is what makes a restart fast — also for a
    buddy with the companion layer, whose runtime is standard library."""
    manifest = write(FILES if files == "plain" else COMPANION)
    heavy = ("pydantic", "yaml", "httpx", "websockets", "jsonschema", "buddy.manifest")
    code = (
        "import sys, buddy\n"
        "from buddy.models.testing import TestModel\n"
        f"blueprint = buddy.load({str(manifest)!r})\n"
        "from buddy.runtime.agent import Agent\n"
        "assert len(Agent(blueprint, TestModel()).layers) == (1 if 'memory' in blueprint.sections else 0)\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r}"
        f" or m.startswith('buddy.manifest')))"
    )
    env = {k: v for k, v in os.environ.items() if k != "BUDDY_NO_CACHE"}
    run = [sys.executable, "-c", code]
    first = subprocess.run(run, capture_output=True, text=True, check=True, env=env)
    assert "pydantic" in first.stdout  # the first start compiles
    second = subprocess.run(run, capture_output=True, text=True, check=True, env=env)
    assert second.stdout.strip() == "[]"


def _template_caches(folder: Path) -> list[Path]:
    """The compiled templates kept beside the project's templates."""
    return sorted(folder.glob("**/__pycache__/template-*.jinja"))


def test_compiled_templates_are_kept_on_disk_for_the_next_process(
    manifest: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next process loads the compiled template instead of compiling it: the entry
    is written once, read back, and replaced when the template changes."""
    monkeypatch.delenv("BUDDY_NO_CACHE", raising=False)
    from buddy.compile import persona

    buddy.load(manifest, cache=False)  # memory only
    assert _template_caches(manifest.parent) == []
    monkeypatch.setattr(persona._TemplateCache, "memory", {})  # a new process
    buddy.check(manifest)  # what `buddy validate` does
    written = _template_caches(manifest.parent)
    assert [w.parent for w in written] == [manifest.parent / "personas" / "__pycache__"]
    # A cache folder beside a shared template keeps itself out of git.
    ignore = manifest.parent / "personas" / "__pycache__" / ".gitignore"
    assert ignore.read_text(encoding="utf-8").splitlines()[-1] == "*"
    monkeypatch.setattr(persona._TemplateCache, "memory", {})  # a new process
    compiled: list[str] = []
    real = persona._BudgetedEnvironment._generate

    def counting(self: Any, source: Any, name: Any, filename: Any, defer_init: bool = False) -> Any:
        compiled.append(str(name))
        return real(self, source, name, filename, defer_init)

    monkeypatch.setattr(persona._BudgetedEnvironment, "_generate", counting)
    blueprint, issues = buddy.check(manifest)
    assert issues == [] and compiled == []
    assert blueprint is not None and "杭州" in blueprint.persona.render()
    template = manifest.parent / "personas" / "companion.md.j2"
    template.write_text(template.read_text(encoding="utf-8") + "\n再见。\n", encoding="utf-8")
    blueprint, issues = buddy.check(manifest)  # the same process: its memory is stale
    assert issues == [] and len(compiled) == 1
    assert blueprint is not None and blueprint.persona.render().endswith("再见。\n")
    monkeypatch.setattr(persona._TemplateCache, "memory", {})  # the next process
    blueprint, issues = buddy.check(manifest)
    assert issues == [] and len(compiled) == 1  # the entry on disk was refreshed
    assert blueprint is not None and blueprint.persona.render().endswith("再见。\n")


def test_an_inline_prompt_is_kept_in_memory_only(write: Write) -> None:
    """An inline prompt is part of the manifest, the file being edited: nothing is
    written for it."""
    manifest = write({"buddy.yaml": "name: inline\nmodel: test\npersona: {prompt: 你好}\n"})
    blueprint, issues = buddy.check(manifest)
    assert issues == [] and blueprint is not None
    assert _template_caches(manifest.parent) == []


@pytest.mark.parametrize("content", [b"", b"garbage", b"\x80\x05K\x01."])
def test_a_damaged_template_cache_is_compiled_again(
    manifest: Path, monkeypatch: pytest.MonkeyPatch, content: bytes
) -> None:
    from buddy.compile import persona

    monkeypatch.delenv("BUDDY_NO_CACHE", raising=False)
    monkeypatch.setattr(persona._TemplateCache, "memory", {})
    buddy.check(manifest)
    (entry,) = _template_caches(manifest.parent)
    entry.write_bytes(content)
    monkeypatch.setattr(persona._TemplateCache, "memory", {})
    blueprint, issues = buddy.check(manifest)
    assert issues == [] and blueprint is not None and "杭州" in blueprint.persona.render()
    assert entry.read_bytes() != content

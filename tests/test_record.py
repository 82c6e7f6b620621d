"""``buddy test --record``: a conversation kept in a dev platform database becomes a
scenario file that ``buddy test`` passes — and fails once the buddy behaves otherwise.

Each test has a conversation with a copy of an example buddy (the offline model, as
``buddy chat --model offline --db FILE`` would), then records it with the real command.
"""

from __future__ import annotations

import asyncio
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import buddy
from buddy.cli.main import main
from buddy.compile.persona import BUILT_IN_PACK
from buddy.models.registry import resolve
from buddy.platform.dev.journal import keep_answers_of
from buddy.testing.draft import Drafter, _duration, _extract
from buddy.testing.local import LocalPlatform, running_buddy
from tests.conftest import REPO


def _project(root: Path, name: str) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "tests")
    shutil.copytree(REPO / "manifests" / name, root / "manifests" / name, ignore=ignore)
    shutil.copytree(BUILT_IN_PACK, root / "manifests" / "personas", ignore=ignore)
    shutil.copytree(REPO / "plugins", root / "plugins", ignore=ignore)
    shutil.copytree(REPO / "docs", root / "docs", ignore=shutil.ignore_patterns("*.md"))
    (root / "pyproject.toml").write_text("")
    return root / "manifests" / name


async def _chat(directory: Path, db: Path, doings: Sequence[tuple[str, object]]) -> str:
    """A private conversation with the buddy at ``directory`` (offline model): each doing
    is ``(say|click|advance|dev, value)``; the conversation's id."""
    blueprint = buddy.load(directory, model="offline")
    identity = f"{blueprint.name}-dev"
    async with LocalPlatform(str(db), sockets=False) as platform:
        tokens = await platform.register(blueprint.name)
        info = await platform.conversation(identity, "private", ["我"])
        cid, member = str(info["id"]), str(info["members"][0]["member_id"])
        model = resolve(blueprint.model)
        async with running_buddy(platform, blueprint, model, tokens["dev_token"]) as server:
            keep_answers_of(server.buddy.layers, platform.state)
            for kind, value in doings:
                if kind == "say":
                    await platform.say(cid, str(value))
                elif kind == "click":
                    transcript = await platform.transcript(cid)
                    card = [m for m in transcript if m["kind"] == "question"][-1]
                    await platform.click(cid, card["id"], str(value))
                elif kind == "advance":
                    await platform.dev("POST", "/clock", json={"advance_seconds": value})
                else:
                    assert isinstance(value, tuple)
                    method, path, given = value
                    body: dict[str, Any] = dict(given)
                    if "identity" in body:
                        body["identity"] = identity
                    if "member_id" in body:
                        body["member_id"] = member
                    await platform.dev(str(method), str(path), json=body)
                await platform.wait_acked(identity, timeout=30)
                for layer in server.buddy.layers:
                    await layer.settled()
    return cid


def _record(directory: Path, db: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    assert main(["test", str(directory), "--record", "latest", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    found = re.search(r"recorded conversation c_\w+ as (\S+)", out)
    assert found is not None, out
    return Path(found.group(1))


XIAOMAN: list[tuple[str, object]] = [
    ("say", "叫我小鱼"),
    ("say", '/call ask_question {"question": "晚饭吃了吗", "options": ["吃了", "没吃"]}'),
    ("click", "吃了"),
    ("advance", 7200),
    ("say", "真的很烦"),
]


def test_a_recorded_conversation_replays_and_fails_when_behaviour_changes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = _project(tmp_path, "xiaoman")
    db = tmp_path / "chat.db"
    asyncio.run(_chat(directory, db, XIAOMAN))
    monkeypatch.chdir(tmp_path)
    recorded = _record(Path("manifests/xiaoman"), db, capsys)
    text = recorded.read_text(encoding="utf-8")
    assert text.startswith("# yaml-language-server: $schema=../../../docs/scenario.schema.json\n")
    assert "- user: 叫我小鱼" in text  # Chinese as it is
    assert "facts: [{ relation: nickname, slots: { subject: user }, value: 小鱼 }]" in text
    assert "- click: 吃了" in text and "- advance: 2h" in text
    assert 'card: "- 称呼：小鱼"' in text

    assert main(["test", str(recorded)]) == 0
    assert "1 passed, 0 failed" in capsys.readouterr().out

    # the buddy changed: its 同桌 lore entry is no longer always in the prompt
    book = directory / "lore" / "school.yaml"
    before = book.read_text(encoding="utf-8")
    book.write_text(before.replace("always: true", "keys: [同桌]"), encoding="utf-8")
    assert main(["test", str(recorded)]) == 1
    out = capsys.readouterr().out
    assert "FAIL 叫我小鱼" in out and 'expected lore ["同桌"], got []' in out
    book.write_text(before, encoding="utf-8")

    # never over an existing file
    recorded.write_text(text, encoding="utf-8")
    assert main(["test", "manifests/xiaoman", "--record", "latest", "--db", str(db)]) == 1
    assert "exists; remove it or choose another with -o" in capsys.readouterr().err


def test_grants_data_and_a_redacted_read_are_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = _project(tmp_path, "cardio")
    db = tmp_path / "chat.db"
    grant = {"identity": "", "member_id": "", "dataset": "health.sleep", "granted": True}
    items = [{"date": "2026-11-29", "asleep_minutes": 987654}]
    doings: list[tuple[str, object]] = [
        ("dev", ("PUT", "/grants", grant)),
        ("dev", ("PUT", "/data", {"member_id": "", "dataset": "health.sleep", "items": items})),
        ("say", '/call data_access_query {"datasets": ["health.sleep"]}'),
    ]
    asyncio.run(_chat(directory, db, doings))
    monkeypatch.chdir(tmp_path)
    recorded = _record(Path("manifests/cardio"), db, capsys)
    text = recorded.read_text(encoding="utf-8")
    assert "- grant: { dataset: health.sleep }" in text
    assert '- data: { dataset: health.sleep, items: [{ date: "2026-11-29"' in text
    assert "call: data_access_query" in text
    assert main(["test", str(recorded)]) == 0, capsys.readouterr().out


def test_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["test", "--record", "latest"]) == 2
    assert "--record needs --db FILE" in capsys.readouterr().err
    assert main(["test", "--record", "latest", "--db", str(tmp_path / "none.db")]) == 2
    assert "no such database file" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("seconds", "shown"), [(1, "1s"), (0.2, "1s"), (90, "1m30s"), (5400, "1h30m"), (86400, "1d")]
)
def test_durations_read_as_written_by_hand(seconds: float, shown: str) -> None:
    assert _duration(seconds) == shown


@pytest.mark.parametrize(
    ("answer", "extracted"),
    [
        ("not json", None),
        ("{}", None),
        ('{"facts": [], "appraisal": {"offence": 0, "care": 0}}', None),
        (
            '{"facts": [{"relation": "nickname", "slots": {"subject": "user", "name": "阿明"}}]}',
            {"facts": [{"relation": "nickname", "slots": {"subject": "user", "name": "阿明"}}]},
        ),
        (
            '{"appraisal": {"offence": 0.8, "explained": true}}',
            {"appraisal": {"offence": 0.8, "explained": True}},
        ),
    ],
)
def test_the_extractors_answer_becomes_extract(answer: str, extracted: object) -> None:
    assert _extract(answer) == extracted


def test_an_id_an_earlier_result_gave_becomes_a_placeholder() -> None:
    drafter = Drafter.__new__(Drafter)
    drafter.results = {"widget_create": {"id": "w_3f2a1b9c", "title": "菜单"}}
    assert drafter._placed({"widget_id": "w_3f2a1b9c", "note": "菜单"}) == {
        "widget_id": "{{ widget_create.id }}",
        "note": "菜单",  # too short to be taken for an id
    }


def _normal(text: str) -> str:
    """A recording with what differs from run to run made the docs' (ids, times, paths)."""
    text = re.sub(r"c_[0-9a-f]{20}", "c_3f2a1b9c4d5e6f708192", text)
    text = re.sub(r"recorded-\d{4}-\d{2}-\d{2}-[0-9a-f]{8}", "recorded-2026-05-01-3f2a1b9c", text)
    text = re.sub(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}", "2026-05-01 20:15", text)
    text = re.sub(r'clock: "\d\d:\d\d"', 'clock: "20:15"', text)
    return re.sub(r"--db \S+`", "--db chat.db`", text)


def test_the_docs_show_a_real_recording(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = _project(tmp_path, "xiaoman")
    db = tmp_path / "chat.db"
    asyncio.run(_chat(directory, db, XIAOMAN))
    monkeypatch.chdir(tmp_path)
    recorded = _record(Path("manifests/xiaoman"), db, capsys)
    shown = _normal(recorded.read_text(encoding="utf-8"))
    docs = (REPO / "docs" / "testing.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- recorded -->\n```yaml\n(.*?)```", docs, re.S)
    assert found is not None
    assert found.group(1) == shown

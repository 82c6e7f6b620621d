"""`buddy chat`: its commands, consent cards, a resumed chat, and the examples in docs/cli.md.

The chat runs in this process (``main(["chat", …])`` with a scripted stdin) against the
offline model, which echoes every message it gets: no echo in the output means the line
was not sent.
"""

from __future__ import annotations

import io
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import buddy
from buddy.cli.chat import COMMANDS, RESUMED_SHOWN
from buddy.cli.main import main
from tests.conftest import REPO

AUNT_TU = str(REPO / "manifests" / "aunt-tu")
CARDIO = str(REPO / "manifests" / "cardio")
XIAOMAN = str(REPO / "manifests" / "xiaoman")
ECHO = "[离线模型] 你说的是："
CONSENT = (
    '/call data_access_request {"kind": "healthkit", "reason": "看看你最近睡得怎么样",'
    ' "datasets": ["health.sleep"]}'
)
Chat = Callable[..., str]
CLI_DOC = REPO / "docs" / "cli.md"
FENCE = re.compile(r"^```text\n(.*?)^```$", re.M | re.S)
# What differs from one run to the next: request ids, and the simulated data's dates.
VOLATILE = [(re.compile(r"dar_[0-9a-f]*"), "dar_ID"), (re.compile(r"\d{4}-\d\d-\d*"), "DATE")]


@pytest.fixture
def chat(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Chat:
    """``chat(script, path, *options)``: what `buddy chat PATH --model offline` prints."""

    def _chat(script: str, path: str = AUNT_TU, *options: str) -> str:
        monkeypatch.setattr(sys, "stdin", io.StringIO(script))
        assert main(["chat", path, "--model", "offline", *options]) == 0
        return capsys.readouterr().out

    return _chat


def test_help_lists_every_command_and_sends_nothing(chat: Chat) -> None:
    out = chat("/help\n")
    lines = out.splitlines()
    assert lines[1] == "命令："
    for (key, meaning), line in zip(COMMANDS, lines[2:], strict=False):
        assert line.startswith(f"  {key} ") and line.endswith(meaning)
    assert [key for key, _ in COMMANDS][:4] == ["/help", "/tools", "/call 工具名 {json}", "/quit"]
    assert {"/card", "/mood", "/memory", "/lore"} <= {key for key, _ in COMMANDS}
    assert ECHO not in out


def test_tools_lists_name_kind_and_label_in_the_models_order(chat: Chat) -> None:
    out = chat("/tools\n").splitlines()
    tools = buddy.load(AUNT_TU, model="offline").tools
    assert out[1] == f"工具（{len(tools)} 个，模型看到的名字和顺序）："
    named = [line.split() for line in out[2:] if not line.startswith("      ")]
    assert named == [[t.name, t.kind, t.label] for t in tools]


def test_tools_shows_each_tools_parameters(chat: Chat) -> None:
    out = chat("/tools\n").splitlines()
    at = next(n for n, line in enumerate(out) if line.split()[:1] == ["plan_menu"])
    assert out[at + 1].startswith("      参数：")
    assert "people（integer，必填）" in out[at + 1]
    at = next(n for n, line in enumerate(out) if line.split()[:1] == ["resource_list"])
    assert out[at + 1] == "      参数：无"


def test_card_shows_the_person_card_the_model_gets(chat: Chat) -> None:
    out = chat("/card\n叫我小鱼\n/card\n", XIAOMAN).splitlines()
    assert out[1] == "人物卡：还没有记下关于对方的事，提示词里没有这一段。"
    assert "人物卡（模型拿到的 memory.card）：" in out
    assert "  - 称呼：小鱼" in out
    assert f"{ECHO}/card" not in "\n".join(out)


def test_mood_shows_the_three_numbers_and_the_words(chat: Chat) -> None:
    out = chat("/mood\n", XIAOMAN).splitlines()
    assert re.fullmatch(r"心情（按平台时钟）：生气 \d\.\d\d，难过 \d\.\d\d，信任 \d\.\d\d", out[1])
    assert out[2] == "提示词里的心情："
    assert "  你心情平稳。" in out[3:]


def test_mood_without_a_character_says_so(chat: Chat) -> None:
    assert chat("/mood\n").splitlines()[1:] == ["这只搭子没有 character:，没有心情。"]


def test_memory_lists_the_facts_and_the_other_entries(chat: Chat) -> None:
    out = chat("叫我小鱼\n/memory\n", XIAOMAN).splitlines()
    at = next(n for n, line in enumerate(out) if line.startswith("记忆（这个对话在平台上的条目"))
    fact = out.index("  称呼（nickname，已记下）：谁 对方，称呼 小鱼")
    assert fact > at and out[fact + 1].startswith("    来自「叫我小鱼」（auto:nickname:")
    assert any(line.startswith("  auto:state") for line in out[at:])


def test_lore_lists_the_entries_the_last_prompt_got(chat: Chat) -> None:
    out = chat("/lore\n你还欠我一杯奶茶\n/lore\n", XIAOMAN).splitlines()
    assert out[1] == "背景设定：还没有哪一轮的提示词用过。"
    at = out.index("背景设定（上一轮提示词里的）：")
    assert any("school/奶茶" in line for line in out[at:])
    assert any("school/同桌" in line for line in out[at:])


def test_lore_says_in_words_every_reason_an_entry_is_left_out() -> None:
    from buddy.capabilities.lore.scan import LEFT_OUT
    from buddy.cli.chat_layer import _LEFT_OUT

    assert set(_LEFT_OUT) == set(LEFT_OUT)


def test_the_layer_commands_with_nothing_yet_or_no_section_say_so(chat: Chat) -> None:
    out = chat("/card\n/lore\n/memory\n").splitlines()
    assert out[1:3] == [
        "人物卡：还没有记下关于对方的事，提示词里没有这一段。",
        "这只搭子没有 lore:。",
    ]
    assert out[3] == "记忆：这个对话还没有条目。"


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("/call", None),
        ("/call   ", None),
        (
            '/call resource_read {"file": ',
            "resource_read 的参数不是 JSON（Expecting value，第 9 个字符）",
        ),
        ("/call resource_read [1]", "resource_read 的参数要是一个 JSON 对象 {…}"),
    ],
)
def test_call_without_a_tool_or_with_bad_json_prints_its_usage(
    chat: Chat, line: str, problem: str | None
) -> None:
    out = chat(f"{line}\n").splitlines()[1:]
    names = "、".join(t.name for t in buddy.load(AUNT_TU, model="offline").tools)
    usage = [
        "用法：/call 工具名 {json 参数}（参数可以不写，就是 {}）",
        f"工具：{names}（/tools 列出详情）",
    ]
    assert out == ([f"{problem}，这一行没有发出去。"] if problem else []) + usage


def test_call_with_a_tool_is_sent_with_or_without_arguments(chat: Chat) -> None:
    out = chat(
        '/call resource_list\n/call resource_read {"file": "seasonal.md"}\n/call nosuch {}\n'
    )
    assert "  → resource_list {}" in out
    assert '  → resource_read {"file": "seasonal.md"}' in out
    assert "  → nosuch {}" in out  # sent: the runtime's error names the tools there are


@pytest.mark.parametrize("line", ["/foo", "/foo bar", "/Shrug 你好"])
def test_an_unknown_command_is_not_sent(chat: Chat, line: str) -> None:
    word = line.split(maxsplit=1)[0][1:].lower()
    out = chat(f"{line}\n").splitlines()
    assert out[1:] == [f"没有 /{word} 这个命令（/help 列出命令），这一行没有发出去。"]


@pytest.mark.parametrize("line", ["/ 你好", "/好的", "/usr/bin 是什么", "//help", "a /help"])
def test_a_slash_without_ascii_letters_and_a_space_is_a_message(chat: Chat, line: str) -> None:
    assert f"{ECHO}{line}" in chat(f"{line}\n")


@pytest.mark.parametrize("line", ["/quit", "/QUIT", "/quit now"])
def test_quit_ends_the_chat_before_the_rest(chat: Chat, line: str) -> None:
    assert ECHO not in chat(f"{line}\n你好\n")


def test_a_consent_card_lists_its_datasets(chat: Chat) -> None:
    out = chat(f"{CONSENT}\n", CARDIO).splitlines()
    at = out.index("[授权卡] 看看你最近睡得怎么样（y 同意 / n 拒绝）")
    assert out[at + 1] == (
        "  · 睡眠（health.sleep）：结合你最近几晚的睡眠，判断第二天该正常练、减量还是休息"
    )


def test_a_resumed_chat_shows_the_earlier_one_first(chat: Chat, tmp_path: Path) -> None:
    db = str(tmp_path / "chat.db")
    first = chat(f"{CONSENT}\ny\n", CARDIO, "--db", db).splitlines()
    second = chat("还在吗\n", CARDIO, "--db", db).splitlines()
    earlier = [line for line in first[1:] if not line.startswith(("  →", "  ←"))]
    earlier = [line.replace("（y 同意 / n 拒绝）", "（已同意）") for line in earlier]
    assert second[1] == "（接着上次的对话：2 轮）"
    assert second[2] == f"我：{CONSENT}"
    at = second.index("（以上是上次的对话）")
    assert [line for line in second[3:at] if line != "我：y"] == earlier  # y answered the card
    assert second[at + 1 :] == [
        f"阿燃：{ECHO}还在吗",
        "（没有接真实模型；用 /call 工具名 {json} 可以调用工具）",
    ]


def test_a_resumed_chat_answers_the_card_left_open(chat: Chat, tmp_path: Path) -> None:
    db = str(tmp_path / "chat.db")
    chat(
        '/call ask_question {"question": "几个？", "options": ["一", "二"]}\n', AUNT_TU, "--db", db
    )
    assert f"{ECHO}二" in chat("2\n", AUNT_TU, "--db", db)


def test_a_long_resumed_chat_shows_its_last_messages(chat: Chat, tmp_path: Path) -> None:
    db = str(tmp_path / "chat.db")
    chat("".join(f"第{n}句\n" for n in range(RESUMED_SHOWN)), AUNT_TU, "--db", db)
    out = chat("", AUNT_TU, "--db", db).splitlines()
    assert out[1:3] == [
        f"（接着上次的对话：{RESUMED_SHOWN} 轮）",
        f"（更早的 {RESUMED_SHOWN} 条消息没有显示）",
    ]
    assert out[3] == f"我：第{RESUMED_SHOWN // 2}句"


def test_a_first_chat_has_no_resumed_part(chat: Chat, tmp_path: Path) -> None:
    assert chat("", AUNT_TU, "--db", str(tmp_path / "chat.db")).splitlines()[1:] == []


def _doc_examples() -> list[tuple[str, str]]:
    """``(command, output)`` of every ``$ … buddy chat …`` in cli.md's `buddy chat` section."""
    text = CLI_DOC.read_text(encoding="utf-8")
    section = text.split("## `buddy chat PATH`", 1)[1].split("\n## ", 1)[0]
    found: list[tuple[str, str]] = []
    for block in FENCE.findall(section):
        for part in re.split(r"^\$ ", block, flags=re.M)[1:]:
            command, _, output = part.partition("\n")
            found.append((command, output))
    return found


def _normal(text: str) -> str:
    for pattern, replacement in VOLATILE:
        text = pattern.sub(replacement, text)
    return text


def test_the_docs_show_chat_examples() -> None:
    commands = [command for command, _ in _doc_examples()]
    assert len(commands) >= 5 and all(" | buddy chat manifests/" in c for c in commands)


#: How docs/cli.md writes each example: what is typed, piped into `buddy chat`, and maybe
#: the first lines of what it prints kept.
EXAMPLE = re.compile(
    r"(?P<typed>printf '[^']*') \| buddy (?P<args>chat [^|]*?)"
    r"(?: \| sed -n (?P<first>\d+),(?P<last>\d+)p)?"
)


def test_the_docs_chat_examples_print_what_they_show(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Run from a directory of its own (a --db file lands there) that sees the manifests.
    (tmp_path / "manifests").symlink_to(REPO / "manifests")
    monkeypatch.chdir(tmp_path)
    for command, shown in _doc_examples():
        example = EXAMPLE.fullmatch(command)
        assert example is not None, f"`{command}` is not `printf … | buddy chat …`"
        # The shell makes what is typed; the chat runs in this process, as `buddy` runs it
        # (a process per example made this test 18 s long).
        typed = subprocess.run(
            ["bash", "-c", example["typed"]], capture_output=True, text=True, check=True
        ).stdout
        monkeypatch.setattr(sys, "stdin", io.StringIO(typed))
        code = main(shlex.split(example["args"]))
        printed = capsys.readouterr()
        assert code == 0, f"`{command}`: {printed.err}"
        out = printed.out
        if example["first"]:  # sed -n FIRST,LASTp
            kept = out.splitlines(keepends=True)[int(example["first"]) - 1 : int(example["last"])]
            out = "".join(kept)
        assert _normal(out) == _normal(shown), f"`{command}` printed:\n{printed.out}"

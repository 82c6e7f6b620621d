"""Validate many generated manifests in one process with ``buddy.check``.

Generates ``--count`` distinct buddies (default 1000) into a temporary project, then times
``buddy.check`` over all of them: one untimed warm-up pass, then ``--repeat`` timed passes
(default 3), reporting the median and min/max. Before every pass each ``buddy.yaml`` is
rewritten as a new edition (its description and inline prompt change), so no pass
validates a manifest or compiles an inline template the process has seen before; the
shared library (base template, trait files, plugins) stays, as in a real project.
Each timed pass runs inside ``buddy.compile.compiler.batch()``, as ``buddy validate`` runs its
manifests (the garbage collector tuned for a batch). Generation and the first import of the
loader are outside the timed region. Exits 1 when any manifest fails to validate.

The project tree::

    <tmp>/pyproject.toml                 empty: marks the project root
    <tmp>/personas/base.md.j2            shared template with {% block %}s
    <tmp>/personas/traits/{calm,lively}.yaml
    <tmp>/plugins/{__init__,tools}.py    handlers of every custom tool and handler hook
    <tmp>/buddies/b0000/buddy.yaml ...   one directory per buddy (some with widgets/, resources/)

usage: python bench/validate_many.py [--count N] [--repeat R] [--json]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from buddy import Blueprint, Issue

PLATFORM_TOOLS = (
    "resource_list",
    "resource_read",
    "ask_question",
    "data_access_query",
    "data_access_request",
    "data_access_read_result",
    "widget_create",
    "widget_read",
    "widget_read_module",
    "widget_rename",
    "widget_write_record",
    "widget_delete_record",
    "widget_delete",
    "widget_send",
    "proactive_subscribe",
    "proactive_list",
    "proactive_unsubscribe",
    "proactive_unsubscribe_all",
)
DATASETS = (
    "health.sleep",
    "health.workouts",
    "health.steps",
    "health.heart_rate",
    "health.weight",
    "health.mindfulness",
)
STRING_MODELS = (
    "moonshot:kimi-k3",
    "kimi-k2",
    "deepseek-chat",
    "qwen-max",
    "glm-4-plus",
    "gpt-4o-mini",
    "o3-mini",
    "claude-sonnet-4",
    "ollama:qwen3",
    "vllm:llama-3-8b",
    "test",
    "offline",
)
WORDS = (
    "tea",
    "run",
    "cook",
    "sleep",
    "read",
    "garden",
    "swim",
    "chess",
    "piano",
    "hike",
    "yoga",
    "budget",
    "study",
    "cat",
    "dog",
    "plant",
)
TITLES = ("小涂", "阿燃", "老周", "米粒", "阿青", "小满", "豆包", "大橙", "松子", "阿木")
SPECIALTIES = ("家常菜", "跑步", "早睡", "读书", "记账", "养花", "游泳", "下棋")
WHEN = ("always", "proactive", "group", "private")
TIMEZONES = ("Asia/Shanghai", "Asia/Tokyo", "Europe/Berlin", "America/New_York", "UTC")

BASE_TEMPLATE = """\
{#- base.md.j2: shared persona with blocks; children override identity/knowledge/rules. -#}
{%- set display_name = buddy.title if buddy.title else buddy.name -%}
{% block identity -%}
# 你是{{ display_name }}
你是{{ display_name }}，在聊天里陪着对方的搭子。
{%- if specialty is defined %} 你最拿手的是{{ specialty }}。{% endif %}
{%- if buddy.description %}
介绍：{{ buddy.description }}
{%- endif %}
{%- endblock %}
今天是 {{ now.strftime("%Y-%m-%d") }}。
{% block style -%}
## 说话的样子
{%- if traits.persona is defined %}
你的性格：{{ traits.persona }}。
{%- endif %}
{%- if traits.habits is defined %}
{%- for habit in traits.habits %}
- {{ habit }}
{%- endfor %}
{%- endif %}
{%- endblock %}
{% block knowledge %}{% endblock %}
{% block rules -%}
## 规矩
- 不知道的就说不知道。
{%- if strict is defined and strict %}
- 回答前先确认对方的意思。
{%- endif %}
{%- endblock %}
{% if conversation.kind == "group" %}
{% block group -%}
## 在群里
称呼对方的名字，别把编号念出来。
{%- endblock %}
{% endif %}
{% block closing -%}
记住：你就是{{ display_name }}。
{%- endblock %}
"""

TRAITS = {
    "calm.yaml": """\
name: calm
persona: 沉稳
intensity: soft
habits:
  - 先听完再说
  - 夸人夸具体的地方
""",
    "lively.yaml": """\
name: lively
persona: 活泼
habits:
  - 爱用感叹号
  - 记得对方上次说过的事
""",
}

PLUGIN = '''\
"""Handlers shared by every generated buddy."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from buddy import Blueprint, Issue


def lookup(conversation: Any, params: dict[str, Any]) -> str:
    return str(params)


async def fetch(conversation: Any, params: dict[str, Any]) -> str:
    return str(params)


def guard(call: Any, conversation: Any) -> str | None:
    return None


def scrub(call: Any, result: Any, conversation: Any) -> Any:
    return None
'''


def q(value: object) -> str:
    """A YAML scalar (JSON is a subset of YAML flow syntax)."""
    return json.dumps(value, ensure_ascii=False)


def widget_schema(kind: str, index: int) -> dict[str, Any]:
    record: dict[str, Any] = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 40},
            "amount": {"type": "integer", "minimum": 0, "maximum": 1000 + index},
            "done": {"type": "boolean"},
            "kind": {"type": "string", "enum": ["a", "b", "c"]},
        },
        "required": ["name", "done"],
        "additionalProperties": False,
    }
    modules: dict[str, Any] = {"items": {"title": "条目", "record": record}}
    if index % 2:
        modules["notes"] = {
            "record": {
                "type": "object",
                "properties": {"text": {"type": "string", "maxLength": 200}},
                "required": ["text"],
            }
        }
    return {"title": f"{kind} {index}", "description": "生成的小挂件", "modules": modules}


def model_lines(rng: random.Random, i: int) -> list[str]:
    if i % 5 >= 2:  # string form for 3 in 5
        return [f"model: {q(STRING_MODELS[i % len(STRING_MODELS)])}"]
    lines = ["model:"]
    choice = i % 4
    if choice == 0:
        lines += ["  name: deepseek-chat", f"  temperature: {rng.randint(0, 20) / 10}"]
    elif choice == 1:
        lines += [
            "  provider: openai-compatible",
            f"  name: local-{i}",
            f"  base_url: http://127.0.0.1:{8000 + i % 100}/v1",
        ]
    elif choice == 2:
        lines += [
            "  name: kimi-k3",
            f"  max_tokens: {rng.randint(200, 4000)}",
            f"  top_p: {rng.randint(1, 10) / 10}",
            "  fallbacks: [deepseek-chat, {provider: ollama, name: qwen3}]",
        ]
    else:
        lines += ["  provider: anthropic", "  name: claude-sonnet-4", "  temperature: 0.3"]
        lines += ["  fallbacks:", "    - moonshot:kimi-k3", "    - name: gpt-4o", "      top_p: 1"]
    return lines


def persona_lines(i: int, title: str, specialty: str, edition: int) -> list[str]:
    kind = i % 3
    lines = ["persona:"]
    if kind == 0:  # the shared template with vars
        lines += ["  template: base.md.j2"]
    elif kind == 1:  # inline, standalone
        lines += [
            "  prompt: |",
            f"    你是{title}（{{{{ buddy.name }}}}），擅长{{{{ specialty }}}}。第 {edition} 版。",
            "    {% if conversation.kind == 'group' %}这是群聊。{% else %}这是私聊。{% endif %}",
            "    今天是 {{ now.strftime('%m月%d日') }}。",
            "    {% for h in traits.habits | default([]) %}- {{ h }}",
            "    {% endfor %}",
        ]
    else:  # inline, extending the shared template and overriding blocks
        lines += [
            "  prompt: |",
            '    {% extends "base.md.j2" %}',
            "    {% block knowledge %}",
            "    ## 本事",
            f"    - 第 {i} 号搭子（第 {edition} 版），会 {{{{ specialty }}}}。",
            "    {% endblock %}",
            "    {% block closing %}{{ super() }} 别忘了喝水。{% endblock %}",
        ]
    traits = ("traits/calm.yaml", "traits/lively.yaml")
    if i % 4 == 0:
        lines += [f"  traits: [{traits[0]}, {traits[1]}]"]
    elif i % 4 != 3:
        lines += [f"  traits: {traits[i % 2]}"]
    lines += ["  vars:", f"    specialty: {q(specialty)}", f"    level: {i % 7}"]
    if i % 2:
        lines += ["    strict: true"]
    return lines


def tool_lines(rng: random.Random, i: int) -> tuple[list[str], list[str]]:
    """The `tools` section and the names of the tools it declares."""
    platform_names = rng.sample(PLATFORM_TOOLS, rng.randint(3, 8))
    lines = ["tools:"] + [f"  - {name}" for name in platform_names]
    custom = f"lookup_{WORDS[i % len(WORDS)]}"
    handler = "plugins.tools:fetch" if i % 2 else "plugins.tools:lookup"
    lines += [
        f"  - name: {custom}",
        "    label: 正在查",
        f"    description: {q(f'查一查第 {i} 号搭子的笔记，返回最相关的几条。')}",
        "    parameters:",
        "      type: object",
        "      properties:",
        "        query: {type: string, minLength: 1, maxLength: 100}",
        f"        limit: {{type: integer, minimum: 1, maximum: {5 + i % 20}}}",
        "      required: [query]",
        "      additionalProperties: false",
        f"    handler: {handler}",
    ]
    if i % 5 == 0:
        lines += ["    timeout_seconds: 10"]
    lines += [
        "  - name: remember",
        "    uses: memory.write",
        "    label: 正在记下",
        "    description: 把对方长期有用的信息记下来。同一个主题再记一次会覆盖旧的。",
        '    key: "{{ topic }}"',
        '    text: "{{ text }}"',
    ]
    if i % 2:
        lines += ['    reply: "记下了：{{ topic }}。"']
    if i % 3 == 0:
        lines += [
            "    parameters:",
            "      type: object",
            "      properties:",
            "        topic: {type: string, maxLength: 64}",
            "        text: {type: string, minLength: 1, maxLength: 500}",
            "      required: [topic, text]",
        ]
    names = [*platform_names, custom, "remember"]
    if i % 4 == 1:
        lines += [
            "  - name: forget",
            "    uses: memory.delete",
            "    description: 按主题删掉一条记忆。",
            '    key: "{{ topic }}"',
        ]
        names.append("forget")
    return lines, names


def hook_lines(rng: random.Random, i: int, names: list[str]) -> list[str]:
    lines = ["hooks:", "  before_tool_call:"]
    for rule in range(1 + i % 2):
        denied = rng.sample(names, rng.randint(1, min(3, len(names))))
        lines += [
            f"    - deny: [{', '.join(denied)}]",
            f"      when: {WHEN[(i + rule) % len(WHEN)]}",
            f"      reason: {q(f'规则 {rule}：这一轮不调用这些工具。')}",
        ]
    if i % 3 == 0:
        lines += ["    - handler: plugins.tools:guard", f"      tools: [{names[-1]}]"]
    if i % 4 == 2:
        lines += ["  after_tool_call:", "    - handler: plugins.tools:scrub"]
    return lines


def data_lines(rng: random.Random, i: int) -> list[str]:
    if i % 7 == 6:
        return []
    lines = ["data:", "  requirements:"]
    for dataset in rng.sample(DATASETS, rng.randint(1, 3)):
        lines += [f"    - {{id: {dataset}, purpose: {q(f'第 {i} 号搭子用{dataset}调整建议')}}}"]
    return lines


def proactive_lines(rng: random.Random, i: int) -> list[str]:
    lines = ["proactive:"]
    if i % 5 == 0:
        lines += ["  prompt: 这是主动服务的回合，没有值得说的就输出 [[skip]]。"]
    lines += ["  subscriptions:"]
    for n in range(rng.randint(1, 3)):
        lines += [
            f"    - key: sub-{n}.{WORDS[(i + n) % len(WORDS)]}",
            f"      title: {q(f'订阅 {n}')}",
            f"      reason: {q(f'第 {i} 号搭子的第 {n} 个订阅。')}",
        ]
        kind = (i + n) % 4
        if kind == 0:
            lines += ["      trigger: workout.completed"]
        elif kind == 1:
            lines += ["      trigger: sleep.ready"]
        elif kind == 2:
            lines += [f"      trigger: {{type: data.updated, dataset: {DATASETS[i % 6]}}}"]
        else:
            day = 1 + (i + n) % 28
            lines += [
                "      trigger:",
                "        type: schedule",
                f'        at: "2026-12-{day:02d}T20:{n * 10:02d}:00+08:00"',
                f"        interval_minutes: {60 * (1 + (i + n) % 168)}",
            ]
        if (i + n) % 2:
            tz = TIMEZONES[(i + n) % len(TIMEZONES)]
            lines += [
                f'      quiet_hours: {{start: "22:{n * 10:02d}", end: 07:30, timezone: {tz}}}'
            ]
        if (i + n) % 3 == 0:
            lines += [f"      cooldown_minutes: {30 * n}", f"      daily_limit: {1 + n}"]
        if n == 2:
            lines += ["      activate: manual"]
    return lines


def manifest_text(i: int, edition: int = 0) -> str:
    rng = random.Random(f"buddy-bench:{i}")
    title = f"{TITLES[i % len(TITLES)]}{i}"
    specialty = SPECIALTIES[i % len(SPECIALTIES)]
    tools, names = tool_lines(rng, i)
    lines = [
        "# generated by bench/validate_many.py",
        *(["version: 1"] if i % 2 else []),
        f"name: bench-{i:04d}-{WORDS[i % len(WORDS)]}",
        f"title: {q(title)}",
        f"description: {q(f'第 {i} 号生成的搭子（第 {edition} 版），擅长{specialty}。')}",
        *model_lines(rng, i),
        *persona_lines(i, title, specialty, edition),
        *tools,
        *hook_lines(rng, i, names),
        *data_lines(rng, i),
        *proactive_lines(rng, i),
    ]
    if i % 6 == 0:
        lines += ["profiles:", "  dev: {model: ollama:qwen3}", "  ci: {model: test}"]
    return "\n".join(lines) + "\n"


def write_edition(buddies: Sequence[Path], edition: int) -> None:
    """Rewrite every buddy's manifest as ``edition`` (only its text changes)."""
    for i, folder in enumerate(buddies):
        (folder / "buddy.yaml").write_text(manifest_text(i, edition), encoding="utf-8")


def generate(root: Path, count: int) -> list[Path]:
    """Write the project tree; return the buddy directories."""
    (root / "pyproject.toml").write_text("", encoding="utf-8")
    (root / "personas" / "traits").mkdir(parents=True)
    (root / "personas" / "base.md.j2").write_text(BASE_TEMPLATE, encoding="utf-8")
    for name, text in TRAITS.items():
        (root / "personas" / "traits" / name).write_text(text, encoding="utf-8")
    (root / "plugins").mkdir()
    (root / "plugins" / "__init__.py").write_text("", encoding="utf-8")
    (root / "plugins" / "tools.py").write_text(PLUGIN, encoding="utf-8")
    buddies: list[Path] = []
    for i in range(count):
        folder = root / "buddies" / f"b{i:04d}"
        folder.mkdir(parents=True)
        (folder / "buddy.yaml").write_text(manifest_text(i), encoding="utf-8")
        if i % 3 == 1:
            kind = ("log", "checklist", "menu")[i // 3 % 3]
            widget = folder / "widgets" / f"{kind}-{i % 10}"
            widget.mkdir(parents=True)
            text = json.dumps(widget_schema(kind, i), ensure_ascii=False, indent=2)
            (widget / "schema.json").write_text(text, encoding="utf-8")
        if i % 4 == 3:
            (folder / "resources").mkdir()
            note = f"# 笔记 {i}\n\n第 {i} 号搭子的资料。\n"
            (folder / "resources" / "notes.md").write_text(note, encoding="utf-8")
        buddies.append(folder)
    return buddies


Check = Callable[[Path], "tuple[Blueprint | None, list[Issue]]"]


def one_pass(check: Check, buddies: Sequence[Path]) -> tuple[float, list[str]]:
    """Validate every buddy once; return the wall seconds and a line per failed buddy."""
    failures: list[str] = []
    start = time.perf_counter()
    for folder in buddies:
        blueprint, issues = check(folder)
        if blueprint is None or issues:
            first = str(issues[0]) if issues else "no blueprint and no issue"
            failures.append(f"{folder}: {len(issues)} issue(s), first: {first}")
    return time.perf_counter() - start, failures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--count", type=int, default=1000, help="manifests (default 1000)")
    parser.add_argument("--repeat", type=int, default=3, help="timed passes (default 3)")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args(argv)
    if args.count < 1 or args.repeat < 1:
        parser.error("--count and --repeat must be at least 1")

    t0 = time.perf_counter()
    from buddy.compile.compiler import batch, check  # the loader and its dependencies

    import_s = time.perf_counter() - t0

    with tempfile.TemporaryDirectory(prefix="buddy-bench-") as tmp:
        t0 = time.perf_counter()
        buddies = generate(Path(tmp), args.count)
        generate_s = time.perf_counter() - t0

        warmup_s, failures = one_pass(check, buddies)  # untimed: first-use caches, page cache
        walls: list[float] = []
        for edition in range(1, args.repeat + 1):
            write_edition(buddies, edition)
            with batch():  # as `buddy validate` runs its manifests
                wall, failed = one_pass(check, buddies)
            walls.append(wall)
            failures = failures or failed

    median = statistics.median(walls)
    result = {
        "bench": "validate_many",
        "manifests": args.count,
        "repeat": args.repeat,
        "wall_s": round(median, 4),
        "wall_min_s": round(min(walls), 4),
        "wall_max_s": round(max(walls), 4),
        "per_s": round(args.count / median, 1),
        "per_s_min": round(args.count / max(walls), 1),
        "per_s_max": round(args.count / min(walls), 1),
        "ms_per_manifest": round(median / args.count * 1000, 3),
        "warmup_s": round(warmup_s, 4),
        "import_s": round(import_s, 4),
        "generate_s": round(generate_s, 4),
        "failed": len(failures),
        "python": platform.python_version(),
    }
    for line in failures[:10]:
        print(f"FAILED {line}", file=sys.stderr)
    if args.json:
        print(json.dumps(result), flush=True)
    else:
        print(f"manifests:         {args.count}")
        print(
            f"wall seconds:      {median:.3f} median of {args.repeat} "
            f"(min {min(walls):.3f}, max {max(walls):.3f}; warm-up {warmup_s:.3f} untimed)"
        )
        print(
            f"manifests/second:  {result['per_s']} "
            f"(min {result['per_s_min']}, max {result['per_s_max']}; "
            f"{result['ms_per_manifest']} ms each)"
        )
        print(f"failed:            {len(failures)}")
        print(f"(import of the loader {import_s:.3f}s and generation {generate_s:.3f}s untimed)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""From manifest to Blueprint: resolution, defaults, derivation, and cross-part checks."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import buddy
from buddy.capabilities.data.compiled import declared
from buddy.compile.platform_tools import covers_every_platform_tool
from buddy.errors import ManifestError
from tests.conftest import MINIMAL, Write


def _codes(path: Path) -> list[tuple[int, int, str]]:
    _, issues = buddy.check(path)
    return [(i.line, i.column, i.code) for i in issues]


@pytest.mark.parametrize(
    ("model", "ref"),
    [
        ("kimi-k3", "moonshot:kimi-k3"),
        ("deepseek-chat", "deepseek:deepseek-chat"),
        ("qwen3-max", "dashscope:qwen3-max"),
        ("qwen-plus", "dashscope:qwen-plus"),
        ("glm-4.6", "zhipu:glm-4.6"),
        ("gpt-5", "openai:gpt-5"),
        ("o3", "openai:o3"),
        ("o4-mini", "openai:o4-mini"),
        ("claude-sonnet-4-5", "anthropic:claude-sonnet-4-5"),
        ("offline", "offline:offline"),
        ("test", "test:test"),
        ("ollama:qwen3", "ollama:qwen3"),
        ("vllm:meta/llama", "vllm:meta/llama"),
    ],
)
def test_model_references_resolve(write: Write, model: str, ref: str) -> None:
    path = write({"buddy.yaml": MINIMAL.replace("model: test", f"model: {model}")})
    assert buddy.load(path).model.ref == ref


@pytest.mark.parametrize("model", ["llama3", "yi-large", "omni", "moonshot:", "acme:x"])
def test_unresolvable_models(write: Write, model: str) -> None:
    path = write({"buddy.yaml": MINIMAL.replace("model: test", f"model: '{model}'")})
    assert _codes(path)[0][2] in ("unknown-model", "unknown-provider")


def test_model_mapping_with_fallbacks(write: Write) -> None:
    path = write(
        {
            "buddy.yaml": MINIMAL.replace(
                "model: test",
                "model:\n  name: deepseek-chat\n  temperature: 0.7\n"
                "  fallbacks: [kimi-k3, {provider: openai-compatible, name: local, base_url: 'http://127.0.0.1:8080/v1'}]",
            )
        }
    )
    spec = buddy.load(path).model
    assert (spec.provider, spec.temperature, spec.api_key_env) == (
        "deepseek",
        0.7,
        "DEEPSEEK_API_KEY",
    )
    assert [f.ref for f in spec.fallbacks] == ["moonshot:kimi-k3", "openai-compatible:local"]
    assert spec.fallbacks[1].base_url == "http://127.0.0.1:8080/v1"


def test_fallbacks_do_not_nest(write: Write) -> None:
    path = write(
        {
            "buddy.yaml": MINIMAL.replace(
                "model: test",
                "model:\n  name: gpt-5\n  fallbacks:\n    - {name: o3, fallbacks: [gpt-4o]}",
            )
        }
    )
    assert _codes(path) == [(5, 18, "unknown-key")]


def test_blueprint_is_frozen(write: Write) -> None:
    blueprint = buddy.load(write({"buddy.yaml": MINIMAL}))
    with pytest.raises(dataclasses.FrozenInstanceError):
        blueprint.name = "other"  # type: ignore[misc]


def test_every_problem_is_reported_at_once(write: Write) -> None:
    path = write(
        {
            "buddy.yaml": """\
            name: Bad
            model: nope:x
            persona: {prompt: hi, tone: warm}
            tools: [ask_questions]
            proactive:
              subscriptions:
                - {key: A, title: t, reason: r, trigger: sleep.ready, daily_limit: 0}
            """
        }
    )
    codes = {c for _, _, c in _codes(path)}
    assert codes == {"pattern", "unknown-provider", "unknown-key", "unknown-platform-tool", "range"}


def test_load_raises_manifest_error_with_issues(write: Write) -> None:
    path = write({"buddy.yaml": "name: x\n"})
    with pytest.raises(ManifestError) as caught:
        buddy.load(path)
    assert {i.code for i in caught.value.issues} == {"missing-key"}
    assert "buddy.yaml:1:1" in str(caught.value)


def test_declarative_parameters_are_derived(write: Write) -> None:
    path = write(
        {
            "buddy.yaml": MINIMAL
            + """\
tools:
  - name: remember
    uses: memory.write
    description: 记下来
    key: "{{ topic }}"
    text: "{{ text }}（{{ when }}）"
  - name: forget
    uses: memory.delete
    description: 忘掉
    key: "{{ topic }}"
    reply: 忘了 {{ topic }}。
"""
        }
    )
    blueprint = buddy.load(path)
    remember = blueprint.tool("remember")
    assert remember.parameters["required"] == ["text", "topic", "when"]
    assert remember.templates["reply"] == "记下了。"
    assert blueprint.tool("forget").templates["reply"] == "忘了 {{ topic }}。"


def test_declarative_template_must_parse(write: Write) -> None:
    path = write(
        {
            "buddy.yaml": MINIMAL
            + "tools:\n  - {name: r, uses: memory.write, description: d, key: '{{ topic ', text: x}\n"
        }
    )
    assert _codes(path) == [(6, 56, "tool-template")]


def test_platform_table_matches_schema() -> None:
    assert covers_every_platform_tool()


def test_ends_turn_tools(write: Write) -> None:
    path = write(
        {"buddy.yaml": MINIMAL + "tools: [ask_question, data_access_request, resource_list]\n"}
    )
    blueprint = buddy.load(path)
    assert [t.ends_turn for t in blueprint.tools] == [True, True, False]


def test_data_declaration_is_expanded(write: Write) -> None:
    path = write(
        {
            "buddy.yaml": MINIMAL
            + "data:\n  requirements:\n    - {id: health.sleep, purpose: 调整作息}\n"
        }
    )
    (req,) = buddy.load(path).sections["data"].requirements
    assert (req.id, req.title, req.source, req.schema_version) == (
        "health.sleep",
        "睡眠",
        "healthkit",
        1,
    )


def test_legacy_data_access_json(write: Write) -> None:
    path = write(
        {
            "buddy.yaml": MINIMAL,
            "data-access.json": '{"requirements": [{"id": "health.steps", "purpose": "看看走了多少"}]}',
        }
    )
    declaration = buddy.load(path).sections["data"]
    assert [r.id for r in declaration.requirements] == ["health.steps"]
    assert declaration.origin is not None
    assert declaration.origin.name == "data-access.json"


def test_legacy_data_access_json_errors_are_located(write: Write) -> None:
    path = write(
        {
            "buddy.yaml": MINIMAL,
            "data-access.json": '{\n  "requirements": [\n    {"id": "health.sleep", "purpose": "x", "extra": 1}\n  ]\n}\n',
        }
    )
    _, issues = buddy.check(path)
    assert [(Path(i.file).name, i.line, i.column, i.code) for i in issues] == [
        ("data-access.json", 3, 44, "unknown-key")
    ]


def test_data_declared_twice(write: Write) -> None:
    path = write(
        {
            "buddy.yaml": MINIMAL + "data: {requirements: []}\n",
            "data-access.json": '{"requirements": []}',
        }
    )
    assert _codes(path) == [(5, 1, "data-duplicate")]


def test_no_declaration_uploads_empty(write: Write) -> None:
    declaration = declared(buddy.load(write({"buddy.yaml": MINIMAL})))
    assert declaration.requirements == ()


def test_resources_index_skips_like_the_runtime(write: Write) -> None:
    path = write(
        {
            "buddy.yaml": MINIMAL,
            "resources/b.md": "b",
            "resources/a/z.md": "z",
            "resources/notes.txt": "not markdown",
            "resources/.hidden.md": "h",
            "resources/.git/x.md": "h",
            "resources/node_modules/x.md": "h",
            "resources/venv/x.md": "h",
            "resources/__pycache__/x.md": "h",
        }
    )
    assert [r.path for r in buddy.load(path).sections["resources"]] == ["a/z.md", "b.md"]


def test_named_resources_folder_must_exist(write: Write) -> None:
    path = write({"buddy.yaml": MINIMAL + "resources: docs\n"})
    assert _codes(path) == [(5, 12, "dir-not-found")]


def test_extends_merges_deeply_and_resolves_paths_where_written(write: Write) -> None:
    path = write(
        {
            "buddies/one/buddy.yaml": """\
            extends: ../common/base.yaml
            name: one
            persona:
              vars: {who: 一号}
            tools: [resource_list]
            """,
            "buddies/common/base.yaml": """\
            model: deepseek-chat
            persona:
              prompt: 我是 {{ who }}，{{ mood }}。
              vars: {who: 基础, mood: 开心}
            tools: [ask_question, resource_read]
            resources: notes
            """,
            "buddies/common/notes/a.md": "common note",
        }
    )
    blueprint = buddy.load(path)
    assert blueprint.persona.render() == "我是 一号，开心。"
    assert [t.name for t in blueprint.tools] == ["resource_list"]  # lists replace
    assert [r.path for r in blueprint.sections["resources"]] == ["a.md"]  # relative to base.yaml
    assert blueprint.model.ref == "deepseek:deepseek-chat"


def test_errors_in_an_extended_manifest_point_into_it(write: Write) -> None:
    path = write(
        {
            "buddy.yaml": "extends: base.yaml\nname: x\n",
            "base.yaml": "model: test\npersona:\n  prompt: hi\n  colour: red\n",
        }
    )
    _, issues = buddy.check(path)
    assert [(Path(i.file).name, i.line, i.column, i.code) for i in issues] == [
        ("base.yaml", 4, 3, "unknown-key")
    ]


def test_extends_chain_cycle(write: Write) -> None:
    path = write(
        {
            "buddy.yaml": "extends: a.yaml\nname: x\n",
            "a.yaml": "extends: b.yaml\n",
            "b.yaml": "extends: a.yaml\n",
        }
    )
    _, issues = buddy.check(path)
    assert [(Path(i.file).name, i.line, i.column, i.code) for i in issues] == [
        ("b.yaml", 1, 10, "extends-cycle")
    ]


def test_widget_types_compile(write: Write) -> None:
    path = write(
        {
            "buddy.yaml": MINIMAL + "tools: [widget_create, widget_write_record]\n",
            "widgets/log/schema.json": """\
            {"title": "日志", "modules": {"runs": {"record": {"type": "object",
              "properties": {"km": {"type": "number", "description": "公里"}}, "required": ["km"]}}}}
            """,
        }
    )
    blueprint = buddy.load(path)
    (widget,) = blueprint.sections["widgets"]
    assert (widget.type, widget.title, widget.modules[0].name) == ("log", "日志", "runs")
    description = blueprint.tool("widget_write_record").description
    assert "log（日志）" in description
    assert "km: number，必填（公里）" in description
    assert blueprint.tool("widget_create").parameters["properties"]["type"]["enum"] == ["log"]


def test_widget_folder_without_schema(write: Write) -> None:
    path = write({"buddy.yaml": MINIMAL, "widgets/empty/readme.txt": "x"})
    assert _codes(path) == [(0, 0, "widget-schema")]


def test_blueprint_lists_the_files_it_depends_on(write: Write) -> None:
    path = write(
        {
            "buddy.yaml": MINIMAL.replace(
                "prompt: 你好，我是 {{ buddy.name }}。", "template: t.md.j2"
            ),
            "personas/t.md.j2": "{% include 'part.md.j2' %}",
            "personas/part.md.j2": "part",
        }
    )
    names = sorted(p.name for p in buddy.load(path).files)
    assert names == ["buddy.yaml", "part.md.j2", "t.md.j2"]


def test_schema_errors_do_not_hide_errors_in_other_sections(write: Write) -> None:
    path = write(
        {
            "buddy.yaml": """\
            name: x
            model: test
            persona:
              prompt: "{{ nope }}"
            tools:
              - {name: t, description: d, parameters: {type: object}, handler: "plugins.m:missing"}
            hooks:
              before_tool_call:
                - {deny: [t], when: sometimes, reason: r}
            proactive:
              subscriptions:
                - {key: a, title: t, reason: r, trigger: sleep.ready}
                - {key: a, title: t, reason: r, trigger: sleep.ready}
            """,
            "plugins/m.py": "def other(conversation, params): ...\n",
        }
    )
    assert sorted(_codes(path)) == [
        (4, 11, "template-undefined"),
        (6, 68, "handler-function-missing"),
        (9, 25, "enum"),
        (13, 13, "subscription-duplicate"),
    ]


def test_a_parameter_that_is_the_memory_key_carries_the_key_rules(write: Write) -> None:
    path = write(
        {
            "buddy.yaml": MINIMAL
            + "tools:\n  - {name: r, uses: memory.write, description: d, key: '{{ topic }}', text: '{{ t }}'}\n"
        }
    )
    properties = buddy.load(path).tool("r").parameters["properties"]
    assert properties["topic"] == {
        "type": "string",
        "minLength": 1,
        "maxLength": 64,
        "pattern": r"^[^\s/]+$",
    }
    assert properties["t"] == {"type": "string", "minLength": 1}


def _issues(path: Path) -> list[tuple[int, int, str, str, str]]:
    _, issues = buddy.check(path)
    return [(i.line, i.column, i.code, i.message, i.hint) for i in issues]


@pytest.mark.parametrize(
    ("word", "meant"),
    [
        ("widget_write", "widget_write_record"),  # written short: the choice it begins
        ("ask_questions", "ask_question"),  # written long: the choice that begins it
        ("write_record", "widget_write_record"),  # a part of the name
        ("WIDGET_READ", "widget_read"),
        ("widget_raed", "widget_read"),  # a typo: the closest spelling
    ],
)
def test_did_you_mean_prefers_the_name_written_short_or_long(
    write: Write, word: str, meant: str
) -> None:
    path = write({"buddy.yaml": MINIMAL + f"tools: [{word}]\n"})
    ((_, _, code, _, hint),) = _issues(path)
    assert (code, hint) == ("unknown-platform-tool", f"did you mean `{meant}`?")


def test_a_dataset_not_in_the_catalogue_lists_the_catalogue(write: Write) -> None:
    catalogue = (
        "catalogue: health.heart_rate, health.mindfulness, health.sleep, health.steps, "
        "health.weight, health.workouts"
    )
    requirement = "data:\n  requirements:\n    - {id: %s, purpose: 看看}\n"
    far = write({"buddy.yaml": MINIMAL + requirement % "health.running"})
    message = "`health.running` is not in the capability catalogue"
    assert _issues(far) == [(7, 12, "unknown-dataset", message, catalogue)]
    near = write({"buddy.yaml": MINIMAL + requirement % "health.sleeep"})
    assert _issues(near)[0][4] == f"did you mean `health.sleep`? {catalogue}"


def test_a_hook_naming_a_platform_tool_the_buddy_does_not_list(write: Write) -> None:
    path = write(
        {
            "buddy.yaml": MINIMAL
            + "tools: [resource_list]\nhooks:\n  before_tool_call:\n"
            + "    - {deny: [widget_delete, widget_delte, resource_lst], reason: 不删}\n"
        }
    )
    assert _issues(path) == [
        (
            8,
            15,
            "hook-unknown-tool",
            "`widget_delete` is a platform tool this buddy does not list in `tools`",
            "add it to `tools` (`- widget_delete`), or remove it from this list",
        ),
        (
            8,
            30,
            "hook-unknown-tool",
            "`widget_delte` is not one of this buddy's tools",
            "did you mean `widget_delete`? add it to `tools` too",
        ),
        (
            8,
            44,
            "hook-unknown-tool",
            "`resource_lst` is not one of this buddy's tools",
            "did you mean `resource_list`?",
        ),
    ]


def test_a_handler_indented_under_parameters_is_reported_there(write: Write) -> None:
    path = write(
        {
            "buddy.yaml": MINIMAL
            + """\
tools:
  - name: recall
    description: 列出记下的事
    parameters:
      type: object
      properties: {handler: {type: string}}
      handler: plugins.memo:recall
"""
        }
    )
    assert _issues(path) == [
        (
            11,
            7,
            "tool-kind",
            "`handler` is inside `parameters` (line 11), not a key of the tool",
            "indent it as a key of the tool, in line with `name`",
        )
    ]


def test_a_deny_indented_under_another_key_of_its_rule(write: Write) -> None:
    path = write(
        {
            "buddy.yaml": MINIMAL
            + "tools: [resource_list]\nhooks:\n  before_tool_call:\n"
            + "    - reason: 不读\n      when:\n        deny: [resource_list]\n"
        }
    )
    assert _issues(path) == [
        (
            10,
            9,
            "hook-kind",
            "`deny` is inside `when` (line 10), not a key of the rule",
            "indent it as a key of the rule, in line with `reason`",
        )
    ]


def test_a_mapping_key_of_the_wrong_form_is_named_for_its_form(write: Write) -> None:
    # `profiles:` keys are strings of a pattern: a key that breaks it is not told to be
    # quoted; only a key that is not a string is.
    bad = write({"buddy.yaml": MINIMAL + "profiles:\n  Dev: { model: test }\n"})
    assert _issues(bad) == [
        (
            6,
            3,
            "pattern",
            "the key `Dev` of `profiles` must match `^[a-z0-9][a-z0-9-]{0,62}$`",
            "check the allowed characters and length",
        )
    ]
    number = write({"buddy.yaml": MINIMAL + "  vars: { 1: x }\n"})
    assert _issues(number) == [
        (
            5,
            11,
            "type",
            "keys of `persona.vars` must be strings (got the number 1)",
            "quote the key",
        )
    ]

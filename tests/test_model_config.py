"""Models in the manifest: every preset resolves, renders and validates; the one-string
endpoint form; `thinking`; and the provider rules `buddy validate` reports — errors where
the API would answer 400, warnings where a setting would be ignored — each located, and
each bound tested on both sides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import buddy
from buddy.cli.main import main
from buddy.compile.compiler import diagnose
from buddy.compile.render import view
from buddy.errors import Issue
from buddy.models.base import Thinking
from buddy.models.providers import PROVIDERS, Provider, infer_provider, split_ref
from buddy.models.registry import resolve
from buddy.models.resilience import RetryingModel
from tests.conftest import MINIMAL, REPO, Write

HTTP_PRESETS = [p for p in PROVIDERS.values() if p.api != "local"]


def with_model(model_yaml: str) -> str:
    """MINIMAL with its `model: test` line replaced by ``model_yaml`` (one or more lines)."""
    return MINIMAL.replace("model: test\n", model_yaml)


def findings(path: Path) -> tuple[list[Issue], list[Issue]]:
    _, errors, warnings = diagnose(path)
    return errors, warnings


# --- Presets ------------------------------------------------------------------------------


@pytest.mark.parametrize("preset", HTTP_PRESETS, ids=lambda p: p.name)
def test_every_preset_resolves_renders_and_validates(write: Write, preset: Provider) -> None:
    name = preset.name
    endpoint = "" if preset.base_url else "@http://127.0.0.1:8080/v1"
    path = write(
        {"buddy.yaml": MINIMAL.replace("model: test", f"model: '{name}:some-model{endpoint}'")}
    )
    errors, warnings = findings(path)
    assert (errors, warnings) == ([], [])
    blueprint = buddy.load(path)
    spec = blueprint.model
    assert spec.ref == f"{name}:some-model"
    assert spec.base_url == (preset.base_url or "http://127.0.0.1:8080/v1")
    shown = view(blueprint)["model"]
    assert shown["ref"] == spec.ref and shown["base_url"] == spec.base_url
    env = {preset.api_key_env: "sk-x"} if preset.api_key_env else {}
    model = resolve(spec, env=env)
    assert isinstance(model, RetryingModel) and model.name == spec.ref


@pytest.mark.parametrize(
    ("bare", "provider"),
    [
        ("doubao-seed-1-6-250615", "volcengine"),
        ("MiniMax-M2", "minimax"),
        ("gemini-2.5-flash", "gemini"),
        ("grok-4", "xai"),
        ("mistral-small-latest", "mistral"),
        ("magistral-medium-latest", "mistral"),
        ("kimi-k2-thinking", "moonshot"),
        ("deepseek-reasoner", "deepseek"),
        ("qwq-32b", "dashscope"),
        ("claude-opus-4-6", "anthropic"),
    ],
)
def test_bare_names_of_the_new_presets(bare: str, provider: str) -> None:
    assert infer_provider(bare) == provider


def test_prefixes_match_one_row_each() -> None:
    # A bare name must never be claimed by two rows: the order would decide silently.
    rows = {prefix: p.name for p in PROVIDERS.values() for prefix in p.prefixes}
    assert len(rows) == sum(len(p.prefixes) for p in PROVIDERS.values())


# --- One string for any endpoint ----------------------------------------------------------


@pytest.mark.parametrize(
    ("ref", "parts"),
    [
        (
            "openai-compatible:qwen3@http://127.0.0.1:11434/v1",
            ("openai-compatible", "qwen3", "http://127.0.0.1:11434/v1"),
        ),
        (
            "ollama:qwen3:8b@http://10.0.0.2:11434/v1",
            ("ollama", "qwen3:8b", "http://10.0.0.2:11434/v1"),
        ),
        ("vertex:claude-sonnet-4@20250514", ("vertex", "claude-sonnet-4@20250514", None)),
        (
            "anthropic:claude-sonnet-4@20250514@https://proxy.example/v1",
            ("anthropic", "claude-sonnet-4@20250514", "https://proxy.example/v1"),
        ),
        ("kimi-k3", (None, "kimi-k3", None)),
    ],
)
def test_split_ref(ref: str, parts: tuple[str | None, str, str | None]) -> None:
    assert split_ref(ref) == parts


def test_the_string_form_carries_an_endpoint(write: Write) -> None:
    ref = "openai-compatible:qwen3@http://127.0.0.1:11434/v1"
    path = write({"buddy.yaml": MINIMAL.replace("model: test", f"model: '{ref}'")})
    spec = buddy.load(path).model
    assert (spec.ref, spec.base_url, spec.api) == (
        "openai-compatible:qwen3",
        "http://127.0.0.1:11434/v1",
        "openai",
    )
    # The key is optional for a bare endpoint: sent when set, not needed otherwise.
    assert resolve(spec, env={}).name == "openai-compatible:qwen3"


def test_the_string_form_works_for_model_and_profiles(write: Write) -> None:
    path = write(
        {
            "buddy.yaml": MINIMAL
            + "profiles:\n  local: {model: 'openai-compatible:qwen3@http://127.0.0.1:1234/v1'}\n"
        }
    )
    assert buddy.load(path, profile="local").model.base_url == "http://127.0.0.1:1234/v1"
    override = buddy.load(path, model="deepseek:deepseek-chat@http://127.0.0.1:9/v1").model
    assert (override.ref, override.base_url) == ("deepseek:deepseek-chat", "http://127.0.0.1:9/v1")


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("openai-compatible:qwen3", "`openai-compatible` needs its endpoint"),
        ("openai-compatible:qwen3@ftp://x", "needs its endpoint"),
        ("ollama:qwen3@http://has space", "is not an http(s) URL"),
    ],
)
def test_bad_endpoints_are_located_errors(write: Write, ref: str, message: str) -> None:
    path = write({"buddy.yaml": MINIMAL.replace("model: test", f"model: '{ref}'")})
    errors, _ = findings(path)
    assert [(e.line, e.code) for e in errors] == [(2, "model-base-url")]
    assert message in errors[0].message


def test_a_bad_endpoint_in_model_flag_is_reported_against_the_flag(write: Write) -> None:
    path = write({"buddy.yaml": MINIMAL})
    _, errors, _ = diagnose(path, model="openai-compatible:qwen3")
    assert [(e.file, e.code) for e in errors] == [("<--model>", "model-base-url")]


# --- thinking -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "thinking"),
    [
        ("true", Thinking()),
        ("false", Thinking(False)),
        ("{budget_tokens: 2048}", Thinking(budget_tokens=2048)),
        ("{effort: high}", Thinking(effort="high")),
        ("{enabled: false}", Thinking(False)),
    ],
)
def test_thinking_compiles_and_renders(write: Write, written: str, thinking: Thinking) -> None:
    path = write(
        {"buddy.yaml": with_model(f"model:\n  name: claude-sonnet-4-5\n  thinking: {written}\n")}
    )
    blueprint = buddy.load(path)
    assert blueprint.model.thinking == thinking
    shown = view(blueprint)["model"]["thinking"]
    assert shown == {k: v for k, v in vars_of(thinking).items() if v is not None}


def vars_of(thinking: Thinking) -> dict[str, object]:
    return {
        "enabled": thinking.enabled,
        "budget_tokens": thinking.budget_tokens,
        "effort": thinking.effort,
    }


def test_thinking_takes_a_budget_or_an_effort_not_both(write: Write) -> None:
    model = "model:\n  name: claude-sonnet-4-5\n  thinking: {budget_tokens: 2048, effort: low}\n"
    errors, _ = findings(write({"buddy.yaml": with_model(model)}))
    assert [(e.line, e.path, e.code) for e in errors] == [(4, "model.thinking", "thinking-options")]


@pytest.mark.parametrize("name", ["deepseek-ai/DeepSeek-V3.2", "qwen/qwen3-32b", "Qwen/Qwen3-8B"])
def test_names_with_their_publisher_need_their_provider(write: Write, name: str) -> None:
    assert infer_provider(name) is None
    errors, _ = findings(write({"buddy.yaml": MINIMAL.replace("model: test", f"model: '{name}'")}))
    assert [e.code for e in errors] == ["unknown-model"]
    assert (
        buddy.load(
            write({"buddy.yaml": MINIMAL.replace("model: test", f"model: 'siliconflow:{name}'")})
        ).model.ref
        == f"siliconflow:{name}"
    )


def test_thinking_effort_is_one_of_three(write: Write) -> None:
    path = write(
        {"buddy.yaml": with_model("model:\n  name: deepseek-chat\n  thinking: {effort: max}\n")}
    )
    errors, _ = findings(path)
    assert [(e.line, e.path) for e in errors] == [(4, "model.thinking.effort")]


# --- Provider rules at validate time -----------------------------------------------------


CLAUDE = "model:\n  name: claude-sonnet-4-5\n"


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        # temperature and top_p together: refused by recent Claude models.
        ("  temperature: 0.5\n  top_p: 0.9\n", [(5, "model.top_p", "model-sampling")]),
        ("  temperature: 0.5\n", []),
        ("  top_p: 0.9\n", []),
        # with thinking: no temperature; top_p from 0.95.
        ("  thinking: true\n  temperature: 0.5\n", [(5, "model.temperature", "thinking-sampling")]),
        ("  thinking: true\n  top_p: 0.94\n", [(5, "model.top_p", "thinking-sampling")]),
        ("  thinking: true\n  top_p: 0.95\n", []),
        ("  thinking: false\n  temperature: 0.5\n", []),
        # the budget: at least 1024 …
        (
            "  thinking: {budget_tokens: 1023}\n",
            [(4, "model.thinking.budget_tokens", "thinking-budget")],
        ),
        ("  thinking: {budget_tokens: 1024}\n", []),
        # … and below max_tokens (the budget of `true` is 10000, of effort low 2048).
        (
            "  thinking: {budget_tokens: 2048}\n  max_tokens: 2048\n",
            [(5, "model.max_tokens", "thinking-budget")],
        ),
        ("  thinking: {budget_tokens: 2048}\n  max_tokens: 2049\n", []),
        ("  thinking: true\n  max_tokens: 10000\n", [(5, "model.max_tokens", "thinking-budget")]),
        ("  thinking: true\n  max_tokens: 10001\n", []),
        ("  thinking: {effort: low}\n  max_tokens: 2049\n", []),
    ],
)
def test_anthropic_rules_are_located_errors(
    write: Write, extra: str, expected: list[tuple[int, str, str]]
) -> None:
    path = write({"buddy.yaml": with_model(CLAUDE + extra)})
    errors, _ = findings(path)
    assert [(e.line, e.path, e.code) for e in errors] == expected


def test_the_rules_reach_fallbacks_and_profiles(write: Write) -> None:
    manifest = (
        with_model(
            "model:\n"
            "  name: deepseek-chat\n"
            "  fallbacks:\n"
            "    - {name: claude-sonnet-4-5, temperature: 0.5, top_p: 0.5}\n"
        )
        + "profiles:\n  cheap:\n    model: {name: claude-haiku-4-5, thinking: true, temperature: 1}\n"
    )
    errors, _ = findings(write({"buddy.yaml": manifest}))
    assert [(e.path, e.code) for e in errors] == [
        ("model.fallbacks[0].top_p", "model-sampling"),
        ("profiles.cheap.model.temperature", "thinking-sampling"),
    ]


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("  name: glm-4.6\n  thinking: true\n", []),
        ("  name: llama3\n  provider: ollama\n  thinking: true\n", [(5, "model.thinking")]),
        (
            "  name: kimi-k2.5\n  thinking: {budget_tokens: 2000}\n",
            [(4, "model.thinking.budget_tokens")],
        ),
        ("  name: kimi-k2.5\n  thinking: {effort: low}\n", [(4, "model.thinking.effort")]),
        ("  name: deepseek-chat\n  thinking: {effort: low}\n", []),
        ("  name: gpt-5\n  thinking: false\n", [(4, "model.thinking")]),
        ("  name: gpt-5\n  thinking: {effort: low}\n", []),
        ("  name: qwen3-max\n  thinking: {budget_tokens: 500}\n", []),
        (
            "  name: claude-opus-4-6\n  thinking: {budget_tokens: 4000}\n",
            [(4, "model.thinking.budget_tokens")],
        ),
        ("  name: claude-opus-4-6\n  thinking: {effort: low}\n", []),
        ("  name: claude-opus-4-20250514\n  thinking: {budget_tokens: 4000}\n", []),
    ],
)
def test_settings_a_provider_cannot_take_are_located_warnings(
    write: Write, model: str, expected: list[tuple[int, str]]
) -> None:
    path = write({"buddy.yaml": with_model("model:\n" + model)})
    errors, warnings = findings(path)
    assert errors == []
    assert [(w.line, w.path) for w in warnings] == expected
    buddy.load(path)  # a warning never stops the buddy


def test_validate_prints_warnings_and_passes(
    write: Write, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(
        {"buddy.yaml": with_model("model:\n  name: llama3\n  provider: ollama\n  thinking: true\n")}
    )
    monkeypatch.chdir(path.parent)
    assert main(["validate", "buddy.yaml"]) == 0
    captured = capsys.readouterr()
    shown = [
        "buddy.yaml:5:13: warning: Ollama has no thinking setting buddy can send: `thinking` is "
        "ignored [model.thinking] (thinking-unsupported)",
        "    hint: a model that always thinks needs no setting; see docs/models.md",
    ]
    assert captured.out.splitlines() == [*shown, "ok: 1 buddy valid, 1 warning(s)"]
    for doc in ("cli.md", "models.md"):  # the docs show this very output
        assert "\n".join(shown) in (REPO / "docs" / doc).read_text(encoding="utf-8")
    assert captured.err == ""
    assert main(["validate", "--format", "json", "buddy.yaml"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True and report["errors"] == []
    assert [w["code"] for w in report["warnings"]] == ["thinking-unsupported"]
    assert main(["validate", "--format", "github", "buddy.yaml"]) == 0
    assert capsys.readouterr().out.startswith("::warning file=buddy.yaml,line=5,col=13,")

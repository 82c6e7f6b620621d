"""From a validated manifest to a :class:`~buddy.compile.blueprint.Blueprint`.

Everything that relates several parts of a manifest, or reads other files, is checked
here — tool names, hook targets, handler references, templates, traits, widget schemas,
resources, the data declaration — and every problem is reported with the location of
the value that caused it. Nothing here imports or runs plugin code.

This module is the driver (the model, and the blueprint assembled); the parts are
compiled by :mod:`.tool_compiler` (``tools:``, ``hooks:``), :mod:`.persona_compiler`
(``persona:``) and :mod:`.compilation` (what they share, and each capability section).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from buddy.compile.blueprint import Blueprint, ModelSpec
from buddy.compile.memo import kept_checks
from buddy.compile.model_rules import check_model
from buddy.compile.persona_compiler import PersonaCompiler
from buddy.compile.project import one_look, resolved
from buddy.compile.tool_compiler import ToolCompiler
from buddy.errors import Issue, ManifestError
from buddy.extend import facades, layers, placements, prompts
from buddy.manifest.load import read_manifest
from buddy.manifest.locate import issue_at, issues_from_validation
from buddy.manifest.model_options import FallbackOptions, ModelOptions, ModelRef, ThinkingOptions
from buddy.manifest.schema import did_you_mean, manifest_model
from buddy.manifest.yamlio import YamlPath, parse_document
from buddy.models.base import Thinking
from buddy.models.providers import PROVIDERS, infer_provider, split_ref

__all__ = ["batch", "check", "diagnose", "load", "manifest_path"]


@cache
def _model_adapter() -> TypeAdapter[Any]:
    """``--model``'s validator, built on first use (most runs have no override)."""
    return TypeAdapter(ModelRef)


def manifest_path(path: str | os.PathLike[str]) -> Path:
    """``buddy.yaml`` inside ``path`` when it is a directory, else ``path`` itself."""
    candidate = Path(path)
    return candidate / "buddy.yaml" if candidate.is_dir() else candidate


def load(
    path: str | os.PathLike[str], *, profile: str | None = None, model: str | None = None
) -> Blueprint:
    """Load, validate and compile a buddy.

    Args:
        path: A ``buddy.yaml`` or the directory holding one.
        profile: A profile of the manifest's ``profiles`` to apply (its model wins).
        model: A model reference (``provider:name``) overriding everything for this run.

    Returns:
        The compiled buddy.

    Raises:
        ManifestError: Carrying every located problem found.
    """
    blueprint, issues = check(path, profile=profile, model=model)
    if blueprint is None:
        raise ManifestError(issues)
    return blueprint


def check(
    path: str | os.PathLike[str], *, profile: str | None = None, model: str | None = None
) -> tuple[Blueprint | None, list[Issue]]:
    """Like :func:`load`, but returns ``(blueprint or None, issues)`` instead of raising."""
    blueprint, issues, _ = diagnose(path, profile=profile, model=model)
    return blueprint, issues


def diagnose(
    path: str | os.PathLike[str], *, profile: str | None = None, model: str | None = None
) -> tuple[Blueprint | None, list[Issue], list[Issue]]:
    """Like :func:`check`, with the warnings too: ``(blueprint or None, errors, warnings)``.

    A warning is something the buddy runs without (a setting its model's provider cannot
    take, see :mod:`buddy.compile.model_rules`); it never makes the manifest invalid.
    """
    with one_look(), kept_checks(manifest_path(path)):
        source = read_manifest(manifest_path(path))
        manifest = source.manifest or source.partial
        if manifest is None or source.doc is None:
            return None, _unique(source.issues), []
        # With schema errors, the sections that validated are still compiled, so one run
        # of `validate` reports every problem it can find.
        compiler = _Compiler(source, manifest, source.doc, skip=source.failed)
        blueprint = compiler.run(profile, model)
    issues = _unique([*source.issues, *compiler.issues])
    return (blueprint if not issues else None), issues, _unique(compiler.warnings)


@contextmanager
def batch() -> Iterator[None]:
    """Within it, buddies compiled one after another (``buddy validate`` of a folder) are
    compiled as of one moment, and with less garbage collection.

    - The folders every compile looks at (the project root, ``personas/``, ``plugins/``)
      are resolved once for the batch, not once per buddy (:func:`one_look`): the files
      are taken not to change while it runs, as for one command.
    - Python's cyclic garbage collector took about a sixth of a compile: what is alive
      when the batch starts (modules, models, caches) is moved out of its way
      (:func:`gc.freeze`), and its youngest generation is collected every 10,000
      allocations instead of 700. Garbage is still collected, less often; everything is
      as before when the batch ends.
    """
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(threshold[0], 10_000), *threshold[1:])
    try:
        with one_look():
            yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


def _unique(issues: Iterable[Issue]) -> list[Issue]:
    return sorted(set(issues), key=lambda i: (i.file, i.line, i.column, i.code, i.message))


class _Compiler(ToolCompiler, PersonaCompiler):
    """The driver: each part of the manifest compiled, then the blueprint assembled."""

    # ------------------------------------------------------------ run

    def run(self, profile: str | None, override: str | None) -> Blueprint | None:
        m, skip = self.manifest, self.skip
        sections = self.sections()
        tools = self.tools(sections) if "tools" not in skip else ()
        # Hooks may name any declared tool, even one whose own definition has an error.
        names = {t if isinstance(t, str) else t.name for t in m.tools}
        before, after = (
            self.hooks(None if "tools" in skip else names) if "hooks" not in skip else ((), ())
        )
        model = self.model(profile, override) if not skip & {"model", "profiles"} else None
        if not skip & {"model", "profiles"}:
            self.model_rules()
        persona = self.persona(sections) if "persona" not in skip else None
        if skip or self.issues or model is None or persona is None:
            return None
        self.files.update(resolved(p) for p in persona.files)
        origin = "override" if override is not None else "profile" if profile else "manifest"
        return Blueprint(
            name=m.name,
            title=m.title or m.name,
            description=m.description or "",
            manifest=self.source.path.resolve(),
            profile=profile,
            model=model,
            model_origin=origin,
            manifest_model=model_spec(m.model).ref,
            profiles=tuple((n, model_spec(p.model).ref) for n, p in m.profiles.items()),
            persona=persona,
            tools=tools,
            before_hooks=before,
            after_hooks=after,
            files=tuple(sorted(self.files)),
            sections=sections,
            facades=facades(),
            prompts=prompts(),
            placements=placements(),
            layers=layers(sections),
        )

    # ------------------------------------------------------------ model

    def model(self, profile: str | None, override: str | None) -> ModelSpec | None:
        ref: Any = self.manifest.model
        if profile is not None:
            chosen = self.manifest.profiles.get(profile)
            if chosen is None:
                known = list(self.manifest.profiles)
                hint = did_you_mean(profile, known) or (
                    f"profiles here: {', '.join(known)}"
                    if known
                    else "this manifest has no `profiles`"
                )
                where: YamlPath = ("profiles",) if known else ()
                self.error(
                    where, "unknown-profile", f"unknown profile `{profile}`", hint, key=bool(known)
                )
                return None
            ref = chosen.model
        if override is not None:
            try:
                ref = _model_adapter().validate_python(override)
            except ValidationError as exc:
                doc = parse_document("model: override\n", "<--model>")
                doc.data = {"model": override}
                for issue in issues_from_validation(doc, exc, manifest_model(), ("model",)):
                    self.issues.append(
                        Issue(
                            file="<--model>",
                            line=0,
                            column=0,
                            path="model",
                            code=issue.code,
                            message=issue.message,
                            hint=issue.hint or "check --model or BUDDY_MODEL",
                        )
                    )
                return None
        return model_spec(ref)

    def model_rules(self) -> None:
        """What the providers of the manifest's models refuse or ignore (every profile's
        too: a profile is chosen per run, its mistakes are there all along)."""
        refs: list[tuple[YamlPath, Any]] = [(("model",), self.manifest.model)]
        refs += [(("profiles", n, "model"), p.model) for n, p in self.manifest.profiles.items()]
        for path, ref in refs:
            for finding in check_model(ref, path):
                issue = issue_at(
                    self.doc, finding.path, finding.code, finding.message, finding.hint
                )
                (self.issues if finding.severity == "error" else self.warnings).append(issue)


def model_spec(ref: Any) -> ModelSpec:
    """A :class:`ModelSpec` from a validated model reference (string or mapping)."""
    if isinstance(ref, str):
        provider, name, base_url = split_ref(ref)
        provider = provider or str(infer_provider(name))
        preset = PROVIDERS[provider]
        return ModelSpec(
            provider, name, preset.api, base_url or preset.base_url, preset.api_key_env
        )
    assert isinstance(ref, ModelOptions | FallbackOptions)
    provider = ref.provider or str(infer_provider(ref.name))
    preset = PROVIDERS[provider]
    fallbacks = tuple(model_spec(f) for f in ref.fallbacks) if isinstance(ref, ModelOptions) else ()
    return ModelSpec(
        provider,
        ref.name,
        preset.api,
        ref.base_url or preset.base_url,
        preset.api_key_env,
        ref.temperature,
        ref.max_tokens,
        ref.top_p,
        fallbacks,
        _thinking(ref.thinking),
    )


def _thinking(value: bool | ThinkingOptions | None) -> Thinking | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return Thinking(enabled=value)
    return Thinking(value.enabled, value.budget_tokens, value.effort)

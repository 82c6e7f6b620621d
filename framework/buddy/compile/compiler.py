"""From a validated manifest to a :class:`~buddy.compile.blueprint.Blueprint`.

Everything that relates several parts of a manifest, or reads other files, is checked
here — tool names, hook targets, handler references, templates, traits, widget schemas,
resources, the data declaration — and every problem is reported with the location of
the value that caused it. Nothing here imports or runs plugin code.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from functools import cache, lru_cache
from pathlib import Path, PurePosixPath
from typing import Any

import jinja2
from jinja2 import meta
from pydantic import TypeAdapter, ValidationError

from buddy.compile.blueprint import (
    Blueprint,
    DenyHook,
    HandlerHook,
    HandlerRef,
    ModelSpec,
    ToolSpec,
)
from buddy.compile.handlers import HandlerProblem, resolve_handler
from buddy.compile.model_rules import check_model
from buddy.compile.persona import (
    EXAMPLE_NOW,
    INLINE_NAME,
    RESERVED_NAMES,
    PersonaRenderer,
    TemplateNotRegular,
    describe_failure,
    find_project_root,
    make_environment,
    search_path,
)
from buddy.compile.platform_tools import platform_tools
from buddy.compile.project import inside, not_regular, one_look, resolved, unmarked_root_note
from buddy.errors import Issue, ManifestError
from buddy.extend import declarative_uses, facades, layers, prompts, registry, resolve
from buddy.extend import sections as registered_sections
from buddy.manifest.load import Source, deep_merge, read_manifest
from buddy.manifest.locate import issue_at, issues_from_validation, loc_of
from buddy.manifest.schema import (
    CoreManifest,
    CustomTool,
    DeclarativeTool,
    DenyRule,
    FallbackOptions,
    HandlerRule,
    ModelOptions,
    ModelRef,
    ThinkingOptions,
    closest,
    did_you_mean,
    manifest_model,
)
from buddy.manifest.yamlio import (
    Document,
    Loc,
    YamlPath,
    load_document,
    parse_document,
)
from buddy.models.base import Thinking
from buddy.models.providers import PROVIDERS, infer_provider, split_ref

__all__ = ["check", "diagnose", "load", "manifest_path"]

_IDENTIFIER_HINT = "names in `vars` must be identifiers (letters, digits, _) to be usable"
_model_adapter: TypeAdapter[Any] = TypeAdapter(ModelRef)


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
    with one_look():
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


def _unique(issues: Iterable[Issue]) -> list[Issue]:
    return sorted(set(issues), key=lambda i: (i.file, i.line, i.column, i.code, i.message))


class _Compiler:
    def __init__(
        self,
        source: Source,
        manifest: CoreManifest,
        doc: Document,
        skip: frozenset[str] = frozenset(),
    ) -> None:
        self.skip = skip
        self.source = source
        self.manifest = manifest
        self.doc = doc
        self.issues: list[Issue] = []
        self.warnings: list[Issue] = []
        self.root = find_project_root(source.directory)
        self.files: set[Path] = {resolved(p) for p in source.files}

    # ------------------------------------------------------------ helpers

    def error(
        self, path: YamlPath, code: str, message: str, hint: str = "", *, key: bool = False
    ) -> None:
        self.issues.append(issue_at(self.doc, path, code, message, hint, key=key))

    def directory_of(self, path: YamlPath) -> Path:
        """The directory of the manifest file that wrote ``path`` (paths are relative to it)."""
        return self.source.declared_in(path).parent

    def outside_file(self, file: Path, name: str) -> Issue:
        """``file-outside-project`` for a file the buddy would read (symlinked out)."""
        return Issue.of_file(
            str(file),
            "file-outside-project",
            f"{name} leads outside the project, to {file.resolve()}",
            f"keep the file inside the project root {self.root}, not a symlink to one outside",
        )

    def plugin_roots(self, path: YamlPath) -> list[Path]:
        roots = [resolved(self.directory_of(path)), self.root]
        return list(dict.fromkeys(roots))

    def handler(self, reference: str, kind: str, path: YamlPath) -> HandlerRef | None:
        found = resolve_handler(reference, kind, self.plugin_roots(path))
        if isinstance(found, HandlerProblem):
            if found.file is not None:
                self.issues.append(
                    Issue(
                        file=str(found.file),
                        line=found.line,
                        column=1,
                        path="",
                        code=found.code,
                        message=found.message,
                        hint=found.hint,
                    )
                )
            else:
                self.error(path, found.code, found.message, found.hint)
            return None
        self.files.add(resolved(found.file))
        return found

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
                ref = _model_adapter.validate_python(override)
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

    # ------------------------------------------------------------ persona

    def persona(self, sections: Mapping[str, Any]) -> PersonaRenderer | None:
        p = self.manifest.persona
        ok = True
        layered = prompts()
        reserved = (*RESERVED_NAMES, *(key for key, _ in layered))
        for name in p.vars:
            if name in reserved:
                self.error(
                    ("persona", "vars", name),
                    "reserved-var",
                    f"`{name}` is a reserved name in templates",
                    f"the reserved names are {', '.join(reserved)}; rename this var",
                    key=True,
                )
                ok = False
            elif not name.isidentifier():
                self.error(
                    ("persona", "vars", name),
                    "pattern",
                    f"`{name}` is not a valid name",
                    _IDENTIFIER_HINT,
                    key=True,
                )
                ok = False
        path = search_path(self.source.directory, self.root)
        # A template or trait written in an extended manifest is also looked up beside it.
        for written in (("persona", "template"), ("persona", "prompt"), ("persona", "traits")):
            declared = resolved(self.directory_of(written))
            if declared not in path:
                path.insert(1, declared)
        traits = self.traits(path)
        if not ok or traits is None:
            return None
        m = self.manifest
        renderer = PersonaRenderer(
            path=path,
            template=p.template,
            inline=p.prompt,
            traits=traits,
            variables=p.vars,
            buddy={"name": m.name, "title": m.title or m.name, "description": m.description or ""},
        )
        failed = False
        # Rendered with each section's representative example, as `buddy render` shows it.
        layer = {
            key: resolve(reference)(sections[key], True)
            for key, reference in layered
            if key in sections
        }
        for kind in ("private", "group"):
            try:
                renderer.render(
                    kind=kind, conversation_id=f"example-{kind}", now=EXAMPLE_NOW, layer=layer
                )
            except Exception as exc:  # any template failure is the author's to fix
                self.template_issue(exc, renderer)
                failed = True
        return None if failed else renderer

    def template_issue(self, exc: BaseException, renderer: PersonaRenderer) -> None:
        failure = describe_failure(exc, renderer.name, renderer.inline)
        named: YamlPath = ("persona", "template") if renderer.template else ("persona", "prompt")
        at = loc_of(self.doc, named)
        hint = self.undefined_hint(failure.undefined) if failure.undefined else ""
        if failure.file == INLINE_NAME:
            start = self.doc.blocks.get(named)
            line = max(failure.line, 1)
            where = ""
            if start is not None:
                column = start.column + failure.column - 1
                loc = Loc(start.file, start.line + line - 1, column)
            else:
                # A plain or quoted scalar folds its line breaks and may write them as `\n`,
                # so the prompt's lines are not the file's: point at the value instead.
                loc = at
                where = f", line {line}" if line > 1 else ""
            self.issues.append(
                Issue(
                    file=loc.file,
                    line=loc.line,
                    column=loc.column,
                    path="persona.prompt",
                    code=failure.code,
                    message=f"in the persona prompt{where}: {failure.message}",
                    hint=hint,
                )
            )
            return
        if failure.code == "template-not-found" and failure.file == renderer.template:
            choices = list(renderer.templates())
            wanted = str(getattr(exc, "name", renderer.template))
            self.error(
                named,
                "template-not-found",
                f"template `{wanted}` not found on the search path",
                did_you_mean(wanted, choices)
                or "looked in: "
                + ", ".join(str(p) for p in renderer.path)
                + unmarked_root_note(self.root),
            )
            return
        if isinstance(exc, TemplateNotRegular) and failure.file == renderer.template:
            self.error(
                named,
                "file-not-regular",
                f"template `{exc.name}` is {exc.kind}, not a regular file",
                f"{exc.filename} must be a template file; replace it with an ordinary file",
            )
            return
        named_at = f"the template is named at {at.file}:{at.line}:{at.column}"
        self.issues.append(
            Issue(
                file=failure.file,
                line=failure.line,
                column=failure.column,
                path="persona.template",
                code=failure.code,
                message=failure.message,
                hint=f"{hint}; {named_at}" if hint else named_at,
            )
        )

    def undefined_hint(self, name: str) -> str:
        """How to define ``name``, a top-level name a persona template uses undefined."""
        if name in dict(prompts()):  # what a section gives templates, and it has none
            return f"`{name}` is what a `{name}:` section gives templates: add one to the manifest"
        known = [*self.manifest.persona.vars, *RESERVED_NAMES]
        guess = did_you_mean(name, known)
        if guess:
            return f"{guess} Or define `{name}` in `persona.vars`"
        return "define it in `persona.vars`"

    def traits(self, path: list[Path]) -> dict[str, Any] | None:
        raw = self.manifest.persona.traits
        if raw is None:
            return {}
        items: list[tuple[str, YamlPath]] = (
            [(raw, ("persona", "traits"))]
            if isinstance(raw, str)
            else [(name, ("persona", "traits", i)) for i, name in enumerate(raw)]
        )
        merged: dict[str, Any] = {}
        ok = True
        for name, where in items:
            file = _find_on_path(name, path)
            if file is None:
                self.error(
                    where,
                    "trait-not-found",
                    f"trait file `{name}` not found",
                    "trait names are relative paths looked up on the template search path: "
                    + ", ".join(str(p) for p in path)
                    + unmarked_root_note(self.root),
                )
                ok = False
                continue
            kind = not_regular(file)
            if kind is not None:  # never opened: a FIFO would block the reader forever
                self.error(
                    where,
                    "file-not-regular",
                    f"trait file `{name}` is {kind}, not a regular file",
                    f"{file} must be a trait file; replace it with an ordinary file",
                )
                ok = False
                continue
            self.files.add(resolved(file))
            loaded = load_document(file, str(file))
            if isinstance(loaded, Issue):
                if loaded.code == "yaml-not-mapping":
                    loaded = Issue(
                        file=loaded.file,
                        line=loaded.line,
                        column=loaded.column,
                        path="",
                        code="trait-invalid",
                        message="a trait file must be a mapping of names to values",
                    )
                self.issues.append(loaded)
                ok = False
                continue
            merged = deep_merge(merged, loaded.data)
        return merged if ok else None

    # ------------------------------------------------------------ tools

    def tools(self, sections: dict[str, Any]) -> tuple[ToolSpec, ...]:
        platform_names = [t for t in self.manifest.tools if isinstance(t, str)]
        platform = platform_tools(platform_names, sections)
        seen: set[str] = set()
        out: list[ToolSpec] = []
        for index, item in enumerate(self.manifest.tools):
            path: YamlPath = ("tools", index)
            name = item if isinstance(item, str) else item.name
            name_path = path if isinstance(item, str) else (*path, "name")
            if name in seen:
                self.error(
                    name_path,
                    "tool-duplicate",
                    f"tool `{name}` is listed twice",
                    "tool names must be unique; remove or rename one",
                )
                continue
            seen.add(name)
            if isinstance(item, str):
                out.append(platform[item])
            elif isinstance(item, CustomTool):
                ref = self.handler(item.handler, "tool", (*path, "handler"))
                if ref is not None:
                    out.append(
                        ToolSpec(
                            name=item.name,
                            kind="custom",
                            description=item.description,
                            parameters=item.parameters,
                            label=item.label or "",
                            handler=ref,
                            timeout_seconds=item.timeout_seconds,
                        )
                    )
            else:
                spec = self.declarative(item, path)
                if spec is not None:
                    out.append(spec)
        return tuple(out)

    def declarative(self, item: DeclarativeTool, path: YamlPath) -> ToolSpec | None:
        use = next(u for u in declarative_uses() if u.name == getattr(item, "uses", None))
        fields = {f: getattr(item, f) for f in item.TEMPLATES if getattr(item, f, None) is not None}
        used: dict[str, frozenset[str]] = {}
        ok = True
        for field, text in fields.items():
            names = _template_names(text)
            if isinstance(names, str):
                self.error(
                    (*path, field), "tool-template", f"`{field}` is not a valid template: {names}"
                )
                ok = False
            else:
                used[field] = names
        if not ok:
            return None
        variables = sorted(set().union(*used.values())) if used else []
        if item.parameters is not None:
            parameters = item.parameters
            known = set(parameters.get("properties", {}))
            for field, names in used.items():
                for name in sorted(names - known):
                    self.error(
                        (*path, field),
                        "tool-template",
                        f"`{field}` uses `{name}`, which is not among the tool's parameters",
                        did_you_mean(name, sorted(known)) or "add it to `parameters.properties`",
                    )
                    ok = False
        else:
            schemas = resolve(use.schemas) if use.schemas else {}
            parameters = {
                "type": "object",
                "properties": {v: _derived_property(v, fields, schemas) for v in variables},
                "required": variables,
                "additionalProperties": False,
            }
        if not ok:
            return None
        templates = dict(fields)
        if "reply" not in templates and use.reply:
            templates["reply"] = use.reply
        return ToolSpec(
            name=item.name,
            kind="declarative",
            description=item.description,
            parameters=parameters,
            label=item.label or "",
            uses=use.name,
            templates=templates,
            execute=use.execute,
        )

    # ------------------------------------------------------------ hooks

    def hooks(
        self, tools: set[str] | None
    ) -> tuple[tuple[DenyHook | HandlerHook, ...], tuple[HandlerHook, ...]]:
        before: list[DenyHook | HandlerHook] = []
        after: list[HandlerHook] = []
        hooks = self.manifest.hooks
        for index, rule in enumerate(hooks.before_tool_call):
            path: YamlPath = ("hooks", "before_tool_call", index)
            if isinstance(rule, DenyRule):
                self.hook_targets(rule.deny, tools, (*path, "deny"))
                before.append(DenyHook(tuple(rule.deny), rule.when, rule.reason))
            else:
                hook = self.handler_hook(rule, "before", path, tools)
                if hook is not None:
                    before.append(hook)
        for index, rule in enumerate(hooks.after_tool_call):
            hook = self.handler_hook(rule, "after", ("hooks", "after_tool_call", index), tools)
            if hook is not None:
                after.append(hook)
        return tuple(before), tuple(after)

    def handler_hook(
        self, rule: HandlerRule, kind: str, path: YamlPath, tools: set[str] | None
    ) -> HandlerHook | None:
        if rule.tools:
            self.hook_targets(rule.tools, tools, (*path, "tools"))
        ref = self.handler(rule.handler, kind, (*path, "handler"))
        return HandlerHook(ref, tuple(rule.tools or ())) if ref is not None else None

    def hook_targets(self, names: list[str], tools: set[str] | None, path: YamlPath) -> None:
        if tools is None:  # the tool list itself is invalid: nothing to check against
            return
        for index, name in enumerate(names):
            if name in tools:
                continue
            if name in registry().tools:  # a real tool, just not this buddy's
                self.error(
                    (*path, index),
                    "hook-unknown-tool",
                    f"`{name}` is a platform tool this buddy does not list in `tools`",
                    f"add it to `tools` (`- {name}`), or remove it from this list",
                )
                continue
            platform = closest(name, registry().tool_names())
            self.error(
                (*path, index),
                "hook-unknown-tool",
                f"`{name}` is not one of this buddy's tools",
                did_you_mean(name, sorted(tools))
                or (f"did you mean `{platform}`? add it to `tools` too" if platform else "")
                or "list the tool under `tools` first",
            )

    # ------------------------------------------------------------ capability sections

    def sections(self) -> dict[str, Any]:
        """Each registered section compiled, by key (its compile function reports its
        problems on a :class:`_SectionContext`)."""
        compiled: dict[str, Any] = {}
        for section in registered_sections():
            if section.key in self.skip:
                continue
            value = resolve(section.compile)(_SectionContext(self, section.key))
            if value is not None:  # `None`: the buddy has no such section (not rendered)
                compiled[section.key] = value
        return compiled

    # ------------------------------------------------------------ folders

    def folder(self, field: str) -> Path | None:
        value: str = getattr(self.manifest, field)
        explicit = field in self.doc.data
        base = self.directory_of((field,)) if explicit else self.source.directory
        try:
            folder = resolved(base / value)
        except ValueError:  # a name no directory can have (a NUL byte): reported missing below
            folder = base / value
        if os.path.isdir(folder):  # unlike Path.is_dir, False for a name too long
            if inside(folder, self.root):
                return folder
            # A folder's files are compiled in, served to the model or uploaded, and walked
            # at every compile: one out of the project (`resources: /`) would publish, and
            # walk, anything on the disk.
            self.error(
                (field,),
                "dir-outside-project",
                f"`{field}: {value}` is outside the project",
                f"{folder} is not inside the project root {self.root}; keep the folder in the"
                " project (a symlink to it counts as outside)",
            )
            return None
        if explicit:
            self.error(
                (field,),
                "dir-not-found",
                f"`{field}: {value}` — no such directory",
                f"looked for {folder}",
            )
        return None


class _SectionContext:
    """What a capability section's compile function sees of the compiler
    (:class:`buddy.extend.SectionContext`)."""

    def __init__(self, compiler: _Compiler, key: str) -> None:
        self._compiler = compiler
        self.key = key
        self.value: Any = getattr(compiler.manifest, key, None)
        self.doc = compiler.doc
        self.directory = compiler.source.directory
        self.root = compiler.root

    def declared_in(self) -> Path:
        return self._compiler.source.declared_in((self.key,))

    def error(
        self,
        path: tuple[str | int, ...],
        code: str,
        message: str,
        hint: str = "",
        *,
        key: bool = False,
    ) -> None:
        self._compiler.error((self.key, *path), code, message, hint, key=key)

    def report(self, issue: Issue) -> None:
        self._compiler.issues.append(issue)

    def depends_on(self, path: Path) -> None:
        self._compiler.files.add(resolved(path))

    def inside(self, path: Path) -> bool:
        return inside(path, self.root)

    def outside_file(self, file: Path, name: str) -> Issue:
        return self._compiler.outside_file(file, name)

    def folder(self) -> Path | None:
        return self._compiler.folder(self.key)

    def search_path(self) -> list[Path]:
        path = search_path(self._compiler.source.directory, self.root)
        declared = resolved(self._compiler.directory_of((self.key,)))
        if declared not in path:
            path.insert(1, declared)
        return path

    def shared(self, name: str) -> Path | None:
        return _find_on_path(name, self.search_path())


def _derived_property(
    name: str, fields: Mapping[str, str], schemas: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """A derived parameter's schema: the kind's own for a field whose template is exactly
    ``{{ name }}`` (a memory key), else a non-empty string."""
    for field, schema in schemas.items():
        template = fields.get(field)
        if template is not None and re.fullmatch(r"\{\{-?\s*" + name + r"\s*-?\}\}", template):
            return dict(schema)
    return {"type": "string", "minLength": 1}


@cache
def _template_parser() -> jinja2.Environment:
    """A sandboxed environment used only to parse declarative tool templates."""
    return make_environment([])


@lru_cache(maxsize=4096)
def _template_names(text: str) -> frozenset[str] | str:
    """The names a declarative tool's template uses, or why it is not a template.

    Cached: the same few templates (``{{ topic }}``) recur in tool after tool.
    """
    try:
        return frozenset(meta.find_undeclared_variables(_template_parser().parse(text)))
    except jinja2.TemplateSyntaxError as exc:
        return exc.message or "invalid template"


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


def _find_on_path(name: str, path: list[Path]) -> Path | None:
    """The first ``name`` on ``path``, whatever it is: one that is not a regular file (a
    FIFO, a directory) is the caller's to refuse (:func:`not_regular`), not passed over."""
    parts = PurePosixPath(name).parts
    if not parts or PurePosixPath(name).is_absolute() or ".." in parts:
        return None
    for directory in path:
        candidate = directory.joinpath(*parts)
        # os.path.exists, unlike Path.exists, is False (not an error) for a name too long.
        if os.path.exists(candidate) and resolved(candidate).is_relative_to(resolved(directory)):
            return candidate
    return None

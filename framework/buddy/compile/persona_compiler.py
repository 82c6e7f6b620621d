"""The compile of ``persona:``: the template search path, the vars' names, the trait
files, and a trial render of the template, whose failures are located in the template or
the manifest."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from buddy.compile.compilation import Compilation, find_on_path
from buddy.compile.persona import (
    EXAMPLE_NOW,
    INLINE_NAME,
    RESERVED_NAMES,
    PersonaRenderer,
    TemplateNotRegular,
    describe_failure,
    search_path,
)
from buddy.compile.placement import DEFAULT_PLACE, system_prompt
from buddy.compile.project import not_regular, resolved, unmarked_root_note
from buddy.errors import Issue
from buddy.extend import placements, prompts, resolve
from buddy.manifest.load import deep_merge
from buddy.manifest.locate import loc_of
from buddy.manifest.schema import did_you_mean
from buddy.manifest.yamlio import Loc, YamlPath, load_document

__all__ = ["PersonaCompiler"]

_IDENTIFIER_HINT = "names in `vars` must be identifiers (letters, digits, _) to be usable"


class PersonaCompiler(Compilation):
    """The part of the compiler that compiles ``persona:`` into a :class:`PersonaRenderer`."""

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
        nowhere: dict[str, list[str]] = {}
        for kind in ("private", "group"):
            try:
                _, landings = system_prompt(
                    renderer,
                    placements(),
                    layer,
                    kind=kind,
                    conversation_id=f"example-{kind}",
                    now=EXAMPLE_NOW,
                )
            except Exception as exc:  # any template failure is the author's to fix
                self.template_issue(exc, renderer)
                failed = True
                continue
            for landing in landings:
                if landing.where == "nowhere":
                    nowhere.setdefault(landing.key, []).append(kind)
        for key, kinds in nowhere.items():
            self.unplaced(key, kinds, renderer)
        return None if failed or nowhere else renderer

    def unplaced(self, key: str, kinds: list[str], renderer: PersonaRenderer) -> None:
        """The ``key:`` section gives templates a part that lands nowhere in ``kinds``."""
        where = "" if len(kinds) == 2 else f" in a {kinds[0]} conversation"
        template = f"`{renderer.template}`" if renderer.template else "the inline prompt"
        self.error(
            (key,),
            "part-unplaced",
            f"what `{key}:` gives the model reaches it nowhere{where}: {template} never uses"
            f" `{key}`, and the `{key}` section has no default place {DEFAULT_PLACE}",
            f"use `{{{{ {key} }}}}` (or a field of it) in the persona template",
            key=True,
        )

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
            file = find_on_path(name, path)
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

"""Resolve ``module:function`` handler references — by reading source, never importing.

A manifest may name Python only inside the buddy project: a module under a ``plugins/``
folder (next to the manifest that names it, or at the project root), or a package an
installed distribution registers under the ``buddy.plugins`` entry-point group. Anything
else (``os:system``, ``subprocess:run`` …) is refused: YAML must not be a way to run
arbitrary code. Validation parses the module's source with :mod:`ast` to check that the
function exists and accepts the arguments it will be called with; plugin code never runs.
"""

from __future__ import annotations

import ast
import importlib.util
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from buddy.compile.blueprint import HandlerRef
from buddy.compile.project import not_regular, resolved, unmarked_root_note
from buddy.manifest.schema import did_you_mean

__all__ = ["ARITY", "HandlerProblem", "resolve_handler"]

MAX_PLUGIN_BYTES = 1024 * 1024

# How many positional arguments each kind of handler is called with, and their names.
ARITY: dict[str, tuple[str, ...]] = {
    "tool": ("conversation", "params"),
    "before": ("call", "conversation"),
    "after": ("call", "result", "conversation"),
}


@dataclass(frozen=True, slots=True)
class HandlerProblem:
    """Why a reference does not resolve; ``file``/``line`` point into a plugin when known."""

    code: str
    message: str
    hint: str = ""
    file: Path | None = None
    line: int = 0


@cache
def _entry_point_modules() -> tuple[str, ...]:
    from buddy.extend.entrypoints import entry_points  # only for non-`plugins.` references

    return tuple(sorted({value.split(":")[0] for _, value in entry_points("buddy.plugins")}))


def _module_file(base: Path, parts: list[str]) -> Path | None:
    # What is there, regular or not: _parse refuses a FIFO, it is not passed over.
    for candidate in (
        base.joinpath(*parts).with_suffix(".py"),
        base.joinpath(*parts, "__init__.py"),
    ):
        if os.path.exists(candidate):  # unlike Path.exists, False for a name too long
            return candidate
    return None


def _inside(file: Path, folder: Path) -> bool:
    return resolved(file).is_relative_to(resolved(folder))


def _locate(module: str, roots: list[Path]) -> tuple[Path, Path | None] | HandlerProblem:
    parts = module.split(".")
    if parts[0] == "plugins":
        for root in roots:
            file = _module_file(root, parts)
            # A symlink may not lead out of the plugins folder, nor the folder out of the root.
            if (
                file is not None
                and _inside(file, root / "plugins")
                and _inside(root / "plugins", root)
            ):
                return file, root
        where = " or ".join(str(r / "plugins") for r in roots)
        return HandlerProblem(
            "handler-module-missing",
            f"module `{module}` not found in {where}",
            f"create {Path(*parts)}.py there" + unmarked_root_note(roots[-1]),
        )
    for allowed in _entry_point_modules():
        if module == allowed or module.startswith(allowed + "."):
            spec = importlib.util.find_spec(allowed.split(".")[0])
            if spec is None or (not spec.submodule_search_locations and spec.origin is None):
                break
            if spec.submodule_search_locations:
                base = Path(next(iter(spec.submodule_search_locations))).parent
                file = _module_file(base, parts)
            else:
                file = Path(str(spec.origin)) if len(parts) == 1 else None
            if file is None:
                break
            return file, None
    return HandlerProblem(
        "handler-outside-plugins",
        f"`{module}` is outside the project's plugins/ folders and is not a registered "
        "`buddy.plugins` entry point",
        "put the function in plugins/<module>.py next to buddy.yaml or at the project root "
        "and reference it as `plugins.<module>:<function>`",
    )


# Parsed plugin modules by (path, mtime, size): many references into one plugin file parse it
# once, and an edited file is parsed again.
_PARSED: dict[tuple[Path, int, int], ast.Module | HandlerProblem] = {}


def _parse(file: Path) -> ast.Module | HandlerProblem:
    kind = not_regular(file)
    if kind is not None:  # never opened: a FIFO would block the reader forever
        return HandlerProblem(
            "file-not-regular",
            f"the plugin module {file} is {kind}, not a regular file",
            "replace it with an ordinary file",
        )
    try:
        stat = file.stat()
    except OSError as exc:
        return HandlerProblem("handler-module-missing", f"cannot read {file}: {exc}")
    key = (file, stat.st_mtime_ns, stat.st_size)
    parsed = _PARSED.get(key)
    if parsed is None:
        if len(_PARSED) > 256:
            _PARSED.clear()
        parsed = _PARSED[key] = _parse_uncached(file, stat.st_size)
    return parsed


def _parse_uncached(file: Path, size: int) -> ast.Module | HandlerProblem:
    try:
        if size > MAX_PLUGIN_BYTES:
            return HandlerProblem("handler-module-missing", f"{file} is larger than 1 MiB")
        source = file.read_text(encoding="utf-8")
        return ast.parse(source, filename=str(file))
    except SyntaxError as exc:
        return HandlerProblem(
            "plugin-syntax",
            f"syntax error in {file.name}: {exc.msg}",
            file=file,
            line=exc.lineno or 0,
        )
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return HandlerProblem("handler-module-missing", f"cannot read {file}: {exc}")


def _check_arity(
    func: ast.FunctionDef | ast.AsyncFunctionDef, kind: str, reference: str
) -> HandlerProblem | None:
    args = func.args
    positional = len(args.posonlyargs) + len(args.args)
    required = positional - len(args.defaults)
    required_keywords = sum(default is None for default in args.kw_defaults)
    wanted = ARITY[kind]
    fits = required <= len(wanted) and (positional >= len(wanted) or args.vararg is not None)
    if fits and not required_keywords:
        return None
    names = ", ".join(wanted)
    return HandlerProblem(
        "handler-arity",
        f"`{reference}` does not accept the arguments ({names}) a {kind} "
        f"{'handler' if kind == 'tool' else 'hook'} is called with",
        f"define it as `def {func.name}({names}): ...` (sync or async)",
    )


def resolve_handler(reference: str, kind: str, roots: list[Path]) -> HandlerRef | HandlerProblem:
    """Find ``module:function`` for a handler of ``kind`` (``tool``, ``before``, ``after``).

    Args:
        reference: As written in the manifest.
        kind: Which signature the function must accept (see :data:`ARITY`).
        roots: Directories whose ``plugins/`` folder may hold the module, in order.
    """
    module, _, function = reference.partition(":")
    located = _locate(module, roots)
    if isinstance(located, HandlerProblem):
        return located
    file, root = located
    tree = _parse(file)
    if isinstance(tree, HandlerProblem):
        return tree
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if node.name == function:
                problem = _check_arity(node, kind, reference)
                if problem is not None:
                    return HandlerProblem(problem.code, problem.message, problem.hint)
                return HandlerRef(
                    reference, module, function, file, root, isinstance(node, ast.AsyncFunctionDef)
                )
            names.append(node.name)
        # A name bound another way (assignment, import, class) resolves too, unchecked.
        elif _binds(node, function):
            return HandlerRef(reference, module, function, file, root, None)
    guess = did_you_mean(function, names)
    return HandlerProblem(
        "handler-function-missing",
        f"`{module}` ({file.name}) defines no function `{function}`",
        guess or (f"functions there: {', '.join(names)}" if names else "define it there"),
    )


def _binds(node: ast.stmt, name: str) -> bool:
    if isinstance(node, ast.ClassDef):
        return node.name == name
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
    if isinstance(node, ast.AnnAssign):
        return isinstance(node.target, ast.Name) and node.target.id == name
    if isinstance(node, ast.ImportFrom | ast.Import):
        return any((alias.asname or alias.name) == name for alias in node.names)
    return False

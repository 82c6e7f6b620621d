"""``module:attribute`` references — how every part of a capability names its code — and
their check against the contract's hook signatures, made from the module's source so that
registering a capability imports none of its parts.

:data:`HOOKS` is the one declaration of every hook a capability may implement: which part
holds the reference, the parameters the core calls it with, and whether it is awaited
(pluggy's hookspecs). :func:`verify` finds each reference's module (without importing it),
reads its source once, and reports, naming the part and the reference, a module that
cannot be found, a name it does not define, a function with other parameters than the hook
passes, or a plain function where a coroutine is awaited (and the reverse).
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from buddy.extend import resolve

__all__ = ["HOOKS", "Hook", "resolve", "verify"]


@dataclass(frozen=True, slots=True)
class Hook:
    """What a reference in one part must name.

    Attributes:
        kind: ``function`` (called with :attr:`params`), ``class`` (instantiated) or
            ``attribute`` (any name the module defines: a model, a type, a mapping).
        params: The arguments the core passes, by position (documentation and arity).
        awaited: The core awaits the call: the function is ``async def``.
    """

    kind: Literal["function", "class", "attribute"]
    params: tuple[str, ...] = ()
    awaited: bool = False


def _fn(*params: str, awaited: bool = False) -> Hook:
    return Hook("function", params, awaited)


#: Every hook, by ``part.field`` (``tools[].execute`` is ``PlatformTool.execute``).
HOOKS: dict[str, Hook] = {
    "PlatformTool.execute": _fn("call_id", "params", "conversation", awaited=True),
    "Capability.startup": _fn("client", "blueprint", awaited=True),
    "Capability.facade": Hook("class", ("client", "conversation_id")),
    "Capability.platform": Hook("attribute"),  # the module's TABLES and router
    "Capability.playground": _fn("blueprint"),
    "Capability.layer": _fn("blueprint", "client", "model", "layer_model"),
    "Section.model": Hook("attribute"),
    "Section.compile": _fn("context"),
    "Section.render": _fn("value", "root"),
    "Section.markdown": _fn("shown"),
    "Section.prompt": _fn("value", "example"),
    "Section.placed": _fn("value"),
    "Uses.model": Hook("class"),
    "Uses.execute": _fn("rendered", "conversation", awaited=True),
    "Uses.schemas": Hook("attribute"),
    "EventKind.user": _fn("payload"),
    "EventKind.prompt": _fn("blueprint"),
    "StepAction.model": Hook("attribute"),
    "StepAction.run": _fn("value", "path", "run", awaited=True),
    "StepAction.check": _fn("value", "path", "check"),
    "StepExpect.model": Hook("attribute"),
    "StepExpect.verify": _fn("value", "seen", "state", "exact"),
    "StepExpect.state": _fn("run", "seen", awaited=True),
    "StepExpect.check": _fn("value", "path", "check"),
    "StepExpect.show": _fn("state"),
    "StepExpect.record": _fn("state", "seen"),
}


def verify(references: Iterator[tuple[str, str, str]]) -> Iterator[str]:
    """The problems of ``(where, hook, module:attribute)`` references (``where`` names the
    part in messages, ``hook`` is a key of :data:`HOOKS`), each module's source read once."""
    sources: dict[str, dict[str, ast.AST] | str] = {}
    for where, hook, reference in references:
        module, _, name = reference.partition(":")
        if module not in sources:
            sources[module] = _definitions(module)
        found = sources[module]
        if isinstance(found, str):
            yield f"{where} {reference!r}: {found}"
            continue
        if name not in found:
            yield f"{where} {reference!r}: module {module!r} defines no {name!r}"
            continue
        problem = _mismatch(HOOKS[hook], found[name])
        if problem:
            yield f"{where} {reference!r}: {problem}"


def _definitions(module: str) -> dict[str, ast.AST] | str:
    """The names ``module`` binds at its top level, each with its defining node; or why it
    cannot be read."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError) as exc:  # a parent package is missing or broken
        return f"module {module!r} cannot be found ({exc})"
    if spec is None:
        return f"module {module!r} cannot be found"
    if not spec.origin or not spec.origin.endswith(".py"):
        return {}  # compiled or namespace: nothing to read, trusted as found
    try:
        tree = ast.parse(Path(spec.origin).read_bytes(), spec.origin)
    except (OSError, SyntaxError, ValueError) as exc:
        return f"module {module!r} cannot be read ({exc})"
    names: dict[str, ast.AST] = {}
    for node in tree.body:
        for bound in _bound(node):
            names.setdefault(bound, node)
    return names


def _bound(node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield node.name
    elif isinstance(node, ast.Assign):
        for target in node.targets:
            yield from (n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    elif isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target, ast.Name):
        yield node.target.id
    elif isinstance(node, ast.Import | ast.ImportFrom):
        yield from ((a.asname or a.name).partition(".")[0] for a in node.names)
    elif isinstance(node, ast.If | ast.Try):  # a definition under a version check
        for child in ast.iter_child_nodes(node):
            yield from _bound(child)


def _mismatch(hook: Hook, node: ast.AST) -> str:
    """Why ``node`` does not implement ``hook`` (``""``: it does, or cannot be told from
    the source: a name bound by an import or an assignment)."""
    if hook.kind == "attribute":
        return ""
    if hook.kind == "class":
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return "is a function, where a class is wanted"
        return ""
    if isinstance(node, ast.ClassDef):
        return f"is a class, where a function {_signature(hook)} is wanted"
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return ""
    awaited = isinstance(node, ast.AsyncFunctionDef)
    if awaited != hook.awaited:
        want = "an async def" if hook.awaited else "a plain def (it is not awaited)"
        return f"must be {want} {_signature(hook)}"
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    required = len(positional) - len(args.defaults)
    required_kw = [
        a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None
    ]
    count = len(hook.params)
    if required > count or (len(positional) < count and args.vararg is None) or required_kw:
        return f"takes ({', '.join(a.arg for a in positional)}); the hook calls it as {_signature(hook)}"
    return ""


def _signature(hook: Hook) -> str:
    return f"({', '.join(hook.params)})"

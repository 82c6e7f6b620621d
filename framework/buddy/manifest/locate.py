"""Turn validation errors into located :class:`~buddy.errors.Issue` objects.

Pydantic reports a ``loc`` made of field names, list indices and union tags. We walk it
against the actual data, skipping the tags, to find the YAML node the error concerns and
so its file, line and column.
"""

from __future__ import annotations

import enum
import types
import typing
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from buddy.errors import Issue
from buddy.manifest.schema import custom_codes, did_you_mean
from buddy.manifest.yamlio import Document, Loc, YamlPath, format_path

__all__ = ["error_code", "issue_at", "issues_from_validation", "loc_of", "validated"]

_CODES = {
    "missing": "missing-key",
    "extra_forbidden": "unknown-key",
    "invalid_key": "unknown-key",  # a model's key that is not a string: no field's name
    "string_pattern_mismatch": "pattern",
    "string_too_short": "length",
    "string_too_long": "length",
    "too_short": "length",
    "too_long": "length",
    "greater_than": "range",
    "greater_than_equal": "range",
    "less_than": "range",
    "less_than_equal": "range",
    "literal_error": "enum",
    "union_tag_invalid": "enum",
}
_HINTS = {
    "pattern": "check the allowed characters and length",
}
_EXPECTED = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "list_type": "a list",
    "datetime_type": "a date-time with a UTC offset",
    "datetime_parsing": "a date-time with a UTC offset",
    "datetime_from_date_parsing": "a date-time with a UTC offset",
}


def loc_of(doc: Document, path: YamlPath, *, key: bool = False) -> Loc:
    """The location of the node at ``path`` (its key when ``key``), or its nearest ancestor."""
    if key and path in doc.keys:
        return doc.keys[path]
    while path not in doc.values and path:
        path = path[:-1]
    return doc.values.get(path, Loc(doc.file, 1, 1))


def issue_at(
    doc: Document, path: YamlPath, code: str, message: str, hint: str = "", *, key: bool = False
) -> Issue:
    """An :class:`Issue` located at the node of ``path`` in ``doc``."""
    loc = loc_of(doc, path, key=key)
    return Issue(
        file=loc.file,
        line=loc.line,
        column=loc.column,
        path=format_path(path),
        code=code,
        message=message,
        hint=hint,
    )


def issues_from_validation(
    doc: Document, error: ValidationError, root: type[BaseModel], prefix: YamlPath = ()
) -> list[Issue]:
    """Map every error of a pydantic validation of ``doc.data[prefix]`` to an :class:`Issue`."""
    return [_one(doc, detail, root, prefix) for detail in error.errors(include_url=False)]


def _walk(data: Any, loc: tuple[str | int, ...]) -> YamlPath:
    path: list[str | int] = []
    node = data
    for part in loc:
        if isinstance(node, dict) and part in node:
            node = node[part]
            path.append(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
            path.append(part)
        # Otherwise the part is a union tag or a key that is absent: skip it.
    return tuple(path)


def _sub(data: Any, path: YamlPath) -> Any:
    for part in path:
        data = data[part]
    return data


def error_code(kind: str) -> str:
    """Our code for a pydantic error type (our own validators raise with our codes)."""
    if kind in _CODES:
        return _CODES[kind]
    if kind.endswith(("_type", "_parsing")):
        return "type"
    return kind if kind in custom_codes() else "invalid-value"


def _one(doc: Document, detail: ErrorDetails, root: type[BaseModel], prefix: YamlPath) -> Issue:
    kind = detail["type"]
    loc = tuple(detail["loc"])
    ctx = detail.get("ctx") or {}
    given = detail.get("input")
    path = prefix + _walk(_sub(doc.data, prefix), loc)
    code = error_code(kind)
    message = detail["msg"]
    hint = str(ctx.get("hint") or _HINTS.get(code, ""))
    field = next((str(p) for p in reversed(path) if isinstance(p, str)), "value")
    on_key = False
    if kind == "missing":
        name = loc[-1]
        return _issue_missing(
            doc, (*path, name), code, f"missing required key `{name}`", f"add `{name}:` here"
        )
    if kind in ("extra_forbidden", "invalid_key"):
        name = str(loc[-1])
        allowed = _allowed_keys(root, loc[:-1])
        message = f"unknown key `{name}`"
        guess = did_you_mean(name, allowed) if allowed else ""
        hint = guess or (f"allowed keys: {', '.join(allowed)}" if allowed else "remove it")
        on_key = True
    elif loc and loc[-1] == "[key]":
        on_key = True
        code, message, hint = _bad_key(root, loc, path, kind, code, given, ctx, message, hint)
    elif kind in _KIND_KEYS:
        misplaced = _misplaced(doc, path, kind)
        if misplaced is not None:
            return misplaced
    elif kind in ("literal_error", "union_tag_invalid"):
        path, message, hint = _enum(doc, path, kind, given, ctx)
    elif code == "length":
        message = _length_message(field, given, ctx)
    elif code == "range":
        message = _range_message(field, given, ctx)
    elif code == "type":
        wanted = _EXPECTED.get(kind)
        if wanted:
            message = f"`{format_path(path) or field}` must be {wanted} (got {_describe(given)})"
            if wanted == "a string" and not isinstance(given, dict | list):
                hint = "quote the value to make it a string"
        else:
            message = f"{message} (got {_describe(given)})"
    return issue_at(doc, path, code, message, hint, key=on_key)


def _bad_key(
    root: type[BaseModel],
    loc: tuple[str | int, ...],
    path: YamlPath,
    kind: str,
    code: str,
    given: Any,
    ctx: dict[str, Any],
    message: str,
    hint: str,
) -> tuple[str, str, str]:
    """Code, message and hint for a mapping key its type refuses: a key outside a mapping
    with fixed keys (``dict[Literal[...], ...]``, enum keys) is unknown, as a key outside a
    model's fields is; a key that is no string is to be quoted; a string key of the wrong
    form says which form."""
    where = format_path(path[:-1])
    allowed = _fixed_keys(root, loc[:-2])
    if allowed or kind in ("literal_error", "enum"):
        allowed = allowed or _options(str(ctx.get("expected") or ""))
        guess = did_you_mean(str(given), allowed) if allowed else ""
        listed = f"allowed keys: {', '.join(allowed)}" if allowed else "remove it"
        return "unknown-key", f"unknown key `{given}`", guess or listed
    if not isinstance(given, str):
        return code, f"keys of `{where}` must be strings (got {_describe(given)})", "quote the key"
    if code == "pattern" and "pattern" in ctx:
        return code, f"the key `{given}` of `{where}` must match `{ctx['pattern']}`", hint
    if code == "length" and given == "":
        return code, f"keys of `{where}` must not be empty", hint
    return code, f"the key `{given}` of `{where}`: {message}", hint


def _fixed_keys(root: Any, loc: tuple[str | int, ...]) -> list[str]:
    """The keys a mapping at ``loc`` (a pydantic loc) may have when its key type fixes
    them (a ``Literal`` or an ``Enum``); empty when any string may be a key."""
    candidates = _types_at(root, loc)
    keys: list[str] = []
    for tp in candidates:
        for member in _unwrap(tp):
            if typing.get_origin(member) is not dict:
                continue
            for key_type in _unwrap(typing.get_args(member)[0]):
                if typing.get_origin(key_type) is typing.Literal:
                    values = [str(v) for v in typing.get_args(key_type)]
                elif isinstance(key_type, type) and issubclass(key_type, enum.Enum):
                    values = [str(m.value) for m in key_type]
                else:
                    continue
                keys.extend(v for v in values if v not in keys)
    return keys


def _options(expected: str) -> list[str]:
    """The choices of a pydantic ``expected`` text (``'a', 'b' or 'c'``)."""
    return [o.strip(" '") for o in expected.replace(" or ", ",").split(",") if o.strip(" '")]


# The keys that tell a mapping's kind (schema.py's discriminators), by the error of a
# mapping with neither, and what the mapping is: a tool's `handler`/`uses`, a hook rule's
# `deny`/`handler`.
_KIND_KEYS = {
    "tool-kind": (("handler", "uses"), "tool"),
    "hook-kind": (("deny", "handler"), "rule"),
}


def _misplaced(doc: Document, path: YamlPath, kind: str) -> Issue | None:
    """A mapping with none of its kind's keys, one of which landed a mapping too deep
    (`handler:` indented under `parameters:`): located at that key, or ``None``."""
    keys, noun = _KIND_KEYS[kind]
    node = _sub(doc.data, path)
    if not isinstance(node, dict) or any(k in node for k in keys):
        return None
    for field, value in node.items():
        if not isinstance(value, dict):
            continue
        for key in keys:
            # A value such as the key takes: `handler: {type: string}` is a parameter's schema.
            if isinstance(value.get(key), str | list):
                where = (*path, field, key)
                line = loc_of(doc, where, key=True).line
                return issue_at(
                    doc,
                    where,
                    kind,
                    f"`{key}` is inside `{field}` (line {line}), not a key of the {noun}",
                    f"indent it as a key of the {noun}, in line with `{next(iter(node))}`",
                    key=True,
                )
    return None


def _enum(
    doc: Document, path: YamlPath, kind: str, given: Any, ctx: dict[str, Any]
) -> tuple[YamlPath, str, str]:
    if kind == "union_tag_invalid":
        given = ctx.get("tag")
        # Point at the discriminating value (`uses: …`, `type: …`), not the whole mapping.
        tag_field = str(ctx.get("discriminator", "")).strip("'")
        node = _sub(doc.data, path)
        if isinstance(node, dict) and tag_field in node:
            path = (*path, tag_field)
    expected = str(ctx.get("expected") or ctx.get("expected_tags") or "")
    options = [o.strip(" '") for o in expected.replace(" or ", ",").split(",") if o.strip()]
    if isinstance(given, str) and given in options:
        # e.g. `version: "1"` where the number 1 is meant
        return (
            path,
            f"the string `{given}` is not allowed here; expected {expected}",
            ("remove the quotes"),
        )
    shown = f"`{given}`" if isinstance(given, str) else _describe(given)
    hint = did_you_mean(given, options) if isinstance(given, str) else ""
    return path, f"{shown} is not allowed here; expected {expected}", hint


def _length_message(field: str, given: Any, ctx: dict[str, Any]) -> str:
    size = len(given) if isinstance(given, str | list | dict) else None
    unit = "characters" if isinstance(given, str) else "items"
    have = f"has {size} {unit}" if size is not None else "has the wrong length"
    if "max_length" in ctx:
        return f"`{field}` {have}; at most {ctx['max_length']} allowed"
    if "min_length" in ctx:
        needed = ctx["min_length"]
        if needed == 1 and isinstance(given, str):
            return f"`{field}` must not be empty"
        return f"`{field}` {have}; at least {needed} required"
    return f"`{field}` {have}"


_BOUNDS = {"ge": "≥", "gt": ">", "le": "≤", "lt": "<"}


def _range_message(field: str, given: Any, ctx: dict[str, Any]) -> str:
    bound = next((f"{sign} {ctx[k]}" for k, sign in _BOUNDS.items() if k in ctx), "in range")
    return f"`{field}` must be {bound} (got {given})"


def _issue_missing(doc: Document, path: YamlPath, code: str, message: str, hint: str) -> Issue:
    parent = loc_of(doc, path[:-1])
    return Issue(
        file=parent.file,
        line=parent.line,
        column=parent.column,
        path=format_path(path),
        code=code,
        message=message,
        hint=hint,
    )


def _describe(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, int | float):
        return f"the number {value}"
    return f"{type(value).__name__} {value!r}"


def _types_at(root: Any, loc: tuple[str | int, ...]) -> list[Any]:
    """The types a pydantic ``loc`` can reach from ``root`` (every branch of a union)."""
    candidates = [root]
    for part in loc:
        following: list[Any] = []
        for tp in candidates:
            following.extend(_step(tp, part))
        candidates = following
    return candidates


def _allowed_keys(root: Any, loc: tuple[str | int, ...]) -> list[str]:
    """The field names of the model at ``loc`` (a pydantic loc, union tags included)."""
    candidates = _types_at(root, loc)
    keys: list[str] = []
    for tp in candidates:
        for model in _models(tp):
            keys.extend(k for k in model.model_fields if k not in keys)
    return keys


def _unwrap(tp: Any) -> list[Any]:
    """Flatten Annotated / Optional / Union into member types, keeping union tags."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(tp)[0])
    if origin in (typing.Union, types.UnionType):
        out: list[Any] = []
        for arg in typing.get_args(tp):
            out.extend(_unwrap(arg))
        return out
    return [tp]


def _tags(tp: Any) -> list[str]:
    if typing.get_origin(tp) is not typing.Annotated:
        return []
    return [str(getattr(m, "tag", "")) for m in typing.get_args(tp)[1:] if hasattr(m, "tag")]


def _models(tp: Any) -> list[type[BaseModel]]:
    return [t for t in _unwrap(tp) if isinstance(t, type) and issubclass(t, BaseModel)]


def _step(tp: Any, part: str | int) -> list[Any]:
    out: list[Any] = []
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(tp):
            if part in _tags(arg):
                return [arg]  # a union tag: the walk stays on this member
        for arg in typing.get_args(tp):
            out.extend(_step(arg, part))
        return out
    if origin is typing.Annotated:
        return _step(typing.get_args(tp)[0], part)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        field = tp.model_fields.get(str(part))
        if field is not None:
            return [field.annotation]
        if str(part) in (tp.__name__, *(_literal_values(tp))):
            return [tp]
        return []
    if origin is list and isinstance(part, int):
        return [typing.get_args(tp)[0]]
    if origin is dict and isinstance(part, str):
        return [typing.get_args(tp)[1]]
    return out


def _literal_values(model: type[BaseModel]) -> list[str]:
    field = model.model_fields.get("uses") or model.model_fields.get("type")
    if field is None:
        return []
    return [str(v) for v in typing.get_args(field.annotation)]


M = TypeVar("M", bound=BaseModel)


def validated(doc: Document, model: type[M], code: str) -> tuple[M | None, list[Issue]]:
    """``doc``'s data as ``model`` — or ``None`` and every problem located in the file,
    all under ``code`` (one kind of file's problems share one code)."""
    try:
        return model.model_validate(doc.data), []
    except ValidationError as exc:
        return None, [i.coded(code) for i in issues_from_validation(doc, exc, model)]

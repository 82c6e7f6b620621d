"""A widget record against its module's schema, checked in the runtime: the model gets a
precise argument error — the field and the rule, in Chinese, like any other invalid tool
argument — where the platform's refusal would reach it only as 「平台请求失败（HTTP 400）」
(the contract keeps that generic message for real platform failures).

Validated with :class:`jsonschema.Draft202012Validator`, as the dev platform does
(imported on first use: a start never pays for it).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

__all__ = ["record_problems"]

#: Problems named in one message, at most.
PROBLEMS_SHOWN = 3

_TYPES = {
    "string": "文本",
    "integer": "整数",
    "number": "数字",
    "boolean": "true 或 false",
    "object": "对象",
    "array": "列表",
    "null": "null",
}


@lru_cache(maxsize=256)
def _validator(schema_text: str) -> Any:
    import jsonschema

    return jsonschema.Draft202012Validator(json.loads(schema_text))


def _where(path: Sequence[Any]) -> str:
    shown = "data"
    for part in path:
        shown += f"[{part}]" if isinstance(part, int) else f".{part}"
    return f"`{shown}`"


def _types(value: Any) -> str:
    names = value if isinstance(value, list) else [value]
    return " 或 ".join(_TYPES.get(str(n), str(n)) for n in names)


def _said(error: ValidationError) -> str:
    """One problem in words: where, and the rule it breaks."""
    kind, where = error.validator, _where(list(error.absolute_path))
    rule: Any = error.validator_value
    value: Any = error.instance
    schema: Any = error.schema if isinstance(error.schema, Mapping) else {}
    if kind == "required":
        missing = [n for n in rule if isinstance(value, Mapping) and n not in value]
        return f"{where} 缺少必填字段 " + "、".join(f"`{n}`" for n in missing)
    if kind == "additionalProperties":
        known = sorted((schema.get("properties") or {}).keys())
        extra = sorted(set(value) - set(known)) if isinstance(value, Mapping) else []
        fields = "、".join(f"`{n}`" for n in extra)
        return f"{where} 有不认识的字段 {fields}（可用：{'、'.join(known) or '无'}）"
    said: dict[str, Callable[[], str]] = {
        "type": lambda: f"应为{_types(rule)}，收到 {json.dumps(value, ensure_ascii=False)}",
        "enum": lambda: (
            "只能是 " + "、".join(json.dumps(v, ensure_ascii=False) for v in rule) + " 之一"
        ),
        "const": lambda: f"只能是 {json.dumps(rule, ensure_ascii=False)}",
        "minLength": lambda: f"至少 {rule} 个字",
        "maxLength": lambda: f"最多 {rule} 个字",
        "minimum": lambda: f"不能小于 {rule}",
        "maximum": lambda: f"不能大于 {rule}",
        "exclusiveMinimum": lambda: f"必须大于 {rule}",
        "exclusiveMaximum": lambda: f"必须小于 {rule}",
        "minItems": lambda: f"至少 {rule} 项",
        "maxItems": lambda: f"最多 {rule} 项",
        "uniqueItems": lambda: "各项不能重复",
        "pattern": lambda: f"要符合格式 {rule}",
        "format": lambda: f"格式应为 {rule}",
        "multipleOf": lambda: f"应是 {rule} 的倍数",
    }
    words = said.get(str(kind))
    return f"{where} {words() if words is not None else error.message}"


def record_problems(schema: Mapping[str, Any], data: Any) -> list[str]:
    """What is wrong with ``data`` as a record of ``schema``, each in Chinese (empty:
    nothing), at most :data:`PROBLEMS_SHOWN`, in the order of the record's fields."""
    validator = _validator(json.dumps(schema, sort_keys=True))
    errors = sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.path])
    return [_said(e) for e in errors[:PROBLEMS_SHOWN]]

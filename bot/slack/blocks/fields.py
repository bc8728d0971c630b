"""Edit-modal fields from a tool's JSON Schema, and parsing submitted values back."""

from __future__ import annotations

import json
import math
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from bot.slack.blocks.fmt import pretty_json
from bot.slack.ids import ActionId

ACTION_ID = ActionId.VALUE
BOOL_OPTIONS = ("true", "false")


@dataclass(frozen=True)
class Field:
    """One top-level argument: how it is edited and parsed."""

    name: str
    kind: str  # string | integer | number | boolean | enum | json
    required: bool
    nullable: bool = False
    enum: tuple[Any, ...] = ()
    description: str = ""
    default: Any = None
    has_default: bool = False


def _resolve(prop: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    for _ in range(10):
        ref = prop.get("$ref")
        if not isinstance(ref, str):
            all_of = prop.get("allOf")
            if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
                prop = {**prop, **all_of[0]}
                prop.pop("allOf", None)
                continue
            return prop
        target = defs.get(ref.rsplit("/", 1)[-1], {})
        prop = {**{k: v for k, v in prop.items() if k != "$ref"}, **target}
    return prop


def _field(name: str, prop: Any, required: bool, defs: dict[str, Any]) -> Field:
    prop = _resolve(prop if isinstance(prop, dict) else {}, defs)
    desc = str(prop.get("description", ""))
    extra = {"description": desc, "default": prop.get("default"), "has_default": "default" in prop}
    variants = prop.get("anyOf") or prop.get("oneOf")
    nullable = False
    if isinstance(variants, list):
        variants = [_resolve(v, defs) for v in variants if isinstance(v, dict)]
        nullable = any(v.get("type") == "null" for v in variants)
        rest = [v for v in variants if v.get("type") != "null"]
        if rest and all("enum" in v for v in rest):
            enum = tuple(e for v in rest for e in v["enum"])
            return Field(name, "enum", required, nullable, enum, **extra)
        if len(rest) == 1:
            prop = rest[0]
        else:
            return Field(name, "json", required, nullable, **extra)
    if isinstance(prop.get("enum"), list) and prop["enum"]:
        return Field(name, "enum", required, nullable, tuple(prop["enum"]), **extra)
    if "const" in prop:
        return Field(name, "enum", required, nullable, (prop["const"],), **extra)
    kind = prop.get("type")
    if isinstance(kind, list):
        nullable = nullable or "null" in kind
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if len(kinds) == 1 else None
    if kind in ("string", "integer", "number", "boolean"):
        return Field(name, kind, required, nullable, **extra)
    return Field(name, "json", required, nullable, **extra)


def infer_schema(arguments: dict[str, Any]) -> dict[str, Any]:
    """A schema for tools that give none: types from the proposed values, all required."""
    types = {str: "string", bool: "boolean", int: "integer", float: "number"}
    props = {
        k: ({"type": types[type(v)]} if type(v) in types else {}) for k, v in arguments.items()
    }
    return {"type": "object", "properties": props, "required": list(arguments)}


def fields_of(
    parameters: dict[str, Any] | None, arguments: dict[str, Any] | None = None
) -> list[Field]:
    """The editable top-level arguments, in schema order (then any extra proposed ones)."""
    schema = parameters if parameters else infer_schema(arguments or {})
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    defs = schema.get("$defs") or schema.get("definitions") or {}
    out = [_field(n, p, n in required, defs) for n, p in props.items()]
    extra = {k: v for k, v in (arguments or {}).items() if k not in props}
    out += [_field(n, p, True, {}) for n, p in infer_schema(extra)["properties"].items()]
    return out


def option_value(value: Any) -> str:
    """The select option value for an enum member (strings as is, others as JSON)."""
    return value if isinstance(value, str) else json.dumps(value)


def initial_text(f: Field, value: Any) -> str:
    """The text prefilled in a plain_text_input for a field's current value."""
    if f.kind in ("json",) or (f.kind in ("string", "enum") and not isinstance(value, str)):
        return pretty_json(value)
    if f.kind == "string":
        return str(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return json.dumps(value, default=str)
    return repr(value) if isinstance(value, float) else str(value)


def _raw(entry: Any) -> tuple[bool, str | None]:
    """(is_select, text) from one state.values entry."""
    if not isinstance(entry, dict):
        return False, None
    if "selected_option" in entry:
        opt = entry.get("selected_option")
        return True, (opt or {}).get("value") if isinstance(opt, dict) else None
    value = entry.get("value")
    return False, value if isinstance(value, str) else None


def parse_value(f: Field, text: str) -> Any:
    """Parse the text of one field; raise ValueError with a message for the person."""
    if f.kind == "string":
        return text
    if f.kind == "boolean":
        if text.strip().lower() not in BOOL_OPTIONS:
            raise ValueError("Choose true or false.")
        return text.strip().lower() == "true"
    if f.kind == "enum":
        for member in f.enum:
            if option_value(member) == text or (
                not isinstance(member, str) and str(member) == text
            ):
                return member
        raise ValueError("Choose one of: " + ", ".join(option_value(m) for m in f.enum[:20]))
    if f.kind in ("integer", "number"):
        try:
            number = float(text.strip().replace(",", "").replace("_", ""))
        except ValueError:
            what = "a whole number" if f.kind == "integer" else "a number"
            raise ValueError(f"Enter {what}, for example 42.") from None
        if not math.isfinite(number):
            raise ValueError("Enter a finite number.")
        if f.kind == "integer":
            if not number.is_integer():
                raise ValueError("Enter a whole number, for example 42.")
            return int(text.strip()) if text.strip().lstrip("-").isdigit() else int(number)
        return int(text.strip()) if text.strip().lstrip("-").isdigit() else number
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"Not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}). "
            "Fix it and submit again."
        ) from None


def parse_edit(
    values: dict[str, Any],
    parameters: dict[str, Any] | None,
    original: dict[str, Any] | None = None,
    sensitive: Collection[str] = (),
) -> tuple[dict[str, Any], dict[str, str]]:
    """view.state.values -> (arguments, errors by block_id).

    Arguments with no input block in the modal (too long to edit, or beyond the block limit)
    are kept from `original` (pass the model's proposed arguments). An empty optional input
    is omitted, so the tool's default applies. A `sensitive` input left blank keeps the
    original value (the modal never shows it).
    """
    arguments: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for f in fields_of(parameters, original):
        block = values.get(f.name)
        _, text = _raw(block.get(ACTION_ID)) if isinstance(block, dict) else (False, None)
        blank = text is None or text.strip() == ""
        if not isinstance(block, dict) or (f.name in sensitive and blank):
            if original is not None and f.name in original:
                arguments[f.name] = original[f.name]
            continue
        if text is None or (text.strip() == "" and f.kind != "string") or text == "":
            if not f.required:
                continue
            if f.nullable:
                arguments[f.name] = None
            elif f.kind == "string":
                arguments[f.name] = ""
            else:
                errors[f.name] = f"{f.name} is required."
            continue
        try:
            arguments[f.name] = parse_value(f, text)
        except ValueError as exc:
            errors[f.name] = str(exc)
    return arguments, errors

"""The tool of a request made through the approval API: its JSON Schema, decisions and title.

API requests have no Python function behind them: what sayso needs of a tool (the card's
description, which decisions it offers, the Edit modal's fields and their validation) comes
from the request's stored `api_spec`. Edits are validated with `jsonschema`.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import jsonschema.validators
import re2  # type: ignore[import-untyped]
from pydantic import BaseModel
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource, Unresolvable

from bot.agent.tools import Tool
from bot.agent.vocabulary import ALL_APPROVAL_DECISIONS, ApprovalDecision, ToolKind

API_AGENT_PREFIX = "api:"
"""Runs of API requests have agent_id `api:<key name>`: sayso never drives them."""


def is_api_run(agent_id: str) -> bool:
    return agent_id.startswith(API_AGENT_PREFIX)


MAX_SCHEMA_BYTES = 32 * 1024
"""A caller's JSON Schema, as compact JSON, is at most this long."""
MAX_SCHEMA_DEPTH = 16
"""...and nests objects and arrays at most this deep."""
MAX_PATTERN_CHARS = 1000
VALIDATION_SECONDS = 2.0
"""Validating arguments against a caller's schema runs in a thread and is abandoned (422)
after this long."""
_REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")
_REMOTE_KEYWORDS = ("$id", "$schema", "$anchor", "$dynamicAnchor", "$recursiveAnchor")


class SchemaProblem(ValueError):
    """A caller's schema sayso will not use; the message names the problem."""


def _refuse_retrieval(uri: str) -> Resource[Any]:
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]


_REGISTRY: Registry[Any] = Registry(retrieve=_refuse_retrieval)  # type: ignore[call-arg]
"""Resolves nothing outside the schema itself: a `$ref` never reaches the network."""


def _depth(value: Any, limit: int) -> int:
    """How deep `value` nests (stops counting past `limit`)."""
    if limit < 0 or not isinstance(value, dict | list):
        return 0
    children = value.values() if isinstance(value, dict) else value
    return 1 + max((_depth(child, limit - 1) for child in children), default=0)


def _walk(value: Any, path: str = "schema") -> Iterator[tuple[str, str, Any]]:
    if isinstance(value, dict):
        for key, child in value.items():
            yield path, str(key), child
            yield from _walk(child, f"{path}.{key}")
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from _walk(child, f"{path}[{i}]")


def _compile(pattern: Any, where: str) -> None:
    if not isinstance(pattern, str) or len(pattern) > MAX_PATTERN_CHARS:
        raise SchemaProblem(f"{where}: a pattern must be a string of at most {MAX_PATTERN_CHARS}")
    try:
        re2.compile(pattern)
    except re2.error:
        raise SchemaProblem(
            f"{where}: pattern {pattern[:80]!r} is not one sayso evaluates (RE2 syntax, linear "
            "time: no backreferences or lookarounds)"
        ) from None


def check_schema(schema: Any) -> None:
    """Refuse (SchemaProblem) a schema too big, too deep, with a `$ref` that is not local
    (`#...`), with identifiers that would move its base URI, or with a pattern RE2 cannot run;
    then jsonschema's own check of the 2020-12 metaschema."""
    if not isinstance(schema, dict):
        raise SchemaProblem("schema: must be a JSON object")
    if _depth(schema, MAX_SCHEMA_DEPTH + 1) > MAX_SCHEMA_DEPTH:
        raise SchemaProblem(f"schema: nests deeper than {MAX_SCHEMA_DEPTH} levels")
    if len(json.dumps(schema, separators=(",", ":"))) > MAX_SCHEMA_BYTES:
        raise SchemaProblem(f"schema: over {MAX_SCHEMA_BYTES // 1024} KiB")
    for path, key, value in _walk(schema):
        if key in _REF_KEYWORDS and not (isinstance(value, str) and value.startswith("#")):
            raise SchemaProblem(f"{path}.{key}: only local references (#...) are allowed")
        if (key in _REMOTE_KEYWORDS and path != "schema") or key == "$id":
            raise SchemaProblem(f"{path}.{key}: not allowed in a request's schema")
        if key == "pattern" and not path.endswith(".properties"):
            _compile(value, f"{path}.pattern")
        if key == "patternProperties" and isinstance(value, dict):
            for pattern in value:
                _compile(pattern, f"{path}.patternProperties")
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise SchemaProblem(f"schema: not a valid JSON Schema ({exc.message})") from None


def _re2_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    if validator.is_type(instance, "string") and not re2.search(pattern, instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


def _re2_pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for name, value in instance.items():
            if re2.search(pattern, name):
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    {"pattern": _re2_pattern, "patternProperties": _re2_pattern_properties},
)


def schema_errors(schema: dict[str, Any], arguments: Any) -> dict[str, str]:
    """jsonschema's errors keyed by top-level field (`arguments` for the object itself).
    Patterns run on RE2, `$ref`s resolve only inside the schema; a schema whose references
    loop is reported on `schema`."""
    validator = _Validator(schema, registry=_REGISTRY)
    errors: dict[str, str] = {}
    try:
        found = sorted(validator.iter_errors(arguments), key=lambda e: [str(p) for p in e.path])
    except RecursionError:
        return {"schema": "its references loop (a $ref that refers to itself)"}
    except Unresolvable as exc:
        return {"schema": f"a $ref that does not resolve inside the schema ({exc})"}
    for error in found:
        key = str(error.path[0]) if error.path else "arguments"
        if key == "arguments" and error.validator == "required":
            missing = error.message.split("'")
            key = missing[1] if len(missing) > 2 else key
        errors.setdefault(key, error.message)
    return errors


async def schema_errors_off_loop(schema: dict[str, Any], arguments: Any) -> dict[str, str]:
    """`schema_errors` in a worker thread, abandoned after VALIDATION_SECONDS (then the
    arguments are refused: `schema` names the time limit)."""
    try:
        return await asyncio.wait_for(
            asyncio.to_thread(schema_errors, schema, arguments), VALIDATION_SECONDS
        )
    except TimeoutError:
        return {"schema": f"validating the arguments took over {VALIDATION_SECONDS:g} s"}


class ApiTool(Tool):
    """A tool described by data (an API request's spec) rather than by a function."""

    def __init__(self, spec: dict[str, Any], name: str, kind: ToolKind) -> None:
        schema = spec.get("schema")
        decisions: list[ApprovalDecision] = [
            d for d in spec.get("allowed_decisions") or ALL_APPROVAL_DECISIONS if d != "edit"
        ]
        if schema is not None and "edit" in (spec.get("allowed_decisions") or ["edit"]):
            decisions.insert(1, "edit")
        super().__init__(
            _never_run,
            name=name,
            description=str(spec.get("description") or "") or name,
            kind=kind,
            allowed_decisions=tuple(d for d in ALL_APPROVAL_DECISIONS if d in decisions),
        )
        self.description = str(spec.get("description") or "")
        self.require_approval = None
        self._schema: dict[str, Any] | None = schema
        self._parameters = schema
        self._returns = Any

    @property
    def parameters(self) -> dict[str, Any]:
        return copy.deepcopy(self._schema or {"type": "object", "properties": {}})

    @property
    def returns_object(self) -> bool:
        return False

    def argument_errors(self, arguments: dict[str, Any]) -> dict[str, str]:
        if self._schema is None:
            return {}
        return schema_errors(self._schema, arguments)

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        errors = self.argument_errors(arguments)
        if errors:
            detail = "; ".join(f"field '{k}': {v}" for k, v in errors.items())
            raise ValueError(f"Invalid arguments for {self.name}: {detail}")
        return arguments

    def parse_output(self, raw: Any) -> Any:
        return raw

    def _build_args_model(self) -> type[BaseModel]:
        """Its arguments are checked against the spec's JSON schema, never a model: one
        shared empty model (building one per request cost a pydantic schema each time)."""
        return _NoArgs

    def defaults_for(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The caller runs what it sent: sayso fills in nothing."""
        return {}

    def __repr__(self) -> str:
        return f"ApiTool(name={self.name!r}, kind={self.kind!r})"


class _NoArgs(BaseModel):
    """The (unused) arguments model of every ApiTool."""


def _never_run() -> None:
    raise RuntimeError("The continuation of an API request is the caller's: sayso never runs it")


def api_tool(spec: dict[str, Any], tool_name: str, request_kind: str) -> ApiTool:
    kind: ToolKind = "hitl" if request_kind == "hitl" else "approval"
    return ApiTool(spec, tool_name, kind)

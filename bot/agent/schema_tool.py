"""The tool of a request made through the approval API: its JSON Schema, decisions and title.

API requests have no Python function behind them: what sayso needs of a tool (the card's
description, which decisions it offers, the Edit modal's fields and their validation) comes
from the request's stored `api_spec`. Edits are validated with `jsonschema`.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonschema

from bot.agent.tools import Tool
from bot.agent.vocabulary import ALL_APPROVAL_DECISIONS, ApprovalDecision, ToolKind

API_AGENT_PREFIX = "api:"
"""Runs of API requests have agent_id `api:<key name>`: sayso never drives them."""


def is_api_run(agent_id: str) -> bool:
    return agent_id.startswith(API_AGENT_PREFIX)


def schema_errors(schema: dict[str, Any], arguments: Any) -> dict[str, str]:
    """jsonschema's errors keyed by top-level field (`arguments` for the object itself)."""
    validator = jsonschema.Draft202012Validator(schema)
    errors: dict[str, str] = {}
    for error in sorted(validator.iter_errors(arguments), key=lambda e: list(e.path)):
        key = str(error.path[0]) if error.path else "arguments"
        if key == "arguments" and error.validator == "required":
            missing = error.message.split("'")
            key = missing[1] if len(missing) > 2 else key
        errors.setdefault(key, error.message)
    return errors


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

    def defaults_for(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The caller runs what it sent: sayso fills in nothing."""
        return {}

    def __repr__(self) -> str:
        return f"ApiTool(name={self.name!r}, kind={self.kind!r})"


def _never_run() -> None:
    raise RuntimeError("The continuation of an API request is the caller's: sayso never runs it")


def api_tool(spec: dict[str, Any], tool_name: str, request_kind: str) -> ApiTool:
    kind: ToolKind = "hitl" if request_kind == "hitl" else "approval"
    return ApiTool(spec, tool_name, kind)

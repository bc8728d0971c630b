"""HumanInTheLoopMiddleware's own types, read and answered: the actions of an interrupt
(`HITLRequest`, or a per-call `ToolApprovalRequest`) with their review configs, the decisions
a card can offer, the tools' argument schemas, and the resume value (`HITLResponse`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from langchain.agents.middleware.human_in_the_loop import (
    ActionRequest,
    ApproveDecision,
    Decision,
    DecisionType,
    EditDecision,
    HITLRequest,
    HITLResponse,
    HumanInTheLoopMiddleware,
    RejectDecision,
    ReviewConfig,
    ToolApprovalRequest,
)
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.prebuilt import ToolNode
from langgraph.pregel import Pregel
from langgraph.types import Interrupt

from bot.adapters.framework import CallDecision

SAYSO_DECISIONS: tuple[DecisionType, ...] = ("approve", "edit", "reject")
"""The middleware's decisions a card can offer ("respond" has no button)."""


def tool_schemas(graph: Pregel) -> dict[str, dict[str, Any]]:
    """The JSON Schema of each tool's arguments, as the model sees them (it lets an approver
    Edit, validated against it), from the graph's tool nodes."""
    schemas: dict[str, dict[str, Any]] = {}
    for node in graph.nodes.values():
        if isinstance(node.bound, ToolNode):
            for name, tool in node.bound.tools_by_name.items():
                schemas[name] = arguments_schema(tool)
    return schemas


def arguments_schema(tool: BaseTool) -> dict[str, Any]:
    """A tool's arguments as the model sees them (an object schema, for the Edit form)."""
    parameters = convert_to_openai_tool(tool)["function"].get("parameters") or {}
    return {"type": "object", "properties": {}, **parameters}


def actions_of(interrupt: Interrupt) -> list[tuple[ActionRequest, ReviewConfig]]:
    """The actions awaiting review in a HumanInTheLoopMiddleware interrupt, each with its
    review config: the batched `HITLRequest`, or a per-call `ToolApprovalRequest`."""
    value = interrupt.value
    if isinstance(value, Mapping) and value.get("type") == "tool_approval":
        call = cast(ToolApprovalRequest, value)
        action = ActionRequest(name=call["name"], args=call["args"])
        if call.get("description"):
            action["description"] = call["description"]
        allowed = _per_call_decisions(interrupt.response_schema)
        return [(action, ReviewConfig(action_name=call["name"], allowed_decisions=allowed))]
    if isinstance(value, Mapping) and "action_requests" in value:
        request = cast(HITLRequest, value)
        configs = {c["action_name"]: c for c in request.get("review_configs", [])}
        pairs = []
        for action in request["action_requests"]:
            config = configs.get(action["name"])
            if config is None:
                raise ValueError(f"interrupt {interrupt.id}: no review config for {action['name']}")
            pairs.append((action, config))
        return pairs
    raise TypeError(
        f"interrupt {interrupt.id} is not HumanInTheLoopMiddleware's (value: {value!r:.200})"
    )


def _per_call_decisions(response_schema: Any) -> list[Any]:
    """The decision types a per-call interrupt's `response_schema` (JSON Schema) accepts."""
    if not isinstance(response_schema, Mapping):
        return list(SAYSO_DECISIONS)
    mapping = (response_schema.get("discriminator") or {}).get("mapping")
    if isinstance(mapping, Mapping):
        return list(mapping)
    kind = (response_schema.get("properties") or {}).get("type") or {}
    return [kind["const"]] if "const" in kind else list(SAYSO_DECISIONS)


def card_decisions(config: ReviewConfig) -> list[str]:
    """The review config's decisions a card can offer; ValueError when there is none."""
    allowed: list[str] = [d for d in config["allowed_decisions"] if d in SAYSO_DECISIONS]
    if not allowed:
        raise ValueError(
            f"{config['action_name']}: none of {config['allowed_decisions']} can be decided "
            f"on a card (sayso offers {', '.join(SAYSO_DECISIONS)})"
        )
    return allowed


def title_of(action: ActionRequest) -> str:
    """The card's title: the first line of the action's description (the middleware's
    `description_prefix` or the review's own description; the card shows the arguments
    itself), else "Run <tool>"."""
    lines = [line.strip() for line in action.get("description", "").splitlines()]
    first = next((line for line in lines if line), "")
    return first[:2000] or f"Run {action['name']}"


def response_to(interrupt: Interrupt, decisions: list[Decision]) -> HITLResponse | Decision:
    """An interrupt's resume value: a `HITLResponse` for a batched interrupt (its decisions in
    the order of its actions), the single decision for a per-call one."""
    if isinstance(interrupt.value, Mapping) and interrupt.value.get("type") == "tool_approval":
        return decisions[0]
    return HITLResponse(decisions=decisions)


def review_policies(graph: Pregel) -> dict[str, list[DecisionType]]:
    """The decisions each gated tool allows, from the graph's HumanInTheLoopMiddleware (its
    `after_model` node is the middleware's bound method)."""
    policies: dict[str, list[DecisionType]] = {}
    for node in graph.nodes.values():
        middleware = getattr(getattr(node.bound, "func", None), "__self__", None)
        if isinstance(middleware, HumanInTheLoopMiddleware):
            for name, config in middleware.interrupt_on.items():
                policies[name] = list(config["allowed_decisions"])
    return policies


def middleware_decision(
    action: ActionRequest, config: ReviewConfig, decided: CallDecision
) -> Decision:
    """A `/sayso` card's decision as the middleware's."""
    if decided.type == "reject":
        reject = RejectDecision(type="reject")
        if decided.reason:
            reject["message"] = decided.reason
        return reject
    args = decided.arguments
    if decided.type == "edit" and args is not None and args != action["args"]:
        if "edit" not in config["allowed_decisions"]:
            raise ValueError(f"{action['name']}: the review config does not allow edits")
        return EditDecision(type="edit", edited_action={"name": action["name"], "args": args})
    return ApproveDecision(type="approve")

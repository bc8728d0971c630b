"""Tools: typed Python functions the model may call, with their approval policy."""

from __future__ import annotations

import asyncio
import copy
import inspect
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from types import UnionType
from typing import Any, TypedDict, Union, Unpack, get_args, get_origin, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError, create_model

from bot.agent.messages import ToolCall
from bot.agent.rules import Rule, first_match
from bot.agent.sensitive import mask_arguments, redact, sensitive_parameters
from bot.agent.util import maybe_await, parse_duration
from bot.agent.vocabulary import ALL_APPROVAL_DECISIONS, ApprovalDecision, ToolKind

ApprovalPolicy = bool | Callable[[ToolCall, dict[str, Any]], "bool | Awaitable[bool]"]
TOOL_KINDS: tuple[ToolKind, ...] = get_args(ToolKind)


class ToolOptions(TypedDict, total=False):
    """The options of `@tool(...)`; see `Tool` for what each one means."""

    name: str | None
    description: str | None
    kind: ToolKind
    require_approval: ApprovalPolicy | None
    approvers: Sequence[str]
    allow_self_approval: bool
    expires_in: float | None
    allowed_decisions: Sequence[ApprovalDecision]
    confirm: bool
    min_approvals: int
    require_reason: bool
    rules: Sequence[Rule]
    escalate_after: float | str | timedelta | None
    escalate_to: Sequence[str]
    standing_approval: float | str | timedelta | None


@dataclass(frozen=True)
class ToolContext:
    """Given to a tool that declares a parameter of this type; the model never sees it."""

    run_id: str
    call_id: str
    agent_id: str
    tool_name: str
    context: dict[str, Any] = field(default_factory=dict)
    decided_by: str | None = None
    decision_reason: str | None = None
    """The reason the approver gave (a tool with `require_reason=True` always has one)."""

    @property
    def idempotency_key(self) -> str:
        """Stable across retries and recoveries: pass it downstream to dedupe side effects."""
        return f"{self.run_id}:{self.call_id}"


def _duration(value: float | str | timedelta | None) -> timedelta | None:
    return None if value is None else parse_duration(value)


def _is_context(annotation: Any) -> bool:
    """`ToolContext`, or `ToolContext | None`."""
    if annotation is ToolContext:
        return True
    return get_origin(annotation) in (Union, UnionType) and ToolContext in get_args(annotation)


def _format_validation_error(tool_name: str, exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        parts.append(f"field '{loc}': {err.get('msg')}")
    return f"Invalid arguments for tool {tool_name}: " + "; ".join(parts)


class Tool:
    """A tool definition. Build one with the `@tool` decorator.

    Args:
        fn: the body, sync or async. Its typed parameters are the arguments the model fills
            (validated with pydantic); a parameter typed `ToolContext` receives the call's
            context instead. Its docstring is the description the model reads.
        name: the name the model calls (default: the function's name).
        description: what the model reads (default: the docstring).
        kind: `auto` runs at once; `approval` waits for an approver's decision; `manual` and
            `hitl` wait for a person or another system to supply the output.
        require_approval: True (or a callable `(call, context) -> bool`, maybe async) asks for
            approval; it overrides the agent's own policy for this tool.
        approvers: Slack user or user group ids who may decide (default: the agent's, then
            anyone allowed by the settings).
        allow_self_approval: whether the person who started the run may decide.
        expires_in: seconds before an undecided request expires (default: the settings').
        allowed_decisions: a non-empty subset of approve, edit and reject.
        confirm: ask the approver to confirm before the decision is recorded.
        min_approvals: how many distinct allowed people must approve before the call runs
            (a quorum; one reject still rejects).
        require_reason: approving (or editing) needs a written reason, which the body
            receives as `ToolContext.decision_reason`.
        rules: `Rule`s over the validated arguments; the first that matches sets the policy
            of that call. Without `require_approval`, only calls a rule matches need approval.
        escalate_after: a duration (`"30m"`, or seconds) after which an undecided request
            escalates: `escalate_to` (user or group ids) is called in and may decide too.
        escalate_to: who is called in when the request escalates.
        standing_approval: a duration (`"1h"`): the card offers "Approve, and allow this tool
            in this thread" for that long (never for calls needing more than one approval).
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        kind: ToolKind = "auto",
        require_approval: ApprovalPolicy | None = None,
        approvers: Sequence[str] = (),
        allow_self_approval: bool = True,
        expires_in: float | None = None,
        allowed_decisions: Sequence[ApprovalDecision] = ALL_APPROVAL_DECISIONS,
        confirm: bool = False,
        min_approvals: int = 1,
        require_reason: bool = False,
        rules: Sequence[Rule] = (),
        escalate_after: float | str | timedelta | None = None,
        escalate_to: Sequence[str] = (),
        standing_approval: float | str | timedelta | None = None,
    ) -> None:
        # Longer than 60 lines because every option of `@tool` is checked here, at definition.
        if kind not in TOOL_KINDS:
            raise ValueError(f"Unknown tool kind {kind!r}: use auto, approval, manual or hitl")
        if require_approval is True and kind == "auto":
            kind = "approval"
        bad = [d for d in allowed_decisions if d not in ALL_APPROVAL_DECISIONS]
        if bad or not allowed_decisions:
            raise ValueError(
                f"allowed_decisions must be a non-empty subset of {ALL_APPROVAL_DECISIONS}"
            )
        if isinstance(min_approvals, bool) or not isinstance(min_approvals, int):
            raise TypeError("min_approvals must be an integer")
        if min_approvals < 1:
            raise ValueError("min_approvals must be at least 1")
        self.fn = fn
        self.name = name or fn.__name__
        self.description = (description or inspect.getdoc(fn) or self.name).strip()
        self.kind: ToolKind = kind
        self.require_approval = require_approval
        self.approvers = tuple(approvers)
        self.allow_self_approval = allow_self_approval
        self.expires_in = expires_in
        self.allowed_decisions: tuple[ApprovalDecision, ...] = tuple(allowed_decisions)
        self.confirm = confirm
        self.min_approvals = min_approvals
        self.require_reason = require_reason
        self.rules: tuple[Rule, ...] = tuple(rules)
        self.escalate_after = _duration(escalate_after)
        self.escalate_to = tuple(escalate_to)
        if self.escalate_after is not None and not self.escalate_to:
            raise ValueError(f"Tool {self.name}: escalate_after needs escalate_to (who to call in)")
        self.standing_approval = _duration(standing_approval)
        self.asks_by_rules = bool(self.rules) and require_approval is None and kind == "auto"
        """True when only calls a rule matches need approval (no `require_approval`)."""
        if self.asks_by_rules:
            self.require_approval = self._a_rule_matches
        self._context_param: str | None = None
        self._args_model = self._build_args_model()
        self.sensitive: frozenset[str] = sensitive_parameters(fn)
        """Parameters annotated `Sensitive()`: masked wherever people or logs see them."""
        self._parameters: dict[str, Any] | None = None
        self._returns = self._return_annotation()
        self._returns_adapter: TypeAdapter[Any] | None = None

    def _a_rule_matches(self, call: ToolCall, context: dict[str, Any]) -> bool:
        return self.matching_rule(call.arguments) is not None

    def matching_rule(self, arguments: dict[str, Any]) -> tuple[int, Rule] | None:
        """The first rule matching the arguments (validated when they are valid)."""
        if not self.rules:
            return None
        try:
            checked = self.validate(arguments)
        except ValueError:
            checked = dict(arguments) if isinstance(arguments, dict) else {}
        return first_match(self.rules, checked)

    def _build_args_model(self) -> type[BaseModel]:
        hints = get_type_hints(self.fn)
        fields: dict[str, Any] = {}
        for pname, param in inspect.signature(self.fn).parameters.items():
            annotation = hints.get(pname, Any)
            if _is_context(annotation):
                self._context_param = pname
                continue
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"Tool {self.name}: *args/**kwargs are not supported")
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[pname] = (annotation, default)
        model_name = "".join(p.capitalize() for p in self.name.split("_")) + "Args"
        return create_model(model_name, __config__=ConfigDict(extra="forbid"), **fields)

    def _return_annotation(self) -> Any:
        ann = get_type_hints(self.fn).get("return", Any)
        return ann

    @property
    def parameters(self) -> dict[str, Any]:
        """JSON Schema of the arguments, as sent to the model (a fresh copy each time)."""
        if self._parameters is None:  # built once: pydantic's schema generation is slow
            schema = self._args_model.model_json_schema()
            schema.pop("title", None)
            for prop in schema.get("properties", {}).values():
                prop.pop("title", None)
            self._parameters = schema
        return copy.deepcopy(self._parameters)

    @property
    def returns_object(self) -> bool:
        """True when the tool's output is structured (dict, list, model): answers are JSON."""
        ann = self._returns
        origin = getattr(ann, "__origin__", None)
        if ann in (dict, list) or origin in (dict, list):
            return True
        return isinstance(ann, type) and issubclass(ann, BaseModel)

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Validate arguments against the schema; raise `ValueError` naming the field."""
        if not isinstance(arguments, dict):
            raise ValueError(f"Invalid arguments for tool {self.name}: expected an object")
        try:
            model = self._args_model.model_validate(arguments)
        except ValidationError as exc:
            raise ValueError(_format_validation_error(self.name, exc)) from None
        return model.model_dump(mode="json", exclude_unset=False)

    def masked(self, arguments: Any) -> Any:
        """The arguments as people may see them: sensitive values masked."""
        return mask_arguments(arguments, self.sensitive)

    def redact(self, text: str, arguments: Any) -> str:
        """Text (an error message) with the sensitive arguments' values masked."""
        return redact(text, arguments, self.sensitive) if self.sensitive else text

    def defaults_for(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The parameters `arguments` leave out, with the default values they will run with
        (JSON-ready); {} when the arguments are not valid (they will not run as they are)."""
        try:
            model = self._args_model.model_validate(arguments)
        except ValidationError:
            return {}
        dumped = model.model_dump(mode="json")
        return {k: dumped[k] for k in type(model).model_fields if k not in model.model_fields_set}

    def parse_output(self, raw: Any) -> Any:
        """Coerce a person's answer to the tool's declared output type when possible."""
        ann = self._returns
        if ann is Any or ann is inspect.Signature.empty:
            return raw
        if self._returns_adapter is None:  # built once: a TypeAdapter costs a schema
            self._returns_adapter = TypeAdapter(ann)
        try:
            return self._returns_adapter.validate_python(raw)
        except ValidationError as exc:
            raise ValueError(_format_validation_error(self.name, exc)) from None

    def argument_errors(self, arguments: dict[str, Any]) -> dict[str, str]:
        """Validation errors by top-level argument name ({} when the arguments are valid)."""
        return _model_errors(self, arguments)

    async def invoke(self, arguments: dict[str, Any], ctx: ToolContext) -> Any:
        """Run the body: async bodies are awaited, sync bodies run in a worker thread."""
        model = self._args_model.model_validate(arguments)
        kwargs = {name: getattr(model, name) for name in type(model).model_fields}
        if self._context_param:
            kwargs[self._context_param] = ctx
        if inspect.iscoroutinefunction(self.fn):
            return await self.fn(**kwargs)
        return await maybe_await(await asyncio.to_thread(self.fn, **kwargs))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r}, kind={self.kind!r})"


@overload
def tool(fn: Callable[..., Any], /, **options: Unpack[ToolOptions]) -> Tool: ...


@overload
def tool(
    fn: None = None, /, **options: Unpack[ToolOptions]
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None, /, **options: Unpack[ToolOptions]
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a function a tool: `@tool`, `@tool(require_approval=True)`, `@tool(kind="hitl")`.

    Args:
        fn: the function, when used bare as `@tool`.
        **options: `name`, `description`, `kind`, `require_approval`, `approvers`,
            `allow_self_approval`, `expires_in`, `allowed_decisions`, `confirm`,
            `min_approvals`, `require_reason`, `rules`, `escalate_after`, `escalate_to`
            and `standing_approval`, as described on `Tool`.

    Returns a `Tool` (bare `@tool`), or a decorator that makes one (`@tool(...)`).
    """

    def wrap(f: Callable[..., Any]) -> Tool:
        return Tool(f, **options)

    return wrap(fn) if fn is not None else wrap


def render_output(output: Any) -> str:
    """What the model reads as a tool result."""
    if isinstance(output, str):
        return output
    if isinstance(output, BaseModel):
        return output.model_dump_json()
    return json.dumps(output, default=str, ensure_ascii=False)


def argument_errors(t: Tool, arguments: dict[str, Any]) -> dict[str, str]:
    """Validation errors by top-level argument name ({} when the arguments are valid)."""
    return t.argument_errors(arguments)


def _model_errors(t: Tool, arguments: dict[str, Any]) -> dict[str, str]:
    try:
        t._args_model.model_validate(arguments)
    except ValidationError as exc:
        errors: dict[str, str] = {}
        for err in exc.errors():
            loc = err.get("loc", ())
            key = str(loc[0]) if loc else "arguments"
            errors.setdefault(key, str(err.get("msg")))
        return errors
    return {}

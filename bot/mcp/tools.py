"""The MCP tools: request_approval, get_decision, ask_human and Claude Code's
permission_prompt. Each one is an ordinary approval request of the caller's API key, built by
the same code as POST /v1/requests (bot/api/routes.py new_request)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

from bot.api.models import MAX_WAIT, CreateRequest
from bot.api.present import configured_signer, state_json
from bot.api.routes import new_request
from bot.mcp.elicit import answer_in_client, client_name
from bot.service.api_requests import ApiRefusal, ApiRequests
from store.api import ApiKey, NewApiRequest

KeyOf = Callable[[Context], Awaitable[ApiKey]]
"""The API key a tool call is made with (the HTTP request's bearer, or stdio's SAYSO_KEY)."""

PERMISSION_POLL = float(MAX_WAIT)
"""permission_prompt blocks until decided, long-polling this long at a time."""

_JSON_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),  # before int: a bool is an int
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


def input_schema(values: dict[str, Any]) -> dict[str, Any]:
    """A JSON Schema of an object with these keys, each typed as its current value: it makes
    the card's Edit modal offer every field of a tool's input."""
    properties: dict[str, Any] = {}
    for name, value in values.items():
        kind = next((t for py, t in _JSON_TYPES if isinstance(value, py)), None)
        properties[name] = {"type": kind} if kind else {}
    return {"type": "object", "properties": properties}


def _clamp(wait_seconds: float) -> float:
    return max(0.0, min(float(wait_seconds), float(MAX_WAIT)))


class Tools(Protocol):
    """What the MCP tools do: in process (`SaysoTools`, /mcp on a front) or over the approval
    API (`bot.mcp.remote.RemoteTools`, `sayso mcp` over stdio)."""

    async def create(self, ctx: Context, **body: Any) -> tuple[Any, str]:
        """Create the request (its card posted); the caller's handle and the request's id."""
        ...

    async def state(self, handle: Any, request_id: str, wait_seconds: float) -> dict[str, Any]:
        """The decision JSON (as GET /v1/requests/{id}), or {"status": "pending", "id"}."""
        ...

    async def state_of(
        self, ctx: Context, request_id: str, wait_seconds: float
    ) -> dict[str, Any]: ...

    async def settled(self, handle: Any, request_id: str) -> dict[str, Any]: ...

    async def answered(
        self, ctx: Context, question: str, channel: str | None, answer: str, client: str
    ) -> dict[str, Any]:
        """A question the caller's own client answered: stored answered, with no card."""
        ...


class SaysoTools:
    """The engine behind the tools, in process, for one key resolver."""

    def __init__(self, api: ApiRequests, key_of: KeyOf) -> None:
        self.api = api
        self.key_of = key_of
        self.signer = configured_signer()
        """Decisions carry their signed receipt (SAYSO_SIGNING_KEY), as GET /v1 does."""

    def new(self, key: ApiKey, **body: Any) -> NewApiRequest:
        """The request a tool call describes, validated as POST /v1/requests validates it."""
        try:
            request = CreateRequest.model_validate(body)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first.get("loc", ())) or "arguments"
            raise ToolError(f"{field}: {first.get('msg')}") from None
        try:
            return new_request(self.api, key, request)
        except ApiRefusal as exc:
            raise ToolError(f"{exc.code}: {exc.message}") from None

    async def post(self, key: ApiKey, new: NewApiRequest) -> str:
        """Create the request and post its card; its id."""
        try:
            created = await self.api.create(key, new)
        except ApiRefusal as exc:
            raise ToolError(f"{exc.code}: {exc.message}") from None
        return created.request.id

    async def create(self, ctx: Context, **body: Any) -> tuple[ApiKey, str]:
        key = await self.key_of(ctx)
        return key, await self.post(key, self.new(key, **body))

    async def state(self, key: ApiKey, request_id: str, wait_seconds: float) -> dict[str, Any]:
        """The decision JSON (as GET /v1/requests/{id}), or {"status": "pending", "id"}."""
        try:
            request, _ = await self.api.wait(key, request_id, _clamp(wait_seconds))
        except ApiRefusal as exc:
            raise ToolError(f"{exc.code}: {exc.message}") from None
        state = state_json(request, self.signer)
        if state["status"] == "pending":
            return {"status": "pending", "id": request_id}
        return state

    async def state_of(self, ctx: Context, request_id: str, wait_seconds: float) -> dict[str, Any]:
        return await self.state(await self.key_of(ctx), request_id, wait_seconds)

    async def settled(self, key: ApiKey, request_id: str) -> dict[str, Any]:
        while True:
            state = await self.state(key, request_id, PERMISSION_POLL)
            if state["status"] != "pending":
                return state

    async def answered(
        self, ctx: Context, question: str, channel: str | None, answer: str, client: str
    ) -> dict[str, Any]:
        key = await self.key_of(ctx)
        new = self.new(key, kind="question", title=question, channel=channel)
        how = f"Answered in {client} (MCP elicitation)."
        try:
            request = await self.api.answered_by_caller(key, new, answer, how)
        except ApiRefusal as exc:
            raise ToolError(f"{exc.code}: {exc.message}") from None
        return state_json(request, self.signer)


def permission_answer(state: dict[str, Any]) -> dict[str, Any]:
    """A settled request -> Claude Code's permission-prompt answer."""
    decision = state.get("decision") or {}
    if state["status"] == "approved":
        return {"behavior": "allow", "updatedInput": decision.get("arguments") or {}}
    if state["status"] == "rejected":
        by = decision.get("decided_by")
        message = decision.get("reason") or (f"Rejected in Slack by {by}." if by else "Rejected.")
        return {"behavior": "deny", "message": message}
    return {"behavior": "deny", "message": f"No decision: the request is {state['status']}."}


def build_server(tools: Tools) -> MCPServer:
    # Longer than 60 lines because the MCP tools are closures over the engine behind them.
    """The sayso MCP server, its tools reaching sayso through `tools`."""
    server = MCPServer(
        name="sayso",
        instructions=(
            "Ask people in Slack to approve an action before you take it, or to answer a "
            "question. Decisions come from the approval request's card."
        ),
    )

    @server.tool()
    async def request_approval(
        tool_name: str,
        arguments: dict[str, Any],
        ctx: Context,
        title: str | None = None,
        schema: dict[str, Any] | None = None,
        channel: str | None = None,
        approvers: list[str] | None = None,
        min_approvals: int = 1,
        wait_seconds: float = 50,
    ) -> dict[str, Any]:
        """Ask for approval of a call to `tool_name` with `arguments`. Returns the decision
        (status approved/rejected/expired/cancelled; decision.arguments are the approved
        arguments, edits applied) if one arrives within `wait_seconds` (at most 60), else
        {"status": "pending", "id"}: then call get_decision with that id. A JSON Schema of
        the arguments lets approvers edit them."""
        key, request_id = await tools.create(
            ctx,
            kind="approval",
            tool=tool_name,
            title=title or f"Approve {tool_name}",
            arguments=arguments,
            schema=schema,
            channel=channel,
            approvers=approvers or [],
            min_approvals=min_approvals,
        )
        return await tools.state(key, request_id, wait_seconds)

    @server.tool()
    async def get_decision(id: str, ctx: Context, wait_seconds: float = 50) -> dict[str, Any]:
        """The decision on request `id`, waiting up to `wait_seconds` (at most 60) for one;
        {"status": "pending", "id"} while there is none yet."""
        return await tools.state_of(ctx, id, wait_seconds)

    @server.tool()
    async def ask_human(
        question: str, ctx: Context, channel: str | None = None, wait_seconds: float = 50
    ) -> dict[str, Any]:
        """Ask a person a question. Where this client shows forms (MCP elicitation, over
        stdio), its user answers in a form; else, or if they decline it, people in Slack
        answer in the card's thread or its modal. Returns the request with decision.answer
        once answered (in Slack: within `wait_seconds`, at most 60), else
        {"status": "pending", "id"}: then call get_decision with that id."""
        answer = await answer_in_client(ctx, question)
        if answer is not None:
            return await tools.answered(ctx, question, channel, answer, client_name(ctx))
        key, request_id = await tools.create(ctx, kind="question", title=question, channel=channel)
        return await tools.state(key, request_id, wait_seconds)

    @server.tool()
    async def permission_prompt(
        tool_name: str, input: dict[str, Any], ctx: Context, tool_use_id: str | None = None
    ) -> str:
        """Claude Code's --permission-prompt-tool: blocks until decided in Slack. Returns JSON
        text: {"behavior": "allow", "updatedInput": {...}} or {"behavior": "deny",
        "message": "..."}."""
        key, request_id = await tools.create(
            ctx,
            kind="approval",
            tool=tool_name,
            title=f"Claude Code wants to use {tool_name}",
            arguments=input,
            schema=input_schema(input),
            idempotency_key=f"permission_prompt:{tool_use_id}" if tool_use_id else None,
        )
        return json.dumps(permission_answer(await tools.settled(key, request_id)))

    return server

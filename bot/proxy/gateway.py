"""The gateway: a client of the upstream MCP server and a server to the agent's MCP client,
both the official `mcp` SDK's. Tools (names, descriptions, input schemas, annotations),
resources, resource templates, prompts and completions are the upstream's, unchanged; only a
tool call the policy gates goes through sayso first (bot/proxy/approvals.py).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.client.session import ClientSession
from mcp.server.lowlevel import Server

from bot.proxy.approvals import Approvals, CallInfo, error_result
from bot.proxy.policy import ServerPolicy, read_only_of

log = logging.getLogger("sayso.proxy")

HIDDEN_ENV = ("SAYSO_KEY", "SAYSO_SIGNING_KEY")
"""sayso's own secrets are not passed on to a stdio upstream."""


@dataclass(frozen=True)
class Upstream:
    """Where the upstream server is: a command (stdio) or a URL (streamable HTTP)."""

    command: Sequence[str] = ()
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        return self.url or " ".join(self.command)


@asynccontextmanager
async def connect(upstream: Upstream) -> AsyncIterator[ClientSession]:
    """An initialized session with the upstream server."""
    async with AsyncExitStack() as stack:
        if upstream.url:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=upstream.headers, timeout=httpx2.Timeout(300))
            )
            read, write = await stack.enter_async_context(
                streamable_http_client(upstream.url, http_client=http)
            )
        else:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            env = {k: v for k, v in os.environ.items() if k not in HIDDEN_ENV}
            params = StdioServerParameters(
                command=upstream.command[0], args=list(upstream.command[1:]), env=env
            )
            read, write = await stack.enter_async_context(stdio_client(params, errlog=sys.stderr))
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        yield session


class Gateway:
    """The served side: every handler asks the upstream; tool calls pass the policy first."""

    def __init__(self, upstream: ClientSession, policy: ServerPolicy, approvals: Approvals) -> None:
        self.upstream = upstream
        self.policy = policy
        self.approvals = approvals
        self.tools: dict[str, types.Tool] = {}

    async def list_tools(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        result = await self.upstream.list_tools(params=params)
        for tool in result.tools:
            self.tools[tool.name] = tool
        return result

    async def _tool(self, name: str) -> types.Tool | None:
        if name not in self.tools:  # called before (or without) listing: learn the tools
            cursor: str | None = None
            for _ in range(100):
                page = await self.list_tools(None, types.PaginatedRequestParams(cursor=cursor))
                cursor = page.next_cursor
                if cursor is None or name in self.tools:
                    break
        return self.tools.get(name)

    async def call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        tool = await self._tool(params.name)
        if tool is None:
            return await self.forward(params.name, arguments)  # the upstream says what it is
        verdict = self.policy.decide(tool.name, arguments, read_only=read_only_of(tool.annotations))
        log.info(
            "event=proxy_call server=%s tool=%s action=%s",
            self.policy.name,
            tool.name,
            verdict.action,
        )
        if verdict.action in ("allow", "none"):
            return await self.forward(tool.name, arguments)
        if verdict.action == "deny":
            return error_result(
                f"{tool.name} is not allowed through sayso's proxy ({self.policy.name}): "
                f"{verdict.why}."
            )
        return await self.approvals.decide(CallInfo(tool, arguments, verdict), self.forward)

    async def forward(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        return await self.upstream.call_tool(name, arguments)

    async def list_resources(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return await self.upstream.list_resources(params=params)

    async def list_resource_templates(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return await self.upstream.list_resource_templates(params=params)

    async def read_resource(
        self, ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        return await self.upstream.read_resource(params.uri)

    async def list_prompts(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return await self.upstream.list_prompts(params=params)

    async def get_prompt(
        self, ctx: Any, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        return await self.upstream.get_prompt(params.name, params.arguments)

    async def complete(self, ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
        context = params.context.arguments if params.context else None
        argument = {params.argument.name: params.argument.value}
        return await self.upstream.complete(params.ref, argument, context)

    def server(self) -> Server[Any]:
        """The MCP server the agent's client talks to: what the upstream offers, no more."""
        init = self.upstream.initialize_result
        caps = init.capabilities if init is not None else types.ServerCapabilities()
        info = init.server_info if init is not None else None
        handlers: dict[str, Any] = {
            "on_list_tools": self.list_tools,
            "on_call_tool": self.call_tool,
        }
        if caps.resources is not None:
            handlers["on_list_resources"] = self.list_resources
            handlers["on_list_resource_templates"] = self.list_resource_templates
            handlers["on_read_resource"] = self.read_resource
        if caps.prompts is not None:
            handlers["on_list_prompts"] = self.list_prompts
            handlers["on_get_prompt"] = self.get_prompt
        if caps.completions is not None:
            handlers["on_completion"] = self.complete
        return Server(
            info.name if info is not None else self.policy.name,
            version=info.version if info is not None else "",
            title=info.title if info is not None else None,
            instructions=init.instructions if init is not None else None,
            **handlers,
        )

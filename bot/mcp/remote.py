"""The MCP tools over a running sayso's approval API: what `sayso mcp` (stdio) serves. The
process holds an API key and nothing else: no database URL, no Slack token. An agent it gates
can read its environment, so that is all it may find there (security round two, finding 4)."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

from bot.api.models import MAX_WAIT
from bot.client import AsyncSaysoClient, SaysoAPIError

PERMISSION_POLL = float(MAX_WAIT)


def _clamp(wait_seconds: float) -> float:
    return max(0.0, min(float(wait_seconds), float(MAX_WAIT)))


class RemoteTools:
    """`bot.mcp.tools.Tools` through /v1 with one key."""

    def __init__(self, client: AsyncSaysoClient) -> None:
        self.client = client

    async def create(self, ctx: Context, **body: Any) -> tuple[Any, str]:
        try:
            created = await self.client.create(**body)
        except SaysoAPIError as exc:
            raise ToolError(f"{exc.code}: {exc.message}") from None
        return None, created.id

    async def state(self, handle: Any, request_id: str, wait_seconds: float) -> dict[str, Any]:
        wait = _clamp(wait_seconds)
        try:
            state = await self.client.get(request_id, wait=wait or None)
        except SaysoAPIError as exc:
            raise ToolError(f"{exc.code}: {exc.message}") from None
        found: dict[str, Any] = state.model_dump(mode="json")
        if found["status"] == "pending":
            return {"status": "pending", "id": request_id}
        return found

    async def state_of(self, ctx: Context, request_id: str, wait_seconds: float) -> dict[str, Any]:
        return await self.state(None, request_id, wait_seconds)

    async def settled(self, handle: Any, request_id: str) -> dict[str, Any]:
        while True:
            state = await self.state(handle, request_id, PERMISSION_POLL)
            if state["status"] != "pending":
                return state

    async def answered(
        self, ctx: Context, question: str, channel: str | None, answer: str, client: str
    ) -> dict[str, Any]:
        _, request_id = await self.create(
            ctx,
            kind="question",
            title=question,
            channel=channel,
            answered_in_client={"answer": answer, "client": client},
        )
        return await self.state(None, request_id, 0)

"""`store.standing`: standing approvals (one tool, one thread, until a time or a revoke)."""

from __future__ import annotations

from datetime import timedelta

from store import standing as standing_ops
from store.db import Database
from store.records import StandingApproval


class StandingRepository:
    """Standing approvals: give one, find the live one for a call, revoke one (audited)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(
        self,
        *,
        agent_id: str,
        tool_name: str,
        channel_id: str,
        thread_ts: str,
        granted_by: str,
        lasts: timedelta,
        request_id: str | None = None,
        run_id: str | None = None,
    ) -> StandingApproval:
        """Let calls of one tool in one thread run without a card for `lasts` (audited)."""
        return await standing_ops.add(
            self._db,
            agent_id=agent_id,
            tool_name=tool_name,
            channel_id=channel_id,
            thread_ts=thread_ts,
            granted_by=granted_by,
            lasts=lasts,
            request_id=request_id,
            run_id=run_id,
        )

    async def live(
        self, *, agent_id: str, tool_name: str, channel_id: str, thread_ts: str
    ) -> StandingApproval | None:
        """The newest unrevoked, unexpired one for this tool in this thread, if any."""
        return await standing_ops.live(
            self._db,
            agent_id=agent_id,
            tool_name=tool_name,
            channel_id=channel_id,
            thread_ts=thread_ts,
        )

    async def get(self, approval_id: str) -> StandingApproval | None:
        return await standing_ops.get(self._db, approval_id)

    async def set_message(self, approval_id: str, message_ts: str) -> None:
        """Where its message (with Revoke) was posted in the thread."""
        await standing_ops.set_message(self._db, approval_id, message_ts)

    async def revoke(self, approval_id: str, actor: str) -> tuple[bool, StandingApproval | None]:
        """Revoke it once (audited): (this call revoked it, the standing approval now)."""
        return await standing_ops.revoke(self._db, approval_id, actor)

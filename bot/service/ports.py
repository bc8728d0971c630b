"""What the service needs from the front end (implemented by bot/slack): people and output.

The service hands over store records; the front end decides how they look.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from store import ApprovalRequestRecord, RunRecord


@dataclass(frozen=True)
class Person:
    user_id: str
    team_id: str | None
    is_bot: bool = False
    is_guest: bool = False
    deleted: bool = False


class Directory(Protocol):
    """Looks people and user groups up (Slack: users.info, usergroups.users.list)."""

    async def person(self, user_id: str) -> Person | None: ...

    async def group_members(self, group_id: str) -> frozenset[str]: ...


class Presenter(Protocol):
    """Shows runs to people (Slack: a root message, its thread, cards, ephemerals, App Home)."""

    async def post_root(self, run: RunRecord, *, queued_ahead: int = 0) -> str: ...

    async def update_root(self, run: RunRecord) -> None: ...

    async def post_card(self, run: RunRecord, request: ApprovalRequestRecord) -> str | None: ...

    async def update_card(self, run: RunRecord, request: ApprovalRequestRecord) -> None: ...

    async def post_progress(self, run: RunRecord, text: str) -> None: ...

    async def post_answer(self, run: RunRecord, text: str) -> None: ...

    async def post_failure(self, run: RunRecord, error: str) -> None: ...

    async def post_reminder(self, run: RunRecord, request: ApprovalRequestRecord) -> None: ...

    async def notify(
        self, user_id: str, channel_id: str, text: str, thread_ts: str | None
    ) -> None: ...

    async def refresh_home(self, user_id: str) -> None: ...

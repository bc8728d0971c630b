"""What the service needs from the front end (implemented by bot/slack): people and output.

The service hands over store records; the front end decides how they look.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from bot.service.streaming import TextSink
from store import ApprovalRequestRecord, GrantRecord, RunRecord


@dataclass(frozen=True)
class Person:
    user_id: str
    team_id: str | None
    is_bot: bool = False
    is_guest: bool = False
    deleted: bool = False


class Directory(Protocol):
    """Looks people, user groups and channel members up (Slack: users.info,
    usergroups.users.list, conversations.members)."""

    async def person(self, user_id: str) -> Person | None: ...

    async def group_members(self, group_id: str) -> frozenset[str]: ...

    async def channel_members(self, channel_id: str) -> frozenset[str]:
        """Members of a channel (empty when it cannot be looked up: nobody is let in)."""
        ...


class Presenter(Protocol):
    """Shows runs to people (Slack: a root message, its thread, cards, ephemerals, App Home)."""

    async def post_root(self, run: RunRecord, *, queued_ahead: int = 0) -> str: ...

    async def update_root(self, run: RunRecord) -> None: ...

    def card_channel(self, run: RunRecord, request: ApprovalRequestRecord) -> str | None:
        """The channel a request's card is posted in (`post_card` returns its ts)."""
        ...

    async def post_card(self, run: RunRecord, request: ApprovalRequestRecord) -> str | None: ...

    async def update_card(self, run: RunRecord, request: ApprovalRequestRecord) -> None: ...

    async def post_progress(self, run: RunRecord, text: str) -> None: ...

    async def show_activity(self, run: RunRecord) -> None: ...

    def text_sink(self, run: RunRecord) -> TextSink | None:
        """Where the run's text streams as the model writes it (None: no streaming)."""
        ...

    async def post_answer(self, run: RunRecord, text: str, truncated: bool = False) -> None: ...

    async def post_failure(self, run: RunRecord, error: str) -> None: ...

    async def post_cancelled(self, run: RunRecord, by: str) -> None:
        """Say in the thread that `by` (a user id, or an operator's name) cancelled the run."""
        ...

    async def post_reminder(self, run: RunRecord, request: ApprovalRequestRecord) -> None: ...

    async def post_escalation(self, run: RunRecord, request: ApprovalRequestRecord) -> None: ...

    async def post_grant(self, run: RunRecord, grant: GrantRecord) -> str | None: ...

    async def update_grant(self, grant: GrantRecord) -> None: ...

    async def post_auto_approved(
        self, run: RunRecord, request: ApprovalRequestRecord, grant: GrantRecord
    ) -> None: ...

    async def notify(
        self, user_id: str, channel_id: str, text: str, thread_ts: str | None
    ) -> None: ...

    async def refresh_home(self, user_id: str) -> None: ...

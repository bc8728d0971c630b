"""What the service needs from the front end (implemented by bot/slack): people and output.

The presentation port speaks in domain terms, a handful of verbs. Each verb names the message it
targets (a run's thread, a request's card, a standing approval's line), and a later state of a
message replaces an earlier one, so an implementation may defer, coalesce and retry its writes
(the durable Slack outbox does). The service hands over records and typed notices; the front end
decides how they look (mentions, channel links, emoji are Slack's business).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from bot.service.streaming import TextSink
from store import ApprovalRequestRecord, RunRecord, StandingApproval


@dataclass(frozen=True)
class Person:
    user_id: str
    team_id: str | None
    is_bot: bool = False
    is_guest: bool = False
    deleted: bool = False


class DirectoryUnavailable(Exception):
    """The directory could not be asked (Slack down, limiting or unreachable) and knows
    nothing from before: the question waits and is asked again, it is never a "no" (a click
    during an outage is decided once Slack is back, not refused)."""


class Directory(Protocol):
    """Looks people, user groups and channel members up (Slack: users.info,
    usergroups.users.list, conversations.members). Raises `DirectoryUnavailable` when it
    cannot answer."""

    async def person(self, user_id: str) -> Person | None: ...

    async def group_members(self, group_id: str) -> frozenset[str]: ...

    async def channel_members(self, channel_id: str) -> frozenset[str]:
        """Members of a channel (empty when it cannot be looked up: nobody is let in)."""
        ...


# -- what changed about a run -------------------------------------------------------------


@dataclass(frozen=True)
class Status:
    """Where the run stands (its root message). `follow_up`: the run continues another run's
    thread, whose root message is not its own."""

    follow_up: bool = False


STATUS = Status()


@dataclass(frozen=True)
class Answered:
    """The run completed with this answer (`truncated`: the model hit its output limit)."""

    text: str
    truncated: bool = False
    again: bool = False
    """Shown again after a crash: what was put before stays, only what is missing is put."""


@dataclass(frozen=True)
class Failed:
    error: str
    again: bool = False


@dataclass(frozen=True)
class Cancelled:
    by: str
    """A user id, or an operator's name."""


RunChange = Status | Literal["activity"] | Answered | Failed | Cancelled
"""Where the run stands; "activity": its live checklist of tool calls (coalesced by the front
end); or how it ended."""


# -- notices: one-line messages in a run's thread -------------------------------------------


@dataclass(frozen=True)
class ToolFailed:
    tool: str
    detail: str


@dataclass(frozen=True)
class Reminder:
    request: ApprovalRequestRecord


@dataclass(frozen=True)
class Escalated:
    request: ApprovalRequestRecord


@dataclass(frozen=True)
class AutoApproved:
    """A call approved on a standing approval's behalf."""

    request: ApprovalRequestRecord
    standing: StandingApproval


@dataclass(frozen=True)
class StandingApprovalShown:
    """A standing approval's line (with its Revoke button): posted once, then replaced as it
    changes (revoked). Saying it returns the line's ts when it was posted."""

    standing: StandingApproval


Notice = ToolFailed | Reminder | Escalated | AutoApproved | StandingApprovalShown


@dataclass(frozen=True)
class CardPlace:
    """Where a request's card was posted."""

    channel_id: str
    ts: str


class Presenter(Protocol):
    """Shows runs to people (Slack: a root message, its thread, cards, ephemerals, App Home)."""

    async def open_thread(self, run: RunRecord, *, queued_ahead: int = 0) -> str:
        """The run's first message; its ts becomes the run's thread (`queued_ahead`: runs
        waiting for a worker before it)."""
        ...

    async def run_changed(self, run: RunRecord, change: RunChange = STATUS) -> None: ...

    async def post_card(self, run: RunRecord, request: ApprovalRequestRecord) -> CardPlace | None:
        """A card for a new request, with its buttons (once per request: a card already made
        is the card). None when its place is not known yet (it is recorded when posted)."""
        ...

    async def request_changed(self, run: RunRecord, request: ApprovalRequestRecord) -> None:
        """The request's card shows its current state (decided, counted, escalated...)."""
        ...

    async def channel_refusal(self, channel_id: str) -> str | None:
        """Why a card could never be shown in `channel_id` (e.g. "channel_not_found"), or None
        (also when that cannot be known now: the card is tried anyway)."""
        ...

    async def say(self, notice: Notice, run: RunRecord | None = None) -> str | None: ...

    def text_sink(self, run: RunRecord) -> TextSink | None:
        """Where the run's text streams as the model writes it (None: no streaming)."""
        ...

    async def close(self) -> None: ...

"""Who may start runs of an agent, in which channels, and how often (issue 11).

- `Agent(allowed_users=[...])` lists the user and group ids who may start runs and
  follow-ups; with none listed, every full member may. Guests and people from other
  workspaces never start runs unless listed by id (the rules of `permissions.may_decide`).
- `Agent(channels=[...])` limits the channels an agent answers in.
- `SAYSO_RATE_LIMIT` caps the runs each person starts: commands, mentions, follow-ups and
  retries all count. The count lives in the store, so it holds across replicas.

Every refusal is an audit event and a message for that person alone.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from bot.agent import Agent
from bot.agent.util import utcnow
from bot.service.outcome import Actor, Outcome
from bot.service.permissions import LOOKUP_FAILED, describe, may_decide
from bot.service.ports import Directory
from bot.service.text import channel
from store import StartLimit, StartLimitReached, Store

log = logging.getLogger("sayso.service")

WINDOWS: Final[dict[str, timedelta]] = {
    "second": timedelta(seconds=1),
    "minute": timedelta(minutes=1),
    "hour": timedelta(hours=1),
}


@dataclass(frozen=True)
class RateLimit:
    """At most `runs` starts per person in any `window` (second, minute or hour)."""

    runs: int
    window: str = "minute"

    def __post_init__(self) -> None:
        if self.runs < 1 or self.window not in WINDOWS:
            raise ValueError(f"{self.runs}/{self.window} is not a rate limit")

    @property
    def per(self) -> timedelta:
        return WINDOWS[self.window]

    @property
    def label(self) -> str:
        return f"{self.runs}/{self.window}"

    def start_limit(self, now: datetime) -> StartLimit:
        return StartLimit(most=self.runs, since=now - self.per)

    def refusal(self, starts: list[datetime], now: datetime) -> str:
        """What the person is told: how many runs, the limit, and when to try again."""
        # the start that must leave the window for one more to fit
        frees = starts[max(0, len(starts) - self.runs)] + self.per
        wait = max(1, math.ceil((frees - now).total_seconds()))
        when = f"{wait} second{'s' if wait != 1 else ''}"
        if wait >= 120:
            minutes = math.ceil(wait / 60)
            when = f"{minutes} minutes"
        return (
            f"You have started {len(starts)} runs in the last {self.window} "
            f"(the limit is {self.label}): try again in {when}."
        )


DEFAULT_RATE_LIMIT: Final = RateLimit(10, "minute")


def who_may_start(agent: Agent) -> str:
    if not agent.allowed_users:
        return "full members of this workspace"
    return describe(agent.allowed_users)


async def may_start(
    directory: Directory,
    agent: Agent,
    *,
    actor: Actor,
    workspace_team_id: str | None,
    channel_id: str | None,
) -> str | None:
    """None when `actor` may start a run of `agent` in `channel_id`, else why not."""
    if agent.channels and channel_id not in agent.channels:
        where = ", ".join(channel(c) for c in agent.channels)
        return f"`{agent.id}` answers only in {where}: start it there."
    verdict = await may_decide(
        directory,
        user_id=actor.user_id,
        team_id=actor.team_id,
        workspace_team_id=workspace_team_id,
        approvers=agent.allowed_users,
        requester=None,
        allow_self_approval=True,
    )
    if verdict.allowed:
        return None
    if verdict.reason == LOOKUP_FAILED:
        return LOOKUP_FAILED
    return f"Only {who_may_start(agent)} may start runs of `{agent.id}`."


class StartGate:
    """Applies the rules above for the service and audits every refusal."""

    def __init__(self, store: Store, directory: Directory, rate_limit: RateLimit | None) -> None:
        self.store = store
        self.directory = directory
        self.rate_limit = rate_limit

    async def check_person(
        self,
        agent: Agent,
        actor: Actor,
        *,
        workspace_team_id: str | None,
        channel_id: str | None,
        run_id: str | None = None,
    ) -> Outcome | None:
        """None when the person may start a run of `agent` here, else the refusal."""
        reason = await may_start(
            self.directory,
            agent,
            actor=actor,
            workspace_team_id=workspace_team_id,
            channel_id=channel_id,
        )
        if reason is None:
            return None
        log.info(
            "event=start_denied agent=%s user=%s channel=%s", agent.id, actor.user_id, channel_id
        )
        await self.store.audit.record(
            actor=actor.user_id, action="start", run_id=run_id, outcome="denied", detail=reason
        )
        return Outcome("denied", reason)

    def start_limit(self, now: datetime | None = None) -> StartLimit | None:
        """The limit the store applies to a new run (None: no rate limit)."""
        return self.rate_limit.start_limit(now or utcnow()) if self.rate_limit else None

    async def check_rate(self, user_id: str, run_id: str | None = None) -> Outcome | None:
        """For a retry (which creates no run): None when under the limit, else the refusal."""
        if self.rate_limit is None:
            return None
        now = utcnow()
        limit = self.rate_limit.start_limit(now)
        starts = await self.store.runs.starts_since(user_id, limit.since)
        if len(starts) < limit.most:
            return None
        return await self.limited(user_id, StartLimitReached(limit, starts), run_id)

    async def limited(
        self, user_id: str, reached: StartLimitReached, run_id: str | None = None
    ) -> Outcome:
        """The refusal of a start over the rate limit (audited as `rate_limited`)."""
        assert self.rate_limit is not None
        log.info(
            "event=rate_limited user=%s starts=%d limit=%s",
            user_id,
            len(reached.starts),
            self.rate_limit.label,
        )
        await self.store.audit.record(
            actor=user_id,
            action="rate_limited",
            run_id=run_id,
            outcome="denied",
            detail=self.rate_limit.label,
        )
        return Outcome("denied", self.rate_limit.refusal(reached.starts, utcnow()))

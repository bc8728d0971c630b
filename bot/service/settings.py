"""The service's settings (built from `bot.config.Settings` by the composition root)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from bot.service.start_gate import DEFAULT_RATE_LIMIT, RateLimit


@dataclass(frozen=True)
class ServiceSettings:
    default_approvers: tuple[str, ...] = ()
    approval_ttl: timedelta = timedelta(hours=24)
    remind_after: timedelta | None = None
    lease_seconds: float = 30.0
    retention: timedelta = timedelta(days=30)
    max_active_runs: int = 200
    """Runs in flight at once per worker (a run awaiting its model or a tool holds one)."""
    cpu_slots: int = 4
    """Runs doing store and Slack work at once (loading, presenting): the CPU-bound part."""
    rate_limit: RateLimit | None = DEFAULT_RATE_LIMIT
    admins: tuple[str, ...] = ()
    """User and group ids who may cancel or retry any run and revoke any standing approval
    (SAYSO_ADMINS)."""
    default_channel: str | None = None
    """The approval API: the channel of requests that name none."""
    callback_hosts: tuple[str, ...] = ()
    """Where the approval API's webhooks may go (empty: anywhere)."""


@dataclass
class Workspace:
    """This workspace, as Slack's auth.test told it (None until then: only people listed by
    id may decide). One per service, shared by every use-case that checks who may act."""

    team_id: str | None = None

"""What one person may decide now, and their recent runs (App Home)."""

from __future__ import annotations

from dataclasses import dataclass

from bot.service.permissions import may_decide_open_requests, open_request_channels
from bot.service.ports import Directory
from bot.service.registry import AgentRegistry
from bot.service.settings import ServiceSettings, Workspace
from store import ApprovalRequestRecord, RunRecord, Store
from store.requests import INBOX_COUNT_LIMIT


@dataclass(frozen=True)
class Inbox:
    """What one person may decide now (newest first, each with its run) and their recent runs."""

    pending: list[tuple[ApprovalRequestRecord, RunRecord]]
    total: int
    total_is_lower_bound: bool
    """The count stopped at `total`: there may be more."""
    recent_runs: list[RunRecord]


async def inbox_of(
    store: Store,
    agents: AgentRegistry,
    directory: Directory,
    workspace: Workspace,
    settings: ServiceSettings,
    user_id: str,
    limit: int = 20,
) -> Inbox:
    """What the person may decide now (newest first), the total, and their recent runs."""
    groups = agents.approver_groups(settings.default_approvers)
    mine = [g for g in sorted(groups) if user_id in await directory.group_members(g)]
    anyone = await may_decide_open_requests(
        directory, user_id=user_id, workspace_team_id=workspace.team_id
    )
    channels = (
        await open_request_channels(directory, user_id, await store.requests.open_channels())
        if anyone
        else []
    )
    requests, total = await store.requests.pending_for(
        user_id,
        mine,
        include_anyone=anyone,
        limit=limit,
        count_limit=INBOX_COUNT_LIMIT,
        anyone_channels=channels,
    )
    runs = await store.runs.get_many([r.spec.run_id for r in requests])
    return Inbox(
        pending=[(r, runs[r.spec.run_id]) for r in requests if r.spec.run_id in runs],
        total=total,
        total_is_lower_bound=total >= INBOX_COUNT_LIMIT,
        recent_runs=await store.runs.list(requester=user_id, limit=10),
    )

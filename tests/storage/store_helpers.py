"""Helpers shared by the store tests: a paused run, a request policy, the Store factory type."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

from store import Lease, RequestPolicy, Store

StoreFactory = Callable[..., Awaitable[Store]]
"""`make_store(**kwargs)`: opens another Store (a replica) on the test's database."""


def policy(
    approvers: list[str] | None = None,
    *,
    minutes: float = 60,
    allow_self_approval: bool = True,
) -> Callable[..., RequestPolicy]:
    def make(_result: object, _pending: object) -> RequestPolicy:
        return RequestPolicy(
            approvers=list(approvers or []),
            expires_at=datetime.now(UTC) + timedelta(minutes=minutes),
            allow_self_approval=allow_self_approval,
        )

    return make


async def paused_run(
    store: Store,
    run_id: str = "run1",
    *,
    calls: tuple[str, ...] = ("call_1",),
    approvers: list[str] | None = None,
    requester: str = "U_REQ",
    minutes: float = 60,
    allow_self_approval: bool = True,
) -> Lease:
    """A run paused on approval of `calls` (saved through the accessor, as the runtime does)."""
    from bot.agent.messages import ToolCall
    from bot.agent.state import Pause, PendingToolCall, Run, RunResult

    lease = await store.runs.create(
        run_id=run_id,
        agent_id="ops",
        requester=requester,
        team_id="T1",
        channel_id="C1",
        thread_ts="1700000000.000100",
        request_text="deploy v2",
    )
    pending = [
        PendingToolCall(
            call=ToolCall(id=c, name="deploy", arguments={"env": "staging"}), kind="approval"
        )
        for c in calls
    ]
    result = RunResult(
        run=Run(
            id=run_id,
            agent_id="ops",
            model="scripted:list",
            status="waiting_for_human",
            step=1,
            pause=Pause(kind="tool_approval", step=1, pending_tool_calls=pending),
        )
    )
    accessor = store.runs.accessor(
        lease, policy(approvers, minutes=minutes, allow_self_approval=allow_self_approval)
    )
    await accessor.save(result)
    return lease

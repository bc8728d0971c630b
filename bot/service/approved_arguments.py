"""A decided call runs with exactly the arguments that were approved, or not at all.

When a decision is written, the audit trail records the SHA-256 of the arguments that will run
(`args_hash`: the edited ones after an Edit), in the same transaction as the decision. Before a
run continues with its decisions, each approved call's arguments as they are now (the edited
ones from the request's row, else the call's from the saved run) are hashed again: a call whose
arguments were changed after the decision (a row altered in SQL, a bug in a later write) does
not run. It is refused with a reason the model reads, so it asks again, and that ask is a new
card; the refusal is audited (`receipt_mismatch`). This is the runtime's side of issue 24's
receipts (bot/receipts.py), which bind the same arguments for callers outside sayso.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from bot.agent import RunResult
from store import ApprovalRequestRecord, Store
from store.records import args_hash

log = logging.getLogger("sayso.service")

ALTERED_REASON = (
    "The arguments of this call were changed after it was approved, so they no longer match "
    "the approval: the call did not run. Ask again for a new approval if it is still needed."
)
RUNS_WITH_ARGUMENTS = ("approved", "edited")


def arguments_to_run(request: ApprovalRequestRecord, result: RunResult) -> dict[str, Any] | None:
    """The arguments the decided call would run with now (None: the call is not in the pause)."""
    if request.state.status == "edited":
        return dict(request.state.edited_arguments or {})
    pause = result.run.pause
    for pending in pause.pending_tool_calls if pause is not None else []:
        if pending.call.id == request.spec.call_id:
            return dict(pending.call.arguments or {})
    return None


async def refuse_altered(
    store: Store,
    result: RunResult,
    requests: list[ApprovalRequestRecord],
    approved: dict[str, str],
) -> list[ApprovalRequestRecord]:
    """`requests`, with each approved call whose arguments changed after its decision turned
    into a rejection saying so (audited). `approved`: request id to the arguments' hash its
    winning decision recorded in the audit trail (read with the requests:
    `RequestRepository.run_and_current`)."""
    decided = [r for r in requests if r.state.status in RUNS_WITH_ARGUMENTS]
    if not decided:
        return requests
    out = []
    for request in requests:
        expected = approved.get(request.id)
        arguments = arguments_to_run(request, result) if request in decided else None
        if expected and arguments is not None:
            if args_hash(request.spec.tool_name, arguments) != expected:
                request = await _refuse(store, request, arguments)
        out.append(request)
    return out


async def _refuse(
    store: Store, request: ApprovalRequestRecord, arguments: dict[str, Any]
) -> ApprovalRequestRecord:
    log.warning(
        "event=receipt_mismatch run_id=%s call_id=%s request_id=%s tool=%s",
        request.spec.run_id,
        request.spec.call_id,
        request.id,
        request.spec.tool_name,
    )
    await store.audit.record(
        actor="system",
        action="receipt_mismatch",
        outcome="refused",
        run_id=request.spec.run_id,
        call_id=request.spec.call_id,
        request_id=request.id,
        tool_name=request.spec.tool_name,
        arguments=arguments,
        detail="the arguments changed after the decision; the call did not run",
    )
    return replace(request, state=replace(request.state, status="rejected", reason=ALTERED_REASON))

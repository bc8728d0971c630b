"""`sayso runs list|show`: runs, their requests and audit trail, for operators without Slack."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

from bot.agent.sensitive import mask
from bot.api.present import receipt_of
from bot.receipts import ReceiptSigner
from bot.service.registry import AgentRegistry
from store import Store

Masker = Callable[[str, str, Any], Any]
"""(agent id, tool name, arguments) -> the arguments as an operator may see them."""


def masker_for(agents: AgentRegistry | None) -> Masker:
    """Masks each tool's sensitive arguments; without the agents (they did not load), every
    argument value is masked: nothing sensitive is printed by mistake."""

    def masked(agent_id: str, tool_name: str, arguments: Any) -> Any:
        if agents is None:
            if isinstance(arguments, dict):
                return {k: mask(v) for k, v in arguments.items()}
            return arguments
        tool = agents.tool(agent_id, tool_name)
        return tool.masked(arguments) if tool else arguments

    return masked


def _t(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if value else "-"


async def show_runs(store: Store, *, status: str | None = None, limit: int = 50) -> None:
    runs = await store.runs.list(status=status, limit=limit)
    if not runs:
        print("no runs" + (f" with status {status}" if status else ""))
        return
    print(f"{'RUN':32}  {'AGENT':10}  {'STATUS':18}  {'CREATED':19}  REQUESTER  REQUEST")
    for r in runs:
        text = (r.request_text or "").replace("\n", " ")[:60]
        print(
            f"{r.id:32}  {r.agent_id[:10]:10}  {r.status:18}  {_t(r.created_at):19}  "
            f"{(r.requester or '-'):9}  {text}"
        )


async def show_run(
    store: Store,
    run_id: str,
    masked: Masker | None = None,
    signer: ReceiptSigner | None = None,
) -> int:
    run = await store.runs.get(run_id)
    if run is None:
        print(f"Run {run_id} not found")
        return 1
    result = run.result
    masked = masked or masker_for(None)
    print(f"run        {run.id}")
    print(f"agent      {run.agent_id}")
    print(f"status     {run.status}" + (f" ({run.pause_kind})" if run.pause_kind else ""))
    print(f"requester  {run.requester or '-'}")
    print(f"request    {run.request_text}")
    print(f"slack      channel={run.channel_id or '-'} thread={run.thread_ts or '-'}")
    print(f"created    {_t(run.created_at)}   updated {_t(run.updated_at)}   version {run.version}")
    if result is not None:
        if result.run.error:
            print(f"error      {result.run.error}")
        if result.output is not None:
            print(f"output     {result.output}")
        usage = result.run.usage
        print(
            f"usage      {usage.requests} model requests, "
            f"{usage.input_tokens}+{usage.output_tokens} tokens"
        )
    requests = await store.requests.for_run(run_id)
    print(f"\napproval requests ({len(requests)})")
    for q in requests:
        who = f" by {q.state.decided_by} at {_t(q.state.decided_at)}" if q.state.decided_by else ""
        extra = f" reason={q.state.reason!r}" if q.state.reason else ""
        print(f"  {q.id}  {q.spec.kind:8} {q.spec.tool_name:16} {q.state.status:9}{who}{extra}")
        args = masked(run.agent_id, q.spec.tool_name, q.spec.arguments)
        print(f"      call {q.spec.call_id} args {args} expires {_t(q.policy.expires_at)}")
        if q.state.edited_arguments is not None:
            edited = masked(run.agent_id, q.spec.tool_name, q.state.edited_arguments)
            print(f"      edited to {edited}")
        receipt = receipt_of(q, signer)
        if receipt is not None:  # the same receipt GET /v1 and webhooks carry
            print(f"      receipt {json.dumps(receipt, separators=(',', ':'))}")
    trail = await store.audit.trail(run_id)
    print(f"\naudit trail ({len(trail)})")
    for e in trail:
        call = f" call={e.call_id}" if e.call_id else ""
        print(
            f"  {_t(e.at)}  {e.actor or '-':10} {e.action:10} {e.outcome:10}{call}  "
            f"{e.detail or ''}"
        )
    return 0

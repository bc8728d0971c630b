"""Store records -> the plain data the Block Kit builders take."""

from __future__ import annotations

import json
from typing import Any, TypeVar, get_args

from bot.agent import Agent, RunResult
from bot.agent.tools import Tool
from bot.agent.vocabulary import (
    ALL_APPROVAL_DECISIONS,
    RequestKind,
    RequestStatus,
    RunStatus,
)
from bot.service.policy.effective import Policies
from bot.service.policy.report import needs_approval, without_rules
from bot.service.policy.rules import apply_rule
from bot.service.registry import AgentRegistry
from bot.service.text import render as render_tokens
from bot.slack.blocks.data import AgentInfo, CardInfo, RunInfo, WhoApproves
from bot.slack.blocks.status import Step, activity
from store import ApprovalRequestRecord, RunRecord

_Word = TypeVar("_Word", bound=str)

_REQUEST_KINDS: tuple[RequestKind, ...] = get_args(RequestKind)
_REQUEST_STATUSES: tuple[RequestStatus, ...] = get_args(RequestStatus)
_RUN_STATUSES: tuple[RunStatus, ...] = get_args(RunStatus)
_LIVE = ("running", "waiting_for_human")


def one_of(value: str, words: tuple[_Word, ...]) -> _Word:
    """`value` as a word of the vocabulary (the store only writes those)."""
    for word in words:
        if word == value:
            return word
    raise ValueError(f"{value!r} is not one of {', '.join(words)}")


def run_info(run: RunRecord, error: str | None = None) -> RunInfo:
    return RunInfo(
        run_id=run.id,
        agent_id=run.agent_id,
        status=one_of(run.status, _RUN_STATUSES),
        request_text=run.request_text or "",
        requester=run.requester,
        channel_id=run.channel_id,
        thread_ts=run.thread_ts,
        created_at=run.created_at,
        error=error,
        activity=activity(run_steps(run.result)) if run.status in _LIVE else None,
    )


def _failed(content: str | None) -> bool:
    try:
        body = json.loads(content or "")
    except ValueError:
        return False
    return isinstance(body, dict) and "error" in body


def run_steps(result: RunResult | None) -> list[Step]:
    """Every tool call of a run so far, in order, with where it stands."""
    if result is None:
        return []
    run = result.run
    current = {tc.call.id for tc in run.turn.calls} if run.turn else set()
    results = {m.tool_call_id: m.content for m in run.messages if m.role == "tool"}
    steps: list[Step] = []
    for message in run.messages:
        for call in message.tool_calls:
            if call.id in current:
                continue
            steps.append(Step(call.name, "failed" if _failed(results.get(call.id)) else "done"))
    for tc in run.turn.calls if run.turn else []:
        if tc.state == "finished":
            steps.append(Step(tc.call.name, "failed" if tc.error else "done"))
        elif tc.state == "started":
            steps.append(Step(tc.call.name, "running"))
        elif tc.state == "pending":
            steps.append(Step(tc.call.name, "approval" if tc.kind == "auto" else tc.kind))
        else:
            steps.append(Step(tc.call.name, "queued"))
    return steps


def card_info(request: ApprovalRequestRecord, run: RunRecord, agents: AgentRegistry) -> CardInfo:
    tool = agents.tool_of(run.agent_id, request)
    return CardInfo(
        request_id=request.id,
        run_id=request.spec.run_id,
        agent_id=run.agent_id,
        tool_name=request.spec.tool_name,
        kind=one_of(request.spec.kind, _REQUEST_KINDS),
        arguments=_masked(tool, request.spec.arguments or {}),
        status=one_of(request.state.status, _REQUEST_STATUSES),
        tool_description=tool.description if tool else "",
        requester=request.spec.requester or run.requester,
        expires_at=request.policy.expires_at,
        allowed_decisions=tuple(tool.allowed_decisions) if tool else ALL_APPROVAL_DECISIONS,
        confirm=bool(tool and tool.confirm),
        interrupted=bool(request.state.interrupted),
        approvers=tuple(a for a in request.policy.approvers if a != "*"),
        decided_by=request.state.decided_by,
        decided_at=request.state.decided_at,
        reason=request.state.reason,
        edited_arguments=_masked(tool, request.state.edited_arguments),
        output=request.state.output,
        returns_object=bool(tool and tool.returns_object),
        parameters=tool.parameters if tool else None,
        created_at=request.spec.created_at,
        sensitive=tool.sensitive if tool else frozenset(),
        defaults=tool.masked(
            tool.defaults_for(request.state.edited_arguments or request.spec.arguments or {})
        )
        if tool
        else {},
        min_approvals=request.policy.min_approvals,
        require_reason=request.policy.require_reason,
        rule=request.policy.rule,
        escalate_to=tuple(request.policy.escalate_to or ()),
        escalated_at=request.state.escalated_at,
        standing_seconds=request.policy.standing_seconds,
        approvals=request.state.approvals,
        display=_display(request),
    )


def _display(request: ApprovalRequestRecord) -> str | None:
    shown = (request.spec.api_spec or {}).get("display")
    return shown if isinstance(shown, str) and shown.strip() else None


def _masked(tool: Tool | None, arguments: Any) -> Any:
    """Arguments as people may see them (sensitive ones masked)."""
    if arguments is None:
        return None
    return tool.masked(dict(arguments)) if tool else dict(arguments)


def agent_infos(agents: AgentRegistry, policies: Policies | None = None) -> list[AgentInfo]:
    return [
        AgentInfo(
            agent_id=a.id,
            description=a.description,
            tools=tuple((t.name, t.kind, t.description.split("\n")[0]) for t in a.tools.values()),
            approvals=_approvals(a, policies) if policies else None,
        )
        for a in agents
    ]


def _approvals(agent: Agent, policies: Policies) -> dict[str, tuple[WhoApproves, ...]]:
    """Who must approve each tool that may need approval, from the effective policy."""
    out: dict[str, tuple[WhoApproves, ...]] = {}
    for tool in agent.tools.values():
        when = needs_approval(policies, agent, tool)
        if when in ("never", "answer"):
            continue
        own = policies.tool_settings(agent, tool)
        base = without_rules(policies, agent, tool)
        rows = [WhoApproves(base.approvers, base.min_approvals, when=when)]
        for index, rule in enumerate(own.rules):
            p = apply_rule(base, index, rule)
            rows.append(WhoApproves(p.approvers, p.min_approvals, rule=p.rule))
        out[tool.name] = tuple(rows)
    return out


def slack_text(text: str) -> str:
    """The service's text with its people, groups and channels as Slack mentions and links."""

    def markup(kind: str, id_: str) -> str:
        if kind == "channel":
            return f"<#{id_}>"
        return f"<!subteam^{id_}>" if kind == "group" else f"<@{id_}>"

    return render_tokens(text, markup)

"""Store records -> the plain data the Block Kit builders take."""

from __future__ import annotations

from typing import TypeVar, get_args

from bot.agent.vocabulary import (
    ALL_APPROVAL_DECISIONS,
    RequestKind,
    RequestStatus,
    RunStatus,
)
from bot.service.registry import AgentRegistry
from bot.slack.blocks.data import AgentInfo, CardInfo, RunInfo
from store import ApprovalRequestRecord, RunRecord

_Word = TypeVar("_Word", bound=str)

_REQUEST_KINDS: tuple[RequestKind, ...] = get_args(RequestKind)
_REQUEST_STATUSES: tuple[RequestStatus, ...] = get_args(RequestStatus)
_RUN_STATUSES: tuple[RunStatus, ...] = get_args(RunStatus)


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
    )


def card_info(request: ApprovalRequestRecord, run: RunRecord, agents: AgentRegistry) -> CardInfo:
    tool = agents.tool_of(run.agent_id, request)
    return CardInfo(
        request_id=request.id,
        run_id=request.run_id,
        agent_id=run.agent_id,
        tool_name=request.tool_name,
        kind=one_of(request.kind, _REQUEST_KINDS),
        arguments=dict(request.arguments or {}),
        status=one_of(request.status, _REQUEST_STATUSES),
        tool_description=tool.description if tool else "",
        requester=request.requester or run.requester,
        expires_at=request.expires_at,
        allowed_decisions=tuple(tool.allowed_decisions) if tool else ALL_APPROVAL_DECISIONS,
        confirm=bool(tool and tool.confirm),
        interrupted=bool(request.interrupted),
        approvers=tuple(a for a in request.approvers if a != "*"),
        decided_by=request.decided_by,
        decided_at=request.decided_at,
        reason=request.reason,
        edited_arguments=request.edited_arguments,
        output=request.output,
        returns_object=bool(tool and tool.returns_object),
        parameters=tool.parameters if tool else None,
        created_at=request.created_at,
    )


def agent_infos(agents: AgentRegistry) -> list[AgentInfo]:
    return [
        AgentInfo(
            agent_id=a.id,
            description=a.description,
            tools=tuple((t.name, t.kind, t.description.split("\n")[0]) for t in a.tools.values()),
        )
        for a in agents
    ]

"""One gated call of the proxy: ask a running sayso (POST /v1/requests), wait for the decision
(long-poll), and forward the call (or the edited call) once, or answer why not.

Exactly once: the request's idempotency key is the journal's key of the call (bot/proxy/
journal.py), so a proxy restarted while a call waits gets the same request back and never a
second card; the journal says whether the call was already forwarded, so it never is twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

import mcp_types as types

from bot.api.models import RequestState
from bot.client import AsyncSaysoClient, SaysoAPIError
from bot.proxy.journal import Journal
from bot.proxy.policy import Verdict
from bot.receipts import ReceiptRefused, verify_receipt

log = logging.getLogger("sayso.proxy")

RECEIPT_META = "sayso/receipt"
"""The `_meta` key of a forwarded call's result that carries sayso's signed receipt."""
RETRY_SECONDS = (1.0, 2.0, 5.0, 10.0)

Forward = Callable[[str, dict[str, Any]], Awaitable[types.CallToolResult]]


def error_result(text: str, meta: dict[str, Any] | None = None) -> types.CallToolResult:
    """What the agent reads when its call did not run: isError, and why."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], is_error=True, _meta=meta
    )


@dataclass
class CallInfo:
    """What the card shows of one call."""

    tool: types.Tool
    arguments: dict[str, Any]
    verdict: Verdict


class Approvals:
    """Asks sayso about gated calls and forwards the approved ones, once."""

    def __init__(
        self,
        client: AsyncSaysoClient,
        journal: Journal,
        *,
        name: str,
        session: str,
        channel: str | None = None,
        public_key: str | Literal["unknown"] | None = "unknown",
    ) -> None:
        self.client = client
        self.journal = journal
        self.name = name
        self.session = session
        self.channel = channel
        self.public_key = public_key
        """The deployment's receipt key (None: receipts are off; "unknown": not asked yet)."""

    async def receipt_key(self) -> str | None:
        if self.public_key == "unknown":
            try:
                self.public_key = await self.client.public_key()
            except SaysoAPIError:  # 404: the deployment signs no receipts
                self.public_key = None
        return self.public_key

    async def decide(self, call: CallInfo, forward: Forward) -> types.CallToolResult:
        tool = call.tool.name
        entry = self.journal.claim(self.name, self.session, tool, call.arguments)
        try:
            result = await self._decide(call, entry.key, entry.state, entry.result, forward)
        except SaysoAPIError as exc:  # sayso refused the request: the agent reads why
            result = error_result(
                f"{tool} was not run: sayso refused its approval request ({exc.code}: "
                f"{exc.message})."
            )
        except BaseException:
            self.journal.release(entry.key)  # cancelled: a retry of the call takes it over
            raise
        self.journal.delivered(entry.key)
        return result

    async def _decide(
        self,
        call: CallInfo,
        key: str,
        state: str,
        kept: dict[str, Any] | None,
        forward: Forward,
    ) -> types.CallToolResult:
        if state in ("done", "settled") and kept is not None:
            log.info("event=proxy_replayed key=%s state=%s", key, state)
            return types.CallToolResult.model_validate(kept)
        if state == "forwarding":  # the proxy stopped while the call was upstream
            return error_result(
                f"{call.tool.name} was forwarded to the server before the proxy restarted; "
                "whether it finished is unknown, so it is not sent again. Check its effect "
                "before asking again."
            )
        created = await self._retrying(lambda: self._create(call, key))
        self.journal.requested(key, created)
        settled = await self._wait(created)
        return await self._act(call, key, settled, forward)

    async def _act(
        self, call: CallInfo, key: str, state: RequestState, forward: Forward
    ) -> types.CallToolResult:
        tool = call.tool.name
        decision = state.decision
        if state.status != "approved" or decision is None:
            result = error_result(refusal_text(tool, state), _meta(state))
            self.journal.settled(key, result.model_dump(mode="json", by_alias=True))
            return result
        arguments = dict(decision.arguments or {})
        public_key = await self._retrying(self.receipt_key)
        if public_key is not None:
            try:
                verify_receipt(state.receipt, tool, arguments, public_key)
            except ReceiptRefused as exc:
                result = error_result(f"{tool} was not run: sayso's receipt is refused ({exc}).")
                self.journal.settled(key, result.model_dump(mode="json", by_alias=True))
                return result
        self.journal.forwarding(key)
        log.info("event=proxy_forward key=%s tool=%s request_id=%s", key, tool, state.id)
        try:
            result = await forward(tool, arguments)
        except Exception as exc:  # sent, and the server answered an error: never sent again
            result = error_result(f"{tool} was forwarded; the server answered an error: {exc}")
        meta = dict(result.meta or {})
        meta.update(_meta(state))
        result = result.model_copy(update={"meta": meta})
        self.journal.done(key, result.model_dump(mode="json", by_alias=True))
        return result

    async def _create(self, call: CallInfo, key: str) -> str:
        gate = call.verdict.gate
        context: dict[str, Any] = {"server": self.name, "session": self.session}
        if call.verdict.rule:
            context["rule"] = call.verdict.rule
        if gate.require_reason:
            context["reason required"] = "yes"
        fields: dict[str, Any] = {
            "kind": "approval",
            "title": f"{self.name}: {call.tool.name}",
            "tool": call.tool.name,
            "arguments": call.arguments,
            "channel": self.channel,
            "approvers": list(gate.approvers) or None,
            "min_approvals": gate.min_approvals if gate.min_approvals > 1 else None,
            "allow_self_approval": None if gate.allow_self_approval else False,
            "expires_in": gate.expires_in,
            "idempotency_key": key,
            "context": context,
        }
        schema = _schema(call.tool)
        try:
            created = await self.client.create(schema=schema, **fields)
        except SaysoAPIError as exc:
            if schema is None or not exc.message.startswith("schema"):
                raise
            # an input schema sayso cannot edit with: a card without Edit
            created = await self.client.create(**fields)
        return created.id

    async def _wait(self, request_id: str) -> RequestState:
        state = await self._retrying(lambda: self.client.get(request_id))
        while state.status == "pending":
            state = await self._retrying(lambda: self.client.get(request_id, wait=60))
        return state

    async def _retrying(self, step: Callable[[], Awaitable[Any]]) -> Any:
        """`step`, again after a pause while sayso cannot be reached (a restart, a deploy);
        API refusals are not retried."""
        attempt = 0
        while True:
            try:
                return await step()
            except SaysoAPIError:
                raise
            except Exception as exc:
                pause = RETRY_SECONDS[min(attempt, len(RETRY_SECONDS) - 1)]
                log.warning("event=proxy_sayso_unreachable error=%s retry_in=%s", exc, pause)
                attempt += 1
                await asyncio.sleep(pause)


def _schema(tool: types.Tool) -> dict[str, Any] | None:
    schema = dict(tool.input_schema or {})
    return schema if schema.get("type") == "object" else None


def _meta(state: RequestState) -> dict[str, Any]:
    return {RECEIPT_META: state.receipt} if state.receipt else {}


def refusal_text(tool: str, state: RequestState) -> str:
    """Why a call did not run, for the agent to read."""
    decision = state.decision
    if state.status == "rejected":
        who = decision.decided_by if decision and decision.decided_by else "a person"
        reason = decision.reason if decision and decision.reason else "no reason given"
        return f"{tool} was rejected in sayso by {who}: {reason}"
    if state.status == "expired":
        return f"{tool} was not approved in time: the request expired in sayso."
    if state.status == "cancelled":
        return f"{tool} was not run: its request was cancelled in sayso."
    return f"{tool} was not run: the request ended {state.status}."

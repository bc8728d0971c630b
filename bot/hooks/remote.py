"""The gated path of `sayso hook claude-code`: ask a running sayso through /v1 and wait.

Imported only for calls the policy gates (the others answer without it). The card shows the
command, or the diff of an Edit / Write, the working directory and the session; Edit comes
from a JSON Schema of the tool's input. The request's idempotency key is the session and
Claude Code's `tool_use_id`, so a hook run again for the same call waits on the same card.
"""

from __future__ import annotations

import asyncio
import difflib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from bot.proxy.policy import ServerPolicy, Verdict

Decision = Literal["allow", "deny", "ask", "timeout"]
STOPPED_WAITING = "Claude Code stopped waiting (no decision in time)."
DISPLAY_LIMIT = 2800
"""Characters of the command or diff on the card (a section holds 3000)."""
SCHEMAS: dict[str, dict[str, Any]] = {
    "Bash": {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "the shell command"},
            "description": {"type": "string"},
            "timeout": {"type": "integer"},
            "run_in_background": {"type": "boolean"},
        },
        "required": ["command"],
    },
    "Edit": {
        "type": "object",
        "properties": {
            "file_path": {"type": "string"},
            "old_string": {"type": "string"},
            "new_string": {"type": "string"},
            "replace_all": {"type": "boolean"},
        },
        "required": ["file_path", "old_string", "new_string"],
    },
    "Write": {
        "type": "object",
        "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["file_path", "content"],
    },
    "WebFetch": {
        "type": "object",
        "properties": {"url": {"type": "string"}, "prompt": {"type": "string"}},
        "required": ["url"],
    },
}
_JSON_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number"}


@dataclass(frozen=True)
class HookVerdict:
    decision: Decision
    reason: str
    updated_input: dict[str, Any] | None = None


def schema_for(tool: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """The schema Edit is built from: Claude Code's own tools', else one made of the input's
    plain values (None, no Edit, when a value is a list or an object)."""
    known = SCHEMAS.get(tool)
    if known is not None and set(arguments) <= set(known["properties"]):
        return known
    properties: dict[str, Any] = {}
    for key, value in arguments.items():
        kind = _JSON_TYPES.get(type(value))
        if kind is None:
            return None
        properties[key] = {"type": kind}
    return {"type": "object", "properties": properties, "required": sorted(arguments)}


def _fence(text: str) -> str:
    """`text` in a code block, cut to the card's limit with a visible note."""
    body = text.replace("```", "ˋˋˋ")
    if len(body) > DISPLAY_LIMIT:
        body = body[: DISPLAY_LIMIT - 40] + "\n… (cut: see the arguments)"
    return f"```\n{body}\n```"


def _diff(old: str, new: str, path: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(), new.splitlines(), f"a/{path}", f"b/{path}", lineterm="", n=2
    )
    return "\n".join(lines) or "(no change)"


def display_for(tool: str, arguments: dict[str, Any], cwd: str | None) -> str | None:
    """What the card shows: the command, or the diff (old -> new) of an Edit or Write."""
    path = str(arguments.get("file_path") or "")
    if tool == "Bash" and isinstance(arguments.get("command"), str):
        return _fence("$ " + arguments["command"])
    if tool == "Edit" and path:
        old, new = str(arguments.get("old_string", "")), str(arguments.get("new_string", ""))
        return _fence(_diff(old, new, path))
    if tool == "Write" and path:
        target = Path(path) if Path(path).is_absolute() else Path(cwd or ".") / path
        try:
            old = target.read_text() if target.is_file() else ""
        except (OSError, UnicodeDecodeError):
            old = ""
        return _fence(_diff(old, str(arguments.get("content", "")), path))
    return None


def ask_sayso(
    payload: dict[str, Any],
    arguments: dict[str, Any],
    verdict: Verdict,
    section: ServerPolicy,
    *,
    timeout: float,
) -> HookVerdict:
    try:
        return asyncio.run(_ask(payload, arguments, verdict, section, timeout))
    except Exception as exc:
        return HookVerdict("ask", f"sayso could not be asked ({type(exc).__name__}: {exc})")


def _settings() -> tuple[str, str]:
    from bot.config import load_settings

    settings = load_settings()
    url, key = settings.sayso_url, settings.secret("sayso_key")
    if not url or not key:
        raise RuntimeError("SAYSO_URL and SAYSO_KEY are not set for the hook")
    return url, key


async def _ask(
    payload: dict[str, Any],
    arguments: dict[str, Any],
    verdict: Verdict,
    section: ServerPolicy,
    timeout: float,  # noqa: ASYNC109 - the hook's whole wait, cancelling the request after
) -> HookVerdict:
    from bot.client import AsyncSaysoClient, SaysoAPIError

    url, key = _settings()
    client = AsyncSaysoClient(url, key)
    tool = str(payload.get("tool_name") or "")
    session = str(payload.get("session_id") or "")
    cwd = payload.get("cwd")
    deadline = time.monotonic() + timeout
    try:
        created = await client.create(**_request(payload, tool, arguments, verdict, section))
        state = await client.get(created.id)
        while state.status == "pending":
            left = deadline - time.monotonic()
            if left <= 0:
                await client.cancel(created.id, STOPPED_WAITING)
                return HookVerdict("timeout", f"No decision in sayso within {int(timeout)} s.")
            state = await client.get(created.id, wait=min(60.0, max(1.0, left)))
    except SaysoAPIError as exc:
        return HookVerdict("ask", f"sayso refused the request ({exc.code}: {exc.message})")
    except Exception as exc:
        return HookVerdict("ask", f"sayso at {url} is unreachable ({type(exc).__name__}: {exc})")
    decision = state.decision
    who = decision.decided_by if decision and decision.decided_by else "someone"
    if state.status == "rejected":
        reason = decision.reason if decision and decision.reason else "no reason given"
        return HookVerdict("deny", f"Rejected in Slack by {who}: {reason}")
    if state.status != "approved" or decision is None:
        return HookVerdict(
            "timeout", f"The sayso request {state.status} (session {session}, {cwd})."
        )
    final = dict(decision.arguments or arguments)
    refused = await _receipt_refused(client, state, tool, final)
    if refused:
        return HookVerdict("ask", f"sayso's receipt is refused ({refused}): asking in the terminal")
    receipt = f" (receipt {state.id})" if state.receipt else ""
    if decision.type == "edit" or final != arguments:
        return HookVerdict("allow", f"Approved with edits in Slack by {who}{receipt}", final)
    return HookVerdict("allow", f"Approved in Slack by {who}{receipt}")


def _request(
    payload: dict[str, Any],
    tool: str,
    arguments: dict[str, Any],
    verdict: Verdict,
    section: ServerPolicy,
) -> dict[str, Any]:
    gate = verdict.gate
    session = str(payload.get("session_id") or "")
    cwd = str(payload.get("cwd") or "")
    context: dict[str, Any] = {"cwd": cwd, "session": session}
    if verdict.rule:
        context["rule"] = verdict.rule
    use_id = str(payload.get("tool_use_id") or "")
    return {
        "kind": "approval",
        "title": f"Claude Code: {tool}",
        "tool": tool,
        "arguments": arguments,
        "schema": schema_for(tool, arguments),
        "channel": section.channel,
        "approvers": list(gate.approvers) or None,
        "min_approvals": gate.min_approvals if gate.min_approvals > 1 else None,
        "allow_self_approval": None if gate.allow_self_approval else False,
        "expires_in": gate.expires_in,
        "idempotency_key": f"claude-code:{session}:{use_id}"[:200] if use_id else None,
        "context": context,
        "display": display_for(tool, arguments, cwd),
    }


async def _receipt_refused(
    client: Any, state: Any, tool: str, arguments: dict[str, Any]
) -> str | None:
    """Why the receipt does not let this call run (None: it does, or receipts are off)."""
    from bot.client import SaysoAPIError
    from bot.receipts import ReceiptRefused, verify_receipt

    try:
        public_key = await client.public_key()
    except SaysoAPIError:
        return None  # the deployment signs no receipts
    try:
        verify_receipt(state.receipt, tool, arguments, public_key)
    except ReceiptRefused as exc:
        return exc.reason
    return None

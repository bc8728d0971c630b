"""ask_human through MCP elicitation: the question as a form in the caller's own client.

Only where it can work: the client declared form elicitation and the connection can carry a
server-to-client request mid-call. That is stdio (`sayso mcp`); /mcp over HTTP is stateless
(any replica answers any call), and the SDK gives a stateless connection no back-channel, so
there the question always goes to Slack.

The outcome is the answer, or None: declined, cancelled, not answerable by form (no
capability, no back-channel, an answer not matching the form, the client's error). None
means the question goes to Slack as without elicitation.
"""

from __future__ import annotations

import logging

from mcp import MCPError
from mcp.server.mcpserver import AcceptedElicitation, Context
from pydantic import BaseModel, Field

log = logging.getLogger("sayso.mcp")


ANSWER_MAX = 3000
"""The longest answer, as in the answer modal of a card."""

CLIENT_NAME_MAX = 100


class HumanAnswer(BaseModel):
    """The form: one required `answer` string."""

    answer: str = Field(min_length=1, max_length=ANSWER_MAX, description="Your answer")


def can_elicit(ctx: Context) -> bool:
    """The client takes form elicitation and this connection can ask it mid-call."""
    capabilities = ctx.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is None:
        return False
    # a bare `elicitation: {}` (before modes existed) means form; url-only does not
    takes_form = elicitation.form is not None or elicitation.url is None
    return takes_form and ctx.session.can_send_request


def client_name(ctx: Context) -> str:
    """The MCP client's own name (its initialize clientInfo), for the audit."""
    params = ctx.session.client_params
    name = params.client_info.name.strip() if params is not None else ""
    return name[:CLIENT_NAME_MAX] or "the MCP client"


async def answer_in_client(ctx: Context, question: str) -> str | None:
    """The answer the client's user gave in the form, or None (then ask in Slack)."""
    if not can_elicit(ctx):
        return None
    try:
        result = await ctx.elicit(question, HumanAnswer)
    except (MCPError, ValueError) as exc:  # the client's error, or an answer off the form
        log.info("event=elicitation_failed error=%s", type(exc).__name__)
        return None
    if not isinstance(result, AcceptedElicitation):
        log.info("event=elicitation_%s", result.action)
        return None
    return result.data.answer.strip() or None

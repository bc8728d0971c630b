"""`Annotated[str, Sensitive()]`: which parameters are sensitive and how they are masked."""

from __future__ import annotations

from typing import Annotated

import bot
from bot.agent import Sensitive, ToolContext, tool
from bot.agent.sensitive import mask


@tool(require_approval=True)
def rotate(service: str, token: Annotated[str, Sensitive()], ctx: ToolContext | None = None) -> str:
    """Rotate a service's token."""
    return f"{service}:{token}"


def test_sensitive_is_exported_from_bot_and_bot_agent() -> None:
    assert bot.Sensitive is Sensitive


def test_the_tool_knows_its_sensitive_parameters_and_the_model_sees_a_plain_string() -> None:
    assert rotate.sensitive == frozenset({"token"})
    assert rotate.parameters["properties"]["token"] == {"type": "string"}


def test_mask_shows_at_most_the_last_four_characters() -> None:
    assert mask("hunter2-deploy-token") == "••••oken"
    assert mask("abcdefgh") == "••••gh"
    assert mask("short") == "••••"
    assert mask("") == "••••"
    assert mask(123456789012) == "••••012"  # a quarter of the value at most
    assert mask(1234567890123456) == "••••3456"


def test_masked_arguments_and_redacted_text() -> None:
    args = {"service": "api", "token": "hunter2-deploy-token"}
    assert rotate.masked(args) == {"service": "api", "token": "••••oken"}
    assert args["token"] == "hunter2-deploy-token"  # a copy
    assert rotate.redact("bad token hunter2-deploy-token", args) == "bad token ••••oken"


async def test_the_body_receives_the_real_value() -> None:
    ctx = ToolContext(run_id="r", call_id="c", agent_id="a", tool_name="rotate")
    out = await rotate.invoke({"service": "api", "token": "hunter2-deploy-token"}, ctx)
    assert out == "api:hunter2-deploy-token"

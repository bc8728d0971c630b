"""The OpenAI Agents SDK adapter (bot.adapters.openai_agents) against the real bot and the fake
model server: a `needs_approval` tool runs once approved, a rejection's reason reaches the model,
and a driver killed after its card was posted is continued by a fresh process (from the
request's stored RunState, or from RunState JSON it saved): one card, the tool runs once."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from agents import Runner, set_tracing_disabled

from bot.adapters.openai_agents import (
    SAVED,
    idempotency_key,
    resolve,
    run_with_approvals,
    tool_schema,
)
from bot.client import AsyncSaysoClient
from tests.e2e.api_flows import make_key
from tests.e2e.harness import Harness, has_button
from tests.e2e.openai_agents_driver import CHANNEL, scaling_agent, scaling_model
from tests.helpers.views import filled_views
from tests.helpers.waiting import eventually

ROOT = Path(__file__).parents[2]


@pytest.fixture(autouse=True)
def no_tracing() -> None:
    set_tracing_disabled(True)  # traces would go to OpenAI's servers


def cards(h: Harness) -> list[dict[str, Any]]:
    return [m for m in h.sandbox.messages(CHANNEL) if has_button(m, "reject")]


async def one_card(h: Harness) -> dict[str, Any]:
    return (await h.sandbox.wait_for(lambda sb: cards(h) or None, timeout=30))[0]


async def reject(h: Harness, card: dict[str, Any], reason: str) -> None:
    await h.sandbox.click("U_APPROVER", CHANNEL, card["ts"], "reject")
    view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"reason": reason})


def asked_in_slack(h: Harness) -> list[dict[str, Any]]:
    """Every message in the channel that asks about the tool, decided or not."""
    return [m for m in h.sandbox.messages(CHANNEL) if "scale" in json.dumps(m.get("blocks"))]


def ran(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def test_approved_the_tool_runs_once(harness: Harness, tmp_path: Path) -> None:
    h = harness
    h.model.responder = scaling_model
    token, _ = await make_key(h)
    client = AsyncSaysoClient(h.url, token)
    log = tmp_path / "ran.txt"
    running = asyncio.create_task(
        run_with_approvals(
            scaling_agent(h.model.base_url, log), "scale api", client, channel=CHANNEL
        )
    )
    card = await one_card(h)
    assert not has_button(card, "edit")  # the SDK has no edited arguments
    assert "scale" in json.dumps(card["blocks"])
    await h.sandbox.click("U_APPROVER", CHANNEL, card["ts"], "approve")
    result = await asyncio.wait_for(running, 30)
    assert result.final_output == "tool said: api x2"
    assert result.interruptions == []
    assert ran(log) == ["api 2"]


async def test_rejected_the_model_sees_the_reason(harness: Harness, tmp_path: Path) -> None:
    h = harness
    h.model.responder = scaling_model
    token, _ = await make_key(h)
    client = AsyncSaysoClient(h.url, token)
    log = tmp_path / "ran.txt"
    running = asyncio.create_task(
        run_with_approvals(
            scaling_agent(h.model.base_url, log), "scale api", client, channel=CHANNEL
        )
    )
    await reject(h, await one_card(h), "freeze until Monday")
    result = await asyncio.wait_for(running, 30)
    assert result.final_output == "tool said: freeze until Monday"
    assert ran(log) == []


async def test_each_call_is_kept_with_the_run_state(harness: Harness, tmp_path: Path) -> None:
    """The request carries the call's arguments and its tool's schema, is keyed by the call
    id, and keeps the RunState JSON (GET returns it) for a fresh process to continue."""
    h = harness
    h.model.responder = scaling_model
    token, _ = await make_key(h)
    client = AsyncSaysoClient(h.url, token)
    agent = scaling_agent(h.model.base_url, tmp_path / "ran.txt")
    first = await Runner.run(agent, "scale api")
    [item] = first.interruptions
    assert idempotency_key(item) == "openai-agents:call_1"
    assert idempotency_key(item, "conv-a") != idempotency_key(item, "conv-b")
    assert (tool_schema(item) or {})["properties"]["replicas"]["type"] == "integer"

    asked: list[list[str]] = []
    resolving = asyncio.create_task(
        resolve(first, client, channel=CHANNEL, conversation="conv-a", on_asked=asked.append)
    )
    card = await one_card(h)
    [[request_id]] = await eventually(lambda: asked, what="the request ids")
    state = await client.get(request_id)
    kept = (state.context or {})[SAVED]
    assert kept["conversation"] == "conv-a"
    assert kept["run_state"] == first.to_state().to_json()
    await h.sandbox.click("U_APPROVER", CHANNEL, card["ts"], "approve")
    decided = await asyncio.wait_for(resolving, 30)
    assert decided.get_interruptions()  # approved, not yet continued
    done = await Runner.run(agent, decided)
    assert done.final_output == "tool said: api x2"


# -- another process ----------------------------------------------------------------------


async def driver(h: Harness, token: str, log: Path, *args: str, **env: str) -> Any:
    """The driver of tests/e2e/openai_agents_driver.py in a fresh Python process."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.e2e.openai_agents_driver",
        *args,
        cwd=ROOT,
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "MODEL_URL": h.model.base_url,
            "SAYSO_URL": h.url,
            "SAYSO_KEY": token,
            "RAN_FILE": str(log),
            "OPENAI_AGENTS_DISABLE_TRACING": "1",
            **env,
        },
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def asked_ids(proc: Any) -> list[str]:
    """The request ids the driver prints once its requests exist."""
    line = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
    if not line.startswith("asked: "):
        err = (await proc.stderr.read()).decode()
        raise AssertionError(f"the driver said {line!r}; stderr:\n{err[-3000:]}")
    ids: list[str] = json.loads(line.removeprefix("asked: "))
    return ids


async def finished(proc: Any) -> str:
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()[-3000:]
    return str(out.decode())


@pytest.mark.slow
async def test_a_killed_driver_is_continued_by_a_fresh_process(
    harness: Harness, tmp_path: Path
) -> None:
    h = harness
    h.model.responder = scaling_model
    token, _ = await make_key(h)
    log = tmp_path / "ran.txt"

    first = await driver(h, token, log, "start", CONVERSATION="deploy-42")
    ids = await asked_ids(first)
    card = await one_card(h)
    first.kill()  # SIGKILL: nothing runs after the card was posted
    await first.wait()

    # a fresh process has nothing but a request id: the RunState and the conversation id
    # (which scopes the keys) come from sayso
    second = await driver(h, token, log, "resume", ids[0])
    assert await asked_ids(second) == ids  # the same calls found the same requests
    assert [m["ts"] for m in cards(h)] == [card["ts"]]  # no second card
    await h.sandbox.click("U_APPROVER", CHANNEL, card["ts"], "approve")
    assert "output: tool said: api x2" in await finished(second)
    assert ran(log) == ["api 2"]
    assert len(asked_in_slack(h)) == 1


@pytest.mark.slow
async def test_a_fresh_process_continues_from_saved_run_state_json(
    harness: Harness, tmp_path: Path
) -> None:
    """A driver may keep the RunState JSON itself (`state.to_string()`); the rejection decided
    while no driver ran reaches the model once the fresh process continues."""
    h = harness
    h.model.responder = scaling_model
    token, _ = await make_key(h)
    log = tmp_path / "ran.txt"
    saved = tmp_path / "state.json"

    first = await driver(h, token, log, "start", STATE_FILE=str(saved))
    ids = await asked_ids(first)
    card = await one_card(h)
    first.kill()
    await first.wait()
    await reject(h, card, "not during the freeze")

    second = await driver(h, token, log, "resume", str(saved))
    assert await asked_ids(second) == ids
    assert "output: tool said: not during the freeze" in await finished(second)
    assert ran(log) == []
    assert len(asked_in_slack(h)) == 1


# -- the docs example ---------------------------------------------------------------------


def docs_example() -> str:
    text = (ROOT / "docs" / "integrations.md").read_text()
    section = text.split("## OpenAI Agents SDK", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


async def test_the_docs_example_runs(
    harness: Harness, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    h = harness
    h.model.responder = scaling_model
    token, _ = await make_key(h)
    code = docs_example().replace("C0123DEPLOY", CHANNEL)
    env = {
        "OPENAI_BASE_URL": h.model.base_url,
        "OPENAI_API_KEY": "test",
        "MODEL": "fake-model",
        "SAYSO_URL": h.url,
        "SAYSO_KEY": token,
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    running = asyncio.create_task(asyncio.to_thread(exec, code, {"__name__": "example"}))
    card = await one_card(h)
    await h.sandbox.click("U_APPROVER", CHANNEL, card["ts"], "approve")
    await asyncio.wait_for(running, 30)
    assert "tool said: api now runs 2 replicas" in capsys.readouterr().out

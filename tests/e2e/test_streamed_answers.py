"""Answers stream into the thread (chat.startStream / appendStream / stopStream) from OpenAI
and Anthropic alike; a tool call after some text pauses the same way as without streaming;
the final message is the whole answer, formatted; refused streaming falls back to one message."""

from __future__ import annotations

from typing import Any

import pytest

from bot.agent import Agent
from bot.agent.models import AnthropicModel, ModelSettings
from bot.service.runs.present import RunPresenter
from tests.e2e.agents import make_agents
from tests.e2e.flows import DEPLOY
from tests.e2e.harness import Harness, message_text

INTRO = "Let me deploy **v2** to staging."
ANSWER = (
    "## Deployed\n\nv2 is live on [staging](https://example.com). <!channel>\n\n"
    "| service | state |\n|---|---|\n| api | up |\n| db | up |\n"
)


def _claude(h: Harness) -> Agent:
    ops = make_agents(h.model.base_url, h.effects)[0]
    model = AnthropicModel("fake", base_url=h.model.base_url.removesuffix("/v1"), api_key="k")
    return Agent(
        id="claude",
        model=model,
        instructions="You run operations.",
        tools=list(ops.tools.values()),
        model_settings=ModelSettings(timeout=15, max_retries=1, backoff_base=0.01),
    )


def _calls(h: Harness, method: str) -> list[Any]:
    return [c for c in h.sandbox.calls if c.method == method]


def _answers(h: Harness) -> list[dict[str, Any]]:
    return [m for m in h.thread()[1:] if "Deployed" in message_text(m)]


@pytest.mark.parametrize("agent", ["ops", "claude"])
async def test_streamed_text_then_a_tool_call_pauses_and_the_answer_is_shown_once(
    harness: Harness, agent: str
) -> None:
    h = harness
    if agent == "claude":
        h.extra_agents = [_claude(h)]
        await h.stop_bot()
        await h.start_bot()
    h.model.stream_delay = 0.2  # written slowly: streamed (a quick one is one message)
    h.model.reply(text=INTRO, tool_calls=[("deploy", DEPLOY)])
    h.model.reply(text=ANSWER)
    await h.sandbox.slash_command("U_REQUESTER", f"{agent} deploy v2 to staging")
    await h.sandbox.wait_for(lambda sb: len(h.cards()) == 1, timeout=10)
    card = h.cards()[0]
    assert "staging" in message_text(card) and h.effects.deploys == []  # the same pause
    replies = h.thread()[1:]
    streamed = [m for m in replies if m.get("markdown_text")]
    assert [m["markdown_text"] for m in streamed] == [INTRO]  # the text so far, then the card
    assert replies.index(streamed[0]) < replies.index(
        next(m for m in replies if m is card or m["ts"] == card["ts"])
    )
    assert _calls(h, "chat.startStream") and _calls(h, "chat.stopStream")

    h.model.stream_delay = 0.06  # the answer too streams for more than a second
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    await h.sandbox.wait_for(lambda sb: _answers(h), timeout=10)
    await h.idle()
    answers = _answers(h)
    assert len(answers) == 1  # streamed, then replaced by the formatted answer: not doubled
    blocks = answers[0]["blocks"]
    markdown = "".join(b["text"] for b in blocks if b["type"] == "markdown")
    assert markdown == ANSWER.split("| service")[0].strip().replace("<!channel>", "@\u2060channel")
    assert [b for b in blocks if b["type"] == "table"]
    streamed_text = "".join(
        (c.args.get("markdown_text") or "")
        + "".join(ch.get("text", "") for ch in c.args.get("chunks") or [])
        for c in h.sandbox.calls
        if c.method in ("chat.startStream", "chat.appendStream", "chat.stopStream")
    )
    assert streamed_text == INTRO + ANSWER.replace("<!channel>", "@\u2060channel")
    assert len(h.effects.deploys) == 1
    assert all(c.response.get("ok") for c in h.sandbox.calls)


async def test_an_answer_written_at_once_is_one_message_in_one_call(harness: Harness) -> None:
    """The outbox folds a quick answer into one post (no stream start and stop): fewer calls."""
    h = harness
    h.model.reply(text=ANSWER)
    await h.sandbox.slash_command("U_REQUESTER", "ops how is staging")
    await h.sandbox.wait_for(lambda sb: _answers(h), timeout=10)
    await h.idle()
    assert not _calls(h, "chat.startStream")
    assert [c.args["ts"] for c in _calls(h, "chat.update")] == [h.root()["ts"]]  # its status
    answers = _answers(h)
    assert len(answers) == 1 and [b for b in answers[0]["blocks"] if b["type"] == "table"]
    assert len(h.thread()) == 2  # the root and the answer


async def test_refused_streaming_falls_back_to_one_message(harness: Harness) -> None:
    h = harness
    h.sandbox.refuse_streaming = True
    h.model.stream_delay = 0.1
    h.model.reply(text=ANSWER)
    await h.sandbox.slash_command("U_REQUESTER", "ops how is staging")
    await h.sandbox.wait_for(lambda sb: _answers(h), timeout=10)
    await h.idle()
    assert _calls(h, "chat.startStream")  # tried, refused
    answers = _answers(h)
    assert len(answers) == 1 and not answers[0].get("markdown_text")
    assert "v2 is live" in message_text(answers[0])
    assert len(h.thread()) == 2  # the root and the answer


async def test_an_answer_cut_off_at_the_output_limit_says_so(harness: Harness) -> None:
    h = harness
    h.model.reply(text="The deploy went fine and then", truncated=True)
    await h.sandbox.slash_command("U_REQUESTER", "ops how did it go")
    await h.sandbox.wait_for(lambda sb: "cut off" in h.thread_text(), timeout=10)
    assert "The deploy went fine and then" in h.thread_text()


async def test_a_streamed_answer_whose_process_never_showed_it_is_finished_once(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process that completed a streamed run dies before showing its end (fault
    injection: it never shows it): the sweep stops the stream left open with the formatted
    answer, in the same message (no second post)."""
    shown_once = RunPresenter.show_end

    async def died_first(self: RunPresenter, run: Any, result: Any, *, again: bool = False) -> None:
        if again:
            await shown_once(self, run, result, again=again)

    monkeypatch.setattr(RunPresenter, "show_end", died_first)
    h = harness
    h.model.stream_delay = 0.06  # streams for more than a second: the stream is open
    h.model.reply(text=ANSWER)
    await h.sandbox.slash_command("U_REQUESTER", "ops how is staging")
    await h.sandbox.wait_for(lambda sb: _calls(h, "chat.startStream"), timeout=10)
    answers = await h.sandbox.wait_for(
        lambda sb: [
            m for m in _answers(h) if [b for b in m.get("blocks", []) if b["type"] == "table"]
        ],
        timeout=40,
    )
    await h.idle()
    assert len(_answers(h)) == 1 and len(h.thread()) == 2  # the stream's message, formatted
    assert len(_calls(h, "chat.startStream")) == 1 and len(_calls(h, "chat.stopStream")) == 1
    assert not [c for c in _calls(h, "chat.postMessage") if c.args.get("thread_ts")]
    assert "v2 is live" in message_text(answers[0])
    assert h.bot is not None
    runs = await h.bot.store.runs.list()
    assert [(r.status, r.shown_version == r.version) for r in runs] == [("completed", True)]

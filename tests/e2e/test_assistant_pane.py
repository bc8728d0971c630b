"""The AI side pane: a thread started, the agents as suggested prompts, a message starts a
run there with a status, its card is approved in the pane, and the status clears at the end."""

from __future__ import annotations

from tests.e2e.flows import DEPLOY
from tests.e2e.harness import Harness, has_button, message_text

DM = "D_REQUESTER"


async def test_the_assistant_pane_runs_an_agent_with_its_card_in_the_thread(
    harness: Harness,
) -> None:
    h = harness
    opened = await h.sandbox.open_assistant("U_REQUESTER")
    assert opened.status == 200
    thread_ts = str(opened.ts)
    pane = await h.sandbox.wait_for(
        lambda sb: sb.assistant_thread("U_REQUESTER", thread_ts)["prompts"] or None
    )
    assert [p["message"] for p in pane] == ["ops what can you do for me?"]
    assert "ops" in pane[0]["title"]

    h.model.stream_delay = 0.05  # the status shows while the model works
    h.model.reply(tool_calls=[("deploy", DEPLOY)])
    h.model.reply(text="Deployed **v2** to staging.")
    await h.sandbox.post_message("U_REQUESTER", "ops deploy v2 to staging", DM, thread_ts)
    statuses = [
        c.args.get("status")
        for c in await h.sandbox.wait_for(lambda sb: sb.calls_to("assistant.threads.setStatus"))
    ]
    assert statuses[0]

    def cards() -> list[dict]:
        return [m for m in h.sandbox.thread(DM, thread_ts) if has_button(m, "approve")]

    await h.sandbox.wait_for(lambda sb: cards(), timeout=10)
    card = cards()[0]
    assert "staging" in message_text(card)
    d = await h.sandbox.click("U_REQUESTER", DM, card["ts"], "approve")
    assert d.status == 200
    await h.sandbox.wait_for(
        lambda sb: any(
            "Deployed **v2**" in message_text(m) and "markdown_text" not in m
            for m in sb.thread(DM, thread_ts)
        ),
        timeout=10,
    )
    await h.idle()
    assert len(h.effects.deploys) == 1
    assert h.sandbox.assistant_thread("U_REQUESTER", thread_ts)["status"] == ""  # cleared
    assert h.sandbox.messages("C_GENERAL") == []  # nothing in channels: all in the pane
    assert all(c.response.get("ok") for c in h.sandbox.calls), [
        (c.method, c.response) for c in h.sandbox.calls if not c.response.get("ok")
    ]


async def test_a_card_needing_someone_else_goes_to_the_agents_channel_and_is_linked(
    harness: Harness,
) -> None:
    h = harness
    opened = await h.sandbox.open_assistant("U_REQUESTER")
    thread_ts = str(opened.ts)
    h.model.reply(tool_calls=[("restart", {"service": "api"})])  # approvers only, not self
    h.model.reply(text="Restarted the api.")
    await h.sandbox.post_message("U_REQUESTER", "ops restart the api", DM, thread_ts)
    card = (
        await h.sandbox.wait_for(
            lambda sb: [m for m in sb.messages("C_OPS") if has_button(m, "approve")], timeout=10
        )
    )[0]
    ts_digits = str(card["ts"]).replace(".", "")
    link = await h.sandbox.wait_for(  # the line names the channel, then links to the card
        lambda sb: [
            m
            for m in sb.thread(DM, thread_ts)
            if "C_OPS" in message_text(m) and ts_digits in message_text(m)
        ],
        timeout=10,
    )
    assert "<#C_OPS>" in message_text(link[0]) and "restart" in message_text(link[0])
    assert not [m for m in h.sandbox.thread(DM, thread_ts) if has_button(m, "approve")]

    await h.sandbox.click("U_APPROVER", "C_OPS", card["ts"], "approve")
    await h.sandbox.wait_for(
        lambda sb: any("Restarted the api." in message_text(m) for m in sb.thread(DM, thread_ts)),
        timeout=10,
    )
    await h.idle()
    assert h.effects.restarts == ["api"]
    assert not has_button(h.sandbox.message("C_OPS", card["ts"]) or {}, "approve")  # decided

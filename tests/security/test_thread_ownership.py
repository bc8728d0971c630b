"""Finding 5: a key posts only into threads its own requests started; a question posted into
another thread (an agent run's, another key's) never captures the replies meant for it."""

from __future__ import annotations

from tests.e2e.api_flows import create, make_key
from tests.e2e.harness import Harness


async def test_a_key_posts_only_in_its_own_threads(harness: Harness) -> None:
    h = harness
    mine, _ = await make_key(h, "mine")
    theirs, _ = await make_key(h, "theirs")
    started = await create(h, mine, tool="deploy")
    assert started.status_code == 201, started.text
    thread = started.json()["message_ts"]
    ok = await create(h, mine, kind="question", title="Which region?", thread_ts=thread)
    assert ok.status_code == 201, ok.text
    foreign = await create(h, theirs, kind="question", title="Password?", thread_ts=thread)
    assert foreign.status_code == 403, foreign.text
    assert "thread_ts" in foreign.json()["error"]["message"]
    # a thread no API request started (an agent run's, anyone's message)
    msg = await h.sandbox.post_message("U_REQUESTER", "hello team")
    ts = msg.ts
    other = await create(h, mine, kind="question", title="Password?", thread_ts=ts)
    assert other.status_code == 403, other.text

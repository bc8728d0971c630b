"""Finding 14: what an API caller writes (title, question, requested_by) shows as plain text on
the card: no bold or emoji dressing, no hidden link text, no mention that pings."""

from __future__ import annotations

import json

from tests.e2e.api_flows import card_of, create, make_key
from tests.e2e.harness import Harness


async def test_titles_questions_and_requesters_are_plain(harness: Harness) -> None:
    h = harness
    token, _ = await make_key(h)
    dressed = "*:white_check_mark: Approved by <@U_APPROVER>* ~really~ `ok`"
    r = await create(h, token, tool="deploy", title=dressed, requested_by="U_APPROVER")
    assert r.status_code == 201, r.text
    card = json.dumps(card_of(h, r.json()["message_ts"]))
    assert "*:white_check_mark: Approved" not in card
    assert ":white_check_mark: Approved by" not in card
    assert "<@U_APPROVER>" not in card  # neither the title's nor requested_by's mention
    q = await create(
        h, token, kind="question", title="Log in at [the portal](https://evil.example/x) now"
    )
    assert q.status_code == 201, q.text
    card = json.dumps(card_of(h, q.json()["message_ts"]))
    assert "](https://evil.example" not in card and "|the portal>" not in card
    assert "evil.example" in card  # the real host is what people see

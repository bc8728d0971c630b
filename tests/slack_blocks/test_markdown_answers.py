"""Model-written Markdown becomes markdown and table blocks that Slack accepts."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.slack.blocks import limits, messages
from bot.slack.blocks.markdown import WORD_JOINER, markdown_messages, neutralise

from .helpers import run

SETTINGS = settings(
    max_examples=40, database=None, deadline=None, suppress_health_check=list(HealthCheck)
)

CODE = "```python\n" + "".join(f"print({i})  # step {i}\n" for i in range(1500)) + "```"
ANSWER = (
    "# Deploy report\n\n"
    "**Done**: v2 is on [staging](https://example.com/staging).\n\n"
    "| service | state | replicas |\n"
    "|---|:---:|--:|\n"
    "| api | up | 3 |\n"
    "| worker | up | |\n\n"
    "The log follows.\n\n" + CODE + "\n\nThat is all. <!channel> please look.\n"
)


def _markdown_of(posted: list[dict[str, Any]]) -> list[str]:
    return [b["text"] for m in posted for b in m["blocks"] if b["type"] == "markdown"]


def test_a_long_answer_is_valid_for_slack_and_splits_outside_code_fences() -> None:
    posted = messages.final_answer(ANSWER, run(requester="U1"))
    assert len(posted) > 1  # longer than one message
    for m in posted:
        limits.validate_message(m)
        assert len(m["text"]) <= 300
    texts = _markdown_of(posted)
    for text in texts:
        assert text.count("```") % 2 == 0  # every fence opened in a block is closed in it
    body = "\n".join(texts)
    assert "# Deploy report" in body and "**Done**" in body
    assert "[staging](https://example.com/staging)" in body
    for i in (0, 777, 1499):
        assert f"print({i})  # step {i}" in body  # nothing lost
    assert posted[-1]["blocks"][-1]["block_id"] == "answer_footer"


def test_a_table_becomes_a_table_block() -> None:
    posted = messages.final_answer(ANSWER, run())
    tables = [b for m in posted for b in m["blocks"] if b["type"] == "table"]
    assert len(tables) == 1
    rows = [[c["text"] for c in row] for row in tables[0]["rows"]]
    assert rows == [["service", "state", "replicas"], ["api", "up", "3"], ["worker", "up", "-"]]
    assert tables[0]["column_settings"] == [
        {"align": "left"},
        {"align": "center"},
        {"align": "right"},
    ]
    for m in posted:  # a table ends its message: Slack shows it below the text
        kinds = [b["type"] for b in m["blocks"] if b["type"] != "context"]
        assert "table" not in kinds[:-1]


def test_a_table_too_wide_for_slack_is_a_code_block() -> None:
    header = "|" + "|".join(f"c{i}" for i in range(25)) + "|"
    sep = "|" + "|".join("---" for _ in range(25)) + "|"
    row = "|" + "|".join(str(i) for i in range(25)) + "|"
    posted = markdown_messages(f"Wide:\n\n{header}\n{sep}\n{row}\n", "answer")
    assert not [b for m in posted for b in m["blocks"] if b["type"] == "table"]
    body = "\n".join(_markdown_of(posted))
    assert f"```\n{header}\n{sep}\n{row}\n```" in body


def test_model_written_mentions_are_neutralised_except_the_requester() -> None:
    text = "Hi <@U1>, ping <@U2> <!channel> <!here> <!subteam^S9|@oncall> in <#C7|ops> @everyone"
    out = neutralise(text, requester="U1")
    assert "<@U1>" in out
    for raw in ("<@U2>", "<!channel>", "<!here>", "<!subteam", "<#C7"):
        assert raw not in out
    assert f"@{WORD_JOINER}channel" in out and f"@{WORD_JOINER}oncall" in out
    assert f"#{WORD_JOINER}ops" in out and f"@{WORD_JOINER}everyone" in out
    posted = messages.final_answer("Done. <!channel> look!", run(requester="U1"))
    assert "<!channel>" not in str(posted)


def test_the_fallback_text_is_readable() -> None:
    posted = messages.final_answer("## Result\n\n**Deployed** [v2](https://x.io) & done", run())
    assert posted[0]["text"] == "Result Deployed v2 (https://x.io) &amp; done"


def test_a_cut_off_answer_says_so() -> None:
    posted = messages.final_answer("Partial ans", run(), truncated=True)
    footer = posted[-1]["blocks"][-1]["elements"][0]["text"]
    assert "cut off" in footer


def test_an_answer_past_five_messages_is_cut_with_a_note() -> None:
    posted = messages.final_answer("para graph\n\n" * 40_000, run())
    assert len(posted) == 5
    for m in posted:
        limits.validate_message(m)
    assert "(cut:" in str(posted[-1]["blocks"])


@SETTINGS
@given(st.text(alphabet=st.sampled_from("ab |-:`\n<>!@#*"), max_size=30_000))
def test_any_markdown_gives_valid_messages(text: str) -> None:
    for m in messages.final_answer(text, run()):
        limits.validate_message(m)

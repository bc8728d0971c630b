"""A run's answer streamed into its thread, as outbox rows of kind `stream`.

The text of each model response is one stream row (`answer:{run_id}:{pause_seq}.{n}`): the
dispatcher starts it (chat.startStream), appends what is new (chat.appendStream) and stops it
(chat.stopStream). The row is first put once the text has been growing for `FIRST_DELAY`
(a response written faster goes out as one message: one call instead of two or more), then at
most every `FLUSH_EVERY` seconds.
When a tool call or a pause follows a response, its stream is stopped as it is. When the final
answer comes, the presenter puts the open stream's row final with the formatted answer's
blocks: the dispatcher stops the stream and the blocks replace its text (`chat.update`;
stopStream's own blocks would be added below the text, showing it twice).
Where Slack refuses streaming, the dispatcher posts the final row as one message.
"""

from __future__ import annotations

import re
import time
from typing import Any

from bot.agent import RunEvent
from bot.slack.blocks.markdown import markdown_messages, neutralise
from store import RunRecord
from store.outbox import Outbox

FIRST_DELAY = 1.0  # seconds before a stream starts: a quick answer is one message
FLUSH_EVERY = 1.0  # seconds between two puts of a growing stream
_OPEN_TAIL = re.compile(r"(<[^>]*|@\w*)$")  # a mention perhaps still being written


class AnswerStream:
    """Streams one run's text into its thread; knows the stream the final answer closes."""

    def __init__(self, outbox: Outbox, run: RunRecord) -> None:
        self.outbox = outbox
        self.run_id = run.id
        self.channel = str(run.channel_id)
        self.thread_ts = str(run.thread_ts)
        self.team_id = run.team_id
        self.requester = run.requester
        self._base = f"answer:{run.id}:{run.pause_seq}"
        self._n = 0
        self._text = ""  # the current response's text so far (mentions neutralised)
        self._pending = ""  # text held back: a mention may be cut in two
        self._put_len = -1  # length of the text last put (-1: no row yet)
        self._since = 0.0  # when the row was last put, or the text began

    @property
    def key(self) -> str:
        return f"{self._base}.{self._n}"

    @property
    def open(self) -> bool:
        """The current response has text (held, or streaming): the final answer closes it."""
        return bool(self._text) or self._put_len >= 0

    async def text(self, delta: str) -> None:
        self._pending += delta
        tail = _OPEN_TAIL.search(self._pending)
        cut = tail.start() if tail and len(tail.group(0)) < 64 else len(self._pending)
        ready, self._pending = self._pending[:cut], self._pending[cut:]
        if not ready:
            return
        if not self._text:
            self._since = time.monotonic()
        self._text += neutralise(ready, self.requester)
        wait = FIRST_DELAY if self._put_len < 0 else FLUSH_EVERY
        if time.monotonic() - self._since >= wait:
            await self._put()

    async def event(self, event: RunEvent) -> None:
        """A model response ends its text (a started stream gets what is left); anything but
        the run's end after it means the text was not the answer: it is shown as it is."""
        if event.type == "model_response":
            if self._pending:
                self._text += neutralise(self._pending, self.requester)
                self._pending = ""
            if self._put_len >= 0 and len(self._text) != self._put_len:
                await self._put()
        elif event.type != "completed" and self.open:
            await self._put(final=_as_blocks(self._text, self.requester))
            self._next()

    async def finish(self, message: dict[str, Any]) -> str:
        """Close the current response with the final answer's first message (it replaces the
        stream's text once stopped; a text never streamed is posted as that message)."""
        key = self.key
        await self._put(final=message)
        self._next()
        return key

    def _next(self) -> None:
        self._n += 1
        self._text, self._pending, self._put_len = "", "", -1

    async def _put(self, final: dict[str, Any] | None = None) -> None:
        payload: dict[str, Any] = {
            "markdown_text": self._text,
            "recipient_team_id": self.team_id,
            "recipient_user_id": self.requester,
        }
        if final is not None:
            payload.update(final, final=True)
        await self.outbox.put(
            self.key,
            kind="stream",
            channel=self.channel,
            thread_ts=self.thread_ts,
            payload=payload,
            fresh=self._put_len < 0,  # no row for this response yet (unless shown before a crash)
        )
        self._put_len = len(self._text)
        self._since = time.monotonic()


def _as_blocks(text: str, requester: str | None) -> dict[str, Any]:
    """The text of a response that was not the answer, as it is posted if it never streamed
    (`as_streamed`: a stream of it stays as it is, no update)."""
    if not text:
        return {}
    posted = markdown_messages(text, "streamed", requester=requester)
    return {**(posted[0] if len(posted) == 1 else {"text": text[:3000]}), "as_streamed": True}

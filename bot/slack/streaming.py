"""A run's answer streamed into its thread (chat.startStream / appendStream / stopStream).

The text of each model response streams as it is written and the stream stops when the
response ends (a tool call may follow: the text so far stays, then come the card or the
status). When the final answer comes, the presenter replaces the streamed message with the
formatted answer (markdown and table blocks), so nothing is shown twice. When Slack refuses
or breaks the stream, the stream is given up and the answer is posted as one message.
"""

from __future__ import annotations

import logging
import re

from slack_sdk.web.async_chat_stream import AsyncChatStream
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent import RunEvent
from bot.slack.blocks.markdown import neutralise
from store import RunRecord

log = logging.getLogger("sayso.slack")

STREAM_BUFFER = 96  # characters buffered before each append (fewer calls, still live)
_OPEN_TAIL = re.compile(r"(<[^>]*|@\w*)$")  # a mention perhaps still being written


class AnswerStream:
    """Streams one run's text into its thread; remembers the final answer's message."""

    def __init__(self, client: AsyncWebClient, run: RunRecord) -> None:
        self.client = client
        self.run_id = run.id
        self.channel = str(run.channel_id)
        self.thread_ts = str(run.thread_ts)
        self.team_id = run.team_id
        self.requester = run.requester
        self._stream: AsyncChatStream | None = None
        self._pending = ""  # text held back: a mention may be cut in two
        self._given_up = False
        self.final_ts: str | None = None  # the streamed message holding the final answer

    async def text(self, delta: str) -> None:
        if self._given_up:
            return
        self.final_ts = None
        self._pending += delta
        tail = _OPEN_TAIL.search(self._pending)
        cut = tail.start() if tail and len(tail.group(0)) < 64 else len(self._pending)
        ready, self._pending = self._pending[:cut], self._pending[cut:]
        if ready:
            await self._append(ready)

    async def _append(self, raw: str) -> None:
        try:
            if self._stream is None:
                self._stream = await self.client.chat_stream(
                    channel=self.channel,
                    thread_ts=self.thread_ts,
                    recipient_team_id=self.team_id,
                    recipient_user_id=self.requester,
                    buffer_size=STREAM_BUFFER,
                )
            await self._stream.append(markdown_text=neutralise(raw, self.requester))
        except Exception as exc:
            self._give_up(exc)

    def _give_up(self, exc: Exception) -> None:
        log.warning("event=stream_failed run_id=%s error=%r", self.run_id, exc)
        self._given_up = True

    async def event(self, event: RunEvent) -> None:
        """A model response ends its text: stop the stream (the final answer replaces it)."""
        if event.type == "model_response":
            self.final_ts = await self._stop()
        elif event.type != "completed":
            self.final_ts = None  # the text was not the answer (a tool call or a pause came)

    async def _stop(self) -> str | None:
        stream, self._stream = self._stream, None
        if self._pending and not self._given_up:
            await self._append(self._pending)
            stream = stream or self._stream
            self._stream = None
        self._pending = ""
        if stream is None:
            return None
        if not self._given_up:
            try:
                await stream.stop()
            except Exception as exc:
                self._give_up(exc)
        self._given_up = False  # the next response may stream again
        return stream.ts

# Longer than 400 lines because the fake OpenAI-compatible server speaks both the plain and the
# streaming protocol, with the scripting tests use.
"""`FakeModelServer`: a real HTTP server that speaks the OpenAI Chat Completions API and the
Anthropic Messages API, as strictly as the real ones.

For tests, benchmarks and people testing their own agents without a real provider::

    server = FakeModelServer()
    await server.start()
    server.reply(tool_calls=[("deploy", {"environment": "staging", "version": "v2"})])
    server.reply(text="Deployed v2 to staging.")
    model = OpenAIChatModel("gpt-4o-mini", base_url=server.base_url, api_key="test")
    ...
    server.requests[-1]["messages"]   # what the model saw
    await server.stop()

It answers `POST /v1/chat/completions` from a queue (`reply`, `fail`, `hang`) or from
`server.responder = fn(request_json) -> dict` (sync or async). It also answers
`POST /v1/messages` in the Anthropic Messages shape from the same queue (use `server.url` as
the Anthropic base URL).

Like the real APIs it answers 400, with their error messages, when a request breaks their
rules: a tool call without its result before the next message ("dangling" calls), empty or
whitespace-only text blocks (Anthropic), null content (OpenAI), an empty message list...
Such requests are listed in `server.violations` (`strict=False` accepts anything).

Like the real models it can answer in ways a client must handle:
- `reply(text="\\n\\n", tool_calls=[...])`: blank text before a tool call (as Claude does);
- `reply(..., truncated=True)`: cut off at the output limit (`finish_reason: "length"`,
  `stop_reason: "max_tokens"`), in text or inside a tool call (give the arguments as a
  cut-off JSON string);
- a request with `"stream": true` gets the answer as server-sent events (chunks on OpenAI,
  content block events on Anthropic), with text and tool arguments split into many deltas;
  `reply(..., disconnect_after=n)` drops the connection after n events.

Standalone (another process, e.g. for benchmarks)::

    python -m bot.testing.fake_model --port 8099 --script tool-then-text --tool deploy

prints `FakeModelServer listening on http://127.0.0.1:8099/v1` and serves until killed.
Scripts are described in `bot.testing.model_scripts`.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import itertools
import json
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from bot.agent.util import wait_set
from bot.testing.anthropic_api import (
    anthropic_message,
    check_messages_request,
    error_body,
    message_events,
)
from bot.testing.model_scripts import SCRIPTS, build_script, sample_arguments
from bot.testing.openai_api import (
    chat_chunks,
    chat_completion,
    check_chat_request,
    estimate_tokens,
)

JsonObject = dict[str, Any]
Responder = Callable[[JsonObject], JsonObject | Awaitable[JsonObject]]
ToolCallSpec = tuple[str, JsonObject | str] | tuple[str, JsonObject | str, str] | JsonObject
SseEvent = tuple[str | None, JsonObject | str]
ErrorResponse = Callable[[int, str, "float | None"], web.Response]

__all__ = [
    "FakeModelServer",
    "Reply",
    "chat_completion",
    "check_chat_request",
    "check_messages_request",
    "main",
    "sample_arguments",
]


@dataclass
class Reply:
    """One queued answer: a completion, an HTTP error, or a hang (for timeouts)."""

    text: str | None = None
    tool_calls: list[JsonObject] = field(default_factory=list)
    status: int = 200
    error: str | None = None
    retry_after: float | None = None
    delay: float = 0.0
    usage: dict[str, int] | None = None
    finish_reason: str | None = None
    truncated: bool = False  # cut off at the request's max_tokens
    disconnect_after: int | None = None  # streamed: drop the connection after this many events

    def usage_for(self, request: JsonObject) -> dict[str, int]:
        """The usage to report: given, or estimated (all of max_tokens when cut off)."""
        if self.usage is not None:
            return self.usage
        completion = estimate_tokens(self.text or "") + 10 * len(self.tool_calls)
        if self.truncated and isinstance(request.get("max_tokens"), int):
            completion = request["max_tokens"]
        prompt = estimate_tokens(request.get("messages", []))
        return {"prompt_tokens": prompt, "completion_tokens": completion}


class FakeModelServer:
    """An OpenAI-compatible (and Anthropic Messages) model server on 127.0.0.1.

    Answers come from the queue filled by `reply`/`fail`/`hang` (first in, first out), or,
    when the queue is empty, from `responder`. With neither, it answers HTTP 400 saying no
    reply is queued (not retryable, so a test fails fast with a clear error).

    Streamed answers split text and tool arguments into pieces of `stream_chunk_size`
    characters and wait `stream_delay` seconds between events. With `streaming=False` it
    answers JSON even when asked to stream, like some OpenAI-compatible servers.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        responder: Responder | None = None,
        strict: bool = True,
        model: str = "fake-model",
        stream_chunk_size: int = 5,
        stream_delay: float = 0.0,
        streaming: bool = True,
    ) -> None:
        self.host = host
        self.port = port
        self.responder = responder
        self.strict = strict
        self.model = model
        self.stream_chunk_size = stream_chunk_size
        self.stream_delay = stream_delay
        self.streaming = streaming
        self.requests: list[JsonObject] = []
        self.headers: list[dict[str, str]] = []
        self.violations: list[str] = []
        self._queue: deque[Reply] = deque()
        self._ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self._closing = asyncio.Event()

    # -- lifecycle -----------------------------------------------------------------------

    @property
    def url(self) -> str:
        """Root URL (the Anthropic base URL): http://127.0.0.1:PORT"""
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """OpenAI-style base URL: http://127.0.0.1:PORT/v1"""
        return f"{self.url}/v1"

    async def start(self) -> FakeModelServer:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/chat/completions", self._chat)
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_get("/v1/models", self._models)
        self._closing = asyncio.Event()
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def stop(self) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeModelServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- scripting -----------------------------------------------------------------------

    def reply(
        self,
        text: str | None = None,
        tool_calls: Iterable[ToolCallSpec] = (),
        *,
        usage: dict[str, int] | None = None,
        finish_reason: str | None = None,
        delay: float = 0.0,
        truncated: bool = False,
        disconnect_after: int | None = None,
    ) -> list[str]:
        """Queue a completion; returns the tool call ids (generated as `call_<n>` unless given).

        A tool call is `("deploy", {"environment": "staging"})`, `(name, args, call_id)` or
        `{"name": ..., "arguments": ..., "id": ...}`; arguments may be a raw string (e.g.
        invalid or cut-off JSON). `usage` is `{"prompt_tokens": n, "completion_tokens": m}`.
        `truncated` answers as cut off at max_tokens (`length` / `max_tokens`).
        """
        calls = [self._normalize_call(c) for c in tool_calls]
        if text is None and not calls:
            raise ValueError("reply() needs text or tool_calls")
        self._queue.append(
            Reply(
                text=text,
                tool_calls=calls,
                usage=usage,
                finish_reason=finish_reason,
                delay=delay,
                truncated=truncated,
                disconnect_after=disconnect_after,
            )
        )
        return [c["id"] for c in calls]

    def fail(
        self, status: int = 500, *, retry_after: float | None = None, message: str | None = None
    ) -> None:
        """Queue an HTTP error (429 and 5xx are retryable), optionally with Retry-After."""
        self._queue.append(
            Reply(status=status, retry_after=retry_after, error=message or f"fake error {status}")
        )

    def hang(self, seconds: float) -> None:
        """Queue a response that takes `seconds` (then answers 504): for client timeouts."""
        self._queue.append(Reply(status=504, delay=seconds, error="fake gateway timeout"))

    def clear(self) -> None:
        """Forget queued replies and recorded requests."""
        self._queue.clear()
        self.requests.clear()
        self.headers.clear()
        self.violations.clear()

    @property
    def pending(self) -> int:
        """How many queued replies have not been served yet."""
        return len(self._queue)

    @property
    def last_request(self) -> JsonObject:
        return self.requests[-1]

    def _normalize_call(self, c: ToolCallSpec) -> JsonObject:
        if isinstance(c, dict):
            name, args, cid = c["name"], c.get("arguments", {}), c.get("id")
        else:
            name, args = c[0], c[1]
            cid = c[2] if len(c) == 3 else None
        return {"id": cid or f"call_{next(self._ids)}", "name": name, "arguments": args}

    # -- serving -------------------------------------------------------------------------

    async def _next(self, body: JsonObject) -> Reply | JsonObject:
        if self._queue:
            return self._queue.popleft()
        if self.responder is not None:
            value = self.responder(body)
            return await value if inspect.isawaitable(value) else value
        return Reply(
            status=400, error=f"FakeModelServer: no reply queued for request #{len(self.requests)}"
        )

    async def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            await wait_set(self._closing, seconds)

    @staticmethod
    def _error(status: int, message: str, retry_after: float | None = None) -> web.Response:
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
        body = {"error": {"message": message, "type": "invalid_request_error", "code": status}}
        return web.json_response(body, status=status, headers=headers)

    @staticmethod
    def _anthropic_error(
        status: int, message: str, retry_after: float | None = None
    ) -> web.Response:
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
        return web.json_response(error_body(status, message), status=status, headers=headers)

    async def _read(self, request: web.Request) -> JsonObject | str:
        """The request body (recorded), or what is wrong with it."""
        try:
            body = await request.json()
        except ValueError:
            return "Request body is not valid JSON"
        if not isinstance(body, dict):
            return "Request body must be a JSON object"
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        return body

    async def _answer(
        self, request: web.Request, check: Callable[[Any], str | None], error: ErrorResponse
    ) -> tuple[JsonObject, JsonObject | Reply] | web.Response:
        """(request body, answer), or the error response when the request is refused."""
        body = await self._read(request)
        if isinstance(body, str):
            return error(400, body, None)
        problem = check(body) if self.strict else None
        if problem:
            self.violations.append(problem)
            return error(400, problem, None)
        answer = await self._next(body)
        if isinstance(answer, Reply):
            await self._sleep(answer.delay)
            if answer.status != 200:
                return error(answer.status, answer.error or "error", answer.retry_after)
        return body, answer

    async def _sse(
        self, request: web.Request, events: Sequence[SseEvent], disconnect_after: int | None
    ) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        for n, (name, data) in enumerate(events):
            if disconnect_after is not None and n >= disconnect_after:
                if request.transport is not None:
                    request.transport.close()
                return response
            text = data if isinstance(data, str) else json.dumps(data)
            line = (f"event: {name}\n" if name else "") + f"data: {text}\n\n"
            await response.write(line.encode())
            await self._sleep(self.stream_delay)
        await response.write_eof()
        return response

    def _completion(self, reply: Reply, body: JsonObject) -> JsonObject:
        finish_reason = "length" if reply.truncated else reply.finish_reason
        return chat_completion(
            text=reply.text,
            tool_calls=reply.tool_calls,
            model=self.model,
            usage=reply.usage_for(body),
            finish_reason=finish_reason,
            request=body,
            completion_id=f"chatcmpl-{len(self.requests)}",
        )

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        answered = await self._answer(request, check_chat_request, self._error)
        if isinstance(answered, web.Response):
            return answered
        body, answer = answered
        completion = answer if isinstance(answer, dict) else self._completion(answer, body)
        if not (body.get("stream") and self.streaming):
            return web.json_response(completion)
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        chunks = chat_chunks(completion, include_usage=include_usage, size=self.stream_chunk_size)
        events: list[SseEvent] = [(None, c) for c in chunks]
        events.append((None, "[DONE]"))
        return await self._sse(request, events, _disconnect_after(answer))

    def _message(self, reply: Reply, body: JsonObject) -> JsonObject:
        return anthropic_message(
            text=reply.text,
            tool_calls=reply.tool_calls,
            model=str(body.get("model") or self.model),
            stop_reason="max_tokens" if reply.truncated else None,
            usage=reply.usage_for(body),
            message_id=f"msg_{len(self.requests)}",
        )

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        answered = await self._answer(request, check_messages_request, self._anthropic_error)
        if isinstance(answered, web.Response):
            return answered
        body, answer = answered
        message = answer if isinstance(answer, dict) else self._message(answer, body)
        if not (body.get("stream") and self.streaming):
            return web.json_response(message)
        raw_inputs = {} if isinstance(answer, dict) else _raw_inputs(answer)
        events = message_events(message, raw_inputs=raw_inputs, size=self.stream_chunk_size)
        return await self._sse(request, list(events), _disconnect_after(answer))

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response(
            {"object": "list", "data": [{"id": self.model, "object": "model"}]}
        )


def _disconnect_after(answer: JsonObject | Reply) -> int | None:
    return answer.disconnect_after if isinstance(answer, Reply) else None


def _raw_inputs(reply: Reply) -> dict[str, str]:
    """Tool arguments given as JSON text (e.g. cut off) are streamed as they are."""
    return {c["id"]: c["arguments"] for c in reply.tool_calls if isinstance(c["arguments"], str)}


# -- script mode (python -m bot.testing.fake_model) -----------------------------------------


async def _serve(args: argparse.Namespace) -> None:
    server = FakeModelServer(args.host, args.port, strict=not args.lenient)
    script = build_script(args.script, tool=args.tool, arguments=args.arguments, text=args.text)
    server.responder = script
    if args.latency:

        async def slow(body: JsonObject) -> JsonObject:
            await asyncio.sleep(args.latency)
            return script(body)

        server.responder = slow
    await server.start()
    print(f"FakeModelServer listening on {server.base_url}", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await server.stop()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bot.testing.fake_model",
        description="A fake OpenAI-compatible model server (POST /v1/chat/completions).",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (printed)")
    parser.add_argument(
        "--script",
        default="tool-then-text",
        choices=list(SCRIPTS),
        help="built-in responder (default: tool-then-text)",
    )
    parser.add_argument("--tool", help="tool to call (default: the first tool offered)")
    parser.add_argument("--arguments", help="JSON arguments (default: sampled from the schema)")
    parser.add_argument("--text", default="Done.", help="final answer text")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per response")
    parser.add_argument("--lenient", action="store_true", help="do not answer 400 on bad requests")
    args = parser.parse_args(argv)
    try:
        asyncio.run(_serve(args))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()

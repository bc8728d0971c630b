"""`FakeModelServer`: a real HTTP server that speaks the OpenAI Chat Completions API.

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
`server.responder = fn(request_json) -> dict` (sync or async). Like real providers it answers
400 when a request is malformed, in particular when an assistant tool call has no tool result
before the next message ("dangling" calls); such requests are listed in `server.violations`.

It also answers `POST /v1/messages` in the Anthropic Messages shape from the same queue
(use `server.url` as the Anthropic base URL).

Standalone (another process, e.g. for benchmarks)::

    python -m bot.testing.fake_model --port 8099 --script tool-then-text --tool deploy

prints `FakeModelServer listening on http://127.0.0.1:8099/v1` and serves until killed.
Scripts: `tool-then-text` (default: call `--tool` -- or the first tool offered -- with
`--arguments` or sample arguments built from its schema, then answer with text once a
tool result is present), `text` (always `--text`), `echo` (repeat the last user message).
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import itertools
import json
import sys
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

Responder = Callable[[dict[str, Any]], "dict[str, Any] | Awaitable[dict[str, Any]]"]
ToolCallSpec = (
    tuple[str, dict[str, Any] | str] | tuple[str, dict[str, Any] | str, str] | dict[str, Any]
)

__all__ = [
    "FakeModelServer",
    "Reply",
    "chat_completion",
    "check_chat_request",
    "main",
    "sample_arguments",
]


@dataclass
class Reply:
    """One queued answer: a completion, an HTTP error, or a hang (for timeouts)."""

    text: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    error: str | None = None
    retry_after: float | None = None
    delay: float = 0.0
    usage: dict[str, int] | None = None
    finish_reason: str | None = None


def _estimate_tokens(value: Any) -> int:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return max(1, len(text) // 4)


def chat_completion(
    *,
    text: str | None = None,
    tool_calls: Sequence[dict[str, Any]] = (),
    model: str = "fake-model",
    usage: dict[str, int] | None = None,
    finish_reason: str | None = None,
    request: dict[str, Any] | None = None,
    completion_id: str = "chatcmpl-fake",
) -> dict[str, Any]:
    """A standard Chat Completions response body.

    `tool_calls` items are `{"id", "name", "arguments"}` (arguments a dict or a raw string);
    arguments go on the wire as JSON strings, as real providers send them.
    """
    wire_calls = [
        {
            "id": c["id"],
            "type": "function",
            "function": {
                "name": c["name"],
                "arguments": c["arguments"]
                if isinstance(c["arguments"], str)
                else json.dumps(c["arguments"]),
            },
        }
        for c in tool_calls
    ]
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if wire_calls:
        message["tool_calls"] = wire_calls
    if usage is None:
        prompt = _estimate_tokens((request or {}).get("messages", []))
        completion = _estimate_tokens(text or "") + 10 * len(wire_calls)
        usage = {"prompt_tokens": prompt, "completion_tokens": completion}
    usage = {
        **usage,
        "total_tokens": usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0),
    }
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": 0,
        "model": (request or {}).get("model") or model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if wire_calls else "stop"),
            }
        ],
        "usage": usage,
    }


def check_chat_request(body: Any) -> str | None:
    """What a real Chat Completions provider would reject with HTTP 400 (None when fine).

    Checks the shape of messages and tools, and that every tool call of an assistant message
    is answered by exactly one tool message before any other message.
    """
    if not isinstance(body, dict):
        return "Request body must be a JSON object"
    if not body.get("model"):
        return "you must provide a model parameter"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty array"
    open_calls: list[str] = []  # ids of the last assistant message still waiting for a result
    answered: set[str] = set()
    for i, m in enumerate(messages):
        role = m.get("role") if isinstance(m, dict) else None
        if role not in ("system", "user", "assistant", "tool", "developer"):
            return f"messages[{i}]: invalid role {role!r}"
        if role == "tool":
            cid = m.get("tool_call_id")
            if cid not in open_calls:
                return (
                    f"messages[{i}]: messages with role 'tool' must be a response to a preceding "
                    f"message with 'tool_calls' (unknown or repeated tool_call_id {cid!r})"
                )
            open_calls.remove(cid)
            answered.add(cid)
            if not isinstance(m.get("content"), str):
                return f"messages[{i}]: tool message content must be a string"
            continue
        if open_calls:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages "
                f"responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(open_calls)}"
            )
        if role == "assistant":
            calls = m.get("tool_calls") or []
            if not calls and not m.get("content"):
                return f"messages[{i}]: assistant message needs content or tool_calls"
            ids = []
            for c in calls:
                fn = c.get("function") or {}
                if c.get("type") != "function" or not fn.get("name") or not c.get("id"):
                    return f"messages[{i}]: malformed tool call {c!r}"
                if not isinstance(fn.get("arguments"), str):
                    return f"messages[{i}]: tool call arguments must be a JSON string"
                ids.append(c["id"])
            if len(set(ids)) != len(ids):
                return f"messages[{i}]: duplicate tool_call ids {ids}"
            open_calls = ids
        elif not isinstance(m.get("content"), str):
            return f"messages[{i}]: {role} message content must be a string"
    if open_calls:
        return (
            "An assistant message with 'tool_calls' must be followed by tool messages "
            f"responding to each 'tool_call_id'. The following tool_call_ids did not have "
            f"response messages: {', '.join(open_calls)}"
        )
    for t in body.get("tools") or []:
        fn = t.get("function") if isinstance(t, dict) else None
        if not isinstance(t, dict) or t.get("type") != "function" or not isinstance(fn, dict):
            return f"Invalid tool {t!r}"
        if not fn.get("name") or not isinstance(fn.get("parameters", {}), dict):
            return f"Invalid tool {t!r}"
        if fn.get("parameters", {}).get("type", "object") != "object":
            return f"Tool {fn['name']}: parameters must be a JSON Schema object"
    return None


def check_messages_request(body: Any) -> str | None:
    """What the Anthropic Messages API would reject (tool_use without a tool_result, shapes)."""
    if not isinstance(body, dict) or not body.get("model") or not body.get("max_tokens"):
        return "model and max_tokens are required"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: must be a non-empty list"
    open_ids: list[str] = []
    for i, m in enumerate(messages):
        blocks = m.get("content")
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        if m.get("role") not in ("user", "assistant") or not isinstance(blocks, list):
            return f"messages.{i}: invalid message"
        results = {b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"}
        missing = [cid for cid in open_ids if cid not in results]
        if missing:
            return (
                f"messages.{i}: `tool_use` ids were found without `tool_result` blocks "
                f"immediately after: {', '.join(missing)}"
            )
        if m["role"] == "assistant":
            if not blocks:
                return f"messages.{i}: assistant content must be non-empty"
            open_ids = [b["id"] for b in blocks if b.get("type") == "tool_use"]
        else:
            open_ids = []
    if open_ids:
        return f"`tool_use` ids were found without `tool_result` blocks: {', '.join(open_ids)}"
    return None


def _anthropic_message(reply: Reply, request: dict[str, Any], msg_id: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for c in reply.tool_calls:
        args = c["arguments"]
        content.append(
            {
                "type": "tool_use",
                "id": c["id"],
                "name": c["name"],
                "input": json.loads(args) if isinstance(args, str) else args,
            }
        )
    usage = reply.usage or {
        "prompt_tokens": _estimate_tokens(request.get("messages", [])),
        "completion_tokens": _estimate_tokens(reply.text or "") + 10 * len(reply.tool_calls),
    }
    return {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": request.get("model", "fake-model"),
        "content": content,
        "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
        "usage": {
            "input_tokens": usage.get("prompt_tokens", 0),
            "output_tokens": usage.get("completion_tokens", 0),
        },
    }


class FakeModelServer:
    """An OpenAI-compatible (and Anthropic Messages) model server on 127.0.0.1.

    Answers come from the queue filled by `reply`/`fail`/`hang` (first in, first out), or,
    when the queue is empty, from `responder`. With neither, it answers HTTP 400 saying no
    reply is queued (not retryable, so a test fails fast with a clear error).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        responder: Responder | None = None,
        strict: bool = True,
        model: str = "fake-model",
    ) -> None:
        self.host = host
        self.port = port
        self.responder = responder
        self.strict = strict
        self.model = model
        self.requests: list[dict[str, Any]] = []
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
    ) -> list[str]:
        """Queue a completion; returns the tool call ids (generated as `call_<n>` unless given).

        A tool call is `("deploy", {"environment": "staging"})`, `(name, args, call_id)` or
        `{"name": ..., "arguments": ..., "id": ...}`; arguments may be a raw string (e.g.
        invalid JSON). `usage` is `{"prompt_tokens": n, "completion_tokens": m}`.
        """
        calls = [self._normalize_call(c) for c in tool_calls]
        if text is None and not calls:
            raise ValueError("reply() needs text or tool_calls")
        self._queue.append(
            Reply(
                text=text, tool_calls=calls, usage=usage, finish_reason=finish_reason, delay=delay
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
    def last_request(self) -> dict[str, Any]:
        return self.requests[-1]

    def _normalize_call(self, c: ToolCallSpec) -> dict[str, Any]:
        if isinstance(c, dict):
            name, args, cid = c["name"], c.get("arguments", {}), c.get("id")
        elif len(c) == 3:
            name, args, cid = c  # type: ignore[misc]
        else:
            name, args = c  # type: ignore[misc]
            cid = None
        return {"id": cid or f"call_{next(self._ids)}", "name": name, "arguments": args}

    # -- serving -------------------------------------------------------------------------

    async def _next(self, body: dict[str, Any]) -> Reply | dict[str, Any]:
        if self._queue:
            return self._queue.popleft()
        if self.responder is not None:
            value = self.responder(body)
            if inspect.isawaitable(value):
                value = await value
            return value
        return Reply(
            status=400, error=f"FakeModelServer: no reply queued for request #{len(self.requests)}"
        )

    async def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            try:
                await asyncio.wait_for(self._closing.wait(), timeout=seconds)
            except TimeoutError:
                pass

    @staticmethod
    def _error(status: int, message: str, retry_after: float | None = None) -> web.Response:
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
        body = {"error": {"message": message, "type": "invalid_request_error", "code": status}}
        return web.json_response(body, status=status, headers=headers)

    async def _read(self, request: web.Request) -> dict[str, Any] | web.Response:
        try:
            body = await request.json()
        except ValueError:
            return self._error(400, "Request body is not valid JSON")
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        return body

    async def _chat(self, request: web.Request) -> web.Response:
        body = await self._read(request)
        if isinstance(body, web.Response):
            return body
        problem = check_chat_request(body) if self.strict else None
        if problem:
            self.violations.append(problem)
            return self._error(400, problem)
        answer = await self._next(body)
        if isinstance(answer, dict):  # a responder built the whole body
            return web.json_response(answer)
        await self._sleep(answer.delay)
        if answer.status != 200:
            return self._error(answer.status, answer.error or "error", answer.retry_after)
        return web.json_response(
            chat_completion(
                text=answer.text,
                tool_calls=answer.tool_calls,
                model=self.model,
                usage=answer.usage,
                finish_reason=answer.finish_reason,
                request=body,
                completion_id=f"chatcmpl-{len(self.requests)}",
            )
        )

    async def _messages(self, request: web.Request) -> web.Response:
        body = await self._read(request)
        if isinstance(body, web.Response):
            return body
        problem = check_messages_request(body) if self.strict else None
        if problem:
            self.violations.append(problem)
            return self._error(400, problem)
        answer = await self._next(body)
        if isinstance(answer, dict):
            return web.json_response(answer)
        await self._sleep(answer.delay)
        if answer.status != 200:
            return self._error(answer.status, answer.error or "error", answer.retry_after)
        return web.json_response(_anthropic_message(answer, body, f"msg_{len(self.requests)}"))

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response(
            {"object": "list", "data": [{"id": self.model, "object": "model"}]}
        )


# -- script mode (python -m bot.testing.fake_model) -----------------------------------------


def sample_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Plausible arguments for a JSON Schema object: enum -> first value, str -> "test", ..."""
    out: dict[str, Any] = {}
    props = schema.get("properties") or {}
    for name in schema.get("required") or list(props):
        prop = props.get(name, {})
        if "default" in prop:
            out[name] = prop["default"]
        elif prop.get("enum"):
            out[name] = prop["enum"][0]
        elif "const" in prop:
            out[name] = prop["const"]
        else:
            kind = prop.get("type")
            out[name] = {
                "integer": 1,
                "number": 1.0,
                "boolean": True,
                "array": [],
                "object": {},
            }.get(kind, "test")
    return out


def _last_user_text(body: dict[str, Any]) -> str:
    for m in reversed(body.get("messages", [])):
        if m.get("role") == "user":
            return str(m.get("content") or "")
    return ""


def build_script(
    name: str, *, tool: str | None = None, arguments: str | None = None, text: str = "Done."
) -> Responder:
    """A built-in responder for script mode (see the module docstring)."""
    counter = itertools.count(1)

    def reply(**kw: Any) -> dict[str, Any]:
        return chat_completion(**kw)

    if name == "echo":
        return lambda body: reply(text=f"You said: {_last_user_text(body)}", request=body)
    if name == "text":
        return lambda body: reply(text=text, request=body)
    if name != "tool-then-text":
        raise ValueError(f"Unknown script {name!r}: use tool-then-text, text or echo")

    def tool_then_text(body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages", [])
        last = messages[-1] if messages else {}
        if last.get("role") == "tool":
            return reply(text=f"{text} Tool result: {last.get('content')}", request=body)
        tools = [t["function"] for t in body.get("tools") or []]
        chosen = next((t for t in tools if t["name"] == tool), None) if tool else None
        if chosen is None and tool is None and tools:
            chosen = tools[0]
        if chosen is None and tool is None:
            return reply(text=text, request=body)
        args = (
            json.loads(arguments)
            if arguments
            else sample_arguments((chosen or {}).get("parameters") or {})
        )
        call = {"id": f"call_{next(counter)}", "name": tool or chosen["name"], "arguments": args}  # type: ignore[index]
        return reply(tool_calls=[call], request=body)

    return tool_then_text


async def _serve(args: argparse.Namespace) -> None:
    server = FakeModelServer(args.host, args.port, strict=not args.lenient)
    server.responder = build_script(
        args.script, tool=args.tool, arguments=args.arguments, text=args.text
    )
    if args.latency:
        inner = server.responder

        async def slow(body: dict[str, Any]) -> dict[str, Any]:
            await asyncio.sleep(args.latency)
            return inner(body)  # type: ignore[return-value]

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
        choices=["tool-then-text", "text", "echo"],
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
    sys.exit(main())

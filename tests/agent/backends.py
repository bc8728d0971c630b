"""The two model backends every runtime test runs against, scripted the same way.

`HttpBackend` is `FakeModelServer` over real HTTP behind the OpenAI provider; `ScriptedBackend`
is the scripted model. Both record what the model saw in the same (OpenAI wire) shape and
both reject dangling tool calls like real providers do.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bot import Agent, ModelSettings
from bot.agent import Message, ModelError
from bot.agent.models import Model, OpenAIChatModel, ScriptedModel, call
from bot.agent.models.base import ToolSpec
from bot.agent.models.openai import _to_wire
from bot.testing import FakeModelServer, check_chat_request

FAST = ModelSettings(timeout=2.0, max_retries=2, backoff_base=0.001, backoff_max=0.01)

MakeAgent = Callable[..., Agent]
"""The `make_agent(tools, **kwargs)` fixture: an `ops` agent on the test's backend."""


class Backend:
    """A model the tests script: `reply(text=...)`, `reply(tool_calls=[...])`, `fail(...)`."""

    name: str
    model: Model
    requests: list[dict[str, Any]]
    violations: list[str]

    def __init__(self) -> None:
        self._ids = itertools.count(1)

    def _ids_for(self, tool_calls: list[tuple[Any, ...]]) -> list[tuple[str, dict, str]]:
        out = []
        for c in tool_calls:
            name, args, *rest = c
            out.append((name, args, rest[0] if rest else f"call_{next(self._ids)}"))
        return out

    def reply(self, text: str | None = None, tool_calls: list[tuple[Any, ...]] = ()) -> list[str]:
        raise NotImplementedError

    def fail(self, status: int = 500, retry_after: float | None = None) -> None:
        raise NotImplementedError

    def hang(self, seconds: float) -> None:
        raise NotImplementedError

    @property
    def messages(self) -> list[list[dict[str, Any]]]:
        """The messages of every request, in OpenAI wire shape."""
        return [r["messages"] for r in self.requests]

    def tool_results(self, request: int = -1) -> dict[str, Any]:
        """call id -> parsed tool result content, as seen in one request."""
        out = {}
        for m in self.messages[request]:
            if m["role"] == "tool":
                try:
                    out[m["tool_call_id"]] = json.loads(m["content"])
                except ValueError:
                    out[m["tool_call_id"]] = m["content"]
        return out


class HttpBackend(Backend):
    name = "http"

    def __init__(self, server: FakeModelServer) -> None:
        super().__init__()
        self.server = server
        self.model = OpenAIChatModel("gpt-4o-mini", base_url=server.base_url, api_key="test")
        self.requests = server.requests
        self.violations = server.violations

    def reply(self, text: str | None = None, tool_calls: list[tuple[Any, ...]] = ()) -> list[str]:
        return self.server.reply(text=text, tool_calls=self._ids_for(list(tool_calls)))

    def fail(self, status: int = 500, retry_after: float | None = None) -> None:
        self.server.fail(status=status, retry_after=retry_after)

    def hang(self, seconds: float) -> None:
        self.server.hang(seconds)


@dataclass
class _Hang:
    seconds: float


class ScriptedBackend(Backend):
    name = "scripted"

    def __init__(self) -> None:
        super().__init__()
        self.requests = []
        self.violations = []
        self._queue: deque[Any] = deque()
        self.model = ScriptedModel(self._script)

    def _script(self, messages: list[Message], tools: list[ToolSpec]) -> Any:
        body = {
            "model": "scripted",
            "messages": [_to_wire(m) for m in messages],
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in tools
            ],
        }
        self.requests.append(body)
        problem = check_chat_request(body)
        if problem:  # what a real provider would answer with HTTP 400
            self.violations.append(problem)
            raise ModelError(f"HTTP 400: {problem}")
        if not self._queue:
            raise ModelError("scripted backend: no reply queued")
        item = self._queue.popleft()
        if isinstance(item, ModelError):
            raise item
        if isinstance(item, _Hang):
            return asyncio.sleep(item.seconds, result="(too late)")  # a model too slow to answer
        return item

    def reply(self, text: str | None = None, tool_calls: list[tuple[Any, ...]] = ()) -> list[str]:
        calls = self._ids_for(list(tool_calls))
        if calls:
            tcs = [call(name, **args).model_copy(update={"id": cid}) for name, args, cid in calls]
            self._queue.append(Message(role="assistant", content=text, tool_calls=tcs))
        else:
            self._queue.append(text)
        return [cid for _, _, cid in calls]

    def fail(self, status: int = 500, retry_after: float | None = None) -> None:
        retryable = status == 429 or status >= 500
        self._queue.append(
            ModelError(f"HTTP {status}", retryable=retryable, retry_after=retry_after)
        )

    def hang(self, seconds: float) -> None:
        self._queue.append(_Hang(seconds))

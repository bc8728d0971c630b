"""A Python client for sayso's approval API, for code that is not a sayso agent.

    client = SaysoClient("https://sayso.example.com", key)
    decision = client.request_approval(tool="deploy", arguments={"env": "prod"}, channel="C123")

    @client.requires_approval(channel="C123")
    def deploy(env: str, version: str) -> None: ...

Bodies are the pydantic models of bot/api/models.py, the ones the server validates with.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import hmac
import inspect
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast, get_type_hints

import httpx
from pydantic import BaseModel, ConfigDict, create_model

from bot.api.models import MAX_WAIT, CreatedRequest, Decision, RequestState
from bot.receipts import ReceiptRefused, verify_receipt

F = TypeVar("F", bound=Callable[..., Any])
STOPPED_WAITING = "The caller stopped waiting."


class SaysoAPIError(Exception):
    """The API refused a call: `code` and `message` as its error body says (`status`: HTTP)."""

    def __init__(self, code: str, message: str, status: int = 0) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status


class ApprovalRejected(Exception):
    def __init__(self, reason: str | None, decided_by: str | None) -> None:
        super().__init__(f"rejected by {decided_by or 'someone'}: {reason or 'no reason given'}")
        self.reason = reason
        self.decided_by = decided_by


class ApprovalExpired(Exception):
    """Nobody decided in time: the request expired, was cancelled, or the wait ran out."""

    def __init__(self, state: RequestState) -> None:
        super().__init__(f"request {state.id} {state.status}")
        self.state = state


MAX_FUTURE_SKEW = 60.0
"""A delivery's timestamp may be at most this many seconds ahead of the receiver's clock."""


class WebhookVerificationError(ValueError):
    """A webhook delivery that is not sayso's, or not fresh: the message says which check."""


def check_webhook(
    secret: str, headers: Mapping[str, str], body: bytes | str, tolerance: float = 300
) -> None:
    """Raise WebhookVerificationError unless the delivery was signed with `secret`, is at most
    `tolerance` seconds old and at most MAX_FUTURE_SKEW seconds ahead. Signatures are compared
    as bytes, in constant time."""
    lower = {k.lower(): v for k, v in headers.items()}
    timestamp = lower.get("x-sayso-timestamp", "")
    signature = lower.get("x-sayso-signature", "")
    if not (timestamp.isascii() and timestamp.isdigit()) or len(timestamp) > 12:
        raise WebhookVerificationError("X-Sayso-Timestamp: missing or not a Unix time")
    skew = int(timestamp) - time.time()
    if skew > MAX_FUTURE_SKEW:
        raise WebhookVerificationError(f"X-Sayso-Timestamp: {skew:.0f} s in the future")
    if -skew > tolerance:
        raise WebhookVerificationError("X-Sayso-Timestamp: too old (a replay?)")
    if not signature.isascii():
        raise WebhookVerificationError("X-Sayso-Signature: not ASCII")
    raw = body.encode() if isinstance(body, str) else body
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + raw, hashlib.sha256)
    if not hmac.compare_digest(("v1=" + mac.hexdigest()).encode(), signature.encode()):
        raise WebhookVerificationError("X-Sayso-Signature: does not match")


def verify_webhook(
    secret: str, headers: Mapping[str, str], body: bytes | str, tolerance: float = 300
) -> bool:
    """True when a delivery was signed with `secret`, is at most `tolerance` seconds old and
    at most 60 s ahead (`check_webhook` says why not)."""
    try:
        check_webhook(secret, headers, body, tolerance)
    except WebhookVerificationError:
        return False
    return True


def _raise_for(response: httpx.Response) -> None:
    if response.status_code < 400:
        return
    try:
        err = response.json()["error"]
        code, message = str(err["code"]), str(err["message"])
    except (ValueError, KeyError, TypeError):
        code, message = "http_error", response.text[:500]
    raise SaysoAPIError(code, message, response.status_code)


def _body(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def outcome(state: RequestState) -> Decision:
    """The decision of a settled request, or the typed error saying why there is none."""
    if state.status in ("approved", "answered") and state.decision is not None:
        return state.decision
    if state.status == "rejected":
        d = state.decision
        raise ApprovalRejected(d.reason if d else None, d.decided_by if d else None)
    raise ApprovalExpired(state)


def signature_model(fn: Callable[..., Any]) -> type[BaseModel]:
    """A pydantic model of the function's parameters (their JSON Schema goes on the card)."""
    hints = get_type_hints(fn)
    fields: dict[str, Any] = {}
    for name, param in inspect.signature(fn).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"{fn.__name__}: *args/**kwargs cannot be approved")
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[name] = (hints.get(name, Any), default)
    return create_model(f"{fn.__name__}_args", __config__=ConfigDict(extra="forbid"), **fields)


def _schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    return schema


def _arguments(model: type[BaseModel], fn: Callable[..., Any], args: Any, kwargs: Any) -> Any:
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    return model.model_validate(dict(bound.arguments)).model_dump(mode="json")


def _final(model: type[BaseModel], decision: Decision) -> dict[str, Any]:
    validated = model.model_validate(decision.arguments or {})
    return {name: getattr(validated, name) for name in type(validated).model_fields}


class AsyncSaysoClient:
    """The approval API over httpx.AsyncClient."""

    def __init__(self, url: str, key: str, *, http_timeout: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self.key = key
        self.http_timeout = http_timeout

    def _client(self, wait: float = 0) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.url,
            headers={"Authorization": f"Bearer {self.key}"},
            timeout=self.http_timeout + wait,
        )

    async def create(self, **fields: Any) -> CreatedRequest:
        """POST /v1/requests with these fields (see the API's CreateRequest)."""
        async with self._client() as http:
            response = await http.post("/v1/requests", json=_body(**fields))
        _raise_for(response)
        return CreatedRequest.model_validate(response.json())

    async def get(self, request_id: str, wait: float | None = None) -> RequestState:
        params = {"wait": str(wait)} if wait else None
        async with self._client(wait or 0) as http:
            response = await http.get(f"/v1/requests/{request_id}", params=params)
        _raise_for(response)
        return RequestState.model_validate(response.json())

    async def public_key(self) -> str:
        """The deployment's receipt-signing public key (GET /v1/receipts/public-key)."""
        async with self._client() as http:
            response = await http.get("/v1/receipts/public-key")
        _raise_for(response)
        return str(response.json()["public_key"])

    async def cancel(self, request_id: str, reason: str | None = None) -> RequestState:
        async with self._client() as http:
            response = await http.post(
                f"/v1/requests/{request_id}/cancel", json=_body(reason=reason)
            )
        _raise_for(response)
        return RequestState.model_validate(response.json())

    async def wait(self, request_id: str, timeout: float) -> RequestState:  # noqa: ASYNC109
        """Long-poll until the request is settled or `timeout` passes; then cancel it."""
        deadline = time.monotonic() + timeout
        state = await self.get(request_id)
        while state.status == "pending":
            left = deadline - time.monotonic()
            if left <= 0:
                return await self.cancel(request_id, STOPPED_WAITING)
            state = await self.get(request_id, wait=min(MAX_WAIT, max(1.0, left)))
        return state

    async def request_approval(
        self,
        *,
        tool: str,
        arguments: dict[str, Any],
        channel: str | None = None,
        schema: dict[str, Any] | None = None,
        approvers: list[str] | None = None,
        timeout: float = 3600,  # noqa: ASYNC109
        title: str | None = None,
        **fields: Any,
    ) -> Decision:
        """Ask for approval and wait: the Decision (its `arguments` with any edits applied),
        or ApprovalRejected / ApprovalExpired."""
        created = await self.create(
            kind="approval",
            title=title or f"Run {tool}",
            tool=tool,
            arguments=arguments,
            schema=schema,
            channel=channel,
            approvers=approvers,
            **fields,
        )
        return outcome(await self.wait(created.id, timeout))

    async def ask(
        self,
        question: str,
        *,
        channel: str | None = None,
        timeout: float = 3600,  # noqa: ASYNC109
    ) -> str:
        created = await self.create(kind="question", title=question, channel=channel)
        decision = outcome(await self.wait(created.id, timeout))
        return str(decision.answer)

    def requires_approval(
        self,
        *,
        channel: str | None = None,
        approvers: list[str] | None = None,
        min_approvals: int = 1,
        timeout: float = 3600,
    ) -> Callable[[F], F]:
        """Run the decorated function (sync or async) only once approved, with the final
        (possibly edited) arguments; raise ApprovalRejected or ApprovalExpired otherwise."""

        def decorate(fn: F) -> F:
            model = signature_model(fn)
            schema = _schema(model)

            async def approved(args: Any, kwargs: Any) -> dict[str, Any]:
                decision = await self.request_approval(
                    tool=fn.__name__,
                    arguments=_arguments(model, fn, args, kwargs),
                    schema=schema,
                    channel=channel,
                    approvers=approvers,
                    min_approvals=min_approvals if min_approvals != 1 else None,
                    timeout=timeout,
                    title=(inspect.getdoc(fn) or fn.__name__).split("\n")[0],
                )
                return _final(model, decision)

            if inspect.iscoroutinefunction(fn):

                @functools.wraps(fn)
                async def run_async(*args: Any, **kwargs: Any) -> Any:
                    return await fn(**await approved(args, kwargs))

                return cast(F, run_async)

            @functools.wraps(fn)
            def run_sync(*args: Any, **kwargs: Any) -> Any:
                return fn(**asyncio.run(approved(args, kwargs)))

            return cast(F, run_sync)

        return decorate


class SaysoClient:
    """The same API, blocking (each call runs the async client to completion)."""

    def __init__(self, url: str, key: str, *, http_timeout: float = 10.0) -> None:
        self.aio = AsyncSaysoClient(url, key, http_timeout=http_timeout)

    def create(self, **fields: Any) -> CreatedRequest:
        return asyncio.run(self.aio.create(**fields))

    def get(self, request_id: str, wait: float | None = None) -> RequestState:
        return asyncio.run(self.aio.get(request_id, wait))

    def cancel(self, request_id: str, reason: str | None = None) -> RequestState:
        return asyncio.run(self.aio.cancel(request_id, reason))

    def public_key(self) -> str:
        return asyncio.run(self.aio.public_key())

    def wait(self, request_id: str, timeout: float) -> RequestState:
        return asyncio.run(self.aio.wait(request_id, timeout))

    def request_approval(self, **kwargs: Any) -> Decision:
        return asyncio.run(self.aio.request_approval(**kwargs))

    def ask(self, question: str, *, channel: str | None = None, timeout: float = 3600) -> str:
        return asyncio.run(self.aio.ask(question, channel=channel, timeout=timeout))

    def requires_approval(self, **kwargs: Any) -> Callable[[F], F]:
        return self.aio.requires_approval(**kwargs)


__all__ = [
    "ApprovalExpired",
    "ApprovalRejected",
    "AsyncSaysoClient",
    "Decision",
    "ReceiptRefused",
    "RequestState",
    "SaysoAPIError",
    "SaysoClient",
    "WebhookVerificationError",
    "check_webhook",
    "verify_receipt",
    "verify_webhook",
]

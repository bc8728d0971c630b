"""The /v1 routes on the bot's aiohttp app: thin, like the Slack listeners. Parse, check the
key, hand over to the service (bot/service/api_requests.py), answer JSON."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web
from pydantic import ValidationError

from bot.agent.schema_tool import SchemaProblem, check_schema
from bot.agent.util import utcnow
from bot.api.callbacks import callback_host_allowed, private_literal
from bot.api.models import MAX_WAIT, REQUEST_ID, CancelBody, CreatedRequest, CreateRequest
from bot.api.openapi import openapi_document
from bot.api.present import REQUEST_KIND_OF, state_json
from bot.service.api_requests import ApiRefusal, ApiRequests
from bot.service.policy.api import Asked
from store.api import ApiKey, NewApiRequest

if TYPE_CHECKING:
    from bot.receipts import ReceiptSigner

log = logging.getLogger("sayso.api")

MAX_BODY_BYTES = 1024 * 1024
_STATUS = {
    "unauthorized": 401,
    "forbidden": 403,
    "not_found": 404,
    "conflict": 409,
    "too_large": 413,
    "too_many_requests": 429,
}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def error(status: int, code: str, message: str) -> web.Response:
    return web.json_response({"error": {"code": code, "message": message}}, status=status)


def refused(exc: ApiRefusal) -> web.Response:
    status = 422 if exc.slack else _STATUS.get(exc.code, 422)  # Slack's codes are its own
    return error(status, exc.code, exc.message)


def _field(loc: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in loc) or "body"


def _validation_message(exc: ValidationError) -> str:
    first = exc.errors()[0]
    return f"{_field(tuple(first.get('loc', ())))}: {first.get('msg')}"


async def _json_body(request: web.Request) -> Any:
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise ApiRefusal("too_large", "body: over 1 MB") from None
    if len(raw) > MAX_BODY_BYTES:
        raise ApiRefusal("too_large", "body: over 1 MB")
    try:
        return json.loads(raw or b"null")
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiRefusal("invalid", f"body: not valid JSON ({exc})") from None
    except RecursionError:
        raise ApiRefusal("invalid", "body: JSON nested too deeply") from None


def _request_id(request: web.Request) -> str:
    request_id = request.match_info["id"]
    if not REQUEST_ID.fullmatch(request_id):
        raise ApiRefusal("invalid", "id: not a request id (at most 64 letters, digits, - or _)")
    return request_id


def _token(request: web.Request) -> str | None:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _check_schema(body: CreateRequest) -> None:
    schema = body.json_schema
    if schema is None:
        return
    try:
        check_schema(schema)
    except SchemaProblem as exc:
        raise ApiRefusal("invalid", str(exc)) from None
    if schema.get("type") != "object":
        raise ApiRefusal("invalid", 'schema: must describe an object ("type": "object")')


def _spec(body: CreateRequest) -> dict[str, Any]:
    lines = [body.title]
    for name, value in (body.context or {}).items():
        if isinstance(value, str):
            lines.append(f"{name}: {value}")
    return {
        "description": "\n".join(lines),
        "schema": body.json_schema,
        "allowed_decisions": body.allowed_decisions,
        "context": body.context,
        "min_approvals": body.min_approvals,
        "display": body.display,
    }


def _check_decisions(body: CreateRequest) -> None:
    decisions = body.allowed_decisions
    if decisions is None:
        return
    if len(set(decisions)) != len(decisions):
        raise ApiRefusal("invalid", "allowed_decisions: each decision at most once")
    if body.json_schema is None and not set(decisions) - {"edit"}:
        raise ApiRefusal(
            "invalid", "allowed_decisions: edit needs a schema (add approve or reject, or a schema)"
        )


def new_request(api: ApiRequests, key: ApiKey, body: CreateRequest) -> NewApiRequest:
    _check_schema(body)
    _check_decisions(body)
    if body.min_approvals > 1 and body.kind != "approval":
        raise ApiRefusal("invalid", "min_approvals: only approvals take a quorum")
    if body.callback_url and not callback_host_allowed(body.callback_url, api.callback_hosts):
        raise ApiRefusal("invalid", "callback_url: its host is not one SAYSO_CALLBACK_HOSTS allows")
    if body.callback_url and private_literal(body.callback_url, api.callback_hosts):
        raise ApiRefusal(
            "invalid",
            "callback_url: a loopback, link-local or private address (name the host in "
            "SAYSO_CALLBACK_HOSTS to allow it)",
        )
    kind = REQUEST_KIND_OF[body.kind]
    if body.kind == "review":
        tool_name, arguments = "human_review", {"reason": body.title, "payload": body.context}
    elif body.kind == "question":
        tool_name, arguments = body.tool or "question", {"question": body.title}
    else:
        tool_name, arguments = body.tool or "approval", body.arguments
    channel = api.channel_for(key, body.channel)
    policy = api.policy_for(key, tool_name, arguments, _asked(body))
    needed = policy.min_approvals if body.kind == "approval" else 1  # a quorum approves
    return NewApiRequest(
        key_name=key.name,
        kind=kind,
        tool_name=tool_name,
        title=body.title,
        arguments=arguments,
        spec={**_spec(body), "min_approvals": needed},
        channel_id=channel,
        thread_ts=body.thread_ts,
        requester=body.requested_by,
        approvers=list(policy.approvers),
        allow_self_approval=policy.allow_self_approval,
        expires_at=utcnow() + policy.expires_in,
        idempotency_key=body.idempotency_key,
        callback_url=body.callback_url,
        require_reason=policy.require_reason,
        rule=policy.rule,
    )


def _asked(body: CreateRequest) -> Asked:
    """What the caller asked of the policy (fields it did not send: nothing)."""
    given = body.model_fields_set
    return Asked(
        approvers=tuple(body.approvers),
        min_approvals=body.min_approvals if "min_approvals" in given else None,
        allow_self_approval=body.allow_self_approval if "allow_self_approval" in given else None,
        expires_in=body.expires_in,
    )


DEFAULT_PER_MINUTE = 60
"""Requests per minute a key may make unless `sayso keys create --per-minute` says otherwise."""


class ApiRoutes:
    def __init__(self, api: ApiRequests, signer: ReceiptSigner | None = None) -> None:
        self.api = api
        self.signer = signer

    def add_to(self, app: web.Application) -> None:
        app.router.add_post("/v1/requests", self._guard(self.create))
        app.router.add_get("/v1/requests/{id}", self._guard(self.get))
        app.router.add_post("/v1/requests/{id}/cancel", self._guard(self.cancel))
        app.router.add_get("/v1/openapi.json", self.openapi)
        app.router.add_get("/v1/receipts/public-key", self.public_key)

    def _guard(self, handler: Callable[[web.Request, ApiKey], Awaitable[web.Response]]) -> Handler:
        async def guarded(request: web.Request) -> web.StreamResponse:
            try:
                key = await self.api.authenticate(_token(request))
                wait = await self.api.take_quota(key, key.per_minute or DEFAULT_PER_MINUTE)
                if wait is not None:
                    response = error(
                        429,
                        "too_many_requests",
                        f"key {key.name!r}: over its {key.per_minute or DEFAULT_PER_MINUTE} "
                        f"requests per minute; retry in {wait} s",
                    )
                    response.headers["Retry-After"] = str(wait)
                    return response
                return await handler(request, key)
            except ApiRefusal as exc:
                return refused(exc)

        return guarded

    async def create(self, request: web.Request, key: ApiKey) -> web.Response:
        raw = await _json_body(request)
        if not isinstance(raw, dict):
            raise ApiRefusal("invalid", "body: must be a JSON object")
        try:
            body = CreateRequest.model_validate(raw)
        except ValidationError as exc:
            raise ApiRefusal("invalid", _validation_message(exc)) from None
        if body.answered_in_client is not None:
            return await self._answered_in_client(key, body)
        created = await self.api.create(key, new_request(self.api, key, body))
        r = created.request
        answer = CreatedRequest(
            id=r.id, status="pending", channel=r.state.channel_id, message_ts=r.state.message_ts
        )
        if not created.created:
            answer = CreatedRequest(
                id=r.id,
                status=state_json(r, self.signer)["status"],
                channel=r.state.channel_id,
                message_ts=r.state.message_ts,
            )
        return web.json_response(
            answer.model_dump(mode="json"), status=201 if created.created else 200
        )

    async def _answered_in_client(self, key: ApiKey, body: CreateRequest) -> web.Response:
        """A question its caller's client already answered: stored answered, no card."""
        done = body.answered_in_client
        assert done is not None
        if body.kind != "question":
            raise ApiRefusal("invalid", "answered_in_client: only a question can be answered so")
        how = f"Answered in {done.client} (MCP elicitation)."
        r = await self.api.answered_by_caller(
            key, new_request(self.api, key, body), done.answer, how
        )
        answer = CreatedRequest(
            id=r.id,
            status=state_json(r, self.signer)["status"],
            channel=r.state.channel_id,
            message_ts=r.state.message_ts,
        )
        return web.json_response(answer.model_dump(mode="json"), status=201)

    async def get(self, request: web.Request, key: ApiKey) -> web.Response:
        request_id = _request_id(request)
        wait_text = request.query.get("wait")
        if wait_text is None:
            found, _ = await self.api.get(key, request_id)
            return web.json_response(state_json(found, self.signer))
        try:
            wait = float(wait_text)
        except ValueError:
            raise ApiRefusal("invalid", "wait: must be a number of seconds") from None
        if not 0 <= wait <= MAX_WAIT:
            raise ApiRefusal("invalid", f"wait: must be between 0 and {MAX_WAIT} seconds")
        found, _ = await self.api.wait(key, request_id, wait)
        return web.json_response(state_json(found, self.signer))

    async def cancel(self, request: web.Request, key: ApiKey) -> web.Response:
        request_id = _request_id(request)
        raw = await _json_body(request) if request.can_read_body else {}
        if not isinstance(raw, dict):
            raise ApiRefusal("invalid", "body: must be a JSON object (or no body)")
        try:
            body = CancelBody.model_validate(raw)
        except ValidationError as exc:
            raise ApiRefusal("invalid", _validation_message(exc)) from None
        detail = body.reason or "Cancelled by the caller."
        found, _ = await self.api.cancel(key, request_id, detail)
        return web.json_response(state_json(found, self.signer))

    async def public_key(self, request: web.Request) -> web.Response:
        """The public half of SAYSO_SIGNING_KEY, to check receipts with (no key needed)."""
        if self.signer is None:
            return error(404, "not_found", "receipts are off: SAYSO_SIGNING_KEY is not set")
        return web.json_response(self.signer.public_key_body())

    async def openapi(self, request: web.Request) -> web.Response:
        return web.json_response(openapi_document())

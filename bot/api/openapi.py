"""The OpenAPI 3.1 document of /v1, from the same pydantic models that validate requests."""

from __future__ import annotations

from functools import cache
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from bot.api.models import CancelBody, CreatedRequest, CreateRequest, ErrorBody, RequestState

_REF = "#/components/schemas/{model}"


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": _REF.format(model=name)}


def _json(name: str, description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _ref(name)}}}


def _errors(*codes: int) -> dict[str, Any]:
    what = {
        401: "No key, or an unknown or revoked key.",
        403: "The key may not post in that channel.",
        404: "No such request for this key.",
        409: "The idempotency key was used for a different request.",
        413: "Body over 1 MB.",
        422: "Invalid input (the message names the field), or Slack refused the card.",
    }
    return {str(c): _json("ErrorBody", what[c]) for c in codes}


_ID = {
    "name": "id",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
}
_WAIT = {
    "name": "wait",
    "in": "query",
    "required": False,
    "description": "Long-poll up to this many seconds for the decision.",
    "schema": {"type": "number", "minimum": 0, "maximum": 60},
}


@cache
def openapi_document() -> dict[str, Any]:
    # Longer than 60 lines because the OpenAPI document is one literal, read top to bottom.
    models: list[tuple[type[BaseModel], Literal["validation"]]] = [
        (m, "validation")
        for m in (CreateRequest, CancelBody, CreatedRequest, RequestState, ErrorBody)
    ]
    _, schemas = models_json_schema(models, ref_template=_REF)
    request = {"$ref": _REF.format(model="CreateRequest")}
    return {
        "openapi": "3.1.0",
        "info": {"title": "sayso approval API", "version": "1"},
        "components": {
            "schemas": schemas.get("$defs", {}),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
        "paths": {
            "/v1/requests": {
                "post": {
                    "summary": "Create a request and post its card",
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": request}},
                    },
                    "responses": {
                        "201": _json("CreatedRequest", "Created."),
                        "200": _json("CreatedRequest", "The request of this idempotency key."),
                        **_errors(401, 403, 409, 413, 422),
                    },
                }
            },
            "/v1/requests/{id}": {
                "get": {
                    "summary": "A request and its decision",
                    "parameters": [_ID, _WAIT],
                    "responses": {
                        "200": _json("RequestState", "The request."),
                        **_errors(401, 404, 422),
                    },
                }
            },
            "/v1/requests/{id}/cancel": {
                "post": {
                    "summary": "Cancel a pending request",
                    "parameters": [_ID],
                    "requestBody": {
                        "required": False,
                        "content": {"application/json": {"schema": _ref("CancelBody")}},
                    },
                    "responses": {
                        "200": _json("RequestState", "The request."),
                        **_errors(401, 404, 413, 422),
                    },
                }
            },
            "/v1/openapi.json": {
                "get": {
                    "summary": "This document",
                    "security": [],
                    "responses": {"200": {"description": "OpenAPI 3.1"}},
                }
            },
        },
    }

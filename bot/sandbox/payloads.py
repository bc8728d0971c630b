"""The request bodies Slack sends to an app, built from sandbox data.

Shapes follow Slack's documented payloads (slash commands, block_actions, view_submission,
view_closed, Events API envelopes) so that slack-bolt parses them as it parses Slack's own.
"""

from __future__ import annotations

import time
from typing import Any

from bot.sandbox.state import APP_ID, BOT_USER_ID, TEAM_DOMAIN, TEAM_ID, Person, new_id

VERIFICATION_TOKEN = "sandbox-verification-token"  # legacy field; bolt ignores it


def team() -> dict[str, str]:
    return {"id": TEAM_ID, "domain": TEAM_DOMAIN}


def user_ref(person: Person) -> dict[str, str]:
    return {
        "id": person.id,
        "username": person.name.lower(),
        "name": person.name.lower(),
        "team_id": person.team_id,
    }


def action_ts() -> str:
    return f"{time.time():.6f}"


def slash_command(
    person: Person,
    channel: dict[str, Any],
    command: str,
    text: str,
    response_url: str,
    trigger_id: str,
) -> dict[str, str]:
    return {
        "token": VERIFICATION_TOKEN,
        "team_id": TEAM_ID,
        "team_domain": TEAM_DOMAIN,
        "channel_id": channel["id"],
        "channel_name": channel["name"],
        "user_id": person.id,
        "user_name": person.name.lower(),
        "command": command,
        "text": text,
        "api_app_id": APP_ID,
        "is_enterprise_install": "false",
        "response_url": response_url,
        "trigger_id": trigger_id,
    }


def action(element: dict[str, Any], block_id: str, selected: Any = None) -> dict[str, Any]:
    """One entry of block_actions' `actions` for the element a person used."""
    kind = element.get("type", "button")
    entry: dict[str, Any] = {
        "action_id": element.get("action_id"),
        "block_id": block_id,
        "type": kind,
        "action_ts": action_ts(),
    }
    if kind == "button":
        entry["text"] = element.get("text")
        if "value" in element:
            entry["value"] = element["value"]
        if element.get("style"):
            entry["style"] = element["style"]
    elif kind in ("static_select", "overflow", "radio_buttons"):
        entry["selected_option"] = selected
    elif kind in ("multi_static_select", "checkboxes"):
        entry["selected_options"] = selected or []
    elif kind == "users_select":
        entry["selected_user"] = selected
    elif kind == "datepicker":
        entry["selected_date"] = selected
    else:
        entry["value"] = selected
    return entry


def block_actions(
    person: Person,
    actions: list[dict[str, Any]],
    trigger_id: str,
    *,
    container: dict[str, Any],
    channel: dict[str, Any] | None = None,
    message: dict[str, Any] | None = None,
    view: dict[str, Any] | None = None,
    response_url: str | None = None,
    state: dict[str, Any] | None = None,
) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "type": "block_actions",
        "user": user_ref(person),
        "api_app_id": APP_ID,
        "token": VERIFICATION_TOKEN,
        "container": container,
        "trigger_id": trigger_id,
        "team": team(),
        "enterprise": None,
        "is_enterprise_install": False,
    }
    if channel is not None:
        payload["channel"] = {"id": channel["id"], "name": channel["name"]}
    if message is not None:
        payload["message"] = message
    if view is not None:
        payload["view"] = view
    payload["state"] = state or {"values": {}}
    if response_url is not None:
        payload["response_url"] = response_url
    payload["actions"] = actions
    return payload


def _view_payload(kind: str, person: Person, view: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "team": team(),
        "user": user_ref(person),
        "api_app_id": APP_ID,
        "token": VERIFICATION_TOKEN,
        **fields,
        "view": view,
        "is_enterprise_install": False,
        "enterprise": None,
    }


def view_submission(person: Person, view: dict[str, Any], trigger_id: str) -> dict[str, Any]:
    return _view_payload("view_submission", person, view, trigger_id=trigger_id) | {
        "response_urls": []
    }


def view_closed(person: Person, view: dict[str, Any], is_cleared: bool) -> dict[str, Any]:
    return _view_payload("view_closed", person, view) | {"is_cleared": is_cleared}


def event_callback(event: dict[str, Any]) -> dict[str, Any]:
    """The Events API envelope around one event, with a fresh event_id."""
    return {
        "token": VERIFICATION_TOKEN,
        "team_id": TEAM_ID,
        "context_team_id": TEAM_ID,
        "api_app_id": APP_ID,
        "event": event,
        "type": "event_callback",
        "event_id": new_id("Ev", 12),
        "event_time": int(time.time()),
        "authorizations": [
            {
                "enterprise_id": None,
                "team_id": TEAM_ID,
                "user_id": BOT_USER_ID,
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ],
        "is_ext_shared_channel": False,
        "event_context": new_id("4-", 20),
    }


def rich_text(text: str) -> list[dict[str, Any]]:
    """The rich_text block Slack attaches to a person's plain message."""
    return [
        {
            "type": "rich_text",
            "block_id": new_id("", 5),
            "elements": [
                {"type": "rich_text_section", "elements": [{"type": "text", "text": text}]}
            ],
        }
    ]

"""Modal and App Home views: building Slack view objects and their input state."""

from __future__ import annotations

import secrets
from typing import Any

from bot.sandbox.state import APP_ID, BOT_ID, TEAM_ID, OpenView, Workspace, new_id

INPUT_VALUE_TYPES = {"plain_text_input", "number_input", "email_text_input", "url_text_input"}
SINGLE_OPTION_TYPES = {"static_select", "radio_buttons", "external_select"}
MULTI_OPTION_TYPES = {"multi_static_select", "checkboxes", "multi_external_select"}


def new_hash() -> str:
    return f"{secrets.randbelow(10**10)}.{secrets.token_hex(4)}"


def build_view(
    spec: dict[str, Any], *, view_id: str | None = None, previous: OpenView | None = None
) -> dict[str, Any]:
    """A full view object as Slack returns it, from the view the bot sent."""
    view_id = view_id or new_id("V")
    view = {
        "id": view_id,
        "team_id": TEAM_ID,
        "type": spec.get("type", "modal"),
        "blocks": spec.get("blocks", []),
        "private_metadata": spec.get("private_metadata", ""),
        "callback_id": spec.get("callback_id", ""),
        "state": {"values": {}},
        "hash": new_hash(),
        "title": spec.get("title"),
        "clear_on_close": bool(spec.get("clear_on_close", False)),
        "notify_on_close": bool(spec.get("notify_on_close", False)),
        "close": spec.get("close"),
        "submit": spec.get("submit"),
        "previous_view_id": None,
        "root_view_id": view_id,
        "app_id": APP_ID,
        "external_id": spec.get("external_id", ""),
        "app_installed_team_id": TEAM_ID,
        "bot_id": BOT_ID,
    }
    if previous is not None:
        view["previous_view_id"] = previous.view["id"]
        view["root_view_id"] = previous.view["root_view_id"]
    return view


def replace_view(stored: OpenView, spec: dict[str, Any]) -> dict[str, Any]:
    """views.update / response_action update: same id, new content, new hash, errors cleared."""
    old = stored.view
    view = build_view(spec, view_id=old["id"])
    view["previous_view_id"] = old.get("previous_view_id")
    view["root_view_id"] = old.get("root_view_id", old["id"])
    if not spec.get("external_id"):
        view["external_id"] = old.get("external_id", "")
    stored.view = view
    stored.errors = {}
    return view


def push_view(ws: Workspace, user: str, spec: dict[str, Any]) -> OpenView:
    """Open a modal on top of the person's stack (the first one when the stack is empty)."""
    stack = ws.stacks.setdefault(user, [])
    previous = ws.views[stack[-1]] if stack else None
    stored = OpenView(view=build_view(spec, previous=previous), user=user)
    ws.views[stored.view["id"]] = stored
    stack.append(stored.view["id"])
    return stored


def input_elements(view: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    """block_id -> (action_id, element) of each input block, in order."""
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for i, block in enumerate(view.get("blocks") or []):
        if block.get("type") != "input" or not isinstance(block.get("element"), dict):
            continue
        element = block["element"]
        block_id = block.get("block_id") or f"input_{i}"
        found[block_id] = (element.get("action_id") or f"action_{i}", element)
    return found


def find_option(element: dict[str, Any], value: str) -> dict[str, Any]:
    options = list(element.get("options") or [])
    for group in element.get("option_groups") or []:
        options.extend(group.get("options") or [])
    for option in options:
        if option.get("value") == value:
            return option
    values = [o.get("value") for o in options]
    raise ValueError(f"option {value!r} is not one of {values}")


def element_state(element: dict[str, Any], value: Any) -> dict[str, Any]:
    """The state.values entry Slack sends for an input element holding `value`.

    `value` None means "take the element's initial value".
    """
    kind = element.get("type", "")
    if kind in INPUT_VALUE_TYPES:
        if value is None:
            value = element.get("initial_value")
        return {"type": kind, "value": value if value != "" else None}
    if kind in SINGLE_OPTION_TYPES:
        option = element.get("initial_option") if value is None else find_option(element, value)
        return {"type": kind, "selected_option": option}
    if kind in MULTI_OPTION_TYPES:
        if value is None:
            selected = element.get("initial_options") or []
        else:
            values = [value] if isinstance(value, str) else list(value)
            selected = [find_option(element, v) for v in values]
        return {"type": kind, "selected_options": selected}
    if kind == "datepicker":
        return {"type": kind, "selected_date": value or element.get("initial_date")}
    if kind == "users_select":
        return {"type": kind, "selected_user": value or element.get("initial_user")}
    if kind == "conversations_select":
        chosen = value or element.get("initial_conversation")
        return {"type": kind, "selected_conversation": chosen}
    return {"type": kind, "value": value}


def is_empty(state: dict[str, Any]) -> bool:
    for key in ("value", "selected_option", "selected_date", "selected_user"):
        if key in state:
            return not state[key]
    if "selected_options" in state:
        return not state["selected_options"]
    return False


def state_values(
    view: dict[str, Any], values: dict[str, Any]
) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """(state.values, client-side errors) for a submission; errors as Slack's client shows."""
    inputs = input_elements(view)
    unknown = set(values) - set(inputs)
    if unknown:
        raise ValueError(f"no input blocks {sorted(unknown)} in view (has {sorted(inputs)})")
    state: dict[str, dict[str, Any]] = {}
    errors: dict[str, str] = {}
    for i, (block_id, (action_id, element)) in enumerate(inputs.items()):
        entry = element_state(element, values.get(block_id))
        state[block_id] = {action_id: entry}
        block = [b for b in view["blocks"] if b.get("type") == "input"][i]
        if is_empty(entry) and not block.get("optional", False):
            errors[block_id] = "Please fill out this field."
            continue
        text = entry.get("value")
        if isinstance(text, str):
            if element.get("max_length") and len(text) > element["max_length"]:
                errors[block_id] = f"Must be at most {element['max_length']} characters."
            if element.get("min_length") and len(text) < element["min_length"]:
                errors[block_id] = f"Must be at least {element['min_length']} characters."
    return state, errors

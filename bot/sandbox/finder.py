"""Finding the interactive element a person uses in a list of blocks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.sandbox.views import MULTI_OPTION_TYPES, find_option


@dataclass
class Found:
    element: dict[str, Any]
    block_id: str
    selected: Any = None


def interactive_elements(blocks: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(block_id, element) for every element with an action_id, in page order."""
    found: list[tuple[str, dict[str, Any]]] = []
    for block in blocks:
        block_id = block.get("block_id", "")
        elements = list(block.get("elements") or []) if block.get("type") == "actions" else []
        for key in ("accessory", "element"):
            if isinstance(block.get(key), dict):
                elements.append(block[key])
        for element in elements:
            if isinstance(element, dict) and element.get("action_id"):
                found.append((block_id, element))
    return found


def find_element(
    blocks: list[dict[str, Any]], action_id: str, block_id: str | None, value: Any
) -> Found:
    """The element with `action_id` (and `block_id`); `value` picks among same-id buttons or
    selects an option. Raises LookupError listing what exists."""
    candidates = [
        (b, e)
        for b, e in interactive_elements(blocks)
        if e.get("action_id") == action_id and (block_id is None or b == block_id)
    ]
    buttons = [(b, e) for b, e in candidates if e.get("type") == "button"]
    if value is not None and len(buttons) > 1:
        candidates = [(b, e) for b, e in buttons if e.get("value") == value] or candidates
    if not candidates:
        available = [f"{b}/{e.get('action_id')}" for b, e in interactive_elements(blocks)]
        raise LookupError(
            f"no element with action_id {action_id!r}"
            + (f" in block {block_id!r}" if block_id else "")
            + f"; available block_id/action_id: {available}"
        )
    found_block, element = candidates[0]
    kind = element.get("type")
    selected: Any = None
    if kind == "button":
        if value is not None and element.get("value") != value:
            raise LookupError(
                f"button {action_id!r} has value {element.get('value')!r}, not {value!r}"
            )
    elif kind in MULTI_OPTION_TYPES:
        values = [] if value is None else [value] if isinstance(value, str) else list(value)
        selected = [find_option(element, v) for v in values]
    elif kind in ("static_select", "overflow", "radio_buttons"):
        if value is None:
            raise LookupError(f"{kind} {action_id!r} needs value= (an option value)")
        selected = find_option(element, value)
    else:
        selected = value
    return Found(element=element, block_id=found_block, selected=selected)

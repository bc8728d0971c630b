"""Modals: edit arguments, reject with a reason, answer a call, review a pause, view arguments.

Every modal's private_metadata is the approval request id only; every input's action_id is
`value`. Non-input blocks use ids with a colon (BlockId.MODAL_INTRO) so they never clash with an
argument name.
"""

from __future__ import annotations

from typing import Any

from bot.slack.blocks import limits as L
from bot.slack.blocks.cards import INTERRUPTED, _q, payload_text
from bot.slack.blocks.data import CardInfo
from bot.slack.blocks.fields import (
    ACTION_ID,
    BOOL_OPTIONS,
    Field,
    fields_of,
    initial_text,
    option_value,
    parse_edit,
    parse_value,
)
from bot.slack.blocks.fmt import compact_json, pretty_json
from bot.slack.ids import BlockId, CallbackId

__all__ = [
    "answer_modal",
    "edit_modal",
    "parse_answer",
    "parse_edit",
    "parse_reason",
    "parse_review",
    "reject_modal",
    "review_modal",
    "view_args_modal",
]

_MISSING = object()
JSON_HINT = 'Enter JSON, for example {"key": "value"}.'


def _modal(
    callback_id: CallbackId,
    title: str,
    card: CardInfo,
    blocks: list[dict[str, Any]],
    submit: str | None,
    close: str,
) -> dict[str, Any]:
    view: dict[str, Any] = {
        "type": "modal",
        "callback_id": callback_id,
        "title": L.plain(title, L.MODAL_TITLE),
        "close": L.plain(close, L.MODAL_BUTTON),
        "private_metadata": L.check_ref(card.request_id, "request id", L.PRIVATE_METADATA),
        "blocks": blocks,
    }
    if submit:
        view["submit"] = L.plain(submit, L.MODAL_BUTTON)
    return view


def _text_input(initial: str | None = None, multiline: bool = False) -> dict[str, Any]:
    el: dict[str, Any] = {
        "type": "plain_text_input",
        "action_id": ACTION_ID,
        "multiline": multiline,
        "max_length": L.INPUT_MAX_LENGTH,
    }
    if initial:
        el["initial_value"] = initial
    return el


def _input(
    bid: str, label: str, element: dict[str, Any], optional: bool, hint: str = ""
) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "input",
        "block_id": bid,
        "optional": optional,
        "label": L.plain(label, L.INPUT_LABEL),
        "element": element,
    }
    if hint.strip():
        block["hint"] = L.plain(hint, L.INPUT_HINT)
    return block


def _option(value: str) -> dict[str, Any]:
    return {"text": L.plain(value, L.OPTION_TEXT), "value": value}


def _select(values: list[str], initial: str | None) -> dict[str, Any]:
    el: dict[str, Any] = {
        "type": "static_select",
        "action_id": ACTION_ID,
        "options": [_option(v) for v in values],
    }
    if initial is not None and initial in values:
        el["initial_option"] = _option(initial)
    return el


def _hint(f: Field) -> str:
    parts = [f.description.strip()] if f.description.strip() else []
    parts.append(
        {
            "integer": "A whole number.",
            "number": "A number.",
            "json": JSON_HINT,
        }.get(f.kind, "")
    )
    if not f.required:
        default = f" ({L.cut_text(compact_json(f.default), 200)})" if f.has_default else ""
        parts.append(f"Optional: leave empty to use the default{default}.")
    return " ".join(p for p in parts if p)


def _edit_element(f: Field, value: Any) -> dict[str, Any] | None:
    """The input element for one field, or None when the value is too long to edit here."""
    if f.kind == "boolean":
        return _select(list(BOOL_OPTIONS), None if value is _MISSING else compact_json(value))
    if f.kind == "enum":
        values = list(dict.fromkeys(option_value(m) for m in f.enum))
        if len(values) <= L.SELECT_OPTIONS and all(len(v) <= L.OPTION_VALUE for v in values):
            initial = None if value is _MISSING else option_value(value)
            return _select(values, initial)
    if value is _MISSING or (value is None and f.kind != "json"):
        text = None
    else:
        text = initial_text(f, value)
    if text is not None and len(text) > L.INPUT_MAX_LENGTH:
        return None
    multiline = f.kind == "json" or (text is not None and ("\n" in text or len(text) > 150))
    return _text_input(text, multiline)


SENSITIVE_HINT = "Sensitive: not shown. Leave blank to keep the current value, or type a new one."


def edit_modal(card: CardInfo) -> dict[str, Any]:
    """One input per top-level argument (block_id = the name), prefilled with the model's value."""
    intro = f"Edit the arguments of {_q(card.tool_name)} for agent *{L.escape(card.agent_id)}*."
    intro += " Submitting approves the call with these values."
    blocks: list[dict[str, Any]] = [L.section(intro, BlockId.MODAL_INTRO)]
    if card.interrupted:
        blocks.append(L.section(INTERRUPTED, BlockId.MODAL_INTERRUPTED))
    kept: list[str] = []
    inputs = 0
    room = L.VIEW_BLOCKS - len(blocks) - 1
    for f in fields_of(card.parameters, card.arguments):
        secret = f.name in card.sensitive  # never prefilled: blank keeps the current value
        value = _MISSING if secret else card.arguments.get(f.name, _MISSING)
        element = None
        if len(blocks) < room + 1 and 0 < len(f.name) <= L.BLOCK_ID and ":" not in f.name:
            element = _text_input(None, False) if secret else _edit_element(f, value)
        if element is None:
            if value is not _MISSING:
                kept.append(f.name)
            continue
        hint = SENSITIVE_HINT if secret else _hint(f)
        blocks.append(_input(f.name, f.name, element, secret or not f.required, hint))
        inputs += 1
    if kept:
        names = ", ".join(_q(L.cut_text(n, 60)) for n in kept)
        text = f"*Kept as proposed* (too long or too many to edit here): {names}"
        blocks.append(L.section(text, BlockId.MODAL_KEPT))
    elif not inputs:
        blocks.append(L.section("This tool takes no arguments to edit.", BlockId.MODAL_EMPTY))
    if card.require_reason:
        blocks.append(_reason_input(BlockId.EDIT_REASON_INPUT))
    return _modal(CallbackId.EDIT, "Edit arguments", card, blocks, "Approve with edits", "Cancel")


def _reason_input(bid: BlockId) -> dict[str, Any]:
    return _input(
        bid,
        "Why do you approve?",
        _text_input(multiline=True),
        optional=False,
        hint="Required for this tool: it is stored, shown on the card and given to the tool.",
    )


def approve_modal(card: CardInfo) -> dict[str, Any]:
    """Approve with a reason (a tool or rule with `require_reason`): the reason is required."""
    intro = (
        f"Approve {_q(card.tool_name)} for agent *{L.escape(card.agent_id)}* with the "
        "arguments below. This request needs a reason."
    )
    blocks = [
        L.section(intro, BlockId.MODAL_INTRO),
        L.section(_args_preview(card), BlockId.MODAL_ARGS),
        _reason_input(BlockId.REASON_INPUT),
    ]
    return _modal(CallbackId.APPROVE, "Approve request", card, blocks, "Approve", "Cancel")


def parse_edit_reason(values: dict[str, Any]) -> str | None:
    """The reason given in an edit modal that asks for one."""
    return _typed(values, BlockId.EDIT_REASON_INPUT) or None


def reject_modal(card: CardInfo) -> dict[str, Any]:
    """Ask for an optional reason; empty means the default reason."""
    what = "this review" if card.kind == "review" else _q(card.tool_name)
    intro = (
        f"Reject {what} for agent *{L.escape(card.agent_id)}*? The model is told, with your reason."
    )
    blocks = [
        L.section(intro, BlockId.MODAL_INTRO),
        _input(
            BlockId.REASON_INPUT,
            "Reason (optional)",
            _text_input(multiline=True),
            optional=True,
            hint="Leave empty to use the default reason.",
        ),
    ]
    return _modal(CallbackId.REJECT, "Reject request", card, blocks, "Reject", "Cancel")


def _typed(values: dict[str, Any], block: BlockId) -> str:
    """What the person typed in one text input of a submitted modal, stripped ("" if none)."""
    entry = (values.get(block) or {}).get(ACTION_ID) or {}
    text = entry.get("value") if isinstance(entry, dict) else None
    return text.strip() if isinstance(text, str) else ""


def parse_reason(values: dict[str, Any]) -> str | None:
    """The reason (of a reject, or of an approval that needs one), or None."""
    return _typed(values, BlockId.REASON_INPUT) or None


def _args_preview(card: CardInfo) -> str:
    return L.code_block(pretty_json(card.arguments), L.SECTION_TEXT, L.ARGS_CUT_NOTE)[0]


def answer_modal(card: CardInfo) -> dict[str, Any]:
    """The answer to a hitl question or the result of a manual step (JSON for object outputs)."""
    manual = card.kind == "manual"
    what = "Do this step and enter its result" if manual else "The agent asks"
    intro = f"{what}: {_q(card.tool_name)} for agent *{L.escape(card.agent_id)}*."
    label = "Result" if manual else "Your answer"
    hint = JSON_HINT if card.returns_object else "The agent continues with this text."
    blocks = [
        L.section(intro, BlockId.MODAL_INTRO),
        L.section(_args_preview(card), BlockId.MODAL_ARGS),
        _input(BlockId.ANSWER_INPUT, label, _text_input(multiline=True), optional=False, hint=hint),
    ]
    title = "Enter result" if manual else "Answer"
    return _modal(CallbackId.ANSWER, title, card, blocks, "Send", "Cancel")


def parse_answer(values: dict[str, Any], returns_object: bool) -> tuple[Any, dict[str, str]]:
    """(answer, errors by block_id): text, or parsed JSON when the tool returns an object."""
    text = _typed(values, BlockId.ANSWER_INPUT)
    if not text:
        return None, {BlockId.ANSWER_INPUT: "Enter an answer."}
    if not returns_object:
        return text, {}
    try:
        return parse_value(Field(BlockId.ANSWER_INPUT, "json", True), text), {}
    except ValueError as exc:
        return None, {BlockId.ANSWER_INPUT: str(exc)}


def review_modal(card: CardInfo) -> dict[str, Any]:
    """Reply to a human review pause: the reason, the payload, and a multiline input."""
    args = card.arguments if isinstance(card.arguments, dict) else {}
    reason = str(args.get("reason") or "The agent asks for a review.")
    payload = args.get("payload")
    blocks = [L.section("*Why:* " + L.escape(reason), BlockId.MODAL_INTRO)]
    if payload not in (None, ""):
        blocks.append(L.section(payload_text(payload)[0], BlockId.MODAL_PAYLOAD))
    blocks.append(
        _input(
            BlockId.REVIEW_INPUT,
            "Your reply",
            _text_input(multiline=True),
            optional=False,
            hint="The agent continues with what you write here.",
        )
    )
    return _modal(CallbackId.REVIEW, "Review", card, blocks, "Send", "Cancel")


def parse_review(values: dict[str, Any]) -> tuple[str, dict[str, str]]:
    """(text, errors by block_id); empty is an error on block `input`."""
    text = _typed(values, BlockId.REVIEW_INPUT)
    if not text:
        return "", {BlockId.REVIEW_INPUT: "Write a reply before sending."}
    return text, {}


def view_args_modal(card: CardInfo) -> dict[str, Any]:
    """All the arguments as pretty JSON in code sections (≤ 100 blocks, cut with a note)."""
    args = card.arguments if isinstance(card.arguments, dict) else {}
    if card.kind == "review" and isinstance(args.get("payload"), str):
        raw = args["payload"]
    else:
        raw = pretty_json(card.arguments)
    raw = L.nonempty(L.break_backticks(raw), "{}")
    what = "Review payload" if card.kind == "review" else f"Arguments of {_q(card.tool_name)}"
    intro = f"{what} for agent *{L.escape(card.agent_id)}* ({len(raw):,} characters)."
    blocks: list[dict[str, Any]] = [L.context([intro], BlockId.MODAL_INTRO)]
    chunks = L.split_text(raw, L.SECTION_TEXT - L.FENCE)
    room = L.VIEW_BLOCKS - len(blocks) - 1
    for i, chunk in enumerate(chunks[:room]):
        blocks.append(L.section(L.fence(chunk), L.block_id(BlockId.ARGS_PREFIX, str(i))))
    if len(chunks) > room:
        rest = sum(len(c) for c in chunks[room:])
        note = f"… (cut: {rest:,} more characters: too long to show in Slack)"
        blocks.append(L.context([note], BlockId.MODAL_CUT))
    return _modal(CallbackId.VIEW_ARGS, "Full arguments", card, blocks, None, "Close")


def loading_modal() -> dict[str, Any]:
    """Opened at once on a click (the trigger id lives 3 s), filled in with views.update."""
    return notice_modal("One moment", ":hourglass: Loading…")


def notice_modal(title: str, text: str) -> dict[str, Any]:
    """A modal with one message and a Close button (a loading view, or why not)."""
    return {
        "type": "modal",
        "callback_id": CallbackId.NOTICE,
        "title": L.plain(title, L.MODAL_TITLE),
        "close": L.plain("Close", L.MODAL_BUTTON),
        "blocks": [L.section(L.escape(L.cut_text(text, 2000)), BlockId.MODAL_INTRO)],
    }

"""Contract ids keep their values, and every id a builder emits has a listener."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from bot.sandbox import payloads
from bot.slack.blocks import cards, home, messages, modals
from bot.slack.blocks import standing as standing_blocks
from bot.slack.blocks.data import CardInfo, RunInfo
from bot.slack.ids import SLASH_COMMAND, ActionId, BlockId, CallbackId
from tests.slack_listeners.helpers import world

# Cards already posted in Slack carry these strings: a new value would orphan their buttons.
ACTION_IDS = {
    "APPROVE": "approve",
    "EDIT": "edit",
    "REJECT": "reject",
    "ANSWER": "answer",
    "REVIEW": "review",
    "VIEW_ARGS": "view_args",
    "RETRY": "retry",
    "CANCEL": "cancel",
    "VALUE": "value",
    "APPROVE_ALWAYS": "approve_always",
    "REVOKE": "revoke",
}
CALLBACK_IDS = {
    "EDIT": "sayso_edit",
    "REJECT": "sayso_reject",
    "ANSWER": "sayso_answer",
    "REVIEW": "sayso_review",
    "VIEW_ARGS": "sayso_view_args",
    "HOME": "sayso_home",
    "APPROVE": "sayso_approve",
    "NOTICE": "sayso_notice",
}
BLOCK_IDS = {
    "CARD_HEADER": "card_header",
    "CARD_META": "card_meta",
    "CARD_INTERRUPTED": "card_interrupted",
    "CARD_ARGS": "card_args",
    "CARD_DISPLAY": "card_display",
    "CARD_DEFAULTS": "card_defaults",
    "CARD_CHANGES": "card_changes",
    "CARD_REASON": "card_reason",
    "CARD_ANSWER": "card_answer",
    "CARD_REASON_FOR_REVIEW": "card_reason_for_review",
    "CARD_QUORUM": "card_quorum",
    "ESCALATION_PREFIX": "escalation",
    "GRANT_PREFIX": "grant",
    "GRANT_ACTIONS_PREFIX": "grant_actions",
    "AUTO_APPROVED": "auto_approved",
    "EDIT_REASON_INPUT": "sayso:reason",
    "DECISION_PREFIX": "decision",
    "ACTIONS_PREFIX": "actions",
    "REMINDER_PREFIX": "reminder",
    "HOME_CARD_PREFIX": "home_card",
    "HOME_WAITING_HEADER": "home_waiting_header",
    "HOME_WAITING_EMPTY": "home_waiting_empty",
    "HOME_WAITING_MORE": "home_waiting_more",
    "HOME_DIVIDER": "home_divider",
    "HOME_RUNS_HEADER": "home_runs_header",
    "HOME_RUNS_EMPTY": "home_runs_empty",
    "HOME_RUNS_PREFIX": "home_runs",
    "RUN_REQUEST": "run_request",
    "RUN_STATUS": "run_status",
    "RUN_ERROR": "run_error",
    "RUN_HELP": "run_help",
    "RUN_ACTIONS": "run_actions",
    "RUN_CONTROLS": "run_controls",
    "PROGRESS": "progress",
    "RUN_ACTIVITY": "run_activity",
    "CARD_ELSEWHERE_PREFIX": "card_elsewhere",
    "ANSWER_PREFIX": "answer",
    "ANSWER_FOOTER": "answer_footer",
    "HELP_HEADER": "help_header",
    "HELP_USAGE": "help_usage",
    "HELP_EMPTY": "help_empty",
    "HELP_MORE": "help_more",
    "AGENT_PREFIX": "agent",
    "EPHEMERAL": "ephemeral",
    "REASON_INPUT": "reason",
    "ANSWER_INPUT": "answer",
    "REVIEW_INPUT": "input",
    "MODAL_INTRO": "sayso:intro",
    "MODAL_INTERRUPTED": "sayso:interrupted",
    "MODAL_KEPT": "sayso:kept",
    "MODAL_EMPTY": "sayso:empty",
    "MODAL_ARGS": "sayso:args",
    "MODAL_PAYLOAD": "sayso:payload",
    "MODAL_CUT": "sayso:cut",
    "ARGS_PREFIX": "args",
}


def _values(ids: type[StrEnum]) -> dict[str, str]:
    return {name: member.value for name, member in ids.__members__.items()}


def test_contract_ids_keep_their_values() -> None:
    assert _values(ActionId) == ACTION_IDS
    assert _values(CallbackId) == CALLBACK_IDS
    assert _values(BlockId) == BLOCK_IDS  # ANSWER_INPUT is another name for ANSWER_PREFIX
    assert SLASH_COMMAND == "/sayso"


def _card(kind: str, **kw: Any) -> CardInfo:
    long = "x" * 4000  # long enough for "View full arguments"
    arguments = {"reason": "check", "payload": long} if kind == "review" else {"version": long}
    return CardInfo(
        request_id="R_GONE",
        run_id="RUN_GONE",
        agent_id="ops",
        tool_name="human_review" if kind == "review" else "deploy",
        kind=kind,  # type: ignore[arg-type]
        arguments=arguments,
        **kw,
    )


def _surfaces() -> list[dict[str, Any]]:
    """A message or view of every builder that carries buttons or a submit button."""
    all_cards = [_card(k) for k in ("approval", "manual", "hitl", "review")]
    run = RunInfo(run_id="RUN_GONE", agent_id="ops", status="failed", request_text="deploy")
    forms = [
        modals.edit_modal,
        modals.reject_modal,
        modals.answer_modal,
        modals.review_modal,
        modals.approve_modal,
    ]
    return [
        *(cards.request_card(c) for c in all_cards),
        *(cards.request_card(_card("approval", status="approved")),),
        cards.request_card(_card("approval", standing_seconds=3600)),
        standing_blocks.standing_message("G_GONE", "deploy", "U_APPROVER", datetime.now(UTC)),
        messages.run_failed(run, "boom"),
        messages.root_message(RunInfo("RUN_GONE", "ops", "running", "deploy")),
        home.home_view(all_cards, 4, [run], user_id="U_MEMBER"),
        *(form(_card("approval")) for form in forms),
        modals.view_args_modal(_card("approval")),
    ]


def _buttons(surface: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (block["block_id"], element)
        for block in surface.get("blocks", [])
        if block.get("type") == "actions"
        for element in block.get("elements", [])
        if element.get("type") == "button"
    ]


def test_the_surfaces_show_every_button_and_form() -> None:
    surfaces = _surfaces()
    action_ids = {e["action_id"] for s in surfaces for _, e in _buttons(s)}
    forms = {s["callback_id"] for s in surfaces if "submit" in s}
    assert action_ids == set(ActionId) - {ActionId.VALUE}  # inputs send nothing until submit
    # views nobody submits: full arguments, App Home, and the notice a refusal fills in
    assert forms == set(CallbackId) - {CallbackId.VIEW_ARGS, CallbackId.HOME, CallbackId.NOTICE}


async def test_every_button_and_form_the_builders_make_has_a_listener(tmp_path: Path) -> None:
    """Each id reaches the full app over signed HTTP: 200, where an unknown one gets 404."""
    async with world(tmp_path) as w:
        await w.serve(w.bot.app)
        person = w.sandbox.person("U_MEMBER")
        container = {"type": "view", "view_id": "V_HOME"}
        clicks = {
            element["action_id"]: payloads.block_actions(
                person,
                [payloads.action(element, block_id)],
                w.sandbox.issue_trigger("U_MEMBER"),
                container=container,
            )
            for surface in _surfaces()
            for block_id, element in _buttons(surface)
        }
        unknown = {"type": "button", "action_id": "not_a_sayso_button", "value": "R_GONE"}
        stray = payloads.block_actions(
            person, [payloads.action(unknown, "b")], "T_STRAY", container=container
        )
        assert (await w.sandbox.send_payload("block_actions", stray)).status == 404
        for action_id, payload in clicks.items():
            delivery = await w.sandbox.send_payload("block_actions", payload)
            assert delivery.status == 200, action_id
        for surface in _surfaces():
            if "submit" not in surface:
                continue
            view = {**surface, "id": "V_FORM", "state": {"values": {}}}
            submission = payloads.view_submission(person, view, "T_FORM")
            delivery = await w.sandbox.send_payload("view_submission", submission)
            assert delivery.status == 200, surface["callback_id"]
        # each button's listener, after its ack, tells the person the request is gone: in a
        # DM, or in the modal a form button opened at once (a loading view, then views.update)
        await w.sandbox.wait_for(
            lambda sb: (
                len(sb.calls_to("chat.postMessage")) + len(sb.calls_to("views.update"))
                >= len(clicks)
            )
        )

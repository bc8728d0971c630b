"""SAYSO_POLICY overrides the code's settings; SIGHUP reloads it: new requests use the new
policy, requests already created keep theirs."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from tests.e2e.flows import card_request_id, start_deploy, wait_answer
from tests.e2e.harness import Harness, message_text
from tests.test_policy_file import GOOD, write


async def test_the_file_overrides_the_code_and_sighup_reloads_it(
    harness: Harness, tmp_path: Path
) -> None:
    h = harness
    path = write(tmp_path, GOOD.replace("[S_APPROVERS]", "[U_APPROVER2]"))
    await h.stop_bot()
    h.settings_overrides = {"sayso_policy": path}
    await h.start_bot()
    first = await start_deploy(h)  # staging: no rule; only U_APPROVER2 (the file) may decide
    assert "Who may decide: <@U_APPROVER2>" in message_text(first)
    write(tmp_path, GOOD)  # now the approvers group
    assert signal.getsignal(signal.SIGHUP) not in (signal.SIG_DFL, None)
    os.kill(os.getpid(), signal.SIGHUP)
    h.model.reply(tool_calls=[("deploy", {"environment": "staging", "version": "v3"})])
    h.model.reply(text="Second deployed.")
    await h.sandbox.wait_for(
        lambda _: (
            h.bot.service.policies.policy_file.tools[("ops", "deploy")].settings.approvers
            == ("S_APPROVERS",)
        )
    )
    await h.sandbox.click("U_APPROVER2", "C_GENERAL", first["ts"], "approve")
    await wait_answer(h, "Deployed v2 to staging.")
    # the first request kept its policy; a new request gets the reloaded one
    request = await h.bot.store.requests.get(card_request_id(first))
    assert request.policy.approvers == ("U_APPROVER2",)
    await h.sandbox.slash_command("U_REQUESTER", "ops deploy v3 to staging")
    await h.sandbox.wait_for(lambda _: "<!subteam^S_APPROVERS>" in h.thread_text(), timeout=10)

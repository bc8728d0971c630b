"""Write the saved runs of the current schema version: run by hand, once per schema version.

    python -m tests.agent.corpus.make_corpus

The corpus proves that a newer sayso reads, and continues, runs saved by an older one: the
README promises it. Each file `v<schema version>_<state>.json` is a `RunResult` exactly as
`model_dump_json()` wrote it, for a run paused in each pause kind (`tool_approval`,
`external_output`, `tool_input`, `human_review`, also the review of a tool-call turn), a run
whose process died inside an edited call (`crashed_in_edited_call`, status `running`), and
that run once recovered (`interrupted_edit`, paused on the interrupted call).
test_saved_run_corpus.py continues each with the current code.

When SCHEMA_VERSION changes (bot/agent/state.py), run this script to add the new version's
files next to the old ones, and add their cases to the test. Never regenerate or edit the
files of an existing version: they stand for runs saved by a released sayso. The script
refuses to overwrite one.

The model is FakeModelServer over HTTP behind the OpenAI provider, with fixed call ids.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from bot import SCHEMA_VERSION, AgentToolEdit, InMemoryStateAccessor, RunResult
from bot.agent.models import OpenAIChatModel
from bot.testing import FakeModelServer
from tests.agent.corpus.agent import CORPUS, EDITED, PRODUCTION, STAGING, corpus_agent
from tests.agent.ops import Ledger


class ProcessDied(BaseException):
    """Stands for the process dying inside a tool body (nothing in the runtime catches it)."""


class DyingLedger(Ledger):
    """A ledger whose `deploy` entry kills the "process": the body dies after it started."""

    def add(self, name: str, **kwargs: object) -> None:
        super().add(name, **kwargs)
        if name == "deploy":
            raise ProcessDied()


STATES = [
    "tool_approval",
    "external_output",
    "tool_input",
    "human_review",
    "human_review_of_tool_calls",
    "crashed_in_edited_call",
    "interrupted_edit",
]


async def saved_runs() -> dict[str, RunResult]:
    """Every state of the corpus, made by the current runtime."""
    runs: dict[str, RunResult] = {}
    async with FakeModelServer() as server:
        model = OpenAIChatModel("gpt-4o-mini", base_url=server.base_url, api_key="corpus")
        agent = corpus_agent(model, Ledger())
        requester = {"requested_by": "U_REQUESTER", "channel_id": "C_GENERAL"}

        server.reply(tool_calls=[("deploy", STAGING, "call_deploy")])
        runs["tool_approval"] = await agent.run(
            "deploy v2 to staging", context=requester, run_id="corpus-tool-approval"
        )

        server.reply(
            tool_calls=[
                ("ask_user", {"question": "Which ticket?"}, "call_ask"),
                ("ticket_lookup", {"ticket_id": "T-1"}, "call_ticket"),
            ]
        )
        runs["external_output"] = await agent.run(
            "look my ticket up", context=requester, run_id="corpus-external-output"
        )

        server.reply(
            tool_calls=[
                ("deploy", STAGING, "call_deploy"),
                ("ask_user", {"question": "Tell the team?"}, "call_ask"),
            ]
        )
        runs["tool_input"] = await agent.run(
            "deploy v2 to staging and ask me", context=requester, run_id="corpus-tool-input"
        )

        server.reply(text="Draft: all systems go.")
        runs["human_review"] = await agent.run(
            "write the status update",
            context={**requester, "review": True},
            run_id="corpus-human-review",
        )

        server.reply(tool_calls=[("get_status", {"service": "api"}, "call_status")])
        runs["human_review_of_tool_calls"] = await agent.run(
            "how is the api?",
            context={**requester, "review": True},
            run_id="corpus-human-review-of-tool-calls",
        )

        state = InMemoryStateAccessor()
        server.reply(tool_calls=[("deploy", PRODUCTION, "call_deploy")])
        await agent.run(
            "deploy v2 to production", context=requester, state=state, run_id="corpus-crashed"
        )
        dying = corpus_agent(model, DyingLedger())
        try:
            await dying.continue_run(
                run_id="corpus-crashed",
                state=state,
                edits=[AgentToolEdit("call_deploy", EDITED, decided_by="U_APPROVER")],
            )
        except ProcessDied:
            pass
        crashed = await state.load("corpus-crashed")
        assert crashed is not None and crashed.run.status == "running"
        runs["crashed_in_edited_call"] = crashed
        runs["interrupted_edit"] = await agent.recover(run=crashed)

        await model.aclose()
        assert server.violations == [], server.violations
    for name, result in runs.items():
        assert result.run.status in ("waiting_for_human", "running"), (name, result.run)
    assert list(runs) == STATES
    return runs


def corpus_paths(names: list[str], folder: Path = CORPUS) -> list[Path]:
    """The files of the current schema version; exits if one exists already."""
    paths = [folder / f"v{SCHEMA_VERSION}_{name}.json" for name in names]
    existing = [p.name for p in paths if p.exists()]
    if existing:
        sys.exit(
            f"refusing to overwrite {', '.join(existing)}: the files of schema version "
            f"{SCHEMA_VERSION} are saved runs of a released sayso; never regenerate them"
        )
    return paths


def write(runs: dict[str, RunResult], paths: list[Path]) -> None:
    for path, result in zip(paths, runs.values(), strict=True):
        data = json.loads(result.model_dump_json())
        path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def main() -> None:
    paths = corpus_paths(STATES)  # before anything runs: never regenerate a version's files
    write(asyncio.run(saved_runs()), paths)
    for path in paths:
        print(f"wrote {path}")


if __name__ == "__main__":
    main()

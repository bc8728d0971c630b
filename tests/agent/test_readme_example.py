"""The README example, verbatim (between the markers), run as a test."""

# --- README example begins ---
import asyncio
from typing import Literal

from bot import Agent, AgentToolDecision, AgentToolOutput, InMemoryStateAccessor, ToolContext, tool
from bot.agent.models import OpenAIChatModel
from bot.testing import FakeModelServer


@tool(require_approval=True)  # kind "approval": a person approves, edits or rejects each call
async def deploy(
    environment: Literal["staging", "production"], version: str, ctx: ToolContext
) -> dict:
    """Deploy a version of the service."""
    return {"status": "shipped", "version": version, "key": ctx.idempotency_key}


@tool  # runs automatically (sync bodies run in a worker thread)
def get_status(service: str) -> dict:
    """Current status of a service."""
    return {"service": service, "healthy": True}


@tool(kind="hitl")  # a person answers in place of the body
def ask_user(question: str) -> str:
    """Ask the requester a question."""
    raise NotImplementedError


@tool(kind="manual")  # another person or system supplies the output
def ticket_lookup(ticket_id: str) -> dict:
    """Look up a support ticket."""
    raise NotImplementedError


async def main() -> None:
    # A fake OpenAI-compatible server stands in for the model; in production use
    # model="openai:gpt-4o-mini" (OPENAI_API_KEY, OPENAI_BASE_URL) instead.
    async with FakeModelServer() as server:
        server.reply(
            tool_calls=[
                ("get_status", {"service": "api"}),
                ("deploy", {"environment": "staging", "version": "v2"}),
                ("ask_user", {"question": "Announce it in #ops?"}),
            ]
        )
        server.reply(text="v2 is live on staging and announced in #ops.")

        model = OpenAIChatModel("gpt-4o-mini", base_url=server.base_url, api_key="test")
        agent = Agent(
            id="ops",
            model=model,
            instructions="You deploy services. Ask before announcing.",
            tools=[deploy, get_status, ask_user, ticket_lookup],
        )
        state = InMemoryStateAccessor()

        result = await agent.run(
            "deploy v2 to staging", context={"requested_by": "U123"}, state=state
        )
        print(result.run.status, result.run.pause.kind)  # waiting_for_human tool_input
        for p in result.run.pause.pending_tool_calls:
            print(p.call.id, p.call.name, p.call.arguments, p.kind)
        deploy_call, question = result.run.pause.pending_tool_calls

        # Later, perhaps in another process: only the run id travels.
        result = await agent.continue_run(
            run_id=result.run.id,
            state=state,
            approvals=[AgentToolDecision(deploy_call.call.id)],
            tool_outputs=[AgentToolOutput(question.call.id, "Yes")],
        )
        print(result.run.status, result.output)  # completed v2 is live on staging ...


if __name__ == "__main__":
    asyncio.run(main())
# --- README example ends ---


async def test_readme_example(capsys) -> None:  # type: ignore[no-untyped-def]
    await main()
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "waiting_for_human tool_input",
        "call_2 deploy {'environment': 'staging', 'version': 'v2'} approval",
        "call_3 ask_user {'question': 'Announce it in #ops?'} hitl",
        "completed v2 is live on staging and announced in #ops.",
    ]


def test_the_readme_shows_this_example_verbatim() -> None:
    from pathlib import Path

    here = Path(__file__)
    source = here.read_text()
    example = source.split("# --- README example begins ---\n")[1]
    example = example.split("# --- README example ends ---\n")[0]
    readme = (here.parents[2] / "README.md").read_text()
    shown = [block.split("```")[0] for block in readme.split("```python\n")[1:]]
    assert example in shown, "README.md's runtime example differs from this test's copy"

"""A LangGraph driver process for the crash test: the scaling agent on an AsyncSqliteSaver
file, its approvals through sayso (SAYSO_URL, SAYSO_KEY).

    python -m tests.e2e.langgraph_driver run|resolve <checkpoints.db> <runs file> <thread id>

`run` starts the thread (or carries on a pending one), `resolve` only continues what is
pending. The agent's last message is printed once no interrupt is pending.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from bot.adapters.langgraph import resolve, run_with_approvals
from bot.client import AsyncSaysoClient
from tests.e2e.langgraph_agents import scaling_agent


async def main(mode: str, db: str, runs_file: str, thread: str) -> None:
    client = AsyncSaysoClient(os.environ["SAYSO_URL"], os.environ["SAYSO_KEY"])
    config = {"configurable": {"thread_id": thread}}
    async with AsyncSqliteSaver.from_conn_string(db) as saver:
        agent = scaling_agent(saver, Path(runs_file))
        if mode == "run":
            prompt = {"messages": [{"role": "user", "content": "scale api"}]}
            state = await run_with_approvals(agent, prompt, config, client, channel="C_GENERAL")
        else:
            state = await resolve(agent, config, client, channel="C_GENERAL")
    print("final:", state["messages"][-1].content if state else None, flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))

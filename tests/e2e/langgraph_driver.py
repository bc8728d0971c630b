"""A LangGraph driver process for the crash test: the scaling agent on an AsyncSqliteSaver
file, its approvals through sayso (SAYSO_URL, SAYSO_KEY).

    python -m tests.e2e.langgraph_driver run|resolve <checkpoints.db> <runs file> <thread id>

`run` starts the thread (or carries on a pending one), `resolve` only continues what is
pending. The agent's last message is printed once no interrupt is pending. With HANG=<s> in
the environment, the tool sleeps that long after recording its run.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from bot.adapters.langgraph import ToolsMayHaveRun, resolve, run_with_approvals
from bot.client import AsyncSaysoClient
from tests.e2e.langgraph_agents import scaling_agent


async def main(mode: str, db: str, runs_file: str, thread: str) -> None:
    client = AsyncSaysoClient(os.environ["SAYSO_URL"], os.environ["SAYSO_KEY"])
    config: RunnableConfig = {"configurable": {"thread_id": thread}}
    hang = float(os.environ.get("HANG", "0"))
    async with AsyncSqliteSaver.from_conn_string(db) as saver:
        agent = scaling_agent(saver, Path(runs_file), hang=hang)
        try:
            if mode == "run":
                prompt = {"messages": [{"role": "user", "content": "scale api"}]}
                state = await run_with_approvals(agent, prompt, config, client, channel="C_GENERAL")
            else:
                state = await resolve(agent, config, client, channel="C_GENERAL")
        except ToolsMayHaveRun as stopped:
            print("stopped:", stopped, flush=True)
            return
    print("final:", state["messages"][-1].content if state else None, flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))

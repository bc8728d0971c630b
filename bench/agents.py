"""The benchmark agent: `deploy` needs approval; its body tells the load generator when it starts.

The body sends one UDP datagram `{"key": idempotency_key, "t": time.time()}` to
BENCH_UDP_PORT on 127.0.0.1, so click-to-side-effect latency is measured in the load
generator against the click's send time (same machine, same clock).
"""

from __future__ import annotations

import json
import os
import socket
import time
from typing import Literal

from bot.agent import Agent, ToolContext, tool
from bot.agent.models import ModelSettings, OpenAIChatModel

_sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)


def make_agents(model_url: str, udp_port: int) -> list[Agent]:
    @tool(require_approval=True)
    async def deploy(
        environment: Literal["staging", "production"], version: str, ctx: ToolContext
    ) -> dict:
        """Deploy a version to an environment."""
        started = time.time()
        packet = json.dumps({"key": ctx.idempotency_key, "t": started}).encode()
        _sock.sendto(packet, ("127.0.0.1", udp_port))
        return {"status": "deployed", "environment": environment, "version": version}

    model = OpenAIChatModel("fake", base_url=model_url, api_key="bench-key")
    settings = ModelSettings(timeout=30, max_retries=2, backoff_base=0.05, backoff_max=0.5)
    return [
        Agent(
            id="ops",
            model=model,
            instructions="You run operations.",
            tools=[deploy],
            model_settings=settings,
        )
    ]


def agents() -> list[Agent]:
    return make_agents(os.environ["BENCH_MODEL_URL"], int(os.environ["BENCH_UDP_PORT"]))

"""The event loop a sayso process runs on: uvloop where it is installed, asyncio's own otherwise.

`SAYSO_EVENT_LOOP` chooses: `auto` (the default: uvloop if it imports, as uvicorn does),
`uvloop` (refuse to start without it) or `asyncio`. uvloop is a dependency of sayso on Linux
and macOS; it took 10-13% off the bot's CPU per decision (docs/benchmarks.md). Every loop of a
process runs on the same choice: the front's, the embedded worker's thread's, a worker's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Literal, TypeVar

T = TypeVar("T")
LoopChoice = Literal["auto", "uvloop", "asyncio"]


class EventLoopError(RuntimeError):
    """`SAYSO_EVENT_LOOP=uvloop` on a machine where uvloop does not import."""


def loop_factory(choice: LoopChoice = "auto") -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The factory of the chosen loop; None for asyncio's default one."""
    if choice == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        if choice == "uvloop":
            raise EventLoopError(
                "SAYSO_EVENT_LOOP=uvloop but uvloop is not installed (pip install uvloop)"
            ) from None
        return None
    return uvloop.new_event_loop


def running() -> str:
    """The running loop's kind, `uvloop` or `asyncio`, for the start-up log lines."""
    return type(asyncio.get_running_loop()).__module__.partition(".")[0]


def run(main: Coroutine[Any, Any, T], choice: LoopChoice = "auto") -> T:
    """`asyncio.run(main)` on the chosen loop."""
    try:
        factory = loop_factory(choice)
    except EventLoopError:
        main.close()  # never awaited: say nothing more about it than the error
        raise
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)

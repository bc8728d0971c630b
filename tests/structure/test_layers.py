"""The layers hold: nothing imports up a layer, no package or module imports itself back, the
client SDK stays light, and modules and functions stay small (docs/architecture.md)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.structure.imports import ROOT, cycles, graph, modules

AGENT, STORE, SERVICE, FRONT, TOP = range(5)
NAMES = ("agent", "store", "service", "front", "cli/composition")

LAYERS: dict[str, int] = {
    "bot": AGENT,  # the public API: re-exports of the runtime
    "bot.agent": AGENT,
    "bot.receipts": AGENT,  # signing and checking receipts: the standard library, cryptography
    "store": STORE,
    "bot.service": SERVICE,
    "bot.config": FRONT,
    "bot.client": FRONT,
    "bot.api": FRONT,
    "bot.mcp": FRONT,
    "bot.slack": FRONT,
    "bot.adapters": FRONT,
    "bot.sandbox": FRONT,
    "bot.testing": FRONT,
    "bot.examples": FRONT,
    "bot.ops": TOP,  # `sayso doctor`, `sayso audit`
    "bot.ops.metrics": SERVICE,  # counted where things happen (the service's runs too)
    "bot.ops.tracing": SERVICE,
    "bot.ops.audit": SERVICE,
    "bot.ops.audit_webhook": SERVICE,
    "bot.ops.logs": FRONT,
    "bot.proxy": FRONT,  # `sayso proxy`: talks to sayso through /v1 only (bot.client)
    "bot.hooks": FRONT,  # `sayso hook claude-code`: likewise
    "bot.sandbox.demo": TOP,
    "bot.cli": TOP,
    "bot.compose": TOP,
    "bot.front": TOP,
    "bot.serve": TOP,
    "bot.worker": TOP,
    "bot.event_loop": TOP,  # the loop a process runs on (uvloop or asyncio)
    "bot.loading": TOP,
    "bot.policy_cli": TOP,
    "bot.runs_cancel": TOP,
    "bot.runs_report": TOP,
}


def layer_of(module: str) -> int:
    """The layer of the longest prefix of `module` named in LAYERS."""
    parts = module.split(".")
    while parts:
        found = LAYERS.get(".".join(parts))
        if found is not None and (parts != ["bot"] or module == "bot"):
            return found  # "bot" alone is the package's own __init__, not everything under it
        parts.pop()
    raise AssertionError(f"{module}: give it a layer in tests/structure/test_layers.py")


def package_of(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "bot" and len(parts) > 1 else parts[0]


def test_every_module_has_a_layer() -> None:
    for module in modules():
        layer_of(module)


def test_nothing_imports_up_a_layer() -> None:
    upward = [
        f"{m} ({NAMES[layer_of(m)]}) imports {d} ({NAMES[layer_of(d)]})"
        for m, deps in graph().items()
        for d in sorted(deps)
        if layer_of(d) > layer_of(m)
    ]
    assert upward == []


def test_no_cycle_between_packages() -> None:
    packages: dict[str, set[str]] = {}
    for m, deps in graph().items():
        for d in deps:
            if package_of(m) != package_of(d):
                packages.setdefault(package_of(m), set()).add(package_of(d))
    assert cycles(packages) == []


def test_no_cycle_between_modules() -> None:
    assert cycles(graph()) == []


def test_the_client_loads_nothing_of_the_server() -> None:
    """`import bot.client` in a fresh interpreter: no SQLAlchemy, no aiohttp, no service."""
    heavy = ("sqlalchemy", "aiohttp", "slack_bolt", "bot.service", "store", "bot.api.routes")
    code = f"import sys, bot.client; print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
WHY = "# Longer than"
"""A module (in its first 15 lines) or a function (on its first body line) over the limit
says why with a comment starting with this."""

LONG_MODULES = {
    "bot/adapters/framework.py",
    "bot/agent/agent.py",
    "bot/agent/loop.py",
    "bot/service/service.py",
    "bot/slack/blocks/limits.py",
    "bot/testing/fake_model.py",
}
LONG_FUNCTIONS = {
    ("bot/agent/agent.py", "continue_run"),
    ("bot/agent/tools.py", "__init__"),
    ("bot/mcp/tools.py", "build_server"),
    ("bot/slack/blocks/markdown.py", "markdown_messages"),
    ("store/accessor.py", "save"),
    ("store/api.py", "_create"),
    ("store/decisions.py", "decide"),
    ("store/migrations/versions/0001_initial.py", "upgrade"),
}


def _sources() -> list[Path]:
    return [p for p in modules().values() if "migrations/versions" not in str(p)]


def test_modules_stay_small_or_say_why() -> None:
    long = set()
    for path in _sources():
        lines = path.read_text().splitlines()
        if len(lines) > MAX_MODULE_LINES:
            name = str(path.relative_to(ROOT))
            long.add(name)
            assert any(line.startswith(WHY) for line in lines[:15]), f"{name}: say why"
    assert long == LONG_MODULES


def _long_functions(path: Path) -> list[tuple[str, str, bool]]:
    text = path.read_text()
    lines = text.splitlines()
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            assert node.end_lineno is not None
            if node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES:
                said = any(WHY in line for line in lines[node.lineno - 1 : node.body[0].lineno])
                found.append((str(path.relative_to(ROOT)), node.name, said))
    return found


def test_functions_stay_small_or_say_why() -> None:
    long = [f for path in modules().values() for f in _long_functions(path)]
    assert {(p, n) for p, n, _ in long} == LONG_FUNCTIONS
    assert [f"{p}:{n}" for p, n, said in long if not said and "versions" not in p] == []


@pytest.mark.parametrize("name", ["grants", "policies", "policy_file", "policy_report", "runner"])
def test_old_homes_are_gone(name: str) -> None:
    assert not (ROOT / "bot" / "service" / f"{name}.py").exists()

"""SAYSO_AGENTS (AgentRegistry.load): sayso agents, framework agents taken as they are, and a
clear refusal of anything else."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai import DeferredToolRequests

from bot.adapters.pydantic_ai import PydanticAIAgent
from bot.examples.ops import ops
from bot.loading import load_registry

DEPLOYER = PydanticAgent("test", output_type=[str, DeferredToolRequests], name="Deploy Bot")
MIXED = [ops, DEPLOYER]
NOT_AN_AGENT = 42


def test_a_framework_agent_is_taken_as_it_is_beside_sayso_agents() -> None:
    registry = load_registry("tests.test_agent_registry:MIXED")
    assert registry.ids == ["ops", "deploy-bot"]
    assert isinstance(registry.get("deploy-bot"), PydanticAIAgent)


def test_anything_else_is_refused_with_what_is_accepted() -> None:
    with pytest.raises(ValueError, match="is not an Agent, a LangGraph graph"):
        load_registry("tests.test_agent_registry:NOT_AN_AGENT")


def test_the_docs_example_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (Path(__file__).parents[1] / "docs" / "integrations.md").read_text()
    example = text.split("```python\n# myagents.py", 1)[1].split("```", 1)[0]
    (tmp_path / "myagents.py").write_text("#" + example.replace('"openai:gpt-4o"', '"test"'))
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = load_registry("myagents:agents")
    assert registry.ids == ["ops", "scale"]
    scale = registry.get("scale")
    assert scale is not None and scale.approvers == ("S0OPS",)
    assert "edit" in scale.tools["scale"].allowed_decisions

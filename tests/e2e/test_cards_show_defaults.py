"""Cards show the arguments as they will run: parameters the model left out appear with the
defaults the tool will use, marked as defaults."""

from __future__ import annotations

from bot.agent import tool
from tests.e2e.flows import start_deploy
from tests.e2e.harness import Harness, message_text


async def test_a_card_shows_the_defaults_that_will_apply(harness: Harness) -> None:
    card = await start_deploy(harness)  # environment and version only; replicas defaults to 2
    text = message_text(card)
    assert "`replicas: 2` (default)" in text
    assert "(default)" not in text.split("replicas")[0]  # given arguments are not marked


async def test_arguments_the_model_gave_are_not_marked_as_defaults(harness: Harness) -> None:
    card = await start_deploy(harness, {"environment": "staging", "version": "v2", "replicas": 5})
    assert "(default)" not in message_text(card)
    assert '"replicas": 5' in message_text(card)


def test_defaults_come_from_the_tools_signature() -> None:
    @tool
    def scale(service: str, replicas: int = 2, zone: str | None = None) -> str:
        """Scale a service."""
        return service

    assert scale.defaults_for({"service": "api"}) == {"replicas": 2, "zone": None}
    assert scale.defaults_for({"service": "api", "replicas": 3}) == {"zone": None}
    assert scale.defaults_for({"replicas": "many"}) == {}  # invalid: nothing will run as is

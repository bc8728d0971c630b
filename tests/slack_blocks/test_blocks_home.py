"""App Home: the inbox count."""

from __future__ import annotations


def test_home_says_plus_when_the_total_is_a_lower_bound() -> None:
    from bot.slack.blocks.home import home_view

    view = home_view([], 1000, [], user_id="U1", total_is_lower_bound=True)
    assert "1,000+ more" in str(view)
    view = home_view([], 7, [], user_id="U1")
    assert "7 more" in str(view) and "+" not in str(view).split("7 more")[0][-2:]

"""`sayso runs cancel RUN_ID`: the kill switch for operators, without Slack's buttons."""

from __future__ import annotations

from bot.config import Settings
from store import Store

OPERATOR = "operator"
"""Who cancelled, in the audit trail and on the cards, when it came from the command line."""


async def cancel_from_cli(store: Store, settings: Settings, run_id: str) -> int:
    """Cancel the run; when a bot token is set, update its cards and root message in Slack."""
    done = await store.runs.cancel(run_id, actor=OPERATOR, detail="sayso runs cancel")
    if done.run is None:
        print(f"Run {run_id} not found")
        return 1
    if not done.cancelled:
        print(f"Run {run_id} already ended ({done.run.status}): nothing to cancel")
        return 1
    print(f"Run {run_id} cancelled; {len(done.requests)} open request(s) closed")
    if settings.slack_bot_token is None:
        print("SLACK_BOT_TOKEN is not set: a running sayso shows it in Slack (its next sweep)")
        return 0
    from bot.compose import build_dispatcher, build_outbox, web_client
    from bot.serve import load_agents
    from bot.service.presenting import SafePresenter
    from bot.service.runs.present import show_cancelled
    from bot.slack.presenter import SlackPresenter

    client = web_client(settings)
    outbox = build_outbox(store)
    presenter = SlackPresenter(client, load_agents(settings.sayso_agents), outbox)
    if await show_cancelled(SafePresenter(presenter), done, OPERATOR):
        await store.runs.mark_shown(run_id, done.run.version)
    # the rows are durable: a running bot sends them; this one helps when none is running
    dispatcher = build_dispatcher(store, outbox, client, presenter)
    await dispatcher.start()
    try:
        await dispatcher.drain(timeout=10.0)
    except AssertionError:
        print("Slack did not take every update yet: a running sayso sends them")
    finally:
        await dispatcher.stop()
    return 0

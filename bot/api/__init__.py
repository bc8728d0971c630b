"""The approval API front: `/v1` routes on the bot's aiohttp app, and webhook delivery.

Callers that are not sayso agents (scripts, CI, other agent frameworks) create approval
requests over HTTP; they are decided in Slack through the same decide path as sayso's own.
"""

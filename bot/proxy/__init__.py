"""`sayso proxy`: an MCP gateway between any MCP client and any MCP server.

It mirrors the upstream server (tools, resources, prompts) and asks a running sayso, through
its /v1 approval API only, before it forwards a call the policy gates (bot/proxy/policy.py).
Pieces: the upstream connection and the served side (gateway.py), the decision of one gated
call (approvals.py), the local journal that makes forwarding exactly once (journal.py), the
command (cli.py).
"""

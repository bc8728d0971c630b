"""sayso as an MCP server (the official `mcp` SDK): approval requests for any MCP client.

The tools (bot/mcp/tools.py) create ordinary approval requests through the approval API's
engine (bot/service/api_requests.py), so cards, quorum, expiry, App Home and audit apply
unchanged. Two transports: streamable HTTP at `/mcp` on the bot's port (bot/mcp/http.py) and
stdio, `sayso mcp` (bot/mcp/stdio.py). Both authenticate with an API key.
"""

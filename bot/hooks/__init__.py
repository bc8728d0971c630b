"""Hooks of agents sayso did not write: `sayso hook claude-code` (bot/hooks/claude_code.py)."""

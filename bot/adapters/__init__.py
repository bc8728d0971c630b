"""Thin translation layers from agent frameworks' own approval types to sayso's approval API."""

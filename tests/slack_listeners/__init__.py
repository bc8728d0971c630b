"""Listeners one at a time, and the contract ids they answer to."""

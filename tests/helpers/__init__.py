"""Helpers shared by the test folders (waiting, databases, ports, the browser).

Tests import helpers from here or from their folder's helper modules, never from another test
file or a conftest."""

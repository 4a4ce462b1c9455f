"""Test doubles for the engine's outside world: a fake model provider served over real HTTP."""

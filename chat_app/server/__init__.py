"""HTTP layer: the AG-UI endpoint and the tool manifest. Imports the engine, never the UI."""

from ._coalesce import HEARTBEAT_SECONDS
from .app import create_app

__all__ = ["HEARTBEAT_SECONDS", "create_app"]

"""HTTP layer: the AG-UI endpoint and the tool manifest. Imports the engine, never the UI."""

from .app import create_app

__all__ = ["create_app"]

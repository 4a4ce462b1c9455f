"""Deployment settings read from the environment (the app and the standalone server).

| variable | default | what |
| --- | --- | --- |
| `CHAT_APP_DATA_DIR` | `.chat_app_data` | the app's data folder (secret, SQLite ledger) |
| `CHAT_APP_SECRET` | generated once in the data folder | the HMAC key that seals interrupts |
| `CHAT_APP_INTERRUPT_TTL_SECONDS` | `86400` | how long any interrupt can be answered |
| `CHAT_APP_LEDGER_URL` | SQLite in the data folder | `redis://…` for many workers or machines |
| `CHAT_APP_SECURE` | `1` | `0` turns sealing and the ledger off (a bare TanStack-like server) |
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from chat_app.trust import DEFAULT_TTL_SECONDS, Ledger, Sealer, load_secret, open_ledger


@dataclass(frozen=True)
class Security:
    sealer: Sealer | None
    ledger: Ledger | None


def data_dir() -> Path:
    return Path(os.environ.get("CHAT_APP_DATA_DIR", ".chat_app_data"))


def security_from_env() -> Security:
    """Sealing and the ledger, on unless `CHAT_APP_SECURE=0`."""
    if os.environ.get("CHAT_APP_SECURE", "1").strip().lower() in ("0", "false", "no", "off"):
        return Security(sealer=None, ledger=None)
    ttl = float(os.environ.get("CHAT_APP_INTERRUPT_TTL_SECONDS", DEFAULT_TTL_SECONDS))
    folder = data_dir()
    return Security(
        sealer=Sealer(load_secret(folder), ttl_seconds=ttl),
        ledger=open_ledger(os.environ.get("CHAT_APP_LEDGER_URL"), folder),
    )

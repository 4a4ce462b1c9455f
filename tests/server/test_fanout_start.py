"""The standalone server's start with a fan-out Redis that does not answer."""

from __future__ import annotations

from pathlib import Path

from tests.live_server import free_port
from tests.redis_server import redis_server
from tests.server.process_app import start_log


def test_a_fanout_redis_that_does_not_answer_is_warned_of_at_start_and_the_server_serves(
    tmp_path: Path,
) -> None:
    """Live notices across workers go through `CHAT_APP_FANOUT_URL`: one that does not
    answer is said at start (its password hidden), not first when a notice is lost; the
    server starts anyway (pages poll). One that answers is not warned of."""
    down = f"redis://:hunter2@127.0.0.1:{free_port()}/0"
    lines = start_log(tmp_path / "down", {"CHAT_APP_FANOUT_URL": down})
    [warned] = [line for line in lines if "CHAT_APP_FANOUT_URL" in line]
    assert "the desk's live notices go through Redis at redis://:***@127.0.0.1:" in warned
    assert "which does not answer (" in warned and "within 20 s" in warned
    assert "hunter2" not in "\n".join(lines)
    assert "Application startup complete" in lines[-1]
    (tmp_path / "redis").mkdir()
    with redis_server(tmp_path / "redis") as url:
        up = start_log(tmp_path / "up", {"CHAT_APP_FANOUT_URL": url})
    assert not [line for line in up if "CHAT_APP_FANOUT_URL" in line]


def test_a_fanout_url_that_is_no_redis_url_is_warned_of_too(tmp_path: Path) -> None:
    lines = start_log(tmp_path, {"REFLEX_REDIS_URL": "notaurl"})
    [warned] = [line for line in lines if "live notices" in line]
    assert "REFLEX_REDIS_URL: the desk's live notices go through Redis at notaurl" in warned
    assert "Application startup complete" in lines[-1]

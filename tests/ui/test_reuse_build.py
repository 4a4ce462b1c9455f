"""The browser tests' frontend reuse (`tests/ui/reuse_build.py`): a kept build is served by
another copy only pointed at that copy's address, and only where its pages are the same."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from tests.ui.reuse_build import build_or_reuse, reuse, sources_digest

ENV = "reflex-env-Ab12.js"


def _env(web: Path, port: int, transport: str = "websocket") -> None:
    web.mkdir(parents=True, exist_ok=True)
    urls = {"PING": f"http://localhost:{port}/ping", "EVENT": f"ws://localhost:{port}/_event"}
    (web / "env.json").write_text(json.dumps({**urls, "TRANSPORT": transport}))


def _built(web: Path, port: int) -> None:
    """What a build leaves: the bundle holding the addresses, compressed too, and a page."""
    assets = web / "build" / "client" / "assets"
    assets.mkdir(parents=True)
    bundle = f"var e={{PING:`http://localhost:{port}/ping`,EVENT:`ws://localhost:{port}/_event`}}"
    (assets / ENV).write_text(bundle)
    (assets / (ENV + ".gz")).write_bytes(gzip.compress(bundle.encode()))
    (assets / (ENV + ".br")).write_bytes(b"brotli of the old bundle")
    (assets / (ENV + ".map")).write_text("a source map, not a compressed copy")
    (web / "build" / "client" / "index.html").write_text("<p>8631 is not an address</p>")


def test_a_kept_build_is_pointed_at_the_new_address_compressed_copy_too(tmp_path: Path) -> None:
    kept, web = tmp_path / "kept", tmp_path / "web"
    _env(kept, 8631)
    _built(kept, 8631)
    _env(web, 8700)

    assert reuse(kept, web)

    bundle = (web / "build" / "client" / "assets" / ENV).read_text()
    assert "localhost:8700/ping" in bundle and "ws://localhost:8700/_event" in bundle
    assert "8631" not in bundle
    compressed = (web / "build/client/assets" / (ENV + ".gz")).read_bytes()
    assert gzip.decompress(compressed).decode() == bundle
    assert (web / "build/client/index.html").read_text() == "<p>8631 is not an address</p>"
    assert "8631" in (kept / "build/client/assets" / ENV).read_text(), "the kept build unchanged"
    assert not (web / "build/client/assets" / (ENV + ".br")).exists()  # sent uncompressed
    assert (web / "build/client/assets" / (ENV + ".map")).exists()


def test_a_build_of_other_settings_or_naming_the_old_host_elsewhere_is_not_reused(
    tmp_path: Path,
) -> None:
    kept = tmp_path / "kept"
    _env(kept, 8631)
    _built(kept, 8631)
    polling = tmp_path / "polling"
    _env(polling, 8700, transport="polling")  # more than the address differs
    assert not reuse(kept, polling)
    assert not (polling / "build").exists()

    (kept / "build/client/app.css").write_text("/* served from localhost:8631 */")
    web = tmp_path / "web"
    _env(web, 8700)
    assert not reuse(kept, web)  # the old host left where no address replaced it
    assert not (web / "build").exists()


def test_a_bundle_without_the_old_address_is_not_reused(tmp_path: Path) -> None:
    kept, web = tmp_path / "kept", tmp_path / "web"
    _env(kept, 8631)
    _built(kept, 9999)  # its bundle names another address than its env.json
    _env(web, 8700)

    assert not reuse(kept, web)
    assert not (web / "build").exists()


def test_only_the_same_pages_reuse_a_build_and_the_first_build_is_kept(tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    builds: list[Path] = []

    def copy(name: str, port: int, page: str) -> Path:
        web = tmp_path / name
        _env(web, port)
        (web / "app").mkdir()
        (web / "app" / "route.jsx").write_text(page)
        (web / "node_modules").mkdir()
        (web / "node_modules" / "x.js").write_text(name)  # not a page: left out of the digest

        def build() -> None:
            builds.append(web)
            _built(web, port)

        build_or_reuse(kept, web, build)
        return web

    first = copy("first", 8631, "<Chat/>")
    second = copy("second", 8700, "<Chat/>")
    third = copy("third", 8800, "<Chat proxy/>")

    assert builds == [first, third]
    assert sources_digest(first) == sources_digest(second) != sources_digest(third)
    assert sources_digest(first, {"VITE_MINIFY": "false"}) != sources_digest(first, {})
    assert sources_digest(first, {"REFLEX_BACKEND_PORT": "8700"}) == sources_digest(first, {})
    assert "localhost:8700" in (second / "build/client/assets" / ENV).read_text()

"""``osmosis upgrade`` against a local package index speaking PyPI's JSON API."""

from __future__ import annotations

import importlib.metadata
import json
import os
import stat
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cli_harness import RunCli  # pyright: ignore[reportMissingImports]


@pytest.fixture
def index(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """A package index on 127.0.0.1 whose ``/pypi/<dist>/json`` says ``versions[dist]``."""
    versions: dict[str, str] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            dist = self.path.split("/")[2] if self.path.count("/") >= 3 else ""
            if dist not in versions:
                self.send_response(404)
                self.end_headers()
                return
            body = json.dumps({"info": {"name": dist, "version": versions[dist]}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("OSMOSIS_PYPI_URL", f"http://127.0.0.1:{server.server_address[1]}/pypi")
    try:
        yield versions
    finally:
        server.shutdown()
        server.server_close()


def _installed() -> tuple[str, str]:
    from osmosis_cli.upgrade import installed_distribution

    return installed_distribution()


def test_up_to_date_does_nothing(run_cli: RunCli, index: dict[str, str]) -> None:
    dist, version = _installed()
    index[dist] = version
    result = run_cli("--json", "upgrade")
    assert result.code == 0, result.stderr
    envelope = result.envelope()
    assert (envelope["status"], envelope["resource"]["latest_version"]) == ("no_update", version)


def test_dry_run_names_the_command_for_this_install(run_cli: RunCli, index: dict[str, str]) -> None:
    dist, _ = _installed()
    index[dist] = "999.0"
    envelope = run_cli("--json", "upgrade", "--dry-run").envelope()
    resource = envelope["resource"]
    assert envelope["status"] == "dry_run"
    assert resource["method"] == "pip"  # this venv is neither a uv tool nor a pipx venv
    assert resource["command"][-2:] == ["--upgrade", dist]
    assert resource["command"][0] in (sys.executable, "uv")


@pytest.mark.parametrize(
    ("executable", "method", "command"),
    [
        (
            "/home/ada/.local/share/uv/tools/osmosis-ai/bin/python",
            "uv tool",
            ["uv", "tool", "upgrade", "osmosis-ai"],
        ),
        (
            "/home/ada/.local/pipx/venvs/osmosis-ai/bin/python",
            "pipx",
            ["pipx", "upgrade", "osmosis-ai"],
        ),
        ("/srv/app/.venv/bin/python", "pip", None),
    ],
)
def test_the_install_method_comes_from_the_interpreters_path(
    executable: str, method: str, command: list[str] | None
) -> None:
    from osmosis_cli.upgrade import install_method, upgrade_command

    assert install_method(executable) == method
    if command is not None:
        assert upgrade_command(method, "osmosis-ai", executable) == command


def _tool(folder: Path, name: str, code: int) -> Path:
    """A stand-in for an installer on PATH that records its arguments (the real one would
    reach the internet)."""
    folder.mkdir(exist_ok=True)
    script = folder / name
    script.write_text(
        f'#!/bin/sh\necho "$@" > "{folder}/{name}.args"\necho upgraded\nexit {code}\n',
        encoding="utf-8",
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return folder / f"{name}.args"


def test_the_upgrade_runs_the_installer_and_reports_its_failure(
    run_cli: RunCli, index: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import osmosis_cli.upgrade as upgrade

    dist, version = _installed()
    index[dist] = "999.0"
    monkeypatch.setattr(upgrade, "install_method", lambda executable=sys.executable: "pipx")
    args = _tool(tmp_path / "bin", "pipx", 0)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    done = run_cli("--json", "upgrade")
    assert done.code == 0, done.stderr
    resource = done.envelope()["resource"]
    assert (resource["installed_version"], resource["latest_version"]) == (version, "999.0")
    assert "upgraded" in resource["stdout"]
    assert args.read_text(encoding="utf-8").split() == ["upgrade", dist]

    _tool(tmp_path / "bin", "pipx", 3)
    failed = run_cli("--json", "upgrade")
    assert failed.code == 1
    error = failed.error()["error"]
    assert "failed (exit 3)" in error["message"]
    assert f"pip install --upgrade {dist}" in error["message"]


def test_an_unreachable_index_says_how_to_upgrade_by_hand(
    run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OSMOSIS_PYPI_URL", "http://127.0.0.1:1/pypi")
    result = run_cli("--json", "upgrade")
    assert result.code == 1
    assert result.error()["error"]["code"] == "NETWORK"
    assert "pip install --upgrade" in result.error()["error"]["message"]
    assert importlib.metadata.version("osmosis-cli")  # nothing was touched

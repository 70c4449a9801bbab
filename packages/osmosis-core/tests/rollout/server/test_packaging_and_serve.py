"""Import hygiene, ``serve`` port resolution, mounting under a prefix, and secret hygiene."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from osmosis_ai.rollout.server import create_rollout_server
from osmosis_ai.rollout.server.serving import DEFAULT_PORT, ENV_ROLLOUT_PORT, resolve_port

from .rollout_server_harness import (
    LEASE,
    CallbackListener,
    FakeBackend,
    body,
    free_port,
    running,
    serve_app,
)


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_server_import_without_fastapi_names_the_extra() -> None:
    result = _run(
        "import sys; sys.modules['fastapi'] = None\n"
        "try:\n"
        "    import osmosis_ai.rollout.server\n"
        "except ModuleNotFoundError as exc:\n"
        "    print(exc)\n"
    )
    assert 'pip install "osmosis-ai[server]"' in result.stdout, result.stderr


def test_client_needs_only_httpx() -> None:
    result = _run(
        "import sys\n"
        "for name in ('fastapi', 'uvicorn', 'starlette'):\n"
        "    sys.modules[name] = None\n"
        "from osmosis_ai.rollout.client import RolloutClient\n"
        "print(RolloutClient(url='http://127.0.0.1:1'))\n"
    )
    assert "RolloutClient(url='http://127.0.0.1:1')" in result.stdout, result.stderr


def test_resolve_port(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_ROLLOUT_PORT, raising=False)
    assert resolve_port(None) == DEFAULT_PORT == 8000
    monkeypatch.setenv(ENV_ROLLOUT_PORT, "9123")
    assert resolve_port(None) == 9123
    assert resolve_port(7000) == 7000  # the argument wins
    monkeypatch.setenv(ENV_ROLLOUT_PORT, "eighty")
    with pytest.raises(ValueError, match="_OSMOSIS_ROLLOUT_PORT='eighty' is not a port number"):
        resolve_port(None)
    with pytest.raises(ValueError, match="between 0 and 65535"):
        resolve_port(70000)


async def test_mounted_under_a_prefix_and_documented() -> None:
    backend = FakeBackend()
    inner = create_rollout_server(backend=backend, configure_logging=False)
    outer = Starlette(routes=[Mount("/x", app=inner)])
    schema = inner.openapi()
    assert "/rollout" in schema["paths"]
    assert "/rollout/{rollout_id}/result" in schema["paths"]
    async with serve_app(outer) as url, httpx.AsyncClient(base_url=url) as client:
        admitted = await client.post("/x/rollout", json=body("r1"))
        assert admitted.status_code == 202
        token = admitted.json()["polling_lease_token"]
        result = await client.get("/x/rollout/r1/result", headers={LEASE: token})
        missing = await client.get("/x/rollout/r1/result")
    assert result.status_code == 200
    assert result.json()["rollout_id"] == "r1"
    assert missing.status_code == 422


async def test_secrets_never_reach_logs_or_error_bodies(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("DEBUG")
    listener = CallbackListener()
    listener.script["completion"] = [503, 400]
    async with (
        serve_app(listener.app) as base,
        running(FakeBackend(), callback_backoff_initial_sec=0.01) as (client, _),
    ):
        payload = body(
            "r1",
            llm_api_key="sk-llm-secret",
            controller_api_key="ctrl-secret",
            completion_callback_url=listener.url(base, "completion", "r1") + "?sig=url-secret",
            grader_callback_url=listener.url(base, "grader", "r1"),
        )
        admitted = await client.post("/rollout", json=payload)
        token = admitted.json()["polling_lease_token"]
        await listener.wait_for(1, kind="grader")
        forbidden = await client.get("/rollout/r1/result", headers={LEASE: "x" + token})
    for secret in ("sk-llm-secret", "ctrl-secret", "url-secret", token):
        assert secret not in caplog.text
        assert secret not in forbidden.text
    assert "rejected with HTTP 400" in caplog.text


def test_free_port_helper_gives_a_bindable_port() -> None:
    assert 0 < free_port() < 65536


@pytest.mark.parametrize(
    ("options", "access_log"),
    [
        ({}, True),
        ({"log_level": "info"}, True),
        ({"log_level": "warning"}, False),
        ({"log_level": 40}, False),
        ({"log_level": "warning", "access_log": True}, True),
    ],
)
def test_uvicorn_config_drops_what_nobody_reads(options: dict[str, Any], access_log: bool) -> None:
    from osmosis_ai.rollout.server.serving import uvicorn_config

    app = create_rollout_server(backend=FakeBackend(), configure_logging=False)
    config = uvicorn_config(app, port=0, **options)
    assert config.server_header is False
    assert config.access_log is access_log
    assert uvicorn_config(app, port=0, server_header=True).server_header is True

"""HTTP failures from the platform become the documented error envelopes and exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest
from platform_harness import Cli, Platform  # pyright: ignore[reportMissingImports]
from stand_in_state import Fault  # pyright: ignore[reportMissingImports]


@pytest.mark.parametrize(
    ("status", "code", "hint"),
    [
        (403, "PERMISSION_DENIED", "lacks access"),
        (404, "NOT_FOUND", "injected failure"),
        (500, "PLATFORM_ERROR", "HTTP 500"),
        (502, "PLATFORM_ERROR", "HTTP 502"),
    ],
)
def test_status_codes_map_to_error_envelopes(
    cli: Cli, platform: Platform, tmp_path: Path, status: int, code: str, hint: str
) -> None:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    platform.state.faults.append(
        Fault("GET", "/api/cli/datasets", status, times=-1, retry_after="0")
    )
    result = cli("--json", "dataset", "list", cwd=tmp_path)
    assert result.code == 1
    envelope = result.error()
    assert (envelope["schema_version"], envelope["command"]) == (1, "dataset list")
    error = envelope["error"]
    assert error["code"] == code
    assert hint in error["message"]
    assert error["details"]["status_code"] == status
    assert error["details"]["platform_code"] == "injected"
    attempts = len([r for r in platform.state.requests if r.path == "/api/cli/datasets"])
    assert attempts == (4 if status == 502 else 1)  # a GET is retried only on 429/502/503/504


def test_401_says_to_log_in_again(cli: Cli, platform: Platform, tmp_path: Path) -> None:
    cli.env["OSMOSIS_TOKEN"] = "expired-token"
    result = cli("--plain", "rollout", "list", cwd=tmp_path)
    assert result.code == 1
    assert "osmosis auth login" in result.stderr
    envelope = cli("--json", "eval", "logs", "x", cwd=tmp_path).error()
    assert envelope["error"]["code"] == "AUTH_REQUIRED"
    assert envelope["error"]["details"]["status_code"] == 401


def test_retry_after_is_honoured_then_the_request_succeeds(
    cli: Cli, platform: Platform, tmp_path: Path
) -> None:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    platform.state.rollouts.append({"name": "calc", "branch": "main", "commit_sha": "abc1234"})
    platform.state.faults.append(Fault("GET", "/api/cli/rollouts", 503, retry_after="0"))
    platform.state.faults.append(Fault("GET", "/api/cli/rollouts", 429, retry_after="0"))
    result = cli("--json", "rollout", "list", "--branch", "main", cwd=tmp_path)
    assert result.code == 0, result.stderr
    assert [r["name"] for r in result.envelope()["items"]] == ["calc"]
    hits = [r for r in platform.state.requests if r.path == "/api/cli/rollouts"]
    assert len(hits) == 3
    assert hits[-1].query == {"branch": "main", "limit": "50", "offset": "0"}


def test_a_post_is_not_retried_after_a_5xx(cli: Cli, platform: Platform, tmp_path: Path) -> None:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    platform.state.add_run("eval", "busy")
    platform.state.faults.append(Fault("POST", "/api/cli/eval-runs/", 503, retry_after="0"))
    result = cli("--json", "eval", "stop", "busy", "-y", cwd=tmp_path)
    assert result.error()["error"]["code"] == "PLATFORM_ERROR"
    assert len([r for r in platform.state.requests if r.method == "POST"]) == 1


def test_long_retry_after_is_reported_not_waited(
    cli: Cli, platform: Platform, tmp_path: Path
) -> None:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    platform.state.faults.append(Fault("GET", "/api/cli/secrets", 429, retry_after="3600"))
    result = cli("--json", "secret", "list", cwd=tmp_path)
    error = result.error()["error"]
    assert (error["code"], error["details"]["retry_after"]) == ("RATE_LIMITED", "3600")
    assert "Retry in 3600s" in error["message"]

"""``osmosis auth`` paths that need no platform (the full flow runs in tests-integration)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from cli_harness import RunCli  # pyright: ignore[reportMissingImports]


def test_login_without_token_starts_the_browser_sign_in(
    run_cli: RunCli, monkeypatch: pytest.MonkeyPatch, isolated_home: Path
) -> None:
    with socket.socket() as sock:  # a port nothing listens on: the sign-in cannot start
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("OSMOSIS_PLATFORM_URL", f"http://127.0.0.1:{port}")
    result = run_cli("--json", "auth", "login")
    assert result.code == 1
    error = result.error()
    assert error["command"] == "auth login"
    assert error["error"]["code"] == "NETWORK"
    assert not (isolated_home / "credentials.json").exists()


def test_whoami_without_login(run_cli: RunCli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OSMOSIS_PLATFORM_URL", "http://127.0.0.1:1")
    result = run_cli("--json", "auth", "whoami")
    assert result.error()["error"]["code"] == "AUTH_REQUIRED"
    assert "osmosis auth login" in result.error()["error"]["message"]


def test_plain_http_to_a_remote_platform_is_refused(
    run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OSMOSIS_PLATFORM_URL", "http://platform.example.com")
    result = run_cli("--json", "auth", "login", "--token", "t")
    assert result.error()["error"]["code"] == "VALIDATION"
    assert "plain http" in result.error()["error"]["message"]


def test_unreachable_platform_is_a_network_error(
    run_cli: RunCli, monkeypatch: pytest.MonkeyPatch, isolated_home: Path
) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("OSMOSIS_PLATFORM_URL", f"http://127.0.0.1:{port}")
    result = run_cli("--json", "auth", "login", "--token", "tok")
    assert result.code == 1
    assert result.error()["error"]["code"] == "NETWORK"
    assert not (isolated_home / "credentials.json").exists()


def test_login_without_verification_then_logout(
    run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OSMOSIS_PLATFORM_URL", "https://platform.example.com")
    login = run_cli("--json", "auth", "login", "--token", "tok", "--no-verify")
    assert login.envelope()["resource"] == {
        "platform_url": "https://platform.example.com",
        "user": None,
        "storage": "file",
    }
    asked = run_cli("--json", "auth", "logout")  # not interactive, no -y: nothing removed
    assert asked.code == 1
    assert asked.error()["error"]["code"] == "INTERACTIVE_REQUIRED"
    logout = run_cli("--json", "auth", "logout", "-y")
    assert logout.envelope()["resource"]["removed_from"] == ["file"]
    # nothing stored: nothing to confirm
    assert run_cli("--json", "auth", "logout").envelope()["resource"]["removed_from"] == []


def test_logout_accepts_0_3_s_yes_flag(run_cli: RunCli, monkeypatch: pytest.MonkeyPatch) -> None:
    """osmosis-ai 0.3.8 scripts call ``osmosis auth logout -y``; it must not be a usage error."""
    monkeypatch.setenv("OSMOSIS_PLATFORM_URL", "https://platform.example.com")
    for flag in ("-y", "--yes"):
        run_cli("--json", "auth", "login", "--token", "tok", "--no-verify")
        logout = run_cli("--json", "auth", "logout", flag)
        assert logout.envelope()["resource"]["removed_from"] == ["file"], flag

"""``osmosis auth login`` without ``--token``: the browser sign-in (device grant) against the
stand-in platform, as a separate CLI process while the "browser" decides."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from platform_harness import Cli, Platform  # pyright: ignore[reportMissingImports]


def _sign_in(cli: Cli, platform: Platform, tmp_path: Path, decision: str) -> tuple[int, str, str]:
    process = cli.popen("--json", "auth", "login", cwd=tmp_path)
    try:
        assert platform.state.device_polled.wait(30), "the CLI never polled for the token"
        grant = next(iter(platform.state.device_grants.values()))
        platform.state.decide_sign_in(
            grant["user_code"], decision, platform.token if decision == "approved" else None
        )
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    return process.returncode, out, err


def test_a_browser_sign_in_stores_the_token_and_never_shows_it(
    cli: Cli, platform: Platform, tmp_path: Path
) -> None:
    code, out, err = _sign_in(cli, platform, tmp_path, "approved")
    assert code == 0, err
    envelope = json.loads(out)
    assert envelope["operation"] == "auth.login"
    assert envelope["resource"]["user"]["email"] == "ada@example.com"
    notice = json.loads(err.splitlines()[0])["warning"]
    assert notice["code"] == "SIGN_IN_REQUIRED"
    assert notice["details"]["user_code"] == "WDJB-0001"
    assert notice["details"]["verification_uri"].endswith("/device?code=WDJB-0001")
    assert platform.token not in out + err
    assert "dc_secret" not in out + err  # the device code is a secret too
    credentials = cli.home / "credentials.json"
    assert stat.S_IMODE(credentials.stat().st_mode) == 0o600
    assert platform.token in credentials.read_text(encoding="utf-8")
    whoami = cli("--json", "auth", "whoami", cwd=tmp_path).envelope()["data"]
    assert (whoami["user"]["email"], whoami["token_source"]) == ("ada@example.com", "file")
    sign_in = [r for r in platform.state.requests if r.path.startswith("/api/cli/device/")]
    assert all("authorization" not in r.headers for r in sign_in)


def test_a_denied_sign_in_stores_nothing(cli: Cli, platform: Platform, tmp_path: Path) -> None:
    code, _, err = _sign_in(cli, platform, tmp_path, "denied")
    assert code == 1
    error = json.loads(err.strip().splitlines()[-1])["error"]
    assert error["code"] == "AUTH_REQUIRED"
    assert "denied" in error["message"]
    assert not (cli.home / "credentials.json").exists()


def test_an_expired_code_says_to_start_again(cli: Cli, platform: Platform, tmp_path: Path) -> None:
    code, _, err = _sign_in(cli, platform, tmp_path, "expired")
    assert code == 1
    error = json.loads(err.strip().splitlines()[-1])["error"]
    assert "expired" in error["message"]
    assert "osmosis auth login" in error["message"]
    assert not (cli.home / "credentials.json").exists()

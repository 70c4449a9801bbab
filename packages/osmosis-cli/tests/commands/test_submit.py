"""``eval submit`` / ``train submit`` up to the network call (the POST is tested in
tests-integration/platform against the stand-in platform)."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_harness import RunCli  # pyright: ignore[reportMissingImports]


@pytest.fixture
def workspace(
    git_repo: Path, rollout_factory: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> Path:
    rollout_factory(git_repo, "calc", "app = 1\n")
    config = git_repo / "configs" / "eval" / "calc.toml"
    config.write_text(
        config.read_text(encoding="utf-8").replace(
            "required = []", 'required = ["OPENAI_API_KEY", "JUDGE_KEY"]'
        ),
        encoding="utf-8",
    )
    (git_repo / "rollouts").mkdir(exist_ok=True)
    # the repository connected to the platform (never contacted: only its URL is sent)
    subprocess.run(["git", "-C", str(git_repo), "remote", "add", "origin", "git@example.com:me/ws.git"], check=True)  # fmt: skip
    with socket.socket() as sock:  # nothing listens: any request would be a NETWORK error
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("OSMOSIS_PLATFORM_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("OSMOSIS_TOKEN", "tok")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("JUDGE_KEY", raising=False)
    return git_repo


def test_missing_secrets_without_tty_lists_all_names(run_cli: RunCli, workspace: Path) -> None:
    result = run_cli("--json", "eval", "submit", "configs/eval/calc.toml", "--yes", cwd=workspace)
    assert result.code == 1
    error = result.error()["error"]
    assert error["code"] == "INTERACTIVE_REQUIRED"
    assert error["details"]["missing"] == ["OPENAI_API_KEY", "JUDGE_KEY"]
    assert "OPENAI_API_KEY, JUDGE_KEY" in error["message"]


def test_partial_secrets_list_only_the_missing(
    run_cli: RunCli, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk")
    result = run_cli("--plain", "eval", "submit", "configs/eval/calc.toml", "-y", cwd=workspace)
    assert result.code == 1
    assert "Missing secret(s): JUDGE_KEY." in result.stderr


def test_not_logged_in(run_cli: RunCli, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OSMOSIS_TOKEN")
    result = run_cli("--json", "eval", "submit", "configs/eval/calc.toml", "-y", cwd=workspace)
    assert result.error()["error"]["code"] == "AUTH_REQUIRED"


def test_config_in_the_wrong_folder(run_cli: RunCli, workspace: Path) -> None:
    wrong = run_cli("--json", "train", "submit", "configs/eval/calc.toml", "-y", cwd=workspace)
    assert wrong.error()["error"]["code"] == "VALIDATION"
    assert "configs/training/" in wrong.error()["error"]["message"]


def test_preflight_failure_stops_the_submit(run_cli: RunCli, workspace: Path) -> None:
    (workspace / "rollouts" / "calc" / "main.py").write_text("raise ValueError('nope')\n")
    result = run_cli("--json", "eval", "submit", "configs/eval/calc.toml", "-y", cwd=workspace)
    error = result.error()["error"]
    assert error["code"] == "VALIDATION"
    assert error["message"].startswith("Eval preflight failed for `rollouts/calc/main.py`")


def test_confirmation_needs_yes_without_a_tty(
    run_cli: RunCli, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk")
    monkeypatch.setenv("JUDGE_KEY", "j")
    result = run_cli("--json", "eval", "submit", "configs/eval/calc.toml", cwd=workspace)
    assert result.error()["error"]["code"] == "INTERACTIVE_REQUIRED"
    assert "--yes" in result.error()["error"]["message"]
    # With --yes it gets as far as the network, which is down in this test.
    sent = run_cli("--json", "eval", "submit", "configs/eval/calc.toml", "-y", cwd=workspace)
    assert sent.error()["error"]["code"] == "NETWORK"


def test_without_an_origin_nothing_is_submitted(
    run_cli: RunCli, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk")
    monkeypatch.setenv("JUDGE_KEY", "j")
    subprocess.run(["git", "-C", str(workspace), "remote", "remove", "origin"], check=True)
    result = run_cli("--json", "eval", "submit", "configs/eval/calc.toml", "-y", cwd=workspace)
    error = result.error()["error"]
    assert (result.code, error["code"]) == (1, "VALIDATION")  # not NETWORK: refused first
    assert "no git `origin`" in error["message"]
    assert "'git remote add origin URL'" in error["message"]


def test_an_environment_config_needs_no_rollout_folder(run_cli: RunCli, workspace: Path) -> None:
    """``[experiment] env``: no rollout folder to preflight and no code to clone (no origin
    needed); the submit goes on to the POST (here nothing listens, so it ends as a NETWORK
    error after the confirmation)."""
    subprocess.run(["git", "-C", str(workspace), "remote", "remove", "origin"], check=True)
    (workspace / "configs" / "eval" / "legs.toml").write_text(
        '[experiment]\nenv = "reasoning-gym:leg_counting?size=5"\nmodel_path = "openai/gpt-4.1"\n'
        "\n[secrets]\nrequired = []\n",
        encoding="utf-8",
    )
    result = run_cli("--json", "eval", "submit", "configs/eval/legs.toml", "-y", cwd=workspace)
    error = result.error()["error"]
    assert error["code"] == "NETWORK", error
    assert "preflight" not in error["message"].lower()

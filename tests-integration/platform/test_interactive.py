"""Interactive use on a real terminal (a pseudo-terminal): prompts for secrets and confirmation.

The CLI only prompts when stdin and stdout are terminals and neither ``--json`` nor ``--plain`` is
given; these tests give it one and answer like a person would.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from platform_harness import Cli, Platform  # pyright: ignore[reportMissingImports]

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")

# Make the terminal the child's controlling terminal (getpass reads /dev/tty), then run the CLI.
LAUNCH = (
    "import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
    "os.execv(sys.executable, [sys.executable, '-m', 'osmosis_cli', *sys.argv[1:]])"
)


def run_in_terminal(
    args: list[str], *, cwd: Path, env: dict[str, str], answers: list[tuple[str, str]]
) -> tuple[int, str]:
    """Run the CLI on a pty; when ``prompt`` appears, type ``answer``. Returns (code, screen)."""
    master, slave = os.openpty()
    process = subprocess.Popen(
        [sys.executable, "-c", LAUNCH, *args],
        stdin=slave, stdout=slave, stderr=slave, cwd=cwd,
        env={**env, "COLUMNS": "200", "TERM": "dumb"}, start_new_session=True,
    )  # fmt: skip
    os.close(slave)
    screen = ""
    pending = list(answers)
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], deadline - time.monotonic())
            if not ready:
                break
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            screen += chunk.decode(errors="replace")
            while pending and pending[0][0] in screen:
                prompt, answer = pending.pop(0)
                screen = screen.replace(prompt, f"<{prompt}>", 1)
                os.write(master, answer.encode() + b"\r")
        code = process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
        os.close(master)
    assert not pending, f"never prompted for {pending}: {screen}"
    return code, screen


def test_submit_prompts_for_missing_secrets_and_confirmation(
    cli: Cli, platform: Platform, workspace: Path
) -> None:
    env = {**cli.env, "OSMOSIS_TOKEN": platform.token, "JUDGE_KEY": "judge-env"}
    code, screen = run_in_terminal(
        ["eval", "submit", "configs/eval/calc.toml"],
        cwd=workspace,
        env=env,
        answers=[("OPENAI_API_KEY: ", "sk-typed"), ("[y/n]", "y")],
    )
    assert code == 0, screen
    assert "Submitted eval run" in screen
    assert "sk-typed" not in screen  # typed without echo, never printed
    (post,) = [r for r in platform.state.requests if r.method == "POST"]
    assert post.body["secrets"]["provided"] == {
        "OPENAI_API_KEY": "sk-typed",
        "JUDGE_KEY": "judge-env",
    }


def test_declining_the_confirmation_sends_nothing(
    cli: Cli, platform: Platform, workspace: Path
) -> None:
    env = {**cli.env, "OSMOSIS_TOKEN": platform.token, "OPENAI_API_KEY": "sk"}
    code, screen = run_in_terminal(
        ["train", "submit", "configs/training/calc.toml"],
        cwd=workspace,
        env=env,
        answers=[("[y/n]", "n")],
    )
    assert code == 1
    assert "nothing was sent" in screen
    assert [r for r in platform.state.requests if r.method == "POST"] == []


def test_login_on_a_terminal_signs_in_in_the_browser(
    cli: Cli, platform: Platform, tmp_path: Path
) -> None:
    import threading

    def approve() -> None:  # the person confirms the code in the browser
        if platform.state.device_polled.wait(30):
            grant = next(iter(platform.state.device_grants.values()))
            platform.state.decide_sign_in(grant["user_code"], "approved", platform.token)

    browser = threading.Thread(target=approve, daemon=True)
    browser.start()
    env = {**cli.env, "OSMOSIS_NO_BROWSER": "1"}
    code, screen = run_in_terminal(["auth", "login"], cwd=tmp_path, env=env, answers=[])
    browser.join(5)
    assert code == 0, screen
    flat = " ".join(screen.split())
    assert "confirm the code WDJB-" in flat
    assert "ada@example.com" in flat
    assert platform.token not in screen
    assert (cli.home / "credentials.json").is_file()


def test_secret_set_prompts_without_echo(cli: Cli, platform: Platform, tmp_path: Path) -> None:
    value = "typed-secret-value-42"
    env = {**cli.env, "OSMOSIS_TOKEN": platform.token}
    code, screen = run_in_terminal(
        ["secret", "set", "OPENAI_API_KEY"],
        cwd=tmp_path,
        env=env,
        answers=[("Value for OPENAI_API_KEY (hidden): ", value)],
    )
    assert code == 0, screen
    assert "Stored secret OPENAI_API_KEY" in screen
    assert value not in screen  # getpass turned echo off
    assert platform.state.secrets[("personal", "OPENAI_API_KEY")]["value"] == value


def test_download_and_upload_on_a_terminal_draw_progress_and_confirm(
    cli: Cli, platform: Platform, tmp_path: Path
) -> None:
    from stand_in_state import Artifact  # pyright: ignore[reportMissingImports]

    env = {**cli.env, "OSMOSIS_TOKEN": platform.token}
    run = platform.state.add_run("eval", "tty-run", status="succeeded")
    content = os.urandom(3 * 1024 * 1024)
    platform.state.artifacts[run["id"]] = [Artifact("metrics", "metrics.json", content)]
    code, screen = run_in_terminal(
        ["eval", "download", "tty-run"], cwd=tmp_path, env=env, answers=[]
    )
    assert code == 0, screen
    assert "Downloaded 1 file(s)" in screen
    assert (tmp_path / "tty-run" / "metrics.json").read_bytes() == content

    data = tmp_path / "calc.jsonl"
    data.write_text('{"user_prompt": "1+1", "ground_truth": "2"}\n' * 4, encoding="utf-8")
    platform.state.datasets["calc"] = {"name": "calc"}
    code, screen = run_in_terminal(
        ["dataset", "upload", str(data), "--overwrite"],
        cwd=tmp_path,
        env=env,
        answers=[("[y/n]", "y")],
    )
    assert code == 0, screen
    assert "Uploaded dataset calc (4 rows" in screen


def _workspace_repository(root: Path) -> Path:
    """A real git repository to clone (the platform's workspace repository stand-in)."""
    source, bare = root / "source", root / "remote.git"
    source.mkdir()
    (source / "AGENTS.md").write_text("# agents\n", encoding="utf-8")
    for command in (
        ["git", "init", "-q", "-b", "main", str(source)],
        ["git", "-C", str(source), "add", "."],
        [
            "git",
            "-C",
            str(source),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@e",
            "commit",
            "-qm",
            "init",
        ],
        ["git", "clone", "-q", "--bare", str(source), str(bare)],
    ):
        subprocess.run(command, check=True, capture_output=True)
    return bare


def test_quickstart_clones_the_workspace_and_hands_over_a_prompt(
    cli: Cli, platform: Platform, tmp_path: Path
) -> None:
    bare = _workspace_repository(tmp_path)
    platform.state.workspaces["research"].update(
        repo_full_name="acme/research-ws", clone_url=bare.as_uri(), billing_ready=False
    )
    start = tmp_path / "start"
    start.mkdir()
    env = {**cli.env, "OSMOSIS_TOKEN": platform.token}
    code, screen = run_in_terminal(
        ["quickstart", "-w", "research"],
        cwd=start,
        env=env,
        answers=[
            ("Clone the workspace repository into", ""),
            ("What do you want to do?", "train"),
            ("Describe your task", "sql generation"),
        ],
    )
    assert code == 0, screen
    assert (start / "research-ws" / "AGENTS.md").read_text(encoding="utf-8") == "# agents\n"
    flat = " ".join(screen.split())
    assert "I want to train a model for sql generation" in flat
    assert "Billing is not set up" in flat
    assert platform.state.workspaces["research"]["quickstart_intent"] == "train"


def test_quickstart_says_where_to_connect_a_repository(
    cli: Cli, platform: Platform, tmp_path: Path
) -> None:
    env = {**cli.env, "OSMOSIS_TOKEN": platform.token}
    code, screen = run_in_terminal(
        ["quickstart", "-w", "stand-in"], cwd=tmp_path, env=env, answers=[]
    )
    assert code == 1, screen
    flat = " ".join(screen.split())
    assert "has no repository connected yet" in flat
    assert "/stand-in/integrations/git" in flat
    scripted = cli("--json", "quickstart", cwd=tmp_path)
    assert scripted.error()["error"]["code"] == "INTERACTIVE_REQUIRED"

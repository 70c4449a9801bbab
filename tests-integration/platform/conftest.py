"""Fixtures: a stand-in platform on 127.0.0.1 and a way to run the real ``osmosis`` CLI."""

from __future__ import annotations

import sys
from pathlib import Path

# pytest runs with --import-mode=importlib: make the sibling helper modules importable.
sys.path.insert(0, str(Path(__file__).parent))

import os
import socket
import subprocess
from collections.abc import Iterator

import pytest
from platform_harness import Cli, Platform
from stand_in import PlatformState, create_app

from osmosis_ai._util.serving import ThreadedServer, uvicorn_config, uvicorn_server

TOKEN = "tok-stand-in-123"


@pytest.fixture
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Platform]:
    state = PlatformState(storage=tmp_path_factory.mktemp("platform-storage"))
    state.add_user(TOKEN, "ada@example.com")
    # Bind first so the port is known and connections queue until the server loop starts.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    config = uvicorn_config(create_app(state), log_level="warning", lifespan="off")
    server = ThreadedServer(uvicorn_server(config), sockets=[sock]).start()
    try:
        yield Platform(f"http://127.0.0.1:{port}", state, TOKEN)
    finally:
        state.close()  # wakes long polls and paused downloads
        server.stop()
        sock.close()


@pytest.fixture
def cli(tmp_path: Path, platform: Platform) -> Cli:
    home = tmp_path / "home"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("OSMOSIS_") and k not in {"OPENAI_API_KEY", "JUDGE_KEY"}
    }
    env.update(
        {
            "OSMOSIS_HOME": str(home),
            "OSMOSIS_KEYRING": "0",
            "OSMOSIS_PLATFORM_URL": platform.url,
            "NO_COLOR": "1",
        }
    )
    return Cli(home, env)


MAIN_PY = """\"\"\"A stand-in rollout: cheap to import, so the preflight's import check is fast.\"\"\"

app = {"served_by": "stand-in"}
"""


@pytest.fixture
def workspace(tmp_path: Path, cli: Cli, platform: Platform) -> Path:
    """A git workspace (made with the CLI's own library) whose configs need secrets; its
    dataset ``calc`` is on the platform (submits check it)."""
    from osmosis_cli.scaffolding.rollout_init import init_rollout
    from osmosis_cli.scaffolding.workspace_init import init_workspace

    root = tmp_path / "ws"
    init_workspace(root)
    init_rollout("calc", root, force=False)
    rollout = root / "rollouts" / "calc"
    (rollout / "main.py").write_text(MAIN_PY, encoding="utf-8")
    (rollout / "pyproject.toml").write_text(
        '[project]\nname = "calc"\nversion = "0"\ndependencies = []\n', encoding="utf-8"
    )
    (root / "data" / "calc.jsonl").write_text(
        '{"user_prompt": "2*3", "ground_truth": "6"}\n', encoding="utf-8"
    )
    for kind in ("eval", "training"):
        path = root / "configs" / kind / "calc.toml"
        text = path.read_text(encoding="utf-8")
        if "[secrets]" in text:
            text = text.replace("required = []", 'required = ["OPENAI_API_KEY", "JUDGE_KEY"]')
        else:
            text += '\n[secrets]\nrequired = ["OPENAI_API_KEY"]\n'
        path.write_text(text, encoding="utf-8")
    platform.state.add_dataset("calc")
    # the repository connected to the platform (the stand-in never clones: only its URL is sent)
    subprocess.run(["git", "-C", str(root), "remote", "add", "origin", "git@example.com:me/ws.git"], check=True)  # fmt: skip
    return root

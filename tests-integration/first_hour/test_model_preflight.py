"""Item 4: a model that cannot answer stops the run before any row is dispatched, naming the
URL (without credentials) and the cause; an upstream 401 is an auth error, not VALIDATION."""

from __future__ import annotations

import socket
from pathlib import Path

from eval_support import Cli, read_jsonl, write_tiny_workspace

from osmosis_ai.testing import ErrorReply, ScriptedPolicyServer


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again on exit: connections are refused


def test_unreachable_model_stops_before_dispatch(tmp_path: Path, cli: Cli) -> None:
    config = write_tiny_workspace(tmp_path, n_rows=40)
    url = f"http://user:hunter2@127.0.0.1:{_closed_port()}/v1"
    result = cli.run(
        "--json", "eval", "run", str(config), "--model", "m", "--base-url", url,
        "--name", "down", cwd=tmp_path,
    )  # fmt: skip
    assert result.code == 1
    error = result.error()
    assert error["code"] == "NETWORK"
    masked = url.replace("user:hunter2@", "***@")
    assert error["message"].startswith(f"the model endpoint {masked} could not be reached (")
    assert "nothing was dispatched" in error["message"]
    assert "hunter2" not in result.stderr + result.stdout
    run_dir = tmp_path / ".osmosis" / "evals" / "down"
    assert read_jsonl(run_dir / "events.jsonl") == []  # not one work item was dispatched
    assert "hunter2" not in (run_dir / "logs.txt").read_text()


def test_upstream_401_is_an_auth_error(tmp_path: Path, cli: Cli) -> None:
    config = write_tiny_workspace(tmp_path, n_rows=5)
    with ScriptedPolicyServer(lambda body: ErrorReply(401, "invalid api key")) as policy:
        result = cli.run(
            "--json", "eval", "run", str(config), "--model", "m", "--base-url", policy.url,
            cwd=tmp_path,
        )  # fmt: skip
        assert len(policy.requests) == 1  # the preflight only
    assert result.code == 1
    error = result.error()
    assert error["code"] == "MODEL_AUTH"
    assert error["details"]["status_code"] == 401
    assert f"the model endpoint {policy.url} rejected model 'm' with HTTP 401" in error["message"]

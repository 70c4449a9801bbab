"""Item 4 (rest): a model endpoint that breaks after the preflight halts the run after a few
rows instead of failing every row slowly; ``--max-failures N`` halts after N failed rows; the
halted run resumes; errors name the user's model URL (credentials masked), never the proxy's
internal port."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from eval_support import Cli, read_jsonl, write_tiny_workspace

from osmosis_ai.testing import ErrorReply, ScriptedPolicyServer, multiply_solver


class _Gateway:
    """Answers the preflight (no ``tools``), then a 502 for every rollout call until healthy.

    ``Retry-After: 0`` keeps the proxy's six attempts per call instant.
    """

    def __init__(self) -> None:
        self.healthy = False

    def __call__(self, body: dict[str, Any]) -> Any:
        if self.healthy or "tools" not in body:
            return multiply_solver(body)
        return ErrorReply(502, "bad gateway: model backend down", headers={"Retry-After": "0"})


def _with_credentials(url: str) -> str:
    return url.replace("http://", "http://user:hunter2@")


def test_broken_endpoint_halts_after_five_rows_naming_the_url(tmp_path: Path, cli: Cli) -> None:
    config = write_tiny_workspace(tmp_path, n_rows=40)
    gateway = _Gateway()
    with ScriptedPolicyServer(gateway) as policy:
        url = _with_credentials(policy.url)
        args = ("--json", "eval", "run", str(config), "--model", "m", "--base-url", url)
        result = cli.run(*args, "--name", "down", "--max-in-flight", "1", cwd=tmp_path)
        assert result.code == 1
        run = result.json()["resource"]
        masked = url.replace("user:hunter2@", "***@")
        assert run["halt_reason"] == (
            f"5 work items in a row failed because the model endpoint {masked} failed (HTTP "
            "502); fix the model endpoint, then rerun to resume"
        )
        assert (run["failed"], run["pending"]) == (5, 35)
        run_dir = tmp_path / ".osmosis" / "evals" / "down"
        records = read_jsonl(run_dir / "events.jsonl")
        # Stopped early: 5 of 40 rows attempted (not a timer: the machine's load varies).
        assert len(records) == 5
        message = records[0]["error_message"]
        assert f"{masked}/chat/completions" in message  # the user's URL ...
        assert "/v1/rollouts/" not in message  # ... not the proxy's route
        assert "hunter2" not in result.stdout + result.stderr + (run_dir / "logs.txt").read_text()

        # Resumable: once the endpoint is back, the same name finishes the run.
        gateway.healthy = True
        again = cli.run(*args, "--name", "down", "--retry-failed", cwd=tmp_path)
        assert again.code == 0, again.stderr
        done = again.json()["resource"]
        assert (done["succeeded"], done["failed"], done["pending"]) == (40, 0, 0)


def test_max_failures_stops_after_n_failed_rows(tmp_path: Path, cli: Cli) -> None:
    config = write_tiny_workspace(tmp_path, n_rows=20)
    with ScriptedPolicyServer(_Gateway()) as policy:
        result = cli.run(
            "--json", "eval", "run", str(config), "--model", "m", "--base-url", policy.url,
            "--name", "capped", "--max-in-flight", "1", "--max-failures", "2", cwd=tmp_path,
        )  # fmt: skip
    assert result.code == 1
    payload = result.json()
    run = payload["resource"]
    assert run["halt_reason"].startswith(
        "2 work item(s) failed in this session (--max-failures 2); the last: "
    )
    assert (run["failed"], run["pending"]) == (2, 18)
    assert payload["message"].startswith("Eval capped is partial (stopped: 2 work item(s) failed")
    run_dir = tmp_path / ".osmosis" / "evals" / "capped"
    assert len(read_jsonl(run_dir / "events.jsonl")) == 2
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["eval_run"]["halt_reason"] == run["halt_reason"]


def test_max_failures_must_be_positive(tmp_path: Path, cli: Cli) -> None:
    config = write_tiny_workspace(tmp_path, n_rows=2, mode="noop")
    result = cli.run(
        "--json", "eval", "run", str(config), "--model", "mock", "--max-failures", "0",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.code == 1
    assert result.error()["message"] == (
        "--max-failures must be at least 1, got 0; omit it to let every work item run"
    )

"""Shared fixtures: an isolated OSMOSIS_HOME, and ``osmosis eval run --env`` driven in-process
(the rollout server is a real child process; the policy is the mock with a reply script)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

# pytest runs with --import-mode=importlib: make the harness importable by the test modules.
sys.path.insert(0, str(Path(__file__).parent))

from environments_harness import EvalEnv, EvalResult


@pytest.fixture(autouse=True)
def osmosis_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Nothing a test runs may write to ~/.osmosis."""
    home = tmp_path / "osmosis-home"
    monkeypatch.setenv("OSMOSIS_HOME", str(home))
    monkeypatch.setenv("NO_COLOR", "1")
    for name in ("OSMOSIS_CHAT_COMPLETIONS_URL", "OSMOSIS_API_KEY", "OSMOSIS_ROLLOUT_ID"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def eval_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> EvalEnv:
    """``osmosis eval run --env SPEC --mock-script replies.jsonl --json`` in a fresh workspace;
    ``replies[i]`` is the policy's reply list for dataset row ``i``."""
    from osmosis_cli.main import run

    def invoke(spec: str, replies: Sequence[Sequence[Any]], *extra: str) -> EvalResult:
        workspace = tmp_path / "workspace"
        workspace.mkdir(exist_ok=True)
        script = workspace / "replies.jsonl"
        script.write_text(
            "".join(
                json.dumps({"row": i, "replies": list(r)}) + "\n" for i, r in enumerate(replies)
            )
        )
        monkeypatch.chdir(workspace)
        capsys.readouterr()
        code = run(
            [
                "--json",
                "eval",
                "run",
                "--env",
                spec,
                "--mock-script",
                str(script),
                "--workers",
                "1",
                *extra,
            ]
        )
        captured = capsys.readouterr()
        lines = captured.out.strip().splitlines()
        assert lines, f"osmosis eval run printed nothing (exit {code}): {captured.err}"
        envelope = json.loads(lines[-1])
        assert "resource" in envelope, f"exit {code}: {envelope} {captured.err}"
        run_dir = Path(envelope["resource"]["output_path"])
        rows = [json.loads(line) for line in (run_dir / "index.jsonl").read_text().splitlines()]
        rows.sort(key=lambda r: r["row_index"])
        summary = json.loads((run_dir / "metrics.json").read_text())["summary"]
        return EvalResult(code, envelope, run_dir, rows, summary)

    return invoke
